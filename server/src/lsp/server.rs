//! The request and notification handlers. Each reads a snapshot of one document; none mutates
//! documents (see [`super::ordered`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tower_lsp_server::jsonrpc::{Error, Result};
use tower_lsp_server::ls_types::*;
use tower_lsp_server::{Client, LanguageServer};

use super::actions::{self, TemplatizeData};
use super::convert;
use super::state::{OpenDocument, ServerState};
use crate::syntax::{self, Analysis, Document, Encoding, MAX_ANALYZED_BYTES};

pub struct Backend {
    client: Client,
    state: Arc<ServerState>,
    /// Whether the client fills in a code action's edit through `codeAction/resolve`.
    client_resolves_edits: AtomicBool,
    /// Whether the client shows change annotations (and confirms edits that need it).
    client_annotates_edits: AtomicBool,
}

impl Backend {
    pub fn new(client: Client, state: Arc<ServerState>) -> Self {
        Backend { client, state, client_resolves_edits: AtomicBool::new(false), client_annotates_edits: AtomicBool::new(false) }
    }

    pub fn client(&self) -> &Client {
        &self.client
    }

    fn open_document(&self, uri: &Uri) -> Result<OpenDocument> {
        self.state
            .snapshot(uri)
            .ok_or_else(|| Error::invalid_params(format!("document not open: {}", uri.as_str())))
    }

    fn offset(&self, open: &OpenDocument, position: Position) -> Result<usize> {
        open.document
            .offset(self.state.encoding(), convert::text_position(position))
            .map_err(|e| Error::invalid_params(e.to_string()))
    }

    /// Publishes the findings of the current version, unless a newer version has arrived since.
    async fn publish_diagnostics(&self, uri: Uri) {
        let Some(open) = self.state.snapshot(&uri) else { return };
        let encoding = self.state.encoding();
        if convert::is_spec(&uri) {
            let (_, found) = crate::spec::parse_spec(open.document.text());
            let diagnostics = found.iter().map(|d| convert::spec_diagnostic(&open.document, encoding, d)).collect();
            self.publish_if_current(uri, diagnostics, open.version).await;
            return;
        }
        if !open.is_cuda(&uri) {
            return;
        }
        let diagnostics = match open.document.analysis() {
            Analysis::Complete => syntax::check(open.document.model())
                .iter()
                .map(|f| convert::diagnostic(&open.document, encoding, f))
                .collect(),
            Analysis::SkippedTooLarge { bytes } => vec![too_large_diagnostic(bytes)],
            // CUDA documents are never kept as text only; nothing to report either way.
            Analysis::TextOnly => Vec::new(),
        };
        self.publish_if_current(uri, diagnostics, open.version).await;
    }

    async fn publish_if_current(&self, uri: Uri, diagnostics: Vec<Diagnostic>, version: i32) {
        let still_current = self.state.snapshot(&uri).is_some_and(|now| now.version == version);
        if still_current {
            self.client.publish_diagnostics(uri, diagnostics, Some(version)).await;
        }
    }
}

impl Backend {
    /// Templatizes on a blocking thread (it re-parses the file once per transform) and logs
    /// what each transform did.
    async fn templatize_action(&self, uri: Uri, kernel: String) -> Result<CodeAction> {
        let open = self.open_document(&uri)?;
        let encoding = self.state.encoding();
        let state = self.state.clone();
        let annotate = self.client_annotates_edits.load(Ordering::SeqCst);
        let (task_uri, task_kernel) = (uri.clone(), kernel.clone());
        let outcome = tokio::task::spawn_blocking(move || {
            let open_text = |u: &Uri| state.snapshot(u).map(|o| o.document.text().to_string());
            actions::templatize_edit(&task_uri, &open.document, open.version, &task_kernel, encoding, annotate, &open_text)
        })
        .await
        .map_err(|e| Error { code: tower_lsp_server::jsonrpc::ErrorCode::InternalError, message: format!("templatize stopped: {e}").into(), data: None })?;
        match outcome {
            Ok((edit, result)) => {
                let report = crate::template::report(&actions::path_of(&uri), &result);
                self.client.log_message(MessageType::INFO, format!("cutune: templatize {kernel}\n{report}")).await;
                let mut action = actions::unresolved_action(&uri, &kernel);
                action.edit = Some(edit);
                Ok(action)
            }
            Err(message) => {
                self.client.show_message(MessageType::ERROR, format!("cutune: cannot templatize `{kernel}`: {message}")).await;
                Err(Error::invalid_params(message))
            }
        }
    }
}

fn too_large_diagnostic(bytes: usize) -> Diagnostic {
    Diagnostic {
        range: Range::default(),
        severity: Some(DiagnosticSeverity::INFORMATION),
        code: Some(NumberOrString::String("file-too-large".into())),
        source: Some("cutune".into()),
        message: format!(
            "cutune does not analyse this file: {:.1} MiB is over its {} MiB limit",
            bytes as f64 / (1024.0 * 1024.0),
            MAX_ANALYZED_BYTES / (1024 * 1024)
        ),
        ..Diagnostic::default()
    }
}

/// What the client's log should say about a just-opened document that is not ordinary source.
fn unusual_content(document: &Document) -> Option<String> {
    if let Analysis::SkippedTooLarge { bytes } = document.analysis() {
        return Some(format!("is {bytes} bytes; not analysed"));
    }
    // Source text never holds NUL; a file that does is most likely binary, opened by mistake.
    document.text().contains('\0').then(|| "contains NUL characters: it looks like a binary file, not CUDA source".to_string())
}

