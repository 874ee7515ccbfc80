//! The CUDA driver calls the worker makes, through cudarc's thin `result` wrappers, and owners
//! that free what they allocate. Everything runs on the worker's one thread, in the device's
//! primary context, on the legacy default stream, so work is ordered as it is issued.
//!
//! A driver error is either recoverable (a refused launch, a bad argument) or sticky: the
//! kernel faulted and the context can run nothing more. Sticky errors end the worker, so no
//! owner here ever frees into a lost context (the process exits without dropping them).

use std::ffi::{c_void, CString};
use std::sync::atomic::{AtomicPtr, Ordering};

use cudarc::driver::result::{self, DriverError};
use cudarc::driver::sys;

use crate::gpu::LaunchDims;

/// A failed driver call: which call, and the driver's error.
#[derive(Clone, Copy, Debug)]
pub struct DriverFailure {
    pub call: &'static str,
    pub error: sys::CUresult,
}

pub type CudaResult<T> = Result<T, DriverFailure>;

fn during<T>(call: &'static str, result: Result<T, DriverError>) -> CudaResult<T> {
    result.map_err(|e| DriverFailure { call, error: e.0 })
}

impl DriverFailure {
    /// Whether the error leaves the context unusable: every later call fails the same way.
    pub fn is_sticky(&self) -> bool {
        use sys::CUresult::*;
        matches!(
            self.error,
            CUDA_ERROR_ILLEGAL_ADDRESS
                | CUDA_ERROR_LAUNCH_TIMEOUT
                | CUDA_ERROR_CONTEXT_IS_DESTROYED
                | CUDA_ERROR_ASSERT
                | CUDA_ERROR_HARDWARE_STACK_ERROR
                | CUDA_ERROR_ILLEGAL_INSTRUCTION
                | CUDA_ERROR_MISALIGNED_ADDRESS
                | CUDA_ERROR_INVALID_ADDRESS_SPACE
                | CUDA_ERROR_INVALID_PC
                | CUDA_ERROR_LAUNCH_FAILED
                | CUDA_ERROR_ECC_UNCORRECTABLE
                | CUDA_ERROR_UNKNOWN
        ) || !context_is_usable()
    }

    /// e.g. `CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access was encountered) from cuCtxSynchronize`.
    pub fn describe(&self) -> String {
        format!("{} from {}", words(DriverError(self.error)), self.call)
    }
}

/// The driver's name and words for an error, e.g. `CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)`.
pub fn words(error: DriverError) -> String {
    let name = error.error_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|_| format!("{:?}", error.0));
    match error.error_string() {
        Ok(text) => format!("{name} ({})", text.to_string_lossy()),
        Err(_) => name,
    }
}

/// After a recoverable-looking error: does the context still run work? A sticky error makes
/// every call fail, synchronisation included.
fn context_is_usable() -> bool {
    result::ctx::synchronize().is_ok()
}

pub fn synchronize() -> CudaResult<()> {
    during("cuCtxSynchronize", result::ctx::synchronize())
}

/// The device's primary context, made current on this thread; released on drop.
pub struct Context {
    device: sys::CUdevice,
}

impl Context {
    pub fn open(device: sys::CUdevice) -> CudaResult<Context> {
        // SAFETY: `device` came from cuDeviceGet.
        let handle = during("cuDevicePrimaryCtxRetain", unsafe { result::primary_ctx::retain(device) })?;
        // From here on, dropping `context` releases the retain.
        let context = Context { device };
        // SAFETY: a live context handle.
        during("cuCtxSetCurrent", unsafe { result::ctx::set_current(handle) })?;
        Ok(context)
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        // SAFETY: balances the retain in `open`.
        let _ = unsafe { result::primary_ctx::release(self.device) };
    }
}

/// The device's memory pool once [`keep_freed_memory`] set it up (buffers then come from it);
/// null before, or on devices without pools.
static POOL: AtomicPtr<sys::CUmemPoolHandle_st> = AtomicPtr::new(std::ptr::null_mut());

