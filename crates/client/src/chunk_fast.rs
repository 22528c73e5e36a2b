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
/// Never used when text capture is asked for. No template: one chunk on its own
/// ([`crate::chunk::scan_chunk`]); a stream's chunks go through [`scan_templated`].
pub(crate) fn scan(data: &[u8], cap: &mut Capture<'_>) -> Option<ChunkInfo> {
    scan_full(data, cap, None)
}

/// [`scan`] through a stream's [`Template`]: answered from the template when the chunk is the
/// template's prefix, a plain string body and its suffix; otherwise the full byte-level scan,
/// which refreshes the template when it answers and the chunk has exactly one text string.
/// `None` where the serde scan must decide, as [`scan`].
#[inline]
pub(crate) fn scan_templated(
    data: &[u8],
    cap: &mut Capture<'_>,
    tpl: &mut Template,
) -> Option<ChunkInfo> {
    if let Some(info) = tpl.apply(data, cap) {
        #[cfg(test)]
        crate::chunk::counts::bump(crate::chunk::counts::Path::Template);
        return Some(info);
    }
    scan_full(data, cap, Some(tpl))
}

/// Which flags a non-empty text string sets.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum TextKind {
    /// `text` or `delta.content`: token event, content.
    #[default]
    Content,
    /// `delta.reasoning_content` or `delta.reasoning`: token event, reasoning.
    Reasoning,
}

impl TextKind {
    #[inline]
    fn apply(self, info: &mut ChunkInfo) {
        info.token_event = true;
        match self {
            TextKind::Content => info.content = true,
            TextKind::Reasoning => info.reasoning = true,
        }
    }
}

/// One stream's chunk template (issue 21): consecutive chunks of a stream are byte-identical
/// but for the one text string they carry. After the full scan answered a chunk with exactly one
/// text string (`text`, `delta.content`, `delta.reasoning_content` or `delta.reasoning`), this
/// keeps the bytes before that string's body (its opening quote included), the bytes after it
/// (from its closing quote) and the facts the rest implies. A later chunk made of the same
/// prefix, a string body the full scan would read in one step (no quote, no backslash, no control
/// character, valid UTF-8) and the same suffix gets the same answer as the full scan: the scan
/// reads left to right and looks at no byte outside the value it is reading, so identical prefix
/// bytes leave it in an identical state, the body ends exactly at the suffix's quote, and the
/// suffix is then read as before. Only the body's emptiness changes the answer.
///
/// Holds one heap buffer per stream (the prefix and suffix, reused); the per-chunk path does not
/// allocate.
#[derive(Debug, Default)]
pub(crate) struct Template {
    /// The prefix bytes, then the suffix bytes; empty while there is no template.
    bytes: Vec<u8>,
    /// Length of the prefix within `bytes`.
    prefix: usize,
    /// The answer with an empty body: `choices` and the flags set by the other strings.
    choices: u32,
    token_event: bool,
    content: bool,
    reasoning: bool,
    /// What a non-empty body adds.
    kind: TextKind,
    /// The chunk has a top-level `id` (the caller may still want it captured).
    has_id: bool,
    /// Whether `bytes` holds a template.
    valid: bool,
}

impl Template {
    /// The template's answer for `data`, or `None` when it does not fit (see the type's docs).
    #[inline]
    fn apply(&self, data: &[u8], cap: &Capture<'_>) -> Option<ChunkInfo> {
        if !self.valid || cap.text.is_some() {
            return None;
        }
        // an id still to be captured is read by the full scan
        if self.has_id && cap.id.as_deref().is_some_and(Option::is_none) {
            return None;
        }
        let (p, s) = self.bytes.split_at(self.prefix);
        if data.len() < p.len() + s.len() || !data.starts_with(p) || !data.ends_with(s) {
            return None;
        }
        let body = &data[p.len()..data.len() - s.len()];
        let mut high = 0u8;
        for &c in body {
            if c == b'"' || c == b'\\' || c < 0x20 {
                return None;
            }
            high |= c;
        }
        if high >= 0x80 && std::str::from_utf8(body).is_err() {
            return None;
        }
        let mut info = ChunkInfo {
            choices: self.choices,
            token_event: self.token_event,
            content: self.content,
            reasoning: self.reasoning,
            ..ChunkInfo::default()
        };
        if !body.is_empty() {
            self.kind.apply(&mut info);
        }
        Some(info)
    }

