//! The issue-13 charts end to end: two simulator sweeps (H200 and B200 presets, `--slo`) into
//! one store, then `servebench report --runs 1,2 --format html` → the HTML has the Pareto of
//! both runs, the latency CDFs of the report's run and its goodput curve; an unknown run id
//! is one error line naming it. The same HTML opened in headless Chromium (screenshot decoded
//! and not blank, `--dump-dom` has the charts' SVG); with `SERVEBENCH_SCREENSHOT_DIR=docs` each
//! new chart is also screenshotted alone into `docs/report-{cdf,goodput,pareto}.png`.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::run_in;

const SLO: &str = "ttft=60ms,tpot=6ms@p90";

/// Two sweeps of the simulator into `dir/s.db`: run 1 on the H200 preset, run 2 on B200.
fn two_runs(dir: &Path) {
    for (gpu, out) in [("h200", "o1"), ("b200", "o2")] {
        let (code, _, err) = run_in(
            dir,
            &[
                "sweep",
                "--sim-gpu",
                gpu,
                "--isl",
                "128",
                "--osl",
                "64",
                "--conc",
                "1,4,16",
                "--num-prompts",
                "32",
                "--slo",
                SLO,
                "--db",
                "s.db",
                "--out",
                out,
            ],
        );
        assert_eq!(code, 0, "sweep {gpu}: {err}");
    }
}

fn report_html(dir: &Path) -> String {
    let (code, _, err) = run_in(
        dir,
        &[
            "report", "--runs", "1,2", "--db", "s.db", "--format", "html", "-o", "r.html",
        ],
    );
    assert_eq!(code, 0, "{err}");
    std::fs::read_to_string(dir.join("r.html")).unwrap()
}

/// The `<figure id="…">…</figure>` of a chart.
fn figure<'a>(html: &'a str, id: &str) -> &'a str {
    let start = html
        .find(&format!("<figure id=\"{id}\">"))
        .unwrap_or_else(|| panic!("no figure {id}"));
    let len = html[start..].find("</figure>").unwrap();
    &html[start..start + len]
}

