//! One tuning session on the device: every problem's buffers, the baseline's outputs, and
//! checking (on the device, with the harness) and timing a kernel against them. A check looks
//! for writes past the end of a buffer (guard bytes), elements never written (poison), and
//! reads of shared memory never written (shared memory poisoned before each run).

use std::time::Instant;

use crate::gpu::protocol::TimingPolicy;
use crate::gpu::{Check, CheckRequest, FailureKind, Kernel, LaunchDims, Outcome, Problem, SettledRoles, Timing, Verdict};
use crate::space::SplitMix64;
use crate::spec::{Compare, Dtype, Init, Role, Tolerance};

use super::compare::{compare_sums, BufferComparison, VerdictBuilder};
use super::cuda::{self, DeviceBuffer, DriverFailure, Event, Function, TextureDesc, TextureObject};
use super::data::{check_init, decode, element_bytes, pack_scalar};
use super::device::Gpu;
use super::harness::{Harness, Summary, SUMMARY_BYTES, SUMMARY_START};
use super::modules::{ModuleError, Modules};
use super::stats::Sampler;

/// Why a kernel produced no measurement; becomes [`Outcome::Failed`] or, for the baseline,
/// an error response.
#[derive(Debug)]
pub struct Failure {
    pub kind: FailureKind,
    pub message: String,
}

impl Failure {
    fn new(kind: FailureKind, message: String) -> Failure {
        Failure { kind, message }
    }

    /// A driver error while doing `what`: a fault when the context is lost, else `kind`.
    fn driver(kind: FailureKind, what: &str) -> impl FnOnce(DriverFailure) -> Failure + '_ {
        move |failure| {
            if failure.is_sticky() {
                Failure::new(
                    FailureKind::Fault,
                    format!("the kernel faulted {what}: {}; the CUDA context is lost, so the worker restarts", failure.describe()),
                )
            } else {
                Failure::new(kind, format!("{what}: {}", failure.describe()))
            }
        }
    }
}

/// Value for poisoning outputs before a run: all-ones bytes are NaN in every float format, so
/// an element the kernel fails to write shows up as a mismatch (counted as unwritten).
const POISON: u8 = 0xFF;

/// Flips a buffer's seed for [`Session::settle_roles`]'s runs with other initial bytes.
const RESEED: u64 = 0x9E37_79B9_7F4A_7C15;

/// Bytes after every buffer, set to [`GUARD`] before each checked run and compared after it: a
/// kernel that writes past the end of a buffer changes them. 64 KiB covers a missing bounds
/// check on a tail of up to 1024 threads × 8 elements × 8 bytes.
const GUARD_BYTES: usize = 64 * 1024;
const GUARD: u8 = 0xA5;

/// What shared memory holds before each run of a check, in turn. A kernel that reads shared
/// memory before writing it reads NaN after the first (all ones, as the output poison) and
/// zero after the second, so its output changes between runs.
const SHARED_PATTERNS: [u32; 2] = [0xFFFF_FFFF, 0];

struct Buffer {
    name: String,
    dtype: Dtype,
    length: u64,
    role: Role,
    init: Init,
    /// The seed of its contents: inputs and in-outs are filled anew before every checked run.
    seed: u64,
    tolerance: Tolerance,
    /// The data's size; the allocation has [`GUARD_BYTES`] more.
    bytes: usize,
    device: DeviceBuffer,
    /// Outputs and in-outs: the baseline's result, which candidates are compared with.
    expected: Option<DeviceBuffer>,
    /// Outputs and in-outs, in checks of repeated runs: the first run's result.
    first_run: Option<DeviceBuffer>,
    /// Inputs and in-outs of a captured launch: the program's bytes, copied over the fill
    /// before every checked run.
    captured: Option<DeviceBuffer>,
    compare: Compare,
}

/// A texture argument: its object, and the data it was made from (which a linear texture
/// reads where it lies). The object is declared first, so it is destroyed first.
struct Texture {
    _object: TextureObject,
    _data: DeviceBuffer,
}

struct ProblemData {
    label: String,
    buffers: Vec<Buffer>,
    /// Read-only, so made and filled once.
    _textures: Vec<Texture>,
    /// Each kernel parameter's bytes, in order, as 8-byte words: a buffer's device address, a
    /// scalar's value, a texture's handle or a struct's members packed at their offsets.
    parameters: Vec<Vec<u64>>,
    /// Each parameter's name and size in bytes, to check the kernel's signature against.
    parameter_sizes: Vec<(String, usize)>,
    /// One comparison summary per output or in-out buffer, in argument order, then one per
    /// buffer for its guard bytes.
    summaries: DeviceBuffer,
}

/// What a run sets before it launches, besides the fills every run makes.
#[derive(Clone, Copy)]
struct Setup {
    /// What shared memory holds (one of [`SHARED_PATTERNS`]).
    shared_pattern: u32,
    /// The buffer, by argument index, filled from another seed and without its captured bytes,
    /// so that all its initial bytes differ ([`Session::settle_roles`]).
    reseeded: Option<usize>,
}

impl Setup {
    fn shared(shared_pattern: u32) -> Setup {
        Setup { shared_pattern, reseeded: None }
    }
}