/// Makes buffers come from the device's default memory pool, which keeps freed memory for the
/// next allocation instead of giving it back: a verification allocates and frees the same
/// large buffers case after case, and `cuMemAlloc` + `cuMemFree` of 128 MiB cost about 0.2 ms
/// where the pool takes a few µs (H100, docs/benchmarks.md). The memory is the worker's until
/// it exits, at the end of its job. Devices without pools keep plain allocations.
pub fn keep_freed_memory(device: sys::CUdevice) -> CudaResult<()> {
    // SAFETY: `device` came from cuDeviceGet.
    let supported = unsafe { result::device::get_attribute(device, sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED) };
    if !matches!(supported, Ok(1)) {
        return Ok(());
    }
    let mut pool = std::ptr::null_mut();
    // SAFETY: a valid out-pointer and device.
    during("cuDeviceGetDefaultMemPool", unsafe { sys::cuDeviceGetDefaultMemPool(&mut pool, device) }.result())?;
    let mut keep_all = u64::MAX;
    let threshold = sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD;
    // SAFETY: the release threshold is a u64.
    during("cuMemPoolSetAttribute", unsafe { result::mem_pool::set_attribute(pool, threshold, (&mut keep_all as *mut u64).cast()) })?;
    POOL.store(pool, Ordering::Relaxed);
    Ok(())
}

/// Device memory; freed on drop.
pub struct DeviceBuffer {
    pointer: sys::CUdeviceptr,
    bytes: usize,
    /// Allocated from the memory pool (see [`keep_freed_memory`]), and freed back to it.
    pooled: bool,
}

impl DeviceBuffer {
    /// At least one byte is allocated, so that even an empty buffer has a valid address.
    pub fn new(bytes: usize) -> CudaResult<DeviceBuffer> {
        let size = bytes.max(1);
        let pool = POOL.load(Ordering::Relaxed);
        if pool.is_null() {
            // SAFETY: a plain allocation in the current context; freed in Drop.
            let pointer = during("cuMemAlloc", unsafe { result::malloc_sync(size) })?;
            return Ok(DeviceBuffer { pointer, bytes, pooled: false });
        }
        // SAFETY: ordered on the default stream, like every use of the buffer; freed in Drop.
        let allocate = || during("cuMemAllocAsync", unsafe { result::malloc_async(default_stream(), size) });
        let pointer = match allocate() {
            // Memory the pool keeps may be what is missing: give it back and try once more.
            Err(failure) if failure.error == sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY => {
                synchronize()?;
                // SAFETY: the device's default pool, set up in `keep_freed_memory`.
                during("cuMemPoolTrimTo", unsafe { result::mem_pool::trim_to(pool, 0) })?;
                allocate()?
            }
            other => other?,
        };
        Ok(DeviceBuffer { pointer, bytes, pooled: true })
    }

    pub fn pointer(&self) -> sys::CUdeviceptr {
        self.pointer
    }

    /// Copies `host` in, synchronously; bytes beyond the buffer's size are not copied.
    pub fn upload(&self, host: &[u8]) -> CudaResult<()> {
        let host = &host[..host.len().min(self.bytes)];
        // SAFETY: the allocation holds at least `host.len()` bytes.
        during("cuMemcpyHtoD", unsafe { result::memcpy_htod_sync(self.pointer, host) })
    }

    /// Copies as much of `source` as fits, from the start, ordered after the work issued so far.
    pub fn copy_from(&self, source: &DeviceBuffer) -> CudaResult<()> {
        self.copy_bytes_from(source, source.bytes)
    }

    /// Copies the first `bytes` bytes of `source` (cut to both buffers), ordered after the work
    /// issued so far.
    pub fn copy_bytes_from(&self, source: &DeviceBuffer, bytes: usize) -> CudaResult<()> {
        let bytes = bytes.min(self.bytes).min(source.bytes);
        // SAFETY: both allocations hold at least `bytes` bytes; the default stream orders it.
        during("cuMemcpyDtoDAsync", unsafe { result::memcpy_dtod_async(self.pointer, source.pointer, bytes, default_stream()) })
    }

    /// Copies `length` bytes out from `offset`, synchronously (after all work issued so far);
    /// the range is cut to the buffer.
    pub fn read(&self, offset: usize, length: usize) -> CudaResult<Vec<u8>> {
        let offset = offset.min(self.bytes);
        let mut host = vec![0u8; length.min(self.bytes - offset)];
        // SAFETY: `host` fits in the allocation from `offset`.
        during("cuMemcpyDtoH", unsafe { result::memcpy_dtoh_sync(&mut host, self.pointer + offset as u64) })?;
        Ok(host)
    }

