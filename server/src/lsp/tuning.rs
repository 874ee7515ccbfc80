//! `Tune kernel on GPU`, `Verify kernel` and `Stop tuning`: one GPU job at a time (there is one
//! GPU), on a blocking thread, reported through `$/progress` and `cutune/status`, and
//! cancellable from the progress's cancel button or the stop command. The language server
//! keeps answering meanwhile.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use anyhow::Result;
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc::{unbounded_channel, UnboundedSender};
use tower_lsp_server::ls_types::notification::Notification;
use tower_lsp_server::ls_types::{MessageType, Position, ProgressToken, Uri};
use tower_lsp_server::Client;

use super::settings::Settings;
use crate::compile::CubinCache;
use crate::gpu::RunnerSource;
use crate::space::{Configuration, Space};
use crate::store::{Evaluation, Store};
use crate::tune::{self, job, verification, Observer, Progress, TuneOptions, TuneReport};
use crate::verify::{self, Stage};

pub const TUNE: &str = "cutune.tune";
pub const VERIFY: &str = "cutune.verify";
pub const STOP: &str = "cutune.stopTuning";
pub const APPLY_BEST: &str = "cutune.applyBest";
pub const TEMPLATIZE: &str = "cutune.templatize";
/// The kernels of the latest profile of the argument's workspace, by share.
pub const SHOW_PROFILE: &str = "cutune.showProfile";
/// Another implementation of a kernel run against the original ([`CompareArgument`]).
pub const COMPARE: &str = "cutune.compare";
/// Writes a kernel's tuning report ([`crate::report`]) and answers `{kernel, path, evaluations}`; with
/// `open: true` also asks the client to show the page in its browser (`window/showDocument`).
pub const SHOW_REPORT: &str = "cutune.showReport";
/// The commands this server carries out (`workspace/executeCommand`).
pub const COMMANDS: [&str; 8] = [TUNE, VERIFY, STOP, APPLY_BEST, TEMPLATIZE, SHOW_PROFILE, COMPARE, SHOW_REPORT];

/// The argument of a kernel command: the kernel by name, or the position of the cursor in it.
#[derive(Debug, Deserialize)]
pub struct KernelArgument {
    pub uri: Uri,
    pub kernel: Option<String>,
    pub position: Option<Position>,
    /// [`SHOW_REPORT`]: show the page in the client's browser too.
    #[serde(default)]
    pub open: bool,
}

/// The argument of [`COMPARE`]: the original kernel, and the file (a path or a `file:` URI) of
/// the implementation to run in its place, with its kernel's name when not the original's.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompareArgument {
    #[serde(flatten)]
    pub original: KernelArgument,
    pub candidate: String,
    pub candidate_kernel: Option<String>,
}

impl CompareArgument {
    pub fn candidate_path(&self) -> PathBuf {
        match self.candidate.parse::<Uri>() {
            Ok(uri) if self.candidate.starts_with("file:") => super::actions::path_of(&uri),
            _ => PathBuf::from(&self.candidate),
        }
    }
}

/// `cutune/status`: what the editor's status item shows.
pub enum StatusNotification {}

impl Notification for StatusNotification {
    type Params = Status;
    const METHOD: &'static str = "cutune/status";
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Status {
    /// The GPU's name (or the replayed recording), once known.
    pub device: Option<String>,
    /// `idle`, `tuning`, `verifying`, `no-device` or `replay`.
    pub state: String,
    pub message: String,
}

/// The run in progress, if any.
#[derive(Default)]
pub struct Tuning {
    running: Mutex<Option<Running>>,
    next_id: AtomicU64,
}

struct Running {
    id: u64,
    kernel: String,
    token: Option<ProgressToken>,
    cancel: Arc<AtomicBool>,
}

impl Tuning {
    /// Registers a new run of `kernel`, with a progress token of its own when the client shows
    /// progress, or says which run is in the way.
    pub fn begin(&self, kernel: &str, with_progress: bool) -> Result<(u64, Arc<AtomicBool>, Option<ProgressToken>), String> {
        let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(run) = running.as_ref() {
            return Err(format!("`{}` is being tuned, verified or compared on the GPU; stop that first (cutune: Stop tuning)", run.kernel));
        }
        let id = self.next_id.fetch_add(1, Ordering::SeqCst);
        let token = with_progress.then(|| ProgressToken::String(format!("cutune-tune-{id}")));
        let cancel = Arc::new(AtomicBool::new(false));
        *running = Some(Running { id, kernel: kernel.to_string(), token: token.clone(), cancel: cancel.clone() });
        Ok((id, cancel, token))
    }

    fn end(&self, id: u64) {
        let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        if running.as_ref().is_some_and(|r| r.id == id) {
            *running = None;
        }
    }

    /// Asks the run in progress to stop; returns the kernel it was tuning.
    pub fn stop(&self) -> Option<String> {
        let running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        running.as_ref().map(|run| {
            run.cancel.store(true, Ordering::SeqCst);
            run.kernel.clone()
        })
    }

