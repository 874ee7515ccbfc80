//! Stage 2 of the data flow: templatize a kernel.
//!
//! Each transform is a separate rewrite over the tree-sitter model. Transforms run in order;
//! each sees the file as the previous ones left it, re-parsed, so that their edits never
//! overlap. A transform either applies in full or not at all: its edits are checked to parse
//! before they are kept. The result is one edit of the original file, the parameters lifted, a
//! spec scaffold and a report of what each transform did or why it did not.

mod apply;
mod bounds;
mod callee;
mod command_line;
mod data_files;
mod derivations;
mod elements;
mod host;
mod index_values;
mod keep_row;
mod lanes;
mod file;
mod format;
mod layout;
mod lift;
mod loop_passes;
mod objects;
mod online_softmax;
mod rows_per_block;
mod scaffold;
mod spec_text;
mod strategy;
mod structs;
mod tensors;
mod thread_tile;
mod texture;
mod vector_access;
mod warp_reduce;

pub use file::{spec_problems, templatize_file, TemplatizedFile};
pub use format::{format_changes, ClangFormat, Formatter};
pub use apply::{apply_defaults, current_values, AppliedDefaults};

use std::ops::Range;
use std::path::Path;

use serde::Serialize;
use cutune_capture::report::CaptureFile;
use tree_sitter::Node;

use crate::slice::SliceOptions;
use crate::spec::{KernelSpec, ParamKind, ParamSpec};
use crate::syntax::{Document, Kernel, KernelModel, Span};
use crate::workspace::HostDocument;

/// Replace the bytes `range` of a text with `new_text`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TextEdit {
    pub range: Range<usize>,
    pub new_text: String,
}

/// A remark about one place in the file, for people: why something was not done, or what to
/// check.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Note {
    /// 1-based line in the file the transform saw.
    pub line: Option<u32>,
    pub message: String,
}

/// What an applied transform contributes.
#[derive(Clone, Debug, Default)]
pub struct Rewrite {
    pub edits: Vec<TextEdit>,
    pub params: Vec<ParamSpec>,
    pub restrictions: Vec<String>,
    /// The block's thread count must stay the original's: the kernel maps its threads onto a
    /// tile with numbers of its own (`tid / 2`), counting on as many threads as there are.
    pub keeps_block_threads: bool,
    pub summary: String,
    pub notes: Vec<Note>,
}

pub enum Outcome {
    Applied(Rewrite),
    /// Nothing of this kind in the kernel.
    NotApplicable(String),
    /// The pattern is there, but cannot be rewritten with certainty.
    Refused(Note),
}

/// One rewrite of a kernel.
pub trait Transform {
    fn name(&self) -> &'static str;
    fn apply(&self, unit: &Unit) -> Outcome;
}

/// What a transform works on: the current file, its model, the kernel and what earlier
/// transforms lifted.
pub struct Unit<'a> {
    pub doc: &'a Document,
    pub model: &'a KernelModel,
    pub kernel: &'a Kernel,
    /// Upper-case stem for new parameter names: `rmsnorm_kernel` gives `RMSNORM`.
    pub prefix: &'a str,
    pub lifted: &'a [ParamSpec],
    /// The names of the transforms applied before this one ([`Transform::name`]).
    pub applied: &'a [&'static str],
    /// What a launch in another file instantiates each template parameter with, where it is an
    /// integer the host code settles (`const uint BM = 64;` in the launcher).
    pub host_instantiation: &'a [Option<scaffold::HostValue>],
    /// The kernel's launches that edits of this file's `<<<…>>>` launch sites do not reach
    /// (another file's, one through a function pointer), each as a place (`bench.cu:12`): a
    /// rewrite that changes what a launch must pass cannot be applied while they are there.
    pub unreached_launches: &'a [String],
    /// How the lines of `doc` map back to the user's file, before earlier transforms.
    pub origins: &'a LineOrigins,
    /// Where the file's includes are found.
    pub slice_options: &'a SliceOptions,
}

/// The line edits of the transforms applied so far, to say every line in the user's file as
/// it was, not in the text the earlier transforms left.
#[derive(Default)]
pub struct LineOrigins {
    /// Per applied rewrite, its edits as (first line, lines removed, lines added), 0-based, in
    /// the text before it, in order.
    rewrites: Vec<Vec<(u32, u32, u32)>>,
}

