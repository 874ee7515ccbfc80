//! `cutune report FILE --kernel NAME [-o PAGE.html]`: a kernel's latest tuning run as a
//! self-contained HTML page.

use std::path::PathBuf;

use anyhow::Result;

use crate::report::{self, ReportRequest};
use crate::tune::job::workspace_for;

#[derive(clap::Args)]
pub struct ReportArgs {
    /// The CUDA source file the kernel was tuned in.
    pub file: PathBuf,
    #[arg(long)]
    pub kernel: String,
    /// Where to write the page [default: .cutune/reports/FILE_STEM.KERNEL.html beside the results].
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Where `.cutune/` (the results) lives [default: the file's folder].
    #[arg(long)]
    pub workspace: Option<PathBuf>,
}

pub fn run(args: &ReportArgs) -> Result<()> {
    let workspace = workspace_for(&args.file, args.workspace.as_deref());
    let written = report::write(&ReportRequest { file: &args.file, kernel: &args.kernel, workspace: &workspace, output: args.output.as_deref() })?;
    eprintln!("{} evaluations of `{}` drawn", written.evaluations, args.kernel);
    println!("{}", written.path.display());
    Ok(())
}
