//! The in-place edit of one master-config entry's `image:` value.
//!
//! The value is located with a YAML event scan (saphyr-parser: events with character spans), and
//! only the bytes of that scalar are replaced; comments, blank lines, flow maps, key order and
//! line endings are untouched. The result is re-parsed and its event stream compared with the
//! original: everything but that one scalar must be identical, or the edit is refused.

use saphyr_parser::{Event, Parser, ScalarStyle, ScanError, Span};

use crate::error::{BumpError, NotEditable, Result};

/// Where an entry's image is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageLocation {
    /// The config key.
    pub key: String,
    /// 1-based line of the value.
    pub line: usize,
    /// The value (after YAML unquoting).
    pub value: String,
    /// Byte span of the scalar as written (quotes included).
    pub span: (usize, usize),
    /// Quoting style.
    pub style: Quote,
}

/// How the value was quoted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quote {
    /// Plain scalar.
    Plain,
    /// `'…'`.
    Single,
    /// `"…"`.
    Double,
}

fn char_to_byte(text: &str, idx: usize) -> usize {
    text.char_indices().nth(idx).map_or(text.len(), |(b, _)| b)
}

fn byte_span(text: &str, sp: &Span) -> (usize, usize) {
    (
        char_to_byte(text, sp.start.index()),
        char_to_byte(text, sp.end.index()),
    )
}

fn yaml_error(file: &str, e: &ScanError) -> BumpError {
    BumpError::Yaml {
        file: file.to_string(),
        line: e.marker().line(),
        col: e.marker().col() + 1,
        info: e.info().to_string(),
    }
}

/// Events with the scalar values only (for comparing two documents).
fn events(text: &str, file: &str) -> Result<Vec<(String, Span)>> {
    let mut out = Vec::new();
    for ev in Parser::new_from_str(text) {
        let (e, sp) = ev.map_err(|e| yaml_error(file, &e))?;
        let s = match e {
            Event::Scalar(v, style, anchor, tag) => format!("S{style:?}|{anchor}|{tag:?}|{v}"),
            other => format!("{other:?}"),
        };
        out.push((s, sp));
    }
    Ok(out)
}

struct Frame {
    is_map: bool,
    expecting_key: bool,
    /// Key of this container in its parent map (None in sequences / root).
    key: Option<String>,
}

