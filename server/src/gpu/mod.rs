//! Measuring configurations: the [`Runner`] trait and its implementations.
//!
//! - the CUDA worker: a `cutune worker` child process owns the CUDA context, so a kernel that
//!   faults or hangs kills a process we can restart, never the tuner or the language server;
//! - the replay runner: recorded measurements (T4 files, Kernel Tuner caches, our results
//!   database), for CI and for studying a space offline. It always says that it is a replay.
//!
//! The tuning loop works out every number a launch needs (grid, block, lengths, scalars) from
//! the spec; runners only receive concrete values.

pub mod client;
pub mod protocol;
pub mod replay;
pub mod worker;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::spec::{Dtype, Init, Role, TextureAddress, TextureFilter, TextureLayout, TextureRead, Tolerance};

/// The worker's verification kernels (seeded data, comparison with the baseline), compiled by
/// the tuner for the device like any kernel and sent with `Prepare`.
pub const HARNESS_SOURCE: &str = include_str!("harness.cu");
/// The name expression NVRTC compiles the harness with (any of its kernels would do).
pub const HARNESS_ENTRY: &str = "&cutune_compare";
/// The kernels that measure the device's ceilings (a streaming copy, FP32 and FP16 FMA
/// chains), compiled for the device and sent with `Ceilings` (see [`crate::sol`]).
pub const CEILINGS_SOURCE: &str = include_str!("ceilings.cu");

/// The device a runner measures on, with the limits the feasible space needs. Read from the
/// driver by the worker; recorded with every result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DeviceInfo {
    /// e.g. `NVIDIA H100 80GB HBM3`.
    pub name: String,
    pub ordinal: u32,
    /// Compute capability, e.g. (9, 0).
    pub compute_capability: (u32, u32),
    pub multiprocessors: u32,
    pub warp_size: u32,
    pub max_threads_per_block: u32,
    pub max_threads_per_multiprocessor: u32,
    pub max_blocks_per_multiprocessor: u32,
    /// Without the opt-in (48 KiB on every GPU so far).
    pub shared_bytes_per_block: u32,
    /// With `CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES` set.
    pub shared_bytes_per_block_optin: u32,
    pub shared_bytes_per_multiprocessor: u32,
    pub registers_per_block: u32,
    pub registers_per_multiprocessor: u32,
    pub l2_bytes: u64,
    pub memory_bytes: u64,
    /// e.g. 13000 for CUDA 13.0.
    pub driver_version: i32,
    /// The SM clock's peak, in kHz (`cudaDevAttrClockRate`); 0 where unknown (a datasheet, a
    /// record made before it was kept).
    #[serde(default)]
    pub clock_khz: u32,
}

