//! Each tool's work, on a blocking thread: thin over the same stages as the CLI and the language
//! server, its result in the shape [`super::schema`] declares.

use std::path::{Path, PathBuf};

use super::schema::*;
use super::ProgressSender;
use crate::search::StrategyName;
use crate::tune::results::KernelResults;
use crate::tune::job::{self, GpuClaim};
use crate::tune::TuneOptions;

/// `file` as an existing path, or an error that names it.
pub fn path_of(file: &str) -> Result<PathBuf, String> {
    let path = PathBuf::from(file);
    if !path.is_file() {
        return Err(format!("{file}: no such file"));
    }
    Ok(path)
}

pub fn list_kernels(path: &Path) -> Result<KernelList, String> {
    let text = crate::workspace::read_source(path).map_err(|e| format!("{e:#}"))?;
    let document = crate::syntax::Document::new(text);
    let model = document.model();
    let kernels = model
        .kernels
        .iter()
        .map(|k| KernelEntry {
            name: k.name.clone(),
            line: k.name_span.start.line + 1,
            signature: k.signature.clone(),
            is_definition: k.is_definition,
            template_params: k.template_params.iter().map(|p| p.name.clone()).collect(),
            launches: model.launches_of(&k.name).map(|l| l.span.start.line + 1).collect(),
        })
        .collect();
    Ok(KernelList { file: path.display().to_string(), kernels })
}

pub fn templatize(path: &Path, kernel: &str, write: bool) -> Result<TemplatizeOutcome, String> {
    let templatized = crate::template::templatize_file(path, kernel).map_err(|e| format!("{e:#}"))?;
    let spec = &templatized.result.spec;
    let parameters = spec
        .params
        .iter()
        .map(|p| Parameter { name: p.name.clone(), kind: serde_json::to_value(p.kind).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default(), default: p.default, values: p.values.clone(), origin: p.origin.clone() })
        .collect();
    let report = crate::template::report(path, &templatized.result).lines().map(str::to_string).collect();
    let spec_problems = crate::template::spec_problems(path, spec);
    let mut written = Vec::new();
    if write {
        templatized.write().map_err(|e| format!("{e:#}"))?;
        written = vec![path.display().to_string(), templatized.spec_path.display().to_string()];
    }
    Ok(TemplatizeOutcome { kernel: kernel.to_string(), parameters, report, spec_problems, diff: templatized.diff(), written })
}

pub fn results(path: &Path, kernel: &str) -> Result<TuningResults, String> {
    let text = crate::workspace::read_source(path).map_err(|e| format!("{e:#}"))?;
    if !crate::syntax::analyze(&text).kernels.iter().any(|k| k.name == kernel) {
        return Err(format!("{}: no kernel named `{kernel}`", path.display()));
    }
    let workspace = crate::tune::job::workspace_for(path, None);
    let found = KernelResults::latest(&workspace, path, kernel).map_err(|e| format!("reading the results of `{kernel}`: {e}"))?;
    let Some(found) = found else {
        return Ok(TuningResults { kernel: kernel.to_string(), tuned: false, measured_on: String::new(), baseline_us: None, bound_us: None, best: None, stale: false, stop_reason: String::new(), summary: format!("`{kernel}` has not been tuned from {}", path.display()) });
    };
    let best = found.best().map(|e| MeasuredConfiguration {
        values: e.config.0.clone(),
        time_us: crate::tune::objective(e).unwrap_or_default(),
        speedup: found.best_speedup(),
        sol_percent: found.run.info.sol.as_ref().zip(crate::tune::objective(e)).map(|(bound, time)| bound.percent(time)),
        verified: found.verification(e).is_some_and(|v| v.passed),
    });
    Ok(TuningResults {
        kernel: kernel.to_string(),
        tuned: true,
        measured_on: found.origin(),
        baseline_us: found.run.info.baseline_us,
        bound_us: found.run.info.sol.as_ref().map(|b| b.bound_us),
        best,
        stale: found.is_stale(&crate::tune::kernel_sha256(&text, kernel)),
        stop_reason: found.run.stop_reason.clone().unwrap_or_default(),
        summary: found.hover(),
    })
}

