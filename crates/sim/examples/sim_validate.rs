//! Runs the validation against rows.csv (and, with `fit`, fits the DeepSeek-R1 efficiency
//! factors on the H200 rows first), printing the table and timing:
//!
//! ```text
//! cargo run --release -p servebench-sim --example sim_validate -- ../shared/data/real-results/rows.csv [fit] [--plot FILE.svg]
//! ```

use std::time::Instant;

use servebench_sim::validate::{fit, read_rows, table, validate};

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let rows = read_rows(std::path::Path::new(&a[1])).unwrap();
    let t = Instant::now();
    let cal = if a.get(2).map(String::as_str) == Some("fit") {
        let (c, o) = fit(&rows);
        println!(
            "fit: {c:?} objective {o:.2} % ({:.1} s)",
            t.elapsed().as_secs_f64()
        );
        Some(c)
    } else {
        None
    };
    let t = Instant::now();
    let v = validate(&rows, cal.as_ref());
    println!("{}", table(&v));
    println!("skipped: {:?}", v.skipped);
    if let Some(i) = a.iter().position(|x| x == "--plot") {
        let svg = servebench_sim::validate_plot::svg(&v).unwrap();
        std::fs::write(&a[i + 1], svg).unwrap();
    }
    println!(
        "validation: {} rows in {:.2} s",
        v.rows.len(),
        t.elapsed().as_secs_f64()
    );
}
