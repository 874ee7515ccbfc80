//! The speed of light: the device's ceilings (measured once per device and cached, or datasheet
//! figures, always labelled as such) and the bound they put on one launch,
//! `max(bytes / bandwidth, flops / rate)`. See `docs/sol.md`.
//!
//! Everything here but [`ceilings_for`] and [`measured`] is pure arithmetic on the spec.

pub mod cache;
mod datasheet;
mod measure;

use std::fmt;

use serde::{Deserialize, Serialize};

pub use measure::{ceilings_for, measured, Found};

use crate::gpu::worker::data::element_bytes;
pub use crate::gpu::CopyTime;
use crate::space::{self, Configuration};
use crate::spec::{expr, KernelSpec, Role, Shape, SolCompute};

/// What the device can do at best: the rates the bound divides by.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Ceilings {
    /// Device-to-device copy bandwidth, bytes read plus bytes written per second, in GB/s
    /// (10⁹ bytes).
    pub copy_gbs: f64,
    /// Scalar `float` FMA rate, an FMA counting as two flops.
    pub fp32_tflops: f64,
    /// Packed `half2` FMA rate, an FMA counting as four flops.
    pub fp16_tflops: f64,
    /// The fastest copy at each of a range of sizes, smallest first, each after an L2 flush;
    /// empty for datasheet figures (and for caches written before cutune measured them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub copy_times: Vec<CopyTime>,
    pub origin: CeilingsOrigin,
}

/// Where ceilings come from. Datasheet figures are never presented as measurements.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum CeilingsOrigin {
    /// Measured by cutune's own kernels on `device`, at `measured_at` (Unix seconds).
    Measured { device: String, measured_at: u64 },
    /// Published peak figures of the table row `entry`, e.g. `H100 SXM`.
    Datasheet { entry: String },
}

impl Ceilings {
    /// The published figures for a device name as the driver reports it (`NVIDIA H100 80GB
    /// HBM3`), or `None` when the table does not know the device. The bandwidth is the DRAM
    /// peak, which no copy reaches: a bound from it is looser than a measured one.
    pub fn datasheet(device_name: &str) -> Option<Ceilings> {
        let (entry, copy_gbs, fp32_tflops, fp16_tflops) = datasheet::lookup(device_name)?;
        Some(Ceilings { copy_gbs, fp32_tflops, fp16_tflops, copy_times: Vec::new(), origin: CeilingsOrigin::Datasheet { entry: entry.to_string() } })
    }

    /// The least time moving `bytes` (read plus written) can take, in µs: the copy times by size
    /// where there are (interpolated between sizes, in proportion below the smallest and above
    /// the largest), else `bytes` at the copy bandwidth.
    ///
    /// A small transfer pays the launch and the ramp to full bandwidth as a copy does: a
    /// 34 MB kernel cannot stream at the rate of a 2 GB copy, and a bound that says it can
    /// leaves a gap no kernel closes.
    pub fn copy_us(&self, bytes: f64) -> f64 {
        let (Some(first), Some(last)) = (self.copy_times.first(), self.copy_times.last()) else {
            // GB/s = 10³ bytes per µs.
            return bytes / (self.copy_gbs * 1e3);
        };
        if bytes <= first.bytes {
            return bytes * first.us / first.bytes;
        }
        if bytes >= last.bytes {
            return bytes * last.us / last.bytes;
        }
        let above = self.copy_times.partition_point(|time| time.bytes < bytes);
        let (low, high) = (self.copy_times[above - 1], self.copy_times[above]);
        low.us + (high.us - low.us) * (bytes - low.bytes) / (high.bytes - low.bytes)
    }

    /// The arithmetic rate for `compute`, in TFLOPS.
    pub fn rate_tflops(&self, compute: SolCompute) -> f64 {
        match compute {
            SolCompute::Fp32 => self.fp32_tflops,
            SolCompute::Fp16 => self.fp16_tflops,
        }
    }

    /// What the memory bound of `bytes` moved in `memory_us` rests on, e.g. `a measured copy of
    /// the same bytes: 2472 GB/s at that size`, or [`Ceilings::describe_bandwidth`] when there
    /// are no copy times by size.
    pub fn describe_copy(&self, bytes: f64, memory_us: f64) -> String {
        if self.copy_times.is_empty() || !(memory_us > 0.0) {
            return self.describe_bandwidth();
        }
        format!("a measured copy of the same bytes: {:.0} GB/s at that size", bytes / (memory_us * 1e3))
    }

    /// e.g. `3001 GB/s measured copy bandwidth` or `3350 GB/s datasheet memory bandwidth of the
    /// H100 SXM`.
    pub fn describe_bandwidth(&self) -> String {
        match &self.origin {
            CeilingsOrigin::Measured { .. } => format!("{:.0} GB/s measured copy bandwidth", self.copy_gbs),
            CeilingsOrigin::Datasheet { entry } => format!("{:.0} GB/s datasheet memory bandwidth of the {entry}", self.copy_gbs),
        }
    }

