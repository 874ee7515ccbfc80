//! A tower layer around the language server that
//! - applies `didOpen`/`didChange`/`didClose` synchronously, in the order the client sent them,
//!   before any handler runs (tower-lsp-server runs handlers concurrently, so a mutation made
//!   inside a handler could be overtaken by the next one);
//! - catches a panic in any handler, reports it, and answers the request with an internal error
//!   instead of taking the server down.

use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::future::BoxFuture;
use futures::FutureExt;
use serde::de::DeserializeOwned;
use tower::Service;
use tower_lsp_server::jsonrpc::{Error, ErrorCode, Request, Response};
use tower_lsp_server::ls_types::{
    DidChangeTextDocumentParams, DidCloseTextDocumentParams, DidOpenTextDocumentParams, MessageType,
};
use tower_lsp_server::Client;

use super::convert;
use super::state::{self, OpenDocument, ServerState};
use crate::syntax::Document;

pub struct OrderedService<S> {
    inner: S,
    state: Arc<ServerState>,
    client: Client,
}

impl<S> OrderedService<S> {
    pub fn new(inner: S, state: Arc<ServerState>, client: Client) -> Self {
        OrderedService { inner, state, client }
    }
}

/// Sends `message` to the client's log and to stderr. Usable from synchronous code.
pub fn report(client: &Client, level: MessageType, message: String) {
    if level == MessageType::ERROR {
        tracing::error!("{message}");
    } else {
        tracing::warn!("{message}");
    }
    let client = client.clone();
    if let Ok(handle) = tokio::runtime::Handle::try_current() {
        handle.spawn(async move { client.log_message(level, message).await });
    }
}

fn panic_message(panic: &(dyn Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_string())
}

impl<S> OrderedService<S> {
    fn params<P: DeserializeOwned>(&self, req: &Request) -> Option<P> {
        // Deserialised from the borrowed value: a clone would copy the whole document text.
        match P::deserialize(req.params().unwrap_or(&serde_json::Value::Null)) {
            Ok(p) => Some(p),
            Err(e) => {
                report(&self.client, MessageType::ERROR, format!("cutune: ignoring {} with invalid params: {e}", req.method()));
                None
            }
        }
    }

    /// Applies a document mutation. The new document replaces the old only once fully built,
    /// so a failure or a panic leaves the state as it was.
    fn apply_mutation(&self, req: &Request) {
        let outcome = catch_unwind(AssertUnwindSafe(|| match req.method() {
            "textDocument/didOpen" => {
                let Some(p) = self.params::<DidOpenTextDocumentParams>(req) else { return Ok(()) };
                let doc = p.text_document;
                // Only CUDA source is parsed; anything else (a tuning spec) is kept as text.
                let document = match state::is_cuda(&doc.language_id, &doc.uri) {
                    true => Document::new(doc.text),
                    false => Document::text_only(doc.text),
                };
                self.state.insert(doc.uri, OpenDocument { version: doc.version, language_id: doc.language_id, document: Arc::new(document) });
                Ok(())
            }
            "textDocument/didChange" => {
                let Some(p) = self.params::<DidChangeTextDocumentParams>(req) else { return Ok(()) };
                let uri = p.text_document.uri;
                let Some(open) = self.state.snapshot(&uri) else {
                    return Err(format!("cutune: didChange for {} which is not open; change ignored", uri.as_str()));
                };
                let changes: Vec<_> = p.content_changes.into_iter().map(convert::change).collect();
                match open.document.apply(self.state.encoding(), &changes) {
                    Ok(document) => {
                        self.state.insert(uri, OpenDocument { version: p.text_document.version, document: Arc::new(document), ..open });
                        Ok(())
                    }
                    Err(e) => Err(format!(
                        "cutune: didChange for {} (version {}) not applied: {e}; the server keeps version {}",
                        uri.as_str(),
                        p.text_document.version,
                        open.version
                    )),
                }
            }
            "textDocument/didClose" => {
                let Some(p) = self.params::<DidCloseTextDocumentParams>(req) else { return Ok(()) };
                match self.state.remove(&p.text_document.uri) {
                    Some(_) => Ok(()),
                    None => Err(format!("cutune: didClose for {} which is not open", p.text_document.uri.as_str())),
                }
            }
            _ => Ok(()),
        }));
        match outcome {
            Ok(Ok(())) => {}
            Ok(Err(message)) => report(&self.client, MessageType::ERROR, message),
            Err(panic) => report(
                &self.client,
                MessageType::ERROR,
                format!("cutune: internal error applying {}: {}; the document is unchanged", req.method(), panic_message(panic.as_ref())),
            ),
        }
    }
}

