//! A small byte-mutation fuzzer for the parser fuzz tests (no nightly toolchain here, so no
//! cargo-fuzz/libFuzzer): seeds are real inputs from `shared/`, each execution applies 1–8
//! random mutations (bit flip, byte set, insert/delete/duplicate a range, splice with another
//! seed, insert a dictionary token, truncate) and runs the target on the result.
//!
//! Included by path from the fuzz tests of several crates (`#[path = …] mod mutate;`), so it
//! depends on nothing but `std`.
//!
//! Environment: `FUZZ_SECONDS` (time budget per target, default 2 s: the bounded CI run),
//! `FUZZ_SEED` (default 0x5eed; the run is deterministic for a given seed and budget up to
//! timing), `FUZZ_REPORT` (a file to append one line of figures per target to).
//!
//! A target that panics is reported with the seed index, the execution number and the input
//! (escaped, and written to `$TMPDIR/fuzz-crash-<target>-<exec>.bin`), then the test fails.

#![allow(dead_code)]

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::{Duration, Instant};

/// xorshift64* (Vigna 2016): enough randomness for mutation, no dependency.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.max(1))
    }
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// Uniform-ish in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    pub fn chance(&mut self, one_in: usize) -> bool {
        self.below(one_in) == 0
    }
}

/// Bytes that often matter to text parsers.
const GENERIC: &[&[u8]] = &[
    b"\n",
    b"\r\n",
    b"\r",
    b"\0",
    b" ",
    b"\t",
    b":",
    b"\"",
    b"'",
    b"\\",
    b"{",
    b"}",
    b"[",
    b"]",
    b"-",
    b"#",
    b"%",
    b"\xff",
    b"\xc3\xa9",
    b"\xe2\x80\xa8",
    b"\xf0\x9f\x98\x80",
    b"9999999999999999999999",
    b"-1",
    b"0",
    b"1e308",
    b"NaN",
];

/// Applies 1–8 mutations to `data`.
pub fn mutate(
    rng: &mut Rng,
    data: &mut Vec<u8>,
    seeds: &[Vec<u8>],
    dict: &[&[u8]],
    max_len: usize,
) {
    let n = 1 + rng.below(8);
    for _ in 0..n {
        let len = data.len();
        match rng.below(10) {
            0 if len > 0 => {
                let i = rng.below(len);
                data[i] ^= 1 << rng.below(8);
            }
            1 if len > 0 => {
                let i = rng.below(len);
                data[i] = rng.next() as u8;
            }
            2 => {
                let i = rng.below(len + 1);
                let k = 1 + rng.below(8);
                for _ in 0..k {
                    data.insert(i, rng.next() as u8);
                }
            }
            3 if len > 0 => {
                let i = rng.below(len);
                let k = 1 + rng.below((len - i).min(64));
                data.drain(i..i + k);
            }
            4 if len > 0 => {
                // duplicate a range somewhere else
                let i = rng.below(len);
                let k = 1 + rng.below((len - i).min(256));
                let piece = data[i..i + k].to_vec();
                let at = rng.below(len + 1);
                data.splice(at..at, piece);
            }
            5 if !seeds.is_empty() => {
                // splice a range of another seed
                let s = &seeds[rng.below(seeds.len())];
                if !s.is_empty() {
                    let i = rng.below(s.len());
                    let k = 1 + rng.below((s.len() - i).min(512));
                    let at = rng.below(len + 1);
                    data.splice(at..at, s[i..i + k].iter().copied());
                }
            }
            6 | 7 => {
                let tok: &[u8] = if !dict.is_empty() && rng.chance(2) {
                    dict[rng.below(dict.len())]
                } else {
                    GENERIC[rng.below(GENERIC.len())]
                };
                let at = rng.below(len + 1);
                if rng.chance(3) && len > 0 {
                    // overwrite instead of insert
                    let end = (at + tok.len()).min(len);
                    data.splice(at.min(len)..end, tok.iter().copied());
                } else {
                    data.splice(at..at, tok.iter().copied());
                }
            }
            8 if len > 0 => {
                data.truncate(rng.below(len));
            }
            _ => {
                // swap two bytes
                if len > 1 {
                    let (a, b) = (rng.below(len), rng.below(len));
                    data.swap(a, b);
                }
            }
        }
        if data.len() > max_len {
            data.truncate(max_len);
        }
    }
}

