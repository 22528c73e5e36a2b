//! Loading the master configs (merged in order) and `runners.yaml`.
//!
//! File-level rules (AUTOMATION.md §1.1, V16): each file's root is a mapping; no key contains
//! `*` (reserved for change-log globs); no key is defined in two files. Every entry is then
//! validated ([`crate::schema`]) and *all* problems are reported, one [`Diagnostic`] each.

use indexmap::IndexMap;
use serde::Deserialize;
use serde_json::Value;

use crate::de::{from_node, path_string};
use crate::error::{read_file, CatalogError, Diagnostic};
use crate::schema::{build_entry, ConfigEntry, EntryRaw, MultiSearchRaw, PosInt, SingleSearchRaw};
use crate::yaml::{self, Kind, Mark, Node};

/// The merged master configs: key → entry, in file order then source order.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    /// Entries in merge order (the generator's iteration order).
    pub entries: IndexMap<String, ConfigEntry>,
    /// The files, in the order given.
    pub files: Vec<String>,
}

fn diag(
    file: &str,
    mark: Mark,
    key: Option<&str>,
    path: String,
    message: impl Into<String>,
) -> Diagnostic {
    Diagnostic {
        file: file.to_string(),
        mark,
        key: key.map(str::to_string),
        path,
        message: message.into(),
    }
}

fn yaml_diag(file: &str, e: yaml::YamlError) -> Diagnostic {
    diag(file, e.mark, None, String::new(), e.message)
}

impl Catalog {
    /// Loads and validates master config files, merged in the order given (like
    /// `load_config_files`). Errors: unreadable file, or every rule violation found.
    pub fn load(files: &[String]) -> Result<Catalog, CatalogError> {
        let mut sources = Vec::new();
        for f in files {
            sources.push((f.clone(), read_file(f)?));
        }
        Catalog::from_sources(&sources)
    }

    /// Same as [`Catalog::load`] from `(file name, text)` pairs.
    pub fn from_sources(sources: &[(String, String)]) -> Result<Catalog, CatalogError> {
        let mut diags = Vec::new();
        let mut cat = Catalog::default();
        let mut seen: IndexMap<String, (String, Mark)> = IndexMap::new();
        for (file, text) in sources {
            cat.files.push(file.clone());
            let root = match yaml::parse(text) {
                Ok(n) => n,
                Err(e) => {
                    diags.push(yaml_diag(file, e));
                    continue;
                }
            };
            let root_mark = root.mark;
            let entries = match root.kind {
                Kind::Map(entries) => entries,
                _ => {
                    diags.push(diag(
                        file,
                        root_mark,
                        None,
                        String::new(),
                        format!("Config file '{file}' must contain a dictionary"),
                    ));
                    continue;
                }
            };
            for (knode, vnode) in entries {
                let key = match knode.kind {
                    Kind::Str(s) => s,
                    other => {
                        diags.push(diag(
                            file,
                            knode.mark,
                            None,
                            String::new(),
                            format!("config key must be a string, got {}", other.describe()),
                        ));
                        continue;
                    }
                };
                if key.contains('*') {
                    diags.push(diag(
                        file,
                        knode.mark,
                        Some(&key),
                        String::new(),
                        "Wildcard '*' is not allowed in master config keys",
                    ));
                    continue;
                }
                if let Some((f0, m0)) = seen.get(&key) {
                    diags.push(diag(
                        file,
                        knode.mark,
                        Some(&key),
                        String::new(),
                        format!(
                            "Duplicate configuration key (also defined at {f0}:{}:{})",
                            m0.line, m0.col
                        ),
                    ));
                    continue;
                }
                seen.insert(key.clone(), (file.clone(), knode.mark));
                match load_entry(&key, file, knode.mark, vnode) {
                    Ok(e) => {
                        cat.entries.insert(key, e);
                    }
                    Err(mut d) => diags.append(&mut d),
                }
            }
        }
        if diags.is_empty() {
            Ok(cat)
        } else {
            Err(CatalogError::Invalid(diags))
        }
    }

    /// Looks up an entry.
    pub fn get(&self, key: &str) -> Option<&ConfigEntry> {
        self.entries.get(key)
    }
}

/// Validates one entry node (`multinode: true` selects the multinode schema, anything else the
/// single-node schema, like InferenceX's loader). The node is consumed: it becomes the entry's
/// `json` (moved, not copied).
pub fn load_entry(
    key: &str,
    file: &str,
    key_mark: Mark,
    node: Node,
) -> Result<ConfigEntry, Vec<Diagnostic>> {
    let node_ref = &node;
    let mut entry = validate_entry(key, file, key_mark, node_ref)?;
    entry.json = node.into_json().unwrap_or(Value::Null);
    Ok(entry)
}