    /// e.g. `51.2 TFLOPS measured FP32 rate` or `66.9 TFLOPS datasheet FP32 rate of the H100 SXM`.
    pub fn describe_rate(&self, compute: SolCompute) -> String {
        let rate = self.rate_tflops(compute);
        let kind = compute.as_str().to_ascii_uppercase();
        match &self.origin {
            CeilingsOrigin::Measured { .. } => format!("{rate:.1} TFLOPS measured {kind} rate"),
            CeilingsOrigin::Datasheet { entry } => format!("{rate:.1} TFLOPS datasheet {kind} rate of the {entry}"),
        }
    }

    /// Positive and finite, copy times by increasing size: usable as divisors. A cache file or a
    /// worker that says otherwise is not believed.
    pub fn check(&self) -> Result<(), String> {
        for (what, value) in [("copy bandwidth", self.copy_gbs), ("FP32 rate", self.fp32_tflops), ("FP16 rate", self.fp16_tflops)] {
            if !(value.is_finite() && value > 0.0) {
                return Err(format!("the {what} is {value}; it must be a positive number"));
            }
        }
        for (i, time) in self.copy_times.iter().enumerate() {
            if !(time.bytes.is_finite() && time.bytes > 0.0 && time.us.is_finite() && time.us > 0.0) {
                return Err(format!("copy time {} is {} µs for {} bytes; both must be positive numbers", i + 1, time.us, time.bytes));
            }
            if i > 0 && time.bytes <= self.copy_times[i - 1].bytes {
                return Err(format!("copy time {} is not for more bytes than the one before it", i + 1));
            }
        }
        Ok(())
    }
}

impl fmt::Display for CeilingsOrigin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CeilingsOrigin::Measured { device, measured_at } => {
                let when = std::time::UNIX_EPOCH + std::time::Duration::from_secs(*measured_at);
                write!(f, "measured on {device} at {}", humantime::format_rfc3339_seconds(when))
            }
            CeilingsOrigin::Datasheet { entry } => write!(f, "datasheet figures of the {entry}, not measured"),
        }
    }
}

impl fmt::Display for Ceilings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "copy {:.0} GB/s, FP32 {:.1} TFLOPS, FP16 {:.1} TFLOPS ({})", self.copy_gbs, self.fp32_tflops, self.fp16_tflops, self.origin)
    }
}

/// Which ceiling a launch meets first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Limit {
    Memory,
    Compute,
}

/// The least time one launch can take on a device.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Bound {
    /// Bytes moved to and from device memory.
    pub bytes: f64,
    pub flops: f64,
    /// The rate the flops are bounded by.
    pub compute: SolCompute,
    /// The time a copy of `bytes` takes at best (see [`Ceilings::copy_us`]).
    pub memory_us: f64,
    /// `flops` at the arithmetic rate.
    pub compute_us: f64,
}

impl Bound {
    pub fn bound_us(&self) -> f64 {
        self.memory_us.max(self.compute_us)
    }

    /// Memory on a tie (and when there are no flops).
    pub fn limit(&self) -> Limit {
        if self.compute_us > self.memory_us { Limit::Compute } else { Limit::Memory }
    }
}

/// The bound of `config` (the default configuration when `None`) on `shape`.
///
/// Bytes come from `sol.bytes` when the spec has it. Otherwise every buffer argument counts at
/// its length times its element size, once for an input or an output and twice for an in-out
/// (read, then written), and every texture once, at its texels times its texel size.
/// Templatize gives a buffer the role the kernel's body shows (following aliases, casts and the
/// file's own functions), so that in-out means read and written. Flops come from
/// `sol.flops`, else 0, at the rate `sol.compute` names (FP32 by default).
///
/// Expressions see the shape's sizes, the configuration's parameters and the scalar arguments,
/// as grid and block do. An error names the field and the expression.
pub fn bound_for(kernel: &KernelSpec, shape: &Shape, config: Option<&Configuration>, ceilings: &Ceilings) -> Result<Bound, String> {
    ceilings.check()?;
    let default;
    let config = match config {
        Some(config) => config,
        None => {
            default = Configuration::default_of(kernel);
            &default
        }
    };
    let env = space::environment(kernel, shape, config);
    let lookup = |name: &str| env.get(name).copied();
    let evaluate = |what: &str, text: &str| -> Result<f64, String> {
        let value = expr::parse(text)
            .map_err(|e| e.message)
            .and_then(|e| e.eval(&lookup).map_err(|e| e.message))
            .map_err(|why| format!("{what} `{text}`: {why}"))?
            .as_f64();
        if value.is_finite() && value >= 0.0 {
            Ok(value)
        } else {
            Err(format!("{what} `{text}` is {value}; it must be a number ≥ 0"))
        }
    };
    let bytes = match &kernel.sol.bytes {
        Some(text) => evaluate("sol.bytes", text)?,
        None => {
            let mut bytes = 0.0;
            for arg in kernel.leaf_args() {
                if let Some(length) = &arg.length {
                    // An in-out buffer is read and then written: its bytes cross twice.
                    let passes = if arg.role == Some(Role::InOut) { 2.0 } else { 1.0 };
                    bytes += passes * evaluate(&format!("length of argument `{}`", arg.name), length)? * element_bytes(arg.dtype()) as f64;
                }
                if let Some(texture) = &arg.texture {
                    let mut values = texture.channels as f64 * element_bytes(arg.dtype()) as f64;
                    for (i, extent) in texture.extent.iter().enumerate() {
                        values *= evaluate(&format!("extent {} of texture `{}`", i + 1, arg.name), extent)?;
                    }
                    bytes += values;
                }
            }
            bytes
        }
    };
    let flops = match &kernel.sol.flops {
        Some(text) => evaluate("sol.flops", text)?,
        None => 0.0,
    };
    let compute = kernel.sol.compute.unwrap_or_default();
    Ok(Bound {
        bytes,
        flops,
        compute,
        memory_us: ceilings.copy_us(bytes),
        // TFLOPS = 10⁶ flops per µs.
        compute_us: flops / (ceilings.rate_tflops(compute) * 1e6),
    })
}

