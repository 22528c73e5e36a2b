//! The BPE merges of a byte-level model applied to one piece, with the same algorithm as
//! `tokenizers`' `BPE::merge_word` / `Word::merge_all` but without what it allocates per call
//! (a `String` per char to look it up, a `String` per output token from `id_to_token`, the
//! `Token`s and their offsets).
//!
//! Why: a random-id prompt glues long runs of letters whose pieces are mostly new, so the
//! dataset build hands ~40 % of its pieces to the model; with the 128k DeepSeek-V4 tokenizer the
//! model's `tokenize` was the largest part of a whole `bench` process besides the measured
//! window (docs/benchmarks.md §9.2, §9.4).
//!
//! Same answer as the library: the merge table is built as `BpeBuilder::build` builds it (rank =
//! index in the file's `merges`, a later duplicate pair replacing an earlier one, the merged
//! token's id looked up as `left + right`), and [`FastBpe::tokenize`] runs `merge_all`'s
//! priority queue: the lowest (rank, position) entry first, an entry skipped when its left
//! symbol was merged away, is last, or its pair no longer yields the entry's token. Entries
//! with equal (rank, position) are the same merge, so the order among them does not matter.
//! Used only for the shape [`FastBpe::from_file`] checks; anything else keeps the library's
//! `tokenize` (CI: `real_tokenizer` compares both on the real tokenizers).

use std::borrow::Cow;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::path::Path;

use serde::Deserialize;
use tokenizers::{Model, Tokenizer};

/// The merge table and byte symbols of one byte-level BPE model.
pub(crate) struct FastBpe {
    /// Id of each byte's one-char token (GPT-2 byte alphabet).
    byte_id: [u32; 256],
    /// (left id, right id) → (rank, merged id).
    merges: HashMap<u64, (u32, u32), PairHash>,
}

/// `tokenizer.json`, only the model's merges.
#[derive(Deserialize)]
struct File<'a> {
    #[serde(borrow)]
    model: ModelJson<'a>,
}

#[derive(Deserialize)]
struct ModelJson<'a> {
    #[serde(borrow)]
    merges: Vec<MergeJson<'a>>,
}

/// A merge as `"left right"` (the legacy form) or `["left", "right"]`.
#[derive(Deserialize)]
#[serde(untagged)]
enum MergeJson<'a> {
    Legacy(#[serde(borrow)] Cow<'a, str>),
    Pair(#[serde(borrow)] Cow<'a, str>, #[serde(borrow)] Cow<'a, str>),
}

/// Hashes a pair key `left << 32 | right` with one multiply (keys are ids, not adversarial).
#[derive(Default, Clone, Copy)]
struct PairHash;

impl std::hash::BuildHasher for PairHash {
    type Hasher = PairHasher;
    fn build_hasher(&self) -> PairHasher {
        PairHasher(0)
    }
}

/// The [`PairHash`] state.
struct PairHasher(u64);

impl std::hash::Hasher for PairHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }
    fn write_u64(&mut self, n: u64) {
        // the high bits choose the bucket group: fold them in
        let x = n.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        self.0 = x ^ (x >> 32);
    }
}

/// One symbol of the word being merged (`tokenizers`' `Symbol`).
#[derive(Clone, Copy)]
pub(crate) struct Symbol {
    id: u32,
    prev: i32,
    next: i32,
    /// 0: merged into its left neighbour.
    len: u32,
}

