//! The `cutune worker` process: owns the CUDA context and answers the tuner's requests (see
//! [`crate::gpu::protocol`] and `docs/worker.md`).
//!
//! A kernel that faults leaves the context unusable, so the worker answers that request and
//! exits; the client starts a new one. A kernel that hangs is killed by the client's watchdog.
//! Everything that needs no GPU (data, comparison, statistics) lives in its own module and is
//! tested without one.

mod ceilings;
pub mod compare;
mod cuda;
pub mod data;
mod device;
mod harness;
mod modules;
mod session;
pub mod stats;

use std::io::{BufRead, Write};
use std::panic::{catch_unwind, AssertUnwindSafe};

use anyhow::{anyhow, Context as _};

pub use device::{probe, NO_DRIVER};

use super::protocol::{Request, Response, PROTOCOL_VERSION};
use super::{FailureKind, Outcome};
use device::Gpu;
use harness::Harness;
use modules::Modules;
use session::Session;

/// Answers requests read from `input` on `output` until `Shutdown` or the end of `input`.
/// Returns an error when the CUDA context was lost (after answering the request that lost it)
/// or when `output` is closed; the process should then exit.
pub fn serve(ordinal: u32, mut input: impl BufRead, mut output: impl Write) -> anyhow::Result<()> {
    let mut worker = Worker { ordinal, session: None, modules: Modules::default(), gpu: None };
    loop {
        let mut line = Vec::new();
        if input.read_until(b'\n', &mut line).context("cannot read the next request")? == 0 {
            return Ok(());
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let (response, lost) = match serde_json::from_slice::<Request>(&line) {
            Ok(request) => match catch_unwind(AssertUnwindSafe(|| worker.handle(request))) {
                Ok(Some(answer)) => answer,
                Ok(None) => return Ok(()),
                Err(panic) => {
                    let message = panic
                        .downcast_ref::<String>()
                        .map(String::as_str)
                        .or_else(|| panic.downcast_ref::<&str>().copied())
                        .unwrap_or("no message");
                    let message = format!("the worker hit an internal error and restarts: {message}");
                    (Response::Error { message: message.clone() }, Some(message))
                }
            },
            Err(e) => {
                let message = format!("the worker cannot read this request ({e}): {}", String::from_utf8_lossy(&line).trim_end());
                (Response::Error { message }, None)
            }
        };
        let mut text = serde_json::to_string(&response).context("cannot encode a response")?;
        text.push('\n');
        output.write_all(text.as_bytes()).and_then(|()| output.flush()).context("the tuner closed the worker's output")?;
        if let Some(reason) = lost {
            // Freeing device memory or unloading modules in a lost context only fails, and
            // might block: leave all of it to the process exit.
            std::mem::forget(worker);
            return Err(anyhow!(reason));
        }
    }
}

/// The worker's state. Fields drop in order: the session's buffers and the loaded modules
/// before the context.
struct Worker {
    ordinal: u32,
    session: Option<Session>,
    modules: Modules,
    gpu: Option<Gpu>,
}

impl Worker {
    /// The response, and the reason the worker must exit after sending it, if it must;
    /// `None` for `Shutdown`.
    fn handle(&mut self, request: Request) -> Option<(Response, Option<String>)> {
        let answer = match request {
            Request::Shutdown => return None,
            Request::Hello => {
                let gpu = match self.gpu.take() {
                    Some(gpu) => gpu,
                    None => match Gpu::open(self.ordinal) {
                        Ok(gpu) => gpu,
                        Err(message) => return Some((Response::NoDevice { message }, None)),
                    },
                };
                let device = gpu.info.clone();
                self.gpu = Some(gpu);
                (Response::Ready { device, version: PROTOCOL_VERSION.to_string() }, None)
            }
            Request::Prepare { problems, baseline, harness, timing } => {
                let Some(gpu) = &self.gpu else { return Some((no_device(), None)) };
                if let Err(why) = timing.check() {
                    return Some((Response::Error { message: why }, None));
                }
                // Free the previous problems before allocating the new ones.
                self.session = None;
                let harness = match Harness::load(&harness, &mut self.modules, gpu.info.multiprocessors, gpu.info.shared_bytes_per_block_optin) {
                    Ok(harness) => harness,
                    Err(message) => return Some((Response::Error { message }, None)),
                };
                match Session::prepare(gpu, &mut self.modules, &problems, &baseline, harness, &timing) {
                    Ok((session, timings)) => {
                        self.session = Some(session);
                        (Response::Prepared { timings }, None)
                    }
                    Err(failure) => {
                        let message = format!("the baseline kernel could not be run: {}", failure.message);
                        let lost = (failure.kind == FailureKind::Fault).then(|| message.clone());
                        (Response::Error { message }, lost)
                    }
                }
            }
            Request::Measure { kernel, timing, cutoff_us } => {
                let outcome = match (&self.gpu, &self.session, timing.check()) {
                    (_, _, Err(why)) => Outcome::Failed { kind: FailureKind::Worker, message: why },
                    (Some(gpu), Some(session), Ok(())) => session.measure(gpu, &mut self.modules, &kernel, &timing, &cutoff_us),
                    _ => Outcome::Failed {
                        kind: FailureKind::Worker,
                        message: "the worker was asked to measure before it prepared any problems".into(),
                    },
                };
                let lost = match &outcome {
                    Outcome::Failed { kind: FailureKind::Fault, message } => Some(message.clone()),
                    _ => None,
                };
                (Response::Outcome { outcome }, lost)
            }
            Request::Check { check } => {
                let Some(gpu) = &self.gpu else { return Some((no_device(), None)) };
                let harness = match Harness::load(&check.harness, &mut self.modules, gpu.info.multiprocessors, gpu.info.shared_bytes_per_block_optin) {
                    Ok(harness) => harness,
                    Err(message) => return Some((Response::Error { message }, None)),
                };
                let (check, lost) = Session::check(gpu, &mut self.modules, &check, harness);
                let lost = match (&check, lost) {
                    (crate::gpu::Check::Failed { message, .. } | crate::gpu::Check::BaselineFailed { message, .. }, true) => Some(message.clone()),
                    _ => None,
                };
                (Response::Checked { check }, lost)
            }
            Request::SettleRoles { baseline } => match (&self.gpu, &self.session) {
                (Some(gpu), Some(session)) => match session.settle_roles(gpu, &mut self.modules, &baseline) {
                    Ok(roles) => (Response::Settled { roles }, None),
                    Err(failure) => {
                        let message = format!("running the original again to settle the buffers' roles: {}", failure.message);
                        let lost = (failure.kind == FailureKind::Fault).then(|| message.clone());
                        (Response::Error { message }, lost)
                    }
                },
                (None, _) => return Some((no_device(), None)),
                (_, None) => (Response::Error { message: "the worker was asked to settle roles before it prepared any problems".into() }, None),
            },
            Request::Ceilings { cubin } => {
                let Some(gpu) = &self.gpu else { return Some((no_device(), None)) };
                match ceilings::measure(gpu, &cubin) {
                    Ok(measured) => (Response::Ceilings(measured), None),
                    Err(failed) => {
                        let message = format!("measuring the device's ceilings failed: {}", failed.message);
                        let lost = failed.lost.then(|| message.clone());
                        (Response::Error { message }, lost)
                    }
                }
            }
        };
        Some(answer)
    }
}

fn no_device() -> Response {
    Response::Error { message: "the worker has no device open: it answers `hello` first, and only measures on a GPU".into() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exchange(input: &str) -> (anyhow::Result<()>, Vec<Response>) {
        let mut output = Vec::new();
        let result = serve(0, input.as_bytes(), &mut output);
        let responses = String::from_utf8(output).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        (result, responses)
    }

    #[test]
    fn bad_requests_are_answered_and_the_worker_goes_on() {
        let (result, responses) = exchange("this is not json\n\n{\"request\":\"measure\"}\n{\"request\":\"shutdown\"}\n{\"request\":\"hello\"}\n");
        assert!(result.is_ok());
        assert_eq!(responses.len(), 2, "blank lines are skipped and nothing is read after shutdown: {responses:?}");
        for response in responses {
            match response {
                Response::Error { message } => assert!(message.contains("cannot read this request"), "{message}"),
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn measuring_before_preparing_is_a_worker_failure() {
        let request = serde_json::to_string(&Request::Measure {
            kernel: crate::gpu::Kernel {
                module: crate::gpu::Module { cubin: "/nonexistent.cubin".into(), function: "k".into() },
                launches: vec![],
            },
            timing: Default::default(),
            cutoff_us: vec![],
        })
        .unwrap();
        let (result, responses) = exchange(&format!("{request}\n"));
        assert!(result.is_ok());
        match &responses[..] {
            [Response::Outcome { outcome: Outcome::Failed { kind: FailureKind::Worker, message } }] => {
                assert!(message.contains("before it prepared"), "{message}")
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn ceilings_before_hello_say_there_is_no_device() {
        let (result, responses) = exchange("{\"request\":\"ceilings\",\"cubin\":\"/nonexistent.cubin\"}\n");
        assert!(result.is_ok());
        match &responses[..] {
            [Response::Error { message }] => assert!(message.contains("has no device open"), "{message}"),
            other => panic!("{other:?}"),
        }
    }

    /// On machines without a driver (CI), `hello` is answered with the reason, not a panic.
    #[test]
    fn hello_without_a_driver_says_no_device() {
        // SAFETY: only tries to dlopen the driver library.
        if unsafe { cudarc::driver::sys::is_culib_present() } {
            return; // a GPU machine: covered by tests/gpu/worker_smoke.sh
        }
        let (result, responses) = exchange("{\"request\":\"hello\"}\n");
        assert!(result.is_ok());
        assert_eq!(responses, vec![Response::NoDevice { message: NO_DRIVER.to_string() }]);
        assert_eq!(probe(), Err(NO_DRIVER.to_string()));
    }
}
