//! Incremental Server-Sent-Events framer (MEASUREMENT.md Part 1, "Event arrival").
//!
//! Feed it the bytes of each network read as they come; it calls back once per complete event
//! (at its terminating blank line) and once per comment line. It accepts `\n`, `\r\n` and `\r`
//! line endings (also a `\r\n` pair split across two reads), `data:` with or without the one
//! optional space, multi-line `data:` fields (joined with `\n`, as the SSE spec says), comments
//! (`: …`), ignores `event:`/`id:`/`retry:`, and has no line-length limit (a 200 KB line is just
//! a longer buffer). Events may be split anywhere, including inside a UTF-8 sequence: the framer
//! works on bytes and never decodes text.
//!
//! Allocation: two reusable buffers (partial line, event data) whose capacity is kept between
//! events; complete lines inside one read are processed in place without copying.

/// One item the framer recognised.
#[derive(Debug, PartialEq, Eq)]
pub enum SseItem<'a> {
    /// A complete event: the `data` buffer (multi-line data joined with `\n`), and whether any
    /// of its `data:` lines lacked the space after the colon (InferenceX compat fails those).
    Event {
        /// Event data bytes.
        data: &'a [u8],
        /// A `data:` line of this event had no space after the colon.
        no_space: bool,
    },
    /// A comment line (`: …`, e.g. keep-alive pings).
    Comment,
}

/// Incremental SSE framer; see the module docs.
#[derive(Debug, Default)]
pub struct SseFramer {
    line: Vec<u8>,
    data: Vec<u8>,
    has_data: bool,
    no_space: bool,
    pending_cr: bool,
    events: u64,
}

impl SseFramer {
    /// A framer with empty buffers.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of events dispatched so far.
    pub fn events(&self) -> u64 {
        self.events
    }

    /// Whether a partial line or an undispatched event is buffered.
    pub fn has_pending(&self) -> bool {
        !self.line.is_empty() || self.has_data
    }

    /// Processes one network read; `on` is called for every complete event/comment in it.
    #[inline]
    pub fn feed<F: FnMut(SseItem<'_>)>(&mut self, mut input: &[u8], on: &mut F) {
        if self.pending_cr {
            self.pending_cr = false;
            if input.first() == Some(&b'\n') {
                input = &input[1..];
            }
        }
        while !input.is_empty() {
            match memchr::memchr2(b'\n', b'\r', input) {
                Some(p) => {
                    let term_len = if input[p] == b'\r' {
                        if p + 1 < input.len() {
                            if input[p + 1] == b'\n' {
                                2
                            } else {
                                1
                            }
                        } else {
                            self.pending_cr = true;
                            1
                        }
                    } else {
                        1
                    };
                    if self.line.is_empty() {
                        self.process_line(&input[..p], on);
                    } else {
                        let mut line = std::mem::take(&mut self.line);
                        line.extend_from_slice(&input[..p]);
                        self.process_line(&line, on);
                        line.clear();
                        self.line = line;
                    }
                    input = &input[p + term_len..];
                }
                None => {
                    self.line.extend_from_slice(input);
                    break;
                }
            }
        }
    }

    /// End of stream. A final line without its terminator is processed, and an event whose
    /// blank line never came is dispatched (servers that close right after `data: [DONE]\n`).
    /// Returns whether anything was left unterminated.
    pub fn finish<F: FnMut(SseItem<'_>)>(&mut self, on: &mut F) -> bool {
        let mut unterminated = false;
        if !self.line.is_empty() {
            unterminated = true;
            let line = std::mem::take(&mut self.line);
            self.process_line(&line, on);
        }
        if self.has_data {
            unterminated = true;
            self.dispatch(on);
        }
        self.pending_cr = false;
        unterminated
    }

