//! The recorded results of a kernel, as the editor shows them: the latest run of the kernel from
//! the same file, its best verified configuration and speedup (an inlay hint), and a table of
//! its best configurations (a hover).

use std::fmt::Write;
use std::path::Path;
use std::time::{Duration, UNIX_EPOCH};

use crate::gpu::{FailureKind, Outcome, RunnerSource, Verdict};
use crate::store::{counts_as_correct, Evaluation, Run, Store, StoreError, Verification};
use crate::syntax::{Finding, Severity, Span};

use super::objective;

/// The latest run of one kernel and every evaluation under its key, fastest first.
#[derive(Clone, Debug)]
pub struct KernelResults {
    pub run: Run,
    pub evaluations: Vec<Evaluation>,
    /// The latest five-stage verification of each configuration verified under the run's key.
    pub verifications: Vec<Verification>,
}

/// How many configurations the hover lists.
const HOVER_ROWS: usize = 5;
/// How many failed configurations of one kind get a diagnostic each; the rest are counted.
const LISTED_FAILURES: usize = 3;
/// Below this occupancy the best configuration is pointed out.
const LOW_OCCUPANCY: f64 = 0.25;

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
        let verifications = store.verifications(&key)?;
        Ok(Some(KernelResults { run, evaluations, verifications }))
    }

    /// The fastest configuration that ran, matched the original kernel and did not fail a
    /// later verification.
    pub fn best(&self) -> Option<&Evaluation> {
        self.evaluations.iter().find(|e| counts_as_correct(e) && self.verification(e).is_none_or(|v| v.passed))
    }

    /// The speedup of [`KernelResults::best`] over the original kernel.
    pub fn best_speedup(&self) -> Option<f64> {
        self.best().and_then(|best| self.speedup(best))
    }

    /// Whether the best configuration is faster than the original kernel. When it is not, the
    /// original stays the answer: nothing is offered to apply. (Without a measured baseline,
    /// as in some replays, there is nothing to compare with, and the best stands.)
    pub fn beats_original(&self) -> bool {
        self.best_speedup().is_none_or(|speedup| speedup > 1.0)
    }

    /// The latest verification of `evaluation`'s configuration.
    pub fn verification(&self, evaluation: &Evaluation) -> Option<&Verification> {
        self.verifications.iter().find(|v| v.config == evaluation.config)
    }

    /// Percent of the run's speed-of-light bound.
    pub fn sol_percent(&self, evaluation: &Evaluation) -> Option<f64> {
        self.run.info.sol.as_ref().zip(measured_us(evaluation)).map(|(bound, time)| bound.percent(time))
    }

    /// The speedup of `evaluation` over the original kernel.
    pub fn speedup(&self, evaluation: &Evaluation) -> Option<f64> {
        self.run.info.baseline_us.zip(objective(evaluation)).map(|(baseline, time)| baseline / time)
    }

    /// Where the numbers come from: the GPU's short name (`H100`), or `replay`.
    pub fn origin(&self) -> String {
        match &self.run.info.source {
            RunnerSource::Replay { .. } => "replay".to_string(),
            RunnerSource::Device => short_device_name(&self.run.info.device),
        }
    }

    /// Whether the kernel's definition changed since it was tuned; `current_sha256` is
    /// [`super::kernel_sha256`] of the text now. Runs that did not keep the hash never are.
    pub fn is_stale(&self, current_sha256: &str) -> bool {
        let tuned = &self.run.info.kernel_sha256;
        !tuned.is_empty() && tuned != current_sha256
    }

    /// When the run started, e.g. `2026-11-26T02:10:00Z`.
    pub fn date(&self) -> String {
        let when = UNIX_EPOCH + Duration::from_secs(self.run.info.started_at.max(0) as u64);
        humantime::format_rfc3339_seconds(when).to_string()
    }

    /// The editor's diagnostics, all at the kernel's name (`at`): results measured on an
    /// earlier version of the kernel (hint), configurations that gave wrong output (error) or
    /// cannot run on the device (warning), register spills and low occupancy of the best
    /// configuration (information).
    pub fn findings(&self, at: Span, current_sha256: &str) -> Vec<Finding> {
        let finding = |severity, code, message| Finding { span: at, severity, code, message };
        let mut findings = Vec::new();
        let kernel = &self.run.info.kernel;
        if self.is_stale(current_sha256) {
            let message = format!("the tuning results of `{kernel}` were measured on an earlier version of it ({}); tune again to refresh them", self.date());
            findings.push(finding(Severity::Hint, "stale-results", message));
        }
        let wrong: Vec<String> = self
            .evaluations
            .iter()
            .filter_map(|e| match (&e.outcome, crate::verify::Finding::of_outcome(&e.outcome)) {
                (Outcome::Measured { .. }, Some(finding)) => Some(format!("{}: {finding}", e.config)),
                _ => None,
            })
            .collect();
        let cannot_run: Vec<String> = self
            .evaluations
            .iter()
            .filter_map(|e| match &e.outcome {
                Outcome::Failed { kind: FailureKind::Infeasible | FailureKind::Launch, message } => {
                    Some(format!("{} cannot run on {}: {}", e.config, self.run.info.device, message.lines().next().unwrap_or_default()))
                }
                _ => None,
            })
            .collect();
        let failed_verification: Vec<String> =
            self.verifications.iter().filter(|v| !v.passed).map(|v| format!("{} failed verification: {}", v.config, v.summary)).collect();
        for (list, severity, code) in [(failed_verification, Severity::Error, "failed-verification"), (wrong, Severity::Error, "wrong-output"), (cannot_run, Severity::Warning, "cannot-run")] {
            let more = list.len().saturating_sub(LISTED_FAILURES);
            for (i, message) in list.into_iter().take(LISTED_FAILURES).enumerate() {
                let message = if i + 1 == LISTED_FAILURES && more > 0 { format!("{message} (and {more} more configurations)") } else { message };
                findings.push(finding(severity, code, message));
            }
        }
        if let Some(best) = self.best() {
            if let Some(resources) = &best.resources {
                let spilled = resources.spill_store_bytes + resources.spill_load_bytes;
                if spilled > 0 {
                    let message = format!("the best configuration {} spills registers: {spilled} bytes of local memory traffic per thread", best.config);
                    findings.push(finding(Severity::Information, "spills", message));
                }
            }
            if let Some(occupancy) = best.occupancy.filter(|o| *o < LOW_OCCUPANCY) {
                let message = format!("the best configuration {} runs at {:.0}% occupancy", best.config, occupancy * 100.0);
                findings.push(finding(Severity::Information, "low-occupancy", message));
            }
        }
        findings
    }

    /// e.g. `2.31× ✓ H100` when the best configuration passed the five verification stages,
    /// `2.31× ✓? H100` when it was only checked on the spec's shapes (replays show what their
    /// recording says); `✗ none correct (24 tried) H100` when nothing matched; `(stale)` is
    /// added when the kernel changed since.
    pub fn hint(&self, current_sha256: &str) -> String {
        let hint = self.verdict_hint();
        if self.is_stale(current_sha256) { format!("{hint} (stale)") } else { hint }
    }

    fn verdict_hint(&self) -> String {
        match self.best() {
            Some(_) if !self.beats_original() => {
                let sol = self.run.info.sol.as_ref().zip(self.run.info.baseline_us).map_or_else(String::new, |(bound, time)| format!(" · {:.0}% SOL", bound.percent(time)));
                format!("original fastest ({} tried) {}{sol}", self.evaluations.len(), self.origin())
            }
            Some(best) => {
                let replay = matches!(self.run.info.source, RunnerSource::Replay { .. });
                let mark = if replay || self.verification(best).is_some_and(|v| v.passed) { "✓" } else { "✓?" };
                let sol = self.sol_percent(best).map_or_else(String::new, |p| format!(" · {p:.0}% SOL"));
                match self.speedup(best) {
                    Some(speedup) => format!("{speedup:.2}× {mark} {}{sol}", self.origin()),
                    None => format!("{mark} {}{sol}", self.origin()),
                }
            }
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
        let _ = writeln!(out, "| configuration | time | speedup | %SOL | registers | occupancy | status |");
        let _ = writeln!(out, "|---|---|---|---|---|---|---|");
        // The fastest that ran, wrong ones included: a fast wrong configuration is worth seeing.
        let shown = self.evaluations.iter().filter(|e| measured_us(e).is_some()).take(HOVER_ROWS);
        for evaluation in shown {
            let time = measured_us(evaluation).map_or_else(|| "—".into(), |t| format!("{t:.2} µs"));
            let speedup = self.speedup(evaluation).map_or_else(|| "—".into(), |s| format!("{s:.2}×"));
            let sol = self.sol_percent(evaluation).map_or_else(|| "—".into(), |p| format!("{p:.0}%"));
            let registers = evaluation.resources.as_ref().map_or_else(|| "—".into(), |r| r.registers.to_string());
            let occupancy = evaluation.occupancy.map_or_else(|| "—".into(), |o| format!("{:.0}%", o * 100.0));
            let _ = writeln!(out, "| {} | {time} | {speedup} | {sol} | {registers} | {occupancy} | {} |", evaluation.config, status(evaluation));
        }
        let tried = self.evaluations.len();
        let correct = self.evaluations.iter().filter(|e| counts_as_correct(e)).count();
        let baseline = info.baseline_us.map_or_else(|| "not measured".into(), |b| format!("{b:.2} µs"));
        let date = self.date();
        let _ = write!(
            out,
            "\nBaseline (the original kernel): {baseline} · {} · {date} · {} · {tried} configurations tried, {correct} correct",
            info.device, info.strategy
        );
        if let (Some(bound), Some(best)) = (&info.sol, self.best()) {
            let time = measured_us(best).unwrap_or(f64::NAN);
            let _ = write!(out, "\n\nSpeed of light of {}: {}", best.config, bound.headroom(time));
        }
        if let (Some(best), RunnerSource::Device) = (self.best(), &info.source) {
            let _ = match self.verification(best) {
                Some(verification) => write!(out, "\n\nVerification of {}: {}", best.config, verification.summary),
                None => write!(out, "\n\n{} matched the original on the spec's shapes (✓?); `Verify kernel` runs the five verification stages", best.config),
            };
        }
        for failed in self.verifications.iter().filter(|v| !v.passed) {
            let _ = write!(out, "\n\n✗ {} {}", failed.config, failed.summary);
        }
        out
    }
}

