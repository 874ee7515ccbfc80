//! `cutune doctor` through the real binary: it must find pip's NVRTC (installed by
//! `scripts/test`), compile its probe, and fail plainly, not panic, when NVRTC is missing.

use std::process::{Command, Output};

fn doctor(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cutune")).arg("doctor").args(args).output().expect("run cutune doctor")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn doctor_reports_nvrtc_and_compiles_the_probe() {
    let output = doctor(&[]);
    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert!(
        output.status.success(),
        "cutune doctor failed; these tests need NVRTC: run `scripts/test` or set CUTUNE_NVRTC.\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains("\nNVRTC: 1"), "{stdout}");
    assert!(stdout.contains("  library: /"), "{stdout}");
    assert!(stdout.contains("  headers: /"), "{stdout}");
    assert!(stdout.contains("  test compile: sm_"), "{stdout}");
    assert!(stdout.contains("_Z12doctor_probeILi256EEvP6__halfPKS0_i: "), "{stdout}");
    assert!(stdout.starts_with("CUDA driver: "), "{stdout}");
}

#[test]
fn doctor_fails_plainly_when_nvrtc_is_missing() {
    let output = doctor(&["--nvrtc", "/nonexistent/libnvrtc.so"]);
    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert_eq!(output.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(stdout.contains("NVRTC: not found"), "{stdout}");
    assert!(stdout.contains("explicit path: /nonexistent/libnvrtc.so: no such file"), "{stdout}");
    assert!(stdout.contains("pip install nvidia-cuda-nvrtc-cu12 nvidia-cuda-runtime-cu12"), "{stdout}");
    assert!(stderr.contains("error: NVRTC is not usable, so cutune cannot compile kernels"), "{stderr}");
}
