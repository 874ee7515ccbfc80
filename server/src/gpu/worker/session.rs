//! One tuning session on the device: every problem's buffers, the baseline's outputs, and
//! checking (on the device, with the harness) and timing a kernel against them.

use std::time::Instant;

use crate::gpu::protocol::TimingPolicy;
use crate::gpu::{FailureKind, Kernel, LaunchDims, Outcome, Problem, Timing, Verdict};
use crate::space::SplitMix64;
use crate::spec::{Dtype, Init, Role, Tolerance};

use super::compare::{BufferComparison, VerdictBuilder};
use super::cuda::{self, DeviceBuffer, DriverFailure, Event, Function, LoadedModule};
use super::data::{check_init, decode, element_bytes, pack_scalar};
use super::device::Gpu;
use super::harness::{Harness, Summary, SUMMARY_BYTES, SUMMARY_START};
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
/// an element the kernel fails to write shows up as a mismatch.
const POISON: u8 = 0xFF;

struct Buffer {
    name: String,
    dtype: Dtype,
    length: u64,
    role: Role,
    init: Init,
    /// The seed of its contents: inputs and in-outs are filled anew before every checked run.
    seed: u64,
    tolerance: Tolerance,
    device: DeviceBuffer,
    /// Outputs and in-outs: the baseline's result, which candidates are compared with.
    expected: Option<DeviceBuffer>,
}

struct ProblemData {
    label: String,
    buffers: Vec<Buffer>,
    /// One slot per kernel parameter, in order: a buffer's device address or a scalar's bytes.
    parameters: Vec<u64>,
    /// Each parameter's name and size in bytes, to check the kernel's signature against.
    parameter_sizes: Vec<(String, usize)>,
    /// One comparison summary per output or in-out buffer, in argument order.
    summaries: DeviceBuffer,
}

/// The problems of one `Prepare`, on the device, with the kernels that fill and check them.
pub struct Session {
    problems: Vec<ProblemData>,
    harness: Harness,
}

impl Session {
    /// Allocates every problem, then runs and times the baseline on them and
    /// keeps its outputs on the device.
    pub fn prepare(gpu: &Gpu, problems: &[Problem], baseline: &Kernel, harness: Harness, policy: &TimingPolicy) -> Result<(Session, Vec<Timing>), Failure> {
        let problems = problems.iter().map(ProblemData::allocate).collect::<Result<Vec<_>, _>>()?;
        let session = Session { problems, harness };
        let timings = session.run(gpu, baseline, policy, &[], |problem| {
            let keeping = format!("keeping the baseline's outputs of problem `{}`", problem.label);
            for buffer in problem.written() {
                if let Some(expected) = &buffer.expected {
                    expected.copy_from(&buffer.device).map_err(Failure::driver(FailureKind::Worker, &keeping))?;
                }
            }
            Ok(())
        })?;
        Ok((session, timings))
    }

    /// Checks `kernel` against the baseline's outputs and times it; `cutoff_us` (per problem,
    /// may be empty) races it against the best so far.
    pub fn measure(&self, gpu: &Gpu, kernel: &Kernel, policy: &TimingPolicy, cutoff_us: &[f64]) -> Outcome {
        let timings = self.run(gpu, kernel, policy, cutoff_us, |problem| problem.compare(&self.harness));
        match timings.and_then(|timings| Ok((timings, self.verdict()?))) {
            Ok((timings, verdict)) => Outcome::Measured { timings, verdict },
            Err(failure) => Outcome::Failed { kind: failure.kind, message: failure.message },
        }
    }

