//! Progress inside a point, through the session's reporter: on a terminal an indicatif bar on
//! stderr (requests done / total, or the seconds of an AgentX point against its window); not on
//! a terminal, one plain line every [`PLAIN_EVERY`] on stderr (`conc 4: 23/40 requests, 30 s`),
//! so a log of a long point (an AgentX window is 3,600 s by default) shows it is alive. On the
//! virtual clock the seconds are modelled seconds (a line every 30 modelled s), since the
//! runtime's clock is the virtual one.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::console::Console;
use crate::executor::SweepCtx;

/// Seconds between the plain progress lines when stderr is not a terminal.
pub const PLAIN_EVERY: Duration = Duration::from_secs(30);

/// What a point's progress counts.
#[derive(Debug, Clone, Copy)]
enum Unit {
    /// Requests done of a total.
    Requests(u64),
    /// Seconds of the point so far, against the AgentX profiling window (s) that follows its
    /// warmup.
    Window(u64),
}

/// The progress of one phase of a point; [`PointProgress::finish`] ends it.
pub struct PointProgress {
    bar: indicatif::ProgressBar,
    done: Arc<AtomicU64>,
    ticker: Option<tokio::task::JoinHandle<()>>,
}

/// A cheap handle that counts one finished request (given to the record sink).
#[derive(Clone)]
pub struct ProgressCounter {
    bar: indicatif::ProgressBar,
    done: Arc<AtomicU64>,
}

impl ProgressCounter {
    /// One request finished.
    pub fn inc(&self) {
        self.bar.inc(1);
        self.done.fetch_add(1, Ordering::Relaxed);
    }
}

impl PointProgress {
    /// Requests done of `total` for the phase named `prefix` (`conc 4`, `conc 4 warmup`).
    pub fn requests(ctx: &SweepCtx<'_>, total: u64, prefix: &str) -> PointProgress {
        start(
            ctx.tty,
            ctx.console.clone(),
            clock_scale(ctx),
            Unit::Requests(total),
            prefix,
        )
    }

    /// Seconds of an AgentX point against its `window_s` profiling window (after the warmup).
    pub fn window(ctx: &SweepCtx<'_>, window_s: u64, prefix: &str) -> PointProgress {
        start(
            ctx.tty,
            ctx.console.clone(),
            clock_scale(ctx),
            Unit::Window(window_s),
            prefix,
        )
    }

    /// The counter for the record sink.
    pub fn counter(&self) -> ProgressCounter {
        ProgressCounter {
            bar: self.bar.clone(),
            done: self.done.clone(),
        }
    }

    /// Clears the bar and stops the plain lines.
    pub fn finish(self) {
        if let Some(t) = &self.ticker {
            t.abort();
        }
        self.bar.finish_and_clear();
    }
}

impl Drop for PointProgress {
    fn drop(&mut self) {
        if let Some(t) = self.ticker.take() {
            t.abort();
        }
    }
}

/// Modelled seconds per second of the runtime's clock that progress counts in: the virtual
/// clock's speedup there, else 1 (wall seconds, as before the virtual clock).
fn clock_scale(ctx: &SweepCtx<'_>) -> f64 {
    if ctx.target.is_virtual() {
        ctx.target.sim_speedup
    } else {
        1.0
    }
}