/// What a run's outputs are compared with.
#[derive(Clone, Copy)]
enum Reference {
    /// The baseline's outputs, under the spec's tolerances.
    Baseline,
    /// The baseline's outputs, bit for bit.
    BaselineExactly,
    /// The first run's outputs, bitwise or under the spec's tolerances.
    FirstRun { bitwise: bool },
}

/// The problems of one `Prepare` (or one check), on the device, with the kernels that fill and
/// check them.
pub struct Session {
    problems: Vec<ProblemData>,
    harness: Harness,
    /// [`GUARD_BYTES`] of [`GUARD`], what every guard must still hold after a run.
    guard: DeviceBuffer,
}

impl Session {
    /// Allocates every problem, then runs and times the baseline on them and
    /// keeps its outputs on the device.
    pub fn prepare(gpu: &Gpu, modules: &mut Modules, problems: &[Problem], baseline: &Kernel, harness: Harness, policy: &TimingPolicy) -> Result<(Session, Vec<Timing>), Failure> {
        let session = Session::allocate(problems, harness, false)?;
        let timings = session.run(gpu, modules, baseline, Some(policy), &[], Setup::shared(SHARED_PATTERNS[0]), |problem| {
            problem.keep_baseline()?;
            problem.compare(&session.harness, &session.guard, Reference::Baseline)
        })?;
        // Where the original itself writes past a buffer, every candidate would be reported
        // as writing out of bounds: the problem, not the candidates, is what is wrong.
        if let Verdict::OutOfBounds { problem, arg, bytes, .. } = session.verdict(Reference::Baseline)? {
            let label = &session.problems[problem].label;
            let message = format!(
                "the original writes out of bounds on problem `{label}`: {bytes} bytes after the end of `{arg}` changed; the spec's sizes or inputs are not ones it runs on (a length too short, or an index it reads from an input filled at random): give the buffer its length, the input the program's values (`init`), or capture a launch (`cutune profile`)"
            );
            return Err(Failure::new(FailureKind::Launch, message));
        }
        Ok((session, timings))
    }

    fn allocate(problems: &[Problem], harness: Harness, keep_first_run: bool) -> Result<Session, Failure> {
        let problems = problems.iter().map(|p| ProblemData::allocate(p, &harness, keep_first_run)).collect::<Result<Vec<_>, _>>()?;
        let failed = |f: DriverFailure| Failure::new(FailureKind::Worker, format!("cannot allocate the guard reference: {}", f.describe()));
        let guard = DeviceBuffer::new(GUARD_BYTES).map_err(failed)?;
        guard.fill(GUARD).map_err(failed)?;
        Ok(Session { problems, harness, guard })
    }

    /// Checks `kernel` against the baseline's outputs and times it; `cutoff_us` (per problem,
    /// may be empty) races it against the best so far.
    pub fn measure(&self, gpu: &Gpu, modules: &mut Modules, kernel: &Kernel, policy: &TimingPolicy, cutoff_us: &[f64]) -> Outcome {
        let timings = self.run(gpu, modules, kernel, Some(policy), cutoff_us, Setup::shared(SHARED_PATTERNS[0]), |problem| problem.compare(&self.harness, &self.guard, Reference::Baseline));
        match timings.and_then(|timings| Ok((timings, self.verdict(Reference::Baseline)?))) {
            Ok((timings, verdict)) => Outcome::Measured { timings, verdict },
            Err(failure) => Outcome::Failed { kind: failure.kind, message: failure.message },
        }
    }

    /// Runs a check on problems of its own: the baseline once, then the candidate `runs` times,
    /// each with the next shared-memory pattern. Untimed. Also returns whether the CUDA context
    /// was lost (a fault), after which the worker must exit.
    pub fn check(gpu: &Gpu, modules: &mut Modules, request: &CheckRequest, harness: Harness) -> (Check, bool) {
        let lost = |failure: &Failure| failure.kind == FailureKind::Fault;
        // A problem that cannot be set up (a texture beyond the device's limits, memory) is
        // one the original cannot run either: nothing to compare the candidate on.
        let session = match Session::allocate(&request.problems, harness, request.runs > 1) {
            Ok(session) => session,
            Err(failure) => return (Check::BaselineFailed { kind: failure.kind, message: failure.message }, false),
        };
        // The original's own guards are checked too: a problem the original writes past (sizes
        // it does not support) cannot tell anything about the candidate.
        let baseline = session
            .run(gpu, modules, &request.baseline, None, &[], Setup::shared(SHARED_PATTERNS[0]), |problem| {
                problem.keep_baseline()?;
                problem.compare(&session.harness, &session.guard, Reference::Baseline)
            })
            .and_then(|_| session.verdict(Reference::Baseline));
        match baseline {
            Err(failure) => {
                let faulted = lost(&failure);
                return (Check::BaselineFailed { kind: failure.kind, message: failure.message }, faulted);
            }
            Ok(Verdict::OutOfBounds { arg, bytes, .. }) => {
                let message = format!("the original writes out of bounds here: {bytes} bytes after the end of `{arg}` changed");
                return (Check::BaselineFailed { kind: FailureKind::Launch, message }, false);
            }
            Ok(_) => {}
        }
        // The original again, after the other shared-memory pattern: an output that changes
        // (threads racing on one element, shared memory read before it is written: a GEMM
        // without bounds checks at M = 1) is one the original does not define here.
        let again = session
            .run(gpu, modules, &request.baseline, None, &[], Setup::shared(SHARED_PATTERNS[1]), |problem| problem.compare(&session.harness, &session.guard, Reference::Baseline))
            .and_then(|_| session.verdict(Reference::Baseline));
        match again {
            Err(failure) => {
                let faulted = lost(&failure);
                return (Check::BaselineFailed { kind: failure.kind, message: failure.message }, faulted);
            }
            Ok(Verdict::Mismatch { arg, index, expected, actual, mismatches, .. }) => {
                let message = format!(
                    "the original gives another output on a second run here: `{arg}`[{index}] = {actual}, first {expected} ({mismatches} elements differ); it does not define the result on this problem"
                );
                return (Check::BaselineFailed { kind: FailureKind::Launch, message }, false);
            }
            Ok(_) => {}
        }
        let mut verdicts = Vec::new();
        for run in 0..request.runs.max(1) as usize {
            let reference = if run == 0 { Reference::Baseline } else { Reference::FirstRun { bitwise: request.bitwise } };
            let pattern = SHARED_PATTERNS[run % SHARED_PATTERNS.len()];
            let compared = session
                .run(gpu, modules, &request.candidate, None, &[], Setup::shared(pattern), |problem| {
                    problem.compare(&session.harness, &session.guard, reference)?;
                    if run == 0 { problem.keep_first_run() } else { Ok(()) }
                })
                .and_then(|_| session.verdict(reference));
            match compared {
                Ok(verdict) => verdicts.push(verdict),
                Err(failure) => {
                    let faulted = lost(&failure);
                    return (Check::Failed { kind: failure.kind, message: failure.message }, faulted);
                }
            }
        }
        let verdict = verdicts.remove(0);
        (Check::Compared { verdict, repeats: verdicts }, false)
    }

