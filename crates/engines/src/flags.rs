//! Engine flag tables per release, and argv checked as the engine's own `argparse` would.
//!
//! The extracted tables (`tables/<engine>-<version>.json`, made by
//! `scripts/extract_engine_flags.py` from the engine's released package, each naming its source
//! and commit), the image → engine version mapping, and [`FlagTable::parse`], which follows
//! CPython `argparse` for the cases recipes hit: exact match, unique prefix (`allow_abbrev`),
//! `ambiguous option: X could match A, B`, `--flag=value`, value counts (`nargs`), and
//! `unrecognized arguments: …` for what is left.
//!
//! Callers hand it argv and an image; a new release is one file in `tables/` and one row in
//! `embedded_texts` below.

use std::sync::OnceLock;

use serde::Deserialize;

/// How many values an option takes (argparse `nargs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Nargs {
    /// Exactly N (0 for flags: `store_true`, `store_const`, …).
    Exact(u32),
    /// `?`: zero or one.
    Optional,
    /// `*`: any number.
    ZeroOrMore,
    /// `+`: at least one.
    OneOrMore,
}

impl<'de> Deserialize<'de> for Nargs {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = serde_json::Value::deserialize(d)?;
        match &v {
            serde_json::Value::Number(n) => Ok(Nargs::Exact(n.as_u64().unwrap_or(1) as u32)),
            serde_json::Value::String(s) => match s.as_str() {
                "?" => Ok(Nargs::Optional),
                "*" => Ok(Nargs::ZeroOrMore),
                "+" => Ok(Nargs::OneOrMore),
                // argparse.REMAINDER / PARSER: treated as "the rest"
                _ => Ok(Nargs::ZeroOrMore),
            },
            _ => Err(serde::de::Error::custom(format!("nargs: {v}"))),
        }
    }
}

/// One option of the parser: its spellings, value count, destination and, for SGLang's
/// deprecated aliases, the flag that replaces it.
#[derive(Debug, Clone, Deserialize)]
pub struct OptionSpec {
    /// Option strings (`--model-path`, `--model`).
    #[serde(default)]
    pub flags: Vec<String>,
    /// Positional argument name (then `flags` is empty).
    #[serde(default)]
    pub positional: Option<String>,
    /// Value count.
    pub nargs: Nargs,
    /// argparse `dest`.
    #[serde(default)]
    pub dest: String,
    /// The flag this one is a deprecated alias of, at this release.
    #[serde(default)]
    pub deprecated_alias_of: Option<String>,
}

/// The flag table of one engine release.
#[derive(Debug, Clone, Deserialize)]
pub struct FlagTable {
    /// `sglang` or `vllm`.
    pub engine: String,
    /// Release (`0.5.20`).
    pub version: String,
    /// Where the table was extracted from (package file and its sha256).
    pub source: String,
    /// The source commit, when the package records one.
    pub source_commit: Option<String>,
    /// The parser's `prog` (`sglang serve`), as in its error lines.
    pub prog: String,
    /// argparse `allow_abbrev` (unique prefixes accepted).
    pub allow_abbrev: bool,
    /// Options and positionals, in the parser's order.
    pub options: Vec<OptionSpec>,
    /// How the parser rewrites argv before argparse sees it: `vllm-flexible` for vLLM's
    /// `FlexibleArgumentParser` ([`vllm_flexible_argv`]); none for plain argparse.
    #[serde(default)]
    pub argv_dialect: Option<String>,
}

/// An argv the engine's parser refuses: `message` is argparse's (`ambiguous option: …`,
/// `unrecognized arguments: …`, `argument --x: expected one argument`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgError {
    /// The parser's `prog`.
    pub prog: String,
    /// argparse's message.
    pub message: String,
    /// The offending flag as written (for `bump`'s report).
    pub flag: String,
}

impl std::fmt::Display for ArgError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: error: {}", self.prog, self.message)
    }
}

impl std::error::Error for ArgError {}

/// One option as parsed: its destination, the spelling used, its values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parsed {
    /// `(dest, flag as written, values)` in argv order; positionals have `flag` empty.
    pub values: Vec<(String, String, Vec<String>)>,
}

impl Parsed {
    /// The last value given for `dest` (argparse's `store` keeps the last).
    pub fn get(&self, dest: &str) -> Option<&str> {
        self.values
            .iter()
            .rev()
            .find(|(d, _, v)| d == dest && !v.is_empty())
            .map(|(_, _, v)| v[0].as_str())
    }
    /// Whether `dest` was given at all (flags without values too).
    pub fn has(&self, dest: &str) -> bool {
        self.values.iter().any(|(d, _, _)| d == dest)
    }
}

