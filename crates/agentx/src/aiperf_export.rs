//! AIPerf's server-metrics export (`server_metrics_export.json` and `.csv` in AIPerf's
//! artifact folder), written from `/metrics` scrapes of the engine taken during the profiling
//! window, for recipes that require it (InferenceX's `validate_required_agentic_server_metrics`
//! checks both files are non-empty and that the JSON names a metric with
//! `AIPERF_REQUIRED_SERVER_METRIC_PREFIX`, e.g. `"vllm:`).
//!
//! The shapes follow AIPerf's own exporters (ai-dynamo/aiperf `src/aiperf/server_metrics/
//! json_exporter.py`, `csv_exporter.py`): the JSON is metrics-first —
//! `metrics[<name>] = {type, description, unit?, series: [{endpoint_url, labels?, stats}]}` under
//! `aiperf_version`, `benchmark_id`, `summary` (`endpoints_configured`, `endpoints_successful`,
//! `start_time`, `end_time`) — and the CSV has comment lines, then one section per metric type:
//! `Endpoint,Type,Metric,Unit,<stats…>,<label columns…>,Description`. Gauge stats are
//! `avg min max std p1 p5 p10 p25 p50 p75 p90 p95 p99` over the scrapes; counter stats are `total`
//! (last − first value over the window) and `rate` (total / window seconds) plus the per-interval
//! rate's `rate_avg rate_min rate_max rate_std`.
//!
//! Differences from AIPerf, said in the files (`aiperf_version: servebench-<version>`):
//! histograms are not exported (servebench's Prometheus parser keeps counters and gauges), unit
//! inference is limited to the `_seconds`/`_bytes`/`_tokens` suffixes, percentiles are linear
//! interpolation between closest ranks (numpy's default, which AIPerf uses).

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

use crate::prom::parse_text;

/// One series' values over the window, in scrape order.
#[derive(Debug, Clone, Default)]
struct Series {
    counter: bool,
    values: Vec<(f64, f64)>, // (seconds since the first scrape, value)
}

/// The scrapes of one `/metrics` endpoint over a profiling window.
#[derive(Debug, Clone, Default)]
pub struct ServerMetricsScrapes {
    /// The endpoint scraped (`http://127.0.0.1:8888/metrics`).
    pub endpoint_url: String,
    /// Wall-clock start and end of the window, ns since the epoch.
    pub start_ns: u128,
    /// End of the window, ns.
    pub end_ns: u128,
    /// Successful scrapes.
    pub scrapes: u64,
    /// Failed scrapes.
    pub failures: u64,
    help: BTreeMap<String, String>,
    series: BTreeMap<(String, BTreeMap<String, String>), Series>,
    t0: Option<Instant>,
}

fn now_ns() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}

impl ServerMetricsScrapes {
    /// No scrape yet, of `endpoint_url`.
    pub fn new(endpoint_url: &str) -> ServerMetricsScrapes {
        ServerMetricsScrapes {
            endpoint_url: endpoint_url.to_string(),
            start_ns: now_ns(),
            end_ns: now_ns(),
            ..Default::default()
        }
    }

