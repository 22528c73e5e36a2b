//! Plausibility remarks (issue 22 item 5): a hook the binary sets to a check that knows the
//! simulator's presets (this crate does not know how numbers are modelled or measured). When
//! set, every candidate row of a comparison and every row of a run report gets the check's
//! line as a `plausibility` remark: the predicted values beside the measured ones, and
//! `implausible: 3.1× the predicted median TPOT … — check the engine config` when a
//! measurement is off by more than the validation's p90 error.

use std::sync::OnceLock;

use crate::model::RowRemark;

/// A check of one point: `Some((english, chinese))` when the identity has a model, else `None`.
pub type Check = fn(&servebench_compare::Point) -> Option<(String, String)>;

static CHECK: OnceLock<Check> = OnceLock::new();

/// Installs the check (first call wins; later calls are ignored).
pub fn set_check(check: Check) {
    let _ = CHECK.set(check);
}

/// The `plausibility` remark for `p`, when a check is installed and it has something to say.
pub(crate) fn remark(p: &servebench_compare::Point) -> Option<RowRemark> {
    let (en, zh) = (CHECK.get()?)(p)?;
    Some(RowRemark {
        kind: "plausibility".into(),
        en,
        zh,
    })
}