impl LineOrigins {
    fn record(&mut self, before: &str, edits: &[TextEdit]) {
        let mut shifts: Vec<(u32, u32, u32)> = edits
            .iter()
            .map(|e| {
                let newlines = |t: &str| t.matches('\n').count() as u32;
                (newlines(&before[..e.range.start]), newlines(&before[e.range.clone()]), newlines(&e.new_text))
            })
            .collect();
        shifts.sort_unstable();
        self.rewrites.push(shifts);
    }

    /// The 0-based line of the original text that `line` of the current text came from; a line
    /// a rewrite wrote is the line the rewrite starts at.
    fn original(&self, line: u32) -> u32 {
        self.rewrites.iter().rev().fold(line, |line, shifts| line_before(shifts, line))
    }
}

/// The types `name` is defined as: `typedef T name;` and `using name = T;`.
fn aliased_types(text: &str, name: &str) -> Vec<String> {
    let mut types = Vec::new();
    for statement in text.split(';') {
        let words: Vec<&str> = statement.split_whitespace().collect();
        if let Some(at) = words.iter().rposition(|w| *w == "typedef") {
            if words.last() == Some(&name) && words.len() > at + 2 {
                types.push(words[at + 1..words.len() - 1].join(" "));
            }
        } else if let Some(at) = words.iter().rposition(|w| *w == "using") {
            if words.get(at + 1) == Some(&name) && words.get(at + 2) == Some(&"=") && words.len() > at + 3 {
                types.push(words[at + 3..].join(" "));
            }
        }
    }
    types
}

/// The line of the text before one rewrite's `shifts` that `line` of the text after it came from.
fn line_before(shifts: &[(u32, u32, u32)], line: u32) -> u32 {
    let mut delta: i64 = 0;
    for &(first, removed, added) in shifts {
        let start = (first as i64 + delta) as u32;
        if line < start {
            break;
        }
        if line <= start + added {
            return first;
        }
        delta += added as i64 - removed as i64;
    }
    (line as i64 - delta) as u32
}

impl<'a> Unit<'a> {
    pub fn text(&self) -> &'a str {
        self.doc.text()
    }

    pub fn slice(&self, span: Span) -> &'a str {
        &self.doc.text()[span.start_byte..span.end_byte]
    }

    /// The kernel's definition node (`function_definition`, possibly inside a template).
    pub fn kernel_node(&self) -> Option<Node<'a>> {
        kernel_definition(self.doc, self.kernel)
    }

    pub fn body(&self) -> Option<Node<'a>> {
        self.kernel_node()?.child_by_field_name("body")
    }

    /// 1-based line of a byte offset, in the user's file as it was before templatize.
    pub fn line_of(&self, offset: usize) -> u32 {
        self.origins.original(self.doc.position(crate::syntax::Encoding::Utf8, offset).line) + 1
    }

    /// 1-based line, in the user's file, where `span` starts.
    pub fn line_at(&self, span: Span) -> u32 {
        self.line_of(span.start_byte)
    }

    /// The size of an element type: a type cutune knows, or a `typedef`/`using` of the file or
    /// of the project headers it includes; a name defined several ways under `#if`
    /// (`typedef float floatX;` or `typedef half floatX;`) has the largest of its sizes.
    pub fn element_bytes(&self, ty: &str) -> Option<u64> {
        let ty = strategy::plain_element(ty);
        if let Some(bytes) = crate::syntax::size_of_type(&ty) {
            return Some(bytes);
        }
        if !crate::syntax::is_identifier(&ty) {
            return None;
        }
        let text = crate::slice::with_project_headers(self.text(), self.slice_options);
        let sizes: Vec<Option<u64>> = aliased_types(&text, &ty).iter().map(|t| crate::syntax::size_of_type(t)).collect();
        if sizes.is_empty() || sizes.iter().any(Option::is_none) {
            return None;
        }
        sizes.into_iter().flatten().max()
    }

    /// A local name for a rewrite's code that the kernel does not use yet: `wanted`, else
    /// `wanted2`, `wanted3`…
    pub fn local_name(&self, wanted: &str) -> String {
        let body = self.body().map(|b| &self.text()[b.byte_range()]).unwrap_or("");
        std::iter::once(wanted.to_string()).chain((2..).map(|i| format!("{wanted}{i}"))).find(|n| !contains_identifier(body, n)).expect("an unbounded sequence of names has a free one")
    }

    /// A name for a new parameter that no identifier in the file uses yet.
    pub fn fresh_name(&self, stem: &str) -> String {
        let base = format!("{}_{stem}", self.prefix);
        let taken = |name: &str| {
            self.lifted.iter().any(|p| p.name == name) || contains_identifier(self.text(), name)
        };
        std::iter::once(base.clone())
            .chain((2..).map(|i| format!("{base}_{i}")))
            .find(|n| !taken(n))
            .expect("an unbounded sequence of names has a free one")
    }

    /// Inserts `#ifndef NAME / #define NAME value / #endif` above the kernel and the comment
    /// lines that belong to it: the parameter's default, overridable with `-DNAME=...`.
    pub fn define_block(&self, name: &str, value: &str) -> TextEdit {
        self.define_block_at(self.kernel_anchor(), name, value)
    }

    /// The same guard at the start of the line holding `offset`, for a parameter used above
    /// the kernel.
    pub fn define_block_at(&self, offset: usize, name: &str, value: &str) -> TextEdit {
        let at = line_start(self.text(), offset);
        // A blank line parts it from what follows, as a person would leave one.
        TextEdit { range: at..at, new_text: format!("{}\n", define_guard(name, value)) }
    }

    /// Start of the line where the kernel's leading comments (or the kernel) begin.
    fn kernel_anchor(&self) -> usize {
        let mut start = self.kernel.span.start_byte;
        if let Some(item) = self.kernel_item() {
            let mut node = item;
            while let Some(prev) = node.prev_sibling() {
                let adjacent = self.text()[prev.end_byte()..node.start_byte()].matches('\n').count() <= 1;
                if prev.kind() != "comment" || !adjacent {
                    break;
                }
                node = prev;
            }
            start = start.min(node.start_byte());
        }
        line_start(self.text(), start)
    }

    /// The outermost node of the kernel's item: its `template_declaration` or `linkage_specification`
    /// when it has one.
    fn kernel_item(&self) -> Option<Node<'a>> {
        let mut node = self.kernel_node()?;
        while let Some(parent) = node.parent() {
            if !matches!(parent.kind(), "template_declaration" | "linkage_specification") {
                break;
            }
            node = parent;
        }
        Some(node)
    }
}