    /// Adds one scrape's text taken `at` seconds into the window.
    pub fn add_text(&mut self, text: &str, at: f64) {
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# HELP ") {
                if let Some((n, h)) = rest.split_once(' ') {
                    let n = n.strip_suffix("_total").unwrap_or(n);
                    self.help.insert(n.to_string(), h.trim().to_string());
                }
            }
        }
        for s in parse_text(text) {
            let e = self.series.entry((s.name, s.labels)).or_default();
            e.counter = s.counter;
            e.values.push((at, s.value));
        }
        self.scrapes += 1;
        self.end_ns = now_ns();
    }

    /// Scrapes `endpoint_url` (plain HTTP GET) once into the set, at the seconds since the
    /// set's first scrape; a failed scrape is counted.
    pub fn scrape(&mut self, endpoint_url: &str) {
        let t0 = *self.t0.get_or_insert_with(Instant::now);
        match http_get(endpoint_url) {
            Some(text) => self.add_text(&text, t0.elapsed().as_secs_f64()),
            None => self.failures += 1,
        }
    }

    /// Scrapes every `every` while `window` says the profiling window is open (`Some(true)`),
    /// skips while it has not opened (`Some(false)`), and ends with one last scrape when it
    /// closed (`None`). The window's start time is the first scrape's.
    pub fn scrape_window(
        endpoint_url: &str,
        every: Duration,
        mut window: impl FnMut() -> Option<bool>,
    ) -> ServerMetricsScrapes {
        let mut s = ServerMetricsScrapes::new(endpoint_url);
        let mut started = false;
        loop {
            match window() {
                Some(true) => {
                    if !started {
                        started = true;
                        s.start_ns = now_ns();
                    }
                    s.scrape(endpoint_url);
                }
                Some(false) => {}
                None => {
                    s.scrape(endpoint_url);
                    return s;
                }
            }
            std::thread::sleep(every);
        }
    }

    /// The JSON export (`server_metrics_export.json`), `benchmark_id` naming the run.
    pub fn to_json(&self, benchmark_id: &str) -> Value {
        let mut metrics = Map::new();
        for ((name, labels), series) in &self.series {
            let entry = metrics.entry(name.clone()).or_insert_with(|| {
                let mut m = Map::new();
                m.insert(
                    "type".into(),
                    json!(if series.counter { "counter" } else { "gauge" }),
                );
                m.insert(
                    "description".into(),
                    json!(self.help.get(name).cloned().unwrap_or_default()),
                );
                if let Some(u) = unit(name) {
                    m.insert("unit".into(), json!(u));
                }
                m.insert("series".into(), json!([]));
                Value::Object(m)
            });
            let mut one = Map::new();
            one.insert("endpoint_url".into(), json!(self.endpoint_url));
            if !labels.is_empty() {
                one.insert("labels".into(), json!(labels));
            }
            one.insert("stats".into(), Value::Object(stats(series)));
            if let Some(Value::Array(a)) = entry.get_mut("series") {
                a.push(Value::Object(one));
            }
        }
        json!({
            "aiperf_version": format!("servebench-{}", env!("CARGO_PKG_VERSION")),
            "benchmark_id": benchmark_id,
            "summary": {
                "endpoints_configured": [self.endpoint_url],
                "endpoints_successful": if self.scrapes > 0 { vec![self.endpoint_url.clone()] } else { vec![] },
                "start_time": iso(self.start_ns),
                "end_time": iso(self.end_ns),
                "endpoint_info": { self.endpoint_url.clone(): {
                    "total_fetches": self.scrapes + self.failures,
                    "successful_fetches": self.scrapes,
                    "failed_fetches": self.failures,
                }},
                "note": "written by servebench from its own /metrics scrapes of the simulated engine (AIPerf's export shape; histograms not exported)",
            },
            "metrics": metrics,
        })
    }

    /// The CSV export (`server_metrics_export.csv`): comment lines, then a gauge and a counter
    /// section, each with its own header.
    pub fn to_csv(&self, benchmark_id: &str) -> String {
        let mut out = String::new();
        out.push_str("# AIPerf Server Metrics Export (CSV)\n");
        out.push_str(&format!(
            "# aiperf_version: servebench-{}\n# schema_version: 1.0\n# benchmark_id: {benchmark_id}\n# Note: written by servebench from its own /metrics scrapes (histograms not exported)\n#\n",
            env!("CARGO_PKG_VERSION")
        ));
        let mut first = true;
        for (counter, kind, keys) in [
            (false, "gauge", GAUGE_KEYS.as_slice()),
            (true, "counter", COUNTER_KEYS.as_slice()),
        ] {
            let rows: Vec<_> = self
                .series
                .iter()
                .filter(|(_, s)| s.counter == counter)
                .collect();
            if rows.is_empty() {
                continue;
            }
            if !first {
                out.push('\n');
            }
            first = false;
            let mut label_keys: Vec<&String> =
                rows.iter().flat_map(|((_, l), _)| l.keys()).collect();
            label_keys.sort();
            label_keys.dedup();
            let mut header: Vec<String> = ["Endpoint", "Type", "Metric", "Unit"]
                .map(String::from)
                .to_vec();
            header.extend(keys.iter().map(|k| k.to_string()));
            header.extend(label_keys.iter().map(|k| k.to_string()));
            header.push("Description".into());
            out.push_str(&csv_line(&header));
            let endpoint = self
                .endpoint_url
                .trim_start_matches("http://")
                .trim_end_matches("/metrics")
                .to_string();
            for ((name, labels), s) in rows {
                let st = stats(s);
                let mut row = vec![
                    endpoint.clone(),
                    kind.into(),
                    name.clone(),
                    unit(name).unwrap_or("").into(),
                ];
                for k in keys {
                    row.push(st.get(*k).map(fmt_num).unwrap_or_default());
                }
                for k in &label_keys {
                    row.push(labels.get(*k).cloned().unwrap_or_default());
                }
                row.push(self.help.get(name).cloned().unwrap_or_default());
                out.push_str(&csv_line(&row));
            }
        }
        out
    }
}

