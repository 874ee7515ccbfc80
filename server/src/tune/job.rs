//! Setting up a tuning run from a file, shared by `cutune tune` and the language server: the
//! kernel's spec and templatized device code, the runner, NVRTC and the default strategy.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Result};

use super::Target;
use crate::compile::{Nvrtc, NVRTC_ENV};
use crate::gpu::client::{StartError, WorkerRunner};
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
/// Capture files in the spec are named relative to it; the returned spec names them in full.
pub fn kernel_and_source(file: &Path, kernel_name: &str, spec_path: Option<&Path>, text: &str) -> Result<(KernelSpec, String, Option<String>)> {
    kernel_and_source_with(file, kernel_name, spec_path, text, SpecErrors::Refuse)
}

/// What to do with a spec that has errors.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum SpecErrors {
    /// Stop, listing them: running needs every value.
    Refuse,
    /// Go on with the spec as it reads, saying them in the note: compiling needs only the
    /// parameters and template arguments, not the shapes.
    Allow,
}

/// [`kernel_and_source`], with `errors` deciding what a spec with errors does.
pub fn kernel_and_source_with(file: &Path, kernel_name: &str, spec_path: Option<&Path>, text: &str, errors: SpecErrors) -> Result<(KernelSpec, String, Option<String>)> {
    let spec_path = spec_path.map_or_else(|| spec::spec_path_for(file), Path::to_path_buf);
    let (mut kernel, source, note) = spec_or_templatized(file, kernel_name, &spec_path, text, errors)?;
    let spec_dir = spec_path.parent().unwrap_or(Path::new("."));
    for capture in &mut kernel.captures {
        capture.file = spec_dir.join(&capture.file).to_string_lossy().into_owned();
    }
    Ok((kernel, source, note))
}

fn spec_or_templatized(file: &Path, kernel_name: &str, spec_path: &Path, text: &str, allow: SpecErrors) -> Result<(KernelSpec, String, Option<String>)> {
    let in_memory = || {
        let hosts = crate::workspace::host_documents_near(file, kernel_name);
        template::templatize_in_workspace(text, kernel_name, file, &SliceOptions::for_file(file), &hosts, &crate::workspace::find_root(file)).map_err(|e| anyhow!("{}: {e}", file.display()))
    };
    if let Ok(spec_text) = std::fs::read_to_string(spec_path) {
        let (spec_file, diagnostics) = spec::parse_spec(&spec_text);
        let errors: Vec<String> = diagnostics
            .iter()
            .filter(|d| d.severity == spec::Severity::Error)
            .map(|d| format!("{}:{}:{}: error: {}", spec_path.display(), d.line + 1, d.column + 1, d.message))
            .collect();
        let said = match (errors.is_empty(), allow) {
            (true, _) => None,
            (false, SpecErrors::Refuse) => bail!("{}\nthe spec has errors; `cutune spec check {}` lists them", errors.join("\n"), spec_path.display()),
            (false, SpecErrors::Allow) => Some(format!("{}\nthe spec has {} error(s); compiling anyway, without the checks that need the launch", errors.join("\n"), errors.len())),
        };
        if let Some(kernel) = spec_file.and_then(|f| f.kernels.into_iter().find(|k| k.name == kernel_name)) {
            // A spec beside a file that was not rewritten (only its spec was kept, as in
            // `examples/`): the parameters exist only in the templatized text.
            let rewritten = kernel.params.iter().filter(|p| p.kind == spec::ParamKind::Define).all(|p| text.contains(&format!("#ifndef {}", p.name)));
            if rewritten {
                return Ok((kernel, text.to_string(), said));
            }
            // Defines lifted where they are (a header's, which templatize does not edit) leave
            // the file as templatize would write it.
            let templatized = in_memory()?.text;
            if templatized == text {
                return Ok((kernel, templatized, said));
            }
            let note = format!("{}: the source does not define the spec's parameters; using it templatized in memory", file.display());
            let note = said.map_or(note.clone(), |said| format!("{said}\n{note}"));
            return Ok((kernel, templatized, Some(note)));
        }
    }
    let note = format!("{}: no spec of `{}` beside the file; using it templatized in memory", file.display(), kernel_name);
    let result = in_memory()?;
    Ok((result.spec, result.text, Some(note)))
}

