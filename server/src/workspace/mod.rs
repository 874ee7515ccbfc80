//! The workspace index: every CUDA and C++ source under a root, with what each file defines and
//! mentions, so that a kernel defined in one file can be matched with its launches, its launchers
//! and the host code that calls them in others.
//!
//! The index itself is cheap: per file, its size, modification time, the set of identifiers
//! it holds and the names it seems to define functions of (a lexical scan, no parse). The
//! files that matter for one kernel are parsed on demand by [`Workspace::host_documents`]: those
//! that mention the kernel, then those that mention the functions that launch or pass it, up the
//! call chain. [`Workspace::refresh`] re-reads only the files that changed on disk.

mod files;
mod headers;

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::{Path, PathBuf};

use crate::syntax::python::{self, Binding};
use crate::syntax::{self, Document};

pub use files::{find_root, is_marked_root, shipped_header_dir, Limits, Stamp};
use files::{is_python, source_files};
use headers::{included_headers, included_names, quoted_includes, shared_components};
pub use headers::FilesByName;

/// One indexed file.
#[derive(Clone, Debug)]
pub struct FileEntry {
    pub stamp: Stamp,
    /// Every identifier in the text, comments and strings included: a superset of what the
    /// file's code mentions, which is what a lookup needs.
    identifiers: HashSet<Box<str>>,
    /// The names the text seems to define functions of (a lexical scan: a superset).
    function_definitions: HashSet<Box<str>>,
    /// Whether the text holds `__global__`: only such files can define kernels.
    pub has_kernels: bool,
}

impl FileEntry {
    fn of_text(text: &str, stamp: Stamp, is_python: bool) -> FileEntry {
        FileEntry {
            stamp,
            identifiers: syntax::identifiers_in(text).map(Box::from).collect(),
            function_definitions: if is_python { HashSet::new() } else { syntax::function_definitions_in(text).map(Box::from).collect() },
            has_kernels: !is_python && text.contains("__global__"),
        }
    }

    pub fn mentions(&self, name: &str) -> bool {
        self.identifiers.contains(name)
    }

    /// Whether the file may define a function called `name`.
    pub fn may_define(&self, name: &str) -> bool {
        self.function_definitions.contains(name)
    }
}

/// A file the index left out, and why.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Skipped {
    pub path: PathBuf,
    pub reason: String,
}

/// The index of one workspace root.
#[derive(Clone, Debug)]
pub struct Workspace {
    root: PathBuf,
    limits: Limits,
    files: BTreeMap<PathBuf, FileEntry>,
    skipped: Vec<Skipped>,
}

/// At most this many files are parsed to find one kernel's host code, and the call chain is
/// followed this many functions up from the launch.
const MAX_HOST_FILES: usize = 16;
/// Headers included with quotes count apart from the files of the call chain, so that a chain
/// through many files does not crowd out the header that defines the sizes.
const MAX_INCLUDED_FILES: usize = 16;
const MAX_CALL_DEPTH: usize = 4;
/// At most this many Python scripts that call an exported function are read as host code.
const MAX_PYTHON_FILES: usize = 8;

impl Workspace {
    /// An empty index of `root`; [`Workspace::refresh`] fills it.
    pub fn new(root: &Path, limits: Limits) -> Workspace {
        Workspace { root: root.to_path_buf(), limits, files: BTreeMap::new(), skipped: Vec::new() }
    }

