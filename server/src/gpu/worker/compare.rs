//! Gathering the comparisons of a candidate's outputs with the baseline's into one verdict. The
//! element-wise rule (tolerances, NaN, infinities, integers) runs on the device, in
//! `gpu/harness.cu`.

use crate::gpu::Verdict;

/// One output buffer compared.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BufferComparison {
    /// The lowest mismatching index, with the expected and actual values there.
    pub first_mismatch: Option<(u64, f64, f64)>,
    pub mismatches: u64,
    pub max_abs_error: f64,
    pub max_rel_error: f64,
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

    fn mismatch(index: u64, expected: f64, actual: f64, mismatches: u64, max_abs_error: f64) -> BufferComparison {
        BufferComparison { first_mismatch: Some((index, expected, actual)), mismatches, max_abs_error, max_rel_error: max_abs_error / expected.abs() }
    }

    #[test]
    fn the_verdict_names_the_first_mismatch_in_problem_order() {
        let mut builder = VerdictBuilder::default();
        builder.add(0, "out", BufferComparison { max_abs_error: 1e-6, ..BufferComparison::default() });
        builder.add(1, "out", mismatch(1, 2.0, 9.0, 1, 7.0));
        builder.add(1, "stats", mismatch(0, 1.0, 0.0, 1, 1.0));
        match builder.finish() {
            Verdict::Mismatch { problem, arg, index, expected, actual, mismatches, max_abs_error, max_rel_error } => {
                assert_eq!((problem, arg.as_str(), index, expected, actual), (1, "out", 1, 2.0, 9.0));
                assert_eq!((mismatches, max_abs_error, max_rel_error), (2, 7.0, 3.5));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn errors_within_tolerance_pass_with_their_largest_errors() {
        let mut builder = VerdictBuilder::default();
        builder.add(0, "out", BufferComparison { max_abs_error: 1e-5, max_rel_error: 1e-6, ..BufferComparison::default() });
        builder.add(1, "out", BufferComparison { max_abs_error: 2e-5, max_rel_error: 1e-7, ..BufferComparison::default() });
        assert_eq!(builder.finish(), Verdict::Pass { max_abs_error: 2e-5, max_rel_error: 1e-6 });
    }
}
