//! Weka-format agentic traces (MEASUREMENT.md Part 2 §5.4): a streaming loader for both layouts
//! (a folder of `*.json` files, one trace each, read in sorted name order; or a `traces.jsonl`
//! with one trace per line), with `n`/`s` requests and nested `subagent` entries.
//!
//! One trace is parsed at a time, so memory is bounded by the largest trace, not the corpus.
//! Errors are one line naming the file (and line for JSONL), the trace id and the field.

use std::io::BufRead;
use std::path::{Path, PathBuf};

use serde_json::Value;

/// A malformed or unreadable trace: `file[:line]: trace <id>: field `<f>`: <what>` (without
/// `trace <id>: ` while the id is not known yet).
#[derive(Debug, thiserror::Error)]
#[error("{location}: {}{what}", trace_prefix(.trace_id))]
pub struct TraceError {
    /// `path` or `path:line`.
    pub location: String,
    /// The trace's `id`, or `?` when not known yet.
    pub trace_id: String,
    /// What is wrong, naming the field (`field `requests[3].in`: expected an integer ≥ 0`).
    pub what: String,
}

/// `trace <id>: `, or nothing for the unknown id `?`.
fn trace_prefix(id: &str) -> String {
    if id == "?" {
        String::new()
    } else {
        format!("trace {id}: ")
    }
}

/// One model request of a trace (`type` `n` or `s`).
#[derive(Debug, Clone, PartialEq)]
pub struct TraceRequest {
    /// Start, seconds since the start of its (sub)trace (`t`).
    pub t: f64,
    /// `true` for `s` (streaming) entries, `false` for `n`.
    pub streaming: bool,
    /// Recorded input tokens (`in`).
    pub input_tokens: u32,
    /// Recorded output tokens (`out`).
    pub output_tokens: u32,
    /// KV-block ids of the prompt, 64 tokens each (`hash_ids`), prefix-shared across turns.
    pub hash_ids: Vec<u64>,
    /// Recorded API time, seconds (`api_time`; 0 when absent).
    pub api_time: f64,
    /// Recorded think time before this request, seconds (`think_time`; 0 when absent).
    pub think_time: f64,
    /// Recorded model (`model`; empty when absent). Chain detection never continues a chain
    /// across models.
    pub model: String,
}

/// A spawned subagent (`type: "subagent"`): a child conversation started at `t`.
#[derive(Debug, Clone, PartialEq)]
pub struct Subagent {
    /// Spawn time, seconds since the parent trace start (`t`).
    pub t: f64,
    /// `agent_id` (e.g. `agent_001`).
    pub agent_id: String,
    /// Tool-definition tokens of the subagent's system prefix (`tool_tokens`; 0 when absent).
    pub tool_tokens: u32,
    /// System-prompt tokens (`system_tokens`; 0 when absent).
    pub system_tokens: u32,
    /// The subagent's own requests (times relative to its spawn).
    pub requests: Vec<TraceRequest>,
    /// Whether the parent waits for it (`background: true` subagents do not gate).
    pub background: bool,
    /// Recorded duration, ms (`duration_ms`; `None` when absent, e.g. async launches).
    pub duration_ms: Option<f64>,
}

/// One entry of a trace's `requests` list.
#[derive(Debug, Clone, PartialEq)]
pub enum TraceEntry {
    /// A model request of the trace itself.
    Request(TraceRequest),
    /// A subagent.
    Subagent(Subagent),
}

/// One trace (a session tree).
#[derive(Debug, Clone, PartialEq)]
pub struct Trace {
    /// `id`.
    pub id: String,
    /// Tokens per hash block (`block_size`, 64).
    pub block_size: u32,
    /// Tool-definition tokens of the system prefix (`tool_tokens`; 0 when absent).
    pub tool_tokens: u32,
    /// System-prompt tokens (`system_tokens`; 0 when absent).
    pub system_tokens: u32,
    /// Requests and subagents in recorded order.
    pub entries: Vec<TraceEntry>,
    /// Where it came from (`file` or `file:line`), for messages.
    pub origin: String,
}

