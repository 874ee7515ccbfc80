//! The verification kernels of `gpu/harness.cu`, loaded into the worker's context: seeded input
//! data, the comparison of outputs with the baseline's, and poisoning shared memory, all on the
//! device. Checking a candidate then moves 48 bytes per output to the host instead of the
//! whole output.

use std::path::Path;
use std::rc::Rc;

use crate::gpu::LaunchDims;
use crate::spec::{Dtype, Init, Tolerance};

use super::cuda::{CudaResult, DeviceBuffer, Function, LoadedModule};
use super::modules::{ModuleError, Modules};

/// The kernels' names (`extern "C"`, so not mangled).
pub const FILL: &str = "cutune_fill";
pub const COMPARE: &str = "cutune_compare";
pub const POISON_SHARED: &str = "cutune_poison_shared";

/// Threads per block of the harness kernels (a multiple of the warp, for the shuffles).
const BLOCK: u32 = 256;

/// The loaded harness. Its functions are valid while the module is loaded, i.e. while this
/// lives.
pub struct Harness {
    fill: Function,
    compare: Function,
    poison_shared: Function,
    /// One block per multiprocessor, each with the most dynamic shared memory a block may have.
    shared: LaunchDims,
    /// Enough blocks to fill the device; the kernels loop over the rest (grid-stride).
    max_blocks: u32,
    _module: Rc<LoadedModule>,
}

impl Harness {
    /// Loads (or finds loaded) the cubin the tuner compiled from harness.cu; errors are for the
    /// user.
    pub fn load(cubin: &Path, modules: &mut Modules, multiprocessors: u32, shared_bytes_per_block: u32) -> Result<Harness, String> {
        let failed = |f: super::cuda::DriverFailure| format!("cannot load the verification kernels from {}: {}", cubin.display(), f.describe());
        let module = modules.load(cubin).map_err(|error| match error {
            ModuleError::Read(e) => format!("cannot read the verification kernels' cubin {}: {e}", cubin.display()),
            ModuleError::Load(f) => failed(f),
        })?;
        let function = |name: &str| -> Result<Function, String> {
            module.function(name).map_err(failed)?.ok_or_else(|| format!("the cubin {} is not the verification kernels: it has no `{name}`", cubin.display()))
        };
        let (fill, compare, poison_shared) = (function(FILL)?, function(COMPARE)?, function(POISON_SHARED)?);
        poison_shared.allow_dynamic_shared(shared_bytes_per_block).map_err(failed)?;
        let shared = LaunchDims { grid: [multiprocessors.max(1), 1, 1], block: [1024, 1, 1], shared_bytes: shared_bytes_per_block, cooperative: false };
        Ok(Harness { fill, compare, poison_shared, shared, max_blocks: multiprocessors.max(1) * 16, _module: module })
    }

    fn dims(&self, length: u64) -> LaunchDims {
        let blocks = length.div_ceil(BLOCK as u64).clamp(1, self.max_blocks as u64) as u32;
        LaunchDims { grid: [blocks, 1, 1], block: [BLOCK, 1, 1], shared_bytes: 0, cooperative: false }
    }

    /// Queues filling `buffer` with `length` elements of `dtype` drawn from `init` (checked by
    /// [`super::data::check_init`]); the same seed always gives the same contents.
    pub fn fill(&self, buffer: &DeviceBuffer, dtype: Dtype, init: &Init, length: u64, seed: u64) -> CudaResult<()> {
        let (dist, a, b, low, span) = match *init {
            Init::Uniform { low, high } => (0, low, high, 0, 0),
            Init::Normal { mean, std } => (1, mean, std, 0, 0),
            Init::Integers { low, high } => (2, 0.0, 0.0, low, high.abs_diff(low)),
            Init::Mixed { large, small } => (3, large, small, 0, 0),
        };
        let mut slots = [buffer.pointer(), length, code(dtype) as u64, dist, a.to_bits(), b.to_bits(), low as u64, span, seed];
        self.fill.launch(&self.dims(length), &mut slots)
    }

    /// Queues comparing `length` elements of `dtype` at device address `actual` with those at
    /// `expected` under `tolerance`, into the [`SUMMARY_BYTES`] at device address `summary`,
    /// which must hold [`SUMMARY_START`].
    pub fn compare(&self, expected: u64, actual: u64, dtype: Dtype, length: u64, tolerance: &Tolerance, summary: u64) -> CudaResult<()> {
        let mut slots = [expected, actual, length, code(dtype) as u64, tolerance.atol.to_bits(), tolerance.rtol.to_bits(), summary];
        self.compare.launch(&self.dims(length), &mut slots)
    }

