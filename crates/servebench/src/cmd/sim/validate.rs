//! `servebench sim validate`: the simulator's presets against real results (issue 22). Logic
//! in `servebench_sim::validate`; this file parses, wires and prints.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use servebench_sim::validate::{generation_table, newest_month_table, read_rows, table, validate};

/// Arguments of `servebench sim validate`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The real results: rows.csv of ../shared/data/real-results (built by its normalize.py).
    #[arg(long, value_name = "CSV")]
    pub against: PathBuf,
    /// Print the whole comparison as JSON ({"fit": [...], "by_hardware": {...},
    /// "by_hardware_isl_osl": {...}, "by_hardware_month": {...}, "newest_month": {...},
    /// "rows": [...], "skipped": {...}}; percent values).
    #[arg(long)]
    pub json: bool,
    /// Also print the errors per software generation: per hardware × month of the row's date
    /// × framework × container image (where recorded), n and median |error| / median signed
    /// error of each metric.
    #[arg(long)]
    pub by_date: bool,
    /// Also print every modelled row (prediction beside measurement) in the text output.
    #[arg(long)]
    pub rows: bool,
    /// Write the predicted-vs-measured chart (SVG) to this file.
    #[arg(long, value_name = "SVG")]
    pub plot: Option<PathBuf>,
    /// Energy instead of latency: the power model's W/GPU and J/output token against the rows
    /// with measured power (InferenceX `avg_power_w`, `joules_per_output_token`), per GPU
    /// (with --rows every row; with --json the whole comparison).
    #[arg(long)]
    pub energy: bool,
}

/// Runs `servebench sim validate`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let rows = read_rows(&args.against)?;
    if args.energy {
        return energy(&args, &rows);
    }
    let t = Instant::now();
    let v = validate(&rows, None);
    let secs = t.elapsed().as_secs_f64();
    if let Some(p) = &args.plot {
        let svg = servebench_sim::validate_plot::svg(&v).map_err(anyhow::Error::msg)?;
        std::fs::write(p, svg).map_err(|e| anyhow::anyhow!("{}: {e}", p.display()))?;
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(ExitCode::SUCCESS);
    }
    if args.rows {
        println!(
            "{:>6} {:<7} {:<6} {:<5} {:<11} {:>4} {:>10} {:>10} {:>9} {:>9} {:>9} {:>9}",
            "row",
            "gpu",
            "fw",
            "prec",
            "tp/ep/dpa",
            "conc",
            "tok/s/GPU",
            "(meas)",
            "TPOT ms",
            "(meas)",
            "TTFT ms",
            "(meas)"
        );
        for r in &v.rows {
            println!(
                "{:>6} {:<7} {:<6} {:<5} {:<11} {:>4} {:>10.1} {:>10.1} {:>9.2} {:>9.2} {:>9.1} {:>9.1}  {}",
                r.row_id,
                r.hardware,
                r.framework,
                r.precision,
                format!("{}/{}/{}", r.tp, r.ep, if r.dp_attention { "y" } else { "n" }),
                r.conc,
                r.predicted.output_tput_per_gpu,
                r.measured.output_tput_per_gpu,
                r.predicted.median_tpot_s * 1e3,
                r.measured.median_tpot_s * 1e3,
                r.predicted.median_ttft_s * 1e3,
                r.measured.median_ttft_s * 1e3,
                r.isl_osl
            );
        }
        println!();
    }
    print!("{}", table(&v));
    println!("\nnewest month per hardware: median |error| % on it (on all months)");
    print!("{}", newest_month_table(&v));
    if args.by_date {
        println!("\nper software generation (month of the row's date × framework × image): median |error| % and median signed error %");
        print!("{}", generation_table(&v));
    }
    let skipped: usize = v.skipped.values().sum();
    println!(
        "{} rows modelled in {secs:.1} s, {skipped} not modelled (--json lists why); fitted on {}, the rest is the test set",
        v.rows.len(),
        v.fit.join(", ")
    );
    Ok(ExitCode::SUCCESS)
}

/// `sim validate --energy`: the power model against the rows with measured power.
fn energy(args: &Args, rows: &[servebench_sim::validate::RealRow]) -> anyhow::Result<ExitCode> {
    use servebench_sim::validate_energy as ve;
    let power = ve::read_measured_power(&args.against)?;
    let v = ve::validate_energy(rows, &power);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(ExitCode::SUCCESS);
    }
    if args.rows {
        print!("{}", ve::energy_rows_table(&v));
        println!();
    }
    print!("{}", ve::energy_table(&v));
    let skipped: Vec<String> = v.skipped.iter().map(|(k, n)| format!("{n} {k}")).collect();
    println!(
        "{} of {} rows with measured power modelled (modelled − measured, %); not modelled: {}",
        v.rows.len(),
        power.len(),
        if skipped.is_empty() {
            "none".into()
        } else {
            skipped.join("; ")
        }
    );
    Ok(ExitCode::SUCCESS)
}
