//! `cutune survey DIR [--json]`: templatize every kernel under a folder in memory (nothing is
//! written), check each spec and compile each default configuration, and say how far each kernel
//! gets and why it stops: what in a project can be tuned as it is.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use serde::Serialize;

use super::read_source;
use crate::compile::Nvrtc;
use crate::slice::{device_slice, SliceOptions};
use crate::space::{self, Configuration};
use crate::spec::{KernelSpec, UNKNOWN};
use crate::syntax::Document;
use crate::template;
use crate::workspace::{find_root, is_marked_root, Limits, Workspace};

#[derive(clap::Args)]
pub struct SurveyArgs {
    /// The folder whose kernels are surveyed; host code is looked for in its whole workspace.
    pub dir: PathBuf,
    /// The architecture the default configurations are compiled for.
    #[arg(long, default_value = "sm_90")]
    pub arch: String,
    /// The NVRTC library (otherwise searched as `cutune check` does); without one, nothing is compiled.
    #[arg(long)]
    pub nvrtc: Option<PathBuf>,
    /// Compiler threads.
    #[arg(long, short = 'j')]
    pub jobs: Option<usize>,
    #[arg(long)]
    pub json: bool,
}

/// How far a kernel got, in the order of the loop: the first stage it did not pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    /// Templatize refused the kernel (it does not parse, say).
    Templatize,
    /// The spec still has problems: a `?`, a name it does not know.
    Spec,
    /// The default configuration does not compile.
    Compile,
    /// Only compiler options to tune: nothing of the kernel's own execution was found.
    Parameters,
    /// A clean spec that compiles, with execution parameters: ready to tune.
    Ready,
}

impl Stage {
    fn as_str(self) -> &'static str {
        match self {
            Stage::Templatize => "templatize",
            Stage::Spec => "spec",
            Stage::Compile => "compile",
            Stage::Parameters => "parameters",
            Stage::Ready => "ready",
        }
    }
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "snake_case", tag = "status")]
pub enum CompileResult {
    Compiled { registers: u32 },
    Failed { reason: String },
    NotRun { reason: String },
}

#[derive(Clone, Debug, Serialize)]
pub struct KernelSurvey {
    pub file: String,
    pub line: u32,
    pub kernel: String,
    /// `NAME=default` of every parameter.
    pub params: Vec<String>,
    /// Parameters other than compiler options.
    pub execution_params: usize,
    pub spec_problems: Vec<String>,
    pub compile: CompileResult,
    pub stage: Stage,
    /// Why it stopped there (empty when ready).
    pub why: String,
    /// Sizes of the spec's shapes that templatize chose, no program giving them (a kernel
    /// nothing launches): a kernel ready on them tunes on sizes that are not the program's.
    pub chosen_sizes: Vec<String>,
}

#[derive(Serialize)]
struct Report {
    dir: String,
    /// The workspace root of the folder itself (files below may have roots of their own).
    root: String,
    indexed_files: usize,
    /// Files the workspace indexes left out (too large, too many), with why.
    skipped_files: Vec<crate::workspace::Skipped>,
    arch: String,
    nvrtc: Option<String>,
    kernels: Vec<KernelSurvey>,
    totals: BTreeMap<&'static str, usize>,
}

pub fn run(args: &SurveyArgs) -> Result<()> {
    if !args.dir.is_dir() {
        bail!("{}: not a folder", args.dir.display());
    }
    let dir = args.dir.canonicalize()?;
    // The folder's own listing says which kernels to survey; each file's host code is looked
    // for in its own workspace (the nearest root above it), as the editor would. A file with
    // no marked root of its own belongs to the folder surveyed, not to its own subfolder.
    let listing = Workspace::build(&dir, Limits::default());
    let dir_root = find_root(&dir);
    let mut workspaces: BTreeMap<PathBuf, Workspace> = BTreeMap::new();
    let mut targets: Vec<Target> = Vec::new();
    for path in listing.kernel_files().filter(|p| matches!(p.extension().and_then(|e| e.to_str()), Some("cu" | "cuh" | "h" | "hpp" | "inl"))) {
        let root = Some(find_root(path)).filter(|r| is_marked_root(r)).unwrap_or_else(|| dir_root.clone());
        workspaces.entry(root.clone()).or_insert_with(|| Workspace::build(&root, Limits::default()));
        targets.extend(kernels_in(path).into_iter().map(|(kernel, line)| Target { path: path.to_path_buf(), kernel, line, root: root.clone() }));
    }
    let nvrtc = Nvrtc::locate(args.nvrtc.as_deref());
    let surveys = survey_all(&workspaces, &targets, nvrtc.as_ref().ok(), nvrtc.as_ref().err().map(|e| e.to_string()), &args.arch, args.jobs);
    let root = find_root(&dir);
    let mut totals: BTreeMap<&'static str, usize> = BTreeMap::new();
    totals.insert("kernels", surveys.len());
    for s in &surveys {
        *totals.entry(s.stage.as_str()).or_default() += 1;
    }
    let report = Report {
        dir: args.dir.display().to_string(),
        root: root.display().to_string(),
        indexed_files: workspaces.values().map(|w| w.files().count()).sum(),
        skipped_files: workspaces.values().flat_map(|w| w.skipped().iter().cloned()).collect(),
        arch: args.arch.clone(),
        nvrtc: nvrtc.as_ref().ok().map(|n| format!("{}.{}", n.version().0, n.version().1)),
        kernels: surveys,
        totals,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", render(&report, &dir));
    }
    Ok(())
}

