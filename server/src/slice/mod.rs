//! The device slice of a file for one kernel: the code NVRTC needs to compile that kernel, and
//! nothing of the host code around it.
//!
//! Starting from the kernel, every name it uses is looked up among the file's top-level items
//! (functions, types, constants, macros, namespace aliases) and the items found are kept, then
//! the names those use, until nothing new is found. Macros are followed through their bodies,
//! and whatever sits inside a namespace, `extern "C"` block or `#if` group is emitted inside it,
//! so `#ifndef NAME / #define NAME value / #endif` tuning parameters keep their whole group and
//! a conditional keeps the macros its condition reads. Includes that NVRTC can resolve are kept;
//! the others are listed with the reason. The slice keeps source order and original text, so it
//! depends only on what the kernel uses, and a templatized file slices to the same code except
//! where templatize changed it.

mod compile_commands;
mod device_branches;
mod includes;
mod outline;
#[cfg(test)]
mod tests;

use std::collections::{BTreeSet, HashMap};
use std::fmt::Write;
use std::path::{Path, PathBuf};

pub use compile_commands::{compile_flags_for, normalize, CompileFlags};

/// The calls that add to memory atomically: CUDA's `atomicAdd` and PyTorch's helpers for it,
/// which the slice defines where PyTorch's header is dropped.
pub fn atomic_adds() -> impl Iterator<Item = &'static str> {
    std::iter::once("atomicAdd").chain(includes::PYTORCH_DEVICE_FUNCTIONS.iter().map(|(name, _)| *name))
}

use crate::syntax::{Analysis, Document};
use includes::Verdict;
use outline::{Entry, GroupKind, Item, Outline, Reference, Role};

/// Where the slice's includes are looked for, and the macros the build defines.
#[derive(Clone, Debug, Default)]
pub struct SliceOptions {
    /// The source file, for includes relative to its folder.
    pub file: Option<PathBuf>,
    pub include_dirs: Vec<PathBuf>,
    /// `-D NAME[=VALUE]`; those the slice reads are written at its top, so that it compiles as
    /// the original did. `None` defines the macro as `1`, as `-DNAME` does.
    pub defines: Vec<(String, Option<String>)>,
    /// What the file that includes this one has before its `#include` line, with that file's
    /// path: a header of kernels often uses the types and macros its includer declared first.
    pub includer: Option<(PathBuf, String)>,
    /// The kernel's template arguments (from its spec): a `__device__` function passed as one
    /// (`trimul_global<matmul_tri_naive>`) is kept, though only host code names it.
    pub template_args: Vec<String>,
    /// The spec's `define` parameters, which tuning sets with `-D`: a `#define` of one that no
    /// `#ifndef` guards (in a header, which templatize does not edit) is guarded in the slice.
    pub define_params: Vec<String>,
}

impl SliceOptions {
    /// Options for a file on disk: its directory, plus its `compile_commands.json` entry, plus
    /// the folders of headers the workspace ships that its includes name but nothing else finds.
    pub fn for_file(file: &Path) -> SliceOptions {
        let mut options = SliceOptions { file: Some(file.to_path_buf()), includer: includer_prelude(file), ..SliceOptions::default() };
        if let Some(flags) = compile_flags_for(file) {
            options = options.with_compile_flags(flags);
        }
        options.with_shipped_header_dirs()
    }

    /// For each include of the file (and of its includer's text before it, and of the project
    /// headers these include in turn) that neither the including file's folder nor the include
    /// dirs resolve (cuda-samples' `#include <helper_math.h>`, which only its build's
    /// `-I ../../../Common` finds; OpenMMLab's `common/cuda/x_kernel.cuh` including
    /// `"pytorch_cuda_helper.hpp"` of `common/`, which includes `"common_cuda_helper.hpp"` of
    /// `common/cuda/`), the folder of the one header of the workspace at that path, as an
    /// include dir.
    pub fn with_shipped_header_dirs(mut self) -> SliceOptions {
        const MAX_HEADERS: usize = 32;
        let Some(file) = self.file.clone() else { return self };
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        let includer = self.includer.as_ref().map_or("", |(_, prelude)| prelude.as_str()).to_string();
        let mut pending: Vec<(PathBuf, String)> = vec![(file.clone(), format!("{text}\n{includer}"))];
        let mut seen: BTreeSet<PathBuf> = BTreeSet::from([file.clone()]);
        while let Some((path, text)) = pending.pop() {
            for line in text.lines() {
                let Some(written) = included(line) else { continue };
                let header = match includes::classify(written, path.parent(), &self.include_dirs) {
                    Verdict::Local(header) => Some(header),
                    Verdict::Missing(_) => {
                        let name = written.trim_matches(|c| matches!(c, '"' | '<' | '>'));
                        let dir = crate::workspace::shipped_header_dir(&file, name);
                        let header = dir.as_ref().map(|d| d.join(name));
                        if let Some(dir) = dir.filter(|d| !self.include_dirs.contains(d)) {
                            self.include_dirs.push(dir);
                        }
                        header
                    }
                    _ => None,
                };
                let Some(header) = header.map(|h| h.canonicalize().unwrap_or(h)) else { continue };
                if seen.len() < MAX_HEADERS && seen.insert(header.clone()) {
                    pending.push((header.clone(), std::fs::read_to_string(&header).unwrap_or_default()));
                }
            }
        }
        self
    }

    pub fn with_template_args(mut self, args: &[String]) -> SliceOptions {
        self.template_args = args.to_vec();
        self
    }

