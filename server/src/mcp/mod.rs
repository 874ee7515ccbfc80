//! `cutune mcp`: a Model Context Protocol server over stdio, so that a coding agent can list a
//! file's kernels, templatize one and read its tuning results. Only this module knows MCP; each
//! tool is thin over the same stages as the CLI and the language server, and runs them on a
//! blocking thread so that the protocol keeps answering.

mod resources;
mod schema;
mod tools;

use std::sync::Arc;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    ErrorData, ListResourceTemplatesResult, ListResourcesResult, PaginatedRequestParams, ProgressNotificationParam, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult,
    ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{tool, tool_handler, tool_router, Json, RoleServer, ServerHandler, ServiceExt};

use crate::store::Evaluation;
use crate::tune::job::{self, GpuSlot};
use crate::tune::{Observer, Progress};
use schema::*;

/// Serves MCP on stdin/stdout until the client closes it.
pub fn run_stdio() -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(async {
        let service = Cutune::new().serve(rmcp::transport::stdio()).await?;
        service.waiting().await?;
        Ok(())
    })
}

#[derive(Clone)]
struct Cutune {
    tool_router: ToolRouter<Self>,
    /// One GPU job at a time: a second waits for none, it is refused with what is running.
    gpu: Arc<GpuSlot>,
}

#[tool_router]
impl Cutune {
    fn new() -> Cutune {
        Cutune { tool_router: Self::tool_router(), gpu: Arc::default() }
    }

    #[tool(description = "List the CUDA kernels of a file: name, line, signature, template parameters and the lines that launch each.")]
    async fn list_kernels(&self, Parameters(args): Parameters<FileArgs>) -> Result<Json<KernelList>, String> {
        blocking(move || tools::list_kernels(&tools::path_of(&args.file)?)).await
    }

    #[tool(description = "Turn a kernel's execution choices (block size, tiles, unroll factors, vector widths…) into parameters whose defaults are the original values, and write its tuning spec. Without `write`, returns the diff and writes nothing.")]
    async fn templatize(&self, Parameters(args): Parameters<TemplatizeArgs>) -> Result<Json<TemplatizeOutcome>, String> {
        blocking(move || tools::templatize(&tools::path_of(&args.file)?, &args.kernel, args.write)).await
    }

    #[tool(description = "Compile a sample of a kernel's configurations (or all of them) with NVRTC, without a GPU, and report each one's registers, spills and shared memory, or why it cannot run (a false restriction, the architecture's limits, a compile error). Compiling needs the parameters and template arguments, not the shapes: a spec with `?` sizes still compiles.")]
    async fn check(&self, Parameters(args): Parameters<CheckArgs>) -> Result<Json<CheckOutcome>, String> {
        blocking(move || tools::check(&args)).await
    }

    #[tool(description = "Run a program under cutune's profiler (or read a PyTorch or Nsight Systems profile) and rank its kernels by share of GPU time, with where the workspace defines each: tune the top ones first. Can capture the launches of named kernels (or of the top N), so that tuning runs on the program's real arguments.")]
    async fn profile(&self, Parameters(args): Parameters<ProfileArgs>) -> Result<Json<ProfileOutcome>, String> {
        // Reading a profile the user has runs nothing on the GPU.
        let claim = if args.import.is_some() { None } else { Some(self.gpu.claim("profiling a program")?) };
        blocking(move || tools::profile(&args, claim)).await
    }

    #[tool(description = "Tune a kernel on this machine's GPU (or on a replay of recorded measurements): a constrained search of its parameters, every candidate compiled with NVRTC, timed, and checked against the original kernel; the winner verified in five stages. Sends progress notifications when the request has a progress token; cancelling the request stops the search within one measurement, keeping what was measured.")]
    async fn tune(&self, Parameters(args): Parameters<TuneArgs>, context: RequestContext<RoleServer>) -> Result<Json<TuneOutcome>, String> {
        let claim = self.gpu.claim(&format!("tuning `{}`", args.kernel))?;
        let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel::<(u64, Option<u64>, String)>();
        let cancel = context.ct.clone();
        let tuning = tokio::task::spawn_blocking(move || tools::tune(&args, ProgressSender { sender, cancelled: Box::new(move || cancel.is_cancelled()) }, claim));
        if let Some(token) = context.meta.get_progress_token() {
            while let Some((evaluated, budget, message)) = receiver.recv().await {
                let mut progress = ProgressNotificationParam::new(token.clone(), evaluated as f64).with_message(message);
                if let Some(budget) = budget {
                    progress = progress.with_total(budget as f64);
                }
                // A client gone away is the cancellation's business, not progress's.
                let _ = context.peer.notify_progress(progress).await;
            }
        }
        match tuning.await {
            Ok(result) => result.map(Json),
            Err(e) => Err(format!("cutune failed inside: {e}")),
        }
    }

