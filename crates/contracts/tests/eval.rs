//! Eval rows keep their bytes with the typed [`EvalRow`]: store rows written before the row
//! moved into contracts (the eval row plus the stage's keys, built as a JSON value) read back
//! and write out identically: the stage's keys (the gate, image, target, identity defaults)
//! read into their typed fields, unknown keys kept in [`EvalRow::extra`] in order.

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
    assert!(sim.extra.is_empty(), "{:?}", sim.extra);
    assert!(sim.threshold.is_some() && sim.threshold_source.is_some());
    assert!(sim.passed.is_some() && sim.target.is_some());
    assert_eq!(sim.image, None);
    assert!(!sim
        .identity_defaults
        .as_deref()
        .unwrap_or_default()
        .is_empty());
    // endpoint run inside a sweep: image, no identity defaults
    let ep = &rows[1];
    assert_eq!(ep.spec_decoding.as_deref(), Some("mtp"));
    assert_eq!(ep.image.as_deref(), Some("lmsysorg/sglang:v0.5.20-cu130"));
    assert_eq!(ep.passed, Some(false));
    assert_eq!(ep.identity_defaults, None);
    assert!(ep.extra.is_empty(), "{:?}", ep.extra);
}

#[test]
fn a_row_without_extra_keys_writes_only_the_known_fields_and_set_extra_keeps_place() {
    let mut row: EvalRow = serde_json::from_str(ROWS.lines().next().unwrap()).unwrap();
    row.extra.clear();
    (row.threshold, row.threshold_source, row.passed, row.target) = (None, None, None, None);
    row.identity_defaults = None;
    let v = row.to_value();
    let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
    assert_eq!(keys.first().unwrap().as_str(), "is_multinode");
    assert_eq!(keys.last().unwrap().as_str(), "score_se");
    assert_eq!(keys.len(), 31);
    row.set_extra("newer_b", serde_json::json!(true));
    row.set_extra("newer_a", serde_json::json!("a"));
    row.set_extra("newer_b", serde_json::json!(false));
    let keys: Vec<&str> = row.extra.keys().map(String::as_str).collect();
    assert_eq!(keys, ["newer_b", "newer_a"]);
    assert_eq!(row.extra["newer_b"], false);
    // the typed gate keys are written after the known fields, before a newer writer's keys
    row.passed = Some(true);
    row.image = Some("img".into());
    let v = row.to_value();
    let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
    let tail: Vec<&str> = keys[31..].iter().map(|k| k.as_str()).collect();
    assert_eq!(tail, ["passed", "image", "newer_b", "newer_a"]);
    // read back, every key lands where it came from
    let back: EvalRow = serde_json::from_value(v).unwrap();
    assert_eq!(back, row);
}

/// `fill_identity` fills only the identity keys a row left null, from the one identity
/// (`hw` upper-case, the model prefix under `model_prefix`), names them in the row's order, and
/// leaves the eval's own lengths alone.
#[test]
fn fill_identity_fills_only_the_unknown_keys_from_the_one_identity() {
    let id = servebench_contracts::Identity {
        isl: Some(1024),
        osl: Some(1024),
        ..servebench_contracts::Identity::single_node(
            "sim-h200",
            "servebench-sim",
            "m",
            "qwen3",
            "sim",
            "bf16",
        )
    };
    let mut row: EvalRow = serde_json::from_value(serde_json::json!({
        "is_multinode": false, "model_prefix": null, "model": "m", "hw": null,
        "framework": "vllm", "precision": null, "spec_decoding": null, "isl": null,
        "osl": null, "tp": 8, "ep": null, "prefill_tp": null, "prefill_ep": null,
        "prefill_num_workers": null, "decode_tp": null, "decode_ep": null,
        "decode_num_workers": null, "conc": 4, "dp_attention": null,
        "prefill_dp_attention": null, "decode_dp_attention": null, "task": "gsm8k",
        "em_strict": 0.5, "em_strict_se": null, "em_flexible": 0.5, "em_flexible_se": null,
        "n_eff": 2, "source": "result.json", "score": 0.5, "score_name": "em_strict",
        "score_se": null
    }))
    .unwrap();
    let filled = row.fill_identity(&id);
    assert_eq!(
        filled,
        [
            "hw",
            "precision",
            "model_prefix",
            "spec_decoding",
            "ep",
            "dp_attention"
        ]
    );
    assert_eq!(row.hw.as_deref(), Some("SIM-H200"));
    assert_eq!(
        row.framework.as_deref(),
        Some("vllm"),
        "a given key is kept"
    );
    assert_eq!(row.tp, Some(8));
    assert_eq!(
        (row.isl, row.osl),
        (None, None),
        "the eval's lengths are its own"
    );
    assert!(row.fill_identity(&id).is_empty(), "nothing left to fill");
}
