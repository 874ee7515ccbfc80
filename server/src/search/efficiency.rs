//! Sample efficiency: how close each strategy gets to a recorded space's optimum, and how fast,
//! over many seeds. Used by `cutune bench-search` and by the `search_efficiency` test.
//!
//! Every run is a [`Search`] with an evaluation budget over the replay runner's recorded space,
//! measuring through [`Runner::measure`]. Evaluations count as Kernel Tuner counts them:
//! distinct configurations tried, failed ones included.

use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Result};

use super::{new_strategy, Limits, Search, StrategyName};
use crate::gpu::replay::ReplayRunner;
use crate::gpu::{Outcome, Runner, Verdict};

/// Which recorded number a configuration's objective is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Objective {
    /// The recording's own objective (Kernel Tuner's `time`, the mean of the runs): the one
    /// its published results are computed on.
    Recorded,
    /// The median of the runs, as cutune's tuning loop measures.
    Median,
}

#[derive(Clone, Debug)]
pub struct EfficiencySettings {
    pub strategies: Vec<StrategyName>,
    /// Seeds `0..seeds`.
    pub seeds: u64,
    /// Evaluations per run.
    pub budget: usize,
    /// Points asked for at a time (Kernel Tuner evaluates one at a time).
    pub batch: usize,
    /// "Found the optimum" means within this fraction of it.
    pub tolerance: f64,
    pub objective: Objective,
}

impl Default for EfficiencySettings {
    fn default() -> EfficiencySettings {
        EfficiencySettings {
            strategies: StrategyName::ALL.to_vec(),
            seeds: 20,
            budget: 100,
            batch: 1,
            tolerance: 0.01,
            objective: Objective::Recorded,
        }
    }
}

/// One strategy's runs on one space.
#[derive(Clone, Debug, serde::Serialize)]
pub struct StrategyEfficiency {
    pub strategy: StrategyName,
    /// Per seed: the best objective after the budget divided by the optimum.
    pub ratios: Vec<f64>,
    pub median_ratio: f64,
    /// Per seed: evaluations until the best was within the tolerance of the optimum; `None`
    /// when the budget ran out first.
    pub evaluations_to_optimum: Vec<Option<usize>>,
    /// `None` when more than half the seeds ran out of budget.
    pub median_evaluations_to_optimum: Option<f64>,
    pub seconds: f64,
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct SpaceEfficiency {
    /// The recording's file or label.
    pub source: String,
    /// Configurations in the recorded space, failed ones included.
    pub points: usize,
    pub optimum: f64,
    pub strategies: Vec<StrategyEfficiency>,
}

/// Runs every strategy of `settings` for every seed over `runner`'s recorded space.
pub fn measure_efficiency(runner: &mut ReplayRunner, settings: &EfficiencySettings) -> Result<SpaceEfficiency> {
    let space = Arc::new(runner.space());
    let source = match runner.source() {
        crate::gpu::RunnerSource::Replay { from } => from.clone(),
        crate::gpu::RunnerSource::Device => String::from("device"),
    };
    let recorded: Vec<_> = runner.configurations().filter(|(_, r)| r.in_space).map(|(config, _)| config).collect();
    let optimum = recorded.iter().filter_map(|config| objective(runner, config, settings.objective)).fold(f64::INFINITY, f64::min);
    if !optimum.is_finite() || optimum <= 0.0 {
        bail!("{source}: no successful measurement to compare with");
    }
    let mut strategies = Vec::new();
    for &strategy in &settings.strategies {
        let started = Instant::now();
        let mut ratios = Vec::new();
        let mut evaluations_to_optimum = Vec::new();
        for seed in 0..settings.seeds {
            let mut search = Search::new(
                new_strategy(strategy, space.clone(), seed),
                Limits { max_evaluations: Some(settings.budget), ..Limits::default() },
            );
            let mut best = f64::INFINITY;
            let mut found_at = None;
            loop {
                let points = search.next(settings.batch.max(1));
                if points.is_empty() {
                    break;
                }
                for point in points {
                    let config = space.configuration(&point);
                    let value = objective(runner, &config, settings.objective);
                    search.record(&point, value);
                    best = value.map_or(best, |v| best.min(v));
                    if found_at.is_none() && best <= optimum * (1.0 + settings.tolerance) {
                        found_at = Some(search.evaluations());
                    }
                }
            }
            ratios.push(best / optimum);
            evaluations_to_optimum.push(found_at);
        }
        let median_evaluations_to_optimum =
            median(evaluations_to_optimum.iter().map(|e| e.map_or(f64::INFINITY, |e| e as f64)).collect()).filter(|m| m.is_finite());
        strategies.push(StrategyEfficiency {
            strategy,
            median_ratio: median(ratios.clone()).unwrap_or(f64::NAN),
            ratios,
            evaluations_to_optimum,
            median_evaluations_to_optimum,
            seconds: started.elapsed().as_secs_f64(),
        });
    }
    Ok(SpaceEfficiency { source, points: space.len(), optimum, strategies })
}

/// The objective of `config` as the runner replays it; `None` when it failed or was wrong.
fn objective(runner: &mut ReplayRunner, config: &crate::space::Configuration, which: Objective) -> Option<f64> {
    match runner.measure(config, None) {
        Outcome::Measured { verdict: Verdict::Mismatch { .. }, .. } | Outcome::Failed { .. } => None,
        Outcome::Measured { timings, .. } => match which {
            Objective::Median => Some(timings.iter().map(|t| t.median_us).sum()),
            Objective::Recorded => runner.recording(config).and_then(|r| r.recorded_us),
        },
    }
}

/// The median (the mean of the middle two for an even count); `None` when empty.
pub fn median(mut values: Vec<f64>) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let n = values.len();
    Some(if n % 2 == 1 { values[n / 2] } else { (values[n / 2 - 1] + values[n / 2]) / 2.0 })
}

/// The report as a Markdown table, one row per strategy.
pub fn render_markdown(spaces: &[SpaceEfficiency], settings: &EfficiencySettings) -> String {
    let mut out = String::new();
    for space in spaces {
        out.push_str(&format!(
            "{} ({} configurations, optimum {:.3} µs, {} seeds, budget {}, batch {}, objective {:?})\n\n",
            space.source, space.points, space.optimum, settings.seeds, settings.budget, settings.batch, settings.objective
        ));
        out.push_str(&format!(
            "| strategy | best / optimum after {} (median) | evaluations to within {}% (median) | time |\n|---|---|---|---|\n",
            settings.budget,
            settings.tolerance * 100.0
        ));
        for s in &space.strategies {
            let evaluations = s.median_evaluations_to_optimum.map_or(format!("> {}", settings.budget), |e| format!("{e}"));
            out.push_str(&format!("| {} | {:.3}× | {} | {:.1} s |\n", s.strategy, s.median_ratio, evaluations, s.seconds));
        }
        out.push('\n');
    }
    out
}