/// The kernels defined in `path`, with their 1-based lines.
fn kernels_in(path: &Path) -> Vec<(String, u32)> {
    let Ok(text) = read_source(path) else { return Vec::new() };
    let doc = Document::new(text);
    let mut out: Vec<(String, u32)> = Vec::new();
    // An explicit specialization is surveyed as the template it specializes.
    for k in doc.model().kernels.iter().filter(|k| k.is_definition && !k.is_explicit_specialization()) {
        if !out.iter().any(|(name, _)| *name == k.name) {
            out.push((k.name.clone(), k.name_span.start.line + 1));
        }
    }
    out
}

/// Why only compiler options were found: what the block size's lift and the launch's choices
/// said, where they said more than that there was nothing of their kind.
fn no_execution_parameter(reports: &[template::TransformReport]) -> String {
    let said: Vec<String> = reports
        .iter()
        .filter(|r| match r.transform {
            "block-size" => r.status == template::Status::Refused,
            "launch-choices" => r.message.contains("may vary alone"),
            _ => false,
        })
        .map(|r| format!("{}: {}", r.transform, r.message))
        .collect();
    let base = "no execution parameter was found, only compiler options";
    if said.is_empty() { base.to_string() } else { format!("{base} ({})", said.join("; ")) }
}

/// Configurations of the execution parameters the survey looks at for [`restricted_space`].
const RESTRICTED_SPACE_LIMIT: u64 = 4096;

/// What the spec's restrictions leave on its first shape, when that is too little to tune: no
/// configuration at all (the stage `spec`: a shape of a call path that does not take the
/// launch, `arrayLength = 64` where the launch is under the `else` of `if (arrayLength <=
/// SHARED_SIZE_LIMIT)`), or one value of each execution parameter (the stage `parameters`:
/// `SHARED_SIZE_LIMIT % arrayLength == 0` with runs as long as the largest limit).
fn restricted_space(spec: &KernelSpec) -> Option<(Stage, String)> {
    let shape = spec.shapes.first()?;
    let allowed = space::values_allowed(spec, shape, RESTRICTED_SPACE_LIMIT)?;
    if allowed.iter().any(|(_, values)| values.len() > 1) {
        return None;
    }
    if allowed.iter().all(|(_, values)| values.is_empty()) {
        let values = shape.iter().map(|(name, value)| format!("{name} = {value}")).collect::<Vec<_>>().join(", ");
        let why = space::check_restrictions(spec, shape, &Configuration::default_of(spec)).err().map_or_else(String::new, |e| format!(" (at the program's own: {})", e.reason));
        return Some((Stage::Spec, format!("the spec's first shape ({values}) is not one the launch runs with: no configuration meets the restrictions there{why}; write a shape it runs with")));
    }
    let kept: Vec<String> = allowed.iter().flat_map(|(name, values)| values.iter().map(move |value| format!("`{name}` = {value}"))).collect();
    let restrictions = spec.restrictions.iter().map(|r| format!("`{r}`")).collect::<Vec<_>>().join(", ");
    Some((Stage::Parameters, format!("no execution parameter varies on the program's shape, only compiler options: the restrictions ({restrictions}) and the block's limits leave {}", kept.join(", "))))
}

/// A kernel to survey, and the workspace root its host code is looked for in.
struct Target {
    path: PathBuf,
    kernel: String,
    line: u32,
    root: PathBuf,
}

fn survey_all(workspaces: &BTreeMap<PathBuf, Workspace>, targets: &[Target], nvrtc: Option<&Nvrtc>, no_nvrtc: Option<String>, arch: &str, jobs: Option<usize>) -> Vec<KernelSurvey> {
    crate::compile::parallel_map(targets, jobs, |t| survey_one(&workspaces[&t.root], &t.path, &t.kernel, t.line, nvrtc, no_nvrtc.as_deref(), arch))
}