/// The kernel's spec from the spec beside `file`, when that spec reads without errors and has
/// the kernel: what the editor needs before it offers to tune.
pub fn spec_beside(file: &Path, kernel_name: &str) -> Option<KernelSpec> {
    let text = std::fs::read_to_string(spec::spec_path_for(file)).ok()?;
    let (spec_file, diagnostics) = spec::parse_spec(&text);
    if diagnostics.iter().any(|d| d.severity == spec::Severity::Error) {
        return None;
    }
    spec_file?.kernels.into_iter().find(|k| k.name == kernel_name)
}

/// The run's target: the kernel's spec and the device code NVRTC compiles, with the note of
/// [`kernel_and_source`].
pub fn target(file: &Path, kernel_name: &str, spec_path: Option<&Path>, text: &str) -> Result<(Target, Option<String>)> {
    let (kernel, templatized, note) = kernel_and_source(file, kernel_name, spec_path, text)?;
    let slice = device_slice(&Document::new(templatized), kernel_name, &SliceOptions::for_file(file).for_spec(&kernel)).map_err(|e| anyhow!("{}: {e}", file.display()))?;
    let kernel_sha256 = super::kernel_sha256(text, kernel_name);
    Ok((Target { file: file.display().to_string(), kernel, source: slice.source, kernel_sha256 }, note))
}

/// A tune of one kernel of a file on disk, as the CLI and the MCP server ask for it.
pub struct FileTune<'a> {
    pub file: &'a Path,
    pub kernel: &'a str,
    /// The spec to use instead of the one beside the file.
    pub spec: Option<&'a Path>,
    /// Where `.cutune/` lives (default: the file's folder).
    pub workspace: Option<&'a Path>,
    /// A recording to replay instead of measuring on `device`.
    pub replay: Option<&'a Path>,
    pub device: u32,
    pub nvrtc: Option<&'a Path>,
    /// Compile every configuration again (a cubin cache of this process's own, removed after).
    pub no_cache: bool,
    /// `None`: brute force when the space fits the budget, else the model.
    pub strategy: Option<StrategyName>,
    /// The engine's options; its strategy is set from `strategy`.
    pub options: super::TuneOptions,
}

/// A finished tune of a file: the report, and how long the set-up took (reading, slicing,
/// opening the store, starting the worker, loading NVRTC).
pub struct FileTuned {
    pub report: super::TuneReport,
    pub startup_seconds: f64,
}

/// Tunes `request.kernel` of `request.file`. `observer` is made once the runner is known (a
/// replay says so), with the note on where the spec came from, and is returned with the
/// result, which carries the tuner's error if it failed.
pub fn tune_file<O: super::Observer>(request: FileTune, observer: impl FnOnce(&crate::gpu::RunnerSource, Option<&str>) -> O) -> Result<(Result<FileTuned>, O)> {
    let started = std::time::Instant::now();
    let text = crate::workspace::read_source(request.file)?;
    let (target, note) = target(request.file, request.kernel, request.spec, &text)?;
    tune_target(target, note, request, started, "(to study a space without a GPU, replay recorded measurements with --replay FILE)", observer)
}

/// Another implementation of `request.kernel` with the same parameters (an agent's or a
/// person's rewrite, in `candidate`, named `candidate_kernel` or like the original), run as a
/// tune of a space of one point: measured in the same run as the original, checked against it
/// on the spec's shapes, verified in five stages, bounded by the speed of light, and stored.
/// Both launch as the spec says the original does, at its defaults.
pub fn compare_file<O: super::Observer>(request: FileTune, candidate: &Path, candidate_kernel: Option<&str>, observer: impl FnOnce(&crate::gpu::RunnerSource, Option<&str>) -> O) -> Result<(Result<FileTuned>, O)> {
    let started = std::time::Instant::now();
    let text = crate::workspace::read_source(request.file)?;
    let (target, note) = target(request.file, request.kernel, request.spec, &text)?;
    let target = candidate_target(target, &text, candidate, candidate_kernel)?;
    let request = FileTune { strategy: Some(StrategyName::BruteForce), options: comparison_options(request.options), ..request };
    tune_target(target, note, request, started, "(a comparison runs both kernels: it needs the GPU)", observer)
}

