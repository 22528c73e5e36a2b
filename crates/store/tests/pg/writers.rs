//! Many servebench processes writing one PostgreSQL store: 8 writers × 20 points (all 160
//! rows, no identity twice), a writer killed with SIGKILL mid-run (only its unfinished point
//! lost, the run resumable), and a connection cut under a writer (retried with backoff, said
//! in one line). Figures: docs/reliability.md.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::agg_row;
use crate::common::pg::{fresh_db, query_text};
use servebench_store::{RunKind, RunMeta, RunStatus, Store, StoredRow};

/// Child-process entry of these tests (started by them with `SB_PG_CHILD`); ignored alone.
#[test]
#[ignore = "the child process of the PostgreSQL writer tests, started by them"]
fn pg_child_entry() {
    let mode = std::env::var("SB_PG_CHILD").expect("started by the writer tests");
    let url = std::env::var("SB_PG_URL").unwrap();
    let n: u64 = std::env::var("SB_PG_N").unwrap().parse().unwrap();
    let tag = std::env::var("SB_PG_TAG").unwrap();
    let go = std::env::var("SB_PG_GO").unwrap();
    let wait_go = |suffix: &str| {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !Path::new(&format!("{go}{suffix}")).exists() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(2));
        }
    };
    let mut store = Store::open(&url).unwrap();
    let mut meta = RunMeta::new(RunKind::Sweep);
    meta.label = Some(tag.clone());
    meta.branch = Some("main".into());
    let run = store.record_run(&meta).unwrap();
    let mut out = std::io::stdout();
    writeln!(out, "ready {run}").unwrap();
    out.flush().unwrap();
    wait_go("");
    for i in 1..=n {
        if mode == "cut" && i == 2 {
            writeln!(out, "cut me").unwrap();
            out.flush().unwrap();
            wait_go(".cut");
        }
        store.add_point(run, &agg_row(i, &tag)).unwrap();
        writeln!(out, "stored {i}").unwrap();
        out.flush().unwrap();
        if mode == "slow" {
            std::thread::sleep(Duration::from_millis(40));
        }
    }
    store.finish_run(run, RunStatus::Ok).unwrap();
}

fn child(url: &str, mode: &str, n: u64, tag: &str, go: &Path) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "writers::pg_child_entry",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("SB_PG_CHILD", mode)
        .env("SB_PG_URL", url)
        .env("SB_PG_N", n.to_string())
        .env("SB_PG_TAG", tag)
        .env("SB_PG_GO", go)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Reads the child's stdout up to a line holding `want` (libtest prints the test's name
/// before the child's first line); the line from `want` on.
fn wait_line(lines: &mut impl Iterator<Item = std::io::Result<String>>, want: &str) -> String {
    for l in lines.by_ref() {
        let l = l.unwrap();
        if let Some(i) = l.find(want) {
            return l[i..].to_string();
        }
    }
    panic!("the child ended before printing `{want}`")
}

#[test]
fn eight_writers_twenty_points_each_store_all_160_rows_once() {
    let Some(url) = fresh_db("sb_writers") else {
        return;
    };
    drop(Store::open(&url).unwrap()); // schema first: the writers race on rows, not on DDL
    let tmp = tempfile::tempdir().unwrap();
    let go = tmp.path().join("go");
    let mut kids: Vec<Child> = (0..8)
        .map(|w| child(&url, "fast", 20, &format!("w{w}"), &go))
        .collect();
    let mut outs = Vec::new();
    for k in &mut kids {
        let mut lines = BufReader::new(k.stdout.take().unwrap()).lines();
        wait_line(&mut lines, "ready");
        outs.push(lines); // kept open: a writer's next line must not meet a closed pipe
    }
    let t0 = Instant::now();
    std::fs::write(&go, b"").unwrap();
    for (k, lines) in kids.iter_mut().zip(outs) {
        assert_eq!(
            lines
                .filter(|l| l.as_ref().unwrap().contains("stored "))
                .count(),
            20
        );
        let st = k.wait().unwrap();
        let mut err = String::new();
        k.stderr.take().unwrap().read_to_string(&mut err).unwrap();
        assert!(st.success(), "writer failed: {err}");
    }
    println!("8 writers x 20 points: {:.2} s", t0.elapsed().as_secs_f64());
    let s = Store::open(&url).unwrap();
    let runs = s.list_runs(None, None).unwrap();
    assert_eq!(runs.len(), 8);
    for r in &runs {
        assert_eq!((r.status, r.n_points), (RunStatus::Ok, 20));
        let pts = s.points(r.id).unwrap();
        let tag = r.meta.label.clone().unwrap();
        for (i, p) in pts.iter().enumerate() {
            assert_eq!(p.row, StoredRow::Servebench(agg_row(i as u64 + 1, &tag)));
        }
    }
    let q = |sql: &str| query_text(&url, sql);
    assert_eq!(q("SELECT count(*)::text FROM benchmark_results"), "160");
    assert_eq!(q("SELECT count(*)::text FROM servebench_points"), "160");
    assert_eq!(
        q("SELECT count(*)::text FROM (SELECT 1 FROM benchmark_results GROUP BY workflow_run_id, \
           config_id, benchmark_type, isl, osl, conc, offload_mode HAVING count(*) > 1) d"),
        "0"
    );
    assert_eq!(
        q("SELECT count(*)::text FROM configs"),
        "1",
        "one config, shared"
    );
    s.integrity_check().unwrap();
}

