//! `cutune templatize FILE --kernel NAME [--diff | --write]`.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use super::read_source;
use crate::spec::{self, SpecFile};
use crate::template;

#[derive(clap::Args)]
pub struct TemplatizeArgs {
    /// The CUDA source file.
    pub file: PathBuf,
    /// The kernel to templatize.
    #[arg(long)]
    pub kernel: String,
    /// Print a unified diff of the source and the spec instead of the new source.
    #[arg(long, conflicts_with = "write")]
    pub diff: bool,
    /// Rewrite the source in place and write the spec beside it.
    #[arg(long)]
    pub write: bool,
}

pub fn run(args: &TemplatizeArgs) -> Result<()> {
    let text = read_source(&args.file)?;
    let hosts = crate::workspace::host_documents_near(&args.file, &args.kernel);
    let root = crate::workspace::find_root(&args.file);
    let mut result = template::templatize_in_workspace(&text, &args.kernel, &args.file, &crate::slice::SliceOptions::for_file(&args.file), &hosts, &root).map_err(|e| anyhow::anyhow!("{}: {e}", args.file.display()))?;
    eprint!("{}", template::report(&args.file, &result));
    if template::format_changes(&mut result, &text, &args.file, &template::ClangFormat) {
        eprintln!("{}: the changed lines are formatted with clang-format and the project's .clang-format", args.file.display());
    }
    let spec_path = spec::spec_path_for(&args.file);
    let old_spec = read_spec(&spec_path)?;
    let source_name = args.file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let base = old_spec.clone().unwrap_or_else(|| SpecFile { version: 1, source: source_name, kernels: Vec::new() });
    let new_spec = spec::render_spec(&spec::with_kernel(base, result.spec.clone()));
    if args.write {
        write_atomically(&args.file, &result.text)?;
        write_atomically(&spec_path, &new_spec)?;
        eprintln!("wrote {} and {}", args.file.display(), spec_path.display());
    } else if args.diff {
        let old_spec_text = match old_spec {
            Some(_) => std::fs::read_to_string(&spec_path)?,
            None => String::new(),
        };
        print!("{}", unified_diff(&args.file, &text, &result.text));
        print!("{}", unified_diff(&spec_path, &old_spec_text, &new_spec));
    } else {
        print!("{}", result.text);
    }
    Ok(())
}

fn read_spec(path: &Path) -> Result<Option<SpecFile>> {
    match std::fs::read_to_string(path) {
        Ok(text) => match spec::parse_spec(&text) {
            (Some(file), _) => Ok(Some(file)),
            (None, diagnostics) => {
                let first = diagnostics.first().map(|d| format!("{}:{}: {}", d.line + 1, d.column + 1, d.message)).unwrap_or_default();
                bail!("{}:{first}: the existing spec does not parse; fix or move it before templatizing again", path.display())
            }
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}

/// Writes through a temporary file and a rename, so that a failure never leaves half a file.
fn write_atomically(path: &Path, text: &str) -> Result<()> {
    let tmp = path.with_extension("cutune-tmp");
    std::fs::write(&tmp, text).with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("cannot replace {}", path.display()))
}

fn unified_diff(path: &Path, old: &str, new: &str) -> String {
    let name = path.display().to_string();
    similar::TextDiff::from_lines(old, new).unified_diff().context_radius(3).header(&format!("a/{name}"), &format!("b/{name}")).to_string()
}
