//! The baseline stage: the original kernel and the verification kernels, compiled side by side
//! with the search's first candidates, the baseline measured, and the speed-of-light bound the
//! run is judged against.

use std::collections::BTreeMap;

use anyhow::{anyhow, Context, Result};

use super::search_loop::{Feed, Proposals};
use super::{verification, Observer, Session, Tools};
use crate::gpu::{Kernel, Module, Runner, SettledRoles, Timing};
use crate::sol::{self, RunBound};
use crate::space::Configuration;
use crate::spec::{KernelSpec, Role};

/// Compiles the baseline (the original kernel) and the verification kernels ahead of the first
/// candidates, which the search proposes meanwhile, and has the runner measure the baseline.
/// Returns its timings, the baseline as the runner ran it, and the proposals that need no
/// compile.
pub(super) fn prepare(session: &Session, feed: &mut Feed, runner: &mut dyn Runner, observer: &mut dyn Observer) -> Result<(Vec<Timing>, Kernel, Proposals)> {
    let kernel = session.kernel;
    let (baseline_kernel, harness, early) = match &session.pool {
        Some(pool) => {
            const BASELINE: usize = usize::MAX;
            const HARNESS: usize = usize::MAX - 1;
            pool.submit(vec![(BASELINE, verification::baseline_request(kernel, &session.arch)), (HARNESS, verification::harness_request(&session.arch))]);
            let early = if observer.cancelled() { Vec::new() } else { feed.ask(session)? };
            let (mut baseline, mut harness) = (None, None);
            let mut candidates = Vec::new();
            while baseline.is_none() || harness.is_none() {
                let built = pool.recv().ok_or_else(|| anyhow!("the compiler threads stopped"))?;
                match built.id {
                    BASELINE => baseline = Some(built.result),
                    HARNESS => harness = Some(built.result),
                    _ => candidates.push(built),
                }
            }
            // Candidates that came back first (cached ones) are measured after the baseline.
            pool.put_back(candidates);
            let baseline = baseline.expect("received").map_err(|f| anyhow!("the baseline (the original `{}`) does not compile: {}\n{}", kernel.name, f.message, f.log.trim_end()))?;
            let harness = harness.expect("received").map_err(|f| anyhow!("cutune's verification kernels do not compile with this NVRTC: {}\n{}", f.message, f.log.trim_end()))?;
            let launches = session.compiled_launches(&Configuration::default_of(kernel), baseline.resources.as_ref()).map_err(|i| anyhow!("the baseline's launch: {}", i.reason))?;
            (Kernel { module: Module { cubin: baseline.cubin, function: baseline.function }, launches }, harness.cubin, early)
        }
        None => (Kernel { module: Module { cubin: Default::default(), function: kernel.name.clone() }, launches: Vec::new() }, Default::default(), Vec::new()),
    };
    let timings = runner.prepare(&session.problems, &baseline_kernel, &harness).with_context(|| format!("running the baseline `{}` on {}", kernel.name, session.device.name))?;
    Ok((timings, baseline_kernel, early))
}

/// The spec the bound is taken from: the in-out buffers that running the original again with
/// other initial bytes showed it only writes become outputs, counted once instead of twice.
/// Only a runner that runs code is asked, and only when the spec has in-out buffers and no
/// `bytes` of its own; the answer is returned for the report.
pub(super) fn settle_roles(kernel: &KernelSpec, runner: &mut dyn Runner, baseline: &Kernel) -> (KernelSpec, Option<SettledRoles>) {
    let in_out = kernel.leaf_args().any(|a| a.role == Some(Role::InOut));
    if !in_out || kernel.sol.bytes.is_some() || !runner.needs_code() {
        return (kernel.clone(), None);
    }
    let settled = runner.settle_roles(baseline);
    let mut counted = kernel.clone();
    if let SettledRoles::WrittenOnly { buffers } = &settled {
        for arg in &mut counted.args {
            if buffers.contains(&arg.name) {
                arg.role = Some(Role::Output);
            }
            // The worker names a struct's fields `params.x_ptr`.
            for field in arg.fields.iter_mut().filter(|f| buffers.contains(&format!("{}.{}", arg.name, f.name))) {
                field.role = Some(Role::Output);
            }
        }
    }
    (counted, Some(settled))
}

/// Why no configuration could pass, when every one gave wrong output and the original run
/// again does not give its own output either (threads racing, input it expects prepared:
/// a merge of runs it assumes sorted). `None` when something passed, a configuration failed
/// otherwise, or the runner runs no code.
pub(super) fn unsteady_original(passed: bool, failures: &BTreeMap<String, u64>, runner: &mut dyn Runner, baseline: &Kernel) -> Option<String> {
    const WRONG: &str = "wrong output";
    if passed || failures.is_empty() || failures.keys().any(|reason| reason != WRONG) || !runner.needs_code() {
        return None;
    }
    match runner.settle_roles(baseline) {
        SettledRoles::Undecided { why } => Some(why),
        SettledRoles::WrittenOnly { .. } => None,
    }
}

/// The speed-of-light bound of `kernel` on the runner's device: its ceilings are measured once
/// per device and cached; a replay uses those cached for its device, else the datasheet's,
/// labelled. An error says why there is none.
pub(super) fn speed_of_light(kernel: &KernelSpec, runner: &mut dyn Runner, tools: &Tools) -> Result<RunBound, String> {
    let ceilings = if runner.needs_code() {
        sol::ceilings_for(runner, tools.nvrtc, &tools.ceilings_dir, false).map_err(|e| format!("{e:#}"))
    } else {
        let device = runner.device().name.clone();
        sol::measured(runner, None, &tools.ceilings_dir, false)
            .map(|found| found.ceilings)
            .or_else(|_| sol::Ceilings::datasheet(&device).ok_or_else(|| format!("cutune has no datasheet figures for {device}")))
    };
    ceilings.and_then(|ceilings| RunBound::of(kernel, &ceilings))
}

/// The bound, unless the original kernel itself beats it: the bound counts every element of
/// each buffer as moved once, and a kernel that touches a few of them (a gather from a large
/// table) is faster than that. Flagging every configuration as faster than light would then
/// leave no winner; no bound is better than a wrong one.
pub(super) fn kept_by_the_original(bound: RunBound, baseline: &[crate::gpu::Timing]) -> Result<RunBound, String> {
    let time_us: f64 = baseline.iter().map(|t| t.median_us).sum();
    let spread = baseline.iter().map(|t| t.spread).fold(0.0, f64::max);
    if !baseline.is_empty() && bound.faster_than_light(time_us, spread) {
        return Err(format!(
            "the original runs in {time_us:.2} µs, under the {:.2} µs it takes to move every element of its buffers once, so it touches fewer (the spec's lengths are the buffers', not what the kernel reads)",
            bound.bound_us
        ));
    }
    Ok(bound)
}