impl DeviceInfo {
    /// The spec's device sizes ([`crate::spec::DEVICE_SIZES`]) as this device has them; a size
    /// it did not report is 0, which leaves a shape's value as it is.
    pub fn spec_sizes(&self) -> [(&'static str, i64); 5] {
        [
            ("sm_count", self.multiprocessors.into()),
            ("threads_per_sm", self.max_threads_per_multiprocessor.into()),
            ("shared_bytes_per_block_optin", self.shared_bytes_per_block_optin.into()),
            ("clock_khz", self.clock_khz.into()),
            ("l2_bytes", i64::try_from(self.l2_bytes).unwrap_or(0)),
        ]
    }

    /// The architecture to compile for, e.g. `sm_90`.
    pub fn arch(&self) -> String {
        format!("sm_{}{}", self.compute_capability.0, self.compute_capability.1)
    }

    /// The per-block and per-SM limits CUDA documents for an architecture (`sm_90`), for checks
    /// made without a GPU. Whole-device figures (SM count, L2, memory) are 0: unknown.
    pub fn datasheet(arch: &str) -> Option<DeviceInfo> {
        let digits: String = arch.trim_start_matches("sm_").chars().take_while(char::is_ascii_digit).collect();
        let capability: u32 = digits.parse().ok()?;
        // (threads per SM, blocks per SM, shared per SM, shared per block with the opt-in), KiB.
        let (threads, blocks, shared_sm, shared_optin) = match capability {
            75 => (1024, 16, 64, 64),
            80 | 87 => (2048, 32, 164, 163),
            86 => (1536, 16, 100, 99),
            89 => (1536, 24, 100, 99),
            90 | 100 | 103 => (2048, 32, 228, 227),
            120 | 121 => (1536, 32, 100, 99),
            _ => return None,
        };
        Some(DeviceInfo {
            name: format!("{arch} (datasheet limits)"),
            ordinal: 0,
            compute_capability: (capability / 10, capability % 10),
            multiprocessors: 0,
            warp_size: 32,
            max_threads_per_block: 1024,
            max_threads_per_multiprocessor: threads,
            max_blocks_per_multiprocessor: blocks,
            shared_bytes_per_block: 48 * 1024,
            shared_bytes_per_block_optin: shared_optin * 1024,
            shared_bytes_per_multiprocessor: shared_sm * 1024,
            registers_per_block: 65_536,
            registers_per_multiprocessor: 65_536,
            l2_bytes: 0,
            memory_bytes: 0,
            driver_version: 0,
            clock_khz: 0,
        })
    }
}

/// Where measurements come from. Replays name their source wherever they are shown.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RunnerSource {
    /// Live measurements by the CUDA worker.
    Device,
    /// Recorded measurements; `from` is the file or database they were read from.
    Replay { from: String },
}

/// A kernel argument with every size resolved.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Arg {
    Buffer {
        name: String,
        dtype: Dtype,
        /// Elements, not bytes.
        length: u64,
        role: Role,
        init: Init,
        /// How outputs are compared with the baseline's.
        tolerance: Tolerance,
        /// Inputs and in-outs of a captured launch: the program's own bytes, which replace
        /// `init` (as far as they reach).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        data: Option<CapturedData>,
        /// Element by element, or by the sum of the elements written (per-block partials).
        #[serde(default, skip_serializing_if = "is_elements")]
        compare: crate::spec::Compare,
    },
    Scalar {
        name: String,
        dtype: Dtype,
        value: f64,
    },
    /// A texture object over data filled as `init` says, made once per problem: kernels
    /// cannot write a texture, so it needs no refill.
    Texture {
        name: String,
        /// One channel's type.
        dtype: Dtype,
        /// Texels along x, y, z, as many as the layout has (layers and faces last).
        extent: Vec<u64>,
        layout: TextureLayout,
        channels: u32,
        filter: TextureFilter,
        address: TextureAddress,
        normalized_coords: bool,
        read: TextureRead,
        init: Init,
    },
    /// A struct passed by value: `bytes` of zeros with each field (a buffer's address or a
    /// scalar's value) written at its offset. Fields are named `params.x_ptr`.
    Struct {
        name: String,
        bytes: u64,
        fields: Vec<StructField>,
    },
}

/// A buffer or a scalar at its place in a struct.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StructField {
    pub offset: u64,
    pub arg: Arg,
}

impl Arg {
    pub fn name(&self) -> &str {
        match self {
            Arg::Buffer { name, .. } | Arg::Scalar { name, .. } | Arg::Texture { name, .. } | Arg::Struct { name, .. } => name,
        }
    }

    /// The buffers, scalars and textures this argument is: a struct's fields, else itself.
    pub fn leaves(&self) -> Vec<&Arg> {
        match self {
            Arg::Struct { fields, .. } => fields.iter().map(|f| &f.arg).collect(),
            other => vec![other],
        }
    }

    /// [`Self::leaves`], to change them.
    pub fn leaves_mut(&mut self) -> Vec<&mut Arg> {
        match self {
            Arg::Struct { fields, .. } => fields.iter_mut().map(|f| &mut f.arg).collect(),
            other => vec![other],
        }
    }

