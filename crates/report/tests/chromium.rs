//! The HTML report opened in a real headless Chromium (Debian `chromium`, started by this test;
//! `scripts/services/chromium.sh` installs it and exports `SERVEBENCH_CHROMIUM`):
//! screenshot → decoded PNG is not blank (many distinct colours, enough non-white pixels),
//! `--dump-dom` → the four SVG charts and the tables are in the rendered DOM, and Chromium's
//! console log (`--enable-logging=stderr`) has no message at all (the report has no script, so
//! any console line is an error: a failed resource load, a parse error). A control page that
//! calls `console.error` proves the console check can fail.
//!
//! Without `SERVEBENCH_CHROMIUM` the test prints `skipped: …` — or fails when
//! `SERVEBENCH_REQUIRE_SERVICES=1` (set by `scripts/test.sh`). With
//! `SERVEBENCH_SCREENSHOT_OUT=path.png` the screenshot is also copied there (that is how
//! `docs/report-screenshot.png` is made).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use servebench_report::attempt::*;
use servebench_report::model::*;
use servebench_report::{html, Lang};

const SCENARIO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/data/scenario");

fn chromium() -> Option<PathBuf> {
    match std::env::var_os("SERVEBENCH_CHROMIUM") {
        Some(p) if !p.is_empty() => Some(PathBuf::from(p)),
        _ => {
            servebench_testkit::skip_or_fail(
                "SERVEBENCH_CHROMIUM is not set (run scripts/services/chromium.sh)",
            );
            None
        }
    }
}

/// Runs Chromium headless with `args` on `page`, bounded to 90 s; returns (stdout, stderr).
fn run_chromium(bin: &Path, profile: &Path, args: &[String], page: &Path) -> (String, String) {
    std::fs::create_dir_all(profile).unwrap();
    let mut cmd = Command::new(bin);
    cmd.args([
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
        "--enable-logging=stderr",
        "--v=0",
    ])
    .arg(format!("--user-data-dir={}", profile.display()))
    .args(args)
    .arg(format!("file://{}", page.display()))
    .stdin(Stdio::null());
    let out_path = profile.join("stdout.txt");
    let err_path = profile.join("stderr.txt");
    cmd.stdout(std::fs::File::create(&out_path).unwrap());
    cmd.stderr(std::fs::File::create(&err_path).unwrap());
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", bin.display()));
    let t0 = Instant::now();
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            let so = std::fs::read_to_string(&out_path).unwrap_or_default();
            let se = std::fs::read_to_string(&err_path).unwrap_or_default();
            assert!(st.success(), "chromium exited with {st}\n{se}");
            return (so, se);
        }
        if t0.elapsed() > Duration::from_secs(90) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish within 90 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Console messages Chromium logged (`…:INFO:CONSOLE…] "msg", source: …`).
fn console_lines(stderr: &str) -> Vec<&str> {
    stderr.lines().filter(|l| l.contains(":CONSOLE")).collect()
}

fn report_doc() -> Document {
    let b: BaselineTable = serde_json::from_str(
        &std::fs::read_to_string(format!("{SCENARIO}/baseline.json")).unwrap(),
    )
    .unwrap();
    #[derive(serde::Deserialize)]
    struct Images {
        old: ImageInfo,
        new: ImageInfo,
    }
    let i: Images =
        serde_json::from_str(&std::fs::read_to_string(format!("{SCENARIO}/images.json")).unwrap())
            .unwrap();
    let cand = [
        (1, 15000.0, 166.1, 610.2, 3.41),
        (4, 22800.5, 240.3, 640.0, 4.3),
        (8, 40100.0, 380.0, 850.0, 5.5),
        (16, 70000.0, 600.0, 1700.0, 13.0),
    ];
    build_attempt(&AttemptInput {
        title_prefix: None,
        kind: AttemptKind::Final,
        status: AttemptStatus::Passed,
        run: Some(RunRef {
            id: "7".into(),
            attempt: Some(1),
            url: None,
        }),
        time: Some("2026-09-22 10:04 UTC".into()),
        image: i.new.reference.clone(),
        head: None,
        workload: "AgentX".into(),
        topology: "TP1/EP1".into(),
        statistic: "mean".into(),
        change: Some(ChangeInput {
            old: i.old,
            new: i.new,
            recipe_edits: vec![RecipeEdit {
                file: "qwen3.8next_fp4_b200_sglang_mtp.sh".into(),
                old_flag: "--cuda-graph-max-bs".into(),
                new_flag: Some("--cuda-graph-max-bs-decode".into()),
                old_value: Some("64".into()),
                new_value: Some("64".into()),
                reason: None,
                evidence: None,
                summary: None,
            }],
            digests_resolved: true,
        }),
        baseline: Some(b),
        points: cand
            .iter()
            .map(|&(conc, tot, out, ttft, tpot)| AttemptPoint {
                conc,
                status: RowStatus::Passed,
                has_result: true,
                request_errors: Some(0),
                first_error: None,
                values: BaselinePoint {
                    conc,
                    total_tput_per_gpu: Some(tot),
                    output_tput_per_gpu: Some(out),
                    ttft_ms: Some(ttft),
                    tpot_ms: Some(tpot),
                    ..Default::default()
                },
                topology: None,
            })
            .collect(),
        evals: vec![AttemptEval {
            task: "gsm8k".into(),
            metric: "em_strict".into(),
            conc: 16,
            score: Some(0.9803),
            samples: Some(1319),
            stderr: None,
            passed: true,
        }],
        failure: None,
        next: None,
        columns: BASELINE_COLUMNS.to_vec(),
        comparison: None,
        failed_jobs: vec![],
    })
}

