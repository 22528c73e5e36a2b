//! The in-place edit of one master-config entry's `image:` value.
//!
//! The value is located with a YAML event scan (saphyr-parser: events with character spans), and
//! only the bytes of that scalar are replaced; comments, blank lines, flow maps, key order and
//! line endings are untouched. The result is re-parsed and its event stream compared with the
//! original: everything but that one scalar must be identical, or the edit is refused.

use saphyr_parser::{Event, Parser, ScalarStyle, Span};

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

/// Events with the scalar values only (for comparing two documents).
fn events(text: &str, file: &str) -> anyhow::Result<Vec<(String, Span)>> {
    let mut out = Vec::new();
    for ev in Parser::new_from_str(text) {
        let (e, sp) = ev.map_err(|e| {
            anyhow::anyhow!(
                "{file}:{}:{}: YAML error: {}",
                e.marker().line(),
                e.marker().col() + 1,
                e.info()
            )
        })?;
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
pub fn locate_image(text: &str, key: &str, file: &str) -> anyhow::Result<Option<ImageLocation>> {
    let mut stack: Vec<Frame> = Vec::new();
    let mut pending_key: Option<String> = None;
    let mut entry_seen_at: Option<usize> = None;
    let mut found: Option<ImageLocation> = None;
    let mut entry_depth: Option<usize> = None;
    let mut entry_has_map = false;
    for ev in Parser::new_from_str(text) {
        let (e, sp) = ev.map_err(|e| {
            anyhow::anyhow!(
                "{file}:{}:{}: YAML error: {}",
                e.marker().line(),
                e.marker().col() + 1,
                e.info()
            )
        })?;
        match e {
            Event::Scalar(v, style, anchor, tag) => {
                let Some(top) = stack.last_mut() else {
                    continue;
                };
                if top.is_map && top.expecting_key {
                    top.expecting_key = false;
                    if stack.len() == 1 && v == key {
                        if let Some(l) = entry_seen_at {
                            anyhow::bail!(
                                "{file}:{}: config key `{key}` is defined twice (also at line {l})",
                                sp.start.line()
                            );
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
                    anyhow::bail!(
                        "{file}:{}: config entry `{key}` is not a mapping",
                        sp.start.line()
                    );
                }
                if in_entry && k.as_deref() == Some("image") {
                    if found.is_some() {
                        anyhow::bail!(
                            "{file}:{}: entry `{key}` has two `image` keys",
                            sp.start.line()
                        );
                    }
                    if anchor != 0 || tag.is_some() {
                        anyhow::bail!(
                            "{file}:{}: the image of `{key}` carries a YAML anchor or tag; refusing to edit it in place",
                            sp.start.line()
                        );
                    }
                    let q = match style {
                        ScalarStyle::Plain => Quote::Plain,
                        ScalarStyle::SingleQuoted => Quote::Single,
                        ScalarStyle::DoubleQuoted => Quote::Double,
                        _ => anyhow::bail!(
                            "{file}:{}: the image of `{key}` is a block scalar; refusing to edit it in place",
                            sp.start.line()
                        ),
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
                        anyhow::bail!(
                            "{file}:{}: the image of `{key}` spans several lines; refusing to edit it in place",
                            sp.start.line()
                        );
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
                    anyhow::bail!(
                        "{file}:{}: the image of `{key}` is a YAML alias; refusing to edit it in place",
                        sp.start.line()
                    );
                }
                if stack.len() == 1 && k.as_deref() == Some(key) {
                    anyhow::bail!(
                        "{file}:{}: config entry `{key}` is an alias; edit its anchor instead",
                        sp.start.line()
                    );
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
                        anyhow::bail!(
                            "{file}:{}: config entry `{key}` is not a mapping",
                            sp.start.line()
                        );
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
        None if entry_has_map => anyhow::bail!(
            "{file}:{}: entry `{key}` has no `image` key",
            entry_seen_at.unwrap_or(0)
        ),
        None => anyhow::bail!(
            "{file}:{}: config entry `{key}` is not a mapping",
            entry_seen_at.unwrap_or(0)
        ),
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
) -> anyhow::Result<(String, ImageLocation)> {
    let loc = locate_image(text, key, file)?
        .ok_or_else(|| anyhow::anyhow!("{file}: config key `{key}` not found"))?;
    let replacement = render(new_image, loc.style);
    let mut out = String::with_capacity(text.len() + replacement.len());
    out.push_str(&text[..loc.span.0]);
    out.push_str(&replacement);
    out.push_str(&text[loc.span.1..]);
    // Check: reads back as the new value, and nothing else in the document changed.
    let back = locate_image(&out, key, file)?
        .ok_or_else(|| anyhow::anyhow!("{file}: internal error: `{key}` lost after the edit"))?;
    if back.value != new_image {
        anyhow::bail!(
            "{file}:{}: internal error: the edited image reads back as `{}`",
            loc.line,
            back.value
        );
    }
    let (a, b) = (events(text, file)?, events(&out, file)?);
    let differing: Vec<usize> = (0..a.len().max(b.len()))
        .filter(|&i| a.get(i).map(|x| &x.0) != b.get(i).map(|x| &x.0))
        .collect();
    if a.len() != b.len() || differing.len() != 1 {
        anyhow::bail!(
            "{file}:{}: internal error: the edit changed more than the image value",
            loc.line
        );
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
}
