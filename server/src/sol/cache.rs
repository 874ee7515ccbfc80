//! Measured ceilings on disk: one JSON file per kind of device, in the user's cache directory,
//! so that each device is measured once, not once per workspace or per run.
//!
//! The file is keyed by what changes the figures: the device's name, its compute capability
//! and the driver version. A file that cannot be read back is ignored (and measured again),
//! never fatal.

use std::path::{Path, PathBuf};

use super::Ceilings;
use crate::gpu::DeviceInfo;

/// `$XDG_CACHE_HOME/cutune/ceilings` (`~/.cache/cutune/ceilings`) on Linux, the platform's
/// cache folder elsewhere; the system's temporary folder when there is no home.
pub fn default_dir() -> PathBuf {
    dirs::cache_dir().unwrap_or_else(std::env::temp_dir).join("cutune").join("ceilings")
}

/// The file for `device` in `dir`, e.g. `NVIDIA_H100_80GB_HBM3-sm_90-driver13000.json`.
pub fn file_for(dir: &Path, device: &DeviceInfo) -> PathBuf {
    let name: String = device.name.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect();
    dir.join(format!("{name}-{}-driver{}.json", device.arch(), device.driver_version))
}

/// The ceilings stored at `path`: `Ok(None)` when there is no file, `Err` (saying why) when
/// there is one that is not a valid record, so the caller can warn and measure again.
pub fn load(path: &Path) -> Result<Option<Ceilings>, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot read the cached ceilings {}: {e}", path.display())),
    };
    let ceilings: Ceilings = serde_json::from_str(&text).map_err(|e| format!("the cached ceilings {} are not readable ({e}); measuring again", path.display()))?;
    ceilings.check().map_err(|why| format!("the cached ceilings {} are not believable ({why}); measuring again", path.display()))?;
    if ceilings.copy_times.is_empty() {
        return Err(format!("the cached ceilings {} were measured by an earlier cutune, without the copy's times by size; measuring again", path.display()));
    }
    Ok(Some(ceilings))
}

/// Writes `ceilings` to `path` (through a temporary file, so a reader never sees half of it).
pub fn store(path: &Path, ceilings: &Ceilings) -> Result<(), String> {
    let text = serde_json::to_string_pretty(ceilings).map_err(|e| format!("cannot encode the ceilings: {e}"))?;
    if crate::compile::pool::write_atomically(path, text.as_bytes()) {
        Ok(())
    } else {
        Err(format!("cannot write the ceilings to {}", path.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sol::{CeilingsOrigin, CopyTime};

    fn h100() -> DeviceInfo {
        DeviceInfo { name: "NVIDIA H100 80GB HBM3".into(), driver_version: 13000, ..DeviceInfo::datasheet("sm_90").unwrap() }
    }

    fn measured() -> Ceilings {
        Ceilings {
            copy_gbs: 3001.0,
            fp32_tflops: 51.2,
            fp16_tflops: 102.4,
            copy_times: vec![CopyTime { bytes: 524288.0, us: 2.5 }, CopyTime { bytes: 2147483648.0, us: 715.5 }],
            origin: CeilingsOrigin::Measured { device: "NVIDIA H100 80GB HBM3".into(), measured_at: 1_795_000_000 },
        }
    }

    fn scratch(test: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("cutune-sol-cache-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn the_file_name_keys_device_architecture_and_driver() {
        let file = file_for(Path::new("/cache"), &h100());
        assert_eq!(file, Path::new("/cache/NVIDIA_H100_80GB_HBM3-sm_90-driver13000.json"));
        let newer = DeviceInfo { driver_version: 13010, ..h100() };
        assert_ne!(file_for(Path::new("/cache"), &newer), file);
        assert!(default_dir().ends_with("cutune/ceilings"));
    }

    #[test]
    fn ceilings_survive_a_round_trip_and_a_missing_file_is_none() {
        let dir = scratch("round-trip");
        let file = file_for(&dir, &h100());
        assert_eq!(load(&file), Ok(None));
        store(&file, &measured()).unwrap();
        assert_eq!(load(&file), Ok(Some(measured())));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_corrupt_or_unbelievable_file_is_an_error_to_warn_about() {
        let dir = scratch("corrupt");
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("broken.json");
        std::fs::write(&file, "{\"copy_gbs\": 3001, \"fp32").unwrap();
        let why = load(&file).unwrap_err();
        assert!(why.contains("broken.json are not readable") && why.ends_with("measuring again"), "{why}");

        let zero = Ceilings { copy_gbs: 0.0, ..measured() };
        std::fs::write(&file, serde_json::to_string(&zero).unwrap()).unwrap();
        let why = load(&file).unwrap_err();
        assert!(why.contains("not believable (the copy bandwidth is 0; it must be a positive number)"), "{why}");

        let unordered = Ceilings { copy_times: measured().copy_times.into_iter().rev().collect(), ..measured() };
        std::fs::write(&file, serde_json::to_string(&unordered).unwrap()).unwrap();
        let why = load(&file).unwrap_err();
        assert!(why.contains("copy time 2 is not for more bytes than the one before it"), "{why}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_file_from_before_the_copy_times_is_measured_again() {
        let dir = scratch("no-copy-times");
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("old.json");
        std::fs::write(&file, r#"{"copy_gbs": 3001.0, "fp32_tflops": 51.2, "fp16_tflops": 102.4, "origin": {"kind": "measured", "device": "NVIDIA H100 80GB HBM3", "measured_at": 1795000000}}"#).unwrap();
        let why = load(&file).unwrap_err();
        assert!(why.contains("old.json were measured by an earlier cutune, without the copy's times by size; measuring again"), "{why}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

/// The most recently measured ceilings in `dir` (any device), for a bound asked for away from
/// the GPU; `None` when none are cached there.
pub fn newest(dir: &Path) -> Option<Ceilings> {
    let measured_at = |c: &Ceilings| match c.origin {
        super::CeilingsOrigin::Measured { measured_at, .. } => measured_at,
        super::CeilingsOrigin::Datasheet { .. } => 0,
    };
    std::fs::read_dir(dir).ok()?.filter_map(|e| load(&e.ok()?.path()).ok().flatten()).max_by_key(measured_at)
}
