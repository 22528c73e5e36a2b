//! CPython's `csv.DictReader(f, skipinitialspace=True)` over a file opened with
//! `open(path, "r", newline="", encoding="utf-8", errors="replace")`, as InferenceX's
//! `utils/aggregate_power.py` reads `gpu_metrics.csv` and the `amd-smi` energy snapshots.
//!
//! Port of the `excel` dialect of CPython 3.11 `Modules/_csv.c` (`parse_process_char`,
//! `Reader_iternext`) and `Lib/csv.py` (`DictReader`): delimiter `,`, quote `"` doubled inside
//! quotes, no escape character, spaces after a delimiter skipped, non-strict (a quote after a
//! closing quote is kept as text), lines ending in `\n`, `\r` or `\r\n` (universal newlines, not
//! translated), a quoted field may span lines, an unterminated quoted field at end of file ends
//! the row, fields longer than 131,072 characters are an error (`csv.field_size_limit()`).
//! Invalid UTF-8 becomes U+FFFD. Empty rows (`[]`) are skipped by the dict reader; a row of only
//! spaces is one empty field (`[""]`), not skipped.

/// What makes Python's reader raise `csv.Error` (its message).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct CsvError(pub &'static str);

const FIELD_TOO_LARGE: CsvError = CsvError("field larger than field limit (131072)");

/// The default `csv.field_size_limit()`.
const FIELD_LIMIT: usize = 131_072;

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    StartRecord,
    StartField,
    InField,
    InQuotedField,
    QuoteInQuotedField,
    EatCrnl,
}

/// Splits decoded text into lines the way Python's universal-newline reader yields them, each
/// line keeping its terminator (`\n`, `\r` or `\r\n`).
fn lines(text: &str) -> impl Iterator<Item = &str> {
    let b = text.as_bytes();
    let mut pos = 0;
    std::iter::from_fn(move || {
        if pos >= b.len() {
            return None;
        }
        let start = pos;
        while pos < b.len() {
            match b[pos] {
                b'\n' => {
                    pos += 1;
                    break;
                }
                b'\r' => {
                    pos += 1;
                    if b.get(pos) == Some(&b'\n') {
                        pos += 1;
                    }
                    break;
                }
                _ => pos += 1,
            }
        }
        Some(&text[start..pos])
    })
}

/// `list(csv.reader(lines, skipinitialspace=True))`: every row, empty rows (`[]`) included.
/// On a `csv.Error` the rows read before it come back with the error (Python has consumed
/// them by then).
pub fn read_rows(text: &str) -> (Vec<Vec<String>>, Option<CsvError>) {
    let mut rows = Vec::new();
    let err = read_rows_into(text, &mut rows).err();
    (rows, err)
}

fn read_rows_into(text: &str, rows: &mut Vec<Vec<String>>) -> Result<(), CsvError> {
    let mut fields: Vec<String> = Vec::new();
    let mut field = String::new();
    let mut field_len = 0usize;
    let mut state = State::StartRecord;
    let add = |field: &mut String, field_len: &mut usize, c: char| {
        if *field_len >= FIELD_LIMIT {
            return Err(FIELD_TOO_LARGE);
        }
        field.push(c);
        *field_len += 1;
        Ok(())
    };
    for line in lines(text) {
        // Each character, then the end-of-line marker (`None`).
        for c in line.chars().map(Some).chain(std::iter::once(None)) {
            let is_nl = matches!(c, Some('\n') | Some('\r'));
            let save = |fields: &mut Vec<String>, field: &mut String, field_len: &mut usize| {
                fields.push(std::mem::take(field));
                *field_len = 0;
            };
            let mut s = state;
            if s == State::StartRecord {
                if c.is_none() {
                    // Empty line: the row is `[]`.
                    rows.push(std::mem::take(&mut fields));
                    continue;
                } else if is_nl {
                    state = State::EatCrnl;
                    continue;
                }
                s = State::StartField;
            }
            state =
                match s {
                    State::StartField => match c {
                        None | Some('\n') | Some('\r') => {
                            save(&mut fields, &mut field, &mut field_len);
                            if c.is_none() {
                                State::StartRecord
                            } else {
                                State::EatCrnl
                            }
                        }
                        Some('"') => State::InQuotedField,
                        Some(' ') => State::StartField,
                        Some(',') => {
                            save(&mut fields, &mut field, &mut field_len);
                            State::StartField
                        }
                        Some(ch) => {
                            add(&mut field, &mut field_len, ch)?;
                            State::InField
                        }
                    },
                    State::InField => match c {
                        None | Some('\n') | Some('\r') => {
                            save(&mut fields, &mut field, &mut field_len);
                            if c.is_none() {
                                State::StartRecord
                            } else {
                                State::EatCrnl
                            }
                        }
                        Some(',') => {
                            save(&mut fields, &mut field, &mut field_len);
                            State::StartField
                        }
                        Some(ch) => {
                            add(&mut field, &mut field_len, ch)?;
                            State::InField
                        }
                    },
                    State::InQuotedField => match c {
                        None => State::InQuotedField,
                        Some('"') => State::QuoteInQuotedField,
                        Some(ch) => {
                            add(&mut field, &mut field_len, ch)?;
                            State::InQuotedField
                        }
                    },
                    State::QuoteInQuotedField => match c {
                        Some('"') => {
                            add(&mut field, &mut field_len, '"')?;
                            State::InQuotedField
                        }
                        Some(',') => {
                            save(&mut fields, &mut field, &mut field_len);
                            State::StartField
                        }
                        None | Some('\n') | Some('\r') => {
                            save(&mut fields, &mut field, &mut field_len);
                            if c.is_none() {
                                State::StartRecord
                            } else {
                                State::EatCrnl
                            }
                        }
                        Some(ch) => {
                            add(&mut field, &mut field_len, ch)?;
                            State::InField
                        }
                    },
                    State::EatCrnl => match c {
                        Some('\n') | Some('\r') => State::EatCrnl,
                        None => State::StartRecord,
                        // Only reachable with a lone `\r` inside a line, which the line splitter
                        // never produces; Python raises csv.Error here.
                        Some(_) => return Err(CsvError(
                            "new-line character seen in unquoted field - do you need to open the \
                             file with newline=''?",
                        )),
                    },
                    State::StartRecord => unreachable!("handled above"),
                };
            if state == State::StartRecord {
                rows.push(std::mem::take(&mut fields));
            }
        }
    }
    // End of input inside a quoted field: the row ends there (non-strict).
    // (Every line ends with its end-of-line step, so only a quoted field can be open here.)
    if state == State::InQuotedField {
        fields.push(field);
        rows.push(fields);
    }
    Ok(())
}

