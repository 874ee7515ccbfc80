//! The tuning loop: the search proposes configurations, the compile pool builds them while the
//! runner measures earlier ones, every evaluation goes to the results store as soon as it is
//! made, and only configurations whose output matches the baseline can be best.
//!
//! A run that was interrupted resumes without re-measuring: before compiling a configuration
//! the loop looks it up in the store under the same key (source, problems, device, NVRTC).

mod baseline;
pub mod job;
pub mod results;
mod problems;
mod search_loop;
pub mod verification;
mod winner;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Result};
use serde::Serialize;

use crate::compile::{CompilePool, CubinCache, Nvrtc};
use crate::gpu::{LaunchDims, Outcome, Runner, RunnerSource, Timing};
use crate::search::{SearchSpace, StrategyName};
use crate::space::{self, Configuration};
use crate::spec::{sha256_hex, KernelSpec};
use crate::sol::RunBound;
use crate::verify::Finding;
use crate::store::{counts_as_correct, unix_now, Evaluation, ResultKey, RunInfo, Store};

pub use problems::{problem, problems, shape_label, DATA_SEED};

/// A kernel ready to tune: its spec and the templatized device source to compile.
pub struct Target {
    /// The `.cu` file, for messages and the run's record.
    pub file: String,
    pub kernel: KernelSpec,
    /// The templatized kernel's device slice.
    pub source: String,
    /// SHA-256 of the kernel's definition as the user's file has it, to tell later whether the
    /// results are stale (see [`kernel_sha256`]).
    pub kernel_sha256: String,
}

impl Target {
    /// The target as `device` runs it: the spec's device sizes (`sm_count`, …) set to the
    /// GPU's, and each struct argument's layout as NVRTC compiles the source for it.
    pub fn for_device(mut self, device: &crate::gpu::DeviceInfo, nvrtc: Option<&Nvrtc>) -> Result<Target> {
        self.kernel = crate::spec::with_device_sizes(&self.kernel, &device.spec_sizes());
        self.with_struct_layouts(nvrtc, &device.arch())
    }

    /// Each struct argument's layout, asked of NVRTC for the source as it compiles at the
    /// defaults. Without NVRTC a struct cannot be packed, and the error says so.
    fn with_struct_layouts(mut self, nvrtc: Option<&Nvrtc>, arch: &str) -> Result<Target> {
        let Some(first) = self.kernel.args.iter().find(|a| a.is_struct()) else { return Ok(self) };
        let nvrtc = nvrtc.ok_or_else(|| anyhow!("{}: struct argument `{}` is packed as the compiler lays it out, which needs NVRTC", self.file, first.name))?;
        crate::compile::resolve_struct_layouts(&mut self.kernel, &self.source, nvrtc, arch).map_err(|why| anyhow!("{}: {why}", self.file))?;
        Ok(self)
    }
}

/// SHA-256 of the definition of `kernel` in `text` (see [`definition_sha256`]), or of nothing
/// when the text has no such definition.
pub fn kernel_sha256(text: &str, kernel: &str) -> String {
    let document = crate::syntax::Document::new(text.to_string());
    match document.model().kernels.iter().find(|k| k.is_definition && k.name == kernel) {
        Some(definition) => definition_sha256(text, definition),
        None => sha256_hex(""),
    }
}

/// SHA-256 of a kernel's whole item in `text` (template prefix, signature and body), which
/// results are tied to: another hash means the kernel changed since it was tuned.
pub fn definition_sha256(text: &str, kernel: &crate::syntax::Kernel) -> String {
    sha256_hex(&text[kernel.span.start_byte..kernel.span.end_byte])
}

/// The key a run's evaluations (and verifications) are stored under: what decides a
/// measurement besides the configuration.
pub fn result_key(target: &Target, runner: &dyn Runner, nvrtc: Option<&Nvrtc>) -> Result<ResultKey> {
    let device = runner.device();
    Ok(ResultKey {
        kernel: target.kernel.name.clone(),
        source_sha256: sha256_hex(&target.source),
        problems_sha256: sha256_hex(&serde_json::to_string(&problems(&target.kernel)?)?),
        // A replay's limits are placeholders: its architecture is not known.
        device: if runner.needs_code() { format!("{} ({})", device.name, device.arch()) } else { device.name.clone() },
        nvrtc: nvrtc.map_or_else(|| "none".to_string(), |n| format!("{}.{}", n.version().0, n.version().1)),
    })
}

