//! `cutune doctor`: is this machine able to compile (NVRTC) and to measure (CUDA driver, GPU)?

use std::fmt::Write;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Result};

use crate::compile::{CompileRequest, Nvrtc};
use crate::gpu::DeviceInfo;

#[derive(clap::Args)]
pub struct DoctorArgs {
    /// The NVRTC library (or a directory holding it) to use instead of searching; overrides CUTUNE_NVRTC.
    #[arg(long, value_name = "PATH")]
    pub nvrtc: Option<PathBuf>,
}

/// A kernel that exercises what real kernels need: the CUDA headers, a template instantiation
/// by name expression, shared memory and ptxas' resource report. Each thread writes its
/// neighbour's element through shared memory; pairs never straddle a block (BLOCK is even), so
/// every block size gives the same output and the tiny tune can check them against each other.
pub(crate) const PROBE_SOURCE: &str = r#"#include <cuda_fp16.h>
template <int BLOCK>
__global__ void doctor_probe(__half* out, const __half* in, int n) {
    __shared__ float tile[BLOCK];
    int i = blockIdx.x * BLOCK + threadIdx.x;
    tile[threadIdx.x] = i < n ? __half2float(in[i]) : 0.0f;
    __syncthreads();
    int j = i ^ 1;
    if (j < n) out[j] = __float2half(tile[threadIdx.x ^ 1] * 2.0f);
}
"#;

/// The tiny tune's spec: four block sizes of the probe kernel on an odd-sized problem.
pub(crate) fn probe_spec() -> String {
    format!(
        r#"version = 1
source = "doctor_probe.cu"

[[kernels]]
name = "doctor_probe"
template_args = ["BLOCK"]
grid = ["(n + BLOCK - 1) // BLOCK"]
block = ["BLOCK"]

[[kernels.shapes]]
n = 4194305

[[kernels.args]]
name = "out"
dtype = "f16"
length = "n"
role = "output"

[[kernels.args]]
name = "in"
dtype = "f16"
length = "n"
role = "input"
init = {{ dist = "uniform", low = -1.0, high = 1.0 }}

[[kernels.args]]
name = "n"
dtype = "i32"
value = "n"

[[kernels.params]]
name = "BLOCK"
kind = "template"
default = 256
values = [64, 128, 256, 512]

[kernels.baseline]
sha256 = "{}"
source = '''
{}'''
"#,
        crate::spec::sha256_hex(PROBE_SOURCE),
        PROBE_SOURCE
    )
}

/// Prints the report; fails (non-zero exit) when NVRTC cannot compile the probe kernel, or when
/// a GPU is present and the tiny tune fails on it.
pub fn run(args: &DoctorArgs) -> Result<()> {
    let mut report = String::new();
    let devices = check_driver(&mut report);
    let nvrtc = check_nvrtc(args, devices.first().map(|d| d.arch()), &mut report);
    print!("{report}");
    let nvrtc = match nvrtc {
        Ok(nvrtc) => nvrtc,
        Err(why) => bail!("NVRTC is not usable, so cutune cannot compile kernels: {why}"),
    };
    let Some(device) = devices.first() else {
        println!("tiny tune: skipped, no CUDA device");
        return Ok(());
    };
    match tiny_tune(&nvrtc, device.ordinal) {
        Ok(line) => println!("tiny tune: {line}"),
        Err(why) => bail!("tiny tune on device {}: {why:#}", device.ordinal),
    }
    Ok(())
}

/// Tunes the probe kernel's block size on `device` for real (worker, NVRTC, timing, comparison
/// with the default), in a temporary workspace that is removed afterwards.
fn tiny_tune(nvrtc: &Nvrtc, device: u32) -> Result<String> {
    let spec = probe_spec();
    let kernel = crate::spec::parse_spec(&spec).0.and_then(|mut f| f.kernels.pop()).ok_or_else(|| anyhow::anyhow!("the built-in probe spec does not parse"))?;
    let workspace = std::env::temp_dir().join(format!("cutune-doctor-{}", std::process::id()));
    let result = (|| -> Result<String> {
        let store = crate::store::Store::open(&workspace)?;
        let mut runner = crate::gpu::client::WorkerRunner::start(device)?;
        let kernel_sha256 = crate::tune::kernel_sha256(PROBE_SOURCE, &kernel.name);
        let target = crate::tune::Target { file: "doctor_probe.cu".into(), kernel, source: PROBE_SOURCE.to_string(), kernel_sha256 };
        let tools = crate::tune::Tools { nvrtc: Some(nvrtc), cache: crate::compile::CubinCache::new(workspace.join("cubins")), store: &store, ceilings_dir: crate::sol::cache::default_dir() };
        let options = crate::tune::TuneOptions { compile_threads: 2, batch_size: 4, reuse_stored: false, verify_best: false, sol_stop: None, ..crate::tune::TuneOptions::brute_force(Some(4)) };
        let report = crate::tune::tune(&target, &mut runner, &tools, &options, &mut crate::tune::Silent)?;
        let passed = report.rows.iter().filter(|r| r.speedup.is_some()).count();
        let best = report.best.as_ref().ok_or_else(|| anyhow::anyhow!("no block size passed: {:?}", report.failures))?;
        Ok(format!(
            "{} of {} block sizes measured and matching the default on {}; best {} at {:.1} µs ({:.2}× the default) in {:.2} s",
            passed,
            report.rows.len(),
            report.device,
            best.config,
            best.time_us.unwrap_or(0.0),
            best.speedup.unwrap_or(0.0),
            report.total_seconds
        ))
    })();
    let _ = std::fs::remove_dir_all(&workspace);
    result
}

