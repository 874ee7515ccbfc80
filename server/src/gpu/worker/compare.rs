//! Comparing a candidate's outputs with the baseline's, element by element, under the output's
//! tolerance: an element passes when |actual - expected| ≤ atol + rtol · |expected|.
//!
//! - NaN matches NaN only: a NaN on one side alone is a mismatch. Output buffers are filled
//!   with 0xFF bytes (NaN in every float format) before each run, so elements that neither
//!   kernel writes compare equal, and an element the candidate forgets to write is caught.
//! - Equal infinities match; any other infinity is a mismatch.
//! - Integers are compared exactly, as integers (a non-zero tolerance still applies).
//! - The relative error is measured where the expected value is non-zero and both are finite.

use crate::gpu::Verdict;
use crate::spec::{Dtype, Tolerance};

use super::data::{decode, element_bytes, Element};

/// One output buffer compared.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BufferComparison {
    /// The lowest mismatching index, with the expected and actual values there.
    pub first_mismatch: Option<(u64, f64, f64)>,
    pub mismatches: u64,
    pub max_abs_error: f64,
    pub max_rel_error: f64,
}

/// Compares two buffers of `dtype` holding the same number of elements.
pub fn compare(dtype: Dtype, tolerance: &Tolerance, expected: &[u8], actual: &[u8]) -> BufferComparison {
    let size = element_bytes(dtype);
    let mut result = BufferComparison::default();
    for (index, (want, got)) in expected.chunks_exact(size).zip(actual.chunks_exact(size)).enumerate() {
        if want == got {
            continue; // bitwise equal: within any tolerance, NaNs included
        }
        let (want, got) = (decode(dtype, want), decode(dtype, got));
        let (within, abs_error) = element_error(want, got, tolerance);
        if abs_error.is_finite() {
            result.max_abs_error = result.max_abs_error.max(abs_error);
            let scale = want.as_f64().abs();
            if scale > 0.0 {
                result.max_rel_error = result.max_rel_error.max(abs_error / scale);
            }
        }
        if !within {
            result.mismatches += 1;
            if result.first_mismatch.is_none() {
                result.first_mismatch = Some((index as u64, want.as_f64(), got.as_f64()));
            }
        }
    }
    result
}

/// Whether `got` is within tolerance of `want`, and the absolute error (not finite when either
/// side is NaN or infinite).
fn element_error(want: Element, got: Element, tolerance: &Tolerance) -> (bool, f64) {
    match (want, got) {
        (Element::Int(want), Element::Int(got)) => {
            let error = (got - want).unsigned_abs() as f64;
            (error <= tolerance.atol + tolerance.rtol * (want as f64).abs(), error)
        }
        _ => {
            let (want, got) = (want.as_f64(), got.as_f64());
            if want.is_nan() || got.is_nan() {
                return (want.is_nan() && got.is_nan(), f64::NAN);
            }
            if want == got {
                return (true, 0.0); // equal, including equal infinities and ±0
            }
            let error = (got - want).abs();
            if error.is_infinite() {
                // An infinity on either side; `rtol * |want|` must not excuse it.
                return (false, error);
            }
            (error <= tolerance.atol + tolerance.rtol * want.abs(), error)
        }
    }
}

/// Gathers the comparisons of every output of every problem into one [`Verdict`]: the first
/// mismatch in problem and argument order, with the mismatch count and largest errors over all.
#[derive(Default)]
pub struct VerdictBuilder {
    first: Option<(usize, String, u64, f64, f64)>,
    mismatches: u64,
    max_abs_error: f64,
    max_rel_error: f64,
}

impl VerdictBuilder {
    pub fn add(&mut self, problem: usize, arg: &str, comparison: BufferComparison) {
        if self.first.is_none() {
            if let Some((index, expected, actual)) = comparison.first_mismatch {
                self.first = Some((problem, arg.to_string(), index, expected, actual));
            }
        }
        self.mismatches += comparison.mismatches;
        self.max_abs_error = self.max_abs_error.max(comparison.max_abs_error);
        self.max_rel_error = self.max_rel_error.max(comparison.max_rel_error);
    }

