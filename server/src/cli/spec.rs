//! `cutune spec …`: check a spec file, and convert between specs and T1 files.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};

use crate::spec::{self, t1, Baseline, Severity, SpecDiagnostic};

#[derive(Args)]
pub struct SpecArgs {
    #[command(subcommand)]
    command: SpecCommand,
}

#[derive(Subcommand)]
enum SpecCommand {
    /// Check a spec file; prints `file:line:col: severity: message` and exits 1 on errors.
    Check { file: PathBuf },
    /// Convert a T1 tuning-problem file (Kernel Tuner, KTT) into a spec.
    ImportT1 {
        file: PathBuf,
        /// Write the spec here instead of to standard output.
        #[arg(short, long)]
        output: Option<PathBuf>,
    },
    /// Write one kernel of a spec as a T1 file.
    ExportT1 {
        file: PathBuf,
        /// The kernel to export; optional when the spec has one kernel.
        #[arg(long)]
        kernel: Option<String>,
        /// Write the T1 JSON here instead of to standard output.
        #[arg(short, long)]
        output: Option<PathBuf>,
    },
}

pub fn run(args: &SpecArgs) -> Result<ExitCode> {
    match &args.command {
        SpecCommand::Check { file } => check(file),
        SpecCommand::ImportT1 { file, output } => import_t1(file, output.as_deref()),
        SpecCommand::ExportT1 { file, kernel, output } => export_t1(file, kernel.as_deref(), output.as_deref()),
    }
}

/// Reads a text file, naming the file, and the line of the first bad byte when it is not UTF-8.
fn read_text(path: &Path, what: &str) -> Result<String> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    String::from_utf8(bytes).or_else(|e| {
        let offset = e.utf8_error().valid_up_to();
        let line = e.as_bytes()[..offset].iter().filter(|&&b| b == b'\n').count() + 1;
        bail!("{}:{line}: not UTF-8 text (invalid byte 0x{:02x} at offset {offset}); is this a {what}?", path.display(), e.as_bytes()[offset])
    })
}

fn write_output(output: Option<&Path>, text: &str) -> Result<()> {
    match output {
        Some(path) => std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display())),
        None => {
            print!("{text}");
            Ok(())
        }
    }
}

fn format_diagnostics(file: &Path, diagnostics: &[SpecDiagnostic]) -> String {
    let mut out = String::new();
    for d in diagnostics {
        let _ = writeln!(out, "{}:{}:{}: {}: {}", file.display(), d.line + 1, d.column + 1, d.severity.as_str(), d.message);
    }
    out
}

fn count(diagnostics: &[SpecDiagnostic], severity: Severity) -> usize {
    diagnostics.iter().filter(|d| d.severity == severity).count()
}

fn check(file: &Path) -> Result<ExitCode> {
    // A CUDA source named instead of its spec: check the spec beside it, or say where it goes.
    let is_cuda = file.extension().is_some_and(|e| e == "cu" || e == "cuh");
    let beside = spec::spec_path_for(file);
    if is_cuda && !beside.is_file() {
        bail!("{} is a CUDA source, not a spec; its spec would be {} (`cutune templatize` writes it)", file.display(), beside.display());
    }
    if is_cuda {
        eprintln!("{} is a CUDA source: checking the spec beside it, {}", file.display(), beside.display());
    }
    let file = if is_cuda { beside.as_path() } else { file };
    let text = read_text(file, "spec file")?;
    let (_, diagnostics) = spec::parse_spec(&text);
    print!("{}", format_diagnostics(file, &diagnostics));
    let (errors, warnings) = (count(&diagnostics, Severity::Error), count(&diagnostics, Severity::Warning));
    let plural = |n: usize, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
    println!("{}: {}, {}", file.display(), plural(errors, "error"), plural(warnings, "warning"));
    Ok(if errors > 0 { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}

fn import_t1(file: &Path, output: Option<&Path>) -> Result<ExitCode> {
    let text = read_text(file, "T1 JSON file")?;
    let mut imported = t1::import_t1(&text).with_context(|| format!("{}", file.display()))?;
    for note in &imported.notes {
        eprintln!("{}: {}: {}", file.display(), note.path, note.message);
    }
    // T1 has no kernel source; when the kernel file sits beside the T1 file, it is the baseline.
    let kernel_file = file.parent().unwrap_or(Path::new(".")).join(&imported.spec.source);
    if let Ok(source) = std::fs::read_to_string(&kernel_file) {
        for kernel in &mut imported.spec.kernels {
            kernel.baseline = Baseline { sha256: spec::sha256_hex(&source), source: source.clone() };
        }
    } else {
        eprintln!(
            "{}: the kernel file {} was not found, so the baseline is unknown (`?`)",
            file.display(),
            kernel_file.display()
        );
    }
    write_output(output, &spec::render_spec(&imported.spec))?;
    Ok(ExitCode::SUCCESS)
}

fn export_t1(file: &Path, kernel: Option<&str>, output: Option<&Path>) -> Result<ExitCode> {
    let text = read_text(file, "spec file")?;
    let (parsed, diagnostics) = spec::parse_spec(&text);
    eprint!("{}", format_diagnostics(file, &diagnostics));
    let Some(parsed) = parsed else {
        bail!("{}: not a spec that can be read (see the errors above)", file.display());
    };
    let kernel = match (kernel, parsed.kernels.as_slice()) {
        (Some(name), _) => name.to_string(),
        (None, [only]) => only.name.clone(),
        (None, kernels) => {
            let names: Vec<&str> = kernels.iter().map(|k| k.name.as_str()).collect();
            bail!("{}: choose a kernel with --kernel ({})", file.display(), if names.is_empty() { "the spec has none".into() } else { names.join(", ") });
        }
    };
    let exported = t1::export_t1(&parsed, &kernel).with_context(|| format!("{}", file.display()))?;
    for note in &exported.notes {
        eprintln!("{}: T1 {}: {}", file.display(), note.path, note.message);
    }
    write_output(output, &(serde_json::to_string_pretty(&exported.json)? + "\n"))?;
    Ok(ExitCode::SUCCESS)
}
