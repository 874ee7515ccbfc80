//! Cubins loaded into the worker's context, kept for the requests that follow: a verification
//! runs the same baseline, candidate and harness case after case, and each load costs reading
//! the file, a driver call and, on unloading, a synchronisation.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::SystemTime;

use super::cuda::{DriverFailure, LoadedModule};

/// Modules kept loaded: a verification uses three (baseline, candidate, harness); tuning loads
/// one per candidate, which must not pile up in the context.
const KEPT: usize = 8;

/// Why a cubin could not be loaded.
pub enum ModuleError {
    Read(std::io::Error),
    Load(DriverFailure),
}

/// The last [`KEPT`] images loaded, most recently used last, each known by its file's path, size
/// and modification time: a cubin rewritten in place is loaded anew (the cubin cache writes
/// through a rename, which changes both), and one that is not is not even read again.
pub struct Kept<T> {
    entries: VecDeque<(Identity, Rc<T>)>,
}

/// What tells one cubin file from another.
#[derive(Clone, Debug, PartialEq)]
struct Identity {
    path: PathBuf,
    bytes: u64,
    modified: Option<SystemTime>,
}

pub type Modules = Kept<LoadedModule>;

impl<T> Default for Kept<T> {
    fn default() -> Self {
        Kept { entries: VecDeque::new() }
    }
}

impl Modules {
    /// The module of the cubin at `path`.
    pub fn load(&mut self, path: &Path) -> Result<Rc<LoadedModule>, ModuleError> {
        let metadata = std::fs::metadata(path).map_err(ModuleError::Read)?;
        let identity = Identity { path: path.to_path_buf(), bytes: metadata.len(), modified: metadata.modified().ok() };
        self.get_or_load(identity, || {
            let image = std::fs::read(path).map_err(ModuleError::Read)?;
            LoadedModule::load(&image).map_err(ModuleError::Load)
        })
    }
}

impl<T> Kept<T> {
    fn get_or_load<E>(&mut self, identity: Identity, load: impl FnOnce() -> Result<T, E>) -> Result<Rc<T>, E> {
        if let Some(at) = self.entries.iter().position(|(kept, _)| *kept == identity) {
            let entry = self.entries.remove(at).expect("a found position");
            let loaded = Rc::clone(&entry.1);
            self.entries.push_back(entry);
            return Ok(loaded);
        }
        let loaded = Rc::new(load()?);
        if self.entries.len() == KEPT {
            self.entries.pop_front();
        }
        self.entries.push_back((identity, Rc::clone(&loaded)));
        Ok(loaded)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn identity(name: u8, modified: u64) -> Identity {
        Identity { path: PathBuf::from(format!("/cache/{name}.cubin")), bytes: 100, modified: Some(SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(modified)) }
    }

    #[test]
    fn files_are_loaded_once_and_the_least_recently_used_is_dropped() {
        let mut kept: Kept<u8> = Kept::default();
        let mut loads = Vec::new();
        let mut get = |kept: &mut Kept<u8>, name: u8, modified: u64| *kept.get_or_load::<()>(identity(name, modified), || Ok({ loads.push(name); name })).unwrap();
        for name in 0..KEPT as u8 {
            assert_eq!(get(&mut kept, name, 0), name);
        }
        assert_eq!(get(&mut kept, 0, 0), 0, "kept, and now the most recently used");
        assert_eq!(get(&mut kept, 100, 0), 100, "a new file drops file 1, the least recently used");
        assert_eq!(get(&mut kept, 0, 0), 0);
        assert_eq!(get(&mut kept, 1, 0), 1, "loaded again");
        assert_eq!(get(&mut kept, 0, 5), 0, "rewritten: loaded again");
        drop(get);
        let expected: Vec<u8> = (0..KEPT as u8).chain([100, 1, 0]).collect();
        assert_eq!(loads, expected);
    }

    #[test]
    fn a_failed_load_keeps_nothing() {
        let mut kept: Kept<u8> = Kept::default();
        assert_eq!(kept.get_or_load(identity(7, 0), || Err("bad image")), Err("bad image"));
        assert_eq!(*kept.get_or_load::<()>(identity(7, 0), || Ok(7)).unwrap(), 7);
    }
}