#[test]
fn html_report_renders_in_headless_chromium() {
    let Some(bin) = chromium() else { return };
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("report.html");
    std::fs::write(&page, html::render(&report_doc(), Lang::EnZh)).unwrap();

    // Control: the console check sees a console.error.
    let control = dir.path().join("control.html");
    std::fs::write(
        &control,
        "<!DOCTYPE html><html><body><p>control</p><script>console.error('servebench-control-error')</script></body></html>",
    )
    .unwrap();
    let p0 = dir.path().join("p0");
    let (_, err) = run_chromium(&bin, &p0, &["--dump-dom".into()], &control);
    assert!(
        console_lines(&err)
            .iter()
            .any(|l| l.contains("servebench-control-error")),
        "the console check cannot see console messages:\n{err}"
    );

    // Screenshot.
    let shot = dir.path().join("shot.png");
    let p1 = dir.path().join("p1");
    let (_, err) = run_chromium(
        &bin,
        &p1,
        &[
            format!("--screenshot={}", shot.display()),
            "--window-size=1280,1750".into(),
        ],
        &page,
    );
    assert!(
        console_lines(&err).is_empty(),
        "console messages: {:?}",
        console_lines(&err)
    );
    let decoder = png::Decoder::new(std::fs::File::open(&shot).expect("screenshot written"));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!((info.width, info.height), (1280, 1750));
    let bpp = info.color_type.samples();
    let px = &buf[..info.buffer_size()];
    let mut colours = std::collections::HashSet::new();
    let mut non_white = 0usize;
    for p in px.chunks(bpp) {
        let rgb = (p[0], p[1], p[2]);
        colours.insert(rgb);
        if rgb != (255, 255, 255) {
            non_white += 1;
        }
    }
    let total = px.len() / bpp;
    println!(
        "screenshot {}x{}: {} distinct colours, {:.1}% non-white",
        info.width,
        info.height,
        colours.len(),
        100.0 * non_white as f64 / total as f64
    );
    assert!(
        colours.len() > 50,
        "blank-looking screenshot: {} colours",
        colours.len()
    );
    assert!(
        non_white * 50 > total,
        "blank-looking screenshot: {non_white} of {total} pixels non-white"
    );
    // Both curve colours (baseline blue, candidate orange) were painted.
    assert!(
        colours.contains(&(31, 119, 180)),
        "baseline curve colour missing"
    );
    assert!(
        colours.contains(&(230, 110, 20)),
        "candidate curve colour missing"
    );
    if let Some(out) = std::env::var_os("SERVEBENCH_SCREENSHOT_OUT") {
        std::fs::copy(&shot, out).unwrap();
    }

    // The rendered DOM: four SVG charts with curves, the tables.
    let p2 = dir.path().join("p2");
    let (dom, err) = run_chromium(&bin, &p2, &["--dump-dom".into()], &page);
    assert!(console_lines(&err).is_empty(), "console: {err}");
    assert_eq!(dom.matches("<svg").count(), 4, "four SVG charts in the DOM");
    assert!(
        dom.matches("<polyline").count() >= 6,
        "baseline and candidate curves"
    );
    assert!(
        dom.contains("14,445.12") || dom.contains("15,000"),
        "table values"
    );
    assert!(dom.contains("98.03% (+0.08 pp)"));
    assert!(dom.contains("<summary>中文</summary>"));
}