    /// Sets every byte to `value`, ordered after the work issued so far.
    pub fn fill(&self, value: u8) -> CudaResult<()> {
        self.fill_from(0, value)
    }

    /// Sets every byte from `offset` to the end to `value`, ordered after the work issued so far.
    pub fn fill_from(&self, offset: usize, value: u8) -> CudaResult<()> {
        let offset = offset.min(self.bytes);
        // SAFETY: the range lies in the allocation; the default stream orders it.
        during("cuMemsetD8Async", unsafe { result::memset_d8_async(self.pointer + offset as u64, value, self.bytes - offset, default_stream()) })
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        // SAFETY: allocated in `new`, freed once, after the work issued so far on its stream.
        let _ = unsafe {
            if self.pooled {
                result::free_async(self.pointer, default_stream())
            } else {
                result::free_sync(self.pointer)
            }
        };
    }
}

fn default_stream() -> sys::CUstream {
    std::ptr::null_mut()
}

/// How a texture object is made: the texels' format, where they lie, and how they are sampled.
pub struct TextureDesc {
    pub format: sys::CUarray_format,
    pub channels: u32,
    /// Bytes per texel, all channels.
    pub texel_bytes: usize,
    /// Width, height and depth as `cuArray3DCreate` takes them (0 for a dimension the array
    /// lacks; layers and cube faces are the depth); `None` for a texture over linear memory.
    pub array: Option<[usize; 3]>,
    /// `CUDA_ARRAY3D_LAYERED` or `CUDA_ARRAY3D_CUBEMAP`, or 0.
    pub array_flags: u32,
    pub address: sys::CUaddress_mode,
    pub filter: sys::CUfilter_mode,
    /// `CU_TRSF_*`: normalized coordinates, integers read as integers.
    pub flags: u32,
}

/// A texture object and the CUDA array holding its texels (none over linear memory, which
/// reads the buffer it was made from); destroyed on drop.
pub struct TextureObject {
    handle: sys::CUtexObject,
    array: sys::CUarray,
}

impl TextureObject {
    /// A texture over `data`: copied into a new array, or read where it lies when linear.
    pub fn over(data: &DeviceBuffer, desc: &TextureDesc) -> CudaResult<TextureObject> {
        let mut object = TextureObject { handle: 0, array: std::ptr::null_mut() };
        // SAFETY: all-zero is a valid resource descriptor (an array, no flags), filled below.
        let mut resource: sys::CUDA_RESOURCE_DESC = unsafe { std::mem::zeroed() };
        match desc.array {
            Some([width, height, depth]) => {
                let array_desc = sys::CUDA_ARRAY3D_DESCRIPTOR {
                    Width: width,
                    Height: height,
                    Depth: depth,
                    Format: desc.format,
                    NumChannels: desc.channels,
                    Flags: desc.array_flags,
                };
                // SAFETY: valid descriptor and out-pointer; destroyed in Drop.
                during("cuArray3DCreate", unsafe { sys::cuArray3DCreate_v2(&mut object.array, &array_desc) }.result())?;
                let copy = sys::CUDA_MEMCPY3D {
                    srcXInBytes: 0,
                    srcY: 0,
                    srcZ: 0,
                    srcLOD: 0,
                    srcMemoryType: sys::CUmemorytype::CU_MEMORYTYPE_DEVICE,
                    srcHost: std::ptr::null(),
                    srcDevice: data.pointer(),
                    srcArray: std::ptr::null_mut(),
                    reserved0: std::ptr::null_mut(),
                    srcPitch: width * desc.texel_bytes,
                    srcHeight: height.max(1),
                    dstXInBytes: 0,
                    dstY: 0,
                    dstZ: 0,
                    dstLOD: 0,
                    dstMemoryType: sys::CUmemorytype::CU_MEMORYTYPE_ARRAY,
                    dstHost: std::ptr::null_mut(),
                    dstDevice: 0,
                    dstArray: object.array,
                    reserved1: std::ptr::null_mut(),
                    dstPitch: 0,
                    dstHeight: 0,
                    WidthInBytes: width * desc.texel_bytes,
                    Height: height.max(1),
                    Depth: depth.max(1),
                };
                // SAFETY: `data` holds width × height × depth texels, the array as many.
                during("cuMemcpy3D", unsafe { sys::cuMemcpy3D_v2(&copy) }.result())?;
                resource.resType = sys::CUresourcetype::CU_RESOURCE_TYPE_ARRAY;
                resource.res.array.hArray = object.array;
            }
            None => {
                resource.resType = sys::CUresourcetype::CU_RESOURCE_TYPE_LINEAR;
                resource.res.linear = sys::CUDA_RESOURCE_DESC_st__bindgen_ty_1__bindgen_ty_3 {
                    devPtr: data.pointer(),
                    format: desc.format,
                    numChannels: desc.channels,
                    sizeInBytes: data.bytes,
                };
            }
        }
        // SAFETY: all-zero is a valid texture descriptor (wrap, point, no flags, no mipmaps);
        // its unused fields must be zero.
        let mut texture: sys::CUDA_TEXTURE_DESC = unsafe { std::mem::zeroed() };
        texture.addressMode = [desc.address; 3];
        texture.filterMode = desc.filter;
        texture.flags = desc.flags;
        // SAFETY: valid descriptors and out-pointer; destroyed in Drop.
        during("cuTexObjectCreate", unsafe { sys::cuTexObjectCreate(&mut object.handle, &resource, &texture, std::ptr::null()) }.result())?;
        Ok(object)
    }

