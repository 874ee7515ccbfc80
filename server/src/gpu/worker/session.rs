//! One tuning session on the device: every problem's buffers, the baseline's outputs, and
//! checking and timing a kernel against them.

use std::time::Instant;

use crate::gpu::protocol::TimingPolicy;
use crate::gpu::{FailureKind, Kernel, LaunchDims, Outcome, Problem, Timing};
use crate::space::SplitMix64;
use crate::spec::{Dtype, Role, Tolerance};

use super::compare::{compare, VerdictBuilder};
use super::cuda::{self, DeviceBuffer, DriverFailure, Event, Function, LoadedModule};
use super::data::{element_bytes, pack_scalar, synthesize};
use super::device::Gpu;
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
    role: Role,
    tolerance: Tolerance,
    device: DeviceBuffer,
    /// The seeded initial contents of inputs and in-outs, restored before every checked run.
    pristine: Option<Vec<u8>>,
}

struct ProblemData {
    label: String,
    buffers: Vec<Buffer>,
    /// One slot per kernel parameter, in order: a buffer's device address or a scalar's bytes.
    parameters: Vec<u64>,
    /// Each parameter's name and size in bytes, to check the kernel's signature against.
    parameter_sizes: Vec<(String, usize)>,
    /// The baseline's outputs: one per output or in-out buffer, in argument order.
    expected: Vec<Vec<u8>>,
}

/// The problems of one `Prepare`, on the device.
pub struct Session {
    problems: Vec<ProblemData>,
}

/// The outputs of one checked run per problem, and the timing of each problem.
type Results = (Vec<Vec<Vec<u8>>>, Vec<Timing>);

impl Session {
    /// Allocates and fills every problem, then runs and times the baseline on them.
    pub fn prepare(gpu: &Gpu, problems: &[Problem], baseline: &Kernel, policy: &TimingPolicy) -> Result<(Session, Vec<Timing>), Failure> {
        let problems = problems.iter().map(ProblemData::allocate).collect::<Result<Vec<_>, _>>()?;
        let mut session = Session { problems };
        let (outputs, timings) = session.run(gpu, baseline, policy)?;
        for (problem, outputs) in session.problems.iter_mut().zip(outputs) {
            problem.expected = outputs;
        }
        Ok((session, timings))
    }

    /// Checks `kernel` against the baseline's outputs and times it.
    pub fn measure(&self, gpu: &Gpu, kernel: &Kernel, policy: &TimingPolicy) -> Outcome {
        let (outputs, timings) = match self.run(gpu, kernel, policy) {
            Ok(results) => results,
            Err(failure) => return Outcome::Failed { kind: failure.kind, message: failure.message },
        };
        let mut verdict = VerdictBuilder::default();
        for (index, (problem, outputs)) in self.problems.iter().zip(&outputs).enumerate() {
            let written = problem.buffers.iter().filter(|b| b.role != Role::Input);
            for ((buffer, expected), actual) in written.zip(&problem.expected).zip(outputs) {
                verdict.add(index, &buffer.name, compare(buffer.dtype, &buffer.tolerance, expected, actual));
            }
        }
        Outcome::Measured { timings, verdict: verdict.finish() }
    }

