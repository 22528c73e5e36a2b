//! The fixed-sequence random dataset with InferenceX semantics (MEASUREMENT.md Part 2 §1.2, §1.4).
//!
//! Lengths: `input_lens[i] ~ U{⌊ISL·r⌋ .. ISL}`, `output_lens[i] ~ U{⌊OSL·r⌋ .. OSL}` (inclusive,
//! r = range ratio, 0.8 by default), offsets `~ U{0 .. vocab-1}`, all drawn from numpy's legacy
//! global generator seeded with `seed` in that order (all input lengths, then all output lengths,
//! then all offsets) — bit-identical to InferenceX's draws (see [`crate::numpy_rng`]).
//!
//! Prompt i (local tokenizer): token ids `(offset_i + i + j) mod vocab` for `j < input_lens[i]`,
//! decoded to text, then up to 10 rounds of re-encode → pad with random ids / truncate →
//! re-decode until the text encodes to exactly `input_lens[i]` tokens; optionally wrapped in the
//! model's chat template (the template overhead `T = len(encode(template("a"))) − 1` is subtracted
//! from ISL before drawing lengths, as InferenceX does). The recorded client-side prompt length is
//! `len(encode(final_text))` without special tokens.
//!
//! Parity: lengths and offsets match InferenceX exactly for the same vocab size. The text of a
//! prompt matches whenever the first decode→encode round trip is already exact (the usual case);
//! when padding is needed, InferenceX draws pad ids from per-worker generators whose seeds depend
//! on the machine's CPU count, so padded prompt bytes are not reproducible even between two
//! InferenceX machines; we draw them from one separate seeded MT19937 stream.
//!
//! Without a local tokenizer the prompts are runs of synthetic words (unique per prompt, no
//! shared prefix) whose token count is calibrated against the server (`/tokenize`) through a
//! [`TokenCounter`]; lengths are then as exact as that server's tokenizer allows and every
//! recorded count is the server's own count of the exact text sent.

use std::sync::Arc;
use std::time::Duration;

use crate::error::{Result, WorkloadError};
use crate::numpy_rng::NumpyLegacyRng;
use crate::source::{Prompt, RequestSpec};
use crate::tokenizer::{ChatTemplate, CheckedDecoder, LocalTokenizer, TokenCounter};

/// Parameters of the random dataset (InferenceX defaults noted per field).
#[derive(Debug, Clone, PartialEq)]
pub struct RandomDatasetConfig {
    /// Nominal input length ISL in tokens (`--random-input-len`).
    pub input_len: u32,
    /// Nominal output length OSL in tokens (`--random-output-len`).
    pub output_len: u32,
    /// Range ratio r: lengths uniform in `[⌊L·r⌋, L]` (InferenceX: 0.8).
    pub range_ratio: f64,
    /// Number of measured prompts (InferenceX: 10 × concurrency).
    pub num_prompts: usize,
    /// Seed of the numpy-compatible generator (InferenceX: 0).
    pub seed: u32,
}

/// How prompt token counts were obtained.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenCountSource {
    /// The model's own tokenizer, offline (`tokenizer.json` path).
    LocalTokenizer(String),
    /// Calibrated against the server's tokenizer (the description says which endpoint).
    Server(String),
}

/// One prompt of the dataset.
#[derive(Debug, Clone)]
pub struct DatasetEntry {
    /// The prompt text as sent (after the chat template when one is applied client-side).
    pub text: Arc<str>,
    /// Client-side token count of `text` (no special tokens).
    pub prompt_tokens: u32,
    /// The drawn target length `input_lens[i]` (before template overhead is added back).
    pub target_tokens: u32,
    /// `output_lens[i]`, sent as `max_tokens`.
    pub max_tokens: u32,
}

