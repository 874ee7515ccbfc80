//! Running plans on a scripted runner: what is asked of the runner, and how its answers become
//! a report.

use std::cell::RefCell;

use super::*;
use crate::gpu::{DeviceInfo, FailureKind, Outcome, Problem, RunnerSource, Timing};
use crate::spec;

fn rmsnorm() -> KernelSpec {
    let path = format!("{}/../examples/rmsnorm.cutune.toml", env!("CARGO_MANIFEST_DIR"));
    spec::parse_spec(&std::fs::read_to_string(path).unwrap()).0.unwrap().kernels.remove(0)
}

/// Answers each check by its problem's label, and keeps the requests.
struct Scripted {
    device: DeviceInfo,
    source: RunnerSource,
    answer: Box<dyn Fn(&str) -> Check>,
    requests: RefCell<Vec<CheckRequest>>,
}

impl Scripted {
    fn new(answer: impl Fn(&str) -> Check + 'static) -> Scripted {
        Scripted { device: DeviceInfo::datasheet("sm_90").unwrap(), source: RunnerSource::Device, answer: Box::new(answer), requests: RefCell::default() }
    }
}

impl Runner for Scripted {
    fn device(&self) -> &DeviceInfo {
        &self.device
    }
    fn source(&self) -> &RunnerSource {
        &self.source
    }
    fn needs_code(&self) -> bool {
        true
    }
    fn prepare(&mut self, _: &[Problem], _: &Kernel, _: &std::path::Path) -> anyhow::Result<Vec<Timing>> {
        unreachable!("verification never prepares")
    }
    fn measure(&mut self, _: &Configuration, _: Option<&Kernel>) -> Outcome {
        unreachable!("verification never measures")
    }
    fn check(&mut self, request: &CheckRequest) -> Check {
        self.requests.borrow_mut().push(request.clone());
        (self.answer)(&request.problems[0].label)
    }
}

fn pass() -> Verdict {
    Verdict::Pass { max_abs_error: 1e-3, max_rel_error: 2e-3 }
}

fn compared(verdict: Verdict, repeats: usize) -> Check {
    Check::Compared { verdict, repeats: vec![pass(); repeats] }
}

fn code() -> Code {
    let module = |name: &str| Module { cubin: format!("/cache/{name}.cubin").into(), function: "rmsnorm_kernel".into() };
    Code { baseline: module("baseline"), candidate: module("candidate"), baseline_resources: None, candidate_resources: None, harness: "/cache/harness.cubin".into() }
}

fn config(block: i64) -> Configuration {
    let mut config = Configuration::default_of(&rmsnorm());
    config.0.iter_mut().find(|(name, _)| name == "BLOCK_SIZE").unwrap().1 = block;
    config
}

#[test]
fn a_passing_configuration_runs_every_case_with_its_own_launch() {
    let kernel = rmsnorm();
    let config = config(512);
    let plan = plan(&kernel, &config, &Stage::ALL).unwrap();
    let mut runner = Scripted::new(|label| compared(pass(), if label == "hidden=4096 rows=4095" { 2 } else { 0 }));
    let report = run(&kernel, &config, &plan, &code(), &mut runner, false, &|| false);
    assert!(report.passed(), "{report:?}");
    assert_eq!(report.cases.len(), plan.cases.len());
    assert_eq!(report.summary(), format!("passed 5 stages ({} cases)", plan.cases.len()));
    let requests = runner.requests.borrow();
    let smoke = &requests[0];
    assert_eq!((smoke.baseline.launches[0].block[0], smoke.candidate.launches[0].block[0]), (256, 512));
    assert_eq!(smoke.baseline.launches[0].grid[0], 4095);
    assert_eq!(smoke.candidate.module.cubin, std::path::PathBuf::from("/cache/candidate.cubin"));
    let determinism: Vec<&CheckRequest> = requests.iter().zip(&plan.cases).filter(|(_, c)| c.stage == Stage::Determinism).map(|(r, _)| r).collect();
    assert!(determinism.iter().all(|r| r.runs == 3 && r.bitwise), "{determinism:?}");
    assert!(requests.iter().all(|r| r.problems.len() == 1));
}

