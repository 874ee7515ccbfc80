//! The few CUPTI and driver entry points the library uses, loaded at run time: the program
//! brings its own driver, and CUPTI is found where `cutune profile` says.
//!
//! Layouts follow CUPTI 12.x and 13.x headers (`cupti_callbacks.h`, `generated_cuda_meta.h`);
//! the activity records are read by offset, see [`super::activity`].

use std::ffi::{c_char, c_void, CStr};

use libloading::Library;

pub type CuResult = u32;
pub type CuptiResult = u32;
pub const CUDA_SUCCESS: CuResult = 0;
pub const CUPTI_SUCCESS: CuptiResult = 0;

pub const DOMAIN_DRIVER_API: u32 = 1;
pub const API_ENTER: u32 = 0;
pub const API_EXIT: u32 = 1;

pub const CBID_LAUNCH_KERNEL: u32 = 307;
pub const CBID_LAUNCH_KERNEL_PTSZ: u32 = 442;
pub const CBID_LAUNCH_COOPERATIVE_KERNEL: u32 = 477;
pub const CBID_LAUNCH_COOPERATIVE_KERNEL_PTSZ: u32 = 478;
pub const CBID_LAUNCH_KERNEL_EX: u32 = 652;
pub const CBID_LAUNCH_KERNEL_EX_PTSZ: u32 = 653;
/// The driver's launches; the runtime's `cudaLaunchKernel` goes through `cuLaunchKernel`
/// (seen for static and shared cudart and PyTorch on CUDA 13).
pub const LAUNCH_CBIDS: [u32; 6] = [
    CBID_LAUNCH_KERNEL,
    CBID_LAUNCH_KERNEL_PTSZ,
    CBID_LAUNCH_COOPERATIVE_KERNEL,
    CBID_LAUNCH_COOPERATIVE_KERNEL_PTSZ,
    CBID_LAUNCH_KERNEL_EX,
    CBID_LAUNCH_KERNEL_EX_PTSZ,
];

pub const ACTIVITY_KIND_MEMCPY: u32 = 1;
pub const ACTIVITY_KIND_MEMSET: u32 = 2;
pub const ACTIVITY_KIND_CONCURRENT_KERNEL: u32 = 10;
pub const ACTIVITY_FLAG_FLUSH_FORCED: u32 = 1;

/// `CUpti_CallbackData`.
#[repr(C)]
pub struct CallbackData {
    pub site: u32,
    pub function_name: *const c_char,
    pub function_params: *const c_void,
    pub return_value: *mut c_void,
    pub symbol_name: *const c_char,
    pub context: *mut c_void,
    pub context_uid: u32,
    pub correlation_data: *mut u64,
    pub correlation_id: u32,
}

pub type CallbackFn = unsafe extern "C" fn(*mut c_void, u32, u32, *const c_void);
pub type BufferRequestedFn = unsafe extern "C" fn(*mut *mut u8, *mut usize, *mut usize);
pub type BufferCompletedFn = unsafe extern "C" fn(*mut c_void, u32, *mut u8, usize, usize);

pub struct Cupti {
    _library: Library,
    pub subscribe: unsafe extern "C" fn(*mut *mut c_void, CallbackFn, *mut c_void) -> CuptiResult,
    pub enable_callback: unsafe extern "C" fn(u32, *mut c_void, u32, u32) -> CuptiResult,
    pub register_buffers: unsafe extern "C" fn(BufferRequestedFn, BufferCompletedFn) -> CuptiResult,
    pub enable_activity: unsafe extern "C" fn(u32) -> CuptiResult,
    pub flush_all: unsafe extern "C" fn(u32) -> CuptiResult,
    pub next_record: unsafe extern "C" fn(*mut u8, usize, *mut *mut u8) -> CuptiResult,
    pub dropped_records: unsafe extern "C" fn(*mut c_void, u32, *mut usize) -> CuptiResult,
    pub version: unsafe extern "C" fn(*mut u32) -> CuptiResult,
    result_string: unsafe extern "C" fn(CuptiResult, *mut *const c_char) -> CuptiResult,
}

pub struct Driver {
    _library: Library,
    func_param_info: Option<unsafe extern "C" fn(*mut c_void, usize, *mut usize, *mut usize) -> CuResult>,
    kernel_param_info: Option<unsafe extern "C" fn(*mut c_void, usize, *mut usize, *mut usize) -> CuResult>,
    address_range: unsafe extern "C" fn(*mut u64, *mut usize, u64) -> CuResult,
    copy_to_host: unsafe extern "C" fn(*mut c_void, u64, usize) -> CuResult,
    synchronize: unsafe extern "C" fn() -> CuResult,
}

/// `name` from `library`, as a function pointer of type `T`.
unsafe fn symbol<T: Copy>(library: &Library, name: &str) -> Result<T, String> {
    library.get::<T>(name.as_bytes()).map(|s| *s).map_err(|e| format!("{name}: {e}"))
}