    /// The kernel being tuned, if any.
    pub fn running_kernel(&self) -> Option<String> {
        self.running.lock().unwrap_or_else(|e| e.into_inner()).as_ref().map(|run| run.kernel.clone())
    }

    /// `window/workDoneProgress/cancel`: stops the run reporting under `token`.
    pub fn cancel_token(&self, token: &ProgressToken) -> bool {
        let running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        match running.as_ref() {
            Some(run) if run.token.as_ref() == Some(token) => {
                run.cancel.store(true, Ordering::SeqCst);
                true
            }
            _ => false,
        }
    }
}

/// One GPU job as the editor asked for it.
pub struct Job {
    pub file: PathBuf,
    /// The editor's text of the file (unsaved edits included).
    pub text: String,
    pub kernel: String,
    pub settings: Settings,
    pub work: Work,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Work {
    Tune,
    /// The five verification stages on the configuration the file's text runs now.
    Verify,
    /// Another implementation run against the original, in the same run, at its defaults.
    Compare { candidate: PathBuf, candidate_kernel: Option<String> },
}

/// What the blocking thread tells the editor side.
enum Event {
    Started { device: String, source: RunnerSource, total: u64 },
    Evaluated(Progress),
}

/// A finished job.
enum Done {
    Tuned(TuneReport),
    Verified(verify::Report),
    Compared(TuneReport),
}

struct Reporter {
    events: UnboundedSender<Event>,
    cancel: Arc<AtomicBool>,
}

impl Observer for Reporter {
    fn evaluated(&mut self, _: &Evaluation, progress: &Progress) {
        let _ = self.events.send(Event::Evaluated(progress.clone()));
    }

