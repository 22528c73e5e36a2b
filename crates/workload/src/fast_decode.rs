//! A cheaper exact `decode` for byte-level tokenizers (Llama-3, Qwen2/3, GPT-2/4-style
//! `tokenizer.json` whose decoder is `ByteLevel`): each id's bytes are computed once, from the
//! library's own token string, and a text is their concatenation.
//!
//! Why: the random dataset decodes every prompt's ids at least once (InferenceX's decode →
//! encode round trip), and `tokenizers`' decode clones one `String` per id, maps it char by char
//! through a hash map and then joins: ~29 % of the dataset build's instructions
//! (docs/benchmarks-client.md, Update 7).
//!
//! Exactly what `tokenizers` 0.22 `Tokenizer::decode(ids, false)` does with a `ByteLevel`
//! decoder: each id's token is the added token's content if the id is an added token's, else
//! the model's token (`Tokenizer::id_to_token`, the lookup decode makes); ids without a token
//! are skipped (`filter_map`); with `skip_special_tokens = false` nothing else is filtered. The
//! `ByteLevel` decoder maps a token whose chars are all in GPT-2's byte alphabet to those bytes,
//! and any other token to its own UTF-8 bytes; the bytes of all tokens are concatenated and
//! converted with `String::from_utf8_lossy` (so a character split across two tokens decodes as
//! one character, and invalid bytes become U+FFFD exactly where the library puts them). This
//! module does the same per token, caching each id's bytes, and applies the same
//! `from_utf8_lossy` to the same byte string. Every other decoder (none, `Sequence`,
//! `Metaspace`, `ByteFallback`, …) is declined: [`ByteLevelDecoder::for_tokenizer`] answers
//! `None` and the caller decodes with the library. The dataset build also cross-checks its
//! first decodes against the library ([`crate::tokenizer::CheckedDecoder`], used by the dataset
//! build and by AgentX trace reconstruction).

use tokenizers::Tokenizer;

use crate::fast_count::byte_chars;

/// Span of an id whose bytes are not computed yet.
const UNFILLED: u32 = u32::MAX;

/// Exact `Tokenizer::decode(ids, false)` for one tokenizer with a `ByteLevel` decoder (see the
/// module docs). Holds each decoded id's bytes (filled on first use, so a 150k-token
/// vocabulary costs only the ids actually decoded).
pub struct ByteLevelDecoder {
    /// Per id: start of its bytes in `bytes` ([`UNFILLED`] before first use) and their length.
    spans: Vec<(u32, u32)>,
    /// Every filled id's bytes, back to back.
    bytes: Vec<u8>,
    /// GPT-2 byte-level char (U+0000..U+0143) → its byte, `-1` for chars outside the alphabet
    /// (the inverse of `tokenizers`' `bytes_char`).
    char_byte: Vec<i16>,
    /// Scratch: the bytes of the text being decoded.
    buf: Vec<u8>,
}

impl std::fmt::Debug for ByteLevelDecoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ByteLevelDecoder({} bytes cached)", self.bytes.len())
    }
}

impl ByteLevelDecoder {
    /// The decoder for `tok`, or `None` when its decoder is not exactly `ByteLevel`.
    pub fn for_tokenizer(tok: &Tokenizer) -> Option<Self> {
        if !matches!(
            tok.get_decoder(),
            Some(tokenizers::DecoderWrapper::ByteLevel(_))
        ) {
            return None;
        }
        let table = byte_chars();
        let top = table.iter().map(|&c| c as usize).max().unwrap_or(0);
        let mut char_byte = vec![-1i16; top + 1];
        for (b, &c) in table.iter().enumerate() {
            char_byte[c as usize] = b as i16;
        }
        Some(Self {
            spans: Vec::new(),
            bytes: Vec::new(),
            char_byte,
            buf: Vec::new(),
        })
    }

    /// Text of `ids`, equal to `tok.decode(ids, false)` (`tok`: the tokenizer this decoder was
    /// made for).
    pub fn decode(&mut self, tok: &Tokenizer, ids: &[u32]) -> String {
        let mut buf = std::mem::take(&mut self.buf);
        buf.clear();
        for &id in ids {
            let (start, len) = self.span(tok, id);
            buf.extend_from_slice(&self.bytes[start..start + len]);
        }
        let text = String::from_utf8_lossy(&buf).into_owned();
        self.buf = buf;
        text
    }

