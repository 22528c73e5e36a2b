//! A byte-level scan of the common streamed chunk shapes, tried before the serde scan of
//! [`crate::chunk::scan_chunk`] (issue 21: the serde visitor scan was ~45 % of a whole
//! `servebench bench` process once the dataset build got cheap).
//!
//! It answers only for chunks it can judge completely and exactly as the serde scan does —
//! a top-level object whose keys are ASCII without escapes; `choices` null or an array of
//! objects (or nulls) whose `text` and `delta.{content, reasoning_content, reasoning}` are strings
//! without escapes or null and whose `delta.tool_calls` is null; `usage`, `timings`, `error` null;
//! every other value a string without escapes, a number, `true`, `false` or `null` — and returns
//! `None` for anything else (nested objects elsewhere, escapes, `message`/`code` keys, text
//! capture, malformed JSON), so the serde scan decides there, errors included. Every string is
//! checked as UTF-8 and free of control characters; numbers follow JSON's grammar.

use crate::chunk::{Capture, ChunkInfo};

/// The chunk's [`ChunkInfo`], or `None` where the serde scan must decide (see the module docs).
/// Never used when text capture is asked for.
pub(crate) fn scan(data: &[u8], cap: &mut Capture<'_>) -> Option<ChunkInfo> {
    if cap.text.is_some() {
        return None;
    }
    let mut s = Scanner { b: data, i: 0 };
    let mut info = ChunkInfo::default();
    s.ws();
    s.members(|s, key| {
        match key {
            b"choices" => s.choices(&mut info)?,
            b"usage" | b"timings" | b"error" => s.null()?,
            b"message" | b"code" => return None,
            b"object" => {
                // `"object": "error"` makes the chunk an error: the serde scan reads it
                if s.simple()? == Simple::Str(b"error") {
                    return None;
                }
            }
            b"id" => match cap.id.as_deref_mut() {
                Some(slot @ None) => {
                    let v = s.string()?;
                    *slot = Some(String::from_utf8_lossy(v).into_owned());
                }
                _ => {
                    s.simple()?;
                }
            },
            _ => {
                s.simple()?;
            }
        }
        Some(())
    })?;
    s.ws();
    (s.i == s.b.len()).then_some(info)
}

#[derive(PartialEq, Eq)]
enum Simple<'a> {
    Str(&'a [u8]),
    Other,
}

