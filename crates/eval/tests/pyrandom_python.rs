//! `servebench_eval::pyrandom` against CPython itself: the same seeds, the same sequence of
//! `sample` calls (both of CPython's code paths), `getrandbits`, and the exact few-shot
//! indices lm-eval draws for all 1,319 GSM8K test documents (seed 1234, pool 7,473, k 5).

mod common;

use std::process::Command;

use servebench_eval::pyrandom::PyRandom;

fn python(code: &str) -> Option<String> {
    let py = common::python3()?;
    let out = Command::new(py)
        .arg("-c")
        .arg(code)
        .output()
        .expect("run python3");
    assert!(
        out.status.success(),
        "python failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8(out.stdout).unwrap())
}

#[test]
fn sample_sequences_match_cpython() {
    // (seed, population, k, calls): covers the set path (n > setsize), the pool path
    // (n ≤ setsize, incl. k > 5 where setsize grows), k = n, negative and multi-word seeds.
    let cases: &[(i64, usize, usize, usize)] = &[
        (1234, 7473, 5, 50),
        (1234, 7473, 6, 20),
        (0, 10, 10, 5),
        (42, 21, 5, 10),
        (42, 22, 5, 10),
        (-7, 100, 30, 10),
        (99, 84, 6, 10),
        (99, 86, 6, 10),
        (5_000_000_000, 1000, 17, 10),
        (i64::MAX, 3, 2, 10),
    ];
    let mut code = String::from("import random\n");
    for (seed, n, k, calls) in cases {
        code.push_str(&format!(
            "r = random.Random({seed})\nprint(';'.join(','.join(map(str, r.sample(range({n}), {k}))) for _ in range({calls})))\n"
        ));
    }
    let Some(out) = python(&code) else { return };
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), cases.len());
    for ((seed, n, k, calls), line) in cases.iter().zip(lines) {
        let mut r = PyRandom::new(*seed);
        let ours: Vec<String> = (0..*calls)
            .map(|_| {
                r.sample_indices(*n, *k)
                    .unwrap()
                    .iter()
                    .map(|x| x.to_string())
                    .collect::<Vec<_>>()
                    .join(",")
            })
            .collect();
        assert_eq!(ours.join(";"), line, "seed {seed} n {n} k {k}");
    }
}

#[test]
fn getrandbits_and_randbelow_match_cpython() {
    let Some(out) = python(
        "import random\nr = random.Random(1234)\nprint(','.join(str(r.getrandbits(k)) for k in [1, 7, 13, 31, 32] * 20))\nr = random.Random(77)\nprint(','.join(str(r._randbelow(n)) for n in [1, 2, 3, 1000, 7473, 2**31 + 5] * 20))",
    ) else {
        return;
    };
    let mut lines = out.lines();
    let mut r = PyRandom::new(1234);
    let ours: Vec<String> = [1, 7, 13, 31, 32]
        .repeat(20)
        .into_iter()
        .map(|k| r.getrandbits(k).to_string())
        .collect();
    assert_eq!(ours.join(","), lines.next().unwrap());
    let mut r = PyRandom::new(77);
    let ours: Vec<String> = [1usize, 2, 3, 1000, 7473, (1 << 31) + 5]
        .repeat(20)
        .into_iter()
        .map(|n| r.randbelow(n).to_string())
        .collect();
    assert_eq!(ours.join(","), lines.next().unwrap());
}

#[test]
fn gsm8k_fewshot_indices_for_every_test_doc_match_cpython() {
    let Some(out) = python(
        "import random\nr = random.Random(1234)\nprint('\\n'.join(','.join(map(str, r.sample(range(7473), 5))) for _ in range(1319)))",
    ) else {
        return;
    };
    let mut r = PyRandom::new(1234);
    let mut n = 0;
    for (doc, line) in out.lines().enumerate() {
        let ours: Vec<String> = r
            .sample_indices(7473, 5)
            .unwrap()
            .iter()
            .map(|x| x.to_string())
            .collect();
        assert_eq!(ours.join(","), line, "doc {doc}");
        n += 1;
    }
    assert_eq!(n, 1319);
}
