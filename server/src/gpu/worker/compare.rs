//! Gathering the comparisons of a candidate's outputs with the baseline's into one verdict. The
//! element-wise rule (tolerances, NaN, infinities, integers) runs on the device, in
//! `gpu/harness.cu`.

use crate::gpu::worker::data::{decode, element_bytes};
use crate::gpu::Verdict;
use crate::spec::{Dtype, Tolerance};

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

/// Compares two buffers of per-block partial results by the sums of the elements written
/// (an element still all `poison` bytes was not: another grid writes another count). The sums
/// agree within `atol + rtol × Σ|x|` over the expected elements, the scale of the rounding that
/// adding in another order brings. A mismatch is reported at index 0, with the two sums.
pub fn compare_sums(expected: &[u8], actual: &[u8], dtype: Dtype, tolerance: &Tolerance, poison: u8) -> BufferComparison {
    let size = element_bytes(dtype);
    // Kahan–Babuška (Neumaier) sums: the partials may be many and of mixed sign.
    let sum = |bytes: &[u8]| {
        let (mut sum, mut carry, mut magnitude) = (0.0f64, 0.0f64, 0.0f64);
        for element in bytes.chunks_exact(size).filter(|e| e.iter().any(|&b| b != poison)) {
            let x = decode(dtype, element).as_f64();
            let t = sum + x;
            carry += if sum.abs() >= x.abs() { (sum - t) + x } else { (x - t) + sum };
            sum = t;
            magnitude += x.abs();
        }
        (sum + carry, magnitude)
    };
    let ((want, scale), (got, _)) = (sum(expected), sum(actual));
    let error = (got - want).abs();
    let allowed = tolerance.atol + tolerance.rtol * scale;
    let relative = if want == 0.0 { error } else { error / want.abs() };
    if error <= allowed || (want.is_nan() && got.is_nan()) {
        return BufferComparison { max_abs_error: error, max_rel_error: relative, ..BufferComparison::default() };
    }
    BufferComparison { first_mismatch: Some((0, want, got)), mismatches: 1, max_abs_error: error, max_rel_error: relative, unwritten: 0, not_finite: u64::from(!got.is_finite()) }
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

    #[test]
    fn partials_compare_by_their_sum_whatever_the_partition() {
        let ints = |values: &[i32]| values.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>();
        let exact = Dtype::I32.default_tolerance();
        // 64 blocks' partials against 32 blocks' (the rest never written: poison).
        let expected = ints(&[10, 20, 30, 40]);
        let mut fewer = ints(&[30, 70]);
        fewer.extend([0xFF; 8]);
        assert_eq!(compare_sums(&expected, &fewer, Dtype::I32, &exact, 0xFF), BufferComparison::default());
        let wrong = compare_sums(&expected, &ints(&[10, 20, 30, 41]), Dtype::I32, &exact, 0xFF);
        assert_eq!((wrong.first_mismatch, wrong.mismatches), (Some((0, 100.0, 101.0)), 1));
        // Floats: another order of addition rounds differently, within the scale of the terms.
        let floats = |values: &[f32]| values.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>();
        let f32_tolerance = Dtype::F32.default_tolerance();
        let near = compare_sums(&floats(&[1e4, -1e4, 0.5]), &floats(&[0.50005]), Dtype::F32, &f32_tolerance, 0xFF);
        assert_eq!(near.mismatches, 0, "{near:?}");
        let far = compare_sums(&floats(&[1e4, -1e4, 0.5]), &floats(&[1.5]), Dtype::F32, &f32_tolerance, 0xFF);
        assert_eq!(far.mismatches, 1, "{far:?}");
    }
}
