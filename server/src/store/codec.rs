//! How evaluations become columns and back.
//!
//! Structured values are JSON text, so that `sqlite3` and `json_extract` can read them. Floats
//! that JSON cannot hold (a NaN output, an infinite relative error) are written as the strings
//! `"NaN"`, `"inf"` and `"-inf"`: serde_json would turn them into `null` and lose them.

use serde::de::{Deserializer as _, MapAccess, Visitor};
use serde_json::{json, Map, Value};

use crate::gpu::{FailureKind, Outcome, RunnerSource, Timing, Verdict};
use crate::space::Configuration;

/// Every failure kind, for reading their names back.
pub(crate) const FAILURE_KINDS: [FailureKind; 6] =
    [FailureKind::Infeasible, FailureKind::Compile, FailureKind::Launch, FailureKind::Fault, FailureKind::Timeout, FailureKind::Worker];

/// The same names as `FailureKind`'s serde form, which the protocol and files use.
pub(crate) fn failure_name(kind: FailureKind) -> &'static str {
    match kind {
        FailureKind::Infeasible => "infeasible",
        FailureKind::Compile => "compile",
        FailureKind::Launch => "launch",
        FailureKind::Fault => "fault",
        FailureKind::Timeout => "timeout",
        FailureKind::Worker => "worker",
    }
}

fn failure_from_name(name: &str) -> Result<FailureKind, String> {
    FAILURE_KINDS.into_iter().find(|k| failure_name(*k) == name).ok_or_else(|| format!("unknown failure kind `{name}`"))
}

/// The `status` column: `pass`, `mismatch`, `unchecked`, or the failure kind.
pub(crate) fn status(outcome: &Outcome) -> &'static str {
    match outcome {
        Outcome::Measured { verdict: Verdict::Pass { .. }, .. } => "pass",
        Outcome::Measured { verdict: Verdict::Mismatch { .. }, .. } => "mismatch",
        Outcome::Measured { verdict: Verdict::OutOfBounds { .. }, .. } => "out_of_bounds",
        Outcome::Measured { verdict: Verdict::Unchecked, .. } => "unchecked",
        Outcome::Failed { kind, .. } => failure_name(*kind),
    }
}

/// The `source_kind` and `replay_from` columns.
pub(crate) fn source_columns(source: &RunnerSource) -> (&'static str, Option<&str>) {
    match source {
        RunnerSource::Device => ("device", None),
        RunnerSource::Replay { from } => ("replay", Some(from)),
    }
}

pub(crate) fn source_from_columns(kind: &str, from: Option<String>) -> Result<RunnerSource, String> {
    match (kind, from) {
        ("device", _) => Ok(RunnerSource::Device),
        ("replay", Some(from)) => Ok(RunnerSource::Replay { from }),
        (kind, _) => Err(format!("runner source `{kind}` without a file, or unknown")),
    }
}

/// `{"BLOCK":256,"VEC":4}` in the configuration's own parameter order. Configurations are equal
/// exactly when their texts are, which the unique index relies on.
pub(crate) fn configuration_text(config: &Configuration) -> String {
    let entries: Vec<String> = config.0.iter().map(|(name, value)| format!("{}:{value}", Value::from(name.as_str()))).collect();
    format!("{{{}}}", entries.join(","))
}

/// Reads [`configuration_text`] back, keeping the order (serde_json's `Map` would sort it).
pub(crate) fn configuration_from_text(text: &str) -> Result<Configuration, String> {
    struct Entries;
    impl<'de> Visitor<'de> for Entries {
        type Value = Configuration;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("an object of parameter names to integers")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Configuration, A::Error> {
            let mut entries = Vec::new();
            while let Some(entry) = map.next_entry::<String, i64>()? {
                entries.push(entry);
            }
            Ok(Configuration(entries))
        }
    }
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let config = deserializer.deserialize_map(Entries).map_err(|e| format!("configuration {text}: {e}"))?;
    deserializer.end().map_err(|e| format!("configuration {text}: {e}"))?;
    Ok(config)
}

/// Sum of the per-problem medians: what the search minimises. `None` without a measurement.
pub(crate) fn objective_us(outcome: &Outcome) -> Option<f64> {
    match outcome {
        Outcome::Measured { timings, .. } if !timings.is_empty() => Some(timings.iter().map(|t| t.median_us).sum()),
        _ => None,
    }
}

pub(crate) fn timings_json(timings: &[Timing]) -> Value {
    timings
        .iter()
        .map(|t| {
            json!({
                "median_us": float_json(t.median_us),
                "min_us": float_json(t.min_us),
                "max_us": float_json(t.max_us),
                "spread": float_json(t.spread),
                "runs": t.runs,
            })
        })
        .collect()
}

pub(crate) fn timings_from_json(value: &Value) -> Result<Vec<Timing>, String> {
    let items = value.as_array().ok_or("timings are not a list")?;
    items
        .iter()
        .map(|item| {
            let fields = Fields::of(item, "timing")?;
            Ok(Timing {
                median_us: fields.float("median_us")?,
                min_us: fields.float("min_us")?,
                max_us: fields.float("max_us")?,
                spread: fields.float("spread")?,
                runs: u32::try_from(fields.unsigned("runs")?).map_err(|_| "timing runs out of range".to_string())?,
            })
        })
        .collect()
}

