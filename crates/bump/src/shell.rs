//! Shell-aware edits of recipe scripts: find a flag or an environment assignment the way bash
//! would split the words, and edit the source text in place (every other byte kept).
//!
//! Handled: `--flag value` and `--flag=value`, values on the next line after `\`-newline
//! continuations, single/double/`$'…'` quoting, `$(…)`, `${…}` and backquotes inside words,
//! comments (never edited), flags inside a quoted argument string
//! (`ARGS="--tp 8 --flag 64"`), `export NAME=v`, `NAME=v cmd` and `-e NAME=v`.
//! Not handled (left alone): heredoc bodies, flags assembled from variables.

/// A shell word with its source span and its unquoted value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Word {
    /// Byte offset of the first character.
    pub start: usize,
    /// Byte offset after the last character.
    pub end: usize,
    /// The word after quote removal (expansions such as `$CONC` are kept as written).
    pub value: String,
    /// 1-based line of `start`.
    pub line: usize,
    /// Inner spans of quoted segments `(start, end)` (without the quote characters).
    pub quoted: Vec<(usize, usize)>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    Word(Word),
    /// Command separator: newline, `;`, `&`, `|`, `(`, `)`.
    Sep,
    /// Redirection operator (`>`, `<`, `>>`, `2>&1` parts).
    Redir,
}

/// Splits a script into words and separators.
fn lex(src: &str) -> Vec<Tok> {
    Lexer::new(src).run()
}

/// Skips a balanced `$( … )` / `${ … }` / backquote region starting at `i` (at the opener),
/// quotes and `\` escapes inside it included; returns the index after it (the end of `b` when
/// it is not closed).
fn skip_balanced(b: &[u8], mut i: usize, open: u8, close: u8) -> usize {
    let mut depth = 0usize;
    while i < b.len() {
        let c = b[i];
        if c == b'\\' {
            i += 2;
            continue;
        }
        if c == b'\'' && open != b'`' {
            i += 1;
            while i < b.len() && b[i] != b'\'' {
                i += 1;
            }
        } else if c == b'"' && open != b'`' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' {
                    i += 1;
                }
                i += 1;
            }
        } else if c == open && (open != close || depth == 0) {
            depth += 1;
        } else if c == close {
            depth -= 1;
            if depth == 0 {
                return i + 1;
            }
        }
        i += 1;
    }
    b.len()
}

/// The lexer's state: the position in the script, the word being read and the tokens so far.
/// One method per kind of input; each consumes its characters and advances `i` (and `line`).
struct Lexer<'s> {
    src: &'s str,
    /// `src` as bytes.
    b: &'s [u8],
    /// Byte offset of the next character.
    i: usize,
    /// 1-based line of `i`.
    line: usize,
    /// The word being read: quoted and unquoted parts join until a blank or a separator.
    cur: Option<Word>,
    toks: Vec<Tok>,
}

impl<'s> Lexer<'s> {
    fn new(src: &'s str) -> Self {
        Lexer {
            src,
            b: src.as_bytes(),
            i: 0,
            line: 1,
            cur: None,
            toks: Vec::new(),
        }
    }

    /// Reads the whole script.
    fn run(mut self) -> Vec<Tok> {
        while self.i < self.b.len() {
            let next = self.b.get(self.i + 1).copied();
            match self.b[self.i] {
                b' ' | b'\t' => {
                    self.flush();
                    self.i += 1;
                }
                b'\\' if next == Some(b'\n') => self.line_continuation(),
                b'\\' => self.escaped(),
                b'\n' => {
                    self.separator();
                    self.line += 1;
                }
                b'#' if self.cur.is_none() => self.comment(),
                b';' | b'&' | b'|' | b'(' | b')' => self.separator(),
                b'<' | b'>' => self.redirection(),
                b'\'' => self.single_quoted(),
                b'$' if next == Some(b'\'') => self.ansi_c_quoted(),
                b'"' => self.double_quoted(),
                b'$' if matches!(next, Some(b'(' | b'{')) => self.expansion(),
                b'`' => self.backquoted(),
                _ => self.plain(),
            }
        }
        self.flush();
        self.toks
    }

    /// Ends the word being read, if any.
    fn flush(&mut self) {
        if let Some(w) = self.cur.take() {
            self.toks.push(Tok::Word(w));
        }
    }

