//! `cutune profile -- CMD [ARGS...]` and `cutune profile --import FILE`: rank a program's kernels
//! by their share of its GPU time, say which the workspace defines, and capture launches.

use std::fmt::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use cutune_capture::report::CaptureFile;

use crate::profile::run::{self, CaptureRequest};
use crate::profile::{self, captured, format_ns, import, locate_kernels, rank, share, Origin, Ranking};
use crate::store::Store;
use crate::workspace::{find_root, Limits, Workspace};

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

/// A capture moved into the workspace.
#[derive(serde::Serialize)]
struct SavedCapture {
    path: PathBuf,
    kernel: String,
    grid: [u32; 3],
    block: [u32; 3],
    arguments: usize,
    buffer_bytes: u64,
    buffers_omitted: Option<String>,
    seconds: f64,
}

#[derive(serde::Serialize)]
struct Report<'a> {
    origin: &'a Origin,
    ranking: &'a Ranking,
    captures: &'a [SavedCapture],
    problems: &'a [String],
}

pub fn run(args: &ProfileArgs) -> Result<()> {
    let cwd = std::env::current_dir().context("cannot read the current folder")?;
    let root = args.root.clone().unwrap_or_else(|| find_root(&cwd));
    let (origin, times, run) = match &args.import {
        Some(path) => {
            let (format, times) = import::import(path)?;
            (Origin::Import { path: path.clone(), format }, times, None)
        }
        None => {
            let first = run_program(args, &args.kernels)?;
            (Origin::Run { command: args.command.clone(), directory: cwd.clone() }, first.gpu_times(), Some(first))
        }
    };
    let mut ranking = rank(&times);
    let workspace = Workspace::build(&root, Limits::default());
    locate_kernels(&workspace, &mut ranking.kernels);
    share::attach_tuned_gains(&mut ranking);

    let mut problems: Vec<String> = run.as_ref().map(|r| r.problems.clone()).unwrap_or_default();
    let mut captured = run;
    if args.capture > 0 && args.kernels.is_empty() {
        let chosen: Vec<String> = ranking.kernels.iter().filter(|k| k.source.is_some()).take(args.capture).map(|k| k.name.clone()).collect();
        if chosen.is_empty() {
            problems.push("no kernel of the workspace ran, so none was captured".into());
        } else {
            let second = run_program(args, &chosen)?;
            problems.extend(second.problems.iter().cloned());
            captured = Some(second);
        }
    }
    let saved = match &captured {
        Some(run) => save_captures(&root, &run.captures, &ranking)?,
        None => Vec::new(),
    };
    problems.extend(never_launched(&args.kernels, &ranking));

    let store = Store::open(&root)?;
    store.record_profile(&origin.describe(), &ranking)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&Report { origin: &origin, ranking: &ranking, captures: &saved, problems: &problems })?);
    } else {
        print!("{}", render(&origin, &ranking, &saved, &root));
    }
    for problem in &problems {
        eprintln!("warning: {problem}");
    }
    Ok(())
}

/// Runs the program once, capturing `kernels`; a failed program or one that never used CUDA
/// is an error, with the program's own status.
fn run_program(args: &ProfileArgs, kernels: &[String]) -> Result<run::Run> {
    let request = CaptureRequest { kernels: kernels.to_vec(), shapes_per_kernel: args.shapes, cap_bytes: args.capture_bytes };
    let finished = run::run(&args.command, &request, args.json)?;
    let shown = shlex::try_join(args.command.iter().map(String::as_str)).unwrap_or_else(|_| args.command.join(" "));
    if !finished.status.success() {
        bail!("`{shown}` failed ({}); its profile was not kept", finished.status);
    }
    if finished.profiles.is_empty() {
        if let Some(problem) = finished.problems.first() {
            bail!("{problem}");
        }
        bail!("`{shown}` never initialised CUDA, so there is nothing to profile (the capture library was not loaded)");
    }
    Ok(finished)
}

/// The kernels asked for by name that no launch in the ranking matches.
fn never_launched(wanted: &[String], ranking: &Ranking) -> Vec<String> {
    wanted
        .iter()
        .filter(|name| !ranking.kernels.iter().any(|k| &k.name == *name || k.kernel.base == **name || k.kernel.qualified == **name))
        .map(|name| {
            let ran: Vec<String> = ranking.kernels.iter().take(8).map(|k| k.kernel.display()).collect();
            format!("kernel `{name}` was never launched, so it was not captured (launched: {})", if ran.is_empty() { "none".into() } else { ran.join(", ") })
        })
        .collect()
}

/// Moves captures into `<root>/.cutune/captures/`, named after their kernel; never overwrites.
fn save_captures(root: &Path, captures: &[CaptureFile], ranking: &Ranking) -> Result<Vec<SavedCapture>> {
    let folder = captured::captures_folder(root);
    if !captures.is_empty() {
        std::fs::create_dir_all(&folder).with_context(|| format!("cannot create {}", folder.display()))?;
    }
    let mut saved = Vec::new();
    for capture in captures {
        let header = &capture.capture;
        let base = ranking
            .kernels
            .iter()
            .find(|k| k.name == header.kernel)
            .map(|k| k.kernel.base.clone())
            .unwrap_or_else(|| profile::kernel_name(&header.kernel).base);
        let stem = captured::capture_stem(&base);
        let path = (0..).map(|i| folder.join(format!("{stem}-{i}.cutcap"))).find(|p| !p.exists()).expect("an unused name");
        move_file(&capture.path, &path)?;
        saved.push(SavedCapture {
            path,
            kernel: base,
            grid: header.grid,
            block: header.block,
            arguments: header.params.len(),
            buffer_bytes: header.params.iter().filter_map(|p| p.buffer.as_ref()).map(|b| b.bytes).sum(),
            buffers_omitted: header.buffers_omitted.clone(),
            seconds: header.seconds,
        });
    }
    Ok(saved)
}

/// A rename, or a copy and delete across file systems (the run's folder is under /tmp).
fn move_file(from: &Path, to: &Path) -> Result<()> {
    if std::fs::rename(from, to).is_ok() {
        return Ok(());
    }
    let partial = to.with_extension("partial");
    std::fs::copy(from, &partial).with_context(|| format!("cannot copy the capture to {}", partial.display()))?;
    std::fs::rename(&partial, to).with_context(|| format!("cannot name the capture {}", to.display()))?;
    let _ = std::fs::remove_file(from);
    Ok(())
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
