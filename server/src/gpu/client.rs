//! The tuner's side of the CUDA worker: [`WorkerRunner`] starts `cutune worker` as a child
//! process and implements [`Runner`] by talking to it (see [`super::protocol`]).
//!
//! The child is disposable. A kernel that faults makes it exit; one that hangs is killed by the
//! watchdog; one that crashes it is noticed at the end of its output. Each time the candidate
//! is labelled (`Fault`, `Timeout`, `Worker`) and the next `measure` starts a new child and
//! sends it the last `Prepare` again, so the tuning loop never sees a restart. After
//! [`MAX_START_ATTEMPTS`] failed starts in a row the runner stops trying and says why.

use std::collections::VecDeque;
use std::fmt;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::protocol::{Request, Response, TimingPolicy, PROTOCOL_VERSION};
use super::{Arg, Check, CheckRequest, DeviceInfo, FailureKind, Kernel, MeasuredCeilings, Outcome, Problem, Runner, RunnerSource, SettledRoles, Started, Timing, Verdict};
use crate::space::Configuration;
use crate::spec::Role;

/// Failed starts in a row after which the runner gives up.
pub const MAX_START_ATTEMPTS: u32 = 3;

/// Lines of the child's stderr kept for failure messages.
const STDERR_TAIL_LINES: usize = 12;

/// Responses are small; a longer line means the child is writing something else.
const MAX_RESPONSE_BYTES: u64 = 1 << 20;

/// How long to wait for the worker beyond the time its work should take.
#[derive(Clone, Debug, PartialEq)]
pub struct Watchdog {
    /// For `hello` (driver start and context creation) and, on top of the timing budget, for
    /// `prepare` (allocating and filling the problems).
    pub startup: Duration,
    /// On top of the timing budget of a `measure`: loading the module, the checked runs and
    /// the comparison.
    pub slack: Duration,
}

/// Multiplies the watchdog's limits, for kernels run under a tool that slows them down
/// (compute-sanitizer, a debugger): e.g. `CUTUNE_WATCHDOG_SCALE=20`.
pub const WATCHDOG_SCALE_ENV: &str = "CUTUNE_WATCHDOG_SCALE";

impl Default for Watchdog {
    fn default() -> Self {
        let scale = match std::env::var(WATCHDOG_SCALE_ENV) {
            Ok(text) => match text.trim().parse::<f64>() {
                Ok(scale) if scale.is_finite() && scale >= 1.0 => scale,
                _ => {
                    tracing::warn!("{WATCHDOG_SCALE_ENV}={text} is not a number ≥ 1; the watchdog keeps its limits");
                    1.0
                }
            },
            Err(_) => 1.0,
        };
        Watchdog { startup: Duration::from_secs(60).mul_f64(scale), slack: Duration::from_secs(10).mul_f64(scale) }
    }
}

/// Why no worker could be started.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StartError {
    /// No usable driver or device; the message says what still works.
    NoDevice(String),
    /// The worker could not be started or did not answer as a worker should.
    Failed(String),
}

