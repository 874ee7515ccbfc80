//! A kernel of a file on disk templatized in its workspace, as the CLI and the MCP server
//! offer it: the new source (formatted in the project's style), the spec merged into the one
//! beside the file, and writing both without ever leaving half a file.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};

use super::{format_changes, templatize_in_workspace, ClangFormat, Templatized};
use crate::slice::SliceOptions;
use crate::spec::{self, KernelSpec, SpecFile};

/// What templatizing one kernel of a file changes.
pub struct TemplatizedFile {
    pub file: PathBuf,
    pub result: Templatized,
    /// The source as it was.
    pub old_source: String,
    pub spec_path: PathBuf,
    /// The spec file's text as it was, empty when there was none.
    pub old_spec: String,
    /// The spec file with this kernel's entry added or replaced, the others kept.
    pub new_spec: String,
    /// Whether clang-format formatted the changed lines in the project's style.
    pub formatted: bool,
}

/// Templatizes `kernel` of `file` with the host code of its workspace, writing nothing.
pub fn templatize_file(file: &Path, kernel: &str) -> Result<TemplatizedFile> {
    let old_source = crate::workspace::read_source(file)?;
    let hosts = crate::workspace::host_documents_near(file, kernel);
    let root = crate::workspace::find_root(file);
    // The host documents are named by canonical paths; the kernel's file is too, so that it is
    // one program with them (`runTest` beside it is its caller, not another folder's).
    let canonical = file.canonicalize().unwrap_or_else(|_| file.to_path_buf());
    let mut result = templatize_in_workspace(&old_source, kernel, file, &SliceOptions::for_file(&canonical), &hosts, &root).map_err(|e| anyhow!("{}: {e}", file.display()))?;
    let formatted = format_changes(&mut result, &old_source, file, &ClangFormat);
    let spec_path = spec::spec_path_for(file);
    let old_spec = read_spec(&spec_path)?;
    let source_name = file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let base = old_spec.as_ref().map(|(parsed, _)| parsed.clone()).unwrap_or_else(|| SpecFile { version: 1, source: source_name, kernels: Vec::new() });
    let new_spec = spec::render_spec(&spec::with_kernel(base, result.spec.clone()));
    let old_spec = old_spec.map(|(_, text)| text).unwrap_or_default();
    Ok(TemplatizedFile { file: file.to_path_buf(), result, old_source, spec_path, old_spec, new_spec, formatted })
}

impl TemplatizedFile {
    /// Rewrites the source in place and writes the spec beside it.
    pub fn write(&self) -> Result<()> {
        crate::workspace::write_atomically(&self.file, &self.result.text)?;
        crate::workspace::write_atomically(&self.spec_path, &self.new_spec)
    }

    /// Unified diffs of the source and of the spec.
    pub fn diff(&self) -> String {
        unified_diff(&self.file, &self.old_source, &self.result.text) + &unified_diff(&self.spec_path, &self.old_spec, &self.new_spec)
    }
}

/// The spec at `path` and its text, `None` when there is none; an error when it does not parse,
/// since merging into it would lose the user's other kernels.
fn read_spec(path: &Path) -> Result<Option<(SpecFile, String)>> {
    match std::fs::read_to_string(path) {
        Ok(text) => match spec::parse_spec(&text) {
            (Some(file), _) => Ok(Some((file, text))),
            (None, diagnostics) => {
                let first = diagnostics.first().map(|d| format!("{}:{}: {}", d.line + 1, d.column + 1, d.message)).unwrap_or_default();
                bail!("{}:{first}: the existing spec does not parse; fix or move it before templatizing again", path.display())
            }
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}

/// The errors `cutune spec check` would report on the scaffold.
pub fn spec_problems(path: &Path, kernel: &KernelSpec) -> Vec<String> {
    let source = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let text = spec::render_spec(&SpecFile { version: 1, source, kernels: vec![kernel.clone()] });
    let (_, diagnostics) = spec::parse_spec(&text);
    let mut problems: Vec<String> = diagnostics.into_iter().filter(|d| d.severity == spec::Severity::Error).map(|d| d.message).collect();
    // A clean spec that the five stages cannot plan on would stop the tune before it starts.
    // A struct's fields are planned once the compiler has laid it out (the survey and the tune
    // ask it).
    let laid_out = kernel.args.iter().all(|a| !a.is_struct() || a.layout.is_some());
    if problems.is_empty() && laid_out {
        if let Err(e) = crate::verify::plan(kernel, &crate::space::Configuration::default_of(kernel), &crate::verify::Stage::ALL) {
            problems.push(format!("verification: {e}"));
        }
    }
    problems
}

fn unified_diff(path: &Path, old: &str, new: &str) -> String {
    let name = path.display().to_string();
    similar::TextDiff::from_lines(old, new).unified_diff().context_radius(3).header(&format!("a/{name}"), &format!("b/{name}")).to_string()
}