    /// Runs `baseline` (the prepared original) again on the prepared problems, first as it was,
    /// then with each in-out buffer's initial bytes changed in turn, comparing every output
    /// bit for bit with the prepared run: an in-out buffer whose initial bytes change nothing
    /// is one the original only writes. The baseline's kept outputs stay as they are.
    pub fn settle_roles(&self, gpu: &Gpu, modules: &mut Modules, baseline: &Kernel) -> Result<SettledRoles, Failure> {
        let Some(first) = self.problems.first() else { return Ok(SettledRoles::WrittenOnly { buffers: Vec::new() }) };
        let in_out: Vec<(usize, &str)> = first.buffers.iter().enumerate().filter(|(_, b)| b.role == Role::InOut).map(|(i, b)| (i, b.name.as_str())).collect();
        // Also asked with no in-out buffer, of an original that no candidate matched: is it
        // its own equal?
        if let Verdict::Mismatch { arg, index, mismatches, .. } = self.rerun_baseline(gpu, modules, baseline, None)? {
            let why = format!("the original gives another output on a second run of the same input (`{arg}`[{index}], {mismatches} elements differ)");
            return Ok(SettledRoles::Undecided { why });
        }
        let mut written_only = Vec::new();
        for (index, name) in in_out {
            if self.rerun_baseline(gpu, modules, baseline, Some(index))?.is_pass() {
                written_only.push(name.to_string());
            }
        }
        Ok(SettledRoles::WrittenOnly { buffers: written_only })
    }

    /// One untimed run of `baseline` with the buffer at `reseeded` given other initial bytes,
    /// its outputs and guards compared bit for bit with the prepared run's.
    fn rerun_baseline(&self, gpu: &Gpu, modules: &mut Modules, baseline: &Kernel, reseeded: Option<usize>) -> Result<Verdict, Failure> {
        let exactly = Reference::BaselineExactly;
        self.run(gpu, modules, baseline, None, &[], Setup { shared_pattern: SHARED_PATTERNS[0], reseeded }, |problem| problem.compare(&self.harness, &self.guard, exactly))?;
        self.verdict(exactly)
    }