    /// For compiling `kernel`'s spec: its template arguments, and its `define` parameters.
    pub fn for_spec(mut self, kernel: &crate::spec::KernelSpec) -> SliceOptions {
        self.define_params = kernel.params.iter().filter(|p| p.kind == crate::spec::ParamKind::Define).map(|p| p.name.clone()).collect();
        self.with_template_args(&kernel.template_args)
    }

    /// Adds the include dirs and defines of a `compile_commands.json` entry before those already
    /// given.
    pub fn with_compile_flags(mut self, flags: CompileFlags) -> SliceOptions {
        self.include_dirs.splice(0..0, flags.include_dirs);
        self.defines.splice(0..0, flags.defines);
        self
    }
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct DeviceSlice {
    pub source: String,
    /// What the slice holds, in source order.
    pub kept: Vec<SliceItem>,
    pub dropped_includes: Vec<DroppedInclude>,
    pub unresolved: Vec<Unresolved>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SliceItemKind {
    Kernel,
    DeviceFunction,
    /// A `constexpr` function without `__device__`: nvcc lets device code's constant expressions
    /// use it; NVRTC needs `-default-device` (reported in [`DeviceSlice::unresolved`]).
    ConstexprFunction,
    Type,
    Constant,
    DeviceVariable,
    Macro,
    Include,
    NamespaceAlias,
    UsingDirective,
    /// A `-D` define from the options, written at the top.
    CommandLineDefine,
    /// A macro of a dropped C header (`INFINITY`, `FLT_MAX`) that kept code uses, written at
    /// the top with a definition device code can use.
    StandardMacro,
    /// A device function or type of a dropped PyTorch header (`gpuAtomicAdd`, the packed tensor
    /// accessors) that kept code uses, written at the top with a definition NVRTC compiles.
    HeaderDefinition,
    /// A type the host's C library declares for every nvcc compile (`uint` of `<sys/types.h>`)
    /// that kept code uses, written at the top as its typedef: NVRTC has no host headers.
    HostType,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct SliceItem {
    pub kind: SliceItemKind,
    /// The declared name; the include as written; the namespace of a using directive. Items
    /// that declare several names (an enum and its enumerators) list them with `, `.
    pub name: String,
    /// 1-based line in the original file; 0 for a command-line define.
    pub line: u32,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct DroppedInclude {
    /// As written: `<vector>`, `"host_utils.h"`.
    pub path: String,
    /// 1-based.
    pub line: u32,
    pub reason: String,
}

/// A name the kernel's code uses that the slice cannot provide.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Unresolved {
    pub symbol: String,
    /// 1-based line and column (bytes) of its first use in the slice's code.
    pub line: u32,
    pub column: u32,
    pub why: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SliceError {
    KernelNotFound { name: String, known: Vec<String> },
    /// The file declares the kernel but never defines it.
    KernelNotDefined { name: String, line: u32 },
    /// The file is over [`crate::syntax::MAX_ANALYZED_BYTES`] and is not parsed.
    FileTooLarge { bytes: usize },
}

impl std::fmt::Display for SliceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SliceError::KernelNotFound { name, known } if known.is_empty() => {
                write!(f, "no kernel `{name}`: the file has no `__global__` functions")
            }
            SliceError::KernelNotFound { name, known } => {
                write!(f, "no kernel `{name}`; the file's kernels are {}", known.join(", "))
            }
            SliceError::KernelNotDefined { name, line } => {
                write!(f, "kernel `{name}` is only declared (line {line}), never defined in this file")
            }
            SliceError::FileTooLarge { bytes } => write!(f, "the file ({bytes} bytes) is too large to analyse"),
        }
    }
}

impl std::error::Error for SliceError {}

/// The device slice of `doc` for the kernel `kernel` (its name, optionally qualified).
pub fn device_slice(doc: &Document, kernel: &str, opts: &SliceOptions) -> Result<DeviceSlice, SliceError> {
    if let Analysis::SkippedTooLarge { bytes } = doc.analysis() {
        return Err(SliceError::FileTooLarge { bytes });
    }
    let inlined = device_branches::with_device_branches(&inline_local_headers(doc.text(), opts));
    let text = inlined.as_str();
    // `Document` keeps its tree private (and drops it for idle documents), so the slice parses
    // the text itself; that costs milliseconds and a slice is taken on request, not per keystroke.
    let (tree, hidden_macros) = crate::syntax::parse_source_and_hidden_macros(text);
    let outline = Outline::of(tree.root_node(), text, hidden_macros);
    let kernel = kernel.rsplit("::").next().unwrap_or(kernel);

    let kernels: Vec<usize> = (0..outline.items.len())
        .filter(|&i| matches!(outline.items[i].role, Role::Kernel { .. }) && outline.items[i].declares.iter().any(|n| n == kernel))
        .collect();
    if kernels.is_empty() {
        let mut known: Vec<String> = Vec::new();
        for item in outline.items.iter().filter(|i| matches!(i.role, Role::Kernel { .. })) {
            for name in &item.declares {
                if !known.contains(name) {
                    known.push(name.clone());
                }
            }
        }
        return Err(SliceError::KernelNotFound { name: kernel.to_string(), known });
    }
    if !kernels.iter().any(|&i| outline.items[i].role == Role::Kernel { is_definition: true }) {
        let line = outline.items[kernels[0]].start.line + 1;
        return Err(SliceError::KernelNotDefined { name: kernel.to_string(), line });
    }

    let mut slicer = Slicer::new(&outline, opts);
    for &i in &kernels {
        slicer.keep(i);
    }
    // A host declaration a template argument's name shares is none of the device code's:
    // `INSTANTIATE(float);` at file scope reads as a variable `float` of a type `INSTANTIATE`.
    let named_by_arguments: Vec<usize> = opts.template_args.iter().flat_map(|a| crate::syntax::identifiers_in(a)).flat_map(|name| slicer.declarations.get(name).cloned().unwrap_or_default()).collect();
    let device_side = |i: &usize| !matches!(outline.items[*i].role, Role::HostFunction | Role::HostVariable | Role::Other | Role::Include { .. } | Role::UsingDirective { .. });
    for i in named_by_arguments.into_iter().filter(device_side) {
        slicer.keep(i);
    }
    slicer.keep_operators();
    slicer.keep_includes();
    slicer.close();
    slicer.keep_using_directives();
    slicer.close();
    let mut slice = slicer.finish(text);
    slice.source = with_missing_headers(slice.source);
    if let Some(scope) = namespace_of(&outline, &kernels) {
        // The compile asks NVRTC for the kernel by its unqualified name, as the spec writes it.
        let _ = writeln!(slice.source, "using {scope}::{kernel};");
    }
    Ok(slice)
}

/// The named namespace all of the kernel's declarations sit in (`ops::detail`; anonymous ones
/// add nothing to the name), or `None` when they sit at file scope or in different namespaces.
fn namespace_of(outline: &Outline, kernels: &[usize]) -> Option<String> {
    let scope_of = |item: usize| {
        let names = outline.items[item].groups.iter().filter_map(|&g| match &outline.groups[g].kind {
            GroupKind::Namespace { name } if !name.is_empty() => Some(name.as_str()),
            _ => None,
        });
        names.collect::<Vec<_>>().join("::")
    };
    let scope = scope_of(*kernels.first()?);
    (!scope.is_empty() && kernels.iter().all(|&k| scope_of(k) == scope)).then_some(scope)
}

/// The fixed-width integer types of `<stdint.h>`.
const FIXED_WIDTH_INTEGERS: &[&str] = &[
    "int8_t", "uint8_t", "int16_t", "uint16_t", "int32_t", "uint32_t", "int64_t", "uint64_t", "intptr_t", "uintptr_t",
];

/// Names of the host's `<type_traits>`, `<limits>` and `<cmath>` that device code calls as
/// `std::…`, with the libcu++ header that declares each in `cuda::std`: NVRTC cannot open the
/// host's, which the original got through `<torch/extension.h>` or `<cmath>`.
const STANDARD_NAMES_IN_LIBCUXX: &[(&str, &[&str])] = &[
    ("cuda/std/type_traits", &["integral_constant", "bool_constant", "is_same", "conditional", "enable_if"]),
    ("cuda/std/limits", &["numeric_limits"]),
    (
        "cuda/std/cmath",
        &["isinf", "isnan", "isfinite", "signbit", "fabs", "fmax", "fmin", "sqrt", "exp", "exp2", "log", "log2", "pow", "floor", "ceil", "round", "tanh"],
    ),
];

/// The slice with the headers it uses without including them, first: `<cuda_fp16.h>`,
/// `<cuda_bf16.h>`, the fixed-width integers, and libcu++'s for the host's `std::` names (see
/// [`STANDARD_NAMES_IN_LIBCUXX`]). The original got them through host headers (cuBLAS's,
/// PyTorch's, the C library's) that NVRTC cannot open.
fn with_missing_headers(source: String) -> String {
    let uses = |names: &[&str]| crate::syntax::identifiers_in(&source).any(|w| names.contains(&w));
    let mut headers = String::new();
    if uses(&["__nv_bfloat16", "nv_bfloat16", "__nv_bfloat162", "nv_bfloat162"]) && !source.contains("cuda_bf16.h") {
        headers.push_str("#include <cuda_bf16.h>\n");
    }
    if uses(&["half", "__half", "half2", "__half2"]) && !source.contains("cuda_fp16.h") && !source.contains("cuda_bf16.h") {
        headers.push_str("#include <cuda_fp16.h>\n");
    }
    // `<stdint.h>` is the C library's, which NVRTC lacks; libcu++ declares the same types for it.
    if uses(FIXED_WIDTH_INTEGERS) && !source.contains("cuda/std/cstdint") {
        headers.push_str("#include <cuda/std/cstdint>\n");
    }
    let standard_names = names_qualified_by_std(&source);
    let mut libcuxx_headers = STANDARD_NAMES_IN_LIBCUXX.iter().filter(|(header, names)| names.iter().any(|name| standard_names.contains(name)) && !source.contains(header)).peekable();
    if libcuxx_headers.peek().is_some() {
        for (header, _) in libcuxx_headers {
            let _ = writeln!(headers, "#include <{header}>");
        }
        headers.push_str("// The host's standard library, which NVRTC lacks: libcu++ has the same names.\nnamespace std { using namespace cuda::std; }\n");
    }
    headers + &source
}

/// The names `source` qualifies with `std::` (not `cuda::std::`).
fn names_qualified_by_std(source: &str) -> std::collections::HashSet<&str> {
    crate::syntax::words_at(source)
        .filter(|&(_, at)| source[..at].strip_suffix("std::").is_some_and(|before| !before.ends_with(|c: char| c == ':' || c == '_' || c.is_ascii_alphanumeric())))
        .map(|(name, _)| name)
        .collect()
}

/// `text` with each `#include "header"` that is a file of the project replaced by the header's
/// text (recursively, each header once), so that the slice takes from headers only what the
/// kernel uses (their host code would not compile in NVRTC) and is self-contained, as the
/// spec's baseline must be. Lines after an inlined header shift in the slice's notes.
fn inline_local_headers(text: &str, opts: &SliceOptions) -> String {
    let mut inlined = Inlined::default();
    let mut out = String::new();
    if let Some((includer, prelude)) = &opts.includer {
        inlined.headers.extend(opts.file.as_deref().map(|f| f.canonicalize().unwrap_or_else(|_| f.to_path_buf())));
        out = inline_into(prelude, includer.parent(), opts, &mut inlined, 0);
        if !out.ends_with('\n') {
            out.push('\n');
        }
    }
    guard_defines(out + &inline_into(text, opts.file.as_deref().and_then(Path::parent), opts, &mut inlined, 0), &opts.define_params)
}

/// `text` with each one-line `#define NAME value` of `names` that the line before does not
/// guard put under `#ifndef NAME`, so that `-DNAME=…` sets it; the same for a constant's line
/// (`const int TILE_DIM = 32;`), which `-DTILE_DIM=64` would otherwise make `const int 64`.
fn guard_defines(text: String, names: &[String]) -> String {
    if names.is_empty() {
        return text;
    }
    let mut out = String::with_capacity(text.len());
    let mut previous = "";
    for line in text.split_inclusive('\n') {
        let guarded = |name: &str| previous.trim().strip_prefix("#ifndef").map(str::trim) == Some(name);
        let declared = defined_name(line).or_else(|| crate::syntax::integer_constant_line(line).map(|(name, _)| name));
        match declared.filter(|name| names.iter().any(|n| n == name) && !guarded(name) && !line.trim_end().ends_with('\\')) {
            Some(name) => {
                let _ = write!(out, "#ifndef {name}\n{}\n#endif\n", line.trim_end_matches(['\n', '\r']));
            }
            None => out.push_str(line),
        }
        previous = line;
    }
    out
}

/// The name an object-like `#define` line defines (not a function-like macro's).
fn defined_name(line: &str) -> Option<&str> {
    let rest = line.trim_start().strip_prefix('#')?.trim_start().strip_prefix("define")?;
    let rest = rest.strip_prefix([' ', '\t'])?.trim_start();
    let end = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len());
    let follows = rest[end..].chars().next();
    (end > 0 && follows.is_none_or(char::is_whitespace)).then(|| &rest[..end])
}

