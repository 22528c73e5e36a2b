//! The simulator's tokenizer and output text.
//!
//! Tokenization (documented in docs/simulator.md): one token per whitespace-separated word
//! (`str::split_whitespace`, Unicode White_Space). Token ids: every id `i < vocab` is the
//! six-letter pseudo-word made of three syllables (base 64), so `/detokenize` of any id list
//! re-tokenizes to the same count; any other word gets id `FNV-1a(word) mod vocab` (its count
//! is exact, its text does not round-trip). Chat prompts are rendered with a ChatML-like
//! template and counted the same way.

/// 64 two-letter syllables: 16 consonants × 4 vowels.
const CONSONANTS: &[u8; 16] = b"bdfghjklmnprstvz";
const VOWELS: &[u8; 4] = b"aeio";

/// Words of the generic output text (plain ASCII, no escaping needed).
const GENERIC_WORDS: &[&str] = &[
    "the",
    "model",
    "answers",
    "with",
    "plain",
    "words",
    "and",
    "each",
    "word",
    "is",
    "one",
    "token",
    "so",
    "counts",
    "stay",
    "exact",
    "a",
    "simulated",
    "engine",
    "streams",
    "text",
    "while",
    "its",
    "clock",
    "follows",
    "compute",
    "memory",
    "bandwidth",
    "of",
    "named",
    "GPU",
    "batch",
    "grows",
    "as",
    "requests",
    "arrive",
    "prefill",
    "runs",
    "first",
    "then",
    "decode",
    "steps",
    "emit",
    "tokens",
    "for",
    "every",
    "running",
    "sequence",
    "cache",
    "holds",
    "keys",
    "values",
    "when",
    "full",
    "new",
    "wait",
    "in",
    "queue",
    "until",
    "blocks",
    "free",
    "up",
    "throughput",
    "rises",
    "latency",
    "too",
    "this",
    "sentence",
    "has",
    "no",
    "meaning",
    "beyond",
    "timing",
    "but",
    "it",
    "reads",
    "like",
    "prose",
    "to",
    "keep",
    "logs",
    "friendly",
    "we",
    "measure",
    "time",
    "per",
    "output",
    "from",
    "start",
    "end",
    "under",
    "load",
    "light",
    "heavy",
    "fast",
    "slow",
    "small",
    "large",
    "short",
    "long",
    "input",
    "context",
    "window",
    "step",
    "layer",
    "head",
    "weights",
    "read",
    "once",
    "shared",
    "by",
    "all",
    "sequences",
    "at",
    "scale",
    "numbers",
    "move",
    "right",
    "way",
    "with",
    "concurrency",
    "lengths",
    "hardware",
    "here",
    "there",
    "more",
    "less",
    "again",
    "done",
];

/// Tokens in `s`: whitespace-separated words.
pub fn count_tokens(s: &str) -> u32 {
    words(s).count().min(u32::MAX as usize) as u32
}

/// A prompt's word count and the hash of each of its full KV blocks, made in one pass.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct WordBlocks {
    /// Words (the simulator's tokens), as [`count_tokens`].
    pub words: u32,
    /// [`block_hash`] of each full block of `block` words, each word followed by one space (a
    /// partial last block has none): `blocks.len() = words / block`. Not yet chained (the
    /// server's `chain_hashes` makes `hash[i]` stand for the whole prefix `0..(i+1)·block`).
    pub blocks: Vec<u64>,
}