impl Trace {
    /// The trace's own `n`/`s` requests (subagents excluded), in order.
    pub fn root_requests(&self) -> impl Iterator<Item = &TraceRequest> {
        self.entries.iter().filter_map(|e| match e {
            TraceEntry::Request(r) => Some(r),
            TraceEntry::Subagent(_) => None,
        })
    }
    /// Number of subagents.
    pub fn subagent_count(&self) -> usize {
        self.entries
            .iter()
            .filter(|e| matches!(e, TraceEntry::Subagent(_)))
            .count()
    }
}

/// Parses one trace from its JSON text. `origin` is `file` or `file:line`.
pub fn parse_trace(text: &str, origin: &str) -> Result<Trace, TraceError> {
    let v: Value = serde_json::from_str(text).map_err(|e| TraceError {
        location: origin.to_string(),
        trace_id: "?".into(),
        what: format!("invalid JSON: {e}"),
    })?;
    from_value(&v, origin)
}

fn from_value(v: &Value, origin: &str) -> Result<Trace, TraceError> {
    let err = |id: &str, what: String| TraceError {
        location: origin.to_string(),
        trace_id: id.to_string(),
        what,
    };
    let obj = v
        .as_object()
        .ok_or_else(|| err("?", "expected a JSON object".into()))?;
    let id = match obj.get("id") {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        Some(_) => return Err(err("?", "field `id`: expected a non-empty string".into())),
        None => return Err(err("?", "field `id` is missing".into())),
    };
    let f = |what: String| err(&id, what);
    let block_size = opt_u32(obj.get("block_size"), "block_size").map_err(f)?;
    let block_size = block_size.unwrap_or(64);
    if block_size == 0 {
        return Err(err(&id, "field `block_size`: must be > 0".into()));
    }
    let tool_tokens = opt_u32(obj.get("tool_tokens"), "tool_tokens")
        .map_err(|w| err(&id, w))?
        .unwrap_or(0);
    let system_tokens = opt_u32(obj.get("system_tokens"), "system_tokens")
        .map_err(|w| err(&id, w))?
        .unwrap_or(0);
    let reqs = obj
        .get("requests")
        .and_then(Value::as_array)
        .ok_or_else(|| err(&id, "field `requests`: expected an array".into()))?;
    let mut entries = Vec::with_capacity(reqs.len());
    for (i, r) in reqs.iter().enumerate() {
        let path = format!("requests[{i}]");
        let kind = r.get("type").and_then(Value::as_str).unwrap_or("");
        if kind == "subagent" {
            let sa = parse_subagent(r, &path).map_err(|w| err(&id, w))?;
            entries.push(TraceEntry::Subagent(sa));
        } else {
            entries.push(TraceEntry::Request(
                parse_request(r, &path).map_err(|w| err(&id, w))?,
            ));
        }
    }
    if !entries.iter().any(|e| matches!(e, TraceEntry::Request(_))) {
        return Err(err(&id, "field `requests`: no `n`/`s` request".into()));
    }
    Ok(Trace {
        id,
        block_size,
        tool_tokens,
        system_tokens,
        entries,
        origin: origin.to_string(),
    })
}

