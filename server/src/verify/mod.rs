//! Five-stage verification of a configuration against the original kernel (docs/verify.md):
//!
//! 1. smoke: the smallest spec shape;
//! 2. shapes: every spec shape plus odd contiguous lengths (1023, 4097, 50257);
//! 3. numerics: adversarial inputs (near the maximum, near zero, mixed scales, all equal, all
//!    zero), under looser tolerances;
//! 4. determinism: three runs on each spec shape, bitwise equal unless the spec says the kernel
//!    is not deterministic;
//! 5. edges: sizes of 1, a single partial block, lengths misaligned for vectors.
//!
//! Every case runs the baseline and the candidate on the same fresh inputs, with outputs
//! poisoned, guard bytes after every buffer and shared memory set before each run (see the
//! worker's session). The tuner runs the cheap check on every candidate during the search and
//! all five stages on the winner; `cutune verify` and the editor's `Verify kernel` run them on
//! request.

pub mod cases;
mod finding;

use std::path::PathBuf;
use std::time::Instant;

use serde::{Deserialize, Serialize};

pub use cases::{plan, Plan, Skipped};
pub use finding::{kind_label, Finding};

use crate::compile::KernelResources;
use crate::gpu::{Check, CheckRequest, Kernel, Module, Runner, Verdict};
use crate::space::{self, Configuration};
use crate::spec::KernelSpec;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    Smoke,
    Shapes,
    Numerics,
    Determinism,
    Edges,
}

impl Stage {
    pub const ALL: [Stage; 5] = [Stage::Smoke, Stage::Shapes, Stage::Numerics, Stage::Determinism, Stage::Edges];

    pub fn name(self) -> &'static str {
        match self {
            Stage::Smoke => "smoke",
            Stage::Shapes => "shapes",
            Stage::Numerics => "numerics",
            Stage::Determinism => "determinism",
            Stage::Edges => "edges",
        }
    }

    /// 1 to 5.
    pub fn number(self) -> usize {
        Stage::ALL.iter().position(|s| *s == self).unwrap_or(0) + 1
    }

    pub fn from_name(name: &str) -> Option<Stage> {
        Stage::ALL.into_iter().find(|s| s.name() == name)
    }
}

/// How one case went.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum CaseStatus {
    Pass {
        #[serde(with = "crate::gpu::protocol::nonfinite")]
        max_abs_error: f64,
        #[serde(with = "crate::gpu::protocol::nonfinite")]
        max_rel_error: f64,
    },
    Fail { finding: Finding },
    /// The original kernel itself failed on this case, so there was nothing to compare with.
    BaselineFailed { message: String },
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CaseResult {
    pub stage: Stage,
    pub label: String,
    #[serde(flatten)]
    pub status: CaseStatus,
    /// Wall time of the case, the worker's round trip included (0 in reports stored before it
    /// was kept).
    #[serde(default)]
    pub seconds: f64,
}

/// The verification of one configuration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub kernel: String,
    pub config: Configuration,
    pub stages: Vec<Stage>,
    pub cases: Vec<CaseResult>,
    pub skipped: Vec<Skipped>,
    /// Cases not run because an earlier one failed.
    pub not_run: usize,
    pub seconds: f64,
}

impl Report {
    /// The first failed case.
    pub fn failure(&self) -> Option<(&CaseResult, &Finding)> {
        self.cases.iter().find_map(|c| match &c.status {
            CaseStatus::Fail { finding } => Some((c, finding)),
            _ => None,
        })
    }

    pub fn passed(&self) -> bool {
        self.failure().is_none() && self.cases.iter().any(|c| matches!(c.status, CaseStatus::Pass { .. }))
    }

    /// One line: `passed 5 stages (17 cases, 2 skipped)` or the first failure.
    pub fn summary(&self) -> String {
        if let Some((case, finding)) = self.failure() {
            return format!("failed stage {} ({}) on {}: {finding}", case.stage.number(), case.stage.name(), case.label);
        }
        let passed = self.cases.iter().filter(|c| matches!(c.status, CaseStatus::Pass { .. })).count();
        if passed == 0 {
            return "nothing could be checked: the original kernel failed on every case".into();
        }
        let mut extra = Vec::new();
        let skipped = self.skipped.iter().filter(|s| s.covered_by.is_none()).count();
        if skipped > 0 {
            extra.push(format!("{skipped} skipped"));
        }
        let baseline_failed = self.cases.len() - passed;
        if baseline_failed > 0 {
            extra.push(format!("{baseline_failed} where the original fails"));
        }
        let extra = if extra.is_empty() { String::new() } else { format!(", {}", extra.join(", ")) };
        format!("passed {} stage{} ({passed} cases{extra})", self.stages.len(), if self.stages.len() == 1 { "" } else { "s" })
    }
}

