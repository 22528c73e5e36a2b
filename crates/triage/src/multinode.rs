//! Multi-node jobs: one log per node and role; the first error across nodes, by time.
//!
//! A disaggregated job (srt-slurm, Dynamo) leaves one log per worker and service
//! (`logs/workers/<node>_<prefill|decode|agg>_w<i>.out`, `<node>_frontend_<i>.out`,
//! `<node>_<router>_<i>.out`, `services/logs/service_<etcd|nats>[_<node>].out`; NVIDIA/srt-slurm
//! `src/srtctl/core/log_layout.py`) plus the Slurm batch log (`slurm_job-<id>.out`,
//! `sweep_<id>.log`). When one peer fails, every other worker fails after it, often louder (a
//! dead decode worker leaves its prefill peers with NCCL and NIXL errors). So the reported
//! first error is the *earliest* one across the logs, not the one of the first or the loudest
//! log:
//!
//! 1. Each log's own first error is chosen as for any log ([`crate::scan`]); generic wrappers
//!    count only when no log has anything better.
//! 2. A lost node explains what follows it: when a log says `srun: error: Node failure on X`
//!    and X's own logs stop no later than the first error elsewhere (plus the clock-skew
//!    tolerance), the node loss is the first error, on node X.
//! 3. Otherwise the first errors are ordered by the time their logs give ([`crate::clock`]).
//!    Clocks of different nodes disagree by up to the tolerance (`clock_skew_ms`, default 2 s:
//!    NTP-synchronised nodes and logs with one-second resolution): first errors on *other*
//!    nodes within the tolerance of the earliest cannot be ordered by their clocks, and the
//!    earliest is then chosen by cause (a lost node, the control plane, an error of the node
//!    itself, the transport, a role that never registered: the later ones are what a peer
//!    sees when an earlier one happens), then by kind (specific before unclassified), then by
//!    time. Logs of the same
//!    node share a clock and are ordered by it.
//! 4. Logs without any timestamp before their first error are named, not placed.

use std::sync::OnceLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

use crate::clock::format_secs;
use crate::scan::{FirstError, LogTriage, Tier};

/// Default clock-skew tolerance between nodes (milliseconds).
pub const DEFAULT_CLOCK_SKEW_MS: u64 = 2000;

/// srt-slurm's progress line while the router waits for workers (`Model is not ready, waiting
/// for 1 prefills and 0 decodes. Have 0 prefills and 4 decodes.`, NVIDIA/srt-slurm
/// `src/srtctl/core/health.py`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkerWait {
    /// 1-based line.
    pub line_no: u64,
    /// Prefill workers still missing.
    pub prefills: u32,
    /// Decode (or aggregated) workers still missing.
    pub decodes: u32,
}

impl WorkerWait {
    /// Reads the line, when it is one.
    pub fn parse(line_no: u64, body: &str) -> Option<WorkerWait> {
        const HEAD: &str = "Model is not ready, waiting for ";
        let rest = &body[body.find(HEAD)? + HEAD.len()..];
        let (p, rest) = rest.split_once(" prefills and ")?;
        let d = rest.split(' ').next()?;
        Some(WorkerWait {
            line_no,
            prefills: p.trim().parse().ok()?,
            decodes: d.parse().ok()?,
        })
    }

    /// `1 prefill worker(s)`, `2 decode worker(s)`, or both.
    pub fn words(&self) -> String {
        match (self.prefills, self.decodes) {
            (0, d) => format!("{d} decode worker(s)"),
            (p, 0) => format!("{p} prefill worker(s)"),
            (p, d) => format!("{p} prefill and {d} decode worker(s)"),
        }
    }
}

/// Where a log comes from in a multi-node job, read from its file name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogOrigin {
    /// The node (`gb200-cn03`); `None` for the batch log and the client.
    pub node: Option<String>,
    /// `prefill worker w0`, `decode worker w1`, `frontend`, `router`, `etcd`, `NATS`,
    /// `Slurm batch log`, `benchmark client`.
    pub role: String,
}

