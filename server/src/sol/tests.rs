use std::path::{Path, PathBuf};

use super::*;
use crate::compile::{CompileRequest, Nvrtc};
use crate::gpu::{DeviceInfo, Kernel, MeasuredCeilings, Outcome, Problem, Runner, RunnerSource, Timing};
use crate::spec::{parse_spec, SolSpec};

fn example(name: &str) -> KernelSpec {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples").join(name);
    let text = std::fs::read_to_string(&path).unwrap();
    parse_spec(&text).0.unwrap().kernels.remove(0)
}

fn measured_h100() -> Ceilings {
    Ceilings {
        copy_gbs: 3001.0,
        fp32_tflops: 60.0,
        fp16_tflops: 120.0,
        copy_times: Vec::new(),
        origin: CeilingsOrigin::Measured { device: "NVIDIA H100 80GB HBM3".into(), measured_at: 1_795_000_000 },
    }
}

/// Copy times by size as an H100 gives them (session 16's hand measurement: 27.14 µs for
/// 2 × 33.55 MB), at three of the sizes the worker times.
fn h100_copy_times() -> Vec<CopyTime> {
    vec![
        CopyTime { bytes: 2.0 * (16u64 << 20) as f64, us: 15.0 },
        CopyTime { bytes: 2.0 * (32u64 << 20) as f64, us: 27.0 },
        CopyTime { bytes: 2.0 * (1u64 << 30) as f64, us: 720.0 },
    ]
}

fn worker_figures(copy_gbs: f64, fp32_tflops: f64, fp16_tflops: f64) -> MeasuredCeilings {
    MeasuredCeilings { copy_gbs, fp32_tflops, fp16_tflops, copy_times: h100_copy_times() }
}

fn rmsnorm_8192() -> (KernelSpec, Shape) {
    (example("rmsnorm.cutune.toml"), Shape::from([("rows".to_string(), 8192), ("hidden".to_string(), 8192)]))
}

#[test]
fn rmsnorm_8192_at_3001_gbs_is_bound_at_89_4_us() {
    // The reference: in and out, 2 bytes each, at the H100's measured copy bandwidth.
    let (mut kernel, shape) = rmsnorm_8192();
    kernel.sol = SolSpec { bytes: Some("2 * rows * hidden * 2".into()), ..SolSpec::default() };
    let bound = bound_for(&kernel, &shape, None, &measured_h100()).unwrap();
    assert!((bound.bound_us() - 89.45).abs() < 0.01, "{bound:?}");
    assert_eq!(format_us(bound.bound_us()), "89.4 µs");
    assert_eq!(bound.limit(), Limit::Memory);
    assert_eq!(bound.compute_us, 0.0);
}

#[test]
fn default_bytes_count_inputs_and_outputs_once_and_in_outs_twice() {
    // The example's `out` is written only, `in` and `weight` are read.
    let (mut kernel, shape) = rmsnorm_8192();
    assert!(kernel.sol.bytes.is_none());
    assert_eq!(kernel.args.iter().find(|a| a.name == "out").and_then(|a| a.role), Some(crate::spec::Role::Output));
    let bound = bound_for(&kernel, &shape, None, &measured_h100()).unwrap();
    assert_eq!(bound.bytes, (2 * 8192 * 8192 * 2 + 8192 * 2) as f64);
    assert!((bound.memory_us - 89.45).abs() < 0.01, "{bound:?}");
    assert_eq!(bound.flops, 0.0);
    // Updated in place, the same buffer crosses twice.
    kernel.args.iter_mut().find(|a| a.name == "out").expect("out").role = Some(crate::spec::Role::InOut);
    let in_place = bound_for(&kernel, &shape, None, &measured_h100()).unwrap();
    assert_eq!(in_place.bytes, (3 * 8192 * 8192 * 2 + 8192 * 2) as f64);
}

