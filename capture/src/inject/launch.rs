//! A driver launch's configuration and argument bytes, read from the parameters CUPTI hands
//! the callback.

use std::ffi::c_void;

use super::ffi::*;

/// `cuLaunchKernel_params` (and the cooperative launch's, which lacks `extra`).
#[repr(C)]
struct LaunchKernelParams {
    function: *mut c_void,
    grid: [u32; 3],
    block: [u32; 3],
    shared_bytes: u32,
    stream: *mut c_void,
    kernel_params: *mut *mut c_void,
    extra: *mut *mut c_void,
}

/// `CUlaunchConfig`, as far as the launch's shape goes.
#[repr(C)]
struct LaunchConfig {
    grid: [u32; 3],
    block: [u32; 3],
    shared_bytes: u32,
    stream: *mut c_void,
}

/// `cuLaunchKernelEx_params`.
#[repr(C)]
struct LaunchKernelExParams {
    config: *const LaunchConfig,
    function: *mut c_void,
    kernel_params: *mut *mut c_void,
    extra: *mut *mut c_void,
}

const LAUNCH_PARAM_END: usize = 0;
const LAUNCH_PARAM_BUFFER_POINTER: usize = 1;
const LAUNCH_PARAM_BUFFER_SIZE: usize = 2;

pub struct Launch {
    pub function: *mut c_void,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub shared_bytes: u32,
    kernel_params: *mut *mut c_void,
    extra: *mut *mut c_void,
}

impl Launch {
    /// The launch behind callback `cbid`, or `None` for a callback that is not a launch.
    ///
    /// # Safety
    /// `params` must be the `functionParams` CUPTI passed with `cbid`.
    pub unsafe fn from_callback(cbid: u32, params: *const c_void) -> Option<Launch> {
        if params.is_null() {
            return None;
        }
        match cbid {
            CBID_LAUNCH_KERNEL | CBID_LAUNCH_KERNEL_PTSZ => {
                let p = &*(params as *const LaunchKernelParams);
                Some(Launch { function: p.function, grid: p.grid, block: p.block, shared_bytes: p.shared_bytes, kernel_params: p.kernel_params, extra: p.extra })
            }
            CBID_LAUNCH_COOPERATIVE_KERNEL | CBID_LAUNCH_COOPERATIVE_KERNEL_PTSZ => {
                let p = &*(params as *const LaunchKernelParams);
                let extra = std::ptr::null_mut();
                Some(Launch { function: p.function, grid: p.grid, block: p.block, shared_bytes: p.shared_bytes, kernel_params: p.kernel_params, extra })
            }
            CBID_LAUNCH_KERNEL_EX | CBID_LAUNCH_KERNEL_EX_PTSZ => {
                let p = &*(params as *const LaunchKernelExParams);
                let config = p.config.as_ref()?;
                Some(Launch {
                    function: p.function,
                    grid: config.grid,
                    block: config.block,
                    shared_bytes: config.shared_bytes,
                    kernel_params: p.kernel_params,
                    extra: p.extra,
                })
            }
            _ => None,
        }
    }

    /// Each argument's bytes, given the kernel's parameter layout.
    ///
    /// # Safety
    /// Only during the launch's callback, while the caller's argument storage is alive.
    pub unsafe fn argument_bytes(&self, layout: &[(u64, u64)]) -> Result<Vec<Vec<u8>>, String> {
        if !self.kernel_params.is_null() {
            return Ok(layout
                .iter()
                .enumerate()
                .map(|(i, &(_, size))| {
                    let value = *self.kernel_params.add(i) as *const u8;
                    std::slice::from_raw_parts(value, size as usize).to_vec()
                })
                .collect());
        }
        let (buffer, buffer_size) = self.packed_buffer().ok_or("the launch passes neither kernelParams nor a parameter buffer in `extra`")?;
        layout
            .iter()
            .map(|&(offset, size)| {
                if offset + size > buffer_size as u64 {
                    return Err(format!("the parameter buffer holds {buffer_size} bytes; the layout needs {}", offset + size));
                }
                Ok(std::slice::from_raw_parts(buffer.add(offset as usize), size as usize).to_vec())
            })
            .collect()
    }

    /// The packed parameter buffer of a launch that passes its arguments through `extra`.
    unsafe fn packed_buffer(&self) -> Option<(*const u8, usize)> {
        if self.extra.is_null() {
            return None;
        }
        let (mut buffer, mut size) = (None, None);
        let mut entry = self.extra;
        loop {
            match *entry as usize {
                LAUNCH_PARAM_END => break,
                LAUNCH_PARAM_BUFFER_POINTER => buffer = Some(*entry.add(1) as *const u8),
                LAUNCH_PARAM_BUFFER_SIZE => size = Some(*(*entry.add(1) as *const usize)),
                _ => {}
            }
            entry = entry.add(2);
        }
        Some((buffer?, size?))
    }
}
