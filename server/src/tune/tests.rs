//! The tuning loop on a scripted runner that runs no code (as a replay): the speed-of-light
//! bound from the datasheet, a time faster than it flagged and never best, and the stop near it.

use std::path::Path;

use super::*;
use crate::gpu::{DeviceInfo, Problem, Timing, Verdict};
use crate::spec::{self, Shape};

/// Times each configuration by its `BLOCK_SIZE`, as recorded measurements.
struct Scripted {
    device: DeviceInfo,
    source: RunnerSource,
}

impl Runner for Scripted {
    fn device(&self) -> &DeviceInfo {
        &self.device
    }
    fn source(&self) -> &RunnerSource {
        &self.source
    }
    fn needs_code(&self) -> bool {
        false
    }
    fn prepare(&mut self, problems: &[Problem], _: &Kernel, _: &Path) -> Result<Vec<Timing>> {
        Ok(problems.iter().map(|_| timing(60.0)).collect())
    }
    fn measure(&mut self, config: &Configuration, _: Option<&Kernel>) -> Outcome {
        let us = match config.get("BLOCK_SIZE") {
            Some(1024) => 15.0,
            Some(512) => 20.5,
            _ => 30.0,
        };
        Outcome::Measured { timings: vec![timing(us)], verdict: Verdict::Unchecked }
    }
}

fn timing(median_us: f64) -> Timing {
    Timing { median_us, min_us: median_us, max_us: median_us, spread: 0.001, runs: 10 }
}

#[test]
fn a_time_faster_than_light_is_never_best_and_the_search_stops_near_the_bound() {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/rmsnorm.cutune.toml")).unwrap();
    let mut kernel = spec::parse_spec(&text).0.unwrap().kernels.remove(0);
    kernel.params.retain(|p| p.name == "BLOCK_SIZE");
    kernel.params[0].values = vec![1024, 256, 512, 128];
    kernel.shapes = vec![Shape::from([("rows".to_string(), 4095), ("hidden".to_string(), 4096)])];
    let dir = std::env::temp_dir().join(format!("cutune-tune-sol-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let store = Store::open(&dir).unwrap();
    // No cached ceilings and no NVRTC: the datasheet's (3350 GB/s for the H100 SXM).
    let tools = Tools { nvrtc: None, cache: CubinCache::new(dir.join("cubins")), store: &store, ceilings_dir: dir.join("ceilings") };
    let mut device = DeviceInfo::datasheet("sm_90").unwrap();
    device.name = "NVIDIA H100 80GB HBM3".into();
    let mut runner = Scripted { device, source: RunnerSource::Replay { from: "scripted".into() } };
    let target = Target { file: "rmsnorm.cu".into(), kernel, source: "// templatized".into(), kernel_sha256: String::new() };
    let options = TuneOptions {
        strategy: StrategyName::BruteForce,
        seed: 0,
        budget: Some(10),
        time_limit: None,
        patience: None,
        target_speedup: None,
        compile_threads: 1,
        batch_size: 1,
        reuse_stored: false,
        verify_best: true,
        sol_stop: Some(SOL_STOP),
    };
    let report = tune(&target, &mut runner, &tools, &options, &mut Silent).unwrap();

    // In and out, 4095 × 4096 f16 each, plus the weight: 67.1 MB at 3350 GB/s.
    let bound = report.sol.as_ref().expect("a bound");
    assert!((bound.bound_us - (2.0 * 4095.0 * 4096.0 * 2.0 + 4096.0 * 2.0) / 3350e3).abs() < 1e-9, "{bound:?}");
    assert!(bound.ceilings.to_string().contains("datasheet figures of the H100 SXM, not measured"), "{}", bound.ceilings);
    let statuses: Vec<(i64, &str)> = report.rows.iter().map(|r| (r.config.get("BLOCK_SIZE").unwrap(), r.status.as_str())).collect();
    assert_eq!(statuses.len(), 3, "stops after 512, before 128: {statuses:?}");
    assert!(statuses[0].1.starts_with("faster than the speed of light: 15.0 µs against a bound of 20.0 µs"), "{statuses:?}");
    assert_eq!(report.best.as_ref().map(|b| b.config.get("BLOCK_SIZE")), Some(Some(512)));
    assert!((report.best.as_ref().unwrap().sol_percent.unwrap() - 100.0 * bound.bound_us / 20.5).abs() < 1e-9);
    assert_eq!(report.stop_reason, "within 95% of the speed of light: best 20.5 µs against the 20.0 µs bound");
    assert_eq!(report.failures.get("faster than light"), Some(&1));

    // The store agrees: the flagged configuration failed verification and is not best.
    let key = result_key(&target, &runner, None).unwrap();
    let failed = store.verifications(&key).unwrap();
    assert_eq!((failed.len(), failed[0].passed, failed[0].config.get("BLOCK_SIZE")), (1, false, Some(1024)));
    assert_eq!(store.best(&key).unwrap().map(|e| e.config.get("BLOCK_SIZE")), Some(Some(512)));
    assert_eq!(store.runs("rmsnorm_kernel").unwrap()[0].info.sol.as_ref(), Some(bound));
}