impl fmt::Display for StartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StartError::NoDevice(message) | StartError::Failed(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for StartError {}

/// Measures on a GPU through a `cutune worker` child process.
pub struct WorkerRunner {
    command: Command,
    process: Option<WorkerProcess>,
    device: DeviceInfo,
    source: RunnerSource,
    timing: TimingPolicy,
    watchdog: Watchdog,
    /// Per problem: the first-batch median above which timing stops (see `set_cutoff`).
    cutoff_us: Vec<f64>,
    /// The last successful `Prepare`, sent again to every new child.
    prepared: Option<(Vec<Problem>, Kernel, PathBuf)>,
    /// Set once starting failed [`MAX_START_ATTEMPTS`] times in a row; every later `measure`
    /// fails with it at once.
    gave_up: Option<String>,
    restarts: u32,
    /// The configuration whose `measure` request the worker is answering (see `start_measure`),
    /// and the time it may take.
    measuring: Option<(Configuration, Duration)>,
}

impl WorkerRunner {
    /// Starts `cutune worker --device N` (this very executable) and opens the device.
    pub fn start(device: u32) -> Result<WorkerRunner, StartError> {
        let exe = std::env::current_exe().map_err(|e| StartError::Failed(format!("cannot find the cutune executable to start a worker: {e}")))?;
        let mut command = Command::new(exe);
        command.args(["worker", "--device", &device.to_string()]);
        WorkerRunner::start_command(command)
    }

    /// Starts a worker with `command` (which must speak the worker protocol on stdin/stdout);
    /// the same command is used for every restart.
    pub fn start_command(mut command: Command) -> Result<WorkerRunner, StartError> {
        let watchdog = Watchdog::default();
        let (process, device) = WorkerProcess::start(&mut command, watchdog.startup)?;
        Ok(WorkerRunner {
            command,
            process: Some(process),
            device,
            source: RunnerSource::Device,
            timing: TimingPolicy::default(),
            watchdog,
            prepared: None,
            cutoff_us: Vec::new(),
            gave_up: None,
            restarts: 0,
            measuring: None,
        })
    }

    pub fn timing(&self) -> &TimingPolicy {
        &self.timing
    }

    /// Applies from the next `prepare` or `measure`.
    pub fn set_timing(&mut self, timing: TimingPolicy) {
        self.timing = timing;
    }

    pub fn set_watchdog(&mut self, watchdog: Watchdog) {
        self.watchdog = watchdog;
    }

    /// How many times a worker was started again after the first.
    pub fn restarts(&self) -> u32 {
        self.restarts
    }

    /// The time the worker may take to time every problem once under the policy.
    fn timing_budget(&self, problems: usize) -> Duration {
        Duration::from_millis(self.timing.max_ms.saturating_mul(problems as u64))
    }

    fn measure_deadline(&self) -> Duration {
        let problems = self.prepared.as_ref().map_or(0, |(p, _, _)| p.len());
        self.timing_budget(problems) + self.watchdog.slack
    }

    fn prepare_deadline(&self, problems: usize) -> Duration {
        self.timing_budget(problems) + self.watchdog.startup
    }

    /// A running, prepared worker, starting one if needed. A measurement still running is
    /// waited for and its outcome dropped, so that answers are never taken for another's.
    fn ensure_running(&mut self) -> Result<&mut WorkerProcess, String> {
        if self.measuring.is_some() {
            let _ = self.finish_measure();
        }
        let process = match self.process.take() {
            Some(process) => process,
            None => self.start_again()?,
        };
        Ok(self.process.insert(process))
    }

    /// Up to [`MAX_START_ATTEMPTS`] restarts; after that many failures, gives up for good.
    fn start_again(&mut self) -> Result<WorkerProcess, String> {
        if let Some(reason) = &self.gave_up {
            return Err(reason.clone());
        }
        let mut last = String::new();
        for _ in 0..MAX_START_ATTEMPTS {
            match self.restart() {
                Ok(process) => {
                    self.restarts += 1;
                    return Ok(process);
                }
                Err(why) => {
                    tracing::warn!("restarting the CUDA worker failed: {why}");
                    last = why;
                }
            }
        }
        let reason = format!(
            "the CUDA worker could not be restarted ({MAX_START_ATTEMPTS} attempts in a row failed), so measuring stops; the last attempt: {last}"
        );
        self.gave_up = Some(reason.clone());
        Err(reason)
    }

    /// Starts a new child and sends it the last `Prepare`.
    fn restart(&mut self) -> Result<WorkerProcess, String> {
        let (mut process, device) = WorkerProcess::start(&mut self.command, self.watchdog.startup).map_err(|e| e.to_string())?;
        if device != self.device {
            tracing::warn!("the restarted worker reports another device: {} instead of {}", device.name, self.device.name);
        }
        if let Some((problems, baseline, harness)) = &self.prepared {
            let request = Request::Prepare { problems: problems.clone(), baseline: baseline.clone(), harness: harness.clone(), timing: self.timing.clone() };
            match process.exchange(&request, self.prepare_deadline(problems.len())) {
                Ok(Response::Prepared { .. }) => {}
                Ok(Response::Error { message }) => return Err(format!("preparing the problems again failed: {message}")),
                Ok(other) => return Err(format!("the worker answered `prepare` with {}", describe(&other))),
                Err(e) => return Err(format!("preparing the problems again failed: {e}")),
            }
        }
        Ok(process)
    }
}

impl Runner for WorkerRunner {
    fn device(&self) -> &DeviceInfo {
        &self.device
    }

    fn source(&self) -> &RunnerSource {
        &self.source
    }

    fn needs_code(&self) -> bool {
        true
    }

    fn prepare(&mut self, problems: &[Problem], baseline: &Kernel, harness: &Path) -> anyhow::Result<Vec<Timing>> {
        // A failed prepare must not be replayed on restarts.
        self.prepared = None;
        let deadline = self.prepare_deadline(problems.len());
        let request = Request::Prepare { problems: problems.to_vec(), baseline: baseline.clone(), harness: harness.to_path_buf(), timing: self.timing.clone() };
        let process = self.ensure_running().map_err(anyhow::Error::msg)?;
        let answer = process.exchange(&request, deadline);
        match answer {
            Ok(Response::Prepared { timings }) => {
                self.prepared = Some((problems.to_vec(), baseline.clone(), harness.to_path_buf()));
                Ok(timings)
            }
            other => {
                // The worker may have lost its context (it exits then): start afresh next time.
                self.process = None;
                match other {
                    Ok(Response::Error { message }) => Err(anyhow::anyhow!(message)),
                    Ok(response) => Err(anyhow::anyhow!("the worker answered `prepare` with {}", describe(&response))),
                    Err(e) => Err(anyhow::anyhow!("the worker failed while preparing the problems: {e}")),
                }
            }
        }
    }

    fn set_cutoff(&mut self, cutoff_us: Vec<f64>) {
        self.cutoff_us = cutoff_us;
    }

    fn measure(&mut self, config: &Configuration, kernel: Option<&Kernel>) -> Outcome {
        match self.start_measure(config, kernel) {
            Started::Done(outcome) => outcome,
            Started::Running => self.finish_measure(),
        }
    }

    fn start_measure(&mut self, config: &Configuration, kernel: Option<&Kernel>) -> Started {
        let failed = |kind, message| Started::Done(Outcome::Failed { kind, message });
        let Some(kernel) = kernel else {
            return failed(FailureKind::Worker, format!("the CUDA worker measures compiled code, and none was given for {config}"));
        };
        if self.prepared.is_none() {
            return failed(FailureKind::Worker, "measure was called before a successful prepare".into());
        }
        let deadline = self.measure_deadline();
        let request = Request::Measure { kernel: kernel.clone(), timing: self.timing.clone(), cutoff_us: self.cutoff_us.clone() };
        let process = match self.ensure_running() {
            Ok(process) => process,
            Err(reason) => return failed(FailureKind::Worker, reason),
        };
        if let Err(e) = process.send(&request) {
            self.process = None;
            return failed(FailureKind::Worker, format!("measuring configuration {config}: {e}"));
        }
        self.measuring = Some((config.clone(), deadline));
        Started::Running
    }

    fn finish_measure(&mut self) -> Outcome {
        let failed = |kind, message| Outcome::Failed { kind, message };
        let (Some((config, deadline)), Some(process)) = (self.measuring.take(), self.process.as_mut()) else {
            return failed(FailureKind::Worker, "no measurement is running to finish".into());
        };
        // Only a child that answered with an outcome, and did not fault, is still usable;
        // otherwise it is dead or killed, and the next measure starts a new one.
        let (outcome, usable) = match process.receive(deadline) {
            Ok(Response::Outcome { outcome }) => {
                let faulted = matches!(outcome, Outcome::Failed { kind: FailureKind::Fault, .. });
                let spilled = matches!(outcome, Outcome::Measured { verdict: Verdict::OutOfBounds { .. }, .. });
                (outcome, !faulted && !spilled)
            }
            Ok(Response::Error { message }) => (failed(FailureKind::Worker, message), false),
            Ok(other) => (failed(FailureKind::Worker, format!("the worker answered `measure` with {}", describe(&other))), false),
            Err(ExchangeError::Timeout(limit)) => {
                let message = format!(
                    "the kernel did not finish within the watchdog's limit of {:.1} s (configuration {config}); the worker was killed and is restarted",
                    limit.as_secs_f64()
                );
                (failed(FailureKind::Timeout, message), false)
            }
            Err(e) => (failed(FailureKind::Worker, format!("measuring configuration {config}: {e}")), false),
        };
        // A kernel that wrote past its buffer's guard bytes may have written into the prepared
        // problems' other buffers (the baseline's outputs, a capture's inputs): a new worker
        // prepares them afresh rather than compare later candidates with damaged data.
        if !usable {
            self.process = None;
        }
        outcome
    }

    fn check(&mut self, request: &CheckRequest) -> Check {
        let failed = |kind, message| Check::Failed { kind, message };
        // The baseline's run and each of the candidate's, each with the slack of one measure.
        let deadline = self.watchdog.slack * (request.runs.max(1) + 1);
        let process = match self.ensure_running() {
            Ok(process) => process,
            Err(reason) => return failed(FailureKind::Worker, reason),
        };
        let answer = process.exchange(&Request::Check { check: request.clone() }, deadline);
        let (check, usable) = match answer {
            Ok(Response::Checked { check }) => {
                let faulted = matches!(check, Check::Failed { kind: FailureKind::Fault, .. } | Check::BaselineFailed { kind: FailureKind::Fault, .. });
                let spilled = matches!(check, Check::Compared { verdict: Verdict::OutOfBounds { .. }, .. });
                (check, !faulted && !spilled)
            }
            Ok(Response::Error { message }) => (failed(FailureKind::Worker, message), false),
            Ok(other) => (failed(FailureKind::Worker, format!("the worker answered `check` with {}", describe(&other))), false),
            Err(ExchangeError::Timeout(limit)) => {
                let message = format!("a kernel did not finish within the watchdog's limit of {:.1} s; the worker was killed and is restarted", limit.as_secs_f64());
                (failed(FailureKind::Timeout, message), false)
            }
            Err(e) => (failed(FailureKind::Worker, format!("checking: {e}")), false),
        };
        if !usable {
            self.process = None;
        }
        check
    }

    fn settle_roles(&mut self, baseline: &Kernel) -> SettledRoles {
        // One run of the original per in-out buffer, and one more, each with the slack of a measure.
        let in_out = self.prepared.as_ref().and_then(|(problems, ..)| problems.first()).map_or(0, |p| p.leaf_args().filter(|a| matches!(a, Arg::Buffer { role: Role::InOut, .. })).count());
        let deadline = self.watchdog.slack * (in_out as u32 + 1);
        let process = match self.ensure_running() {
            Ok(process) => process,
            Err(why) => return SettledRoles::Undecided { why },
        };
        match process.exchange(&Request::SettleRoles { baseline: baseline.clone() }, deadline) {
            Ok(Response::Settled { roles }) => roles,
            other => {
                // The worker may have lost its context (it exits then): start afresh next time.
                self.process = None;
                let why = match other {
                    Ok(Response::Error { message }) => message,
                    Ok(response) => format!("the worker answered `settle_roles` with {}", describe(&response)),
                    Err(e) => format!("the worker failed while running the original again: {e}"),
                };
                SettledRoles::Undecided { why }
            }
        }
    }

    fn ceilings(&mut self, cubin: &Path) -> anyhow::Result<MeasuredCeilings> {
        // Loading the module and allocating the buffers, then well under a second of kernels.
        let deadline = self.watchdog.startup + self.watchdog.slack;
        let request = Request::Ceilings { cubin: cubin.to_path_buf() };
        let process = self.ensure_running().map_err(anyhow::Error::msg)?;
        match process.exchange(&request, deadline) {
            Ok(Response::Ceilings(measured)) => Ok(measured),
            other => {
                // The worker may have lost its context (it exits then): start afresh next time.
                self.process = None;
                match other {
                    Ok(Response::Error { message }) => Err(anyhow::anyhow!(message)),
                    Ok(response) => Err(anyhow::anyhow!("the worker answered `ceilings` with {}", describe(&response))),
                    Err(e) => Err(anyhow::anyhow!("the worker failed while measuring the device's ceilings: {e}")),
                }
            }
        }
    }
}

fn describe(response: &Response) -> String {
    match response {
        Response::Ready { .. } => "`ready`".into(),
        Response::NoDevice { message } => format!("`no_device` ({message})"),
        Response::Prepared { .. } => "`prepared`".into(),
        Response::Outcome { .. } => "an outcome".into(),
        Response::Checked { .. } => "a check".into(),
        Response::Settled { .. } => "settled roles".into(),
        Response::Ceilings(_) => "`ceilings`".into(),
        Response::Error { message } => format!("an error ({message})"),
    }
}

/// Why an exchange with the child produced no response.
#[derive(Debug)]
enum ExchangeError {
    /// No answer within the deadline; the child was killed.
    Timeout(Duration),
    /// The child's output ended (it exited or was killed); with what is known about why.
    Died(String),
    /// The child wrote something that is not a response.
    Garbage(String),
}

impl fmt::Display for ExchangeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExchangeError::Timeout(limit) => write!(f, "the worker did not answer within {:.1} s and was killed", limit.as_secs_f64()),
            ExchangeError::Died(report) => write!(f, "the worker died: {report}"),
            ExchangeError::Garbage(report) => write!(f, "the worker wrote something that is not a response: {report}"),
        }
    }
}

