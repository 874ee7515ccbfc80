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
    /// Of the mismatches: never written (still the poison).
    pub unwritten: u64,
    /// Of the other mismatches: NaN or infinite where the reference is finite.
    pub not_finite: u64,
}

/// Gathers the comparisons of every output of every problem into one [`Verdict`]: the first
/// mismatch in problem and argument order, with the mismatch count and largest errors over all.
/// A write out of bounds outweighs any mismatch: it may have corrupted the outputs.
#[derive(Default)]
pub struct VerdictBuilder {
    first: Option<(usize, String, u64, f64, f64)>,
    mismatches: u64,
    max_abs_error: f64,
    max_rel_error: f64,
    unwritten: u64,
    not_finite: u64,
    out_of_bounds: Option<Verdict>,
}

impl VerdictBuilder {
    pub fn add(&mut self, problem: usize, arg: &str, comparison: BufferComparison) {
        if self.first.is_none() {
            if let Some((index, expected, actual)) = comparison.first_mismatch {
                self.first = Some((problem, arg.to_string(), index, expected, actual));
            }
        }
        self.mismatches += comparison.mismatches;
        self.unwritten += comparison.unwritten;
        self.not_finite += comparison.not_finite;
        self.max_abs_error = self.max_abs_error.max(comparison.max_abs_error);
        self.max_rel_error = self.max_rel_error.max(comparison.max_rel_error);
    }

    /// `bytes` guard bytes after `arg` changed, the first `first_offset` bytes past its end.
    pub fn out_of_bounds(&mut self, problem: usize, arg: &str, bytes: u64, first_offset: u64) {
        self.out_of_bounds.get_or_insert_with(|| Verdict::OutOfBounds { problem, arg: arg.to_string(), bytes, first_offset });
    }

    pub fn finish(self) -> Verdict {
        let VerdictBuilder { first, mismatches, max_abs_error, max_rel_error, unwritten, not_finite, out_of_bounds } = self;
        if let Some(verdict) = out_of_bounds {
            return verdict;
        }
        match first {
            None => Verdict::Pass { max_abs_error, max_rel_error },
            Some((problem, arg, index, expected, actual)) => {
                Verdict::Mismatch { problem, arg, index, expected, actual, mismatches, max_abs_error, max_rel_error, unwritten, not_finite }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mismatch(index: u64, expected: f64, actual: f64, mismatches: u64, max_abs_error: f64) -> BufferComparison {
        BufferComparison { first_mismatch: Some((index, expected, actual)), mismatches, max_abs_error, max_rel_error: max_abs_error / expected.abs(), unwritten: 0, not_finite: 0 }
    }

    #[test]
    fn the_verdict_names_the_first_mismatch_in_problem_order() {
        let mut builder = VerdictBuilder::default();
        builder.add(0, "out", BufferComparison { max_abs_error: 1e-6, ..BufferComparison::default() });
        builder.add(1, "out", mismatch(1, 2.0, 9.0, 1, 7.0));
        builder.add(1, "stats", BufferComparison { unwritten: 1, ..mismatch(0, 1.0, f64::NAN, 1, 1.0) });
        match builder.finish() {
            Verdict::Mismatch { problem, arg, index, expected, actual, mismatches, max_abs_error, max_rel_error, unwritten, not_finite } => {
                assert_eq!((problem, arg.as_str(), index, expected, actual), (1, "out", 1, 2.0, 9.0));
                assert_eq!((mismatches, max_abs_error, max_rel_error), (2, 7.0, 3.5));
                assert_eq!((unwritten, not_finite), (1, 0));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_write_out_of_bounds_outweighs_mismatches() {
        let mut builder = VerdictBuilder::default();
        builder.add(0, "out", mismatch(1, 2.0, 9.0, 1, 7.0));
        builder.out_of_bounds(0, "in", 4, 0);
        builder.out_of_bounds(1, "out", 9, 2);
        assert_eq!(builder.finish(), Verdict::OutOfBounds { problem: 0, arg: "in".into(), bytes: 4, first_offset: 0 });
    }

    #[test]
    fn errors_within_tolerance_pass_with_their_largest_errors() {
        let mut builder = VerdictBuilder::default();
        builder.add(0, "out", BufferComparison { max_abs_error: 1e-5, max_rel_error: 1e-6, ..BufferComparison::default() });
        builder.add(1, "out", BufferComparison { max_abs_error: 2e-5, max_rel_error: 1e-7, ..BufferComparison::default() });
        assert_eq!(builder.finish(), Verdict::Pass { max_abs_error: 2e-5, max_rel_error: 1e-6 });
    }
}
