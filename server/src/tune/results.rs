//! The recorded results of a kernel, as the editor shows them: the latest run of the kernel from
//! the same file, its best verified configuration and speedup (an inlay hint), and a table of
//! its best configurations (a hover).

use std::fmt::Write;
use std::path::Path;
use std::time::{Duration, UNIX_EPOCH};

use crate::gpu::{Outcome, RunnerSource, Verdict};
use crate::store::{counts_as_correct, Evaluation, Run, Store, StoreError};

use super::objective;

/// The latest run of one kernel and every evaluation under its key, fastest first.
#[derive(Clone, Debug)]
pub struct KernelResults {
    pub run: Run,
    pub evaluations: Vec<Evaluation>,
}

/// How many configurations the hover lists.
const HOVER_ROWS: usize = 5;

impl KernelResults {
    /// The latest run of `kernel` from a file named like `file` (runs keep the path as it was
    /// given, so only the file name is compared), in the database of `workspace`. `None` when
    /// there is no database, no such run, or the run predates the stored keys. Never creates a
    /// database.
    pub fn latest(workspace: &Path, file: &Path, kernel: &str) -> Result<Option<KernelResults>, StoreError> {
        if !Store::database_path(workspace).is_file() {
            return Ok(None);
        }
        let store = Store::open(workspace)?;
        let name = file.file_name();
        let Some(run) = store.runs(kernel)?.into_iter().rev().find(|r| Path::new(&r.info.file).file_name() == name && r.key().is_some()) else {
            return Ok(None);
        };
        let key = run.key().expect("filtered on");
        let evaluations = store.evaluations(&key)?;
        Ok(Some(KernelResults { run, evaluations }))
    }

    /// The fastest configuration that ran and matched the original kernel.
    pub fn best(&self) -> Option<&Evaluation> {
        self.evaluations.iter().find(|e| counts_as_correct(e))
    }

    fn speedup(&self, evaluation: &Evaluation) -> Option<f64> {
        self.run.info.baseline_us.zip(objective(evaluation)).map(|(baseline, time)| baseline / time)
    }

    /// Where the numbers come from: the GPU's short name (`H100`), or `replay`.
    pub fn origin(&self) -> String {
        match &self.run.info.source {
            RunnerSource::Replay { .. } => "replay".to_string(),
            RunnerSource::Device => short_device_name(&self.run.info.device),
        }
    }

    /// e.g. `2.31× ✓ H100`; `✗ none correct (24 tried) H100` when nothing matched.
    pub fn hint(&self) -> String {
        match self.best() {
            Some(best) => match self.speedup(best) {
                Some(speedup) => format!("{speedup:.2}× ✓ {}", self.origin()),
                None => format!("✓ {}", self.origin()),
            },
            None => format!("✗ none correct ({} tried) {}", self.evaluations.len(), self.origin()),
        }
    }

    /// A Markdown table of the best configurations, then the run's baseline, device, date,
    /// strategy and how many configurations were tried.
    pub fn hover(&self) -> String {
        let info = &self.run.info;
        let mut out = String::new();
        let replay = match &info.source {
            RunnerSource::Replay { from } => format!(" — **replay** of recorded measurements from `{from}`"),
            RunnerSource::Device => String::new(),
        };
        let _ = writeln!(out, "**Tuning results**{replay}\n");
        let _ = writeln!(out, "| configuration | time | speedup | registers | occupancy | status |");
        let _ = writeln!(out, "|---|---|---|---|---|---|");
        let shown = self.evaluations.iter().filter(|e| objective(e).is_some()).take(HOVER_ROWS);
        for evaluation in shown {
            let time = objective(evaluation).map_or_else(|| "—".into(), |t| format!("{t:.2} µs"));
            let speedup = self.speedup(evaluation).map_or_else(|| "—".into(), |s| format!("{s:.2}×"));
            let registers = evaluation.resources.as_ref().map_or_else(|| "—".into(), |r| r.registers.to_string());
            let occupancy = evaluation.occupancy.map_or_else(|| "—".into(), |o| format!("{:.0}%", o * 100.0));
            let _ = writeln!(out, "| {} | {time} | {speedup} | {registers} | {occupancy} | {} |", evaluation.config, status(evaluation));
        }
        let tried = self.evaluations.len();
        let correct = self.evaluations.iter().filter(|e| counts_as_correct(e)).count();
        let baseline = info.baseline_us.map_or_else(|| "not measured".into(), |b| format!("{b:.2} µs"));
        let date = humantime::format_rfc3339_seconds(UNIX_EPOCH + Duration::from_secs(info.started_at.max(0) as u64));
        let _ = write!(
            out,
            "\nBaseline (the original kernel): {baseline} · {} · {date} · {} · {tried} configurations tried, {correct} correct",
            info.device, info.strategy
        );
        out
    }
}

fn status(evaluation: &Evaluation) -> String {
    match &evaluation.outcome {
        Outcome::Measured { verdict: Verdict::Pass { .. }, .. } => "✓ matches".into(),
        Outcome::Measured { verdict: Verdict::Unchecked, .. } => "recorded".into(),
        Outcome::Measured { verdict: Verdict::Mismatch { index, .. }, .. } => format!("✗ wrong at {index}"),
        Outcome::Failed { kind, .. } => format!("✗ {kind:?}").to_lowercase(),
    }
}

/// `NVIDIA H100 80GB HBM3 (sm_90)` → `H100`: the model, without vendor, memory, form factor
/// and architecture.
fn short_device_name(device: &str) -> String {
    let name = device.split(" (").next().unwrap_or(device);
    let detail = |w: &str| {
        let upper = w.to_ascii_uppercase();
        upper.ends_with("GB") || ["HBM", "PCIE", "SXM", "NVL"].iter().any(|p| upper.starts_with(p))
    };
    let model: Vec<&str> = name
        .split([' ', '-'])
        .filter(|w| !w.is_empty() && !["NVIDIA", "GeForce", "Tesla", "Quadro"].contains(w))
        .take_while(|w| !detail(w))
        .collect();
    if model.is_empty() { name.to_string() } else { model.join(" ") }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_names_shorten_to_the_model() {
        assert_eq!(short_device_name("NVIDIA H100 80GB HBM3 (sm_90)"), "H100");
        assert_eq!(short_device_name("NVIDIA H200"), "H200");
        assert_eq!(short_device_name("NVIDIA GeForce RTX 4090 (sm_89)"), "RTX 4090");
        assert_eq!(short_device_name("NVIDIA A100-SXM4-80GB (sm_80)"), "A100");
        assert_eq!(short_device_name("Tesla V100-PCIE-16GB"), "V100");
    }
}
