//! Command-line subcommands other than `lsp`: reports built from the same model the server uses.

pub mod bench;
pub mod ceilings;
pub mod check;
pub mod compare;
pub mod templatize;
pub mod spec;
pub mod slice;
pub mod doctor;
pub mod profile;
pub mod report;
pub mod search_bench;
pub mod survey;
pub mod tune;
pub mod verify;
pub mod worker;

use std::fmt::Write;
use std::path::Path;

use anyhow::{bail, Result};

use crate::spec::KernelSpec;

use crate::syntax::{self, Finding, KernelModel};

pub use crate::workspace::read_source;

#[derive(serde::Serialize)]
struct KernelsReport<'a> {
    file: String,
    analysis: &'static str,
    model: &'a KernelModel,
    findings: &'a [Finding],
}

/// `cutune kernels FILE [--json]`.
pub fn kernels(path: &Path, json: bool) -> Result<String> {
    let text = read_source(path)?;
    let doc = syntax::Document::new(text);
    let model = doc.model();
    let findings = syntax::check(model);
    let skipped = matches!(doc.analysis(), syntax::Analysis::SkippedTooLarge { .. });
    if json {
        let report = KernelsReport {
            file: path.display().to_string(),
            analysis: if skipped { "skipped_too_large" } else { "complete" },
            model,
            findings: &findings,
        };
        return Ok(serde_json::to_string_pretty(&report)? + "\n");
    }
    if skipped {
        bail!(
            "{}: {} bytes is over the {} MiB analysis limit; cutune does not analyse files this large",
            path.display(),
            doc.text().len(),
            syntax::MAX_ANALYZED_BYTES / (1024 * 1024)
        );
    }
    Ok(render_text(&path.display().to_string(), model, &findings))
}

fn plural(n: usize, word: &str) -> String {
    format!("{n} {word}{}", if n == 1 { "" } else { "s" })
}

fn render_text(file: &str, model: &KernelModel, findings: &[Finding]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{file}: {}, {}, {}",
        plural(model.kernels.len(), "kernel"),
        plural(model.device_functions.len(), "device function"),
        plural(model.launches.len(), "launch site")
    );
    for kernel in &model.kernels {
        let kind = if kernel.is_definition { "kernel" } else { "kernel prototype" };
        let _ = writeln!(out, "\n{kind} {} at {}:{}", kernel.name, file, kernel.name_span.start.line + 1);
        let _ = writeln!(out, "  {}", kernel.signature);
        for p in &kernel.params {
            let _ = writeln!(out, "  param {}: {}", if p.name.is_empty() { "(unnamed)" } else { &p.name }, p.ty);
        }
        if let Some(lb) = &kernel.launch_bounds {
            let min = lb.min_blocks.as_ref().map(|m| format!(", min blocks {}", m.text)).unwrap_or_default();
            let _ = writeln!(out, "  launch bounds: max threads {}{min}", lb.max_threads.text);
        }
        for s in &kernel.shared {
            let dims: String = s.dims.iter().map(|d| format!("[{}]", d.text)).collect();
            let size = match (s.is_extern, s.bytes) {
                (true, _) => "dynamic".to_string(),
                (false, Some(b)) => syntax::format_bytes(b),
                (false, None) => "size not constant".to_string(),
            };
            let ext = if s.is_extern { "extern " } else { "" };
            let _ = writeln!(out, "  shared: {ext}{} {}{dims} ({size})", s.element_type, s.name);
        }
        for l in model.launches_of(&kernel.name) {
            let threads = l.block.extent.map(|d| format!(" ({} threads per block)", d.total())).unwrap_or_default();
            let _ = writeln!(out, "  launch at {}: <<<{}, {}>>>{threads}", l.span, l.grid.text, l.block.text);
        }
        for t in model.tunables_of(&kernel.name) {
            let value = t.value.map(|v| format!(" = {v}")).unwrap_or_default();
            let _ = writeln!(out, "  tunable at {}: {} `{}`{value}", t.span, t.kind.describe(), t.text);
        }
    }
    if !model.device_functions.is_empty() {
        let _ = writeln!(out);
        for f in &model.device_functions {
            let _ = writeln!(out, "device function {} at {}:{}", f.name, file, f.name_span.start.line + 1);
        }
    }
    let foreign: Vec<_> = model.launches.iter().filter(|l| !l.resolved).collect();
    if !foreign.is_empty() {
        let _ = writeln!(out);
        for l in foreign {
            let _ = writeln!(out, "launch of {} (declared in another file) at {}: <<<{}, {}>>>", l.kernel, l.span, l.grid.text, l.block.text);
        }
    }
    if !findings.is_empty() {
        let _ = writeln!(out);
        for f in findings {
            let _ = writeln!(out, "{file}:{}:{}: {}[{}]: {}", f.span.start.line + 1, f.span.start.column + 1, f.severity.as_str(), f.code, f.message);
        }
    }
    out
}

/// [`crate::tune::job::kernel_and_source`], with its note on stderr.
pub fn kernel_and_source(file: &Path, kernel_name: &str, spec_path: Option<&Path>, text: &str) -> Result<(KernelSpec, String)> {
    let (kernel, source, note) = crate::tune::job::kernel_and_source(file, kernel_name, spec_path, text)?;
    if let Some(note) = note {
        eprintln!("{note}");
    }
    Ok((kernel, source))
}