/// The `function_definition` node of `kernel` in `doc`.
fn kernel_definition<'d>(doc: &'d Document, kernel: &Kernel) -> Option<Node<'d>> {
    let node = doc.tree()?.root_node().descendant_for_byte_range(kernel.name_span.start_byte, kernel.name_span.end_byte)?;
    std::iter::successors(Some(node), |n| n.parent()).find(|n| n.kind() == "function_definition")
}

/// What one transform did, for the report.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TransformReport {
    pub transform: &'static str,
    pub status: Status,
    pub message: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<Note>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Applied,
    NotApplicable,
    Refused,
}

/// A templatized kernel: the new file text, the edits that make it from the original, the spec
/// scaffold and the report.
#[derive(Clone, Debug)]
pub struct Templatized {
    pub kernel: String,
    pub text: String,
    pub edits: Vec<TextEdit>,
    pub spec: KernelSpec,
    pub reports: Vec<TransformReport>,
}

impl Templatized {
    pub fn params(&self) -> &[ParamSpec] {
        &self.spec.params
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TemplatizeError {
    KernelNotFound { name: String, known: Vec<String> },
    /// Only a prototype of the kernel is in the file.
    NoDefinition { name: String, line: u32 },
    /// tree-sitter cannot parse the kernel, so no rewrite of it can be certain.
    SyntaxErrors { name: String, lines: Vec<u32> },
    /// The file is too large to analyse.
    NotAnalyzed,
}

impl std::fmt::Display for TemplatizeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TemplatizeError::KernelNotFound { name, known } if known.is_empty() => {
                write!(f, "no kernel `{name}`: the file has no `__global__` function")
            }
            TemplatizeError::KernelNotFound { name, known } => {
                write!(f, "no kernel `{name}`; the file has: {}", known.join(", "))
            }
            TemplatizeError::NoDefinition { name, line } => {
                write!(f, "kernel `{name}` is only declared here (line {line}); templatize the file that defines it")
            }
            TemplatizeError::SyntaxErrors { name, lines } => {
                let lines: Vec<String> = lines.iter().map(u32::to_string).collect();
                write!(f, "kernel `{name}` does not parse (line {}): fix it before templatizing", lines.join(", "))
            }
            TemplatizeError::NotAnalyzed => write!(f, "the file is too large to analyse"),
        }
    }
}

impl std::error::Error for TemplatizeError {}

/// Templatizes `kernel` of the file `text`, with only that file's host code. The baseline kept
/// in the spec is the original kernel's device slice, cut with `slice_options` (the file's
/// place, its include dirs).
pub fn templatize(text: &str, kernel: &str, slice_options: &SliceOptions) -> Result<Templatized, TemplatizeError> {
    templatize_with_hosts(text, kernel, slice_options, &[], None)
}

