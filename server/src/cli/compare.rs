//! `cutune compare FILE --kernel NAME --candidate OTHER.cu[:KERNEL]`: another implementation of
//! a kernel (an agent's or a person's rewrite) against the original, on the GPU.

use std::path::{Path, PathBuf};

use anyhow::{bail, Result};

use crate::tune::job::{self, Comparison};
use crate::tune::{Silent, TuneOptions};

#[derive(clap::Args)]
pub struct CompareArgs {
    /// The CUDA source file of the original kernel; its spec is read from beside it.
    pub file: PathBuf,
    #[arg(long)]
    pub kernel: String,
    /// The other implementation: `OTHER.cu` (its kernel named like the original) or
    /// `OTHER.cu:NAME`. It must take the same parameters; it launches as the original does.
    #[arg(long, value_name = "FILE[:KERNEL]")]
    pub candidate: String,
    /// The tuning spec to use instead of the one beside the file.
    #[arg(long)]
    pub spec: Option<PathBuf>,
    #[arg(long, default_value_t = 0)]
    pub device: u32,
    #[arg(long)]
    pub nvrtc: Option<PathBuf>,
    /// Where `.cutune/` (results and cubin cache) lives [default: the file's folder].
    #[arg(long)]
    pub workspace: Option<PathBuf>,
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: &CompareArgs) -> Result<()> {
    let (candidate, candidate_kernel) = candidate_of(&args.candidate)?;
    let request = job::FileTune {
        file: &args.file,
        kernel: &args.kernel,
        spec: args.spec.as_deref(),
        workspace: args.workspace.as_deref(),
        replay: None,
        device: args.device,
        nvrtc: args.nvrtc.as_deref(),
        no_cache: false,
        strategy: None,
        options: TuneOptions::brute_force(Some(1)),
    };
    let (tuned, _) = job::compare_file(request, &candidate, candidate_kernel.as_deref(), |_, note| {
        if let Some(note) = note {
            eprintln!("{note}");
        }
        Silent
    })?;
    let comparison = Comparison::of(&tuned?.report);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&comparison)?);
    } else {
        print!("{}", text(&comparison, &args.kernel, &args.candidate));
    }
    if !comparison.verified {
        bail!("{} is not verified against `{}`", args.candidate, args.kernel);
    }
    Ok(())
}

/// `OTHER.cu` or `OTHER.cu:NAME`, the file named as an existing path.
pub fn candidate_of(text: &str) -> Result<(PathBuf, Option<String>)> {
    if let Some((file, name)) = text.rsplit_once(':') {
        if crate::syntax::is_identifier(name) && Path::new(file).is_file() {
            return Ok((PathBuf::from(file), Some(name.to_string())));
        }
    }
    if !Path::new(text).is_file() {
        bail!("{text}: no such file");
    }
    Ok((PathBuf::from(text), None))
}

fn text(c: &Comparison, kernel: &str, candidate: &str) -> String {
    let us = |t: Option<f64>| t.map_or_else(|| "-".to_string(), |t| format!("{t:.2} µs"));
    let mut out = format!("{candidate} against `{kernel}` on {}, in the same run:\n", c.measured_on);
    out += &format!("  original   {}\n  candidate  {}", us(c.original_us), us(c.candidate_us));
    if let Some(speedup) = c.speedup {
        out += &format!("  ({speedup:.2}×)");
    }
    if let (Some(bound), Some(percent)) = (c.bound_us, c.sol_percent) {
        out += &format!(", {percent:.0}% of the {bound:.2} µs speed-of-light bound");
    }
    out += "\n";
    out += &match &c.failure {
        None => "verified: it matches the original on the spec's shapes and passes the five verification stages\n".to_string(),
        Some(failure) => format!("NOT verified: {failure}\n"),
    };
    out
}
