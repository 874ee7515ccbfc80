//! Measuring the device's ceilings with the kernels of `gpu/ceilings.cu`: copy bandwidth, the
//! copy's time at each of a range of sizes, and the FP32 and FP16 FMA rates. The arithmetic from
//! times to rates is plain functions, tested without a GPU.
//!
//! Each figure is the best of several timed runs, not the median: a ceiling is what the device
//! can do, and a slower run shows interference (clocks still rising, another process), not the
//! hardware. Underestimating a ceiling would raise the bound above what correct kernels reach,
//! and they would be flagged as faster than light.

use std::path::Path;

use crate::gpu::{CopyTime, LaunchDims, MeasuredCeilings};

use super::cuda::{DeviceBuffer, DriverFailure, Event, Function, LoadedModule};
use super::device::Gpu;

/// The kernels' names (`extern "C"`, so not mangled).
pub const COPY: &str = "cutune_copy";
pub const FMA_F32: &str = "cutune_fma_f32";
pub const FMA_F16: &str = "cutune_fma_f16";

/// ceilings.cu's loop shapes: each copy thread moves COPY_DEPTH vectors per pass; FMAs per
/// thread are `steps × UNROLL × CHAINS`.
const COPY_DEPTH: u64 = 4;
const CHAINS: u64 = 8;
const UNROLL: u64 = 16;

/// Loop iterations per thread of the FMA kernels: about 2 ms of FP32 work on an H100 with one
/// full wave of blocks (and 3 ms on a T4), long against the timer's half-microsecond.
const FMA_STEPS: u64 = 2048;
/// FMA operands that keep the values near 1 (see ceilings.cu).
const FMA_B: f32 = 0.999;
const FMA_C: f32 = 0.001;

/// The smallest copy timed for the copy times by size: 256 KiB each way, below which a launch's
/// fixed costs are all there is to measure.
const SMALLEST_COPY: u64 = 256 << 10;

const BLOCK: u32 = 256;
/// Untimed launches first, so that clocks rise and the module's first-launch costs are paid.
const WARMUP_RUNS: usize = 2;
const TIMED_RUNS: usize = 10;

/// Why the ceilings could not be measured; `lost` when the CUDA context is gone with it (the
/// worker then exits after answering).
#[derive(Debug)]
pub struct Failed {
    pub message: String,
    pub lost: bool,
}

fn plain(message: String) -> Failed {
    Failed { message, lost: false }
}

fn driver(what: &str) -> impl FnOnce(DriverFailure) -> Failed + '_ {
    move |failure| Failed { message: format!("{what}: {}", failure.describe()), lost: failure.is_sticky() }
}