    /// Indexes every source file under `root` (see [`source_files`]).
    pub fn build(root: &Path, limits: Limits) -> Workspace {
        let mut workspace = Workspace::new(root, limits);
        workspace.refresh();
        workspace
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Brings the index up to date with the disk: files that are new or whose size or
    /// modification time changed are read again, files that are gone are dropped. Returns how
    /// many files were read.
    pub fn refresh(&mut self) -> usize {
        let listing = source_files(&self.root, &self.limits);
        let mut read = 0;
        let mut total: u64 = 0;
        let mut kept = BTreeMap::new();
        let mut skipped = listing.skipped;
        for found in listing.files {
            if total + found.stamp.bytes > self.limits.max_total_bytes {
                skipped.push(Skipped { path: found.path, reason: format!("the index is full ({} MiB of sources)", self.limits.max_total_bytes >> 20) });
                continue;
            }
            let unchanged = self.files.remove(&found.path).filter(|e| e.stamp == found.stamp);
            let entry = match unchanged {
                Some(entry) => entry,
                None => match std::fs::read(&found.path) {
                    Ok(bytes) => {
                        read += 1;
                        FileEntry::of_text(&String::from_utf8_lossy(&bytes), found.stamp, is_python(&found.path))
                    }
                    Err(e) => {
                        skipped.push(Skipped { path: found.path, reason: format!("cannot be read: {e}") });
                        continue;
                    }
                },
            };
            total += found.stamp.bytes;
            kept.insert(found.path, entry);
        }
        self.files = kept;
        self.skipped = skipped;
        read
    }

    pub fn files(&self) -> impl Iterator<Item = (&Path, &FileEntry)> {
        self.files.iter().map(|(p, e)| (p.as_path(), e))
    }

    pub fn skipped(&self) -> &[Skipped] {
        &self.skipped
    }

    /// The files other than `kernel_file` that hold host code for `kernel`, parsed: those that
    /// mention it (launches, function pointers, instantiations), then those that mention the
    /// functions in them that do, up to [`MAX_CALL_DEPTH`] functions up the call chain. The
    /// kernel's own file is left out: the caller has it, possibly edited.
    pub fn host_documents(&self, kernel_file: &Path, kernel: &str) -> Vec<HostDocument> {
        let kernel_file = &kernel_file.canonicalize().unwrap_or_else(|_| kernel_file.to_path_buf());
        let mut documents: Vec<HostDocument> = Vec::new();
        let mut wanted: BTreeSet<String> = BTreeSet::from([kernel.to_string()]);
        let mut seen_names = wanted.clone();
        let own_text = std::fs::read_to_string(kernel_file).ok();
        // The kernel's own file is read as host code too (its macros expanded), to follow its
        // launchers; the caller reads the launch itself from the text it has ([`as_host_code`]).
        let by_name = self.files_by_name();
        let own = own_text.map(|text| host_document(kernel_file, text, &by_name));
        // Nearest first: in a project of many programs (a samples repository), the launch in
        // the kernel's own folder is the one in question, and the file limit should not be
        // spent on namesakes elsewhere.
        let mut by_distance: Vec<(&PathBuf, &FileEntry)> = self.files.iter().collect();
        by_distance.sort_by_key(|(path, _)| std::cmp::Reverse(shared_components(path, kernel_file)));
        // Python scripts are host code only through the functions a binding exports.
        let (scripts, by_distance): (Vec<_>, Vec<_>) = by_distance.into_iter().partition(|(path, _)| is_python(path));
        // The files that include a header of kernels: their file-scope objects (a texture
        // object made in an `init` function, a buffer) are what the launches pass.
        if let Some(stem) = kernel_file.file_stem().and_then(|s| s.to_str()) {
            for &(path, _) in by_distance.iter().filter(|(path, entry)| *path != kernel_file && entry.mentions(stem)).take(MAX_HOST_FILES) {
                let Ok(text) = std::fs::read_to_string(path) else { continue };
                if quoted_includes(path, included_names(&text), &by_name).contains(kernel_file) {
                    documents.push(HostDocument { path: path.clone(), document: host_document(path, text, &by_name) });
                }
            }
        }
        // A kernel its own file launches (`<<<…>>>`, or through the runtime's or the driver's
        // API): the launch in question is that one, so the search starts from its launchers,
        // not from every file that mentions the kernel's name (a common word, `Copy`, or a
        // book's `reduction_kernel` in every chapter, would spend the file limit on other
        // programs).
        let launches_own = |own: &&Document| own.model().launches_of(kernel).next().is_some() || !syntax::host::driver_launches(own, kernel).is_empty();
        let launchers: BTreeSet<String> = own.as_ref().filter(launches_own).map(|own| syntax::host::functions_mentioning(own, &wanted).into_iter().filter(|f| !is_entry_point(f)).collect()).unwrap_or_default();
        if !launchers.is_empty() {
            seen_names.extend(launchers.iter().cloned());
            wanted = launchers.clone();
        }
        let called = read_callers(&by_distance, &by_name, kernel_file, own.as_ref(), wanted, &mut seen_names, &mut documents);
        // Launchers nobody calls are called as their twins in the folder are.
        if let Some(own) = own.as_ref().filter(|_| !called && !launchers.is_empty()) {
            let twins = add_twins(&by_distance, &by_name, kernel_file, own, &launchers, &mut documents);
            let twins: BTreeSet<String> = twins.difference(&seen_names).cloned().collect();
            seen_names.extend(twins.iter().cloned());
            read_callers(&by_distance, &by_name, kernel_file, Some(own), twins, &mut seen_names, &mut documents);
        }
        add_python_callers(&scripts, kernel_file, own.as_ref(), &seen_names, &mut documents);
        add_setters(&by_distance, &by_name, kernel_file, own.as_ref(), &mut documents);
        add_local_includes(&by_name, kernel_file, own.as_ref(), &mut documents);
        documents
    }

    /// The workspace's files by their names (`tester.h`), for the includes not beside their includer.
    fn files_by_name(&self) -> FilesByName<'_> {
        FilesByName::new(self.files.keys().map(PathBuf::as_path))
    }

