//! Five-stage verification of one configuration on a runner: compiling what it needs (the
//! baseline, the configuration, the harness), running the stages and storing the report. The
//! tuning loop runs it on its winner; `cutune verify` and the editor on request.

use anyhow::{anyhow, bail, Result};

use super::{result_key, Target, Tools};
use crate::compile::{CompilePool, CompileRequest};
use crate::gpu::{Module, Runner, HARNESS_ENTRY, HARNESS_SOURCE};
use crate::space::{self, Configuration};
use crate::spec::KernelSpec;
use crate::store::{unix_now, ResultKey, Store, Verification};
use crate::verify::{self, Code, Stage};

/// The original kernel, as the spec keeps it, with no parameter defined.
pub fn baseline_request(kernel: &KernelSpec, arch: &str) -> CompileRequest {
    let mut request = space::compile_request(kernel, &kernel.baseline.source, arch, &Configuration::default_of(kernel));
    request.defines.clear();
    request.file_name = format!("{}.baseline.cu", kernel.name);
    request
}

/// The worker's verification kernels (`gpu/harness.cu`).
pub fn harness_request(arch: &str) -> CompileRequest {
    let mut request = CompileRequest::new(HARNESS_SOURCE, "cutune_harness.cu", arch);
    request.name_expressions.push(HARNESS_ENTRY.to_string());
    request
}

/// Compiles the baseline, `config` and the harness on `pool` (cached cubins come back at once).
/// Results of other requests that arrive meanwhile are put back for their owner.
pub fn build_code(pool: &CompilePool, target: &Target, arch: &str, config: &Configuration) -> Result<Code> {
    const BASELINE: usize = usize::MAX - 2;
    const CANDIDATE: usize = usize::MAX - 3;
    const HARNESS: usize = usize::MAX - 4;
    let kernel = &target.kernel;
    pool.submit(vec![
        (BASELINE, baseline_request(kernel, arch)),
        (CANDIDATE, space::compile_request(kernel, &target.source, arch, config)),
        (HARNESS, harness_request(arch)),
    ]);
    let (mut baseline, mut candidate, mut harness, mut others) = (None, None, None, Vec::new());
    while baseline.is_none() || candidate.is_none() || harness.is_none() {
        let built = pool.recv().ok_or_else(|| anyhow!("the compiler threads stopped"))?;
        match built.id {
            BASELINE => baseline = Some(built.result),
            CANDIDATE => candidate = Some(built.result),
            HARNESS => harness = Some(built.result),
            _ => others.push(built),
        }
    }
    pool.put_back(others);
    let module = |what: String, result: Option<Result<crate::compile::Compiled, crate::compile::Failed>>| -> Result<(Module, Option<crate::compile::KernelResources>)> {
        let compiled = result.expect("received").map_err(|f| anyhow!("{what} does not compile: {}\n{}", f.message, f.log.trim_end()))?;
        Ok((Module { cubin: compiled.cubin, function: compiled.function }, compiled.resources))
    };
    let (baseline, baseline_resources) = module(format!("the baseline (the original `{}`)", kernel.name), baseline)?;
    let (candidate, candidate_resources) = module(format!("configuration {config}"), candidate)?;
    Ok(Code { baseline, candidate, baseline_resources, candidate_resources, harness: module("cutune's verification harness".into(), harness)?.0.cubin })
}

/// Plans and runs `stages` for `config` and stores the report under `key`.
pub fn run_and_store(kernel: &KernelSpec, config: &Configuration, stages: &[Stage], code: &Code, runner: &mut dyn Runner, store: &Store, key: &ResultKey, keep_going: bool, cancelled: &dyn Fn() -> bool) -> Result<verify::Report> {
    let plan = verify::plan(kernel, config, stages)?;
    let report = verify::run(kernel, config, &plan, code, runner, keep_going, cancelled);
    // A cancelled verification says nothing either way: it is not kept.
    if report.not_run == 0 || report.failure().is_some() {
        let verification = Verification { config: config.clone(), passed: report.passed(), summary: report.summary(), report: serde_json::to_string(&report)?, verified_at: unix_now() };
        store.record_verification(key, &verification)?;
    }
    Ok(report)
}

/// A failed verification of `config` found while tuning on the spec's shapes (a time faster
/// than the speed of light), to store like any other.
pub fn failed_on_shapes(kernel: &KernelSpec, config: &Configuration, finding: verify::Finding) -> Result<Verification> {
    let case = verify::CaseResult { stage: Stage::Smoke, label: "the spec's shapes, while tuning".into(), status: verify::CaseStatus::Fail { finding }, seconds: 0.0 };
    let report = verify::Report { kernel: kernel.name.clone(), config: config.clone(), stages: Vec::new(), cases: vec![case], skipped: Vec::new(), not_run: 0, seconds: 0.0 };
    let summary = report.failure().map(|(_, finding)| finding.to_string()).unwrap_or_default();
    Ok(Verification { config: config.clone(), passed: false, summary, report: serde_json::to_string(&report)?, verified_at: unix_now() })
}

/// Verifies `config` of `target` on request (`cutune verify`, the editor's `Verify kernel`).
pub fn verify_configuration(target: &Target, runner: &mut dyn Runner, tools: &Tools, config: &Configuration, stages: &[Stage], keep_going: bool, cancelled: &dyn Fn() -> bool) -> Result<verify::Report> {
    if !runner.needs_code() {
        bail!("recorded measurements carry no outputs: verifying needs a CUDA device");
    }
    let nvrtc = tools.nvrtc.ok_or_else(|| anyhow!("verifying needs NVRTC to compile the kernel"))?;
    let key = result_key(target, runner, Some(nvrtc))?;
    let pool = CompilePool::new(nvrtc.clone(), tools.cache.clone(), 3, 1);
    let code = build_code(&pool, target, &runner.device().arch(), config)?;
    run_and_store(&target.kernel, config, stages, &code, runner, tools.store, &key, keep_going, cancelled)
}
