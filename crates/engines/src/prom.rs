//! The one Prometheus text-exposition parser ([`parse_text`]) and the window statistics of a
//! set of scrapes ([`ScrapeSet`]: per series first/last/max/mean; a counter's `total` is its
//! increase over the window, last − first). Every reader of an engine's `/metrics` (the
//! pipeline's prefix-cache control, the AgentX `server_metrics` block, server detection) goes
//! through it, and through [`crate::metrics`] for what the families mean.

use std::collections::BTreeMap;

/// One sample line: family name (counter `_total` suffix removed), labels, value.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// Family name (`vllm:prefix_cache_hits`).
    pub name: String,
    /// Labels, sorted.
    pub labels: BTreeMap<String, String>,
    /// Value.
    pub value: f64,
    /// Whether the family is a counter.
    pub counter: bool,
}

/// Parses Prometheus text exposition. Histogram/summary series (`_bucket`, `_sum`, `_count`,
/// `_created`) are skipped; counters are named by their family (without `_total`).
pub fn parse_text(text: &str) -> Vec<Sample> {
    let mut types: BTreeMap<String, String> = BTreeMap::new();
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let mut it = rest.split_whitespace();
            if let (Some(n), Some(t)) = (it.next(), it.next()) {
                types.insert(n.to_string(), t.to_string());
            }
            continue;
        }
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (name_labels, value) = match line.rfind('}') {
            Some(p) => (&line[..=p], line[p + 1..].trim()),
            None => match line.split_once(char::is_whitespace) {
                Some((a, b)) => (a, b.trim()),
                None => continue,
            },
        };
        let value = value.split_whitespace().next().unwrap_or("");
        let Ok(value) = value.parse::<f64>() else {
            continue;
        };
        let (raw, labels) = match name_labels.find('{') {
            Some(p) => (
                &name_labels[..p],
                parse_labels(&name_labels[p + 1..name_labels.len() - 1]),
            ),
            None => (name_labels, BTreeMap::new()),
        };
        let (name, counter) = if let Some(base) = raw.strip_suffix("_total") {
            // the family is declared either without `_total` (OpenMetrics, vLLM) or with it
            // (llama.cpp: `# TYPE llamacpp:prompt_tokens_total counter`)
            if types.get(base).map(String::as_str) == Some("counter")
                || types.get(raw).map(String::as_str) == Some("counter")
                || !types.contains_key(raw)
            {
                (base.to_string(), true)
            } else {
                (raw.to_string(), false)
            }
        } else {
            match types.get(raw).map(String::as_str) {
                Some("counter") => (raw.to_string(), true),
                Some("gauge") | Some("untyped") | None => {
                    if ["_bucket", "_sum", "_count", "_created"]
                        .iter()
                        .any(|s| raw.ends_with(s))
                        && types
                            .keys()
                            .any(|k| raw.starts_with(k.as_str()) && k != raw)
                    {
                        continue;
                    }
                    (raw.to_string(), false)
                }
                _ => continue,
            }
        };
        out.push(Sample {
            name,
            labels,
            value,
            counter,
        });
    }
    out
}

fn parse_labels(s: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        while i < b.len() && (b[i] == b',' || b[i] == b' ') {
            i += 1;
        }
        let ks = i;
        while i < b.len() && b[i] != b'=' {
            i += 1;
        }
        let key = s[ks..i].trim().to_string();
        i += 1; // '='
        if i >= b.len() || b[i] != b'"' {
            break;
        }
        i += 1;
        let mut val = String::new();
        while i < b.len() && b[i] != b'"' {
            if b[i] == b'\\' && i + 1 < b.len() {
                i += 1;
                val.push(match b[i] {
                    b'n' => '\n',
                    c => c as char,
                });
            } else {
                let ch = s[i..].chars().next().unwrap_or(' ');
                val.push(ch);
                i += ch.len_utf8() - 1;
            }
            i += 1;
        }
        i += 1;
        if !key.is_empty() {
            out.insert(key, val);
        }
    }
    out
}

/// Stats of one series over the scrapes of the window.
#[derive(Debug, Clone, PartialEq)]
pub struct SeriesStats {
    /// Labels.
    pub labels: BTreeMap<String, String>,
    /// Counter: last − first (the window's increase); gauge: `None`.
    pub total: Option<f64>,
    /// Largest value seen.
    pub max: f64,
    /// Mean of the values seen.
    pub avg: f64,
}

/// Accumulates scrapes: per (family, labels) first/last/max/sum/count.
#[derive(Debug, Clone, Default)]
pub struct ScrapeSet {
    series: BTreeMap<(String, Vec<(String, String)>), Acc>,
    /// Scrapes taken.
    pub scrapes: u64,
    /// Scrapes that failed (connection, HTTP status).
    pub failures: u64,
}

