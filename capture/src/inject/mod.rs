//! The injected side: set up CUPTI when the driver calls [`InitializeInjection`], capture the
//! launches asked for, and write the profile when the program exits.

mod activity;
mod capture;
mod ffi;
mod launch;

use std::ffi::{c_int, c_void, CStr};
use std::path::PathBuf;
use std::sync::{LazyLock, Mutex, MutexGuard, OnceLock};

use crate::report::{profile_file_name, RunProfile};

use activity::Totals;
use ffi::*;

pub(crate) struct Config {
    out: PathBuf,
    kernels: Vec<String>,
    shapes_per_kernel: usize,
    cap_bytes: u64,
    debug: bool,
}

pub(crate) struct Runtime {
    config: Config,
    cupti: Cupti,
    driver: Driver,
}

static RUNTIME: OnceLock<Runtime> = OnceLock::new();
static TOTALS: LazyLock<Mutex<Totals>> = LazyLock::new(Default::default);
static CAPTURES: Mutex<capture::Ledger> = Mutex::new(capture::Ledger::new());

/// A lock that survives a panic elsewhere: the data is counts and names, never half-updated.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

impl Config {
    fn from_env() -> Result<Config, String> {
        let out = std::env::var_os(crate::ENV_OUT).ok_or(format!("{} is not set; run the program through `cutune profile`", crate::ENV_OUT))?;
        let number = |name: &str, default: u64| -> Result<u64, String> {
            match std::env::var(name) {
                Ok(text) => text.trim().parse().map_err(|_| format!("{name}={text} is not a whole number")),
                Err(_) => Ok(default),
            }
        };
        let kernels = std::env::var(crate::ENV_CAPTURE).unwrap_or_default();
        Ok(Config {
            out: PathBuf::from(out),
            kernels: kernels.split(',').map(str::trim).filter(|k| !k.is_empty()).map(String::from).collect(),
            shapes_per_kernel: number(crate::ENV_CAPTURE_SHAPES, 1)?.max(1) as usize,
            cap_bytes: number(crate::ENV_CAPTURE_BYTES, 1 << 30)?,
            debug: std::env::var_os(crate::ENV_DEBUG).is_some(),
        })
    }

    fn log(&self, message: impl FnOnce() -> String) {
        if self.debug {
            eprintln!("cutune capture: {}", message());
        }
    }
}

/// Called by the CUDA driver, once, when the program initialises CUDA.
#[no_mangle]
pub extern "C" fn InitializeInjection() -> c_int {
    match std::panic::catch_unwind(initialize) {
        Ok(Ok(())) => 1,
        Ok(Err(problem)) => {
            report_failure(&problem);
            0
        }
        Err(_) => {
            report_failure("the capture library panicked while starting");
            0
        }
    }
}

fn initialize() -> Result<(), String> {
    let config = Config::from_env()?;
    let cupti_path = std::env::var(crate::ENV_CUPTI).unwrap_or_else(|_| "libcupti.so".into());
    let cupti = Cupti::load(&cupti_path)?;
    let driver = Driver::load()?;
    config.log(|| format!("loaded CUPTI from {cupti_path}; capturing {:?}", config.kernels));
    let capturing = !config.kernels.is_empty();
    let runtime = RUNTIME.get_or_init(|| Runtime { config, cupti, driver });
    let cupti = &runtime.cupti;
    // SAFETY: the callbacks match CUPTI's declared signatures and live as long as the process.
    unsafe {
        cupti.check("cuptiActivityRegisterCallbacks", (cupti.register_buffers)(activity::buffer_requested, activity::buffer_completed))?;
        for kind in [ACTIVITY_KIND_CONCURRENT_KERNEL, ACTIVITY_KIND_MEMCPY, ACTIVITY_KIND_MEMSET] {
            cupti.check("cuptiActivityEnable", (cupti.enable_activity)(kind))?;
        }
        if capturing {
            let mut subscriber: *mut c_void = std::ptr::null_mut();
            cupti.check("cuptiSubscribe", (cupti.subscribe)(&mut subscriber, on_callback, std::ptr::null_mut()))?;
            for cbid in LAUNCH_CBIDS {
                cupti.check("cuptiEnableCallback", (cupti.enable_callback)(1, subscriber, DOMAIN_DRIVER_API, cbid))?;
            }
        }
        if libc::atexit(at_exit) != 0 {
            return Err("cannot register the exit handler that writes the profile".into());
        }
    }
    Ok(())
}

unsafe extern "C" fn on_callback(_userdata: *mut c_void, domain: u32, cbid: u32, data: *const c_void) {
    if domain != DOMAIN_DRIVER_API || data.is_null() {
        return;
    }
    let Some(runtime) = RUNTIME.get() else { return };
    let data = &*(data as *const CallbackData);
    let _ = std::panic::catch_unwind(|| match data.site {
        API_ENTER => capture::launch_entered(runtime, cbid, data),
        API_EXIT => capture::launch_exited(runtime, data),
        _ => {}
    });
}

extern "C" fn at_exit() {
    let _ = std::panic::catch_unwind(|| {
        let Some(runtime) = RUNTIME.get() else { return };
        let cupti = &runtime.cupti;
        // SAFETY: plain calls into CUPTI; the buffers come back through `buffer_completed`.
        let (version, dropped) = unsafe {
            let _ = (cupti.flush_all)(ACTIVITY_FLAG_FLUSH_FORCED);
            let (mut version, mut dropped) = (0u32, 0usize);
            let _ = (cupti.version)(&mut version);
            let _ = (cupti.dropped_records)(std::ptr::null_mut(), 0, &mut dropped);
            (version, dropped as u64)
        };
        let totals = std::mem::take(&mut *lock(&TOTALS));
        let ledger = std::mem::take(&mut *lock(&CAPTURES));
        let mut kernels: Vec<_> = totals.kernels.into_values().collect();
        kernels.sort_by(|a, b| b.total_ns.cmp(&a.total_ns).then_with(|| a.name.cmp(&b.name)));
        let profile = RunProfile {
            pid: std::process::id(),
            cupti_version: version,
            kernels,
            memcpy_ns: totals.memcpy_ns,
            memset_ns: totals.memset_ns,
            dropped_records: dropped,
            captures: ledger.files,
            problems: ledger.problems,
        };
        if let Err(e) = write_profile(&runtime.config, &profile) {
            eprintln!("cutune capture: cannot write the profile: {e}");
        }
    });
}

fn write_profile(config: &Config, profile: &RunProfile) -> std::io::Result<()> {
    let path = config.out.join(profile_file_name(profile.pid));
    let temporary = path.with_extension("partial");
    std::fs::write(&temporary, serde_json::to_vec_pretty(profile)?)?;
    std::fs::rename(&temporary, &path)?;
    config.log(|| format!("wrote {}", path.display()));
    Ok(())
}

/// A start that failed is written where `cutune profile` looks, so it can say why.
fn report_failure(problem: &str) {
    eprintln!("cutune capture: {problem}");
    if let Some(out) = std::env::var_os(crate::ENV_OUT) {
        let _ = std::fs::write(PathBuf::from(out).join(format!("failure-{}.txt", std::process::id())), problem);
    }
}

/// The C string at `text`, or `None` for a null pointer.
unsafe fn c_text<'a>(text: *const std::ffi::c_char) -> Option<&'a str> {
    (!text.is_null()).then(|| CStr::from_ptr(text).to_str().ok()).flatten()
}