    /// The handle a kernel's `cudaTextureObject_t` parameter takes.
    pub fn handle(&self) -> u64 {
        self.handle
    }
}

impl Drop for TextureObject {
    fn drop(&mut self) {
        // SAFETY: made in `over`; a zero handle or null array was never made.
        unsafe {
            if self.handle != 0 {
                let _ = sys::cuTexObjectDestroy(self.handle);
            }
            if !self.array.is_null() {
                let _ = sys::cuArrayDestroy(self.array);
            }
        }
    }
}

/// A cubin loaded into the context; unloaded on drop.
pub struct LoadedModule {
    module: sys::CUmodule,
}

impl LoadedModule {
    pub fn load(image: &[u8]) -> CudaResult<LoadedModule> {
        // The driver parses the image in place: give it 8-byte alignment (ELF headers hold
        // 64-bit fields) and a terminating zero (which PTX text would need).
        let mut aligned = vec![0u64; image.len() / 8 + 1];
        // SAFETY: `aligned` holds at least `image.len()` bytes.
        unsafe { std::ptr::copy_nonoverlapping(image.as_ptr(), aligned.as_mut_ptr().cast::<u8>(), image.len()) };
        // SAFETY: a complete image, alive for the call (the driver copies what it keeps).
        let module = during("cuModuleLoadData", unsafe { result::module::load_data(aligned.as_ptr().cast::<c_void>()) })?;
        Ok(LoadedModule { module })
    }

    /// The kernel named `name` (its lowered name), or `None` when the module has no such kernel.
    pub fn function(&self, name: &str) -> CudaResult<Option<Function>> {
        let Ok(c_name) = CString::new(name) else { return Ok(None) };
        // SAFETY: the module is loaded until self is dropped, and the function is not used after.
        match unsafe { result::module::get_function(self.module, c_name) } {
            Ok(function) => Ok(Some(Function { function })),
            Err(DriverError(sys::CUresult::CUDA_ERROR_NOT_FOUND)) => Ok(None),
            Err(e) => during("cuModuleGetFunction", Err(e)),
        }
    }
}

impl Drop for LoadedModule {
    fn drop(&mut self) {
        // SAFETY: loaded in `load`, unloaded once.
        let _ = unsafe { result::module::unload(self.module) };
    }
}

/// A kernel of a [`LoadedModule`] (valid while the module is loaded).
#[derive(Clone, Copy)]
pub struct Function {
    function: sys::CUfunction,
}

impl Function {
    /// Allows this much dynamic shared memory per block (needed above the default 48 KiB).
    pub fn allow_dynamic_shared(&self, bytes: u32) -> CudaResult<()> {
        let attribute = sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES;
        let bytes = i32::try_from(bytes).unwrap_or(i32::MAX);
        // SAFETY: a valid function handle.
        during("cuFuncSetAttribute", unsafe { result::function::set_function_attribute(self.function, attribute, bytes) })
    }