    /// Every file that may define kernels (its text holds `__global__`).
    pub fn kernel_files(&self) -> impl Iterator<Item = &Path> {
        self.files.iter().filter(|(_, e)| e.has_kernels).map(|(p, _)| p.as_path())
    }

    /// The files that may define a kernel called `name`.
    pub fn kernel_files_mentioning<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Path> {
        self.files.iter().filter(move |(_, e)| e.has_kernels && e.mentions(name)).map(|(p, _)| p.as_path())
    }
}

/// Reads the files that call the `wanted` functions, then those that call their callers, up to
/// [`MAX_CALL_DEPTH`] functions up the call chain and [`MAX_HOST_FILES`] files. Whether any
/// function read (`main` too) calls one of the `wanted`.
fn read_callers(by_distance: &[(&PathBuf, &FileEntry)], by_name: &FilesByName, kernel_file: &Path, own: Option<&Document>, mut wanted: BTreeSet<String>, seen_names: &mut BTreeSet<String>, documents: &mut Vec<HostDocument>) -> bool {
    let mut called = None;
    for _ in 0..=MAX_CALL_DEPTH {
        // A method (`PiEstimator<Real>::operator()`) is called on objects of its class,
        // which the files that call it name.
        wanted = wanted.iter().map(|name| sought_name(name).to_string()).collect();
        for &(path, entry) in by_distance {
            if documents.len() >= MAX_HOST_FILES {
                break;
            }
            let known = path == kernel_file || documents.iter().any(|d| &d.path == path);
            if !known && wanted.iter().any(|name| entry.mentions(name)) {
                if let Ok(text) = std::fs::read_to_string(path) {
                    documents.push(HostDocument { path: path.clone(), document: host_document(path, text, by_name) });
                }
            }
        }
        let texts = own.into_iter().chain(documents.iter().map(|d| &d.document));
        let mentioning: Vec<String> = texts.clone().flat_map(|doc| syntax::host::functions_mentioning(doc, &wanted)).collect();
        // An implementation registered under a key is called where the key is dispatched.
        let keys: Vec<String> = texts.flat_map(|doc| registry_keys_of(doc, &wanted)).collect();
        called.get_or_insert(!mentioning.is_empty() || !keys.is_empty());
        let callers: BTreeSet<String> = mentioning.into_iter().filter(|f| !is_entry_point(f)).chain(keys).collect();
        wanted = callers.difference(seen_names).cloned().collect();
        if wanted.is_empty() {
            break;
        }
        seen_names.extend(wanted.iter().cloned());
    }
    called.unwrap_or(false)
}