/// Finds `key`'s `image:` in one master-config file. `Ok(None)` when the key is not in it.
///
/// Errors (one line, naming file:line): YAML syntax, the key defined twice, the entry not a
/// mapping, no `image` or two of them, an image written with an anchor/alias, a tag, a block
/// scalar or over several lines.
pub fn locate_image(text: &str, key: &str, file: &str) -> Result<Option<ImageLocation>> {
    let mut stack: Vec<Frame> = Vec::new();
    let mut pending_key: Option<String> = None;
    let mut entry_seen_at: Option<usize> = None;
    let mut found: Option<ImageLocation> = None;
    let mut entry_depth: Option<usize> = None;
    let mut entry_has_map = false;
    for ev in Parser::new_from_str(text) {
        let (e, sp) = ev.map_err(|e| yaml_error(file, &e))?;
        match e {
            Event::Scalar(v, style, anchor, tag) => {
                let Some(top) = stack.last_mut() else {
                    continue;
                };
                if top.is_map && top.expecting_key {
                    top.expecting_key = false;
                    if stack.len() == 1 && v == key {
                        if let Some(l) = entry_seen_at {
                            return Err(BumpError::KeyDefinedTwice {
                                file: file.to_string(),
                                line: sp.start.line(),
                                key: key.to_string(),
                                first_line: l,
                            });
                        }
                        entry_seen_at = Some(sp.start.line());
                    }
                    pending_key = Some(v.into_owned());
                    continue;
                }
                let k = pending_key.take();
                if top.is_map {
                    top.expecting_key = true;
                }
                let in_entry = entry_depth.is_some_and(|d| d == stack.len())
                    && stack.last().is_some_and(|f| f.is_map);
                if stack.len() == 1 && k.as_deref() == Some(key) {
                    return Err(not_mapping(file, sp.start.line(), key));
                }
                if in_entry && k.as_deref() == Some("image") {
                    if found.is_some() {
                        return Err(BumpError::ImageTwice {
                            file: file.to_string(),
                            line: sp.start.line(),
                            key: key.to_string(),
                        });
                    }
                    if anchor != 0 || tag.is_some() {
                        return Err(not_editable(
                            file,
                            sp.start.line(),
                            key,
                            NotEditable::AnchorOrTag,
                        ));
                    }
                    let q = match style {
                        ScalarStyle::Plain => Quote::Plain,
                        ScalarStyle::SingleQuoted => Quote::Single,
                        ScalarStyle::DoubleQuoted => Quote::Double,
                        _ => {
                            return Err(not_editable(
                                file,
                                sp.start.line(),
                                key,
                                NotEditable::BlockScalar,
                            ))
                        }
                    };
                    let (mut a, mut b) = byte_span(text, &sp);
                    // Quoted scalars: find the closing quote ourselves (the parser's span may
                    // run on to the end of the line).
                    if q != Quote::Plain {
                        let bytes = text.as_bytes();
                        let qc = if q == Quote::Double { b'"' } else { b'\'' };
                        if bytes.get(a) != Some(&qc) && a > 0 && bytes[a - 1] == qc {
                            a -= 1;
                        }
                        let mut j = a + 1;
                        while j < bytes.len() {
                            if q == Quote::Double && bytes[j] == b'\\' {
                                j += 2;
                                continue;
                            }
                            if bytes[j] == qc {
                                if q == Quote::Single && bytes.get(j + 1) == Some(&b'\'') {
                                    j += 2;
                                    continue;
                                }
                                break;
                            }
                            j += 1;
                        }
                        b = (j + 1).min(bytes.len());
                    }
                    let raw = &text[a..b];
                    if raw.contains('\n') || (q == Quote::Plain && raw.trim_end() != v) {
                        return Err(not_editable(
                            file,
                            sp.start.line(),
                            key,
                            NotEditable::MultiLine,
                        ));
                    }
                    found = Some(ImageLocation {
                        key: key.to_string(),
                        line: sp.start.line(),
                        value: v.into_owned(),
                        span: (a, a + raw.trim_end().len()),
                        style: q,
                    });
                }
            }
            Event::Alias(_) => {
                let Some(top) = stack.last_mut() else {
                    continue;
                };
                if top.is_map && top.expecting_key {
                    top.expecting_key = false;
                    pending_key = Some(String::new());
                    continue;
                }
                let k = pending_key.take();
                if top.is_map {
                    top.expecting_key = true;
                }
                if entry_depth.is_some_and(|d| d == stack.len()) && k.as_deref() == Some("image") {
                    return Err(not_editable(file, sp.start.line(), key, NotEditable::Alias));
                }
                if stack.len() == 1 && k.as_deref() == Some(key) {
                    return Err(BumpError::EntryIsAlias {
                        file: file.to_string(),
                        line: sp.start.line(),
                        key: key.to_string(),
                    });
                }
            }
            Event::MappingStart(..) | Event::SequenceStart(..) => {
                let is_map = matches!(e, Event::MappingStart(..));
                let k = match stack.last_mut() {
                    Some(top) if top.is_map && top.expecting_key => {
                        // A complex key: treat as an opaque key.
                        top.expecting_key = false;
                        None
                    }
                    Some(top) => {
                        if top.is_map {
                            top.expecting_key = true;
                        }
                        pending_key.take()
                    }
                    None => None,
                };
                if stack.len() == 1 && k.as_deref() == Some(key) {
                    if !is_map {
                        return Err(not_mapping(file, sp.start.line(), key));
                    }
                    entry_depth = Some(2);
                    entry_has_map = true;
                }
                stack.push(Frame {
                    is_map,
                    expecting_key: is_map,
                    key: k,
                });
            }
            Event::MappingEnd | Event::SequenceEnd => {
                let f = stack.pop();
                if f.as_ref().and_then(|f| f.key.as_deref()) == Some(key) && stack.len() == 1 {
                    entry_depth = None;
                }
            }
            _ => {}
        }
    }
    if entry_seen_at.is_none() {
        return Ok(None);
    }
    match found {
        Some(f) => Ok(Some(f)),
        None if entry_has_map => Err(BumpError::NoImage {
            file: file.to_string(),
            line: entry_seen_at.unwrap_or(0),
            key: key.to_string(),
        }),
        None => Err(not_mapping(file, entry_seen_at.unwrap_or(0), key)),
    }
}

