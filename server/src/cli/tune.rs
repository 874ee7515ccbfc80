//! `cutune tune FILE --kernel NAME`: search the kernel's parameter space on the GPU (or on a
//! replay of recorded measurements), check every candidate against the original kernel, keep
//! every evaluation in `.cutune/results.db`, and print the best configurations.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{anyhow, Result};
use indicatif::{ProgressBar, ProgressStyle};

use crate::gpu::{RunnerSource, SettledRoles};
use crate::search::StrategyName;
use crate::store::Evaluation;
use crate::tune::{self, job, Observer, Progress, TuneOptions, TuneReport};

#[derive(clap::Args)]
pub struct TuneArgs {
    /// The CUDA source file; its spec is read from beside it unless `--spec` names one.
    pub file: PathBuf,
    #[arg(long)]
    pub kernel: String,
    /// The tuning spec to use instead of the one beside the file.
    #[arg(long)]
    pub spec: Option<PathBuf>,
    /// The search strategy [default: brute-force when the whole space fits the budget, else model].
    #[arg(long, value_enum)]
    pub strategy: Option<StrategyName>,
    /// Most configurations to evaluate, failed ones included.
    #[arg(long, default_value_t = 200)]
    pub budget: u64,
    /// Wall-time limit of the search, e.g. `90s`, `5m`.
    #[arg(long, value_parser = humantime::parse_duration)]
    pub time: Option<Duration>,
    /// Stop after this many evaluations without improvement.
    #[arg(long)]
    pub patience: Option<u64>,
    /// Stop once a configuration is this many times faster than the original kernel.
    #[arg(long)]
    pub target_speedup: Option<f64>,
    /// Seed of the search: the same seed makes the same choices.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// The CUDA device to measure on.
    #[arg(long, default_value_t = 0)]
    pub device: u32,
    /// Serve measurements from a recording instead of the GPU: a T4 file (`.json`, `.json.gz`)
    /// or a Kernel Tuner cache file. The output says it is a replay.
    #[arg(long, value_name = "FILE")]
    pub replay: Option<PathBuf>,
    /// Where `.cutune/` (results and cubin cache) lives [default: the file's folder].
    #[arg(long)]
    pub workspace: Option<PathBuf>,
    /// Compile every configuration again instead of reusing cached cubins.
    #[arg(long)]
    pub no_cache: bool,
    /// Measure every configuration again instead of reusing results stored by earlier runs
    /// of the same code on the same device (by default an interrupted run resumes).
    #[arg(long)]
    pub remeasure: bool,
    /// Compiler threads (NVRTC stops scaling at about 4 per process).
    #[arg(long, short = 'j', default_value_t = tune::COMPILE_THREADS)]
    pub jobs: usize,
    /// Configurations per NVRTC program (headers are parsed once per program).
    #[arg(long, default_value_t = tune::BATCH_SIZE)]
    pub batch: usize,
    /// The NVRTC library to use (otherwise `CUTUNE_NVRTC`, `CUDA_HOME`, the loader path, pip).
    #[arg(long)]
    pub nvrtc: Option<PathBuf>,
    /// Stop once the best configuration reaches this fraction of the speed-of-light bound
    /// (0.95: within 95%); 0 never stops for it.
    #[arg(long, default_value_t = tune::SOL_STOP)]
    pub sol_stop: f64,
    /// Report the fastest configuration without running the five verification stages on it
    /// (every candidate is still checked against the original on the spec's shapes).
    #[arg(long)]
    pub no_verify: bool,
    /// How many of the best configurations to list.
    #[arg(long, default_value_t = 10)]
    pub top: usize,
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: &TuneArgs) -> Result<()> {
    if !(0.0..=1.0).contains(&args.sol_stop) {
        return Err(anyhow!("--sol-stop {} must be a fraction between 0 and 1 (0.95: stop within 95% of the speed of light; 0: never)", args.sol_stop));
    }
    let options = TuneOptions {
        strategy: StrategyName::BruteForce,
        seed: args.seed,
        budget: Some(args.budget),
        time_limit: args.time,
        patience: args.patience,
        target_speedup: args.target_speedup,
        compile_threads: args.jobs.max(1),
        batch_size: args.batch.max(1),
        reuse_stored: !args.remeasure,
        verify_best: !args.no_verify,
        sol_stop: (args.sol_stop > 0.0).then_some(args.sol_stop),
    };
    let request = job::FileTune {
        file: &args.file,
        kernel: &args.kernel,
        spec: args.spec.as_deref(),
        workspace: args.workspace.as_deref(),
        replay: args.replay.as_deref(),
        device: args.device,
        nvrtc: args.nvrtc.as_deref(),
        no_cache: args.no_cache,
        strategy: args.strategy,
        options,
    };
    let (tuned, bar) = job::tune_file(request, |source, note| {
        if let Some(note) = note {
            eprintln!("{note}");
        }
        Bar::new(args.budget, source, args.json)
    })?;
    bar.bar.finish_and_clear();
    let tuned = tuned?;
    if args.json {
        let mut json = serde_json::to_value(&tuned.report)?;
        json["startup_seconds"] = tuned.startup_seconds.into();
        println!("{}", serde_json::to_string_pretty(&json)?);
    } else {
        print!("{}", table(&tuned.report, args.top));
    }
    Ok(())
}