pub fn tune(args: &TuneArgs, observer: ProgressSender, _gpu: GpuClaim) -> Result<TuneOutcome, String> {
    let file = path_of(&args.file)?;
    let strategy = args.strategy.as_deref().map(|s| <StrategyName as clap::ValueEnum>::from_str(s, true)).transpose().map_err(|e| format!("strategy: {e}"))?;
    let replay = args.replay.as_deref().map(path_of).transpose()?;
    let options = TuneOptions { time_limit: args.time_seconds.map(std::time::Duration::from_secs), ..TuneOptions::brute_force(Some(args.budget.unwrap_or(200))) };
    let request = job::FileTune { file: &file, kernel: &args.kernel, spec: None, workspace: None, replay: replay.as_deref(), device: 0, nvrtc: None, no_cache: false, strategy, options };
    let (tuned, _) = job::tune_file(request, |_, _| observer).map_err(|e| format!("{e:#}"))?;
    let report = tuned.map_err(|e| format!("{e:#}"))?.report;
    let best = report.best.as_ref().and_then(|row| {
        Some(MeasuredConfiguration { values: row.config.0.clone(), time_us: row.time_us?, speedup: row.speedup, sol_percent: row.sol_percent, verified: report.verification.is_some() })
    });
    Ok(TuneOutcome {
        kernel: report.kernel.clone(),
        measured_on: match &report.source {
            crate::gpu::RunnerSource::Replay { from } => format!("replay of {from}"),
            crate::gpu::RunnerSource::Device => report.device.clone(),
        },
        stop_reason: report.stop_reason.clone(),
        evaluated: report.rows.len(),
        baseline_us: report.baseline_us,
        bound_us: report.sol.as_ref().map(|b| b.bound_us),
        best,
        rejected: report.rejected.iter().map(|r| format!("{}: {}", r.config, r.summary)).collect(),
        failures: report.failures.into_iter().collect(),
    })
}

pub fn check(args: &CheckArgs) -> Result<CheckOutcome, String> {
    let file = path_of(&args.file)?;
    let arch = args.arch.as_deref().unwrap_or("sm_90");
    let sample = match args.sample {
        Some(0) => None,
        other => Some(other.unwrap_or(32)),
    };
    let request = job::FileCheck { file: &file, kernel: &args.kernel, arch, sample, seed: 0, shard: None, jobs: None, nvrtc: None };
    let checked = job::check_file(request).map_err(|e| format!("{e:#}"))?;
    let results = checked
        .results
        .into_iter()
        .map(|r| CheckedConfiguration {
            values: r.config.0,
            is_default: r.is_default,
            status: serde_json::to_value(r.status).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default(),
            reason: r.reason,
            registers: r.resources.as_ref().map(|k| k.registers),
            spill_bytes: r.resources.as_ref().map(|k| k.spill_store_bytes + k.spill_load_bytes),
            shared_bytes: r.resources.as_ref().map(|k| k.shared_bytes),
        })
        .collect();
    Ok(CheckOutcome {
        kernel: checked.kernel,
        arch: checked.arch,
        nvrtc: checked.nvrtc,
        space_size: checked.space_size,
        checked: checked.checked,
        compiled: checked.compiled,
        infeasible: checked.infeasible,
        failed: checked.failed,
        results,
        notes: checked.notes,
    })
}

pub fn profile(args: &ProfileArgs, _gpu: Option<GpuClaim>) -> Result<ProfileOutcome, String> {
    use crate::profile::job::ProfileRequest;
    let command = args.command.clone().unwrap_or_default();
    let import = args.import.as_deref().map(path_of).transpose()?;
    match (command.is_empty(), &import) {
        (true, None) => return Err("give a `command` to run, or a profile to `import`".into()),
        (false, Some(_)) => return Err("give a `command` or a profile to `import`, not both".into()),
        _ => {}
    }
    let here = std::env::current_dir().map_err(|e| format!("cannot read the server's working folder: {e}"))?;
    let directory = args.directory.as_deref().map_or(here, PathBuf::from);
    if !directory.is_dir() {
        return Err(format!("{}: no such folder", directory.display()));
    }
    let request = ProfileRequest {
        command,
        import,
        kernels: args.capture.clone(),
        capture_top: args.capture_top.unwrap_or(0),
        shapes_per_kernel: 1,
        capture_bytes: 1 << 30,
        root: args.root.as_deref().map_or_else(|| crate::workspace::find_root(&directory), PathBuf::from),
        directory,
        io: crate::profile::run::ProgramIo::Detached,
    };
    let profiled = crate::profile::job::profile(&request).map_err(|e| format!("{e:#}"))?;
    let kernels = profiled
        .ranking
        .kernels
        .iter()
        .map(|k| ProfiledKernel {
            name: k.kernel.display(),
            launches: k.launches,
            total_ns: k.total_ns,
            share: k.share,
            source: k.source.as_ref().map(|s| format!("{}:{}", s.file.display(), s.line)),
            tuned_speedup: k.tuned.map(|t| t.speedup),
            tuned_gain: k.tuned.map(|t| t.gain),
        })
        .collect();
    Ok(ProfileOutcome { origin: profiled.origin.describe(), gpu_ns: profiled.ranking.gpu_ns, kernel_ns: profiled.ranking.kernel_ns, kernels, captures: profiled.captures, problems: profiled.problems })
}

