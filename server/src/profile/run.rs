//! Running the user's program under the capture library: where the library and CUPTI are, the
//! environment that loads them, and what the run left behind.

use std::path::{Path, PathBuf};
use std::process::ExitStatus;

use anyhow::{bail, Context, Result};
use cutune_capture::report::{CaptureFile, RunProfile, CAPTURE_EXTENSION};

use super::{GpuTimes, KernelTime};

/// Names the capture library when it is not beside the `cutune` binary.
pub const LIBRARY_ENV: &str = "CUTUNE_CAPTURE_LIBRARY";
const LIBRARY_FILE: &str = "libcutune_capture.so";
const CUPTI_FILES: [&str; 3] = ["libcupti.so", "libcupti.so.13", "libcupti.so.12"];

/// What to capture besides the times.
#[derive(Debug, Clone, Default)]
pub struct CaptureRequest {
    /// Kernel names (source names or mangled); empty: times only.
    pub kernels: Vec<String>,
    pub shapes_per_kernel: usize,
    pub cap_bytes: u64,
}

/// A finished run: the program's exit status, what each of its CUDA processes reported, and
/// the captures they wrote (still in the run's temporary folder).
pub struct Run {
    pub status: ExitStatus,
    pub profiles: Vec<RunProfile>,
    pub captures: Vec<CaptureFile>,
    /// Why the library could not start in some process, or a capture that could not be read.
    pub problems: Vec<String>,
    /// Holds the captures until they are moved into the workspace.
    pub folder: tempfile::TempDir,
}

impl Run {
    pub fn gpu_times(&self) -> GpuTimes {
        let mut times = GpuTimes::default();
        for profile in &self.profiles {
            times.kernels.extend(profile.kernels.iter().map(|k| KernelTime { name: k.name.clone(), launches: k.launches, total_ns: k.total_ns }));
            times.other_ns += profile.memcpy_ns + profile.memset_ns;
        }
        times
    }
}

/// The capture library: `CUTUNE_CAPTURE_LIBRARY`, else beside the running `cutune`.
pub fn capture_library() -> Result<PathBuf> {
    if let Some(path) = std::env::var_os(LIBRARY_ENV).filter(|v| !v.is_empty()) {
        let path = PathBuf::from(path);
        if !path.is_file() {
            bail!("{LIBRARY_ENV}={}: no such file", path.display());
        }
        return Ok(path);
    }
    let exe = std::env::current_exe().context("cannot find the running cutune binary")?;
    let beside = exe.with_file_name(LIBRARY_FILE);
    if beside.is_file() {
        return Ok(beside);
    }
    bail!(
        "the capture library {LIBRARY_FILE} is not beside {} ; build it with `cargo build --release` (it is part of the workspace) or set {LIBRARY_ENV}",
        exe.display()
    )
}

/// CUPTI: `CUTUNE_CUPTI`, a toolkit (`CUDA_HOME`, `/usr/local/cuda`), or pip's
/// `nvidia-cuda-cupti-cu12` / `nvidia-cuda-cupti` (CUDA 13). `None`: leave it to the loader.
pub fn cupti_library() -> Result<Option<PathBuf>> {
    if let Some(path) = std::env::var_os(cutune_capture::ENV_CUPTI).filter(|v| !v.is_empty()) {
        let path = PathBuf::from(path);
        if !path.is_file() {
            bail!("{}={}: no such file", cutune_capture::ENV_CUPTI, path.display());
        }
        return Ok(Some(path));
    }
    let mut folders: Vec<PathBuf> = Vec::new();
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if let Some(root) = std::env::var_os(var).filter(|v| !v.is_empty()) {
            folders.extend(toolkit_folders(Path::new(&root)));
        }
    }
    folders.extend(toolkit_folders(Path::new("/usr/local/cuda")));
    for site in crate::compile::site_packages() {
        folders.extend(["nvidia/cu13/lib", "nvidia/cuda_cupti/lib"].map(|sub| site.join(sub)));
    }
    Ok(folders.iter().flat_map(|folder| CUPTI_FILES.map(|name| folder.join(name))).find(|path| path.is_file()))
}

fn toolkit_folders(root: &Path) -> [PathBuf; 3] {
    [root.join("lib64"), root.join("extras/CUPTI/lib64"), root.join("targets/x86_64-linux/lib")]
}

/// Where the profiled program's standard streams go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProgramIo {
    /// Ours: it reads our input and writes to our output.
    Inherit,
    /// Its output to our standard error, because ours carries a report.
    OutputToStderr,
    /// No input, its output to our standard error: ours carry a protocol.
    Detached,
}

/// Runs `command` with the capture library injected, its streams as `io` says, and collects
/// what the library wrote.
pub fn run(command: &[String], request: &CaptureRequest, directory: &Path, io: ProgramIo) -> Result<Run> {
    let Some((program, args)) = command.split_first() else { bail!("no command to profile: give it after `--`") };
    let library = capture_library()?;
    let cupti = cupti_library()?;
    let folder = tempfile::Builder::new().prefix("cutune-profile-").tempdir().context("cannot make a folder for the run's profile")?;
    let mut process = std::process::Command::new(program);
    process
        .args(args)
        .current_dir(directory)
        .env("CUDA_INJECTION64_PATH", &library)
        .env(cutune_capture::ENV_OUT, folder.path())
        .env(cutune_capture::ENV_CAPTURE, request.kernels.join(","))
        .env(cutune_capture::ENV_CAPTURE_SHAPES, request.shapes_per_kernel.max(1).to_string())
        .env(cutune_capture::ENV_CAPTURE_BYTES, request.cap_bytes.to_string());
    if let Some(cupti) = &cupti {
        process.env(cutune_capture::ENV_CUPTI, cupti);
    }
    if io != ProgramIo::Inherit {
        process.stdout(std::io::stderr());
    }
    if io == ProgramIo::Detached {
        process.stdin(std::process::Stdio::null());
    }
    let status = process.status().with_context(|| format!("cannot run `{program}`"))?;
    collect(status, folder)
}

/// Reads the profiles, failures and captures a run left in `folder`.
fn collect(status: ExitStatus, folder: tempfile::TempDir) -> Result<Run> {
    let mut profiles = Vec::new();
    let mut captures = Vec::new();
    let mut problems = Vec::new();
    let mut entries: Vec<PathBuf> = std::fs::read_dir(folder.path())
        .with_context(|| format!("cannot read {}", folder.path().display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    for path in entries {
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        if name.starts_with("profile-") && name.ends_with(".json") {
            let text = std::fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))?;
            let profile: RunProfile = serde_json::from_str(&text).with_context(|| format!("the capture library wrote an unreadable profile {name}"))?;
            problems.extend(profile.problems.iter().cloned());
            profiles.push(profile);
        } else if name.starts_with("failure-") {
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            problems.push(format!("the capture library could not start: {}", text.trim()));
        } else if path.extension().is_some_and(|e| e == CAPTURE_EXTENSION) {
            match CaptureFile::open(&path) {
                Ok(capture) => captures.push(capture),
                Err(e) => problems.push(e.to_string()),
            }
        }
    }
    Ok(Run { status, profiles, captures, problems, folder })
}