/// `csv.DictReader` with the header names `strip()`ped (as the tool re-assigns `fieldnames`).
#[derive(Debug, Clone)]
pub struct DictRows {
    /// Header names after Python `str.strip()`; empty when the file has no row at all.
    pub header: Vec<String>,
    /// Data rows (empty rows skipped) up to the first `csv.Error`.
    pub rows: Vec<Vec<String>>,
    /// The `csv.Error` that stopped reading, if any (after `rows`; before the header when
    /// `header` is empty).
    pub error: Option<CsvError>,
    /// The error came before the header row was complete (Python raises on `fieldnames`).
    pub error_in_header: bool,
}

impl DictRows {
    /// Decodes `bytes` (UTF-8, invalid sequences → U+FFFD) and reads header and rows.
    pub fn parse(bytes: &[u8]) -> DictRows {
        let text = String::from_utf8_lossy(bytes);
        let (rows, error) = read_rows(&text);
        let error_in_header = error.is_some() && rows.is_empty();
        let mut rows = rows.into_iter();
        let header = rows
            .next()
            .map(|h| h.iter().map(|c| py_strip(c).to_string()).collect())
            .unwrap_or_default();
        let rows = rows.filter(|r| !r.is_empty()).collect();
        DictRows {
            header,
            rows,
            error,
            error_in_header,
        }
    }

    /// Index of the value `row.get(name)` returns: the last header position with that name
    /// (`dict(zip(...))` keeps the last); `None` when the name is absent.
    pub fn column(&self, name: &str) -> Option<usize> {
        self.header.iter().rposition(|h| h == name)
    }

    /// `(row.get(name) or "")` for the column at `idx`: missing cells (short rows) are `""`.
    pub fn cell<'a>(row: &'a [String], idx: usize) -> &'a str {
        row.get(idx).map_or("", String::as_str)
    }
}

/// Python `str.isspace()` for one character.
pub fn py_isspace(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n'
            | '\u{0b}'
            | '\u{0c}'
            | '\r'
            | '\u{1c}'..='\u{1f}'
            | ' '
            | '\u{85}'
            | '\u{a0}'
            | '\u{1680}'
            | '\u{2000}'..='\u{200a}'
            | '\u{2028}'
            | '\u{2029}'
            | '\u{202f}'
            | '\u{205f}'
            | '\u{3000}'
    )
}

/// Python `str.strip()`.
pub fn py_strip(s: &str) -> &str {
    s.trim_matches(py_isspace)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(s: &str) -> Vec<Vec<String>> {
        let (rows, err) = read_rows(s);
        assert_eq!(err, None);
        rows
    }

    #[test]
    fn excel_dialect_with_skipinitialspace() {
        // Python: list(csv.reader(io.StringIO(s, newline=""), skipinitialspace=True))
        assert_eq!(
            rows("a, b,  c\r\n\n \n\"x, y\",\"q\"\"z\"w\n"),
            vec![vec!["a", "b", "c"], vec![], vec![""], vec!["x, y", "q\"zw"],]
        );
        assert_eq!(
            rows("a,\"multi\nline\",b"),
            vec![vec!["a", "multi\nline", "b"]]
        );
        assert_eq!(rows("a,\"open"), vec![vec!["a", "open"]]);
        assert_eq!(rows("a,b\rc,d"), vec![vec!["a", "b"], vec!["c", "d"]]);
        assert_eq!(rows("a,"), vec![vec!["a", ""]]);
        assert!(read_rows(&"x".repeat(131_073)).1.is_some());
        assert_eq!(rows(&"x".repeat(131_072))[0][0].len(), 131_072);
    }

    #[test]
    fn dict_rows_strip_header_and_skip_empty_rows() {
        let d = DictRows::parse(b"timestamp, index , power.draw [W]\n\n1,0,5 W\n");
        assert_eq!(d.header, vec!["timestamp", "index", "power.draw [W]"]);
        assert_eq!(d.rows.len(), 1);
        assert_eq!(py_strip("\u{1c} x\u{a0}"), "x");
    }
}