/// The generated dataset.
#[derive(Debug, Clone)]
pub struct Dataset {
    /// Prompts in dataset order.
    pub entries: Vec<DatasetEntry>,
    /// Where token counts come from.
    pub token_source: TokenCountSource,
    /// Number of prompts whose (pre-template) text hit the drawn length exactly.
    pub exact: usize,
    /// Chat-template overhead T subtracted from ISL (0 without a template).
    pub template_overhead: u32,
    /// The configuration it was built from.
    pub config: RandomDatasetConfig,
    /// How tokens were counted while building it (local tokenizer builds; zero otherwise).
    pub counts: CountStats,
}

impl Dataset {
    /// The measured requests, `id` = dataset index.
    pub fn requests(&self) -> Vec<RequestSpec> {
        self.entries
            .iter()
            .enumerate()
            .map(|(i, e)| RequestSpec {
                id: i as u64,
                session: None,
                prompt: Prompt::Text(e.text.clone()),
                prompt_tokens: Some(e.prompt_tokens),
                max_tokens: e.max_tokens,
                delay: Duration::ZERO,
            })
            .collect()
    }

    /// `n` warmup copies of prompt 0 with its own output length (InferenceX §1.4).
    pub fn warmup_requests(&self, n: usize) -> Vec<RequestSpec> {
        let Some(first) = self.entries.first() else {
            return Vec::new();
        };
        (0..n)
            .map(|i| RequestSpec {
                id: i as u64,
                session: None,
                prompt: Prompt::Text(first.text.clone()),
                prompt_tokens: Some(first.prompt_tokens),
                max_tokens: first.max_tokens,
                delay: Duration::ZERO,
            })
            .collect()
    }

    /// Mean client-side prompt tokens.
    pub fn mean_prompt_tokens(&self) -> f64 {
        if self.entries.is_empty() {
            return 0.0;
        }
        self.entries
            .iter()
            .map(|e| f64::from(e.prompt_tokens))
            .sum::<f64>()
            / self.entries.len() as f64
    }

    /// One line for the user: what was generated and how it was counted.
    pub fn describe(&self) -> String {
        let src = match &self.token_source {
            TokenCountSource::LocalTokenizer(p) => format!("token counts from local tokenizer {p}"),
            TokenCountSource::Server(d) => {
                format!("token counts calibrated against the server ({d})")
            }
        };
        format!(
            "random dataset: {} prompts, ISL {} / OSL {} (range ratio {}, seed {}), mean prompt {:.1} tokens, {}/{} at exact drawn length; {}",
            self.entries.len(),
            self.config.input_len,
            self.config.output_len,
            self.config.range_ratio,
            self.config.seed,
            self.mean_prompt_tokens(),
            self.exact,
            self.entries.len(),
            src
        )
    }
}

/// The three length/offset arrays of InferenceX's `sample_random_requests`, in draw order.
///
/// `input_len` is the (template-adjusted) ISL; returns `(input_lens, output_lens, offsets)`.
/// Errors when a length would be 0 or the vocabulary is empty.
pub fn draw_lengths(
    rng: &mut NumpyLegacyRng,
    input_len: u32,
    output_len: u32,
    range_ratio: f64,
    n: usize,
    vocab: u32,
) -> Result<(Vec<u32>, Vec<u32>, Vec<u32>)> {
    if !(0.0..=1.0).contains(&range_ratio) {
        return Err(WorkloadError::RangeRatio { range_ratio });
    }
    if input_len == 0 || output_len == 0 {
        return Err(WorkloadError::ZeroLength {
            input_len,
            output_len,
        });
    }
    if vocab == 0 {
        return Err(WorkloadError::EmptyVocabulary);
    }
    let lo = |l: u32| (f64::from(l) * range_ratio).floor() as i64;
    let map = |v: Vec<i64>| v.into_iter().map(|x| x as u32).collect::<Vec<u32>>();
    let e = WorkloadError::Draw;
    let ins = map(rng
        .randint(lo(input_len), i64::from(input_len) + 1, n)
        .map_err(e)?);
    let outs = map(rng
        .randint(lo(output_len), i64::from(output_len) + 1, n)
        .map_err(e)?);
    let offs = map(rng.randint(0, i64::from(vocab), n).map_err(e)?);
    Ok((ins, outs, offs))
}