    /// Reads the comparisons queued by [`ProblemData::compare`]: the summaries, and for a
    /// mismatch the two elements at its first index.
    fn verdict(&self) -> Result<Verdict, Failure> {
        let mut verdict = VerdictBuilder::default();
        for (index, problem) in self.problems.iter().enumerate() {
            let reading = format!("reading the comparison of problem `{}`", problem.label);
            let read = Failure::driver(FailureKind::Worker, &reading);
            let summaries = problem.summaries.read(0, usize::MAX).map_err(read)?;
            for (buffer, summary) in problem.written().zip(summaries.chunks_exact(SUMMARY_BYTES)) {
                let summary = Summary::read(summary);
                let first_mismatch = match (summary.first_index, &buffer.expected) {
                    (Some(at), Some(expected)) => {
                        let size = element_bytes(buffer.dtype);
                        let offset = usize::try_from(at).unwrap_or(usize::MAX).saturating_mul(size);
                        let read = |b: &DeviceBuffer| b.read(offset, size).map_err(Failure::driver(FailureKind::Worker, &reading));
                        let (want, got) = (read(expected)?, read(&buffer.device)?);
                        Some((at, decode(buffer.dtype, &want).as_f64(), decode(buffer.dtype, &got).as_f64()))
                    }
                    _ => None,
                };
                let comparison = BufferComparison {
                    first_mismatch,
                    mismatches: summary.mismatches,
                    max_abs_error: summary.max_abs_error,
                    max_rel_error: summary.max_rel_error,
                };
                verdict.add(index, &buffer.name, comparison);
            }
        }
        Ok(verdict.finish())
    }

    /// Per problem: one checked run, then `checked` (which queues work on its outputs), then the
    /// timed runs. Returns the timing of each problem.
    fn run(&self, gpu: &Gpu, kernel: &Kernel, policy: &TimingPolicy, cutoff_us: &[f64], mut checked: impl FnMut(&ProblemData) -> Result<(), Failure>) -> Result<Vec<Timing>, Failure> {
        if kernel.launches.len() != self.problems.len() {
            return Err(Failure::new(
                FailureKind::Worker,
                format!("the kernel comes with {} launches for {} problems; the tuner must send one per problem", kernel.launches.len(), self.problems.len()),
            ));
        }
        let cubin = &kernel.module.cubin;
        let image = std::fs::read(cubin).map_err(|e| Failure::new(FailureKind::Worker, format!("cannot read the cubin {}: {e}", cubin.display())))?;
        let loading = format!("loading the cubin {}", cubin.display());
        // Unloaded when dropped, at the end of this function.
        let module = LoadedModule::load(&image).map_err(Failure::driver(FailureKind::Launch, &loading))?;
        let name = &kernel.module.function;
        let function = module.function(name).map_err(Failure::driver(FailureKind::Launch, &loading))?.ok_or_else(|| {
            Failure::new(
                FailureKind::Launch,
                format!("the cubin {} has no kernel named `{name}` (the name must be the lowered, mangled one)", cubin.display()),
            )
        })?;
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
            problem.run_once(&self.harness, function, dims)?;
            checked(problem)?;
            let what = format!("while timing problem `{}`", problem.label);
            let timing = time(gpu, function, dims, &problem.parameters, policy, cutoff_us.get(index).copied()).map_err(Failure::driver(FailureKind::Launch, &what))?;
            timings.push(timing.ok_or_else(|| Failure::new(FailureKind::Worker, "the timing policy allows no timed run".into()))?);
        }
        Ok(timings)
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

impl ProblemData {
    fn allocate(problem: &Problem) -> Result<ProblemData, Failure> {
        let refuse = |message| Failure::new(FailureKind::Worker, format!("problem `{}`: {message}", problem.label));
        let allocate = |name: &str, bytes: usize| {
            DeviceBuffer::new(bytes).map_err(|f| refuse(format!("cannot allocate {bytes} bytes for buffer `{name}`: {}", f.describe())))
        };
        // Each argument gets its own seed, drawn in argument order from the problem's seed.
        let mut seeds = SplitMix64::new(problem.seed);
        let (mut buffers, mut parameters, mut parameter_sizes) = (Vec::new(), Vec::new(), Vec::new());
        for arg in &problem.args {
            let seed = seeds.next_u64();
            match arg {
                crate::gpu::Arg::Buffer { name, dtype, length, role, init, tolerance } => {
                    check_init(init).map_err(|why| refuse(format!("buffer `{name}`: {why}")))?;
                    let bytes = usize::try_from(*length)
                        .ok()
                        .and_then(|n| n.checked_mul(element_bytes(*dtype)))
                        .ok_or_else(|| refuse(format!("buffer `{name}` of {length} elements is too large")))?;
                    let device = allocate(name, bytes)?;
                    let expected = if *role == Role::Input { None } else { Some(allocate(name, bytes)?) };
                    parameters.push(device.pointer());
                    parameter_sizes.push((name.clone(), std::mem::size_of::<u64>()));
                    buffers.push(Buffer { name: name.clone(), dtype: *dtype, length: *length, role: *role, init: init.clone(), seed, tolerance: tolerance.clone(), device, expected });
                }
                crate::gpu::Arg::Scalar { name, dtype, value } => {
                    parameters.push(pack_scalar(name, *dtype, *value).map_err(refuse)?);
                    parameter_sizes.push((name.clone(), element_bytes(*dtype)));
                }
            }
        }
        let written = buffers.iter().filter(|b| b.role != Role::Input).count();
        let summaries = allocate("(comparison summaries)", written * SUMMARY_BYTES)?;
        Ok(ProblemData { label: problem.label.clone(), buffers, parameters, parameter_sizes, summaries })
    }

