//! Timing statistics and the rule that decides how many timed runs are enough. Pure functions of
//! the samples, so the rule is tested without a GPU.

use std::time::Duration;

use crate::gpu::protocol::TimingPolicy;
use crate::gpu::Timing;

/// The value below which `fraction` of the sorted samples lie, interpolating linearly between
/// neighbours (the usual "type 7" estimator). `sorted` must not be empty.
pub fn percentile(sorted: &[f64], fraction: f64) -> f64 {
    let position = fraction.clamp(0.0, 1.0) * (sorted.len() - 1) as f64;
    let below = position.floor() as usize;
    let above = position.ceil() as usize;
    sorted[below] + (sorted[above] - sorted[below]) * (position - below as f64)
}

/// Median, extremes and interquartile spread of launch times in microseconds. `samples` must
/// not be empty.
pub fn summarize(samples: &[f64]) -> Timing {
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    let median = percentile(&sorted, 0.5);
    let spread = if median > 0.0 { (percentile(&sorted, 0.75) - percentile(&sorted, 0.25)) / median } else { 0.0 };
    Timing { median_us: median, min_us: sorted[0], max_us: sorted[sorted.len() - 1], spread, runs: sorted.len() as u32 }
}

/// Collects timed runs in batches and says when to stop: once there are at least `min_runs`
/// and the last two batch medians agree within `stability`, or at `max_runs`, or after the
/// batch that crosses `max_ms` (with at least one run, so there is always a timing), or after
/// the first batch when its median is above the cutoff (a race: a candidate that much slower
/// than the best so far cannot become best, and needs no precise median).
pub struct Sampler<'p> {
    policy: &'p TimingPolicy,
    samples: Vec<f64>,
    batch_medians: Vec<f64>,
    /// Microseconds per run before any batch (from the warm-up), so that the first batch of a
    /// slow kernel already fits the time cap.
    estimate_us: Option<f64>,
    cutoff_us: Option<f64>,
}