/// The first file beside `file` (by name), else in the folder above, that includes it with
/// quotes, and its text before that `#include`: `imageDenoising.cu` declares `TColor` and then
/// includes the kernels' header; `src/kernels.cuh` includes `"kernels/10_warptiling.cuh"`,
/// which declares `WARPSIZE`, before `"kernels/11_double_buffering.cuh"`, which uses it. An
/// includer that is itself included gives its own includer's text first.
pub fn includer_prelude(file: &Path) -> Option<(PathBuf, String)> {
    includer_prelude_at_depth(file, 0)
}

/// How many includers above an included file are read (`main.cu` includes `solver.cu`, which
/// includes the kernels' file).
const MOST_INCLUDERS: usize = 4;

fn includer_prelude_at_depth(file: &Path, depth: usize) -> Option<(PathBuf, String)> {
    let (includer, prelude) = direct_includer_prelude(file)?;
    // An includer that is itself included: what comes before it there comes first.
    match (depth < MOST_INCLUDERS).then(|| includer_prelude_at_depth(&includer, depth + 1)).flatten() {
        Some((_, outer)) => Some((includer, format!("{outer}{prelude}"))),
        None => Some((includer, prelude)),
    }
}

fn direct_includer_prelude(file: &Path) -> Option<(PathBuf, String)> {
    let name = file.file_name()?.to_str()?;
    let dir = file.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let beside = (dir.to_path_buf(), format!("\"{name}\""));
    let above = dir.file_name().and_then(|d| d.to_str()).zip(dir.parent()).map(|(folder, parent)| {
        let parent = if parent.as_os_str().is_empty() { Path::new(".") } else { parent };
        (parent.to_path_buf(), format!("\"{folder}/{name}\""))
    });
    std::iter::once(beside).chain(above).find_map(|(folder, written)| including_file(&folder, file, &written))
}