    /// The word being read, started at the current position when there is none.
    fn word(&mut self) -> &mut Word {
        let (start, line) = (self.i, self.line);
        self.cur.get_or_insert_with(|| Word {
            start,
            end: start,
            value: String::new(),
            line,
            quoted: vec![],
        })
    }

    /// Adds `value` to the word (started here when none) and moves to `end`.
    fn extend_word(&mut self, value: &str, end: usize) {
        let w = self.word();
        w.value.push_str(value);
        w.end = end;
        self.i = end;
    }

    /// Adds a quoted segment: its value, its inner span `(s, j)` (without the quotes); moves
    /// to `end` (after the closing quote).
    fn extend_quoted(&mut self, value: &str, (s, j): (usize, usize), end: usize) {
        let w = self.word();
        w.value.push_str(value);
        w.quoted.push((s, j));
        w.end = end;
        self.i = end;
    }

    /// `\`-newline: a separator between words (not a command separator).
    fn line_continuation(&mut self) {
        self.flush();
        self.i += 2;
        self.line += 1;
    }

    /// `\c`: the character `c` itself, part of the word (nothing for a `\` ending the script).
    fn escaped(&mut self) {
        let at = self.i + 1;
        let ch_len = self.src[at..].chars().next().map_or(0, char::len_utf8);
        self.extend_word(&self.src[at..at + ch_len], at + ch_len);
    }

    /// A command separator: newline, `;`, `&`, `|`, `(`, `)` (one byte).
    fn separator(&mut self) {
        self.flush();
        self.toks.push(Tok::Sep);
        self.i += 1;
    }

    /// `# …` at the start of a word: skipped to the end of the line (never a token).
    fn comment(&mut self) {
        while self.i < self.b.len() && self.b[self.i] != b'\n' {
            self.i += 1;
        }
    }

    /// `<` / `>`: a redirection; a digits-only word right before it (`2>`) is part of it.
    fn redirection(&mut self) {
        let i = self.i;
        if self
            .cur
            .as_ref()
            .is_some_and(|w| w.value.bytes().all(|x| x.is_ascii_digit()) && w.end == i)
        {
            self.cur = None;
        }
        self.flush();
        self.toks.push(Tok::Redir);
        self.i += 1;
    }

    /// `'…'`: taken literally, newlines included (an unclosed quote runs to the end).
    fn single_quoted(&mut self) {
        let (src, b, n) = (self.src, self.b, self.b.len());
        let s = self.i + 1;
        let mut j = s;
        while j < n && b[j] != b'\'' {
            j += 1;
        }
        let newlines = src[s..j].matches('\n').count();
        self.extend_quoted(&src[s..j], (s, j), (j + 1).min(n));
        self.line += newlines;
    }

    /// `$'…'`: ANSI-C quoting; escapes are kept as written (`\'` does not close it).
    fn ansi_c_quoted(&mut self) {
        let (src, b, n) = (self.src, self.b, self.b.len());
        let s = self.i + 2;
        let mut j = s;
        while j < n && b[j] != b'\'' {
            if b[j] == b'\\' {
                j += 1;
            }
            j += 1;
        }
        let j = j.min(n);
        self.extend_quoted(&src[s..j], (s, j), (j + 1).min(n));
    }

    /// `"…"`: `\"`, `\\`, `\$`, `` \` `` unescaped, `\`-newline removed, `$( … )` kept whole
    /// (its quotes do not close the string), everything else as written.
    fn double_quoted(&mut self) {
        let (src, b, n) = (self.src, self.b, self.b.len());
        let s = self.i + 1;
        let mut j = s;
        let mut newlines = 0;
        let w = self.word();
        while j < n && b[j] != b'"' {
            if b[j] == b'\\' && j + 1 < n {
                if matches!(b[j + 1], b'"' | b'\\' | b'$' | b'`') {
                    w.value.push(b[j + 1] as char);
                    j += 2;
                    continue;
                }
                if b[j + 1] == b'\n' {
                    j += 2;
                    newlines += 1;
                    continue;
                }
            }
            if b[j] == b'$' && j + 1 < n && b[j + 1] == b'(' {
                let e = skip_balanced(b, j + 1, b'(', b')');
                w.value.push_str(&src[j..e]);
                j = e;
                continue;
            }
            if b[j] == b'\n' {
                newlines += 1;
            }
            let ch_len = src[j..].chars().next().map_or(1, char::len_utf8);
            w.value.push_str(&src[j..j + ch_len]);
            j += ch_len;
        }
        w.quoted.push((s, j.min(n)));
        let end = (j + 1).min(n);
        w.end = end;
        self.i = end;
        self.line += newlines;
    }