/// The files of the kernel's folder that define functions taking the same parameters as the
/// `launchers` that nobody calls ([`syntax::host::take_the_same_parameters`]), added to the
/// documents; the twins' names.
fn add_twins(by_distance: &[(&PathBuf, &FileEntry)], by_name: &FilesByName, kernel_file: &Path, own: &Document, launchers: &BTreeSet<String>, documents: &mut Vec<HostDocument>) -> BTreeSet<String> {
    let Some(tree) = own.tree() else { return BTreeSet::new() };
    let own_launchers = syntax::host::function_nodes(own.text(), tree.root_node()).filter(|(name, _)| launchers.contains(*name));
    let signatures: Vec<(&str, Vec<syntax::host::Parameter>)> = own_launchers.map(|(name, node)| (name, syntax::host::parameters(own.text(), node))).collect();
    let mut twins = BTreeSet::new();
    let in_folder = by_distance.iter().filter(|(path, _)| path.parent() == kernel_file.parent());
    for &(path, entry) in in_folder {
        let may_hold_twin = |(_, params): &&(&str, Vec<syntax::host::Parameter>)| !params.is_empty() && params.iter().all(|p| entry.mentions(&p.name));
        if documents.len() >= MAX_HOST_FILES || !signatures.iter().any(|s| may_hold_twin(&s)) {
            continue;
        }
        let document = match path.as_path() == kernel_file {
            true => own.clone(),
            false => match std::fs::read_to_string(path) {
                Ok(text) => host_document(path, text, by_name),
                Err(_) => continue,
            },
        };
        let Some(root) = document.tree().map(|t| t.root_node()) else { continue };
        let found: Vec<String> = signatures.iter().flat_map(|(name, params)| syntax::host::twins_of(document.text(), root, params, name)).map(|(twin, _)| twin.to_string()).filter(|twin| !launchers.contains(twin)).collect();
        let known = path.as_path() == kernel_file || documents.iter().any(|d| d.path == **path);
        if !found.is_empty() && !known {
            documents.push(HostDocument { path: (*path).clone(), document });
        }
        twins.extend(found);
    }
    twins
}

/// The keys `doc` registers any of `implementations` under ([`syntax::host::registered_implementations`]).
fn registry_keys_of(doc: &Document, implementations: &BTreeSet<String>) -> Vec<String> {
    let Some(tree) = doc.tree() else { return Vec::new() };
    let registered = syntax::host::registered_implementations(doc.text(), tree.root_node());
    registered.into_iter().filter(|(_, value)| implementations.contains(*value)).map(|(key, _)| key.to_string()).collect()
}

/// Nothing in the workspace calls `main`, nor the block that registers an extension's
/// bindings (`PYBIND11_MODULE(ext, m) { … }`, `TORCH_LIBRARY(ext, m) { … }`, which the grammar
/// reads as functions): following their names would pull in every program of the project.
fn is_entry_point(function: &str) -> bool {
    function == "main" || python::is_binding_block(function)
}

