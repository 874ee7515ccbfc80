//! The workspace indexes the server keeps in the background, one per root: built when a file
//! under the root is first opened, refreshed when a file is saved. Builds and refreshes run on
//! blocking threads; a request reads whichever index is current and never waits for one.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::workspace::{find_root, Limits, Workspace};

#[derive(Default)]
pub struct Indexes {
    roots: Mutex<HashMap<PathBuf, Root>>,
}

#[derive(Default)]
struct Root {
    /// `None` until the first build ends.
    current: Option<Arc<Workspace>>,
    /// Whether a build or refresh is running: a save meanwhile asks for another one after it.
    busy: bool,
    stale: bool,
}

/// What one build or refresh did, for the client's log.
pub struct Indexed {
    pub root: PathBuf,
    pub files: usize,
    pub read: usize,
    pub millis: u128,
}

impl Indexes {
    /// The index of `file`'s root as it stands, or `None` while its first build runs.
    pub fn current(&self, file: &Path) -> Option<Arc<Workspace>> {
        self.lock().get(&find_root(file)).and_then(|r| r.current.clone())
    }

    /// Whether `file`'s root has an index, built or being built.
    pub fn knows(&self, file: &Path) -> bool {
        self.lock().contains_key(&find_root(file))
    }

    /// Brings the index of `file`'s root up to date on a blocking thread: builds it the first
    /// time, else re-reads what changed on disk. A call while one runs is folded into a single
    /// further refresh. `None` when nothing ran.
    pub async fn update(self: Arc<Self>, file: &Path) -> Option<Indexed> {
        let root = find_root(file);
        let mut last = None;
        loop {
            let base = {
                let mut roots = self.lock();
                let entry = roots.entry(root.clone()).or_default();
                if entry.busy {
                    entry.stale = true;
                    return last;
                }
                entry.busy = true;
                entry.stale = false;
                entry.current.clone()
            };
            let task_root = root.clone();
            let built = tokio::task::spawn_blocking(move || {
                let started = Instant::now();
                let mut workspace = base.map_or_else(|| Workspace::new(&task_root, Limits::default()), |w| (*w).clone());
                let read = workspace.refresh();
                (workspace, read, started.elapsed().as_millis())
            })
            .await;
            let mut roots = self.lock();
            let entry = roots.entry(root.clone()).or_default();
            entry.busy = false;
            let Ok((workspace, read, millis)) = built else { return last };
            last = Some(Indexed { root: root.clone(), files: workspace.files().count(), read, millis });
            entry.current = Some(Arc::new(workspace));
            if !entry.stale {
                return last;
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<PathBuf, Root>> {
        self.roots.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_first_update_builds_and_a_later_one_sees_new_files() {
        let dir = std::env::temp_dir().join(format!("cutune-index-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join(".git")).unwrap();
        let kernel = dir.join("k.cu");
        std::fs::write(&kernel, "__global__ void k() {}\n").unwrap();
        let indexes = Arc::new(Indexes::default());
        assert!(indexes.current(&kernel).is_none());
        let built = indexes.clone().update(&kernel).await.expect("the first update builds");
        assert_eq!((built.files, built.read), (1, 1));
        std::fs::write(dir.join("run.cu"), "void run() { k<<<1, 32>>>(); }\n").unwrap();
        let refreshed = indexes.clone().update(&kernel).await.expect("a later update refreshes");
        assert_eq!((refreshed.files, refreshed.read), (2, 1));
        assert_eq!(indexes.current(&kernel).unwrap().files().count(), 2);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