const GAUGE_KEYS: [&str; 13] = [
    "avg", "min", "max", "std", "p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99",
];
const COUNTER_KEYS: [&str; 6] = [
    "total", "rate", "rate_avg", "rate_min", "rate_max", "rate_std",
];

fn fmt_num(v: &Value) -> String {
    match v.as_f64() {
        Some(x) if x.fract() == 0.0 && x.abs() < 1e15 => format!("{}", x as i64),
        Some(x) => format!("{x:.4}"),
        None => String::new(),
    }
}

fn csv_line(cells: &[String]) -> String {
    let mut s = cells
        .iter()
        .map(|c| {
            if c.contains([',', '"', '\n']) {
                format!("\"{}\"", c.replace('"', "\"\""))
            } else {
                c.clone()
            }
        })
        .collect::<Vec<_>>()
        .join(",");
    s.push('\n');
    s
}

/// The unit AIPerf infers from a metric name's suffix (`_seconds` → seconds, …), if any.
fn unit(name: &str) -> Option<&'static str> {
    let n = name.strip_suffix("_total").unwrap_or(name);
    [
        ("_seconds", "seconds"),
        ("_bytes", "bytes"),
        ("_tokens", "tokens"),
        ("_perc", "ratio"),
    ]
    .iter()
    .find(|(s, _)| n.ends_with(s))
    .map(|(_, u)| *u)
}

/// Linear-interpolation percentile (numpy's default) of sorted `v`, `q` in 0..=100.
fn percentile(v: &[f64], q: f64) -> f64 {
    if v.len() == 1 {
        return v[0];
    }
    let r = q / 100.0 * (v.len() - 1) as f64;
    let (lo, hi) = (r.floor() as usize, r.ceil() as usize);
    v[lo] + (v[hi] - v[lo]) * (r - lo as f64)
}

fn mean_std(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    (
        m,
        (v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / n).sqrt(),
    )
}

fn stats(s: &Series) -> Map<String, Value> {
    let mut m = Map::new();
    if s.values.is_empty() {
        return m;
    }
    if s.counter {
        let (t0, v0) = s.values[0];
        let (t1, v1) = s.values[s.values.len() - 1];
        let total = (v1 - v0).max(0.0);
        m.insert("total".into(), json!(total));
        if t1 > t0 {
            m.insert("rate".into(), json!(total / (t1 - t0)));
        }
        let rates: Vec<f64> = s
            .values
            .windows(2)
            .filter(|w| w[1].0 > w[0].0)
            .map(|w| ((w[1].1 - w[0].1).max(0.0)) / (w[1].0 - w[0].0))
            .collect();
        if !rates.is_empty() {
            let (avg, std) = mean_std(&rates);
            m.insert("rate_avg".into(), json!(avg));
            m.insert(
                "rate_min".into(),
                json!(rates.iter().cloned().fold(f64::INFINITY, f64::min)),
            );
            m.insert(
                "rate_max".into(),
                json!(rates.iter().cloned().fold(f64::NEG_INFINITY, f64::max)),
            );
            m.insert("rate_std".into(), json!(std));
        }
    } else {
        let mut v: Vec<f64> = s.values.iter().map(|x| x.1).collect();
        v.sort_by(f64::total_cmp);
        let (avg, std) = mean_std(&v);
        m.insert("avg".into(), json!(avg));
        m.insert("min".into(), json!(v[0]));
        m.insert("max".into(), json!(v[v.len() - 1]));
        m.insert("std".into(), json!(std));
        for q in [1.0, 5.0, 10.0, 25.0, 50.0, 75.0, 90.0, 95.0, 99.0] {
            m.insert(format!("p{q}"), json!(percentile(&v, q)));
        }
    }
    m
}