/// The files, nearest first, that define the functions the host code read so far gives a
/// variable's address to (`get_image_size(path, &height, &width)` in another file): what they
/// set there is what the launch is given, not the variable's first value. And those that
/// define the functions it sizes a launch with (`dim3 grid(div_ceil(n, 64))`, `div_ceil` in a
/// header of the project): the spec says what they return.
fn add_setters(by_distance: &[(&PathBuf, &FileEntry)], by_name: &FilesByName, kernel_file: &Path, own: Option<&Document>, documents: &mut Vec<HostDocument>) {
    let texts = own.into_iter().chain(documents.iter().map(|d| &d.document));
    let (mut defined, mut wanted) = (BTreeSet::new(), BTreeSet::new());
    for doc in texts {
        let Some(tree) = doc.tree() else { continue };
        defined.extend(syntax::host::functions(doc.text(), tree.root_node()).into_keys().map(str::to_string));
        wanted.extend(syntax::host::given_an_address(doc.text(), tree.root_node()));
        wanted.extend(syntax::host::sizing_launches(doc.text(), tree.root_node()));
    }
    let wanted: Vec<String> = wanted.into_iter().filter(|name| !defined.contains(name)).collect();
    for name in wanted {
        let known = |path: &Path| path == kernel_file || documents.iter().any(|d| d.path == path);
        // A library's function (`sscanf(line, "%d", &n)`, `MPI_Comm_rank(comm, &rank)`) is
        // defined nowhere in the workspace: the index says so without reading a file.
        let defining = by_distance.iter().filter(|(path, entry)| !known(path) && entry.may_define(&name));
        for &(path, _) in defining.take(MAX_HOST_FILES) {
            if documents.len() >= MAX_HOST_FILES {
                return;
            }
            let Ok(text) = std::fs::read_to_string(path) else { continue };
            let document = host_document(path, text, by_name);
            let defines = document.tree().is_some_and(|tree| syntax::host::functions(document.text(), tree.root_node()).contains_key(name.as_str()));
            if defines {
                documents.push(HostDocument { path: path.clone(), document });
                break;
            }
        }
    }
}

/// The Python scripts that call a function of the call chain (`names`) that a binding of
/// the C++ files exports, nearest first, each as the host code it stands for; then those that
/// call the scripts' functions that call it, script after script (a test calling a package's
/// `shift_add`, which applies an autograd function whose `forward` calls the module's wrapper
/// of the binding), up to [`MAX_PYTHON_FILES`] scripts.
fn add_python_callers(scripts: &[(&PathBuf, &FileEntry)], kernel_file: &Path, own: Option<&Document>, names: &BTreeSet<String>, documents: &mut Vec<HostDocument>) {
    let cpp = own.map(|doc| (kernel_file, doc)).into_iter().chain(documents.iter().map(|d| (d.path.as_path(), &d.document)));
    let mut callees: Vec<Binding> = Vec::new();
    // The extensions the bindings are built into (`xentropy_cuda`): where scripts name one,
    // those are the callers, not the scripts that only share a binding's name (`forward`, which
    // every extension of apex exports and every model defines).
    let mut modules: Vec<String> = Vec::new();
    for (path, doc) in cpp {
        let mut bound: Vec<Binding> = doc.tree().map(|tree| python::bindings(doc.text(), tree.root_node())).unwrap_or_default().into_iter().filter(|b| names.contains(b.cpp_bare())).collect();
        if !bound.is_empty() {
            let module = extension_module(path, scripts);
            bound.iter_mut().for_each(|b| b.module = module.clone());
            modules.extend(module);
        }
        callees.extend(bound);
    }
    // The words a caller's text holds: a binding's Python name, a function's, an autograd
    // function's class.
    let mut wanted: Vec<String> = callees.iter().map(|b| b.python.clone()).collect();
    let mut read: Vec<(PathBuf, String)> = Vec::new();
    // The scripts' functions found so far: one may have a binding's name (causal-conv1d's
    // `causal_conv1d_update` wraps the binding `causal_conv1d_update`) and still be a callee.
    let mut script_functions: BTreeSet<String> = BTreeSet::new();
    while !wanted.is_empty() && read.len() < MAX_PYTHON_FILES {
        let unread = scripts.iter().filter(|(path, _)| !read.iter().any(|(p, _)| p == *path));
        let (naming_module, others): (Vec<&(&PathBuf, &FileEntry)>, Vec<_>) = unread.filter(|(_, entry)| wanted.iter().any(|w| entry.mentions(w))).partition(|(path, entry)| modules.iter().any(|m| entry.mentions(m)) && !is_build_script(path));
        let candidates = if naming_module.is_empty() { others } else { naming_module };
        let callers: Vec<&PathBuf> = candidates.into_iter().map(|&(path, _)| path).take(MAX_PYTHON_FILES - read.len()).collect();
        let mut next = Vec::new();
        for path in callers {
            let Ok(text) = std::fs::read_to_string(path) else { continue };
            for (caller, mentioned_as) in python::callers(&text, &callees) {
                if script_functions.insert(caller.python.clone()) {
                    callees.push(caller);
                    next.push(mentioned_as);
                }
            }
            read.push((path.clone(), text));
        }
        wanted = next;
    }
    for (path, text) in read {
        let module = path.file_stem().and_then(|s| s.to_str()).unwrap_or("script");
        let document = Document::new(python::as_host_code(&text, module, &callees));
        documents.push(HostDocument { path, document });
    }
}

