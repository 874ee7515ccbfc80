//! What went wrong with a kernel, in words its author understands: one label per kind of
//! misbehaviour, from the worker's outcomes and verdicts. The tuner's table, the editor's
//! diagnostics and `cutune verify` all show these.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::gpu::{FailureKind, Outcome, Verdict};

/// Why a kernel failed a check.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "finding", rename_all = "snake_case")]
pub enum Finding {
    /// It produced no output to compare: it faulted, hung, was refused, did not compile, or
    /// does not fit the device.
    Failed { kind: FailureKind, message: String },
    /// Bytes after the end of a buffer changed.
    OutOfBounds { arg: String, bytes: u64, first_offset: u64 },
    /// Output elements still hold the poison.
    Unwritten { arg: String, index: u64, count: u64, mismatches: u64 },
    /// NaN or infinity where the reference is finite.
    NotFinite {
        arg: String,
        index: u64,
        #[serde(with = "crate::gpu::protocol::nonfinite")]
        expected: f64,
        #[serde(with = "crate::gpu::protocol::nonfinite")]
        actual: f64,
        count: u64,
    },
    /// Values out of tolerance.
    Wrong {
        arg: String,
        index: u64,
        #[serde(with = "crate::gpu::protocol::nonfinite")]
        expected: f64,
        #[serde(with = "crate::gpu::protocol::nonfinite")]
        actual: f64,
        mismatches: u64,
        #[serde(with = "crate::gpu::protocol::nonfinite")]
        max_abs_error: f64,
        #[serde(with = "crate::gpu::protocol::nonfinite")]
        max_rel_error: f64,
    },
    /// A later run differs from the first, with no consistent pattern: a race, or atomics.
    NonDeterministic {
        arg: String,
        index: u64,
        #[serde(with = "crate::gpu::protocol::nonfinite")]
        first: f64,
        #[serde(with = "crate::gpu::protocol::nonfinite")]
        later: f64,
        bitwise: bool,
    },
    /// Runs after the same shared-memory pattern agree and runs after different ones do not:
    /// the output depends on what shared memory held before the launch.
    ReadsUnwrittenShared {
        arg: String,
        index: u64,
        #[serde(with = "crate::gpu::protocol::nonfinite")]
        first: f64,
        #[serde(with = "crate::gpu::protocol::nonfinite")]
        later: f64,
    },
    /// Timed below the speed-of-light bound by more than the noise margin (`sol`): work was
    /// skipped or the measurement is wrong. `ceilings` says what the bound came from.
    FasterThanLight { time_us: f64, bound_us: f64, ceilings: String },
}

impl Finding {
    /// A candidate's outcome, compared with the baseline; `None` when it matched (or was only
    /// replayed).
    pub fn of_outcome(outcome: &Outcome) -> Option<Finding> {
        match outcome {
            Outcome::Failed { kind, message } => Some(Finding::Failed { kind: *kind, message: message.clone() }),
            Outcome::Measured { verdict, .. } => Finding::of_verdict(verdict),
        }
    }

    /// A comparison with the baseline; `None` when it passed.
    pub fn of_verdict(verdict: &Verdict) -> Option<Finding> {
        match verdict {
            Verdict::Pass { .. } | Verdict::Unchecked => None,
            Verdict::OutOfBounds { arg, bytes, first_offset, .. } => Some(Finding::OutOfBounds { arg: arg.clone(), bytes: *bytes, first_offset: *first_offset }),
            Verdict::Mismatch { arg, index, expected, actual, mismatches, max_abs_error, max_rel_error, unwritten, not_finite, .. } => Some(if *unwritten > 0 {
                Finding::Unwritten { arg: arg.clone(), index: *index, count: *unwritten, mismatches: *mismatches }
            } else if *not_finite > 0 {
                Finding::NotFinite { arg: arg.clone(), index: *index, expected: *expected, actual: *actual, count: *not_finite }
            } else {
                Finding::Wrong {
                    arg: arg.clone(),
                    index: *index,
                    expected: *expected,
                    actual: *actual,
                    mismatches: *mismatches,
                    max_abs_error: *max_abs_error,
                    max_rel_error: *max_rel_error,
                }
            }),
        }
    }