fn not_mapping(file: &str, line: usize, key: &str) -> BumpError {
    BumpError::EntryNotMapping {
        file: file.to_string(),
        line,
        key: key.to_string(),
    }
}

fn not_editable(file: &str, line: usize, key: &str, why: NotEditable) -> BumpError {
    BumpError::ImageNotEditable {
        file: file.to_string(),
        line,
        key: key.to_string(),
        why,
    }
}

/// Writes `value` in the style of the original (plain when safe, else double-quoted).
fn render(value: &str, style: Quote) -> String {
    let plain_safe = !value.is_empty()
        && !value.starts_with([
            '-', '?', ':', ',', '[', ']', '{', '}', '#', '&', '*', '!', '|', '>', '\'', '"', '%',
            '@', '`', ' ',
        ])
        && !value.ends_with(' ')
        && !value.contains(": ")
        && !value.contains(" #")
        && !value.contains([',', '[', ']', '{', '}', '\n', '\t']);
    match style {
        Quote::Plain if plain_safe => value.to_string(),
        Quote::Single => format!("'{}'", value.replace('\'', "''")),
        _ => format!("\"{}\"", value.replace('\\', "\\\\").replace('"', "\\\"")),
    }
}

/// Returns the file text with `key`'s image replaced by `new_image`, plus the old location.
///
/// Guarantees (checked, else an error): exactly the bytes of the old scalar change; the new
/// text parses; its YAML event stream equals the old one except for that scalar.
pub fn set_image(
    text: &str,
    key: &str,
    new_image: &str,
    file: &str,
) -> Result<(String, ImageLocation)> {
    let loc = locate_image(text, key, file)?.ok_or_else(|| BumpError::KeyNotInFile {
        file: file.to_string(),
        key: key.to_string(),
    })?;
    let replacement = render(new_image, loc.style);
    let mut out = String::with_capacity(text.len() + replacement.len());
    out.push_str(&text[..loc.span.0]);
    out.push_str(&replacement);
    out.push_str(&text[loc.span.1..]);
    // Check: reads back as the new value, and nothing else in the document changed.
    let check = |line: Option<usize>, detail: String| BumpError::EditCheck {
        file: file.to_string(),
        line,
        detail,
    };
    let back = locate_image(&out, key, file)?
        .ok_or_else(|| check(None, format!("`{key}` lost after the edit")))?;
    if back.value != new_image {
        return Err(check(
            Some(loc.line),
            format!("the edited image reads back as `{}`", back.value),
        ));
    }
    let (a, b) = (events(text, file)?, events(&out, file)?);
    let differing: Vec<usize> = (0..a.len().max(b.len()))
        .filter(|&i| a.get(i).map(|x| &x.0) != b.get(i).map(|x| &x.0))
        .collect();
    if a.len() != b.len() || differing.len() != 1 {
        return Err(check(
            Some(loc.line),
            "the edit changed more than the image value".into(),
        ));
    }
    Ok((out, loc))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCENARIO: &str = include_str!("../../../../shared/data/scenario/master.yaml");

    #[test]
    fn scenario_entry() {
        let k = "qwen3.8next-fp4-b200-sglang-agentic-mtp";
        let loc = locate_image(SCENARIO, k, "master.yaml").unwrap().unwrap();
        assert_eq!(loc.value, "lmsysorg/sglang:qwen38flashnext");
        assert_eq!(loc.line, 3);
        assert_eq!(loc.style, Quote::Plain);
        let (out, _) =
            set_image(SCENARIO, k, "lmsysorg/sglang:v0.5.20-cu130", "master.yaml").unwrap();
        assert_eq!(
            out,
            SCENARIO.replace(
                "image: lmsysorg/sglang:qwen38flashnext",
                "image: lmsysorg/sglang:v0.5.20-cu130"
            )
        );
        assert!(locate_image(SCENARIO, "nope", "m.yaml").unwrap().is_none());
    }

    #[test]
    fn quoted_flow_comments_and_crlf() {
        let t = "# head\na:\n  model: x # c\n  image: \"lmsysorg/sglang:v0.5.8-cu130\"  # pinned\n  s: { image: nested }\nb: { image: 'y:1', model: m }\r\nc:\r\n  image: z:1\r\n";
        let (o, l) = set_image(t, "a", "lmsysorg/sglang:v0.5.20-cu130", "f").unwrap();
        assert_eq!(l.style, Quote::Double);
        assert_eq!(
            o,
            t.replace(
                "\"lmsysorg/sglang:v0.5.8-cu130\"",
                "\"lmsysorg/sglang:v0.5.20-cu130\""
            )
        );
        let (o, l) = set_image(t, "b", "it's:2", "f").unwrap();
        assert_eq!(l.style, Quote::Single);
        assert_eq!(o, t.replace("'y:1'", "'it''s:2'"));
        let (o, _) = set_image(t, "c", "z:2", "f").unwrap();
        assert_eq!(o, t.replace("image: z:1\r\n", "image: z:2\r\n"));
        // Nested `image:` (inside s) is never the entry's image.
        let (o, _) = set_image(t, "a", "q:1", "f").unwrap();
        assert!(o.contains("{ image: nested }"));
    }

    #[test]
    fn refusals_name_the_problem() {
        let e = set_image("a:\n  image: x\na:\n  image: y\n", "a", "z", "m.yaml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("defined twice"), "{e}");
        let e = set_image("a:\n  model: x\n", "a", "z", "m.yaml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("has no `image` key"), "{e}");
        let e = set_image("a: [1]\n", "a", "z", "m.yaml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a mapping"), "{e}");
        let e = set_image("x: &i foo:1\na:\n  image: *i\n", "a", "z", "m.yaml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("alias"), "{e}");
        let e = set_image("a:\n  image: |\n    foo\n", "a", "z", "m.yaml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("block scalar"), "{e}");
        let e = set_image("a:\n  image: [\n", "a", "z", "m.yaml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("m.yaml:") && e.contains("YAML error"), "{e}");
    }

    /// The refusals as typed errors: the variant a caller can match, and the exact line
    /// (plain and `{:#}`, which once through `anyhow` is what the binary prints).
    #[test]
    fn refusals_are_typed() {
        let text = |e: &BumpError| {
            let plain = e.to_string();
            assert_eq!(format!("{e:#}"), plain);
            plain
        };
        let e = set_image("a:\n  image: x\na:\n  image: y\n", "a", "z", "m.yaml").unwrap_err();
        assert!(matches!(
            e,
            BumpError::KeyDefinedTwice {
                line: 3,
                first_line: 1,
                ..
            }
        ));
        assert_eq!(
            text(&e),
            "m.yaml:3: config key `a` is defined twice (also at line 1)"
        );
        let e = set_image("a:\n  model: x\n", "a", "z", "m.yaml").unwrap_err();
        assert!(matches!(&e, BumpError::NoImage { line: 1, key, .. } if key == "a"));
        assert_eq!(text(&e), "m.yaml:1: entry `a` has no `image` key");
        let e = set_image("a:\n  image: |\n    foo\n", "a", "z", "m.yaml").unwrap_err();
        assert!(matches!(
            e,
            BumpError::ImageNotEditable {
                why: NotEditable::BlockScalar,
                ..
            }
        ));
        assert_eq!(
            text(&e),
            "m.yaml:3: the image of `a` is a block scalar; refusing to edit it in place"
        );
        let e = set_image("x: &i foo:1\na:\n  image: *i\n", "a", "z", "m.yaml").unwrap_err();
        assert!(matches!(
            e,
            BumpError::ImageNotEditable {
                why: NotEditable::Alias,
                line: 3,
                ..
            }
        ));
        let e = set_image("b:\n  image: x\n", "a", "z", "m.yaml").unwrap_err();
        assert!(matches!(e, BumpError::KeyNotInFile { .. }));
        assert_eq!(text(&e), "m.yaml: config key `a` not found");
        let e = set_image("a:\n  image: [\n", "a", "z", "m.yaml").unwrap_err();
        assert!(matches!(e, BumpError::Yaml { .. }));
        assert!(text(&e).starts_with("m.yaml:"), "{e}");
    }
}