/// The first source file of `folder` (by name), other than `file`, with a quoted include
/// written `written`, and its text before it, as the including branch sees it.
fn including_file(folder: &Path, file: &Path, written: &str) -> Option<(PathBuf, String)> {
    let mut candidates: Vec<PathBuf> = std::fs::read_dir(folder).ok()?.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.is_file() && p.file_name() != file.file_name()).collect();
    candidates.sort();
    let is_source = |p: &Path| p.extension().and_then(|e| e.to_str()).is_some_and(|e| matches!(e, "cu" | "cuh" | "cpp" | "cc" | "h" | "hpp"));
    candidates.into_iter().filter(|p| is_source(p)).find_map(|path| {
        let text = std::fs::read_to_string(&path).ok()?;
        let mut start = 0;
        for line in text.split_inclusive('\n') {
            if quoted_include(line).is_some_and(|w| w.starts_with(written)) {
                return Some((path, in_including_branch(&text[..start])));
            }
            start += line.len();
        }
        None
    })
}

/// The text before an `#include` line, as the branch it sits in sees it: a conditional still
/// open there (`#if CUDART_VERSION >= 2020` … `#include "kernel.cuh"` … `#endif`) is taken, so
/// its directive and its other branches go, and what the prelude leaves is balanced.
fn in_including_branch(prelude: &str) -> String {
    // Per open conditional: where its directive starts, and where the branch now open starts.
    let mut open: Vec<(usize, usize)> = Vec::new();
    let mut start = 0;
    for line in prelude.split_inclusive('\n') {
        let directive = line.trim_start().strip_prefix('#').map(|d| d.trim_start().split(|c: char| !c.is_ascii_alphabetic()).next().unwrap_or(""));
        match directive {
            Some("if" | "ifdef" | "ifndef") => open.push((start, start + line.len())),
            Some("elif" | "else") => {
                if let Some(last) = open.last_mut() {
                    last.1 = start + line.len();
                }
            }
            Some("endif") => {
                open.pop();
            }
            _ => {}
        }
        start += line.len();
    }
    // Outermost first, each cut from its directive to its open branch.
    let mut kept = String::with_capacity(prelude.len());
    let mut at = 0;
    for (directive, branch) in open {
        kept.push_str(&prelude[at..directive]);
        at = branch;
    }
    kept.push_str(&prelude[at..]);
    kept
}

