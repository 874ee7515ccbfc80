//! `WorkerRunner` on a real GPU: faults, hangs and restarts through the client, as the tuning
//! loop sees them. Skipped unless CUTUNE_SMOKE_CUBIN names the cubin that
//! tests/gpu/worker_smoke.sh builds; that script runs this test when WORKER_GPU_TEST names its
//! binary (`cargo test --test worker_gpu --no-run` prints the path).

use std::process::Command;
use std::time::Duration;

use cutune::gpu::client::{Watchdog, WorkerRunner};
use cutune::gpu::protocol::TimingPolicy;
use cutune::gpu::{Arg, FailureKind, Kernel, LaunchDims, Module, Outcome, Problem, Runner, Verdict};
use cutune::space::Configuration;
use cutune::spec::{Dtype, Init, Role};

const SIZES: [u64; 2] = [1 << 22, 1_000_003];

fn buffer(name: &str, n: u64, role: Role) -> Arg {
    Arg::Buffer {
        name: name.into(),
        dtype: Dtype::F32,
        length: n,
        role,
        init: Init::Uniform { low: -1.0, high: 1.0 },
        tolerance: Dtype::F32.default_tolerance(),
        data: None,
        compare: Default::default(),
    }
}

fn problems() -> Vec<Problem> {
    SIZES
        .iter()
        .map(|&n| Problem {
            label: format!("n={n}"),
            seed: 7,
            args: vec![
                buffer("out", n, Role::Output),
                buffer("in", n, Role::Input),
                Arg::Scalar { name: "n".into(), dtype: Dtype::I32, value: n as f64 },
                Arg::Scalar { name: "k".into(), dtype: Dtype::F32, value: 2.5 },
            ],
        })
        .collect()
}

fn kernel(cubin: &str, function: &str) -> Kernel {
    let launches = SIZES.iter().map(|&n| LaunchDims { grid: [n.div_ceil(256) as u32, 1, 1], block: [256, 1, 1], shared_bytes: 0, cooperative: false }).collect();
    Kernel { module: Module { cubin: cubin.into(), function: function.into() }, launches }
}

fn kind(outcome: &Outcome) -> Option<FailureKind> {
    match outcome {
        Outcome::Failed { kind, .. } => Some(*kind),
        Outcome::Measured { .. } => None,
    }
}

fn passes(outcome: &Outcome) -> bool {
    matches!(outcome, Outcome::Measured { verdict: Verdict::Pass { .. }, .. })
}

#[test]
fn the_client_labels_faults_and_hangs_and_goes_on() {
    let Ok(cubin) = std::env::var("CUTUNE_SMOKE_CUBIN") else { return };
    let cutune = std::env::var("CUTUNE").unwrap_or_else(|_| env!("CARGO_BIN_EXE_cutune").to_string());
    let mut command = Command::new(cutune);
    command.args(["worker", "--device", "0"]);
    let mut runner = WorkerRunner::start_command(command).expect("a worker on the GPU");
    runner.set_timing(TimingPolicy { max_ms: 200, ..TimingPolicy::default() });
    runner.set_watchdog(Watchdog { startup: Duration::from_secs(60), slack: Duration::from_secs(3) });
    let harness = std::env::var("CUTUNE_HARNESS_CUBIN").expect("tests/gpu/worker_smoke.sh sets CUTUNE_HARNESS_CUBIN with CUTUNE_SMOKE_CUBIN");
    let harness = std::path::PathBuf::from(harness);
    let timings = runner.prepare(&problems(), &kernel(&cubin, "scale"), &harness).expect("prepared");
    assert_eq!(timings.len(), 2);
    let config = Configuration(vec![("VARIANT".into(), 1)]);

    let outcome = runner.measure(&config, Some(&kernel(&cubin, "scale_strided")));
    assert!(passes(&outcome), "{outcome:?}");
    let outcome = runner.measure(&config, Some(&kernel(&cubin, "scale_wrong")));
    assert!(matches!(outcome, Outcome::Measured { verdict: Verdict::Mismatch { index: 1234, .. }, .. }), "{outcome:?}");

    let outcome = runner.measure(&config, Some(&kernel(&cubin, "scale_oob")));
    assert_eq!(kind(&outcome), Some(FailureKind::Fault), "{outcome:?}");
    let outcome = runner.measure(&config, Some(&kernel(&cubin, "scale")));
    assert!(passes(&outcome), "after the fault: {outcome:?}");

    let outcome = runner.measure(&config, Some(&kernel(&cubin, "scale_hang")));
    assert_eq!(kind(&outcome), Some(FailureKind::Timeout), "{outcome:?}");
    let outcome = runner.measure(&config, Some(&kernel(&cubin, "scale")));
    assert!(passes(&outcome), "after the timeout: {outcome:?}");
    assert_eq!(runner.restarts(), 2);
}
