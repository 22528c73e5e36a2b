//! Guards of `servebench eval gsm8k` found by a new-user trial: a dead endpoint fails after the
//! bounded readiness wait in one line naming the URL (not after timeout × retries), and bad
//! flags are refused in one line naming the flag.

use crate::common;
use common::{dead_url, err_lines, output_in};

use std::time::{Duration, Instant};

#[test]
fn dead_endpoint_fails_after_the_readiness_wait_naming_the_url() {
    let d = tempfile::tempdir().unwrap();
    let url = dead_url();
    for extra in [&[][..], &["--model", "m"][..]] {
        let t = Instant::now();
        let mut args = vec![
            "eval",
            "gsm8k",
            "--endpoint",
            &url,
            "--ready-timeout",
            "1",
            "--limit",
            "2",
            "--no-store",
            "--out",
            "e",
        ];
        args.extend_from_slice(extra);
        let o = output_in(d.path(), &args);
        // without the wait: 5 retries with backoff 1+2+4+8+10 s
        assert!(t.elapsed() < Duration::from_secs(10), "bounded");
        assert_eq!(o.status.code(), Some(1));
        let lines = err_lines(&o);
        assert_eq!(lines.len(), 1, "one line: {lines:?}");
        assert!(
            lines[0].contains(&url) && lines[0].contains("not ready"),
            "{lines:?}"
        );
        assert!(!lines[0].contains("pass --model"), "{lines:?}");
        assert!(!lines[0].contains("Error:"), "{lines:?}");
    }
}

#[test]
fn bad_flags_are_one_line_naming_the_flag() {
    let d = tempfile::tempdir().unwrap();
    let cases: &[(&[&str], &str)] = &[
        (&["--limit", "0"], "--limit"),
        (&["--conc", "0"], "--conc"),
        (&["--thresholds", "nope.yaml"], "nope.yaml"),
        (&["--sim-answers", "gpt-9"], "--sim-answers"),
        (&["--threshold", "-1"], "--threshold"),
        (&["--timeout", "-5"], "--timeout"),
    ];
    for (extra, flag) in cases {
        let mut a = vec!["eval", "gsm8k", "--db", "s.db", "--out", "e"];
        a.extend_from_slice(extra);
        let o = output_in(d.path(), &a);
        assert_eq!(o.status.code(), Some(1), "{extra:?}");
        let lines = err_lines(&o);
        assert_eq!(lines.len(), 1, "{extra:?}: one line: {lines:?}");
        assert!(lines[0].contains(flag), "{extra:?}: {lines:?}");
        assert!(
            !d.path().join("s.db").exists(),
            "{extra:?}: no run recorded"
        );
    }
}