    /// Where `id`'s bytes are in `self.bytes`, computing them on first use.
    fn span(&mut self, tok: &Tokenizer, id: u32) -> (usize, usize) {
        let i = id as usize;
        if let Some(&(start, len)) = self.spans.get(i) {
            if start != UNFILLED {
                return (start as usize, len as usize);
            }
        } else {
            self.spans.resize(i + 1, (UNFILLED, 0));
        }
        let start = self.bytes.len();
        // the lookup `decode` makes; an id without a token contributes nothing
        if let Some(token) = tok.id_to_token(id) {
            let mapped = token.chars().try_fold(Vec::new(), |mut acc, c| {
                let b = *self.char_byte.get(c as usize)?;
                acc.push(u8::try_from(b).ok()?);
                Some(acc)
            });
            match mapped {
                Some(b) => self.bytes.extend_from_slice(&b),
                None => self.bytes.extend_from_slice(token.as_bytes()),
            }
        }
        let len = self.bytes.len() - start;
        if let (Ok(s), Ok(l)) = (u32::try_from(start), u32::try_from(len)) {
            if s != UNFILLED {
                self.spans[i] = (s, l);
            }
            // (else: past 4 GiB of token bytes, not cached; still exact)
        }
        (start, len)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Random id sequences over the whole id range (added/special tokens, byte tokens that
    /// split UTF-8 characters, ids past the vocabulary) decode exactly as the library does.
    pub(crate) fn assert_equal_on_random_ids(tok: &Tokenizer, n_seqs: usize) -> usize {
        let mut dec = ByteLevelDecoder::for_tokenizer(tok).expect("ByteLevel decoder");
        let top = tok.get_vocab_size(true) as u64 + 3;
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        let mut lossy = 0;
        for k in 0..n_seqs {
            let len = 1 + k % 97;
            let ids: Vec<u32> = (0..len)
                .map(|_| {
                    rng ^= rng << 13;
                    rng ^= rng >> 7;
                    rng ^= rng << 17;
                    (rng % top) as u32
                })
                .collect();
            let want = tok.decode(&ids, false).unwrap();
            let got = dec.decode(tok, &ids);
            assert_eq!(got, want, "ids {ids:?}");
            lossy += usize::from(want.contains('\u{FFFD}'));
        }
        lossy
    }

    #[test]
    fn decodes_equal_library() {
        let tok = crate::fast_count::tests::llama3_like();
        let lossy = assert_equal_on_random_ids(&tok, 3_000);
        assert!(lossy > 100, "byte tokens split characters: {lossy}");
        let mut dec = ByteLevelDecoder::for_tokenizer(&tok).unwrap();
        // an added token decodes as its content; a char split over two byte tokens joins up
        let eot = tok.token_to_id("<|eot|>").unwrap();
        let e_acute = "é".as_bytes();
        let ids = [
            u32::from(b'a'),
            eot,
            u32::from(e_acute[0]),
            u32::from(e_acute[1]),
            u32::from(b' '),
        ];
        assert_eq!(dec.decode(&tok, &ids), "a<|eot|>é ");
        assert_eq!(dec.decode(&tok, &ids), tok.decode(&ids, false).unwrap());
        let eot2 = tok.token_to_id("<|end of\u{2581}turn|>").unwrap();
        assert_eq!(
            dec.decode(&tok, &[eot2, 0xC3]),
            "<|end of\u{2581}turn|>\u{FFFD}"
        );
    }

    #[test]
    fn other_decoders_are_not_taken() {
        let mut tok = crate::fast_count::tests::llama3_like();
        tok.with_decoder(Some(tokenizers::decoders::bpe::BPEDecoder::default()));
        assert!(ByteLevelDecoder::for_tokenizer(&tok).is_none());
        tok.with_decoder(None::<tokenizers::DecoderWrapper>);
        assert!(ByteLevelDecoder::for_tokenizer(&tok).is_none());
    }
}