/// Compiler threads: NVRTC stops scaling at about 4 per process (docs/benchmarks.md).
pub const COMPILE_THREADS: usize = 4;
/// Configurations per NVRTC program: headers are parsed once per program.
pub const BATCH_SIZE: usize = 8;

/// How to search and when to stop.
#[derive(Clone, Debug)]
pub struct TuneOptions {
    pub strategy: StrategyName,
    pub seed: u64,
    /// Distinct configurations to evaluate, failed ones included.
    pub budget: Option<u64>,
    pub time_limit: Option<Duration>,
    /// Stop after this many evaluations without a better configuration.
    pub patience: Option<u64>,
    /// Stop once the best configuration is this much faster than the baseline.
    pub target_speedup: Option<f64>,
    pub compile_threads: usize,
    /// Configurations per NVRTC program.
    pub batch_size: usize,
    /// Reuse measurements stored under the same key instead of measuring again (resume).
    pub reuse_stored: bool,
    /// Run the five verification stages on the winner before reporting it as best (and on the
    /// next fastest while it fails, up to [`WINNER_CHECKS`] configurations).
    pub verify_best: bool,
    /// Stop once the best configuration reaches this fraction of the speed of light (0.95:
    /// within 95% of the bound); `None` never stops for it.
    pub sol_stop: Option<f64>,
}

/// The default of [`TuneOptions::sol_stop`].
pub const SOL_STOP: f64 = 0.95;

impl TuneOptions {
    /// Brute force over `budget` evaluations (every configuration without one), seed 0, the
    /// default compile pool, stored results reused, the winner verified, the SOL stop on.
    pub fn brute_force(budget: Option<u64>) -> TuneOptions {
        TuneOptions {
            strategy: StrategyName::BruteForce,
            seed: 0,
            budget,
            time_limit: None,
            patience: None,
            target_speedup: None,
            compile_threads: COMPILE_THREADS,
            batch_size: BATCH_SIZE,
            reuse_stored: true,
            verify_best: true,
            sol_stop: Some(SOL_STOP),
        }
    }
}

/// How many of the fastest configurations the five stages are tried on before giving up.
pub const WINNER_CHECKS: usize = 3;

/// What the loop tells its caller as it goes (a progress bar, `$/progress`).
pub trait Observer {
    /// After every evaluation, resumed ones included.
    fn evaluated(&mut self, evaluation: &Evaluation, progress: &Progress);
    /// Checked between evaluations: a cancelled run stops within one measurement.
    fn cancelled(&self) -> bool {
        false
    }
}

/// An observer that shows nothing and never cancels.
pub struct Silent;

impl Observer for Silent {
    fn evaluated(&mut self, _: &Evaluation, _: &Progress) {}
}

/// The run so far.
#[derive(Clone, Debug, Serialize)]
pub struct Progress {
    pub evaluated: u64,
    pub budget: Option<u64>,
    pub best_us: Option<f64>,
    pub best_speedup: Option<f64>,
}

/// One evaluated configuration in a report.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    pub config: Configuration,
    pub status: String,
    pub time_us: Option<f64>,
    pub speedup: Option<f64>,
    /// Percent of the speed of light: the run's bound over this time.
    pub sol_percent: Option<f64>,
    pub spread: Option<f64>,
    pub registers: Option<u32>,
    pub occupancy: Option<f64>,
    pub compile_ms: f64,
    /// Found in the store, not measured in this run.
    pub resumed: bool,
}

