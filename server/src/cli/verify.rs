//! `cutune verify FILE --kernel NAME`: the five verification stages (docs/verify.md) on one
//! configuration (by default the one the file runs now) against the original kernel, on the
//! GPU. Exits non-zero when a stage fails.

use std::fmt::Write;
use std::path::PathBuf;

use anyhow::{anyhow, bail, Result};

use crate::tune::job;
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
    let request = job::FileVerify {
        file: &args.file,
        kernel: &args.kernel,
        spec: args.spec.as_deref(),
        workspace: args.workspace.as_deref(),
        device: args.device,
        nvrtc: args.nvrtc.as_deref(),
        config: args.config.as_deref(),
        stages: &stages,
        keep_going: args.keep_going,
    };
    let (report, device) = job::verify_file(request, &mut |note| eprintln!("{note}"), &|| false)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", table(&report, &device));
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