#[test]
fn report_runs_draws_the_pareto_of_both_runs_cdfs_and_goodput() {
    let dir = tempfile::tempdir().unwrap();
    two_runs(dir.path());
    let html = report_html(dir.path());
    // Self-contained: nothing loaded from anywhere.
    for bad in ["<script", "<link", "src=\"http", "@import", "url("] {
        assert!(!html.contains(bad), "{bad} in the report");
    }
    // The report is about the last listed run (2).
    assert!(html.contains("report · run 2"), "title names run 2");

    // Pareto: both runs in the legend, one dot per point (3 concurrencies each), a frontier
    // line per run.
    let p = figure(&html, "chart-pareto");
    assert!(p.contains("<title id=\"pareto-title\">"));
    assert!(p.contains("run 1 · sim-h200"), "{p}");
    assert!(p.contains("run 2 · sim-b200"), "{p}");
    assert_eq!(p.matches("<circle").count(), 6, "3 points per run");
    assert!(p.matches("<polyline").count() >= 2, "a frontier per run");
    assert!(p.contains("Interactivity (tok/s/user = 1000 / TPOT ms)"));
    assert!(p.contains("Total tok/s/GPU"));
    // The accessible description counts each run's points and frontier points.
    assert!(
        p.contains("sim-h200 (3 points, ") && p.contains("sim-b200 (3 points, "),
        "{p}"
    );

    // CDFs of run 2: one curve per point (c1, c4, c16) with their sample counts (32 requests),
    // the SLO threshold on TTFT and TPOT.
    for m in ["ttft", "tpot", "itl", "e2el"] {
        let f = figure(&html, &format!("chart-cdf-{m}"));
        assert!(f.contains("role=\"img\""), "{m}");
        for c in ["c1", "c4", "c16"] {
            assert!(f.contains(&format!("{c} (n=")), "{m}: {c} missing");
        }
        assert!(f.contains("(ms)"), "{m}: axis unit");
    }
    assert!(figure(&html, "chart-cdf-ttft").contains("c1 (n=32)"));
    assert!(figure(&html, "chart-cdf-ttft").contains("SLO ttft ≤ 60 ms"));
    assert!(figure(&html, "chart-cdf-tpot").contains("SLO tpot ≤ 6 ms"));
    assert!(!figure(&html, "chart-cdf-itl").contains("SLO itl"));

    // Goodput under the sweep's own SLO, three points.
    let g = figure(&html, "chart-goodput");
    assert!(g.contains("SLO ttft=60ms,tpot=6ms@p90"), "{g}");
    assert!(g.contains("at 3 concurrencies (c1, c4, c16)"), "{g}");
    assert!(g.contains("SLO target 90%"));

    // A report --slo overrides the sweep's.
    let (code, _, err) = run_in(
        dir.path(),
        &[
            "report", "1", "--slo", "e2el=1s", "--db", "s.db", "--format", "html", "-o", "r1.html",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let h1 = std::fs::read_to_string(dir.path().join("r1.html")).unwrap();
    assert!(figure(&h1, "chart-goodput").contains("SLO e2el=1000ms@p90"));
    assert!(figure(&h1, "chart-cdf-e2el").contains("SLO e2el ≤ 1,000 ms"));
    assert!(!h1.contains("chart-pareto"), "no --runs, no Pareto");

    // Unknown run id: one line naming it.
    let (code, _, err) = run_in(
        dir.path(),
        &[
            "report", "--runs", "1,99", "--db", "s.db", "--format", "html",
        ],
    );
    assert_ne!(code, 0);
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(
        lines[0].contains("run 99") && lines[0].contains("does not exist"),
        "{err}"
    );
    let (code, _, err) = run_in(dir.path(), &["report", "--runs", "1,x", "--db", "s.db"]);
    assert_ne!(code, 0);
    assert!(
        err.trim().lines().count() == 1 && err.contains("\"x\" is not a run id"),
        "{err}"
    );
}

fn chromium() -> Option<PathBuf> {
    match std::env::var_os("SERVEBENCH_CHROMIUM") {
        Some(p) if !p.is_empty() => Some(PathBuf::from(p)),
        _ => {
            servebench_testkit::skip_or_fail(
                "SERVEBENCH_CHROMIUM is not set (scripts/services/chromium.sh)",
            );
            None
        }
    }
}

/// Headless Chromium on `page` with `args`, bounded to 90 s; its stdout.
fn chromium_run(bin: &Path, profile: &Path, args: &[String], page: &Path) -> String {
    std::fs::create_dir_all(profile).unwrap();
    let out = profile.join("stdout.txt");
    let mut child = Command::new(bin)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-extensions",
            "--disable-background-networking",
            "--hide-scrollbars",
            "--force-device-scale-factor=1",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", bin.display()));
    let t0 = Instant::now();
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            assert!(st.success(), "chromium exited with {st}");
            return std::fs::read_to_string(&out).unwrap_or_default();
        }
        if t0.elapsed() > Duration::from_secs(90) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish within 90 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// (width, height, distinct colours, non-white fraction, pixels) of a PNG.
fn png_stats(p: &Path) -> (u32, u32, usize, f64, Vec<(u8, u8, u8)>) {
    let decoder = png::Decoder::new(std::fs::File::open(p).expect("screenshot written"));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    let bpp = info.color_type.samples();
    let px: Vec<(u8, u8, u8)> = buf[..info.buffer_size()]
        .chunks(bpp)
        .map(|c| (c[0], c[1], c[2]))
        .collect();
    let colours: std::collections::HashSet<_> = px.iter().collect();
    let non_white = px.iter().filter(|c| **c != (255, 255, 255)).count();
    (
        info.width,
        info.height,
        colours.len(),
        non_white as f64 / px.len() as f64,
        px,
    )
}

#[test]
fn report_charts_render_in_headless_chromium() {
    let Some(bin) = chromium() else { return };
    let dir = tempfile::tempdir().unwrap();
    two_runs(dir.path());
    let html = report_html(dir.path());
    let page = dir.path().join("r.html");

    // The rendered DOM has every chart's SVG: 4 base charts + output tokens per joule (the
    // simulator's points carry modelled energy, issue 30) + 4 CDFs + goodput + Pareto.
    let dom = chromium_run(&bin, &dir.path().join("p0"), &["--dump-dom".into()], &page);
    assert_eq!(
        dom.matches("<svg").count(),
        11,
        "eleven SVG charts in the DOM"
    );
    assert!(dom.contains("Output tok/J"), "the energy chart is drawn");
    for id in ["chart-cdf-ttft", "chart-goodput", "chart-pareto"] {
        assert!(dom.contains(&format!("id=\"{id}\"")), "{id} not in the DOM");
    }
    assert!(dom.contains("run 2 · sim-b200"));

    // The whole page, and each new chart alone (the figure's SVG on a page of its size).
    let shot = dir.path().join("page.png");
    chromium_run(
        &bin,
        &dir.path().join("p1"),
        &[
            format!("--screenshot={}", shot.display()),
            "--window-size=1280,2600".into(),
        ],
        &page,
    );
    let (w, h, colours, non_white, _) = png_stats(&shot);
    println!(
        "page {w}x{h}: {colours} colours, {:.1}% non-white",
        non_white * 100.0
    );
    assert_eq!((w, h), (1280, 2600));
    assert!(colours > 50 && non_white > 0.02, "blank-looking page");

    let out_dir = std::env::var_os("SERVEBENCH_SCREENSHOT_DIR").map(PathBuf::from);
    for (name, ids) in [
        (
            "cdf",
            vec![
                "chart-cdf-ttft",
                "chart-cdf-tpot",
                "chart-cdf-itl",
                "chart-cdf-e2el",
            ],
        ),
        ("goodput", vec!["chart-goodput"]),
        ("pareto", vec!["chart-pareto"]),
    ] {
        let svgs: Vec<&str> = ids
            .iter()
            .map(|id| {
                let f = figure(&html, id);
                let s = f.find("<svg").unwrap();
                let e = f.rfind("</svg>").unwrap() + "</svg>".len();
                &f[s..e]
            })
            .collect();
        // CDFs: the four charts in a 2 × 2 grid.
        let cols = if svgs.len() > 1 { 2 } else { 1 };
        let rows = svgs.len().div_ceil(cols);
        let (pw, ph) = (
            560 * cols as u32 + 8 * cols as u32,
            340 * rows as u32 + 8 * rows as u32,
        );
        let one = dir.path().join(format!("{name}.html"));
        std::fs::write(
            &one,
            format!(
                "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><style>body{{margin:0;background:#fff;font-family:sans-serif}}div{{display:grid;grid-template-columns:repeat({cols},560px);gap:8px;padding:4px}}</style></head><body><div>{}</div></body></html>",
                svgs.join("")
            ),
        )
        .unwrap();
        let png = dir.path().join(format!("{name}.png"));
        chromium_run(
            &bin,
            &dir.path().join(format!("p-{name}")),
            &[
                format!("--screenshot={}", png.display()),
                format!("--window-size={pw},{ph}"),
            ],
            &one,
        );
        let (w, h, colours, non_white, px) = png_stats(&png);
        println!(
            "{name} {w}x{h}: {colours} colours, {:.1}% non-white",
            non_white * 100.0
        );
        assert_eq!((w, h), (pw, ph));
        assert!(colours > 20, "{name}: blank-looking ({colours} colours)");
        assert!(non_white > 0.02, "{name}: blank-looking ({non_white})");
        // The first series colour (blue) was painted; the Pareto also has the second (orange).
        assert!(
            px.contains(&(31, 119, 180)),
            "{name}: first series colour missing"
        );
        if name == "pareto" {
            assert!(
                px.contains(&(230, 110, 20)),
                "pareto: second run's colour missing"
            );
        }
        if let Some(d) = &out_dir {
            std::fs::copy(&png, d.join(format!("report-{name}.png"))).unwrap();
        }
    }
}