/// One running child. Dropping it ends the child: politely, then with SIGKILL.
struct WorkerProcess {
    child: Child,
    stdin: ChildStdin,
    /// Lines of the child's stdout, read by a thread so that waiting can time out.
    lines: Receiver<Result<Vec<u8>, String>>,
    stderr_tail: Arc<Mutex<VecDeque<String>>>,
    /// Closed when the child's stderr ends, so that a failure report has its last words.
    stderr_done: Receiver<()>,
}

impl WorkerProcess {
    /// Spawns the child and says `hello`.
    fn start(command: &mut Command, deadline: Duration) -> Result<(WorkerProcess, DeviceInfo), StartError> {
        let mut process = WorkerProcess::spawn(command).map_err(|e| {
            StartError::Failed(format!("cannot start the CUDA worker `{}`: {e}", command.get_program().to_string_lossy()))
        })?;
        match process.exchange(&Request::Hello, deadline) {
            Ok(Response::Ready { device, version }) if version == PROTOCOL_VERSION => Ok((process, device)),
            Ok(Response::Ready { version, .. }) => Err(StartError::Failed(format!(
                "the worker speaks protocol `{version}`, but this cutune speaks `{PROTOCOL_VERSION}`; they must be the same build"
            ))),
            Ok(Response::NoDevice { message }) => Err(StartError::NoDevice(message)),
            Ok(other) => Err(StartError::Failed(format!("the worker answered `hello` with {}", describe(&other)))),
            Err(e) => Err(StartError::Failed(e.to_string())),
        }
    }