    /// Reads the comparisons queued by [`ProblemData::compare`]: the summaries, and for a
    /// mismatch the two elements at its first index.
    fn verdict(&self, reference: Reference) -> Result<Verdict, Failure> {
        let mut verdict = VerdictBuilder::default();
        for (index, problem) in self.problems.iter().enumerate() {
            let reading = format!("reading the comparison of problem `{}`", problem.label);
            let read = Failure::driver(FailureKind::Worker, &reading);
            let summaries = problem.summaries.read(0, usize::MAX).map_err(read)?;
            let (values, guards) = summaries.split_at(problem.written().count() * SUMMARY_BYTES);
            for (buffer, summary) in problem.buffers.iter().zip(guards.chunks_exact(SUMMARY_BYTES)) {
                let summary = Summary::read(summary);
                if let Some(first_offset) = summary.first_index {
                    verdict.out_of_bounds(index, &buffer.name, summary.mismatches, first_offset);
                }
            }
            for (buffer, summary) in problem.written().zip(values.chunks_exact(SUMMARY_BYTES)) {
                if buffer.compare == Compare::Sum {
                    if let Some(expected) = buffer.reference(reference) {
                        let whole = |b: &DeviceBuffer| b.read(0, buffer.bytes).map_err(Failure::driver(FailureKind::Worker, &reading));
                        let tolerance = buffer.tolerance_against(reference);
                        verdict.add(index, &crate::gpu::summed(&buffer.name), compare_sums(&whole(expected)?, &whole(&buffer.device)?, buffer.dtype, &tolerance, POISON));
                    }
                    continue;
                }
                let summary = Summary::read(summary);
                let first_mismatch = match (summary.first_index, buffer.reference(reference)) {
                    (Some(at), Some(expected)) => {
                        let size = element_bytes(buffer.dtype);
                        let offset = usize::try_from(at).unwrap_or(usize::MAX).saturating_mul(size);
                        let read = |b: &DeviceBuffer| b.read(offset, size).map_err(Failure::driver(FailureKind::Worker, &reading));
                        let (want, got) = (read(expected)?, read(&buffer.device)?);
                        // A kernel writing far out of bounds can overwrite the summary too: an
                        // index past the buffer names no element to show.
                        (want.len() == size && got.len() == size).then(|| (at, decode(buffer.dtype, &want).as_f64(), decode(buffer.dtype, &got).as_f64()))
                    }
                    _ => None,
                };
                let comparison = BufferComparison {
                    first_mismatch,
                    mismatches: summary.mismatches,
                    max_abs_error: summary.max_abs_error,
                    max_rel_error: summary.max_rel_error,
                    unwritten: summary.unwritten,
                    not_finite: summary.not_finite,
                };
                verdict.add(index, &buffer.name, comparison);
            }
        }
        Ok(verdict.finish())
    }

    /// Per problem: one checked run after `setup`, then
    /// `checked` (which queues work on its outputs), then the timed runs when there is a
    /// `policy`. Returns the timing of each problem (none without a policy).
    fn run(
        &self,
        gpu: &Gpu,
        modules: &mut Modules,
        kernel: &Kernel,
        policy: Option<&TimingPolicy>,
        cutoff_us: &[f64],
        setup: Setup,
        mut checked: impl FnMut(&ProblemData) -> Result<(), Failure>,
    ) -> Result<Vec<Timing>, Failure> {
        if kernel.launches.len() != self.problems.len() {
            return Err(Failure::new(
                FailureKind::Worker,
                format!("the kernel comes with {} launches for {} problems; the tuner must send one per problem", kernel.launches.len(), self.problems.len()),
            ));
        }
        let cubin = &kernel.module.cubin;
        let loading = format!("loading the cubin {}", cubin.display());
        let module = modules.load(cubin).map_err(|error| match error {
            ModuleError::Read(e) => Failure::new(FailureKind::Worker, format!("cannot read the cubin {}: {e}", cubin.display())),
            ModuleError::Load(failure) => Failure::driver(FailureKind::Launch, &loading)(failure),
        })?;
        let name = &kernel.module.function;
        let function = module.function(name).map_err(Failure::driver(FailureKind::Launch, &loading))?.ok_or_else(|| {
            Failure::new(
                FailureKind::Launch,
                format!("the cubin {} has no kernel named `{name}` (the name must be the lowered, mangled one)", cubin.display()),
            )
        })?;
        // The driver's own limit for the loaded code, so that a block its registers cannot
        // fill is ruled out with the reason even when the compile log gave no resources.
        let (max_threads, registers) = function.thread_limit().map_err(Failure::driver(FailureKind::Launch, &loading))?;
        if let Some(dims) = kernel.launches.iter().find(|l| l.threads() > max_threads as u64) {
            let limit = if max_threads < gpu.info.max_threads_per_block {
                format!("{registers} registers per thread allow at most {max_threads} threads per block on {}", gpu.info.name)
            } else {
                format!("{} allows at most {max_threads} threads per block", gpu.info.name)
            };
            return Err(Failure::new(FailureKind::Infeasible, format!("{limit}; the launch has {} (block {:?})", dims.threads(), dims.block)));
        }
        let shared = kernel.launches.iter().map(|l| l.shared_bytes).max().unwrap_or(0);
        if shared > gpu.info.shared_bytes_per_block {
            let what = format!(
                "allowing {shared} bytes of dynamic shared memory per block (the device allows {} with the opt-in)",
                gpu.info.shared_bytes_per_block_optin
            );
            function.allow_dynamic_shared(shared).map_err(Failure::driver(FailureKind::Launch, &what))?;
        }
        if gpu.reports_parameters() {
            let sizes = function.parameter_sizes();
            for problem in &self.problems {
                check_signature(&sizes, &problem.parameter_sizes)?;
            }
        }
        let mut timings = Vec::with_capacity(self.problems.len());
        for (index, (problem, dims)) in self.problems.iter().zip(&kernel.launches).enumerate() {
            problem.run_once(&self.harness, setup, function, dims)?;
            checked(problem)?;
            let Some(policy) = policy else { continue };
            let what = format!("while timing problem `{}`", problem.label);
            let timing = time(gpu, function, dims, &problem.parameters, policy, cutoff_us.get(index).copied()).map_err(Failure::driver(FailureKind::Launch, &what))?;
            timings.push(timing.ok_or_else(|| Failure::new(FailureKind::Worker, "the timing policy allows no timed run".into()))?);
        }
        Ok(timings)
    }
}