impl<S> Service<Request> for OrderedService<S>
where
    S: Service<Request, Response = Option<Response>>,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
{
    type Response = Option<Response>;
    type Error = S::Error;
    type Future = BoxFuture<'static, Result<Option<Response>, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request) -> Self::Future {
        self.apply_mutation(&req);
        let method = req.method().to_string();
        let id = req.id().cloned();
        let client = self.client.clone();
        let response = catch_unwind(AssertUnwindSafe(|| self.inner.call(req)));
        async move {
            let result = match response {
                Ok(future) => AssertUnwindSafe(future).catch_unwind().await,
                Err(panic) => Err(panic),
            };
            result.unwrap_or_else(|panic| {
                let message = format!("cutune: internal error in {method}: {}", panic_message(panic.as_ref()));
                report(&client, MessageType::ERROR, message.clone());
                let error = Error { code: ErrorCode::InternalError, message: message.into(), data: None };
                Ok(id.map(|id| Response::from_error(id, error)))
            })
        }
        .boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tower_lsp_server::LspService;

    /// A service whose `hover` handler panics, standing in for a bug in a real handler.
    struct Panicking;

    impl Service<Request> for Panicking {
        type Response = Option<Response>;
        type Error = ();
        type Future = futures::future::BoxFuture<'static, Result<Option<Response>, ()>>;

        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), ()>> {
            Poll::Ready(Ok(()))
        }

        fn call(&mut self, req: Request) -> Self::Future {
            async move {
                if req.method() == "textDocument/hover" {
                    panic!("hover handler bug");
                }
                Ok(req.id().cloned().map(|id| Response::from_ok(id, serde_json::Value::Null)))
            }
            .boxed()
        }
    }

    fn client() -> Client {
        // The client handle is only reachable through a service; build a throwaway one.
        let (service, _socket) = LspService::new(|client| super::super::server::Backend::new(client, Arc::default()));
        service.inner().client().clone()
    }

    fn request(method: &'static str, id: i64) -> Request {
        Request::build(method).id(id).params(serde_json::json!({})).finish()
    }

    #[tokio::test]
    async fn a_panicking_handler_answers_an_internal_error_and_the_service_goes_on() {
        let mut service = OrderedService::new(Panicking, Arc::default(), client());
        let response = service.call(request("textDocument/hover", 1)).await.unwrap().unwrap();
        let (id, body) = response.into_parts();
        assert_eq!(id, tower_lsp_server::jsonrpc::Id::Number(1));
        let error = body.unwrap_err();
        assert_eq!(error.code, ErrorCode::InternalError);
        assert!(error.message.contains("hover handler bug"), "{}", error.message);

        let next = service.call(request("textDocument/documentSymbol", 2)).await.unwrap().unwrap();
        assert!(next.into_parts().1.is_ok());
    }

    #[tokio::test]
    async fn mutations_apply_in_arrival_order_before_any_handler_runs() {
        let state: Arc<ServerState> = Arc::default();
        let mut service = OrderedService::new(Panicking, state.clone(), client());
        let uri = "file:///k.cu";
        let open = Request::build("textDocument/didOpen")
            .params(serde_json::json!({"textDocument": {"uri": uri, "languageId": "cuda-cpp", "version": 1, "text": "ab"}}))
            .finish();
        let change = |version: i32, at: u32, text: &str| {
            Request::build("textDocument/didChange")
                .params(serde_json::json!({
                    "textDocument": {"uri": uri, "version": version},
                    "contentChanges": [{"range": {"start": {"line": 0, "character": at}, "end": {"line": 0, "character": at}}, "text": text}]
                }))
                .finish()
        };
        // Futures are created but not polled: the mutations must already be visible.
        let _pending = [service.call(open), service.call(change(2, 2, "c")), service.call(change(3, 3, "d"))];
        let snapshot = state.snapshot(&uri.parse().unwrap()).unwrap();
        assert_eq!(snapshot.document.text(), "abcd");
        assert_eq!(snapshot.version, 3);

        // An edit at an invalid position leaves the document as it was.
        let _bad = service.call(change(4, 99, "x"));
        let snapshot = state.snapshot(&uri.parse().unwrap()).unwrap();
        assert_eq!((snapshot.document.text(), snapshot.version), ("abcd", 3));
    }
}