/// What a flag of a recipe is at one release ([`FlagTable::classify`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FlagStatus {
    /// An option string of this release.
    Known,
    /// A deprecated alias of the given flag (still accepted).
    DeprecatedAlias(String),
    /// Not an option string; a prefix of exactly this one (argparse takes it).
    Abbreviation(String),
    /// Not an option string; a prefix of several (argparse: ambiguous option).
    Ambiguous(Vec<String>),
    /// Neither (argparse: unrecognized arguments).
    Unknown,
}

fn embedded_texts() -> &'static [(&'static str, &'static str)] {
    &[
        (
            "tables/sglang-0.5.16.json",
            include_str!("../tables/sglang-0.5.16.json"),
        ),
        (
            "tables/sglang-0.5.19.json",
            include_str!("../tables/sglang-0.5.19.json"),
        ),
        (
            "tables/sglang-0.5.20.json",
            include_str!("../tables/sglang-0.5.20.json"),
        ),
        (
            "tables/vllm-0.25.0.json",
            include_str!("../tables/vllm-0.25.0.json"),
        ),
        (
            "tables/vllm-0.27.1.json",
            include_str!("../tables/vllm-0.27.1.json"),
        ),
    ]
}

/// Every embedded table (parsed once). Panics only if an embedded file is malformed, which the
/// crate's tests check.
pub fn tables() -> &'static [FlagTable] {
    static T: OnceLock<Vec<FlagTable>> = OnceLock::new();
    T.get_or_init(|| {
        embedded_texts()
            .iter()
            .map(|(name, text)| {
                serde_json::from_str(text).unwrap_or_else(|e| panic!("crates/engines/{name}: {e}"))
            })
            .collect()
    })
}

/// vLLM's `FlexibleArgumentParser.parse_args` rewriting (vllm/utils/argparse_utils.py): in every
/// `--name[=v]` the part before the first `.` has `_` → `-`; dotted arguments
/// (`--attention-config.use_fp4_indexer_cache=True`, `--cc.mode 3`, `--x.key+ a,b`) become one
/// `--attention-config <json>` per key; `-O3` / `-O=3` / `-O 3` become `--optimization-level 3`.
pub fn vllm_flexible_argv(args: &[String]) -> Vec<String> {
    let mut processed: Vec<String> = Vec::with_capacity(args.len());
    for (i, a) in args.iter().enumerate() {
        if let Some(rest) = a.strip_prefix("--") {
            let (key, value) = match rest.split_once('=') {
                Some((k, v)) => (k, Some(v)),
                None => (rest, None),
            };
            let (head, tail) = match key.find('.') {
                Some(d) => (&key[..d], &key[d..]),
                None => (key, ""),
            };
            let k = format!("--{}{tail}", head.replace('_', "-"));
            processed.push(match value {
                Some(v) => format!("{k}={v}"),
                None => k,
            });
        } else if a.starts_with("-O") && a != "-O" {
            let lvl = a.strip_prefix("-O=").unwrap_or(&a[2..]);
            processed.push("--optimization-level".into());
            processed.push(lvl.to_string());
        } else if a == "-O"
            && args
                .get(i + 1)
                .is_some_and(|n| ["0", "1", "2", "3"].contains(&n.as_str()))
        {
            processed.push("--optimization-level".into());
        } else {
            processed.push(a.clone());
        }
    }
    let mut out = Vec::with_capacity(processed.len());
    let mut dict_keys: Vec<String> = Vec::new();
    let mut i = 0;
    while i < processed.len() {
        let a = &processed[i];
        if a.starts_with('-') && a.contains('.') {
            let (name, consumed) = match a.split_once('=') {
                Some((n, _)) if n.contains('.') => (n.to_string(), 1),
                Some(_) => {
                    out.push(a.clone());
                    i += 1;
                    continue;
                }
                None => (a.clone(), 2),
            };
            let key = name.split('.').next().unwrap_or(&name).to_string();
            if !dict_keys.contains(&key) {
                dict_keys.push(key);
            }
            i += consumed;
            continue;
        }
        out.push(a.clone());
        i += 1;
    }
    for k in dict_keys {
        out.push(k);
        out.push("{}".into());
    }
    out
}

