//! The search loop: the search proposes configurations, the compile pool builds them while the
//! device measures the one before, and every evaluation is concluded (stored, counted, fed
//! back to the search) as soon as it is made.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{anyhow, Result};

use super::{objective, row, verification, Observer, Progress, Row, Session, SpecSpace};
use crate::compile::{Compiled, KernelResources};
use crate::gpu::{FailureKind, Kernel, LaunchDims, Module, Outcome, Runner, Started};
use crate::search::{self, Point, Search, SearchSpace};
use crate::sol::{self, RunBound};
use crate::space::{self, Configuration, Occupancy};
use crate::store::{unix_now, Evaluation};
use crate::verify::Finding;

/// How much slower than the fastest verified configuration a candidate's first timed batch
/// may be, per problem, before its timing stops there. Ten times the timing noise (spreads
/// under 1% on the H100), so no candidate that could become best is cut short; in a profiled
/// brute-force RMSNorm 8192 run, four candidates between 1.10× and 1.25× the best so far were
/// timed fully at 1.25, for nothing.
const RACE_MARGIN: f64 = 1.10;

/// A point the search proposed that needs no compile, or not from the pool.
pub(super) enum Next {
    /// Measured in an earlier run: taken from the store.
    Stored(Evaluation),
    /// Ruled out before compiling.
    Concluded(Evaluation),
    /// For a runner that needs no code (a replay).
    Measure(Configuration),
}

/// Proposals that need no compile, with their points, to be concluded in order.
pub(super) type Proposals = Vec<(Point, Next)>;

/// A candidate in the compile pool: its point, configuration and launches.
type InFlight = (Point, Configuration, Vec<LaunchDims>);

/// The search and its proposals on their way: compiling in the pool, or concluded without a
/// compile.
pub(super) struct Feed {
    pub search: Search,
    space: Arc<SpecSpace>,
    in_flight: HashMap<usize, InFlight>,
    next_id: usize,
    /// How many candidates may compile ahead of the device.
    lookahead: usize,
}

impl Feed {
    pub fn new(session: &Session) -> Feed {
        let options = session.options;
        let space = Arc::new(SpecSpace::new(session.kernel));
        let strategy = search::new_strategy(options.strategy, space.clone() as Arc<dyn SearchSpace>, options.seed);
        let limits = search::Limits {
            max_evaluations: options.budget.map(|b| b as usize),
            max_time: options.time_limit,
            patience: options.patience.map(|p| p as usize),
            target: None,
        };
        let lookahead = options.compile_threads.max(1) * options.batch_size.max(1);
        Feed { search: Search::new(strategy, limits), space, in_flight: HashMap::new(), next_id: 0, lookahead }
    }

    /// Stops the search once the best time is within `fraction` of the bound.
    pub fn stop_near_light(&mut self, bound_us: f64, fraction: f64) {
        self.search.set_hook(Some(Box::new(move |best| {
            (best * fraction <= bound_us).then(|| {
                format!("within {:.0}% of the speed of light: best {} against the {} bound", fraction * 100.0, sol::format_us(best), sol::format_us(bound_us))
            })
        })));
    }

    /// Sorts the search's next points: those to compile go to the pool (and `in_flight`), the
    /// rest are returned, to be concluded by the caller.
    pub fn ask(&mut self, session: &Session) -> Result<Proposals> {
        let mut others = Vec::new();
        let mut requests = Vec::new();
        for point in self.search.next(self.lookahead.saturating_sub(self.in_flight.len())) {
            let config = self.space.config(&point);
            if let Some(stored) = if session.options.reuse_stored { session.tools.store.lookup(&session.key, &config)? } else { None } {
                others.push((point, Next::Stored(stored)));
                continue;
            }
            // A grid or block the hardware refuses needs no compile to be ruled out.
            let dims = match session.launches(&config) {
                Ok(dims) => dims,
                Err(infeasible) => {
                    let outcome = Outcome::Failed { kind: FailureKind::Infeasible, message: infeasible.reason };
                    others.push((point, Next::Concluded(session.evaluation(&config, outcome))));
                    continue;
                }
            };
            if session.pool.is_none() {
                others.push((point, Next::Measure(config)));
                continue;
            }
            requests.push((self.next_id, space::compile_request(session.kernel, &session.target.source, &session.arch, &config)));
            self.in_flight.insert(self.next_id, (point, config, dims));
            self.next_id += 1;
        }
        if let Some(pool) = &session.pool {
            pool.submit(requests);
        }
        Ok(others)
    }
}

/// Every evaluation of the session, as rows, and what the report says of them.
pub(super) struct Tally {
    run_id: i64,
    baseline_us: Option<f64>,
    pub sol_bound: Option<RunBound>,
    pub rows: Vec<Row>,
    /// (objective, index in `rows`) of every configuration that may be best.
    pub passing: Vec<(f64, usize)>,
    /// Reasons configurations could not run, with how many.
    pub failures: BTreeMap<String, u64>,
    pub resumed: u64,
    pub best: Option<Row>,
}

