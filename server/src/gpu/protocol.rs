//! What the tuner and its `cutune worker` child say to each other: newline-delimited JSON on
//! the child's stdin and stdout, one request answered by exactly one response, in order.
//! `docs/worker.md` describes the exchange for people writing or debugging a worker.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::{DeviceInfo, Kernel, MeasuredCeilings, Outcome, Problem, Timing};

/// Sent in [`Response::Ready`]; the client refuses a worker that answers with another, since
/// both sides must agree on every message's layout.
pub const PROTOCOL_VERSION: &str = "cutune-worker/1";

/// The tuner's side of the exchange.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "request", rename_all = "snake_case")]
pub enum Request {
    /// Opens the device. Answered by [`Response::Ready`] or [`Response::NoDevice`].
    Hello,
    /// Allocates and fills every problem's arguments, runs the baseline once per problem on
    /// them, keeps its outputs for comparison and times it. `harness` is the cubin of
    /// `gpu/harness.cu` for this device, whose kernels fill and compare the buffers. Answered
    /// by [`Response::Prepared`] or [`Response::Error`]. A second `Prepare` replaces the first.
    Prepare { problems: Vec<Problem>, baseline: Kernel, harness: PathBuf, timing: TimingPolicy },
    /// Checks one candidate against the baseline and times it. Answered by [`Response::Outcome`].
    /// `cutoff_us`, per problem (may be empty): when the first timed batch's median is above
    /// it, timing that problem stops there (see [`crate::gpu::Runner::set_cutoff`]).
    Measure {
        kernel: Kernel,
        timing: TimingPolicy,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        cutoff_us: Vec<f64>,
    },
    /// Checks a candidate against the baseline on problems of its own; the prepared problems
    /// stay. Answered by [`Response::Checked`].
    Check { check: super::CheckRequest },
    /// Runs the prepared baseline again with each in-out buffer's initial bytes changed in
    /// turn (see [`crate::gpu::Runner::settle_roles`]); the prepared problems and the
    /// baseline's outputs stay. Answered by [`Response::Settled`] or [`Response::Error`].
    SettleRoles { baseline: Kernel },
    /// Measures the device's ceilings with `cubin`, the kernels of `gpu/ceilings.cu` compiled
    /// for this device. Answered by [`Response::Ceilings`] or [`Response::Error`]. It
    /// allocates two large buffers for the copy (an eighth of the memory each, at most 1 GiB)
    /// and frees them before answering.
    Ceilings { cubin: PathBuf },
    /// Ends the worker; not answered.
    Shutdown,
}

/// The worker's side of the exchange.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "response", rename_all = "snake_case")]
pub enum Response {
    Ready { device: DeviceInfo, version: String },
    /// No usable CUDA driver or device; `message` says why and what still works.
    NoDevice { message: String },
    /// The baseline's timing on each problem, in problem order.
    Prepared { timings: Vec<Timing> },
    Outcome { outcome: Outcome },
    Checked { check: super::Check },
    Settled { roles: super::SettledRoles },
    /// The device's ceilings: copy bandwidth (bytes read plus written) in GB/s, the FP32 and
    /// FP16 (`half2`) FMA rates in TFLOPS, and the copy's times by size.
    Ceilings(MeasuredCeilings),
    /// A request that could not be carried out, e.g. the baseline faulted or a request came
    /// out of order. When the CUDA context was lost the worker exits right after sending it.
    Error { message: String },
}

/// How long and how often to time each launch. Every problem of a candidate is timed under it
/// separately; the watchdog's deadline is derived from it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TimingPolicy {
    /// Untimed launches after the correctness run (which is a warm-up too), so clocks and
    /// caches settle.
    pub warmup_runs: u32,
    /// Timed launches between two looks at the median.
    pub batch_runs: u32,
    /// Fewer timed runs are never reported, unless the time cap ends the timing first.
    pub min_runs: u32,
    pub max_runs: u32,
    /// Per problem: timing stops after the batch that crosses this many milliseconds.
    pub max_ms: u64,
    /// Timing stops once two consecutive batch medians differ by at most this fraction.
    pub stability: f64,
    /// Overwrite a buffer of twice the L2 size before every timed launch, so that each one
    /// starts with a cold cache as it would inside an application.
    pub flush_l2: bool,
}

impl Default for TimingPolicy {
    fn default() -> Self {
        TimingPolicy { warmup_runs: 1, batch_runs: 5, min_runs: 10, max_runs: 200, max_ms: 1000, stability: 0.005, flush_l2: true }
    }
}

impl TimingPolicy {
    /// Checks the numbers, in words a spec author understands.
    pub fn check(&self) -> Result<(), String> {
        if self.batch_runs == 0 || self.max_runs == 0 {
            return Err("timing needs at least one run per batch and one run in all (batch_runs, max_runs > 0)".into());
        }
        if self.min_runs > self.max_runs {
            return Err(format!("timing min_runs ({}) is above max_runs ({})", self.min_runs, self.max_runs));
        }
        if !(self.stability >= 0.0 && self.stability.is_finite()) {
            return Err(format!("timing stability must be a fraction ≥ 0, not {}", self.stability));
        }
        Ok(())
    }
}

