//! Finding the driver and the device, and reading the device's limits.

use cudarc::driver::result;
use cudarc::driver::sys::{self, CUdevice_attribute as Attribute};

use super::cuda::{keep_freed_memory, words, Context, DeviceBuffer};
use crate::gpu::DeviceInfo;

/// What a user without a usable driver is told; measuring is the only thing they lose.
pub const NO_DRIVER: &str = "no CUDA driver found (libcuda.so.1 is not loadable): tuning needs an NVIDIA GPU and driver; \
recorded results and replays still work";

/// The first driver with `cuFuncGetParamInfo`, which lets the worker check a kernel's
/// parameters against the spec's arguments before launching it.
const PARAMETER_INFO_DRIVER: i32 = 12040;

/// The device the worker measures on, with its context and the buffer used to flush L2.
/// Fields drop in order: the buffer is freed before the context is released.
pub struct Gpu {
    pub info: DeviceInfo,
    /// At least twice the L2 size: overwriting it evicts whatever a previous launch left.
    pub l2_flush: DeviceBuffer,
    _context: Context,
}

impl Gpu {
    /// Opens device `ordinal`; the error says, in words, why there is no usable device.
    pub fn open(ordinal: u32) -> Result<Gpu, String> {
        let (device, info) = find_device(ordinal)?;
        let context = Context::open(device).map_err(|f| format!("cannot open a CUDA context on device {ordinal}: {}", f.describe()))?;
        keep_freed_memory(device).map_err(|f| format!("cannot set up the memory pool of device {ordinal}: {}", f.describe()))?;
        let flush_bytes = usize::try_from(info.l2_bytes.saturating_mul(2)).unwrap_or(usize::MAX).max(64 << 20);
        let l2_flush = DeviceBuffer::new(flush_bytes)
            .map_err(|f| format!("cannot allocate the {flush_bytes}-byte L2 flush buffer on device {ordinal}: {}", f.describe()))?;
        Ok(Gpu { info, l2_flush, _context: context })
    }

    /// Whether the driver can list a kernel's parameters (see [`PARAMETER_INFO_DRIVER`]).
    pub fn reports_parameters(&self) -> bool {
        self.info.driver_version >= PARAMETER_INFO_DRIVER
    }
}

/// Every CUDA device of this machine, or why there are none; for `cutune doctor`. Never panics
/// (cudarc panics when the driver library is missing, so that is checked first).
pub fn probe() -> Result<Vec<DeviceInfo>, String> {
    let count = start_driver()?;
    (0..count).map(|ordinal| find_device(ordinal).map(|(_, info)| info)).collect()
}

/// Loads and initialises the driver; returns how many devices it sees.
fn start_driver() -> Result<u32, String> {
    // SAFETY: only tries to dlopen the driver library by its usual names.
    if !unsafe { sys::is_culib_present() } {
        return Err(NO_DRIVER.to_string());
    }
    result::init().map_err(|e| format!("the CUDA driver did not start (cuInit: {}); is an NVIDIA GPU present and its driver loaded?", words(e)))?;
    let count = result::device::get_count().map_err(|e| format!("the CUDA driver cannot count its devices: {}", words(e)))?;
    if count <= 0 {
        return Err("the CUDA driver sees no GPU: tuning needs an NVIDIA GPU; recorded results and replays still work".into());
    }
    Ok(count as u32)
}

fn find_device(ordinal: u32) -> Result<(sys::CUdevice, DeviceInfo), String> {
    let count = start_driver()?;
    if ordinal >= count {
        return Err(format!("there is no CUDA device {ordinal}: this machine has {count} (numbered from 0)"));
    }
    let device = result::device::get(ordinal as i32).map_err(|e| format!("cannot open CUDA device {ordinal}: {}", words(e)))?;
    let info = read_info(device, ordinal).map_err(|e| format!("cannot read the limits of CUDA device {ordinal}: {}", words(e)))?;
    Ok((device, info))
}

fn read_info(device: sys::CUdevice, ordinal: u32) -> Result<DeviceInfo, result::DriverError> {
    // SAFETY: `device` came from cuDeviceGet.
    let count = |attribute: Attribute| unsafe { result::device::get_attribute(device, attribute) }.map(|v| v.max(0) as u32);
    let mut driver_version = 0;
    // SAFETY: a valid out-pointer.
    unsafe { sys::cuDriverGetVersion(&mut driver_version) }.result()?;
    Ok(DeviceInfo {
        name: result::device::get_name(device)?,
        ordinal,
        compute_capability: (
            count(Attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
            count(Attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
        ),
        multiprocessors: count(Attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
        warp_size: count(Attribute::CU_DEVICE_ATTRIBUTE_WARP_SIZE)?,
        max_threads_per_block: count(Attribute::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
        max_threads_per_multiprocessor: count(Attribute::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR)?,
        max_blocks_per_multiprocessor: count(Attribute::CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR)?,
        shared_bytes_per_block: count(Attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK)?,
        shared_bytes_per_block_optin: count(Attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?,
        shared_bytes_per_multiprocessor: count(Attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR)?,
        registers_per_block: count(Attribute::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK)?,
        registers_per_multiprocessor: count(Attribute::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR)?,
        l2_bytes: count(Attribute::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)? as u64,
        // SAFETY: `device` came from cuDeviceGet.
        memory_bytes: unsafe { result::device::total_mem(device) }? as u64,
        driver_version,
        // Only a spec's `clock_khz` reads it: a driver without it leaves that size as written.
        clock_khz: count(Attribute::CU_DEVICE_ATTRIBUTE_CLOCK_RATE).unwrap_or(0),
    })
}