#[test]
fn sol_bytes_and_flops_are_evaluated_with_the_configuration() {
    let (mut kernel, shape) = rmsnorm_8192();
    kernel.sol = SolSpec { bytes: Some("rows * hidden * BLOCK_SIZE".into()), flops: Some("3 * rows * hidden".into()), compute: None };
    let config = Configuration(vec![("BLOCK_SIZE".into(), 4), ("RMSNORM_UNROLL".into(), 4)]);
    let bound = bound_for(&kernel, &shape, Some(&config), &measured_h100()).unwrap();
    assert_eq!(bound.bytes, (8192 * 8192 * 4) as f64);
    assert_eq!(bound.flops, (3 * 8192 * 8192) as f64);
    assert_eq!(bound.compute, SolCompute::Fp32);
    assert!((bound.compute_us - 3.0 * 8192.0 * 8192.0 / 60e6).abs() < 1e-9, "{bound:?}");
    assert_eq!(bound.limit(), Limit::Memory);
    // Without a configuration, the defaults (BLOCK_SIZE = 256).
    assert_eq!(bound_for(&kernel, &shape, None, &measured_h100()).unwrap().bytes, (8192u64 * 8192 * 256) as f64);
}

#[test]
fn sgemm_is_compute_bound_at_the_rate_sol_compute_names() {
    let kernel = example("sgemm.cutune.toml");
    let shape = kernel.shapes[0].clone();
    let bound = bound_for(&kernel, &shape, None, &measured_h100()).unwrap();
    let flops = 2.0 * 4096f64.powi(3);
    assert_eq!(bound.flops, flops);
    assert_eq!(bound.limit(), Limit::Compute);
    assert!((bound.bound_us() - flops / 60e6).abs() < 1e-6, "{bound:?}");
    assert!(bound.memory_us < bound.compute_us);

    let mut fp16 = kernel.clone();
    fp16.sol.compute = Some(SolCompute::Fp16);
    let bound = bound_for(&fp16, &shape, None, &measured_h100()).unwrap();
    assert!((bound.compute_us - flops / 120e6).abs() < 1e-6, "{bound:?}");
    fp16.shapes.truncate(1);
    let run = RunBound::of(&fp16, &measured_h100()).unwrap();
    assert_eq!((run.bound_us, run.limit()), (bound.bound_us(), Limit::Compute));
    assert_eq!(run.headroom(2.0 * bound.bound_us()), "compute-bound: 50% of the 1145.3 µs bound (120.0 TFLOPS measured FP16 rate)");
}

#[test]
fn a_run_bound_sums_the_shapes_bounds() {
    let kernel = example("softmax.cutune.toml");
    let ceilings = measured_h100();
    let run = RunBound::of(&kernel, &ceilings).unwrap();
    let each: Vec<f64> = kernel.shapes.iter().map(|s| bound_for(&kernel, s, None, &ceilings).unwrap().bound_us()).collect();
    assert_eq!(each.len(), 2);
    assert!((run.bound_us - each.iter().sum::<f64>()).abs() < 1e-9);
    assert_eq!(run.limit(), Limit::Memory);
    assert!(run.faster_than_light(run.bound_us * 0.9, 0.01) && !run.faster_than_light(run.bound_us * 0.97, 0.01));
    assert!(run.headroom(run.bound_us * 2.0).starts_with("memory-bound: 50% of the "), "{}", run.headroom(run.bound_us * 2.0));
    assert!(run.headroom(run.bound_us * 2.0).ends_with(" bound (3001 GB/s measured copy bandwidth)"));
}

#[test]
fn bad_expressions_name_the_field() {
    let (kernel, shape) = rmsnorm_8192();
    let ceilings = measured_h100();
    let with_sol = |bytes: Option<&str>, flops: Option<&str>| {
        let mut kernel = kernel.clone();
        kernel.sol = SolSpec { bytes: bytes.map(String::from), flops: flops.map(String::from), compute: None };
        bound_for(&kernel, &shape, None, &ceilings).unwrap_err()
    };
    let error = with_sol(Some("rows * width"), None);
    assert!(error.starts_with("sol.bytes `rows * width`: "), "{error}");
    assert!(error.contains("width"), "{error}");
    assert_eq!(with_sol(None, Some("rows - 2 * rows")), "sol.flops `rows - 2 * rows` is -8192; it must be a number ≥ 0");
    assert!(with_sol(None, Some("rows +")).starts_with("sol.flops `rows +`: "));

    let mut broken = kernel.clone();
    broken.args[1].length = Some("rows * width".into());
    let error = bound_for(&broken, &shape, None, &ceilings).unwrap_err();
    assert!(error.starts_with("length of argument `in` `rows * width`: "), "{error}");

    let zero = Ceilings { copy_gbs: 0.0, ..measured_h100() };
    assert!(bound_for(&kernel, &shape, None, &zero).unwrap_err().contains("copy bandwidth is 0"));
}

