//! cutune's capture library.
//!
//! `cutune profile` runs a program with this library named in `CUDA_INJECTION64_PATH`. The CUDA
//! driver loads it at initialisation and calls [`InitializeInjection`]; from there CUPTI's
//! activity API times every kernel, and its callback API captures the launches asked for. What
//! it finds goes to files in the folder `CUTUNE_PROFILE_OUT` names, in the format of
//! [`report`], which `cutune` reads back.

pub mod report;

#[cfg(target_os = "linux")]
mod inject;

#[cfg(target_os = "linux")]
pub use inject::InitializeInjection;

/// The folder the library writes its profile and captures into (required).
pub const ENV_OUT: &str = "CUTUNE_PROFILE_OUT";
/// The CUPTI library to load; the loader's search path otherwise.
pub const ENV_CUPTI: &str = "CUTUNE_CUPTI";
/// Kernels to capture, comma-separated: mangled names, or source names (`scale`, `ns::scale`).
pub const ENV_CAPTURE: &str = "CUTUNE_CAPTURE";
/// How many distinct launch shapes of each kernel to capture (default 1).
pub const ENV_CAPTURE_SHAPES: &str = "CUTUNE_CAPTURE_SHAPES";
/// Most buffer bytes one capture keeps (default 1 GiB); a launch over it keeps its arguments only.
pub const ENV_CAPTURE_BYTES: &str = "CUTUNE_CAPTURE_BYTES";
/// When set, the library says on stderr what it loads and captures.
pub const ENV_DEBUG: &str = "CUTUNE_CAPTURE_DEBUG";