    /// `$( … )` / `${ … }`: kept whole as part of the word.
    fn expansion(&mut self) {
        let (open, close) = if self.b[self.i + 1] == b'(' {
            (b'(', b')')
        } else {
            (b'{', b'}')
        };
        let e = skip_balanced(self.b, self.i + 1, open, close);
        self.whole_region(e);
    }

    /// `` `…` ``: kept whole as part of the word.
    fn backquoted(&mut self) {
        let e = skip_balanced(self.b, self.i, b'`', b'`');
        self.whole_region(e);
    }

    /// Adds `src[i..e]` to the word as written (a command substitution or expansion).
    fn whole_region(&mut self, e: usize) {
        let region = &self.src[self.i..e];
        let newlines = region.matches('\n').count();
        self.extend_word(region, e);
        self.line += newlines;
    }

    /// Any other character: part of the word.
    fn plain(&mut self) {
        let at = self.i;
        let ch_len = self.src[at..].chars().next().map_or(1, char::len_utf8);
        self.extend_word(&self.src[at..at + ch_len], at + ch_len);
    }
}

/// How a flag was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlagForm {
    /// `--flag value` (or a bare switch).
    Separate,
    /// `--flag=value`.
    Equals,
    /// Inside a quoted argument string (`ARGS="… --flag value …"`).
    InString,
}

/// One use of a flag in a script.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlagUse {
    /// 1-based line of the flag.
    pub line: usize,
    /// How it was written.
    pub form: FlagForm,
    /// Byte span of the flag name (`--flag`) in the source.
    pub name: (usize, usize),
    /// Byte span of the whole use (flag through value) in the source.
    pub whole: (usize, usize),
    /// The value as written (quotes removed for separate words), if the flag takes one.
    pub value: Option<String>,
    /// Byte span of the value text, if any.
    pub value_span: Option<(usize, usize)>,
}

fn is_boundary_after(b: &[u8], i: usize) -> bool {
    i >= b.len() || matches!(b[i], b'=' | b' ' | b'\t' | b'"' | b'\'' | b'\n' | b'\\')
}

/// Finds every use of `flag` (`--name`), outside comments.
///
/// `takes_value`: whether the next word is the flag's value (for the `--flag value` form).
pub fn find_flag(src: &str, flag: &str, takes_value: bool) -> Vec<FlagUse> {
    let toks = lex(src);
    let b = src.as_bytes();
    let mut out = Vec::new();
    for (ti, t) in toks.iter().enumerate() {
        let Tok::Word(w) = t else { continue };
        let raw = &src[w.start..w.end];
        if w.value == flag || w.value.starts_with(&format!("{flag}=")) {
            // The flag name inside the raw text (after an opening quote, if any).
            let Some(off) = raw.find(flag) else { continue };
            let name = (w.start + off, w.start + off + flag.len());
            if w.value == flag {
                let mut fu = FlagUse {
                    line: w.line,
                    form: FlagForm::Separate,
                    name,
                    whole: (w.start, w.end),
                    value: None,
                    value_span: None,
                };
                if takes_value {
                    if let Some(Tok::Word(v)) = toks.get(ti + 1) {
                        fu.value = Some(v.value.clone());
                        fu.value_span = Some((v.start, v.end));
                        fu.whole = (w.start, v.end);
                    }
                }
                out.push(fu);
            } else {
                let vs = name.1 + 1;
                let ve = if raw.ends_with(['"', '\''])
                    && w.quoted.last().is_some_and(|q| q.1 == w.end - 1)
                {
                    w.end - 1
                } else {
                    w.end
                };
                out.push(FlagUse {
                    line: w.line,
                    form: FlagForm::Equals,
                    name,
                    whole: (w.start, w.end),
                    value: Some(w.value[flag.len() + 1..].to_string()),
                    value_span: Some((vs, ve.max(vs))),
                });
            }
            continue;
        }
        // Inside quoted argument strings.
        for &(qs, qe) in &w.quoted {
            let inner = &src[qs..qe];
            let mut from = 0;
            while let Some(p) = inner[from..].find(flag) {
                let s = qs + from + p;
                let e = s + flag.len();
                from += p + flag.len();
                let before_ok = s == qs || matches!(b[s - 1], b' ' | b'\t' | b'\n');
                if !before_ok || !is_boundary_after(b, e) || e > qe {
                    continue;
                }
                let line = src[..s].matches('\n').count() + 1;
                let mut fu = FlagUse {
                    line,
                    form: FlagForm::InString,
                    name: (s, e),
                    whole: (s, e),
                    value: None,
                    value_span: None,
                };
                if e < qe && b[e] == b'=' {
                    let ve = src[e + 1..qe]
                        .find(char::is_whitespace)
                        .map_or(qe, |x| e + 1 + x);
                    fu.value = Some(src[e + 1..ve].to_string());
                    fu.value_span = Some((e + 1, ve));
                    fu.whole = (s, ve);
                } else if takes_value {
                    let rest = &src[e..qe];
                    let lead = rest.len() - rest.trim_start().len();
                    let vs = e + lead;
                    if vs < qe {
                        let ve = src[vs..qe].find(char::is_whitespace).map_or(qe, |x| vs + x);
                        fu.value = Some(src[vs..ve].to_string());
                        fu.value_span = Some((vs, ve));
                        fu.whole = (s, ve);
                    }
                }
                out.push(fu);
            }
        }
    }
    out
}