#[test]
fn faster_than_light_needs_more_than_the_noise_margin() {
    // At least 5% below the bound.
    assert!(!faster_than_light(96.0, 100.0, 0.0));
    assert!(!faster_than_light(95.5, 100.0, 0.01));
    assert!(faster_than_light(94.0, 100.0, 0.0));
    // A noisy timing widens the margin to three spreads.
    assert!(!faster_than_light(71.0, 100.0, 0.1));
    assert!(faster_than_light(69.0, 100.0, 0.1));
    // Noise as large as the bound flags nothing; a spread that is not a number counts as none.
    assert!(!faster_than_light(1.0, 100.0, 0.5));
    assert!(faster_than_light(90.0, 100.0, f64::NAN));
    // Slower than the bound is never flagged.
    assert!(!faster_than_light(150.0, 100.0, 0.0));
}

#[test]
fn headroom_says_which_ceiling_and_how_close() {
    assert!((percent_of_sol(89.45, 96.2) - 93.0).abs() < 0.1);
    let mut bound = RunBound { bound_us: 89.449, bytes: 268_451_840.0, memory_us: 89.449, compute_us: 0.0, compute: SolCompute::Fp32, ceilings: measured_h100() };
    assert_eq!(bound.headroom(96.2), "memory-bound: 93% of the 89.4 µs bound (3001 GB/s measured copy bandwidth)");
    bound.ceilings = Ceilings::datasheet("NVIDIA H100 80GB HBM3").unwrap();
    assert_eq!(bound.headroom(96.2), "memory-bound: 93% of the 89.4 µs bound (3350 GB/s datasheet memory bandwidth of the H100 SXM)");
    bound.ceilings = Ceilings { copy_times: h100_copy_times(), ..measured_h100() };
    assert_eq!(bound.headroom(96.2), "memory-bound: 93% of the 89.4 µs bound (a measured copy of the same bytes: 3001 GB/s at that size)");
}

#[test]
fn a_copy_takes_the_measured_time_of_its_size() {
    let ceilings = Ceilings { copy_times: h100_copy_times(), ..measured_h100() };
    let mib = (1u64 << 20) as f64;
    // At a measured size, its time; between two, on the line joining them.
    assert_eq!(ceilings.copy_us(32.0 * mib), 15.0);
    assert!((ceilings.copy_us(48.0 * mib) - 21.0).abs() < 1e-9, "{}", ceilings.copy_us(48.0 * mib));
    assert_eq!(ceilings.copy_us(64.0 * mib), 27.0);
    // Below the smallest, in proportion: the smallest copy's fixed costs are not assumed.
    assert!((ceilings.copy_us(16.0 * mib) - 7.5).abs() < 1e-9);
    assert_eq!(ceilings.copy_us(0.0), 0.0);
    // Above the largest, at the largest's rate.
    assert!((ceilings.copy_us(4096.0 * mib) - 1440.0).abs() < 1e-9);
    // Without copy times (datasheet figures), the bandwidth.
    assert!((measured_h100().copy_us(3001.0e3) - 1.0).abs() < 1e-12);
}

