//! Eval rows keep their bytes with the typed [`EvalRow`]: store rows written before the row
//! moved into contracts (the eval row plus the stage's keys, built as a JSON value) read back
//! and write out identically, the stage's keys kept in [`EvalRow::extra`] in order.

use servebench_contracts::EvalRow;

const ROWS: &str = include_str!("data/eval-rows.jsonl");

#[test]
fn stored_eval_rows_round_trip_byte_for_byte_with_their_extra_keys_in_order() {
    let rows: Vec<EvalRow> = ROWS
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for (row, line) in rows.iter().zip(ROWS.lines()) {
        assert_eq!(serde_json::to_string(row).unwrap(), line);
        assert_eq!(serde_json::to_string(&row.to_value()).unwrap(), line);
    }
    // simulator run: identity defaults filled by `servebench eval`
    let sim = &rows[0];
    assert_eq!(sim.hw.as_deref(), Some("sim-h200"));
    assert_eq!((sim.n_eff, sim.conc, sim.score), (10, 16, Some(0.5)));
    let keys: Vec<&str> = sim.extra.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "threshold",
            "threshold_source",
            "passed",
            "target",
            "identity_defaults"
        ]
    );
    // endpoint run inside a sweep: image, no identity defaults
    let ep = &rows[1];
    assert_eq!(ep.spec_decoding.as_deref(), Some("mtp"));
    assert_eq!(ep.extra["image"], "lmsysorg/sglang:v0.5.20-cu130");
    assert_eq!(ep.extra["passed"], false);
}

#[test]
fn a_row_without_extra_keys_writes_only_the_known_fields_and_set_extra_keeps_place() {
    let mut row: EvalRow = serde_json::from_str(ROWS.lines().next().unwrap()).unwrap();
    row.extra.clear();
    let v = row.to_value();
    let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
    assert_eq!(keys.first().unwrap().as_str(), "is_multinode");
    assert_eq!(keys.last().unwrap().as_str(), "score_se");
    assert_eq!(keys.len(), 31);
    row.set_extra("passed", serde_json::json!(true));
    row.set_extra("image", serde_json::json!("a"));
    row.set_extra("passed", serde_json::json!(false));
    let keys: Vec<&str> = row.extra.keys().map(String::as_str).collect();
    assert_eq!(keys, ["passed", "image"]);
    assert_eq!(row.extra["passed"], false);
}
