//! Capturing a launch: its arguments and, for each pointer into device memory, the memory
//! before the kernel runs (on the launch's entry) and after it (on its exit).

use std::cell::RefCell;
use std::collections::HashMap;

use crate::report::{BlobRange, Capture, CaptureWriter, CapturedBuffer, CapturedParam, CAPTURE_EXTENSION};

use super::ffi::{CallbackData, CUDA_SUCCESS};
use super::launch::Launch;
use super::{c_text, lock, Runtime, CAPTURES};

/// Buffers are copied through host memory this many bytes at a time.
const COPY_CHUNK_BYTES: u64 = 64 << 20;

/// What the captures have done so far, shared by every thread of the program.
#[derive(Default)]
pub struct Ledger {
    pub files: Vec<String>,
    pub problems: Vec<String>,
    shapes: Vec<(String, ShapeKey)>,
    next_index: u32,
}

impl Ledger {
    pub const fn new() -> Ledger {
        Ledger { files: Vec::new(), problems: Vec::new(), shapes: Vec::new(), next_index: 0 }
    }

    /// Claims a capture of `kernel` at `shape`, unless that shape is already captured or the
    /// kernel has its quota; returns the capture's index.
    fn claim(&mut self, kernel: &str, shape: ShapeKey, quota: usize) -> Option<u32> {
        let of_kernel = self.shapes.iter().filter(|(k, _)| k == kernel);
        if of_kernel.clone().count() >= quota || of_kernel.clone().any(|(_, s)| *s == shape) {
            return None;
        }
        self.shapes.push((kernel.to_string(), shape));
        self.next_index += 1;
        Some(self.next_index - 1)
    }
}

/// Launches count as the same shape when their configuration and every non-pointer argument
/// agree.
#[derive(PartialEq)]
struct ShapeKey {
    grid: [u32; 3],
    block: [u32; 3],
    shared_bytes: u32,
    scalars: Vec<u8>,
}

struct Pending {
    started: std::time::Instant,
    writer: CaptureWriter,
    capture: Capture,
    file_name: String,
}

thread_local! {
    /// Captures between their launch's entry and exit, by CUPTI correlation id.
    static PENDING: RefCell<HashMap<u32, Pending>> = RefCell::new(HashMap::new());
}

/// Whether `pattern` (a mangled name, or a source name such as `scale` or `ns::scale`) names
/// the kernel whose mangled name is `mangled`.
pub fn names_kernel(pattern: &str, mangled: &str) -> bool {
    if pattern == mangled {
        return true;
    }
    if !mangled.starts_with("_Z") {
        return false;
    }
    // Itanium mangling writes each name component as its length then its text.
    let encoded: String = pattern.split("::").map(|part| format!("{}{part}", part.len())).collect();
    mangled.match_indices(&encoded).any(|(at, _)| !mangled[..at].ends_with(|c: char| c.is_ascii_digit()))
}

pub fn launch_entered(runtime: &Runtime, cbid: u32, data: &CallbackData) {
    // SAFETY: CUPTI passes a valid (or null) symbol name.
    let Some(symbol) = (unsafe { c_text(data.symbol_name) }) else { return };
    if !runtime.config.kernels.iter().any(|pattern| names_kernel(pattern, symbol)) {
        return;
    }
    // SAFETY: `function_params` is what CUPTI passed with `cbid`.
    let Some(launch) = (unsafe { Launch::from_callback(cbid, data.function_params) }) else { return };
    match begin(runtime, symbol, &launch) {
        Ok(Some(pending)) => PENDING.with(|p| p.borrow_mut().insert(data.correlation_id, pending)).map_or((), |_| ()),
        Ok(None) => {}
        Err(problem) => lock(&CAPTURES).problems.push(format!("{symbol}: {problem}")),
    }
}

pub fn launch_exited(runtime: &Runtime, data: &CallbackData) {
    let Some(mut pending) = PENDING.with(|p| p.borrow_mut().remove(&data.correlation_id)) else { return };
    // SAFETY: on exit CUPTI points `return_value` at the launch's CUresult.
    let launch_result = unsafe { (data.return_value as *const u32).as_ref().copied() }.unwrap_or(CUDA_SUCCESS);
    let finished = if launch_result != CUDA_SUCCESS {
        Err(format!("the launch itself failed (CUDA error {launch_result})"))
    } else {
        after(runtime, &mut pending)
    };
    let Pending { started, writer, mut capture, file_name } = pending;
    capture.seconds = started.elapsed().as_secs_f64();
    let written = match finished {
        Ok(()) => writer.finish(&capture).map_err(|e| format!("cannot write the capture: {e}")),
        Err(problem) => {
            writer.abandon();
            Err(problem)
        }
    };
    match written {
        Ok(_) => {
            runtime.config.log(|| format!("captured {} into {file_name}", capture.kernel));
            lock(&CAPTURES).files.push(file_name);
        }
        Err(problem) => lock(&CAPTURES).problems.push(format!("{}: {problem}", capture.kernel)),
    }
}