    /// Makes `data` with the text body `span` the template, `base` the answer without the body.
    fn set(&mut self, data: &[u8], span: Span, base: &ChunkInfo, has_id: bool) {
        self.bytes.clear();
        self.bytes.extend_from_slice(&data[..span.start]);
        self.bytes.extend_from_slice(&data[span.end..]);
        self.prefix = span.start;
        self.choices = base.choices;
        self.token_event = base.token_event;
        self.content = base.content;
        self.reasoning = base.reasoning;
        self.kind = span.kind;
        self.has_id = has_id;
        self.valid = true;
    }
}

/// Where a text string's body lies in the chunk (`start..end`, quotes excluded), and its kind.
#[derive(Clone, Copy)]
struct Span {
    start: usize,
    end: usize,
    kind: TextKind,
}

/// The full byte-level scan; with `tpl`, refreshes it when the chunk has exactly one text string.
fn scan_full(data: &[u8], cap: &mut Capture<'_>, tpl: Option<&mut Template>) -> Option<ChunkInfo> {
    if cap.text.is_some() {
        return None;
    }
    let mut s = Scanner {
        b: data,
        i: 0,
        span: None,
        texts: 0,
    };
    let mut info = ChunkInfo::default();
    let mut has_id = false;
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
            b"id" => {
                has_id = true;
                match cap.id.as_deref_mut() {
                    Some(slot @ None) => {
                        let v = s.string()?;
                        *slot = Some(String::from_utf8_lossy(v).into_owned());
                    }
                    _ => {
                        s.simple()?;
                    }
                }
            }
            _ => {
                s.simple()?;
            }
        }
        Some(())
    })?;
    s.ws();
    if s.i != s.b.len() {
        return None;
    }
    #[cfg(test)]
    crate::chunk::counts::bump(crate::chunk::counts::Path::Fast);
    // the first text string's flags were held back: `info` is the answer without its body
    if let Some(span) = s.span {
        if let (Some(tpl), 1) = (tpl, s.texts) {
            tpl.set(data, span, &info, has_id);
        }
        if span.end > span.start {
            span.kind.apply(&mut info);
        }
    }
    Some(info)
}

#[derive(PartialEq, Eq)]
enum Simple<'a> {
    Str(&'a [u8]),
    Other,
}

