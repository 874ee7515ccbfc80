//! The results database: every evaluation of every tuning run, in SQLite under `.cutune/`.

use serde::{Deserialize, Serialize};

use crate::compile::KernelResources;
use crate::gpu::{Outcome, RunnerSource};
use crate::space::Configuration;

/// What makes two measurements comparable: the same code, problems, device and compiler.
/// A stored evaluation is reused only under an equal key (and the configuration).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ResultKey {
    pub kernel: String,
    /// SHA-256 of the templatized device source that was compiled.
    pub source_sha256: String,
    /// SHA-256 of the problems (shapes, arguments, seeds) the kernel ran on.
    pub problems_sha256: String,
    /// The device's name and ordinal-independent identity, e.g. `NVIDIA H100 80GB HBM3 (sm_90)`.
    pub device: String,
    /// e.g. `12.9`.
    pub nvrtc: String,
}

/// One configuration, evaluated once.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Evaluation {
    pub key: ResultKey,
    pub config: Configuration,
    /// Where the measurement came from: live, or a replay of a named file.
    pub source: RunnerSource,
    pub outcome: Outcome,
    /// From ptxas; absent for replays and compile failures.
    pub resources: Option<KernelResources>,
    /// Resident warps per SM over the maximum, 0 to 1, from the resources and the block size.
    pub occupancy: Option<f64>,
    pub compile_ms: f64,
    /// Seconds since the Unix epoch.
    pub measured_at: i64,
}
