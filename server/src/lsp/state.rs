//! Open documents and session settings, shared by the ordered mutation path and the handlers.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

use tower_lsp_server::ls_types::Uri;

use super::settings::Settings;
use crate::syntax::{Document, Encoding};

/// One open document: the client's version and an immutable snapshot.
#[derive(Clone)]
pub struct OpenDocument {
    pub version: i32,
    pub language_id: String,
    pub document: Arc<Document>,
}

impl OpenDocument {
    /// Whether cutune analyses this document: CUDA by language id or by file extension.
    pub fn is_cuda(&self, uri: &Uri) -> bool {
        is_cuda(&self.language_id, uri)
    }
}

pub fn is_cuda(language_id: &str, uri: &Uri) -> bool {
    matches!(language_id, "cuda-cpp" | "cuda") || [".cu", ".cuh"].iter().any(|ext| uri.as_str().ends_with(ext))
}

/// Documents that keep their syntax tree for incremental re-parsing: the most recently opened or
/// edited ones. A tree costs about 37 bytes per byte of source (7.7 MiB for a 5,000-line file),
/// so the others keep only text and model and re-parse once when next edited.
pub const DOCUMENTS_WITH_TREES: usize = 8;

#[derive(Default)]
struct Documents {
    open: HashMap<Uri, OpenDocument>,
    /// Most recently inserted first; at most `DOCUMENTS_WITH_TREES` long.
    with_trees: VecDeque<Uri>,
}

pub struct ServerState {
    documents: RwLock<Documents>,
    encoding: RwLock<Encoding>,
    settings: RwLock<Settings>,
    shutdown: AtomicBool,
}

impl Default for ServerState {
    fn default() -> Self {
        ServerState {
            documents: RwLock::default(),
            // UTF-16 until a client offers UTF-8: the protocol's default.
            encoding: RwLock::new(Encoding::Utf16),
            settings: RwLock::default(),
            shutdown: AtomicBool::new(false),
        }
    }
}

impl ServerState {
    pub fn encoding(&self) -> Encoding {
        *self.encoding.read().unwrap_or_else(|e| e.into_inner())
    }

    pub fn set_encoding(&self, encoding: Encoding) {
        *self.encoding.write().unwrap_or_else(|e| e.into_inner()) = encoding;
    }

    pub fn settings(&self) -> Settings {
        self.settings.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub fn set_settings(&self, settings: Settings) {
        *self.settings.write().unwrap_or_else(|e| e.into_inner()) = settings;
    }

    pub fn snapshot(&self, uri: &Uri) -> Option<OpenDocument> {
        self.documents.read().unwrap_or_else(|e| e.into_inner()).open.get(uri).cloned()
    }

    /// Stores a new version of a document, and drops the syntax tree of the document edited
    /// longest ago once more than `DOCUMENTS_WITH_TREES` hold one.
    pub fn insert(&self, uri: Uri, document: OpenDocument) {
        let mut documents = self.documents.write().unwrap_or_else(|e| e.into_inner());
        documents.with_trees.retain(|u| *u != uri);
        documents.with_trees.push_front(uri.clone());
        documents.open.insert(uri, document);
        while documents.with_trees.len() > DOCUMENTS_WITH_TREES {
            let Some(oldest) = documents.with_trees.pop_back() else { break };
            if let Some(open) = documents.open.get_mut(&oldest) {
                open.document = Arc::new(open.document.without_tree());
            }
        }
    }

    pub fn remove(&self, uri: &Uri) -> Option<OpenDocument> {
        let mut documents = self.documents.write().unwrap_or_else(|e| e.into_inner());
        documents.with_trees.retain(|u| u != uri);
        documents.open.remove(uri)
    }

    pub fn request_shutdown(&self) {
        self.shutdown.store(true, Ordering::SeqCst);
    }

    pub fn shutdown_requested(&self) -> bool {
        self.shutdown.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::Document;

    fn open(state: &ServerState, i: usize) -> Uri {
        let uri: Uri = format!("file:///k{i}.cu").parse().unwrap();
        let document = Arc::new(Document::new("__global__ void k() {}".into()));
        state.insert(uri.clone(), OpenDocument { version: 1, language_id: "cuda-cpp".into(), document });
        uri
    }

    fn has_tree(state: &ServerState, uri: &Uri) -> bool {
        state.snapshot(uri).unwrap().document.has_tree()
    }

    #[test]
    fn only_the_most_recently_edited_documents_keep_their_trees() {
        let state = ServerState::default();
        let uris: Vec<Uri> = (0..DOCUMENTS_WITH_TREES + 2).map(|i| open(&state, i)).collect();
        assert!(!has_tree(&state, &uris[0]) && !has_tree(&state, &uris[1]));
        assert!(uris[2..].iter().all(|u| has_tree(&state, u)));
        // Every document keeps its model either way.
        assert!(uris.iter().all(|u| state.snapshot(u).unwrap().document.model().kernels.len() == 1));

        // Touching an old document makes it recent again; the next oldest gives up its tree.
        let edited = Arc::new(Document::new("__global__ void k2() {}".into()));
        state.insert(uris[0].clone(), OpenDocument { version: 2, language_id: "cuda-cpp".into(), document: edited });
        assert!(has_tree(&state, &uris[0]));
        assert!(!has_tree(&state, &uris[2]));

        // Closing frees a place: nothing else loses its tree when the next one opens.
        state.remove(&uris[3]);
        open(&state, 99);
        assert!(has_tree(&state, &uris[4]));
    }
}
