//! `perf-changelog.yaml`: entries, the append-only rules, the sweep matrix of a change, and
//! byte-safe appends (AUTOMATION.md §3).
//!
//! Modules, in data-flow order:
//! * [`diff`] — the added lines of a change, from git's own diff (`git diff BASE HEAD -- FILE`,
//!   as `utils/process_changelog.py` runs it; `git diff --no-index` for two files);
//! * [`entry`] — one entry (`ChangelogEntry`) and the added YAML text read as entries;
//! * [`process`] — InferenceX `utils/process_changelog.py`: reject deleted lines, parse the
//!   added entries, resolve keys (`*` globs), run the generator per entry (`test-config
//!   --no-evals` for throughput, `--evals-only [--all-evals]` for evals), trim, fingerprint,
//!   bucket;
//! * [`append_only`] — `append-only: true` entries: the scope check and the added points;
//! * [`output`] — the processor's output ([`ChangelogMatrix`]) as pydantic-ordered JSON text;
//! * [`validate`] — what InferenceX's gate `utils/validate_perf_changelog.py` accepts (final
//!   newline, the processor succeeds) and, with `strict`, its stricter file rules F-1…F-3 and
//!   `git diff --check`;
//! * [`append`] — appends one entry at the tail without touching any historical byte.

pub mod append;
pub mod append_only;
pub mod diff;
pub mod entry;
pub mod output;
pub mod process;
pub mod validate;

pub use append::{append_entry, render_entry, yaml_double_quoted, NewEntry};
pub use append_only::{append_only_delta, validate_append_only_scope};
pub use diff::{added_lines, added_text, added_text_files, added_text_git, diff_check};
pub use entry::{parse_added_entries, ChangelogEntry, NonEmptyList, ScenarioLit};
pub use output::ChangelogMatrix;
pub use process::{
    filter_eval_rows_by_prefill_ep, process, process_added, process_with_base, resolve_keys,
    trim_conc, ProcessOptions,
};
pub use validate::{
    compare_entries, parse_changelog, validate, validate_raw_change, Validated, CANONICAL_PR_LINK,
};