fn parse_subagent(r: &Value, path: &str) -> Result<Subagent, String> {
    let t = req_f64(r.get("t"), &format!("{path}.t"))?;
    let agent_id = r
        .get("agent_id")
        .and_then(Value::as_str)
        .ok_or_else(|| format!("field `{path}.agent_id`: expected a string"))?
        .to_string();
    let tool_tokens = opt_u32(r.get("tool_tokens"), &format!("{path}.tool_tokens"))?.unwrap_or(0);
    let system_tokens =
        opt_u32(r.get("system_tokens"), &format!("{path}.system_tokens"))?.unwrap_or(0);
    let list = r
        .get("requests")
        .and_then(Value::as_array)
        .ok_or_else(|| format!("field `{path}.requests`: expected an array"))?;
    let mut requests = Vec::with_capacity(list.len());
    for (j, q) in list.iter().enumerate() {
        let p = format!("{path}.requests[{j}]");
        if q.get("type").and_then(Value::as_str) == Some("subagent") {
            // nested subagents are not produced by proxy_to_weka; refuse rather than guess
            return Err(format!(
                "field `{p}.type`: nested subagents are not supported"
            ));
        }
        requests.push(parse_request(q, &p)?);
    }
    let background = r
        .get("background")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let duration_ms =
        match r.get("duration_ms") {
            None | Some(Value::Null) => None,
            Some(x) => Some(x.as_f64().filter(|f| f.is_finite()).ok_or_else(|| {
                format!("field `{path}.duration_ms`: expected a number, got {x}")
            })?),
        };
    Ok(Subagent {
        duration_ms,
        t,
        agent_id,
        tool_tokens,
        system_tokens,
        requests,
        background,
    })
}

fn parse_request(r: &Value, path: &str) -> Result<TraceRequest, String> {
    let kind = match r.get("type") {
        Some(Value::String(s)) => s.as_str(),
        Some(_) => return Err(format!("field `{path}.type`: expected a string")),
        None => return Err(format!("field `{path}.type` is missing")),
    };
    let streaming = match kind {
        "n" => false,
        "s" => true,
        other => {
            return Err(format!(
                "field `{path}.type`: `{other}` (expected `n`, `s` or `subagent`)"
            ))
        }
    };
    let t = req_f64(r.get("t"), &format!("{path}.t"))?;
    let input_tokens = opt_u32(r.get("in"), &format!("{path}.in"))?
        .ok_or_else(|| format!("field `{path}.in` is missing"))?;
    let output_tokens = match opt_u32(r.get("out"), &format!("{path}.out"))? {
        Some(o) => o,
        None => opt_u32(r.get("output_length"), &format!("{path}.output_length"))?
            .ok_or_else(|| format!("field `{path}.out` is missing"))?,
    };
    let hash_ids = match r.get("hash_ids") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(a)) => {
            let mut out = Vec::with_capacity(a.len());
            for (k, h) in a.iter().enumerate() {
                out.push(h.as_u64().ok_or_else(|| {
                    format!("field `{path}.hash_ids[{k}]`: expected an integer ≥ 0")
                })?);
            }
            out
        }
        Some(_) => return Err(format!("field `{path}.hash_ids`: expected an array")),
    };
    let api_time = opt_f64(r.get("api_time"), &format!("{path}.api_time"))?.unwrap_or(0.0);
    let think_time = opt_f64(r.get("think_time"), &format!("{path}.think_time"))?.unwrap_or(0.0);
    let model = match r.get("model") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(m)) => m.clone(),
        Some(_) => return Err(format!("field `{path}.model`: expected a string")),
    };
    Ok(TraceRequest {
        t,
        streaming,
        input_tokens,
        output_tokens,
        hash_ids,
        api_time,
        think_time,
        model,
    })
}

fn opt_u32(v: Option<&Value>, field: &str) -> Result<Option<u32>, String> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(x) => {
            let n = x
                .as_u64()
                .or_else(|| {
                    x.as_f64()
                        .filter(|f| *f >= 0.0 && f.fract() == 0.0)
                        .map(|f| f as u64)
                })
                .ok_or_else(|| format!("field `{field}`: expected an integer ≥ 0, got {x}"))?;
            u32::try_from(n)
                .map(Some)
                .map_err(|_| format!("field `{field}`: {n} is too large"))
        }
    }
}

fn opt_f64(v: Option<&Value>, field: &str) -> Result<Option<f64>, String> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(x) => x
            .as_f64()
            .filter(|f| f.is_finite() && *f >= 0.0)
            .map(Some)
            .ok_or_else(|| format!("field `{field}`: expected a number ≥ 0, got {x}")),
    }
}