struct Scanner<'a> {
    b: &'a [u8],
    i: usize,
    /// The first text string (its flags are applied by [`scan_full`] at the end).
    span: Option<Span>,
    /// Text strings seen (null values not counted).
    texts: u32,
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

    /// An object `{ "key": value, … }` at the cursor: `member` reads each value (its key given)
    /// and must leave the cursor after it; `None` from it or from the syntax declines the chunk.
    #[inline]
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

    /// An object key (ASCII) and its `:`.
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

    /// A text value: a string or null. A non-empty string sets `kind`'s flags in `info`, but
    /// the first string of the chunk is only remembered as [`Self::span`] (the template's
    /// varying body) and applied by [`scan_full`].
    fn text(&mut self, info: &mut ChunkInfo, kind: TextKind) -> Option<()> {
        if self.b.get(self.i) == Some(&b'n') {
            return self.null();
        }
        let start = self.i + 1;
        let v = self.string()?;
        self.texts += 1;
        if self.span.is_none() {
            self.span = Some(Span {
                start,
                end: start + v.len(),
                kind,
            });
        } else if !v.is_empty() {
            kind.apply(info);
        }
        Some(())
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
                b"text" => s.text(info, TextKind::Content)?,
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
                b"content" => s.text(info, TextKind::Content)?,
                b"reasoning_content" | b"reasoning" => s.text(info, TextKind::Reasoning)?,
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

    // ---- the per-stream template -------------------------------------------------------------

    use crate::chunk::{counts, scan_chunk, scan_chunk_templated};

    /// The answer without a template (fast or serde scan): info or error text, and the id slot
    /// after the scan (starting as `id`).
    fn full(s: &[u8], id: Option<&str>) -> (Result<ChunkInfo, String>, Option<String>) {
        let mut slot = id.map(str::to_string);
        let r = scan_chunk(
            s,
            Capture {
                text: None,
                id: Some(&mut slot),
            },
        )
        .map_err(|e| e.to_string());
        (r, slot)
    }

    /// The answer through `tpl`, the id slot after it, and whether the template answered.
    fn templated(
        s: &[u8],
        id: Option<&str>,
        tpl: &mut Template,
    ) -> (Result<ChunkInfo, String>, Option<String>, bool) {
        let mut slot = id.map(str::to_string);
        counts::take();
        let r = scan_chunk_templated(
            s,
            Capture {
                text: None,
                id: Some(&mut slot),
            },
            tpl,
        )
        .map_err(|e| e.to_string());
        let by_template = counts::take()[0] == 1;
        (r, slot, by_template)
    }

    /// Text bodies (raw JSON string bytes) a template must judge exactly as the full scan:
    /// plain, non-ASCII, escapes, quotes, control characters, invalid UTF-8 (a lone lead byte,
    /// a cut sequence, a UTF-8-encoded surrogate, a code point past U+10FFFF, an overlong form),
    /// and bodies that close the string and go on.
    const BODIES: &[&[u8]] = &[
        b"",
        b"x",
        b" every",
        "é中😀".as_bytes(),
        b"\"",
        b"a\"b",
        b"\\",
        b"a\\",
        b"\\n",
        b"\\\"",
        b"\\u00e9",
        b"\\ud800",
        b"\x01",
        b"a\x1f",
        b"\x7f",
        b"\xff",
        b"\xc3",
        b"\xc3(",
        b"\xe4\xb8",
        b"\xed\xa0\x80",
        b"\xf4\x90\x80\x80",
        b"\xc0\xaf",
        b"\"}]}",
        b"\",\"x\":\"",
        b"\"},{\"text\":\"y",
        b"\",\"text\":\"y",
        b"  ",
    ];

    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: usize) -> usize {
            (self.next() % n.max(1) as u64) as usize
        }
    }

    /// One or two byte edits (replace, remove, insert) at positions in `lo..=hi`.
    fn mutate(m: &mut Vec<u8>, rng: &mut Rng, lo: usize, hi: usize) {
        const ALPHABET: &[u8] = b"{}[]\":,\\ 0-9.eE+ntfaluxr\x01\x1f\xff\xc3\xa9\xe4";
        for _ in 0..(1 + rng.below(2)) {
            let hi = hi.min(m.len());
            let at = lo.min(hi) + rng.below(hi - lo.min(hi) + 1);
            let ch = ALPHABET[rng.below(ALPHABET.len())];
            match rng.below(3) {
                0 if at < m.len() => m[at] = ch,
                1 if at < m.len() => {
                    m.remove(at);
                }
                _ => m.insert(at, ch),
            }
        }
    }

    /// Streams as engines send them (the JSON of each event): the simulator's completions and
    /// chat shapes (role chunk, content, finish chunk, usage chunk), vLLM's reasoning then
    /// content deltas (and a chunk with both), llama.cpp with `timings` (serde only), tokens
    /// with escapes and non-ASCII text.
    fn streams() -> Vec<Vec<String>> {
        let toks = [
            " every", "é", "中", "😀", "\\n", "\\\"", "", " a b", "x", "\\u00e9", "1", " the",
        ];
        let tok = |i: usize| toks[i % toks.len()];
        let n = 30;
        let head = |o: &str| {
            format!(
                r#"{{"id":"cmpl-5a1f","object":"{o}","created":1796197963,"model":"Qwen/Qwen3-8B","choices":["#
            )
        };
        let mut out = Vec::new();
        let h = head("text_completion");
        let mut v: Vec<String> = (0..n)
            .map(|i| {
                let fin = if i + 1 == n { r#""length""# } else { "null" };
                format!(
                    r#"{h}{{"index":0,"text":"{}","logprobs":null,"finish_reason":{fin},"stop_reason":null}}]}}"#,
                    tok(i)
                )
            })
            .collect();
        v.push(format!(
            r#"{h}],"usage":{{"prompt_tokens":128,"total_tokens":{},"completion_tokens":{n}}}}}"#,
            128 + n
        ));
        out.push(v);
        let h = head("chat.completion.chunk");
        let mut v = vec![format!(
            r#"{h}{{"index":0,"delta":{{"role":"assistant","content":""}},"logprobs":null,"finish_reason":null}}]}}"#
        )];
        v.extend((0..n).map(|i| {
            let fin = if i + 1 == n { r#""stop""# } else { "null" };
            format!(
                r#"{h}{{"index":0,"delta":{{"content":"{}"}},"logprobs":null,"finish_reason":{fin}}}]}}"#,
                tok(i + 3)
            )
        }));
        v.push(format!(r#"{h}],"usage":null}}"#));
        out.push(v);
        // vLLM reasoning parser: reasoning deltas, one with both, then content; no id
        let mut v: Vec<String> = (0..n)
            .map(|i| match i * 3 / n {
                0 => format!(
                    r#"{{"choices":[{{"index":0,"delta":{{"reasoning_content":"{}"}},"finish_reason":null}}]}}"#,
                    tok(i)
                ),
                1 if i % 5 == 0 => format!(
                    r#"{{"choices":[{{"index":0,"delta":{{"reasoning_content":"{}","content":"{}"}},"finish_reason":null}}]}}"#,
                    tok(i),
                    tok(i + 1)
                ),
                _ => format!(
                    r#"{{"choices":[{{"index":0,"delta":{{"content":"{}","reasoning_content":null}},"finish_reason":null}}]}}"#,
                    tok(i)
                ),
            })
            .collect();
        v.push(r#"{"choices":[{"text":"a"},{"text":""},null]}"#.into());
        out.push(v);
        // llama.cpp with timings_per_token: every chunk goes to serde
        out.push(
            (0..n)
                .map(|i| {
                    format!(
                        r#"{{"choices":[{{"finish_reason":null,"index":0,"delta":{{"content":"{}"}}}}],"created":1,"id":"chatcmpl-q","object":"chat.completion.chunk","timings":{{"predicted_n":{i}}}}}"#,
                        tok(i)
                    )
                })
                .collect(),
        );
        out
    }

    /// The template path gives exactly the answer of the full scan (fast or serde), errors and
    /// captured ids included: over the corpus (each chunk primes a template; the same chunk with
    /// each of [`BODIES`] in its text, then with byte edits anywhere or near the body), and over
    /// streams (the template primed by chunks 0..=k as the live path does; chunk k+1 as sent, with
    /// other bodies, and with byte edits), each with the id slot empty and already filled.
    #[test]
    fn template_agrees_with_full_scan() {
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        let (mut cases, mut by_template, mut edited_by_template) = (0u64, 0u64, 0u64);
        let mut check = |target: &[u8], tpl: &Template, edited: bool| {
            for id in [None, Some("pre")] {
                let mut t = Template {
                    bytes: tpl.bytes.clone(),
                    ..*tpl
                };
                let (r, slot, hit) = templated(target, id, &mut t);
                let (want, want_slot) = full(target, id);
                assert_eq!(
                    r,
                    want,
                    "template {:?}+{:?}, chunk {:?}",
                    String::from_utf8_lossy(&tpl.bytes[..tpl.prefix]),
                    String::from_utf8_lossy(&tpl.bytes[tpl.prefix..]),
                    String::from_utf8_lossy(target)
                );
                assert_eq!(
                    slot,
                    want_slot,
                    "id of {:?}",
                    String::from_utf8_lossy(target)
                );
                cases += 1;
                by_template += u64::from(hit);
                edited_by_template += u64::from(hit && edited);
            }
        };
        // the targets for one primed template: `next` as is, other bodies, byte edits
        let targets = |tpl: &Template, next: &[u8], rng: &mut Rng| -> Vec<(Vec<u8>, bool)> {
            let mut v = vec![(next.to_vec(), false)];
            for _ in 0..60 {
                let mut m = next.to_vec();
                mutate(&mut m, rng, 0, usize::MAX);
                v.push((m, true));
            }
            if tpl.valid {
                let (p, s) = tpl.bytes.split_at(tpl.prefix);
                for b in BODIES {
                    let t = [p, b, s].concat();
                    for k in 0..8 {
                        // edits inside the body, or across its quotes
                        let (lo, hi) = match k % 2 {
                            0 => (p.len(), p.len() + b.len()),
                            _ => (p.len().saturating_sub(3), p.len() + b.len() + 3),
                        };
                        let mut m = t.clone();
                        mutate(&mut m, rng, lo, hi);
                        v.push((m, true));
                    }
                    v.push((t, true));
                }
            }
            v
        };
        for c in CORPUS {
            let mut tpl = Template::default();
            let _ = templated(c.as_bytes(), None, &mut tpl);
            for (t, edited) in targets(&tpl, c.as_bytes(), &mut rng) {
                check(&t, &tpl, edited);
            }
        }
        for stream in streams() {
            let mut tpl = Template::default();
            for k in 0..stream.len() - 1 {
                let _ = templated(stream[k].as_bytes(), None, &mut tpl);
                for (t, edited) in targets(&tpl, stream[k + 1].as_bytes(), &mut rng) {
                    check(&t, &tpl, edited);
                }
            }
        }
        eprintln!("template: {by_template} of {cases} answered ({edited_by_template} edited)");
        // the template path is exercised, on edited chunks too
        assert!(by_template > 3_000, "{by_template} of {cases}");
        assert!(edited_by_template > 2_500, "{edited_by_template}");
    }
}