    #[inline]
    fn process_line<F: FnMut(SseItem<'_>)>(&mut self, line: &[u8], on: &mut F) {
        if line.is_empty() {
            if self.has_data {
                self.dispatch(on);
            }
            return;
        }
        if line[0] == b':' {
            on(SseItem::Comment);
            return;
        }
        let (field, value) = match memchr::memchr(b':', line) {
            Some(c) => {
                let v = &line[c + 1..];
                if v.first() == Some(&b' ') {
                    (&line[..c], &v[1..])
                } else {
                    if &line[..c] == b"data" {
                        self.no_space = true;
                    }
                    (&line[..c], v)
                }
            }
            None => (line, &line[line.len()..]),
        };
        if field == b"data" {
            if self.has_data {
                self.data.push(b'\n');
            }
            self.data.extend_from_slice(value);
            self.has_data = true;
        }
        // `event`, `id`, `retry` and unknown fields are ignored.
    }

    #[inline]
    fn dispatch<F: FnMut(SseItem<'_>)>(&mut self, on: &mut F) {
        self.events += 1;
        on(SseItem::Event {
            data: &self.data,
            no_space: self.no_space,
        });
        self.data.clear();
        self.has_data = false;
        self.no_space = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(reads: &[&[u8]]) -> (Vec<(String, bool)>, usize) {
        let mut f = SseFramer::new();
        let mut ev = Vec::new();
        let mut comments = 0;
        let mut on = |it: SseItem<'_>| match it {
            SseItem::Event { data, no_space } => {
                ev.push((String::from_utf8(data.to_vec()).unwrap(), no_space))
            }
            SseItem::Comment => comments += 1,
        };
        for r in reads {
            f.feed(r, &mut on);
        }
        f.finish(&mut on);
        (ev, comments)
    }

    #[test]
    fn line_endings_and_prefixes() {
        let lf = collect(&[b"data: a\n\ndata:b\n\n: ping\n\ndata: [DONE]\n\n"]);
        let crlf = collect(&[b"data: a\r\n\r\ndata:b\r\n\r\n: ping\r\n\r\ndata: [DONE]\r\n\r\n"]);
        let cr = collect(&[b"data: a\r\rdata:b\r\r: ping\r\rdata: [DONE]\r\r"]);
        let want = vec![
            ("a".to_string(), false),
            ("b".to_string(), true),
            ("[DONE]".to_string(), false),
        ];
        assert_eq!(lf, (want.clone(), 1));
        assert_eq!(crlf, (want.clone(), 1));
        assert_eq!(cr, (want, 1));
    }

    #[test]
    fn crlf_split_across_reads_is_one_terminator() {
        let (ev, _) = collect(&[b"data: a\r", b"\n\r", b"\ndata: b\r\n\r\n"]);
        assert_eq!(ev, vec![("a".to_string(), false), ("b".to_string(), false)]);
    }

    #[test]
    fn multiline_data_and_other_fields() {
        let (ev, _) = collect(&[b"event: x\nid: 3\ndata: {\"a\":\ndata: 1}\nretry: 5\n\n"]);
        assert_eq!(ev, vec![("{\"a\":\n1}".to_string(), false)]);
    }

    #[test]
    fn every_split_point_gives_same_result() {
        let stream: &[u8] = "data: {\"x\":\"héllo\"}\r\n\r\n: c\n\ndata:{\"y\":2}\n\n".as_bytes();
        let whole = collect(&[stream]);
        for cut in 0..stream.len() {
            assert_eq!(
                collect(&[&stream[..cut], &stream[cut..]]),
                whole,
                "cut {cut}"
            );
        }
        let bytes: Vec<&[u8]> = stream.chunks(1).collect();
        assert_eq!(collect(&bytes), whole);
    }

    #[test]
    fn huge_line() {
        let mut s = b"data: ".to_vec();
        s.extend(std::iter::repeat_n(b'x', 300_000));
        s.extend_from_slice(b"\n\n");
        let reads: Vec<&[u8]> = s.chunks(16 * 1024).collect();
        let (ev, _) = collect(&reads);
        assert_eq!(ev.len(), 1);
        assert_eq!(ev[0].0.len(), 300_000);
    }

    #[test]
    fn unterminated_event_at_eof_is_dispatched() {
        let mut f = SseFramer::new();
        let mut n = 0;
        let mut on = |_: SseItem<'_>| n += 1;
        f.feed(b"data: [DONE]", &mut on);
        assert!(f.finish(&mut on));
        assert_eq!(n, 1);
    }
}