/// One assignment of an environment variable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvUse {
    /// 1-based line.
    pub line: usize,
    /// Byte span of the variable name.
    pub name: (usize, usize),
    /// Byte span of the whole `NAME=value` word.
    pub word: (usize, usize),
    /// Byte span of the whole command when it is `export NAME=…` alone, for removal.
    pub command: Option<(usize, usize)>,
    /// The value as written (quotes removed).
    pub value: String,
}

/// Finds `export NAME=v`, `declare -x NAME=v`, `NAME=v cmd …` and `-e NAME=v` / `--env NAME=v`.
pub fn find_env(src: &str, name: &str) -> Vec<EnvUse> {
    let toks = lex(src);
    let mut out = Vec::new();
    let prefix = format!("{name}=");
    // Index of the first word of the current command.
    let mut cmd_start = 0usize;
    for (ti, t) in toks.iter().enumerate() {
        match t {
            Tok::Sep => {
                cmd_start = ti + 1;
                continue;
            }
            Tok::Redir => continue,
            Tok::Word(w) => {
                if !(w.value.starts_with(&prefix) || w.value == name) {
                    continue;
                }
                let prev: Vec<&Word> = toks[cmd_start..ti]
                    .iter()
                    .filter_map(|t| if let Tok::Word(w) = t { Some(w) } else { None })
                    .collect();
                let after_export = prev.first().is_some_and(|p| {
                    matches!(
                        p.value.as_str(),
                        "export" | "declare" | "typeset" | "local" | "readonly"
                    )
                });
                let inline = prev
                    .iter()
                    .all(|p| p.value.contains('=') && !p.value.starts_with('-'));
                let docker_e = prev
                    .last()
                    .is_some_and(|p| p.value == "-e" || p.value == "--env");
                let is_assign =
                    w.value.starts_with(&prefix) && (after_export || inline || docker_e);
                let is_bare_export = w.value == name && after_export;
                if !(is_assign || is_bare_export) {
                    continue;
                }
                let raw = &src[w.start..w.end];
                let off = raw.find(name).unwrap_or(0);
                // A command that is only `export NAME=…` (nothing else) can be removed whole.
                let rest_words = toks[ti + 1..]
                    .iter()
                    .take_while(|t| !matches!(t, Tok::Sep))
                    .any(|t| matches!(t, Tok::Word(_)));
                let command = if after_export
                    && prev.len()
                        == 1 + prev
                            .iter()
                            .skip(1)
                            .filter(|p| p.value.starts_with('-'))
                            .count()
                    && !rest_words
                {
                    Some((prev[0].start, w.end))
                } else if inline && prev.is_empty() && !rest_words {
                    Some((w.start, w.end))
                } else {
                    None
                };
                out.push(EnvUse {
                    line: w.line,
                    name: (w.start + off, w.start + off + name.len()),
                    word: (w.start, w.end),
                    command,
                    value: w.value.get(prefix.len()..).unwrap_or("").to_string(),
                });
            }
        }
    }
    out
}

/// A replacement of `src[start..end]` by `text`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edit {
    /// Start byte.
    pub start: usize,
    /// End byte (exclusive).
    pub end: usize,
    /// Replacement text.
    pub text: String,
}

