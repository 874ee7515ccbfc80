//! `cutune mcp`: a Model Context Protocol server over stdio, so that a coding agent can list a
//! file's kernels, templatize one and read its tuning results. Only this module knows MCP; each
//! tool is thin over the same stages as the CLI and the language server, and runs them on a
//! blocking thread so that the protocol keeps answering.

use std::path::{Path, PathBuf};

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{ProgressNotificationParam, ServerCapabilities, ServerConfig};
use rmcp::service::RequestContext;
use rmcp::{schemars, tool, tool_handler, tool_router, Json, RoleServer, ServerHandler, ServiceExt};
use serde::{Deserialize, Serialize};

use crate::search::StrategyName;
use crate::store::Evaluation;
use crate::tune::results::KernelResults;
use crate::tune::{job, Observer, Progress, TuneOptions};

/// Serves MCP on stdin/stdout until the client closes it.
pub fn run_stdio() -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(async {
        let service = Cutune::new().serve(rmcp::transport::stdio()).await?;
        service.waiting().await?;
        Ok(())
    })
}

#[derive(Clone)]
struct Cutune {
    tool_router: ToolRouter<Self>,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct FileArgs {
    /// Path of the CUDA source file (`.cu`, `.cuh`), absolute or relative to the server's
    /// working folder.
    file: String,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct KernelArgs {
    /// Path of the CUDA source file.
    file: String,
    /// Name of the `__global__` function.
    kernel: String,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct TemplatizeArgs {
    /// Path of the CUDA source file.
    file: String,
    /// Name of the `__global__` function.
    kernel: String,
    /// Rewrite the file in place and write its spec (`FILE.cutune.toml`) beside it; otherwise
    /// nothing is written and the diff says what would change.
    #[serde(default)]
    write: bool,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct TuneArgs {
    /// Path of the CUDA source file; its spec (`FILE.cutune.toml`) is read from beside it, or
    /// the kernel is templatized in memory when there is none.
    file: String,
    /// Name of the `__global__` function.
    kernel: String,
    /// Most configurations to evaluate (default 200).
    budget: Option<u64>,
    /// Wall-time limit of the search in seconds.
    time_seconds: Option<u64>,
    /// `brute-force`, `random`, `annealing`, `genetic` or `model` (default: brute force when the
    /// whole space fits the budget, else the model).
    strategy: Option<String>,
    /// A recording of measurements to replay instead of measuring on the GPU (a T4 `.json` or a
    /// Kernel Tuner cache file): for trying the loop on a machine without a GPU.
    replay: Option<String>,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct CompareArgs {
    /// Path of the CUDA source file of the original kernel; its spec is read from beside it.
    file: String,
    /// Name of the original `__global__` function.
    kernel: String,
    /// Path of the file with the other implementation.
    candidate_file: String,
    /// Its kernel's name, when not the original's. It must take the same parameters; it
    /// launches as the spec says the original does.
    candidate_kernel: Option<String>,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct VerifyArgs {
    /// Path of the CUDA source file; its spec is read from beside it.
    file: String,
    /// Name of the `__global__` function.
    kernel: String,
    /// Parameters to set, `NAME=VALUE,…` (e.g. `BLOCK_SIZE=512,RMSNORM_VEC=4`); the others keep
    /// the values the file runs now.
    config: Option<String>,
    /// Stages to run, of `smoke`, `shapes`, `numerics`, `determinism`, `edges` (default: all).
    stages: Option<Vec<String>>,
}

#[derive(Serialize, schemars::JsonSchema)]
struct VerifyOutcome {
    kernel: String,
    /// The configuration verified.
    config: Vec<(String, i64)>,
    device: String,
    passed: bool,
    summary: String,
    /// One entry per case run: its stage, what it runs, and `pass`, or the failure.
    cases: Vec<(String, String, String)>,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct SolArgs {
    /// Path of the CUDA source file; its spec is read from beside it (or the kernel is
    /// templatized in memory when there is none).
    file: String,
    /// Name of the `__global__` function.
    kernel: String,
    /// A GPU by the name its driver reports (`NVIDIA H100 80GB HBM3`, `NVIDIA A100-SXM4-80GB`,
    /// `NVIDIA L4`…) to bound against its datasheet figures; default: the ceilings
    /// `cutune ceilings` last measured on this machine.
    device: Option<String>,
}

#[derive(Serialize, schemars::JsonSchema)]
struct SolOutcome {
    kernel: String,
    /// The ceilings the bound divides by, and where they come from (measured, or datasheet).
    ceilings: String,
    /// The bound over the spec's shapes (what a tune is measured on), in µs.
    bound_us: f64,
    /// One entry per shape: what it is, bytes moved, flops, the memory and compute terms in µs,
    /// and which limits it.
    shapes: Vec<SolShape>,
}

#[derive(Serialize, schemars::JsonSchema)]
struct SolShape {
    shape: String,
    bytes: f64,
    flops: f64,
    memory_us: f64,
    compute_us: f64,
    limit: String,
}

#[derive(Serialize, schemars::JsonSchema)]
struct TuneOutcome {
    kernel: String,
    /// The GPU measured on, or the recording replayed.
    measured_on: String,
    /// Why the search stopped (`cancelled` when the client cancelled it).
    stop_reason: String,
    evaluated: usize,
    baseline_us: Option<f64>,
    bound_us: Option<f64>,
    /// The fastest configuration that passed verification (or, for a replay, the recording's).
    best: Option<MeasuredConfiguration>,
    /// Faster configurations that failed verification, with the first failure.
    rejected: Vec<String>,
    /// Reasons configurations could not run, with how many.
    failures: Vec<(String, u64)>,
}

#[derive(Serialize, schemars::JsonSchema)]
struct KernelList {
    file: String,
    kernels: Vec<KernelEntry>,
}

#[derive(Serialize, schemars::JsonSchema)]
struct KernelEntry {
    name: String,
    /// 1-based line of the definition (or declaration).
    line: u32,
    signature: String,
    is_definition: bool,
    template_params: Vec<String>,
    /// 1-based lines of the launches (`<<<…>>>`) in this file.
    launches: Vec<u32>,
}

#[derive(Serialize, schemars::JsonSchema)]
struct TemplatizeOutcome {
    kernel: String,
    /// The tuning parameters, in the spec's order, each with its default (the original value).
    parameters: Vec<Parameter>,
    /// One line per transform: applied, skipped or refused, and why.
    report: Vec<String>,
    /// What the spec still lacks (`?` values), from `cutune spec check`; empty when it is ready.
    spec_problems: Vec<String>,
    /// Unified diffs of the source and of the spec.
    diff: String,
    /// The files written (with `write`), else empty.
    written: Vec<String>,
}

#[derive(Serialize, schemars::JsonSchema)]
struct Parameter {
    name: String,
    kind: String,
    default: i64,
    values: Vec<i64>,
    origin: String,
}

#[derive(Serialize, schemars::JsonSchema)]
struct TuningResults {
    kernel: String,
    /// Whether the kernel has been tuned from this file; the other fields are empty if not.
    tuned: bool,
    /// The GPU the results were measured on (or `replay`).
    measured_on: String,
    baseline_us: Option<f64>,
    /// The speed-of-light bound of the run, in µs.
    bound_us: Option<f64>,
    /// The fastest configuration that matched the original kernel and did not fail verification.
    best: Option<MeasuredConfiguration>,
    /// The kernel's definition changed since the run: tune again.
    stale: bool,
    /// Why the latest run stopped (`cancelled`, `space exhausted`, …); empty while it runs.
    stop_reason: String,
    /// The results as the editor's hover shows them (Markdown).
    summary: String,
}

/// A configuration that ran, with its measurement.
#[derive(Serialize, schemars::JsonSchema)]
struct MeasuredConfiguration {
    values: Vec<(String, i64)>,
    time_us: f64,
    speedup: Option<f64>,
    /// Percent of the speed-of-light bound.
    sol_percent: Option<f64>,
    /// Whether it passed the five verification stages.
    verified: bool,
}

#[tool_router]
impl Cutune {
    fn new() -> Cutune {
        Cutune { tool_router: Self::tool_router() }
    }

    #[tool(description = "List the CUDA kernels of a file: name, line, signature, template parameters and the lines that launch each.")]
    async fn list_kernels(&self, Parameters(args): Parameters<FileArgs>) -> Result<Json<KernelList>, String> {
        blocking(move || list_kernels(&path_of(&args.file)?)).await
    }

    #[tool(description = "Turn a kernel's execution choices (block size, tiles, unroll factors, vector widths…) into parameters whose defaults are the original values, and write its tuning spec. Without `write`, returns the diff and writes nothing.")]
    async fn templatize(&self, Parameters(args): Parameters<TemplatizeArgs>) -> Result<Json<TemplatizeOutcome>, String> {
        blocking(move || templatize(&path_of(&args.file)?, &args.kernel, args.write)).await
    }

    #[tool(description = "Tune a kernel on this machine's GPU (or on a replay of recorded measurements): a constrained search of its parameters, every candidate compiled with NVRTC, timed, and checked against the original kernel; the winner verified in five stages. Sends progress notifications when the request has a progress token; cancelling the request stops the search within one measurement, keeping what was measured.")]
    async fn tune(&self, Parameters(args): Parameters<TuneArgs>, context: RequestContext<RoleServer>) -> Result<Json<TuneOutcome>, String> {
        let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel::<(u64, Option<u64>, String)>();
        let cancel = context.ct.clone();
        let tuning = tokio::task::spawn_blocking(move || tune(&args, ProgressSender { sender, cancelled: Box::new(move || cancel.is_cancelled()) }));
        if let Some(token) = context.meta.get_progress_token() {
            while let Some((evaluated, budget, message)) = receiver.recv().await {
                let mut progress = ProgressNotificationParam::new(token.clone(), evaluated as f64).with_message(message);
                if let Some(budget) = budget {
                    progress = progress.with_total(budget as f64);
                }
                // A client gone away is the cancellation's business, not progress's.
                let _ = context.peer.notify_progress(progress).await;
            }
        }
        match tuning.await {
            Ok(result) => result.map(Json),
            Err(e) => Err(format!("cutune failed inside: {e}")),
        }
    }

    #[tool(description = "Run another implementation of a kernel (your rewrite, in another file, with the same parameters) against the original on this machine's GPU: both timed in the same run, the candidate checked on the spec's shapes and verified in five stages (smoke, shapes, numerics, determinism, edges). Returns the two times, the speedup, the percent of the speed-of-light bound, and whether it is verified or its first failure (stage, shape, index, values). A time below the bound is flagged as a likely wrong measurement. The result is stored like a tuning evaluation.")]
    async fn compare(&self, Parameters(args): Parameters<CompareArgs>) -> Result<Json<job::Comparison>, String> {
        blocking(move || compare(&args)).await
    }

    #[tool(description = "Verify one configuration of a kernel against the original on this machine's GPU in five stages: smoke, shapes (the spec's and odd ones), numerics (inputs that stress precision), determinism, edges (guard bytes around every buffer). Stops at the first failure, which names the stage, the shape, the index and the values.")]
    async fn verify(&self, Parameters(args): Parameters<VerifyArgs>) -> Result<Json<VerifyOutcome>, String> {
        blocking(move || verify(&args)).await
    }

    #[tool(description = "The speed-of-light bound of a kernel on the spec's shapes: the bytes it must move and the flops it must do, over the device's copy bandwidth and arithmetic rate, with which term limits each shape. A measured time below it is a wrong measurement; the gap to it is what a rewrite can still win.")]
    async fn speed_of_light(&self, Parameters(args): Parameters<SolArgs>) -> Result<Json<SolOutcome>, String> {
        blocking(move || speed_of_light(&args)).await
    }

    #[tool(description = "The latest tuning results of a kernel from the results store: the best verified configuration, its speedup over the original, its percent of the speed of light, and whether the kernel changed since.")]
    async fn results(&self, Parameters(args): Parameters<KernelArgs>) -> Result<Json<TuningResults>, String> {
        blocking(move || results(&path_of(&args.file)?, &args.kernel)).await
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Cutune {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build()).with_instructions(
            "cutune makes CUDA kernels fast: list a file's kernels, templatize one (its choices become parameters, the original values the defaults), then read its tuning results. Files are paths on this machine.",
        )
    }
}

/// Runs a stage on a blocking thread; a panic is an error for the client, not the end of the
/// server.
async fn blocking<T: Send + 'static>(stage: impl FnOnce() -> Result<T, String> + Send + 'static) -> Result<Json<T>, String> {
    match tokio::task::spawn_blocking(stage).await {
        Ok(result) => result.map(Json),
        Err(e) => Err(format!("cutune failed inside: {e}")),
    }
}

/// `file` as an existing path, or an error that names it.
fn path_of(file: &str) -> Result<PathBuf, String> {
    let path = PathBuf::from(file);
    if !path.is_file() {
        return Err(format!("{file}: no such file"));
    }
    Ok(path)
}

fn list_kernels(path: &Path) -> Result<KernelList, String> {
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

fn templatize(path: &Path, kernel: &str, write: bool) -> Result<TemplatizeOutcome, String> {
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

fn results(path: &Path, kernel: &str) -> Result<TuningResults, String> {
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

/// The tuner's progress, handed to the protocol's side, and the client's cancellation.
struct ProgressSender {
    sender: tokio::sync::mpsc::UnboundedSender<(u64, Option<u64>, String)>,
    cancelled: Box<dyn Fn() -> bool + Send>,
}

impl Observer for ProgressSender {
    fn evaluated(&mut self, evaluation: &Evaluation, progress: &Progress) {
        let best = match (progress.best_us, progress.best_speedup) {
            (Some(time), Some(speedup)) => format!("best {time:.2} µs ({speedup:.2}×)"),
            (Some(time), None) => format!("best {time:.2} µs"),
            _ => "no configuration matched the original yet".to_string(),
        };
        // The receiver is gone only once the request is answered.
        let _ = self.sender.send((progress.evaluated, progress.budget, format!("{best}; last {}", evaluation.config)));
    }

    fn cancelled(&self) -> bool {
        (self.cancelled)()
    }
}

fn tune(args: &TuneArgs, observer: ProgressSender) -> Result<TuneOutcome, String> {
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

fn compare(args: &CompareArgs) -> Result<job::Comparison, String> {
    let file = path_of(&args.file)?;
    let candidate = path_of(&args.candidate_file)?;
    let request = job::FileTune { file: &file, kernel: &args.kernel, spec: None, workspace: None, replay: None, device: 0, nvrtc: None, no_cache: false, strategy: None, options: TuneOptions::brute_force(Some(1)) };
    let (tuned, _) = job::compare_file(request, &candidate, args.candidate_kernel.as_deref(), |_, _| crate::tune::Silent).map_err(|e| format!("{e:#}"))?;
    Ok(job::Comparison::of(&tuned.map_err(|e| format!("{e:#}"))?.report))
}

fn verify(args: &VerifyArgs) -> Result<VerifyOutcome, String> {
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

fn speed_of_light(args: &SolArgs) -> Result<SolOutcome, String> {
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
