//! Which files a workspace holds: its root, the source files under it (respecting `.gitignore`)
//! and those `compile_commands.json` names, within limits.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use super::Skipped;
use crate::syntax::format_bytes;

/// The extensions of the files the index reads.
/// Python scripts are indexed too: those that call a PyTorch extension's functions are its host
/// code ([`crate::syntax::python`]).
const SOURCE_EXTENSIONS: &[&str] = &["cu", "cuh", "cpp", "cc", "cxx", "c", "h", "hpp", "hh", "hxx", "inl", "py"];

/// Bounds on what one index holds, so that opening a huge tree cannot exhaust memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    pub max_files: usize,
    /// Larger files are left out (generated tables, amalgamations).
    pub max_file_bytes: u64,
    pub max_total_bytes: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits { max_files: 20_000, max_file_bytes: 2 << 20, max_total_bytes: 256 << 20 }
    }
}

/// The workspace root for `start` (a file or folder): the nearest ancestor holding `.cutune`,
/// `compile_commands.json` or `.git`, else `start`'s own folder. A folder that root's
/// `.gitignore` leaves out (vendored code, a checkout of another project) is no part of its
/// index, so there the root is the outermost ignored folder above `start`.
pub fn find_root(start: &Path) -> PathBuf {
    let start = start.canonicalize().unwrap_or_else(|_| start.to_path_buf());
    let folder = if start.is_dir() { start.clone() } else { start.parent().map(Path::to_path_buf).unwrap_or_default() };
    let Some(marked) = folder.ancestors().find(|dir| is_marked_root(dir)) else { return folder };
    outermost_ignored(marked, &folder).unwrap_or_else(|| marked.to_path_buf())
}

/// The outermost folder from `root` down to `folder` that `root`'s ignore files exclude.
fn outermost_ignored(root: &Path, folder: &Path) -> Option<PathBuf> {
    let mut rules = ignore::gitignore::GitignoreBuilder::new(root);
    for name in [".gitignore", ".ignore"] {
        // A missing or unreadable file adds no rules.
        let _ = rules.add(root.join(name));
    }
    let rules = rules.build().ok()?;
    let mut below_root: Vec<&Path> = folder.ancestors().take_while(|dir| *dir != root).collect();
    below_root.reverse();
    below_root.into_iter().find(|dir| rules.matched(dir, true).is_ignore()).map(Path::to_path_buf)
}

/// Whether `dir` holds what makes a folder a workspace root: `.cutune`, `compile_commands.json`
/// or `.git`.
pub fn is_marked_root(dir: &Path) -> bool {
    [".cutune", "compile_commands.json", ".git"].iter().any(|marker| dir.join(marker).exists())
}

/// Whether `path` is a Python script.
pub(super) fn is_python(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "py")
}

pub(super) fn is_source(path: &Path) -> bool {
    path.extension().and_then(|e| e.to_str()).is_some_and(|e| SOURCE_EXTENSIONS.contains(&e))
}

pub(super) struct Found {
    pub path: PathBuf,
    pub stamp: Stamp,
}

/// A file's size and modification time: while neither changes, its text is taken not to either.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stamp {
    pub bytes: u64,
    pub modified: Option<SystemTime>,
}

impl Stamp {
    pub(super) fn of(metadata: &std::fs::Metadata) -> Stamp {
        Stamp { bytes: metadata.len(), modified: metadata.modified().ok() }
    }
}

pub(super) struct Listing {
    pub files: Vec<Found>,
    pub skipped: Vec<Skipped>,
}

