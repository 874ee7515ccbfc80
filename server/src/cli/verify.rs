//! `cutune verify FILE --kernel NAME`: the five verification stages (docs/verify.md) on one
//! configuration (by default the one the file runs now) against the original kernel, on the
//! GPU. Exits non-zero when a stage fails.

use std::fmt::Write;
use std::path::PathBuf;

use anyhow::{anyhow, bail, Result};

use super::read_source;
use crate::compile::CubinCache;
use crate::store::Store;
use crate::tune::{self, job, verification};
use crate::verify::{CaseStatus, Report, Stage};

#[derive(clap::Args)]
pub struct VerifyArgs {
    /// The CUDA source file; its spec is read from beside it unless `--spec` names one.
    pub file: PathBuf,
    #[arg(long)]
    pub kernel: String,
    /// The tuning spec to use instead of the one beside the file.
    #[arg(long)]
    pub spec: Option<PathBuf>,
    /// Parameters to set, e.g. `BLOCK_SIZE=512,RMSNORM_VEC=4` [default: the values in the file].
    #[arg(long)]
    pub config: Option<String>,
    /// Stages to run, comma-separated: smoke, shapes, numerics, determinism, edges [default: all].
    #[arg(long, value_delimiter = ',')]
    pub stages: Vec<String>,
    /// Run every case instead of stopping at the first failure.
    #[arg(long)]
    pub keep_going: bool,
    /// The CUDA device to run on.
    #[arg(long, default_value_t = 0)]
    pub device: u32,
    /// Where `.cutune/` (results and cubin cache) lives [default: the file's folder].
    #[arg(long)]
    pub workspace: Option<PathBuf>,
    /// The NVRTC library to use (otherwise `CUTUNE_NVRTC`, `CUDA_HOME`, the loader path, pip).
    #[arg(long)]
    pub nvrtc: Option<PathBuf>,
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: &VerifyArgs) -> Result<()> {
    let stages = if args.stages.is_empty() {
        Stage::ALL.to_vec()
    } else {
        args.stages
            .iter()
            .map(|name| Stage::from_name(name.trim()).ok_or_else(|| anyhow!("unknown stage `{name}`: the stages are smoke, shapes, numerics, determinism, edges")))
            .collect::<Result<Vec<_>>>()?
    };
    let text = read_source(&args.file)?;
    let (target, note) = job::target(&args.file, &args.kernel, args.spec.as_deref(), &text)?;
    if let Some(note) = note {
        eprintln!("{note}");
    }
    let (in_file, notes) = job::configuration_in_file(&text, &target.kernel);
    for note in notes {
        eprintln!("{}: {note}", args.file.display());
    }
    let config = match &args.config {
        Some(assignments) => job::configuration_with(&in_file, assignments).map_err(|e| anyhow!("--config: {e}"))?,
        None => in_file,
    };
    let workspace = job::workspace_for(&args.file, args.workspace.as_deref());
    let store = Store::open(&workspace)?;
    let default = crate::space::Configuration::default_of(&target.kernel);
    let (mut runner, nvrtc) = job::start_tools(args.device, None, args.nvrtc.as_deref(), default)?;
    let target = target.on_device(runner.device());
    let tools = tune::Tools { nvrtc: nvrtc.as_ref(), cache: CubinCache::new(job::cubin_dir(&workspace)), store: &store, ceilings_dir: crate::sol::cache::default_dir() };
    let report = verification::verify_configuration(&target, runner.as_mut(), &tools, &config, &stages, args.keep_going, &|| false)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", table(&report, &runner.device().name));
    }
    if report.failure().is_some() {
        bail!("{} {}: {}", report.kernel, report.config, report.summary());
    }
    Ok(())
}

fn table(report: &Report, device: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "`{}` {} against the original, on {device}:", report.kernel, report.config);
    for case in &report.cases {
        let status = match &case.status {
            CaseStatus::Pass { max_abs_error, max_rel_error } => format!("ok (max abs error {max_abs_error:.2e}, max rel error {max_rel_error:.2e})"),
            CaseStatus::Fail { finding } => format!("FAILED: {finding}"),
            CaseStatus::BaselineFailed { message } => format!("not compared: the original fails here ({})", message.lines().next().unwrap_or_default()),
        };
        let _ = writeln!(out, "  {}. {:<12} {:<48} {:>6.1} ms  {status}", case.stage.number(), case.stage.name(), case.label, case.seconds * 1e3);
    }
    for skipped in &report.skipped {
        let what = if skipped.covered_by.is_some() { "not repeated" } else { "skipped" };
        let _ = writeln!(out, "  {}. {:<12} {:<48} {:>9}  {what}: {}", skipped.stage.number(), skipped.stage.name(), skipped.label, "", skipped.why);
    }
    if report.not_run > 0 {
        let _ = writeln!(out, "  ({} more cases not run after the first failure; --keep-going runs them)", report.not_run);
    }
    let _ = writeln!(out, "{} in {:.2} s", report.summary(), report.seconds);
    out
}
