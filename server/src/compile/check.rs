//! Checking configurations without a GPU: each one's restrictions, then an NVRTC compile and
//! the limits only the compiled kernel reveals (registers, shared memory), against the
//! architecture's documented limits.

use std::time::Instant;

use serde::Serialize;

use super::{parallel_map, KernelResources, Nvrtc};
use crate::space::{self, Configuration};
use crate::spec::{self, KernelSpec};

/// One configuration, checked.
#[derive(Serialize, Clone)]
pub struct ConfigResult {
    pub config: Configuration,
    pub is_default: bool,
    pub status: Status,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resources: Option<KernelResources>,
    pub compile_ms: f64,
}

#[derive(Serialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Compiled,
    /// A restriction is false, or the compiled kernel cannot run on the architecture.
    Infeasible,
    /// NVRTC refused it: a fault of the source or the spec.
    Failed,
}

/// What a kernel's configurations are compiled from, for one architecture.
pub struct CheckTarget<'a> {
    pub nvrtc: &'a Nvrtc,
    pub kernel: &'a KernelSpec,
    pub shape: &'a spec::Shape,
    /// The device slice the configurations are compiled from.
    pub source: &'a str,
    pub arch: &'a str,
}

/// Checks every configuration: restrictions first, then a compile on a pool of `jobs` threads.
pub fn check_all(target: &CheckTarget, configs: &[Configuration], jobs: Option<usize>) -> Vec<ConfigResult> {
    let default = Configuration::default_of(target.kernel);
    // A spec whose launch cannot be evaluated yet (`?` sizes; the original's launch fails) is
    // compiled without the checks that need the launch.
    let launch_known = space::launch_dims(target.kernel, target.shape, &default).is_ok();
    parallel_map(configs, jobs, |config| check_one(target, config, *config == default, launch_known))
}

fn check_one(target: &CheckTarget, config: &Configuration, is_default: bool, launch_known: bool) -> ConfigResult {
    let CheckTarget { nvrtc, kernel, shape, source, arch } = *target;
    let mut result = ConfigResult { config: config.clone(), is_default, status: Status::Infeasible, reason: None, resources: None, compile_ms: 0.0 };
    if let Err(infeasible) = space::check_restrictions(kernel, shape, config).or_else(|e| if launch_known { Err(e) } else { restrictions_without_launch(kernel, shape, config) }) {
        result.reason = Some(infeasible.reason);
        return result;
    }
    let request = space::compile_request(kernel, source, arch, config);
    let started = Instant::now();
    let compiled = nvrtc.compile(&request);
    result.compile_ms = started.elapsed().as_secs_f64() * 1e3;
    match compiled {
        Err(failure) => match super::failure_reason(&failure.message, &failure.log) {
            reason @ super::FailureReason::StaticShared { .. } => {
                result.reason = Some(reason.to_string());
                result.resources = super::parse_resources(&failure.log).into_iter().next();
            }
            reason @ super::FailureReason::Error(_) => {
                result.status = Status::Failed;
                result.reason = Some(reason.to_string());
            }
        },
        Ok(output) => {
            let lowered = output.lowered_names.first().map(|(_, l)| l.clone());
            let resources = output.kernels.iter().find(|k| Some(&k.name) == lowered.as_ref()).or(output.kernels.first()).cloned();
            result.status = Status::Compiled;
            if let Some(r) = resources.as_ref().filter(|_| launch_known) {
                if let Err(reason) = fits_the_architecture(kernel, shape, config, arch, r) {
                    result.status = Status::Infeasible;
                    result.reason = Some(reason);
                }
            }
            result.resources = resources;
        }
    }
    result
}

/// The restrictions that evaluate without the launch's unknowns: one that names them is left
/// for when the spec is complete.
fn restrictions_without_launch(kernel: &KernelSpec, shape: &spec::Shape, config: &Configuration) -> Result<(), space::Infeasible> {
    let env = space::environment(kernel, shape, config);
    for restriction in &kernel.restrictions {
        let value = spec::expr::parse(restriction).ok().and_then(|e| e.eval(&|n| env.get(n).copied()).ok());
        if value.is_some_and(|v| !v.is_true()) {
            return Err(space::Infeasible { reason: format!("restriction `{restriction}` is false") });
        }
    }
    Ok(())
}

/// Limits that only the compiled kernel reveals (registers and shared memory per block, and
/// whether any block fits an SM), against the architecture's documented limits.
fn fits_the_architecture(kernel: &KernelSpec, shape: &spec::Shape, config: &Configuration, arch: &str, r: &KernelResources) -> Result<(), String> {
    let Some(device) = crate::gpu::DeviceInfo::datasheet(arch) else { return Ok(()) };
    let dims = space::launch_dims_compiled(kernel, shape, config, &device, Some(r)).map_err(|i| i.reason)?;
    space::fit(&device, dims.threads(), r, dims.shared_bytes as u64).map(|_| ()).map_err(|i| i.reason)
}
