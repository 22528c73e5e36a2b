//! YAML loading with positions, resolved the way PyYAML's `SafeLoader` resolves plain scalars.
//!
//! InferenceX reads its catalog with PyYAML (`yaml.safe_load`), which implements the YAML 1.1
//! implicit types: `yes`/`on` are booleans, `2_063_837` is an integer, `1.0e5` (no exponent sign)
//! is a *string*, `0.80` is the float `0.8`. The tokenizer is `saphyr-parser` (events with spans);
//! the typing of plain scalars below follows PyYAML's resolver table
//! (`yaml/resolver.py`, `yaml/constructor.py`), so the same file means the same values here.
//!
//! Differences from PyYAML, on purpose: duplicate mapping keys are an error (PyYAML keeps the
//! last one silently), merge keys (`<<`) and application tags (`!foo`) are rejected with a clear
//! message (the catalog uses neither).

use std::borrow::Cow;
use std::fmt;
use std::sync::OnceLock;

use regex::Regex;
use saphyr_parser::{Event, Parser, ScalarStyle};
use serde_json::{Map, Number, Value};

/// A position in a source file: 1-based line and 1-based column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Mark {
    /// Line, 1-based.
    pub line: usize,
    /// Column, 1-based (in characters).
    pub col: usize,
}

impl fmt::Display for Mark {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.col)
    }
}

/// One YAML node with its position.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// The resolved value.
    pub kind: Kind,
    /// Where the node starts.
    pub mark: Mark,
}

/// A resolved YAML value (PyYAML SafeLoader typing).
#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    /// `~`, `null`, `Null`, `NULL` or an empty plain scalar.
    Null,
    /// YAML 1.1 booleans (`true`, `yes`, `on`, … in three spellings).
    Bool(bool),
    /// Integers (decimal with `_`, `0b`, `0x`, leading-`0` octal, sexagesimal `1:30`).
    Int(i64),
    /// Floats (a dot is required; an exponent needs a sign: `1.5e+3`).
    Float(f64),
    /// Any quoted or block scalar, and plain scalars that match no other type.
    Str(String),
    /// A plain scalar that PyYAML would turn into a `datetime`/`date` (kept as text).
    Timestamp(String),
    /// A sequence, in source order.
    Seq(Vec<Node>),
    /// A mapping, in source order; keys are nodes too.
    Map(Vec<(Node, Node)>),
}

impl Kind {
    /// Short type name used in error messages ("a string", "an integer", …).
    pub fn describe(&self) -> String {
        match self {
            Kind::Null => "null".into(),
            Kind::Bool(b) => format!("boolean `{b}`"),
            Kind::Int(i) => format!("integer `{i}`"),
            Kind::Float(x) => format!("float `{}`", crate::pyjson::py_float_repr(*x)),
            Kind::Str(s) => format!("string {:?}", s),
            Kind::Timestamp(s) => format!("timestamp `{s}`"),
            Kind::Seq(_) => "a list".into(),
            Kind::Map(_) => "a mapping".into(),
        }
    }
}

impl Node {
    /// Looks up a mapping entry by string key.
    pub fn get(&self, key: &str) -> Option<&Node> {
        match &self.kind {
            Kind::Map(entries) => entries
                .iter()
                .find(|(k, _)| matches!(&k.kind, Kind::Str(s) if s == key))
                .map(|(_, v)| v),
            _ => None,
        }
    }

    /// The mapping key node for `key` (for positions of unknown/forbidden fields).
    pub fn key_node(&self, key: &str) -> Option<&Node> {
        match &self.kind {
            Kind::Map(entries) => entries
                .iter()
                .find(|(k, _)| matches!(&k.kind, Kind::Str(s) if s == key))
                .map(|(k, _)| k),
            _ => None,
        }
    }

    /// Element `i` of a sequence.
    pub fn idx(&self, i: usize) -> Option<&Node> {
        match &self.kind {
            Kind::Seq(items) => items.get(i),
            _ => None,
        }
    }

    /// The string value, if this is a string scalar.
    pub fn as_str(&self) -> Option<&str> {
        match &self.kind {
            Kind::Str(s) => Some(s),
            _ => None,
        }
    }

