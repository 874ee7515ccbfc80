//! `cutune check FILE --kernel NAME [--arch sm_90]`: compile the default configuration and a
//! sample of the space (or all of it) with NVRTC, without a GPU, and report each
//! configuration's registers, spills and shared memory, or why it cannot run.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{bail, Result};
use serde::Serialize;

use super::read_source;
use crate::compile::{Nvrtc, NVRTC_ENV};
use crate::slice::{device_slice, SliceOptions};
use crate::space::{self, Configuration, Space};
use crate::spec::{self, KernelSpec};
use crate::syntax::Document;
use crate::tune::job::SpecErrors;

#[derive(clap::Args)]
pub struct CheckArgs {
    /// The CUDA source file: templatized, with its spec beside it, or not yet (then it is
    /// templatized in memory).
    pub file: PathBuf,
    #[arg(long)]
    pub kernel: String,
    /// The GPU architecture to compile for.
    #[arg(long, default_value = "sm_90")]
    pub arch: String,
    /// How many configurations to compile, the default one included.
    #[arg(long, default_value_t = 32, conflicts_with = "all")]
    pub sample: u64,
    /// Compile every configuration of the space.
    #[arg(long)]
    pub all: bool,
    /// Seed of the sample: the same seed checks the same configurations.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Compiler threads (NVRTC stops scaling at about 4 per process).
    #[arg(long, short = 'j')]
    pub jobs: Option<usize>,
    /// Check only the configurations `i`, `i + n`, `i + 2n`, ... of the list, as `i/n`: to
    /// spread a large space over several processes (NVRTC stops scaling at about 4 threads in one).
    #[arg(long, value_parser = parse_shard)]
    pub shard: Option<(usize, usize)>,
    /// The NVRTC library to use (otherwise `CUTUNE_NVRTC`, `CUDA_HOME`, the loader path, pip).
    #[arg(long)]
    pub nvrtc: Option<PathBuf>,
    #[arg(long)]
    pub json: bool,
}

/// Spaces larger than this are not compiled whole, even with `--all`.
const MAX_ALL: u64 = 100_000;

#[derive(Serialize)]
struct Report {
    file: String,
    kernel: String,
    arch: String,
    nvrtc: String,
    space_size: u64,
    checked: usize,
    compiled: usize,
    infeasible: usize,
    failed: usize,
    wall_seconds: f64,
    results: Vec<ConfigResult>,
}

#[derive(Serialize, Clone)]
struct ConfigResult {
    config: Configuration,
    is_default: bool,
    status: Status,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    resources: Option<crate::compile::KernelResources>,
    compile_ms: f64,
}

#[derive(Serialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
enum Status {
    Compiled,
    Infeasible,
    Failed,
}