/// The outcome of a tuning run.
#[derive(Clone, Debug, Serialize)]
pub struct TuneReport {
    pub file: String,
    pub kernel: String,
    pub device: String,
    /// Live, or a replay and of what.
    pub source: RunnerSource,
    pub nvrtc: String,
    pub strategy: String,
    pub seed: u64,
    pub baseline: Vec<Timing>,
    pub baseline_us: Option<f64>,
    /// The speed-of-light bound of the objective; when absent, why.
    pub sol: Option<RunBound>,
    pub sol_missing: Option<String>,
    /// Which in-out buffers running the original with other initial bytes showed it only
    /// writes (the bound counts them once); absent when the spec has none, gives `bytes`, or
    /// the runner runs no code.
    pub roles: Option<crate::gpu::SettledRoles>,
    /// When every configuration gave wrong output: how the original, run again, gave another
    /// output than its own, so nothing could be checked against it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unsteady_original: Option<String>,
    pub best: Option<Row>,
    /// The best configuration is no faster than the original kernel, which stays the answer.
    pub original_fastest: bool,
    /// Every evaluation of this run, in the order they were made.
    pub rows: Vec<Row>,
    /// The five-stage verification of `best` (absent for replays, with `--no-verify`, or when
    /// the run was cancelled).
    pub verification: Option<crate::verify::Report>,
    /// Faster configurations that failed it, with the first failure.
    pub rejected: Vec<Rejected>,
    pub stop_reason: String,
    /// Reasons configurations could not run, with how many.
    pub failures: BTreeMap<String, u64>,
    pub resumed: u64,
    /// Wall time of the search: from the first proposal to the last measurement.
    pub search_seconds: f64,
    /// Wall time from the start of `tune`: NVRTC, the baseline and the search.
    pub total_seconds: f64,
    pub compile_seconds: f64,
    pub measure_seconds: f64,
    /// Of `total_seconds`: verifying the winner.
    pub verify_seconds: f64,
    pub cached_compiles: u64,
    pub store: String,
}

/// A configuration that was fastest but failed verification.
#[derive(Clone, Debug, Serialize)]
pub struct Rejected {
    pub config: Configuration,
    pub summary: String,
}

/// The spec's parameter space under its restrictions, for the search strategies. A
/// configuration is feasible when every shape satisfies the restrictions and block limits.
struct SpecSpace {
    kernel: KernelSpec,
    params: Vec<(String, Vec<i64>)>,
}

impl SpecSpace {
    /// The spec's values, less those a restriction rules out whatever the other parameters
    /// are: in a space of billions with few feasible points, random draws may meet none.
    fn new(kernel: &KernelSpec) -> SpecSpace {
        let mut params = kernel.params.clone();
        // A scalar named as a size but given another value is that value in the restrictions.
        let shadowing: Vec<&str> = kernel.args.iter().filter(|a| !a.is_buffer() && a.value.as_deref() != Some(a.name.as_str())).map(|a| a.name.as_str()).collect();
        let sizes_of = |shape| {
            let mut sizes = crate::spec::sizes_of(kernel, shape);
            sizes.retain(|name, _| !shadowing.contains(&name.as_str()));
            sizes
        };
        let sizes: Vec<_> = kernel.problem_shapes().map(sizes_of).collect();
        space::narrow_to_restricted_values(&mut params, &kernel.restrictions, &sizes);
        SpecSpace { kernel: kernel.clone(), params: params.into_iter().map(|p| (p.name, p.values)).collect() }
    }

    fn config(&self, point: &[usize]) -> Configuration {
        Configuration(self.params.iter().zip(point).map(|((name, values), &i)| (name.clone(), values.get(i).copied().unwrap_or_default())).collect())
    }
}

impl SearchSpace for SpecSpace {
    fn params(&self) -> &[(String, Vec<i64>)] {
        &self.params
    }

    fn is_feasible(&self, point: &[usize]) -> bool {
        let config = self.config(point);
        self.kernel.problem_shapes().all(|shape| space::check_restrictions(&self.kernel, shape, &config).is_ok())
    }
}

/// Everything the loop needs besides the runner.
pub struct Tools<'a> {
    /// `None` only for runners that need no code (replays).
    pub nvrtc: Option<&'a Nvrtc>,
    pub cache: CubinCache,
    pub store: &'a Store,
    /// Where the devices' measured ceilings are cached (`sol::cache::default_dir()`).
    pub ceilings_dir: std::path::PathBuf,
}