    #[tool(description = "Run another implementation of a kernel (your rewrite, in another file, with the same parameters) against the original on this machine's GPU: both timed in the same run, the candidate checked on the spec's shapes and verified in five stages (smoke, shapes, numerics, determinism, edges). Returns the two times, the speedup, the percent of the speed-of-light bound, and whether it is verified or its first failure (stage, shape, index, values). A time below the bound is flagged as a likely wrong measurement. The result is stored like a tuning evaluation.")]
    async fn compare(&self, Parameters(args): Parameters<CompareArgs>) -> Result<Json<job::Comparison>, String> {
        let claim = self.gpu.claim(&format!("comparing `{}`", args.kernel))?;
        blocking(move || tools::compare(&args, claim)).await
    }

    #[tool(description = "Verify one configuration of a kernel against the original on this machine's GPU in five stages: smoke, shapes (the spec's and odd ones), numerics (inputs that stress precision), determinism, edges (guard bytes around every buffer). Stops at the first failure, which names the stage, the shape, the index and the values.")]
    async fn verify(&self, Parameters(args): Parameters<VerifyArgs>) -> Result<Json<VerifyOutcome>, String> {
        let claim = self.gpu.claim(&format!("verifying `{}`", args.kernel))?;
        blocking(move || tools::verify(&args, claim)).await
    }

    #[tool(description = "The speed-of-light bound of a kernel on the spec's shapes: the bytes it must move and the flops it must do, over the device's copy bandwidth and arithmetic rate, with which term limits each shape. A measured time below it is a wrong measurement; the gap to it is what a rewrite can still win.")]
    async fn speed_of_light(&self, Parameters(args): Parameters<SolArgs>) -> Result<Json<SolOutcome>, String> {
        blocking(move || tools::speed_of_light(&args)).await
    }

    #[tool(description = "The latest tuning results of a kernel from the results store: the best verified configuration, its speedup over the original, its percent of the speed of light, and whether the kernel changed since.")]
    async fn results(&self, Parameters(args): Parameters<KernelArgs>) -> Result<Json<TuningResults>, String> {
        blocking(move || tools::results(&tools::path_of(&args.file)?, &args.kernel)).await
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Cutune {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().enable_resources().build()).with_instructions(
            "cutune makes CUDA kernels fast: profile a program to find the kernels worth tuning, list a file's kernels, templatize one (its choices become parameters, the original values the defaults), check that its configurations compile, tune it on the GPU, compare your own rewrite against the original, and read the results. Files are paths on this machine.",
        )
    }

    async fn list_resources(&self, _: Option<PaginatedRequestParams>, _: RequestContext<RoleServer>) -> Result<ListResourcesResult, ErrorData> {
        let folder = std::env::current_dir().map_err(|e| ErrorData::internal_error(format!("cannot read the server's working folder: {e}"), None))?;
        let listed = tokio::task::spawn_blocking(move || resources::list(&folder)).await.map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        Ok(ListResourcesResult::with_all_items(listed))
    }

    async fn list_resource_templates(&self, _: Option<PaginatedRequestParams>, _: RequestContext<RoleServer>) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(ListResourceTemplatesResult::with_all_items(resources::templates()))
    }

    async fn read_resource(&self, request: ReadResourceRequestParams, _: RequestContext<RoleServer>) -> Result<ReadResourceResponse, ErrorData> {
        let contents = tokio::task::spawn_blocking(move || resources::read(&request.uri)).await.map_err(|e| ErrorData::internal_error(e.to_string(), None))??;
        Ok(ReadResourceResult::new(vec![contents]).into())
    }
}

/// Runs a stage on a blocking thread; a panic is an error for the client, not the end of the
/// server.
async fn blocking<T: Send + 'static>(stage: impl FnOnce() -> Result<T, String> + Send + 'static) -> Result<Json<T>, String> {
    match tokio::task::spawn_blocking(stage).await {
        Ok(result) => result.map(Json),
        Err(e) => Err(format!("cutune failed inside: {e}")),
    }
}

/// The tuner's progress, handed to the protocol's side, and the client's cancellation.
struct ProgressSender {
    sender: tokio::sync::mpsc::UnboundedSender<(u64, Option<u64>, String)>,
    cancelled: Box<dyn Fn() -> bool + Send>,
}

impl Observer for ProgressSender {
    fn evaluated(&mut self, evaluation: &Evaluation, progress: &Progress) {
        let best = match (progress.best_us, progress.best_speedup) {
            (Some(time), Some(speedup)) => format!("best {time:.2} µs ({speedup:.2}×)"),
            (Some(time), None) => format!("best {time:.2} µs"),
            _ => "no configuration matched the original yet".to_string(),
        };
        // The receiver is gone only once the request is answered.
        let _ = self.sender.send((progress.evaluated, progress.budget, format!("{best}; last {}", evaluation.config)));
    }

    fn cancelled(&self) -> bool {
        (self.cancelled)()
    }
}