/// The table of `engine` at `version`, if there is one (no nearest-version guess).
pub fn table(engine: &str, version: &str) -> Option<&'static FlagTable> {
    tables()
        .iter()
        .find(|t| t.engine == engine && t.version == version)
}

/// The releases with a table for `engine`, in file order.
pub fn versions(engine: &str) -> Vec<&'static str> {
    tables()
        .iter()
        .filter(|t| t.engine == engine)
        .map(|t| t.version.as_str())
        .collect()
}

/// The flag-table key of an image's engine ([`crate::Engine::from_image`], then its
/// [`crate::EngineProfile::flag_tables`]): `lmsysorg/sglang:…` → `sglang`,
/// `vllm/vllm-openai:…` → `vllm`; `None` for an engine without tables or an unknown image.
pub fn engine_of_image(image: &str) -> Option<&'static str> {
    crate::Engine::from_image(image).and_then(|e| e.profile().flag_tables)
}

/// The release version an image tag names: `lmsysorg/sglang:v0.5.20-cu130` → `0.5.20`,
/// `vllm/vllm-openai:v0.27.1` → `0.27.1`, `…:v0.5.8.post1-cu130` → `0.5.8.post1`; None for tags
/// without one (`qwen38flashnext`, `nightly-…`).
pub fn version_of_image(image: &str) -> Option<String> {
    let no_digest = image.split('@').next().unwrap_or(image);
    let i = no_digest.rfind(':')?;
    let tag = &no_digest[i + 1..];
    if tag.contains('/') {
        return None;
    }
    let t = tag.strip_prefix('v').unwrap_or(tag);
    let mut parts = Vec::new();
    let mut rest = t;
    for k in 0..3 {
        let n = rest.bytes().take_while(u8::is_ascii_digit).count();
        if n == 0 {
            return None;
        }
        parts.push(&rest[..n]);
        rest = &rest[n..];
        if k < 2 {
            rest = rest.strip_prefix('.')?;
        }
    }
    let mut v = parts.join(".");
    if let Some(p) = rest.strip_prefix(".post") {
        let n = p.bytes().take_while(u8::is_ascii_digit).count();
        if n > 0 {
            v.push_str(&format!(".post{}", &p[..n]));
            rest = &p[n..];
        }
    }
    if !(rest.is_empty() || rest.starts_with('-')) {
        return None;
    }
    Some(v)
}

/// The table for an image, or one line saying why there is none (said once by callers).
pub fn table_for_image(engine: &str, image: &str) -> Result<&'static FlagTable, String> {
    if versions(engine).is_empty() {
        // say what is missing: no table of this engine at all, whatever the tag
        return Err(format!(
            "no {engine} flag table for image {image}: servebench has no {engine} flag tables (only sglang and vllm), so the engine flags are not checked"
        ));
    }
    let Some(v) = version_of_image(image) else {
        return Err(format!(
            "no {engine} flag table for image {image}: its tag names no release version, so the engine flags are not checked"
        ));
    };
    table(engine, &v).ok_or_else(|| {
        let have = versions(engine);
        let have = if have.is_empty() {
            format!("servebench has no {engine} tables yet")
        } else {
            format!("tables: {}", have.join(", "))
        };
        format!(
            "no {engine} flag table for release {v} (image {image}; {have}): the engine flags are not checked"
        )
    })
}

fn is_negative_number(s: &str) -> bool {
    let t = &s[1..];
    !t.is_empty() && t.parse::<f64>().is_ok()
}

/// Whether argparse takes `s` as an option (not a value).
fn option_like(s: &str) -> bool {
    s.starts_with('-') && s.len() > 1 && !is_negative_number(s)
}

enum Lookup<'a> {
    Found(&'a OptionSpec, &'a str),
    Ambiguous(Vec<&'a str>),
    None,
}

impl FlagTable {
    fn option_strings(&self) -> impl Iterator<Item = (&OptionSpec, &str)> {
        self.options
            .iter()
            .flat_map(|o| o.flags.iter().map(move |f| (o, f.as_str())))
    }