    /// Per problem: one checked run (its outputs are returned), then the timed runs.
    fn run(&self, gpu: &Gpu, kernel: &Kernel, policy: &TimingPolicy) -> Result<Results, Failure> {
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
        let mut outputs = Vec::with_capacity(self.problems.len());
        let mut timings = Vec::with_capacity(self.problems.len());
        for (problem, dims) in self.problems.iter().zip(&kernel.launches) {
            outputs.push(problem.run_once(function, dims)?);
            let what = format!("while timing problem `{}`", problem.label);
            let timing = time(gpu, function, dims, &problem.parameters, policy).map_err(Failure::driver(FailureKind::Launch, &what))?;
            timings.push(timing.ok_or_else(|| Failure::new(FailureKind::Worker, "the timing policy allows no timed run".into()))?);
        }
        Ok((outputs, timings))
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
        // Each argument gets its own seed, drawn in argument order from the problem's seed.
        let mut seeds = SplitMix64::new(problem.seed);
        let mut data = ProblemData { label: problem.label.clone(), buffers: Vec::new(), parameters: Vec::new(), parameter_sizes: Vec::new(), expected: Vec::new() };
        for arg in &problem.args {
            let seed = seeds.next_u64();
            match arg {
                crate::gpu::Arg::Buffer { name, dtype, length, role, init, tolerance } => {
                    let bytes = usize::try_from(*length)
                        .ok()
                        .and_then(|n| n.checked_mul(element_bytes(*dtype)))
                        .ok_or_else(|| refuse(format!("buffer `{name}` of {length} elements is too large")))?;
                    let device = DeviceBuffer::new(bytes)
                        .map_err(|f| refuse(format!("cannot allocate {bytes} bytes for buffer `{name}`: {}", f.describe())))?;
                    let pristine = match role {
                        Role::Output => None,
                        Role::Input | Role::InOut => {
                            Some(synthesize(*dtype, init, *length, seed).map_err(|why| refuse(format!("buffer `{name}`: {why}")))?)
                        }
                    };
                    data.parameters.push(device.pointer());
                    data.parameter_sizes.push((name.clone(), std::mem::size_of::<u64>()));
                    data.buffers.push(Buffer { name: name.clone(), dtype: *dtype, role: *role, tolerance: tolerance.clone(), device, pristine });
                }
                crate::gpu::Arg::Scalar { name, dtype, value } => {
                    data.parameters.push(pack_scalar(name, *dtype, *value).map_err(refuse)?);
                    data.parameter_sizes.push((name.clone(), element_bytes(*dtype)));
                }
            }
        }
        Ok(data)
    }

    /// Restores the inputs, poisons the outputs, runs the kernel once and returns what it wrote
    /// (the output and in-out buffers, in argument order).
    fn run_once(&self, function: Function, dims: &LaunchDims) -> Result<Vec<Vec<u8>>, Failure> {
        let setting_up = format!("while setting up problem `{}`", self.label);
        for buffer in &self.buffers {
            match &buffer.pristine {
                Some(data) => buffer.device.upload(data),
                None => buffer.device.fill(POISON),
            }
            .map_err(Failure::driver(FailureKind::Worker, &setting_up))?;
        }
        let launching = format!(
            "launching on problem `{}` (grid {:?}, block {:?}, {} bytes of dynamic shared memory)",
            self.label, dims.grid, dims.block, dims.shared_bytes
        );
        function.launch(dims, &mut self.parameters.clone()).map_err(Failure::driver(FailureKind::Launch, &launching))?;
        let running = format!("on problem `{}`", self.label);
        cuda::synchronize().map_err(Failure::driver(FailureKind::Launch, &running))?;
        let reading = format!("reading the outputs of problem `{}`", self.label);
        self.buffers
            .iter()
            .filter(|b| b.role != Role::Input)
            .map(|b| b.device.download().map_err(Failure::driver(FailureKind::Worker, &reading)))
            .collect()
    }
}

/// Times one launch: warm-up runs, then batches of timed runs until the [`Sampler`] is
/// satisfied. Each timed run is preceded by an L2 flush and bracketed by its own pair of
/// events, so the flush is outside the timed region and runs never overlap. `None` only when
/// the policy allows no run.
fn time(gpu: &Gpu, function: Function, dims: &LaunchDims, parameters: &[u64], policy: &TimingPolicy) -> cuda::CudaResult<Option<Timing>> {
    let mut slots = parameters.to_vec();
    let warming = Instant::now();
    for _ in 0..policy.warmup_runs {
        function.launch(dims, &mut slots)?;
    }
    cuda::synchronize()?;
    let estimate_us = (policy.warmup_runs > 0).then(|| warming.elapsed().as_secs_f64() * 1e6 / policy.warmup_runs as f64);
    let mut sampler = Sampler::new(policy, estimate_us);
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