/// [`templatize`], with the host code of other files of the workspace (launches, launchers and
/// their callers), from [`crate::workspace::Workspace::host_documents`], and the block of a
/// captured launch of the kernel, which gives a block the host code cannot be followed to.
pub fn templatize_with_hosts(text: &str, kernel: &str, slice_options: &SliceOptions, hosts: &[HostDocument], captured_block: Option<[u32; 3]>) -> Result<Templatized, TemplatizeError> {
    let original = Document::new(text.to_string());
    if original.analysis() != crate::syntax::Analysis::Complete {
        return Err(TemplatizeError::NotAnalyzed);
    }
    check_templatizable(&original, kernel)?;
    let prefix = param_prefix(kernel);
    // The file read as host code, from the text given (the editor's, which may be unsaved).
    let path = slice_options.file.as_deref();
    // Its includes not beside it are among the host documents (the workspace found them by name).
    let files = crate::workspace::FilesByName::new(hosts.iter().map(|h| h.path.as_path()));
    let as_host_code = |doc: &Document| path.and_then(|path| crate::workspace::as_host_code(path, doc.text(), &files));
    let original_expanded = as_host_code(&original);
    let original_file = scaffold::KernelFile { text: &original, expanded: original_expanded.as_ref(), path };
    let host_instantiation = scaffold::host_template_values(original_file, kernel, hosts);
    let unreached_launches = scaffold::unreached_launches(original_file, kernel, hosts);
    let mut steps = Steps { current: original.clone(), params: Vec::new(), restrictions: Vec::new(), keeps_block_threads: false, applied: Vec::new(), reports: Vec::new(), origins: LineOrigins::default() };
    let context = StepContext { kernel, prefix: &prefix, host_instantiation: &host_instantiation, unreached_launches: &unreached_launches, slice_options };
    for transform in lift::transforms() {
        steps.run(transform.as_ref(), &context);
    }
    let infer = |steps: &Steps| {
        let around = scaffold::Surroundings { hosts, captured_block, origins: &steps.origins, keeps_block_threads: steps.keeps_block_threads };
        let expanded = as_host_code(&steps.current);
        let templated = scaffold::KernelFile { text: &steps.current, expanded: expanded.as_ref(), path };
        scaffold::infer(&original, templated, kernel, steps.params.clone(), steps.restrictions.clone(), slice_options, &around)
    };
    let mut inferred = infer(&steps);
    steps.reports.push(launch_report(&inferred));
    if let Some(run) = inferred.launch.as_ref().and_then(|l| l.documented_run.as_ref()) {
        steps.reports.push(transform_report("command-line", Status::Applied, format!("sizes the program reads from its command line are those of its documented run {run}"), Vec::new()));
    }
    if let Some(twin_call) = inferred.launch.as_ref().and_then(|l| l.twin_call.as_ref()) {
        steps.reports.push(transform_report("callers", Status::Applied, twin_call.clone(), Vec::new()));
    }
    if inferred.launch.is_none() {
        let why = "no launch was found: the block may yet be a choice, so the loops' unroll factors are not offered";
        steps.reports.push(transform_report("loop-unroll", Status::NotApplicable, why.into(), Vec::new()));
    } else if inferred.spec.execution_params().next().is_some() {
        let why = "the kernel has other execution parameters: loop unroll factors are offered only where there is no other choice";
        steps.reports.push(transform_report("loop-unroll", Status::NotApplicable, why.into(), Vec::new()));
    } else if steps.run(&lift::LoopUnroll, &context) {
        inferred = infer(&steps);
    }
    let Steps { current, reports, .. } = steps;
    let spec = inferred.spec;
    let edits = line_edits(text, current.text());
    Ok(Templatized { kernel: kernel.to_string(), text: current.text().to_string(), edits, spec, reports })
}

/// What stays the same for every transform of one templatize.
struct StepContext<'a> {
    kernel: &'a str,
    prefix: &'a str,
    host_instantiation: &'a [Option<scaffold::HostValue>],
    unreached_launches: &'a [String],
    slice_options: &'a SliceOptions,
}

/// The file as the transforms so far left it, with what they lifted and said.
struct Steps {
    current: Document,
    params: Vec<ParamSpec>,
    restrictions: Vec<String>,
    keeps_block_threads: bool,
    applied: Vec<&'static str>,
    reports: Vec<TransformReport>,
    origins: LineOrigins,
}