/// What `#include "name"` writes after `include` (`"name"`, with what follows on the line).
fn quoted_include(line: &str) -> Option<&str> {
    written_include(line).filter(|w| w.starts_with('"'))
}

/// What an `#include` writes after `include` (`"name"` or `<name>`, with what follows on the line).
fn written_include(line: &str) -> Option<&str> {
    line.trim_start().strip_prefix('#')?.trim_start().strip_prefix("include").map(str::trim).filter(|w| w.starts_with('"') || w.starts_with('<'))
}

/// What an `#include` line names, as [`includes::classify`] takes it: `"name"` or `<name>`,
/// without a trailing comment.
fn included(line: &str) -> Option<&str> {
    written_include(line).map(|w| w.split_once("//").map_or(w, |(name, _)| name).trim())
}

/// `text` with the project's headers it includes written in, as the slice does.
pub fn with_project_headers(text: &str, opts: &SliceOptions) -> String {
    inline_into(text, opts.file.as_deref().and_then(Path::parent), opts, &mut Inlined::default(), 0)
}

/// The header of the project an `#include` line names, found as the compiler would from `dir`.
fn project_header(line: &str, dir: Option<&Path>, opts: &SliceOptions) -> Option<PathBuf> {
    included(line).and_then(|w| match includes::classify(w, dir, &opts.include_dirs) {
        Verdict::Local(path) => Some(path.canonicalize().unwrap_or(path)),
        _ => None,
    })
}

/// Where the file `text` (of `opts.file`) sees `#define name` first: in its includer's text
/// before it, in itself, or in a project header either includes; the file, the 1-based line,
/// and the value as written (`1024U`).
pub fn where_defined(text: &str, name: &str, opts: &SliceOptions) -> Option<(PathBuf, u32, String)> {
    let mut seen = BTreeSet::new();
    let includer = opts.includer.as_ref().and_then(|(path, prelude)| defined_in(prelude, path, name, opts, &mut seen, 0));
    includer.or_else(|| defined_in(text, opts.file.as_deref()?, name, opts, &mut seen, 0))
}

fn defined_in(text: &str, path: &Path, name: &str, opts: &SliceOptions, seen: &mut BTreeSet<PathBuf>, depth: usize) -> Option<(PathBuf, u32, String)> {
    // The definition in the branch the preprocessor takes (`#else` of `#ifdef RD_WG_SIZE`).
    let taken = crate::syntax::preprocess::taken_define(text, name);
    for (index, line) in text.lines().enumerate() {
        if let Some((_, value)) = taken.as_ref().filter(|(at, _)| *at == index as u32 + 1) {
            return Some((path.to_path_buf(), index as u32 + 1, value.clone()));
        }
        let Some(header) = project_header(line, path.parent(), opts).filter(|h| depth < 8 && seen.insert(h.clone())) else { continue };
        let found = std::fs::read_to_string(&header).ok().and_then(|header_text| defined_in(&header_text, &header, name, opts, seen, depth + 1));
        if found.is_some() {
            return found;
        }
    }
    None
}

/// What inlining has met so far: the headers written in (each goes in once), and the macros
/// their taken branches define, which later headers' conditions read.
#[derive(Default)]
struct Inlined {
    headers: BTreeSet<PathBuf>,
    macros: BTreeSet<String>,
}

fn inline_into(text: &str, dir: Option<&Path>, opts: &SliceOptions, inlined: &mut Inlined, depth: usize) -> String {
    // An include in a branch the preprocessor leaves out (`#ifdef MMCV_USE_PARROTS` beside the
    // `#else` that includes the PyTorch helpers) is not the build's: its header would take the
    // place of the one the taken branch includes, which often includes the same headers.
    let defined: String = opts.defines.iter().map(|(name, _)| name).chain(&inlined.macros).map(|name| format!("#define {name}\n")).collect();
    let mut taken_lines = std::collections::HashSet::new();
    crate::syntax::preprocess::each_preprocessed_line(&[&defined, text], |in_text, offset, _, taken| {
        if taken && std::ptr::eq(in_text, text) {
            taken_lines.insert(offset);
        }
    });
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let taken = taken_lines.contains(&(line.as_ptr() as usize - text.as_ptr() as usize));
        if let Some(name) = line.trim_start().strip_prefix('#').and_then(|d| d.trim_start().strip_prefix("define")).and_then(|rest| crate::syntax::identifiers_in(rest).next()).filter(|_| taken) {
            inlined.macros.insert(name.to_string());
        }
        // A header of the project, quoted or found in an include dir, goes into the slice: NVRTC
        // gets the slice's text alone.
        let header = project_header(line, dir, opts).filter(|_| taken);
        match header.filter(|_| depth < 8) {
            Some(path) if inlined.headers.contains(&path) => {}
            Some(path) => match std::fs::read_to_string(&path) {
                Ok(header_text) => {
                    inlined.headers.insert(path.clone());
                    let inner = inline_into(&header_text, path.parent(), opts, inlined, depth + 1);
                    out.push_str(&inner.replace("#pragma once", ""));
                    if !inner.ends_with('\n') {
                        out.push('\n');
                    }
                }
                Err(_) => out.push_str(line),
            },
            None => out.push_str(line),
        }
    }
    out
}

