//! Export to T4, the autotuning community's results format (schema 1.0.0, as written by Kernel
//! Tuner), so other tools can read our measurements.
//!
//! Every time is in microseconds (`metadata.timeunit`). `times.runtimes` holds the median of
//! each problem, and the `time` measurement is their sum: the objective cutune minimises.

use serde_json::{json, Map, Value};

use super::codec::objective_us;
use super::{counts_as_correct, Evaluation, ResultKey};
use crate::gpu::{FailureKind, Outcome, Verdict};

pub(crate) const SCHEMA_VERSION: &str = "1.0.0";

pub(crate) fn document(key: &ResultKey, evaluations: &[Evaluation]) -> Value {
    json!({
        "schema_version": SCHEMA_VERSION,
        "metadata": {
            "timeunit": "microseconds",
            "generator": concat!("cutune ", env!("CARGO_PKG_VERSION")),
            "kernel": key.kernel,
            "source_sha256": key.source_sha256,
            "problems_sha256": key.problems_sha256,
            "device": key.device,
            "nvrtc": key.nvrtc,
        },
        "results": evaluations.iter().map(result).collect::<Vec<_>>(),
    })
}

fn result(evaluation: &Evaluation) -> Value {
    let configuration: Map<String, Value> = evaluation.config.0.iter().map(|(name, value)| (name.clone(), Value::from(*value))).collect();
    let runtimes: Vec<f64> = match &evaluation.outcome {
        Outcome::Measured { timings, .. } => timings.iter().map(|t| t.median_us).collect(),
        Outcome::Failed { .. } => Vec::new(),
    };
    let correct = counts_as_correct(evaluation);
    // Kernel Tuner's placeholder values for failed configurations, which T4 readers expect.
    let measurements = match (&evaluation.outcome, objective_us(&evaluation.outcome)) {
        (Outcome::Failed { kind: FailureKind::Infeasible, .. }, _) => vec![time_measurement(json!("InvalidConfig"))],
        (Outcome::Failed { kind: FailureKind::Compile, .. }, _) => vec![time_measurement(json!("CompilationFailedConfig"))],
        (Outcome::Failed { .. }, _) => vec![time_measurement(json!("RuntimeFailedConfig"))],
        (Outcome::Measured { .. }, Some(objective)) => vec![time_measurement(json!(objective))],
        (Outcome::Measured { .. }, None) => Vec::new(),
    };
    json!({
        "timestamp": utc_timestamp(evaluation.measured_at),
        "configuration": configuration,
        "times": {
            "compilation": evaluation.compile_ms * 1000.0,
            "runtimes": runtimes,
            "framework": 0,
            "search_algorithm": 0,
            "validation": 0,
        },
        "invalidity": invalidity(&evaluation.outcome, correct),
        "correctness": if correct { 1 } else { 0 },
        "measurements": measurements,
        "objectives": ["time"],
    })
}

fn time_measurement(value: Value) -> Value {
    json!({ "name": "time", "value": value, "unit": "us" })
}

/// T4's reasons. A measured candidate that is not shown correct (a mismatch, or a live
/// measurement that was not checked) counts as a correctness failure.
fn invalidity(outcome: &Outcome, correct: bool) -> &'static str {
    match outcome {
        Outcome::Failed { kind: FailureKind::Infeasible, .. } => "constraints",
        Outcome::Failed { kind: FailureKind::Compile, .. } => "compile",
        Outcome::Failed { kind: FailureKind::Timeout, .. } => "timeout",
        Outcome::Failed { kind: FailureKind::Launch | FailureKind::Fault | FailureKind::Worker, .. } => "runtime",
        Outcome::Measured { verdict: Verdict::Pass { .. } | Verdict::Unchecked, .. } if correct => "correct",
        Outcome::Measured { .. } => "correctness",
    }
}

/// Seconds since the Unix epoch as RFC 3339 in UTC, e.g. `2026-11-21T09:54:05Z`.
fn utc_timestamp(seconds: i64) -> String {
    let days = seconds.div_euclid(86_400);
    let second_of_day = seconds.rem_euclid(86_400);
    let (year, month, day) = civil_from_days(days);
    format!("{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z", second_of_day / 3600, second_of_day % 3600 / 60, second_of_day % 60)
}

/// The proleptic Gregorian date `days` after 1970-01-01 (Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * month_index + 2) / 5 + 1) as u32;
    let month = if month_index < 10 { month_index + 3 } else { month_index - 9 } as u32;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_utc_dates() {
        assert_eq!(utc_timestamp(0), "1970-01-01T00:00:00Z");
        assert_eq!(utc_timestamp(951_827_696), "2000-02-29T12:34:56Z");
        assert_eq!(utc_timestamp(1_703_238_845), "2023-12-22T09:54:05Z");
        assert_eq!(utc_timestamp(-1), "1969-12-31T23:59:59Z");
    }

    #[test]
    fn failure_kinds_map_to_t4_reasons() {
        let failed = |kind| Outcome::Failed { kind, message: String::new() };
        let reasons: Vec<&str> = crate::store::codec::FAILURE_KINDS.iter().map(|k| invalidity(&failed(*k), false)).collect();
        assert_eq!(reasons, ["constraints", "compile", "runtime", "runtime", "timeout", "runtime"]);
    }
}