/// The source files under `root`, sorted, skipping what `.gitignore` (and `.ignore`) exclude and
/// hidden folders, plus the files `compile_commands.json` compiles (ignored or not).
pub(super) fn source_files(root: &Path, limits: &Limits) -> Listing {
    let mut paths: Vec<PathBuf> = ignore::WalkBuilder::new(root)
        .hidden(true)
        .git_ignore(true)
        .require_git(false)
        .build()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_some_and(|t| t.is_file()) && is_source(e.path()))
        .map(|e| e.into_path())
        .collect();
    paths.extend(compile_commands_files(root).into_iter().filter(|p| p.starts_with(root) && is_source(p)));
    paths.sort();
    paths.dedup();
    let mut listing = Listing { files: Vec::new(), skipped: Vec::new() };
    for path in paths {
        let Ok(meta) = std::fs::metadata(&path) else { continue };
        if listing.files.len() >= limits.max_files {
            listing.skipped.push(Skipped { path, reason: format!("the index holds at most {} files", limits.max_files) });
        } else if meta.len() > limits.max_file_bytes {
            listing.skipped.push(Skipped { path, reason: format!("{} is over the limit of {} per file", format_bytes(meta.len()), format_bytes(limits.max_file_bytes)) });
        } else {
            listing.files.push(Found { path, stamp: Stamp::of(&meta) });
        }
    }
    listing
}

/// The files of `compile_commands.json` at the root or in `build/`.
fn compile_commands_files(root: &Path) -> Vec<PathBuf> {
    let candidates = [root.join("compile_commands.json"), root.join("build").join("compile_commands.json")];
    let Some(text) = candidates.iter().find_map(|p| std::fs::read_to_string(p).ok()) else { return Vec::new() };
    let Ok(serde_json::Value::Array(entries)) = serde_json::from_str::<serde_json::Value>(&text) else { return Vec::new() };
    entries
        .iter()
        .filter_map(|entry| {
            let file = PathBuf::from(entry.get("file")?.as_str()?);
            let dir = entry.get("directory").and_then(|d| d.as_str()).map(PathBuf::from).unwrap_or_else(|| root.to_path_buf());
            let path = if file.is_absolute() { file } else { dir.join(file) };
            path.canonicalize().ok()
        })
        .collect()
}

/// How long a root's list of headers is reused: a survey slices hundreds of kernels in seconds,
/// and a header added while the language server runs is seen soon after.
const HEADER_LIST_TTL: Duration = Duration::from_secs(30);

/// The folder from which `written` (`helper_math.h`, `sub/util.cuh`) names a header the
/// workspace of `file` ships: what an include dir the build passes would give, for a project
/// without `compile_commands.json`. Of several at that relative path, the one that shares the
/// longest folder with `file` (a vendored copy elsewhere in the workspace loses); none on a tie.
pub fn shipped_header_dir(file: &Path, written: &str) -> Option<PathBuf> {
    let written = Path::new(written);
    let headers = headers_under(&find_root(file));
    let file = file.canonicalize().unwrap_or_else(|_| file.to_path_buf());
    let shared = |path: &Path| path.components().zip(file.components()).take_while(|(a, b)| a == b).count();
    let mut nearest: Vec<&PathBuf> = Vec::new();
    let mut best = 0;
    for path in headers.iter().filter(|path| path.ends_with(written)) {
        let length = shared(path);
        if length > best || nearest.is_empty() {
            (best, nearest) = (length, vec![path]);
        } else if length == best {
            nearest.push(path);
        }
    }
    let [only] = nearest.as_slice() else { return None };
    let mut dir = only.as_path();
    for _ in written.components() {
        dir = dir.parent()?;
    }
    Some(dir.to_path_buf())
}

/// The source files under `root` (the index's walk and limits), kept a while per root.
fn headers_under(root: &Path) -> Arc<Vec<PathBuf>> {
    static LISTS: Mutex<Option<HashMap<PathBuf, (Instant, Arc<Vec<PathBuf>>)>>> = Mutex::new(None);
    let mut lists = LISTS.lock().unwrap_or_else(|e| e.into_inner());
    let lists = lists.get_or_insert_with(HashMap::new);
    if let Some((_, list)) = lists.get(root).filter(|(at, _)| at.elapsed() < HEADER_LIST_TTL) {
        return list.clone();
    }
    let list = Arc::new(source_files(root, &Limits::default()).files.into_iter().map(|f| f.path).collect::<Vec<_>>());
    lists.insert(root.to_path_buf(), (Instant::now(), list.clone()));
    list
}