/// Builds the dataset with the model's own tokenizer (and optional client-side chat template).
///
/// Errors: zero lengths, a template that does not render, tokenizer failures.
pub fn build_with_tokenizer(
    cfg: &RandomDatasetConfig,
    tok: &LocalTokenizer,
    template: Option<&ChatTemplate>,
) -> Result<Dataset> {
    build(cfg, tok, template, true)
}

/// [`build_with_tokenizer`] with every encode and decode made by `tokenizers` itself (no fast
/// counter, no fast decoder): the reference the fast paths must equal prompt for prompt (tests
/// compare the two; slower, otherwise unused).
///
/// Errors: as [`build_with_tokenizer`].
pub fn build_with_tokenizer_library_only(
    cfg: &RandomDatasetConfig,
    tok: &LocalTokenizer,
    template: Option<&ChatTemplate>,
) -> Result<Dataset> {
    build(cfg, tok, template, false)
}

fn build(
    cfg: &RandomDatasetConfig,
    tok: &LocalTokenizer,
    template: Option<&ChatTemplate>,
    fast: bool,
) -> Result<Dataset> {
    let vocab = tok.vocab_size();
    let overhead = match template {
        Some(t) => (tok.encode(&t.render_user("a")?)?.len() as u32).saturating_sub(1),
        None => 0,
    };
    let input_len = cfg.input_len.saturating_sub(overhead).max(1);
    let mut rng = NumpyLegacyRng::new(cfg.seed);
    let (ins, outs, offs) = draw_lengths(
        &mut rng,
        input_len,
        cfg.output_len,
        cfg.range_ratio,
        cfg.num_prompts,
        vocab,
    )?;
    // Separate stream for padding ids (see module docs on parity).
    let mut pad_rng = NumpyLegacyRng::with_key(&[cfg.seed, 0x9ad5_eed5]);
    let mut entries = Vec::with_capacity(cfg.num_prompts);
    let mut exact = 0;
    let mut lc = LengthCheck::new(tok, fast);
    let mut ids: Vec<u32> = Vec::with_capacity(cfg.input_len as usize + 1);
    for i in 0..cfg.num_prompts {
        let target = ins[i] as usize;
        ids.clear();
        ids.extend(
            (0..target)
                .map(|j| ((u64::from(offs[i]) + i as u64 + j as u64) % u64::from(vocab)) as u32),
        );
        let mut text = lc.decode(&ids)?;
        let mut hit = false;
        // token count of `text` as it is now (known after every encode of it; saves the final
        // re-encode when no template wraps the text)
        let mut text_len = None;
        for _ in 0..10 {
            // the ids of `text`: their number is the length check, and a text off its length
            // is padded or truncated by id (one encode serves both)
            lc.encode_into(&text, &mut ids)?;
            if ids.len() == target {
                hit = true;
                text_len = Some(target);
                break;
            }
            lc.stats.id_encodes += 1;
            if ids.len() < target {
                let pad = pad_rng
                    .randint(0, i64::from(vocab), target - ids.len())
                    .map_err(WorkloadError::Draw)?;
                ids.extend(pad.into_iter().map(|x| x as u32));
            } else {
                ids.truncate(target);
            }
            text = lc.decode(&ids)?;
        }
        if !hit {
            let n = lc.count(&text)?;
            text_len = Some(n);
            hit = n == target;
        }
        if hit {
            exact += 1;
        }
        let (final_text, prompt_tokens) = match (template, text_len) {
            (Some(t), _) => {
                let wrapped = t.render_user(&text)?;
                let n = lc.count(&wrapped)?;
                (wrapped, n)
            }
            (None, Some(n)) => (text, n),
            (None, None) => {
                let n = lc.count(&text)?;
                (text, n)
            }
        };
        let prompt_tokens = prompt_tokens as u32;
        entries.push(DatasetEntry {
            text: Arc::from(final_text),
            prompt_tokens,
            target_tokens: ins[i],
            max_tokens: outs[i],
        });
    }
    let mut counts = lc.stats;
    let d = lc.decoder.stats;
    (
        counts.decodes,
        counts.full_decodes,
        counts.decode_mismatches,
    ) = (d.decodes, d.library, d.mismatches);
    if let (Some((h0, m0)), Some((h1, m1))) = (lc.memo_at_start, tok.fast_memo_stats()) {
        counts.memo_pieces = h1 - h0;
        counts.model_pieces = m1 - m0;
    }
    Ok(Dataset {
        entries,
        token_source: TokenCountSource::LocalTokenizer(tok.path().display().to_string()),
        exact,
        template_overhead: overhead,
        config: cfg.clone(),
        counts,
    })
}