/// How close a launch of `time_us` comes to its bound: 100 at the speed of light, above 100
/// when it seems faster (see [`faster_than_light`]).
pub fn percent_of_sol(bound_us: f64, time_us: f64) -> f64 {
    100.0 * bound_us / time_us
}

/// The least noise margin of [`faster_than_light`], as a fraction of the bound.
pub const MIN_MARGIN: f64 = 0.05;

/// Whether a time is below the bound by more than measurement noise, so that the result is
/// more likely wrong (work skipped, a broken check, a gamed benchmark) than fast.
///
/// The margin is the larger of [`MIN_MARGIN`] and three times `spread` (the timing's relative
/// interquartile range). The spread covers the kernel's own run-to-run jitter; the 5% floor
/// covers what it cannot see: the ceilings are measured too (at another moment's clocks), and a
/// tuned kernel can stream slightly faster than the simple copy that measured the bandwidth.
pub fn faster_than_light(time_us: f64, bound_us: f64, spread: f64) -> bool {
    let spread = if spread.is_finite() { spread.max(0.0) } else { 0.0 };
    let margin = MIN_MARGIN.max(3.0 * spread);
    time_us < bound_us * (1.0 - margin)
}

/// The bound of a tuning objective, the sum of the medians over the spec's shapes: the sum of
/// each shape's launch bound, with the ceilings it was computed from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunBound {
    /// Σ max(memory, compute) over the shapes.
    pub bound_us: f64,
    /// Σ bytes moved over the shapes (0 in runs stored before it was kept).
    #[serde(default)]
    pub bytes: f64,
    pub memory_us: f64,
    pub compute_us: f64,
    pub compute: SolCompute,
    pub ceilings: Ceilings,
}

impl RunBound {
    /// The bound of the problems `kernel` is measured on (its shapes, then its captured
    /// launches), with the default configuration.
    pub fn of(kernel: &KernelSpec, ceilings: &Ceilings) -> Result<RunBound, String> {
        let mut run = RunBound { bound_us: 0.0, bytes: 0.0, memory_us: 0.0, compute_us: 0.0, compute: kernel.sol.compute.unwrap_or_default(), ceilings: ceilings.clone() };
        for (index, shape) in kernel.problem_shapes().enumerate() {
            let bound = bound_for(kernel, shape, None, ceilings).map_err(|why| format!("shape {}: {why}", index + 1))?;
            run.bound_us += bound.bound_us();
            run.bytes += bound.bytes;
            run.memory_us += bound.memory_us;
            run.compute_us += bound.compute_us;
        }
        Ok(run)
    }

    /// Memory on a tie (and when there are no flops).
    pub fn limit(&self) -> Limit {
        if self.compute_us > self.memory_us { Limit::Compute } else { Limit::Memory }
    }

    pub fn percent(&self, time_us: f64) -> f64 {
        percent_of_sol(self.bound_us, time_us)
    }

    pub fn faster_than_light(&self, time_us: f64, spread: f64) -> bool {
        faster_than_light(time_us, self.bound_us, spread)
    }

    /// One line for a hover: which ceiling limits the kernel and how close `time_us` comes,
    /// e.g. `memory-bound: 93% of the 89.4 µs bound (a measured copy of the same bytes: 3001
    /// GB/s at that size)`.
    pub fn headroom(&self, time_us: f64) -> String {
        let (limit, ceiling) = match self.limit() {
            Limit::Memory => ("memory-bound", self.ceilings.describe_copy(self.bytes, self.memory_us)),
            Limit::Compute => ("compute-bound", self.ceilings.describe_rate(self.compute)),
        };
        format!("{limit}: {:.0}% of the {} bound ({ceiling})", self.percent(time_us), format_us(self.bound_us))
    }
}

/// Microseconds with three significant figures or more, e.g. `89.4 µs`, `2.15 µs`.
pub fn format_us(us: f64) -> String {
    if us < 10.0 { format!("{us:.2} µs") } else { format!("{us:.1} µs") }
}

#[cfg(test)]
mod tests;
