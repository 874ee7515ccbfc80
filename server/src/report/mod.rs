//! The tuning report: a kernel's latest run from the results store as one self-contained HTML
//! page — the best time so far against the evaluations with the speed-of-light line, the
//! parameters against time, the best configuration's verification stages and the table.
//!
//! The charts are drawn by plotly.js, which the `plotly` crate carries; it is written into the
//! page, so nothing is fetched when the page is viewed (an editor's webview, a machine with no
//! network).

mod page;

use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context, Result};
use serde::Serialize;

use crate::gpu::{Outcome, RunnerSource};
use crate::store::{counts_as_correct, Evaluation, Store};
use crate::tune::results::{measured_us, status, KernelResults};
use crate::verify::{CaseStatus, Report as VerificationReport, Stage};

/// What `cutune report` (and the editor's *Show tuning report*) is asked for.
pub struct ReportRequest<'a> {
    /// The kernel's `.cu` file.
    pub file: &'a Path,
    pub kernel: &'a str,
    /// Where `.cutune/results.db` lives.
    pub workspace: &'a Path,
    /// Where to write the page [default: [`default_path`]].
    pub output: Option<&'a Path>,
}

/// A report written.
#[derive(Clone, Debug, Serialize)]
pub struct Written {
    pub path: PathBuf,
    /// Evaluations drawn.
    pub evaluations: usize,
}

/// `.cutune/reports/FILE_STEM.KERNEL.html` beside the results the page is drawn from.
pub fn default_path(workspace: &Path, file: &Path, kernel: &str) -> PathBuf {
    let stem = file.file_stem().map_or_else(|| "kernel".into(), |s| s.to_string_lossy().into_owned());
    workspace.join(".cutune").join("reports").join(format!("{stem}.{kernel}.html"))
}

/// Reads the kernel's latest run and writes its page.
pub fn write(request: &ReportRequest) -> Result<Written> {
    let ReportRequest { file, kernel, workspace, output } = *request;
    let results = KernelResults::latest(workspace, file, kernel)?.ok_or_else(|| {
        anyhow!(
            "{}: `{kernel}` has no tuning results in {}: tune it first (`cutune tune {} --kernel {kernel}`)",
            file.display(),
            Store::database_path(workspace).display(),
            file.display()
        )
    })?;
    let key = results.run.key().ok_or_else(|| anyhow!("the latest run of `{kernel}` predates the stored keys: tune it again"))?;
    let in_order = Store::open(workspace)?.evaluations_in_order(&key)?;
    let mut report = TuningReport::of(&results, &in_order);
    // The file as it is now, when it can be read: results of an earlier version are said to be.
    report.stale = std::fs::read_to_string(file).is_ok_and(|text| results.is_stale(&crate::tune::kernel_sha256(&text, kernel)));
    let path = output.map_or_else(|| default_path(workspace, file, kernel), Path::to_path_buf);
    if let Some(folder) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(folder).with_context(|| format!("cannot make {}", folder.display()))?;
    }
    crate::workspace::write_atomically(&path, &page::html(&report))?;
    Ok(Written { path, evaluations: report.evaluations.len() })
}

/// Everything the page shows, gathered from the store.
#[derive(Clone, Debug, Serialize)]
pub struct TuningReport {
    pub kernel: String,
    pub file: String,
    pub device: String,
    pub date: String,
    pub strategy: String,
    pub budget: String,
    pub stop_reason: Option<String>,
    /// A replay's recording.
    pub replay_of: Option<String>,
    /// The original kernel's time, the sum over the problems of the medians.
    pub baseline_us: Option<f64>,
    /// The speed-of-light bound of the same sum.
    pub bound_us: Option<f64>,
    pub params: Vec<String>,
    /// In the order they were measured.
    pub evaluations: Vec<PlottedEvaluation>,
    pub best: Option<BestConfiguration>,
    /// The rows of the table: every configuration that ran, fastest first.
    pub table: Vec<TableRow>,
    /// The kernel's definition changed since this run.
    pub stale: bool,
}

