//! `cutune worker` through the real binary on a machine without a GPU (CI): it answers `hello`
//! with `no_device` and the reason in words, exits cleanly on `shutdown`, and the client turns
//! that into a `StartError::NoDevice`. On a GPU machine, tests/gpu/worker_smoke.sh covers it.

use std::io::Write;
use std::process::{Command, Stdio};

use cutune::gpu::client::{StartError, WorkerRunner};
use cutune::gpu::protocol::Response;
use cutune::gpu::worker::NO_DRIVER;

fn driver_present() -> bool {
    // SAFETY: only tries to dlopen the driver library.
    unsafe { cudarc::driver::sys::is_culib_present() }
}

fn worker_command() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_cutune"));
    command.args(["worker", "--device", "0"]);
    command
}

#[test]
fn the_worker_answers_hello_with_no_device_and_exits_on_shutdown() {
    if driver_present() {
        return;
    }
    let mut child = worker_command().stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("start cutune worker");
    child.stdin.take().unwrap().write_all(b"{\"request\":\"hello\"}\n{\"request\":\"shutdown\"}\n").unwrap();
    let output = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(stderr.is_empty(), "nothing to complain about: {stderr}");
    let responses: Vec<Response> = stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(responses, vec![Response::NoDevice { message: NO_DRIVER.to_string() }]);
}

#[test]
fn starting_a_runner_without_a_gpu_is_a_no_device_error() {
    if driver_present() {
        return;
    }
    match WorkerRunner::start_command(worker_command()) {
        Err(StartError::NoDevice(message)) => {
            assert_eq!(message, NO_DRIVER);
            assert!(message.contains("recorded results and replays still work"));
        }
        Err(other) => panic!("{other}"),
        Ok(_) => panic!("a worker started without a GPU"),
    }
}

#[test]
fn the_hidden_subcommand_stays_out_of_help() {
    let output = Command::new(env!("CARGO_BIN_EXE_cutune")).arg("--help").output().unwrap();
    assert!(!String::from_utf8_lossy(&output.stdout).contains("worker"));
}