#[test]
fn rmsnorms_bound_is_a_copy_of_its_bytes_at_their_size() {
    // 4095 × 4096 fp16 in and out plus the 8 KiB weight: 67.1 MB, just over 2 × 32 MiB, at
    // about the 27 µs that a copy of 2 × 32 MiB takes, where the large-buffer bandwidth says 22.4.
    let kernel = example("rmsnorm.cutune.toml");
    let shape = Shape::from([("rows".to_string(), 4095), ("hidden".to_string(), 4096)]);
    let by_bandwidth = bound_for(&kernel, &shape, None, &measured_h100()).unwrap();
    assert!((by_bandwidth.memory_us - 22.36).abs() < 0.01, "{by_bandwidth:?}");
    let by_size = bound_for(&kernel, &shape, None, &Ceilings { copy_times: h100_copy_times(), ..measured_h100() }).unwrap();
    assert_eq!(by_size.bytes, by_bandwidth.bytes);
    assert!((by_size.memory_us - 27.0).abs() < 0.05, "{by_size:?}");
}

#[test]
fn copy_times_never_say_less_takes_longer() {
    let noisy = vec![CopyTime { bytes: 4.0, us: 3.0 }, CopyTime { bytes: 1.0, us: 2.0 }, CopyTime { bytes: 2.0, us: 4.0 }];
    let lowered = measure::never_slower_for_less(noisy);
    let pairs: Vec<(f64, f64)> = lowered.iter().map(|t| (t.bytes, t.us)).collect();
    assert_eq!(pairs, [(1.0, 2.0), (2.0, 3.0), (4.0, 3.0)]);
}

#[test]
fn datasheet_ceilings_are_labelled_wherever_shown() {
    let ceilings = Ceilings::datasheet("NVIDIA H100 80GB HBM3").unwrap();
    assert_eq!(ceilings.origin, CeilingsOrigin::Datasheet { entry: "H100 SXM".into() });
    assert!(matches!(ceilings.origin, CeilingsOrigin::Datasheet { .. }));
    assert_eq!((ceilings.copy_gbs, ceilings.fp32_tflops, ceilings.fp16_tflops), (3350.0, 66.9, 133.8));
    assert_eq!(ceilings.to_string(), "copy 3350 GB/s, FP32 66.9 TFLOPS, FP16 133.8 TFLOPS (datasheet figures of the H100 SXM, not measured)");
    assert_eq!(ceilings.describe_rate(SolCompute::Fp32), "66.9 TFLOPS datasheet FP32 rate of the H100 SXM");
    assert_eq!(Ceilings::datasheet("Some Future GPU"), None);

    let measured = measured_h100();
    assert!(matches!(measured.origin, CeilingsOrigin::Measured { .. }));
    assert_eq!(measured.to_string(), "copy 3001 GB/s, FP32 60.0 TFLOPS, FP16 120.0 TFLOPS (measured on NVIDIA H100 80GB HBM3 at 2026-11-18T11:06:40Z)");
}

#[test]
fn ceilings_serialise_with_their_origin() {
    let json = serde_json::to_value(measured_h100()).unwrap();
    assert_eq!(json["origin"], serde_json::json!({"kind": "measured", "device": "NVIDIA H100 80GB HBM3", "measured_at": 1_795_000_000u64}));
    assert_eq!(serde_json::from_value::<Ceilings>(json).unwrap(), measured_h100());
    let datasheet = serde_json::to_value(Ceilings::datasheet("Tesla T4").unwrap()).unwrap();
    assert_eq!(datasheet["origin"], serde_json::json!({"kind": "datasheet", "entry": "T4"}));
}

/// A runner whose device "measures" fixed figures, or fails.
struct FakeDevice {
    device: DeviceInfo,
    figures: Result<MeasuredCeilings, String>,
    /// The cubins it was asked to measure with, and whether each existed then.
    calls: Vec<(PathBuf, bool)>,
}

impl FakeDevice {
    fn new(name: &str, figures: Result<MeasuredCeilings, String>) -> FakeDevice {
        let device = DeviceInfo { name: name.into(), driver_version: 13000, ..DeviceInfo::datasheet("sm_90").unwrap() };
        FakeDevice { device, figures, calls: Vec::new() }
    }
}

