//! What a sweep's check of the capacity model found, as `report.json`
//! keeps it: the model fitted from the trials below half the breaking
//! point (as a calibration would take them) predicted a breaking point and
//! a range; the sweep measured one. Owns the type and its words; must not
//! fit anything (`experiment::model_check` does).

use serde::{Deserialize, Serialize};

/// A prediction off by more than this share of the measured breaking
/// point says which stage the model had wrong.
pub const OFF_BY: f64 = 0.2;

/// One stage of the model at the failing rate, against what the sweep
/// measured there, in the same unit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StageCompare {
    pub stage: String,
    /// What is compared (`"p99 ms"`, `"busy share"`, `"fsync mean ms"`).
    pub what: String,
    pub predicted: f64,
    pub measured: Option<f64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModelCheck {
    /// The trials the model was fitted from: how many, the highest rate.
    pub trials: usize,
    pub up_to: Option<f64>,
    /// The model's answer and its range (`None`: no answer, see
    /// `host_moved` or `unchecked`).
    pub predicted: Option<f64>,
    pub low: Option<f64>,
    pub high: Option<f64>,
    pub measured: Option<f64>,
    /// (predicted − measured) / measured.
    pub error: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_moved: Option<String>,
    /// Why the sweep could not check the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unchecked: Option<String>,
    /// At the failing rate, stage by stage, when the error is beyond
    /// `OFF_BY`; the stage the model had most wrong first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stages: Vec<StageCompare>,
    /// The failing rate those stages were compared at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_rate: Option<f64>,
}

/// A rate in words: whole, its thousands grouped.
fn num(v: f64) -> String {
    crate::units::group(v.max(0.0).round() as u64)
}

impl ModelCheck {
    /// Whether the measured point lies in the stated range.
    pub fn in_range(&self) -> Option<bool> {
        let (lo, hi, m) = (self.low?, self.high?, self.measured?);
        Some(lo <= m && m <= hi)
    }

    /// The summary's sentence.
    pub fn words(&self) -> String {
        if let Some(why) = &self.unchecked {
            return format!("The model could not check itself: {why}.");
        }
        let up_to = self.up_to.map(num).unwrap_or_default();
        let measured = self.measured.map(num).unwrap_or_else(|| "none".into());
        let mut s = match (self.predicted, &self.host_moved) {
            (_, Some(why)) => format!(
                "The model, from the trials up to {up_to} req/s, gives no prediction: {why}; measured {measured}."
            ),
            (None, None) => format!(
                "The model, from the trials up to {up_to} req/s, predicted no rate that meets the SLO; measured {measured}."
            ),
            (Some(p), None) => format!(
                "The model, from the trials up to {up_to} req/s, predicted {} ({}); measured {measured} ({:+.0} %).",
                num(p),
                match (self.low, self.high) {
                    (Some(lo), Some(hi)) if hi - lo >= 0.5 => format!("{}–{}", num(lo), num(hi)),
                    _ => "no range: one trial's model".into(),
                },
                self.error.unwrap_or(0.0) * 100.0
            ),
        };
        if let (Some(w), Some(r)) = (self.stages.first(), self.at_rate) {
            s.push_str(&format!(
                " At {} req/s it had {} wrong most: {} {} predicted, {} measured.",
                num(r),
                w.stage,
                w.what,
                crate::units::fmt_num(w.predicted),
                w.measured
                    .map(crate::units::fmt_num)
                    .unwrap_or_else(|| "not".into())
            ));
        }
        s
    }
}
