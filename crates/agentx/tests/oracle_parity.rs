//! Parity with the reference AgentX client (agentx-harness 1.0.12, InferenceX's AIPerf fork).
//!
//! Both clients replay the same traces (five, one with three subagents; then two, one whose flat
//! requests the harness splits into a root and an `::fa:` agent) against two instances
//! of the oracle's logging mock server (`shared/tools/agentx-oracle/mock_server.py`, exact
//! DeepSeek-V4 token usage, every body dumped), with the same settings: 2 lanes, 30 s window,
//! 2 warmup requests per lane, 3 s per-tree idle cap, seed 42, a pinned benchmark id, and the
//! harness's default chain splitting (`AIPERF_DATASET_WEKA_SPLIT_FLATTENED_AGENTS` unset = on;
//! servebench's default `SplitOptions`; `chain_split_parity.rs` checks the split itself on
//! every shared trace). Per (conversation, turn, phase) present in both runs it asserts: the
//! same message roles, prompt tokens counted by the server within 0.5 %, per-message tokens
//! within 0.5 % (at least 2 tokens of slack for seam re-tokenisation), the same
//! `max_completion_tokens`, the same `[rid:…]` marker at the head of the first user message;
//! the same lane start points (the warmup primer set), the same subagent spawn sets and joins
//! after their children; idle gaps within 50 ms; and that servebench's AgentX aggregate computed
//! from the harness's own `profile_export.jsonl` agrees with the harness's
//! `profile_export_aiperf.json` on every statistic both define.
//!
//! Needs `scripts/services/agentx-oracle.sh` (env `SERVEBENCH_AGENTX_ORACLE_VENV`,
//! `SERVEBENCH_AGENTX_ORACLE_TOKENIZER`, `SERVEBENCH_AGENTX_ORACLE`); skipped without them
//! unless `SERVEBENCH_REQUIRE_SERVICES=1`.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use servebench_agentx::aggregate::{aggregate, AgentxRecord, AggInputs, RecordPhase};
use servebench_agentx::point::load_plans;
use servebench_agentx::replay::{run, ReplayConfig};
use servebench_agentx::synth::{FastTokenizer, DECODE_CROSS_CHECKS};
use servebench_client::{Api, BodyBuilder, Cancel, ClientCtx, Clock, Compat, Endpoint, Engine};

const TRACES: [&str; 5] = ["0157", "0167", "0282", "0473", "0504"];
/// trace_0365's flat requests split into the root and `trace_0365::fa:000` (11 requests); as
/// the first trace it starts lane 0, so the `::fa:` agent is live in the window.
const SPLIT_TRACES: [&str; 2] = ["0365", "0504"];

/// The two runs share the machine's 2 cores; timing assertions need them one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
const BENCH_ID: &str = "0123456789ab";
/// The per-tree idle cap both clients run with (`--trace-idle-gap-cap-seconds 3`), ms.
const TREE_CAP_MS: f64 = 3000.0;

struct Env {
    venv: PathBuf,
    tokenizer: PathBuf,
    oracle: PathBuf,
    shared: PathBuf,
}

