//! The request and notification handlers. Each reads a snapshot of one document; none mutates
//! documents (see [`super::ordered`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use tower_lsp_server::jsonrpc::{Error, ErrorCode, Result};
use tower_lsp_server::ls_types::*;
use tower_lsp_server::{Client, LanguageServer};

use super::actions::{self, TemplatizeData};
use super::convert;
use super::index::Indexes;
use super::settings::Settings;
use super::state::{OpenDocument, ServerState};
use super::tuning::{self, KernelArgument, Status, StatusNotification, Tuning};
use crate::profile::share;
use crate::syntax::{self, Analysis, Document, Encoding, MAX_ANALYZED_BYTES};
use crate::tune::results::KernelResults;
use crate::tune::{definition_sha256, job};

pub struct Backend {
    client: Client,
    state: Arc<ServerState>,
    tuning: Arc<Tuning>,
    indexes: Arc<Indexes>,
    /// Whether the client fills in a code action's edit through `codeAction/resolve`.
    client_resolves_edits: AtomicBool,
    /// Whether the client shows change annotations (and confirms edits that need it).
    client_annotates_edits: AtomicBool,
    /// Whether the client shows server-initiated `$/progress`.
    client_shows_progress: AtomicBool,
    /// Whether the client asks for inlay hints again on `workspace/inlayHint/refresh`.
    client_refreshes_hints: AtomicBool,
    /// Whether the client answers `workspace/configuration`.
    client_has_configuration: AtomicBool,
    /// Whether the client opens `window/showDocument` requests (the report in a browser).
    client_shows_documents: AtomicBool,
    /// Problems with `initializationOptions`, logged once the client can be told.
    settings_problems: Mutex<Vec<String>>,
}

impl Backend {
    pub fn new(client: Client, state: Arc<ServerState>) -> Self {
        Backend {
            client,
            state,
            tuning: Arc::default(),
            indexes: Arc::default(),
            client_resolves_edits: AtomicBool::new(false),
            client_annotates_edits: AtomicBool::new(false),
            client_shows_progress: AtomicBool::new(false),
            client_refreshes_hints: AtomicBool::new(false),
            client_has_configuration: AtomicBool::new(false),
            client_shows_documents: AtomicBool::new(false),
            settings_problems: Mutex::default(),
        }
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

    async fn publish_diagnostics(&self, uri: Uri) {
        self.publisher().publish(uri).await;
    }

    fn publisher(&self) -> Publisher {
        Publisher { client: self.client.clone(), state: self.state.clone() }
    }
}

/// Diagnostics and results of documents, for the handlers and for the end of a tuning run.
#[derive(Clone)]
struct Publisher {
    client: Client,
    state: Arc<ServerState>,
}

impl Publisher {
    /// Publishes the findings of the current version, unless a newer version has arrived since:
    /// the model's checks and, per kernel, what its tuning results say.
    async fn publish(&self, uri: Uri) {
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
            Analysis::Complete => {
                let mut findings = syntax::check(open.document.model());
                let file = actions::path_of(&uri);
                for kernel in open.document.model().kernels.iter().filter(|k| k.is_definition) {
                    if let Some(results) = self.results(&file, &kernel.name) {
                        findings.extend(results.findings(kernel.name_span, &definition_sha256(open.document.text(), kernel)));
                    }
                }
                findings.iter().map(|f| convert::diagnostic(&open.document, encoding, f)).collect()
            }
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

    /// The latest results of `kernel`; a damaged or locked database is logged, not shown.
    fn results(&self, file: &std::path::Path, kernel: &str) -> Option<KernelResults> {
        let workspace = job::workspace_for(file, self.state.settings().results_location.as_deref());
        KernelResults::latest(&workspace, file, kernel).unwrap_or_else(|e| {
            tracing::warn!("reading the results of `{kernel}`: {e}");
            None
        })
    }
}

impl Backend {
    /// Templatizes on a blocking thread (it re-parses the file once per transform) and logs
    /// what each transform did.
    /// Brings the workspace index of `uri`'s root up to date in the background and logs what
    /// that did; requests meanwhile read the index as it was.
    fn update_index(&self, uri: &Uri) {
        let Some(path) = uri.to_file_path().map(|p| p.into_owned()) else { return };
        let (indexes, client) = (self.indexes.clone(), self.client.clone());
        tokio::spawn(async move {
            if let Some(done) = indexes.update(&path).await {
                let message = format!("cutune: workspace index of {}: {} files, {} read in {} ms", done.root.display(), done.files, done.read, done.millis);
                client.log_message(MessageType::INFO, message).await;
            }
        });
    }