    /// Values the argument holds on the device: a buffer's elements, a texture's texels times
    /// its channels; none for a scalar.
    pub fn values(&self) -> u64 {
        match self {
            Arg::Buffer { length, .. } => *length,
            Arg::Texture { extent, channels, .. } => extent.iter().product::<u64>().saturating_mul(*channels as u64),
            Arg::Scalar { .. } | Arg::Struct { .. } => 0,
        }
    }

    /// Bytes the argument takes on the device (a scalar's are passed, not allocated: 0).
    pub fn device_bytes(&self) -> u64 {
        match self {
            Arg::Buffer { dtype, .. } | Arg::Texture { dtype, .. } => self.values().saturating_mul(worker::data::element_bytes(*dtype) as u64),
            Arg::Struct { fields, .. } => fields.iter().map(|f| f.arg.device_bytes()).sum(),
            Arg::Scalar { .. } => 0,
        }
    }
}

/// How a verdict names an output compared by its sum (`Σ out`), and reads the name back.
pub fn summed(arg: &str) -> String {
    format!("{SUMMED}{arg}")
}

pub fn summed_arg(label: &str) -> Option<&str> {
    label.strip_prefix(SUMMED)
}

const SUMMED: &str = "Σ ";

fn is_elements(compare: &crate::spec::Compare) -> bool {
    *compare == crate::spec::Compare::Elements
}

/// Where a buffer's initial bytes lie in a capture file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CapturedData {
    pub file: PathBuf,
    /// From the start of the file.
    pub offset: u64,
    pub bytes: u64,
}

/// One problem size: the arguments, filled with seeded random data the same way for the
/// baseline and every candidate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Problem {
    /// Shown in messages, e.g. `rows=4095 hidden=4096`.
    pub label: String,
    pub args: Vec<Arg>,
    pub seed: u64,
}

impl Problem {
    /// The buffers, scalars and textures of every argument, a struct's fields in its place.
    pub fn leaf_args(&self) -> impl Iterator<Item = &Arg> {
        self.args.iter().flat_map(Arg::leaves)
    }
}

/// A launch's geometry on one problem.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaunchDims {
    pub grid: [u32; 3],
    pub block: [u32; 3],
    /// Dynamic shared memory; above the device's default the runner sets the opt-in.
    pub shared_bytes: u32,
    /// Launched with `cuLaunchCooperativeKernel`: the kernel synchronises its whole grid.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cooperative: bool,
}

impl LaunchDims {
    /// Threads per block.
    pub fn threads(&self) -> u64 {
        self.block.iter().map(|&e| e as u64).product()
    }
}

/// Compiled code for one configuration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Module {
    /// A cubin for the device's exact architecture (in the cubin cache).
    pub cubin: PathBuf,
    /// The lowered (mangled) name of the kernel in the cubin.
    pub function: String,
}

/// What to run: code plus one launch per problem, in problem order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Kernel {
    pub module: Module,
    pub launches: Vec<LaunchDims>,
}

/// Repeated measurements of one launch, in microseconds.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Timing {
    pub median_us: f64,
    pub min_us: f64,
    pub max_us: f64,
    /// (p75 - p25) / median: the relative spread of the timed runs.
    pub spread: f64,
    pub runs: u32,
}

/// What the worker's `ceilings` request measures (see `docs/sol.md`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MeasuredCeilings {
    /// Large-buffer copy bandwidth, bytes read plus bytes written, in GB/s.
    pub copy_gbs: f64,
    pub fp32_tflops: f64,
    pub fp16_tflops: f64,
    /// The fastest copy at each of a range of sizes, smallest first, each run after an L2
    /// flush as the tuner times kernels.
    pub copy_times: Vec<CopyTime>,
}

