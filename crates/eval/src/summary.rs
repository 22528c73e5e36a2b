//! Human-readable output of an eval and the default output folder.

use std::fmt::Write;
use std::path::PathBuf;

use crate::result::EvalResult;

/// `servebench-out/eval-gsm8k-<UTC YYYYMMDDTHHMMSSZ>` (a new folder per run, so a second
/// engine never resumes the first one's samples; pass the same `--out` to resume).
pub fn default_out_dir() -> PathBuf {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    PathBuf::from("servebench-out").join(format!("eval-gsm8k-{}", utc_stamp(secs)))
}

/// `YYYYMMDDTHHMMSSZ` for seconds since the Unix epoch (proleptic Gregorian, UTC; Howard
/// Hinnant's `civil_from_days`).
pub fn utc_stamp(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}{m:02}{d:02}T{:02}{:02}{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

fn pct(x: Option<f64>) -> String {
    x.map_or("n/a".into(), |v| format!("{:.2} %", v * 100.0))
}

/// The terminal summary: target, scores with standard errors (percent), n_eff, the gate and
/// the files.
pub fn render_summary(r: &EvalResult) -> String {
    let row = &r.row;
    let mut s = String::new();
    let _ = writeln!(s, "target      {}", r.target);
    if let Some(n) = &r.replay_note {
        let _ = writeln!(s, "note        {n}");
    }
    let _ = writeln!(
        s,
        "gsm8k       profile {}, model {}, conc {}, max_tokens {}, {:.1} s{}",
        r.profile,
        row.model,
        row.conc,
        r.max_tokens,
        r.duration_s,
        if r.resumed > 0 {
            format!(" ({} samples resumed)", r.resumed)
        } else {
            String::new()
        }
    );
    let _ = writeln!(
        s,
        "em_strict   {} ± {}",
        pct(row.em_strict),
        pct(row.em_strict_se)
    );
    let _ = writeln!(
        s,
        "em_flexible {} ± {}",
        pct(row.em_flexible),
        pct(row.em_flexible_se)
    );
    let _ = writeln!(s, "n_eff       {}", row.n_eff);
    if r.interrupted {
        let _ = writeln!(
            s,
            "PARTIAL     interrupted: scores cover only the {} documents finished; rerun with the same --out to resume",
            row.n_eff
        );
    }
    let g = &r.gate;
    let mark = |ok: bool| if ok { "pass" } else { "FAIL" };
    let _ = writeln!(
        s,
        "threshold   {:.2} % ({}): {} (strict {}, flexible {})",
        g.threshold.value * 100.0,
        g.threshold.source,
        if g.pass { "PASS" } else { "FAIL" },
        mark(g.strict_pass),
        mark(g.flexible_pass)
    );
    let _ = writeln!(s, "samples     {}", r.samples_file.display());
    let _ = writeln!(s, "result      {}", r.result_file.display());
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_stamps() {
        assert_eq!(utc_stamp(0), "19700101T000000Z");
        assert_eq!(utc_stamp(951_782_400), "20000229T000000Z");
        assert_eq!(utc_stamp(1_796_000_461), "20261130T010101Z");
    }
}