/// `target` (the original kernel, of `text`) with the candidate's kernel in its place, under the
/// original's name, at the original's defaults: a space of one point. The candidate's kernel is
/// `candidate_kernel`, else as [`candidate_name`] finds it.
pub fn candidate_target(mut target: Target, text: &str, candidate: &Path, candidate_kernel: Option<&str>) -> Result<Target> {
    let file = PathBuf::from(&target.file);
    let kernel = target.kernel.name.clone();
    let candidate_text = crate::workspace::read_source(candidate)?;
    let name = candidate_kernel.map_or_else(|| candidate_name(&candidate_text, &kernel), str::to_string);
    let name = name.as_str();
    same_parameters(text, &file, &kernel, &candidate_text, candidate, name)?;
    let slice = device_slice(&Document::new(candidate_text.clone()), name, &SliceOptions::for_file(candidate).for_spec(&target.kernel)).map_err(|e| anyhow!("{}: {e}", candidate.display()))?;
    // The tuner compiles and launches the spec's kernel name: the candidate takes it.
    target.source = crate::syntax::rename_identifiers_in(&slice.source, |w| (w == name).then(|| kernel.clone()));
    target.file = candidate.display().to_string();
    target.kernel_sha256 = super::kernel_sha256(&candidate_text, name);
    for param in &mut target.kernel.params {
        param.values = vec![param.default];
    }
    target.kernel.restrictions.clear();
    Ok(target)
}

/// The candidate's kernel when not named: the one of the original's name, else the only kernel
/// the file defines.
fn candidate_name(candidate_text: &str, original: &str) -> String {
    let defined: Vec<String> = crate::syntax::analyze(candidate_text).kernels.into_iter().filter(|k| k.is_definition).map(|k| k.name).collect();
    match defined.as_slice() {
        [only] if only != original => only.clone(),
        _ => original.to_string(),
    }
}

/// A comparison measures its one point and stops: no speed-of-light stop before it.
pub fn comparison_options(options: super::TuneOptions) -> super::TuneOptions {
    super::TuneOptions { strategy: StrategyName::BruteForce, budget: Some(1), sol_stop: None, ..options }
}

/// The five verification stages (or some) on one configuration of a file's kernel, as the CLI
/// and the MCP server ask for it.
pub struct FileVerify<'a> {
    pub file: &'a Path,
    pub kernel: &'a str,
    pub spec: Option<&'a Path>,
    pub workspace: Option<&'a Path>,
    pub device: u32,
    pub nvrtc: Option<&'a Path>,
    /// `NAME=V,…` over the values the file runs now.
    pub config: Option<&'a str>,
    pub stages: &'a [crate::verify::Stage],
    /// Every case instead of stopping at the first failure.
    pub keep_going: bool,
}

/// Runs [`FileVerify`] on the GPU; `note` hears where the spec came from and values of the
/// file it could not read. Returns the report and the device's name.
pub fn verify_file(request: FileVerify, note: &mut dyn FnMut(&str), cancelled: &dyn Fn() -> bool) -> Result<(crate::verify::Report, String)> {
    let text = crate::workspace::read_source(request.file)?;
    let (target, spec_note) = target(request.file, request.kernel, request.spec, &text)?;
    if let Some(spec_note) = spec_note {
        note(&spec_note);
    }
    let (in_file, notes) = configuration_in_file(&text, &target.kernel);
    for value_note in notes {
        note(&format!("{}: {value_note}", request.file.display()));
    }
    let config = match request.config {
        Some(assignments) => configuration_with(&in_file, assignments).map_err(|e| anyhow!("--config: {e}"))?,
        None => in_file,
    };
    let workspace = workspace_for(request.file, request.workspace);
    let store = crate::store::Store::open(&workspace)?;
    let (mut runner, nvrtc) = start_tools(request.device, None, request.nvrtc, Configuration::default_of(&target.kernel))?;
    let target = target.for_device(runner.device(), nvrtc.as_ref())?;
    let tools = super::Tools { nvrtc: nvrtc.as_ref(), cache: crate::compile::CubinCache::new(cubin_dir(&workspace)), store: &store, ceilings_dir: crate::sol::cache::default_dir() };
    let report = super::verification::verify_configuration(&target, runner.as_mut(), &tools, &config, request.stages, request.keep_going, cancelled)?;
    Ok((report, runner.device().name.clone()))
}

