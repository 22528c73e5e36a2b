//! Crash-test helpers: a seeded random generator for kill moments and "start, wait, SIGKILL".

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// SplitMix64: a small seeded generator (the kill moments of a test are reproducible from its
/// seed without a `rand` dependency in the test).
pub struct SplitMix(pub u64);

impl SplitMix {
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// How a killed command ended.
pub struct Killed {
    /// The moment of the SIGKILL after the start.
    pub at: Duration,
    /// The process had already exited on its own before the kill moment.
    pub finished_first: bool,
}

/// Starts `cmd` (stdout/stderr discarded), waits `after`, sends SIGKILL (`Child::kill` on unix)
/// and reaps it.
pub fn kill_after(mut cmd: Command, after: Duration) -> Killed {
    let mut child: Child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn servebench");
    let t0 = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return Killed {
                at: t0.elapsed(),
                finished_first: true,
            };
        }
        let left = after.saturating_sub(t0.elapsed());
        if left.is_zero() {
            break;
        }
        std::thread::sleep(left.min(Duration::from_millis(5)));
    }
    let at = t0.elapsed();
    child.kill().expect("SIGKILL");
    child.wait().unwrap();
    Killed {
        at,
        finished_first: false,
    }
}

/// The results store at `db` opens and passes `PRAGMA integrity_check` (when it exists).
pub fn assert_store_sound(db: &Path) -> Option<servebench_store::Store> {
    if !db.exists() {
        return None;
    }
    let st = servebench_store::Store::open(db)
        .unwrap_or_else(|e| panic!("{}: does not open after SIGKILL: {e:#}", db.display()));
    st.integrity_check()
        .unwrap_or_else(|e| panic!("{}: {e:#}", db.display()));
    Some(st)
}

/// The lines of a JSON-lines file: every complete line parses; an unterminated last line (cut
/// by the kill) is returned apart. `None` when the file does not exist.
pub fn jsonl_lines(p: &Path) -> Option<(Vec<serde_json::Value>, Option<String>)> {
    let text = std::fs::read_to_string(p).ok()?;
    let (whole, torn) = match text.rfind('\n') {
        Some(i) if i + 1 == text.len() => (&text[..], None),
        Some(i) => (&text[..=i], Some(text[i + 1..].to_string())),
        None if text.is_empty() => (&text[..], None),
        None => ("", Some(text.clone())),
    };
    let v = whole
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            serde_json::from_str(l)
                .unwrap_or_else(|e| panic!("{}: complete line does not parse: {e}", p.display()))
        })
        .collect();
    Some((v, torn))
}
