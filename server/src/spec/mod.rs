//! The tuning spec: a TOML file beside the `.cu` file (see `docs/spec.md`).
//!
//! - `model`: the data, through serde.
//! - [`expr`]: the expression language of grid, block, lengths, restrictions and SOL.
//! - [`parse_spec`] (in `validate`) / [`render_spec`] (in `render`): text to model with
//!   positioned diagnostics, and back.
//! - [`t1`]: import from and export to the T1 tuning-problem format (Kernel Tuner, KTT).

pub mod expr;
mod model;
mod render;
pub mod t1;
mod validate;

pub use model::*;
pub use render::render_spec;
pub use validate::{default_environment, line_column, parse_spec, sha256_hex, Severity, SpecDiagnostic};

#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};

/// The spec beside a source file: `foo.cu` → `foo.cutune.toml`.
pub fn spec_path_for(source: &Path) -> PathBuf {
    let stem = source.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    source.with_file_name(format!("{stem}.cutune.toml"))
}

/// `file` with `kernel` added, replacing an earlier spec of the same kernel.
pub fn with_kernel(mut file: SpecFile, kernel: KernelSpec) -> SpecFile {
    match file.kernels.iter_mut().find(|k| k.name == kernel.name) {
        Some(existing) => *existing = kernel,
        None => file.kernels.push(kernel),
    }
    file
}
