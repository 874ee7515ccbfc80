//! Open documents and session settings, shared by the ordered mutation path and the handlers.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

use tower_lsp_server::ls_types::Uri;

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
        matches!(self.language_id.as_str(), "cuda-cpp" | "cuda")
            || [".cu", ".cuh"].iter().any(|ext| uri.as_str().ends_with(ext))
    }
}

pub struct ServerState {
    documents: RwLock<HashMap<Uri, OpenDocument>>,
    encoding: RwLock<Encoding>,
    shutdown: AtomicBool,
}

impl Default for ServerState {
    fn default() -> Self {
        ServerState {
            documents: RwLock::default(),
            // UTF-16 until a client offers UTF-8: the protocol's default.
            encoding: RwLock::new(Encoding::Utf16),
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

    pub fn snapshot(&self, uri: &Uri) -> Option<OpenDocument> {
        self.documents.read().unwrap_or_else(|e| e.into_inner()).get(uri).cloned()
    }

    pub fn insert(&self, uri: Uri, document: OpenDocument) {
        self.documents.write().unwrap_or_else(|e| e.into_inner()).insert(uri, document);
    }

    pub fn remove(&self, uri: &Uri) -> Option<OpenDocument> {
        self.documents.write().unwrap_or_else(|e| e.into_inner()).remove(uri)
    }

    pub fn open_count(&self) -> usize {
        self.documents.read().unwrap_or_else(|e| e.into_inner()).len()
    }

    pub fn request_shutdown(&self) {
        self.shutdown.store(true, Ordering::SeqCst);
    }

    pub fn shutdown_requested(&self) -> bool {
        self.shutdown.load(Ordering::SeqCst)
    }
}