    pub fn finish(self) -> Verdict {
        let VerdictBuilder { first, mismatches, max_abs_error, max_rel_error } = self;
        match first {
            None => Verdict::Pass { max_abs_error, max_rel_error },
            Some((problem, arg, index, expected, actual)) => {
                Verdict::Mismatch { problem, arg, index, expected, actual, mismatches, max_abs_error, max_rel_error }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::worker::data::encode;

    fn bytes(dtype: Dtype, values: &[f64]) -> Vec<u8> {
        let mut out = Vec::new();
        for &v in values {
            encode(dtype, v, &mut out);
        }
        out
    }

    fn run(dtype: Dtype, want: &[f64], got: &[f64]) -> BufferComparison {
        compare(dtype, &dtype.default_tolerance(), &bytes(dtype, want), &bytes(dtype, got))
    }

    #[test]
    fn reports_the_first_mismatching_index_and_counts_all() {
        let want = [1.0, 2.0, 3.0, 4.0, 5.0];
        let got = [1.0, 2.00001, 3.5, 4.0, -5.0];
        let result = run(Dtype::F32, &want, &got);
        assert_eq!(result.first_mismatch, Some((2, 3.0, 3.5)));
        assert_eq!(result.mismatches, 2);
        assert_eq!(result.max_abs_error, 10.0);
        assert_eq!(result.max_rel_error, 2.0);
    }

    #[test]
    fn tolerance_is_absolute_plus_relative() {
        let tolerance = Tolerance { dtype: Dtype::F64, atol: 0.1, rtol: 0.01 };
        let want = bytes(Dtype::F64, &[100.0, 100.0]);
        // 1.1 away passes (0.1 + 0.01 * 100), 1.2 away does not.
        let got = bytes(Dtype::F64, &[101.1, 98.8]);
        let result = compare(Dtype::F64, &tolerance, &want, &got);
        assert_eq!(result.mismatches, 1);
        assert_eq!(result.first_mismatch.map(|m| m.0), Some(1));
    }

    #[test]
    fn nan_matches_only_nan() {
        let nan = f64::NAN;
        let result = run(Dtype::F32, &[nan, 1.0, nan], &[nan, nan, 1.0]);
        assert_eq!(result.mismatches, 2);
        let (index, expected, actual) = result.first_mismatch.unwrap();
        assert_eq!((index, expected), (1, 1.0));
        assert!(actual.is_nan());
        // NaN errors do not poison the largest errors.
        assert_eq!(result.max_abs_error, 0.0);
        // Different NaN payloads are still both NaN.
        let quiet = f32::NAN.to_bits();
        let want: Vec<u8> = quiet.to_le_bytes().to_vec();
        let got: Vec<u8> = (quiet | 1).to_le_bytes().to_vec();
        assert_eq!(compare(Dtype::F32, &Dtype::F32.default_tolerance(), &want, &got).mismatches, 0);
    }

    #[test]
    fn infinities_match_only_themselves() {
        let inf = f64::INFINITY;
        let result = run(Dtype::F16, &[inf, inf, 1.0], &[inf, -inf, inf]);
        assert_eq!(result.mismatches, 2);
        assert_eq!(result.first_mismatch.map(|m| m.0), Some(1));
    }

    #[test]
    fn integers_must_match_exactly_by_default() {
        let result = run(Dtype::I64, &[5.0, -3.0, 7.0], &[5.0, -2.0, 7.0]);
        assert_eq!(result.first_mismatch, Some((1, -3.0, -2.0)));
        assert_eq!(result.mismatches, 1);
        // Large values differing by one are told apart, which f64 could not do.
        let big = i64::MAX.to_le_bytes();
        let off_by_one = (i64::MAX - 1).to_le_bytes();
        let result = compare(Dtype::I64, &Dtype::I64.default_tolerance(), &big, &off_by_one);
        assert_eq!(result.mismatches, 1);
        assert_eq!(result.max_abs_error, 1.0);
    }

    #[test]
    fn low_precision_outputs_use_their_dtype_tolerance() {
        // bf16 carries about 3 significant digits; its default tolerance accepts that.
        assert_eq!(run(Dtype::Bf16, &[1.0, 100.0], &[1.0078125, 101.0]).mismatches, 0);
        assert_eq!(run(Dtype::Bf16, &[1.0], &[1.5]).mismatches, 1);
    }

    #[test]
    fn the_verdict_names_the_first_mismatch_in_problem_order() {
        let mut builder = VerdictBuilder::default();
        builder.add(0, "out", run(Dtype::F32, &[1.0], &[1.0]));
        builder.add(1, "out", run(Dtype::F32, &[1.0, 2.0], &[1.0, 9.0]));
        builder.add(1, "stats", run(Dtype::F32, &[1.0], &[0.0]));
        match builder.finish() {
            Verdict::Mismatch { problem, arg, index, expected, actual, mismatches, max_abs_error, .. } => {
                assert_eq!((problem, arg.as_str(), index, expected, actual), (1, "out", 1, 2.0, 9.0));
                assert_eq!((mismatches, max_abs_error), (2, 7.0));
            }
            other => panic!("{other:?}"),
        }
        let mut builder = VerdictBuilder::default();
        builder.add(0, "out", run(Dtype::F32, &[1.0], &[1.00001]));
        assert!(builder.finish().is_pass());
    }
}