impl Runner for FakeDevice {
    fn device(&self) -> &DeviceInfo {
        &self.device
    }
    fn source(&self) -> &RunnerSource {
        &RunnerSource::Device
    }
    fn needs_code(&self) -> bool {
        true
    }
    fn prepare(&mut self, _: &[Problem], _: &Kernel, _: &Path) -> anyhow::Result<Vec<Timing>> {
        unreachable!("the ceilings need no problems")
    }
    fn measure(&mut self, _: &Configuration, _: Option<&Kernel>) -> Outcome {
        unreachable!("the ceilings measure no candidate")
    }
    fn ceilings(&mut self, cubin: &Path) -> anyhow::Result<MeasuredCeilings> {
        self.calls.push((cubin.to_path_buf(), cubin.is_file()));
        self.figures.clone().map_err(anyhow::Error::msg)
    }
}

/// pip's NVRTC, as the compile tests use it (a failure, not a skip, without it).
fn nvrtc() -> Nvrtc {
    Nvrtc::locate(None).unwrap_or_else(|e| panic!("these tests compile gpu/ceilings.cu: run `scripts/test` or set CUTUNE_NVRTC.\n{e}"))
}

fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("cutune-sol-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

#[test]
fn the_ceiling_kernels_compile_for_every_architecture_without_spills() {
    let nvrtc = nvrtc();
    for arch in ["sm_75", "sm_80", "sm_86", "sm_89", "sm_90"] {
        let output = nvrtc.compile(&CompileRequest::new(crate::gpu::CEILINGS_SOURCE, "cutune_ceilings.cu", arch)).unwrap_or_else(|f| panic!("{arch}: {f}"));
        assert!(output.cubin.is_some(), "{arch}");
        for kernel in &output.kernels {
            assert_eq!((kernel.spill_store_bytes, kernel.spill_load_bytes, kernel.stack_bytes), (0, 0, 0), "{arch}: {kernel:?}");
        }
        let mut names: Vec<&str> = output.kernels.iter().map(|k| k.name.as_str()).collect();
        names.sort();
        assert_eq!(names, ["cutune_copy", "cutune_fma_f16", "cutune_fma_f32"], "{arch}");
    }
}

#[test]
fn measured_ceilings_are_cached_per_device_and_refreshed_on_request() {
    let dir = scratch("measured");
    let nvrtc = nvrtc();
    let mut runner = FakeDevice::new("NVIDIA H100 80GB HBM3", Ok(worker_figures(3001.0, 60.0, 120.0)));
    let found = measured(&mut runner, Some(&nvrtc), &dir, false).unwrap();
    assert!(!found.cached && found.warnings.is_empty(), "{found:?}");
    assert_eq!((found.ceilings.copy_gbs, found.ceilings.fp32_tflops, found.ceilings.fp16_tflops), (3001.0, 60.0, 120.0));
    assert_eq!(found.ceilings.copy_times, h100_copy_times(), "kept, and cached with the rest");
    assert!(matches!(&found.ceilings.origin, CeilingsOrigin::Measured { device, .. } if device == "NVIDIA H100 80GB HBM3"));
    assert_eq!(found.file, cache::file_for(&dir, &runner.device));
    assert_eq!(runner.calls.len(), 1);
    let (cubin, existed) = &runner.calls[0];
    assert!(*existed && !cubin.exists(), "the cubin exists while measuring and is removed after");

    let again = measured(&mut runner, Some(&nvrtc), &dir, false).unwrap();
    assert!(again.cached);
    assert_eq!(again.ceilings, found.ceilings);
    assert_eq!(runner.calls.len(), 1, "served from the cache");
    // The cache needs neither NVRTC nor the device.
    assert!(measured(&mut runner, None, &dir, false).unwrap().cached);

    runner.figures = Ok(worker_figures(2900.0, 59.0, 118.0));
    let refreshed = measured(&mut runner, Some(&nvrtc), &dir, true).unwrap();
    assert!(!refreshed.cached);
    assert_eq!(refreshed.ceilings.copy_gbs, 2900.0);
    assert_eq!(cache::load(&found.file).unwrap().unwrap().copy_gbs, 2900.0, "the refresh is stored");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_corrupt_cache_is_measured_again_with_a_warning() {
    let dir = scratch("corrupt");
    let mut runner = FakeDevice::new("NVIDIA H100 80GB HBM3", Ok(worker_figures(3001.0, 60.0, 120.0)));
    let file = cache::file_for(&dir, &runner.device);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(&file, "not json").unwrap();
    let found = measured(&mut runner, Some(&nvrtc()), &dir, false).unwrap();
    assert!(!found.cached);
    assert_eq!(found.warnings.len(), 1);
    assert!(found.warnings[0].contains("are not readable"), "{:?}", found.warnings);
    assert_eq!(cache::load(&file).unwrap(), Some(found.ceilings));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn without_a_measurement_the_datasheet_serves_labelled_or_nothing_does() {
    let dir = scratch("fallback");
    let mut runner = FakeDevice::new("NVIDIA H100 80GB HBM3", Err("the kernel faulted".into()));
    let why = measured(&mut runner, Some(&nvrtc()), &dir, false).unwrap_err();
    assert_eq!(why, "measuring the ceilings of NVIDIA H100 80GB HBM3 failed: the kernel faulted");
    let ceilings = ceilings_for(&mut runner, Some(&nvrtc()), &dir, false).unwrap();
    assert_eq!(ceilings, Ceilings::datasheet("NVIDIA H100 80GB HBM3").unwrap());
    assert!(!cache::file_for(&dir, &runner.device).exists(), "datasheet figures are not cached");

    // No NVRTC: nothing to measure with.
    let why = measured(&mut runner, None, &dir, false).unwrap_err();
    assert!(why.starts_with("NVRTC was not found"), "{why}");

    let mut unknown = FakeDevice::new("Some Future GPU", Err("the kernel faulted".into()));
    let error = ceilings_for(&mut unknown, None, &dir, false).unwrap_err().to_string();
    assert!(error.ends_with("no datasheet figures for Some Future GPU, so there is no speed-of-light bound"), "{error}");

    // Unbelievable figures are refused, not cached.
    let mut zero = FakeDevice::new("NVIDIA H100 80GB HBM3", Ok(worker_figures(0.0, 60.0, 120.0)));
    let why = measured(&mut zero, Some(&nvrtc()), &dir, false).unwrap_err();
    assert!(why.contains("not believable: the copy bandwidth is 0"), "{why}");
    assert!(!cache::file_for(&dir, &zero.device).exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_replay_has_no_device_to_measure_and_gets_the_labelled_datasheet() {
    let recording = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/replay/rmsnorm_8192_h100.t4.json");
    let mut replay = crate::gpu::replay::ReplayRunner::from_file(&recording).unwrap();
    let dir = scratch("replay");
    let why = measured(&mut replay, Some(&nvrtc()), &dir, false).unwrap_err();
    assert!(why.contains("failed: a replay of") && why.contains("rmsnorm_8192_h100.t4.json has no device to measure"), "{why}");
    let ceilings = ceilings_for(&mut replay, None, &dir, false).unwrap();
    assert_eq!(ceilings.origin, CeilingsOrigin::Datasheet { entry: "H100 SXM".into() });
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn default_bytes_count_a_texture_once_at_its_texels_times_its_texel_size() {
    let (mut kernel, shape) = rmsnorm_8192();
    let buffers = bound_for(&kernel, &shape, None, &measured_h100()).unwrap().bytes;
    let texture = crate::spec::TextureSpec {
        extent: vec!["hidden".into(), "rows".into()],
        layout: Default::default(),
        channels: 4,
        filter: Default::default(),
        address: Default::default(),
        normalized_coords: false,
        read: Default::default(),
    };
    kernel.args.push(crate::spec::ArgSpec { name: "pixels".into(), element: Some(crate::spec::Dtype::U8), texture: Some(texture), ..crate::spec::ArgSpec::default() });
    let bound = bound_for(&kernel, &shape, None, &measured_h100()).unwrap();
    assert_eq!(bound.bytes - buffers, (8192 * 8192 * 4) as f64);
}