    /// Converts to JSON the way `json.loads(json.dumps(yaml.safe_load(..)))` would see it:
    /// key order kept, ints stay ints, floats stay floats.
    ///
    /// Errors: a non-string mapping key, a non-finite float or a timestamp (none of which JSON
    /// can carry) — with the node's position.
    pub fn to_json(&self) -> Result<Value, YamlError> {
        Ok(match &self.kind {
            Kind::Null => Value::Null,
            Kind::Bool(b) => Value::Bool(*b),
            Kind::Int(i) => Value::Number((*i).into()),
            Kind::Float(x) => Value::Number(Number::from_f64(*x).ok_or_else(|| YamlError {
                mark: self.mark,
                message: "non-finite float cannot be represented in JSON".into(),
            })?),
            Kind::Str(s) => Value::String(s.clone()),
            Kind::Timestamp(s) => Value::String(s.clone()),
            Kind::Seq(items) => {
                Value::Array(items.iter().map(Node::to_json).collect::<Result<_, _>>()?)
            }
            Kind::Map(entries) => {
                let mut m = Map::with_capacity(entries.len());
                for (k, v) in entries {
                    let key = match &k.kind {
                        Kind::Str(s) => s.clone(),
                        Kind::Int(i) => i.to_string(),
                        other => return Err(non_string_key(k.mark, other)),
                    };
                    m.insert(key, v.to_json()?);
                }
                Value::Object(m)
            }
        })
    }

    /// [`Node::to_json`] consuming the tree: strings and keys move into the JSON value instead
    /// of being copied (same result, same errors).
    pub fn into_json(self) -> Result<Value, YamlError> {
        Ok(match self.kind {
            Kind::Str(s) | Kind::Timestamp(s) => Value::String(s),
            Kind::Seq(items) => Value::Array(
                items
                    .into_iter()
                    .map(Node::into_json)
                    .collect::<Result<_, _>>()?,
            ),
            Kind::Map(entries) => {
                let mut m = Map::with_capacity(entries.len());
                for (k, v) in entries {
                    let key = match k.kind {
                        Kind::Str(s) => s,
                        Kind::Int(i) => i.to_string(),
                        other => return Err(non_string_key(k.mark, &other)),
                    };
                    m.insert(key, v.into_json()?);
                }
                Value::Object(m)
            }
            Kind::Null | Kind::Bool(_) | Kind::Int(_) | Kind::Float(_) => self.to_json()?,
        })
    }
}

fn non_string_key(mark: Mark, kind: &Kind) -> YamlError {
    YamlError {
        mark,
        message: format!("mapping key must be a string, got {}", kind.describe()),
    }
}

/// A YAML syntax or typing error with its position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct YamlError {
    /// Where it happened.
    pub mark: Mark,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for YamlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.mark, self.message)
    }
}

impl std::error::Error for YamlError {}

struct Resolvers {
    boolean: Regex,
    float: Regex,
    int: Regex,
    null: Regex,
    timestamp: Regex,
}

fn resolvers() -> &'static Resolvers {
    static R: OnceLock<Resolvers> = OnceLock::new();
    R.get_or_init(|| Resolvers {
        boolean: Regex::new(
            r"^(?:yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF)$",
        )
        .expect("bool regex"),
        float: Regex::new(concat!(
            r"^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?",
            r"|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?",
            r"|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*",
            r"|[-+]?\.(?:inf|Inf|INF)",
            r"|\.(?:nan|NaN|NAN))$"
        ))
        .expect("float regex"),
        int: Regex::new(concat!(
            r"^(?:[-+]?0b[0-1_]+",
            r"|[-+]?0[0-7_]+",
            r"|[-+]?(?:0|[1-9][0-9_]*)",
            r"|[-+]?0x[0-9a-fA-F_]+",
            r"|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)$"
        ))
        .expect("int regex"),
        null: Regex::new(r"^(?:~|null|Null|NULL|)$").expect("null regex"),
        timestamp: Regex::new(concat!(
            r"^(?:[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]",
            r"|[0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?",
            r"(?:[Tt]|[ \t]+)[0-9][0-9]?",
            r":[0-9][0-9]:[0-9][0-9](?:\.[0-9]*)?",
            r"(?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?)$"
        ))
        .expect("timestamp regex"),
    })
}