impl Steps {
    /// Applies `transform` to the current file and reports it; whether it changed anything.
    fn run(&mut self, transform: &dyn Transform, context: &StepContext) -> bool {
        let model = self.current.model().clone();
        let k = model.kernel(context.kernel).expect("every kept rewrite keeps the kernel");
        let unit = Unit {
            doc: &self.current,
            model: &model,
            kernel: k,
            prefix: context.prefix,
            lifted: &self.params,
            applied: &self.applied,
            host_instantiation: context.host_instantiation,
            unreached_launches: context.unreached_launches,
            origins: &self.origins,
            slice_options: context.slice_options,
        };
        let (report, applied) = match transform.apply(&unit) {
            Outcome::Applied(rewrite) => match rewritten(&self.current, context.kernel, &rewrite.edits) {
                Ok(next) => {
                    self.origins.record(self.current.text(), &rewrite.edits);
                    self.params.extend(rewrite.params);
                    self.restrictions.extend(rewrite.restrictions);
                    self.keeps_block_threads |= rewrite.keeps_block_threads;
                    self.applied.push(transform.name());
                    self.current = next;
                    (transform_report(transform.name(), Status::Applied, rewrite.summary, rewrite.notes), true)
                }
                Err(why) => (transform_report(transform.name(), Status::Refused, why, rewrite.notes), false),
            },
            Outcome::NotApplicable(why) => (transform_report(transform.name(), Status::NotApplicable, why, Vec::new()), false),
            Outcome::Refused(note) => (transform_report(transform.name(), Status::Refused, note.message.clone(), vec![note]), false),
        };
        self.reports.push(report);
        applied
    }
}

/// [`templatize_with_hosts`] for `file` in the workspace at `root`, with the launches of the
/// kernel that `cutune profile` captured there: the program's instantiation gives template
/// arguments the source leaves open, and each capture fills what else the source could not
/// say (sizes, grid, lengths, written buffers), reported as a `capture` line.
pub fn templatize_in_workspace(text: &str, kernel: &str, file: &Path, slice_options: &SliceOptions, hosts: &[HostDocument], root: &Path) -> Result<Templatized, TemplatizeError> {
    let captures = crate::profile::captured::captures_of(root, kernel);
    let first = captures.iter().flatten().next();
    let instantiation = first.map(|c| crate::profile::kernel_name(&c.capture.kernel).template_args).unwrap_or_default();
    let options = if slice_options.template_args.is_empty() { slice_options.clone().with_template_args(&instantiation) } else { slice_options.clone() };
    let mut result = templatize_with_hosts(text, kernel, &options, hosts, first.map(|c| c.capture.block))?;
    fill_from_captures(&mut result, captures, file);
    Ok(result)
}

/// Fills the spec of `result` from `captures` and reports what each filled. The spec names the
/// captures relative to its own folder, beside `source_file`.
fn fill_from_captures(result: &mut Templatized, captures: Vec<Result<CaptureFile, String>>, source_file: &Path) {
    let spec_path = crate::spec::spec_path_for(source_file);
    let spec_dir = spec_path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let spec_dir = spec_dir.canonicalize().unwrap_or_else(|_| spec_dir.to_path_buf());
    // The spec tunes one instantiation: the first capture's. Others (a final pass launched with
    // another block size) are other kernels to the compiler.
    let mut instantiation: Option<String> = None;
    for capture in captures {
        let capture = match capture {
            Ok(capture) if instantiation.as_ref().is_none_or(|first| *first == capture.capture.kernel) => capture,
            Ok(other) => {
                let why = format!("not used: {} launched another instantiation, `{}`", other.path.display(), crate::profile::kernel_name(&other.capture.kernel).display());
                result.reports.push(transform_report("capture", Status::Refused, why, Vec::new()));
                continue;
            }
            Err(why) => {
                result.reports.push(transform_report("capture", Status::Refused, format!("not used: {why}"), Vec::new()));
                continue;
            }
        };
        instantiation.get_or_insert_with(|| capture.capture.kernel.clone());
        let absolute = capture.path.canonicalize().unwrap_or_else(|_| capture.path.clone());
        let file = pathdiff::diff_paths(&absolute, &spec_dir).unwrap_or(absolute).to_string_lossy().into_owned();
        let report = match crate::profile::captured::apply(&mut result.spec, &capture, &file) {
            Ok(notes) if notes.is_empty() => transform_report("capture", Status::Applied, format!("the launch captured in {file} agrees with the source; tuning also runs on its data"), Vec::new()),
            Ok(notes) => transform_report("capture", Status::Applied, format!("from the launch captured in {file}: {}", notes.join("; ")), Vec::new()),
            Err(why) => transform_report("capture", Status::Refused, why, Vec::new()),
        };
        result.reports.push(report);
    }
}