impl Buffer {
    /// What this buffer's outputs are compared with.
    /// The tolerance of a comparison with `reference`: none when it must be bitwise.
    fn tolerance_against(&self, reference: Reference) -> Tolerance {
        match reference {
            Reference::FirstRun { bitwise: true } | Reference::BaselineExactly => Tolerance { dtype: self.dtype, atol: 0.0, rtol: 0.0 },
            _ => self.tolerance.clone(),
        }
    }

    fn reference(&self, reference: Reference) -> Option<&DeviceBuffer> {
        match reference {
            Reference::Baseline | Reference::BaselineExactly => self.expected.as_ref(),
            Reference::FirstRun { .. } => self.first_run.as_ref(),
        }
    }
}

/// The kernel's parameter sizes (from the driver) against the spec's arguments.
fn check_signature(kernel: &[usize], spec: &[(String, usize)]) -> Result<(), Failure> {
    let refuse = |message| Err(Failure::new(FailureKind::Launch, message));
    if kernel.len() != spec.len() {
        let names: Vec<&str> = spec.iter().map(|(n, _)| n.as_str()).collect();
        return refuse(format!(
            "the kernel takes {} parameters, but the spec gives {} arguments ({}); launching it would pass garbage",
            kernel.len(),
            spec.len(),
            names.join(", ")
        ));
    }
    for (index, (size, (name, expected))) in kernel.iter().zip(spec).enumerate() {
        if size != expected {
            return refuse(format!(
                "parameter {} of the kernel is {size} bytes, but the spec's argument `{name}` is {expected} bytes (a buffer is an 8-byte pointer; a scalar has its dtype's size)",
                index + 1
            ));
        }
    }
    Ok(())
}

/// How the driver makes a texture argument: its array's format and shape, and its sampling.
fn texture_desc(arg: &crate::gpu::Arg) -> Result<TextureDesc, String> {
    use crate::spec::{TextureAddress, TextureFilter, TextureLayout, TextureRead};
    use cudarc::driver::sys::{self, CUaddress_mode, CUarray_format, CUfilter_mode};
    let crate::gpu::Arg::Texture { dtype, extent, layout, channels, filter, address, normalized_coords, read, .. } = arg else {
        return Err("not a texture".into());
    };
    let format = match dtype {
        Dtype::F16 => CUarray_format::CU_AD_FORMAT_HALF,
        Dtype::F32 => CUarray_format::CU_AD_FORMAT_FLOAT,
        Dtype::I8 => CUarray_format::CU_AD_FORMAT_SIGNED_INT8,
        Dtype::I16 => CUarray_format::CU_AD_FORMAT_SIGNED_INT16,
        Dtype::I32 => CUarray_format::CU_AD_FORMAT_SIGNED_INT32,
        Dtype::U8 => CUarray_format::CU_AD_FORMAT_UNSIGNED_INT8,
        Dtype::U16 => CUarray_format::CU_AD_FORMAT_UNSIGNED_INT16,
        Dtype::U32 => CUarray_format::CU_AD_FORMAT_UNSIGNED_INT32,
        other => return Err(format!("CUDA textures cannot hold {other:?} texels")),
    };
    let size = |i: usize| extent.get(i).map_or(0, |&n| n as usize);
    let (array, array_flags) = match (layout, extent.len()) {
        (TextureLayout::Linear, 1) => (None, 0),
        (TextureLayout::Array, 1..=3) => (Some([size(0), size(1), size(2)]), 0),
        (TextureLayout::Layered, 2) => (Some([size(0), 0, size(1)]), sys::CUDA_ARRAY3D_LAYERED),
        (TextureLayout::Layered, 3) => (Some([size(0), size(1), size(2)]), sys::CUDA_ARRAY3D_LAYERED),
        (TextureLayout::Cubemap, 3) => (Some([size(0), size(1), size(2)]), sys::CUDA_ARRAY3D_CUBEMAP),
        (layout, dims) => return Err(format!("a {layout:?} texture cannot have {dims} extents")),
    };
    let mut flags = 0;
    if *normalized_coords {
        flags |= sys::CU_TRSF_NORMALIZED_COORDINATES;
    }
    if *read == TextureRead::Element && !dtype.is_float() {
        flags |= sys::CU_TRSF_READ_AS_INTEGER;
    }
    Ok(TextureDesc {
        format,
        channels: *channels,
        texel_bytes: element_bytes(*dtype) * *channels as usize,
        array,
        array_flags,
        address: match address {
            TextureAddress::Clamp => CUaddress_mode::CU_TR_ADDRESS_MODE_CLAMP,
            TextureAddress::Wrap => CUaddress_mode::CU_TR_ADDRESS_MODE_WRAP,
            TextureAddress::Mirror => CUaddress_mode::CU_TR_ADDRESS_MODE_MIRROR,
            TextureAddress::Border => CUaddress_mode::CU_TR_ADDRESS_MODE_BORDER,
        },
        filter: match filter {
            TextureFilter::Point => CUfilter_mode::CU_TR_FILTER_MODE_POINT,
            TextureFilter::Linear => CUfilter_mode::CU_TR_FILTER_MODE_LINEAR,
        },
        flags,
    })
}