    fn lookup(&self, name: &str) -> Lookup<'_> {
        if let Some((o, f)) = self.option_strings().find(|(_, f)| *f == name) {
            return Lookup::Found(o, f);
        }
        if !self.allow_abbrev || !name.starts_with("--") {
            return Lookup::None;
        }
        let m: Vec<(&OptionSpec, &str)> = self
            .option_strings()
            .filter(|(_, f)| f.starts_with(name))
            .collect();
        match m.len() {
            0 => Lookup::None,
            1 => Lookup::Found(m[0].0, m[0].1),
            _ => Lookup::Ambiguous(m.iter().map(|(_, f)| *f).collect()),
        }
    }

    /// What `flag` (`--cuda-graph-max-bs`, no value) is at this release.
    pub fn classify(&self, flag: &str) -> FlagStatus {
        let name = flag.split('=').next().unwrap_or(flag);
        let normalized;
        let name =
            if self.argv_dialect.as_deref() == Some("vllm-flexible") && name.starts_with("--") {
                // vLLM: `_` → `-` before the first `.`; a dotted key is its config flag
                let key = name.split('.').next().unwrap_or(name);
                normalized = format!("--{}", key[2..].replace('_', "-"));
                normalized.as_str()
            } else {
                name
            };
        if let Some((o, _)) = self.option_strings().find(|(_, f)| *f == name) {
            return match &o.deprecated_alias_of {
                Some(n) => FlagStatus::DeprecatedAlias(n.clone()),
                None => FlagStatus::Known,
            };
        }
        match self.lookup(name) {
            Lookup::Found(_, f) => FlagStatus::Abbreviation(f.to_string()),
            Lookup::Ambiguous(m) => {
                FlagStatus::Ambiguous(m.into_iter().map(str::to_string).collect())
            }
            Lookup::None => FlagStatus::Unknown,
        }
    }

    /// The usage line argparse prints before an error (`usage: sglang serve [-h] [--model-path
    /// MODEL_PATH] …`, unwrapped).
    pub fn usage(&self) -> String {
        let mut s = format!("usage: {}", self.prog);
        for o in &self.options {
            if let Some(p) = &o.positional {
                s.push_str(&format!(" [{p}]"));
                continue;
            }
            let Some(f) = o.flags.first() else { continue };
            let meta = o.dest.to_ascii_uppercase();
            match o.nargs {
                Nargs::Exact(0) => s.push_str(&format!(" [{f}]")),
                Nargs::Exact(_) => s.push_str(&format!(" [{f} {meta}]")),
                Nargs::Optional => s.push_str(&format!(" [{f} [{meta}]]")),
                Nargs::ZeroOrMore => s.push_str(&format!(" [{f} [{meta} ...]]")),
                Nargs::OneOrMore => s.push_str(&format!(" [{f} {meta} [{meta} ...]]")),
            }
        }
        s
    }

    /// Parses argv (after the program) as the release's argparse does.
    ///
    /// Errors: the first error argparse raises while consuming options (`ambiguous option: X
    /// could match A, B`; `argument X: expected one argument`; `argument X: ignored explicit
    /// argument 'v'`), else `unrecognized arguments: …` listing every token left over.
    pub fn parse(&self, argv: &[String]) -> Result<Parsed, ArgError> {
        if self.argv_dialect.as_deref() == Some("vllm-flexible") {
            return self.parse_plain(&vllm_flexible_argv(argv));
        }
        self.parse_plain(argv)
    }

    fn parse_plain(&self, argv: &[String]) -> Result<Parsed, ArgError> {
        let err = |flag: &str, message: String| ArgError {
            prog: self.prog.clone(),
            message,
            flag: flag.to_string(),
        };
        let positionals: Vec<&OptionSpec> = self
            .options
            .iter()
            .filter(|o| o.positional.is_some())
            .collect();
        let mut next_pos = 0usize;
        let mut values = Vec::new();
        let mut extras: Vec<String> = Vec::new();
        let mut i = 0usize;
        let mut only_positional = false;
        while i < argv.len() {
            let tok = &argv[i];
            if !only_positional && tok == "--" {
                only_positional = true;
                i += 1;
                continue;
            }
            if only_positional || !option_like(tok) {
                match positionals.get(next_pos) {
                    Some(p) => {
                        let dest = p.positional.clone().unwrap_or_else(|| p.dest.clone());
                        values.push((dest, String::new(), vec![tok.clone()]));
                        next_pos += 1;
                    }
                    None => extras.push(tok.clone()),
                }
                i += 1;
                continue;
            }
            let (name, explicit) = match tok.split_once('=') {
                Some((n, v)) if tok.starts_with("--") => (n, Some(v.to_string())),
                _ => (tok.as_str(), None),
            };
            let found = match self.lookup(tok) {
                Lookup::Found(o, f) => Some((o, f)),
                Lookup::Ambiguous(m) if explicit.is_none() => {
                    return Err(err(
                        name,
                        format!("ambiguous option: {tok} could match {}", m.join(", ")),
                    ))
                }
                _ if explicit.is_some() => match self.lookup(name) {
                    Lookup::Found(o, f) => Some((o, f)),
                    Lookup::Ambiguous(m) => {
                        return Err(err(
                            name,
                            format!("ambiguous option: {tok} could match {}", m.join(", ")),
                        ))
                    }
                    Lookup::None => None,
                },
                _ => None,
            };
            let Some((o, f)) = found else {
                extras.push(tok.clone());
                i += 1;
                continue;
            };
            i += 1;
            let label = o.flags.join("/");
            if let Some(v) = explicit {
                if o.nargs == Nargs::Exact(0) {
                    return Err(err(
                        f,
                        format!("argument {label}: ignored explicit argument '{v}'"),
                    ));
                }
                values.push((o.dest.clone(), name.to_string(), vec![v]));
                continue;
            }
            let avail = argv[i..]
                .iter()
                .take_while(|a| !option_like(a) && a.as_str() != "--")
                .count();
            let take = match o.nargs {
                Nargs::Exact(n) => {
                    let n = n as usize;
                    if avail < n {
                        return Err(err(
                            f,
                            match n {
                                1 => format!("argument {label}: expected one argument"),
                                _ => format!("argument {label}: expected {n} arguments"),
                            },
                        ));
                    }
                    n
                }
                Nargs::Optional => avail.min(1),
                Nargs::ZeroOrMore => avail,
                Nargs::OneOrMore => {
                    if avail == 0 {
                        return Err(err(
                            f,
                            format!("argument {label}: expected at least one argument"),
                        ));
                    }
                    avail
                }
            };
            values.push((o.dest.clone(), tok.clone(), argv[i..i + take].to_vec()));
            i += take;
        }
        if !extras.is_empty() {
            let first = extras[0].clone();
            return Err(err(
                &first,
                format!("unrecognized arguments: {}", extras.join(" ")),
            ));
        }
        Ok(Parsed { values })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_engine_without_tables_is_said_as_such_not_as_a_tag_without_version() {
        // `bump dsr1-fp8-b200-trt --image …/release:1.3.0rc15` said "its tag names no release
        // version"; the tag does, servebench has no trt table at all
        let e =
            table_for_image("trt", "nvcr.io/nvidia/tensorrt-llm/release:1.3.0rc15").unwrap_err();
        assert!(e.contains("servebench has no trt flag tables"), "{e}");
        assert!(!e.contains("names no release version"), "{e}");
        let e = table_for_image("sglang", "lmsysorg/sglang:qwen38flashnext").unwrap_err();
        assert!(e.contains("names no release version"), "{e}");
    }

    fn a(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn every_embedded_table_parses_and_names_its_source() {
        assert!(tables().len() >= 5);
        for t in tables() {
            assert!(t.source.contains("sha256:"), "{}", t.source);
            assert!(t.options.len() > 250, "{} {}", t.engine, t.version);
            assert_eq!(t.prog, format!("{} serve", t.engine));
        }
        assert_eq!(
            table("vllm", "0.27.1").unwrap().source_commit.as_deref(),
            Some("6e448d0ea")
        );
    }

    #[test]
    fn sglang_0_5_20_removed_the_cuda_graph_max_bs_alias() {
        let old = table("sglang", "0.5.16").unwrap();
        let new = table("sglang", "0.5.20").unwrap();
        assert_eq!(
            old.classify("--cuda-graph-max-bs"),
            FlagStatus::DeprecatedAlias("--cuda-graph-max-bs-decode".into())
        );
        assert_eq!(
            new.classify("--cuda-graph-max-bs"),
            FlagStatus::Ambiguous(vec![
                "--cuda-graph-max-bs-decode".into(),
                "--cuda-graph-max-bs-prefill".into()
            ])
        );
        let argv = a("--model-path m --tp 8 --cuda-graph-max-bs 4 --port 1");
        let p = old.parse(&argv).unwrap();
        assert_eq!(p.get("cuda_graph_max_bs_decode"), Some("4"));
        assert_eq!(p.get("tp_size"), Some("8"));
        let e = new.parse(&argv).unwrap_err();
        assert_eq!(
            e.to_string(),
            "sglang serve: error: ambiguous option: --cuda-graph-max-bs could match --cuda-graph-max-bs-decode, --cuda-graph-max-bs-prefill"
        );
        assert_eq!(e.flag, "--cuda-graph-max-bs");
        // with =value argparse names the whole token
        let e = new.parse(&a("--cuda-graph-max-bs=4")).unwrap_err();
        assert!(
            e.message
                .starts_with("ambiguous option: --cuda-graph-max-bs=4 could match"),
            "{e}"
        );
    }

    #[test]
    fn unknown_flags_and_their_values_are_unrecognized() {
        let t = table("sglang", "0.5.20").unwrap();
        let e = t
            .parse(&a("--model-path m --no-such-flag 3 --port 9"))
            .unwrap_err();
        assert_eq!(e.message, "unrecognized arguments: --no-such-flag 3");
        let e = t.parse(&a("--port")).unwrap_err();
        assert_eq!(e.message, "argument --port: expected one argument");
        // a unique prefix is taken, flags take no value, negative numbers are values
        let p = t
            .parse(&a("--model-pa m --trust-remote-code --port -1"))
            .unwrap();
        assert_eq!(p.get("model_path"), Some("m"));
        assert!(p.has("trust_remote_code"));
        assert_eq!(p.get("port"), Some("-1"));
    }

    #[test]
    fn vllm_argv_is_rewritten_like_its_flexible_parser() {
        let t = table("vllm", "0.25.0").unwrap();
        // the flags of InferenceX's dsv4_fp4_b200_vllm.sh (underscores, a dotted config key,
        // a JSON config, BooleanOptionalAction negation, -tp)
        let argv: Vec<String> = [
            "deepseek-ai/DeepSeek-V4-Pro",
            "--host",
            "0.0.0.0",
            "--port",
            "8888",
            "--trust-remote-code",
            "--kv-cache-dtype",
            "fp8",
            "--block-size",
            "256",
            "--no-enable-prefix-caching",
            "-tp",
            "8",
            "--compilation-config",
            r#"{"cudagraph_mode":"FULL_AND_PIECEWISE"}"#,
            "--attention_config.use_fp4_indexer_cache=True",
            "--max_model_len",
            "9472",
            "-O3",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let p = t.parse(&argv).unwrap();
        assert_eq!(p.get("model_tag"), Some("deepseek-ai/DeepSeek-V4-Pro"));
        assert_eq!(p.get("tensor_parallel_size"), Some("8"));
        assert_eq!(p.get("max_model_len"), Some("9472"));
        assert!(p.has("attention_config"));
        assert_eq!(
            t.classify("--attention_config.use_fp4_indexer_cache"),
            FlagStatus::Known
        );
        assert_eq!(t.classify("--max_model_len"), FlagStatus::Known);
        let mut bad = argv.clone();
        bad.push("--no-such-vllm-flag".into());
        assert_eq!(
            t.parse(&bad).unwrap_err().to_string(),
            "vllm serve: error: unrecognized arguments: --no-such-vllm-flag"
        );
    }

    #[test]
    fn image_versions() {
        assert_eq!(
            version_of_image("lmsysorg/sglang:v0.5.20-cu130").as_deref(),
            Some("0.5.20")
        );
        assert_eq!(
            version_of_image("lmsysorg/sglang:v0.5.8.post1-cu130@sha256:ab").as_deref(),
            Some("0.5.8.post1")
        );
        assert_eq!(
            version_of_image("vllm/vllm-openai:v0.27.1").as_deref(),
            Some("0.27.1")
        );
        assert_eq!(version_of_image("lmsysorg/sglang:qwen38flashnext"), None);
        assert_eq!(
            version_of_image("vllm/vllm-openai:nightly-dev-x86_64-cu13.0.1-426e59f"),
            None
        );
        assert_eq!(
            engine_of_image("lmsysorg/sglang:v0.5.20-cu130"),
            Some("sglang")
        );
        assert_eq!(engine_of_image("vllm/vllm-openai:v0.27.1"), Some("vllm"));
        assert_eq!(engine_of_image("localhost:5000/x/sglang"), Some("sglang"));
        let e = table_for_image("sglang", "lmsysorg/sglang:qwen38flashnext").unwrap_err();
        assert!(e.contains("names no release version"), "{e}");
        let e = table_for_image("sglang", "lmsysorg/sglang:v0.5.17-cu130").unwrap_err();
        assert!(e.contains("no sglang flag table for release 0.5.17"), "{e}");
        assert_eq!(
            table_for_image("sglang", "lmsysorg/sglang:v0.5.20-cu130")
                .unwrap()
                .version,
            "0.5.20"
        );
    }
}