struct Scanner<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Scanner<'a> {
    #[inline]
    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.b.get(self.i) {
            self.i += 1;
        }
    }

    #[inline]
    fn eat(&mut self, c: u8) -> Option<()> {
        (self.b.get(self.i) == Some(&c)).then(|| self.i += 1)
    }

    /// After a member: `,` (→ true: another member follows) or `close` (→ false).
    #[inline]
    fn next_member(&mut self, close: u8) -> Option<bool> {
        self.ws();
        match *self.b.get(self.i)? {
            b',' => {
                self.i += 1;
                self.ws();
                Some(true)
            }
            c if c == close => {
                self.i += 1;
                Some(false)
            }
            _ => None,
        }
    }

    /// A string without escapes or control characters, valid UTF-8: the bytes between the
    /// quotes, and whether they are all ASCII. One pass over the bytes (chunk strings are short:
    /// a call into `memchr` cost more than the loop).
    #[inline]
    fn string_ascii(&mut self) -> Option<(&'a [u8], bool)> {
        self.eat(b'"')?;
        let start = self.i;
        let mut j = start;
        let mut high = 0u8;
        loop {
            let c = *self.b.get(j)?;
            if c == b'"' {
                break;
            }
            if c == b'\\' || c < 0x20 {
                return None;
            }
            high |= c;
            j += 1;
        }
        let v = &self.b[start..j];
        let ascii = high < 0x80;
        if !ascii && std::str::from_utf8(v).is_err() {
            return None;
        }
        self.i = j + 1;
        Some((v, ascii))
    }

    /// [`Self::string_ascii`]'s bytes.
    #[inline]
    fn string(&mut self) -> Option<&'a [u8]> {
        self.string_ascii().map(|(v, _)| v)
    }

    /// An object key (ASCII) and its `:`.
    #[inline]
    /// An object `{ "key": value, … }` at the cursor: `member` reads each value (its key given)
    /// and must leave the cursor after it; `None` from it or from the syntax declines the chunk.
    fn members(&mut self, mut member: impl FnMut(&mut Self, &'a [u8]) -> Option<()>) -> Option<()> {
        self.eat(b'{')?;
        self.ws();
        if self.eat(b'}').is_some() {
            return Some(());
        }
        loop {
            let key = self.key()?;
            member(self, key)?;
            if !self.next_member(b'}')? {
                return Some(());
            }
        }
    }

    fn key(&mut self) -> Option<&'a [u8]> {
        let (k, ascii) = self.string_ascii()?;
        if !ascii {
            return None;
        }
        self.ws();
        self.eat(b':')?;
        self.ws();
        Some(k)
    }

    fn literal(&mut self, lit: &[u8]) -> Option<()> {
        let end = self.i + lit.len();
        (self.b.get(self.i..end) == Some(lit)).then(|| self.i = end)
    }

    fn null(&mut self) -> Option<()> {
        self.literal(b"null")
    }

    /// A JSON number: `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`.
    fn number(&mut self) -> Option<()> {
        let digits = |s: &mut Self| {
            let st = s.i;
            while s.b.get(s.i).is_some_and(u8::is_ascii_digit) {
                s.i += 1;
            }
            (s.i > st).then_some(())
        };
        let _ = self.eat(b'-');
        if self.eat(b'0').is_none() {
            if !self
                .b
                .get(self.i)
                .is_some_and(|c| (b'1'..=b'9').contains(c))
            {
                return None;
            }
            digits(self)?;
        }
        if self.eat(b'.').is_some() {
            digits(self)?;
        }
        if let Some(b'e' | b'E') = self.b.get(self.i) {
            self.i += 1;
            if let Some(b'+' | b'-') = self.b.get(self.i) {
                self.i += 1;
            }
            digits(self)?;
        }
        Some(())
    }

    /// A string (without escapes), number, `true`, `false` or `null`; `None` for anything else.
    fn simple(&mut self) -> Option<Simple<'a>> {
        match *self.b.get(self.i)? {
            b'"' => self.string().map(Simple::Str),
            b'n' => self.null().map(|()| Simple::Other),
            b't' => self.literal(b"true").map(|()| Simple::Other),
            b'f' => self.literal(b"false").map(|()| Simple::Other),
            b'-' | b'0'..=b'9' => self.number().map(|()| Simple::Other),
            _ => None,
        }
    }

    /// A text value: a string (non-empty → true) or null (false).
    fn text(&mut self) -> Option<bool> {
        if self.b.get(self.i) == Some(&b'n') {
            return self.null().map(|()| false);
        }
        Some(!self.string()?.is_empty())
    }

    fn choices(&mut self, info: &mut ChunkInfo) -> Option<()> {
        if self.b.get(self.i) == Some(&b'n') {
            return self.null();
        }
        self.eat(b'[')?;
        self.ws();
        if self.eat(b']').is_some() {
            return Some(());
        }
        loop {
            if self.b.get(self.i) == Some(&b'n') {
                self.null()?;
            } else {
                self.choice(info)?;
            }
            info.choices += 1;
            if !self.next_member(b']')? {
                return Some(());
            }
        }
    }

    fn choice(&mut self, info: &mut ChunkInfo) -> Option<()> {
        self.members(|s, key| {
            match key {
                b"text" => {
                    if s.text()? {
                        info.token_event = true;
                        info.content = true;
                    }
                }
                b"delta" => {
                    if s.b.get(s.i) == Some(&b'n') {
                        s.null()?;
                    } else {
                        s.delta(info)?;
                    }
                }
                _ => {
                    s.simple()?;
                }
            }
            Some(())
        })
    }

    fn delta(&mut self, info: &mut ChunkInfo) -> Option<()> {
        self.members(|s, key| {
            match key {
                b"content" => {
                    if s.text()? {
                        info.token_event = true;
                        info.content = true;
                    }
                }
                b"reasoning_content" | b"reasoning" => {
                    if s.text()? {
                        info.token_event = true;
                        info.reasoning = true;
                    }
                }
                b"tool_calls" => s.null()?,
                _ => {
                    s.simple()?;
                }
            }
            Some(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chunk::scan_serde;

    /// Chunk shapes seen from vLLM, SGLang, llama.cpp, TRT-LLM, the simulator, and error bodies.
    const CORPUS: &[&str] = &[
        r#"{"id":"cmpl-9d48","object":"text_completion","created":1796197963,"model":"Qwen/Qwen3-8B","choices":[{"index":0,"text":" every","logprobs":null,"finish_reason":null,"stop_reason":null}]}"#,
        r#"{"id":"cmpl-9d48","object":"text_completion","created":1796197963,"model":"Qwen/Qwen3-8B","choices":[],"usage":{"prompt_tokens":2,"total_tokens":5,"completion_tokens":3}}"#,
        r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}],"usage":null}"#,
        r#"{"id":"c","choices":[{"index":0,"delta":{"content":"Hi","reasoning_content":null,"tool_calls":null},"finish_reason":null}]}"#,
        r#"{"choices":[{"delta":{"reasoning_content":"Ok"}}]}"#,
        r#"{"choices":[{"delta":{"reasoning":"Ok","content":null}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"t","function":{"name":"f","arguments":""}}]}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[]}}]}"#,
        r#"{"choices":[{"delta":{}}]}"#,
        r#"{"choices":[{"index":0,"text":""}]}"#,
        r#"{"choices":[{"text":"a"},{"text":""},null]}"#,
        r#"{"choices":null,"usage":null,"timings":null,"error":null}"#,
        r#"{"choices":[],"timings":{"predicted_n":7}}"#,
        r#"{"error":{"message":"too long","type":"BadRequestError","code":400}}"#,
        r#"{"object":"error","message":"bad","type":"x","code":500}"#,
        r#"{"error":"boom"}"#,
        r#"{"choices":[{"text":"a\nb"}]}"#,
        r#"{"choices":[{"text":"é中😀"}],"x":-0.5e+3,"y":true,"z":false}"#,
        r#" { "choices" : [ { "text" : "a" } ] , "n" : 12 } "#,
        r#"{}"#,
        r#"{"choices":[{"index":0,"text":"x","logprobs":{"tokens":["x"]}}]}"#,
    ];

    fn both(s: &[u8]) -> (Option<ChunkInfo>, Result<ChunkInfo, String>, Option<String>) {
        let mut id_fast = None;
        let fast = scan(
            s,
            &mut Capture {
                text: None,
                id: Some(&mut id_fast),
            },
        );
        let mut id_serde = None;
        let serde = scan_serde(
            s,
            Capture {
                text: None,
                id: Some(&mut id_serde),
            },
        )
        .map_err(|e| e.to_string());
        if fast.is_some() {
            assert_eq!(id_fast, id_serde, "id of {:?}", String::from_utf8_lossy(s));
        }
        (fast, serde, id_fast)
    }

    /// Wherever the fast scan answers, it answers as the serde scan; it never answers where the
    /// serde scan fails. The corpus and ~60,000 one- and two-byte mutations of it.
    #[test]
    fn agrees_with_serde_or_declines() {
        let mut answered = 0;
        let mut cases = 0;
        let mut check = |s: &[u8]| {
            let (fast, serde, _) = both(s);
            cases += 1;
            if let Some(f) = fast {
                answered += 1;
                match serde {
                    Ok(x) => assert_eq!(f, x, "{:?}", String::from_utf8_lossy(s)),
                    Err(e) => panic!(
                        "fast scan accepted {:?}, serde: {e}",
                        String::from_utf8_lossy(s)
                    ),
                }
            }
        };
        let alphabet = b"{}[]\":,\\ 0-9.eE+ntfaluxr\x01\xff\xc3";
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        for c in CORPUS {
            let b = c.as_bytes();
            check(b);
            for _ in 0..3000 {
                let mut m = b.to_vec();
                for _ in 0..(1 + next() % 2) {
                    let at = (next() % (m.len() as u64 + 1)) as usize;
                    let ch = alphabet[(next() % alphabet.len() as u64) as usize];
                    match next() % 3 {
                        0 if at < m.len() => m[at] = ch,
                        1 if at < m.len() => {
                            m.remove(at);
                        }
                        _ => m.insert(at, ch),
                    }
                }
                check(&m);
            }
        }
        // the common shapes are answered here, not by serde
        assert!(answered > cases / 10, "{answered} of {cases} answered");
        for c in &CORPUS[..12] {
            if !c.contains("usage\":{")
                && !c.contains("timings\":{")
                && !c.contains("tool_calls\":[")
            {
                assert!(both(c.as_bytes()).0.is_some(), "declined {c}");
            }
        }
    }

    #[test]
    fn declines_text_capture_and_errors() {
        let mut text = String::new();
        let mut c = Capture {
            text: Some(&mut text),
            id: None,
        };
        assert!(scan(br#"{"choices":[{"text":"a"}]}"#, &mut c).is_none());
        for s in [
            r#"{"error":{"message":"x"}}"#,
            r#"{"object":"error","message":"bad"}"#,
            r#"{"choices":[{"text":"a"}]} x"#,
            r#"{"choices":[{"text":"a"}],}"#,
            r#"{"n":01}"#,
        ] {
            assert!(both(s.as_bytes()).0.is_none(), "{s}");
        }
        let (f, _, id) = both(br#"{"id":"cmpl-1","choices":[{"text":"a"}]}"#);
        assert!(f.is_some_and(|f| f.token_event && f.content && f.choices == 1));
        assert_eq!(id.as_deref(), Some("cmpl-1"));
    }
}