/// The captured bytes of a buffer of `bytes` bytes: as many as both have.
fn read_captured(data: &crate::gpu::CapturedData, bytes: usize) -> Result<Vec<u8>, String> {
    use std::io::{Read, Seek, SeekFrom};
    let len = (data.bytes as usize).min(bytes);
    let mut file = std::fs::File::open(&data.file).map_err(|e| format!("cannot open the capture {}: {e}", data.file.display()))?;
    let mut captured = vec![0u8; len];
    file.seek(SeekFrom::Start(data.offset))
        .and_then(|_| file.read_exact(&mut captured))
        .map_err(|e| format!("cannot read {len} captured bytes from {}: {e}", data.file.display()))?;
    Ok(captured)
}

/// The device side of a problem's buffers and textures, made one argument at a time.
struct Placed<'p> {
    label: &'p str,
    harness: &'p Harness,
    keep_first_run: bool,
    buffers: Vec<Buffer>,
    textures: Vec<Texture>,
}

impl Placed<'_> {
    fn refuse(&self, message: String) -> Failure {
        Failure::new(FailureKind::Worker, format!("problem `{}`: {message}", self.label))
    }

    fn allocate(&self, name: &str, bytes: usize) -> Result<DeviceBuffer, Failure> {
        DeviceBuffer::new(bytes).map_err(|f| self.refuse(format!("cannot allocate {bytes} bytes for buffer `{name}`: {}", f.describe())))
    }

    /// Makes `arg` on the device and returns what the kernel is passed: a buffer's address, a
    /// scalar's bytes or a texture's handle (in the low bytes of the slot), and its size.
    fn place(&mut self, arg: &crate::gpu::Arg, seed: u64) -> Result<(u64, usize), Failure> {
        match arg {
            crate::gpu::Arg::Buffer { name, dtype, length, role, init, tolerance, data, compare } => {
                check_init(init).map_err(|why| self.refuse(format!("buffer `{name}`: {why}")))?;
                let bytes = usize::try_from(*length)
                    .ok()
                    .and_then(|n| n.checked_mul(element_bytes(*dtype)))
                    .ok_or_else(|| self.refuse(format!("buffer `{name}` of {length} elements is too large")))?;
                let device = self.allocate(name, bytes + GUARD_BYTES)?;
                let written = *role != Role::Input;
                let expected = if written { Some(self.allocate(name, bytes)?) } else { None };
                let first_run = if written && self.keep_first_run { Some(self.allocate(name, bytes)?) } else { None };
                let captured = match data.as_ref().filter(|_| *role != Role::Output) {
                    Some(data) => {
                        let bytes_read = read_captured(data, bytes).map_err(|why| self.refuse(format!("buffer `{name}`: {why}")))?;
                        let captured = self.allocate(name, bytes_read.len())?;
                        captured.upload(&bytes_read).map_err(|f| self.refuse(format!("cannot upload the captured bytes of `{name}`: {}", f.describe())))?;
                        Some(captured)
                    }
                    None => None,
                };
                let address = device.pointer();
                self.buffers.push(Buffer {
                    name: name.clone(),
                    dtype: *dtype,
                    length: *length,
                    role: *role,
                    init: init.clone(),
                    seed,
                    tolerance: tolerance.clone(),
                    bytes,
                    device,
                    expected,
                    first_run,
                    captured,
                    compare: *compare,
                });
                Ok((address, std::mem::size_of::<u64>()))
            }
            crate::gpu::Arg::Scalar { name, dtype, value } => Ok((pack_scalar(name, *dtype, *value).map_err(|why| self.refuse(why))?, element_bytes(*dtype))),
            crate::gpu::Arg::Texture { name, dtype, init, .. } => {
                check_init(init).map_err(|why| self.refuse(format!("texture `{name}`: {why}")))?;
                let desc = texture_desc(arg).map_err(|why| self.refuse(format!("texture `{name}`: {why}")))?;
                let data = self.allocate(name, arg.device_bytes() as usize)?;
                let making = |f: DriverFailure| self.refuse(format!("cannot make texture `{name}`: {}", f.describe()));
                self.harness.fill(&data, *dtype, init, arg.values(), seed).map_err(making)?;
                let object = TextureObject::over(&data, &desc).map_err(making)?;
                let handle = object.handle();
                self.textures.push(Texture { _object: object, _data: data });
                Ok((handle, std::mem::size_of::<u64>()))
            }
            crate::gpu::Arg::Struct { name, .. } => Err(self.refuse(format!("struct `{name}` is inside another struct; name its members by their path instead"))),
        }
    }
}