impl Cupti {
    pub fn load(path: &str) -> Result<Cupti, String> {
        // SAFETY: loading CUPTI runs its initialisers, which expect nothing from us.
        let library = unsafe { Library::new(path) }.map_err(|e| format!("cannot load CUPTI from {path}: {e}"))?;
        // SAFETY: each signature is the one CUPTI's headers declare for the name.
        unsafe {
            Ok(Cupti {
                subscribe: symbol(&library, "cuptiSubscribe")?,
                enable_callback: symbol(&library, "cuptiEnableCallback")?,
                register_buffers: symbol(&library, "cuptiActivityRegisterCallbacks")?,
                enable_activity: symbol(&library, "cuptiActivityEnable")?,
                flush_all: symbol(&library, "cuptiActivityFlushAll")?,
                next_record: symbol(&library, "cuptiActivityGetNextRecord")?,
                dropped_records: symbol(&library, "cuptiActivityGetNumDroppedRecords")?,
                version: symbol(&library, "cuptiGetVersion")?,
                result_string: symbol(&library, "cuptiGetResultString")?,
                _library: library,
            })
        }
    }

    /// `Ok` for success, else CUPTI's own words for `result`, after `what`.
    pub fn check(&self, what: &str, result: CuptiResult) -> Result<(), String> {
        if result == CUPTI_SUCCESS {
            return Ok(());
        }
        let mut text: *const c_char = std::ptr::null();
        // SAFETY: CUPTI writes a pointer to a static string.
        let known = unsafe { (self.result_string)(result, &mut text) } == CUPTI_SUCCESS && !text.is_null();
        let words = if known { unsafe { CStr::from_ptr(text) }.to_string_lossy().into_owned() } else { "unknown error".into() };
        Err(format!("{what}: {words} (CUPTI error {result})"))
    }
}

impl Driver {
    pub fn load() -> Result<Driver, String> {
        // SAFETY: the driver is already loaded in this process (it is what loaded us).
        let library = unsafe { Library::new("libcuda.so.1") }.map_err(|e| format!("cannot load the CUDA driver: {e}"))?;
        // SAFETY: each signature is the one `cuda.h` declares for the name.
        unsafe {
            Ok(Driver {
                func_param_info: symbol(&library, "cuFuncGetParamInfo").ok(),
                kernel_param_info: symbol(&library, "cuKernelGetParamInfo").ok(),
                address_range: symbol(&library, "cuMemGetAddressRange_v2")?,
                copy_to_host: symbol(&library, "cuMemcpyDtoH_v2")?,
                synchronize: symbol(&library, "cuCtxSynchronize")?,
                _library: library,
            })
        }
    }

    /// Offset and size of each of `function`'s parameters. The handle a runtime launch passes
    /// is a `CUkernel`, which only `cuKernelGetParamInfo` reads, so both are tried.
    pub fn parameter_layout(&self, function: *mut c_void) -> Result<Vec<(u64, u64)>, String> {
        let mut last_error = "the driver has neither cuFuncGetParamInfo nor cuKernelGetParamInfo (CUDA 12.4 or newer is needed)".to_string();
        for (name, query) in [("cuFuncGetParamInfo", self.func_param_info), ("cuKernelGetParamInfo", self.kernel_param_info)] {
            let Some(query) = query else { continue };
            let mut layout = Vec::new();
            loop {
                let (mut offset, mut size) = (0usize, 0usize);
                // SAFETY: `function` is the handle the launch was given; out-pointers are ours.
                let result = unsafe { query(function, layout.len(), &mut offset, &mut size) };
                if result != CUDA_SUCCESS {
                    break;
                }
                layout.push((offset as u64, size as u64));
            }
            // Index 0 failing means this query does not know the handle (or there are no
            // parameters, which the other query then confirms).
            if !layout.is_empty() {
                return Ok(layout);
            }
            last_error = format!("{name} could not read parameter 0");
        }
        Err(last_error)
    }

    /// The allocation holding `address`, as (base, bytes), when it is device memory.
    pub fn allocation_of(&self, address: u64) -> Option<(u64, u64)> {
        if address == 0 {
            return None;
        }
        let (mut base, mut bytes) = (0u64, 0usize);
        // SAFETY: out-pointers are ours; the driver validates `address`.
        (unsafe { (self.address_range)(&mut base, &mut bytes, address) } == CUDA_SUCCESS).then_some((base, bytes as u64))
    }

    pub fn copy_to_host(&self, destination: &mut [u8], source: u64) -> Result<(), String> {
        // SAFETY: `destination` has room for its own length.
        let result = unsafe { (self.copy_to_host)(destination.as_mut_ptr().cast(), source, destination.len()) };
        (result == CUDA_SUCCESS).then_some(()).ok_or_else(|| format!("cuMemcpyDtoH of {} bytes failed (CUDA error {result})", destination.len()))
    }

    pub fn synchronize(&self) -> Result<(), String> {
        // SAFETY: no arguments.
        let result = unsafe { (self.synchronize)() };
        (result == CUDA_SUCCESS).then_some(()).ok_or_else(|| format!("cuCtxSynchronize failed (CUDA error {result})"))
    }
}