/// What one target's run did.
#[derive(Debug, Clone)]
pub struct Figures {
    pub target: &'static str,
    pub execs: u64,
    pub seconds: f64,
    pub seeds: usize,
    /// Distinct outcome classes the target reported (a rough coverage signal).
    pub outcomes: usize,
}

pub fn budget() -> Duration {
    let s: f64 = std::env::var("FUZZ_SECONDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2.0);
    Duration::from_secs_f64(s)
}

fn seed_value() -> u64 {
    std::env::var("FUZZ_SEED")
        .ok()
        .and_then(|v| {
            let v = v.trim();
            v.strip_prefix("0x")
                .map(|h| u64::from_str_radix(h, 16).ok())
                .unwrap_or_else(|| v.parse().ok())
        })
        .unwrap_or(0x5eed)
}

fn escape(b: &[u8]) -> String {
    let s: String = b
        .iter()
        .take(600)
        .flat_map(|&c| std::ascii::escape_default(c))
        .map(char::from)
        .collect();
    if b.len() > 600 {
        format!("{s}… ({} bytes)", b.len())
    } else {
        s
    }
}

/// Runs `target` on every seed, then on mutations of them until the time budget is spent.
/// `target` returns an outcome label (e.g. `ok`, `err:<kind>`); it must not panic, and it
/// asserts its own invariants. Returns the figures (and appends them to `$FUZZ_REPORT`).
pub fn fuzz<F>(
    name: &'static str,
    seeds: &[Vec<u8>],
    dict: &[&[u8]],
    max_len: usize,
    mut target: F,
) -> Figures
where
    F: FnMut(&[u8]) -> String,
{
    assert!(!seeds.is_empty(), "{name}: no seeds (is ../shared there?)");
    let mut rng = Rng::new(
        seed_value() ^ (name.len() as u64) << 32 ^ name.bytes().map(u64::from).sum::<u64>(),
    );
    let budget = budget();
    let start = Instant::now();
    let mut execs = 0u64;
    let mut outcomes = std::collections::BTreeSet::new();
    let mut run = |input: &[u8], execs: u64, what: &str| match catch_unwind(AssertUnwindSafe(
        || target(input),
    )) {
        Ok(o) => {
            outcomes.insert(o);
        }
        Err(p) => {
            let msg = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            let file = std::env::temp_dir().join(format!("fuzz-crash-{name}-{execs}.bin"));
            let _ = std::fs::write(&file, input);
            panic!(
                    "{name}: crash at execution {execs} ({what}): {msg}\n  input ({} bytes, saved to {}): {}",
                    input.len(),
                    file.display(),
                    escape(input)
                );
        }
    };
    for (i, s) in seeds.iter().enumerate() {
        execs += 1;
        run(s, execs, &format!("seed {i}"));
    }
    let mut buf = Vec::new();
    while start.elapsed() < budget {
        let si = rng.below(seeds.len());
        buf.clear();
        buf.extend_from_slice(&seeds[si]);
        mutate(&mut rng, &mut buf, seeds, dict, max_len);
        execs += 1;
        run(&buf, execs, &format!("mutation of seed {si}"));
    }
    let f = Figures {
        target: name,
        execs,
        seconds: start.elapsed().as_secs_f64(),
        seeds: seeds.len(),
        outcomes: outcomes.len(),
    };
    let line = format!(
        "fuzz {}: {} executions in {:.1} s ({:.0}/s), {} seeds, {} distinct outcomes, 0 crashes",
        f.target,
        f.execs,
        f.seconds,
        f.execs as f64 / f.seconds.max(1e-9),
        f.seeds,
        f.outcomes
    );
    eprintln!("{line}");
    if let Ok(p) = std::env::var("FUZZ_REPORT") {
        use std::io::Write;
        if let Ok(mut fh) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(p)
        {
            let _ = writeln!(fh, "{line}");
        }
    }
    f
}

/// `$SERVEBENCH_SHARED` or `../shared` next to the repository (tests read shared data in place).
pub fn shared_dir(manifest_dir: &str) -> std::path::PathBuf {
    match std::env::var("SERVEBENCH_SHARED") {
        Ok(p) if !p.is_empty() => p.into(),
        _ => std::path::Path::new(manifest_dir).join("../../../shared"),
    }
}