/// The fastest copy seen that moved `bytes` (read plus written), in microseconds.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct CopyTime {
    pub bytes: f64,
    pub us: f64,
}

/// How a candidate's outputs compare with the baseline's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Verdict {
    /// Every output element within tolerance.
    Pass {
        #[serde(with = "protocol::nonfinite")]
        max_abs_error: f64,
        #[serde(with = "protocol::nonfinite")]
        max_rel_error: f64,
    },
    /// The first element out of tolerance, and how many were. `actual` is often NaN, the
    /// poison that outputs are filled with before a run: the kernel did not write it.
    Mismatch {
        problem: usize,
        arg: String,
        index: u64,
        #[serde(with = "protocol::nonfinite")]
        expected: f64,
        #[serde(with = "protocol::nonfinite")]
        actual: f64,
        mismatches: u64,
        #[serde(with = "protocol::nonfinite")]
        max_abs_error: f64,
        #[serde(with = "protocol::nonfinite")]
        max_rel_error: f64,
        /// Of the mismatches: elements that still hold the poison, never written.
        #[serde(default)]
        unwritten: u64,
        /// Of the other mismatches: NaN or infinite where the baseline's is finite.
        #[serde(default)]
        not_finite: u64,
    },
    /// The kernel wrote past the end of a buffer: `bytes` of the guard bytes after `arg`
    /// changed, the first at `first_offset` bytes past its end. Checked before the outputs,
    /// which such a write may have corrupted.
    OutOfBounds { problem: usize, arg: String, bytes: u64, first_offset: u64 },
    /// Replays carry no outputs.
    Unchecked,
}

impl Verdict {
    pub fn is_pass(&self) -> bool {
        matches!(self, Verdict::Pass { .. })
    }
}

/// Why a candidate produced no measurement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    /// Over a device or compiler limit, found before any launch.
    Infeasible,
    /// NVRTC or ptxas refused it.
    Compile,
    /// The launch was refused (e.g. too many resources requested).
    Launch,
    /// The kernel faulted (illegal address, trap…): the context was lost and the worker restarted.
    Fault,
    /// The kernel ran past the watchdog's limit and the worker was killed.
    Timeout,
    /// The worker process died or stopped answering for another reason.
    Worker,
}

/// The result of measuring one candidate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Outcome {
    /// One timing per problem, and the comparison with the baseline.
    Measured { timings: Vec<Timing>, verdict: Verdict },
    Failed { kind: FailureKind, message: String },
}

/// A check of a candidate against the baseline on problems of its own, apart from the
/// prepared ones (the verification stages): nothing is timed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CheckRequest {
    pub problems: Vec<Problem>,
    pub baseline: Kernel,
    pub candidate: Kernel,
    /// The cubin of [`HARNESS_SOURCE`].
    pub harness: PathBuf,
    /// Runs of the candidate: the first is compared with the baseline, each later one with the
    /// first. Shared memory is poisoned with two patterns in turn before them.
    pub runs: u32,
    /// Later runs must match the first bitwise; else within the tolerance (non-deterministic
    /// kernels, e.g. float atomics).
    pub bitwise: bool,
}

/// What a [`CheckRequest`] found.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "check", rename_all = "snake_case")]
pub enum Check {
    /// The original kernel itself could not run on the problems, so there is nothing to
    /// compare with.
    BaselineFailed { kind: FailureKind, message: String },
    /// The candidate could not run.
    Failed { kind: FailureKind, message: String },
    /// `verdict` compares the first run with the baseline; `repeats`, each later run with the
    /// first.
    Compared { verdict: Verdict, repeats: Vec<Verdict> },
}

/// Which in-out buffers the original kernel only writes, found by running it again with each
/// one's initial bytes changed ([`Runner::settle_roles`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "settled", rename_all = "snake_case")]
pub enum SettledRoles {
    /// The in-out buffers whose initial bytes changed no output on any problem, in argument
    /// order (empty when each of them changed one).
    WrittenOnly { buffers: Vec<String> },
    /// Why the runs could not tell, e.g. the original's output varies between two runs of the
    /// same input.
    Undecided { why: String },
}

