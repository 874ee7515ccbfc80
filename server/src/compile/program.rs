//! One NVRTC program, through `cudarc::nvrtc::sys`: create, compile, read back, destroy.
//!
//! cudarc's safe API returns PTX only and hides the program, so the cubin, the lowered names of
//! template instantiations and the log on success all need the raw calls.

use std::ffi::{c_char, c_int, CStr, CString};

use cudarc::nvrtc::sys::{self, nvrtcProgram, nvrtcResult};

/// A failed NVRTC call: which one and the error NVRTC gave.
#[derive(Debug)]
pub(crate) struct CallFailed {
    pub call: &'static str,
    pub result: nvrtcResult,
}

impl std::fmt::Display for CallFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // SAFETY: nvrtcGetErrorString returns a static NUL-terminated string for any code.
        let text = unsafe { CStr::from_ptr(sys::nvrtcGetErrorString(self.result)) };
        write!(f, "{} failed: {}", self.call, text.to_string_lossy())
    }
}

fn check(call: &'static str, result: nvrtcResult) -> Result<(), CallFailed> {
    match result {
        nvrtcResult::NVRTC_SUCCESS => Ok(()),
        result => Err(CallFailed { call, result }),
    }
}

/// Owns an `nvrtcProgram` and destroys it on drop. Only built after discovery has bound cudarc.
pub(crate) struct Program {
    handle: nvrtcProgram,
}

impl Program {
    pub fn new(source: &CString, file_name: &CString) -> Result<Program, CallFailed> {
        let mut handle: nvrtcProgram = std::ptr::null_mut();
        // SAFETY: both strings are NUL-terminated and outlive the call; no headers are passed.
        let result = unsafe {
            sys::nvrtcCreateProgram(&mut handle, source.as_ptr(), file_name.as_ptr(), 0, std::ptr::null(), std::ptr::null())
        };
        check("nvrtcCreateProgram", result)?;
        Ok(Program { handle })
    }

    pub fn add_name_expression(&self, expression: &CString) -> Result<(), CallFailed> {
        // SAFETY: the handle is live and the string NUL-terminated; NVRTC copies it.
        check("nvrtcAddNameExpression", unsafe { sys::nvrtcAddNameExpression(self.handle, expression.as_ptr()) })
    }

    /// Compiles; a compilation error is `Err` with `NVRTC_ERROR_COMPILATION`, its text in [`Self::log`].
    pub fn compile(&self, options: &[CString]) -> Result<(), CallFailed> {
        let pointers: Vec<*const c_char> = options.iter().map(|o| o.as_ptr()).collect();
        let count = c_int::try_from(pointers.len())
            .map_err(|_| CallFailed { call: "nvrtcCompileProgram", result: nvrtcResult::NVRTC_ERROR_INVALID_INPUT })?;
        // SAFETY: `pointers` holds `count` NUL-terminated strings that outlive the call.
        check("nvrtcCompileProgram", unsafe { sys::nvrtcCompileProgram(self.handle, count, pointers.as_ptr()) })
    }

    pub fn log(&self) -> Result<String, CallFailed> {
        let bytes = self.read("nvrtcGetProgramLog", sys::nvrtcGetProgramLogSize, sys::nvrtcGetProgramLog)?;
        Ok(c_text(bytes))
    }

    pub fn ptx(&self) -> Result<String, CallFailed> {
        let bytes = self.read("nvrtcGetPTX", sys::nvrtcGetPTXSize, sys::nvrtcGetPTX)?;
        Ok(c_text(bytes))
    }

    pub fn cubin(&self) -> Result<Vec<u8>, CallFailed> {
        self.read("nvrtcGetCUBIN", sys::nvrtcGetCUBINSize, sys::nvrtcGetCUBIN)
    }

    pub fn lowered_name(&self, expression: &CString) -> Result<String, CallFailed> {
        let mut lowered: *const c_char = std::ptr::null();
        // SAFETY: the handle is live and compiled; NVRTC keeps the returned string until destroy.
        check("nvrtcGetLoweredName", unsafe { sys::nvrtcGetLoweredName(self.handle, expression.as_ptr(), &mut lowered) })?;
        // SAFETY: on success `lowered` points to a NUL-terminated string owned by the program.
        Ok(unsafe { CStr::from_ptr(lowered) }.to_string_lossy().into_owned())
    }

    /// NVRTC's two-call pattern: ask the size, then fill a buffer of that size.
    fn read(
        &self,
        call: &'static str,
        size_of: unsafe fn(nvrtcProgram, *mut usize) -> nvrtcResult,
        fill: unsafe fn(nvrtcProgram, *mut c_char) -> nvrtcResult,
    ) -> Result<Vec<u8>, CallFailed> {
        let mut size = 0usize;
        // SAFETY: the handle is live; `size` is a valid out-pointer.
        check(call, unsafe { size_of(self.handle, &mut size) })?;
        let mut buffer = vec![0u8; size];
        // SAFETY: `buffer` has exactly the size NVRTC asked for.
        check(call, unsafe { fill(self.handle, buffer.as_mut_ptr().cast()) })?;
        Ok(buffer)
    }
}

/// NVRTC's text outputs end with a NUL that is counted in their size.
fn c_text(mut bytes: Vec<u8>) -> String {
    if let Some(end) = bytes.iter().position(|&b| b == 0) {
        bytes.truncate(end);
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

impl Drop for Program {
    fn drop(&mut self) {
        // SAFETY: the handle came from nvrtcCreateProgram and is destroyed exactly once; a failure
        // here can only leak the program, so it is ignored.
        unsafe {
            sys::nvrtcDestroyProgram(&mut self.handle);
        }
    }
}