/// Whether `path` is a package's build script (`setup.py`), which names the extensions it
/// builds and their sources (`csrc/patch_max.cpp`, a binding's namesake) but calls none.
fn is_build_script(path: &Path) -> bool {
    path.file_name().is_some_and(|name| name == "setup.py")
}

/// The name of the extension a build script compiles `source` into: the `name` given before
/// the source in the list a script writes it in (`CUDAExtension(name="xentropy_cuda",
/// sources=["apex/contrib/csrc/xentropy/interface.cpp", …])` in `setup.py`, or
/// `load(name="ops", sources=["csrc/ops.cpp"])`), the nearest script that lists it first.
fn extension_module(source: &Path, scripts: &[(&PathBuf, &FileEntry)]) -> Option<String> {
    let file_name = source.file_name()?.to_str()?;
    let stem = source.file_stem()?.to_str()?;
    let listing = scripts.iter().filter(|(_, entry)| entry.mentions(stem));
    listing.filter_map(|(path, _)| std::fs::read_to_string(path).ok()).find_map(|text| {
        text.match_indices(file_name).find_map(|(at, _)| {
            let open = text[..at].rfind(['"', '\''])?;
            let close = at + text[at..].find(['"', '\''])?;
            source.ends_with(&text[open + 1..close]).then(|| name_given_before(&text[..open])).flatten()
        })
    })
}

/// The string last given as `name=` (or `name = `) in `text`.
fn name_given_before(text: &str) -> Option<String> {
    let (at, _) = text.rmatch_indices("name").find(|(at, _)| text[at + 4..].trim_start().starts_with('='))?;
    let value = text[at + 4..].trim_start().strip_prefix('=')?.trim_start();
    let quote = value.chars().next().filter(|c| *c == '"' || *c == '\'')?;
    let name = &value[1..value[1..].find(quote)? + 1];
    syntax::is_identifier(name).then(|| name.to_string())
}

/// The headers the kernel's file and the host files include with quotes, found next to the
/// including file: their `#define`s, constants and `typedef`s give the host code's values.
fn add_local_includes(by_name: &FilesByName, kernel_file: &Path, own: Option<&Document>, documents: &mut Vec<HostDocument>) {
    // Breadth first from the kernel's own file: its headers matter most.
    let mut pending: std::collections::VecDeque<(PathBuf, String)> = own.map(|d| (kernel_file.to_path_buf(), d.text().to_string())).into_iter().collect();
    pending.extend(documents.iter().map(|d| (d.path.clone(), d.document.text().to_string())));
    let mut included = 0;
    while let Some((path, text)) = pending.pop_front() {
        for header in quoted_includes(&path, included_names(&text), by_name) {
            let known = header == kernel_file || documents.iter().any(|d| d.path == header);
            if known || included >= MAX_INCLUDED_FILES {
                continue;
            }
            included += 1;
            if let Ok(text) = std::fs::read_to_string(&header) {
                pending.push_back((header.clone(), text.clone()));
                documents.push(HostDocument { path: header.clone(), document: host_document(&header, text, by_name) });
            }
        }
    }
}

/// `text` of `path` as host code: [`as_host_code`], else the text as it is.
fn host_document(path: &Path, text: String, files: &FilesByName) -> Document {
    as_host_code(path, &text, files).unwrap_or_else(|| Document::new(text))
}