    fn cancelled(&self) -> bool {
        self.cancel.load(Ordering::SeqCst)
    }
}

/// The job itself, on a blocking thread.
fn execute(job: &Job, mut reporter: Reporter) -> Result<Done> {
    let (target, _) = job::target(&job.file, &job.kernel, None, &job.text)?;
    // A candidate that cannot run in the original's place is said before any GPU is sought.
    let target = match &job.work {
        Work::Compare { candidate, candidate_kernel } => job::candidate_target(target, &job.text, candidate, candidate_kernel.as_deref())?,
        Work::Tune | Work::Verify => target,
    };
    let workspace = job::workspace_for(&job.file, job.settings.results_location.as_deref());
    let store = Store::open(&workspace)?;
    let budget = job.settings.budget;
    let strategy = job.settings.strategy.unwrap_or_else(|| job::default_strategy(&target.kernel, budget));
    let default = Configuration::default_of(&target.kernel);
    // Verifying and comparing run code: a replay cannot.
    let replay = if job.work == Work::Tune { job.settings.replay.as_deref() } else { None };
    let (mut runner, nvrtc) = job::start_tools(job.settings.device, replay, job.settings.nvrtc_path.as_deref(), default)?;
    let target = target.for_device(runner.device(), nvrtc.as_ref())?;
    let tools = tune::Tools { nvrtc: nvrtc.as_ref(), cache: CubinCache::new(job::cubin_dir(&workspace)), store: &store, ceilings_dir: crate::sol::cache::default_dir() };
    let started = |total| Event::Started { device: runner.device().name.clone(), source: runner.source().clone(), total };
    match &job.work {
        Work::Verify => {
            let (config, _) = job::configuration_in_file(&job.text, &target.kernel);
            let _ = reporter.events.send(started(0));
            let cancel = reporter.cancel.clone();
            let report = verification::verify_configuration(&target, runner.as_mut(), &tools, &config, &Stage::ALL, false, &|| cancel.load(Ordering::SeqCst))?;
            Ok(Done::Verified(report))
        }
        Work::Compare { .. } => {
            let _ = reporter.events.send(started(1));
            let options = job::comparison_options(TuneOptions::brute_force(Some(1)));
            tune::tune(&target, runner.as_mut(), &tools, &options, &mut reporter).map(Done::Compared)
        }
        Work::Tune => {
            let total = Space::new(&target.kernel).count().min(budget);
            let _ = reporter.events.send(started(total));
            let options = TuneOptions { strategy, ..TuneOptions::brute_force(Some(budget)) };
            tune::tune(&target, runner.as_mut(), &tools, &options, &mut reporter).map(Done::Tuned)
        }
    }
}

/// Runs `job` to its end, reporting as it goes; `token` when the client shows progress.
pub async fn run(client: Client, tuning: Arc<Tuning>, job: Job, id: u64, cancel: Arc<AtomicBool>, token: Option<ProgressToken>, refresh_hints: bool) {
    let (kernel, work) = (job.kernel.clone(), job.work.clone());
    let (doing, busy) = match work {
        Work::Tune => ("Tuning", "tuning"),
        Work::Verify => ("Verifying", "verifying"),
        Work::Compare { .. } => ("Comparing", "comparing"),
    };
    let progress = match token {
        Some(token) => Some(client.progress(token, format!("{doing} {kernel}")).with_message("starting").with_percentage(0).with_cancel_button().begin().await),
        None => None,
    };
    let status = |device: Option<String>, state: &str, message: String| {
        let client = client.clone();
        let params = Status { device, state: state.to_string(), message };
        async move { client.send_notification::<StatusNotification>(params).await }
    };
    status(None, busy, format!("{busy} {kernel}: starting")).await;

    let (events, mut received) = unbounded_channel();
    let reporter = Reporter { events, cancel };
    let handle = tokio::task::spawn_blocking(move || execute(&job, reporter));
    let (mut device, mut replay, mut total) = (None, false, 0);
    while let Some(event) = received.recv().await {
        match event {
            Event::Started { device: name, source, total: count } => {
                replay = matches!(source, RunnerSource::Replay { .. });
                device = Some(match &source {
                    RunnerSource::Replay { from } => format!("replay of {from}"),
                    RunnerSource::Device => name,
                });
                total = count;
                if work != Work::Tune {
                    let message = if work == Work::Verify { "running the five stages" } else { "timing both, then the five stages" }.to_string();
                    if let Some(progress) = &progress {
                        progress.report_with_message(message.clone(), 0, None).await;
                    }
                    status(device.clone(), busy, format!("{busy} {kernel}: {message}")).await;
                }
            }
            Event::Evaluated(done) => {
                let best = done.best_speedup.map_or_else(|| "no correct configuration yet".to_string(), |s| format!("best {s:.2}×"));
                let message = format!("{}/{total} · {best}", done.evaluated);
                if let Some(progress) = &progress {
                    let percent = (done.evaluated * 100).checked_div(total).unwrap_or(0).min(100) as u32;
                    progress.report_with_message(message.clone(), percent, None).await;
                }
                status(device.clone(), if replay { "replay" } else { "tuning" }, format!("tuning {kernel} {message}")).await;
            }
        }
    }
    let outcome = handle.await.map_err(|e| anyhow::anyhow!("the tuning thread stopped unexpectedly: {e}")).and_then(|r| r);
    let (summary, kind, state) = match &outcome {
        Ok(Done::Tuned(report)) => (summarize(report), MessageType::INFO, "idle"),
        Ok(Done::Verified(report)) => {
            let kind = if report.failure().is_some() { MessageType::ERROR } else { MessageType::INFO };
            (format!("`{kernel}` {}: {}", report.config, report.summary()), kind, "idle")
        }
        Ok(Done::Compared(report)) => {
            let comparison = job::Comparison::of(report);
            let kind = if comparison.verified { MessageType::INFO } else { MessageType::ERROR };
            (format!("`{kernel}` against {}: {comparison}", report.file), kind, "idle")
        }
        Err(error) if job::is_no_device(error) => {
            let then = match work {
                Work::Tune => "Recorded results still show; set cutune.replay to replay recorded measurements",
                Work::Verify => "Verifying runs the kernel, so it needs a GPU (a replay cannot verify); recorded results still show",
                Work::Compare { .. } => "Comparing runs both kernels, so it needs a GPU; recorded results still show",
            };
            (format!("no CUDA device found: {error}. {then}"), MessageType::WARNING, "no-device")
        }
        Err(error) => (format!("{busy} `{kernel}` failed: {error:#}"), MessageType::ERROR, "idle"),
    };
    if let Some(progress) = progress {
        progress.finish_with_message(summary.clone()).await;
    }
    tuning.end(id);
    client.show_message(kind, format!("cutune: {summary}")).await;
    status(device, state, summary).await;
    if refresh_hints && outcome.is_ok() {
        let _ = client.inlay_hint_refresh().await;
    }
}

/// One line on a finished run: the best configuration and speedup, why it stopped, what it
/// measured; replays say so.
fn summarize(report: &TuneReport) -> String {
    let replay = match &report.source {
        RunnerSource::Replay { from } => format!(" (REPLAY of {from})"),
        RunnerSource::Device => String::new(),
    };
    let best = match &report.best {
        Some(best) if report.original_fastest => {
            format!("the original stays: no configuration is faster (the fastest correct one, {}, ran at {:.2}× its speed)", best.config, best.speedup.unwrap_or(f64::NAN))
        }
        Some(best) => match best.speedup {
            Some(speedup) => format!("best {} at {:.2} µs, {speedup:.2}× the original", best.config, best.time_us.unwrap_or(f64::NAN)),
            None => format!("best {}", best.config),
        },
        None => match report.unsteady_explanation() {
            Some(explanation) => format!("no configuration ran correctly: {explanation}"),
            None => "no configuration ran correctly".to_string(),
        },
    };
    let verified = match &report.verification {
        Some(verification) => format!("; verified: {}", verification.summary()),
        None => String::new(),
    };
    format!("{}{replay}: {best}{verified}; {} configurations evaluated; stopped: {}", report.kernel, report.rows.len(), report.stop_reason)
}