impl FastBpe {
    /// The merge table of `tok`'s model read from `file` (the `tokenizer.json` it was loaded
    /// from), or `None` when the model is not a plain byte-level BPE this reproduces (dropout,
    /// sub-word prefix or suffix, `ignore_merges`, a byte without its token, a merge the
    /// library would have refused) or the file does not parse.
    pub(crate) fn from_file(tok: &Tokenizer, file: &Path, byte_char: &[char; 256]) -> Option<Self> {
        let tokenizers::ModelWrapper::BPE(bpe) = tok.get_model() else {
            return None;
        };
        if !matches!(bpe.dropout, None | Some(0.0))
            || bpe.continuing_subword_prefix.is_some()
            || bpe.end_of_word_suffix.is_some()
            || bpe.ignore_merges
        {
            return None;
        }
        let mut byte_id = [0u32; 256];
        let mut utf8 = [0u8; 4];
        for (b, id) in byte_id.iter_mut().enumerate() {
            *id = bpe.token_to_id(byte_char[b].encode_utf8(&mut utf8))?;
        }
        let text = std::fs::read_to_string(file).ok()?;
        let parsed: File<'_> = serde_json::from_str(&text).ok()?;
        let mut merges = HashMap::with_capacity_and_hasher(parsed.model.merges.len(), PairHash);
        let mut joined = String::new();
        for (rank, m) in parsed.model.merges.iter().enumerate() {
            let (a, b) = match m {
                MergeJson::Legacy(s) => {
                    let mut parts = s.split(' ');
                    match (parts.next(), parts.next(), parts.next()) {
                        (Some(a), Some(b), None) => (a, b),
                        _ => return None,
                    }
                }
                MergeJson::Pair(a, b) => (a.as_ref(), b.as_ref()),
            };
            let a_id = bpe.token_to_id(a)?;
            let b_id = bpe.token_to_id(b)?;
            joined.clear();
            joined.push_str(a);
            joined.push_str(b);
            let new_id = bpe.token_to_id(&joined)?;
            merges.insert(
                u64::from(a_id) << 32 | u64::from(b_id),
                (u32::try_from(rank).ok()?, new_id),
            );
        }
        Some(Self { byte_id, merges })
    }

    fn merge_of(&self, left: u32, right: u32) -> Option<(u32, u32)> {
        self.merges
            .get(&(u64::from(left) << 32 | u64::from(right)))
            .copied()
    }

    /// Appends the ids of the raw-byte piece `piece` (before the byte-level mapping) to `out`:
    /// the model's `tokenize` of its byte-level string.
    pub(crate) fn tokenize(&self, piece: &[u8], out: &mut Vec<u32>, scratch: &mut Scratch) {
        let Scratch { syms, heap } = scratch;
        syms.clear();
        heap.clear();
        let n = piece.len() as i32;
        syms.extend(piece.iter().enumerate().map(|(i, &b)| Symbol {
            id: self.byte_id[b as usize],
            prev: i as i32 - 1,
            next: if i as i32 + 1 < n { i as i32 + 1 } else { -1 },
            len: 1,
        }));
        for (i, w) in syms.windows(2).enumerate() {
            if let Some((rank, new_id)) = self.merge_of(w[0].id, w[1].id) {
                heap.push(Reverse((rank, i as u32, new_id)));
            }
        }
        while let Some(Reverse((_, pos, new_id))) = heap.pop() {
            let pos = pos as usize;
            let cur = syms[pos];
            if cur.len == 0 || cur.next == -1 {
                continue;
            }
            let next_pos = cur.next as usize;
            let right = syms[next_pos];
            if self.merge_of(cur.id, right.id).map(|m| m.1) != Some(new_id) {
                continue;
            }
            syms[pos].id = new_id;
            syms[pos].len += right.len;
            syms[pos].next = right.next;
            syms[next_pos].len = 0;
            if right.next > -1 && (right.next as usize) < syms.len() {
                syms[right.next as usize].prev = pos as i32;
            }
            let cur = syms[pos];
            if cur.prev >= 0 {
                let prev = syms[cur.prev as usize];
                if let Some((rank, id)) = self.merge_of(prev.id, cur.id) {
                    heap.push(Reverse((rank, cur.prev as u32, id)));
                }
            }
            if cur.next >= 0 && (cur.next as usize) < syms.len() {
                let next = syms[cur.next as usize];
                if let Some((rank, id)) = self.merge_of(cur.id, next.id) {
                    heap.push(Reverse((rank, pos as u32, id)));
                }
            }
        }
        out.extend(syms.iter().filter(|s| s.len != 0).map(|s| s.id));
    }
}

/// Scratch space for [`FastBpe::tokenize`] (kept between calls: no allocation per piece).
#[derive(Default)]
pub(crate) struct Scratch {
    syms: Vec<Symbol>,
    /// (rank, position, merged id), lowest first.
    heap: BinaryHeap<Reverse<(u32, u32, u32)>>,
}