#[derive(Debug, Clone)]
struct Acc {
    counter: bool,
    first: f64,
    last: f64,
    max: f64,
    sum: f64,
    n: u64,
}

impl ScrapeSet {
    /// Adds one scrape's samples.
    pub fn add(&mut self, samples: &[Sample]) {
        self.scrapes += 1;
        for s in samples {
            let key = (
                s.name.clone(),
                s.labels
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
            );
            let a = self.series.entry(key).or_insert(Acc {
                counter: s.counter,
                first: s.value,
                last: s.value,
                max: s.value,
                sum: 0.0,
                n: 0,
            });
            a.last = s.value;
            a.max = a.max.max(s.value);
            a.sum += s.value;
            a.n += 1;
        }
    }

    /// The family names seen, sorted, each once.
    pub fn names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self.series.keys().map(|(n, _)| n.as_str()).collect();
        names.dedup();
        names
    }

    /// Number of metric families seen.
    pub fn metric_count(&self) -> usize {
        let mut names: Vec<&str> = self.series.keys().map(|(n, _)| n.as_str()).collect();
        names.dedup();
        names.len()
    }

    /// Series of a family.
    pub fn series(&self, name: &str) -> Vec<SeriesStats> {
        self.series
            .iter()
            .filter(|((n, _), _)| n == name)
            .map(|((_, l), a)| SeriesStats {
                labels: l.iter().cloned().collect(),
                total: a.counter.then(|| (a.last - a.first).max(0.0)),
                max: a.max,
                avg: a.sum / a.n.max(1) as f64,
            })
            .collect()
    }

    /// Σ over series of the counter increase (`total`, else `max`); `None` if no series.
    pub fn sum_total(&self, name: &str, filter: impl Fn(&SeriesStats) -> bool) -> Option<f64> {
        let s: Vec<f64> = self
            .series(name)
            .into_iter()
            .filter(|x| filter(x))
            .map(|x| x.total.unwrap_or(x.max))
            .collect();
        (!s.is_empty()).then(|| s.iter().sum())
    }

    /// max over series of the gauge max; `None` if no series.
    pub fn gauge_max(&self, names: &[&str]) -> Option<f64> {
        names
            .iter()
            .flat_map(|n| self.series(n))
            .map(|x| x.max)
            .reduce(f64::max)
    }

    /// Σ per value of `label` of the counter increase (`total`, else `max`) over the series
    /// of `name` that carry the label.
    pub fn by_label(&self, name: &str, label: &str) -> BTreeMap<String, f64> {
        let mut out = BTreeMap::new();
        for s in self.series(name) {
            if let Some(l) = s.labels.get(label) {
                *out.entry(l.clone()).or_insert(0.0) += s.total.unwrap_or(s.max);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_with_escapes() {
        let s = parse_text("x{a=\"1,2\",b=\"q\\\"t\"} 3\n");
        assert_eq!(s[0].labels["a"], "1,2");
        assert_eq!(s[0].labels["b"], "q\"t");
        assert_eq!(s[0].value, 3.0);
    }

    #[test]
    fn counters_lose_total_histograms_are_skipped_and_window_totals_are_increases() {
        let a = "# TYPE vllm:prefix_cache_hits counter\nvllm:prefix_cache_hits_total{engine=\"0\"} 100.0\n\
# TYPE vllm:e2e_request_latency_seconds histogram\nvllm:e2e_request_latency_seconds_bucket{le=\"1\"} 3\n\
vllm:e2e_request_latency_seconds_sum 2.5\n# TYPE llamacpp:prompt_tokens_total counter\nllamacpp:prompt_tokens_total 7\n";
        let s = parse_text(a);
        let names: Vec<(&str, bool)> = s.iter().map(|x| (x.name.as_str(), x.counter)).collect();
        assert_eq!(
            names,
            [
                ("vllm:prefix_cache_hits", true),
                ("llamacpp:prompt_tokens", true)
            ]
        );
        let mut set = ScrapeSet::default();
        set.add(&s);
        set.add(&parse_text(&a.replace("} 100.0", "} 130.0")));
        assert_eq!(
            set.sum_total("vllm:prefix_cache_hits", |_| true),
            Some(30.0)
        );
        assert_eq!(set.sum_total("vllm:nothing", |_| true), None);
        assert_eq!(
            set.names(),
            ["llamacpp:prompt_tokens", "vllm:prefix_cache_hits"]
        );
    }
}