struct Slicer<'a> {
    outline: &'a Outline,
    opts: &'a SliceOptions,
    /// Items by each name they declare.
    declarations: HashMap<&'a str, Vec<usize>>,
    kept: Vec<bool>,
    worklist: Vec<usize>,
    /// Conditions already followed.
    conditions_seen: Vec<bool>,
    dropped_includes: Vec<DroppedInclude>,
    /// Namespaces that the kept includes declare.
    included_namespaces: BTreeSet<&'static str>,
    keeps_local_header: bool,
    /// Names read by kept code, for choosing which command-line defines to write.
    used_names: BTreeSet<&'a str>,
    /// By symbol: the first use, and why it is unresolved.
    unresolved: HashMap<String, Unresolved>,
}

impl<'a> Slicer<'a> {
    fn new(outline: &'a Outline, opts: &'a SliceOptions) -> Slicer<'a> {
        let mut declarations: HashMap<&str, Vec<usize>> = HashMap::new();
        for (i, item) in outline.items.iter().enumerate() {
            for name in &item.declares {
                declarations.entry(name.as_str()).or_default().push(i);
            }
        }
        Slicer {
            outline,
            opts,
            declarations,
            kept: vec![false; outline.items.len()],
            worklist: Vec::new(),
            conditions_seen: vec![false; outline.groups.len()],
            dropped_includes: Vec::new(),
            included_namespaces: BTreeSet::new(),
            keeps_local_header: false,
            used_names: BTreeSet::new(),
            unresolved: HashMap::new(),
        }
    }

    fn keep(&mut self, item: usize) {
        if !self.kept[item] {
            self.kept[item] = true;
            self.worklist.push(item);
        }
    }

    /// Keeps every device operator overload (`float4 operator+(float4, float4)` of a header like
    /// cuda-samples' `helper_math.h`): expressions call them without naming them, so no
    /// reference leads to them.
    fn keep_operators(&mut self) {
        let operators: Vec<usize> = (0..self.outline.items.len())
            .filter(|&i| {
                let item = &self.outline.items[i];
                item.role == Role::DeviceFunction && item.declares.iter().any(|name| name.starts_with("operator"))
            })
            .collect();
        for i in operators {
            self.keep(i);
        }
    }

    /// Follows the names used by kept items (and by the conditions around them) until every
    /// item they need is kept.
    fn close(&mut self) {
        while let Some(i) = self.worklist.pop() {
            let item = &self.outline.items[i];
            for &group in &item.groups {
                if !std::mem::replace(&mut self.conditions_seen[group], true) {
                    for reference in &self.outline.groups[group].references {
                        self.resolve(reference, None);
                    }
                }
            }
            for reference in &item.references {
                self.resolve(reference, Some(i));
            }
        }
    }

    /// Keeps what `reference`, used in the item `user` (or in a group's condition), names.
    fn resolve(&mut self, reference: &'a Reference, user: Option<usize>) {
        self.used_names.insert(&reference.name);
        let Some(candidates) = self.declarations.get(reference.name.as_str()).cloned() else {
            return;
        };
        let mut host_only = None;
        let mut resolved = false;
        // An item naming itself (its declarator, a recursive call) needs nothing more.
        for candidate in candidates.into_iter().filter(|&c| Some(c) != user) {
            let role = &self.outline.items[candidate].role;
            // A macro applies whatever C++ scope the name is in.
            let usable = match role {
                Role::Macro => true,
                _ if reference.is_local => false,
                Role::HostFunction | Role::HostVariable => {
                    host_only.get_or_insert(candidate);
                    false
                }
                Role::Other | Role::Include { .. } | Role::UsingDirective { .. } => false,
                _ => true,
            };
            if usable {
                resolved = true;
                self.keep(candidate);
            }
            if *role == Role::ConstexprFunction {
                let line = self.outline.items[candidate].start.line + 1;
                let why = format!(
                    "`{}` (line {line}) is a `constexpr` function without `__device__`; kept, but NVRTC compiles it only with `-default-device` (or mark it `__host__ __device__`)",
                    reference.name
                );
                self.report(reference, why);
            }
        }
        if let (false, Some(host)) = (resolved, host_only) {
            let declaration = &self.outline.items[host];
            let line = declaration.start.line + 1;
            let name = &reference.name;
            let why = if declaration.role == Role::HostFunction {
                format!("`{name}` (line {line}) is a host function; device code cannot call it (declare it `__host__ __device__`)")
            } else {
                format!("`{name}` (line {line}) is a host variable; device code cannot read it (make it `constexpr` or `__constant__`, or pass it as a kernel argument)")
            };
            self.report(reference, why);
        }
    }

    fn report(&mut self, reference: &Reference, why: String) {
        let use_at = Unresolved {
            symbol: reference.name.clone(),
            line: reference.at.line + 1,
            column: reference.at.column + 1,
            why,
        };
        let first = self.unresolved.entry(reference.name.clone()).or_insert_with(|| use_at.clone());
        if (use_at.line, use_at.column) < (first.line, first.column) {
            *first = use_at;
        }
    }

    /// Keeps every include NVRTC can resolve, whatever the kernel uses: what a header declares
    /// is not known here, and keeping it costs NVRTC little.
    fn keep_includes(&mut self) {
        let file_dir = self.opts.file.as_deref().and_then(|f| f.parent());
        for (i, item) in self.outline.items.iter().enumerate() {
            let Role::Include { path } = &item.role else { continue };
            match includes::classify(path, file_dir, &self.opts.include_dirs) {
                Verdict::ToolkitDevice => {
                    self.included_namespaces.extend(includes::known_namespaces(path));
                    self.keep(i);
                }
                Verdict::Local(_) => {
                    self.included_namespaces.extend(includes::known_namespaces(path));
                    self.keeps_local_header = true;
                    self.keep(i);
                }
                Verdict::Dropped(reason) | Verdict::Missing(reason) => {
                    self.dropped_includes.push(DroppedInclude { path: path.clone(), line: item.start.line + 1, reason });
                }
            }
        }
    }

    /// `using namespace N;` is kept when `N` is in the slice: a namespace of the file with kept
    /// code in it, one a kept toolkit header declares, or possibly one from a kept local header.
    fn keep_using_directives(&mut self) {
        let kept_namespaces: BTreeSet<&str> = self
            .outline
            .items
            .iter()
            .enumerate()
            .filter(|(i, _)| self.kept[*i])
            .flat_map(|(_, item)| item.groups.iter())
            .filter_map(|&g| match &self.outline.groups[g].kind {
                GroupKind::Namespace { name } => Some(name.as_str()),
                _ => None,
            })
            .collect();
        let file_namespaces: BTreeSet<&str> = self
            .outline
            .groups
            .iter()
            .filter_map(|g| match &g.kind {
                GroupKind::Namespace { name } => Some(name.as_str()),
                _ => None,
            })
            .collect();
        let dropped_namespaces: BTreeSet<&str> =
            self.dropped_includes.iter().flat_map(|d| includes::known_namespaces(&d.path)).copied().collect();
        for (i, item) in self.outline.items.iter().enumerate() {
            let Role::UsingDirective { namespace } = &item.role else { continue };
            let leading = namespace.trim_start_matches("::").split("::").next().unwrap_or_default();
            let in_slice = if file_namespaces.contains(leading) {
                kept_namespaces.contains(leading)
            } else {
                self.included_namespaces.contains(leading)
                    || (self.keeps_local_header && !dropped_namespaces.contains(leading))
            };
            if in_slice {
                self.keep(i);
            }
        }
    }

    /// Names like `std::vector` whose leading namespace only a dropped include declares.
    fn report_names_from_dropped_includes(&mut self, text: &str) {
        let file_declares = |name: &str| {
            self.declarations.contains_key(name)
                || self.outline.groups.iter().any(|g| matches!(&g.kind, GroupKind::Namespace { name: n } if n == name))
        };
        // `at::PackedTensorAccessor64`: a name the slice defines in PyTorch's namespace.
        let defined_here = |reference: &Reference| {
            let after = text.lines().nth(reference.at.line as usize).and_then(|line| line.get(reference.at.column as usize..)).unwrap_or_default();
            let named = after.strip_prefix(reference.name.as_str()).and_then(|rest| rest.trim_start().strip_prefix("::")).map(str::trim_start).unwrap_or_default();
            includes::TENSOR_ACCESSOR_NAMES.iter().any(|name| named.starts_with(name) && !named[name.len()..].starts_with(|c: char| c.is_alphanumeric() || c == '_'))
        };
        let mut found = Vec::new();
        for (i, item) in self.outline.items.iter().enumerate() {
            if !self.kept[i] {
                continue;
            }
            for reference in item.references.iter().filter(|r| r.is_leading_scope && !r.is_local) {
                let scope = reference.name.as_str();
                if file_declares(scope) || self.included_namespaces.contains(scope) || defined_here(reference) {
                    continue;
                }
                let source = self.dropped_includes.iter().find(|d| includes::known_namespaces(&d.path).contains(&scope));
                if let Some(dropped) = source {
                    let why = format!("namespace `{scope}` comes from {} (line {}), which the slice drops", dropped.path, dropped.line);
                    found.push((reference, why));
                }
            }
        }
        for (reference, why) in found {
            self.report(reference, why);
        }
    }

    fn finish(mut self, text: &str) -> DeviceSlice {
        self.report_names_from_dropped_includes(text);
        let mut source = String::new();
        let mut kept = Vec::new();
        let defines: Vec<&(String, Option<String>)> = self
            .opts
            .defines
            .iter()
            // `__CUDA_NO_HALF_OPERATORS__` and friends configure the CUDA headers, which read them
            // where the slice cannot see.
            .filter(|(name, _)| self.used_names.contains(name.as_str()) || name.starts_with("__CUDA"))
            .collect();
        for (name, value) in &defines {
            let _ = writeln!(source, "#define {name} {}", value.as_deref().unwrap_or("1"));
            kept.push(SliceItem { kind: SliceItemKind::CommandLineDefine, name: name.clone(), line: 0 });
        }
        // What a header NVRTC cannot open gave the kernel: written at the top where kept code
        // uses the name and the file declares none of its own.
        let mut give = |names: &[&str], line: &str, kind: SliceItemKind| {
            let Some(name) = names.iter().find(|name| self.used_names.contains(*name)) else { return };
            if names.iter().all(|name| !self.declarations.contains_key(name)) {
                let _ = writeln!(source, "{line}");
                kept.push(SliceItem { kind, name: name.to_string(), line: 0 });
            }
        };
        let dropped = |header: fn(&str) -> bool| self.dropped_includes.iter().any(|d| header(&d.path));
        for (name, definition) in includes::STANDARD_MACROS.iter().filter(|_| dropped(includes::declares_standard_macros)) {
            give(&[name], &format!("#define {name} {definition}"), SliceItemKind::StandardMacro);
        }
        if dropped(includes::is_pytorch_header) {
            for (name, definition) in includes::PYTORCH_DEVICE_FUNCTIONS {
                give(&[name], definition, SliceItemKind::HeaderDefinition);
            }
            give(&includes::TENSOR_ACCESSOR_NAMES, includes::TENSOR_ACCESSORS, SliceItemKind::HeaderDefinition);
        }
        let library_types = includes::LIBRARY_TYPES.iter().filter(|_| dropped(includes::declares_library_types));
        let driver_types = includes::DRIVER_TYPES.iter().filter(|_| dropped(includes::declares_driver_types));
        for (name, definition) in crate::syntax::HOST_TYPES.iter().chain(library_types).chain(driver_types) {
            give(&[name], &format!("typedef {definition} {name};"), SliceItemKind::HostType);
        }
        let mut emitter = Emitter { text, slicer: &self, out: source, kept, last_end: None };
        emitter.entries(&self.outline.top);
        let Emitter { out: source, kept, .. } = emitter;
        let mut unresolved: Vec<Unresolved> = self.unresolved.into_values().collect();
        unresolved.sort_by(|a, b| (a.line, a.column, &a.symbol).cmp(&(b.line, b.column, &b.symbol)));
        DeviceSlice { source, kept, dropped_includes: self.dropped_includes, unresolved }
    }
}