    /// Later runs compared with the first: `repeats[k]` is run k + 2, made after shared memory
    /// was set to pattern (k + 1) mod 2, the first run's being pattern 0. `None` when every
    /// run agreed.
    pub fn of_repeats(repeats: &[Verdict], bitwise: bool) -> Option<Finding> {
        let (k, differing) = repeats.iter().enumerate().find(|(_, v)| !matches!(v, Verdict::Pass { .. }))?;
        if let Verdict::OutOfBounds { .. } = differing {
            return Finding::of_verdict(differing);
        }
        let Verdict::Mismatch { arg, index, expected, actual, .. } = differing else { return None };
        // Every run after the first's pattern matched it, every run after the other differed.
        let follows_pattern = repeats.len() >= 2 && repeats.iter().enumerate().all(|(k, v)| v.is_pass() == (k % 2 == 1));
        Some(if follows_pattern && k == 0 {
            Finding::ReadsUnwrittenShared { arg: arg.clone(), index: *index, first: *expected, later: *actual }
        } else {
            Finding::NonDeterministic { arg: arg.clone(), index: *index, first: *expected, later: *actual, bitwise }
        })
    }

    /// A short name for tables: `fault`, `wrong output`…
    pub fn label(&self) -> &'static str {
        match self {
            Finding::Failed { kind, .. } => kind_label(*kind),
            Finding::OutOfBounds { .. } => "out of bounds",
            Finding::Unwritten { .. } => "skips output",
            Finding::NotFinite { .. } => "NaN/inf",
            Finding::Wrong { .. } => "wrong output",
            Finding::NonDeterministic { .. } => "non-deterministic",
            Finding::ReadsUnwrittenShared { .. } => "reads unwritten shared memory",
            Finding::FasterThanLight { .. } => "faster than light",
        }
    }
}

