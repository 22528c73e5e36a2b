//! Bytes per second of the simulator's per-request prompt scan: the word count and the KV
//! block hashes of a rendered prompt ([`servebench_sim::text::word_blocks`], one pass, 8 bytes
//! per hash step), next to the two-pass reference it replaced
//! ([`servebench_sim::text::count_tokens`], then the words again for FNV-1a block hashes, one
//! multiply per byte) in the same invocation. Two prompts of ~400 KB: what
//! the AgentX client sends without a tokenizer (" abc def …", 4 characters a word) and
//! code-like text (newlines, indentation, punctuation runs), both in a ChatML render.
//!
//! `cargo bench -p servebench-sim --bench word_blocks`

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use servebench_sim::text::{count_tokens, word_blocks, words};

const WORDS: [&str; 12] = [
    "request", "token", "engine", "trace", "lane", "chunk", "offset", "limit", "mean", "test",
    "case", "profile",
];

fn prompt(code_like: bool) -> String {
    let mut s = String::from("<|im_start|>system\n");
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    while s.len() < 400_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let w = WORDS[(x % 12) as usize];
        if code_like {
            s.push_str(["    ", " = ", "();\n", ", ", " ", " ", "\n        "][(x >> 32) as usize % 7]);
            s.push_str(w);
        } else {
            s.push(' ');
            s.push_str(&w[..3]);
        }
        if (x >> 40) % 4001 == 0 {
            s.push_str("<|im_end|>\n<|im_start|>user\n");
        }
    }
    s.push_str("<|im_end|>\n<|im_start|>assistant\n");
    s
}

/// The two passes `word_blocks` replaced: count, then FNV-1a of each block's words.
fn two_pass(s: &str, block: usize) -> (u32, Vec<u64>) {
    let n = count_tokens(s);
    let mut blocks = Vec::new();
    let (mut x, mut k) = (0xcbf2_9ce4_8422_2325u64, 0);
    for w in words(s) {
        for &b in w.as_bytes() {
            x = (x ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
        }
        x = (x ^ 0x20).wrapping_mul(0x100_0000_01b3);
        k += 1;
        if k == block {
            blocks.push(x);
            (x, k) = (0xcbf2_9ce4_8422_2325, 0);
        }
    }
    (n, blocks)
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("word_blocks");
    for (name, code_like) in [("generated", false), ("code_like", true)] {
        let p = prompt(code_like);
        let one = word_blocks(&p, 16);
        let (n, blocks) = two_pass(&p, 16);
        assert_eq!((one.words, one.blocks.len()), (n, blocks.len()), "same counts");
        g.throughput(Throughput::Bytes(p.len() as u64));
        g.bench_function(format!("{name}/one_pass"), |b| {
            b.iter(|| word_blocks(black_box(&p), 16))
        });
        g.bench_function(format!("{name}/two_pass_reference"), |b| {
            b.iter(|| two_pass(black_box(&p), 16))
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