/// Measures the ceilings with the kernels in `cubin`.
pub fn measure(gpu: &Gpu, cubin: &Path) -> Result<MeasuredCeilings, Failed> {
    let image = std::fs::read(cubin).map_err(|e| plain(format!("cannot read the ceiling kernels' cubin {}: {e}", cubin.display())))?;
    let loading = format!("loading the ceiling kernels from {}", cubin.display());
    let module = LoadedModule::load(&image).map_err(driver(&loading))?;
    let function = |name: &str| -> Result<Function, Failed> {
        module
            .function(name)
            .map_err(driver(&loading))?
            .ok_or_else(|| plain(format!("the cubin {} is not the ceiling kernels: it has no `{name}`", cubin.display())))
    };
    let (copy, fma_f32, fma_f16) = (function(COPY)?, function(FMA_F32)?, function(FMA_F16)?);

    let info = &gpu.info;
    let bytes = copy_buffer_bytes(info.memory_bytes);
    let size = usize::try_from(bytes).map_err(|_| plain(format!("{bytes} bytes do not fit this host's address space")))?;
    let allocating = format!("allocating two {} MiB copy buffers", bytes >> 20);
    let source = DeviceBuffer::new(size).map_err(driver(&allocating))?;
    let target = DeviceBuffer::new(size).map_err(driver(&allocating))?;
    // The contents do not matter; filling them maps every page before the timing.
    source.fill(1).and_then(|()| target.fill(0)).map_err(driver("filling the copy buffers"))?;

    // The driver's own copy too: each copy's time is the faster of the two.
    let copy_ms = |size: u64, flush: Option<&DeviceBuffer>| -> Result<f64, Failed> {
        let vectors = size / 16;
        let dims = LaunchDims { grid: [copy_blocks(vectors), 1, 1], block: [BLOCK, 1, 1], shared_bytes: 0, cooperative: false };
        let kernel_ms = best_ms("timing the copy kernel", flush, || copy.launch(&dims, &mut [source.pointer(), target.pointer(), vectors]))?;
        let memcpy_ms = best_ms("timing the driver's device-to-device copy", flush, || target.copy_bytes_from(&source, size as usize))?;
        Ok(kernel_ms.min(memcpy_ms))
    };
    let copy_gbs = gigabytes_per_second(2.0 * bytes as f64, copy_ms(bytes, None)?);
    // A kernel moving a few megabytes cannot stream as fast as one moving a gigabyte: its bound
    // is a copy of its own size, timed as the tuner times kernels (after an L2 flush).
    let mut copy_times = Vec::new();
    for size in copy_sizes(bytes) {
        copy_times.push(CopyTime { bytes: 2.0 * size as f64, us: 1000.0 * copy_ms(size, Some(&gpu.l2_flush))? });
    }

    // The FMA kernels run as one full wave: every block resident at once, each looping (a
    // second, partial wave would run at low occupancy and drag the figure down). Each thread
    // stores one 4-byte value, into the copy's target.
    let time_fmas = |function: &Function, what: &str| -> Result<(f64, f64), Failed> {
        let resident = function.resident_blocks(BLOCK).map_err(driver(what))?;
        let dims = LaunchDims { grid: [info.multiprocessors.max(1) * resident.max(1), 1, 1], block: [BLOCK, 1, 1], shared_bytes: 0, cooperative: false };
        let threads = u64::from(dims.grid[0]) * dims.threads();
        if threads * 4 > bytes {
            return Err(plain(format!("{what}: {threads} threads' results do not fit the {bytes}-byte buffer")));
        }
        let mut slots = [target.pointer(), FMA_STEPS, u64::from(FMA_B.to_bits()), u64::from(FMA_C.to_bits())];
        Ok((fmas(threads), best_ms(what, None, || function.launch(&dims, &mut slots))?))
    };
    let (fp32_fmas, fp32_ms) = time_fmas(&fma_f32, "timing the FP32 FMA kernel")?;
    let (fp16_fmas, fp16_ms) = time_fmas(&fma_f16, "timing the FP16 FMA kernel")?;
    Ok(MeasuredCeilings { copy_gbs, fp32_tflops: teraflops(2.0 * fp32_fmas, fp32_ms), fp16_tflops: teraflops(4.0 * fp16_fmas, fp16_ms), copy_times })
}

/// Blocks for one pass of the copy over `vectors` 16-byte vectors (within the grid's limit;
/// the kernel loops over any rest).
pub fn copy_blocks(vectors: u64) -> u32 {
    vectors.div_ceil(u64::from(BLOCK) * COPY_DEPTH).clamp(1, (1 << 31) - 1) as u32
}

/// The FMA instructions `threads` threads of an FMA kernel execute (a `half2` FMA is one).
pub fn fmas(threads: u64) -> f64 {
    threads as f64 * (FMA_STEPS * UNROLL * CHAINS) as f64
}

/// The sizes of the timed copies: from [`SMALLEST_COPY`] doubling up to the largest, `largest`,
/// each in whole 16-byte vectors.
pub fn copy_sizes(largest: u64) -> Vec<u64> {
    let mut sizes: Vec<u64> = std::iter::successors(Some(SMALLEST_COPY), |size| Some(size * 2)).take_while(|size| *size < largest).collect();
    sizes.push(largest / 16 * 16);
    sizes
}

/// The shortest of [`TIMED_RUNS`] launches of `run`, in milliseconds, after the warm-up; each
/// launch is timed alone with events, after filling `flush` when there is one (outside the
/// timed region), and a fault is noticed at the first synchronisation.
fn best_ms(what: &str, flush: Option<&DeviceBuffer>, mut run: impl FnMut() -> Result<(), DriverFailure>) -> Result<f64, Failed> {
    let (start, end) = (Event::new().map_err(driver(what))?, Event::new().map_err(driver(what))?);
    for _ in 0..WARMUP_RUNS {
        run().map_err(driver(what))?;
    }
    super::cuda::synchronize().map_err(driver(what))?;
    let mut samples = Vec::with_capacity(TIMED_RUNS);
    for run_number in 0..TIMED_RUNS {
        if let Some(flush) = flush {
            flush.fill(run_number as u8).map_err(driver(what))?;
        }
        start.record().map_err(driver(what))?;
        run().map_err(driver(what))?;
        end.record().map_err(driver(what))?;
        end.synchronize().map_err(driver(what))?;
        samples.push(f64::from(start.elapsed_ms(&end).map_err(driver(what))?));
    }
    best(&samples).ok_or_else(|| plain(format!("{what}: no run took a measurable time")))
}

