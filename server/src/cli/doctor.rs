//! `cutune doctor`: is this machine able to compile (NVRTC) and to measure (CUDA driver, GPU)?

use std::ffi::{c_char, c_int, CStr};
use std::fmt::Write;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Result};
use cudarc::driver::sys as cu;

use crate::compile::{CompileRequest, Nvrtc};

#[derive(clap::Args)]
pub struct DoctorArgs {
    /// The NVRTC library (or a directory holding it) to use instead of searching; overrides CUTUNE_NVRTC.
    #[arg(long, value_name = "PATH")]
    pub nvrtc: Option<PathBuf>,
}

/// A kernel that exercises what real kernels need: the CUDA headers, a template instantiation
/// by name expression, shared memory and ptxas' resource report.
const PROBE_SOURCE: &str = r#"#include <cuda_fp16.h>
template <int BLOCK>
__global__ void doctor_probe(__half* out, const __half* in, int n) {
    __shared__ float tile[BLOCK];
    int i = blockIdx.x * BLOCK + threadIdx.x;
    tile[threadIdx.x] = i < n ? __half2float(in[i]) : 0.0f;
    __syncthreads();
    if (i < n) out[i] = __float2half(tile[BLOCK - 1 - threadIdx.x] * 2.0f);
}
"#;

/// Prints the report; fails (non-zero exit) when NVRTC cannot compile the probe kernel.
pub fn run(args: &DoctorArgs) -> Result<()> {
    let mut report = String::new();
    let devices = check_driver(&mut report);
    let usable = check_nvrtc(args, devices.first().map(|d| d.arch()), &mut report);
    print!("{report}");
    if let Err(why) = usable {
        bail!("NVRTC is not usable, so cutune cannot compile kernels: {why}");
    }
    Ok(())
}

fn check_nvrtc(args: &DoctorArgs, device_arch: Option<String>, report: &mut String) -> Result<(), String> {
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
            Ok(())
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

struct Device {
    name: String,
    compute_capability: (c_int, c_int),
}

impl Device {
    fn arch(&self) -> String {
        format!("sm_{}{}", self.compute_capability.0, self.compute_capability.1)
    }
}

/// Reports the driver and its devices. Never fails: compiling needs neither.
fn check_driver(report: &mut String) -> Vec<Device> {
    // SAFETY: only dlopens candidate names; checked first because cudarc panics without a driver.
    if !unsafe { cu::is_culib_present() } {
        let _ = writeln!(report, "CUDA driver: not found (no libcuda.so); compiling works, measuring needs a GPU machine");
        return Vec::new();
    }
    match list_devices() {
        Ok((version, devices)) => {
            let _ = writeln!(report, "CUDA driver: {}.{}", version / 1000, version % 1000 / 10);
            if devices.is_empty() {
                let _ = writeln!(report, "  devices: none");
            }
            for (ordinal, device) in devices.iter().enumerate() {
                let (major, minor) = device.compute_capability;
                let _ = writeln!(report, "  device {ordinal}: {}, compute capability {major}.{minor}", device.name);
            }
            devices
        }
        Err(why) => {
            let _ = writeln!(report, "CUDA driver: present, but {why}");
            Vec::new()
        }
    }
}

fn list_devices() -> Result<(c_int, Vec<Device>), String> {
    // SAFETY (whole block): the driver library is present (checked by the caller), every
    // out-pointer is valid for the call, and device ordinals are below the reported count.
    unsafe {
        driver_call("cuInit", cu::cuInit(0))?;
        let mut version: c_int = 0;
        driver_call("cuDriverGetVersion", cu::cuDriverGetVersion(&mut version))?;
        let mut count: c_int = 0;
        driver_call("cuDeviceGetCount", cu::cuDeviceGetCount(&mut count))?;
        let mut devices = Vec::new();
        for ordinal in 0..count {
            let mut device: cu::CUdevice = 0;
            driver_call("cuDeviceGet", cu::cuDeviceGet(&mut device, ordinal))?;
            let mut name = [0 as c_char; 256];
            driver_call("cuDeviceGetName", cu::cuDeviceGetName(name.as_mut_ptr(), name.len() as c_int, device))?;
            let attribute = |attribute| {
                let mut value: c_int = 0;
                driver_call("cuDeviceGetAttribute", cu::cuDeviceGetAttribute(&mut value, attribute, device)).map(|()| value)
            };
            let major = attribute(cu::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?;
            let minor = attribute(cu::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?;
            let name = CStr::from_ptr(name.as_ptr()).to_string_lossy().into_owned();
            devices.push(Device { name, compute_capability: (major, minor) });
        }
        Ok((version, devices))
    }
}

/// Names the failed driver call and the driver's own words for the error.
unsafe fn driver_call(call: &str, result: cu::CUresult) -> Result<(), String> {
    if result == cu::CUresult::CUDA_SUCCESS {
        return Ok(());
    }
    let mut text: *const c_char = std::ptr::null();
    let described = cu::cuGetErrorString(result, &mut text) == cu::CUresult::CUDA_SUCCESS && !text.is_null();
    let description = if described { CStr::from_ptr(text).to_string_lossy().into_owned() } else { format!("{result:?}") };
    Err(format!("{call} failed: {description}"))
}