    fn spawn(command: &mut Command) -> std::io::Result<WorkerProcess> {
        let mut child = command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn()?;
        let (Some(stdin), Some(stdout), Some(stderr)) = (child.stdin.take(), child.stdout.take(), child.stderr.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(std::io::Error::other("the child's standard streams were not connected"));
        };
        let pid = child.id();
        let (line_sender, lines) = mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            loop {
                let mut line = Vec::new();
                let read = (&mut reader).take(MAX_RESPONSE_BYTES).read_until(b'\n', &mut line);
                let sent = match read {
                    Ok(0) => break,
                    Ok(_) if !line.ends_with(b"\n") && line.len() as u64 == MAX_RESPONSE_BYTES => {
                        line_sender.send(Err(format!("a line of more than {MAX_RESPONSE_BYTES} bytes")))
                    }
                    Ok(_) => line_sender.send(Ok(line)),
                    Err(e) => line_sender.send(Err(format!("unreadable output: {e}"))),
                };
                if sent.is_err() {
                    break;
                }
            }
        });
        let stderr_tail = Arc::new(Mutex::new(VecDeque::new()));
        let tail = Arc::clone(&stderr_tail);
        let (done_sender, stderr_done) = mpsc::channel::<()>();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).split(b'\n').map_while(Result::ok) {
                let line = String::from_utf8_lossy(&line).trim_end().to_string();
                tracing::info!(target: "cutune::worker", pid, "{line}");
                let mut tail = tail.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
                if tail.len() == STDERR_TAIL_LINES {
                    tail.pop_front();
                }
                tail.push_back(line);
            }
            drop(done_sender);
        });
        Ok(WorkerProcess { child, stdin, lines, stderr_tail, stderr_done })
    }

    /// Sends `request` and waits up to `deadline` for its response. On any error the child is
    /// dead or killed by the time this returns.
    fn exchange(&mut self, request: &Request, deadline: Duration) -> Result<Response, ExchangeError> {
        self.send(request)?;
        self.receive(deadline)
    }

    fn send(&mut self, request: &Request) -> Result<(), ExchangeError> {
        let mut text = serde_json::to_string(request).map_err(|e| ExchangeError::Garbage(format!("cannot encode the request: {e}")))?;
        text.push('\n');
        if self.stdin.write_all(text.as_bytes()).and_then(|()| self.stdin.flush()).is_err() {
            return Err(ExchangeError::Died(self.death_report()));
        }
        Ok(())
    }

    /// Waits up to `deadline` for the response to the request sent last.
    fn receive(&mut self, deadline: Duration) -> Result<Response, ExchangeError> {
        match self.lines.recv_timeout(deadline) {
            Ok(Ok(line)) => serde_json::from_slice(&line).map_err(|e| {
                let shown: String = String::from_utf8_lossy(&line).trim_end().chars().take(200).collect();
                self.kill();
                ExchangeError::Garbage(format!("`{shown}` ({e})"))
            }),
            Ok(Err(why)) => {
                self.kill();
                Err(ExchangeError::Garbage(why))
            }
            Err(RecvTimeoutError::Timeout) => {
                self.kill();
                Err(ExchangeError::Timeout(deadline))
            }
            Err(RecvTimeoutError::Disconnected) => Err(ExchangeError::Died(self.death_report())),
        }
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// How the child ended (waiting briefly, then killing it) and its last stderr lines.
    fn death_report(&mut self) -> String {
        let waited = Instant::now();
        let status = loop {
            match self.child.try_wait() {
                Ok(Some(status)) => break status.to_string(),
                Ok(None) if waited.elapsed() < Duration::from_secs(2) => std::thread::sleep(Duration::from_millis(20)),
                _ => {
                    self.kill();
                    break "killed after it stopped answering".to_string();
                }
            }
        };
        let _ = self.stderr_done.recv_timeout(Duration::from_millis(500));
        let tail = self.stderr_tail.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if tail.is_empty() {
            format!("it ended ({status}) without a word on stderr")
        } else {
            let lines: Vec<&str> = tail.iter().map(String::as_str).collect();
            format!("it ended ({status}); its last words on stderr:\n  {}", lines.join("\n  "))
        }
    }
}