fn iso(ns: u128) -> String {
    let secs = (ns / 1_000_000_000) as i64;
    let nanos = (ns % 1_000_000_000) as u32;
    chrono::DateTime::from_timestamp(secs, nanos)
        .map(|d| d.naive_local().format("%Y-%m-%dT%H:%M:%S%.6f").to_string())
        .unwrap_or_default()
}

/// `GET url` over plain HTTP/1.0 (`http://host:port/path`); the body on a 200, else None.
fn http_get(url: &str) -> Option<String> {
    let rest = url.strip_prefix("http://")?;
    let (hostport, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let addr = std::net::ToSocketAddrs::to_socket_addrs(hostport)
        .ok()?
        .next()?;
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: {hostport}\r\n\r\n").ok()?;
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).ok()?;
    let text = String::from_utf8_lossy(&buf);
    let (head, body) = text.split_once("\r\n\r\n")?;
    head.get(9..12).filter(|c| *c == "200")?;
    Some(body.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    const T1: &str = "# HELP vllm:num_requests_running Number of requests in model execution batches.\n# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\"m\"} 2\n# HELP vllm:prompt_tokens_total Number of prefill tokens processed.\n# TYPE vllm:prompt_tokens counter\nvllm:prompt_tokens_total{model_name=\"m\"} 100\n";
    const T2: &str = "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\"m\"} 4\n# TYPE vllm:prompt_tokens counter\nvllm:prompt_tokens_total{model_name=\"m\"} 400\n";

    #[test]
    fn gauges_and_counters_are_exported_in_aiperfs_shapes() {
        let mut s = ServerMetricsScrapes::new("http://127.0.0.1:8888/metrics");
        s.add_text(T1, 0.0);
        s.add_text(T2, 2.0);
        let j = s.to_json("run-1");
        let g = &j["metrics"]["vllm:num_requests_running"];
        assert_eq!(g["type"], "gauge");
        assert_eq!(
            g["description"],
            "Number of requests in model execution batches."
        );
        let st = &g["series"][0]["stats"];
        assert_eq!(
            (st["avg"].as_f64(), st["min"].as_f64(), st["max"].as_f64()),
            (Some(3.0), Some(2.0), Some(4.0))
        );
        assert_eq!(st["p50"].as_f64(), Some(3.0));
        assert_eq!(g["series"][0]["labels"]["model_name"], "m");
        let c = &j["metrics"]["vllm:prompt_tokens"]["series"][0]["stats"];
        assert_eq!(
            (c["total"].as_f64(), c["rate"].as_f64()),
            (Some(300.0), Some(150.0))
        );
        assert_eq!(j["metrics"]["vllm:prompt_tokens"]["unit"], "tokens");
        // what validate_required_agentic_server_metrics greps for
        assert!(serde_json::to_string_pretty(&j)
            .unwrap()
            .contains("\"vllm:"));
        let csv = s.to_csv("run-1");
        let lines: Vec<&str> = csv.lines().collect();
        assert!(lines[0].starts_with("# AIPerf Server Metrics Export (CSV)"));
        let gh = lines
            .iter()
            .position(|l| l.starts_with("Endpoint,Type,Metric,Unit,avg,min,max,std,p1"))
            .unwrap();
        assert_eq!(lines[gh + 1], "127.0.0.1:8888,gauge,vllm:num_requests_running,,3,2,4,1,2.0200,2.1000,2.2000,2.5000,3,3.5000,3.8000,3.9000,3.9800,m,Number of requests in model execution batches.");
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with("Endpoint,Type,Metric,Unit,total,rate,rate_avg")),
            "{csv}"
        );
        assert!(
            lines.iter().any(|l| l.starts_with(
                "127.0.0.1:8888,counter,vllm:prompt_tokens,tokens,300,150,150,150,150,0,m,"
            )),
            "{csv}"
        );
    }
}