/// What [`Runner::start_measure`] did.
#[derive(Debug)]
pub enum Started {
    /// The runner measured at once: the outcome.
    Done(Outcome),
    /// The device is measuring; [`Runner::finish_measure`] waits for the outcome.
    Running,
}

/// Measures kernels. The tuning loop calls [`Runner::prepare`] once, then
/// [`Runner::start_measure`] and [`Runner::finish_measure`] for every candidate.
pub trait Runner {
    fn device(&self) -> &DeviceInfo;
    fn source(&self) -> &RunnerSource;
    /// Whether `measure` needs compiled code (replays look configurations up instead).
    fn needs_code(&self) -> bool;
    /// Allocates and fills the problems, runs the baseline once per problem and keeps its
    /// outputs for comparison; returns the baseline's timings. `harness` is the cubin of
    /// [`HARNESS_SOURCE`] for the device (replays ignore it).
    fn prepare(&mut self, problems: &[Problem], baseline: &Kernel, harness: &std::path::Path) -> anyhow::Result<Vec<Timing>>;
    /// Races the next candidates against the best so far: on problem `i`, timing stops after
    /// the first batch when that batch's median is above `cutoff_us[i]`, since such a candidate
    /// cannot become best. It is still checked and timed; its median rests on fewer runs.
    /// Runners that time nothing ignore it.
    fn set_cutoff(&mut self, _cutoff_us: Vec<f64>) {}
    /// Measures one candidate. `config` names the configuration (replays look it up by this);
    /// `kernel` is its code, `None` only when `needs_code` is false.
    fn measure(&mut self, config: &crate::space::Configuration, kernel: Option<&Kernel>) -> Outcome;
    /// Starts measuring one candidate like `measure`, returning before the device is done
    /// where the runner can, so that the caller records the previous result meanwhile. Until
    /// [`Runner::finish_measure`], nothing else may be asked of the runner. Runners that
    /// cannot overlap measure at once.
    fn start_measure(&mut self, config: &crate::space::Configuration, kernel: Option<&Kernel>) -> Started {
        Started::Done(self.measure(config, kernel))
    }
    /// Waits for the outcome of the measurement `start_measure` left running.
    fn finish_measure(&mut self) -> Outcome {
        Outcome::Failed { kind: FailureKind::Worker, message: "no measurement is running to finish".into() }
    }
    /// Runs a check apart from the prepared problems, which stay prepared. Runners that do not
    /// run code cannot check.
    fn check(&mut self, _request: &CheckRequest) -> Check {
        Check::Failed { kind: FailureKind::Worker, message: "recorded measurements carry no outputs, so a replay cannot check a kernel".into() }
    }
    /// Runs the prepared original, `baseline`, again on the prepared problems with each in-out
    /// buffer's initial bytes changed in turn (other seeds, captured bytes left out), and
    /// compares every output bit for bit with its first run: a buffer whose initial bytes
    /// change nothing is one the original only writes, so the bound counts it once. Untimed.
    /// Only a runner that runs code can.
    fn settle_roles(&mut self, _baseline: &Kernel) -> SettledRoles {
        SettledRoles::Undecided { why: "recorded measurements carry no outputs".into() }
    }
    /// Measures the device's ceilings with `cubin`, the kernels of [`CEILINGS_SOURCE`] compiled
    /// for it. Only a live device can.
    fn ceilings(&mut self, _cubin: &std::path::Path) -> anyhow::Result<MeasuredCeilings> {
        match self.source() {
            RunnerSource::Replay { from } => anyhow::bail!("a replay of {from} has no device to measure"),
            RunnerSource::Device => anyhow::bail!("this runner cannot measure the device's ceilings"),
        }
    }
}
