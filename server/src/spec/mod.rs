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
pub use validate::{default_environment, environment, line_column, names_blocks_per_sm, parse_spec, sha256_hex, sizes_of, Severity, SpecDiagnostic};

#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};

/// The spec beside a source file: `foo.cu` → `foo.cutune.toml`.
pub fn spec_path_for(source: &Path) -> PathBuf {
    let stem = source.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    source.with_file_name(format!("{stem}.cutune.toml"))
}

/// `file` with the scaffold `kernel` merged in. A kernel the spec already has keeps everything
/// in its entry (the user's edits, and above all its baseline, the truly original kernel, which
/// a second templatize can no longer see); only parameters new to it are added, and parameters
/// the source no longer has are removed.
pub fn with_kernel(mut file: SpecFile, kernel: KernelSpec) -> SpecFile {
    match file.kernels.iter_mut().find(|k| k.name == kernel.name) {
        Some(existing) => {
            existing.params.retain(|p| kernel.params.iter().any(|n| n.name == p.name));
            for param in kernel.params {
                if !existing.params.iter().any(|p| p.name == param.name) {
                    existing.params.push(param);
                }
            }
        }
        None => file.kernels.push(kernel),
    }
    file
}

/// Splits at `sep` outside brackets and parentheses.
pub(crate) fn split_top_level(text: &str, sep: char) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in text.char_indices() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            c if c == sep && depth == 0 => {
                parts.push(&text[start..i]);
                start = i + c.len_utf8();
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}
