//! Number formatting of the comment (AUTOMATION.md §5.6 "Numbers").
//!
//! - values: thousands separators, at most 2 decimals, trailing zeros trimmed
//!   (`14,445.12`, `4.3`, `637.9`, `1,319`);
//! - throughput/latency deltas: `(new/old − 1) × 100`, one decimal, always signed (`+29.9%`,
//!   `-6.9%`, `+0.0%`);
//! - eval scores: stored as fractions (0.9795), shown as percent with the value rules
//!   (`97.95%`); eval deltas in percentage points, two decimals, signed (`+0.08 pp`).
//!
//! Rounding is done on the exact binary value of the `f64` (as Python's `format(x, ",.2f")`
//! does, which is what InferenceX's Klaud renderer uses), so `0.125` and `1.005` round the way
//! their binary expansions say, not the way their decimal spelling suggests.

/// Formats a value with thousands separators and up to `max_decimals` decimals, trailing zeros
/// (and a trailing `.`) trimmed. Non-finite values render as `N/A`.
///
/// `fmt_value(14445.12)` → `"14,445.12"`; `fmt_value(4.30)` → `"4.3"`; `fmt_value(-1234.5)` →
/// `"-1,234.5"`; `fmt_value(-0.001)` → `"0"` (a rounded zero never carries a sign).
pub fn fmt_value_dp(x: f64, max_decimals: usize) -> String {
    if !x.is_finite() {
        return "N/A".to_string();
    }
    let s = format!("{:.*}", max_decimals, x.abs());
    let (int, frac) = match s.split_once('.') {
        Some((i, f)) => (i, f.trim_end_matches('0')),
        None => (s.as_str(), ""),
    };
    let zero = int.bytes().all(|b| b == b'0') && frac.is_empty();
    let mut out = String::with_capacity(s.len() + s.len() / 3 + 1);
    if x < 0.0 && !zero {
        out.push('-');
    }
    out.push_str(&group_thousands(int));
    if !frac.is_empty() {
        out.push('.');
        out.push_str(frac);
    }
    out
}

/// [`fmt_value_dp`] with the comment's 2 decimals.
pub fn fmt_value(x: f64) -> String {
    fmt_value_dp(x, 2)
}

pub use servebench_contracts::labels::fmt_fixed_dp;

/// Formats an integer count with thousands separators (`1319` → `"1,319"`).
pub fn fmt_count(n: u64) -> String {
    group_thousands(&n.to_string())
}

use servebench_contracts::labels::group_thousands;

/// Relative delta in percent: `(new/old − 1) × 100` (AUTOMATION.md §5.6; InferenceX
/// `compare_results.py`). `None` when `old` is zero or either value is not finite.
pub fn pct_delta(old: f64, new: f64) -> Option<f64> {
    if !old.is_finite() || !new.is_finite() || old == 0.0 {
        return None;
    }
    Some((new / old - 1.0) * 100.0)
}

/// Formats a percent delta with one decimal and an explicit sign: `+29.9%`, `-6.9%`, and
/// `+0.0%` for anything that rounds to zero (never `-0.0%`).
pub fn fmt_pct_delta(d: f64) -> String {
    fmt_signed(d, 1) + "%"
}

/// Formats a percentage-point delta with two decimals and an explicit sign: `+0.08 pp`.
pub fn fmt_pp_delta(d: f64) -> String {
    fmt_signed(d, 2) + " pp"
}

fn fmt_signed(d: f64, decimals: usize) -> String {
    if !d.is_finite() {
        return "N/A".to_string();
    }
    let s = format!("{:.*}", decimals, d.abs());
    let zero = s.bytes().all(|b| b == b'0' || b == b'.');
    let sign = if d < 0.0 && !zero { '-' } else { '+' };
    format!("{sign}{s}")
}

/// Formats an eval score given as a fraction in `[0, 1]` as a percentage with the value rules:
/// `0.9795` → `"97.95%"`, `0.956` → `"95.6%"`.
pub fn fmt_score_pct(fraction: f64) -> String {
    fmt_value(fraction * 100.0) + "%"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_follow_the_comment_rules() {
        assert_eq!(fmt_value(14445.12), "14,445.12");
        assert_eq!(fmt_value(4.3), "4.3");
        assert_eq!(fmt_value(4.30), "4.3");
        assert_eq!(fmt_value(1570.11), "1,570.11");
        assert_eq!(fmt_value(637.9), "637.9");
        assert_eq!(fmt_value(71333.43), "71,333.43");
        assert_eq!(fmt_value(1319.0), "1,319");
        assert_eq!(fmt_value(1_234_567.891), "1,234,567.89");
        assert_eq!(fmt_value(999.999), "1,000");
        assert_eq!(fmt_value(0.0), "0");
        assert_eq!(fmt_value(-0.001), "0");
        assert_eq!(fmt_value(-1234.5), "-1,234.5");
        assert_eq!(fmt_value(0.05), "0.05");
        assert_eq!(fmt_value(f64::NAN), "N/A");
        assert_eq!(fmt_count(1319), "1,319");
        assert_eq!(fmt_count(100), "100");
        assert_eq!(fmt_count(1_000_000), "1,000,000");
    }

    #[test]
    fn deltas_are_signed_with_fixed_decimals() {
        assert_eq!(fmt_pct_delta(pct_delta(100.0, 129.94).unwrap()), "+29.9%");
        assert_eq!(fmt_pct_delta(pct_delta(24.91, 23.19).unwrap()), "-6.9%");
        assert_eq!(fmt_pct_delta(0.0), "+0.0%");
        assert_eq!(fmt_pct_delta(-0.04), "+0.0%");
        assert_eq!(fmt_pct_delta(-0.06), "-0.1%");
        assert_eq!(fmt_pp_delta(0.08), "+0.08 pp");
        assert_eq!(fmt_pp_delta(-1.5), "-1.50 pp");
        assert_eq!(pct_delta(0.0, 5.0), None);
        assert_eq!(pct_delta(f64::NAN, 5.0), None);
    }

    #[test]
    fn scores_are_percentages() {
        assert_eq!(fmt_score_pct(0.9795), "97.95%");
        assert_eq!(fmt_score_pct(0.956), "95.6%");
        assert_eq!(fmt_score_pct(0.9568), "95.68%");
        assert_eq!(fmt_score_pct(1.0), "100%");
    }
}