/// Applies non-overlapping edits. Errors when two edits overlap.
pub fn apply_edits(src: &str, edits: &[Edit]) -> Result<String, String> {
    let mut e: Vec<&Edit> = edits.iter().collect();
    e.sort_by_key(|x| (x.start, x.end));
    for w in e.windows(2) {
        if w[1].start < w[0].end {
            return Err(format!(
                "overlapping edits at bytes {}..{} and {}..{}",
                w[0].start, w[0].end, w[1].start, w[1].end
            ));
        }
    }
    let mut out = String::with_capacity(src.len());
    let mut pos = 0;
    for x in e {
        out.push_str(&src[pos..x.start]);
        out.push_str(&x.text);
        pos = x.end;
    }
    out.push_str(&src[pos..]);
    Ok(out)
}

/// The edit that deletes `span` from a script, tidying the whitespace around it: when nothing
/// but indentation and a trailing `\` would stay on the line, the whole line goes (and a
/// dangling `\` on the previous line is removed when the deleted line ended the command);
/// otherwise the span and the blank before it go.
pub fn removal_edit(src: &str, span: (usize, usize)) -> Edit {
    let b = src.as_bytes();
    let line_start = src[..span.0].rfind('\n').map_or(0, |i| i + 1);
    let line_end = src[span.1..].find('\n').map_or(src.len(), |i| span.1 + i);
    let before = &src[line_start..span.0];
    let after_t = src[span.1..line_end].trim();
    if before.trim().is_empty() && (after_t.is_empty() || after_t == "\\") {
        let del_end = if line_end < src.len() {
            line_end + 1
        } else {
            line_end
        };
        if after_t.is_empty() && line_start > 0 {
            // The deleted line ended the command: a `\` on the previous line must go too.
            let prev = src[..line_start - 1].trim_end_matches([' ', '\t']);
            if prev.ends_with('\\') && !prev.ends_with("\\\\") {
                let ws_start = src[..prev.len() - 1].trim_end_matches([' ', '\t']).len();
                let text = if del_end > line_end { "\n" } else { "" };
                return Edit {
                    start: ws_start,
                    end: del_end,
                    text: text.into(),
                };
            }
        }
        return Edit {
            start: line_start,
            end: del_end,
            text: String::new(),
        };
    }
    let mut s = span.0;
    while s > line_start && matches!(b[s - 1], b' ' | b'\t') {
        s -= 1;
    }
    if s == line_start {
        // First on its line with more after it: eat the blank after instead.
        let mut e = span.1;
        while e < line_end && matches!(b[e], b' ' | b'\t') {
            e += 1;
        }
        return Edit {
            start: span.0,
            end: e,
            text: String::new(),
        };
    }
    Edit {
        start: s,
        end: span.1,
        text: String::new(),
    }
}