fn construct_int(text: &str) -> Option<i64> {
    let v: String = text.chars().filter(|c| *c != '_').collect();
    let (sign, body) = match v.as_bytes().first()? {
        b'-' => (-1i64, &v[1..]),
        b'+' => (1, &v[1..]),
        _ => (1, &v[..]),
    };
    let magnitude = if body == "0" {
        0
    } else if let Some(b) = body.strip_prefix("0b") {
        i64::from_str_radix(b, 2).ok()?
    } else if let Some(h) = body.strip_prefix("0x") {
        i64::from_str_radix(h, 16).ok()?
    } else if body.starts_with('0') {
        i64::from_str_radix(body, 8).ok()?
    } else if body.contains(':') {
        let mut value = 0i64;
        for part in body.split(':') {
            value = value
                .checked_mul(60)?
                .checked_add(part.parse::<i64>().ok()?)?;
        }
        value
    } else {
        body.parse::<i64>().ok()?
    };
    Some(sign * magnitude)
}

fn construct_float(text: &str) -> Option<f64> {
    let v: String = text
        .chars()
        .filter(|c| *c != '_')
        .collect::<String>()
        .to_lowercase();
    let (sign, body) = match v.as_bytes().first()? {
        b'-' => (-1.0f64, &v[1..]),
        b'+' => (1.0, &v[1..]),
        _ => (1.0, &v[..]),
    };
    if body == ".inf" {
        return Some(sign * f64::INFINITY);
    }
    if body == ".nan" {
        return Some(f64::NAN);
    }
    if body.contains(':') {
        let parts: Vec<&str> = body.split(':').collect();
        let mut value = 0.0f64;
        let mut base = 1.0f64;
        for part in parts.iter().rev() {
            value += part.parse::<f64>().ok()? * base;
            base *= 60.0;
        }
        return Some(sign * value);
    }
    Some(sign * body.parse::<f64>().ok()?)
}

/// Resolves a plain scalar the way PyYAML's SafeLoader does (YAML 1.1 implicit types).
pub fn resolve_plain(text: &str) -> Kind {
    resolve_plain_cow(Cow::Borrowed(text))
}

/// A plain decimal integer without sign, `_` or leading zero (`0`, `64`, `8192`): the common
/// case, typed without the regexes and without allocating. `None` for anything else (then the
/// resolver table decides), including values that overflow `i64`.
fn plain_decimal(text: &str) -> Option<i64> {
    let b = text.as_bytes();
    if b.is_empty() || b.len() > 18 || !b.iter().all(u8::is_ascii_digit) {
        return None;
    }
    if b.len() > 1 && b[0] == b'0' {
        return None; // octal in YAML 1.1
    }
    text.parse().ok()
}

/// [`resolve_plain`] taking the parser's text by value: a string result reuses its buffer
/// when the parser already owns one (no second copy per scalar).
fn resolve_plain_cow(text: Cow<'_, str>) -> Kind {
    if let Some(i) = plain_decimal(&text) {
        return Kind::Int(i);
    }
    let r = resolvers();
    let text_ref: &str = &text;
    let first = text_ref.chars().next();
    match first {
        None => return Kind::Null,
        Some(c) if "yYnNtTfFoO".contains(c) && r.boolean.is_match(text_ref) => {
            return Kind::Bool(
                matches!(c, 'y' | 'Y' | 't' | 'T') || text_ref.eq_ignore_ascii_case("on"),
            );
        }
        _ => {}
    }
    let c = first.unwrap_or(' ');
    if "-+0123456789.".contains(c) && r.float.is_match(text_ref) {
        if let Some(x) = construct_float(text_ref) {
            return Kind::Float(x);
        }
    }
    if "-+0123456789".contains(c) && r.int.is_match(text_ref) {
        if let Some(i) = construct_int(text_ref) {
            return Kind::Int(i);
        }
    }
    if "~nN".contains(c) && r.null.is_match(text_ref) {
        return Kind::Null;
    }
    if c.is_ascii_digit() && r.timestamp.is_match(text_ref) {
        return Kind::Timestamp(text.into_owned());
    }
    Kind::Str(text.into_owned())
}

fn mark_of(m: &saphyr_parser::Marker) -> Mark {
    Mark {
        line: m.line(),
        col: m.col() + 1,
    }
}

enum Frame {
    Seq {
        mark: Mark,
        anchor: usize,
        items: Vec<Node>,
    },
    Map {
        mark: Mark,
        anchor: usize,
        entries: Vec<(Node, Node)>,
        pending_key: Option<Node>,
    },
}