/// Where the spec's launch was read, and the host program's launch choices lifted from it.
fn launch_report(inferred: &scaffold::Inferred) -> TransformReport {
    let Some(found) = &inferred.launch else {
        return match &inferred.unlaunched {
            Some(said) => transform_report("launch-choices", Status::Applied, said.clone(), Vec::new()),
            None => transform_report("launch-choices", Status::NotApplicable, "no launch of the kernel in this file or the workspace: grid, block and sizes are left as `?`".into(), Vec::new()),
        };
    };
    let place = match &found.other_file {
        Some(path) => format!("{}:{}", path.display(), found.line),
        None => format!("line {}", found.line),
    };
    if found.choices.is_empty() && found.held.is_empty() {
        return transform_report("launch-choices", Status::NotApplicable, format!("the launch at {place} makes no run-time choice"), Vec::new());
    }
    if found.choices.is_empty() {
        return transform_report("launch-choices", Status::NotApplicable, format!("the launch at {place} makes no run-time choice that may vary alone: {}", found.held.join("; ")), Vec::new());
    }
    let said = |kind: ParamKind| found.choices.iter().filter(|p| p.kind == kind).map(|p| format!("`{}` = {} ({})", p.name, p.default, p.origin)).collect::<Vec<_>>().join(", ");
    let message = match (said(ParamKind::Launch), said(ParamKind::Define)) {
        (launches, builds) if builds.is_empty() => format!("launch parameters from the launch at {place}: {launches}; only the launch changes, no recompile"),
        (launches, builds) if launches.is_empty() => format!("the block of the launch at {place} is made of names the kernel's code uses too: {builds}; tuning compiles each value with `-D`"),
        (launches, builds) => format!("launch parameters from the launch at {place}: {launches}; only the launch changes, no recompile; and of names the kernel's code uses too: {builds}; tuning compiles each value with `-D`"),
    };
    transform_report("launch-choices", Status::Applied, message, Vec::new())
}

fn transform_report(transform: &'static str, status: Status, message: String, notes: Vec<Note>) -> TransformReport {
    TransformReport { transform, status, message, notes }
}

/// Whether `name` can be templatized in `doc`: a kernel defined here, that parses.
pub fn check_templatizable(doc: &Document, name: &str) -> Result<(), TemplatizeError> {
    let model = doc.model();
    let Some(kernel) = model.kernel(name) else {
        let mut known: Vec<String> = model.kernels.iter().map(|k| k.name.clone()).collect();
        known.dedup();
        return Err(TemplatizeError::KernelNotFound { name: name.to_string(), known });
    };
    if !kernel.is_definition {
        return Err(TemplatizeError::NoDefinition { name: name.to_string(), line: kernel.span.start.line + 1 });
    }
    let lines: Vec<u32> = model
        .syntax_errors
        .iter()
        .filter(|e| kernel.span.contains(&e.span))
        .map(|e| e.span.start.line + 1)
        .collect();
    if !lines.is_empty() {
        return Err(TemplatizeError::SyntaxErrors { name: name.to_string(), lines });
    }
    Ok(())
}

/// Applies a transform's edits and re-parses. Refuses a rewrite that loses the kernel or adds
/// syntax errors: a bug in a transform must never reach the user's file.
fn rewritten(doc: &Document, kernel: &str, edits: &[TextEdit]) -> Result<Document, String> {
    // Parameters that live only in the spec change no text: nothing to parse again.
    if edits.is_empty() {
        return Ok(doc.clone());
    }
    let text = apply_edits(doc.text(), edits).map_err(|e| format!("internal error: {e}"))?;
    let next = Document::new(text);
    let still_defined = next.model().kernel(kernel).is_some_and(|k| k.is_definition);
    if !still_defined || next.model().syntax_errors.len() > doc.model().syntax_errors.len() {
        let at = next.model().syntax_errors.first().map(|e| format!(" (line {} of the rewrite)", e.span.start.line + 1)).unwrap_or_default();
        return Err(format!("internal error: the rewrite would not parse{at}; the file was left as it was"));
    }
    Ok(next)
}

