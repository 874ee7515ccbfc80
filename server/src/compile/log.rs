//! Reading NVRTC's program log: diagnostics from the front end, resource usage from ptxas.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
    Remark,
}

/// One message of the compiler, e.g. `kernel.cu(12): error: identifier "x" is undefined`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CompileDiagnostic {
    /// The file as NVRTC names it (the request's file name, or an included header); empty for
    /// messages about the command line (`nvrtc: error: ...`).
    pub file: String,
    /// 1-based; absent for command-line messages.
    pub line: Option<u32>,
    /// 1-based, from the caret line under the echoed source, when the log has one.
    pub column: Option<u32>,
    pub severity: Severity,
    /// The text after the severity, with the warning number, e.g. `#177-D: variable "y" was declared but never referenced`.
    pub message: String,
}

/// What ptxas reported for one kernel (an entry function).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelResources {
    /// The mangled name, as in the cubin and as `nvrtcGetLoweredName` gives it.
    pub name: String,
    pub registers: u32,
    /// Named barriers used (`bar.sync` ids); not printed by every ptxas version, then 0.
    pub barriers: u32,
    /// The kernel's stack frame, or, where ptxas reports it, the cumulative stack of the kernel
    /// and the functions it calls, whichever is larger: what each thread needs at launch.
    pub stack_bytes: u64,
    pub spill_store_bytes: u64,
    pub spill_load_bytes: u64,
    /// Static `__shared__` memory; dynamic shared memory is decided at launch and not included.
    pub shared_bytes: u64,
    /// Constant memory over all banks: `cmem[0]` holds the parameters, others `__constant__` data.
    pub const_bytes: u64,
}

/// What NVRTC puts before the source line it echoes under a diagnostic.
const ECHO_INDENT: &str = "  ";

/// Parses the diagnostics in an NVRTC log: `file(line): severity: message`, the caret line that
/// may follow (for the column), and `nvrtc: error: ...` command-line messages.
pub fn parse_diagnostics(log: &str) -> Vec<CompileDiagnostic> {
    let mut diagnostics: Vec<CompileDiagnostic> = Vec::new();
    let lines: Vec<&str> = log.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        if let Some(rest) = line.strip_prefix("nvrtc: ") {
            if let Some((severity, message)) = split_severity(rest) {
                diagnostics.push(CompileDiagnostic { file: String::new(), line: None, column: None, severity, message });
            }
            continue;
        }
        let Some((file, line_number, rest)) = split_location(line) else { continue };
        let Some((severity, message)) = split_severity(rest) else { continue };
        // EDG echoes the offending source line, then a line with a caret under the column.
        // The echo is indented by two spaces, which the caret's position includes.
        let column = match (lines.get(i + 1), lines.get(i + 2)) {
            (Some(source), Some(caret)) if caret.trim() == "^" && source.starts_with(ECHO_INDENT) => {
                caret.find('^').and_then(|c| c.checked_sub(ECHO_INDENT.len())).map(|c| c as u32 + 1)
            }
            _ => None,
        };
        diagnostics.push(CompileDiagnostic { file, line: Some(line_number), column, severity, message });
    }
    diagnostics
}

/// `kernel.cu(12): rest` into (`kernel.cu`, 12, `rest`).
fn split_location(line: &str) -> Option<(String, u32, &str)> {
    let (head, rest) = line.split_once("): ")?;
    let (file, number) = head.rsplit_once('(')?;
    if file.is_empty() {
        return None;
    }
    Some((file.to_string(), number.parse().ok()?, rest))
}

/// `error: message`, `warning #177-D: message`, `catastrophic error: message` into severity and message.
fn split_severity(rest: &str) -> Option<(Severity, String)> {
    const KINDS: [(&str, Severity); 6] = [
        ("catastrophic error", Severity::Error),
        ("internal error", Severity::Error),
        ("command-line error", Severity::Error),
        ("error", Severity::Error),
        ("warning", Severity::Warning),
        ("remark", Severity::Remark),
    ];
    let (kind, severity) = KINDS.iter().find(|(kind, _)| rest.starts_with(kind))?;
    let after = &rest[kind.len()..];
    // `error: msg`, or a numbered `warning #177-D: msg` where the number is kept in the message.
    let message = match after.strip_prefix(": ") {
        Some(message) => message.to_string(),
        None if after.starts_with(" #") => after.trim_start().to_string(),
        None => return None,
    };
    Some((*severity, message))
}

/// The most static shared memory a kernel may declare on any architecture.
pub const STATIC_SHARED_LIMIT: u64 = 48 * 1024;

/// Why a compile failed, in one line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FailureReason {
    /// The code is fine but the configuration asks too much: ptxas refuses static `__shared__`
    /// arrays over 48 KiB whatever the device allows (only dynamic shared memory can opt in to
    /// more); NVRTC's log then shows the size in ptxas' report and no error line.
    StaticShared { bytes: u64 },
    /// The first error: `line N: message`, `ptxas: message`, or NVRTC's summary.
    Error(String),
}

