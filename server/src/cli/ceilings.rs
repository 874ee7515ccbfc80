//! `cutune ceilings [--device N] [--refresh] [--json]`: the device's measured ceilings (copy
//! bandwidth, FP32 and FP16 rates) beside its datasheet figures, the copy's times by size, and
//! where they are cached.

use std::fmt::Write;
use std::path::PathBuf;

use anyhow::{bail, Result};

use crate::compile::Nvrtc;
use crate::gpu::client::{StartError, WorkerRunner};
use crate::gpu::{DeviceInfo, Runner};
use crate::sol::{self, cache, Ceilings, CeilingsOrigin, Found};

#[derive(clap::Args)]
pub struct CeilingsArgs {
    /// The CUDA device to measure.
    #[arg(long, default_value_t = 0)]
    pub device: u32,
    /// Measure again instead of reading the cached figures.
    #[arg(long)]
    pub refresh: bool,
    /// The NVRTC library to use (otherwise `CUTUNE_NVRTC`, `CUDA_HOME`, the loader path, pip).
    #[arg(long)]
    pub nvrtc: Option<PathBuf>,
    #[arg(long)]
    pub json: bool,
}

/// Prints the report; fails (non-zero exit) without a device, or when the ceilings could not be
/// measured (after printing the datasheet figures, labelled).
pub fn run(args: &CeilingsArgs) -> Result<()> {
    let mut runner = match WorkerRunner::start(args.device) {
        Ok(runner) => runner,
        Err(StartError::NoDevice(why)) => bail!("no CUDA device was found, so there are no ceilings to measure: {why}"),
        Err(StartError::Failed(why)) => bail!("{why}"),
    };
    let nvrtc = Nvrtc::locate(args.nvrtc.as_deref());
    let dir = cache::default_dir();
    let device = runner.device().clone();
    let measured = sol::measured(&mut runner, nvrtc.as_ref().ok(), &dir, args.refresh).map_err(|why| match &nvrtc {
        Err(not_found) => format!("{why}\n{not_found}"),
        Ok(_) => why,
    });
    let datasheet = Ceilings::datasheet(&device.name);
    if let Ok(found) = &measured {
        for warning in &found.warnings {
            eprintln!("warning: {warning}");
        }
    }
    if args.json {
        let (found, error) = match &measured {
            Ok(found) => (Some(found), None),
            Err(why) => (None, Some(why)),
        };
        let report = serde_json::json!({
            "device": device,
            "measured": found.map(|f| &f.ceilings),
            "cached": found.is_some_and(|f| f.cached),
            "cache_file": cache::file_for(&dir, &device),
            "warnings": found.map_or(&[][..], |f| &f.warnings[..]),
            "error": error,
            "datasheet": datasheet,
        });
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", render(&device, measured.as_ref().ok(), datasheet.as_ref()));
    }
    match measured {
        Ok(_) => Ok(()),
        Err(why) => bail!("the ceilings of {} could not be measured: {why}", device.name),
    }
}

/// e.g. `0.5 MB`, `67.1 MB`, `2147.5 MB` (10⁶ bytes, as GB/s counts them).
fn megabytes(bytes: f64) -> String {
    format!("{:.1} MB", bytes / 1e6)
}

/// The two columns, measured and datasheet, the copy's times by size, and where the
/// measurement is kept.
fn render(device: &DeviceInfo, measured: Option<&Found>, datasheet: Option<&Ceilings>) -> String {
    let mut out = String::new();
    let driver = format!("{}.{}", device.driver_version / 1000, device.driver_version % 1000 / 10);
    let _ = writeln!(out, "{} (device {}, {}, driver {driver})", device.name, device.ordinal, device.arch());
    let heading = match datasheet.map(|d| &d.origin) {
        Some(CeilingsOrigin::Datasheet { entry }) => format!("datasheet ({entry})"),
        _ => "datasheet".to_string(),
    };
    let figures = |ceilings: Option<&Ceilings>| match ceilings {
        Some(c) => [format!("{:.0} GB/s", c.copy_gbs), format!("{:.1} TFLOPS", c.fp32_tflops), format!("{:.1} TFLOPS", c.fp16_tflops)],
        None => ["—".to_string(), "—".to_string(), "—".to_string()],
    };
    let (left, right) = (figures(measured.map(|f| &f.ceilings)), figures(datasheet));
    let _ = writeln!(out, "  {:<16} {:>14}   {heading}", "", "measured");
    for (i, name) in ["copy bandwidth", "FP32 rate", "FP16 rate"].iter().enumerate() {
        let _ = writeln!(out, "  {name:<16} {:>14}   {}", left[i], right[i]);
    }
    if datasheet.is_none() {
        let _ = writeln!(out, "cutune has no datasheet figures for this device.");
    }
    if let Some(found) = measured.filter(|found| !found.ceilings.copy_times.is_empty()) {
        let _ = writeln!(out, "  copy time by size (bytes read plus written, after an L2 flush):");
        for time in &found.ceilings.copy_times {
            let _ = writeln!(out, "    {:>9}  {:>10}  {:>5.0} GB/s", megabytes(time.bytes), sol::format_us(time.us), time.bytes / (time.us * 1e3));
        }
    }
    if let Some(found) = measured {
        let when = if found.cached { found.ceilings.origin.to_string() } else { "measured now".to_string() };
        let _ = writeln!(out, "{when}; cached in {} (--refresh measures again)", found.file.display());
        let _ = writeln!(out, "copy bandwidth counts bytes read plus bytes written; the rates are non-tensor FMA (FP16 as half2).");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_puts_measured_beside_datasheet_figures() {
        let device = DeviceInfo { name: "NVIDIA H100 80GB HBM3".into(), driver_version: 13000, ..DeviceInfo::datasheet("sm_90").unwrap() };
        let ceilings = Ceilings {
            copy_gbs: 3001.2,
            fp32_tflops: 60.04,
            fp16_tflops: 120.1,
            copy_times: vec![crate::sol::CopyTime { bytes: 524288.0, us: 2.5 }, crate::sol::CopyTime { bytes: 67108864.0, us: 27.0 }],
            origin: CeilingsOrigin::Measured { device: device.name.clone(), measured_at: 1_795_000_000 },
        };
        let found = Found { ceilings, file: "/home/me/.cache/cutune/ceilings/h100.json".into(), cached: true, warnings: vec![] };
        let text = render(&device, Some(&found), Ceilings::datasheet(&device.name).as_ref());
        let expected = "\
NVIDIA H100 80GB HBM3 (device 0, sm_90, driver 13.0)
                         measured   datasheet (H100 SXM)
  copy bandwidth        3001 GB/s   3350 GB/s
  FP32 rate           60.0 TFLOPS   66.9 TFLOPS
  FP16 rate          120.1 TFLOPS   133.8 TFLOPS
  copy time by size (bytes read plus written, after an L2 flush):
       0.5 MB     2.50 µs    210 GB/s
      67.1 MB     27.0 µs   2486 GB/s
measured on NVIDIA H100 80GB HBM3 at 2026-11-18T11:06:40Z; cached in /home/me/.cache/cutune/ceilings/h100.json (--refresh measures again)
copy bandwidth counts bytes read plus bytes written; the rates are non-tensor FMA (FP16 as half2).
";
        assert_eq!(text, expected);

        let unknown = DeviceInfo { name: "Some Future GPU".into(), ..device };
        let text = render(&unknown, None, None);
        assert!(text.contains("  copy bandwidth                —   —\n"), "{text}");
        assert!(text.contains("no datasheet figures for this device"), "{text}");
    }
}