/// What a comparison found, read from its one-point tune.
#[derive(Clone, Debug, serde::Serialize, schemars::JsonSchema)]
pub struct Comparison {
    /// The GPU measured on.
    pub measured_on: String,
    /// The original kernel's time: the sum over the spec's shapes of the medians, in µs.
    pub original_us: Option<f64>,
    pub candidate_us: Option<f64>,
    pub speedup: Option<f64>,
    pub bound_us: Option<f64>,
    pub sol_percent: Option<f64>,
    /// It matched the original on the spec's shapes and passed the five verification stages.
    pub verified: bool,
    /// Otherwise the first failure: the stage, the shape, the index and the values, or why it
    /// did not run (a time below the speed of light is one: more likely a wrong measurement).
    pub failure: Option<String>,
}

impl Comparison {
    pub fn of(report: &super::TuneReport) -> Comparison {
        let row = report.rows.first();
        // The tune keeps a verification only for the configuration that passed it, its best.
        let verified = report.best.is_some() && report.verification.is_some();
        let failure = (!verified).then(|| {
            report.rejected.first().map(|r| r.summary.clone()).or_else(|| row.map(|r| r.status.clone())).unwrap_or_else(|| report.stop_reason.clone())
        });
        Comparison {
            measured_on: report.device.clone(),
            original_us: report.baseline_us,
            candidate_us: row.and_then(|r| r.time_us),
            speedup: row.and_then(|r| r.time_us).zip(report.baseline_us).map(|(t, b)| b / t),
            bound_us: report.sol.as_ref().map(|b| b.bound_us),
            sol_percent: row.and_then(|r| r.time_us).zip(report.sol.as_ref()).map(|(t, b)| b.percent(t)),
            verified,
            failure,
        }
    }
}

impl std::fmt::Display for Comparison {
    /// One line: both times, the speedup and %SOL, and verified or the first failure.
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        let us = |t: Option<f64>| t.map_or_else(|| "-".to_string(), |t| format!("{t:.2} µs"));
        write!(f, "original {}, candidate {}", us(self.original_us), us(self.candidate_us))?;
        if let Some(speedup) = self.speedup {
            write!(f, " ({speedup:.2}×)")?;
        }
        if let Some(percent) = self.sol_percent {
            write!(f, ", {percent:.0}% of the speed of light")?;
        }
        match &self.failure {
            None => write!(f, "; verified in five stages"),
            Some(failure) => write!(f, "; NOT verified: {failure}"),
        }
    }
}

/// The candidate's kernel takes what the original takes: the same number of parameters, each
/// of the same type (names may differ).
fn same_parameters(text: &str, file: &Path, kernel: &str, candidate_text: &str, candidate: &Path, candidate_kernel: &str) -> Result<()> {
    let signature = |text: &str, path: &Path, name: &str| -> Result<(String, Vec<String>)> {
        let model = crate::syntax::analyze(text);
        let found = model.kernels.into_iter().find(|k| k.is_definition && k.name == name).ok_or_else(|| anyhow!("{}: no kernel `{name}` is defined there", path.display()))?;
        let types = found.params.iter().map(|p| p.ty.replace("__restrict__", "").split_whitespace().collect::<Vec<_>>().join(" ")).collect();
        Ok((found.signature, types))
    };
    let (original, original_types) = signature(text, file, kernel)?;
    let (other, other_types) = signature(candidate_text, candidate, candidate_kernel)?;
    if original_types != other_types {
        bail!("{}: its `{candidate_kernel}` does not take what `{kernel}` of {} takes, so it cannot run in its place:\n  candidate: {other}\n  original:  {original}", candidate.display(), file.display());
    }
    Ok(())
}