fn layout() -> &'static [(Regex, &'static str)] {
    static R: OnceLock<Vec<(Regex, &'static str)>> = OnceLock::new();
    R.get_or_init(|| {
        [
            (
                r"^(?P<node>.+)_(?P<mode>prefill|decode|agg)_w(?P<i>\d+)\.(?:out|err|log)$",
                "worker",
            ),
            (
                r"^(?P<node>.+)_frontend(?:_(?P<i>\d+))?\.(?:out|err|log)$",
                "frontend",
            ),
            (
                r"^(?P<node>.+)_(?P<r>[a-z-]*router)(?:_(?P<i>\d+))?\.(?:out|err|log)$",
                "router",
            ),
            (r"^(?P<node>.+)_nginx\.(?:out|err|log)$", "nginx"),
            (
                r"^service_(?P<svc>etcd|nats)(?:_(?P<node>.+))?\.(?:out|err|log)$",
                "service",
            ),
            (
                r"^(?:slurm_job-\d+|slurm-\d+|sweep_\d+|log)\.(?:out|err|log)$",
                "batch",
            ),
            (r"^benchmark\.(?:out|err|log)$", "client"),
        ]
        .into_iter()
        .map(|(p, k)| (Regex::new(p).expect("layout regex"), k))
        .collect()
    })
}

/// The node and role of a log from its file name (srt-slurm's log layout); `None` for a name
/// outside it.
pub fn origin_of(file: &str) -> Option<LogOrigin> {
    let name = std::path::Path::new(file).file_name()?.to_str()?;
    for (re, kind) in layout() {
        let Some(c) = re.captures(name) else { continue };
        let node = c.name("node").map(|m| m.as_str().to_string());
        let idx = c
            .name("i")
            .map(|m| format!(" {}", m.as_str()))
            .unwrap_or_default();
        let role = match *kind {
            "worker" => {
                let mode = match &c["mode"] {
                    "agg" => "aggregated",
                    m => m,
                };
                format!("{mode} worker w{}", &c["i"])
            }
            "frontend" => format!("frontend{idx}"),
            "router" => format!("{}{idx}", &c["r"]),
            "nginx" => "nginx".into(),
            "service" => match &c["svc"] {
                "nats" => "NATS".into(),
                s => s.to_string(),
            },
            "batch" => "Slurm batch log".into(),
            _ => "benchmark client".into(),
        };
        return Some(LogOrigin { node, role });
    }
    None
}

/// Rank of a first error in a cause chain (lower causes higher), for errors the clocks cannot
/// order: a lost node, then the control plane (etcd, NATS), then an error of the node itself
/// (specific or unclassified), then the transport (NCCL, UCX, NIXL: what a peer sees when the
/// other side dies), then a role that never registered, then generic wrappers.
fn cause_rank(fe: &FirstError) -> u8 {
    match fe.signature_id.as_deref() {
        Some("node_lost") => 0,
        Some("etcd_unreachable" | "nats_unreachable") => 1,
        Some("nccl_transport" | "ucx_error" | "nixl_error" | "nccl_error") => 3,
        Some("role_never_registered") => 4,
        _ if fe.tier == Tier::Generic => 5,
        _ => 2,
    }
}

/// Which log's first error is reported, and why (evidence lines, each quoting `FILE:LINE`).
#[derive(Debug, Clone, PartialEq)]
pub struct Placement {
    /// Index of the chosen log.
    pub chosen: usize,
    /// The node the first error is on (for a lost node: the lost node).
    pub node: Option<String>,
    /// The role of that node's log(s).
    pub role: Option<String>,
    /// What the logs show about the order.
    pub evidence: Vec<String>,
}

fn at(fe: &FirstError) -> String {
    format!("{}:{}", fe.file, fe.line_no)
}

fn when(fe: &FirstError) -> String {
    match &fe.at {
        Some(t) if t.exact => format!("at {}", t.text()),
        Some(t) => format!(
            "at or after {} (its line has no time; the last one before it is line {})",
            t.text(),
            t.line_no
        ),
        None => "at no known time".into(),
    }
}

fn who(o: &Option<LogOrigin>) -> String {
    match o {
        Some(LogOrigin {
            node: Some(n),
            role,
        }) => format!("node {n}, {role}"),
        Some(LogOrigin { node: None, role }) => role.clone(),
        None => "no node or role in its name".into(),
    }
}

/// The first error across the logs of a multi-node job (see the module docs); `None` when the
/// logs are not one (fewer than two logs, or no log name in srt-slurm's layout), and the
/// single-node rules apply.
pub fn place(logs: &[LogTriage], skew_ms: u64) -> Option<Placement> {
    let origins: Vec<Option<LogOrigin>> = logs.iter().map(|l| origin_of(&l.file)).collect();
    if logs.len() < 2
        || !origins
            .iter()
            .any(|o| o.as_ref().is_some_and(|o| o.node.is_some()))
    {
        return None;
    }
    let skew = skew_ms as f64 / 1000.0;
    let with_error: Vec<usize> = (0..logs.len())
        .filter(|&i| logs[i].first_error.is_some())
        .collect();
    let fe = |i: usize| logs[i].first_error.as_ref().expect("has a first error");
    let best_tier = with_error.iter().map(|&i| fe(i).tier).min()?;
    let cands: Vec<usize> = with_error
        .iter()
        .copied()
        .filter(|&i| best_tier == Tier::Generic || fe(i).tier != Tier::Generic)
        .collect();
    let mut evidence = Vec::new();
    let untimed: Vec<usize> = cands
        .iter()
        .copied()
        .filter(|&i| fe(i).at.is_none())
        .collect();
    let mut timed: Vec<usize> = cands
        .iter()
        .copied()
        .filter(|&i| fe(i).at.is_some())
        .collect();
    let secs = |i: usize| fe(i).at.as_ref().map_or(f64::INFINITY, |t| t.secs);
    timed.sort_by(|&a, &b| secs(a).total_cmp(&secs(b)).then(a.cmp(&b)));
    let node_of = |i: usize| origins[i].as_ref().and_then(|o| o.node.clone());

    // 2. a lost node whose logs stop before the errors elsewhere
    if let Some(&lost) = cands.iter().find(|&&i| {
        fe(i).signature_id.as_deref() == Some("node_lost") && fe(i).fields.contains_key("node")
    }) {
        let x = fe(lost).fields["node"].clone();
        let own: Vec<usize> = (0..logs.len())
            .filter(|&i| node_of(i).as_deref() == Some(&x))
            .collect();
        let stops = own
            .iter()
            .filter_map(|&i| logs[i].last_time.as_ref().map(|t| (t.secs, i)))
            .max_by(|a, b| a.0.total_cmp(&b.0));
        let first_else = timed
            .iter()
            .copied()
            .find(|&i| i != lost && node_of(i).as_deref() != Some(&x));
        let explains = match (stops, first_else) {
            (Some((s, _)), Some(e)) => s <= secs(e) + skew,
            _ => true,
        };
        if explains {
            let roles: Vec<String> = own
                .iter()
                .filter_map(|&i| origins[i].as_ref().map(|o| o.role.clone()))
                .collect();
            let mut e = format!(
                "node {x} was lost: {} `{}`",
                at(fe(lost)),
                fe(lost).line.replace('`', "'")
            );
            match (stops, first_else) {
                (Some((s, i)), Some(f)) => e.push_str(&format!(
                    "; its logs stop at {} ({}:{}), {} the first error on another node, {} ({}) {}: the errors on the other nodes follow from it",
                    format_secs(s),
                    logs[i].file,
                    logs[i].last_time.as_ref().map_or(logs[i].lines, |t| t.line_no),
                    if s < secs(f) { "before" } else { "within the clock-skew tolerance of" },
                    at(fe(f)),
                    who(&origins[f]),
                    when(fe(f)),
                )),
                (None, _) if own.is_empty() => e.push_str("; no log of that node was given"),
                _ => {}
            }
            evidence.push(e);
            return Some(Placement {
                chosen: lost,
                node: Some(x),
                role: (!roles.is_empty()).then(|| roles.join(", ")),
                evidence,
            });
        }
    }

    // 3. by time, with the clock-skew tolerance across nodes
    let Some(&first) = timed.first() else {
        evidence.push(format!(
            "no log has a timestamp before its first error ({}): the logs cannot be put in time order; the first error is chosen by kind, then by the order the logs were given",
            untimed.iter().map(|&i| logs[i].file.as_str()).collect::<Vec<_>>().join(", ")
        ));
        let chosen = *cands.first()?;
        return Some(Placement {
            chosen,
            node: node_of(chosen),
            role: origins[chosen].as_ref().map(|o| o.role.clone()),
            evidence,
        });
    };
    let t0 = secs(first);
    let close: Vec<usize> = timed
        .iter()
        .copied()
        .filter(|&i| {
            secs(i) <= t0 + skew
                && (i == first || node_of(i) != node_of(first) || node_of(i).is_none())
        })
        .collect();
    let chosen = *close
        .iter()
        .min_by(|&&a, &&b| {
            (cause_rank(fe(a)), fe(a).tier)
                .cmp(&(cause_rank(fe(b)), fe(b).tier))
                .then(secs(a).total_cmp(&secs(b)))
                .then(a.cmp(&b))
        })
        .expect("the first is close to itself");
    let c = fe(chosen);
    let mut e = format!(
        "first error across {} logs by time: {} ({}) {}",
        logs.len(),
        at(c),
        who(&origins[chosen]),
        when(c)
    );
    if let Some(&next) = timed.iter().find(|&&i| i != chosen) {
        e.push_str(&format!(
            "; next: {} ({}) {}, {:+.3} s",
            at(fe(next)),
            who(&origins[next]),
            when(fe(next)),
            secs(next) - secs(chosen)
        ));
    }
    evidence.push(e);
    if close.len() > 1 {
        let others: Vec<String> = close
            .iter()
            .filter(|&&i| i != chosen)
            .map(|&i| format!("{} ({}) {}", at(fe(i)), who(&origins[i]), when(fe(i))))
            .collect();
        evidence.push(format!(
            "{} lie within the clock-skew tolerance ({skew:.3} s) of the earliest on another node: the nodes' clocks cannot order them; chosen by cause (a lost node, the control plane, the node's own error, the transport a peer sees, a role that never registered), then kind, then time",
            others.join("; ")
        ));
    }
    if !untimed.is_empty() {
        evidence.push(format!(
            "not placed in time (no timestamp before their first error): {}",
            untimed
                .iter()
                .map(|&i| at(fe(i)))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    Some(Placement {
        chosen,
        node: node_of(chosen),
        role: origins[chosen].as_ref().map(|o| o.role.clone()),
        evidence,
    })
}

/// Fields a first error gets from the rest of its log: for a role that never registered, the
/// workers the router was still waiting for (srt-slurm's last worker-wait line).
pub fn enrich(fe: &mut FirstError, log: &LogTriage) {
    if fe.signature_id.as_deref() == Some("role_never_registered") {
        if let Some(w) = &log.worker_wait {
            fe.fields.insert("waiting_for".into(), w.words());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn srt_slurm_log_names_give_node_and_role() {
        let o = |f: &str| origin_of(f).map(|o| (o.node, o.role));
        assert_eq!(
            o("out/123/logs/workers/gb200-cn03_decode_w1.out"),
            Some((Some("gb200-cn03".into()), "decode worker w1".into()))
        );
        assert_eq!(
            o("gb200-cn01_prefill_w0.err"),
            Some((Some("gb200-cn01".into()), "prefill worker w0".into()))
        );
        assert_eq!(
            o("nid_001_agg_w2.out").unwrap().0.as_deref(),
            Some("nid_001")
        );
        assert_eq!(o("gb200-cn01_frontend_0.out").unwrap().1, "frontend 0");
        assert_eq!(
            o("gb200-cn01_sglang-router_0.out").unwrap().1,
            "sglang-router 0"
        );
        assert_eq!(
            o("service_etcd_gb200-cn01.out"),
            Some((Some("gb200-cn01".into()), "etcd".into()))
        );
        assert_eq!(
            o("slurm_job-18582.out"),
            Some((None, "Slurm batch log".into()))
        );
        assert_eq!(o("sweep_18582.log").unwrap().1, "Slurm batch log");
        assert_eq!(o("agentic-c1.log"), None);
    }

    #[test]
    fn worker_wait_line() {
        let w = WorkerWait::parse(
            7,
            "2026-09-21 01:15:07,000 - srtctl - INFO - Model is not ready, waiting for 1 prefills and 0 decodes. Have 0 prefills and 4 decodes.",
        )
        .unwrap();
        assert_eq!((w.prefills, w.decodes), (1, 0));
        assert_eq!(w.words(), "1 prefill worker(s)");
        assert_eq!(WorkerWait::parse(1, "waiting for nothing"), None);
    }
}