/// How the dataset build counted tokens and decoded ids (a counted CI guard of its cost: the
/// full encodes made the build ~⅓ of a whole `servebench bench` process, and then its decodes
/// and BPE ~22 %).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CountStats {
    /// Texts tokenized (one per length check of a prompt's text, plus templated texts); each
    /// yields the ids, so a check that misses needs no second encode.
    pub counts: usize,
    /// Length checks that missed (their ids, from the same encode, were then padded or
    /// truncated).
    pub id_encodes: usize,
    /// Full `tokenizers` encodes made: cross-checks, and texts the fast counter could not
    /// answer.
    pub full_encodes: usize,
    /// Texts answered by [`crate::fast_count::FastCounter`].
    pub fast: usize,
    /// Cross-checks of the fast counter against the full encode that disagreed (any disables the
    /// fast counter for the rest of the build).
    pub mismatches: usize,
    /// Id lists decoded to text.
    pub decodes: usize,
    /// Decodes made by `tokenizers`' own `decode`: cross-checks, and every decode when the
    /// tokenizer's decoder is not `ByteLevel` (the others by
    /// [`crate::fast_decode::ByteLevelDecoder`]).
    pub full_decodes: usize,
    /// Cross-checks of the fast decode against the library's that disagreed (any disables the
    /// fast decode for the rest of the build).
    pub decode_mismatches: usize,
    /// Pre-tokenized pieces the fast counter answered from its memo of the BPE model.
    pub memo_pieces: u64,
    /// Pieces the fast counter had the BPE model tokenize.
    pub model_pieces: u64,
}

/// The fast counter's first answers (counts or ids) checked against the full encode (the fast
/// decoder's are [`crate::tokenizer::DECODE_CROSS_CHECKS`], also 16).
pub const FAST_COUNT_CROSS_CHECKS: usize = 16;

/// Tokenizes and decodes for the dataset build: the fast counter and the fast decoder where they
/// answer (the first [`FAST_COUNT_CROSS_CHECKS`] answers of each checked against the library;
/// any disagreement turns that fast path off), else the library.
struct LengthCheck<'t> {
    tok: &'t LocalTokenizer,
    use_fast: bool,
    decoder: CheckedDecoder,
    stats: CountStats,
    /// The fast counter's memo statistics when the build started.
    memo_at_start: Option<(u64, u64)>,
}

impl<'t> LengthCheck<'t> {
    /// `fast`: use the fast counter and decoder where the tokenizer's shape allows.
    fn new(tok: &'t LocalTokenizer, fast: bool) -> Self {
        Self {
            tok,
            use_fast: fast && tok.has_fast_count(),
            decoder: CheckedDecoder::new(tok, fast),
            stats: CountStats::default(),
            memo_at_start: tok.fast_memo_stats(),
        }
    }

    /// Text of `ids` (as [`LocalTokenizer::decode`]): [`CheckedDecoder`]'s rule.
    fn decode(&mut self, ids: &[u32]) -> Result<String> {
        self.decoder.decode(self.tok, ids)
    }

