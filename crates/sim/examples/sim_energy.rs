//! The power model against the rows of rows.csv with measured power, as `servebench sim
//! validate --energy --rows` prints it (per-row table, per-GPU table by split, the fit on the
//! training split beside presets.json), without building the CLI; `--json` prints every row
//! with its power profile instead:
//!
//! ```text
//! cargo run -p servebench-sim --example sim_energy -- ../shared/data/real-results/rows.csv [--json]
//! ```

use servebench_sim::validate::read_rows;
use servebench_sim::validate_energy::{
    energy_rows_table, energy_table, read_measured_power, validate_energy,
};

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let p = std::path::Path::new(&a[1]);
    let rows = read_rows(p).unwrap();
    let power = read_measured_power(p).unwrap();
    let v = validate_energy(&rows, &power);
    if a.iter().any(|x| x == "--json") {
        println!("{}", serde_json::to_string_pretty(&v).unwrap());
        return;
    }
    println!("{}", energy_rows_table(&v));
    print!("{}", energy_table(&v));
    println!("skipped: {:?}", v.skipped);
}
