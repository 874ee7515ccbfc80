//! What the latest profile says about a kernel, for the editor (its share of the program's GPU
//! time, and what tuning it gained the program) and for the profile report (the gain of the
//! kernels already tuned).

use std::path::Path;

use serde::Serialize;

use crate::store::{KernelShare, Store, StoredProfile};
use crate::tune::job::workspace_for;
use crate::tune::results::KernelResults;
use crate::workspace::find_root;

use super::{projected_gain, Ranking};

/// What tuning a kernel gains the whole program: its best verified speedup, and the fraction
/// of the program's GPU time that saves (Amdahl).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TunedGain {
    pub speedup: f64,
    pub gain: f64,
}

/// The store of the workspace holding `path`, when it has one; never creates one.
fn workspace_store(path: &Path) -> Option<Store> {
    let root = find_root(path);
    if !Store::database_path(&root).is_file() {
        return None;
    }
    Store::open(&root).map_err(|e| tracing::warn!("reading the profile of {}: {e}", root.display())).ok()
}

/// The profiled shares of one file's kernels: the file's workspace store, opened once for a
/// request that asks about several kernels.
pub struct FileShares {
    store: Option<Store>,
    /// As profiles name files: the canonical path the workspace index found.
    file: String,
}

impl FileShares {
    pub fn of(file: &Path) -> FileShares {
        let canonical = file.canonicalize().unwrap_or_else(|_| file.to_path_buf());
        FileShares { store: workspace_store(file), file: canonical.to_string_lossy().into_owned() }
    }

    /// The share of `kernel` in the newest profile of the workspace that ran it.
    pub fn share(&self, kernel: &str) -> Option<KernelShare> {
        let store = self.store.as_ref()?;
        store.kernel_share(&self.file, kernel).map_err(|e| tracing::warn!("reading the share of `{kernel}`: {e}")).ok().flatten()
    }
}

/// The newest profile of the workspace holding `path`.
pub fn latest_profile(path: &Path) -> Option<StoredProfile> {
    workspace_store(path)?.latest_profile().map_err(|e| tracing::warn!("reading the latest profile: {e}")).ok().flatten()
}

/// The gain of `kernel`'s best verified tuning result (stored beside `file`, or in `results`),
/// at `share` of the program's GPU time.
pub fn tuned_gain(file: &Path, kernel: &str, share: f64, results: Option<&Path>) -> Option<TunedGain> {
    let tuned = KernelResults::latest(&workspace_for(file, results), file, kernel).ok().flatten()?;
    let speedup = tuned.best_speedup()?;
    Some(TunedGain { speedup, gain: projected_gain(share, speedup) })
}

/// Fills in `tuned` for each ranked kernel the workspace defines and cutune has tuned.
pub fn attach_tuned_gains(ranking: &mut Ranking) {
    for kernel in &mut ranking.kernels {
        kernel.tuned = kernel.source.as_ref().and_then(|s| tuned_gain(&s.file, &s.kernel, kernel.share, None));
    }
}

/// What was profiled, short enough for a hint: the script or program (`train.py`), or the
/// imported file's name.
pub fn short_origin(origin: &str) -> String {
    const LAUNCHERS: [&str; 9] = ["python", "python3", "env", "sh", "bash", "uv", "torchrun", "accelerate", "-m"];
    let words = shlex::split(origin).unwrap_or_else(|| origin.split_whitespace().map(str::to_string).collect());
    let file_name = |word: &str| Path::new(word).file_name().map_or_else(|| word.to_string(), |n| n.to_string_lossy().into_owned());
    words
        .iter()
        .find(|w| !w.starts_with('-') && !w.contains('=') && !LAUNCHERS.contains(&file_name(w).as_str()) && !file_name(w).starts_with("python3."))
        .or(words.first())
        .map_or_else(|| origin.to_string(), |w| file_name(w))
}

/// The hint of a profiled kernel not yet tuned: `31% of GPU time · train.py`.
pub fn share_hint(share: &KernelShare) -> String {
    format!("{} of GPU time · {}", percent(share.share), short_origin(&share.origin))
}

/// What a tuned kernel saves the program, for its hint: `saves ≈9% of train.py's GPU time`.
pub fn gain_hint(share: &KernelShare, speedup: f64) -> String {
    format!("saves ≈{} of {}'s GPU time", percent(projected_gain(share.share, speedup)), short_origin(&share.origin))
}

/// The hover's section on a profiled kernel.
pub fn share_hover(share: &KernelShare, speedup: Option<f64>) -> String {
    let mut text = format!(
        "**{} of the GPU time** of `{}` ({} launch{}, {}), in its latest profile",
        percent(share.share),
        share.origin,
        share.launches,
        if share.launches == 1 { "" } else { "es" },
        super::format_ns(share.total_ns)
    );
    if speedup.is_some_and(|speedup| speedup <= 1.0) {
        text.push_str("; tuning found nothing faster than the original, which stays");
    } else if let Some(speedup) = speedup {
        text.push_str(&format!(
            "; tuned {speedup:.2}× faster, it saves ≈{} of the program's GPU time (Amdahl: share × (1 − 1/speedup))",
            percent(projected_gain(share.share, speedup))
        ));
    }
    text
}

fn percent(fraction: f64) -> String {
    let percent = fraction * 100.0;
    if percent.abs() >= 10.0 || percent == 0.0 { format!("{percent:.0}%") } else { format!("{percent:.1}%") }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn share(share: f64, origin: &str) -> KernelShare {
        KernelShare { share, total_ns: 2_500_000, launches: 20, origin: origin.into(), profiled_at: 0 }
    }

    #[test]
    fn the_origin_is_shortened_to_the_program_that_ran() {
        assert_eq!(short_origin("python3 train.py --epochs 1"), "train.py");
        assert_eq!(short_origin("/usr/bin/python3.12 -u tools/bench.py"), "bench.py");
        assert_eq!(short_origin("env CUDA_VISIBLE_DEVICES=1 ./build/app 1024"), "app");
        assert_eq!(short_origin("python -m pytest tests/test_ops.py"), "pytest");
        assert_eq!(short_origin("runs/trace.json (PyTorch profiler trace)"), "trace.json");
    }

    #[test]
    fn hints_and_hover_say_the_share_and_what_tuning_saves() {
        let profiled = share(0.312, "python3 train.py");
        assert_eq!(share_hint(&profiled), "31% of GPU time · train.py");
        assert_eq!(gain_hint(&profiled, 2.0), "saves ≈16% of train.py's GPU time");
        assert_eq!(gain_hint(&share(0.05, "./app"), 1.25), "saves ≈1.0% of app's GPU time");
        let hover = share_hover(&profiled, Some(2.0));
        assert!(hover.starts_with("**31% of the GPU time** of `python3 train.py` (20 launches, 2.50 ms)"), "{hover}");
        assert!(hover.contains("tuned 2.00× faster, it saves ≈16%"), "{hover}");
        assert!(!share_hover(&profiled, None).contains("tuned"));
    }
}