/// One kernel through templatize, the spec check and a compile of its default configuration.
pub fn survey_one(workspace: &Workspace, path: &Path, kernel: &str, line: u32, nvrtc: Option<&Nvrtc>, no_nvrtc: Option<&str>, arch: &str) -> KernelSurvey {
    let mut survey = KernelSurvey {
        file: path.display().to_string(),
        line,
        kernel: kernel.to_string(),
        params: Vec::new(),
        execution_params: 0,
        spec_problems: Vec::new(),
        compile: CompileResult::NotRun { reason: "templatize failed".into() },
        stage: Stage::Templatize,
        why: String::new(),
        chosen_sizes: Vec::new(),
    };
    let text = match read_source(path) {
        Ok(text) => text,
        Err(e) => {
            survey.why = e.to_string();
            return survey;
        }
    };
    let slice_options = SliceOptions::for_file(path);
    let hosts = workspace.host_documents(path, kernel);
    let result = match template::templatize_in_workspace(&text, kernel, path, &slice_options, &hosts, workspace.root()) {
        Ok(result) => result,
        Err(e) => {
            survey.why = e.to_string();
            return survey;
        }
    };
    survey.spec_problems = template::spec_problems(path, &result.spec);
    // A struct is laid out once the rest of the spec reads (its problems come first); then the
    // verification is planned on its fields.
    let lay_out = survey.spec_problems.is_empty() && result.spec.args.iter().any(|a| a.is_struct());
    let (spec, layout_problem) = match lay_out {
        true => laid_out(&result.spec, &result.text, kernel, &slice_options, nvrtc, arch),
        false => (result.spec.clone(), None),
    };
    let spec = &spec;
    if lay_out {
        survey.spec_problems = layout_problem.into_iter().chain(template::spec_problems(path, spec)).collect();
    }
    survey.params = spec.params.iter().map(|p| format!("{}={}", p.name, p.default)).collect();
    survey.chosen_sizes = spec.chosen.keys().cloned().collect();
    survey.execution_params = spec.execution_params().count();
    survey.compile = compile_default(&result.text, path, spec, &slice_options, nvrtc, no_nvrtc, arch);
    if let CompileResult::Failed { reason } = &mut survey.compile {
        if let Some(condition) = [format!("\"{kernel}\" is undefined"), format!("has no member \"{kernel}\"")].iter().any(|m| reason.contains(m)).then(|| excluding_condition(&text, kernel)).flatten() {
            *reason = format!("the kernel is under `{condition}`, which this build's macros leave out: change them (compile_commands.json, `-D`, or the file's `#define`s) to survey it");
        } else if launches_from_device(&text, kernel) {
            *reason = format!("the kernel launches kernels itself (dynamic parallelism), which needs relocatable device code linked with the device runtime (`-rdc=true`, cudadevrt); cutune compiles one kernel with NVRTC and links nothing ({reason})");
        }
    }
    (survey.stage, survey.why) = if let Some(first) = survey.spec_problems.first() {
        (Stage::Spec, first.clone())
    } else if let CompileResult::Failed { reason } | CompileResult::NotRun { reason } = &survey.compile {
        (Stage::Compile, reason.clone())
    } else if survey.execution_params == 0 {
        (Stage::Parameters, no_execution_parameter(&result.reports))
    } else if let Some((stage, why)) = restricted_space(spec) {
        survey.execution_params = 0;
        (stage, why)
    } else {
        (Stage::Ready, String::new())
    };
    survey
}

/// The spec with each struct argument laid out by NVRTC, as the tune will; the compiler's
/// refusal (a member the struct lacks) is a problem of the spec. Without NVRTC, or a slice, the
/// spec as it is.
fn laid_out(spec: &KernelSpec, text: &str, kernel: &str, slice_options: &SliceOptions, nvrtc: Option<&Nvrtc>, arch: &str) -> (KernelSpec, Option<String>) {
    let mut spec = spec.clone();
    let Some(nvrtc) = nvrtc else { return (spec, None) };
    let Ok(slice) = device_slice(&Document::new(text.to_string()), kernel, &slice_options.clone().for_spec(&spec)) else { return (spec, None) };
    // A source that does not compile at all is the compile stage's to report, in NVRTC's words.
    let problem = crate::compile::resolve_struct_layouts(&mut spec, &slice.source, nvrtc, arch).err().filter(|why| !why.contains("the kernel's source does not compile"));
    (spec, problem)
}