    /// The most threads per block this kernel can be launched with, and its registers per
    /// thread, as the driver sees the loaded code.
    pub fn thread_limit(&self) -> CudaResult<(u32, u32)> {
        let attribute = |which| {
            // SAFETY: a valid function handle.
            during("cuFuncGetAttribute", unsafe { result::function::get_function_attribute(self.function, which) }).map(|v| v.max(0) as u32)
        };
        Ok((attribute(sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?, attribute(sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_NUM_REGS)?))
    }

    /// How many blocks of `threads` threads (no dynamic shared memory) fit on one SM at once.
    pub fn resident_blocks(&self, threads: u32) -> CudaResult<u32> {
        let threads = i32::try_from(threads).unwrap_or(i32::MAX);
        // SAFETY: a valid function handle.
        let blocks = during("cuOccupancyMaxActiveBlocksPerMultiprocessor", unsafe { result::occupancy::max_active_block_per_multiprocessor(self.function, threads, 0) })?;
        Ok(blocks.max(0) as u32)
    }

    /// The size in bytes of each of the kernel's parameters, in order (CUDA 12.4 drivers and
    /// later; see [`crate::gpu::worker::device`] for the version check).
    pub fn parameter_sizes(&self) -> Vec<usize> {
        let mut sizes = Vec::new();
        loop {
            let (mut offset, mut size) = (0usize, 0usize);
            // SAFETY: valid handle and out-pointers; an index past the last parameter is an
            // error result, which ends the loop.
            let status = unsafe { sys::cuFuncGetParamInfo(self.function, sizes.len(), &mut offset, &mut size) };
            if status != sys::CUresult::CUDA_SUCCESS {
                return sizes;
            }
            sizes.push(size);
        }
    }

    /// Queues one launch. `parameters` holds one 8-byte slot per kernel parameter, each with the
    /// parameter's bytes at its start; the driver copies them before this returns.
    pub fn launch(&self, dims: &LaunchDims, parameters: &mut [u64]) -> CudaResult<()> {
        self.launch_with(dims, parameters.iter_mut().map(|slot| (slot as *mut u64).cast::<c_void>()).collect())
    }

    /// [`Self::launch`] with parameters of any size (a struct passed by value), each as the
    /// 8-byte words that hold its bytes.
    pub fn launch_words(&self, dims: &LaunchDims, parameters: &mut [Vec<u64>]) -> CudaResult<()> {
        self.launch_with(dims, parameters.iter_mut().map(|words| words.as_mut_ptr().cast::<c_void>()).collect())
    }

    fn launch_with(&self, dims: &LaunchDims, mut pointers: Vec<*mut c_void>) -> CudaResult<()> {
        let [gx, gy, gz] = dims.grid;
        let [bx, by, bz] = dims.block;
        if dims.cooperative {
            // SAFETY: as below; the driver refuses a grid that cannot be resident at once.
            let status = unsafe { sys::cuLaunchCooperativeKernel(self.function, gx, gy, gz, bx, by, bz, dims.shared_bytes, default_stream(), pointers.as_mut_ptr()) };
            return during("cuLaunchCooperativeKernel", status.result());
        }
        // SAFETY: one pointer per kernel parameter (the caller checked the count where the
        // driver can tell), each to at least as many bytes as the parameter has.
        during("cuLaunchKernel", unsafe {
            result::launch_kernel(self.function, (gx, gy, gz), (bx, by, bz), dims.shared_bytes, default_stream(), &mut pointers)
        })
    }
}

/// A CUDA event for timing; destroyed on drop.
pub struct Event {
    event: sys::CUevent,
}

impl Event {
    pub fn new() -> CudaResult<Event> {
        let event = during("cuEventCreate", result::event::create(sys::CUevent_flags::CU_EVENT_DEFAULT))?;
        Ok(Event { event })
    }

    /// Marks the point in the default stream's work issued so far.
    pub fn record(&self) -> CudaResult<()> {
        // SAFETY: a live event.
        during("cuEventRecord", unsafe { result::event::record(self.event, default_stream()) })
    }

    pub fn synchronize(&self) -> CudaResult<()> {
        // SAFETY: a live event.
        during("cuEventSynchronize", unsafe { result::event::synchronize(self.event) })
    }

    /// Milliseconds from `self` to `end`, both recorded and complete.
    pub fn elapsed_ms(&self, end: &Event) -> CudaResult<f32> {
        // SAFETY: live events recorded on the same stream.
        during("cuEventElapsedTime", unsafe { result::event::elapsed(self.event, end.event) })
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        // SAFETY: created in `new`, destroyed once.
        let _ = unsafe { result::event::destroy(self.event) };
    }
}