fn check_nvrtc(args: &DoctorArgs, device_arch: Option<String>, report: &mut String) -> Result<Nvrtc, String> {
    let nvrtc = match Nvrtc::locate(args.nvrtc.as_deref()) {
        Ok(nvrtc) => nvrtc,
        Err(not_found) => {
            let _ = writeln!(report, "NVRTC: not found");
            for line in not_found.to_string().lines().skip(1) {
                let _ = writeln!(report, "  {line}");
            }
            return Err("libnvrtc was not found".into());
        }
    };
    let (major, minor) = nvrtc.version();
    let _ = writeln!(report, "NVRTC: {major}.{minor}");
    let _ = writeln!(report, "  library: {}", nvrtc.library_path().display());
    match nvrtc.include_dir() {
        Some(dir) => {
            let _ = writeln!(report, "  headers: {}", dir.display());
        }
        None => {
            let _ = writeln!(
                report,
                "  headers: not found (kernels including cuda_fp16.h will not compile; \
                 pip install nvidia-cuda-runtime-cu12, or set CUDA_HOME)"
            );
        }
    }
    let arch = device_arch.unwrap_or_else(|| "sm_90".to_string());
    let mut request = CompileRequest::new(PROBE_SOURCE, "doctor_probe.cu", arch.as_str());
    request.name_expressions = vec!["doctor_probe<256>".to_string()];
    let started = Instant::now();
    match nvrtc.compile(&request) {
        Ok(output) => {
            let millis = started.elapsed().as_millis();
            let bytes = output.cubin.as_ref().map_or(0, Vec::len);
            let _ = writeln!(report, "  test compile: {arch} cubin of {bytes} bytes in {millis} ms (first compile of the process)");
            for kernel in &output.kernels {
                let _ = writeln!(
                    report,
                    "    {}: {} registers, {} bytes shared, {} bytes stack, {} bytes spilled",
                    kernel.name,
                    kernel.registers,
                    kernel.shared_bytes,
                    kernel.stack_bytes,
                    kernel.spill_store_bytes
                );
            }
            Ok(nvrtc)
        }
        Err(failure) => {
            let _ = writeln!(report, "  test compile: failed for {arch}");
            for line in failure.to_string().lines() {
                let _ = writeln!(report, "    {line}");
            }
            Err(format!("the test compile failed: {}", failure.message))
        }
    }
}

/// Reports the driver and its devices with their limits. Never fails: compiling needs neither.
fn check_driver(report: &mut String) -> Vec<DeviceInfo> {
    match crate::gpu::worker::probe() {
        Ok(devices) => {
            if let Some(first) = devices.first() {
                let version = first.driver_version;
                let _ = writeln!(report, "CUDA driver: {}.{}", version / 1000, version % 1000 / 10);
            }
            for device in &devices {
                let (major, minor) = device.compute_capability;
                let _ = writeln!(report, "  device {}: {}, compute capability {major}.{minor}, {} SMs, {} MiB", device.ordinal, device.name, device.multiprocessors, device.memory_bytes >> 20);
                let _ = writeln!(
                    report,
                    "    limits: {} threads/block, {} threads/SM, {} blocks/SM, {} KiB shared/block ({} KiB with opt-in), {} KiB shared/SM, {} registers/SM, {} MiB L2",
                    device.max_threads_per_block,
                    device.max_threads_per_multiprocessor,
                    device.max_blocks_per_multiprocessor,
                    device.shared_bytes_per_block / 1024,
                    device.shared_bytes_per_block_optin / 1024,
                    device.shared_bytes_per_multiprocessor / 1024,
                    device.registers_per_multiprocessor,
                    device.l2_bytes >> 20
                );
            }
            devices
        }
        Err(why) => {
            let _ = writeln!(report, "CUDA driver: {why}");
            Vec::new()
        }
    }
}
