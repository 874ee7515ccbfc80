//! Which kernels a program spends its GPU time in, ranked by share (Amdahl's law: a kernel's
//! share bounds what tuning it can gain the program), which of them the workspace's sources
//! define, and what they were launched with.
//!
//! Times come from a run under the capture library ([`run`]) or from a profile the user already
//! has ([`import`]); the ranking is the same either way.

mod demangle;
pub mod import;
mod locate;
pub mod captured;
pub mod job;
pub mod run;
pub mod share;

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Serialize;

pub use demangle::{kernel_name, KernelName};
pub(crate) use demangle::split_template_args;
pub use locate::{locate_kernels, SourceKernel};

/// One kernel's GPU time as a profiler reports it, under the name it gives.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelTime {
    pub name: String,
    pub launches: u64,
    pub total_ns: u64,
}

/// GPU time of a run or an imported profile.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GpuTimes {
    pub kernels: Vec<KernelTime>,
    /// Copies and sets: GPU time that no kernel accounts for.
    pub other_ns: u64,
}

/// A kernel in the ranking.
#[derive(Debug, Clone, Serialize)]
pub struct RankedKernel {
    /// The name the profiler gave (mangled when it had it).
    pub name: String,
    pub kernel: KernelName,
    pub launches: u64,
    pub total_ns: u64,
    /// Of the GPU time: kernels, copies and sets.
    pub share: f64,
    /// Where the workspace defines it, when it does.
    pub source: Option<SourceKernel>,
    /// What its tuning gains the program, once cutune has tuned it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tuned: Option<share::TunedGain>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Ranking {
    pub kernels: Vec<RankedKernel>,
    pub gpu_ns: u64,
    pub kernel_ns: u64,
}

/// Ranks kernels by their GPU time; names that several processes or records share are merged.
pub fn rank(times: &GpuTimes) -> Ranking {
    let mut merged: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
    for time in &times.kernels {
        let entry = merged.entry(&time.name).or_default();
        entry.0 += time.launches;
        entry.1 += time.total_ns;
    }
    let kernel_ns: u64 = merged.values().map(|(_, ns)| ns).sum();
    let gpu_ns = kernel_ns + times.other_ns;
    let mut kernels: Vec<RankedKernel> = merged
        .into_iter()
        .map(|(name, (launches, total_ns))| RankedKernel {
            name: name.to_string(),
            kernel: kernel_name(name),
            launches,
            total_ns,
            share: if gpu_ns == 0 { 0.0 } else { total_ns as f64 / gpu_ns as f64 },
            source: None,
            tuned: None,
        })
        .collect();
    kernels.sort_by(|a, b| b.total_ns.cmp(&a.total_ns).then_with(|| a.name.cmp(&b.name)));
    Ranking { kernels, gpu_ns, kernel_ns }
}

/// The fraction of the program's GPU time saved by making a kernel with `share` of it
/// `speedup` times faster.
pub fn projected_gain(share: f64, speedup: f64) -> f64 {
    // Nothing faster than the original means the original stays: no gain, and no loss.
    if speedup <= 1.0 {
        return 0.0;
    }
    share * (1.0 - 1.0 / speedup)
}

/// `2.50 ms`, `830.0 µs`: a GPU time for people.
pub fn format_ns(ns: u64) -> String {
    match ns {
        n if n >= 1_000_000_000 => format!("{:.2} s", n as f64 / 1e9),
        n if n >= 1_000_000 => format!("{:.2} ms", n as f64 / 1e6),
        n => format!("{:.1} µs", n as f64 / 1e3),
    }
}

/// Where a profile came from, for reports and the store.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Origin {
    Run { command: Vec<String>, directory: PathBuf },
    Import { path: PathBuf, format: import::Format },
}

impl Origin {
    pub fn describe(&self) -> String {
        match self {
            Origin::Run { command, .. } => shlex::try_join(command.iter().map(String::as_str)).unwrap_or_else(|_| command.join(" ")),
            Origin::Import { path, format } => format!("{} ({})", path.display(), format.describe()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernels_rank_by_time_with_shares_of_all_gpu_time() {
        let times = GpuTimes {
            kernels: vec![
                KernelTime { name: "_Z5smallv".into(), launches: 10, total_ns: 100 },
                KernelTime { name: "_Z3bigPf".into(), launches: 1, total_ns: 600 },
                KernelTime { name: "_Z5smallv".into(), launches: 10, total_ns: 100 },
            ],
            other_ns: 200,
        };
        let ranking = rank(&times);
        assert_eq!(ranking.gpu_ns, 1000);
        assert_eq!(ranking.kernel_ns, 800);
        let names: Vec<_> = ranking.kernels.iter().map(|k| (k.kernel.base.as_str(), k.launches, k.share)).collect();
        assert_eq!(names, [("big", 1, 0.6), ("small", 20, 0.2)]);
    }

    #[test]
    fn the_projected_gain_follows_amdahl() {
        assert!((projected_gain(0.5, 2.0) - 0.25).abs() < 1e-12);
        assert_eq!(projected_gain(0.3, 1.0), 0.0);
        assert_eq!(projected_gain(0.3, 0.5), 0.0, "nothing faster: the original stays");
    }
}