/// Runs one tuning session. Every evaluation is in the store when this returns, also on error.
///
/// The stages, in order: the problems and the compile pool ([`Session::new`]); the baseline
/// and the verification kernels, compiled while the search's first candidates do, then the
/// speed-of-light bound ([`baseline`]); the search loop ([`search_loop`]); the winner's
/// verification ([`winner`]); the run's record in the store.
pub fn tune(target: &Target, runner: &mut dyn Runner, tools: &Tools, options: &TuneOptions, observer: &mut dyn Observer) -> Result<TuneReport> {
    let started = Instant::now();
    let session = Session::new(target, runner, tools, options)?;
    let kernel = &target.kernel;
    let mut feed = search_loop::Feed::new(&session);
    let (baseline, baseline_kernel, early) = baseline::prepare(&session, &mut feed, runner, observer)?;
    let baseline_us = (!baseline.is_empty()).then(|| baseline.iter().map(|t| t.median_us).sum::<f64>());
    feed.search.set_target(options.target_speedup.zip(baseline_us).map(|(speedup, baseline)| baseline / speedup));
    let (counted, roles) = baseline::settle_roles(kernel, runner, &baseline_kernel);
    let (sol_bound, sol_missing) = match baseline::speed_of_light(&counted, runner, tools).and_then(|bound| baseline::kept_by_the_original(bound, &baseline)) {
        Ok(bound) => (Some(bound), None),
        Err(why) => {
            tracing::warn!("no speed-of-light bound for `{}`: {why}", kernel.name);
            (None, Some(why))
        }
    };
    if let (Some(bound), Some(fraction)) = (&sol_bound, options.sol_stop) {
        feed.stop_near_light(bound.bound_us, fraction);
    }
    let run_id = tools.store.begin_run(&session.run_info(baseline_us, &sol_bound))?;
    let mut tally = search_loop::Tally::new(run_id, baseline_us, sol_bound);
    let search_started = Instant::now();
    let (stop_reason, measuring) = search_loop::run(&session, &mut feed, &mut tally, early, runner, observer)?;
    let search_seconds = search_started.elapsed().as_secs_f64();
    let verifying = Instant::now();
    let verified = winner::verify(&session, &mut tally, runner, observer)?;
    let stop_reason = match verified.none_passed {
        Some(none_passed) => format!("{stop_reason}; {none_passed}"),
        None => stop_reason,
    };
    let verify_seconds = verifying.elapsed().as_secs_f64();
    let unsteady_original = baseline::unsteady_original(tally.best.is_some(), &tally.failures, runner, &baseline_kernel);
    tools.store.finish_run(run_id, &stop_reason)?;
    Ok(TuneReport {
        file: target.file.clone(),
        kernel: kernel.name.clone(),
        device: session.key.device.clone(),
        source: session.source.clone(),
        nvrtc: session.key.nvrtc.clone(),
        strategy: options.strategy.to_string(),
        seed: options.seed,
        baseline,
        baseline_us,
        sol: tally.sol_bound,
        sol_missing,
        roles,
        unsteady_original,
        original_fastest: tally.best.as_ref().and_then(|best| best.speedup).is_some_and(|speedup| speedup <= 1.0),
        best: tally.best,
        rows: tally.rows,
        verification: verified.report,
        rejected: verified.rejected,
        stop_reason,
        failures: tally.failures,
        resumed: tally.resumed,
        search_seconds,
        total_seconds: started.elapsed().as_secs_f64(),
        compile_seconds: measuring.compiles.seconds,
        measure_seconds: measuring.seconds,
        verify_seconds,
        cached_compiles: measuring.compiles.cached,
        store: tools.store.path().display().to_string(),
    })
}

impl TuneReport {
    /// Why no configuration could pass, when the original is not its own equal on the spec's
    /// data, with the way out: said by the CLI and the editor alike.
    pub fn unsteady_explanation(&self) -> Option<String> {
        let why = self.unsteady_original.as_ref()?;
        Some(format!(
            "the original is not its own equal on the spec's data: {why}: its result depends on more than its inputs (the order its threads run in, or input it expects prepared, such as sorted runs or indices in range), so no candidate can be checked against it; tune it on the program's own data: `cutune profile --kernel {} -- CMD`, then templatize again",
            self.kernel
        ))
    }
}

/// What every stage of one tuning session reads: the target, the options, where results go,
/// the device and the compile pool.
struct Session<'a> {
    target: &'a Target,
    kernel: &'a KernelSpec,
    tools: &'a Tools<'a>,
    options: &'a TuneOptions,
    problems: Vec<crate::gpu::Problem>,
    key: ResultKey,
    device: crate::gpu::DeviceInfo,
    source: RunnerSource,
    arch: String,
    /// `None` for runners that need no code (replays).
    pool: Option<CompilePool>,
}