#[test]
fn the_first_failure_stops_the_run_and_names_stage_shape_and_values() {
    let kernel = rmsnorm();
    let config = config(512);
    let plan = plan(&kernel, &config, &Stage::ALL).unwrap();
    let wrong = Verdict::Mismatch {
        problem: 0,
        arg: "out".into(),
        index: 4096,
        expected: 0.5,
        actual: 0.25,
        mismatches: 3,
        max_abs_error: 0.25,
        max_rel_error: 0.5,
        unwritten: 0,
        not_finite: 0,
    };
    let mut runner = Scripted::new(move |label| compared(if label.starts_with("hidden=4097") { wrong.clone() } else { pass() }, 0));
    let report = run(&kernel, &config, &plan, &code(), &mut runner, false, &|| false);
    assert!(!report.passed());
    let (case, finding) = report.failure().unwrap();
    assert_eq!((case.stage, case.label.as_str(), finding.label()), (Stage::Shapes, "hidden=4097 rows=2048", "wrong output"));
    assert!(report.summary().starts_with("failed stage 2 (shapes) on hidden=4097 rows=2048: wrong output: `out`[4096] = 0.25, expected 0.5"), "{}", report.summary());
    assert_eq!(report.cases.len() + report.not_run, plan.cases.len());
    assert!(report.not_run > 0);

    let mut runner = Scripted::new(|label| compared(if label.starts_with("hidden=4097") { Verdict::OutOfBounds { problem: 0, arg: "out".into(), bytes: 2, first_offset: 0 } } else { pass() }, 0));
    let report = run(&kernel, &config, &plan, &code(), &mut runner, true, &|| false);
    assert_eq!((report.cases.len(), report.not_run), (plan.cases.len(), 0), "keep going runs every case");
}

#[test]
fn faults_and_shared_memory_patterns_get_their_labels() {
    let kernel = rmsnorm();
    let config = config(256);
    let plan = plan(&kernel, &config, &[Stage::Smoke, Stage::Determinism]).unwrap();
    let mismatch = Verdict::Mismatch {
        problem: 0,
        arg: "out".into(),
        index: 1,
        expected: 1.0,
        actual: 2.0,
        mismatches: 1,
        max_abs_error: 1.0,
        max_rel_error: 1.0,
        unwritten: 0,
        not_finite: 0,
    };
    let stale = mismatch.clone();
    let mut runner = Scripted::new(move |_| Check::Compared { verdict: pass(), repeats: vec![stale.clone(), pass()] });
    let report = run(&kernel, &config, &plan, &code(), &mut runner, false, &|| false);
    assert_eq!(report.failure().unwrap().1.label(), "reads unwritten shared memory");

    let mut runner = Scripted::new(|_| Check::Failed { kind: FailureKind::Fault, message: "the kernel faulted: an illegal memory access".into() });
    let report = run(&kernel, &config, &plan, &code(), &mut runner, false, &|| false);
    assert_eq!(report.summary(), "failed stage 1 (smoke) on hidden=4096 rows=4095: fault: the kernel faulted: an illegal memory access");
}

#[test]
fn cases_where_the_original_fails_are_reported_not_failed() {
    let kernel = rmsnorm();
    let config = config(256);
    let plan = plan(&kernel, &config, &[Stage::Edges]).unwrap();
    let mut runner = Scripted::new(|label| if label == "hidden=1 rows=1" { Check::BaselineFailed { kind: FailureKind::Launch, message: "refused".into() } } else { compared(pass(), 0) });
    let report = run(&kernel, &config, &plan, &code(), &mut runner, false, &|| false);
    assert!(report.passed());
    assert_eq!(report.summary(), format!("passed 1 stage ({} cases, 1 where the original fails)", plan.cases.len() - 1));
}

#[test]
fn a_cancelled_run_stops_between_cases() {
    let kernel = rmsnorm();
    let config = config(256);
    let plan = plan(&kernel, &config, &Stage::ALL).unwrap();
    let mut runner = Scripted::new(|_| compared(pass(), 2));
    let calls = std::cell::Cell::new(0);
    let report = run(&kernel, &config, &plan, &code(), &mut runner, false, &|| {
        calls.set(calls.get() + 1);
        calls.get() > 2
    });
    assert_eq!((report.cases.len(), report.not_run), (2, plan.cases.len() - 2));
}
