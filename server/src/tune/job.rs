//! Setting up a tuning run from a file, shared by `cutune tune` and the language server: the
//! kernel's spec and templatized device code, the runner, NVRTC and the default strategy.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Result};

use super::Target;
use crate::compile::{Nvrtc, NVRTC_ENV};
use crate::gpu::client::WorkerRunner;
use crate::gpu::replay::ReplayRunner;
use crate::gpu::Runner;
use crate::search::StrategyName;
use crate::slice::{device_slice, SliceOptions};
use crate::space::{Configuration, Space};
use crate::spec::{self, KernelSpec};
use crate::syntax::Document;
use crate::template;

/// The kernel's spec and the templatized source: from `spec_path` (default: the spec beside the
/// file) when it has this kernel, else from templatizing `text` in memory. The note says when
/// the source was templatized in memory, for the user's log.
pub fn kernel_and_source(file: &Path, kernel_name: &str, spec_path: Option<&Path>, text: &str) -> Result<(KernelSpec, String, Option<String>)> {
    let spec_path = spec_path.map_or_else(|| spec::spec_path_for(file), Path::to_path_buf);
    let in_memory = || template::templatize(text, kernel_name, &SliceOptions::for_file(file)).map_err(|e| anyhow!("{}: {e}", file.display()));
    if let Ok(spec_text) = std::fs::read_to_string(&spec_path) {
        let (spec_file, diagnostics) = spec::parse_spec(&spec_text);
        let errors: Vec<String> = diagnostics
            .iter()
            .filter(|d| d.severity == spec::Severity::Error)
            .map(|d| format!("{}:{}:{}: error: {}", spec_path.display(), d.line + 1, d.column + 1, d.message))
            .collect();
        if !errors.is_empty() {
            bail!("{}\nthe spec has errors; `cutune spec check {}` lists them", errors.join("\n"), spec_path.display());
        }
        if let Some(kernel) = spec_file.and_then(|f| f.kernels.into_iter().find(|k| k.name == kernel_name)) {
            // A spec beside a file that was not rewritten (only its spec was kept, as in
            // `examples/`): the parameters exist only in the templatized text.
            let rewritten = kernel.params.iter().filter(|p| p.kind == spec::ParamKind::Define).all(|p| text.contains(&format!("#ifndef {}", p.name)));
            if rewritten {
                return Ok((kernel, text.to_string(), None));
            }
            let note = format!("{}: the source does not define the spec's parameters; using it templatized in memory", file.display());
            return Ok((kernel, in_memory()?.text, Some(note)));
        }
    }
    let note = format!("{}: no spec of `{}` beside the file; using it templatized in memory", file.display(), kernel_name);
    let result = in_memory()?;
    Ok((result.spec, result.text, Some(note)))
}

/// The run's target: the kernel's spec and the device code NVRTC compiles, with the note of
/// [`kernel_and_source`].
pub fn target(file: &Path, kernel_name: &str, spec_path: Option<&Path>, text: &str) -> Result<(Target, Option<String>)> {
    let (kernel, templatized, note) = kernel_and_source(file, kernel_name, spec_path, text)?;
    let slice = device_slice(&Document::new(templatized), kernel_name, &SliceOptions::for_file(file)).map_err(|e| anyhow!("{}: {e}", file.display()))?;
    Ok((Target { file: file.display().to_string(), kernel, source: slice.source }, note))
}

/// Where a run keeps its results (`.cutune/` inside): the given folder, else the file's.
pub fn workspace_for(file: &Path, results: Option<&Path>) -> PathBuf {
    match results {
        Some(dir) => dir.to_path_buf(),
        None => file.parent().filter(|p| !p.as_os_str().is_empty()).map_or_else(|| PathBuf::from("."), Path::to_path_buf),
    }
}

/// Brute force when the whole space fits the budget, else the model-based strategy.
pub fn default_strategy(kernel: &KernelSpec, budget: u64) -> StrategyName {
    if Space::new(kernel).count() <= budget { StrategyName::BruteForce } else { StrategyName::Model }
}

/// A replay of `replay` when given (its baseline is the default configuration's recording:
/// the default instantiation is the original kernel), else the CUDA worker on `device`.
pub fn start_runner(device: u32, replay: Option<&Path>, default: Configuration) -> Result<Box<dyn Runner + Send>> {
    if let Some(path) = replay {
        return Ok(Box::new(ReplayRunner::from_file(path)?.with_baseline(default)));
    }
    Ok(Box::new(WorkerRunner::start(device)?))
}

/// NVRTC from `explicit` or the usual places, with its first-compile cost already paid (the
/// caller overlaps this with starting the worker).
pub fn locate_nvrtc(explicit: Option<&Path>) -> Result<Nvrtc> {
    let nvrtc = Nvrtc::locate(explicit).map_err(|e| anyhow!("{e}\n(set {NVRTC_ENV} or choose a library explicitly)"))?;
    nvrtc.warm_up();
    Ok(nvrtc)
}