fn req_f64(v: Option<&Value>, field: &str) -> Result<f64, String> {
    opt_f64(v, field)?.ok_or_else(|| format!("field `{field}` is missing"))
}

/// Where traces come from: the files in read order, and whether they are JSONL.
#[derive(Debug, Clone)]
pub struct TraceSource {
    files: Vec<PathBuf>,
    jsonl: bool,
}

impl TraceSource {
    /// `path` = a folder of `*.json` trace files (sorted by name), a folder holding `*.jsonl`
    /// files (one trace per line; InferenceX / HF layout), a single `.jsonl` or a single `.json`.
    /// Errors name the path.
    pub fn open(path: &Path) -> Result<Self, TraceError> {
        let err = |what: String| TraceError {
            location: path.display().to_string(),
            trace_id: "?".into(),
            what,
        };
        if path.is_file() {
            let jsonl = path.extension().is_some_and(|e| e == "jsonl");
            return Ok(Self {
                files: vec![path.to_path_buf()],
                jsonl,
            });
        }
        let rd = std::fs::read_dir(path).map_err(|e| err(format!("cannot read: {e}")))?;
        let mut json = Vec::new();
        let mut jsonl = Vec::new();
        for ent in rd {
            let p = ent.map_err(|e| err(format!("cannot read: {e}")))?.path();
            match p.extension().and_then(|e| e.to_str()) {
                Some("jsonl") => jsonl.push(p),
                Some("json") => json.push(p),
                _ => {}
            }
        }
        json.sort();
        jsonl.sort();
        if !jsonl.is_empty() && !json.is_empty() {
            // one kind would be skipped without a word (a new-user pass found the .json ones)
            return Err(err(format!(
                "holds both *.jsonl ({}) and *.json ({}) files; pass one traces.jsonl, or a folder of trace_*.json only",
                jsonl.len(),
                json.len()
            )));
        }
        if !jsonl.is_empty() {
            Ok(Self {
                files: jsonl,
                jsonl: true,
            })
        } else if !json.is_empty() {
            Ok(Self {
                files: json,
                jsonl: false,
            })
        } else {
            Err(err("no *.json or *.jsonl trace files".into()))
        }
    }

    /// The files, in read order.
    pub fn files(&self) -> &[PathBuf] {
        &self.files
    }

    /// Streams the traces one by one (one file or one line parsed at a time).
    pub fn iter(&self) -> TraceIter {
        TraceIter {
            files: self.files.clone(),
            jsonl: self.jsonl,
            next_file: 0,
            reader: None,
        }
    }

    /// Reads every trace (stopping at the first error).
    pub fn load_all(&self) -> Result<Vec<Trace>, TraceError> {
        self.iter().collect()
    }

    /// The error for a source that holds no trace (an empty `traces.jsonl`, or `*.jsonl`
    /// files with only blank lines): `PATH: no traces in the file` / `… in its N *.jsonl
    /// file(s)`.
    pub fn no_traces(&self, path: &Path) -> TraceError {
        TraceError {
            location: path.display().to_string(),
            trace_id: "?".into(),
            what: if path.is_file() {
                "no traces in the file".into()
            } else {
                format!("no traces in its {} *.jsonl file(s)", self.files.len())
            },
        }
    }

    /// The up-front check of a `--traces` path, before anything is started: it opens
    /// ([`TraceSource::open`]) and its first trace reads and parses (only that one: the
    /// rest are read when the plans are built).
    ///
    /// # Errors
    /// Those of [`TraceSource::open`] and of the first trace, or [`TraceSource::no_traces`].
    pub fn check(path: &Path) -> Result<(), TraceError> {
        let src = Self::open(path)?;
        match src.iter().next() {
            Some(first) => first.map(|_| ()),
            None => Err(src.no_traces(path)),
        }
    }
}

