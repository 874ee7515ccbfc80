//! Compiling kernels with NVRTC, through cudarc, on the CPU: PTX, cubins, resource usage.
//!
//! No GPU is needed. [`Nvrtc::locate`] finds `libnvrtc` (see [`locate`] for where it looks and
//! how cudarc is made to use that exact file); [`Nvrtc::compile`] builds one program and reports
//! the PTX, the cubin, the lowered names of template instantiations and, from ptxas' verbose
//! output, each kernel's registers, spills, stack and static shared memory.
//!
//! PTX is a pure function of the source, file name, options and NVRTC version: two compiles of
//! the same request give byte-identical text (tested). The header comments name the compiler
//! build (`// Cuda compilation tools, release 12.9, V12.9.86`), so PTX from different NVRTC
//! versions differs there; the file name appears only with `-lineinfo` or `-G` (`.file`).

pub mod batch;
pub mod check;
mod layout;
mod locate;
mod log;
pub mod pool;
mod program;

use std::ffi::CString;
use std::path::{Path, PathBuf};

pub use locate::{site_packages, Attempt, NvrtcNotFound, INSTALL_HINT, NVRTC_ENV};
pub use layout::{resolve_struct_layouts, struct_layout};
pub use pool::{parallel_map, Built, CompilePool, Compiled, CubinCache, Failed};
pub use log::{failure_reason, parse_diagnostics, parse_resources, FailureReason, STATIC_SHARED_LIMIT, CompileDiagnostic, KernelResources, Severity};

use program::Program;

/// A usable NVRTC: loaded, bound to cudarc, its version known. Cheap to clone; every method may
/// be called from several threads at once (NVRTC programs are independent).
#[derive(Debug, Clone)]
pub struct Nvrtc {
    library: PathBuf,
    include_dir: Option<PathBuf>,
    library_include_dirs: Vec<PathBuf>,
    version: (i32, i32),
}

/// What to compile and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompileRequest {
    pub source: String,
    /// The name NVRTC gives the source in diagnostics, e.g. `kernel.cu`.
    pub file_name: String,
    /// A real architecture, `sm_90`, `sm_90a`, `sm_100f`; `compute_90` also works when no cubin is asked for.
    pub arch: String,
    /// Extra NVRTC options, passed last, e.g. `--use_fast_math`, `--maxrregcount=32`.
    pub options: Vec<String>,
    /// `-DNAME=VALUE`; an empty value gives `-DNAME`.
    pub defines: Vec<(String, String)>,
    /// `-I` directories searched before the CUDA headers.
    pub include_dirs: Vec<PathBuf>,
    /// Template instantiations to emit and name, e.g. `rmsnorm<256, 4>`.
    pub name_expressions: Vec<String>,
    /// Also run ptxas: produces the cubin and the per-kernel resource usage.
    pub cubin: bool,
}

impl CompileRequest {
    /// A request for PTX and a cubin with no extra options.
    pub fn new(source: impl Into<String>, file_name: impl Into<String>, arch: impl Into<String>) -> CompileRequest {
        CompileRequest {
            source: source.into(),
            file_name: file_name.into(),
            arch: arch.into(),
            options: Vec::new(),
            defines: Vec::new(),
            include_dirs: Vec::new(),
            name_expressions: Vec::new(),
            cubin: true,
        }
    }
}

/// The results of a successful compile.
#[derive(Debug, Clone)]
pub struct CompileOutput {
    pub ptx: String,
    /// Present when the request asked for it.
    pub cubin: Option<Vec<u8>>,
    /// NVRTC's log as given: warnings and, with a cubin, ptxas' resource report.
    pub log: String,
    /// Warnings and remarks from the log.
    pub diagnostics: Vec<CompileDiagnostic>,
    /// Each name expression with its mangled name, in request order.
    pub lowered_names: Vec<(String, String)>,
    /// Per-kernel resource usage from ptxas, in the order ptxas reported them; empty without a cubin.
    pub kernels: Vec<KernelResources>,
    /// The options passed to NVRTC, for caching keys and for reproducing the compile.
    pub options: Vec<String>,
}

/// A compile that did not produce code: a rejected request, an NVRTC API failure or errors in
/// the source (then `diagnostics` holds them, with lines).
#[derive(Debug, Clone)]
pub struct CompileFailure {
    /// One line saying what failed, e.g. `kernel.cu: 2 errors (nvrtcCompileProgram failed: NVRTC_ERROR_COMPILATION)`.
    pub message: String,
    pub log: String,
    pub diagnostics: Vec<CompileDiagnostic>,
}

impl std::fmt::Display for CompileFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)?;
        if !self.log.trim().is_empty() {
            write!(f, "\n{}", self.log.trim_end())?;
        }
        Ok(())
    }
}

impl std::error::Error for CompileFailure {}

impl CompileFailure {
    fn request(file_name: &str, why: impl std::fmt::Display) -> CompileFailure {
        CompileFailure { message: format!("{file_name}: invalid compile request: {why}"), log: String::new(), diagnostics: Vec::new() }
    }
}

impl Nvrtc {
    /// Finds and loads NVRTC. `explicit` is a library file or a directory holding one (an editor
    /// setting); it wins over `CUTUNE_NVRTC`. Without either, looks at `CUDA_HOME`, `CUDA_PATH`,
    /// `/usr/local/cuda`, the dynamic loader path and pip installs, in that order.
    pub fn locate(explicit: Option<&Path>) -> Result<Nvrtc, NvrtcNotFound> {
        let found = locate::locate(explicit)?;
        Ok(Nvrtc { library: found.library, include_dir: found.include_dir, library_include_dirs: found.library_include_dirs, version: found.version })
    }