/// One evaluation as the charts draw it.
#[derive(Clone, Debug, Serialize)]
pub struct PlottedEvaluation {
    /// 1 for the first measured.
    pub number: usize,
    /// The parameters' values in [`TuningReport::params`]' order.
    pub values: Vec<i64>,
    pub configuration: String,
    /// `None` when it did not run (compile errors, infeasible, faults).
    pub time_us: Option<f64>,
    pub correct: bool,
    /// The fastest correct time up to and including this one.
    pub best_so_far_us: Option<f64>,
    pub status: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct BestConfiguration {
    /// Its row of the table.
    #[serde(flatten)]
    pub row: TableRow,
    /// Whether it passed the five verification stages; `None` when they have not run.
    pub verified: Option<bool>,
    /// One line: the stages passed, or the first failure.
    pub verification_summary: Option<String>,
    /// The five stages, when it was verified.
    pub stages: Vec<StageRow>,
}

/// One verification stage of the best configuration.
#[derive(Clone, Debug, Serialize)]
pub struct StageRow {
    pub number: usize,
    pub name: &'static str,
    pub passed: usize,
    pub failed: usize,
    /// Cases the original kernel itself failed, so nothing was compared.
    pub baseline_failed: usize,
    /// The largest relative error of the passed cases.
    pub max_rel_error: Option<f64>,
    /// The first failure, in words.
    pub failure: Option<String>,
    /// Cases left out, each `label: why` (a shape too small for the check, the same check as an
    /// earlier stage's).
    pub skipped: Vec<String>,
    /// Every case of the stage was the same check as one of this earlier stage (1 to 5), so the
    /// stage passed there.
    pub covered_by: Option<usize>,
}

#[derive(Clone, Debug, Serialize)]
pub struct TableRow {
    pub configuration: String,
    pub time_us: f64,
    pub speedup: Option<f64>,
    pub sol_percent: Option<f64>,
    pub registers: Option<u32>,
    pub occupancy: Option<f64>,
    pub status: String,
}

impl TuningReport {
    /// The report of `results`, with `in_order` (the same evaluations in the order they were
    /// recorded) for the progress chart.
    pub fn of(results: &KernelResults, in_order: &[Evaluation]) -> TuningReport {
        let info = &results.run.info;
        let params: Vec<String> = in_order.first().or(results.evaluations.first()).map_or_else(Vec::new, |e| e.config.0.iter().map(|(name, _)| name.clone()).collect());
        TuningReport {
            kernel: info.kernel.clone(),
            file: info.file.clone(),
            device: info.device.clone(),
            date: results.date(),
            strategy: info.strategy.clone(),
            budget: info.budget.clone(),
            stop_reason: results.run.stop_reason.clone(),
            replay_of: match &info.source {
                RunnerSource::Replay { from } => Some(from.clone()),
                RunnerSource::Device => None,
            },
            baseline_us: info.baseline_us,
            bound_us: info.sol.as_ref().map(|b| b.bound_us),
            evaluations: plotted(&params, in_order),
            best: results.best().and_then(|best| best_configuration(results, best)),
            table: results.evaluations.iter().filter_map(|e| TableRow::of(results, e)).collect(),
            params,
            stale: false,
        }
    }
}

impl TableRow {
    /// `evaluation`'s row; `None` when it did not run.
    fn of(results: &KernelResults, evaluation: &Evaluation) -> Option<TableRow> {
        Some(TableRow {
            configuration: evaluation.config.to_string(),
            time_us: measured_us(evaluation)?,
            speedup: results.speedup(evaluation),
            sol_percent: results.sol_percent(evaluation),
            registers: evaluation.resources.as_ref().map(|r| r.registers),
            occupancy: evaluation.occupancy,
            status: status(evaluation),
        })
    }
}

fn plotted(params: &[String], in_order: &[Evaluation]) -> Vec<PlottedEvaluation> {
    let mut best: Option<f64> = None;
    in_order
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let time_us = measured_us(e);
            let correct = counts_as_correct(e) && matches!(e.outcome, Outcome::Measured { .. });
            if correct {
                best = match (best, time_us) {
                    (Some(b), Some(t)) => Some(b.min(t)),
                    (b, t) => b.or(t),
                };
            }
            PlottedEvaluation {
                number: i + 1,
                values: params.iter().map(|p| e.config.get(p).unwrap_or_default()).collect(),
                configuration: e.config.to_string(),
                time_us,
                correct,
                best_so_far_us: best,
                status: status(e),
            }
        })
        .collect()
}

/// The best configuration's row and verification; `None` if it did not run (the best always ran).
fn best_configuration(results: &KernelResults, best: &Evaluation) -> Option<BestConfiguration> {
    let verification = results.verification(best);
    let stages = verification.and_then(|v| serde_json::from_str::<VerificationReport>(&v.report).ok()).map_or_else(Vec::new, |report| stage_rows(&report));
    Some(BestConfiguration {
        row: TableRow::of(results, best)?,
        verified: verification.map(|v| v.passed),
        verification_summary: verification.map(|v| v.summary.clone()),
        stages,
    })
}

fn stage_rows(report: &VerificationReport) -> Vec<StageRow> {
    Stage::ALL
        .into_iter()
        .map(|stage| {
            let cases: Vec<_> = report.cases.iter().filter(|c| c.stage == stage).collect();
            let count = |f: fn(&CaseStatus) -> bool| cases.iter().filter(|c| f(&c.status)).count();
            StageRow {
                number: stage.number(),
                name: stage.name(),
                passed: count(|s| matches!(s, CaseStatus::Pass { .. })),
                failed: count(|s| matches!(s, CaseStatus::Fail { .. })),
                baseline_failed: count(|s| matches!(s, CaseStatus::BaselineFailed { .. })),
                max_rel_error: cases
                    .iter()
                    .filter_map(|c| match c.status {
                        CaseStatus::Pass { max_rel_error, .. } if max_rel_error.is_finite() => Some(max_rel_error),
                        _ => None,
                    })
                    .reduce(f64::max),
                failure: cases.iter().find_map(|c| match &c.status {
                    CaseStatus::Fail { finding } => Some(format!("{}: {finding}", c.label)),
                    _ => None,
                }),
                skipped: report.skipped.iter().filter(|s| s.stage == stage).map(|s| format!("{}: {}", s.label, s.why)).collect(),
                covered_by: covered_by(report, stage, cases.len()),
            }
        })
        .collect()
}

/// The earlier stage that made every check of `stage`, when none of its own cases ran.
fn covered_by(report: &VerificationReport, stage: Stage, ran: usize) -> Option<usize> {
    let skipped: Vec<_> = report.skipped.iter().filter(|s| s.stage == stage).collect();
    if ran > 0 || skipped.is_empty() {
        return None;
    }
    let earlier: Vec<Stage> = skipped.iter().map(|s| s.covered_by).collect::<Option<_>>()?;
    earlier.into_iter().max().map(Stage::number)
}

#[cfg(test)]
mod tests;