/// Starts the bar and the ticker; `scale` = modelled s per runtime-clock s (1 on the wall
/// clock): the ticks come every [`PLAIN_EVERY`] (bar: 1 s) of modelled time and say it.
fn start(
    tty: bool,
    console: Arc<dyn Console>,
    scale: f64,
    unit: Unit,
    prefix: &str,
) -> PointProgress {
    let every = PLAIN_EVERY.div_f64(scale);
    let second = Duration::from_secs(1).div_f64(scale);
    let done = Arc::new(AtomicU64::new(0));
    let bar = if tty {
        let (len, what) = match unit {
            Unit::Requests(n) => (n, "requests"),
            Unit::Window(w) => (w, "s of the window after the warmup"),
        };
        let bar = indicatif::ProgressBar::new(len);
        bar.set_style(
            indicatif::ProgressStyle::with_template(&format!(
                "{{prefix:>14}} [{{bar:30}}] {{pos}}/{{len}} {what} {{elapsed_precise}}"
            ))
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
            .progress_chars("=> "),
        );
        bar.set_prefix(prefix.to_string());
        bar
    } else {
        indicatif::ProgressBar::hidden()
    };
    // the plain lines (no terminal), and the AgentX bar's seconds (a terminal)
    let ticker = match (tty, unit) {
        (false, _) => {
            let (done, prefix) = (done.clone(), prefix.to_string());
            Some(tokio::spawn(async move {
                let t0 = tokio::time::Instant::now();
                let mut iv = tokio::time::interval_at(t0 + every, every);
                loop {
                    iv.tick().await;
                    console.warn(&plain_line(
                        &prefix,
                        unit,
                        done.load(Ordering::Relaxed),
                        t0.elapsed().mul_f64(scale),
                    ));
                }
            }))
        }
        (true, Unit::Window(_)) => {
            let bar = bar.clone();
            Some(tokio::spawn(async move {
                let t0 = tokio::time::Instant::now();
                let mut iv = tokio::time::interval(second);
                loop {
                    iv.tick().await;
                    bar.set_position(t0.elapsed().mul_f64(scale).as_secs());
                }
            }))
        }
        (true, Unit::Requests(_)) => None,
    };
    PointProgress { bar, done, ticker }
}

/// `conc 4: 23/40 requests, 30 s`, or `conc 4: 90 s (AgentX window 600 s after the warmup)`.
fn plain_line(prefix: &str, unit: Unit, done: u64, elapsed: Duration) -> String {
    let s = elapsed.as_secs();
    match unit {
        Unit::Requests(total) => format!("{prefix}: {done}/{total} requests, {s} s"),
        Unit::Window(w) => format!("{prefix}: {s} s (AgentX window {w} s after the warmup)"),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    #[derive(Default)]
    struct Lines(Mutex<Vec<String>>);

    impl Console for Lines {
        fn line(&self, s: &str) {
            self.0.lock().unwrap().push(s.to_string());
        }
        fn warn(&self, s: &str) {
            self.0.lock().unwrap().push(s.to_string());
        }
    }

    /// Without a terminal: one line every 30 s with the requests done so far, nothing before the
    /// first 30 s, nothing after `finish`.
    #[tokio::test(start_paused = true)]
    async fn plain_lines_every_30_s_with_the_count() {
        let lines = Arc::new(Lines::default());
        let p = start(false, lines.clone(), 1.0, Unit::Requests(40), "conc 4");
        let c = p.counter();
        tokio::time::sleep(Duration::from_secs(29)).await;
        assert!(lines.0.lock().unwrap().is_empty());
        for _ in 0..23 {
            c.inc();
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
        c.inc();
        tokio::time::sleep(Duration::from_secs(30)).await;
        p.finish();
        tokio::time::sleep(Duration::from_secs(120)).await;
        assert_eq!(
            *lines.0.lock().unwrap(),
            vec![
                "conc 4: 23/40 requests, 30 s",
                "conc 4: 24/40 requests, 60 s"
            ]
        );
    }

    /// An AgentX point: the seconds so far against its window; on the virtual clock (1,000×
    /// slower than modelled time) the lines come every 30 modelled s and count modelled s.
    #[tokio::test(start_paused = true)]
    async fn plain_lines_of_an_agentx_window() {
        let lines = Arc::new(Lines::default());
        let p = start(false, lines.clone(), 1e-3, Unit::Window(600), "conc 2");
        tokio::time::sleep(Duration::from_secs(95_000)).await;
        drop(p);
        tokio::time::sleep(Duration::from_secs(60_000)).await;
        assert_eq!(
            *lines.0.lock().unwrap(),
            vec![
                "conc 2: 30 s (AgentX window 600 s after the warmup)",
                "conc 2: 60 s (AgentX window 600 s after the warmup)",
                "conc 2: 90 s (AgentX window 600 s after the warmup)"
            ]
        );
    }
}