/// [`WordBlocks`] of `s` with `block` words per KV block (`block` 0 counts as 1): the count
/// and the block hashes the prefix cache needs in ONE scan of the prompt (an AgentX prompt is
/// up to megabytes; counting and hashing it separately read it twice).
///
/// Words are exactly [`words`]' (`str::split_whitespace`). Eight bytes are taken at once while
/// they are printable ASCII and single spaces that each end a word, and no block ends inside
/// them (the common case of generated prompts): those bytes are exactly the hashed stream
/// ("word␠word␠…"), so they go into the hash as one 8-byte word. Every other byte (newlines,
/// tabs, runs of spaces, controls, non-ASCII) goes through the one-char path. Same results as
/// counting [`words`] and hashing each block's words with [`block_hash`] (unit test on random
/// texts; bench `cargo bench -p servebench-sim --bench word_blocks` prints both).
pub fn word_blocks(s: &str, block: usize) -> WordBlocks {
    const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let mut h = BlockHasher::new(block.max(1), s.len());
    let b = s.as_bytes();
    let mut in_word = false;
    let mut i = 0;
    while i < b.len() {
        if let Some(chunk) = b.get(i..i + 8) {
            let v = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
            // bit 7 of each byte ≥ 0x80 or < 0x20 (no carry leaves a byte: 0x7f + 0x60 < 0x100)
            let odd = (v & HIGH) | (!((v & LOW7) + 0x6060_6060_6060_6060) & HIGH);
            if odd == 0 {
                // bit 7 of each space byte (exact zero-byte test of v ^ "        ")
                let t = v ^ 0x2020_2020_2020_2020;
                let sp = !(((t & LOW7) + LOW7) | t) & HIGH;
                let after_space = (sp << 8) | if in_word { 0 } else { 0x80 };
                let ended = sp.count_ones() as usize;
                if sp & after_space == 0 && h.in_block + ended < h.block {
                    h.push8(v);
                    h.in_block += ended;
                    h.words += ended;
                    in_word = v >> 56 != 0x20;
                    i += 8;
                    continue;
                }
            }
        }
        let c = b[i];
        let (space, len) = if c < 0x80 {
            (ASCII_SPACE[c as usize], 1)
        } else {
            match non_ascii_space_len(s, i) {
                0 => (false, utf8_len(c)),
                l => (true, l),
            }
        };
        if !space {
            for &byte in &b[i..i + len] {
                h.push(byte);
            }
        } else if in_word {
            h.end_word();
        }
        in_word = !space;
        i += len;
    }
    if in_word {
        h.end_word();
    }
    WordBlocks {
        words: h.words.min(u32::MAX as usize) as u32,
        blocks: h.blocks,
    }
}

/// Hash of one KV block's text as the prefix cache keys it: `stream` is the block's words,
/// each followed by one space ("w1␠w2␠…wB␠"). Little-endian 8-byte words of the stream (the
/// last one zero-padded) go through `x = rotl((x ⊕ w)·K, 31)` (K odd: a bijection of `x` for
/// each `w`, so no history is lost), then the stream's length, then SplitMix64's finaliser
/// ([`mix64`]). One multiply per 8 bytes (FNV-1a needs one per byte); only equality matters:
/// two blocks share a hash when their words are equal (else with probability ~2⁻⁶⁴).
pub fn block_hash(stream: &[u8]) -> u64 {
    let mut h = BlockHasher::new(usize::MAX, 0);
    for &b in stream {
        h.push(b);
    }
    h.finish()
}

const HASH_SEED: u64 = 0x243f_6a88_85a3_08d3;
const HASH_K: u64 = 0x9e37_79b9_7f4a_7c15;

/// [`word_blocks`]' running state: the current block's hash state ([`block_hash`]) with its
/// unfinished 8-byte word, its bytes and words, and the blocks so far.
struct BlockHasher {
    block: usize,
    x: u64,
    /// bytes not yet in `x`, little-endian (`pending` of them)
    acc: u64,
    pending: u32,
    bytes: u64,
    in_block: usize,
    words: usize,
    blocks: Vec<u64>,
}