impl ProblemData {
    fn allocate(problem: &Problem, harness: &Harness, keep_first_run: bool) -> Result<ProblemData, Failure> {
        let mut placed = Placed { label: &problem.label, harness, keep_first_run, buffers: Vec::new(), textures: Vec::new() };
        // Each buffer, scalar and texture gets its own seed, drawn in argument order from the
        // problem's seed (a struct's fields in its place).
        let mut seeds = SplitMix64::new(problem.seed);
        let (mut parameters, mut parameter_sizes) = (Vec::new(), Vec::new());
        for arg in &problem.args {
            match arg {
                crate::gpu::Arg::Struct { name, bytes, fields } => {
                    let mut packed = vec![0u8; usize::try_from(*bytes).map_err(|_| placed.refuse(format!("struct `{name}` of {bytes} bytes is too large")))?];
                    for field in fields {
                        let (slot, size) = placed.place(&field.arg, seeds.next_u64())?;
                        let at = usize::try_from(field.offset).ok().filter(|&at| at + size <= packed.len());
                        let at = at.ok_or_else(|| placed.refuse(format!("field `{}` at byte {} lies outside struct `{name}` of {bytes} bytes", field.arg.name(), field.offset)))?;
                        packed[at..at + size].copy_from_slice(&slot.to_le_bytes()[..size]);
                    }
                    parameters.push(packed.chunks(8).map(|word| word.iter().rev().fold(0u64, |n, &b| (n << 8) | u64::from(b))).collect());
                    parameter_sizes.push((name.clone(), packed.len()));
                }
                arg => {
                    let (slot, size) = placed.place(arg, seeds.next_u64())?;
                    parameters.push(vec![slot]);
                    parameter_sizes.push((arg.name().to_string(), size));
                }
            }
        }
        let Placed { buffers, textures, .. } = placed;
        let written = buffers.iter().filter(|b| b.role != Role::Input).count();
        let summaries = DeviceBuffer::new((written + buffers.len()) * SUMMARY_BYTES)
            .map_err(|f| Failure::new(FailureKind::Worker, format!("problem `{}`: cannot allocate the comparison summaries: {}", problem.label, f.describe())))?;
        Ok(ProblemData { label: problem.label.clone(), buffers, _textures: textures, parameters, parameter_sizes, summaries })
    }

    /// The output and in-out buffers, in argument order.
    fn written(&self) -> impl Iterator<Item = &Buffer> {
        self.buffers.iter().filter(|b| b.role != Role::Input)
    }

    /// Fills the inputs and in-outs anew (a kernel may have written them), poisons the outputs,
    /// sets the guards and shared memory, runs the kernel once and waits for it, so that a
    /// fault is this kernel's.
    fn run_once(&self, harness: &Harness, setup: Setup, function: Function, dims: &LaunchDims) -> Result<(), Failure> {
        let setting_up = format!("while setting up problem `{}`", self.label);
        for (index, buffer) in self.buffers.iter().enumerate() {
            let other_bytes = setup.reseeded == Some(index);
            let seed = if other_bytes { buffer.seed ^ RESEED } else { buffer.seed };
            match buffer.role {
                Role::Output => buffer.device.fill(POISON),
                // A capture shorter than the buffer leaves the fill in the rest.
                Role::Input | Role::InOut => harness
                    .fill(&buffer.device, buffer.dtype, &buffer.init, buffer.length, seed)
                    .and_then(|()| match buffer.captured.as_ref().filter(|_| !other_bytes) {
                        Some(captured) => buffer.device.copy_from(captured),
                        None => Ok(()),
                    }),
            }
            .and_then(|()| buffer.device.fill_from(buffer.bytes, GUARD))
            .map_err(Failure::driver(FailureKind::Worker, &setting_up))?;
        }
        harness.poison_shared(setup.shared_pattern).map_err(Failure::driver(FailureKind::Worker, &setting_up))?;
        let launching = format!(
            "launching on problem `{}` (grid {:?}, block {:?}, {} bytes of dynamic shared memory)",
            self.label, dims.grid, dims.block, dims.shared_bytes
        );
        function.launch_words(dims, &mut self.parameters.clone()).map_err(Failure::driver(FailureKind::Launch, &launching))?;
        let running = format!("on problem `{}`", self.label);
        cuda::synchronize().map_err(Failure::driver(FailureKind::Launch, &running))
    }

    /// Copies the outputs of the run just made to `copy(buffer)`.
    fn keep(&self, what: &str, copy: impl Fn(&Buffer) -> Option<&DeviceBuffer>) -> Result<(), Failure> {
        let keeping = format!("keeping the {what} outputs of problem `{}`", self.label);
        for buffer in self.written() {
            if let Some(copy) = copy(buffer) {
                copy.copy_from(&buffer.device).map_err(Failure::driver(FailureKind::Worker, &keeping))?;
            }
        }
        Ok(())
    }

    fn keep_baseline(&self) -> Result<(), Failure> {
        self.keep("baseline's", |b| b.expected.as_ref())
    }

    fn keep_first_run(&self) -> Result<(), Failure> {
        self.keep("first run's", |b| b.first_run.as_ref())
    }

    /// Queues the comparison of every written buffer with `reference`, and of every buffer's
    /// guard bytes with `guard`, into `summaries`.
    fn compare(&self, harness: &Harness, guard: &DeviceBuffer, reference: Reference) -> Result<(), Failure> {
        let comparing = format!("comparing the outputs of problem `{}`", self.label);
        let failed = || Failure::driver(FailureKind::Worker, &comparing);
        let slots = self.written().count() + self.buffers.len();
        let start: Vec<u8> = (0..slots).flat_map(|_| SUMMARY_START).collect();
        self.summaries.upload(&start).map_err(failed())?;
        let summary = |slot: usize| self.summaries.pointer() + (slot * SUMMARY_BYTES) as u64;
        for (slot, buffer) in self.written().enumerate() {
            let Some(expected) = buffer.reference(reference).filter(|_| buffer.compare == Compare::Elements) else { continue };
            let tolerance = buffer.tolerance_against(reference);
            harness.compare(expected.pointer(), buffer.device.pointer(), buffer.dtype, buffer.length, &tolerance, summary(slot)).map_err(failed())?;
        }
        let exact = Tolerance { dtype: Dtype::U8, atol: 0.0, rtol: 0.0 };
        for (index, buffer) in self.buffers.iter().enumerate() {
            let after = buffer.device.pointer() + buffer.bytes as u64;
            harness.compare(guard.pointer(), after, Dtype::U8, GUARD_BYTES as u64, &exact, summary(self.written().count() + index)).map_err(failed())?;
        }
        Ok(())
    }
}

