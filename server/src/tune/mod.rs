//! The tuning loop: the search proposes configurations, the compile pool builds them while the
//! runner measures earlier ones, every evaluation goes to the results store as soon as it is
//! made, and only configurations whose output matches the baseline can be best.
//!
//! A run that was interrupted resumes without re-measuring: before compiling a configuration
//! the loop looks it up in the store under the same key (source, problems, device, NVRTC).

pub mod job;
pub mod results;
mod problems;
pub mod verification;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context, Result};
use serde::Serialize;

use crate::compile::{CompilePool, Compiled, CubinCache, Nvrtc};
use crate::gpu::{FailureKind, Kernel, LaunchDims, Module, Outcome, Runner, RunnerSource, Started, Timing};
use crate::search::{self, Point, Search, SearchSpace, StrategyName};
use crate::space::{self, Configuration, Occupancy};
use crate::spec::{sha256_hex, KernelSpec};
use crate::sol::{self, RunBound};
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
    /// The spec's device sizes (`sm_count`, …) set to the GPU that measures.
    pub fn on_device(mut self, device: &crate::gpu::DeviceInfo) -> Target {
        self.kernel = crate::spec::with_device_sizes(&self.kernel, device.multiprocessors, device.max_threads_per_multiprocessor);
        self
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
    /// The speed-of-light bound of the objective (absent when the device has no ceilings).
    pub sol: Option<RunBound>,
    pub best: Option<Row>,
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
    fn new(kernel: &KernelSpec) -> SpecSpace {
        SpecSpace { kernel: kernel.clone(), params: kernel.params.iter().map(|p| (p.name.clone(), p.values.clone())).collect() }
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
pub fn tune(target: &Target, runner: &mut dyn Runner, tools: &Tools, options: &TuneOptions, observer: &mut dyn Observer) -> Result<TuneReport> {
    let started = Instant::now();
    let kernel = &target.kernel;
    let device = runner.device().clone();
    let source = runner.source().clone();
    let arch = device.arch();
    let problems = problems(kernel)?;
    let key = result_key(target, runner, tools.nvrtc)?;
    let nvrtc_version = key.nvrtc.clone();
    let default = Configuration::default_of(kernel);
    let launches = |config: &Configuration| -> Result<Vec<LaunchDims>, space::Infeasible> {
        kernel.problem_shapes().map(|shape| space::launch_dims(kernel, shape, config)).collect()
    };

    let pool = match (runner.needs_code(), tools.nvrtc) {
        (true, Some(nvrtc)) => Some(CompilePool::new(nvrtc.clone(), tools.cache.clone(), options.compile_threads, options.batch_size)),
        (true, None) => return Err(anyhow!("measuring on {} needs NVRTC to compile the kernel", device.name)),
        (false, _) => None,
    };

    // The search starts before the baseline runs, so that its first candidates compile while
    // the baseline and the verification kernels do and while the worker prepares. Its target
    // is set once the baseline's time is known.
    let space = Arc::new(SpecSpace::new(kernel));
    let strategy = search::new_strategy(options.strategy, space.clone() as Arc<dyn SearchSpace>, options.seed);
    let limits = search::Limits {
        max_evaluations: options.budget.map(|b| b as usize),
        max_time: options.time_limit,
        patience: options.patience.map(|p| p as usize),
        target: None,
    };
    let mut search = Search::new(strategy, limits);
    let search_started = Instant::now();
    let lookahead = options.compile_threads.max(1) * options.batch_size.max(1);
    let mut in_flight: HashMap<usize, (Point, Configuration, Vec<LaunchDims>)> = HashMap::new();
    let mut next_id = 0usize;
    // Sorts the search's next points: those to compile go to the pool (and `in_flight`), the
    // rest are returned, to be concluded by the caller.
    let mut ask = |search: &mut Search, in_flight: &mut HashMap<usize, (Point, Configuration, Vec<LaunchDims>)>| -> Result<Vec<(Point, Next)>> {
        let mut others = Vec::new();
        let mut requests = Vec::new();
        for point in search.next(lookahead.saturating_sub(in_flight.len())) {
            let config = space.config(&point);
            if let Some(stored) = if options.reuse_stored { tools.store.lookup(&key, &config)? } else { None } {
                others.push((point, Next::Stored(stored)));
                continue;
            }
            // A grid or block the hardware refuses needs no compile to be ruled out.
            let dims = match launches(&config) {
                Ok(dims) => dims,
                Err(infeasible) => {
                    let outcome = Outcome::Failed { kind: FailureKind::Infeasible, message: infeasible.reason };
                    others.push((point, Next::Concluded(evaluation(&key, &config, &source, outcome))));
                    continue;
                }
            };
            if pool.is_none() {
                others.push((point, Next::Measure(config)));
                continue;
            }
            requests.push((next_id, space::compile_request(kernel, &target.source, &arch, &config)));
            in_flight.insert(next_id, (point, config, dims));
            next_id += 1;
        }
        if let Some(pool) = &pool {
            pool.submit(requests);
        }
        Ok(others)
    };

    // The baseline (the original kernel) and the verification kernels, compiled side by side,
    // ahead of the first candidates.
    let (baseline_kernel, harness, mut early) = match &pool {
        Some(pool) => {
            const BASELINE: usize = usize::MAX;
            const HARNESS: usize = usize::MAX - 1;
            pool.submit(vec![(BASELINE, verification::baseline_request(kernel, &arch)), (HARNESS, verification::harness_request(&arch))]);
            let early = if observer.cancelled() { Vec::new() } else { ask(&mut search, &mut in_flight)? };
            let (mut baseline, mut harness) = (None, None);
            let mut candidates = Vec::new();
            while baseline.is_none() || harness.is_none() {
                let built = pool.recv().ok_or_else(|| anyhow!("the compiler threads stopped"))?;
                match built.id {
                    BASELINE => baseline = Some(built.result),
                    HARNESS => harness = Some(built.result),
                    _ => candidates.push(built),
                }
            }
            // Candidates that came back first (cached ones) are measured after the baseline.
            pool.put_back(candidates);
            let baseline = baseline.expect("received").map_err(|f| anyhow!("the baseline (the original `{}`) does not compile: {}\n{}", kernel.name, f.message, f.log.trim_end()))?;
            let harness = harness.expect("received").map_err(|f| anyhow!("cutune's verification kernels do not compile with this NVRTC: {}\n{}", f.message, f.log.trim_end()))?;
            let launches = launches(&default).map_err(|i| anyhow!("the baseline's launch: {}", i.reason))?;
            (Kernel { module: Module { cubin: baseline.cubin, function: baseline.function }, launches }, harness.cubin, early)
        }
        None => (Kernel { module: Module { cubin: Default::default(), function: kernel.name.clone() }, launches: Vec::new() }, Default::default(), Vec::new()),
    };
    let baseline = runner.prepare(&problems, &baseline_kernel, &harness).with_context(|| format!("running the baseline `{}` on {}", kernel.name, device.name))?;
    let baseline_us = (!baseline.is_empty()).then(|| baseline.iter().map(|t| t.median_us).sum::<f64>());
    search.set_target(options.target_speedup.zip(baseline_us).map(|(speedup, baseline)| baseline / speedup));
    // The device's ceilings are measured once per device and cached; replays use the
    // datasheet's, labelled.
    let ceilings = if runner.needs_code() {
        sol::ceilings_for(runner, tools.nvrtc, &tools.ceilings_dir, false).map_err(|e| format!("{e:#}"))
    } else {
        // A replay measures nothing: the ceilings cached for its device, else the datasheet's.
        sol::measured(runner, None, &tools.ceilings_dir, false)
            .map(|found| found.ceilings)
            .or_else(|_| sol::Ceilings::datasheet(&device.name).ok_or_else(|| format!("cutune has no datasheet figures for {}", device.name)))
    };
    let sol_bound = ceilings
        .and_then(|ceilings| RunBound::of(kernel, &ceilings))
        .map_err(|why| tracing::warn!("no speed-of-light bound for `{}`: {why}", kernel.name))
        .ok();
    if let (Some(bound), Some(fraction)) = (&sol_bound, options.sol_stop) {
        let bound_us = bound.bound_us;
        search.set_hook(Some(Box::new(move |best| {
            (best * fraction <= bound_us).then(|| {
                format!("within {:.0}% of the speed of light: best {} against the {} bound", fraction * 100.0, sol::format_us(best), sol::format_us(bound_us))
            })
        })));
    }

    let run_id = tools.store.begin_run(&RunInfo {
        kernel: kernel.name.clone(),
        file: target.file.clone(),
        strategy: options.strategy.to_string(),
        seed: options.seed,
        budget: options.budget.map_or_else(|| "none".into(), |b| b.to_string()),
        source: source.clone(),
        device: key.device.clone(),
        started_at: unix_now(),
        baseline_us,
        source_sha256: key.source_sha256.clone(),
        problems_sha256: key.problems_sha256.clone(),
        nvrtc: key.nvrtc.clone(),
        kernel_sha256: target.kernel_sha256.clone(),
        sol: sol_bound.clone(),
    })?;

    let mut rows = Vec::new();
    // (objective, index in `rows`) of every configuration that may be best.
    let mut passing: Vec<(f64, usize)> = Vec::new();
    let mut failures = BTreeMap::new();
    let (mut resumed, mut measure_seconds) = (0u64, 0.0f64);
    let mut compiles = CompileTotals::default();
    let mut best: Option<Row> = None;
    // The fastest verified objective so far, for racing (see `race`).
    let mut fastest: Option<f64> = None;
    let mut stop_reason = None;

    // Turns one evaluation into a row, records it everywhere, and feeds the search.
    let mut conclude = |evaluation: Evaluation, point: &Point, was_resumed: bool, search: &mut Search, observer: &mut dyn Observer| -> Result<()> {
        if !was_resumed {
            tools.store.record(run_id, &evaluation)?;
        } else {
            resumed += 1;
        }
        let mut objective = objective(&evaluation);
        // Faster than the speed of light is more likely wrong than fast: never best, and kept
        // as a failed verification so that the store and the editor say so too.
        let too_fast = match (objective, &sol_bound, &evaluation.outcome) {
            (Some(time_us), Some(bound), Outcome::Measured { timings, .. }) if bound.faster_than_light(time_us, timings.iter().map(|t| t.spread).fold(0.0, f64::max)) => {
                Some(Finding::FasterThanLight { time_us, bound_us: bound.bound_us, ceilings: bound.ceilings.to_string() })
            }
            _ => None,
        };
        if let Some(finding) = &too_fast {
            objective = None;
            if !was_resumed {
                tools.store.record_verification(&key, &verification::failed_on_shapes(kernel, &evaluation.config, finding.clone())?)?;
            }
        }
        search.record(point, objective);
        let mut row = row(&evaluation, objective, baseline_us, was_resumed);
        row.sol_percent = row.time_us.zip(sol_bound.as_ref()).map(|(time, bound)| bound.percent(time));
        if let Some(finding) = too_fast {
            row.status = finding.to_string();
            *failures.entry(finding.label().to_string()).or_insert(0) += 1;
        }
        match (&evaluation.outcome, Finding::of_outcome(&evaluation.outcome)) {
            (Outcome::Failed { .. }, Some(finding)) => *failures.entry(finding.to_string()).or_insert(0) += 1,
            (Outcome::Measured { .. }, Some(finding)) if objective.is_none() => *failures.entry(finding.label().to_string()).or_insert(0) += 1,
            _ => {}
        }
        if let (Some(t), Some(objective)) = (row.time_us, objective) {
            passing.push((objective, rows.len()));
            if best.as_ref().and_then(|b| b.time_us).is_none_or(|b| t < b) {
                best = Some(row.clone());
            }
        }
        rows.push(row);
        let progress = Progress {
            evaluated: search.evaluations() as u64,
            budget: options.budget,
            best_us: best.as_ref().and_then(|b| b.time_us),
            best_speedup: best.as_ref().and_then(|b| b.speedup),
        };
        observer.evaluated(&evaluation, &progress);
        Ok(())
    };

    // The candidate the device is measuring, started before the one before it was recorded:
    // the device measures while the tuner writes the store and feeds the search.
    let mut running: Option<(Point, Evaluation, Instant)> = None;
    loop {
        if observer.cancelled() {
            if let Some(r) = running.take() {
                let outcome = runner.finish_measure();
                let (point, measurement) = measured(r, outcome, runner, &mut fastest, &mut measure_seconds);
                conclude(measurement, &point, false, &mut search, observer)?;
            }
            stop_reason = Some("cancelled".to_string());
            break;
        }
        if in_flight.len() < lookahead {
            early.extend(ask(&mut search, &mut in_flight)?);
        }
        for (point, next) in early.drain(..) {
            match next {
                Next::Stored(stored) => {
                    race(&mut fastest, &stored, runner);
                    conclude(stored, &point, true, &mut search, observer)?
                }
                Next::Concluded(evaluation) => conclude(evaluation, &point, false, &mut search, observer)?,
                Next::Measure(config) => {
                    let measured = Instant::now();
                    let outcome = runner.measure(&config, None);
                    measure_seconds += measured.elapsed().as_secs_f64();
                    conclude(evaluation(&key, &config, &source, outcome), &point, false, &mut search, observer)?;
                }
            }
        }
        if in_flight.is_empty() && running.is_none() {
            if let Some(reason) = search.stop_reason() {
                stop_reason = Some(reason.to_string());
                break;
            }
            continue;
        }
        let Some(pool) = &pool else { break };
        // The next compiled candidate: waited for only while the device is idle.
        let built = match running {
            Some(_) => pool.try_recv(),
            None => Some(pool.recv().ok_or_else(|| anyhow!("the compiler threads stopped"))?),
        };
        let mut next = None;
        if let Some((point, config, dims, result)) = built.and_then(|built| in_flight.remove(&built.id).map(|(p, c, d)| (p, c, d, built.result))) {
            match admit(evaluation(&key, &config, &source, Outcome::Failed { kind: FailureKind::Compile, message: String::new() }), dims, result, &device, &mut compiles) {
                Admitted::Concluded(concluded) => conclude(concluded, &point, false, &mut search, observer)?,
                Admitted::Measure(measurement, code) => next = Some((point, measurement, code)),
            }
        }
        if next.is_none() && running.is_none() {
            continue;
        }
        // The race cutoff the next candidate runs under comes from the one finished here.
        let finished = running.take().map(|r| {
            let outcome = runner.finish_measure();
            measured(r, outcome, runner, &mut fastest, &mut measure_seconds)
        });
        let mut done_at_once = None;
        if let Some((point, measurement, code)) = next {
            let started = Instant::now();
            match runner.start_measure(&measurement.config, Some(&code)) {
                Started::Running => running = Some((point, measurement, started)),
                Started::Done(outcome) => done_at_once = Some(measured((point, measurement, started), outcome, runner, &mut fastest, &mut measure_seconds)),
            }
        }
        for (point, measurement) in finished.into_iter().chain(done_at_once) {
            conclude(measurement, &point, false, &mut search, observer)?;
        }
    }
    let search_seconds = search_started.elapsed().as_secs_f64();
    let mut stop_reason = stop_reason.unwrap_or_else(|| "space exhausted".to_string());

    // The winner runs all five verification stages before it is reported as best; while it
    // fails, the next fastest does.
    let verifying = Instant::now();
    let (mut verification, mut rejected) = (None, Vec::new());
    if let (true, Some(pool), true) = (options.verify_best && !observer.cancelled(), &pool, best.is_some()) {
        passing.sort_by(|a, b| a.0.total_cmp(&b.0));
        let earlier = tools.store.verifications(&key)?;
        let mut winner = None;
        let mut attempts = 0;
        for &(_, index) in &passing {
            let config = rows[index].config.clone();
            let stored = earlier.iter().find(|v| v.config == config);
            let reused = stored.filter(|v| v.passed && options.reuse_stored).and_then(|v| serde_json::from_str::<crate::verify::Report>(&v.report).ok());
            let report = match (stored, reused) {
                (Some(stored), _) if !stored.passed => Err(stored.summary.clone()),
                (_, Some(report)) => Ok(report),
                _ if attempts == WINNER_CHECKS => break,
                _ => {
                    attempts += 1;
                    let code = verification::build_code(pool, target, &arch, &config)?;
                    let report = verification::run_and_store(kernel, &config, &crate::verify::Stage::ALL, &code, runner, tools.store, &key, false, &|| observer.cancelled())?;
                    if report.not_run > 0 && report.failure().is_none() {
                        break; // cancelled
                    }
                    if report.failure().is_some() { Err(report.summary()) } else { Ok(report) }
                }
            };
            match report {
                Ok(report) => {
                    verification = Some(report);
                    winner = Some(index);
                    break;
                }
                Err(summary) => {
                    rows[index].status = format!("failed verification: {summary}");
                    rejected.push(Rejected { config, summary });
                }
            }
        }
        best = winner.map(|index| rows[index].clone());
        if best.is_none() && !observer.cancelled() {
            stop_reason = format!("{stop_reason}; none of the {} fastest configurations passed verification", rejected.len());
        }
    }
    let verify_seconds = verifying.elapsed().as_secs_f64();
    tools.store.finish_run(run_id, &stop_reason)?;
    Ok(TuneReport {
        file: target.file.clone(),
        kernel: kernel.name.clone(),
        device: key.device.clone(),
        source,
        nvrtc: nvrtc_version,
        strategy: options.strategy.to_string(),
        seed: options.seed,
        baseline,
        baseline_us,
        sol: sol_bound,
        best,
        rows,
        verification,
        rejected,
        stop_reason,
        failures,
        resumed,
        search_seconds,
        total_seconds: started.elapsed().as_secs_f64(),
        compile_seconds: compiles.seconds,
        measure_seconds,
        verify_seconds,
        cached_compiles: compiles.cached,
        store: tools.store.path().display().to_string(),
    })
}

/// How much slower than the fastest verified configuration a candidate's first timed batch
/// may be, per problem, before its timing stops there. Ten times the timing noise (spreads
/// under 1% on the H100), so no candidate that could become best is cut short; in a profiled
/// brute-force RMSNorm 8192 run, four candidates between 1.10× and 1.25× the best so far were
/// timed fully at 1.25, for nothing.
const RACE_MARGIN: f64 = 1.10;

/// Keeps the runner's race cutoffs at [`RACE_MARGIN`] times the fastest verified timings.
fn race(fastest: &mut Option<f64>, evaluation: &Evaluation, runner: &mut dyn Runner) {
    let (Some(objective), Outcome::Measured { timings, .. }) = (objective(evaluation), &evaluation.outcome) else { return };
    if fastest.is_none_or(|f| objective < f) {
        *fastest = Some(objective);
        runner.set_cutoff(timings.iter().map(|t| t.median_us * RACE_MARGIN).collect());
    }
}

/// A started candidate with its outcome: timed from `started`, and raced.
fn measured(running: (Point, Evaluation, Instant), outcome: Outcome, runner: &mut dyn Runner, fastest: &mut Option<f64>, measure_seconds: &mut f64) -> (Point, Evaluation) {
    let (point, mut measurement, started) = running;
    measurement.outcome = outcome;
    measurement.measured_at = unix_now();
    *measure_seconds += started.elapsed().as_secs_f64();
    race(fastest, &measurement, runner);
    (point, measurement)
}

/// A point the search proposed that needs no compile, or not from the pool.
enum Next {
    /// Measured in an earlier run: taken from the store.
    Stored(Evaluation),
    /// Ruled out before compiling.
    Concluded(Evaluation),
    /// For a runner that needs no code (a replay).
    Measure(Configuration),
}

/// What the compile pool did for a run, and what its cache saved.
#[derive(Default)]
struct CompileTotals {
    cached: u64,
    seconds: f64,
}

/// An evaluation of `config` with only its outcome known yet.
fn evaluation(key: &ResultKey, config: &Configuration, source: &RunnerSource, outcome: Outcome) -> Evaluation {
    Evaluation { key: key.clone(), config: config.clone(), source: source.clone(), outcome, resources: None, occupancy: None, compile_ms: 0.0, measured_at: unix_now() }
}

/// What a compiled candidate needs next.
enum Admitted {
    /// Nothing: it failed to compile or does not fit the device.
    Concluded(Evaluation),
    /// Measuring, with this code.
    Measure(Evaluation, Kernel),
}

/// Compile result → device fit on every launch, filling in `evaluation`.
fn admit(mut evaluation: Evaluation, launches: Vec<LaunchDims>, compiled: Result<Compiled, crate::compile::Failed>, device: &crate::gpu::DeviceInfo, totals: &mut CompileTotals) -> Admitted {
    let compiled = match compiled {
        Ok(compiled) => compiled,
        Err(failed) => {
            let reason = crate::compile::failure_reason(&failed.message, &failed.log);
            let kind = match reason {
                crate::compile::FailureReason::StaticShared { .. } => FailureKind::Infeasible,
                crate::compile::FailureReason::Error(_) => FailureKind::Compile,
            };
            evaluation.outcome = Outcome::Failed { kind, message: reason.to_string() };
            return Admitted::Concluded(evaluation);
        }
    };
    if compiled.cached {
        totals.cached += 1;
    } else {
        totals.seconds += compiled.compile_ms / 1e3;
    }
    evaluation.compile_ms = compiled.compile_ms;
    evaluation.resources = compiled.resources.clone();
    if let Some(resources) = &compiled.resources {
        let mut occupancy: Option<Occupancy> = None;
        for dims in &launches {
            match space::fit(device, dims.threads(), resources, dims.shared_bytes as u64) {
                Ok(fit) => occupancy = occupancy.or(Some(fit)),
                Err(infeasible) => {
                    evaluation.outcome = Outcome::Failed { kind: FailureKind::Infeasible, message: infeasible.reason };
                    return Admitted::Concluded(evaluation);
                }
            }
        }
        evaluation.occupancy = occupancy.map(|o| o.fraction);
    }
    Admitted::Measure(evaluation, Kernel { module: Module { cubin: compiled.cubin, function: compiled.function }, launches })
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