impl BlockHasher {
    fn new(block: usize, bytes: usize) -> Self {
        Self {
            block,
            x: HASH_SEED,
            acc: 0,
            pending: 0,
            bytes: 0,
            in_block: 0,
            words: 0,
            // ~5 bytes a word in generated prompts
            blocks: Vec::with_capacity(bytes / 5 / block.max(1) + 1),
        }
    }
    #[inline]
    fn step(x: u64, w: u64) -> u64 {
        (x ^ w).wrapping_mul(HASH_K).rotate_left(31)
    }
    /// One byte of the stream.
    #[inline]
    fn push(&mut self, b: u8) {
        self.acc |= u64::from(b) << (8 * self.pending);
        self.pending += 1;
        self.bytes += 1;
        if self.pending == 8 {
            self.x = Self::step(self.x, self.acc);
            (self.acc, self.pending) = (0, 0);
        }
    }
    /// Eight bytes of the stream (`v` little-endian), as eight [`BlockHasher::push`]es.
    #[inline]
    fn push8(&mut self, v: u64) {
        self.bytes += 8;
        if self.pending == 0 {
            self.x = Self::step(self.x, v);
        } else {
            let sh = 8 * self.pending;
            self.x = Self::step(self.x, self.acc | (v << sh));
            self.acc = v >> (64 - sh);
        }
    }
    /// The block's hash; the state starts the next block.
    fn finish(&mut self) -> u64 {
        let x = Self::step(Self::step(self.x, self.acc), self.bytes);
        (self.x, self.acc, self.pending, self.bytes) = (HASH_SEED, 0, 0, 0);
        mix64(x)
    }
    /// A word ended: its separating space is hashed; a full block is kept.
    fn end_word(&mut self) {
        self.push(b' ');
        self.words += 1;
        self.in_block += 1;
        if self.in_block == self.block {
            let h = self.finish();
            self.blocks.push(h);
            self.in_block = 0;
        }
    }
}

/// The words of `s`: exactly `str::split_whitespace`'s (Unicode White_Space). Within a word
/// 8 bytes are checked at once (a word can only end at a byte ≤ 0x20 or a non-ASCII char);
/// non-ASCII chars are decoded one by one. Prompts are up to megabytes (an AgentX
/// conversation), counted and hashed per request: this is ~1.5× faster than `split_whitespace`.
pub fn words(s: &str) -> Words<'_> {
    Words { s, at: 0 }
}

/// Iterator of [`words`].
pub struct Words<'a> {
    s: &'a str,
    at: usize,
}

/// ASCII White_Space (`char::is_whitespace`): U+0009..=U+000D and U+0020.
const ASCII_SPACE: [bool; 128] = {
    let mut t = [false; 128];
    let mut i = 9;
    while i <= 13 {
        t[i] = true;
        i += 1;
    }
    t[32] = true;
    t
};

/// Length of the whitespace char at byte `i` of `s` (a char boundary, not ASCII), or 0.
#[cold]
#[inline(never)]
fn non_ascii_space_len(s: &str, i: usize) -> usize {
    match s[i..].chars().next() {
        Some(c) if c.is_whitespace() => c.len_utf8(),
        _ => 0,
    }
}

/// Length of the UTF-8 char whose first byte is `lead`.
fn utf8_len(lead: u8) -> usize {
    match lead {
        0..=0x7f => 1,
        0x80..=0xdf => 2,
        0xe0..=0xef => 3,
        _ => 4,
    }
}

impl<'a> Iterator for Words<'a> {
    type Item = &'a str;

    #[inline]
    fn next(&mut self) -> Option<&'a str> {
        let (s, b) = (self.s, self.s.as_bytes());
        let n = b.len();
        let mut i = self.at;
        loop {
            let Some(&c) = b.get(i) else {
                self.at = n;
                return None;
            };
            let l = if c < 0x80 {
                usize::from(ASCII_SPACE[c as usize])
            } else {
                non_ascii_space_len(s, i)
            };
            if l == 0 {
                break;
            }
            i += l;
        }
        let start = i;
        while i < n {
            // 8 bytes at a time while none is ≤ 0x20 or ≥ 0x80; the lowest flagged byte is
            // always a real one (a borrow only flags bytes above one that is)
            while let Some(chunk) = b.get(i..i + 8) {
                let x = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
                let special = (x.wrapping_sub(0x2121_2121_2121_2121) | x) & 0x8080_8080_8080_8080;
                if special != 0 {
                    i += (special.trailing_zeros() / 8) as usize;
                    break;
                }
                i += 8;
            }
            let Some(&c) = b.get(i) else {
                break;
            };
            if c < 0x80 {
                if ASCII_SPACE[c as usize] {
                    break;
                }
                i += 1;
            } else {
                if non_ascii_space_len(s, i) > 0 {
                    break;
                }
                i += utf8_len(c);
            }
        }
        self.at = i;
        Some(&s[start..i])
    }
}