pub fn compare(args: &CompareArgs, _gpu: GpuClaim) -> Result<job::Comparison, String> {
    let file = path_of(&args.file)?;
    let candidate = path_of(&args.candidate_file)?;
    let request = job::FileTune { file: &file, kernel: &args.kernel, spec: None, workspace: None, replay: None, device: 0, nvrtc: None, no_cache: false, strategy: None, options: TuneOptions::brute_force(Some(1)) };
    let (tuned, _) = job::compare_file(request, &candidate, args.candidate_kernel.as_deref(), |_, _| crate::tune::Silent).map_err(|e| format!("{e:#}"))?;
    Ok(job::Comparison::of(&tuned.map_err(|e| format!("{e:#}"))?.report))
}

pub fn verify(args: &VerifyArgs, _gpu: GpuClaim) -> Result<VerifyOutcome, String> {
    use crate::verify::{CaseStatus, Stage};
    let file = path_of(&args.file)?;
    let stages = match &args.stages {
        None => Stage::ALL.to_vec(),
        Some(names) => names.iter().map(|n| Stage::from_name(n.trim()).ok_or_else(|| format!("unknown stage `{n}`: the stages are smoke, shapes, numerics, determinism, edges"))).collect::<Result<_, _>>()?,
    };
    let request = job::FileVerify { file: &file, kernel: &args.kernel, spec: None, workspace: None, device: 0, nvrtc: None, config: args.config.as_deref(), stages: &stages, keep_going: false };
    let (report, device) = job::verify_file(request, &mut |_| {}, &|| false).map_err(|e| format!("{e:#}"))?;
    let cases = report
        .cases
        .iter()
        .map(|case| {
            let status = match &case.status {
                CaseStatus::Pass { .. } => "pass".to_string(),
                CaseStatus::Fail { finding } => finding.to_string(),
                CaseStatus::BaselineFailed { message } => format!("not compared: the original fails here ({})", message.lines().next().unwrap_or_default()),
            };
            (case.stage.name().to_string(), case.label.clone(), status)
        })
        .collect();
    Ok(VerifyOutcome { kernel: report.kernel.clone(), config: report.config.0.clone(), device, passed: report.passed(), summary: report.summary(), cases })
}

pub fn speed_of_light(args: &SolArgs) -> Result<SolOutcome, String> {
    let file = path_of(&args.file)?;
    let text = crate::workspace::read_source(&file).map_err(|e| format!("{e:#}"))?;
    let (kernel, _, _) = job::kernel_and_source(&file, &args.kernel, None, &text).map_err(|e| format!("{e:#}"))?;
    let ceilings = match &args.device {
        Some(device) => crate::sol::Ceilings::datasheet(device).ok_or_else(|| format!("cutune has no datasheet figures for `{device}`"))?,
        None => crate::sol::cache::newest(&crate::sol::cache::default_dir())
            .ok_or("no ceilings have been measured on this machine: run `cutune ceilings` on the GPU, or name a `device` for its datasheet figures")?,
    };
    let mut shapes = Vec::new();
    let mut bound_us = 0.0;
    for shape in kernel.problem_shapes() {
        let label = shape.iter().map(|(name, value)| format!("{name}={value}")).collect::<Vec<_>>().join(" ");
        let bound = crate::sol::bound_for(&kernel, shape, None, &ceilings).map_err(|e| format!("{label}: {e}"))?;
        bound_us += bound.bound_us();
        let limit = match bound.limit() {
            crate::sol::Limit::Memory => "memory",
            crate::sol::Limit::Compute => "compute",
        };
        shapes.push(SolShape { shape: label, bytes: bound.bytes, flops: bound.flops, memory_us: bound.memory_us, compute_us: bound.compute_us, limit: limit.to_string() });
    }
    Ok(SolOutcome { kernel: args.kernel.clone(), ceilings: ceilings.to_string(), bound_us, shapes })
}