/// The compiled code a verification runs.
pub struct Code {
    pub baseline: Module,
    pub candidate: Module,
    /// What each compiled to, for a grid the occupancy sizes.
    pub baseline_resources: Option<KernelResources>,
    pub candidate_resources: Option<KernelResources>,
    /// The cubin of the worker's harness.
    pub harness: PathBuf,
}

/// Runs `plan` on `runner`, stopping at the first failure unless `keep_going`. `cancelled` is
/// asked between cases.
pub fn run(kernel: &KernelSpec, config: &Configuration, plan: &Plan, code: &Code, runner: &mut dyn Runner, keep_going: bool, cancelled: &dyn Fn() -> bool) -> Report {
    let started = Instant::now();
    let default = Configuration::default_of(kernel);
    let mut report = Report {
        kernel: kernel.name.clone(),
        config: config.clone(),
        stages: plan.cases.iter().map(|c| c.stage).chain(plan.skipped.iter().map(|s| s.stage)).collect::<std::collections::BTreeSet<_>>().into_iter().collect(),
        cases: Vec::new(),
        skipped: plan.skipped.clone(),
        not_run: 0,
        seconds: 0.0,
    };
    for (index, case) in plan.cases.iter().enumerate() {
        if (report.failure().is_some() && !keep_going) || cancelled() {
            report.not_run = plan.cases.len() - index;
            break;
        }
        let case_started = Instant::now();
        let launch = |config: &Configuration, resources: &Option<KernelResources>| space::launch_dims_compiled(kernel, &case.shape, config, runner.device(), resources.as_ref()).map(|d| vec![d]);
        let status = match (launch(&default, &code.baseline_resources), launch(config, &code.candidate_resources)) {
            (Ok(baseline), Ok(candidate)) => {
                let request = CheckRequest {
                    problems: vec![case.problem.clone()],
                    baseline: Kernel { module: code.baseline.clone(), launches: baseline },
                    candidate: Kernel { module: code.candidate.clone(), launches: candidate },
                    harness: code.harness.clone(),
                    runs: case.runs,
                    bitwise: kernel.verify.deterministic,
                };
                status_of(runner.check(&request), kernel.verify.deterministic)
            }
            // The planner only keeps shapes whose launches evaluate; should one not, say whose.
            (Err(infeasible), _) => CaseStatus::BaselineFailed { message: infeasible.reason },
            (_, Err(infeasible)) => CaseStatus::Fail { finding: Finding::Failed { kind: crate::gpu::FailureKind::Infeasible, message: infeasible.reason } },
        };
        report.cases.push(CaseResult { stage: case.stage, label: case.label.clone(), status, seconds: case_started.elapsed().as_secs_f64() });
    }
    report.seconds = started.elapsed().as_secs_f64();
    report
}

/// A check's result as a case status. Repeated runs that disagree say more about the cause
/// than a mismatch with the baseline does, so they are looked at first.
fn status_of(check: Check, bitwise: bool) -> CaseStatus {
    match check {
        Check::BaselineFailed { message, .. } => CaseStatus::BaselineFailed { message },
        Check::Failed { kind, message } => CaseStatus::Fail { finding: Finding::Failed { kind, message } },
        Check::Compared { verdict, repeats } => match Finding::of_repeats(&repeats, bitwise).or_else(|| Finding::of_verdict(&verdict)) {
            Some(finding) => CaseStatus::Fail { finding },
            None => match verdict {
                Verdict::Pass { max_abs_error, max_rel_error } => CaseStatus::Pass { max_abs_error, max_rel_error },
                _ => CaseStatus::Fail {
                    finding: Finding::Failed { kind: crate::gpu::FailureKind::Worker, message: "the runner returned no outputs to compare".into() },
                },
            },
        },
    }
}

#[cfg(test)]
mod tests;