/// Writes the kept items and the groups around them in source order.
struct Emitter<'a, 's> {
    text: &'a str,
    slicer: &'s Slicer<'a>,
    out: String,
    kept: Vec<SliceItem>,
    /// Where the last emitted text ended in the original.
    last_end: Option<usize>,
}

impl Emitter<'_, '_> {
    fn entries(&mut self, entries: &[Entry]) {
        for entry in entries {
            match *entry {
                Entry::Item(i) if self.slicer.kept[i] => self.item(&self.slicer.outline.items[i]),
                Entry::Item(_) => {}
                Entry::Group(g) if self.holds_kept(g) => {
                    let group = &self.slicer.outline.groups[g];
                    self.separate(group.start_byte);
                    if !group.open.is_empty() {
                        let _ = writeln!(self.out, "{}", group.open);
                    }
                    self.last_end = Some(group.start_byte + group.open.len());
                    self.entries(&group.entries);
                    if !group.close.is_empty() {
                        let _ = writeln!(self.out, "{}", group.close);
                    }
                    self.last_end = Some(group.end_byte);
                }
                Entry::Group(_) => {}
            }
        }
    }

    fn holds_kept(&self, group: usize) -> bool {
        self.slicer.outline.groups[group].entries.iter().any(|e| match *e {
            Entry::Item(i) => self.slicer.kept[i],
            Entry::Group(g) => self.holds_kept(g),
        })
    }