/// What each transform did, one line each, in `file:line:` form where there is a line.
pub fn report(file: &Path, result: &Templatized) -> String {
    let mut out = String::new();
    for r in &result.reports {
        let status = match r.status {
            Status::Applied => "applied",
            Status::NotApplicable => "skipped",
            Status::Refused => "refused",
        };
        out.push_str(&format!("{}: {status}: {}: {}\n", file.display(), r.transform, r.message));
        for note in r.notes.iter().filter(|n| r.status != Status::Refused || n.message != r.message) {
            let at = note.line.map(|l| format!("{}:{l}", file.display())).unwrap_or_else(|| file.display().to_string());
            out.push_str(&format!("{at}: note: {}\n", note.message));
        }
    }
    let names: Vec<String> = result.params().iter().map(|p| format!("{}={}", p.name, p.default)).collect();
    out.push_str(&format!("{}: parameters: {}\n", file.display(), names.join(" ")));
    out
}

/// Applies non-overlapping edits; insertions at the same offset keep their order.
///
/// A replacement that ends in a directive (`#endif`) where its line goes on
/// (`for (…) m = fmaxf(m, x[j]); m = block_max(m, red);`) moves the rest of the line to a line
/// of its own, indented as the replaced code: after `#endif` the preprocessor would drop it.
pub fn apply_edits(text: &str, edits: &[TextEdit]) -> Result<String, String> {
    let mut sorted: Vec<&TextEdit> = edits.iter().collect();
    sorted.sort_by_key(|e| (e.range.start, e.range.end));
    let mut out = String::with_capacity(text.len() + 256);
    let mut at = 0;
    for edit in sorted {
        if edit.range.start < at || edit.range.end > text.len() || edit.range.start > edit.range.end {
            return Err(format!("edit {:?} overlaps another or lies outside the text", edit.range));
        }
        out.push_str(&text[at..edit.range.start]);
        out.push_str(&edit.new_text);
        at = edit.range.end;
        let rest_of_line = text[at..].split('\n').next().unwrap_or_default();
        let last_line = edit.new_text.rsplit('\n').next().unwrap_or_default();
        if last_line.trim_start().starts_with('#') && !rest_of_line.trim().is_empty() {
            out.push('\n');
            out.push_str(layout::leading_whitespace(&text[line_start(text, edit.range.start)..]));
            at += rest_of_line.len() - rest_of_line.trim_start().len();
        }
    }
    out.push_str(&text[at..]);
    Ok(out)
}

/// The smallest whole-line edits that turn `old` into `new`: what an editor previews.
pub fn line_edits(old: &str, new: &str) -> Vec<TextEdit> {
    let diff = similar::TextDiff::from_lines(old, new);
    let old_starts: Vec<usize> = line_offsets(old);
    let new_starts: Vec<usize> = line_offsets(new);
    diff.grouped_ops(0)
        .into_iter()
        .flatten()
        .filter(|op| op.tag() != similar::DiffTag::Equal)
        .map(|op| {
            let (o, n) = (op.old_range(), op.new_range());
            TextEdit { range: old_starts[o.start]..old_starts[o.end], new_text: new[new_starts[n.start]..new_starts[n.end]].to_string() }
        })
        .collect()
}

/// Byte offset of the start of every line, plus the end of the text.
fn line_offsets(text: &str) -> Vec<usize> {
    let mut starts = vec![0];
    starts.extend(text.match_indices('\n').map(|(i, _)| i + 1).filter(|&i| i < text.len()));
    starts.push(text.len());
    starts
}

/// `#define name value` unless the build defines `name`.
fn define_guard(name: &str, value: &str) -> String {
    format!("#ifndef {name}\n#define {name} {value}\n#endif\n")
}

fn line_start(text: &str, offset: usize) -> usize {
    text[..offset].rfind('\n').map_or(0, |i| i + 1)
}

/// `text` with identifiers renamed again and again (a macro written out may name another),
/// until nothing changes, eight rounds at most (a macro that names itself never settles).
fn renamed_until_settled(text: &str, rename: impl Fn(&str) -> Option<String>) -> String {
    let mut text = text.to_string();
    for _ in 0..8 {
        let next = crate::syntax::rename_identifiers_in(&text, &rename);
        if next == text {
            break;
        }
        text = next;
    }
    text
}

/// Whether `name` occurs in `text` as a whole identifier.
pub(crate) fn contains_identifier(text: &str, name: &str) -> bool {
    crate::syntax::identifiers_in(text).any(|w| w == name)
}