/// The tune of `target` that [`tune_file`] and [`compare_file`] run; `without_gpu` is added to
/// the error when there is no GPU, to say what to do instead.
fn tune_target<O: super::Observer>(target: Target, note: Option<String>, request: FileTune, started: std::time::Instant, without_gpu: &str, observer: impl FnOnce(&crate::gpu::RunnerSource, Option<&str>) -> O) -> Result<(Result<FileTuned>, O)> {
    let workspace = workspace_for(request.file, request.workspace);
    let store = crate::store::Store::open(&workspace)?;
    let budget = request.options.budget.unwrap_or(u64::MAX);
    let options = super::TuneOptions { strategy: request.strategy.unwrap_or_else(|| default_strategy(&target.kernel, budget)), ..request.options };
    let default = Configuration::default_of(&target.kernel);
    let (mut runner, nvrtc) = start_tools(request.device, request.replay, request.nvrtc, default)
        .map_err(|e| if is_no_device(&e) { anyhow!("{e}\n{without_gpu}") } else { e })?;
    let target = target.for_device(runner.device(), nvrtc.as_ref())?;
    let cache_dir = if request.no_cache { cubin_dir(&workspace).with_file_name(format!("cubins-{}", std::process::id())) } else { cubin_dir(&workspace) };
    let mut observer = observer(runner.source(), note.as_deref());
    let tools = super::Tools { nvrtc: nvrtc.as_ref(), cache: crate::compile::CubinCache::new(&cache_dir), store: &store, ceilings_dir: crate::sol::cache::default_dir() };
    let startup_seconds = started.elapsed().as_secs_f64();
    let report = super::tune(&target, runner.as_mut(), &tools, &options, &mut observer);
    if request.no_cache {
        let _ = std::fs::remove_dir_all(&cache_dir);
    }
    Ok((report.map(|report| FileTuned { report, startup_seconds }), observer))
}

/// Where a run keeps its results (`.cutune/` inside): the given folder, else the file's workspace root.
pub fn workspace_for(file: &Path, results: Option<&Path>) -> PathBuf {
    match results {
        Some(dir) => dir.to_path_buf(),
        // The workspace root, where `cutune profile` keeps its captures: a `.cutune/` in the
        // file's own folder would make that folder a root of its own, hiding the launches,
        // host code and captures of the project around it from later runs. A root marked by a
        // `.cutune` file has no room for results: then the file's folder, as before.
        None => {
            let folder = file.parent().filter(|p| !p.as_os_str().is_empty()).map_or_else(|| PathBuf::from("."), Path::to_path_buf);
            let root = crate::workspace::find_root(file);
            // The folder as the user named it when it is the root (`.cutune/reports/…` stays a
            // relative path in what the CLI prints).
            let is_folder = folder.canonicalize().is_ok_and(|f| f == root);
            if is_folder || root.join(".cutune").is_file() {
                return folder;
            }
            root
        }
    }
}

/// Where the cubins of runs in `workspace` are cached, beside its results.
pub fn cubin_dir(workspace: &Path) -> PathBuf {
    workspace.join(".cutune").join("cubins")
}

/// Brute force when the whole space fits the budget, else the model-based strategy.
pub fn default_strategy(kernel: &KernelSpec, budget: u64) -> StrategyName {
    if Space::new(kernel).count() <= budget { StrategyName::BruteForce } else { StrategyName::Model }
}

/// The runner and, unless it is a replay, NVRTC. A replay of `replay` when given (its
/// baseline is the default configuration's recording: the default instantiation is the
/// original kernel), else the CUDA worker on `device`, which creates its CUDA context while
/// this process loads NVRTC (both take a few hundred milliseconds). A missing GPU is a
/// [`StartError::NoDevice`] inside the error.
pub fn start_tools(device: u32, replay: Option<&Path>, nvrtc: Option<&Path>, default: Configuration) -> Result<(Box<dyn Runner + Send>, Option<Nvrtc>)> {
    if let Some(path) = replay {
        return Ok((Box::new(ReplayRunner::from_file(path)?.with_baseline(default)), None));
    }
    let (runner, nvrtc) = std::thread::scope(|scope| {
        let runner = scope.spawn(|| WorkerRunner::start(device));
        let nvrtc = Nvrtc::locate(nvrtc).inspect(|nvrtc| {
            // The first compile of a process pays NVRTC's own start-up.
            nvrtc.warm_up();
        });
        (runner.join(), nvrtc)
    });
    let runner = runner.map_err(|_| anyhow!("starting the CUDA worker panicked"))??;
    let nvrtc = nvrtc.map_err(|e| anyhow!("{e}\n(set {NVRTC_ENV} or choose a library explicitly)"))?;
    Ok((Box::new(runner), Some(nvrtc)))
}

/// Whether `error` (from [`start_tools`]) says there is no usable GPU, which is not a fault of
/// the user's code or set-up and is reported more gently.
pub fn is_no_device(error: &anyhow::Error) -> bool {
    matches!(error.downcast_ref::<StartError>(), Some(StartError::NoDevice(_)))
}

