//! Ephemeral details out of an error line: the same failure on two runners, ports or points
//! reads the same (issue 18: `…:33047…` and `…:45543…` looked like two failures).
//!
//! [`normalise_ephemeral`] replaces, in this order: timestamps (`2026-12-02T04:17:36.114Z`,
//! `04:17:36`) → `<time>`; temporary directories (`/tmp/<one component>`, `/var/tmp/…`,
//! `/dev/shm/…`) → `<tmp>`; `servebench run` attempt directories
//! (`/points/<id>/attempt-<n>`) → `/points/<point>/attempt-<n>`; process, job and task ids
//! (`pid 4242`, `pid=4242`, `process 41233`, `process group 4242`, `job 881234`, `JobId=881234`)
//! → `<n>`; ports (`127.0.0.1:33047`, `localhost:8000`, `://host:8000`, `vllm-svc:8000` with a
//! port of 4–5 digits, `port 33047`, `--port 33047`) → `<port>`; pointers (`0x7f3a2c001234`)
//! → `0x<addr>`. Everything else is kept, so the summary still reads as the line.

use std::sync::OnceLock;

use regex::{Captures, Regex};

struct Rules {
    iso_time: Regex,
    clock: Regex,
    tmp: Regex,
    points: Regex,
    ids: Regex,
    host_port: Regex,
    port_word: Regex,
    pointer: Regex,
}

fn rules() -> &'static Rules {
    static R: OnceLock<Rules> = OnceLock::new();
    R.get_or_init(|| Rules {
        iso_time: Regex::new(
            r"\b\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?",
        )
        .expect("iso time"),
        clock: Regex::new(r"\b\d\d:\d\d:\d\d(?:[.,]\d+)?\b").expect("clock"),
        tmp: Regex::new(r#"/(?:tmp|var/tmp|dev/shm)/[^/\s'"`:]+"#).expect("tmp"),
        points: Regex::new(r#"/points/[^/\s'"`]+/attempt-\d+"#).expect("points"),
        ids: Regex::new(
            r"(?i)\b(pid|process group|process|job ?id|job|task|pgid)(\s*[=:#]?\s*)\d+\b",
        )
        .expect("ids"),
        host_port: Regex::new(concat!(
            r"(?P<pre>://)?",
            r"(?P<host>(?:\d{1,3}\.){3}\d{1,3}|localhost|\[[0-9A-Fa-f:.]+\]|[A-Za-z][\w-]*(?:\.[\w-]+)*)",
            r":(?P<port>\d{2,5})\b"
        ))
        .expect("host:port"),
        port_word: Regex::new(r"(?i)\b(--port|port)([ =:]+)\d{2,5}\b").expect("port"),
        pointer: Regex::new(r"\b0x[0-9a-fA-F]{6,}\b").expect("pointer"),
    })
}

/// The line with its ephemeral details replaced (see the module docs); the result is what
/// [`crate::FirstError::summary`] holds and what logs are grouped by.
pub fn normalise_ephemeral(line: &str) -> String {
    let r = rules();
    let s = r.iso_time.replace_all(line, "<time>");
    let s = r.clock.replace_all(&s, "<time>");
    let s = r.points.replace_all(&s, "/points/<point>/attempt-<n>");
    let s = r.tmp.replace_all(&s, "<tmp>");
    let s = r.ids.replace_all(&s, "$1$2<n>");
    let text: &str = &s;
    let s = r.host_port.replace_all(text, |c: &Captures<'_>| {
        let whole = c.get(0).expect("match");
        let host = &c["host"];
        let port = &c["port"];
        // `ubuntu:22.04`, `sglang:12.1`: a version, not a port.
        let after = &text[whole.end()..];
        let version_like =
            after.starts_with('.') && after[1..].starts_with(|ch: char| ch.is_ascii_digit());
        let ip_like = host.starts_with(|ch: char| ch.is_ascii_digit())
            || host == "localhost"
            || host.starts_with('[');
        let url = c.name("pre").is_some();
        if version_like || !(ip_like || url || port.len() >= 4) {
            whole.as_str().to_string()
        } else {
            format!("{}{host}:<port>", c.name("pre").map_or("", |m| m.as_str()))
        }
    });
    let s = r.port_word.replace_all(&s, "$1$2<port>");
    let s = r.pointer.replace_all(&s, "0x<addr>");
    s.into_owned()
}

/// The grouping key of an error message: [`normalise_ephemeral`], then every run of digits
/// as `#` (so `Tried to allocate 224.00 MiB` and `… 226.00 MiB` group too).
pub fn group_key(text: &str) -> String {
    let n = normalise_ephemeral(text);
    let mut out = String::with_capacity(n.len());
    let mut prev_digit = false;
    for c in n.chars() {
        if c.is_ascii_digit() {
            if !prev_digit {
                out.push('#');
            }
            prev_digit = true;
        } else {
            prev_digit = false;
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_pids_temp_paths_and_times_go() {
        let a = "servebench-job: ERROR: Process died before http://127.0.0.1:33047/health became ready (exit status 127)";
        let b = "servebench-job: ERROR: Process died before http://127.0.0.1:45543/health became ready (exit status 127)";
        assert_eq!(normalise_ephemeral(a), normalise_ephemeral(b));
        assert_eq!(
            normalise_ephemeral(a),
            "servebench-job: ERROR: Process died before http://127.0.0.1:<port>/health became ready (exit status 127)"
        );
        assert_eq!(
            normalise_ephemeral("the engine (pid 4242) was killed; process group 4242; pid=17"),
            "the engine (pid <n>) was killed; process group <n>; pid=<n>"
        );
        assert_eq!(
            normalise_ephemeral("/tmp/.tmpAbC123/recipes/x.sh: line 29: hf: command not found"),
            "<tmp>/recipes/x.sh: line 29: hf: command not found"
        );
        assert_eq!(
            normalise_ephemeral(
                "/o/points/qwen-tp1-conc4/attempt-2/results/x.json: Permission denied at 2026-12-02T04:17:36.114Z"
            ),
            "/o/points/<point>/attempt-<n>/results/x.json: Permission denied at <time>"
        );
        assert_eq!(
            normalise_ephemeral("Cannot connect to host vllm-svc:8000 ssl:default, --port 33047"),
            "Cannot connect to host vllm-svc:<port> ssl:default, --port <port>"
        );
        // Versions and short tags stay; so do line numbers and exit statuses.
        for keep in [
            "image ubuntu:22.04 and lmsysorg/sglang:v0.5.20-cu130",
            "postgres:16 at x.sh: line 29: exit status 127",
            "ERROR: Job 881234 failed before creating log file",
        ] {
            let n = normalise_ephemeral(keep);
            if keep.contains("Job") {
                assert_eq!(n, "ERROR: Job <n> failed before creating log file");
            } else {
                assert_eq!(n, keep);
            }
        }
        assert_eq!(
            normalise_ephemeral("segfault at 0x7f3a2c001234"),
            "segfault at 0x<addr>"
        );
    }

    #[test]
    fn group_keys_collapse_digits_after_normalising() {
        assert_eq!(
            group_key("Tried to allocate 224.00 MiB on /tmp/tmp.Ab12/x"),
            group_key("Tried to allocate 226.50 MiB on /tmp/tmp.Zz99/x")
        );
        assert_ne!(
            group_key("hf: command not found"),
            group_key("jq: command not found")
        );
    }
}
