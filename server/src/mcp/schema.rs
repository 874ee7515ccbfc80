//! The tools' arguments and results, as their JSON schemas show them to the client.

use serde::{Deserialize, Serialize};

use rmcp::schemars;

#[derive(Deserialize, schemars::JsonSchema)]
pub struct FileArgs {
    /// Path of the CUDA source file (`.cu`, `.cuh`), absolute or relative to the server's
    /// working folder.
    pub file: String,
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct KernelArgs {
    /// Path of the CUDA source file.
    pub file: String,
    /// Name of the `__global__` function.
    pub kernel: String,
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct TemplatizeArgs {
    /// Path of the CUDA source file.
    pub file: String,
    /// Name of the `__global__` function.
    pub kernel: String,
    /// Rewrite the file in place and write its spec (`FILE.cutune.toml`) beside it; otherwise
    /// nothing is written and the diff says what would change.
    #[serde(default)]
    pub write: bool,
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct TuneArgs {
    /// Path of the CUDA source file; its spec (`FILE.cutune.toml`) is read from beside it, or
    /// the kernel is templatized in memory when there is none.
    pub file: String,
    /// Name of the `__global__` function.
    pub kernel: String,
    /// Most configurations to evaluate (default 200).
    pub budget: Option<u64>,
    /// Wall-time limit of the search in seconds.
    pub time_seconds: Option<u64>,
    /// `brute-force`, `random`, `annealing`, `genetic` or `model` (default: brute force when the
    /// whole space fits the budget, else the model).
    pub strategy: Option<String>,
    /// A recording of measurements to replay instead of measuring on the GPU (a T4 `.json` or a
    /// Kernel Tuner cache file): for trying the loop on a machine without a GPU.
    pub replay: Option<String>,
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct CompareArgs {
    /// Path of the CUDA source file of the original kernel; its spec is read from beside it.
    pub file: String,
    /// Name of the original `__global__` function.
    pub kernel: String,
    /// Path of the file with the other implementation.
    pub candidate_file: String,
    /// Its kernel's name, when not the original's. It must take the same parameters; it
    /// launches as the spec says the original does.
    pub candidate_kernel: Option<String>,
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct VerifyArgs {
    /// Path of the CUDA source file; its spec is read from beside it.
    pub file: String,
    /// Name of the `__global__` function.
    pub kernel: String,
    /// Parameters to set, `NAME=VALUE,…` (e.g. `BLOCK_SIZE=512,RMSNORM_VEC=4`); the others keep
    /// the values the file runs now.
    pub config: Option<String>,
    /// Stages to run, of `smoke`, `shapes`, `numerics`, `determinism`, `edges` (default: all).
    pub stages: Option<Vec<String>>,
}

#[derive(Serialize, schemars::JsonSchema)]
pub struct VerifyOutcome {
    pub kernel: String,
    /// The configuration verified.
    pub config: Vec<(String, i64)>,
    pub device: String,
    pub passed: bool,
    pub summary: String,
    /// One entry per case run: its stage, what it runs, and `pass`, or the failure.
    pub cases: Vec<(String, String, String)>,
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct SolArgs {
    /// Path of the CUDA source file; its spec is read from beside it (or the kernel is
    /// templatized in memory when there is none).
    pub file: String,
    /// Name of the `__global__` function.
    pub kernel: String,
    /// A GPU by the name its driver reports (`NVIDIA H100 80GB HBM3`, `NVIDIA A100-SXM4-80GB`,
    /// `NVIDIA L4`…) to bound against its datasheet figures; default: the ceilings
    /// `cutune ceilings` last measured on this machine.
    pub device: Option<String>,
}

#[derive(Serialize, schemars::JsonSchema)]
pub struct SolOutcome {
    pub kernel: String,
    /// The ceilings the bound divides by, and where they come from (measured, or datasheet).
    pub ceilings: String,
    /// The bound over the spec's shapes (what a tune is measured on), in µs.
    pub bound_us: f64,
    /// One entry per shape: what it is, bytes moved, flops, the memory and compute terms in µs,
    /// and which limits it.
    pub shapes: Vec<SolShape>,
}

#[derive(Serialize, schemars::JsonSchema)]
pub struct SolShape {
    pub shape: String,
    pub bytes: f64,
    pub flops: f64,
    pub memory_us: f64,
    pub compute_us: f64,
    pub limit: String,
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct CheckArgs {
    /// Path of the CUDA source file; its spec is read from beside it (or the kernel is
    /// templatized in memory when there is none).
    pub file: String,
    /// Name of the `__global__` function.
    pub kernel: String,
    /// How many configurations to compile, the default one included (default 32); 0 compiles
    /// the whole space (refused over 100,000).
    pub sample: Option<u64>,
    /// The GPU architecture to compile for (default `sm_90`).
    pub arch: Option<String>,
}

#[derive(Serialize, schemars::JsonSchema)]
pub struct CheckOutcome {
    pub kernel: String,
    pub arch: String,
    /// The NVRTC version and library used.
    pub nvrtc: String,
    pub space_size: u64,
    pub checked: usize,
    pub compiled: usize,
    /// Configurations a restriction or the architecture's limits rule out.
    pub infeasible: usize,
    /// Configurations NVRTC refused: a fault of the source or the spec.
    pub failed: usize,
    pub results: Vec<CheckedConfiguration>,
    /// Where the spec came from, and names the device slice could not resolve.
    pub notes: Vec<String>,
}

#[derive(Serialize, schemars::JsonSchema)]
pub struct CheckedConfiguration {
    pub values: Vec<(String, i64)>,
    pub is_default: bool,
    /// `compiled`, `infeasible` or `failed`.
    pub status: String,
    /// Why it is infeasible, or the compiler's error.
    pub reason: Option<String>,
    pub registers: Option<u32>,
    pub spill_bytes: Option<u64>,
    pub shared_bytes: Option<u64>,
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct ProfileArgs {
    /// The program to run under the profiler, and its arguments (e.g. `["./train", "--steps",
    /// "10"]`); its input is empty and its output goes to the server's standard error.
    pub command: Option<Vec<String>>,
    /// Rank an existing profile instead of running anything: a PyTorch profiler trace (JSON) or
    /// an Nsight Systems SQLite export.
    pub import: Option<String>,
    /// Capture the launches of these kernels (source or mangled names), for tuning on what the
    /// program really runs.
    #[serde(default)]
    pub capture: Vec<String>,
    /// Capture the N workspace kernels with the largest shares (the program runs twice).
    pub capture_top: Option<usize>,
    /// The folder the program runs in (default: the server's working folder).
    pub directory: Option<String>,
    /// The workspace whose sources the kernels are looked up in, and whose `.cutune/` receives
    /// the profile and captures (default: the nearest root above `directory`).
    pub root: Option<String>,
}

#[derive(Serialize, schemars::JsonSchema)]
pub struct ProfileOutcome {
    /// The command run, or the profile imported.
    pub origin: String,
    /// GPU time in kernels, copies and sets, in ns.
    pub gpu_ns: u64,
    pub kernel_ns: u64,
    /// The kernels by share of GPU time, largest first: by Amdahl's law, a kernel's share bounds
    /// what tuning it can gain the program.
    pub kernels: Vec<ProfiledKernel>,
    /// Launches captured into the workspace, for `tune` to run on.
    pub captures: Vec<crate::profile::job::SavedCapture>,
    pub problems: Vec<String>,
}

#[derive(Serialize, schemars::JsonSchema)]
pub struct ProfiledKernel {
    /// As the profiler names it, demangled (template arguments included).
    pub name: String,
    pub launches: u64,
    pub total_ns: u64,
    /// Of the GPU time, from 0 to 1.
    pub share: f64,
    /// Where the workspace defines it (`file:line`), when it does.
    pub source: Option<String>,
    /// Once tuned: its speedup, and the share of the program's GPU time that saves.
    pub tuned_speedup: Option<f64>,
    pub tuned_gain: Option<f64>,
}

#[derive(Serialize, schemars::JsonSchema)]
pub struct TuneOutcome {
    pub kernel: String,
    /// The GPU measured on, or the recording replayed.
    pub measured_on: String,
    /// Why the search stopped (`cancelled` when the client cancelled it).
    pub stop_reason: String,
    pub evaluated: usize,
    pub baseline_us: Option<f64>,
    pub bound_us: Option<f64>,
    /// The fastest configuration that passed verification (or, for a replay, the recording's).
    pub best: Option<MeasuredConfiguration>,
    /// Faster configurations that failed verification, with the first failure.
    pub rejected: Vec<String>,
    /// Reasons configurations could not run, with how many.
    pub failures: Vec<(String, u64)>,
}

#[derive(Serialize, schemars::JsonSchema)]
pub struct KernelList {
    pub file: String,
    pub kernels: Vec<KernelEntry>,
}

#[derive(Serialize, schemars::JsonSchema)]
pub struct KernelEntry {
    pub name: String,
    /// 1-based line of the definition (or declaration).
    pub line: u32,
    pub signature: String,
    pub is_definition: bool,
    pub template_params: Vec<String>,
    /// 1-based lines of the launches (`<<<…>>>`) in this file.
    pub launches: Vec<u32>,
}

#[derive(Serialize, schemars::JsonSchema)]
pub struct TemplatizeOutcome {
    pub kernel: String,
    /// The tuning parameters, in the spec's order, each with its default (the original value).
    pub parameters: Vec<Parameter>,
    /// One line per transform: applied, skipped or refused, and why.
    pub report: Vec<String>,
    /// What the spec still lacks (`?` values), from `cutune spec check`; empty when it is ready.
    pub spec_problems: Vec<String>,
    /// Unified diffs of the source and of the spec.
    pub diff: String,
    /// The files written (with `write`), else empty.
    pub written: Vec<String>,
}

#[derive(Serialize, schemars::JsonSchema)]
pub struct Parameter {
    pub name: String,
    pub kind: String,
    pub default: i64,
    pub values: Vec<i64>,
    pub origin: String,
}

#[derive(Serialize, schemars::JsonSchema)]
pub struct TuningResults {
    pub kernel: String,
    /// Whether the kernel has been tuned from this file; the other fields are empty if not.
    pub tuned: bool,
    /// The GPU the results were measured on (or `replay`).
    pub measured_on: String,
    pub baseline_us: Option<f64>,
    /// The speed-of-light bound of the run, in µs.
    pub bound_us: Option<f64>,
    /// The fastest configuration that matched the original kernel and did not fail verification.
    pub best: Option<MeasuredConfiguration>,
    /// The kernel's definition changed since the run: tune again.
    pub stale: bool,
    /// Why the latest run stopped (`cancelled`, `space exhausted`, …); empty while it runs.
    pub stop_reason: String,
    /// The results as the editor's hover shows them (Markdown).
    pub summary: String,
}

/// A configuration that ran, with its measurement.
#[derive(Serialize, schemars::JsonSchema)]
pub struct MeasuredConfiguration {
    pub values: Vec<(String, i64)>,
    pub time_us: f64,
    pub speedup: Option<f64>,
    /// Percent of the speed-of-light bound.
    pub sol_percent: Option<f64>,
    /// Whether it passed the five verification stages.
    pub verified: bool,
}
