//! Findings a CUDA author would want before compiling: limits every CUDA GPU enforces.

use super::model::{Dim3, KernelModel, Span};

/// Threads per block on every CUDA GPU since compute capability 2.0.
pub const MAX_THREADS_PER_BLOCK: u64 = 1024;
/// Static shared memory per block; more needs dynamic shared memory and an opt-in.
pub const MAX_STATIC_SHARED_BYTES: u64 = 48 * 1024;
pub const WARP_SIZE: u64 = 32;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    Error,
    Warning,
    Information,
    Hint,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Information => "information",
            Severity::Hint => "hint",
        }
    }
}

impl serde::Serialize for Severity {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct Finding {
    pub span: Span,
    pub severity: Severity,
    /// A stable identifier, shown to users so they can look the finding up.
    pub code: &'static str,
    pub message: String,
}

pub fn check(model: &KernelModel) -> Vec<Finding> {
    let mut findings = Vec::new();
    for launch in &model.launches {
        let Some(block) = launch.block.extent else { continue };
        let threads = block.total();
        if threads > MAX_THREADS_PER_BLOCK {
            findings.push(Finding {
                span: launch.block.span,
                severity: Severity::Error,
                code: "block-too-large",
                message: format!(
                    "launch of `{}` asks for {threads} threads per block{}; CUDA allows at most {MAX_THREADS_PER_BLOCK}, so the launch fails",
                    launch.kernel,
                    shape_note(block)
                ),
            });
        } else if threads % WARP_SIZE != 0 {
            let idle = WARP_SIZE - threads % WARP_SIZE;
            findings.push(Finding {
                span: launch.block.span,
                severity: Severity::Warning,
                code: "block-not-warp-multiple",
                message: format!(
                    "block of {threads} threads{} is not a multiple of the warp size ({WARP_SIZE}); {idle} lanes of the last warp idle in every block",
                    shape_note(block)
                ),
            });
        }
        if let Some(max) = launch.max_threads.and_then(|m| u64::try_from(m).ok()) {
            if threads > max {
                let bounds = model.kernel(&launch.kernel).and_then(|k| k.launch_bounds.as_ref());
                let written = bounds.map(|lb| lb.max_threads.text.as_str()).unwrap_or_default();
                findings.push(Finding {
                    span: launch.block.span,
                    severity: Severity::Error,
                    code: "exceeds-launch-bounds",
                    message: format!(
                        "launch of `{}` uses {threads} threads per block but the kernel's `__launch_bounds__({written})` allows at most {max}; the launch fails with 'too many resources requested'",
                        launch.kernel
                    ),
                });
            }
        }
    }
    for kernel in &model.kernels {
        let known: u64 = kernel.shared.iter().filter(|s| !s.is_extern).filter_map(|s| s.bytes).sum();
        if known > MAX_STATIC_SHARED_BYTES {
            findings.push(Finding {
                span: kernel.name_span,
                severity: Severity::Error,
                code: "static-shared-over-48k",
                message: format!(
                    "kernel `{}` declares {} of static shared memory; static shared memory is limited to 48 KiB per block (use `extern __shared__` with cudaFuncSetAttribute for more)",
                    kernel.name,
                    format_bytes(known)
                ),
            });
        }
    }
    for error in &model.syntax_errors {
        findings.push(Finding {
            span: error.span,
            severity: Severity::Information,
            code: "syntax",
            message: format!("syntax: {}", error.message),
        });
    }
    findings.sort_by_key(|f| (f.span.start_byte, f.severity));
    findings
}

/// ` (32×64)` for a block of more than one dimension; nothing for one whose size says it all.
fn shape_note(block: Dim3) -> String {
    if block.y == 1 && block.z == 1 {
        String::new()
    } else {
        format!(" ({block})")
    }
}

/// `4224 B`, `48.0 KiB`: bytes as a person reads them.
pub fn format_bytes(bytes: u64) -> String {
    if bytes < 1024 {
        format!("{bytes} B")
    } else {
        format!("{:.1} KiB", bytes as f64 / 1024.0)
    }
}