impl Tally {
    pub fn new(run_id: i64, baseline_us: Option<f64>, sol_bound: Option<RunBound>) -> Tally {
        Tally { run_id, baseline_us, sol_bound, rows: Vec::new(), passing: Vec::new(), failures: BTreeMap::new(), resumed: 0, best: None }
    }

    /// Turns one evaluation into a row, records it everywhere, and feeds the search.
    fn conclude(&mut self, session: &Session, evaluation: Evaluation, point: &Point, was_resumed: bool, search: &mut Search, observer: &mut dyn Observer) -> Result<()> {
        let store = session.tools.store;
        if !was_resumed {
            store.record(self.run_id, &evaluation)?;
        } else {
            self.resumed += 1;
        }
        let mut objective = objective(&evaluation);
        // Faster than the speed of light is more likely wrong than fast: never best, and kept
        // as a failed verification so that the store and the editor say so too.
        let too_fast = match (objective, &self.sol_bound, &evaluation.outcome) {
            (Some(time_us), Some(bound), Outcome::Measured { timings, .. }) if bound.faster_than_light(time_us, timings.iter().map(|t| t.spread).fold(0.0, f64::max)) => {
                Some(Finding::FasterThanLight { time_us, bound_us: bound.bound_us, ceilings: bound.ceilings.to_string() })
            }
            _ => None,
        };
        if let Some(finding) = &too_fast {
            objective = None;
            if !was_resumed {
                store.record_verification(&session.key, &verification::failed_on_shapes(session.kernel, &evaluation.config, finding.clone())?)?;
            }
        }
        search.record(point, objective);
        let mut row = row(&evaluation, objective, self.baseline_us, was_resumed);
        row.sol_percent = row.time_us.zip(self.sol_bound.as_ref()).map(|(time, bound)| bound.percent(time));
        if let Some(finding) = too_fast {
            row.status = finding.to_string();
            *self.failures.entry(finding.label().to_string()).or_insert(0) += 1;
        }
        match (&evaluation.outcome, Finding::of_outcome(&evaluation.outcome)) {
            (Outcome::Failed { .. }, Some(finding)) => *self.failures.entry(finding.to_string()).or_insert(0) += 1,
            (Outcome::Measured { .. }, Some(finding)) if objective.is_none() => *self.failures.entry(finding.label().to_string()).or_insert(0) += 1,
            _ => {}
        }
        if let (Some(t), Some(objective)) = (row.time_us, objective) {
            self.passing.push((objective, self.rows.len()));
            if self.best.as_ref().and_then(|b| b.time_us).is_none_or(|b| t < b) {
                self.best = Some(row.clone());
            }
        }
        self.rows.push(row);
        let progress = Progress {
            evaluated: search.evaluations() as u64,
            budget: session.options.budget,
            best_us: self.best.as_ref().and_then(|b| b.time_us),
            best_speedup: self.best.as_ref().and_then(|b| b.speedup),
        };
        observer.evaluated(&evaluation, &progress);
        Ok(())
    }
}

/// The device's side of the loop: the race cutoff, and where the time went.
#[derive(Default)]
pub(super) struct Measuring {
    /// The fastest verified objective so far, for racing (see [`race`]).
    fastest: Option<f64>,
    /// Wall time the device spent measuring.
    pub seconds: f64,
    pub compiles: CompileTotals,
}

impl Measuring {
    /// Keeps the runner's race cutoffs at [`RACE_MARGIN`] times the fastest verified timings.
    fn race(&mut self, evaluation: &Evaluation, runner: &mut dyn Runner) {
        let (Some(objective), Outcome::Measured { timings, .. }) = (objective(evaluation), &evaluation.outcome) else { return };
        if self.fastest.is_none_or(|f| objective < f) {
            self.fastest = Some(objective);
            runner.set_cutoff(timings.iter().map(|t| t.median_us * RACE_MARGIN).collect());
        }
    }

    /// A started candidate with its outcome: timed from `started`, and raced.
    fn measured(&mut self, running: (Point, Evaluation, Instant), outcome: Outcome, runner: &mut dyn Runner) -> (Point, Evaluation) {
        let (point, mut measurement, started) = running;
        measurement.outcome = outcome;
        measurement.measured_at = unix_now();
        self.seconds += started.elapsed().as_secs_f64();
        self.race(&measurement, runner);
        (point, measurement)
    }
}