impl LanguageServer for Backend {
    async fn initialize(&self, params: InitializeParams) -> Result<InitializeResult> {
        let offered = params.capabilities.general.as_ref().and_then(|g| g.position_encodings.as_deref());
        let encoding = convert::negotiate_encoding(offered);
        self.state.set_encoding(encoding);
        self.client_resolves_edits.store(actions::client_resolves_edits(&params.capabilities), Ordering::SeqCst);
        self.client_annotates_edits.store(actions::client_supports_annotations(&params.capabilities), Ordering::SeqCst);
        Ok(InitializeResult {
            capabilities: ServerCapabilities {
                position_encoding: Some(convert::encoding_kind(encoding)),
                text_document_sync: Some(TextDocumentSyncCapability::Options(TextDocumentSyncOptions {
                    open_close: Some(true),
                    change: Some(TextDocumentSyncKind::INCREMENTAL),
                    ..TextDocumentSyncOptions::default()
                })),
                hover_provider: Some(HoverProviderCapability::Simple(true)),
                document_symbol_provider: Some(OneOf::Left(true)),
                code_action_provider: Some(CodeActionProviderCapability::Options(CodeActionOptions {
                    code_action_kinds: Some(vec![CodeActionKind::REFACTOR_REWRITE]),
                    resolve_provider: Some(true),
                    ..CodeActionOptions::default()
                })),
                ..ServerCapabilities::default()
            },
            server_info: Some(ServerInfo { name: "cutune".into(), version: Some(env!("CARGO_PKG_VERSION").into()) }),
            offset_encoding: None,
        })
    }

    async fn initialized(&self, _: InitializedParams) {
        let encoding = match self.state.encoding() {
            Encoding::Utf8 => "UTF-8",
            Encoding::Utf16 => "UTF-16",
        };
        self.client
            .log_message(MessageType::INFO, format!("cutune {} ready; positions in {encoding}", env!("CARGO_PKG_VERSION")))
            .await;
    }

    async fn shutdown(&self) -> Result<()> {
        self.state.request_shutdown();
        Ok(())
    }

    async fn did_open(&self, params: DidOpenTextDocumentParams) {
        let uri = params.text_document.uri;
        if let Some(note) = self.state.snapshot(&uri).and_then(|open| unusual_content(&open.document)) {
            self.client.log_message(MessageType::WARNING, format!("cutune: {} {note}", uri.as_str())).await;
        }
        self.publish_diagnostics(uri).await;
    }

    async fn did_change(&self, params: DidChangeTextDocumentParams) {
        self.publish_diagnostics(params.text_document.uri).await;
    }

    async fn did_close(&self, params: DidCloseTextDocumentParams) {
        // Clear what was shown: diagnostics of closed files would go stale.
        self.client.publish_diagnostics(params.text_document.uri, Vec::new(), None).await;
    }

    async fn hover(&self, params: HoverParams) -> Result<Option<Hover>> {
        let position = params.text_document_position_params;
        let open = self.open_document(&position.text_document.uri)?;
        let offset = self.offset(&open, position.position)?;
        if !open.is_cuda(&position.text_document.uri) {
            return Ok(None);
        }
        let Some(info) = syntax::hover(open.document.model(), offset) else { return Ok(None) };
        Ok(Some(Hover {
            contents: HoverContents::Markup(MarkupContent { kind: MarkupKind::Markdown, value: info.markdown }),
            range: Some(convert::range(&open.document, self.state.encoding(), info.span)),
        }))
    }

    async fn document_symbol(&self, params: DocumentSymbolParams) -> Result<Option<DocumentSymbolResponse>> {
        let open = self.open_document(&params.text_document.uri)?;
        if !open.is_cuda(&params.text_document.uri) {
            return Ok(None);
        }
        let symbols = convert::document_symbols(&open.document, self.state.encoding(), open.document.model());
        Ok(Some(DocumentSymbolResponse::Nested(symbols)))
    }

    async fn code_action(&self, params: CodeActionParams) -> Result<Option<CodeActionResponse>> {
        let uri = params.text_document.uri;
        let open = self.open_document(&uri)?;
        if !open.is_cuda(&uri) {
            return Ok(None);
        }
        let wanted = params.context.only.as_ref();
        if wanted.is_some_and(|kinds| !kinds.iter().any(|k| CodeActionKind::REFACTOR_REWRITE.as_str().starts_with(k.as_str()))) {
            return Ok(None);
        }
        let start = self.offset(&open, params.range.start)?;
        let end = self.offset(&open, params.range.end)?;
        let mut response = Vec::new();
        for kernel in actions::kernels_at(&open.document, start, end) {
            if let Err(why) = crate::template::check_templatizable(&open.document, &kernel) {
                let mut action = actions::unresolved_action(&uri, &kernel);
                action.data = None;
                action.disabled = Some(CodeActionDisabled { reason: why.to_string() });
                response.push(CodeActionOrCommand::CodeAction(action));
                continue;
            }
            let action = if self.client_resolves_edits.load(Ordering::SeqCst) {
                actions::unresolved_action(&uri, &kernel)
            } else {
                match self.templatize_action(uri.clone(), kernel).await {
                    Ok(action) => action,
                    Err(_) => continue,
                }
            };
            response.push(CodeActionOrCommand::CodeAction(action));
        }
        Ok(Some(response))
    }

    async fn code_action_resolve(&self, action: CodeAction) -> Result<CodeAction> {
        let Some(data) = action.data.clone().and_then(|d| serde_json::from_value::<TemplatizeData>(d).ok()) else {
            return Ok(action);
        };
        self.templatize_action(data.uri, data.kernel).await
    }
}