pub fn run(args: &CheckArgs) -> Result<ExitCode> {
    let text = read_source(&args.file)?;
    // Compiling needs the parameters and template arguments, not the shapes: a spec with `?`
    // sizes still compiles, without the checks that need the launch.
    let (kernel, source, note) = crate::tune::job::kernel_and_source_with(&args.file, &args.kernel, None, &text, SpecErrors::Allow)?;
    if let Some(note) = note {
        eprintln!("{note}");
    }
    if let Some(open) = kernel.template_args.iter().position(|a| a.trim() == spec::UNKNOWN) {
        bail!("{}: template argument {} of `{}` is unknown (`?`): compiling needs it; `cutune spec check` says how to fill it", args.file.display(), open + 1, kernel.name);
    }
    let slice_options = SliceOptions::for_file(&args.file).with_template_args(&kernel.template_args);
    let slice = device_slice(&Document::new(source), &args.kernel, &slice_options).map_err(|e| anyhow::anyhow!("{}: {e}", args.file.display()))?;
    for u in &slice.unresolved {
        eprintln!("{}:{}: note: unresolved `{}`: {}", args.file.display(), u.line, u.symbol, u.why);
    }
    let nvrtc = Nvrtc::locate(args.nvrtc.as_deref()).map_err(|e| anyhow::anyhow!("{e}\n(set {NVRTC_ENV} or pass --nvrtc to choose a library)"))?;
    let shape = kernel.shapes.first().cloned().unwrap_or_default();
    let shape = &shape;

    let space = Space::new(&kernel);
    let limit = if args.all {
        if space.count() > MAX_ALL {
            bail!("the space of `{}` has {} configurations; check a sample (--sample N) instead", kernel.name, space.count());
        }
        space.count()
    } else {
        args.sample.max(1)
    };
    let mut configs = space.sample(limit, args.seed);
    if let Some((index, count)) = args.shard {
        configs = configs.into_iter().enumerate().filter(|(i, _)| i % count == index).map(|(_, c)| c).collect();
    }
    let started = Instant::now();
    let results = check_all(&nvrtc, &kernel, shape, &slice.source, &args.arch, &configs, args.jobs);
    let count = |s: Status| results.iter().filter(|r| r.status == s).count();
    let (major, minor) = nvrtc.version();
    let report = Report {
        file: args.file.display().to_string(),
        kernel: kernel.name.clone(),
        arch: args.arch.clone(),
        nvrtc: format!("{major}.{minor} ({})", nvrtc.library_path().display()),
        space_size: space.count(),
        checked: results.len(),
        compiled: count(Status::Compiled),
        infeasible: count(Status::Infeasible),
        failed: count(Status::Failed),
        wall_seconds: started.elapsed().as_secs_f64(),
        results,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", table(&report));
    }
    Ok(if report.failed > 0 { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}

fn parse_shard(text: &str) -> std::result::Result<(usize, usize), String> {
    let parsed = text.split_once('/').and_then(|(i, n)| Some((i.trim().parse::<usize>().ok()?, n.trim().parse::<usize>().ok()?)));
    match parsed {
        Some((i, n)) if n > 0 && i < n => Ok((i, n)),
        _ => Err(format!("`{text}` is not a shard: write I/N with 0 <= I < N, e.g. 0/4")),
    }
}

/// Checks every configuration: restrictions first, then a compile on a pool of threads.
fn check_all(nvrtc: &Nvrtc, kernel: &KernelSpec, shape: &spec::Shape, source: &str, arch: &str, configs: &[Configuration], jobs: Option<usize>) -> Vec<ConfigResult> {
    let default = Configuration::default_of(kernel);
    // A spec whose launch cannot be evaluated yet (`?` sizes; the original's launch fails) is
    // compiled without the checks that need the launch.
    let launch_known = space::launch_dims(kernel, shape, &default).is_ok();
    super::parallel_map(configs, jobs, |config| check_one(nvrtc, kernel, shape, source, arch, config, *config == default, launch_known))
}

#[allow(clippy::too_many_arguments)]
fn check_one(nvrtc: &Nvrtc, kernel: &KernelSpec, shape: &spec::Shape, source: &str, arch: &str, config: &Configuration, is_default: bool, launch_known: bool) -> ConfigResult {
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
        Err(failure) => {
            match crate::compile::failure_reason(&failure.message, &failure.log) {
                reason @ crate::compile::FailureReason::StaticShared { .. } => {
                    result.reason = Some(reason.to_string());
                    result.resources = crate::compile::parse_resources(&failure.log).into_iter().next();
                }
                reason @ crate::compile::FailureReason::Error(_) => {
                    result.status = Status::Failed;
                    result.reason = Some(reason.to_string());
                }
            }
        }
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
fn fits_the_architecture(kernel: &KernelSpec, shape: &spec::Shape, config: &Configuration, arch: &str, r: &crate::compile::KernelResources) -> Result<(), String> {
    let Some(device) = crate::gpu::DeviceInfo::datasheet(arch) else { return Ok(()) };
    let dims = space::launch_dims(kernel, shape, config).map_err(|i| i.reason)?;
    space::fit(&device, dims.threads(), r, dims.shared_bytes as u64).map(|_| ()).map_err(|i| i.reason)
}

fn table(report: &Report) -> String {
    let mut out = format!(
        "{} `{}` for {} with NVRTC {}: {} configurations in the space, {} checked\n",
        report.file, report.kernel, report.arch, report.nvrtc, report.space_size, report.checked
    );
    let width = report.results.iter().map(|r| r.config.to_string().len()).max().unwrap_or(0).max("configuration".len());
    out.push_str(&format!("{:<width$} {:>5} {:>7} {:>8} {:>8}  status\n", "configuration", "regs", "spills", "smem", "ms"));
    for r in &report.results {
        let (regs, spills, smem) = match &r.resources {
            Some(k) => (k.registers.to_string(), (k.spill_store_bytes + k.spill_load_bytes).to_string(), k.shared_bytes.to_string()),
            None => ("-".into(), "-".into(), "-".into()),
        };
        let status = match (r.status, &r.reason) {
            (Status::Compiled, _) if r.is_default => "ok (default)".to_string(),
            (Status::Compiled, _) => "ok".to_string(),
            (Status::Infeasible, reason) => format!("infeasible: {}", reason.as_deref().unwrap_or("")),
            (Status::Failed, reason) => format!("compile error: {}", reason.as_deref().unwrap_or("")),
        };
        out.push_str(&format!("{:<width$} {regs:>5} {spills:>7} {smem:>8} {:>8.0}  {status}\n", r.config.to_string(), r.compile_ms));
    }
    out.push_str(&format!(
        "{} compiled, {} infeasible, {} failed, in {:.1} s\n",
        report.compiled, report.infeasible, report.failed, report.wall_seconds
    ));
    out
}