/// The innermost `#if`/`#ifdef` line around the definition of `kernel` in `text`.
fn excluding_condition(text: &str, kernel: &str) -> Option<String> {
    let doc = Document::new(text.to_string());
    let start = doc.model().kernels.iter().find(|k| k.name == kernel)?.span.start_byte;
    let node = doc.tree()?.root_node().descendant_for_byte_range(start, start)?;
    let group = std::iter::successors(Some(node), |n| n.parent()).find(|n| n.kind().starts_with("preproc_if"))?;
    text[group.byte_range()].lines().next().map(|line| line.trim().to_string())
}


/// Whether `kernel`'s definition holds a launch (`child<<<…>>>(…)` from device code).
fn launches_from_device(text: &str, kernel: &str) -> bool {
    let doc = Document::new(text.to_string());
    let model = doc.model();
    let Some(definition) = model.kernels.iter().find(|k| k.name == kernel && k.is_definition) else { return false };
    model.launches.iter().any(|l| definition.span.start_byte <= l.span.start_byte && l.span.end_byte <= definition.span.end_byte)
}

/// Compiles the default configuration: that needs the parameters and template arguments, not
/// the shapes, so it runs whatever else the spec lacks.
fn compile_default(text: &str, path: &Path, kernel: &KernelSpec, slice_options: &SliceOptions, nvrtc: Option<&Nvrtc>, no_nvrtc: Option<&str>, arch: &str) -> CompileResult {
    let Some(nvrtc) = nvrtc else {
        return CompileResult::NotRun { reason: format!("no NVRTC: {}", no_nvrtc.unwrap_or("not found")) };
    };
    if kernel.template_args.iter().any(|a| a.trim() == UNKNOWN) {
        return CompileResult::NotRun { reason: "a template argument is unknown (`?`)".into() };
    }
    let slice = match device_slice(&Document::new(text.to_string()), &kernel.name, &slice_options.clone().for_spec(kernel)) {
        Ok(slice) => slice,
        Err(e) => return CompileResult::Failed { reason: format!("{}: {e}", path.display()) },
    };
    let request = space::compile_request(kernel, &slice.source, arch, &Configuration::default_of(kernel));
    match nvrtc.compile(&request) {
        Ok(output) => {
            let lowered = output.lowered_names.first().map(|(_, l)| l.clone());
            let registers = output.kernels.iter().find(|k| Some(&k.name) == lowered.as_ref()).or(output.kernels.first()).map_or(0, |k| k.registers);
            CompileResult::Compiled { registers }
        }
        Err(failure) => {
            let first_error = failure.diagnostics.iter().find(|d| d.severity == crate::compile::Severity::Error).map(|d| d.message.clone());
            CompileResult::Failed { reason: first_error.unwrap_or(failure.message) }
        }
    }
}

fn render(report: &Report, dir: &Path) -> String {
    let mut out = String::new();
    for k in &report.kernels {
        let file = Path::new(&k.file).strip_prefix(dir).map(|p| p.display().to_string()).unwrap_or_else(|_| k.file.clone());
        let params = if k.params.is_empty() { "-".to_string() } else { k.params.join(" ") };
        out.push_str(&format!("{file}:{}: {}: {} [{params}]", k.line, k.kernel, k.stage.as_str()));
        if !k.why.is_empty() {
            out.push_str(&format!(": {}", k.why));
        }
        if !k.chosen_sizes.is_empty() {
            out.push_str(&format!(" (on sizes templatize chose, no program launching it: {})", k.chosen_sizes.join(", ")));
        }
        if k.spec_problems.len() > 1 {
            out.push_str(&format!(" (+{} more spec problems)", k.spec_problems.len() - 1));
        }
        out.push('\n');
    }
    let total = report.totals.get("kernels").copied().unwrap_or(0);
    let count = |stage: Stage| report.totals.get(stage.as_str()).copied().unwrap_or(0);
    out.push_str(&format!(
        "\n{total} kernels under {} ({} files indexed, {} left out; NVRTC {}, {}): {} ready to tune",
        report.dir,
        report.indexed_files,
        report.skipped_files.len(),
        report.nvrtc.as_deref().unwrap_or("not found"),
        report.arch,
        count(Stage::Ready)
    ));
    if total > 0 {
        out.push_str(&format!(" ({:.0}%)", 100.0 * count(Stage::Ready) as f64 / total as f64));
    }
    let on_chosen_sizes = report.kernels.iter().filter(|k| k.stage == Stage::Ready && !k.chosen_sizes.is_empty()).count();
    if on_chosen_sizes > 0 {
        out.push_str(&format!(", {on_chosen_sizes} of them on sizes templatize chose"));
    }
    out.push_str(&format!(
        "; stopped at templatize {}, spec {}, compile {}, parameters {}\n",
        count(Stage::Templatize),
        count(Stage::Spec),
        count(Stage::Compile),
        count(Stage::Parameters)
    ));
    out
}
