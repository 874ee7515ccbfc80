//! Kernel, copy and set times from CUPTI's activity records.
//!
//! Records are read by offset: every kernel record from `CUpti_ActivityKernel4` to `…9` (and
//! the copy and set records) starts with the same packed fields, and only those are read.

use std::alloc::{alloc, dealloc, Layout};
use std::collections::HashMap;
use std::ffi::{c_char, c_void, CStr};

use crate::report::KernelActivity;

use super::ffi::*;

const BUFFER_BYTES: usize = 8 << 20;
const RECORD_ALIGN: usize = 8;

const OFFSET_START: usize = 16;
const OFFSET_END: usize = 24;
const OFFSET_KERNEL_NAME: usize = 104;

#[derive(Default)]
pub struct Totals {
    pub kernels: HashMap<String, KernelActivity>,
    pub memcpy_ns: u64,
    pub memset_ns: u64,
}

impl Totals {
    fn add_kernel(&mut self, name: &str, ns: u64) {
        let entry = self
            .kernels
            .entry(name.to_string())
            .or_insert_with(|| KernelActivity { name: name.to_string(), launches: 0, total_ns: 0, min_ns: u64::MAX, max_ns: 0 });
        entry.launches += 1;
        entry.total_ns += ns;
        entry.min_ns = entry.min_ns.min(ns);
        entry.max_ns = entry.max_ns.max(ns);
    }
}

pub unsafe extern "C" fn buffer_requested(buffer: *mut *mut u8, size: *mut usize, max_records: *mut usize) {
    let layout = Layout::from_size_align(BUFFER_BYTES, RECORD_ALIGN).expect("a valid layout");
    *buffer = alloc(layout);
    *size = if (*buffer).is_null() { 0 } else { BUFFER_BYTES };
    *max_records = 0;
}

pub unsafe extern "C" fn buffer_completed(_context: *mut c_void, _stream: u32, buffer: *mut u8, size: usize, valid: usize) {
    let _ = std::panic::catch_unwind(|| {
        if let Some(runtime) = super::RUNTIME.get() {
            let mut totals = super::lock(&super::TOTALS);
            read_records(&runtime.cupti, buffer, valid, &mut totals);
        }
    });
    if !buffer.is_null() && size > 0 {
        dealloc(buffer, Layout::from_size_align(size, RECORD_ALIGN).expect("a valid layout"));
    }
}

unsafe fn read_records(cupti: &Cupti, buffer: *mut u8, valid: usize, totals: &mut Totals) {
    let mut record: *mut u8 = std::ptr::null_mut();
    while (cupti.next_record)(buffer, valid, &mut record) == CUPTI_SUCCESS {
        let kind = (record as *const u32).read_unaligned();
        let start = (record.add(OFFSET_START) as *const u64).read_unaligned();
        let end = (record.add(OFFSET_END) as *const u64).read_unaligned();
        let ns = end.saturating_sub(start);
        match kind {
            ACTIVITY_KIND_CONCURRENT_KERNEL => {
                let name = (record.add(OFFSET_KERNEL_NAME) as *const *const c_char).read_unaligned();
                let name = if name.is_null() { "(unnamed kernel)".into() } else { CStr::from_ptr(name).to_string_lossy() };
                totals.add_kernel(&name, ns);
            }
            ACTIVITY_KIND_MEMCPY => totals.memcpy_ns += ns,
            ACTIVITY_KIND_MEMSET => totals.memset_ns += ns,
            _ => {}
        }
    }
}
