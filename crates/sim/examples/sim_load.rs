//! Load check for the simulator (docs/simulator.md, "Performance"), in two processes so the
//! simulator's CPU time is its own:
//!
//! ```text
//! cargo run --release -p servebench-sim --example sim_load -- serve 18200 20 60 [zero]
//! cargo run --release -p servebench-sim --example sim_load -- drive http://127.0.0.1:18200 16 1024 1024 64
//! ```
//! `serve PORT SPEEDUP SECS [zero]` prints its CPU seconds and the engine lag when it exits;
//! `drive URL CONC ISL OSL REQUESTS` runs a closed loop of streaming completions and prints
//! measured TTFT/TPOT (wall, and × speedup when given) and token events per second.

use std::time::{Duration, Instant};

use futures_util::StreamExt;
use servebench_sim::{SimOptions, SimServer};

fn cpu_seconds() -> f64 {
    // utime + stime of this process, from /proc/self/stat (clock ticks, 100 Hz on Linux).
    let s = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let rest = s.rsplit(')').next().unwrap_or("");
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|x| x.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) + ticks(12)) / 100.0
}

fn rss_mib() -> f64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|k| k.parse::<f64>().ok())
        .map(|k| k / 1024.0)
        .unwrap_or(0.0)
}

async fn serve(port: u16, speedup: f64, secs: f64, zero: bool) {
    let s = SimServer::start(SimOptions {
        port,
        speedup,
        zero_delay: zero,
        ..Default::default()
    })
    .await
    .unwrap();
    println!("{}", s.describe());
    println!("listening {}", s.base_url());
    let t = Instant::now();
    tokio::time::sleep(Duration::from_secs_f64(secs)).await;
    let text = reqwest::get(format!("{}/metrics", s.base_url()))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    for l in text.lines() {
        if l.starts_with("servebench_sim_lag")
            || l.starts_with("servebench_sim_modelled")
            || l.starts_with("vllm:generation_tokens_total")
        {
            println!("{l}");
        }
    }
    let wall = t.elapsed().as_secs_f64();
    let cpu = cpu_seconds();
    println!(
        "server: wall {wall:.1} s, cpu {cpu:.2} s ({:.0}% of one core), peak RSS {:.0} MiB",
        100.0 * cpu / wall,
        rss_mib()
    );
    s.shutdown().await;
}

async fn drive(url: String, conc: usize, isl: usize, osl: usize, n: usize) {
    let prompt = (0..isl)
        .map(|i| format!("w{i}"))
        .collect::<Vec<_>>()
        .join(" ");
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(conc)
        .build()
        .unwrap();
    let next = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let t0 = Instant::now();
    let mut tasks = vec![];
    for _ in 0..conc {
        let (client, url, prompt, next) =
            (client.clone(), url.clone(), prompt.clone(), next.clone());
        tasks.push(tokio::spawn(async move {
            let mut out = vec![];
            while next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) < n {
                let body = serde_json::json!({"prompt": prompt, "max_tokens": osl, "ignore_eos": true,
                    "stream": true, "stream_options": {"include_usage": true}});
                let t = Instant::now();
                let resp = client
                    .post(format!("{url}/v1/completions"))
                    .json(&body)
                    .send()
                    .await
                    .unwrap();
                let mut s = resp.bytes_stream();
                let (mut first, mut last, mut events) = (None, t, 0usize);
                let mut carry = 0usize;
                while let Some(b) = s.next().await {
                    let b = b.unwrap();
                    let now = Instant::now();
                    // Count "\n\n" event ends (a boundary can straddle two reads).
                    let mut k = 0;
                    let bytes = &b[..];
                    if carry == 1 && bytes.first() == Some(&b'\n') {
                        k += 1;
                    }
                    k += bytes.windows(2).filter(|w| w == b"\n\n").count();
                    carry = usize::from(bytes.last() == Some(&b'\n'));
                    if k > 0 {
                        first.get_or_insert(now);
                        last = now;
                        events += k;
                    }
                }
                out.push((t, first.unwrap(), last, events));
            }
            out
        }));
    }
    let mut all = vec![];
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    let wall = t0.elapsed().as_secs_f64();
    let ttft: f64 = all
        .iter()
        .map(|(t, f, _, _)| (*f - *t).as_secs_f64())
        .sum::<f64>()
        / all.len() as f64;
    let tpot: f64 = all
        .iter()
        .map(|(_, f, l, _)| (*l - *f).as_secs_f64() / (osl as f64 - 1.0))
        .sum::<f64>()
        / all.len() as f64;
    let events: usize = all.iter().map(|x| x.3).sum();
    println!(
        "client: {} requests in {wall:.2} s wall; mean TTFT {:.3} ms, mean TPOT {:.4} ms (wall); {:.0} SSE events/s; client cpu {:.2} s",
        all.len(),
        ttft * 1e3,
        tpot * 1e3,
        events as f64 / wall,
        cpu_seconds()
    );
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    match a.get(1).map(String::as_str) {
        Some("serve") => rt.block_on(serve(
            a[2].parse().unwrap(),
            a[3].parse().unwrap(),
            a[4].parse().unwrap(),
            a.get(5).map(String::as_str) == Some("zero"),
        )),
        Some("drive") => rt.block_on(drive(
            a[2].clone(),
            a[3].parse().unwrap(),
            a[4].parse().unwrap(),
            a[5].parse().unwrap(),
            a[6].parse().unwrap(),
        )),
        _ => eprintln!(
            "usage: sim_load serve PORT SPEEDUP SECS [zero] | drive URL CONC ISL OSL REQUESTS"
        ),
    }
}
