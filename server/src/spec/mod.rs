//! The tuning spec: a TOML file beside the `.cu` file (see `docs/spec.md`).

mod model;

pub use model::*;

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

/// The TOML text of a spec file.
pub fn render_spec(file: &SpecFile) -> String {
    toml::to_string(file).expect("a spec always serialises to TOML")
}