impl<'a> Session<'a> {
    /// The problems the spec's shapes make, the key results are stored under, and the compile
    /// pool when the runner measures real code.
    fn new(target: &'a Target, runner: &dyn Runner, tools: &'a Tools<'a>, options: &'a TuneOptions) -> Result<Session<'a>> {
        let device = runner.device().clone();
        let pool = match (runner.needs_code(), tools.nvrtc) {
            (true, Some(nvrtc)) => Some(CompilePool::new(nvrtc.clone(), tools.cache.clone(), options.compile_threads, options.batch_size)),
            (true, None) => return Err(anyhow!("measuring on {} needs NVRTC to compile the kernel", device.name)),
            (false, _) => None,
        };
        Ok(Session {
            target,
            kernel: &target.kernel,
            tools,
            options,
            problems: problems(&target.kernel)?,
            key: result_key(target, runner, tools.nvrtc)?,
            arch: device.arch(),
            device,
            source: runner.source().clone(),
            pool,
        })
    }

    /// The launch of `config` on every shape, or why the hardware refuses one.
    fn launches(&self, config: &Configuration) -> Result<Vec<LaunchDims>, space::Infeasible> {
        self.kernel.problem_shapes().map(|shape| space::launch_dims(self.kernel, shape, config)).collect()
    }

    /// [`Self::launches`] as `config` compiled to `resources` runs them (a grid the occupancy
    /// sizes).
    fn compiled_launches(&self, config: &Configuration, resources: Option<&crate::compile::KernelResources>) -> Result<Vec<LaunchDims>, space::Infeasible> {
        self.kernel.problem_shapes().map(|shape| space::launch_dims_compiled(self.kernel, shape, config, &self.device, resources)).collect()
    }

    /// An evaluation of `config` with only its outcome known yet.
    fn evaluation(&self, config: &Configuration, outcome: Outcome) -> Evaluation {
        Evaluation { key: self.key.clone(), config: config.clone(), source: self.source.clone(), outcome, resources: None, occupancy: None, compile_ms: 0.0, measured_at: unix_now() }
    }

    /// The run's record in the store, before its first evaluation.
    fn run_info(&self, baseline_us: Option<f64>, sol: &Option<RunBound>) -> RunInfo {
        let options = self.options;
        RunInfo {
            kernel: self.kernel.name.clone(),
            file: self.target.file.clone(),
            strategy: options.strategy.to_string(),
            seed: options.seed,
            budget: options.budget.map_or_else(|| "none".into(), |b| b.to_string()),
            source: self.source.clone(),
            device: self.key.device.clone(),
            started_at: unix_now(),
            baseline_us,
            source_sha256: self.key.source_sha256.clone(),
            problems_sha256: self.key.problems_sha256.clone(),
            nvrtc: self.key.nvrtc.clone(),
            kernel_sha256: self.target.kernel_sha256.clone(),
            sol: sol.clone(),
        }
    }
}

/// Total median time over the problems, for a configuration that may be best: it ran and its
/// output matched the baseline (replays carry no outputs; their recordings say what passed).
pub fn objective(evaluation: &Evaluation) -> Option<f64> {
    match &evaluation.outcome {
        Outcome::Measured { timings, .. } if counts_as_correct(evaluation) => Some(timings.iter().map(|t| t.median_us).sum()),
        _ => None,
    }
}

fn row(evaluation: &Evaluation, objective: Option<f64>, baseline_us: Option<f64>, resumed: bool) -> Row {
    let (time_us, spread) = match &evaluation.outcome {
        Outcome::Measured { timings, .. } => (Some(timings.iter().map(|t| t.median_us).sum::<f64>()), timings.iter().map(|t| t.spread).reduce(f64::max)),
        Outcome::Failed { .. } => (None, None),
    };
    let status = match (&evaluation.outcome, Finding::of_outcome(&evaluation.outcome)) {
        (_, Some(finding)) => finding.to_string(),
        (Outcome::Measured { verdict: crate::gpu::Verdict::Unchecked, .. }, None) => "ok (recorded)".to_string(),
        (_, None) => "ok".to_string(),
    };
    Row {
        config: evaluation.config.clone(),
        status,
        time_us,
        speedup: objective.zip(baseline_us).map(|(t, b)| b / t),
        sol_percent: None,
        spread,
        registers: evaluation.resources.as_ref().map(|r| r.registers),
        occupancy: evaluation.occupancy,
        compile_ms: evaluation.compile_ms,
        resumed,
    }
}

#[cfg(test)]
mod tests;