/// A failure kind's short name.
pub fn kind_label(kind: FailureKind) -> &'static str {
    match kind {
        FailureKind::Infeasible => "infeasible",
        FailureKind::Compile => "compile error",
        FailureKind::Launch => "launch refused",
        FailureKind::Fault => "fault",
        FailureKind::Timeout => "timeout",
        FailureKind::Worker => "worker died",
    }
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Finding::Failed { kind, message } => write!(f, "{}: {}", kind_label(*kind), message.lines().next().unwrap_or_default()),
            Finding::OutOfBounds { arg, bytes, first_offset: 0 } => write!(f, "writes out of bounds: {bytes} bytes after the end of `{arg}` changed, starting right at its end"),
            Finding::OutOfBounds { arg, bytes, first_offset } => write!(
                f,
                "writes out of bounds: {bytes} bytes after the end of `{arg}` changed, the first {first_offset} bytes past its end"
            ),
            Finding::Unwritten { arg, index, count, mismatches } => {
                write!(f, "skips part of the output: {count} elements of `{arg}` were never written, the first wrong at index {index}")?;
                if mismatches > count {
                    write!(f, " ({} more elements are wrong)", mismatches - count)?;
                }
                Ok(())
            }
            Finding::NotFinite { arg, index, expected, actual, count } => {
                write!(f, "produces NaN or infinity where the original does not: `{arg}`[{index}] = {actual}, expected {expected} ({count} elements)")
            }
            Finding::Wrong { arg, expected, actual, max_abs_error, max_rel_error, .. } if crate::gpu::summed_arg(arg).is_some() => write!(
                f,
                "wrong output: the sum of `{}` is {actual}, expected {expected} (per-block partial results, compared by their sum); abs error {max_abs_error:.3e}, rel error {max_rel_error:.3e}",
                crate::gpu::summed_arg(arg).unwrap_or(arg)
            ),
            Finding::Wrong { arg, index, expected, actual, mismatches, max_abs_error, max_rel_error } => write!(
                f,
                "wrong output: `{arg}`[{index}] = {actual}, expected {expected}; {mismatches} elements out of tolerance, max abs error {max_abs_error:.3e}, max rel error {max_rel_error:.3e}"
            ),
            Finding::NonDeterministic { arg, index, first, later, bitwise } => {
                let how = if *bitwise { "bitwise " } else { "" };
                write!(
                    f,
                    "not deterministic: runs on the same inputs differ {how}at `{arg}`[{index}] ({first} then {later}): a race, or atomics \
                     (set `verify.deterministic = false` in the spec if the order of float atomics is meant to vary)"
                )
            }
            Finding::FasterThanLight { time_us, bound_us, ceilings } => write!(
                f,
                "faster than the speed of light: {} against a bound of {} ({ceilings}); likely skipped work or a benchmarking error, so it is never best",
                crate::sol::format_us(*time_us),
                crate::sol::format_us(*bound_us)
            ),
            Finding::ReadsUnwrittenShared { arg, index, first, later } => write!(
                f,
                "reads shared memory it did not write: its output follows what shared memory held before the launch (`{arg}`[{index}] = {first}, then {later})"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pass() -> Verdict {
        Verdict::Pass { max_abs_error: 0.0, max_rel_error: 0.0 }
    }

    fn mismatch(unwritten: u64, not_finite: u64) -> Verdict {
        Verdict::Mismatch {
            problem: 0,
            arg: "out".into(),
            index: 7,
            expected: 1.5,
            actual: f64::NAN,
            mismatches: 10,
            max_abs_error: 0.25,
            max_rel_error: 0.5,
            unwritten,
            not_finite,
        }
    }

    #[test]
    fn mismatches_are_labelled_by_what_the_elements_hold() {
        let unwritten = Finding::of_verdict(&mismatch(4, 6)).unwrap();
        assert_eq!(unwritten.label(), "skips output");
        assert_eq!(unwritten.to_string(), "skips part of the output: 4 elements of `out` were never written, the first wrong at index 7 (6 more elements are wrong)");
        let nan = Finding::of_verdict(&mismatch(0, 10)).unwrap();
        assert_eq!(nan.to_string(), "produces NaN or infinity where the original does not: `out`[7] = NaN, expected 1.5 (10 elements)");
        let wrong = Finding::of_verdict(&mismatch(0, 0)).unwrap();
        assert!(wrong.to_string().starts_with("wrong output: `out`[7] = NaN, expected 1.5; 10 elements out of tolerance, max abs error 2.500e-1"), "{wrong}");
        let summed = Verdict::Mismatch { problem: 0, arg: crate::gpu::summed("partials"), index: 0, expected: 100.0, actual: 50.0, mismatches: 1, max_abs_error: 50.0, max_rel_error: 0.5, unwritten: 0, not_finite: 0 };
        let wrong_sum = Finding::of_verdict(&summed).unwrap().to_string();
        assert!(wrong_sum.starts_with("wrong output: the sum of `partials` is 50, expected 100 (per-block partial results, compared by their sum)"), "{wrong_sum}");
        assert_eq!(Finding::of_verdict(&pass()), None);
        assert_eq!(Finding::of_verdict(&Verdict::Unchecked), None);
        let bounds = Finding::of_verdict(&Verdict::OutOfBounds { problem: 0, arg: "out".into(), bytes: 512, first_offset: 0 }).unwrap();
        assert_eq!(bounds.to_string(), "writes out of bounds: 512 bytes after the end of `out` changed, starting right at its end");
    }

    #[test]
    fn failures_keep_their_kind_and_first_line() {
        let outcome = Outcome::Failed { kind: FailureKind::Timeout, message: "did not finish within 11.0 s\nmore".into() };
        let finding = Finding::of_outcome(&outcome).unwrap();
        assert_eq!((finding.label(), finding.to_string().as_str()), ("timeout", "timeout: did not finish within 11.0 s"));
    }

    #[test]
    fn repeats_that_follow_the_shared_memory_pattern_mean_stale_shared_reads() {
        // Run 2 (other pattern) differs, run 3 (first pattern again) agrees.
        let stale = Finding::of_repeats(&[mismatch(0, 0), pass()], true).unwrap();
        assert_eq!(stale.label(), "reads unwritten shared memory");
        // Both later runs differ: no pattern, a race.
        let race = Finding::of_repeats(&[mismatch(0, 0), mismatch(0, 0)], true).unwrap();
        assert_eq!(race.label(), "non-deterministic");
        assert!(race.to_string().contains("differ bitwise at `out`[7]"), "{race}");
        // Only the third run differs: a race too.
        assert_eq!(Finding::of_repeats(&[pass(), mismatch(0, 0)], false).unwrap().label(), "non-deterministic");
        assert_eq!(Finding::of_repeats(&[pass(), pass()], true), None);
        // With one repeat there is no pattern to see.
        assert_eq!(Finding::of_repeats(&[mismatch(0, 0)], true).unwrap().label(), "non-deterministic");
    }
}
