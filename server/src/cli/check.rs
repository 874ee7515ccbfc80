//! `cutune check FILE --kernel NAME [--arch sm_90]`: compile the default configuration and a
//! sample of the space (or all of it) with NVRTC, without a GPU, and report each
//! configuration's registers, spills and shared memory, or why it cannot run.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;

use crate::compile::check::Status;
use crate::tune::job::{check_file, FileCheck, FileChecked};

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

pub fn run(args: &CheckArgs) -> Result<ExitCode> {
    let request = FileCheck {
        file: &args.file,
        kernel: &args.kernel,
        arch: &args.arch,
        sample: (!args.all).then_some(args.sample),
        seed: args.seed,
        shard: args.shard,
        jobs: args.jobs,
        nvrtc: args.nvrtc.as_deref(),
    };
    let report = check_file(request)?;
    for note in &report.notes {
        eprintln!("{note}");
    }
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

fn table(report: &FileChecked) -> String {
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
