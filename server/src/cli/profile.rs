//! `cutune profile -- CMD [ARGS...]` and `cutune profile --import FILE`: rank a program's kernels
//! by their share of its GPU time, say which the workspace defines, and capture launches.

use std::fmt::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::profile::job::{profile, ProfileRequest, SavedCapture};
use crate::profile::run::ProgramIo;
use crate::profile::{format_ns, Origin, Ranking};
use crate::workspace::find_root;

#[derive(clap::Args)]
pub struct ProfileArgs {
    /// Rank the kernels of an existing profile instead of running anything: a PyTorch profiler
    /// trace (JSON) or an Nsight Systems SQLite export.
    #[arg(long, value_name = "FILE", conflicts_with = "command")]
    import: Option<PathBuf>,
    /// Capture launches of this kernel (its source name or mangled name); repeatable.
    #[arg(long = "kernel", value_name = "NAME", conflicts_with = "import")]
    kernels: Vec<String>,
    /// Capture the N workspace kernels with the largest shares: the program runs twice, once to
    /// rank, once to capture.
    #[arg(long, value_name = "N", default_value_t = 0, conflicts_with = "import")]
    capture: usize,
    /// Distinct launch shapes to capture per kernel.
    #[arg(long, value_name = "K", default_value_t = 1)]
    shapes: usize,
    /// Most buffer bytes one capture keeps; a launch over it keeps its arguments only.
    #[arg(long, value_name = "BYTES", default_value_t = 1 << 30)]
    capture_bytes: u64,
    /// The workspace whose sources the kernels are looked up in, and whose `.cutune/` receives
    /// the profile and captures (default: the nearest root above the current folder).
    #[arg(long, value_name = "DIR")]
    root: Option<PathBuf>,
    /// Print the ranking and captures as JSON.
    #[arg(long)]
    json: bool,
    /// The program to profile, and its arguments.
    #[arg(last = true, value_name = "CMD")]
    command: Vec<String>,
}

pub fn run(args: &ProfileArgs) -> Result<()> {
    let cwd = std::env::current_dir().context("cannot read the current folder")?;
    let request = ProfileRequest {
        command: args.command.clone(),
        import: args.import.clone(),
        kernels: args.kernels.clone(),
        capture_top: args.capture,
        shapes_per_kernel: args.shapes,
        capture_bytes: args.capture_bytes,
        root: args.root.clone().unwrap_or_else(|| find_root(&cwd)),
        directory: cwd,
        io: if args.json { ProgramIo::OutputToStderr } else { ProgramIo::Inherit },
    };
    let profiled = profile(&request)?;
    if args.json {
        let report = Report { origin: &profiled.origin, ranking: &profiled.ranking, captures: &profiled.captures, problems: &profiled.problems };
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", render(&profiled.origin, &profiled.ranking, &profiled.captures, &request.root));
    }
    for problem in &profiled.problems {
        eprintln!("warning: {problem}");
    }
    Ok(())
}

#[derive(serde::Serialize)]
struct Report<'a> {
    origin: &'a Origin,
    ranking: &'a Ranking,
    captures: &'a [SavedCapture],
    problems: &'a [String],
}

fn render(origin: &Origin, ranking: &Ranking, captures: &[SavedCapture], root: &Path) -> String {
    let mut out = String::new();
    let other = ranking.gpu_ns - ranking.kernel_ns;
    let _ = writeln!(
        out,
        "{}: {} of GPU time, {} in {} kernels{}",
        origin.describe(),
        format_ns(ranking.gpu_ns),
        format_ns(ranking.kernel_ns),
        ranking.kernels.len(),
        if other > 0 { format!(", {} in copies and sets", format_ns(other)) } else { String::new() }
    );
    let _ = writeln!(out, "{:>7}  {:>10}  {:>8}  {:<40}  source", "share", "GPU time", "launches", "kernel");
    for kernel in &ranking.kernels {
        let source = match &kernel.source {
            Some(s) => format!("{}:{}", relative(&s.file, root).display(), s.line),
            None => "not in the workspace".into(),
        };
        let tuned = kernel.tuned.map(|t| format!(" · tuned {:.2}×: saves {:.1}% of the GPU time", t.speedup, t.gain * 100.0)).unwrap_or_default();
        let _ = writeln!(
            out,
            "{:>6.1}%  {:>10}  {:>8}  {:<40}  {source}{tuned}",
            kernel.share * 100.0,
            format_ns(kernel.total_ns),
            kernel.launches,
            shorten(&kernel.kernel.display(), 40)
        );
    }
    for capture in captures {
        let omitted = capture.buffers_omitted.as_ref().map(|why| format!("; buffers not kept: {why}")).unwrap_or_default();
        let _ = writeln!(
            out,
            "captured {}: grid {}, block {}, {} arguments, {} of buffers{omitted} -> {}",
            capture.kernel,
            dims(capture.grid),
            dims(capture.block),
            capture.arguments,
            crate::syntax::format_bytes(capture.buffer_bytes),
            relative(&capture.path, root).display()
        );
    }
    out
}

fn relative<'a>(path: &'a Path, root: &Path) -> &'a Path {
    path.strip_prefix(root).unwrap_or(path)
}

fn dims(d: [u32; 3]) -> String {
    format!("{}×{}×{}", d[0], d[1], d[2])
}

fn shorten(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_string();
    }
    let kept: String = text.chars().take(width - 1).collect();
    format!("{kept}…")
}