/// `text` of `path` as a document that sees the macros of the project headers it includes:
/// the dispatch macros given a block that launches a kernel, and the object-like ones where a
/// conditional inside one of its lists needs them (a launch's arguments under
/// `#if (USE_TEXTURE)`, which the kernel's header defines). `None` when it needs neither, nor
/// writes code with its own macros.
///
/// The launchers and bindings it writes with its own macros, and the dispatches, are expanded
/// where it invokes them ([`syntax::macros`]); lines keep their numbers. `files` are the
/// project's, where an include not beside `path` is found.
pub fn as_host_code(path: &Path, text: &str, files: &FilesByName) -> Option<Document> {
    let launches = syntax::macros::LAUNCH_WORDS.iter().any(|w| text.contains(w));
    let may_write_code = text.contains("#define") && syntax::macros::CODE_WRITING_WORDS.iter().any(|w| text.contains(w));
    let conditional_lists = syntax::has_conditional_in_list(text);
    // A dtype dispatch may be given a call of a launcher in another file, whose template
    // arguments the dispatch's cases declare (apex's `DISPATCH_FUSED_ROPE_TYPES(…,
    // launch(x.data_ptr<scalar_t_0>()))`).
    let dispatches = text.contains("DISPATCH");
    let headers = if launches || dispatches || conditional_lists { included_headers(path, text, files) } else { Vec::new() };
    let mut macros = syntax::macros::Macros::default();
    if launches || dispatches {
        headers.iter().for_each(|header| macros.add_all(&header.macros));
        // Its own dispatch macros too, wherever its headers define none.
        macros.add_defined_in(text);
    }
    let expanded = match may_write_code || macros.may_expand_in(text) {
        true => {
            let parsed = Document::new(text.to_string());
            parsed.tree().and_then(|tree| syntax::macros::expand_code_writing_macros(parsed.text(), tree.root_node(), &macros))
        }
        false => None,
    };
    if !conditional_lists {
        return expanded.map(Document::new);
    }
    let mut included = syntax::Defines::new();
    for (name, value) in headers.iter().flat_map(|header| &header.defines) {
        included.entry(name.clone()).or_insert_with(|| value.clone());
    }
    Some(Document::with_included_defines(expanded.unwrap_or_else(|| text.to_string()), included))
}

/// The name a file that calls `function` has: its own, or for a method (`Runner<T>::launch`)
/// its class's (`Runner`), which the callers' objects are declared with.
fn sought_name(function: &str) -> &str {
    syntax::host::class_of_method(function).unwrap_or(function)
}

/// The host documents of `kernel` in `file`, from an index of the file's workspace (its
/// nearest root) built for this one question: what the command line does.
pub fn host_documents_near(file: &Path, kernel: &str) -> Vec<HostDocument> {
    Workspace::build(&find_root(file), Limits::default()).host_documents(file, kernel)
}

/// A parsed file of host code, with where it came from.
#[derive(Clone, Debug)]
pub struct HostDocument {
    pub path: PathBuf,
    pub document: Document,
}

/// Writes through a temporary file beside `path` and a rename, so that a failure never leaves
/// half a file and a reader never sees one.
pub fn write_atomically(path: &Path, text: &str) -> anyhow::Result<()> {
    use anyhow::Context;
    let tmp = path.with_extension("cutune-tmp");
    std::fs::write(&tmp, text).with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("cannot replace {}", path.display()))
}

/// Reads a source file as UTF-8, naming the file and the first bad byte otherwise.
pub fn read_source(path: &Path) -> anyhow::Result<String> {
    use anyhow::Context;
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    match String::from_utf8(bytes) {
        Ok(text) => Ok(text),
        Err(e) => {
            let offset = e.utf8_error().valid_up_to();
            let line = e.as_bytes()[..offset].iter().filter(|&&b| b == b'\n').count() + 1;
            anyhow::bail!(
                "{}:{line}: not UTF-8 text (invalid byte 0x{:02x} at offset {offset}); is this a CUDA source file?",
                path.display(),
                e.as_bytes()[offset]
            )
        }
    }
}

#[cfg(test)]
mod tests;