    fn item(&mut self, item: &Item) {
        // From the start of the line, to keep the indentation, when only blanks precede it.
        let line_start = self.text[..item.emit_start].rfind('\n').map_or(0, |at| at + 1);
        let start = if self.text[line_start..item.emit_start].trim().is_empty() { line_start } else { item.emit_start };
        self.separate(start);
        let _ = writeln!(self.out, "{}", self.text[start..item.emit_end].trim_end());
        self.last_end = Some(item.emit_end);
        let kind = match &item.role {
            Role::Kernel { .. } => SliceItemKind::Kernel,
            Role::DeviceFunction => SliceItemKind::DeviceFunction,
            Role::ConstexprFunction => SliceItemKind::ConstexprFunction,
            Role::Type => SliceItemKind::Type,
            Role::Constant => SliceItemKind::Constant,
            Role::DeviceVariable => SliceItemKind::DeviceVariable,
            Role::Macro => SliceItemKind::Macro,
            Role::NamespaceAlias => SliceItemKind::NamespaceAlias,
            Role::Include { .. } => SliceItemKind::Include,
            Role::UsingDirective { .. } => SliceItemKind::UsingDirective,
            Role::HostFunction | Role::HostVariable | Role::Other => unreachable!("never kept"),
        };
        let name = match &item.role {
            Role::Include { path } => path.clone(),
            Role::UsingDirective { namespace } => namespace.clone(),
            _ => item.declares.join(", "),
        };
        self.kept.push(SliceItem { kind, name, line: item.start.line + 1 });
    }

    /// A blank line where the original had one, or where dropped code stood.
    fn separate(&mut self, next_start: usize) {
        let Some(last_end) = self.last_end else { return };
        // Preprocessor lines end with their newline; count from the end of their text.
        let last_end = self.text[..last_end].trim_end().len();
        let between = self.text.get(last_end..next_start).unwrap_or_default();
        if !self.out.is_empty() && (between.matches('\n').count() > 1 || !between.trim().is_empty()) {
            self.out.push('\n');
        }
    }
}
