//! Getting a device's ceilings: from the cache, else by measuring them with the kernels of
//! `gpu/ceilings.cu`, else (labelled) from the datasheet table.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::anyhow;

use super::{cache, Ceilings, CeilingsOrigin, CopyTime};
use crate::compile::{CompileRequest, Nvrtc};
use crate::gpu::{Runner, CEILINGS_SOURCE};

/// Measured ceilings and where they are kept.
#[derive(Clone, Debug, PartialEq)]
pub struct Found {
    pub ceilings: Ceilings,
    /// The cache file they were read from or written to.
    pub file: PathBuf,
    /// Read from the cache, not measured now.
    pub cached: bool,
    /// What went wrong with the cache without stopping the measurement: a corrupt file (which
    /// was measured again) or one that could not be written.
    pub warnings: Vec<String>,
}

/// The runner's device's measured ceilings: from `cache_dir` unless `refresh`, else measured now
/// (compiling the ceiling kernels with `nvrtc`) and stored there. The error says why there are
/// none; callers that can do with datasheet figures use [`ceilings_for`].
pub fn measured(runner: &mut dyn Runner, nvrtc: Option<&Nvrtc>, cache_dir: &Path, refresh: bool) -> Result<Found, String> {
    let device = runner.device().clone();
    let file = cache::file_for(cache_dir, &device);
    let mut warnings = Vec::new();
    if !refresh {
        match cache::load(&file) {
            Ok(Some(ceilings)) => return Ok(Found { ceilings, file, cached: true, warnings }),
            Ok(None) => {}
            Err(why) => warnings.push(why),
        }
    }
    let nvrtc = nvrtc.ok_or_else(|| "NVRTC was not found, so the ceiling kernels cannot be compiled".to_string())?;
    let request = CompileRequest::new(CEILINGS_SOURCE, "cutune_ceilings.cu", device.arch());
    let compiled = nvrtc.compile(&request).map_err(|f| format!("cutune's ceiling kernels do not compile with this NVRTC: {f}"))?;
    let image = compiled.cubin.ok_or_else(|| "NVRTC returned no cubin for the ceiling kernels".to_string())?;
    // The worker reads cubins from files; this one is needed only for the measurement (and is
    // named for it alone, should two measurements run at once).
    static MEASUREMENTS: AtomicU64 = AtomicU64::new(0);
    let number = MEASUREMENTS.fetch_add(1, Ordering::Relaxed);
    let cubin = std::env::temp_dir().join(format!("cutune-ceilings-{}-{number}-{}.cubin", std::process::id(), device.arch()));
    std::fs::write(&cubin, &image).map_err(|e| format!("cannot write the ceiling kernels to {}: {e}", cubin.display()))?;
    let result = runner.ceilings(&cubin);
    let _ = std::fs::remove_file(&cubin);
    let measured = result.map_err(|e| format!("measuring the ceilings of {} failed: {e:#}", device.name))?;
    let origin = CeilingsOrigin::Measured { device: device.name.clone(), measured_at: crate::store::unix_now().max(0) as u64 };
    let ceilings = Ceilings {
        copy_gbs: measured.copy_gbs,
        fp32_tflops: measured.fp32_tflops,
        fp16_tflops: measured.fp16_tflops,
        copy_times: never_slower_for_less(measured.copy_times),
        origin,
    };
    ceilings.check().map_err(|why| format!("the ceilings measured on {} are not believable: {why}", device.name))?;
    if let Err(why) = cache::store(&file, &ceilings) {
        warnings.push(format!("{why}; they will be measured again next time"));
    }
    Ok(Found { ceilings, file, cached: false, warnings })
}

/// The ceilings to bound the runner's device with: [`measured`] ones when there are, else the
/// datasheet figures for the device (labelled as such), with a warning saying why. An error
/// only when neither exists.
pub fn ceilings_for(runner: &mut dyn Runner, nvrtc: Option<&Nvrtc>, cache_dir: &Path, refresh: bool) -> anyhow::Result<Ceilings> {
    match measured(runner, nvrtc, cache_dir, refresh) {
        Ok(found) => {
            for warning in &found.warnings {
                tracing::warn!("{warning}");
            }
            Ok(found.ceilings)
        }
        Err(why) => {
            let name = &runner.device().name;
            match Ceilings::datasheet(name) {
                Some(datasheet) => {
                    tracing::warn!("{why}; using {}", datasheet.origin);
                    Ok(datasheet)
                }
                None => Err(anyhow!("{why}; and cutune has no datasheet figures for {name}, so there is no speed-of-light bound")),
            }
        }
    }
}

/// The copy times with each lowered to the least time of any larger copy, so that moving fewer
/// bytes is never bounded by more time than moving more (timing noise can say otherwise, and
/// a bound must stay below what a correct kernel reaches).
pub fn never_slower_for_less(mut times: Vec<CopyTime>) -> Vec<CopyTime> {
    times.sort_by(|a, b| a.bytes.total_cmp(&b.bytes));
    for i in (0..times.len().saturating_sub(1)).rev() {
        times[i].us = times[i].us.min(times[i + 1].us);
    }
    times
}