/// Parses one YAML document into a [`Node`] tree.
///
/// An empty document gives a `Null` node at 1:1. Errors: syntax errors (with the parser's
/// position), a second document, duplicate keys, merge keys, unknown tags, unknown aliases.
pub fn parse(text: &str) -> Result<Node, YamlError> {
    let mut parser = Parser::new_from_str(text);
    let mut stack: Vec<Frame> = Vec::new();
    let mut anchors: std::collections::HashMap<usize, Node> = std::collections::HashMap::new();
    let mut root: Option<Node> = None;
    let mut documents = 0usize;

    // Attaches a finished node to its parent (or makes it the root).
    fn push(stack: &mut [Frame], root: &mut Option<Node>, node: Node) -> Result<(), YamlError> {
        match stack.last_mut() {
            None => {
                *root = Some(node);
                Ok(())
            }
            Some(Frame::Seq { items, .. }) => {
                items.push(node);
                Ok(())
            }
            Some(Frame::Map {
                entries,
                pending_key,
                ..
            }) => {
                if let Some(key) = pending_key.take() {
                    entries.push((key, node));
                    return Ok(());
                }
                if matches!(&node.kind, Kind::Str(s) if s == "<<") {
                    return Err(YamlError {
                        mark: node.mark,
                        message: "YAML merge keys (`<<`) are not supported in the catalog".into(),
                    });
                }
                if let Some((prev, _)) = entries.iter().find(|(k, _)| k.kind == node.kind) {
                    return Err(YamlError {
                        mark: node.mark,
                        message: format!(
                            "duplicate mapping key {} (first defined at line {})",
                            match &node.kind {
                                Kind::Str(s) => format!("'{s}'"),
                                other => other.describe(),
                            },
                            prev.mark.line
                        ),
                    });
                }
                *pending_key = Some(node);
                Ok(())
            }
        }
    }

    loop {
        let (event, span) = match parser.next() {
            None => break,
            Some(Ok(x)) => x,
            Some(Err(e)) => {
                return Err(YamlError {
                    mark: mark_of(e.marker()),
                    message: e.info().to_string(),
                })
            }
        };
        let mark = mark_of(&span.start);
        match event {
            Event::StreamStart | Event::Nothing | Event::DocumentEnd => {}
            Event::StreamEnd => break,
            Event::DocumentStart(_) => {
                documents += 1;
                if documents > 1 {
                    return Err(YamlError {
                        mark,
                        message: "expected a single YAML document, found another one".into(),
                    });
                }
            }
            Event::Alias(id) => {
                let node = anchors.get(&id).cloned().ok_or_else(|| YamlError {
                    mark,
                    message: "alias refers to an unknown anchor".into(),
                })?;
                push(
                    &mut stack,
                    &mut root,
                    Node {
                        kind: node.kind,
                        mark,
                    },
                )?;
            }
            Event::Scalar(value, style, anchor, tag) => {
                let kind = match tag {
                    Some(tag) => {
                        let t = format!("{}{}", tag.handle, tag.suffix);
                        match t.as_str() {
                            "!!str" | "tag:yaml.org,2002:str" => Kind::Str(value.to_string()),
                            "!!int" | "tag:yaml.org,2002:int" => {
                                Kind::Int(construct_int(&value).ok_or_else(|| YamlError {
                                    mark,
                                    message: format!("invalid !!int value {:?}", value),
                                })?)
                            }
                            "!!float" | "tag:yaml.org,2002:float" => {
                                Kind::Float(construct_float(&value).ok_or_else(|| YamlError {
                                    mark,
                                    message: format!("invalid !!float value {:?}", value),
                                })?)
                            }
                            "!!bool" | "tag:yaml.org,2002:bool" => match resolve_plain(&value) {
                                Kind::Bool(b) => Kind::Bool(b),
                                _ => {
                                    return Err(YamlError {
                                        mark,
                                        message: format!("invalid !!bool value {:?}", value),
                                    })
                                }
                            },
                            "!!null" | "tag:yaml.org,2002:null" => Kind::Null,
                            "!" => Kind::Str(value.to_string()),
                            other => {
                                return Err(YamlError {
                                    mark,
                                    message: format!(
                                        "could not determine a constructor for the tag '{other}'"
                                    ),
                                })
                            }
                        }
                    }
                    None if style == ScalarStyle::Plain => resolve_plain_cow(value),
                    None => Kind::Str(value.into_owned()),
                };
                let node = Node { kind, mark };
                if anchor > 0 {
                    anchors.insert(anchor, node.clone());
                }
                push(&mut stack, &mut root, node)?;
            }
            Event::SequenceStart(anchor, _) => {
                stack.push(Frame::Seq {
                    mark,
                    anchor,
                    items: Vec::new(),
                });
            }
            Event::MappingStart(anchor, _) => {
                stack.push(Frame::Map {
                    mark,
                    anchor,
                    entries: Vec::new(),
                    pending_key: None,
                });
            }
            Event::SequenceEnd | Event::MappingEnd => {
                let (node, anchor) = match stack.pop() {
                    Some(Frame::Seq {
                        mark,
                        anchor,
                        items,
                    }) => (
                        Node {
                            kind: Kind::Seq(items),
                            mark,
                        },
                        anchor,
                    ),
                    Some(Frame::Map {
                        mark,
                        anchor,
                        entries,
                        ..
                    }) => (
                        Node {
                            kind: Kind::Map(entries),
                            mark,
                        },
                        anchor,
                    ),
                    None => {
                        return Err(YamlError {
                            mark,
                            message: "unbalanced YAML events".into(),
                        })
                    }
                };
                if anchor > 0 {
                    anchors.insert(anchor, node.clone());
                }
                push(&mut stack, &mut root, node)?;
            }
        }
    }
    Ok(root.unwrap_or(Node {
        kind: Kind::Null,
        mark: Mark { line: 1, col: 1 },
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_scalars_resolve_like_pyyaml() {
        assert_eq!(resolve_plain("2_063_837"), Kind::Int(2_063_837));
        assert_eq!(resolve_plain("0.80"), Kind::Float(0.8));
        assert_eq!(resolve_plain("1.0e5"), Kind::Str("1.0e5".into()));
        assert_eq!(resolve_plain("1.0e+5"), Kind::Float(100000.0));
        assert_eq!(resolve_plain("yes"), Kind::Bool(true));
        assert_eq!(resolve_plain("Off"), Kind::Bool(false));
        assert_eq!(resolve_plain("0755"), Kind::Int(493));
        assert_eq!(resolve_plain("0x1F"), Kind::Int(31));
        assert_eq!(resolve_plain("1:30"), Kind::Int(90));
        assert_eq!(resolve_plain("~"), Kind::Null);
        assert_eq!(
            resolve_plain("0.8.1.post1"),
            Kind::Str("0.8.1.post1".into())
        );
        assert_eq!(
            resolve_plain("2026-08-21"),
            Kind::Timestamp("2026-08-21".into())
        );
        assert_eq!(resolve_plain("8k1k"), Kind::Str("8k1k".into()));
        assert_eq!(resolve_plain(".5"), Kind::Float(0.5));
        assert_eq!(resolve_plain("-.inf"), Kind::Float(f64::NEG_INFINITY));
    }

    #[test]
    fn positions_and_order() {
        let n = parse("a: 1\nb:\n  - x\n  - 'y'\nc: {d: true}\n").unwrap();
        let b = n.get("b").unwrap();
        assert_eq!(b.mark, Mark { line: 3, col: 3 });
        assert_eq!(n.key_node("c").unwrap().mark, Mark { line: 5, col: 1 });
        let j = n.to_json().unwrap();
        assert_eq!(
            serde_json::to_string(&j).unwrap(),
            r#"{"a":1,"b":["x","y"],"c":{"d":true}}"#
        );
    }

    #[test]
    fn into_json_equals_to_json() {
        let text =
            "a: 1\nb:\n  - x\n  - 'y'\n  - {z: 0.80, w: ~, v: 2026-08-21}\nc: {d: true, 7: e}\n";
        let n = parse(text).unwrap();
        assert_eq!(n.clone().into_json().unwrap(), n.to_json().unwrap());
        let bad = parse("? [1]\n: x\n").unwrap();
        assert_eq!(
            bad.clone().into_json().unwrap_err(),
            bad.to_json().unwrap_err()
        );
    }

    #[test]
    fn duplicate_keys_are_rejected_with_position() {
        let e = parse("a: 1\nb: 2\na: 3\n").unwrap_err();
        assert_eq!(e.mark, Mark { line: 3, col: 1 });
        assert_eq!(
            e.message,
            "duplicate mapping key 'a' (first defined at line 1)"
        );
    }

    #[test]
    fn syntax_error_has_position() {
        let e = parse("a: [1, 2\nb: 3\n").unwrap_err();
        assert!(e.mark.line >= 1, "{e}");
    }
}