    async fn templatize_action(&self, uri: Uri, kernel: String) -> Result<CodeAction> {
        let open = self.open_document(&uri)?;
        let workspace = uri.to_file_path().and_then(|p| self.indexes.current(&p));
        if workspace.is_none() {
            self.client.log_message(MessageType::INFO, "cutune: the workspace index is still being built; reading the workspace for this action").await;
        }
        let encoding = self.state.encoding();
        let state = self.state.clone();
        let annotate = self.client_annotates_edits.load(Ordering::SeqCst);
        let (task_uri, task_kernel) = (uri.clone(), kernel.clone());
        let outcome = tokio::task::spawn_blocking(move || {
            let open_text = |u: &Uri| state.snapshot(u).map(|o| o.document.text().to_string());
            actions::templatize_edit(&task_uri, &open.document, open.version, &task_kernel, encoding, annotate, &open_text, workspace.as_deref())
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

impl Backend {
    /// `window/workDoneProgress/cancel`: the cancel button of a tuning run's progress.
    pub async fn work_done_progress_cancel(&self, params: WorkDoneProgressCancelParams) {
        if self.tuning.cancel_token(&params.token) {
            self.client.log_message(MessageType::INFO, "cutune: tuning cancelled from the progress").await;
        }
    }

    /// Reads the `cutune` section through `workspace/configuration`, in a task of its own: the
    /// handler that asks must not wait for the client (a client that goes away without
    /// answering would keep the server from ending).
    fn pull_settings(&self) {
        let (client, state) = (self.client.clone(), self.state.clone());
        tokio::spawn(async move {
            let item = ConfigurationItem { scope_uri: None, section: Some("cutune".into()) };
            match client.configuration(vec![item]).await {
                Ok(values) => {
                    if let Some(value) = values.first().filter(|v| !v.is_null()) {
                        apply_settings(&client, &state, value).await;
                    }
                }
                Err(e) => tracing::warn!("workspace/configuration failed: {e}"),
            }
        });
    }

    /// The file, its current text and the kernel a command names (by name or by a position in
    /// it). Errors are for the user.
    fn kernel_of(&self, argument: &KernelArgument) -> Result<(std::path::PathBuf, String, String)> {
        let file = actions::path_of(&argument.uri);
        let document = match self.state.snapshot(&argument.uri) {
            Some(open) => open.document,
            None => {
                let text = std::fs::read_to_string(&file).map_err(|e| Error::invalid_params(format!("cannot read {}: {e}", file.display())))?;
                Arc::new(Document::new(text))
            }
        };
        let kernel = match (&argument.kernel, argument.position) {
            (Some(name), _) => {
                if !document.model().kernels.iter().any(|k| k.is_definition && &k.name == name) {
                    return Err(Error::invalid_params(format!("{} defines no kernel `{name}`", file.display())));
                }
                name.clone()
            }
            (None, Some(position)) => {
                let offset = document.offset(self.state.encoding(), convert::text_position(position)).map_err(|e| Error::invalid_params(e.to_string()))?;
                actions::kernels_at(&document, offset, offset).into_iter().next().ok_or_else(|| {
                    Error::invalid_params(format!("no kernel at {}:{}: put the cursor inside a `__global__` function", file.display(), position.line + 1))
                })?
            }
            (None, None) => return Err(Error::invalid_params("name the kernel (`kernel`) or give a position inside it (`position`)")),
        };
        Ok((file, document.text().to_string(), kernel))
    }

    /// `Apply best configuration`: the best verified configuration's values become the
    /// parameter defaults in the `.cu` file (through `workspace/applyEdit`); compiler options
    /// that cannot be written there are told to the user.
    async fn apply_best(&self, argument: KernelArgument) -> Result<Option<Value>> {
        let failed = |message: String| Error { code: ErrorCode::ServerError(-32803), message: message.into(), data: None };
        let (file, text, kernel) = self.kernel_of(&argument)?;
        let results = self.publisher().results(&file, &kernel).ok_or_else(|| failed(format!("`{kernel}` has no tuning results yet: tune it first")))?;
        let document = match self.state.snapshot(&argument.uri) {
            Some(open) => open.document,
            None => Arc::new(Document::new(text.clone())),
        };
        // `kernel_of` found the definition, in this very text.
        let current = document.model().kernels.iter().find(|k| k.is_definition && k.name == kernel).map(|d| definition_sha256(&text, d)).unwrap_or_default();
        if results.is_stale(&current) {
            return Err(failed(format!("the results of `{kernel}` were measured on an earlier version of it: tune it again first")));
        }
        let best = results.best().ok_or_else(|| failed(format!("no configuration of `{kernel}` ran correctly: nothing to apply")))?;
        if !results.beats_original() {
            return Err(failed(format!("no configuration of `{kernel}` is faster than the original (the fastest correct one, {}, ran at {:.2}× its speed): nothing to apply", best.config, results.best_speedup().unwrap_or(f64::NAN))));
        }
        let (spec, _, _) = job::kernel_and_source(&file, &kernel, None, &text).map_err(|e| failed(format!("{e:#}")))?;
        let applied = crate::template::apply_defaults(&text, &spec, &best.config).map_err(failed)?;
        let encoding = self.state.encoding();
        let edits = applied
            .edits
            .iter()
            .map(|e| {
                let range = Range { start: convert::position(&document, encoding, e.range.start), end: convert::position(&document, encoding, e.range.end) };
                OneOf::Left(TextEdit { range, new_text: e.new_text.clone() })
            })
            .collect();
        if !applied.edits.is_empty() {
            let version = self.state.snapshot(&argument.uri).map(|open| open.version);
            let text_document = OptionalVersionedTextDocumentIdentifier { uri: argument.uri.clone(), version };
            let edit = WorkspaceEdit { document_changes: Some(DocumentChanges::Edits(vec![TextDocumentEdit { text_document, edits }])), ..WorkspaceEdit::default() };
            let response = self.client.apply_edit(edit).await.map_err(|e| failed(format!("the editor did not take the edit: {e}")))?;
            if !response.applied {
                return Err(failed(format!("the editor did not apply the edit{}", response.failure_reason.map(|r| format!(": {r}")).unwrap_or_default())));
            }
        }
        let mut message = format!("cutune: `{kernel}` now defaults to {} ({})", best.config, results.hint(&current));
        for note in &applied.notes {
            message.push_str(&format!("; {note}"));
        }
        self.client.show_message(MessageType::INFO, message).await;
        Ok(Some(json!({ "applied": best.config.to_string(), "notes": applied.notes })))
    }

    /// The tuning commands that make sense for `kernel` now: tune a kernel with a valid spec
    /// beside the file (stop it while it runs), apply the best configuration of fresh results.
    fn tuning_actions(&self, uri: &Uri, open: &OpenDocument, kernel: &str) -> Vec<CodeAction> {
        let file = actions::path_of(uri);
        let action = |title: String, command: &str| CodeAction {
            title: title.clone(),
            kind: Some(CodeActionKind::REFACTOR),
            command: Some(Command { title, command: command.to_string(), arguments: Some(vec![json!({ "uri": uri, "kernel": kernel })]) }),
            ..CodeAction::default()
        };
        let mut offered = Vec::new();
        if self.tuning.running_kernel().as_deref() == Some(kernel) {
            offered.push(action(format!("Stop tuning {kernel}"), tuning::STOP));
        } else if job::spec_beside(&file, kernel).is_some() {
            offered.push(action(format!("Tune kernel {kernel} on GPU"), tuning::TUNE));
            offered.push(action(format!("Verify kernel {kernel} against the original (five stages)"), tuning::VERIFY));
        }
        let definition = open.document.model().kernels.iter().find(|k| k.is_definition && k.name == kernel);
        if let (Some(results), Some(definition)) = (self.publisher().results(&file, kernel), definition) {
            let current = definition_sha256(open.document.text(), definition);
            if let Some(best) = results.best().filter(|_| !results.is_stale(&current) && results.beats_original()) {
                offered.push(action(format!("Apply best configuration {} ({})", best.config, results.hint(&current)), tuning::APPLY_BEST));
            }
            if self.client_shows_documents.load(Ordering::SeqCst) {
                let mut show = action(format!("Show tuning report of {kernel}"), tuning::SHOW_REPORT);
                if let Some(command) = show.command.as_mut() {
                    command.arguments = Some(vec![json!({ "uri": uri, "kernel": kernel, "open": true })]);
                }
                offered.push(show);
            }
        }
        offered
    }

    /// Writes the kernel's tuning report beside its results; answers its path, and shows it in
    /// the client's browser when asked to and able.
    async fn show_report(&self, argument: KernelArgument) -> Result<Option<Value>> {
        let (file, _, kernel) = self.kernel_of(&argument)?;
        let workspace = job::workspace_for(&file, self.state.settings().results_location.as_deref());
        let named = kernel.clone();
        let written = tokio::task::spawn_blocking(move || crate::report::write(&crate::report::ReportRequest { file: &file, kernel: &named, workspace: &workspace, output: None }))
            .await
            .map_err(|e| Error { code: ErrorCode::InternalError, message: format!("writing the report: {e}").into(), data: None })?
            .map_err(|e| Error { code: ErrorCode::ServerError(-32803), message: format!("{e:#}").into(), data: None })?;
        if argument.open && self.client_shows_documents.load(Ordering::SeqCst) {
            let uri = Uri::from_file_path(&written.path).ok_or_else(|| Error::invalid_params(format!("{}: not a path a URI can name", written.path.display())))?;
            let shown = self.client.show_document(ShowDocumentParams { uri, external: Some(true), take_focus: Some(true), selection: None }).await;
            if let Err(e) = shown {
                tracing::warn!("the editor did not open {}: {e}", written.path.display());
            }
        }
        Ok(Some(json!({ "kernel": kernel, "path": written.path, "evaluations": written.evaluations })))
    }

    /// Starts tuning or verifying a kernel on the GPU; answers at once, reports as it goes.
    async fn start_gpu_job(&self, argument: KernelArgument, work: tuning::Work) -> Result<Option<Value>> {
        let (file, text, kernel) = self.kernel_of(&argument)?;
        let shows_progress = self.client_shows_progress.load(Ordering::SeqCst);
        let (id, cancel, token) = self.tuning.begin(&kernel, shows_progress).map_err(|why| Error { code: ErrorCode::ServerError(-32803), message: why.into(), data: None })?;
        // A client that never answers gets no progress, rather than a run that never starts.
        let token = match token {
            Some(token) => match tokio::time::timeout(std::time::Duration::from_secs(5), self.client.create_work_done_progress(token.clone())).await {
                Ok(Ok(())) => Some(token),
                _ => None,
            },
            None => None,
        };
        let job = tuning::Job { file, text, kernel: kernel.clone(), settings: self.state.settings(), work };
        let refresh = self.client_refreshes_hints.load(Ordering::SeqCst);
        let (publisher, uri) = (self.publisher(), argument.uri);
        let run = tuning::run(self.client.clone(), self.tuning.clone(), job, id, cancel, token, refresh);
        tokio::spawn(async move {
            run.await;
            // The results' diagnostics (wrong outputs, failed verifications, stale results…).
            publisher.publish(uri).await;
        });
        Ok(Some(json!({ "started": kernel })))
    }

}

/// Applies a settings object, telling the user what was wrong in it.
async fn apply_settings(client: &Client, state: &ServerState, value: &Value) {
    let (settings, problems) = Settings::from_json(value);
    client.log_message(MessageType::INFO, format!("cutune: settings: {}", settings.describe())).await;
    state.set_settings(settings);
    for problem in problems {
        client.show_message(MessageType::WARNING, format!("cutune: {problem}")).await;
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
        let capabilities = &params.capabilities;
        let shows_progress = capabilities.window.as_ref().and_then(|w| w.work_done_progress).unwrap_or(false);
        self.client_shows_progress.store(shows_progress, Ordering::SeqCst);
        let shows_documents = capabilities.window.as_ref().and_then(|w| w.show_document.as_ref()).is_some_and(|d| d.support);
        self.client_shows_documents.store(shows_documents, Ordering::SeqCst);
        let workspace = capabilities.workspace.as_ref();
        let refreshes = workspace.and_then(|w| w.inlay_hint.as_ref()).and_then(|h| h.refresh_support).unwrap_or(false);
        self.client_refreshes_hints.store(refreshes, Ordering::SeqCst);
        self.client_has_configuration.store(workspace.and_then(|w| w.configuration).unwrap_or(false), Ordering::SeqCst);
        let (settings, problems) = Settings::from_json(params.initialization_options.as_ref().unwrap_or(&Value::Null));
        self.state.set_settings(settings);
        *self.settings_problems.lock().unwrap_or_else(|e| e.into_inner()) = problems;
        Ok(InitializeResult {
            capabilities: ServerCapabilities {
                position_encoding: Some(convert::encoding_kind(encoding)),
                text_document_sync: Some(TextDocumentSyncCapability::Options(TextDocumentSyncOptions {
                    open_close: Some(true),
                    change: Some(TextDocumentSyncKind::INCREMENTAL),
                    save: Some(TextDocumentSyncSaveOptions::Supported(true)),
                    ..TextDocumentSyncOptions::default()
                })),
                hover_provider: Some(HoverProviderCapability::Simple(true)),
                document_symbol_provider: Some(OneOf::Left(true)),
                code_action_provider: Some(CodeActionProviderCapability::Options(CodeActionOptions {
                    code_action_kinds: Some(vec![CodeActionKind::REFACTOR_REWRITE, CodeActionKind::REFACTOR, CodeActionKind::QUICKFIX]),
                    resolve_provider: Some(true),
                    ..CodeActionOptions::default()
                })),
                execute_command_provider: Some(ExecuteCommandOptions {
                    commands: tuning::COMMANDS.iter().map(|c| c.to_string()).collect(),
                    ..ExecuteCommandOptions::default()
                }),
                inlay_hint_provider: Some(OneOf::Left(true)),
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
        let problems = std::mem::take(&mut *self.settings_problems.lock().unwrap_or_else(|e| e.into_inner()));
        for problem in problems {
            self.client.show_message(MessageType::WARNING, format!("cutune: {problem}")).await;
        }
        if self.client_has_configuration.load(Ordering::SeqCst) {
            self.pull_settings();
        }
        let status = Status { device: None, state: "idle".into(), message: "ready".into() };
        self.client.send_notification::<StatusNotification>(status).await;
    }

    async fn did_change_configuration(&self, params: DidChangeConfigurationParams) {
        if self.client_has_configuration.load(Ordering::SeqCst) {
            self.pull_settings();
        } else {
            apply_settings(&self.client, &self.state, &params.settings).await;
        }
    }

    async fn execute_command(&self, params: ExecuteCommandParams) -> Result<Option<LSPAny>> {
        let argument = || -> Result<KernelArgument> {
            let value = params.arguments.first().cloned().unwrap_or(Value::Null);
            serde_json::from_value(value).map_err(|e| Error::invalid_params(format!("{} takes {{uri, kernel}} or {{uri, position}}: {e}", params.command)))
        };
        match params.command.as_str() {
            tuning::TUNE => self.start_gpu_job(argument()?, tuning::Work::Tune).await,
            tuning::VERIFY => self.start_gpu_job(argument()?, tuning::Work::Verify).await,
            tuning::COMPARE => {
                let value = params.arguments.first().cloned().unwrap_or(Value::Null);
                let argument: tuning::CompareArgument = serde_json::from_value(value)
                    .map_err(|e| Error::invalid_params(format!("{} takes {{uri, kernel, candidate, candidateKernel?}}: {e}", params.command)))?;
                let candidate = argument.candidate_path();
                if !candidate.is_file() {
                    return Err(Error::invalid_params(format!("{}: no such file", candidate.display())));
                }
                self.start_gpu_job(argument.original, tuning::Work::Compare { candidate, candidate_kernel: argument.candidate_kernel }).await
            }
            tuning::APPLY_BEST => self.apply_best(argument()?).await,
            tuning::SHOW_REPORT => self.show_report(argument()?).await,
            tuning::TEMPLATIZE => {
                // The code action's edit, applied through `workspace/applyEdit`.
                let argument = argument()?;
                let (_, _, kernel) = self.kernel_of(&argument)?;
                let action = self.templatize_action(argument.uri, kernel.clone()).await?;
                let edit = action.edit.unwrap_or_default();
                let response = self.client.apply_edit(edit).await.map_err(|e| Error { code: ErrorCode::ServerError(-32803), message: format!("the editor did not take the edit: {e}").into(), data: None })?;
                Ok(Some(json!({ "templatized": kernel, "applied": response.applied })))
            }
            tuning::STOP => {
                let stopped = self.tuning.stop();
                Ok(Some(json!({ "stopping": stopped })))
            }
            tuning::SHOW_PROFILE => {
                // Any file of the workspace names it; `null` when it has no profile yet.
                let path = actions::path_of(&argument()?.uri);
                Ok(Some(json!(crate::profile::share::latest_profile(&path))))
            }
            other => Err(Error { code: ErrorCode::MethodNotFound, message: format!("cutune has no command `{other}`").into(), data: None }),
        }
    }

    async fn inlay_hint(&self, params: InlayHintParams) -> Result<Option<Vec<InlayHint>>> {
        let uri = params.text_document.uri;
        let open = self.open_document(&uri)?;
        if !open.is_cuda(&uri) {
            return Ok(None);
        }
        let file = actions::path_of(&uri);
        let encoding = self.state.encoding();
        let mut hints = Vec::new();
        let in_range = |at: Position| params.range.start <= at && at <= params.range.end;
        // At each launch of a kernel with a spec, the parameter values that would run.
        let mut specs = std::collections::HashMap::new();
        for launch in open.document.model().launches.iter().filter(|l| l.resolved) {
            let at = convert::range(&open.document, encoding, launch.callee_span).end;
            let spec = specs.entry(launch.kernel.clone()).or_insert_with(|| job::spec_beside(&file, &launch.kernel));
            let Some(spec) = spec.as_ref().filter(|_| in_range(at)) else { continue };
            let definition = open.document.model().kernels.iter().find(|k| k.is_definition && k.name == launch.kernel);
            let values = crate::template::current_values(open.document.text(), spec, definition);
            if values.is_empty() {
                continue;
            }
            let label = values.iter().map(|(name, value)| format!("{name}={value}")).collect::<Vec<_>>().join(" ");
            hints.push(InlayHint {
                position: at,
                label: InlayHintLabel::String(label),
                kind: None,
                text_edits: None,
                tooltip: Some(InlayHintTooltip::String("cutune: the parameter values this launch runs with (the defaults in this file)".into())),
                padding_left: Some(true),
                padding_right: Some(true),
                data: None,
            });
        }
        let shares = share::FileShares::of(&file);
        for kernel in open.document.model().kernels.iter().filter(|k| k.is_definition) {
            let at = convert::range(&open.document, encoding, kernel.name_span).end;
            if !in_range(at) {
                continue;
            }
            let results = self.publisher().results(&file, &kernel.name);
            let share = shares.share(&kernel.name);
            let tuned = results.as_ref().map(|r| r.hint(&definition_sha256(open.document.text(), kernel)));
            let profiled = share.as_ref().map(|s| match results.as_ref().and_then(KernelResults::best_speedup) {
                Some(speedup) => share::gain_hint(s, speedup),
                None => share::share_hint(s),
            });
            let label = match (tuned, profiled) {
                (Some(tuned), Some(profiled)) => format!("{tuned} · {profiled}"),
                (Some(only), None) | (None, Some(only)) => only,
                (None, None) => continue,
            };
            hints.push(InlayHint {
                position: at,
                label: InlayHintLabel::String(label),
                kind: None,
                text_edits: None,
                tooltip: Some(InlayHintTooltip::String("cutune: best verified speedup over the original kernel, and the kernel's share of the profiled program's GPU time; hover the kernel for details".into())),
                padding_left: Some(true),
                padding_right: None,
                data: None,
            });
        }
        Ok(Some(hints))
    }

    async fn shutdown(&self) -> Result<()> {
        self.state.request_shutdown();
        Ok(())
    }

    async fn did_open(&self, params: DidOpenTextDocumentParams) {
        let uri = params.text_document.uri;
        if !self.indexes.knows(&actions::path_of(&uri)) {
            self.update_index(&uri);
        }
        if let Some(note) = self.state.snapshot(&uri).and_then(|open| unusual_content(&open.document)) {
            self.client.log_message(MessageType::WARNING, format!("cutune: {} {note}", uri.as_str())).await;
        }
        self.publish_diagnostics(uri).await;
    }

    async fn did_change(&self, params: DidChangeTextDocumentParams) {
        self.publish_diagnostics(params.text_document.uri).await;
    }

    async fn did_save(&self, params: DidSaveTextDocumentParams) {
        // A saved file may add or drop a launch, a launcher or a size that other kernels' host
        // code needs: the index re-reads what changed.
        self.update_index(&params.text_document.uri);
    }

    async fn did_close(&self, params: DidCloseTextDocumentParams) {
        // Clear what was shown: diagnostics of closed files would go stale.
        self.client.publish_diagnostics(params.text_document.uri, Vec::new(), None).await;
    }

    async fn hover(&self, params: HoverParams) -> Result<Option<Hover>> {
        let position = params.text_document_position_params;
        let open = self.open_document(&position.text_document.uri)?;
        let offset = self.offset(&open, position.position)?;
        if convert::is_spec(&position.text_document.uri) {
            return Ok(actions::spec_unknown_hover(&open.document, self.state.encoding(), offset));
        }
        if !open.is_cuda(&position.text_document.uri) {
            return Ok(None);
        }
        let Some(mut info) = syntax::hover(open.document.model(), offset) else { return Ok(None) };
        let file = actions::path_of(&position.text_document.uri);
        let definition = open.document.model().kernels.iter().find(|k| k.is_definition && k.name_span.start_byte <= offset && offset <= k.name_span.end_byte);
        let results = definition.and_then(|k| self.publisher().results(&file, &k.name));
        // What was measured comes first: editors cap a hover's height, and the kernel's own
        // description is what the reader already sees in the file.
        let mut measured = Vec::new();
        if let Some(results) = &results {
            measured.push(results.hover());
        }
        if let Some(share) = definition.and_then(|k| share::FileShares::of(&file).share(&k.name)) {
            measured.push(share::share_hover(&share, results.as_ref().and_then(KernelResults::best_speedup)));
        }
        if !measured.is_empty() {
            measured.push(std::mem::take(&mut info.markdown));
            info.markdown = measured.join("\n\n---\n\n");
        }
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
        let wanted = params.context.only.as_ref();
        let wants = |kind: &CodeActionKind| wanted.is_none_or(|kinds| kinds.iter().any(|k| kind.as_str().starts_with(k.as_str())));
        if convert::is_spec(&uri) && wants(&CodeActionKind::QUICKFIX) {
            let start = self.offset(&open, params.range.start)?;
            let end = self.offset(&open, params.range.end)?;
            let fixes = actions::spec_quick_fixes(&uri, &open.document, self.state.encoding(), start, end);
            return Ok(Some(fixes.into_iter().map(CodeActionOrCommand::CodeAction).collect()));
        }
        if !open.is_cuda(&uri) {
            return Ok(None);
        }
        let start = self.offset(&open, params.range.start)?;
        let end = self.offset(&open, params.range.end)?;
        let mut response = Vec::new();
        if wants(&CodeActionKind::REFACTOR) {
            for kernel in actions::kernels_at(&open.document, start, end) {
                response.extend(self.tuning_actions(&uri, &open, &kernel).into_iter().map(CodeActionOrCommand::CodeAction));
            }
        }
        if !wants(&CodeActionKind::REFACTOR_REWRITE) {
            return Ok(Some(response));
        }
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