    /// Ids of `text` into `ids` (replacing its contents); their number is the token count.
    fn encode_into(&mut self, text: &str, ids: &mut Vec<u32>) -> Result<()> {
        self.stats.counts += 1;
        ids.clear();
        if self.use_fast && self.tok.fast_encode_into(text, ids)?.is_some() {
            self.stats.fast += 1;
            if self.stats.fast <= FAST_COUNT_CROSS_CHECKS {
                let full = self.full(text)?;
                if full != *ids {
                    self.stats.mismatches += 1;
                    self.use_fast = false;
                    *ids = full;
                }
            }
            return Ok(());
        }
        ids.clear();
        *ids = self.full(text)?;
        Ok(())
    }

    fn full(&mut self, text: &str) -> Result<Vec<u32>> {
        self.stats.full_encodes += 1;
        self.tok.encode(text)
    }

    /// Number of tokens of `text`.
    fn count(&mut self, text: &str) -> Result<usize> {
        self.stats.counts += 1;
        if self.use_fast {
            if let Some(n) = self.tok.fast_count(text)? {
                self.stats.fast += 1;
                if self.stats.fast > FAST_COUNT_CROSS_CHECKS {
                    return Ok(n);
                }
                let full = self.full(text)?.len();
                if full != n {
                    self.stats.mismatches += 1;
                    self.use_fast = false;
                }
                return Ok(full);
            }
        }
        Ok(self.full(text)?.len())
    }
}

const CONSONANTS: &[u8] = b"bcdfghjklmnprstvz";
const VOWELS: &[u8] = b"aeiou";
/// Number of distinct synthetic words (17 × 5 syllables, squared).
pub const SYNTHETIC_WORDS: u32 = 85 * 85;

/// Appends synthetic word `k` (two consonant-vowel syllables, e.g. `"toba"`) to `out`.
fn push_word(out: &mut String, k: u32) {
    let k = k % SYNTHETIC_WORDS;
    for s in [k % 85, k / 85] {
        out.push(CONSONANTS[(s / 5) as usize] as char);
        out.push(VOWELS[(s % 5) as usize] as char);
    }
}

/// Text of `n` consecutive synthetic words starting at word `start`, space separated.
pub fn synthetic_words(start: u64, n: usize) -> String {
    let mut s = String::with_capacity(n * 5);
    for j in 0..n {
        if j > 0 {
            s.push(' ');
        }
        push_word(
            &mut s,
            ((start + j as u64) % u64::from(SYNTHETIC_WORDS)) as u32,
        );
    }
    s
}

