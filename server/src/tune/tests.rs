//! The tuning loop on a scripted runner that runs no code (as a replay): the speed-of-light
//! bound from the datasheet, a time faster than it flagged and never best, and the stop near it;
//! and the roles a runner of code settles, counted in the bound.

use std::path::Path;

use super::*;
use crate::gpu::{DeviceInfo, Kernel, Problem, Timing, Verdict};
use crate::spec::{self, Shape};

/// Times each configuration by its `BLOCK_SIZE`, as recorded measurements; the original at
/// `baseline_us`. With `settles`, it stands for a runner of code that settles roles so, and
/// counts how often it is asked.
struct Scripted {
    device: DeviceInfo,
    source: RunnerSource,
    baseline_us: f64,
    settles: Option<crate::gpu::SettledRoles>,
    asked_to_settle: usize,
}

impl Runner for Scripted {
    fn device(&self) -> &DeviceInfo {
        &self.device
    }
    fn source(&self) -> &RunnerSource {
        &self.source
    }
    fn needs_code(&self) -> bool {
        self.settles.is_some()
    }
    fn prepare(&mut self, problems: &[Problem], _: &Kernel, _: &Path) -> Result<Vec<Timing>> {
        Ok(problems.iter().map(|_| timing(self.baseline_us)).collect())
    }
    fn settle_roles(&mut self, _: &Kernel) -> crate::gpu::SettledRoles {
        self.asked_to_settle += 1;
        self.settles.clone().expect("asked only of a runner of code")
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

/// rmsnorm's spec narrowed to four block sizes on its main shape, tuned by brute force on the
/// scripted runner with the original at `baseline_us`; the store is in a fresh `dir_name`.
fn tune_scripted_rmsnorm(dir_name: &str, baseline_us: f64, check: impl FnOnce(&Store, &Target, &Scripted, TuneReport)) {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/rmsnorm.cutune.toml")).unwrap();
    let mut kernel = spec::parse_spec(&text).0.unwrap().kernels.remove(0);
    kernel.params.retain(|p| p.name == "BLOCK_SIZE");
    kernel.params[0].values = vec![1024, 256, 512, 128];
    // Restrictions name the parameters dropped above.
    kernel.restrictions.clear();
    kernel.shapes = vec![Shape::from([("rows".to_string(), 4095), ("hidden".to_string(), 4096)])];
    let dir = std::env::temp_dir().join(format!("{dir_name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let store = Store::open(&dir).unwrap();
    // No cached ceilings and no NVRTC: the datasheet's (3350 GB/s for the H100 SXM).
    let tools = Tools { nvrtc: None, cache: CubinCache::new(dir.join("cubins")), store: &store, ceilings_dir: dir.join("ceilings") };
    let mut device = DeviceInfo::datasheet("sm_90").unwrap();
    device.name = "NVIDIA H100 80GB HBM3".into();
    let mut runner = Scripted { device, source: RunnerSource::Replay { from: "scripted".into() }, baseline_us, settles: None, asked_to_settle: 0 };
    let target = Target { file: "rmsnorm.cu".into(), kernel, source: "// templatized".into(), kernel_sha256: String::new() };
    let options = TuneOptions { compile_threads: 1, batch_size: 1, reuse_stored: false, ..TuneOptions::brute_force(Some(10)) };
    let report = tune(&target, &mut runner, &tools, &options, &mut Silent).unwrap();
    check(&store, &target, &runner, report);
}

#[test]
fn an_original_faster_than_the_bound_drops_the_bound_instead_of_every_configuration() {
    // The bound is 20.0 µs (see below); the original runs in 10 µs, so the spec's lengths are
    // more than the kernel moves.
    tune_scripted_rmsnorm("cutune-tune-sol-gather", 10.0, |_, _, _, report| {
        assert_eq!(report.sol, None);
        assert!(report.sol_missing.as_deref().is_some_and(|why| why.starts_with("the original runs in 10.00 µs, under the 20.0")), "{:?}", report.sol_missing);
        assert_eq!(report.failures.get("faster than light"), None, "{:?}", report.failures);
        assert_eq!(report.best.as_ref().map(|b| b.config.get("BLOCK_SIZE")), Some(Some(1024)));
    });
}

#[test]
fn a_time_faster_than_light_is_never_best_and_the_search_stops_near_the_bound() {
    tune_scripted_rmsnorm("cutune-tune-sol", 60.0, check_flagged_and_stopped);
}

fn check_flagged_and_stopped(store: &Store, target: &Target, runner: &Scripted, report: TuneReport) {
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
    let key = result_key(target, runner, None).unwrap();
    let failed = store.verifications(&key).unwrap();
    assert_eq!((failed.len(), failed[0].passed, failed[0].config.get("BLOCK_SIZE")), (1, false, Some(1024)));
    assert_eq!(store.best(&key).unwrap().map(|e| e.config.get("BLOCK_SIZE")), Some(Some(512)));
    assert_eq!(store.runs("rmsnorm_kernel").unwrap()[0].info.sol.as_ref(), Some(bound));
}

/// A device runner that overlaps: `start_measure` returns while "measuring", and every call
/// lands in a log shared with the observer, so the order of measuring and recording shows.
struct Overlapping {
    device: DeviceInfo,
    source: RunnerSource,
    log: std::rc::Rc<std::cell::RefCell<Vec<String>>>,
    measuring: Option<Configuration>,
}

impl Runner for Overlapping {
    fn device(&self) -> &DeviceInfo {
        &self.device
    }
    fn source(&self) -> &RunnerSource {
        &self.source
    }
    fn needs_code(&self) -> bool {
        true
    }
    fn prepare(&mut self, problems: &[Problem], _: &Kernel, _: &Path) -> Result<Vec<Timing>> {
        Ok(problems.iter().map(|_| timing(60.0)).collect())
    }
    fn set_cutoff(&mut self, cutoff_us: Vec<f64>) {
        self.log.borrow_mut().push(format!("cutoff {:.1}", cutoff_us[0]));
    }
    fn measure(&mut self, _: &Configuration, _: Option<&Kernel>) -> Outcome {
        panic!("the tuner starts and finishes measurements on a runner that overlaps")
    }
    fn start_measure(&mut self, config: &Configuration, kernel: Option<&Kernel>) -> crate::gpu::Started {
        assert!(kernel.is_some() && self.measuring.is_none(), "one measurement at a time, with code");
        self.log.borrow_mut().push(format!("start {config}"));
        self.measuring = Some(config.clone());
        crate::gpu::Started::Running
    }
    fn finish_measure(&mut self) -> Outcome {
        let config = self.measuring.take().expect("a measurement is running");
        self.log.borrow_mut().push(format!("finish {config}"));
        // Larger blocks are faster here: every candidate becomes the new best.
        let us = 100.0 - config.get("BLOCK").unwrap() as f64 / 10.0;
        Outcome::Measured { timings: vec![timing(us)], verdict: Verdict::Pass { max_abs_error: 0.0, max_rel_error: 0.0 } }
    }
}

struct Logging {
    log: std::rc::Rc<std::cell::RefCell<Vec<String>>>,
    cancel_after: usize,
}

impl Observer for Logging {
    fn evaluated(&mut self, evaluation: &Evaluation, _: &Progress) {
        self.log.borrow_mut().push(format!("recorded {}", evaluation.config));
    }
    fn cancelled(&self) -> bool {
        self.log.borrow().iter().filter(|l| l.starts_with("recorded")).count() >= self.cancel_after
    }
}

/// Tunes the doctor's probe kernel (compiled for real, cached after the first run) on an
/// [`Overlapping`] runner; returns the log of the second run.
fn overlapped_run(cancel_after: usize) -> (Vec<String>, TuneReport) {
    let kernel = spec::parse_spec(&crate::cli::doctor::probe_spec()).0.unwrap().kernels.remove(0);
    let dir = std::env::temp_dir().join(format!("cutune-tune-overlap-{}-{cancel_after}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let store = Store::open(&dir).unwrap();
    let nvrtc = crate::compile::Nvrtc::locate(None).expect("the tune tests compile with NVRTC: run `scripts/test`, which installs it");
    let tools = Tools { nvrtc: Some(&nvrtc), cache: CubinCache::new(dir.join("cubins")), store: &store, ceilings_dir: dir.join("ceilings") };
    let device = DeviceInfo::datasheet("sm_90").unwrap();
    let source = crate::cli::doctor::PROBE_SOURCE.to_string();
    let target = Target { file: "doctor_probe.cu".into(), kernel, source, kernel_sha256: String::new() };
    let options = TuneOptions { compile_threads: 2, batch_size: 4, reuse_stored: false, verify_best: false, sol_stop: None, ..TuneOptions::brute_force(None) };
    let mut last = None;
    for _ in 0..2 {
        let log = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
        let mut runner = Overlapping { device: device.clone(), source: RunnerSource::Device, log: log.clone(), measuring: None };
        let report = tune(&target, &mut runner, &tools, &options, &mut Logging { log: log.clone(), cancel_after }).unwrap();
        assert!(runner.measuring.is_none(), "no measurement is left running");
        last = Some((log.take(), report));
    }
    last.unwrap()
}

#[test]
fn the_next_candidate_is_measured_while_the_last_one_is_recorded() {
    let (log, report) = overlapped_run(usize::MAX);
    // Every cubin was cached by the first run, so all four are ready at once: each candidate
    // starts right after the one before it finished and raced, before that one is recorded.
    assert_eq!(
        log,
        [
            "start BLOCK=64",
            "finish BLOCK=64",
            "cutoff 103.0",
            "start BLOCK=128",
            "recorded BLOCK=64",
            "finish BLOCK=128",
            "cutoff 95.9",
            "start BLOCK=256",
            "recorded BLOCK=128",
            "finish BLOCK=256",
            "cutoff 81.8",
            "start BLOCK=512",
            "recorded BLOCK=256",
            "finish BLOCK=512",
            "cutoff 53.7",
            "recorded BLOCK=512",
        ]
    );
    assert_eq!(report.rows.len(), 4);
    assert_eq!(report.best.as_ref().map(|b| b.config.get("BLOCK")), Some(Some(512)));
    assert_eq!(report.stop_reason, "space exhausted");
}

#[test]
fn a_cancelled_run_records_the_candidate_still_being_measured() {
    let (log, report) = overlapped_run(2);
    let tail: Vec<&str> = log.iter().map(String::as_str).skip_while(|l| *l != "recorded BLOCK=128").collect();
    assert_eq!(tail, ["recorded BLOCK=128", "finish BLOCK=256", "cutoff 81.8", "recorded BLOCK=256"]);
    assert_eq!(report.rows.len(), 3);
    assert_eq!(report.stop_reason, "cancelled");
}

#[test]
fn the_search_draws_only_values_the_restrictions_leave_on_the_programs_shapes() {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/rmsnorm.cutune.toml")).unwrap();
    let mut kernel = spec::parse_spec(&text).0.unwrap().kernels.remove(0);
    // `hidden` is 4096 on the one shape: each thread's share of the row is a whole number of
    // vectors only at some widths, and the block then follows a chain.
    kernel.restrictions.push("(hidden // BLOCK_SIZE) % (4 * RMSNORM_VEC) == 0 and RMSNORM_VEC == 1".into());
    let space = SpecSpace::new(&kernel);
    let values = |name: &str| space.params().iter().find(|(n, _)| n == name).map(|(_, v)| v.clone()).unwrap();
    assert_eq!(values("RMSNORM_VEC"), [1]);
    assert_eq!(values("BLOCK_SIZE"), [32, 64, 128, 256, 512, 1024], "4096 // 1024 is 4: every block divides");
    kernel.shapes[0].insert("hidden".into(), 2048);
    assert_eq!(SpecSpace::new(&kernel).params().iter().find(|(n, _)| n == "BLOCK_SIZE").unwrap().1, [32, 64, 128, 256, 512], "2048 // 1024 is 2");
    // The spec's own values stay in the report and the store: only the search's draws narrow.
    assert_eq!(kernel.params.iter().find(|p| p.name == "BLOCK_SIZE").unwrap().values, [32, 64, 128, 256, 512, 1024]);
}

fn fused_add_rmsnorm() -> KernelSpec {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/fused_add_rmsnorm.cutune.toml")).unwrap();
    spec::parse_spec(&text).0.unwrap().kernels.remove(0)
}

#[test]
fn buffers_the_original_only_writes_are_counted_once_in_the_bound() {
    use crate::gpu::SettledRoles;
    let kernel = fused_add_rmsnorm();
    let roles = |k: &KernelSpec| k.args.iter().filter_map(|a| a.role.map(|r| (a.name.clone(), r))).collect::<Vec<_>>();
    let device = DeviceInfo::datasheet("sm_90").unwrap();
    let settling = |settled| Scripted { device: device.clone(), source: RunnerSource::Device, baseline_us: 10.0, settles: Some(settled), asked_to_settle: 0 };
    let baseline = Kernel { module: crate::gpu::Module { cubin: "/cache/k.cubin".into(), function: "k".into() }, launches: Vec::new() };
    let ceilings = crate::sol::Ceilings::datasheet("NVIDIA H100 80GB HBM3").unwrap();

    let mut runner = settling(SettledRoles::WrittenOnly { buffers: vec!["residual".into()] });
    let (counted, settled) = baseline::settle_roles(&kernel, &mut runner, &baseline);
    assert_eq!(settled, Some(SettledRoles::WrittenOnly { buffers: vec!["residual".into()] }));
    assert_eq!(roles(&counted), [("input".into(), spec::Role::InOut), ("residual".into(), spec::Role::Output), ("weight".into(), spec::Role::Input)]);
    // The bound moves by one pass over `residual`: its bytes once instead of twice.
    let (before, after) = (crate::sol::RunBound::of(&kernel, &ceilings).unwrap(), crate::sol::RunBound::of(&counted, &ceilings).unwrap());
    let residual_bytes: f64 = kernel.problem_shapes().map(|shape| (shape["rows"] * shape["hidden"] * 2) as f64).sum();
    assert_eq!(before.bytes - after.bytes, residual_bytes);

    // Undecided, the spec's roles stand.
    let mut runner = settling(SettledRoles::Undecided { why: "varies".into() });
    assert_eq!(roles(&baseline::settle_roles(&kernel, &mut runner, &baseline).0), roles(&kernel));

    // The spec's own `bytes` is the user's word: nothing to settle, nothing run.
    let mut given = kernel.clone();
    given.sol.bytes = Some("4 * rows * hidden * 2".into());
    let mut runner = settling(SettledRoles::WrittenOnly { buffers: vec!["residual".into()] });
    assert_eq!(baseline::settle_roles(&given, &mut runner, &baseline).1, None);
    assert_eq!(runner.asked_to_settle, 0);
}

#[test]
fn an_original_that_differs_from_itself_explains_why_nothing_passed() {
    use crate::gpu::SettledRoles;
    let device = DeviceInfo::datasheet("sm_90").unwrap();
    let baseline = Kernel { module: crate::gpu::Module { cubin: "/cache/k.cubin".into(), function: "k".into() }, launches: Vec::new() };
    let racing = SettledRoles::Undecided { why: "the original gives another output on a second run of the same input (`dst`[3], 9 elements differ)".into() };
    let mut runner = Scripted { device, source: RunnerSource::Device, baseline_us: 10.0, settles: Some(racing), asked_to_settle: 0 };
    let wrong = BTreeMap::from([("wrong output".to_string(), 30)]);
    assert_eq!(baseline::unsteady_original(false, &wrong, &mut runner, &baseline).as_deref(), Some("the original gives another output on a second run of the same input (`dst`[3], 9 elements differ)"));
    assert_eq!(runner.asked_to_settle, 1);
    // Something passed, or something failed otherwise (a fault may be the candidate's own): the
    // original is not run again.
    assert_eq!(baseline::unsteady_original(true, &wrong, &mut runner, &baseline), None);
    let mixed = BTreeMap::from([("wrong output".to_string(), 29), ("launch failed".to_string(), 1)]);
    assert_eq!(baseline::unsteady_original(false, &mixed, &mut runner, &baseline), None);
    assert_eq!(runner.asked_to_settle, 1);
    // An original that repeats itself: the candidates are wrong, and the report says no more.
    runner.settles = Some(SettledRoles::WrittenOnly { buffers: Vec::new() });
    assert_eq!(baseline::unsteady_original(false, &wrong, &mut runner, &baseline), None);
}

#[test]
fn the_report_explains_an_unsteady_original_with_the_way_out() {
    tune_scripted_rmsnorm("cutune-tune-unsteady", 60.0, |_, _, _, mut report| {
        assert_eq!(report.unsteady_explanation(), None);
        report.unsteady_original = Some("the original gives another output on a second run of the same input (`out`[3], 9 elements differ)".into());
        let explanation = report.unsteady_explanation().unwrap();
        assert!(explanation.starts_with("the original is not its own equal on the spec's data: the original gives another output on a second run of the same input (`out`[3], 9 elements differ): "), "{explanation}");
        assert!(explanation.ends_with(&format!("`cutune profile --kernel {} -- CMD`, then templatize again", report.kernel)), "{explanation}");
    });
}
