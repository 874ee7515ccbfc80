//! A profile as the CLI and the MCP server ask for it: run the program (or read a profile the
//! user has), rank its kernels, locate them in the workspace, capture launches, and record the
//! profile in the store.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use cutune_capture::report::CaptureFile;

use super::run::{self, CaptureRequest, ProgramIo};
use super::{captured, import, locate_kernels, rank, share, Origin, Ranking};
use crate::store::Store;
use crate::workspace::{Limits, Workspace};

pub struct ProfileRequest {
    /// The program and its arguments; empty when `import` is given.
    pub command: Vec<String>,
    /// A PyTorch profiler trace or an Nsight Systems SQLite export to rank instead of running.
    pub import: Option<PathBuf>,
    /// Kernels whose launches to capture.
    pub kernels: Vec<String>,
    /// Capture the N workspace kernels with the largest shares (a second run).
    pub capture_top: usize,
    pub shapes_per_kernel: usize,
    pub capture_bytes: u64,
    /// Where the kernels are looked up, and whose `.cutune/` receives the profile and captures.
    pub root: PathBuf,
    /// The folder the program runs in.
    pub directory: PathBuf,
    pub io: ProgramIo,
}

/// A capture moved into the workspace.
#[derive(serde::Serialize, schemars::JsonSchema)]
pub struct SavedCapture {
    pub path: PathBuf,
    pub kernel: String,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub arguments: usize,
    pub buffer_bytes: u64,
    /// Why the buffers were not kept (over the byte limit), when they were not.
    pub buffers_omitted: Option<String>,
    pub seconds: f64,
}

pub struct Profiled {
    pub origin: Origin,
    pub ranking: Ranking,
    pub captures: Vec<SavedCapture>,
    /// What went wrong short of failing: a process the library could not start in, a kernel
    /// asked for that never ran.
    pub problems: Vec<String>,
}

/// Runs (or imports) the profile, ranks it, captures what was asked, and records it.
pub fn profile(request: &ProfileRequest) -> Result<Profiled> {
    let (origin, times, run) = match &request.import {
        Some(path) => {
            let (format, times) = import::import(path)?;
            (Origin::Import { path: path.clone(), format }, times, None)
        }
        None => {
            let first = run_program(request, &request.kernels)?;
            (Origin::Run { command: request.command.clone(), directory: request.directory.clone() }, first.gpu_times(), Some(first))
        }
    };
    let mut ranking = rank(&times);
    let workspace = Workspace::build(&request.root, Limits::default());
    locate_kernels(&workspace, &mut ranking.kernels);
    share::attach_tuned_gains(&mut ranking);

    let mut problems: Vec<String> = run.as_ref().map(|r| r.problems.clone()).unwrap_or_default();
    let mut captured = run;
    if request.capture_top > 0 && request.kernels.is_empty() {
        let chosen: Vec<String> = ranking.kernels.iter().filter(|k| k.source.is_some()).take(request.capture_top).map(|k| k.name.clone()).collect();
        if chosen.is_empty() {
            problems.push("no kernel of the workspace ran, so none was captured".into());
        } else {
            let second = run_program(request, &chosen)?;
            problems.extend(second.problems.iter().cloned());
            captured = Some(second);
        }
    }
    let captures = match &captured {
        Some(run) => save_captures(&request.root, &run.captures, &ranking)?,
        None => Vec::new(),
    };
    problems.extend(never_launched(&request.kernels, &ranking));
    Store::open(&request.root)?.record_profile(&origin.describe(), &ranking)?;
    Ok(Profiled { origin, ranking, captures, problems })
}

/// Runs the program once, capturing `kernels`.
fn run_program(request: &ProfileRequest, kernels: &[String]) -> Result<run::Run> {
    let capture = CaptureRequest { kernels: kernels.to_vec(), shapes_per_kernel: request.shapes_per_kernel, cap_bytes: request.capture_bytes };
    let finished = run::run(&request.command, &capture, &request.directory, request.io)?;
    let shown = shlex::try_join(request.command.iter().map(String::as_str)).unwrap_or_else(|_| request.command.join(" "));
    accepted(finished, &shown)
}

/// The run, if it profiled anything: a program that used CUDA and then failed (a check of its
/// own, a missing reference file) keeps its profile and captures with a warning; one that
/// failed before any CUDA, or never used it, is an error with its own status.
fn accepted(mut finished: run::Run, shown: &str) -> Result<run::Run> {
    if !finished.status.success() {
        if finished.profiles.is_empty() {
            bail!("`{shown}` failed ({}); its profile was not kept", finished.status);
        }
        finished.problems.push(format!("`{shown}` failed ({}) after using CUDA; its profile and captures are kept: check that they come from a run you meant", finished.status));
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
            .unwrap_or_else(|| super::kernel_name(&header.kernel).base);
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

#[cfg(test)]
mod tests {
    use std::os::unix::process::ExitStatusExt;
    use std::process::ExitStatus;

    use cutune_capture::report::RunProfile;

    use super::*;

    fn finished(code: i32, profiled: bool) -> run::Run {
        let profile = RunProfile { pid: 7, ..Default::default() };
        run::Run {
            status: ExitStatus::from_raw(code << 8),
            profiles: if profiled { vec![profile] } else { Vec::new() },
            captures: Vec::new(),
            problems: Vec::new(),
            folder: tempfile::tempdir().unwrap(),
        }
    }

    #[test]
    fn a_program_that_fails_after_using_cuda_keeps_its_profile_with_a_warning() {
        let run = accepted(finished(4, true), "./app --check").expect("kept");
        assert_eq!(run.problems, ["`./app --check` failed (exit status: 4) after using CUDA; its profile and captures are kept: check that they come from a run you meant"]);
        assert!(accepted(finished(0, true), "./app").unwrap().problems.is_empty());
    }

    #[test]
    fn a_program_that_fails_before_using_cuda_is_an_error_with_its_status() {
        let error = accepted(finished(3, false), "./app").err().expect("refused").to_string();
        assert_eq!(error, "`./app` failed (exit status: 3); its profile was not kept");
    }
}