/// The progress bar on stderr: evaluations out of the budget and the best speedup so far.
struct Bar {
    bar: ProgressBar,
}

impl Bar {
    fn new(budget: u64, source: &RunnerSource, quiet: bool) -> Bar {
        let bar = if quiet { ProgressBar::hidden() } else { ProgressBar::new(budget) };
        let style = ProgressStyle::with_template("{prefix}[{bar:30}] {pos}/{len} {msg}").unwrap_or_else(|_| ProgressStyle::default_bar()).progress_chars("=> ");
        bar.set_style(style);
        if let RunnerSource::Replay { from } = source {
            bar.set_prefix(format!("replay of {from} "));
        }
        Bar { bar }
    }
}

impl Observer for Bar {
    fn evaluated(&mut self, evaluation: &Evaluation, progress: &Progress) {
        self.bar.set_position(progress.evaluated);
        let best = match (progress.best_speedup, progress.best_us) {
            (Some(s), Some(t)) => format!("best {t:.1} µs ({s:.2}×)"),
            (None, Some(t)) => format!("best {t:.1} µs"),
            _ => "no passing configuration yet".to_string(),
        };
        self.bar.set_message(format!("{best}; last {}", evaluation.config));
    }
}

fn table(report: &TuneReport, top: usize) -> String {
    let mut out = String::new();
    let measured_on = match &report.source {
        RunnerSource::Device => format!("measured on {}", report.device),
        RunnerSource::Replay { from } => format!("REPLAY of recorded measurements from {from} ({}), not a live measurement", report.device),
    };
    out.push_str(&format!("{} `{}`: {measured_on}\n", report.file, report.kernel));
    if let Some(b) = report.baseline_us {
        let spread = report.baseline.iter().map(|t| t.spread).fold(0.0, f64::max);
        let sol = report.sol.as_ref().map_or_else(String::new, |bound| format!("; {}", bound.headroom(b)));
        out.push_str(&format!("baseline (the original kernel): {b:.2} µs (spread {:.1}%){sol}\n", spread * 100.0));
    }
    let mut ranked: Vec<&tune::Row> = report.rows.iter().filter(|r| r.speedup.is_some() || (report.baseline_us.is_none() && r.status.starts_with("ok"))).collect();
    ranked.sort_by(|a, b| a.time_us.unwrap_or(f64::MAX).total_cmp(&b.time_us.unwrap_or(f64::MAX)));
    let width = ranked.iter().take(top).map(|r| r.config.to_string().len()).max().unwrap_or(0).max("configuration".len());
    out.push_str(&format!("{:<width$} {:>10} {:>8} {:>6} {:>7} {:>5} {:>6}  status\n", "configuration", "time µs", "speedup", "%SOL", "spread", "regs", "occ"));
    for row in ranked.iter().take(top) {
        let cell = |v: Option<String>| v.unwrap_or_else(|| "-".into());
        out.push_str(&format!(
            "{:<width$} {:>10} {:>8} {:>6} {:>7} {:>5} {:>6}  {}{}\n",
            row.config.to_string(),
            cell(row.time_us.map(|t| format!("{t:.2}"))),
            cell(row.speedup.map(|s| format!("{s:.2}×"))),
            cell(row.sol_percent.map(|p| format!("{p:.0}%"))),
            cell(row.spread.map(|s| format!("{:.1}%", s * 100.0))),
            cell(row.registers.map(|r| r.to_string())),
            cell(row.occupancy.map(|o| format!("{:.0}%", o * 100.0))),
            row.status,
            if row.resumed { " (stored)" } else { "" },
        ));
    }
    for (reason, count) in &report.failures {
        out.push_str(&format!("  {count} × {reason}\n"));
    }
    let best = match &report.best {
        Some(b) if report.original_fastest => format!(
            "best: the original: no configuration is faster (the fastest correct one, {}, ran at {:.2} µs, {:.2}× the original)",
            b.config,
            b.time_us.unwrap_or(0.0),
            b.speedup.unwrap_or(f64::NAN)
        ),
        Some(b) => format!("best: {} at {:.2} µs{}", b.config, b.time_us.unwrap_or(0.0), b.speedup.map_or(String::new(), |s| format!(", {s:.2}× the original"))),
        None => "no configuration passed".to_string(),
    };
    out.push_str(&format!("{best}\n"));
    if let Some(explanation) = report.unsteady_explanation() {
        out.push_str(&format!("{explanation}\n"));
    }
    let best_time = if report.original_fastest { report.baseline_us } else { report.best.as_ref().and_then(|b| b.time_us) };
    if let (Some(bound), Some(time)) = (&report.sol, best_time) {
        out.push_str(&format!("speed of light: {}\n", bound.headroom(time)));
    }
    if let Some(why) = &report.sol_missing {
        out.push_str(&format!("speed of light: none: {why}\n"));
    }
    match &report.roles {
        Some(SettledRoles::WrittenOnly { buffers }) if !buffers.is_empty() => {
            let names: Vec<String> = buffers.iter().map(|b| format!("`{b}`")).collect();
            out.push_str(&format!(
                "roles: the original's output does not change with the initial bytes of {}: the bound counts {} once, as an output (write role = \"output\" in the spec to say so)\n",
                names.join(", "),
                if names.len() == 1 { "it" } else { "each" }
            ));
        }
        Some(SettledRoles::Undecided { why }) => out.push_str(&format!("roles: in-out buffers counted twice in the bound: {why}, so other initial bytes could not tell which buffers it reads\n")),
        _ => {}
    }
    for rejected in &report.rejected {
        out.push_str(&format!("rejected {}: {}\n", rejected.config, rejected.summary));
    }
    match (&report.verification, &report.best, &report.source) {
        (Some(verification), _, _) => out.push_str(&format!("verified: {} in {:.2} s\n", verification.summary(), report.verify_seconds)),
        (None, Some(_), RunnerSource::Replay { .. }) => out.push_str("not verified: recorded measurements carry no outputs\n"),
        (None, Some(_), RunnerSource::Device) => out.push_str("not verified in five stages (--no-verify, or the run was cancelled); checked on the spec's shapes only\n"),
        (None, None, _) => {}
    }
    out.push_str(&format!(
        "{} evaluated ({} from earlier runs) with {} (seed {}); stopped: {}; search {:.2} s, total {:.2} s; {} compiles from the cache\nresults: {}\n",
        report.rows.len(),
        report.resumed,
        report.strategy,
        report.seed,
        report.stop_reason,
        report.search_seconds,
        report.total_seconds,
        report.cached_compiles,
        report.store
    ));
    out
}