/// The same shape as `Verdict`'s serde form, with non-finite floats kept.
pub(crate) fn verdict_json(verdict: &Verdict) -> Value {
    match verdict {
        Verdict::Pass { max_abs_error, max_rel_error } => json!({
            "status": "pass",
            "max_abs_error": float_json(*max_abs_error),
            "max_rel_error": float_json(*max_rel_error),
        }),
        Verdict::Mismatch { problem, arg, index, expected, actual, mismatches, max_abs_error, max_rel_error, unwritten, not_finite } => json!({
            "status": "mismatch",
            "problem": problem,
            "arg": arg,
            "index": index,
            "expected": float_json(*expected),
            "actual": float_json(*actual),
            "mismatches": mismatches,
            "max_abs_error": float_json(*max_abs_error),
            "max_rel_error": float_json(*max_rel_error),
            "unwritten": unwritten,
            "not_finite": not_finite,
        }),
        Verdict::OutOfBounds { problem, arg, bytes, first_offset } => json!({
            "status": "out_of_bounds",
            "problem": problem,
            "arg": arg,
            "bytes": bytes,
            "first_offset": first_offset,
        }),
        Verdict::Unchecked => json!({ "status": "unchecked" }),
    }
}

pub(crate) fn verdict_from_json(value: &Value) -> Result<Verdict, String> {
    let fields = Fields::of(value, "verdict")?;
    match fields.text("status")? {
        "pass" => Ok(Verdict::Pass { max_abs_error: fields.float("max_abs_error")?, max_rel_error: fields.float("max_rel_error")? }),
        "mismatch" => Ok(Verdict::Mismatch {
            problem: usize::try_from(fields.unsigned("problem")?).map_err(|_| "verdict problem out of range".to_string())?,
            arg: fields.text("arg")?.to_string(),
            index: fields.unsigned("index")?,
            expected: fields.float("expected")?,
            actual: fields.float("actual")?,
            mismatches: fields.unsigned("mismatches")?,
            max_abs_error: fields.float("max_abs_error")?,
            max_rel_error: fields.float("max_rel_error")?,
            // Absent in rows stored before they were counted.
            unwritten: fields.unsigned("unwritten").unwrap_or(0),
            not_finite: fields.unsigned("not_finite").unwrap_or(0),
        }),
        "out_of_bounds" => Ok(Verdict::OutOfBounds {
            problem: usize::try_from(fields.unsigned("problem")?).map_err(|_| "verdict problem out of range".to_string())?,
            arg: fields.text("arg")?.to_string(),
            bytes: fields.unsigned("bytes")?,
            first_offset: fields.unsigned("first_offset")?,
        }),
        "unchecked" => Ok(Verdict::Unchecked),
        other => Err(format!("unknown verdict status `{other}`")),
    }
}

/// The columns of an evaluation's outcome, read back.
pub(crate) struct OutcomeColumns {
    pub outcome: String,
    pub failure_kind: Option<String>,
    pub message: Option<String>,
    pub timings: Option<String>,
    pub verdict: Option<String>,
}

impl OutcomeColumns {
    pub(crate) fn decode(self) -> Result<Outcome, String> {
        match self.outcome.as_str() {
            "measured" => {
                let timings = parse_json(self.timings.as_deref(), "timings")?;
                let verdict = parse_json(self.verdict.as_deref(), "verdict")?;
                Ok(Outcome::Measured { timings: timings_from_json(&timings)?, verdict: verdict_from_json(&verdict)? })
            }
            "failed" => {
                let kind = self.failure_kind.ok_or("a failure without its kind")?;
                Ok(Outcome::Failed { kind: failure_from_name(&kind)?, message: self.message.unwrap_or_default() })
            }
            other => Err(format!("unknown outcome `{other}`")),
        }
    }
}

fn parse_json(text: Option<&str>, what: &str) -> Result<Value, String> {
    let text = text.ok_or_else(|| format!("{what} missing"))?;
    serde_json::from_str(text).map_err(|e| format!("{what}: {e}"))
}

fn float_json(value: f64) -> Value {
    if value.is_finite() {
        Value::from(value)
    } else if value.is_nan() {
        Value::from("NaN")
    } else if value > 0.0 {
        Value::from("inf")
    } else {
        Value::from("-inf")
    }
}

/// The named fields of a JSON object, with errors that say which field was wrong.
struct Fields<'v> {
    object: &'v Map<String, Value>,
    what: &'static str,
}

impl<'v> Fields<'v> {
    fn of(value: &'v Value, what: &'static str) -> Result<Fields<'v>, String> {
        value.as_object().map(|object| Fields { object, what }).ok_or_else(|| format!("{what} is not an object"))
    }

    fn get(&self, name: &str) -> Result<&'v Value, String> {
        self.object.get(name).ok_or_else(|| format!("{} has no `{name}`", self.what))
    }

    fn float(&self, name: &str) -> Result<f64, String> {
        match self.get(name)? {
            Value::Number(n) => n.as_f64(),
            Value::String(s) if s == "NaN" => Some(f64::NAN),
            Value::String(s) if s == "inf" => Some(f64::INFINITY),
            Value::String(s) if s == "-inf" => Some(f64::NEG_INFINITY),
            _ => None,
        }
        .ok_or_else(|| format!("{} `{name}` is not a number", self.what))
    }

    fn unsigned(&self, name: &str) -> Result<u64, String> {
        self.get(name)?.as_u64().ok_or_else(|| format!("{} `{name}` is not a non-negative integer", self.what))
    }

    fn text(&self, name: &str) -> Result<&'v str, String> {
        self.get(name)?.as_str().ok_or_else(|| format!("{} `{name}` is not text", self.what))
    }
}