/// The pseudo-word for token id `id` (`id < 262,144`): three syllables, six ASCII letters.
pub fn pseudo_word(id: u32) -> String {
    let mut w = String::with_capacity(6);
    for shift in [12u32, 6, 0] {
        let syl = (id >> shift) & 63;
        w.push(CONSONANTS[(syl >> 2) as usize] as char);
        w.push(VOWELS[(syl & 3) as usize] as char);
    }
    w
}

fn decode_pseudo(word: &str) -> Option<u32> {
    let b = word.as_bytes();
    if b.len() != 6 {
        return None;
    }
    let mut id = 0u32;
    for pair in b.chunks(2) {
        let c = CONSONANTS.iter().position(|&x| x == pair[0])? as u32;
        let v = VOWELS.iter().position(|&x| x == pair[1])? as u32;
        id = (id << 6) | (c << 2) | v;
    }
    Some(id)
}

/// 64-bit FNV-1a.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// SplitMix64 finaliser (a good 64-bit mix).
pub fn mix64(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Token id of one word (see the module docs).
pub fn token_id(word: &str, vocab: u32) -> u32 {
    match decode_pseudo(word) {
        Some(id) if id < vocab => id,
        _ => (fnv1a(word.as_bytes()) % vocab as u64) as u32,
    }
}

/// Token ids of `s`.
pub fn tokenize(s: &str, vocab: u32) -> Vec<u32> {
    words(s).map(|w| token_id(w, vocab)).collect()
}

/// Text of token ids: pseudo-words joined by single spaces.
///
/// Errors: the index and value of the first id `>= vocab`.
pub fn detokenize(ids: &[u64], vocab: u32) -> Result<String, (usize, u64)> {
    let mut s = String::with_capacity(ids.len() * 7);
    for (i, &id) in ids.iter().enumerate() {
        if id >= vocab as u64 {
            return Err((i, id));
        }
        if i > 0 {
            s.push(' ');
        }
        s.push_str(&pseudo_word(id as u32));
    }
    Ok(s)
}

/// Renders chat messages `(role, content)` with the simulator's ChatML-like template:
/// `<|im_start|>{role}\n{content}<|im_end|>\n` per message, then `<|im_start|>assistant\n`
/// when `add_generation_prompt`. Its token count is what chat requests are charged.
pub fn render_chat(messages: &[(String, String)], add_generation_prompt: bool) -> String {
    // sized up front: AgentX conversations render to megabytes, grown by doubling they were
    // copied about twice more
    let cap: usize = messages
        .iter()
        .map(|(r, c)| r.len() + c.len() + 24)
        .sum::<usize>()
        + 32;
    let mut s = String::with_capacity(cap);
    for (role, content) in messages {
        s.push_str("<|im_start|>");
        s.push_str(role);
        s.push('\n');
        s.push_str(content);
        s.push_str("<|im_end|>\n");
    }
    if add_generation_prompt {
        s.push_str("<|im_start|>assistant\n");
    }
    s
}

/// The `i`-th word of the generic text seeded by `seed`.
pub fn generic_word(seed: u64, i: u32) -> &'static str {
    GENERIC_WORDS[(mix64(seed ^ (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15))
        % GENERIC_WORDS.len() as u64) as usize]
}

/// Length of the generic answer (where the simulated model would emit EOS) for a prompt seed:
/// 64 to 1,024 tokens, deterministic.
pub fn generic_natural_len(seed: u64) -> u32 {
    64 + (mix64(seed ^ 0x5eed) % 961) as u32
}