/// Runs the search until it stops, the space is exhausted or the observer cancels, starting
/// with the points `early` that the baseline stage already asked for. Returns why it stopped.
pub(super) fn run(session: &Session, feed: &mut Feed, tally: &mut Tally, mut early: Proposals, runner: &mut dyn Runner, observer: &mut dyn Observer) -> Result<(String, Measuring)> {
    let mut measuring = Measuring::default();
    // The candidate the device is measuring, started before the one before it was recorded:
    // the device measures while the tuner writes the store and feeds the search.
    let mut running: Option<(Point, Evaluation, Instant)> = None;
    loop {
        if observer.cancelled() {
            if let Some(r) = running.take() {
                let outcome = runner.finish_measure();
                let (point, measurement) = measuring.measured(r, outcome, runner);
                tally.conclude(session, measurement, &point, false, &mut feed.search, observer)?;
            }
            return Ok(("cancelled".to_string(), measuring));
        }
        if feed.in_flight.len() < feed.lookahead {
            early.extend(feed.ask(session)?);
        }
        for (point, next) in early.drain(..) {
            let (evaluation, resumed) = match next {
                Next::Stored(stored) => {
                    measuring.race(&stored, runner);
                    (stored, true)
                }
                Next::Concluded(evaluation) => (evaluation, false),
                Next::Measure(config) => {
                    let started = Instant::now();
                    let outcome = runner.measure(&config, None);
                    measuring.seconds += started.elapsed().as_secs_f64();
                    (session.evaluation(&config, outcome), false)
                }
            };
            tally.conclude(session, evaluation, &point, resumed, &mut feed.search, observer)?;
        }
        if feed.in_flight.is_empty() && running.is_none() {
            if let Some(reason) = feed.search.stop_reason() {
                return Ok((reason.to_string(), measuring));
            }
            continue;
        }
        let Some(pool) = &session.pool else { return Ok(("space exhausted".to_string(), measuring)) };
        // The next compiled candidate: waited for only while the device is idle.
        let built = match running {
            Some(_) => pool.try_recv(),
            None => Some(pool.recv().ok_or_else(|| anyhow!("the compiler threads stopped"))?),
        };
        let mut next = None;
        if let Some((point, config, dims, result)) = built.and_then(|built| feed.in_flight.remove(&built.id).map(|(p, c, d)| (p, c, d, built.result))) {
            let unmeasured = session.evaluation(&config, Outcome::Failed { kind: FailureKind::Compile, message: String::new() });
            let relaunch = |resources: &crate::compile::KernelResources| session.compiled_launches(&config, Some(resources));
            match admit(unmeasured, dims, &relaunch, result, &session.device, &mut measuring.compiles) {
                Admitted::Concluded(concluded) => tally.conclude(session, concluded, &point, false, &mut feed.search, observer)?,
                Admitted::Measure(measurement, code) => next = Some((point, measurement, code)),
            }
        }
        if next.is_none() && running.is_none() {
            continue;
        }
        // The race cutoff the next candidate runs under comes from the one finished here.
        let finished = running.take().map(|r| {
            let outcome = runner.finish_measure();
            measuring.measured(r, outcome, runner)
        });
        let mut done_at_once = None;
        if let Some((point, measurement, code)) = next {
            let started = Instant::now();
            match runner.start_measure(&measurement.config, Some(&code)) {
                Started::Running => running = Some((point, measurement, started)),
                Started::Done(outcome) => done_at_once = Some(measuring.measured((point, measurement, started), outcome, runner)),
            }
        }
        for (point, measurement) in finished.into_iter().chain(done_at_once) {
            tally.conclude(session, measurement, &point, false, &mut feed.search, observer)?;
        }
    }
}

/// What the compile pool did for a run, and what its cache saved.
#[derive(Default)]
pub(super) struct CompileTotals {
    pub cached: u64,
    pub seconds: f64,
}

/// What a compiled candidate needs next.
enum Admitted {
    /// Nothing: it failed to compile or does not fit the device.
    Concluded(Evaluation),
    /// Measuring, with this code.
    Measure(Evaluation, Kernel),
}

/// Compile result → device fit on every launch, filling in `evaluation`. `launches` are those
/// decided before compiling; `relaunch` gives them for the compiled resources (a grid the
/// occupancy sizes).
fn admit(mut evaluation: Evaluation, mut launches: Vec<LaunchDims>, relaunch: &dyn Fn(&KernelResources) -> Result<Vec<LaunchDims>, space::Infeasible>, compiled: Result<Compiled, crate::compile::Failed>, device: &crate::gpu::DeviceInfo, totals: &mut CompileTotals) -> Admitted {
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
        launches = match relaunch(resources) {
            Ok(launches) => launches,
            Err(infeasible) => {
                evaluation.outcome = Outcome::Failed { kind: FailureKind::Infeasible, message: infeasible.reason };
                return Admitted::Concluded(evaluation);
            }
        };
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
