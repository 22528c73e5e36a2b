//! Labels and number spellings that both the measuring side (the sweep's table, the stored
//! run's `workload`/`topology`) and the review side (comparisons, reports) write, so the two
//! spell them the same way: `8k/1k`, `TP8/EP1`, `2,576.15`.

/// Workload label: `AgentX` for agentic traces, else `ISL/OSL` in k (`8192/1024` → `8k/1k`;
/// lengths that are not multiples of 1024 are written as numbers).
pub fn workload_label(isl: Option<u32>, osl: Option<u32>, agentic: bool) -> String {
    if agentic {
        return "AgentX".into();
    }
    fn k(n: u32) -> String {
        #[allow(clippy::manual_is_multiple_of)] // MSRV 1.85
        if n >= 1024 && n % 1024 == 0 {
            format!("{}k", n / 1024)
        } else {
            n.to_string()
        }
    }
    match (isl, osl) {
        (Some(i), Some(o)) => format!("{}/{}", k(i), k(o)),
        _ => "unknown workload".into(),
    }
}

/// Topology label `TP<tp>/EP<ep>` (single node).
pub fn topology_label(tp: u32, ep: u32) -> String {
    format!("TP{tp}/EP{ep}")
}

/// Formats a value with thousands separators and exactly `decimals` decimals (zeros kept: the
/// terminal table's fixed columns, `2,576.15`, `5.50`). Non-finite values render as `N/A`; a
/// negative value keeps its sign.
pub fn fmt_fixed_dp(x: f64, decimals: usize) -> String {
    if !x.is_finite() {
        return "N/A".to_string();
    }
    let s = format!("{:.*}", decimals, x.abs());
    let (int, frac) = s.split_once('.').unwrap_or((s.as_str(), ""));
    let mut out = String::with_capacity(s.len() + s.len() / 3 + 1);
    if x < 0.0 {
        out.push('-');
    }
    out.push_str(&group_thousands(int));
    if !frac.is_empty() {
        out.push('.');
        out.push_str(frac);
    }
    out
}

/// Inserts thousands separators into a string of ASCII digits (`"1319"` → `"1,319"`).
pub fn group_thousands(digits: &str) -> String {
    let n = digits.len();
    let mut out = String::with_capacity(n + n / 3);
    for (i, c) in digits.chars().enumerate() {
        #[allow(clippy::manual_is_multiple_of)] // MSRV 1.85
        if i > 0 && (n - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}