/// The total of the problems' medians of a configuration that ran, correct or not.
pub fn measured_us(evaluation: &Evaluation) -> Option<f64> {
    match &evaluation.outcome {
        Outcome::Measured { timings, .. } => Some(timings.iter().map(|t| t.median_us).sum()),
        Outcome::Failed { .. } => None,
    }
}

/// How a configuration went, in a few words: `✓ matches`, `✗ wrong at 12`, `✗ compile`.
pub fn status(evaluation: &Evaluation) -> String {
    match &evaluation.outcome {
        Outcome::Measured { verdict: Verdict::Pass { .. }, .. } => "✓ matches".into(),
        Outcome::Measured { verdict: Verdict::Unchecked, .. } => "recorded".into(),
        Outcome::Measured { verdict: Verdict::Mismatch { index, .. }, .. } => format!("✗ wrong at {index}"),
        Outcome::Measured { verdict: Verdict::OutOfBounds { arg, .. }, .. } => format!("✗ writes past `{arg}`"),
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
pub(crate) mod tests {
    use super::*;
    use crate::compile::KernelResources;
    use crate::gpu::Timing;
    use crate::space::Configuration;
    use crate::store::{ResultKey, RunInfo};

    pub(crate) fn key() -> ResultKey {
        ResultKey { kernel: "k".into(), source_sha256: "s".into(), problems_sha256: "p".into(), device: "NVIDIA H100 80GB HBM3 (sm_90)".into(), nvrtc: "13.0".into() }
    }

    pub(crate) fn evaluation(block: i64, outcome: Outcome) -> Evaluation {
        Evaluation { key: key(), config: Configuration(vec![("BLOCK".into(), block)]), source: RunnerSource::Device, outcome, resources: None, occupancy: None, compile_ms: 1.0, measured_at: 0 }
    }

    pub(crate) fn measured(us: f64, verdict: Verdict) -> Outcome {
        Outcome::Measured { timings: vec![Timing { median_us: us, min_us: us, max_us: us, spread: 0.0, runs: 10 }], verdict }
    }

    pub(crate) fn results() -> KernelResults {
        let pass = Verdict::Pass { max_abs_error: 0.0, max_rel_error: 0.0 };
        let wrong = Verdict::Mismatch { problem: 0, arg: "out".into(), index: 7, expected: 1.5, actual: f64::NAN, mismatches: 3, max_abs_error: 0.0, max_rel_error: 0.0, unwritten: 0, not_finite: 0 };
        let mut best = evaluation(256, measured(50.0, pass.clone()));
        best.resources = Some(KernelResources { name: "k".into(), registers: 255, spill_store_bytes: 16, spill_load_bytes: 8, ..KernelResources::default() });
        best.occupancy = Some(0.2);
        let info = RunInfo {
            kernel: "k".into(),
            file: "k.cu".into(),
            strategy: "brute-force".into(),
            seed: 0,
            budget: "200".into(),
            source: RunnerSource::Device,
            device: key().device,
            started_at: 0,
            baseline_us: Some(100.0),
            source_sha256: "s".into(),
            problems_sha256: "p".into(),
            nvrtc: "13.0".into(),
            kernel_sha256: "tuned".into(),
            sol: Some(crate::sol::RunBound {
                bound_us: 40.0,
                bytes: 134_000_000.0,
                memory_us: 40.0,
                compute_us: 0.0,
                compute: crate::spec::SolCompute::Fp32,
                ceilings: crate::sol::Ceilings::datasheet("NVIDIA H100 80GB HBM3").unwrap(),
            }),
        };
        let evaluations = vec![
            evaluation(64, measured(40.0, wrong)),
            best,
            evaluation(128, measured(80.0, pass)),
            evaluation(2048, Outcome::Failed { kind: FailureKind::Infeasible, message: "2048 threads per block; the device allows 1024".into() }),
        ];
        let verifications = vec![verification(256, true)];
        KernelResults { run: Run { id: 1, info, finished_at: Some(1), stop_reason: Some("space exhausted".into()) }, evaluations, verifications }
    }

    pub(crate) fn verification(block: i64, passed: bool) -> Verification {
        let summary = if passed { "passed 5 stages (17 cases)" } else { "failed stage 5 (edges) on n=255: skips part of the output" };
        Verification { config: Configuration(vec![("BLOCK".into(), block)]), passed, summary: summary.into(), report: "{}".into(), verified_at: 0 }
    }

    #[test]
    fn the_hint_is_the_best_verified_speedup_and_says_when_it_is_stale() {
        let results = results();
        assert_eq!(results.best().map(|b| b.config.to_string()), Some("BLOCK=256".into()), "the faster wrong one is not best");
        assert_eq!(results.hint("tuned"), "2.00× ✓ H100 · 80% SOL");
        assert_eq!(results.hint("edited"), "2.00× ✓ H100 · 80% SOL (stale)");
    }

    #[test]
    fn a_best_without_five_stage_verification_is_marked_and_a_failed_one_is_not_best() {
        let mut results = results();
        results.verifications.clear();
        assert_eq!(results.hint("tuned"), "2.00× ✓? H100 · 80% SOL");
        assert!(results.hover().contains("BLOCK=256 matched the original on the spec's shapes (✓?)"), "{}", results.hover());
        results.verifications = vec![verification(256, false)];
        assert_eq!(results.best().map(|b| b.config.to_string()), Some("BLOCK=128".into()));
        assert_eq!(results.hint("tuned"), "1.25× ✓? H100 · 50% SOL");
        assert!(results.beats_original());
        let findings = results.findings(Span::default(), "tuned");
        assert_eq!((findings[0].severity, findings[0].code), (Severity::Error, "failed-verification"));
        assert_eq!(findings[0].message, "BLOCK=256 failed verification: failed stage 5 (edges) on n=255: skips part of the output");
        assert!(results.hover().contains("✗ BLOCK=256 failed stage 5 (edges)"), "{}", results.hover());
    }

    #[test]
    fn when_no_configuration_beats_the_original_the_hint_says_the_original_stays() {
        let mut results = results();
        results.run.info.baseline_us = Some(45.0);
        assert_eq!(results.best_speedup(), Some(0.9));
        assert!(!results.beats_original());
        assert_eq!(results.hint("tuned"), "original fastest (4 tried) H100 · 89% SOL");
        results.run.info.baseline_us = None;
        assert!(results.beats_original(), "nothing to compare with: the best stands");
    }

    #[test]
    fn findings_name_wrong_outputs_configurations_that_cannot_run_spills_and_occupancy() {
        let span = Span::default();
        let findings = results().findings(span, "edited");
        let summary: Vec<(Severity, &str)> = findings.iter().map(|f| (f.severity, f.code)).collect();
        assert_eq!(
            summary,
            [
                (Severity::Hint, "stale-results"),
                (Severity::Error, "wrong-output"),
                (Severity::Warning, "cannot-run"),
                (Severity::Information, "spills"),
                (Severity::Information, "low-occupancy")
            ]
        );
        assert_eq!(findings[1].message, "BLOCK=64: wrong output: `out`[7] = NaN, expected 1.5; 3 elements out of tolerance, max abs error 0.000e0, max rel error 0.000e0");
        assert!(findings[2].message.starts_with("BLOCK=2048 cannot run on NVIDIA H100 80GB HBM3 (sm_90): 2048 threads per block"), "{}", findings[2].message);
        assert!(findings[3].message.contains("24 bytes of local memory traffic"), "{}", findings[3].message);
        assert!(findings[4].message.contains("20% occupancy"), "{}", findings[4].message);
        assert_eq!(results().findings(span, "tuned").len(), 4, "not stale when the kernel is unchanged");
    }

    #[test]
    fn the_hover_lists_the_best_configurations_and_the_run() {
        let hover = results().hover();
        assert!(hover.contains("| BLOCK=256 | 50.00 µs | 2.00× | 80% | 255 | 20% | ✓ matches |"), "{hover}");
        assert!(hover.contains("| BLOCK=64 | 40.00 µs | — | 100% | — | — | ✗ wrong at 7 |"), "{hover}");
        assert!(hover.contains("Speed of light of BLOCK=256: memory-bound: 80% of the 40.0 µs bound (3350 GB/s datasheet memory bandwidth of the H100 SXM)"), "{hover}");
        assert!(hover.contains("Baseline (the original kernel): 100.00 µs · NVIDIA H100 80GB HBM3 (sm_90) · 1970-01-01T00:00:00Z · brute-force · 4 configurations tried, 2 correct"), "{hover}");
        assert!(hover.contains("Verification of BLOCK=256: passed 5 stages (17 cases)"), "{hover}");
    }

    #[test]
    fn device_names_shorten_to_the_model() {
        assert_eq!(short_device_name("NVIDIA H100 80GB HBM3 (sm_90)"), "H100");
        assert_eq!(short_device_name("NVIDIA H200"), "H200");
        assert_eq!(short_device_name("NVIDIA GeForce RTX 4090 (sm_89)"), "RTX 4090");
        assert_eq!(short_device_name("NVIDIA A100-SXM4-80GB (sm_80)"), "A100");
        assert_eq!(short_device_name("Tesla V100-PCIE-16GB"), "V100");
    }
}
