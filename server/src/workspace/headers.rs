//! The project headers a file includes with `#include "name"`, each read and scanned once per
//! version on disk: a project's dispatch macros and `#define`s live in a few headers that every
//! launcher includes, and one question about one kernel reads the host code of many files.

use std::collections::{BTreeSet, HashMap};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex};

use super::files::Stamp;
use super::MAX_INCLUDED_FILES;
use crate::syntax::macros::Macros;

/// What one header gives the files that include it.
#[derive(Debug)]
pub(super) struct Header {
    /// Its function-like macros (the first definition of a name).
    pub macros: Macros,
    /// Its object-like macros, as written, outside any reading of its conditionals.
    pub defines: Vec<(String, String)>,
    /// The names it includes with quotes, as written (`type_shim.h`).
    includes: Vec<String>,
}

/// The headers read so far, by canonical path. A process reads the headers of one or a few
/// workspaces, so this stays small; it is emptied should it ever grow past [`MAX_REMEMBERED`].
static READ: LazyLock<Mutex<HashMap<PathBuf, (Stamp, Arc<Header>)>>> = LazyLock::new(Mutex::default);
const MAX_REMEMBERED: usize = 4096;

/// The project headers `text` of `path` includes with quotes, and those they include, in the
/// order the preprocessor reads them (at most [`MAX_INCLUDED_FILES`]).
pub(super) fn included_headers(path: &Path, text: &str, files: &FilesByName) -> Vec<Arc<Header>> {
    let mut out = Vec::new();
    let mut pending = quoted_includes(path, included_names(text), files);
    pending.reverse();
    let mut seen = BTreeSet::from([path.to_path_buf()]);
    while let Some(path) = pending.pop() {
        if seen.len() > MAX_INCLUDED_FILES || !seen.insert(path.clone()) {
            continue;
        }
        let Some(header) = header(&path) else { continue };
        let mut included = quoted_includes(&path, header.includes.iter().map(String::as_str), files);
        included.reverse();
        pending.extend(included);
        out.push(header);
    }
    out
}

/// The header at `path`, read again only when its size or modification time changed.
fn header(path: &Path) -> Option<Arc<Header>> {
    let metadata = std::fs::metadata(path).ok()?;
    let stamp = Stamp::of(&metadata);
    let remembered = READ.lock().unwrap_or_else(|e| e.into_inner()).get(path).filter(|(s, _)| *s == stamp).map(|(_, h)| h.clone());
    if let Some(header) = remembered {
        return Some(header);
    }
    let text = std::fs::read_to_string(path).ok()?;
    let mut macros = Macros::default();
    macros.add_defined_in(&text);
    let defines = crate::syntax::defines_in(&text).collect();
    let header = Arc::new(Header { macros, defines, includes: included_names(&text).map(str::to_string).collect() });
    let mut read = READ.lock().unwrap_or_else(|e| e.into_inner());
    if read.len() >= MAX_REMEMBERED {
        read.clear();
    }
    read.insert(path.to_path_buf(), (stamp, header.clone()));
    Some(header)
}

/// The files that `#include "name"` lines of `path` read, for each of `names`: the one next
/// to `path`, else (a folder the build adds with `-I`: `csrc/` for `#include "type_shim.h"`
/// in `csrc/contrib/norm/norm.cu`) the project's file of that name nearest to it.
pub(super) fn quoted_includes<'n>(path: &Path, names: impl Iterator<Item = &'n str>, files: &FilesByName) -> Vec<PathBuf> {
    let dir = path.parent().unwrap_or(Path::new("."));
    names
        .filter_map(|name| {
            let beside = dir.join(name);
            match beside.is_file() {
                true => Some(beside.canonicalize().unwrap_or(beside)),
                false => files.nearest(name, path),
            }
        })
        .collect()
}

/// A project's files by their names (`type_shim.h`), for the includes not beside their includer.
#[derive(Default)]
pub struct FilesByName<'a>(HashMap<&'a OsStr, Vec<&'a Path>>);

impl<'a> FilesByName<'a> {
    pub fn new(paths: impl IntoIterator<Item = &'a Path>) -> Self {
        let mut by_name: HashMap<&OsStr, Vec<&Path>> = HashMap::new();
        for path in paths {
            if let Some(name) = path.file_name() {
                by_name.entry(name).or_default().push(path);
            }
        }
        FilesByName(by_name)
    }

    /// The file whose path ends with `name` (`common/util.h`) that shares the most leading
    /// folders with `includer`, other than `includer` itself.
    fn nearest(&self, name: &str, includer: &Path) -> Option<PathBuf> {
        let same_name = Path::new(name).file_name().and_then(|n| self.0.get(n)).into_iter().flatten();
        let named = same_name.filter(|file| file.ends_with(name) && **file != includer);
        named.max_by_key(|file| shared_components(file, includer)).map(|file| file.to_path_buf())
    }
}

/// How many leading path components `a` and `b` share.
pub(super) fn shared_components(a: &Path, b: &Path) -> usize {
    a.components().zip(b.components()).take_while(|(x, y)| x == y).count()
}

/// The names `#include "name"` lines of `text` give, as written (`common/util.h`).
pub(super) fn included_names(text: &str) -> impl Iterator<Item = &str> {
    text.lines().filter_map(|line| line.trim_start().strip_prefix('#')?.trim_start().strip_prefix("include")?.trim().strip_prefix('"')?.split('"').next())
}