fn env() -> Option<Env> {
    let get = |k: &str| std::env::var(k).ok().map(PathBuf::from);
    let shared = get("SERVEBENCH_SHARED")
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared"));
    match (
        get("SERVEBENCH_AGENTX_ORACLE_VENV"),
        get("SERVEBENCH_AGENTX_ORACLE_TOKENIZER"),
        get("SERVEBENCH_AGENTX_ORACLE"),
    ) {
        (Some(venv), Some(tokenizer), Some(oracle)) => Some(Env {
            venv,
            tokenizer,
            oracle,
            shared,
        }),
        _ => {
            servebench_testkit::skip_or_fail(
                "SERVEBENCH_AGENTX_ORACLE_* not set: agentx oracle not installed (scripts/services/agentx-oracle.sh)",
            );
            None
        }
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

struct Mock {
    child: Child,
    port: u16,
    log: PathBuf,
    dump: PathBuf,
}

impl Mock {
    /// Stops the server gracefully (SIGTERM) and waits for it to exit (90 s at most: aiohttp's
    /// shutdown gives handlers 60 s): every request it served is then in its log.
    fn stop(&mut self) {
        let st = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(st.success(), "kill -TERM mock server");
        let t0 = std::time::Instant::now();
        while self.child.try_wait().unwrap().is_none() {
            assert!(
                t0.elapsed() < Duration::from_secs(90),
                "mock server on port {} did not exit after SIGTERM",
                self.port
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Mock {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_mock(e: &Env, dir: &Path, name: &str) -> Mock {
    let port = free_port();
    let log = dir.join(format!("wire_{name}.jsonl"));
    let dump = dir.join(format!("dump_{name}"));
    std::fs::create_dir_all(&dump).unwrap();
    let child = Command::new(e.venv.join("bin/python"))
        .arg(e.oracle.join("mock_server.py"))
        .args(["--port", &port.to_string(), "--tokenizer"])
        .arg(&e.tokenizer)
        .arg("--log")
        .arg(&log)
        .arg("--dump-dir")
        .arg(&dump)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start mock_server.py");
    for _ in 0..200 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Mock {
                child,
                port,
                log,
                dump,
            };
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("mock server on port {port} did not start");
}

/// One request as the server saw it.
#[derive(Debug, Clone)]
struct Wire {
    key: (String, u64, String),
    roles: String,
    prompt_tokens: u64,
    max_tokens: u64,
    marker: String,
    arrive_ns: u64,
    done_ns: u64,
    msg_tokens: Vec<u64>,
}

fn read_jsonl(p: &Path) -> Vec<Value> {
    std::fs::read_to_string(p)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Per-message server-side token counts of every dumped body (the mock's tokenizer, each
/// message encoded on its own, no special tokens).
fn message_tokens(e: &Env, dump: &Path) -> HashMap<u64, Vec<u64>> {
    let script = r#"
import gzip, json, sys, glob, os
from tokenizers import Tokenizer
tok = Tokenizer.from_file(os.path.join(sys.argv[1], "tokenizer.json"))
for p in sorted(glob.glob(os.path.join(sys.argv[2], "req*.json.gz"))):
    body = json.loads(gzip.open(p).read())
    texts = [m.get("content") or "" for m in body["messages"]]
    n = [len(x.ids) for x in tok.encode_batch(texts, add_special_tokens=False)]
    print(json.dumps({"req": int(os.path.basename(p)[3:8]), "n": n}))
"#;
    let out = Command::new(e.venv.join("bin/python"))
        .args(["-c", script])
        .arg(&e.tokenizer)
        .arg(dump)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (
                v["req"].as_u64().unwrap(),
                v["n"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|x| x.as_u64().unwrap())
                    .collect(),
            )
        })
        .collect()
}

fn wire_entries(
    log: &Path,
    msg: &HashMap<u64, Vec<u64>>,
    key_of: impl Fn(&Value) -> Option<(String, u64, String)>,
) -> Vec<Wire> {
    read_jsonl(log)
        .into_iter()
        .filter(|w| w.get("req").is_some())
        .filter_map(|w| {
            let key = key_of(&w)?;
            let req = w["req"].as_u64().unwrap();
            Some(Wire {
                key,
                roles: w["messages"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|m| m["role"].as_str().unwrap().chars().next().unwrap())
                    .collect(),
                prompt_tokens: w["prompt_tokens_counted"].as_u64().unwrap(),
                max_tokens: w["params"]["max_completion_tokens"].as_u64().unwrap(),
                marker: w["first_user_head"]
                    .as_str()
                    .unwrap_or("")
                    .split("\n\n")
                    .next()
                    .unwrap()
                    .to_string(),
                arrive_ns: w["t_arrive_ns"].as_u64().unwrap(),
                done_ns: w["t_done_ns"].as_u64().unwrap(),
                msg_tokens: msg.get(&req).cloned().unwrap_or_default(),
            })
        })
        .collect()
}

fn header<'a>(w: &'a Value, name: &str) -> Option<&'a str> {
    w["headers"]
        .as_object()?
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .and_then(|(_, v)| v.as_str())
}

/// Idle gaps before each profiling turn, ms, measured three ways (all server-side):
/// * `own`: from the end of the event that schedules the turn on its own stream: the
///   conversation's previous turn (turn 0 of a child: its spawning root turn; of a child whose
///   branch started at that turn's *send*, from its arrival, its timer's origin); a root
///   turn that joins child conversations (`joins`: (root id, turn)) waits for them, so its gap is
///   taken from the later of the previous turn's end and the last child request of the same tree
///   that ended before it arrived;
/// * `tree`: from the last request of the same tree play (same `[rid:]` marker) that ended
///   before it arrived: the reference of a turn released by an event elsewhere in its tree (the
///   per-tree idle cap after the tree's last completion, a join);
/// * `shifted` (only for a root turn whose previous turn started a branch at its send,
///   `after_send`): `own` less the previous turn's run time d. The branch's first request waits
///   its recorded offset from that send; when the previous turn completes first, the tree idles
///   and its watchdog shifts every pending timer — this turn's too — by `offset − d − cap`, so
///   this turn lands `delay − offset + cap + d` after the previous turn's end: its schedule moves
///   with d, which differs between the two mock servers by tens of ms (up to a second on a
///   loaded machine). For the first turn of such a branch's child: its lateness against the
///   earlier of its timer (recorded offset after the send) and the tree's watchdog 3 s after the
///   spawning turn ended (which of the two fires first depends on d).
///
/// A turn is on the harness's schedule when one agrees: how long the *other* streams of the tree
/// ran (which shifts `own` of a cap-released turn) depends on the machine, the idle time after
/// the releasing event does not. Only turns whose reference request was a profiling request too
/// are measured (a gap across the warmup → profiling boundary includes the warmup drain).
fn gaps(
    ws: &[Wire],
    joins: &std::collections::HashSet<(String, u64)>,
    spawned_by: &HashMap<String, (String, u64, bool)>,
    after_send: &std::collections::HashSet<(String, u64)>,
    spawn_delay: &HashMap<String, f64>,
) -> HashMap<(String, u64, String), (f64, f64, Option<f64>)> {
    let by_key: HashMap<(String, u64, String), &Wire> =
        ws.iter().map(|w| (w.key.clone(), w)).collect();
    ws.iter()
        .filter(|w| w.key.2 == "profiling")
        .filter_map(|w| {
            let prof = "profiling".to_string();
            let mut from_send = false;
            let prev = if w.key.1 > 0 {
                by_key.get(&(w.key.0.clone(), w.key.1 - 1, prof))?
            } else {
                let (root, turn, at_send) = spawned_by.get(&w.key.0)?;
                from_send = *at_send;
                by_key.get(&(root.clone(), *turn, prof))?
            };
            if prev.marker != w.marker {
                return None; // another play of the trace
            }
            let mut from = if from_send {
                prev.arrive_ns
            } else {
                prev.done_ns
            };
            if joins.contains(&(w.key.0.clone(), w.key.1)) {
                let tree = format!("{}::", w.key.0);
                for c in ws.iter().filter(|c| c.key.0.starts_with(&tree)) {
                    if c.done_ns <= w.arrive_ns && c.marker == w.marker {
                        from = from.max(c.done_ns);
                    }
                }
            }
            let last = ws
                .iter()
                .filter(|c| c.marker == w.marker && c.done_ns <= w.arrive_ns)
                .map(|c| c.done_ns)
                .max()?;
            let ms = |t: u64| (w.arrive_ns as f64 - t as f64) / 1e6;
            let run_ms = (prev.done_ns as f64 - prev.arrive_ns as f64) / 1e6;
            let shifted = if from_send {
                // its timer (the recorded offset from the send) or the tree's watchdog after the
                // spawning turn ended, whichever came first: lateness against that
                let off = spawn_delay.get(&w.key.0).copied().unwrap_or(0.0);
                Some(ms(from) - off.min(run_ms + TREE_CAP_MS))
            } else {
                after_send
                    .contains(&(w.key.0.clone(), w.key.1))
                    .then(|| ms(from) - run_ms)
            };
            Some((w.key.clone(), (ms(from), ms(last), shifted)))
        })
        .collect()
}

/// The dependency graph the harness built (its dataset metadata, stored in the run's mmap
/// cache `manifest.json`) equals servebench's plans: per turn, the replay-barrier predecessors
/// (`replay_predecessors` vs [`Turn::after`]); per branch, background or joined (harness
/// `is_background` vs `join_turn`), the same children and start.
///
/// [`Turn::after`]: servebench_agentx::plan::Turn::after
fn same_dependencies_as_the_harness(
    work: &Path,
    plans: &[Arc<servebench_agentx::plan::TracePlan>],
) {
    let manifests: Vec<PathBuf> = std::fs::read_dir(work.join("mmap-cache"))
        .expect("the harness's mmap cache")
        .map(|e| e.unwrap().path().join("manifest.json"))
        .filter(|p| p.exists())
        .collect();
    assert_eq!(manifests.len(), 1, "{manifests:?}");
    let m: Value = serde_json::from_str(&std::fs::read_to_string(&manifests[0]).unwrap()).unwrap();
    let md: Value = match &m["dataset_metadata_json"] {
        Value::String(s) => serde_json::from_str(s).unwrap(),
        v => v.clone(),
    };
    let theirs: HashMap<&str, &Value> = md["conversations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["conversation_id"].as_str().unwrap(), c))
        .collect();
    let (mut edges, mut branches) = (0, 0);
    for p in plans {
        for c in &p.convs {
            let h = theirs
                .get(c.id.as_str())
                .unwrap_or_else(|| panic!("{} not in the harness's dataset", c.id));
            let ht = h["turns"].as_array().unwrap();
            assert_eq!(ht.len(), c.turns.len(), "{}: turns", c.id);
            for (k, (t, x)) in c.turns.iter().zip(ht).enumerate() {
                let mut want: Vec<(String, u64)> = x["replay_predecessors"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|r| {
                        (
                            r["conversation_id"].as_str().unwrap().to_string(),
                            r["turn_index"].as_u64().unwrap(),
                        )
                    })
                    .collect();
                let mut got: Vec<(String, u64)> = t
                    .after
                    .iter()
                    .map(|&(c2, k2)| (p.convs[c2].id.clone(), k2 as u64))
                    .collect();
                want.sort();
                got.sort();
                assert_eq!(got, want, "{} turn {k}: replay predecessors", c.id);
                edges += got.len();
            }
        }
        let hb = theirs[p.trace_id.as_str()]["branches"].as_array().unwrap();
        assert_eq!(hb.len(), p.branches.len(), "{}: branches", p.trace_id);
        for b in &p.branches {
            let kids: BTreeSet<&str> = b.children.iter().map(|&c| p.convs[c].id.as_str()).collect();
            let h = hb
                .iter()
                .find(|x| {
                    x["child_conversation_ids"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|v| v.as_str().unwrap())
                        .collect::<BTreeSet<_>>()
                        == kids
                })
                .unwrap_or_else(|| {
                    panic!("{}: no harness branch with children {kids:?}", p.trace_id)
                });
            assert_eq!(
                h["is_background"].as_bool().unwrap(),
                b.join_turn.is_none(),
                "{kids:?}: background"
            );
            assert!(
                (h["start_timestamp_ms"].as_f64().unwrap() - b.start_ms).abs() < 1e-6,
                "{kids:?}: branch start"
            );
            branches += 1;
        }
    }
    eprintln!("dependency graph as the harness's: {edges} barrier edges, {branches} branches");
}

/// The byte-table decode `servebench sweep` reconstructs with ([`FastTokenizer`]) builds every
/// message of every turn of all 20 shared traces byte for byte as the library's decode does,
/// with the real DeepSeek-V4 tokenizer; and only its cross-checks reach the library.
#[test]
fn fast_decode_builds_the_plans_of_the_library_decode() {
    let Some(e) = env() else { return };
    let traces = e.shared.join("data/agentx-traces");
    let lib = servebench_workload::LocalTokenizer::from_path(&e.tokenizer).unwrap();
    let fast =
        FastTokenizer::new(servebench_workload::LocalTokenizer::from_path(&e.tokenizer).unwrap());
    let a = load_plans(&traces, &lib).unwrap();
    let b = load_plans(&traces, &fast).unwrap();
    assert_eq!(a.len(), b.len());
    let mut messages = 0usize;
    for (pa, pb) in a.iter().zip(&b) {
        assert_eq!(pa.convs.len(), pb.convs.len());
        for (ca, cb) in pa.convs.iter().zip(&pb.convs) {
            assert_eq!(ca.id, cb.id);
            assert_eq!(ca.turns.len(), cb.turns.len(), "{}", ca.id);
            for (k, (ta, tb)) in ca.turns.iter().zip(&cb.turns).enumerate() {
                assert_eq!(ta.messages.len(), tb.messages.len(), "{} turn {k}", ca.id);
                for (ma, mb) in ta.messages.iter().zip(&tb.messages) {
                    assert_eq!(
                        ma.json_with_comma(),
                        mb.json_with_comma(),
                        "{} turn {k}",
                        ca.id
                    );
                    messages += 1;
                }
            }
        }
    }
    eprintln!(
        "{messages} messages equal; {} fast decodes",
        fast.fast_decodes()
    );
    assert!(messages > 1_000, "{messages}");
    assert!(fast.fast_decodes() > 10_000, "{}", fast.fast_decodes());
    assert_eq!(fast.library_decodes(), u64::from(DECODE_CROSS_CHECKS));
}

#[test]
fn agentx_replay_matches_the_reference_harness() {
    let _one = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    parity_with_timing_reruns(&TRACES, "::sa:");
}

#[test]
fn split_off_agents_replay_like_the_harness() {
    let _one = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    parity_with_timing_reruns(&SPLIT_TRACES, "::fa:");
}

/// Runs [`parity`]: every deterministic check (the dependency graph, the warmup primer set,
/// per request the roles, tokens, `max_completion_tokens` and marker, joins after their
/// children, the aggregate against the harness's own statistics) is asserted in the first run
/// and fails it at once — never retried. Only the timing checks (which turns fall in the 30 s
/// window, the children reached in it, spawn order and idle gaps within 50 ms) may be measured
/// again, up to three runs: both clients and the harness's worker processes share a 2-core CI
/// machine, and a starved timer then fires 100+ ms late on either side (seen in the full suite:
/// servebench +120 ms once, the harness +89 and +177 ms in one run).
fn parity_with_timing_reruns(names: &[&str], child: &str) {
    let mut last = Vec::new();
    for attempt in 1..=3 {
        match parity(names, child) {
            Ok(()) => return,
            Err(off) => {
                eprintln!("run {attempt}: timing off:\n  {}", off.join("\n  "));
                last = off;
            }
        }
    }
    panic!(
        "AgentX timing parity failed in 3 runs; the last:\n  {}",
        last.join("\n  ")
    );
}

/// Both clients on the trace `names`; `child` = a child conversation kind both runs must reach.
/// Deterministic checks assert (panic); the timing checks' misses are returned.
fn parity(names: &[&str], child: &str) -> Result<(), Vec<String>> {
    let Some(e) = env() else { return Ok(()) };
    let mut timing: Vec<String> = Vec::new();
    let dir = tempfile::tempdir().unwrap();
    eprintln!("work dir {}", dir.path().display());
    let traces = dir.path().join("traces");
    std::fs::create_dir(&traces).unwrap();
    for t in names {
        let name = format!("trace_{t}.json");
        std::fs::copy(
            e.shared.join("data/agentx-traces").join(&name),
            traces.join(&name),
        )
        .unwrap();
    }
    let mut mock_h = start_mock(&e, dir.path(), "harness");
    let mut mock_s = start_mock(&e, dir.path(), "servebench");

    // the reference run, in the background
    let out_h = dir.path().join("out_harness");
    let mut harness = Command::new("bash")
        .arg(e.oracle.join("run_oracle.sh"))
        .arg(&traces)
        .arg(&out_h)
        .args(["--trace-idle-gap-cap-seconds", "3"])
        .env("VENV", &e.venv)
        .env("TOKENIZER", &e.tokenizer)
        .env("URL", format!("http://127.0.0.1:{}", mock_h.port))
        .env("CONC", "2")
        .env("DURATION", "30")
        .env("WARMUP_PER_LANE", "2")
        .env("AGENTX_BENCHMARK_ID", BENCH_ID)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();

    // servebench, same settings (and the same codec `servebench sweep` uses)
    let tok =
        FastTokenizer::new(servebench_workload::LocalTokenizer::from_path(&e.tokenizer).unwrap());
    let plans = load_plans(&traces, &tok).unwrap();
    let cfg = ReplayConfig {
        conc: 2,
        duration: Duration::from_secs(30),
        warmup_per_lane: 2,
        tree_idle_cap: Duration::from_secs(3),
        benchmark_id: BENCH_ID.into(),
        model: "dsv4-mock".into(),
        ..Default::default()
    };
    // start once the harness's replay is on the wire (its dataset build takes ~30 s of CPU):
    // both replays then share the machine alike, so neither's mock runs slower
    let t_wait = std::time::Instant::now();
    while !std::fs::read_to_string(&mock_h.log)
        .unwrap_or_default()
        .contains("\"req\"")
    {
        if harness.try_wait().unwrap().is_some() || t_wait.elapsed() > Duration::from_secs(900) {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let ep = Endpoint::parse(&format!("http://127.0.0.1:{}", mock_s.port)).unwrap();
    let client = ClientCtx {
        endpoint: ep,
        builder: BodyBuilder::new(
            "dsv4-mock",
            Api::Chat,
            Engine::Openai,
            Compat::Servebench,
            false,
        ),
        compat: Compat::Servebench,
        new_connection_per_request: false,
        timeout: Duration::from_secs(300),
        clock: Clock::start(),
        capture_text: false,
        api_key: None,
    };
    let rt = tokio::runtime::Runtime::new().unwrap();
    let ours = rt
        .block_on(run(client, plans.clone(), cfg, Cancel::never(), |_| {}))
        .unwrap();
    let st = harness.wait().unwrap();
    assert!(
        st.success(),
        "run_oracle.sh failed: see {}",
        out_h.display()
    );
    same_dependencies_as_the_harness(dir.path(), &plans);

    // ---- join wire logs to (conversation, turn, phase)
    let export = read_jsonl(&out_h.join("profile_export.jsonl"));
    // each mock logs a request when its handler ends: both stopped (SIGTERM, aiohttp's graceful
    // exit ends every handler) and exited, their logs are complete — an event, not a pause
    mock_h.stop();
    mock_s.stop();
    let by_rid: HashMap<String, (String, u64, String)> = export
        .iter()
        .map(|r| {
            let md = &r["metadata"];
            (
                md["x_request_id"].as_str().unwrap().to_string(),
                (
                    md["conversation_id"].as_str().unwrap().to_string(),
                    md["turn_index"].as_u64().unwrap(),
                    md["benchmark_phase"].as_str().unwrap().to_string(),
                ),
            )
        })
        .collect();
    let msg_h = message_tokens(&e, &mock_h.dump);
    let msg_s = message_tokens(&e, &mock_s.dump);
    let wh = wire_entries(&mock_h.log, &msg_h, |w| {
        by_rid.get(header(w, "x-request-id")?).cloned()
    });
    let ws = wire_entries(&mock_s.log, &msg_s, |w| {
        let t = header(w, "x-servebench-turn")?;
        let mut it = t.split('|');
        Some((
            it.next()?.to_string(),
            it.next()?.parse().ok()?,
            it.next()?.to_string(),
        ))
    });
    assert_eq!(
        ws.len(),
        ours.records.len(),
        "every servebench request reached the server"
    );
    let mh: BTreeMap<_, _> = wh.iter().map(|w| (w.key.clone(), w)).collect();
    let ms: BTreeMap<_, _> = ws.iter().map(|w| (w.key.clone(), w)).collect();

    // ---- warmup: the same primer set (lane start points) and the same number of requests
    let warm = |m: &BTreeMap<(String, u64, String), &Wire>| -> BTreeSet<(String, u64)> {
        m.keys()
            .filter(|k| k.2 == "warmup")
            .map(|k| (k.0.clone(), k.1))
            .collect()
    };
    assert_eq!(
        warm(&mh),
        warm(&ms),
        "warmup requests (snapshot primers + cache pressure)"
    );

    // ---- per common key: roles, tokens, max tokens, marker
    let common: Vec<_> = mh.keys().filter(|k| ms.contains_key(*k)).cloned().collect();
    let prof_h = mh.keys().filter(|k| k.2 == "profiling").count();
    let prof_common = common.iter().filter(|k| k.2 == "profiling").count();
    eprintln!(
        "harness {} requests ({} profiling), servebench {}, common {} ({} profiling)",
        mh.len(),
        prof_h,
        ms.len(),
        common.len(),
        prof_common
    );
    let only = |a: &BTreeMap<(String, u64, String), &Wire>,
                b: &BTreeMap<(String, u64, String), &Wire>| {
        a.keys()
            .filter(|k| k.2 == "profiling" && !b.contains_key(*k))
            .map(|k| format!("{}#{}", k.0, k.1))
            .collect::<Vec<_>>()
    };
    eprintln!(
        "profiling turns only in the harness run: {:?}; only in servebench's: {:?}",
        only(&mh, &ms),
        only(&ms, &mh)
    );
    // timing: which turns fall into each client's 30 s window
    if prof_common * 10 < prof_h * 7 {
        timing.push(format!(
            "too few common profiling turns: {prof_common} of the harness's {prof_h}"
        ));
    }
    if let Ok(keep) = std::env::var("SERVEBENCH_AGENTX_KEEP") {
        let _ = Command::new("cp")
            .arg("-r")
            .arg(dir.path())
            .arg(&keep)
            .status();
    }
    let mut worst_total = 0f64;
    for k in &common {
        let (a, b) = (mh[k], ms[k]);
        assert_eq!(a.roles, b.roles, "{k:?}: roles");
        assert_eq!(a.max_tokens, b.max_tokens, "{k:?}: max_completion_tokens");
        assert_eq!(
            a.marker, b.marker,
            "{k:?}: [rid:] marker on the first user message"
        );
        assert!(
            b.marker.starts_with("[rid:") && b.marker.len() == 18,
            "{k:?}: {}",
            b.marker
        );
        let rel = (a.prompt_tokens as f64 - b.prompt_tokens as f64).abs() / a.prompt_tokens as f64;
        worst_total = worst_total.max(rel);
        assert!(
            rel <= 0.005,
            "{k:?}: prompt tokens {} vs {}",
            a.prompt_tokens,
            b.prompt_tokens
        );
        assert_eq!(
            a.msg_tokens.len(),
            b.msg_tokens.len(),
            "{k:?}: message count"
        );
        for (i, (x, y)) in a.msg_tokens.iter().zip(&b.msg_tokens).enumerate() {
            let tol = (*x as f64 * 0.005).max(2.0);
            assert!(
                (*x as f64 - *y as f64).abs() <= tol,
                "{k:?}: message {i} ({}) tokens {x} vs {y}",
                a.roles.as_bytes()[i] as char
            );
        }
    }
    eprintln!("worst prompt-token difference {:.4} %", worst_total * 100.0);

    // ---- subagents and split-off chains (`::sa:`, `::fa:`, `::aux:`): the same children
    // spawned; a gated root turn starts after its children
    let kids = |m: &BTreeMap<(String, u64, String), &Wire>| -> BTreeSet<String> {
        m.keys()
            .filter(|k| k.0.contains("::"))
            .map(|k| k.0.clone())
            .collect()
    };
    let (kh, ks) = (kids(&mh), kids(&ms));
    // timing: which children are reached within the window
    if !kh.iter().any(|k| k.contains(child)) {
        timing.push(format!(
            "the harness run reached no {child} child conversation: {kh:?}"
        ));
    }
    if kh != ks {
        timing.push(format!(
            "spawned subagent conversations: harness {kh:?}, servebench {ks:?}"
        ));
    }
    eprintln!("child conversations reached: {kh:?}");
    for p in &plans {
        for b in &p.branches {
            let Some(j) = b.join_turn else { continue };
            let root = (p.trace_id.clone(), j as u64, "profiling".to_string());
            for m in [&mh, &ms] {
                if let Some(r) = m.get(&root) {
                    for &c in &b.children {
                        let last = m
                            .iter()
                            .filter(|(k, _)| k.0 == p.convs[c].id)
                            .map(|(_, w)| w.done_ns)
                            .max();
                        if let Some(l) = last {
                            assert!(
                                l <= r.arrive_ns,
                                "{root:?} started before {} ended",
                                p.convs[c].id
                            );
                        }
                    }
                }
            }
        }
    }
    // spawn order of children within the common window: same order of first arrival when the
    // recorded offsets differ by more than the 50 ms tolerance
    let first = |ws: &[Wire], c: &str| {
        ws.iter()
            .filter(|w| w.key.0 == c)
            .map(|w| w.arrive_ns)
            .min()
    };
    let kv: Vec<&String> = kh.iter().collect();
    for (i, a) in kv.iter().enumerate() {
        for b in &kv[i + 1..] {
            if let (Some(ha), Some(hb), Some(sa), Some(sb)) =
                (first(&wh, a), first(&wh, b), first(&ws, a), first(&ws, b))
            {
                let dh = ha as f64 - hb as f64;
                if dh.abs() > 50e6 && (dh > 0.0) != (sa > sb) {
                    timing.push(format!("spawn order of {a} and {b}"));
                }
            }
        }
    }

    // ---- idle gaps
    // Each common gap must agree within 50 ms, from its own stream's scheduling event or from
    // the tree event that released it (see `gaps`). The harness's own timers run late now and
    // then on a loaded 2-core machine (seen: +40 ms, +90 ms); a gap the harness took more than
    // 50 ms later than servebench while servebench is on a schedule the recording allows
    // (recorded delay, the 3 s tree cap after the previous turn, or the 3 s tree cap after the
    // tree's last completion) is counted as the harness's miss, and those must stay a small
    // minority.
    let joins: std::collections::HashSet<(String, u64)> = plans
        .iter()
        .flat_map(|p| {
            let root = &p.convs[0];
            root.turns
                .iter()
                .enumerate()
                .filter(|(_, t)| !t.joins.is_empty())
                .map(move |(i, _)| (root.id.clone(), i as u64))
        })
        .collect();
    let spawned_by: HashMap<String, (String, u64, bool)> = plans
        .iter()
        .flat_map(|p| {
            p.convs.iter().filter_map(move |c| {
                let b = &p.branches[c.branch?];
                Some((
                    c.id.clone(),
                    (p.trace_id.clone(), b.spawning_turn as u64, b.at_send),
                ))
            })
        })
        .collect();
    // a child's first turn after its spawning turn's end, recorded: its offset from the branch
    // start, or (a branch started at the spawning turn's send) after that turn's recorded start
    let spawn_delay: HashMap<String, f64> = plans
        .iter()
        .flat_map(|p| {
            p.convs.iter().filter_map(move |c| {
                let b = &p.branches[c.branch?];
                let st = &p.convs[0].turns[b.spawning_turn];
                let t0 = c.turns.first()?.t_ms;
                let d = if b.at_send {
                    t0 - st.t_ms
                } else {
                    t0 - b.start_ms
                };
                Some((c.id.clone(), d))
            })
        })
        .collect();
    let after_send: std::collections::HashSet<(String, u64)> = plans
        .iter()
        .flat_map(|p| {
            p.branches
                .iter()
                .filter(|b| b.at_send)
                .map(move |b| (p.trace_id.clone(), b.spawning_turn as u64 + 1))
        })
        .collect();
    let (gh, gs) = (
        gaps(&wh, &joins, &spawned_by, &after_send, &spawn_delay),
        gaps(&ws, &joins, &spawned_by, &after_send, &spawn_delay),
    );
    let recorded: HashMap<String, &servebench_agentx::plan::Conversation> = plans
        .iter()
        .flat_map(|p| p.convs.iter().map(|c| (c.id.clone(), c)))
        .collect();
    let (mut n_gaps, mut by_tree, mut by_shift, mut harness_late, mut both_off) = (0, 0, 0, 0, 0);
    let mut worst_gap = 0f64;
    let mut keys: Vec<_> = gh.keys().filter(|k| gs.contains_key(*k)).collect();
    keys.sort();
    for k in keys {
        let ((h_own, h_tree, h_shift), (s_own, s_tree, s_shift)) = (gh[k], gs[k]);
        n_gaps += 1;
        let turn = &recorded[&k.0].turns[k.1 as usize];
        let d = match turn.delay_ms {
            Some(d) => d,
            None => spawn_delay.get(&k.0).copied().unwrap_or(0.0),
        };
        let on_schedule = |own: f64, tree: f64| {
            (own - d).abs() <= 50.0
                || (own - d.min(3000.0)).abs() <= 50.0
                || (tree - 3000.0).abs() <= 50.0
        };
        let (d_own, d_tree) = ((h_own - s_own).abs(), (h_tree - s_tree).abs());
        let d_shift = match (h_shift, s_shift) {
            (Some(a), Some(b)) => (a - b).abs(),
            _ => f64::INFINITY,
        };
        if d_own <= 50.0 {
            worst_gap = worst_gap.max(d_own);
        } else if d_shift <= 50.0 {
            by_shift += 1;
            worst_gap = worst_gap.max(d_shift);
            eprintln!(
                "{k:?}: scheduled with the spawning/previous turn's run time: {:.1} ms (harness) \
                 / {:.1} ms (servebench); from its own event {h_own:.1} / {s_own:.1} ms \
                 (recorded {d:.1} ms)",
                h_shift.unwrap_or_default(),
                s_shift.unwrap_or_default()
            );
        } else if d_tree <= 50.0 {
            by_tree += 1;
            worst_gap = worst_gap.max(d_tree);
            eprintln!(
                "{k:?}: released by its tree {h_tree:.1} ms (harness) / {s_tree:.1} ms \
                 (servebench) after the tree's last completion; from its own stream \
                 {h_own:.1} / {s_own:.1} ms (recorded {d:.1} ms)"
            );
        } else if (h_own > s_own + 50.0
            && !on_schedule(h_own, h_tree)
            && on_schedule(s_own, s_tree))
            || (turn.delay_ms.is_none()
                && matches!((h_shift, s_shift), (Some(h), Some(s)) if h > s + 50.0 && s.abs() <= 50.0))
        {
            harness_late += 1;
            eprintln!(
                "{k:?}: harness gap {h_own:.1} ms (tree {h_tree:.1}) off its schedule \
                 ({d:.1} ms); servebench {s_own:.1} ms (tree {s_tree:.1})"
            );
        } else if !on_schedule(h_own, h_tree) && !on_schedule(s_own, s_tree) {
            // Neither client is on a schedule the recording allows (seen in the full suite on
            // 2-core machines: trace_0365::fa:000 turn 2, recorded 511.9 s, both released
            // 0.4-1.5 s after the 3 s tree cap, 86-245 ms apart): the gap is set by another
            // stream's run time on each client's own mock server (docs/measurement.md §13,
            // known limit). Counted with the harness's misses; together a minority.
            both_off += 1;
            eprintln!(
                "{k:?}: both off the recorded schedule ({d:.1} ms): harness {h_own:.1} ms (tree \
                 {h_tree:.1}), servebench {s_own:.1} ms (tree {s_tree:.1})"
            );
        } else {
            timing.push(format!(
                "{k:?}: idle gap {s_own:.1} ms (tree {s_tree:.1}, corrected {s_shift:?}) vs the \
                 harness's {h_own:.1} ms (tree {h_tree:.1}, corrected {h_shift:?}); recorded \
                 {d:.1} ms"
            ));
        }
    }
    eprintln!(
        "{n_gaps} common idle gaps ({by_tree} released by their tree, {by_shift} shifted with the \
         previous turn's run time), worst difference {worst_gap:.1} ms, harness late \
         {harness_late}, both off schedule {both_off}"
    );
    if n_gaps < 5 {
        timing.push(format!("too few common idle gaps ({n_gaps})"));
    }
    // at least three quarters of the common gaps agree within 50 ms on one anchor
    if (harness_late + both_off) * 4 > n_gaps {
        timing.push(format!(
            "{harness_late} of {n_gaps} gaps late in the harness, {both_off} off schedule in both"
        ));
    }

    // ---- aggregate from the harness's records vs the harness's own statistics
    let recs: Vec<AgentxRecord> = std::fs::read_to_string(out_h.join("profile_export.jsonl"))
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| AgentxRecord::from_aiperf_line(l).unwrap())
        .collect();
    let agg_h: Value = serde_json::from_str(
        &std::fs::read_to_string(out_h.join("profile_export_aiperf.json")).unwrap(),
    )
    .unwrap();
    let expected_out = plans
        .iter()
        .map(|p| (p.trace_id.clone(), p.expected_out.clone()))
        .collect();
    let th = &agg_h["theoretical_prefix_cache_hit"];
    let inputs = AggInputs {
        theoretical_cache: Some((
            th["sum"].as_f64().unwrap() as u64,
            th["count"].as_f64().unwrap() as u64,
        )),
        expected_out,
        ..Default::default()
    };
    let a = aggregate(&recs, &inputs);
    let v = serde_json::to_value(&a).unwrap();
    let prof = recs
        .iter()
        .filter(|r| r.phase == RecordPhase::Profiling)
        .count() as f64;
    assert_eq!(
        v["num_requests_successful"].as_f64().unwrap(),
        agg_h["request_count"]["avg"].as_f64().unwrap()
    );
    assert_eq!(prof, agg_h["request_count"]["avg"].as_f64().unwrap());
    let close = |x: f64, y: f64, what: &str| {
        assert!(
            (x - y).abs() <= 1e-9 * x.abs().max(y.abs()).max(1e-12),
            "{what}: servebench {x} vs harness {y}"
        );
    };
    let mut checked = 0;
    for (block, metric, scale) in [
        (
            &v["request_metrics"]["latency"]["ttft"],
            "time_to_first_token",
            1e-3,
        ),
        (
            &v["request_metrics"]["latency"]["e2el"],
            "request_latency",
            1e-3,
        ),
        (
            &v["request_metrics"]["latency"]["itl"],
            "inter_token_latency",
            1e-3,
        ),
        (
            &v["request_metrics"]["tokens"]["input"],
            "input_sequence_length",
            1.0,
        ),
        (
            &v["request_metrics"]["tokens"]["output_actual"],
            "output_sequence_length",
            1.0,
        ),
    ] {
        let h = &agg_h[metric];
        for (ours_k, theirs_k) in [
            ("mean", "avg"),
            ("p50", "p50"),
            ("p75", "p75"),
            ("p90", "p90"),
            ("p95", "p95"),
            ("std", "std"),
        ] {
            close(
                block[ours_k].as_f64().unwrap(),
                h[theirs_k].as_f64().unwrap() * scale,
                &format!("{metric}.{theirs_k}"),
            );
            checked += 1;
        }
    }
    let rate = th["sum"].as_f64().unwrap() / th["count"].as_f64().unwrap();
    close(
        v["request_metrics"]["cache"]["theoretical_cache_hit_rate"]
            .as_f64()
            .unwrap(),
        rate,
        "theoretical_cache_hit_rate",
    );
    close(
        v["request_metrics"]["cache"]["theoretical_cache_hit_rate"]
            .as_f64()
            .unwrap(),
        th["avg"].as_f64().unwrap() / 100.0,
        "theoretical_prefix_cache_hit.avg",
    );
    eprintln!("{checked} statistics agree with the harness's profile_export_aiperf.json");

    // servebench's own theoretical hit blocks agree with the harness's per-turn values
    let ours_hit: u64 = ours
        .records
        .iter()
        .filter(|r| r.rec.phase == RecordPhase::Profiling)
        .map(|r| u64::from(r.hit_blocks))
        .sum();
    assert!(
        ours_hit > 0,
        "prefix sharing across turns shows in the theoretical hits"
    );
    let _ = Arc::new(());
    if timing.is_empty() {
        Ok(())
    } else {
        Err(timing)
    }
}