    /// The output and in-out buffers, in argument order.
    fn written(&self) -> impl Iterator<Item = &Buffer> {
        self.buffers.iter().filter(|b| b.role != Role::Input)
    }

    /// Fills the inputs and in-outs anew (a kernel may have written them), poisons the outputs,
    /// runs the kernel once and waits for it, so that a fault is this kernel's.
    fn run_once(&self, harness: &Harness, function: Function, dims: &LaunchDims) -> Result<(), Failure> {
        let setting_up = format!("while setting up problem `{}`", self.label);
        for buffer in &self.buffers {
            match buffer.role {
                Role::Output => buffer.device.fill(POISON),
                Role::Input | Role::InOut => harness.fill(&buffer.device, buffer.dtype, &buffer.init, buffer.length, buffer.seed),
            }
            .map_err(Failure::driver(FailureKind::Worker, &setting_up))?;
        }
        let launching = format!(
            "launching on problem `{}` (grid {:?}, block {:?}, {} bytes of dynamic shared memory)",
            self.label, dims.grid, dims.block, dims.shared_bytes
        );
        function.launch(dims, &mut self.parameters.clone()).map_err(Failure::driver(FailureKind::Launch, &launching))?;
        let running = format!("on problem `{}`", self.label);
        cuda::synchronize().map_err(Failure::driver(FailureKind::Launch, &running))
    }

    /// Queues the comparison of every written buffer with the baseline's, into `summaries`.
    fn compare(&self, harness: &Harness) -> Result<(), Failure> {
        let comparing = format!("comparing the outputs of problem `{}`", self.label);
        let failed = || Failure::driver(FailureKind::Worker, &comparing);
        let start: Vec<u8> = self.written().flat_map(|_| SUMMARY_START).collect();
        self.summaries.upload(&start).map_err(failed())?;
        for (slot, buffer) in self.written().enumerate() {
            let Some(expected) = &buffer.expected else { continue };
            let summary = self.summaries.pointer() + (slot * SUMMARY_BYTES) as u64;
            harness.compare(expected, &buffer.device, buffer.dtype, buffer.length, &buffer.tolerance, summary).map_err(failed())?;
        }
        Ok(())
    }
}

/// Times one launch: warm-up runs, then batches of timed runs until the [`Sampler`] is
/// satisfied. Each timed run is preceded by an L2 flush and bracketed by its own pair of
/// events, so the flush is outside the timed region and runs never overlap. `None` only when
/// the policy allows no run.
fn time(gpu: &Gpu, function: Function, dims: &LaunchDims, parameters: &[u64], policy: &TimingPolicy, cutoff_us: Option<f64>) -> cuda::CudaResult<Option<Timing>> {
    let mut slots = parameters.to_vec();
    let warming = Instant::now();
    for _ in 0..policy.warmup_runs {
        function.launch(dims, &mut slots)?;
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
            function.launch(dims, &mut slots)?;
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
}