impl std::fmt::Display for FailureReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FailureReason::StaticShared { bytes } => {
                write!(f, "{bytes} bytes of static shared memory; static `__shared__` arrays may use at most {STATIC_SHARED_LIMIT}")
            }
            FailureReason::Error(text) => f.write_str(text),
        }
    }
}

/// Reads a failed compile's log (and NVRTC's one-line `message`) for the reason to show.
pub fn failure_reason(message: &str, log: &str) -> FailureReason {
    let first = parse_diagnostics(log).into_iter().find(|d| d.severity == Severity::Error);
    let static_shared = parse_resources(log).iter().map(|k| k.shared_bytes).max().unwrap_or(0);
    if first.is_none() && static_shared > STATIC_SHARED_LIMIT {
        return FailureReason::StaticShared { bytes: static_shared };
    }
    let ptxas = log.lines().find(|l| l.starts_with("ptxas error")).map(|l| l.trim_start_matches("ptxas error").trim_start_matches([' ', ':']).to_string());
    FailureReason::Error(match (first, ptxas) {
        (Some(d), _) => format!("line {}: {}", d.line.map_or("?".into(), |l| l.to_string()), d.message),
        (None, Some(ptxas)) => format!("ptxas: {ptxas}"),
        (None, None) => message.to_string(),
    })
}

/// Parses ptxas' `-v` report in an NVRTC log into one entry per kernel:
///
/// ```text
/// ptxas info    : Compiling entry function '_Z4axpyfPKfPfi' for 'sm_90'
/// ptxas info    : Function properties for _Z4axpyfPKfPfi
/// ptxas         .     32 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
/// ptxas info    : Used 16 registers, used 1 barriers, 32 bytes cumulative stack size, 1024 bytes smem
/// ```
///
/// Device functions that were not inlined get a `Function properties` block too; they are not
/// kernels and are left out.
pub fn parse_resources(log: &str) -> Vec<KernelResources> {
    let mut kernels: Vec<KernelResources> = Vec::new();
    // The function the last `Function properties for` line named: the stack line applies to it.
    let mut properties_of: Option<String> = None;
    for line in log.lines() {
        let info = line.strip_prefix("ptxas info").map(|rest| rest.trim_start().trim_start_matches(':').trim());
        if let Some(info) = info {
            if let Some(rest) = info.strip_prefix("Compiling entry function '") {
                let name = rest.split('\'').next().unwrap_or_default();
                kernels.push(KernelResources { name: name.to_string(), ..Default::default() });
            } else if let Some(name) = info.strip_prefix("Function properties for ") {
                properties_of = Some(name.trim().to_string());
            } else if info.starts_with("Used ") {
                if let Some(kernel) = kernels.last_mut() {
                    apply_usage(kernel, info);
                }
            }
        } else if line.contains("bytes stack frame") {
            let name = properties_of.take();
            if let Some(kernel) = kernels.iter_mut().rev().find(|k| Some(&k.name) == name.as_ref()) {
                // The line starts with a `ptxas         .` continuation marker.
                apply_usage(kernel, line.trim_start_matches(|c: char| !c.is_ascii_digit()));
            }
        }
    }
    kernels
}

/// Reads the comma-separated `N unit` items of a ptxas line into `kernel`.
fn apply_usage(kernel: &mut KernelResources, line: &str) {
    let line = line.trim().trim_start_matches("Used ");
    for item in line.split(',') {
        let mut words = item.split_whitespace();
        // `used 1 barriers` puts the verb first.
        let first = words.next().unwrap_or_default();
        let (number, unit) = if first == "used" { (words.next(), words.collect::<Vec<_>>()) } else { (Some(first), words.collect()) };
        let Some(Ok(number)) = number.map(str::parse::<u64>) else { continue };
        match unit.as_slice() {
            ["registers"] => kernel.registers = u32::try_from(number).unwrap_or(u32::MAX),
            ["barriers"] => kernel.barriers = u32::try_from(number).unwrap_or(u32::MAX),
            ["bytes", "stack", "frame"] => kernel.stack_bytes = kernel.stack_bytes.max(number),
            ["bytes", "cumulative", "stack", "size"] => kernel.stack_bytes = kernel.stack_bytes.max(number),
            ["bytes", "spill", "stores"] => kernel.spill_store_bytes = number,
            ["bytes", "spill", "loads"] => kernel.spill_load_bytes = number,
            ["bytes", "smem"] => kernel.shared_bytes = number,
            ["bytes", bank] if bank.starts_with("cmem[") => kernel.const_bytes += number,
            _ => {}
        }
    }
}