/// Serde for floats that may be NaN or infinite, which JSON numbers cannot hold (serde_json
/// writes them as `null` and then refuses to read that back). A mismatch's actual value is
/// often NaN: outputs are poisoned with NaN, so an element the kernel never writes reads as
/// one. Finite values stay numbers; the others become the strings `NaN`, `inf` and `-inf`.
pub mod nonfinite {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(value: &f64, serializer: S) -> Result<S::Ok, S::Error> {
        match value {
            v if v.is_finite() => serializer.serialize_f64(*v),
            v if v.is_nan() => serializer.serialize_str("NaN"),
            v if *v > 0.0 => serializer.serialize_str("inf"),
            _ => serializer.serialize_str("-inf"),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<f64, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Float {
            Number(f64),
            Word(String),
        }
        match Float::deserialize(deserializer)? {
            Float::Number(v) => Ok(v),
            Float::Word(word) => match word.as_str() {
                "NaN" => Ok(f64::NAN),
                "inf" => Ok(f64::INFINITY),
                "-inf" => Ok(f64::NEG_INFINITY),
                _ => Err(serde::de::Error::custom(format!("expected a number, NaN, inf or -inf, not `{word}`"))),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::{LaunchDims, Module};

    #[test]
    fn requests_are_one_tagged_json_line() {
        let kernel = Kernel {
            module: Module { cubin: "/tmp/k.cubin".into(), function: "_Z1kPf".into() },
            launches: vec![LaunchDims { grid: [4, 1, 1], block: [256, 1, 1], shared_bytes: 0, cooperative: false }],
        };
        let request = Request::Measure { kernel, timing: TimingPolicy::default(), cutoff_us: vec![] };
        let line = serde_json::to_string(&request).unwrap();
        assert!(!line.contains('\n'));
        assert!(line.starts_with(r#"{"request":"measure","kernel":{"module":{"cubin":"/tmp/k.cubin""#), "{line}");
        assert_eq!(serde_json::from_str::<Request>(&line).unwrap(), request);
        assert_eq!(serde_json::to_string(&Request::Hello).unwrap(), r#"{"request":"hello"}"#);
    }

    #[test]
    fn mismatches_with_nan_and_infinity_survive_json() {
        use crate::gpu::{Outcome, Verdict};
        let verdict = Verdict::Mismatch {
            problem: 0,
            arg: "out".into(),
            index: 3,
            expected: 1.5,
            actual: f64::NAN,
            mismatches: 2,
            max_abs_error: f64::INFINITY,
            max_rel_error: f64::NEG_INFINITY,
            unwritten: 1,
            not_finite: 0,
        };
        let response = Response::Outcome { outcome: Outcome::Measured { timings: vec![], verdict } };
        let line = serde_json::to_string(&response).unwrap();
        assert!(line.contains(r#""expected":1.5,"actual":"NaN""#), "{line}");
        match serde_json::from_str::<Response>(&line).unwrap() {
            Response::Outcome { outcome: Outcome::Measured { verdict: Verdict::Mismatch { actual, max_abs_error, max_rel_error, .. }, .. } } => {
                assert!(actual.is_nan());
                assert_eq!((max_abs_error, max_rel_error), (f64::INFINITY, f64::NEG_INFINITY));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn ceilings_requests_and_responses_round_trip() {
        let request = Request::Ceilings { cubin: "/tmp/ceilings.cubin".into() };
        let line = serde_json::to_string(&request).unwrap();
        assert_eq!(line, r#"{"request":"ceilings","cubin":"/tmp/ceilings.cubin"}"#);
        assert_eq!(serde_json::from_str::<Request>(&line).unwrap(), request);
        let copy_times = vec![crate::gpu::CopyTime { bytes: 524288.0, us: 2.5 }];
        let response = Response::Ceilings(MeasuredCeilings { copy_gbs: 3001.0, fp32_tflops: 51.2, fp16_tflops: 102.4, copy_times });
        let line = serde_json::to_string(&response).unwrap();
        assert_eq!(line, r#"{"response":"ceilings","copy_gbs":3001.0,"fp32_tflops":51.2,"fp16_tflops":102.4,"copy_times":[{"bytes":524288.0,"us":2.5}]}"#);
        assert_eq!(serde_json::from_str::<Response>(&line).unwrap(), response);
    }

    #[test]
    fn a_partial_timing_policy_takes_defaults_for_the_rest() {
        let policy: TimingPolicy = serde_json::from_str(r#"{"max_ms": 50}"#).unwrap();
        assert_eq!(policy, TimingPolicy { max_ms: 50, ..TimingPolicy::default() });
        assert!(TimingPolicy::default().check().is_ok());
        assert!(TimingPolicy { min_runs: 5, max_runs: 4, ..TimingPolicy::default() }.check().unwrap_err().contains("min_runs"));
    }
}