/// The edit that deletes `span` from inside a quoted argument string, with one blank next to it
/// (the one before, or the one after when the flag opens the string).
pub fn removal_edit_in_string(src: &str, span: (usize, usize)) -> Edit {
    let b = src.as_bytes();
    let mut s = span.0;
    while s > 0 && matches!(b[s - 1], b' ' | b'\t') {
        s -= 1;
    }
    if s < span.0 {
        return Edit {
            start: s,
            end: span.1,
            text: String::new(),
        };
    }
    let mut e = span.1;
    while e < b.len() && matches!(b[e], b' ' | b'\t') {
        e += 1;
    }
    Edit {
        start: span.0,
        end: e,
        text: String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RECIPE: &str = "python3 -m sglang.launch_server \\\n  --model-path \"$MODEL_PATH\" \\\n  --max-running-requests 64 \\\n  --cuda-graph-max-bs 64 \\\n  > \"$RESULT_DIR/server.log\" 2>&1 &\n";

    #[test]
    fn separate_form_across_continuations() {
        let f = find_flag(RECIPE, "--cuda-graph-max-bs", true);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].form, FlagForm::Separate);
        assert_eq!(f[0].value.as_deref(), Some("64"));
        assert_eq!(f[0].line, 4);
        // Not a prefix match of the longer flags.
        let s = RECIPE.replace("--cuda-graph-max-bs 64", "--cuda-graph-max-bs-decode 64");
        assert!(find_flag(&s, "--cuda-graph-max-bs", true).is_empty());
    }

    #[test]
    fn equals_quoted_and_in_string_forms() {
        let s = "cmd --cuda-graph-max-bs=$CONC \"--cuda-graph-max-bs=64\" --x\nARGS=\"--tp 8 --cuda-graph-max-bs 128 --y\"\n# --cuda-graph-max-bs 1 (comment)\nB='--cuda-graph-max-bs=7'\n";
        let f = find_flag(s, "--cuda-graph-max-bs", true);
        let v: Vec<_> = f
            .iter()
            .map(|u| (u.form, u.value.clone().unwrap()))
            .collect();
        assert_eq!(
            v,
            vec![
                (FlagForm::Equals, "$CONC".into()),
                (FlagForm::Equals, "64".into()),
                (FlagForm::InString, "128".into()),
                (FlagForm::InString, "7".into()),
            ]
        );
        // Value spans point at the value text.
        for u in &f {
            let (a, b) = u.value_span.unwrap();
            assert_eq!(&s[a..b], u.value.as_deref().unwrap());
        }
    }

    #[test]
    fn value_on_the_next_line_and_quoted_value() {
        let s = "cmd --max-seq-len-to-capture \\\n    \"8192\" --z\n";
        let f = find_flag(s, "--max-seq-len-to-capture", true);
        assert_eq!(f[0].value.as_deref(), Some("8192"));
        assert_eq!(
            &s[f[0].whole.0..f[0].whole.1],
            "--max-seq-len-to-capture \\\n    \"8192\""
        );
    }

    #[test]
    fn removal_of_a_whole_continuation_line() {
        let f = find_flag(RECIPE, "--cuda-graph-max-bs", true);
        let e = removal_edit(RECIPE, f[0].whole);
        let out = apply_edits(RECIPE, &[e]).unwrap();
        assert_eq!(out, RECIPE.replace("  --cuda-graph-max-bs 64 \\\n", ""));
    }

    #[test]
    fn removal_of_the_last_line_fixes_the_dangling_backslash() {
        let s = "vllm serve m \\\n  --tp 8 \\\n  --async-scheduling\necho done\n";
        let f = find_flag(s, "--async-scheduling", false);
        let out = apply_edits(s, &[removal_edit(s, f[0].whole)]).unwrap();
        assert_eq!(out, "vllm serve m \\\n  --tp 8\necho done\n");
    }

    #[test]
    fn removal_inside_a_line() {
        let s = "vllm serve m --async-scheduling --tp 8\n";
        let f = find_flag(s, "--async-scheduling", false);
        assert_eq!(
            apply_edits(s, &[removal_edit(s, f[0].whole)]).unwrap(),
            "vllm serve m --tp 8\n"
        );
        let s = "ARGS=\"--tp 8 --max-seq-len-to-capture 8192 --x\"\n";
        let f = find_flag(s, "--max-seq-len-to-capture", true);
        assert_eq!(
            apply_edits(s, &[removal_edit_in_string(s, f[0].whole)]).unwrap(),
            "ARGS=\"--tp 8 --x\"\n"
        );
        let s = "ARGS=\"--max-seq-len-to-capture 8192 --x\"\n";
        let f = find_flag(s, "--max-seq-len-to-capture", true);
        assert_eq!(
            apply_edits(s, &[removal_edit_in_string(s, f[0].whole)]).unwrap(),
            "ARGS=\"--x\"\n"
        );
    }

    #[test]
    fn env_assignments() {
        let s = "export VLLM_FLASHINFER_ALLREDUCE_BACKEND=trtllm\nFOO=1 VLLM_FLASHINFER_ALLREDUCE_BACKEND=\"trtllm\" vllm serve m\ndocker run -e VLLM_FLASHINFER_ALLREDUCE_BACKEND=trtllm img\necho VLLM_FLASHINFER_ALLREDUCE_BACKEND=x\n";
        let u = find_env(s, "VLLM_FLASHINFER_ALLREDUCE_BACKEND");
        assert_eq!(u.len(), 3);
        assert_eq!(u[0].command, Some((0, 47)));
        assert_eq!(u[1].value, "trtllm");
        assert!(u[1].command.is_none());
        assert_eq!(u[2].line, 3);
        let out = apply_edits(s, &[removal_edit(s, u[0].command.unwrap())]).unwrap();
        assert!(out.starts_with("FOO=1"));
    }

    #[test]
    fn overlapping_edits_are_refused() {
        let e = [
            Edit {
                start: 0,
                end: 3,
                text: "a".into(),
            },
            Edit {
                start: 2,
                end: 4,
                text: "b".into(),
            },
        ];
        assert!(apply_edits("abcdef", &e).is_err());
    }
}
