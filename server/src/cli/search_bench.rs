//! `cutune bench-search`: the sample efficiency of the search strategies on recorded spaces (T4
//! results files, Kernel Tuner caches), as `docs/search.md` reports it.

use std::path::{Path, PathBuf};

use anyhow::{bail, Result};

use crate::gpu::replay::ReplayRunner;
use crate::search::efficiency::{measure_efficiency, render_markdown, EfficiencySettings, Objective};
use crate::search::StrategyName;

/// The benchmark hub's spaces, as shipped with the repository's tests.
const DEFAULT_RECORDINGS: [&str; 2] =
    ["tests/fixtures/replay/convolution_milo_A100_T4.json.gz", "tests/fixtures/replay/dedispersion_milo_A100_T4.json.gz"];

#[derive(clap::Args)]
pub struct SearchBenchArgs {
    /// T4 results files (`.json` or `.json.gz`); without these or --kt-cache, the benchmark
    /// hub's convolution and dedispersion spaces under tests/fixtures/replay.
    #[arg(long = "t4", value_name = "FILE")]
    t4: Vec<PathBuf>,
    /// Kernel Tuner cache files.
    #[arg(long = "kt-cache", value_name = "FILE")]
    kt_cache: Vec<PathBuf>,
    /// Strategies to measure (default: all).
    #[arg(long = "strategy", value_name = "NAME")]
    strategies: Vec<StrategyName>,
    /// Runs per strategy, with seeds 0 to N-1.
    #[arg(long, default_value_t = 20)]
    seeds: u64,
    /// Evaluations per run (distinct configurations, failed ones included).
    #[arg(long, default_value_t = 100)]
    budget: usize,
    /// Configurations asked for at a time.
    #[arg(long, default_value_t = 1)]
    batch: usize,
    /// "Found" means within this percentage of the optimum.
    #[arg(long, default_value_t = 1.0)]
    within_percent: f64,
    /// The recording's own objective (Kernel Tuner's mean time) or the median of the runs.
    #[arg(long, value_enum, default_value_t = Objective::Recorded)]
    objective: Objective,
    /// Print the results as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(args: &SearchBenchArgs) -> Result<()> {
    if args.seeds == 0 || args.budget == 0 || args.batch == 0 {
        bail!("--seeds, --budget and --batch must be at least 1");
    }
    let settings = EfficiencySettings {
        strategies: if args.strategies.is_empty() { StrategyName::ALL.to_vec() } else { args.strategies.clone() },
        seeds: args.seeds,
        budget: args.budget,
        batch: args.batch,
        tolerance: args.within_percent / 100.0,
        objective: args.objective,
    };
    let mut runners = Vec::new();
    if args.t4.is_empty() && args.kt_cache.is_empty() {
        for file in DEFAULT_RECORDINGS {
            if !Path::new(file).exists() {
                bail!("{file} not found: run from the repository's root, or name recordings with --t4 or --kt-cache");
            }
            runners.push(ReplayRunner::from_t4(Path::new(file))?);
        }
    }
    for file in &args.t4 {
        runners.push(ReplayRunner::from_t4(file)?);
    }
    for file in &args.kt_cache {
        runners.push(ReplayRunner::from_kernel_tuner_cache(file)?);
    }
    let mut reports = Vec::new();
    for runner in &mut runners {
        reports.push(measure_efficiency(runner, &settings)?);
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&reports)?);
    } else {
        print!("{}", render_markdown(&reports, &settings));
    }
    Ok(())
}