fn validate_entry(
    key: &str,
    file: &str,
    key_mark: Mark,
    node: &Node,
) -> Result<ConfigEntry, Vec<Diagnostic>> {
    if !matches!(node.kind, Kind::Map(_)) {
        return Err(vec![diag(
            file,
            node.mark,
            Some(key),
            String::new(),
            format!("expected a mapping, got {}", node.kind.describe()),
        )]);
    }
    let is_multi = matches!(
        node.get("multinode").map(|n| &n.kind),
        Some(Kind::Bool(true))
    );
    let de_err = |e: crate::de::DeError| {
        vec![diag(
            file,
            e.mark.unwrap_or(node.mark),
            Some(key),
            path_string(&e.path),
            e.message,
        )]
    };
    let result = if is_multi {
        let raw: EntryRaw<MultiSearchRaw> = from_node(node).map_err(de_err)?;
        build_entry(key, file, node, key_mark, None, Some(&raw))
    } else {
        let raw: EntryRaw<SingleSearchRaw> = from_node(node).map_err(de_err)?;
        build_entry(key, file, node, key_mark, Some(&raw), None)
    };
    result.map_err(|issues| {
        issues
            .into_iter()
            .map(|i| diag(file, i.mark, Some(key), i.path, i.message))
            .collect()
    })
}

/// Node facts for DRAM budgets (`runners.yaml` `hardware:`).
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Hardware {
    /// Host DRAM available to the benchmark, MiB.
    pub available_cpu_dram_mib: PosInt,
    /// GPUs per node.
    pub gpus_per_node: PosInt,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RunnersRaw {
    labels: IndexMap<String, Vec<String>>,
    #[serde(default)]
    hardware: IndexMap<String, Hardware>,
}

/// `runners.yaml`: scheduling labels → concrete runner names, plus node hardware facts.
#[derive(Debug, Clone, Default)]
pub struct Runners {
    /// Label → runner names (non-empty), in file order.
    pub labels: IndexMap<String, Vec<String>>,
    /// Hardware key (usually `cluster:<name>`) → facts.
    pub hardware: IndexMap<String, Hardware>,
    /// The file.
    pub file: String,
}

impl Runners {
    /// Loads and validates `runners.yaml` (labels: mapping of non-empty string lists; hardware:
    /// strict `{available-cpu-dram-mib > 0, gpus-per-node > 0}`).
    pub fn load(file: &str) -> Result<Runners, CatalogError> {
        let text = read_file(file)?;
        Runners::from_source(file, &text)
    }

    /// Same as [`Runners::load`] from text.
    pub fn from_source(file: &str, text: &str) -> Result<Runners, CatalogError> {
        let root =
            yaml::parse(text).map_err(|e| CatalogError::Invalid(vec![yaml_diag(file, e)]))?;
        let labels_ok = matches!(root.get("labels").map(|n| &n.kind), Some(Kind::Map(_)));
        if !labels_ok {
            return Err(CatalogError::Invalid(vec![diag(
                file,
                root.get("labels").map(|n| n.mark).unwrap_or(root.mark),
                None,
                String::new(),
                "Runner config must define a labels mapping",
            )]));
        }
        // Empty lists are legal YAML for Vec<String>; the reference rejects them.
        let mut diags = Vec::new();
        if let Some(Node {
            kind: Kind::Map(entries),
            ..
        }) = root.get("labels")
        {
            for (k, v) in entries {
                let name = k.as_str().unwrap_or_default();
                if matches!(&v.kind, Kind::Seq(items) if items.is_empty()) {
                    diags.push(diag(
                        file,
                        v.mark,
                        None,
                        format!("labels.{name}"),
                        format!("Runner config entry '{name}' cannot be an empty list"),
                    ));
                }
            }
        }
        let raw: RunnersRaw = from_node(&root).map_err(|e| {
            CatalogError::Invalid(vec![diag(
                file,
                e.mark.unwrap_or(root.mark),
                None,
                path_string(&e.path),
                e.message,
            )])
        })?;
        if !diags.is_empty() {
            return Err(CatalogError::Invalid(diags));
        }
        Ok(Runners {
            labels: raw.labels,
            hardware: raw.hardware,
            file: file.to_string(),
        })
    }

    /// Concrete runner names for a label (empty when unknown).
    pub fn nodes(&self, label: &str) -> &[String] {
        self.labels.get(label).map(|v| v.as_slice()).unwrap_or(&[])
    }
}