/// Iterator over the traces of a [`TraceSource`].
pub struct TraceIter {
    files: Vec<PathBuf>,
    jsonl: bool,
    next_file: usize,
    reader: Option<(PathBuf, std::io::BufReader<std::fs::File>, usize)>,
}

impl Iterator for TraceIter {
    type Item = Result<Trace, TraceError>;
    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some((path, rd, line_no)) = &mut self.reader {
                let mut line = String::new();
                match rd.read_line(&mut line) {
                    Ok(0) => {
                        self.reader = None;
                        continue;
                    }
                    Ok(_) => {
                        *line_no += 1;
                        if line.trim().is_empty() {
                            continue;
                        }
                        let origin = format!("{}:{}", path.display(), line_no);
                        return Some(parse_trace(&line, &origin));
                    }
                    Err(e) => {
                        let origin = format!("{}:{}", path.display(), *line_no + 1);
                        self.reader = None;
                        return Some(Err(TraceError {
                            location: origin,
                            trace_id: "?".into(),
                            what: format!("cannot read: {e}"),
                        }));
                    }
                }
            }
            let path = self.files.get(self.next_file)?.clone();
            self.next_file += 1;
            if self.jsonl {
                match std::fs::File::open(&path) {
                    Ok(f) => {
                        self.reader = Some((path, std::io::BufReader::new(f), 0));
                        continue;
                    }
                    Err(e) => {
                        return Some(Err(TraceError {
                            location: path.display().to_string(),
                            trace_id: "?".into(),
                            what: format!("cannot read: {e}"),
                        }))
                    }
                }
            }
            let origin = path.display().to_string();
            return Some(match std::fs::read_to_string(&path) {
                Ok(text) => parse_trace(&text, &origin),
                Err(e) => Err(TraceError {
                    location: origin,
                    trace_id: "?".into(),
                    what: format!("cannot read: {e}"),
                }),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OK: &str = r#"{"id":"tr1","block_size":64,"tool_tokens":100,"system_tokens":28,
      "requests":[
        {"t":0.0,"type":"n","in":200,"out":10,"hash_ids":[1,2,3],"api_time":1.5,"think_time":0},
        {"t":5.0,"type":"subagent","agent_id":"agent_001","tool_tokens":64,"system_tokens":0,
         "requests":[{"t":0.0,"type":"s","in":100,"out":0,"hash_ids":[9,10],"api_time":0.5}]},
        {"t":9.0,"type":"s","in":300,"out":20,"hash_ids":[1,2,3,4,5],"api_time":2}]}"#;

    #[test]
    fn parses_requests_and_subagents() {
        let t = parse_trace(OK, "x.json").unwrap();
        assert_eq!(t.id, "tr1");
        assert_eq!(t.entries.len(), 3);
        assert_eq!(t.root_requests().count(), 2);
        assert_eq!(t.subagent_count(), 1);
        let TraceEntry::Subagent(sa) = &t.entries[1] else {
            panic!()
        };
        assert_eq!(sa.agent_id, "agent_001");
        assert_eq!(sa.requests[0].hash_ids, vec![9, 10]);
        assert!(sa.requests[0].streaming);
        assert_eq!(sa.requests[0].output_tokens, 0);
    }

    #[test]
    fn errors_name_file_trace_and_field() {
        let bad = OK.replace(r#""in":300"#, r#""in":"many""#);
        let e = parse_trace(&bad, "dir/trace_7.json")
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "dir/trace_7.json: trace tr1: field `requests[2].in`: expected an integer ≥ 0, got \"many\""
        );
        assert!(!e.contains('\n'));
        let bad = OK.replace(r#""hash_ids":[9,10]"#, r#""hash_ids":[9,-1]"#);
        let e = parse_trace(&bad, "f.jsonl:3").unwrap_err().to_string();
        assert!(
            e.starts_with("f.jsonl:3: trace tr1: field `requests[1].requests[0].hash_ids[1]`"),
            "{e}"
        );
        let e = parse_trace("{\"requests\":[]}", "a.json")
            .unwrap_err()
            .to_string();
        assert_eq!(e, "a.json: field `id` is missing");
        let e = parse_trace("{oops", "a.json").unwrap_err().to_string();
        assert!(e.starts_with("a.json: invalid JSON"), "{e}");
    }

    #[test]
    fn both_layouts_stream_the_same_traces() {
        let dir = tempfile::tempdir().unwrap();
        let files = dir.path().join("files");
        std::fs::create_dir(&files).unwrap();
        let t2 = OK.replace("tr1", "tr2");
        std::fs::write(files.join("trace_b.json"), &t2).unwrap();
        std::fs::write(files.join("trace_a.json"), OK).unwrap();
        let hf = dir.path().join("hf");
        std::fs::create_dir(&hf).unwrap();
        let one_line = |s: &str| s.replace('\n', " ");
        std::fs::write(
            hf.join("traces.jsonl"),
            format!("{}\n\n{}\n", one_line(OK), one_line(&t2)),
        )
        .unwrap();
        let a = TraceSource::open(&files).unwrap().load_all().unwrap();
        let b = TraceSource::open(&hf).unwrap().load_all().unwrap();
        assert_eq!(a.len(), 2);
        assert_eq!(a[0].id, "tr1");
        assert_eq!(
            a.iter().map(|t| &t.entries).collect::<Vec<_>>(),
            b.iter().map(|t| &t.entries).collect::<Vec<_>>()
        );
        assert!(b[1].origin.ends_with("traces.jsonl:3"), "{}", b[1].origin);
        // a bad line names its line number
        std::fs::write(
            hf.join("traces.jsonl"),
            format!("{}\n{{\"id\":\"z\"}}\n", one_line(OK)),
        )
        .unwrap();
        let e = TraceSource::open(&hf)
            .unwrap()
            .load_all()
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("traces.jsonl:2: trace z: field `requests`"),
            "{e}"
        );
        // both kinds in one folder: refused, not one kind skipped
        std::fs::write(hf.join("trace_a.json"), OK).unwrap();
        let e = TraceSource::open(&hf).err().unwrap().to_string();
        assert!(
            e.contains("holds both *.jsonl (1) and *.json (1) files; pass one traces.jsonl"),
            "{e}"
        );
        // the file itself is still accepted
        assert!(TraceSource::open(&hf.join("traces.jsonl")).is_ok());
    }

    /// New-user F11: an empty traces.jsonl got as far as the replay ("no trace has a live
    /// stream at its start point"); the up-front check now says the file holds no trace.
    #[test]
    fn an_empty_source_has_no_traces() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("empty.jsonl");
        std::fs::write(&f, "").unwrap();
        let e = TraceSource::check(&f).unwrap_err().to_string();
        assert_eq!(e, format!("{}: no traces in the file", f.display()));
        std::fs::write(&f, "\n  \n").unwrap();
        assert!(TraceSource::check(&f).is_err());
        let e = TraceSource::check(d.path()).unwrap_err().to_string();
        assert_eq!(
            e,
            format!("{}: no traces in its 1 *.jsonl file(s)", d.path().display())
        );
        // a malformed first trace is reported by the check too
        std::fs::write(&f, "{\"id\": 3}\n").unwrap();
        assert!(TraceSource::check(&f).is_err());
    }

    #[test]
    fn shared_corpus_loads() {
        let Some(dir) =
            servebench_testkit::shared_path(env!("CARGO_MANIFEST_DIR"), "data/agentx-traces")
        else {
            return;
        };
        let all = TraceSource::open(&dir).unwrap().load_all().unwrap();
        assert_eq!(all.len(), 20);
        let t = all.iter().find(|t| t.id == "trace_0282").unwrap();
        assert_eq!(t.subagent_count(), 3);
        assert_eq!(t.root_requests().count(), 49);
    }
}