/// Builds the dataset without a local tokenizer: synthetic-word prompts whose lengths are
/// calibrated with `counter` (the server's tokenizer). Same length/offset draws as
/// [`build_with_tokenizer`] with vocab = [`SYNTHETIC_WORDS`].
///
/// Each prompt is re-counted until it hits its drawn length (at most 12 counts); the recorded
/// `prompt_tokens` is always the counter's count of the exact text sent.
pub fn build_calibrated(
    cfg: &RandomDatasetConfig,
    counter: &mut dyn TokenCounter,
) -> Result<Dataset> {
    let mut rng = NumpyLegacyRng::new(cfg.seed);
    let (ins, outs, offs) = draw_lengths(
        &mut rng,
        cfg.input_len,
        cfg.output_len,
        cfg.range_ratio,
        cfg.num_prompts,
        SYNTHETIC_WORDS,
    )?;
    // Tokens per word from a 256-word sample.
    let sample = counter.count(&synthetic_words(0, 256))?;
    let tpw = (f64::from(sample) / 256.0).max(0.05);
    let mut entries = Vec::with_capacity(cfg.num_prompts);
    let mut exact = 0;
    for i in 0..cfg.num_prompts {
        let target = ins[i];
        let start = u64::from(offs[i]) + i as u64;
        let mut words = ((f64::from(target) / tpw).round() as usize).max(1);
        let mut best: Option<(u32, String)> = None;
        for _ in 0..12 {
            let text = synthetic_words(start, words);
            let n = counter.count(&text)?;
            let better = match &best {
                None => true,
                Some((bn, _)) => n.abs_diff(target) < bn.abs_diff(target),
            };
            if better {
                best = Some((n, text));
            }
            if n == target {
                break;
            }
            let delta = (f64::from(target) - f64::from(n)) / tpw;
            let step = if delta.abs() < 1.0 {
                delta.signum()
            } else {
                delta.round()
            };
            words = (words as f64 + step).max(1.0) as usize;
        }
        let (n, text) = best.expect("at least one count");
        if n == target {
            exact += 1;
        }
        entries.push(DatasetEntry {
            text: Arc::from(text),
            prompt_tokens: n,
            target_tokens: target,
            max_tokens: outs[i],
        });
    }
    Ok(Dataset {
        entries,
        token_source: TokenCountSource::Server(counter.describe()),
        exact,
        template_overhead: 0,
        config: cfg.clone(),
        counts: CountStats::default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    struct WordCounter(u32);
    impl TokenCounter for WordCounter {
        fn count(&mut self, text: &str) -> Result<u32> {
            self.0 += 1;
            Ok(text.split_whitespace().count() as u32)
        }
        fn describe(&self) -> String {
            "test word counter".into()
        }
    }

    /// Two tokens per word plus one for every tenth word: calibration cannot always be exact.
    struct LumpyCounter;
    impl TokenCounter for LumpyCounter {
        fn count(&mut self, text: &str) -> Result<u32> {
            let w = text.split_whitespace().count() as u32;
            Ok(2 * w + w / 10)
        }
        fn describe(&self) -> String {
            "lumpy".into()
        }
    }

    fn cfg(n: usize) -> RandomDatasetConfig {
        RandomDatasetConfig {
            input_len: 1024,
            output_len: 1024,
            range_ratio: 0.8,
            num_prompts: n,
            seed: 0,
        }
    }

    /// Counted guard of the dataset build's cost (issue 21): with a byte-level BPE tokenizer
    /// the length checks are answered by the fast counter; full encodes are only the
    /// cross-checks and one per check that missed its length (the ids are then padded or
    /// truncated). Every recorded count is still the full encode's count of the text sent.
    #[test]
    fn local_build_counts_fast_and_exactly() {
        let tok = crate::fast_count::tests::llama3_like();
        let file = std::env::temp_dir().join(format!("sb-llama3-like-{}.json", std::process::id()));
        tok.save(&file, false).unwrap();
        let local = LocalTokenizer::from_path(&file).unwrap();
        let _ = std::fs::remove_file(&file);
        assert!(local.has_fast_count());
        let cfg = RandomDatasetConfig {
            input_len: 128,
            output_len: 8,
            range_ratio: 0.8,
            num_prompts: 200,
            seed: 0,
        };
        let d = build_with_tokenizer(&cfg, &local, None).unwrap();
        for e in &d.entries {
            assert_eq!(
                e.prompt_tokens as usize,
                local.encode(&e.text).unwrap().len()
            );
        }
        // prompt for prompt what the library alone builds
        let lib = build_with_tokenizer_library_only(&cfg, &local, None).unwrap();
        assert_eq!(
            lib.counts.full_encodes, lib.counts.counts,
            "{:?}",
            lib.counts
        );
        assert_eq!(
            lib.counts.full_decodes, lib.counts.decodes,
            "{:?}",
            lib.counts
        );
        assert_eq!(lib.exact, d.exact);
        for (a, b) in d.entries.iter().zip(&lib.entries) {
            assert_eq!((&a.text, a.prompt_tokens), (&b.text, b.prompt_tokens));
        }
        let c = d.counts;
        assert_eq!((c.mismatches, c.decode_mismatches), (0, 0), "{c:?}");
        assert_eq!(
            c.fast, c.counts,
            "every text tokenized by the fast counter: {c:?}"
        );
        assert!(
            c.counts >= 200 && c.id_encodes > 0,
            "misses happen here: {c:?}"
        );
        // a miss reuses the ids of its length check: one tokenization per check, none more
        assert_eq!(c.counts, 200 + c.id_encodes, "{c:?}");
        assert_eq!(c.decodes, 200 + c.id_encodes, "{c:?}");
        // the only full encodes and decodes left are the cross-checks
        assert_eq!(c.full_encodes, FAST_COUNT_CROSS_CHECKS, "{c:?}");
        assert_eq!(c.full_decodes, FAST_COUNT_CROSS_CHECKS, "{c:?}");
        // pieces repeat: the BPE model is asked only for new ones (382 of 7,093 here)
        assert!(
            c.model_pieces > 0 && c.model_pieces * 5 < c.memo_pieces,
            "{c:?}"
        );
    }

    #[test]
    fn lengths_follow_numpy_draw_order() {
        // Reference: np.random.seed(0); randint(819,1025,40); randint(819,1025,40) (numpy 2.4.6)
        let mut rng = NumpyLegacyRng::new(0);
        let (ins, outs, _) = draw_lengths(&mut rng, 1024, 1024, 0.8, 40, 151643).unwrap();
        assert_eq!(&ins[..5], &[991, 866, 936, 1011, 886]);
        assert_eq!(&outs[..5], &[851, 1012, 828, 1004, 946]);
        assert!(ins.iter().chain(&outs).all(|&l| (819..=1024).contains(&l)));
    }

    #[test]
    fn calibrated_build_is_exact_with_word_tokenizer() {
        let mut c = WordCounter(0);
        let d = build_calibrated(&cfg(20), &mut c).unwrap();
        assert_eq!(d.entries.len(), 20);
        assert_eq!(d.exact, 20);
        assert_eq!(d.entries[0].prompt_tokens, 991);
        // 20 prompts: the output lengths continue the same stream after 20 input draws, so
        // output_lens[0] is the 21st value of numpy's randint(819, 1025) stream (= 900).
        assert_eq!(d.entries[0].max_tokens, 900);
        for e in &d.entries {
            assert_eq!(e.prompt_tokens, e.target_tokens);
            assert_eq!(e.text.split_whitespace().count() as u32, e.prompt_tokens);
        }
        // unique prompts: no two share their first word run
        let firsts: std::collections::HashSet<_> = d
            .entries
            .iter()
            .map(|e| e.text.split(' ').take(3).collect::<Vec<_>>().join(" "))
            .collect();
        assert_eq!(firsts.len(), 20);
        // 1 sample count + about one count per prompt
        assert!(c.0 <= 1 + 20 * 2, "{} counts", c.0);
    }

    #[test]
    fn calibrated_build_records_true_count_when_inexact() {
        let d = build_calibrated(&cfg(10), &mut LumpyCounter).unwrap();
        for e in &d.entries {
            let w = e.text.split_whitespace().count() as u32;
            assert_eq!(
                e.prompt_tokens,
                2 * w + w / 10,
                "recorded count is the counter's count"
            );
            assert!(e.prompt_tokens.abs_diff(e.target_tokens) <= 2);
        }
    }

    #[test]
    fn warmup_is_copies_of_prompt_zero() {
        let d = build_calibrated(&cfg(4), &mut WordCounter(0)).unwrap();
        let w = d.warmup_requests(8);
        assert_eq!(w.len(), 8);
        assert!(w
            .iter()
            .all(|r| r.prompt.last_text() == &*d.entries[0].text));
        assert!(w.iter().all(|r| r.max_tokens == d.entries[0].max_tokens));
        let r = d.requests();
        assert_eq!(r[3].id, 3);
        assert_eq!(r[3].max_tokens, d.entries[3].max_tokens);
    }

    #[test]
    fn bad_ratio_is_named() {
        let mut c = cfg(1);
        c.range_ratio = 1.5;
        let e = build_calibrated(&c, &mut WordCounter(0))
            .unwrap_err()
            .to_string();
        assert!(e.contains("--range-ratio"), "{e}");
    }
}
