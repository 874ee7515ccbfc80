//! The only module that knows the Language Server Protocol.
//!
//! - [`ordered`] applies document mutations in arrival order and catches handler panics;
//! - [`server`] answers requests from document snapshots;
//! - [`convert`] turns the plain analysis types into protocol types and back;
//! - [`input`] reads the client's messages, so that a malformed one cannot end the session;
//! - [`actions`] offers and resolves the code actions (templatize);
//! - [`index`] keeps the workspace index of each root current in the background;
//! - [`settings`] reads the client's settings;
//! - [`tuning`] runs the `Tune kernel` command in the background, with progress.

mod actions;
mod convert;
mod index;
mod input;
mod ordered;
mod server;
mod settings;
mod state;
mod tuning;

use std::sync::Arc;

use tower_lsp_server::{LspService, Server};

pub use ordered::OrderedService;
pub use state::ServerState;

/// Runs the server on stdin/stdout until the client exits. Returns the process exit code: 0
/// after `shutdown` then `exit`, 1 when the client went away without `shutdown` (LSP spec).
pub fn run_stdio() -> i32 {
    // stderr is the server's own log (editors show it in an output panel); stdout is the protocol.
    let filter = tracing_subscriber::EnvFilter::try_from_env("CUTUNE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt().with_writer(std::io::stderr).with_ansi(false).with_env_filter(filter).try_init();
    crate::syntax::compile_queries();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime starts");
    let code = runtime.block_on(async {
        let state = Arc::new(ServerState::default());
        let (service, socket) = LspService::build({
            let state = state.clone();
            move |client| server::Backend::new(client, state)
        })
        // Not among tower-lsp-server's handlers yet.
        .custom_method("window/workDoneProgress/cancel", server::Backend::work_done_progress_cancel)
        .finish();
        let client = service.inner().client().clone();
        let input = input::ClientInput::from_stdin(client.clone());
        let service = OrderedService::new(service, state.clone(), client);
        Server::new(input, tokio::io::stdout(), socket).serve(service).await;
        if state.shutdown_requested() { 0 } else { 1 }
    });
    // A tuning run may still be going on its blocking thread: the process ends without it (its
    // worker child sees its input close and exits too).
    runtime.shutdown_background();
    code
}