    /// Queues setting every multiprocessor's shared memory to `pattern`, so that what a kernel
    /// launched next reads before writing is known.
    pub fn poison_shared(&self, pattern: u32) -> CudaResult<()> {
        let mut slots = [pattern as u64, (self.shared.shared_bytes / 4) as u64];
        self.poison_shared.launch(&self.shared, &mut slots)
    }
}

/// harness.cu's element type codes.
fn code(dtype: Dtype) -> u32 {
    match dtype {
        Dtype::F16 => 0,
        Dtype::Bf16 => 1,
        Dtype::F32 => 2,
        Dtype::F64 => 3,
        Dtype::Fp8e4m3 => 4,
        Dtype::Fp8e5m2 => 5,
        Dtype::I8 => 6,
        Dtype::I16 => 7,
        Dtype::I32 => 8,
        Dtype::I64 => 9,
        Dtype::U8 => 10,
        Dtype::U16 => 11,
        Dtype::U32 => 12,
        Dtype::U64 => 13,
    }
}

/// The size of harness.cu's `Summary`: six little-endian u64.
pub const SUMMARY_BYTES: usize = 48;

/// A summary before comparing: no mismatch, no first index (all ones), zero errors.
pub const SUMMARY_START: [u8; SUMMARY_BYTES] = {
    let mut start = [0u8; SUMMARY_BYTES];
    let mut byte = 8;
    while byte < 16 {
        start[byte] = 0xFF;
        byte += 1;
    }
    start
};

/// One comparison as the device left it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Summary {
    pub mismatches: u64,
    /// The lowest mismatching index.
    pub first_index: Option<u64>,
    pub max_abs_error: f64,
    pub max_rel_error: f64,
    /// Mismatches that still hold the poison: elements the kernel never wrote.
    pub unwritten: u64,
    /// Other mismatches that are NaN or infinite where the expected value is finite.
    pub not_finite: u64,
}

impl Summary {
    /// Reads one summary from the start of `bytes` (at least [`SUMMARY_BYTES`] long).
    pub fn read(bytes: &[u8]) -> Summary {
        let word = |i: usize| u64::from_le_bytes(bytes[8 * i..8 * i + 8].try_into().expect("eight bytes"));
        Summary {
            mismatches: word(0),
            first_index: (word(1) != u64::MAX).then(|| word(1)),
            max_abs_error: f64::from_bits(word(2)),
            max_rel_error: f64::from_bits(word(3)),
            unwritten: word(4),
            not_finite: word(5),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fresh_summary_reads_as_no_mismatch() {
        let nothing = Summary { mismatches: 0, first_index: None, max_abs_error: 0.0, max_rel_error: 0.0, unwritten: 0, not_finite: 0 };
        assert_eq!(Summary::read(&SUMMARY_START), nothing);
        let mut bytes = Vec::new();
        for word in [3u64, 17, 0.5f64.to_bits(), 2.0f64.to_bits(), 2, 1] {
            bytes.extend(word.to_le_bytes());
        }
        assert_eq!(Summary::read(&bytes), Summary { mismatches: 3, first_index: Some(17), max_abs_error: 0.5, max_rel_error: 2.0, unwritten: 2, not_finite: 1 });
    }

    #[test]
    fn dtype_codes_follow_the_enum_in_harness_cu() {
        let source = crate::gpu::HARNESS_SOURCE;
        let start = source.find("DT_F16,").expect("the dtype enum");
        let names: Vec<&str> = source[start..source[start..].find('}').unwrap() + start].split(',').map(str::trim).collect();
        let expected = [
            (Dtype::F16, "DT_F16"),
            (Dtype::Bf16, "DT_BF16"),
            (Dtype::F32, "DT_F32"),
            (Dtype::F64, "DT_F64"),
            (Dtype::Fp8e4m3, "DT_FP8_E4M3"),
            (Dtype::Fp8e5m2, "DT_FP8_E5M2"),
            (Dtype::I8, "DT_I8"),
            (Dtype::I16, "DT_I16"),
            (Dtype::I32, "DT_I32"),
            (Dtype::I64, "DT_I64"),
            (Dtype::U8, "DT_U8"),
            (Dtype::U16, "DT_U16"),
            (Dtype::U32, "DT_U32"),
            (Dtype::U64, "DT_U64"),
        ];
        for (dtype, name) in expected {
            assert_eq!(names[code(dtype) as usize], name, "{dtype:?}");
        }
    }
}