/// `rmsnorm_kernel` → `RMSNORM`, `sgemmTiled` → `SGEMM_TILED`.
pub fn param_prefix(kernel: &str) -> String {
    let mut out = String::new();
    let mut prev_lower = false;
    for c in kernel.chars() {
        if c.is_ascii_uppercase() && prev_lower {
            out.push('_');
        }
        prev_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        out.push(c.to_ascii_uppercase());
    }
    let stem = out.trim_end_matches("_KERNEL").trim_end_matches("KERNEL").trim_matches('_');
    if stem.is_empty() { "KERNEL".to_string() } else { stem.to_string() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_are_upper_snake_without_kernel_suffix() {
        assert_eq!(param_prefix("rmsnorm_kernel"), "RMSNORM");
        assert_eq!(param_prefix("sgemmTiled"), "SGEMM_TILED");
        assert_eq!(param_prefix("transposeKernel"), "TRANSPOSE");
        assert_eq!(param_prefix("kernel"), "KERNEL");
    }

    #[test]
    fn line_edits_reproduce_the_new_text() {
        let old = "a\nb\nc\nd\n";
        let new = "a\nx\ny\nc\nd\ne";
        let edits = line_edits(old, new);
        assert_eq!(apply_edits(old, &edits).unwrap(), new);
        assert_eq!(edits.len(), 2, "{edits:?}");
    }

    #[test]
    fn lines_after_rewrites_are_said_as_they_were_in_the_users_file() {
        let original = "a\nb\nloop\nc\n";
        let mut origins = LineOrigins::default();
        // Two lines inserted above `a`, then `loop` replaced by three lines.
        let insert = [TextEdit { range: 0..0, new_text: "#x\n#y\n".into() }];
        origins.record(original, &insert);
        let once = apply_edits(original, &insert).unwrap();
        let at = once.find("loop").unwrap();
        let replace = [TextEdit { range: at..at + 4, new_text: "#if\nloop\n#else".into() }];
        origins.record(&once, &replace);
        let twice = apply_edits(&once, &replace).unwrap();
        let line_of = |needle: &str| twice[..twice.find(needle).unwrap()].matches('\n').count() as u32;
        assert_eq!(origins.original(line_of("#x")), 0);
        assert_eq!(origins.original(line_of("a")), 0);
        assert_eq!(origins.original(line_of("b")), 1);
        assert_eq!(origins.original(line_of("#else")), 2);
        assert_eq!(origins.original(line_of("c")), 3);
    }

    #[test]
    fn overlapping_edits_are_rejected() {
        let edits = [TextEdit { range: 0..3, new_text: "x".into() }, TextEdit { range: 2..4, new_text: "y".into() }];
        assert!(apply_edits("abcdef", &edits).is_err());
    }

    #[test]
    fn code_after_a_replacement_ending_in_a_directive_goes_on_its_own_line() {
        let text = "  for (;;) m = f(m); m = reduce(m);\n  done();\n";
        let end = text.find(" m = reduce").unwrap();
        let edits = [TextEdit { range: 2..end, new_text: "#if A\n  for (;;) m = f(m);\n#endif".into() }];
        assert_eq!(apply_edits(text, &edits).unwrap(), "  #if A\n  for (;;) m = f(m);\n#endif\n  m = reduce(m);\n  done();\n");
        // A directive that ends its line, or a replacement that does not end in one, is left as it is.
        let edits = [TextEdit { range: 2..end, new_text: "g();".into() }];
        assert_eq!(apply_edits(text, &edits).unwrap(), "  g(); m = reduce(m);\n  done();\n");
        let whole_line = text.find('\n').unwrap();
        let edits = [TextEdit { range: 2..whole_line, new_text: "#if A\n#endif".into() }];
        assert_eq!(apply_edits(text, &edits).unwrap(), "  #if A\n#endif\n  done();\n");
    }

    #[test]
    fn identifiers_match_whole_words_only() {
        assert!(contains_identifier("int BLOCK = 1;", "BLOCK"));
        assert!(!contains_identifier("int BLOCK_SIZE = 1;", "BLOCK"));
        assert!(!contains_identifier("MY_BLOCK", "BLOCK"));
    }

    #[test]
    fn a_type_defined_under_conditions_has_each_of_its_definitions() {
        let text = "#if defined(ENABLE_BF16)\ntypedef __nv_bfloat16 floatX;\n#elif defined(ENABLE_FP16)\ntypedef half floatX;\n#else\ntypedef float floatX;\n#endif\nusing index_t = unsigned int;\ntypedef floatX floatX_pair;\n";
        assert_eq!(aliased_types(text, "floatX"), ["__nv_bfloat16", "half", "float"]);
        assert_eq!(aliased_types(text, "index_t"), ["unsigned int"]);
        assert_eq!(aliased_types(text, "floatN"), Vec::<String>::new());
    }
}