/// Appends `s` JSON-escaped (without quotes) to `out`.
pub fn push_json_escaped(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let esc: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0..=0x1f => {
                out.extend_from_slice(&bytes[start..i]);
                out.extend_from_slice(format!("\\u{:04x}", b).as_bytes());
                start = i + 1;
                continue;
            }
            _ => continue,
        };
        out.extend_from_slice(&bytes[start..i]);
        out.extend_from_slice(esc);
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_whitespace_separated_words() {
        assert_eq!(count_tokens(""), 0);
        assert_eq!(count_tokens("  hello \n\t world  "), 2);
        assert_eq!(count_tokens("a,b c"), 2);
    }

    #[test]
    fn words_are_split_whitespaces_words() {
        let texts = [
            "",
            " ",
            "one",
            "  hello \n\t world  ",
            "a\u{0b}b\u{0c}c\rd\u{1c}e",
            "nbsp\u{a0}splits\u{85}and\u{2003}em\u{3000}ideographic\u{2028}line",
            "é è\u{200b}zero-width-is-not-white\u{feff}bom 日本語 テキスト 😀x 😀",
            "trailing\u{205f}",
            "\u{1680}lead",
        ];
        for t in texts {
            let want: Vec<&str> = t.split_whitespace().collect();
            assert_eq!(words(t).collect::<Vec<_>>(), want, "{t:?}");
            assert_eq!(count_tokens(t) as usize, want.len());
        }
        // random texts: long and short runs of letters, controls, whitespace of every kind
        // and multi-byte chars, so the 8-byte scan meets each of them at every offset
        let alphabet = [
            "a",
            "bcdefgh",
            "ijklmnopqrstuv",
            " ",
            "  ",
            "\t",
            "\n",
            "\r\n",
            "\u{0b}",
            "\u{1}",
            "\u{1f}",
            "!",
            "~",
            "\u{7f}",
            "é",
            "日本",
            "😀",
            "\u{a0}",
            "\u{85}",
            "\u{2009}",
            "\u{3000}",
            "\u{200b}",
        ];
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..3000 {
            let mut t = String::new();
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            for k in 0..(x % 40) {
                let r = x
                    .rotate_left(k as u32 * 5)
                    .wrapping_mul(0x9e37_79b9_7f4a_7c15)
                    >> 40;
                t.push_str(alphabet[(r % alphabet.len() as u64) as usize]);
            }
            let want: Vec<&str> = t.split_whitespace().collect();
            assert_eq!(words(&t).collect::<Vec<_>>(), want, "{t:?}");
            // the one-pass count and block hashes: the count of the words, and the block_hash
            // of each full block's words joined as "w1 w2 … wB " (block sizes 1, 2, 3 and 16)
            for block in [1, 2, 3, 16] {
                let wb = word_blocks(&t, block);
                assert_eq!(wb.words as usize, want.len(), "{t:?}");
                let blocks: Vec<u64> = want
                    .chunks_exact(block)
                    .map(|c| block_hash(format!("{} ", c.join(" ")).as_bytes()))
                    .collect();
                assert_eq!(wb.blocks, blocks, "{t:?} in blocks of {block}");
            }
        }
        // the block hash tells apart every stream of up to 4 bytes over a small alphabet
        // (zero bytes included: the length is hashed, not just the zero-padded words)
        let mut seen = std::collections::HashMap::new();
        let alphabet = [0u8, b' ', b'a', 0xff];
        for len in 0..=4u32 {
            for code in 0..4u32.pow(len) {
                let stream: Vec<u8> = (0..len)
                    .map(|k| alphabet[(code / 4u32.pow(k) % 4) as usize])
                    .collect();
                if let Some(other) = seen.insert(block_hash(&stream), stream.clone()) {
                    panic!("{stream:?} and {other:?} share a hash");
                }
            }
        }
        // long generated prompts (the fast path's case: " abc def …"), with a newline, a run
        // of spaces, a tab, a control or a multi-byte char now and then, at every offset
        let odd = ["\n", "  ", "\t", "\u{1}", "é", " \u{a0}", "\u{3000}", "x", "\r\n "];
        for seed in 0..200u64 {
            let (mut t, mut y) = (String::new(), seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
            for _ in 0..(seed % 7) {
                t.push('w');
            }
            for _ in 0..400 {
                y ^= y << 13;
                y ^= y >> 7;
                y ^= y << 17;
                t.push(' ');
                t.push_str(&"abcdefghij"[(y % 5) as usize..][..(1 + (y >> 8) % 5) as usize]);
                if (y >> 20) % 17 == 0 {
                    t.push_str(odd[((y >> 30) % odd.len() as u64) as usize]);
                }
            }
            let want: Vec<&str> = t.split_whitespace().collect();
            for block in [1, 2, 3, 5, 16, 64] {
                let wb = word_blocks(&t, block);
                assert_eq!(wb.words as usize, want.len(), "seed {seed}");
                let blocks: Vec<u64> = want
                    .chunks_exact(block)
                    .map(|c| block_hash(format!("{} ", c.join(" ")).as_bytes()))
                    .collect();
                assert_eq!(wb.blocks, blocks, "seed {seed}, blocks of {block}");
            }
        }
        // every char below U+3100 (all of Unicode's White_Space) between two letters
        for c in (0u32..0x3100).filter_map(char::from_u32) {
            let t = format!("a{c}b {c}");
            let want: Vec<&str> = t.split_whitespace().collect();
            assert_eq!(words(&t).collect::<Vec<_>>(), want, "U+{:04X}", c as u32);
        }
    }

    #[test]
    fn pseudo_words_round_trip_for_every_id_in_range() {
        let vocab = 151_936;
        for id in (0..vocab).step_by(97).chain([0, vocab - 1]) {
            let w = pseudo_word(id);
            assert_eq!(w.len(), 6);
            assert_eq!(token_id(&w, vocab), id, "{w}");
        }
        let ids: Vec<u64> = vec![0, 5, 151_935, 4096];
        let text = detokenize(&ids, vocab).unwrap();
        assert_eq!(
            tokenize(&text, vocab),
            ids.iter().map(|&i| i as u32).collect::<Vec<_>>()
        );
        assert_eq!(detokenize(&[1, 151_936], vocab), Err((1, 151_936)));
    }

    #[test]
    fn other_words_get_stable_ids_in_range() {
        let a = token_id("hello", 1000);
        assert_eq!(a, token_id("hello", 1000));
        assert!(a < 1000);
        // A pseudo-word whose id is >= vocab falls back to the hash.
        assert!(token_id(&pseudo_word(200_000), 151_936) < 151_936);
    }

    #[test]
    fn chat_template_counts() {
        let m = vec![
            ("system".to_string(), "be brief".to_string()),
            ("user".to_string(), "what is two plus two".to_string()),
        ];
        let r = render_chat(&m, true);
        // 2 + 5 content words, one role word per message, one generation prompt word.
        assert_eq!(count_tokens(&r), 7 + 2 + 1);
        assert!(r.ends_with("<|im_start|>assistant\n"));
    }

    #[test]
    fn json_escaping() {
        let mut v = Vec::new();
        push_json_escaped(&mut v, "a\"b\\c\nd\u{1}é");
        assert_eq!(String::from_utf8(v).unwrap(), "a\\\"b\\\\c\\nd\\u0001é");
        for w in GENERIC_WORDS {
            let mut v = Vec::new();
            push_json_escaped(&mut v, w);
            assert_eq!(v, w.as_bytes());
        }
    }

    #[test]
    fn generic_text_is_deterministic() {
        assert_eq!(generic_word(42, 3), generic_word(42, 3));
        let n = generic_natural_len(7);
        assert!((64..=1024).contains(&n));
    }
}