/// The size of each copy buffer: an eighth of the device's memory, at most 1 GiB (far beyond
/// any L2, so the copy streams from DRAM), in whole 16-byte vectors.
pub fn copy_buffer_bytes(memory_bytes: u64) -> u64 {
    (memory_bytes / 8).min(1 << 30) / 16 * 16
}

/// GB/s (10⁹ bytes per second) for `bytes` moved in `ms` milliseconds.
pub fn gigabytes_per_second(bytes: f64, ms: f64) -> f64 {
    bytes / (ms * 1e6)
}

/// TFLOPS (10¹² per second) for `flops` done in `ms` milliseconds.
pub fn teraflops(flops: f64, ms: f64) -> f64 {
    flops / (ms * 1e9)
}

/// The shortest positive time, if any: a zero reading is below the timer's resolution.
pub fn best(samples_ms: &[f64]) -> Option<f64> {
    samples_ms.iter().copied().filter(|ms| ms.is_finite() && *ms > 0.0).min_by(f64::total_cmp)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_an_eighth_of_memory_up_to_a_gibibyte() {
        assert_eq!(copy_buffer_bytes(80 << 30), 1 << 30);
        assert_eq!(copy_buffer_bytes(4 << 30), 512 << 20);
        assert_eq!(copy_buffer_bytes(1000), 112, "whole 16-byte vectors");
    }

    #[test]
    fn the_copy_makes_one_pass() {
        assert_eq!(copy_blocks((1 << 30) / 16), 65_536);
        assert_eq!(copy_blocks(1), 1);
        assert_eq!(copy_blocks(1025), 2);
    }

    #[test]
    fn copies_are_timed_at_doubling_sizes_up_to_the_buffer() {
        let sizes = copy_sizes(1 << 30);
        assert_eq!(sizes.len(), 13);
        assert_eq!((sizes[0], sizes[1], sizes[12]), (256 << 10, 512 << 10, 1 << 30));
        assert_eq!(copy_sizes(1_000_008), vec![256 << 10, 512 << 10, 1_000_000], "the last is the buffer, in whole vectors");
        assert_eq!(copy_sizes(100_008), vec![100_000], "a buffer below the smallest size is timed alone");
    }

    #[test]
    fn times_become_rates() {
        // Two 1 GiB buffers (read plus written) in 0.7155 ms: the H100's 3001 GB/s.
        let gbs = gigabytes_per_second(2.0 * (1u64 << 30) as f64, 0.7155);
        assert!((gbs - 3001.4).abs() < 0.1, "{gbs}");
        // One wave on an H100 (132 SMs × 2048 threads), 2048 × 16 × 8 FMAs each, in 2 ms:
        // 2 flops per float FMA, 4 per half2 FMA.
        let threads = 132 * 2048;
        assert_eq!(fmas(threads), 132.0 * 2048.0 * 2048.0 * 16.0 * 8.0);
        assert!((teraflops(2.0 * fmas(threads), 2.0) - 70.87).abs() < 0.01, "{}", teraflops(2.0 * fmas(threads), 2.0));
        assert!((teraflops(4.0 * fmas(threads), 2.0) - 141.73).abs() < 0.01);
    }

    #[test]
    fn the_best_run_is_the_shortest_measurable_one() {
        assert_eq!(best(&[0.8, 0.72, 0.0, f64::NAN, 0.75]), Some(0.72));
        assert_eq!(best(&[0.0]), None);
        assert_eq!(best(&[]), None);
    }

    #[test]
    fn the_loop_shape_follows_ceilings_cu() {
        let source = crate::gpu::CEILINGS_SOURCE;
        assert!(source.contains(&format!("#define COPY_DEPTH {COPY_DEPTH}\n")));
        assert!(source.contains(&format!("#define CHAINS {CHAINS}\n")));
        assert!(source.contains(&format!("#define UNROLL {UNROLL}\n")));
        for name in [COPY, FMA_F32, FMA_F16] {
            assert!(source.contains(&format!("extern \"C\" __global__ void {name}(")), "{name}");
        }
    }
}