/// Times one launch: warm-up runs, then batches of timed runs until the [`Sampler`] is
/// satisfied. Each timed run is preceded by an L2 flush and bracketed by its own pair of
/// events, so the flush is outside the timed region and runs never overlap. `None` only when
/// the policy allows no run.
fn time(gpu: &Gpu, function: Function, dims: &LaunchDims, parameters: &[Vec<u64>], policy: &TimingPolicy, cutoff_us: Option<f64>) -> cuda::CudaResult<Option<Timing>> {
    let mut slots = parameters.to_vec();
    let warming = Instant::now();
    for _ in 0..policy.warmup_runs {
        function.launch_words(dims, &mut slots)?;
    }
    cuda::synchronize()?;
    let estimate_us = (policy.warmup_runs > 0).then(|| warming.elapsed().as_secs_f64() * 1e6 / policy.warmup_runs as f64);
    let mut sampler = Sampler::new(policy, estimate_us, cutoff_us);
    let mut events: Vec<(Event, Event)> = Vec::new();
    let started = Instant::now();
    loop {
        let runs = sampler.next_batch(started.elapsed()) as usize;
        if runs == 0 {
            break;
        }
        while events.len() < runs {
            events.push((Event::new()?, Event::new()?));
        }
        for (run, (start, end)) in events[..runs].iter().enumerate() {
            if policy.flush_l2 {
                gpu.l2_flush.fill(run as u8)?;
            }
            start.record()?;
            function.launch_words(dims, &mut slots)?;
            end.record()?;
        }
        events[runs - 1].1.synchronize()?;
        let batch = events[..runs].iter().map(|(start, end)| start.elapsed_ms(end).map(|ms| ms as f64 * 1000.0)).collect::<Result<Vec<_>, _>>()?;
        sampler.record_batch(&batch);
    }
    Ok(sampler.timing())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_are_checked_by_count_and_size() {
        let spec = vec![("out".to_string(), 8), ("in".to_string(), 8), ("n".to_string(), 4)];
        assert!(check_signature(&[8, 8, 4], &spec).is_ok());
        let failure = check_signature(&[8, 8], &spec).unwrap_err();
        assert_eq!(failure.kind, FailureKind::Launch);
        assert!(failure.message.contains("takes 2 parameters, but the spec gives 3 arguments (out, in, n)"), "{}", failure.message);
        let failure = check_signature(&[8, 8, 8], &spec).unwrap_err();
        assert!(failure.message.contains("parameter 3 of the kernel is 8 bytes, but the spec's argument `n` is 4 bytes"), "{}", failure.message);
    }

    fn texture(dtype: Dtype, extent: Vec<u64>, layout: crate::spec::TextureLayout, read: crate::spec::TextureRead) -> crate::gpu::Arg {
        crate::gpu::Arg::Texture {
            name: "tex".into(),
            dtype,
            extent,
            layout,
            channels: 4,
            filter: crate::spec::TextureFilter::Point,
            address: crate::spec::TextureAddress::Clamp,
            normalized_coords: false,
            read,
            init: Init::Integers { low: 0, high: 128 },
        }
    }

    #[test]
    fn textures_become_arrays_of_their_layout_and_read_integers_as_integers() {
        use crate::spec::{TextureLayout, TextureRead};
        use cudarc::driver::sys;
        let layered = texture_desc(&texture(Dtype::U8, vec![64, 8], TextureLayout::Layered, TextureRead::Element)).unwrap();
        assert_eq!((layered.array, layered.array_flags, layered.texel_bytes), (Some([64, 0, 8]), sys::CUDA_ARRAY3D_LAYERED, 4));
        assert_eq!(layered.flags, sys::CU_TRSF_READ_AS_INTEGER);
        let normalized = texture_desc(&texture(Dtype::U8, vec![64, 32], TextureLayout::Array, TextureRead::NormalizedFloat)).unwrap();
        assert_eq!((normalized.array, normalized.flags), (Some([64, 32, 0]), 0));
        let cube = texture_desc(&texture(Dtype::F32, vec![16, 16, 6], TextureLayout::Cubemap, TextureRead::Element)).unwrap();
        assert_eq!((cube.array, cube.array_flags, cube.flags, cube.texel_bytes), (Some([16, 16, 6]), sys::CUDA_ARRAY3D_CUBEMAP, 0, 16));
        assert!(texture_desc(&texture(Dtype::F32, vec![16], TextureLayout::Linear, TextureRead::Element)).unwrap().array.is_none());
        let cube_texels = texture(Dtype::F32, vec![16, 16, 6], TextureLayout::Cubemap, TextureRead::Element);
        assert_eq!((cube_texels.values(), cube_texels.device_bytes()), (16 * 16 * 6 * 4, 16 * 16 * 6 * 4 * 4));
        assert!(texture_desc(&texture(Dtype::F64, vec![16], TextureLayout::Array, TextureRead::Element)).is_err_and(|why| why.contains("F64")));
    }
}