/// The configuration that the file's text runs now: each parameter at the value the file gives
/// it (`#define`, template default), the others (compiler flags) at the spec's default. Notes
/// say which values could not be read as integers and took the spec's default instead.
pub fn configuration_in_file(text: &str, kernel: &KernelSpec) -> (Configuration, Vec<String>) {
    let document = Document::new(text.to_string());
    let definition = document.model().kernels.iter().find(|k| k.is_definition && k.name == kernel.name).cloned();
    let in_file = template::current_values(text, kernel, definition.as_ref());
    let mut notes = Vec::new();
    let values = kernel
        .params
        .iter()
        .map(|param| {
            let written = in_file.iter().find(|(name, _)| *name == param.name).map(|(_, value)| value.trim());
            let value = match written.map(|w| (w, w.parse::<i64>())) {
                Some((_, Ok(value))) => value,
                Some((written, Err(_))) => {
                    notes.push(format!("`{}` is `{written}` in the file, not an integer: using the spec's default {}", param.name, param.default));
                    param.default
                }
                None => param.default,
            };
            (param.name.clone(), value)
        })
        .collect();
    (Configuration(values), notes)
}

/// `BLOCK=256,VEC=4` over `base`: every name must be one of the kernel's parameters.
pub fn configuration_with(base: &Configuration, assignments: &str) -> Result<Configuration> {
    let mut config = base.clone();
    for assignment in assignments.split(',').map(str::trim).filter(|a| !a.is_empty()) {
        let (name, value) = assignment.split_once('=').ok_or_else(|| anyhow!("`{assignment}` is not NAME=VALUE"))?;
        let (name, value) = (name.trim(), value.trim());
        let value: i64 = value.parse().map_err(|_| anyhow!("`{name}={value}`: the value must be an integer"))?;
        let slot = config.0.iter_mut().find(|(n, _)| n == name).ok_or_else(|| {
            let names: Vec<&str> = base.0.iter().map(|(n, _)| n.as_str()).collect();
            anyhow!("`{name}` is not a parameter of this kernel (its parameters: {})", names.join(", "))
        })?;
        slot.1 = value;
    }
    Ok(config)
}

/// Which configurations [`check_file`] compiles.
pub struct FileCheck<'a> {
    pub file: &'a Path,
    pub kernel: &'a str,
    pub arch: &'a str,
    /// How many, the default included; `None`: every one (up to [`MAX_CHECK_ALL`]).
    pub sample: Option<u64>,
    /// The same seed checks the same configurations.
    pub seed: u64,
    /// Only the configurations `i`, `i + n`, … of the sample, as `(i, n)`.
    pub shard: Option<(usize, usize)>,
    pub jobs: Option<usize>,
    pub nvrtc: Option<&'a Path>,
}

/// Spaces larger than this are not compiled whole.
pub const MAX_CHECK_ALL: u64 = 100_000;

/// A kernel's configurations compiled for one architecture, without a GPU.
#[derive(serde::Serialize)]
pub struct FileChecked {
    pub file: String,
    pub kernel: String,
    pub arch: String,
    pub nvrtc: String,
    pub space_size: u64,
    pub checked: usize,
    pub compiled: usize,
    pub infeasible: usize,
    pub failed: usize,
    pub wall_seconds: f64,
    pub results: Vec<crate::compile::check::ConfigResult>,
    /// Where the spec came from, its errors, and names the slice could not resolve.
    #[serde(skip)]
    pub notes: Vec<String>,
}

