//! Cubins loaded into the worker's context, kept for the requests that follow: a verification
//! runs the same baseline, candidate and harness case after case, and each load costs a
//! driver call and, on unloading, a synchronisation.

use std::collections::VecDeque;
use std::path::Path;
use std::rc::Rc;

use super::cuda::{DriverFailure, LoadedModule};

/// Modules kept loaded: a verification uses three (baseline, candidate, harness); tuning loads
/// one per candidate, which must not pile up in the context.
const KEPT: usize = 8;

/// Why a cubin could not be loaded.
pub enum ModuleError {
    Read(std::io::Error),
    Load(DriverFailure),
}

/// The last [`KEPT`] images loaded, most recently used last. An image is known by its bytes, so
/// a cubin rewritten in place is loaded anew.
pub struct Kept<T> {
    entries: VecDeque<(Vec<u8>, Rc<T>)>,
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
        let image = std::fs::read(path).map_err(ModuleError::Read)?;
        self.get_or_load(image, |image| LoadedModule::load(image)).map_err(ModuleError::Load)
    }
}

impl<T> Kept<T> {
    fn get_or_load<E>(&mut self, image: Vec<u8>, load: impl FnOnce(&[u8]) -> Result<T, E>) -> Result<Rc<T>, E> {
        if let Some(at) = self.entries.iter().position(|(kept, _)| *kept == image) {
            let entry = self.entries.remove(at).expect("a found position");
            let loaded = Rc::clone(&entry.1);
            self.entries.push_back(entry);
            return Ok(loaded);
        }
        let loaded = Rc::new(load(&image)?);
        if self.entries.len() == KEPT {
            self.entries.pop_front();
        }
        self.entries.push_back((image, Rc::clone(&loaded)));
        Ok(loaded)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_are_loaded_once_and_the_least_recently_used_is_dropped() {
        let mut kept: Kept<u8> = Kept::default();
        let mut loads = Vec::new();
        let mut get = |kept: &mut Kept<u8>, byte: u8| *kept.get_or_load::<()>(vec![byte], |image| Ok({ loads.push(image[0]); image[0] })).unwrap();
        for byte in 0..KEPT as u8 {
            assert_eq!(get(&mut kept, byte), byte);
        }
        assert_eq!(get(&mut kept, 0), 0, "kept, and now the most recently used");
        assert_eq!(get(&mut kept, 100), 100, "a new image drops image 1, the least recently used");
        assert_eq!(get(&mut kept, 0), 0);
        assert_eq!(get(&mut kept, 1), 1, "loaded again");
        drop(get);
        let expected: Vec<u8> = (0..KEPT as u8).chain([100, 1]).collect();
        assert_eq!(loads, expected);
    }

    #[test]
    fn a_failed_load_keeps_nothing() {
        let mut kept: Kept<u8> = Kept::default();
        assert_eq!(kept.get_or_load(vec![7], |_| Err("bad image")), Err("bad image"));
        assert_eq!(*kept.get_or_load::<()>(vec![7], |_| Ok(7)).unwrap(), 7);
    }
}
