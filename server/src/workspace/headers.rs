//! The project headers a file includes with `#include "name"`, each read and scanned once per
//! version on disk: a project's dispatch macros and `#define`s live in a few headers that every
//! launcher includes, and one question about one kernel reads the host code of many files.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::SystemTime;

use super::MAX_INCLUDED_FILES;
use crate::syntax::macros::Macros;

/// What one header gives the files that include it.
#[derive(Debug)]
pub(super) struct Header {
    /// Its function-like macros (the first definition of a name).
    pub macros: Macros,
    /// Its object-like macros, as written, outside any reading of its conditionals.
    pub defines: Vec<(String, String)>,
    /// The headers it includes with quotes, found beside it.
    includes: Vec<PathBuf>,
}

/// A file's size and modification time: when neither changed, neither did what it gives.
type Stamp = (u64, Option<SystemTime>);

/// The headers read so far, by canonical path. A process reads the headers of one or a few
/// workspaces, so this stays small; it is emptied should it ever grow past [`MAX_REMEMBERED`].
static READ: LazyLock<Mutex<HashMap<PathBuf, (Stamp, Arc<Header>)>>> = LazyLock::new(Mutex::default);
const MAX_REMEMBERED: usize = 4096;

/// The project headers `text` of `path` includes with quotes, and those they include, in the
/// order the preprocessor reads them (at most [`MAX_INCLUDED_FILES`]).
pub(super) fn included_headers(path: &Path, text: &str) -> Vec<Arc<Header>> {
    let mut out = Vec::new();
    let mut pending = quoted_includes(path, text);
    pending.reverse();
    let mut seen = BTreeSet::from([path.to_path_buf()]);
    while let Some(path) = pending.pop() {
        if seen.len() > MAX_INCLUDED_FILES || !seen.insert(path.clone()) {
            continue;
        }
        let Some(header) = header(&path) else { continue };
        pending.extend(header.includes.iter().rev().cloned());
        out.push(header);
    }
    out
}

/// The header at `path`, read again only when its size or modification time changed.
fn header(path: &Path) -> Option<Arc<Header>> {
    let metadata = std::fs::metadata(path).ok()?;
    let stamp = (metadata.len(), metadata.modified().ok());
    let remembered = READ.lock().unwrap_or_else(|e| e.into_inner()).get(path).filter(|(s, _)| *s == stamp).map(|(_, h)| h.clone());
    if let Some(header) = remembered {
        return Some(header);
    }
    let text = std::fs::read_to_string(path).ok()?;
    let mut macros = Macros::default();
    macros.add_defined_in(&text);
    let defines = crate::syntax::defines_in(&text).collect();
    let header = Arc::new(Header { macros, defines, includes: quoted_includes(path, &text) });
    let mut read = READ.lock().unwrap_or_else(|e| e.into_inner());
    if read.len() >= MAX_REMEMBERED {
        read.clear();
    }
    read.insert(path.to_path_buf(), (stamp, header.clone()));
    Some(header)
}

/// The files `#include "name"` names in `text`, where they exist next to `path`.
pub(super) fn quoted_includes(path: &Path, text: &str) -> Vec<PathBuf> {
    let dir = path.parent().unwrap_or(Path::new("."));
    included_names(text)
        .map(|name| dir.join(name))
        .filter(|p| p.is_file())
        .map(|p| p.canonicalize().unwrap_or(p))
        .collect()
}

/// The names `#include "name"` lines of `text` give, as written (`common/util.h`).
pub(super) fn included_names(text: &str) -> impl Iterator<Item = &str> {
    text.lines().filter_map(|line| line.trim_start().strip_prefix('#')?.trim_start().strip_prefix("include")?.trim().strip_prefix('"')?.split('"').next())
}