/// Compiles a sample of `request.kernel`'s configurations (or all of them) with NVRTC and
/// reports each one's resources, or why it cannot run. Compiling needs the parameters and
/// template arguments, not the shapes: a spec with `?` sizes still compiles, without the checks
/// that need the launch.
pub fn check_file(request: FileCheck) -> Result<FileChecked> {
    use crate::compile::check::{check_all, CheckTarget, Status};
    let file = request.file;
    let text = crate::workspace::read_source(file)?;
    let (kernel, source, note) = kernel_and_source_with(file, request.kernel, None, &text, SpecErrors::Allow)?;
    let mut notes: Vec<String> = note.into_iter().collect();
    if let Some(open) = kernel.template_args.iter().position(|a| a.trim() == spec::UNKNOWN) {
        bail!("{}: template argument {} of `{}` is unknown (`?`): compiling needs it; `cutune spec check` says how to fill it", file.display(), open + 1, kernel.name);
    }
    let slice_options = SliceOptions::for_file(file).for_spec(&kernel);
    let slice = device_slice(&Document::new(source), request.kernel, &slice_options).map_err(|e| anyhow!("{}: {e}", file.display()))?;
    notes.extend(slice.unresolved.iter().map(|u| format!("{}:{}: note: unresolved `{}`: {}", file.display(), u.line, u.symbol, u.why)));
    let nvrtc = Nvrtc::locate(request.nvrtc).map_err(|e| anyhow!("{e}\n(set {NVRTC_ENV} or pass --nvrtc to choose a library)"))?;
    let shape = kernel.shapes.first().cloned().unwrap_or_default();
    let space = Space::new(&kernel);
    let limit = match request.sample {
        Some(count) => count.max(1),
        None if space.count() > MAX_CHECK_ALL => bail!("the space of `{}` has {} configurations; check a sample instead", kernel.name, space.count()),
        None => space.count(),
    };
    let mut configs = space.sample(limit, request.seed);
    if let Some((index, count)) = request.shard {
        configs = configs.into_iter().enumerate().filter(|(i, _)| i % count == index).map(|(_, c)| c).collect();
    }
    let started = std::time::Instant::now();
    let target = CheckTarget { nvrtc: &nvrtc, kernel: &kernel, shape: &shape, source: &slice.source, arch: request.arch };
    let results = check_all(&target, &configs, request.jobs);
    let count = |s: Status| results.iter().filter(|r| r.status == s).count();
    let (major, minor) = nvrtc.version();
    Ok(FileChecked {
        file: file.display().to_string(),
        kernel: kernel.name.clone(),
        arch: request.arch.to_string(),
        nvrtc: format!("{major}.{minor} ({})", nvrtc.library_path().display()),
        space_size: space.count(),
        checked: results.len(),
        compiled: count(Status::Compiled),
        infeasible: count(Status::Infeasible),
        failed: count(Status::Failed),
        wall_seconds: started.elapsed().as_secs_f64(),
        results,
        notes,
    })
}

/// The one GPU job a server runs at a time (there is one GPU): a second is refused at once,
/// with what is running, rather than queued behind it unseen.
#[derive(Default)]
pub struct GpuSlot {
    running: std::sync::Mutex<Option<String>>,
}

/// The slot, held until dropped.
pub struct GpuClaim {
    slot: std::sync::Arc<GpuSlot>,
}

impl GpuSlot {
    /// Takes the slot for `what` (`tuning \`rmsnorm\``), or says what holds it.
    pub fn claim(self: &std::sync::Arc<Self>, what: &str) -> Result<GpuClaim, String> {
        let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(holder) = running.as_ref() {
            return Err(format!("the GPU is busy {holder}: cancel that request or wait for it (one GPU job at a time)"));
        }
        *running = Some(what.to_string());
        Ok(GpuClaim { slot: self.clone() })
    }
}

impl Drop for GpuClaim {
    fn drop(&mut self) {
        *self.slot.running.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }
}

#[cfg(test)]
mod tests {
    use super::workspace_for;

    /// Results kept beside a file in a subfolder would make that folder a root of its own: the
    /// next templatize of that file would no longer see the project's launches and captures.
    #[test]
    fn results_go_to_the_workspace_root_unless_a_folder_is_given() {
        let root = tempfile::tempdir().unwrap();
        let root_path = root.path().canonicalize().unwrap();
        std::fs::create_dir_all(root_path.join(".git")).unwrap();
        std::fs::create_dir_all(root_path.join("src")).unwrap();
        let file = root_path.join("src/kernels.cu");
        std::fs::write(&file, "").unwrap();
        assert_eq!(workspace_for(&file, None), root_path);
        assert_eq!(workspace_for(&file, Some(&root_path.join("elsewhere"))), root_path.join("elsewhere"));

        // A root marked by a `.cutune` file has no room for a results folder.
        std::fs::remove_dir_all(root_path.join(".git")).unwrap();
        std::fs::write(root_path.join(".cutune"), "").unwrap();
        assert_eq!(workspace_for(&file, None), root_path.join("src"));
    }
}