impl<'p> Sampler<'p> {
    pub fn new(policy: &'p TimingPolicy, estimate_us: Option<f64>, cutoff_us: Option<f64>) -> Sampler<'p> {
        Sampler { policy, samples: Vec::new(), batch_medians: Vec::new(), estimate_us, cutoff_us }
    }

    /// How many runs the next batch should have, given the time spent timing so far; zero
    /// means stop. Near the time cap a batch is shortened to what fits, judged by the median
    /// so far.
    pub fn next_batch(&self, elapsed: Duration) -> u32 {
        let runs = self.samples.len() as u32;
        let budget_us = self.policy.max_ms as f64 * 1000.0;
        let spent_us = elapsed.as_secs_f64() * 1e6;
        let lost_the_race = self.batch_medians.first().zip(self.cutoff_us).is_some_and(|(median, cutoff)| *median > cutoff);
        if runs >= self.policy.max_runs || (runs > 0 && (spent_us >= budget_us || self.is_stable() || lost_the_race)) {
            return 0;
        }
        let mut batch = self.policy.batch_runs.min(self.policy.max_runs - runs);
        if let Some(median) = self.batch_medians.last().copied().or(self.estimate_us) {
            if median > 0.0 {
                let fits = ((budget_us - spent_us) / median).floor().max(1.0);
                batch = batch.min(fits.min(u32::MAX as f64) as u32);
            }
        }
        batch.max(1)
    }

    pub fn record_batch(&mut self, batch_us: &[f64]) {
        if batch_us.is_empty() {
            return;
        }
        let mut sorted = batch_us.to_vec();
        sorted.sort_by(f64::total_cmp);
        self.batch_medians.push(percentile(&sorted, 0.5));
        self.samples.extend_from_slice(batch_us);
    }

    fn is_stable(&self) -> bool {
        let runs = self.samples.len() as u32;
        match self.batch_medians.as_slice() {
            [.., before, last] if runs >= self.policy.min_runs => {
                (last - before).abs() <= self.policy.stability * before.abs()
            }
            _ => false,
        }
    }

    /// The summary of every timed run; `None` before the first batch.
    pub fn timing(&self) -> Option<Timing> {
        (!self.samples.is_empty()).then(|| summarize(&self.samples))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_interpolate_between_samples() {
        let sorted = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(percentile(&sorted, 0.5), 2.5);
        assert_eq!(percentile(&sorted, 0.25), 1.75);
        assert_eq!(percentile(&sorted, 0.0), 1.0);
        assert_eq!(percentile(&sorted, 1.0), 4.0);
        assert_eq!(percentile(&[7.0], 0.75), 7.0);
    }

    #[test]
    fn summary_is_order_independent() {
        let timing = summarize(&[12.0, 10.0, 11.0, 30.0, 10.0]);
        assert_eq!(timing, Timing { median_us: 11.0, min_us: 10.0, max_us: 30.0, spread: 2.0 / 11.0, runs: 5 });
    }

    fn policy() -> TimingPolicy {
        TimingPolicy { batch_runs: 10, min_runs: 20, max_runs: 50, max_ms: 1000, stability: 0.005, ..TimingPolicy::default() }
    }

    #[test]
    fn stops_when_two_batch_medians_agree_after_min_runs() {
        let policy = policy();
        let mut sampler = Sampler::new(&policy, None, None);
        let early = Duration::from_millis(1);
        assert_eq!(sampler.next_batch(early), 10);
        sampler.record_batch(&[100.0; 10]);
        // Stable already, but below min_runs.
        assert_eq!(sampler.next_batch(early), 10);
        sampler.record_batch(&[100.4; 10]);
        assert_eq!(sampler.next_batch(early), 0, "medians 100 and 100.4 agree within 0.5%");
        assert_eq!(sampler.timing().unwrap().runs, 20);
    }

    #[test]
    fn keeps_going_while_medians_move_until_max_runs() {
        let policy = policy();
        let mut sampler = Sampler::new(&policy, None, None);
        let early = Duration::from_millis(1);
        for (i, expected) in [10, 10, 10, 10, 10].into_iter().enumerate() {
            assert_eq!(sampler.next_batch(early), expected);
            sampler.record_batch(&vec![100.0 + 10.0 * i as f64; expected as usize]);
        }
        assert_eq!(sampler.next_batch(early), 0, "50 runs is max_runs");
    }

    #[test]
    fn the_time_cap_ends_timing_and_shortens_the_last_batch() {
        let policy = policy();
        let mut sampler = Sampler::new(&policy, None, None);
        assert_eq!(sampler.next_batch(Duration::ZERO), 10);
        sampler.record_batch(&[200_000.0; 10]); // 0.2 s each, 2 s in all: past the 1 s cap
        assert_eq!(sampler.next_batch(Duration::from_secs(2)), 0);

        let mut sampler = Sampler::new(&policy, None, None);
        sampler.record_batch(&[100_000.0; 2]); // 0.1 s each
        assert_eq!(sampler.next_batch(Duration::from_millis(750)), 2, "0.25 s left fits 2 runs");
        assert_eq!(sampler.next_batch(Duration::from_millis(990)), 1, "at least one run per batch");
    }

    #[test]
    fn a_slow_kernels_first_batch_fits_the_time_cap() {
        let policy = policy();
        let sampler = Sampler::new(&policy, Some(300_000.0), None); // 0.3 s per run
        assert_eq!(sampler.next_batch(Duration::ZERO), 3);
        let sampler = Sampler::new(&policy, Some(5_000_000.0), None);
        assert_eq!(sampler.next_batch(Duration::ZERO), 1);
    }

    #[test]
    fn a_candidate_slower_than_the_cutoff_stops_after_its_first_batch() {
        let policy = policy();
        let early = Duration::from_millis(1);
        let mut sampler = Sampler::new(&policy, None, Some(125.0));
        assert_eq!(sampler.next_batch(early), 10);
        sampler.record_batch(&[130.0; 10]);
        assert_eq!(sampler.next_batch(early), 0, "130 µs is above the cutoff");
        assert_eq!(sampler.timing().unwrap().runs, 10);
        // Under the cutoff, timing goes on to min_runs as usual.
        let mut sampler = Sampler::new(&policy, None, Some(125.0));
        sampler.record_batch(&[120.0; 10]);
        assert_eq!(sampler.next_batch(early), 10);
    }

    #[test]
    fn there_is_always_a_first_batch() {
        let policy = TimingPolicy { max_ms: 0, ..policy() };
        let sampler = Sampler::new(&policy, None, None);
        assert_eq!(sampler.next_batch(Duration::from_secs(5)), 10);
        assert!(sampler.timing().is_none());
    }
}