impl Drop for WorkerProcess {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.stdin.write_all(b"{\"request\":\"shutdown\"}\n").and_then(|()| self.stdin.flush());
            let asked = Instant::now();
            while asked.elapsed() < Duration::from_secs(1) {
                if let Ok(Some(_)) = self.child.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            self.kill();
        }
    }
}


#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use super::*;
    use crate::gpu::{LaunchDims, Module, Verdict};

    /// A runner on `tests/fixtures/fake_worker.py`; the log lists each request the fakes read.
    fn fake(mode: &str, test: &str) -> (Result<WorkerRunner, StartError>, PathBuf) {
        let log = std::env::temp_dir().join(format!("cutune-fake-worker-{}-{test}.log", std::process::id()));
        let _ = std::fs::remove_file(&log);
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/fake_worker.py");
        let mut command = Command::new("python3");
        command.arg(script).args(["--mode", mode, "--log"]).arg(&log);
        let runner = WorkerRunner::start_command(command).map(|mut runner| {
            runner.set_watchdog(Watchdog { startup: Duration::from_secs(20), slack: Duration::from_secs(1) });
            runner.set_timing(TimingPolicy { max_ms: 0, ..TimingPolicy::default() });
            runner
        });
        (runner, log)
    }

    /// How many times the fakes read each request kind.
    fn count(log: &Path, request: &str) -> usize {
        std::fs::read_to_string(log).unwrap_or_default().lines().filter(|l| l.split(' ').nth(1) == Some(request)).count()
    }

    fn kernel(function: &str) -> Kernel {
        Kernel {
            module: Module { cubin: "/cache/k.cubin".into(), function: function.into() },
            launches: vec![LaunchDims { grid: [8, 1, 1], block: [256, 1, 1], shared_bytes: 0, cooperative: false }; 2],
        }
    }

    fn problems() -> Vec<Problem> {
        ["rows=8", "rows=4095"].map(|label| Problem { label: label.into(), args: vec![], seed: 1 }).to_vec()
    }

    fn config() -> Configuration {
        Configuration(vec![("BLOCK".into(), 256)])
    }

    fn prepared(mode: &str, test: &str) -> (WorkerRunner, PathBuf) {
        let (runner, log) = fake(mode, test);
        let mut runner = runner.unwrap();
        let timings = runner.prepare(&problems(), &kernel("baseline"), Path::new("/tmp/harness.cubin")).unwrap();
        assert_eq!(timings.len(), 2);
        (runner, log)
    }

    fn assert_measures(runner: &mut WorkerRunner) {
        match runner.measure(&config(), Some(&kernel("good"))) {
            Outcome::Measured { timings, verdict } => {
                assert_eq!(timings.len(), 2);
                assert_eq!(timings[0].median_us, 80.0);
                assert!(matches!(verdict, Verdict::Pass { .. }));
            }
            other => panic!("{other:?}"),
        }
    }

    fn failure(outcome: Outcome) -> (FailureKind, String) {
        match outcome {
            Outcome::Failed { kind, message } => (kind, message),
            other => panic!("expected a failure, got {other:?}"),
        }
    }

    #[test]
    fn a_normal_worker_reports_its_device_and_measures() {
        let (mut runner, log) = prepared("normal", "normal");
        assert_eq!(runner.device().name, "NVIDIA H100 80GB HBM3");
        assert_eq!(runner.device().arch(), "sm_90");
        assert_eq!(runner.source(), &RunnerSource::Device);
        assert!(runner.needs_code());
        assert_measures(&mut runner);
        assert_measures(&mut runner);
        assert_eq!((count(&log, "start"), count(&log, "prepare"), count(&log, "measure")), (1, 1, 2));
        drop(runner);
        assert_eq!(count(&log, "shutdown"), 1, "dropping the runner asks the worker to shut down");
    }

    #[test]
    fn a_hung_kernel_times_out_and_the_worker_restarts_prepared() {
        let (mut runner, log) = prepared("normal", "hang");
        let started = Instant::now();
        let (kind, message) = failure(runner.measure(&config(), Some(&kernel("hang"))));
        assert_eq!(kind, FailureKind::Timeout);
        assert!(message.contains("watchdog's limit of 1.0 s (configuration BLOCK=256)"), "{message}");
        assert!(started.elapsed() < Duration::from_secs(10));
        assert_measures(&mut runner);
        assert_eq!((count(&log, "start"), count(&log, "prepare")), (2, 2), "the new worker was prepared again");
        assert_eq!(runner.restarts(), 1);
    }

    #[test]
    fn a_crash_is_a_worker_failure_with_the_last_words() {
        let (mut runner, log) = prepared("normal", "crash");
        let (kind, message) = failure(runner.measure(&config(), Some(&kernel("crash"))));
        assert_eq!(kind, FailureKind::Worker);
        assert!(message.contains("exit status: 3"), "{message}");
        assert!(message.contains("fake worker: crashing on purpose"), "{message}");
        assert_measures(&mut runner);
        assert_eq!(count(&log, "prepare"), 2);
    }

    #[test]
    fn a_fault_keeps_the_workers_words_and_restarts() {
        let (mut runner, log) = prepared("normal", "fault");
        let (kind, message) = failure(runner.measure(&config(), Some(&kernel("fault"))));
        assert_eq!(kind, FailureKind::Fault);
        assert!(message.contains("CUDA_ERROR_ILLEGAL_ADDRESS"), "{message}");
        assert_measures(&mut runner);
        assert_eq!(count(&log, "prepare"), 2);
    }

    /// Past its guard bytes, a kernel may have written over the prepared problems' other
    /// buffers: the next candidate is measured by a new worker, prepared afresh.
    #[test]
    fn a_write_past_a_buffer_is_reported_and_the_worker_prepared_again() {
        let (mut runner, log) = prepared("normal", "spill");
        match runner.measure(&config(), Some(&kernel("spill"))) {
            Outcome::Measured { verdict: Verdict::OutOfBounds { arg, .. }, .. } => assert_eq!(arg, "out"),
            other => panic!("{other:?}"),
        }
        assert_measures(&mut runner);
        assert_eq!((count(&log, "start"), count(&log, "prepare")), (2, 2), "the new worker was prepared again");
    }

    #[test]
    fn garbage_output_is_a_worker_failure() {
        let (mut runner, log) = prepared("normal", "garbage");
        let (kind, message) = failure(runner.measure(&config(), Some(&kernel("garbage"))));
        assert_eq!(kind, FailureKind::Worker);
        assert!(message.contains("`Segmentation fault (core dumped)`"), "{message}");
        assert_measures(&mut runner);
        assert_eq!(count(&log, "prepare"), 2);
    }

    #[test]
    fn no_device_is_a_start_error_in_words() {
        let (runner, _log) = fake("no-device", "no-device");
        assert_eq!(runner.err(), Some(StartError::NoDevice("fake: no CUDA driver found".into())));
    }

    #[test]
    fn repeated_failed_restarts_stop_measuring_with_a_reason() {
        let (mut runner, log) = prepared("fails-after-start", "give-up");
        let (kind, _) = failure(runner.measure(&config(), Some(&kernel("crash"))));
        assert_eq!(kind, FailureKind::Worker);
        let (kind, message) = failure(runner.measure(&config(), Some(&kernel("good"))));
        assert_eq!(kind, FailureKind::Worker);
        assert!(message.contains("could not be restarted (3 attempts in a row failed)"), "{message}");
        assert!(message.contains("refusing to start again"), "{message}");
        assert_eq!(count(&log, "start"), 4);
        // No more attempts after giving up.
        let (_, again) = failure(runner.measure(&config(), Some(&kernel("good"))));
        assert_eq!(again, message);
        assert_eq!(count(&log, "start"), 4);
    }

    #[test]
    fn measuring_needs_a_prepare_and_code() {
        let (runner, _log) = fake("normal", "order");
        let mut runner = runner.unwrap();
        let (kind, message) = failure(runner.measure(&config(), Some(&kernel("good"))));
        assert_eq!(kind, FailureKind::Worker);
        assert!(message.contains("before a successful prepare"), "{message}");
        runner.prepare(&problems(), &kernel("baseline"), Path::new("/tmp/harness.cubin")).unwrap();
        let (_, message) = failure(runner.measure(&config(), None));
        assert!(message.contains("none was given for BLOCK=256"), "{message}");
    }

    fn check_of(candidate: &str, baseline: &str, runs: u32) -> CheckRequest {
        CheckRequest {
            problems: problems()[..1].to_vec(),
            baseline: Kernel { launches: vec![LaunchDims { grid: [8, 1, 1], block: [256, 1, 1], shared_bytes: 0, cooperative: false }], ..kernel(baseline) },
            candidate: Kernel { launches: vec![LaunchDims { grid: [8, 1, 1], block: [512, 1, 1], shared_bytes: 0, cooperative: false }], ..kernel(candidate) },
            harness: "/tmp/harness.cubin".into(),
            runs,
            bitwise: true,
        }
    }

    #[test]
    fn a_started_measurement_is_finished_or_drained_before_the_next_request() {
        let (mut runner, log) = prepared("normal", "overlap");
        assert!(matches!(runner.start_measure(&config(), Some(&kernel("good"))), Started::Running));
        match runner.finish_measure() {
            Outcome::Measured { timings, .. } => assert_eq!(timings[0].median_us, 80.0),
            other => panic!("{other:?}"),
        }
        let (kind, message) = failure(runner.finish_measure());
        assert_eq!((kind, message.as_str()), (FailureKind::Worker, "no measurement is running to finish"));
        // A check asked for while a measurement runs gets its own answer, not the measurement's.
        assert!(matches!(runner.start_measure(&config(), Some(&kernel("good"))), Started::Running));
        assert!(matches!(runner.check(&check_of("good", "baseline", 1)), Check::Compared { .. }));
        assert_measures(&mut runner);
        assert_eq!((count(&log, "measure"), count(&log, "check")), (3, 1));
    }

    #[test]
    fn a_started_measurement_that_hangs_is_a_timeout_when_finished() {
        let (mut runner, _log) = prepared("normal", "overlap-hang");
        assert!(matches!(runner.start_measure(&config(), Some(&kernel("hang"))), Started::Running));
        let (kind, message) = failure(runner.finish_measure());
        assert_eq!(kind, FailureKind::Timeout);
        assert!(message.contains("configuration BLOCK=256"), "{message}");
        assert_measures(&mut runner);
    }

    #[test]
    fn checks_are_labelled_and_leave_the_prepared_problems_alone() {
        use crate::verify::Finding;
        let (mut runner, log) = prepared("normal", "checks");
        let label = |check: Check| match check {
            Check::Compared { verdict, repeats } => Finding::of_repeats(&repeats, true).or_else(|| Finding::of_verdict(&verdict)).map(|f| f.label()),
            other => panic!("{other:?}"),
        };
        assert_eq!(label(runner.check(&check_of("good", "baseline", 3))), None);
        assert_eq!(label(runner.check(&check_of("racy", "baseline", 3))), Some("non-deterministic"));
        assert_eq!(label(runner.check(&check_of("stale-shared", "baseline", 3))), Some("reads unwritten shared memory"));
        match runner.check(&check_of("good", "fault", 1)) {
            Check::BaselineFailed { kind: FailureKind::Fault, message } => assert!(message.contains("ILLEGAL_ADDRESS"), "{message}"),
            other => panic!("{other:?}"),
        }
        match runner.check(&check_of("fault", "baseline", 1)) {
            Check::Failed { kind: FailureKind::Fault, .. } => {}
            other => panic!("{other:?}"),
        }
        match runner.check(&check_of("hang", "baseline", 1)) {
            Check::Failed { kind: FailureKind::Timeout, message } => assert!(message.contains("watchdog"), "{message}"),
            other => panic!("{other:?}"),
        }
        // Each lost worker was replaced, with the tuning problems prepared again, and measuring
        // goes on.
        assert!(matches!(runner.measure(&config(), Some(&kernel("good"))), Outcome::Measured { .. }));
        assert_eq!((count(&log, "check"), count(&log, "prepare")), (6, 4));
    }

    /// Problems with the in-out buffers `out` and `acc` and the input `x`.
    fn problems_with_buffers() -> Vec<Problem> {
        use crate::spec::{Dtype, Init, Tolerance};
        let buffer = |name: &str, role| Arg::Buffer {
            name: name.into(),
            dtype: Dtype::F32,
            length: 1024,
            role,
            init: Init::Uniform { low: -1.0, high: 1.0 },
            tolerance: Tolerance { dtype: Dtype::F32, atol: 1e-5, rtol: 1e-5 },
            data: None,
            compare: Default::default(),
        };
        let args = vec![buffer("out", Role::InOut), buffer("acc", Role::InOut), buffer("x", Role::Input)];
        vec![Problem { label: "n=1024".into(), args, seed: 1 }]
    }

    #[test]
    fn roles_are_settled_on_the_prepared_problems_and_a_fault_leaves_them_undecided() {
        let (runner, log) = fake("normal", "settle");
        let mut runner = runner.unwrap();
        let launch = LaunchDims { grid: [4, 1, 1], block: [256, 1, 1], shared_bytes: 0, cooperative: false };
        let baseline = |function: &str| Kernel { launches: vec![launch.clone()], ..kernel(function) };
        runner.prepare(&problems_with_buffers(), &baseline("baseline"), Path::new("/tmp/harness.cubin")).unwrap();
        assert_eq!(runner.settle_roles(&baseline("baseline")), SettledRoles::WrittenOnly { buffers: vec!["out".into()] });
        match runner.settle_roles(&baseline("racy")) {
            SettledRoles::Undecided { why } => assert!(why.contains("second run"), "{why}"),
            other => panic!("{other:?}"),
        }
        match runner.settle_roles(&baseline("fault")) {
            SettledRoles::Undecided { why } => assert!(why.contains("ILLEGAL_ADDRESS"), "{why}"),
            other => panic!("{other:?}"),
        }
        // The lost worker was replaced, with the problems prepared again.
        assert_eq!(runner.settle_roles(&baseline("baseline")), SettledRoles::WrittenOnly { buffers: vec!["out".into()] });
        assert_eq!((count(&log, "settle_roles"), count(&log, "start"), count(&log, "prepare")), (4, 2, 2));
    }

    #[test]
    fn ceilings_are_measured_by_the_worker_and_a_lost_context_restarts_it() {
        let (mut runner, log) = prepared("normal", "ceilings");
        let measured = runner.ceilings(Path::new("/tmp/ceilings.cubin")).unwrap();
        assert_eq!((measured.copy_gbs, measured.fp32_tflops, measured.fp16_tflops), (3001.0, 60.0, 120.0));
        assert_eq!(measured.copy_times.len(), 2);
        assert_eq!((measured.copy_times[1].bytes, measured.copy_times[1].us), (2147483648.0, 715.5));
        assert_measures(&mut runner);
        let error = runner.ceilings(Path::new("/tmp/fault/ceilings.cubin")).unwrap_err().to_string();
        assert!(error.contains("CUDA_ERROR_ILLEGAL_ADDRESS"), "{error}");
        assert_measures(&mut runner);
        assert_eq!((count(&log, "ceilings"), count(&log, "start"), count(&log, "prepare")), (2, 2, 2), "restarted and prepared again");
    }

    #[test]
    fn a_hung_ceilings_measurement_times_out() {
        let (runner, _log) = fake("normal", "ceilings-hang");
        let mut runner = runner.unwrap();
        runner.set_watchdog(Watchdog { startup: Duration::from_secs(1), slack: Duration::from_secs(1) });
        let started = Instant::now();
        let error = runner.ceilings(Path::new("/tmp/hang/ceilings.cubin")).unwrap_err().to_string();
        assert!(error.contains("did not answer within 2.0 s and was killed"), "{error}");
        assert!(started.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn the_runner_can_move_to_another_thread() {
        fn assert_send<T: Send>() {}
        assert_send::<WorkerRunner>();
    }

    #[test]
    fn a_missing_executable_is_a_start_failure() {
        let result = WorkerRunner::start_command(Command::new("/nonexistent/cutune"));
        match result.err() {
            Some(StartError::Failed(message)) => assert!(message.contains("cannot start the CUDA worker `/nonexistent/cutune`"), "{message}"),
            other => panic!("{other:?}"),
        }
    }
}