fn begin(runtime: &Runtime, symbol: &str, launch: &Launch) -> Result<Option<Pending>, String> {
    let started = std::time::Instant::now();
    let driver = &runtime.driver;
    let layout = driver.parameter_layout(launch.function).map_err(|e| format!("the argument layout cannot be read: {e}"))?;
    // SAFETY: called on the launch's entry, while its arguments are alive.
    let values = unsafe { launch.argument_bytes(&layout) }?;
    let allocations: Vec<Option<(u64, u64)>> = values
        .iter()
        .map(|value| <[u8; 8]>::try_from(value.as_slice()).ok().and_then(|address| driver.allocation_of(u64::from_le_bytes(address))))
        .collect();
    let scalars = values.iter().zip(&allocations).filter(|(_, a)| a.is_none()).flat_map(|(v, _)| v.clone()).collect();
    let shape = ShapeKey { grid: launch.grid, block: launch.block, shared_bytes: launch.shared_bytes, scalars };
    let Some(index) = lock(&CAPTURES).claim(symbol, shape, runtime.config.shapes_per_kernel) else { return Ok(None) };

    let params: Vec<CapturedParam> = layout
        .iter()
        .zip(&values)
        .zip(&allocations)
        .map(|((&(offset, _), value), allocation)| {
            let buffer = allocation.map(|(base, bytes)| {
                let address = u64::from_le_bytes(value.as_slice().try_into().expect("8 bytes"));
                CapturedBuffer { allocation_base: base, allocation_bytes: bytes, bytes: base + bytes - address, before: None, after: None }
            });
            CapturedParam::new(offset, value, buffer)
        })
        .collect();
    let total: u64 = params.iter().filter_map(|p| p.buffer.as_ref()).map(|b| b.bytes).sum();
    let buffers_omitted = (total > runtime.config.cap_bytes).then(|| {
        format!("its buffers hold {total} bytes, over the cap of {} per capture (`--capture-bytes` raises it)", runtime.config.cap_bytes)
    });
    let capture = Capture {
        kernel: symbol.to_string(),
        grid: launch.grid,
        block: launch.block,
        shared_bytes: launch.shared_bytes,
        params,
        buffers_omitted,
        seconds: 0.0,
    };
    let file_name = format!("{}-{index}.{CAPTURE_EXTENSION}", std::process::id());
    let writer = CaptureWriter::create(&runtime.config.out.join(&file_name)).map_err(|e| format!("cannot create the capture file: {e}"))?;
    let mut pending = Pending { started, writer, capture, file_name };
    if pending.capture.buffers_omitted.is_none() {
        // Other streams may still be writing these buffers.
        if let Err(problem) = driver.synchronize().and_then(|()| copy_buffers(runtime, &mut pending, When::Before)) {
            pending.writer.abandon();
            return Err(problem);
        }
    }
    Ok(Some(pending))
}

fn after(runtime: &Runtime, pending: &mut Pending) -> Result<(), String> {
    if pending.capture.buffers_omitted.is_some() {
        return Ok(());
    }
    runtime.driver.synchronize().map_err(|e| format!("the kernel failed: {e}"))?;
    copy_buffers(runtime, pending, When::After)
}

#[derive(Clone, Copy)]
enum When {
    Before,
    After,
}

fn copy_buffers(runtime: &Runtime, pending: &mut Pending, when: When) -> Result<(), String> {
    let mut chunk = Vec::new();
    for param in &mut pending.capture.params {
        let Some(buffer) = &mut param.buffer else { continue };
        let address = u64::from_le_bytes(param_address(&param.value)?);
        let range = BlobRange { offset: pending.writer.position(), len: buffer.bytes };
        let mut copied = 0;
        while copied < buffer.bytes {
            let len = (buffer.bytes - copied).min(COPY_CHUNK_BYTES) as usize;
            chunk.resize(len, 0);
            runtime.driver.copy_to_host(&mut chunk, address + copied)?;
            pending.writer.append(&chunk).map_err(|e| format!("cannot write the capture: {e}"))?;
            copied += len as u64;
        }
        match when {
            When::Before => buffer.before = Some(range),
            When::After => buffer.after = Some(range),
        }
    }
    Ok(())
}

fn param_address(value: &str) -> Result<[u8; 8], String> {
    hex::decode(value).ok().and_then(|bytes| bytes.try_into().ok()).ok_or_else(|| format!("argument `{value}` is not an address"))
}

#[cfg(test)]
mod tests {
    use super::names_kernel;

    #[test]
    fn source_names_match_their_mangled_kernels() {
        assert!(names_kernel("scale", "_Z5scalePffi"));
        assert!(names_kernel("_Z5scalePffi", "_Z5scalePffi"));
        assert!(names_kernel("sgemm1D", "_Z7sgemm1DILi64ELi64ELi8ELi8EEviiifPKfS1_fPf"));
        assert!(names_kernel("vllm::rms_norm_kernel", "_ZN4vllm15rms_norm_kernelIN3c104HalfELi8ELi4EEEvPT_PKS3_S6_fii"));
        assert!(names_kernel("rms_norm_kernel", "_ZN4vllm15rms_norm_kernelIN3c104HalfELi8ELi4EEEvPT_PKS3_S6_fii"));
        assert!(names_kernel("vecAdd", "vecAdd"), "extern \"C\" kernels keep their names");
    }

    #[test]
    fn other_kernels_do_not_match() {
        assert!(!names_kernel("scale", "_Z6scale2Pffi"));
        assert!(!names_kernel("cale", "_Z5scalePffi"));
        // `5scale` inside `15scale_with_bias` is preceded by a digit, so it is not the name.
        assert!(!names_kernel("scale", "_Z15scale_with_biasPfS_fi"));
        assert!(!names_kernel("scale", "scale_kernel"));
    }
}