#[test]
fn a_writer_killed_mid_run_loses_only_its_unfinished_point_and_resumes() {
    let Some(url) = fresh_db("sb_kill9") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let go = tmp.path().join("go");
    std::fs::write(&go, b"").unwrap();
    let mut k = child(&url, "slow", 20, "killed", &go);
    let mut lines = BufReader::new(k.stdout.take().unwrap()).lines();
    let run: i64 = wait_line(&mut lines, "ready")[6..].parse().unwrap();
    wait_line(&mut lines, "stored 5");
    k.kill().unwrap(); // SIGKILL
    k.wait().unwrap();
    let mut s = Store::open(&url).unwrap();
    let r = s.get_run(servebench_store::RunId(run)).unwrap().unwrap();
    assert_eq!(r.status, RunStatus::Running, "a killed run stays running");
    let pts = s.points(r.id).unwrap();
    let n = pts.len() as u64;
    assert!(
        (5..=6).contains(&n),
        "stored {n}: only the point in flight may be missing"
    );
    for (i, p) in pts.iter().enumerate() {
        assert_eq!(
            p.row,
            StoredRow::Servebench(agg_row(i as u64 + 1, "killed"))
        );
    }
    assert_eq!(
        query_text(&url, "SELECT count(*)::text FROM benchmark_results"),
        n.to_string()
    );
    s.integrity_check().unwrap();
    // resumable: the same run takes the remaining points and finishes
    s.reopen_run(r.id).unwrap();
    for i in n + 1..=20 {
        s.add_point(r.id, &agg_row(i, "killed")).unwrap();
    }
    s.finish_run(r.id, RunStatus::Ok).unwrap();
    assert_eq!(s.get_run(r.id).unwrap().unwrap().n_points, 20);
    s.integrity_check().unwrap();
}

/// A TCP proxy to PostgreSQL that can cut its connections and refuse new ones for a while.
struct Proxy {
    port: u16,
    up: Arc<AtomicBool>,
    conns: Arc<Mutex<Vec<TcpStream>>>,
}

impl Proxy {
    fn start(target: String) -> Proxy {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let up = Arc::new(AtomicBool::new(true));
        let conns: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
        let (up2, conns2) = (up.clone(), conns.clone());
        std::thread::spawn(move || {
            for c in l.incoming() {
                let Ok(c) = c else { continue };
                if !up2.load(Ordering::SeqCst) {
                    let _ = c.shutdown(Shutdown::Both);
                    continue;
                }
                let s = TcpStream::connect(&target).unwrap();
                conns2
                    .lock()
                    .unwrap()
                    .extend([c.try_clone().unwrap(), s.try_clone().unwrap()]);
                for (mut a, mut b) in [(c.try_clone().unwrap(), s.try_clone().unwrap()), (s, c)] {
                    std::thread::spawn(move || {
                        let _ = std::io::copy(&mut a, &mut b);
                        let _ = b.shutdown(Shutdown::Both);
                    });
                }
            }
        });
        Proxy { port, up, conns }
    }

    fn cut(&self) {
        self.up.store(false, Ordering::SeqCst);
        for c in self.conns.lock().unwrap().drain(..) {
            let _ = c.shutdown(Shutdown::Both);
        }
    }
}

#[test]
fn a_cut_connection_is_retried_with_backoff_and_said_in_one_line() {
    let Some(url) = fresh_db("sb_cut") else {
        return;
    };
    let hostport = url
        .split('@')
        .nth(1)
        .unwrap()
        .split('/')
        .next()
        .unwrap()
        .to_string();
    let proxy = Proxy::start(hostport.clone());
    let via = url.replace(&hostport, &format!("127.0.0.1:{}", proxy.port));
    let tmp = tempfile::tempdir().unwrap();
    let go = tmp.path().join("go");
    std::fs::write(&go, b"").unwrap();
    let mut k = child(&via, "cut", 3, "cut", &go);
    let mut lines = BufReader::new(k.stdout.take().unwrap()).lines();
    wait_line(&mut lines, "cut me");
    proxy.cut();
    std::fs::write(tmp.path().join("go.cut"), b"").unwrap();
    std::thread::sleep(Duration::from_millis(700)); // a few refused reconnects
    proxy.up.store(true, Ordering::SeqCst);
    wait_line(&mut lines, "stored 3");
    assert!(k.wait().unwrap().success());
    let mut err = String::new();
    k.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    let said: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("connection lost"))
        .collect();
    assert_eq!(said.len(), 1, "one line: {err}");
    assert!(
        said[0].contains("storing a point") && said[0].contains("retrying with backoff"),
        "{err}"
    );
    assert!(said[0].starts_with(&format!(
        "postgres://servebench@127.0.0.1:{}/sb_cut",
        proxy.port
    )));
    let s = Store::open(&url).unwrap();
    let r = s.latest_run(None).unwrap().unwrap();
    assert_eq!(
        (r.status, r.n_points),
        (RunStatus::Ok, 3),
        "each point once"
    );
    s.integrity_check().unwrap();
}