    /// NVRTC's (major, minor) version, e.g. (12, 9).
    pub fn version(&self) -> (i32, i32) {
        self.version
    }

    /// The library file in use.
    pub fn library_path(&self) -> &Path {
        &self.library
    }

    /// The CUDA headers (`cuda_fp16.h` and friends) passed to every compile with `-I`, if found.
    pub fn include_dir(&self) -> Option<&Path> {
        self.include_dir.as_deref()
    }

    /// The options [`Nvrtc::compile`] passes for `request`, in order.
    pub fn options_for(&self, request: &CompileRequest) -> Result<Vec<String>, CompileFailure> {
        let file = &request.file_name;
        validate_arch(&request.arch, request.cubin).map_err(|why| CompileFailure::request(file, why))?;
        let mut options = vec![format!("--gpu-architecture={}", request.arch)];
        options.extend(request.include_dirs.iter().map(|d| format!("--include-path={}", d.display())));
        for dir in self.include_dir.iter().chain(&self.library_include_dirs) {
            options.push(format!("--include-path={}", dir.display()));
        }
        for (name, value) in &request.defines {
            let is_identifier = name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !is_identifier {
                return Err(CompileFailure::request(file, format!("define name `{name}` is not an identifier")));
            }
            options.push(if value.is_empty() { format!("-D{name}") } else { format!("-D{name}={value}") });
        }
        if request.cubin {
            // ptxas' verbose report is the only source of per-kernel resources without a GPU.
            options.push("--ptxas-options=-v".to_string());
        }
        options.extend(request.options.iter().cloned());
        Ok(options)
    }

    /// Compiles a trivial program, so that NVRTC's one-off start-up (about 250 ms on an H100
    /// host) is paid now, in parallel with other start-up work, not by the first real compile.
    pub fn warm_up(&self) {
        let request = CompileRequest { cubin: false, ..CompileRequest::new("__global__ void cutune_warm_up() {}\n", "warm_up.cu", "compute_75") };
        let _ = self.compile(&request);
    }

    /// Compiles one program. Thread-safe: call it from a pool of threads.
    pub fn compile(&self, request: &CompileRequest) -> Result<CompileOutput, CompileFailure> {
        let file = &request.file_name;
        let options = self.options_for(request)?;
        let c_options = options
            .iter()
            .map(|o| to_c(o, "option"))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|why| CompileFailure::request(file, why))?;
        let source = to_c(&request.source, "source").map_err(|why| CompileFailure::request(file, why))?;
        let c_file = to_c(file, "file name").map_err(|why| CompileFailure::request(file, why))?;
        let expressions = request
            .name_expressions
            .iter()
            .map(|e| to_c(e, "name expression"))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|why| CompileFailure::request(file, why))?;

        let api_failure = |e: program::CallFailed, log: String| CompileFailure {
            message: format!("{file}: {e}"),
            diagnostics: parse_diagnostics(&log),
            log,
        };
        let program = Program::new(&source, &c_file).map_err(|e| api_failure(e, String::new()))?;
        for expression in &expressions {
            program.add_name_expression(expression).map_err(|e| api_failure(e, String::new()))?;
        }
        let compiled = program.compile(&c_options);
        let log = program.log().map_err(|e| api_failure(e, String::new()))?;
        if let Err(e) = compiled {
            let diagnostics = parse_diagnostics(&log);
            let errors = diagnostics.iter().filter(|d| d.severity == Severity::Error).count();
            let summary = match errors {
                0 => String::new(),
                1 => "1 error ".to_string(),
                n => format!("{n} errors "),
            };
            return Err(CompileFailure { message: format!("{file}: {summary}({e})"), log, diagnostics });
        }
        let ptx = program.ptx().map_err(|e| api_failure(e, log.clone()))?;
        let cubin = if request.cubin { Some(program.cubin().map_err(|e| api_failure(e, log.clone()))?) } else { None };
        let mut lowered_names = Vec::with_capacity(expressions.len());
        for (expression, c_expression) in request.name_expressions.iter().zip(&expressions) {
            let lowered = program.lowered_name(c_expression).map_err(|e| api_failure(e, log.clone()))?;
            lowered_names.push((expression.clone(), lowered));
        }
        let kernels = if request.cubin { parse_resources(&log) } else { Vec::new() };
        let diagnostics = parse_diagnostics(&log);
        Ok(CompileOutput { ptx, cubin, log, diagnostics, lowered_names, kernels, options })
    }
}

fn to_c(text: &str, what: &str) -> Result<CString, String> {
    CString::new(text).map_err(|e| format!("{what} contains a NUL byte at offset {}", e.nul_position()))
}

/// Accepts `sm_NN`, `sm_NNN` with an optional `a`/`f` suffix, and `compute_…` when only PTX is wanted.
fn validate_arch(arch: &str, cubin: bool) -> Result<(), String> {
    let (family, rest) = if let Some(rest) = arch.strip_prefix("sm_") {
        ("sm", rest)
    } else if let Some(rest) = arch.strip_prefix("compute_") {
        ("compute", rest)
    } else {
        return Err(format!("architecture `{arch}` is not of the form sm_90 or compute_90"));
    };
    let digits = rest.strip_suffix(['a', 'f']).unwrap_or(rest);
    if !(2..=3).contains(&digits.len()) || !digits.chars().all(|c| c.is_ascii_digit()) {
        return Err(format!("architecture `{arch}` is not of the form sm_90, sm_90a or sm_100f"));
    }
    if cubin && family == "compute" {
        return Err(format!("a cubin needs a real architecture (sm_{rest}), not the virtual `{arch}`"));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
