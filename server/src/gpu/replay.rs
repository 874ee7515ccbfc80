//! The replay runner: recorded measurements served as if measured, for CI and for studying a
//! space offline.
//!
//! Recordings come from a T4 results file (`.json` or `.json.gz`), a Kernel Tuner cache file,
//! or a list of outcomes (our results database). Configurations are matched by parameter names
//! and values, in any order.
//!
//! How T4 `invalidity` values become outcomes:
//! - `correct`: measured, with `times.runtimes` as the runs, verdict unchecked;
//! - `compile`: failed to compile; `runtime`: launch failed; `timeout`: timed out;
//! - `correctness`: measured, with a mismatch verdict whose location is unknown (empty
//!   argument name, index 0, numbers NaN): the recording says the output was wrong, not where,
//!   and the timing still shows what the wrong kernel cost;
//! - `constraints`: infeasible, and outside the recorded space.
//!
//! Kernel Tuner caches mark failures with a string `time`: `InvalidConfig` is infeasible,
//! `CompilationFailedConfig` a compile failure, `RuntimeFailedConfig` (and any other string, or
//! the `1e20` of old versions) a launch failure. Times are milliseconds in both formats unless
//! a T4 file's `metadata.timeunit` says otherwise.

use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::path::Path;

use anyhow::{anyhow, bail, Context, Result};
use serde_json::Value as Json;

use super::{DeviceInfo, FailureKind, Kernel, Outcome, Problem, Runner, RunnerSource, Timing, Verdict};
use crate::search::{Point, SearchSpace};
use crate::space::Configuration;

/// The device name used when a recording does not say.
pub const UNKNOWN_DEVICE: &str = "recorded device (unknown)";

/// One recorded configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct Recording {
    pub outcome: Outcome,
    /// The file's own objective in microseconds when it records one (Kernel Tuner's `time`: the
    /// mean of the runs, the first, cold run included), else the median of the runs.
    pub recorded_us: Option<f64>,
    /// Whether the point belongs to the recorded space: T4's `constraints` points do not;
    /// Kernel Tuner's `InvalidConfig` points do (its simulations count them as evaluations).
    pub in_space: bool,
}

pub struct ReplayRunner {
    source: RunnerSource,
    /// The file or label the recording came from.
    from: String,
    device: DeviceInfo,
    /// Parameter names, in the recording's order; `records` keys list values in this order.
    names: Vec<String>,
    records: HashMap<Vec<i64>, Recording>,
    baseline: Option<Configuration>,
}

impl ReplayRunner {
    /// Reads a recording of either kind, read once and told apart by its contents: a T4 file
    /// has a `results` list, a Kernel Tuner cache a `cache` map.
    pub fn from_file(path: &Path) -> Result<ReplayRunner> {
        let json = read_json(path)?;
        let file = path.display().to_string();
        match (json.get("results"), json.get("cache")) {
            (Some(_), _) => ReplayRunner::t4(file, &json),
            (None, Some(_)) => ReplayRunner::kernel_tuner_cache(file, &json),
            (None, None) => bail!("{file}: neither a T4 file (no `results`) nor a Kernel Tuner cache (no `cache`)"),
        }
    }

    /// Reads a T4 results file, gzip-compressed or not.
    pub fn from_t4(path: &Path) -> Result<ReplayRunner> {
        ReplayRunner::t4(path.display().to_string(), &read_json(path)?)
    }

    fn t4(file: String, json: &Json) -> Result<ReplayRunner> {
        let metadata = json.get("metadata");
        let unit = match metadata.and_then(|m| m.get("timeunit")) {
            None => MILLISECOND,
            Some(unit) => unit.as_str().and_then(time_unit).ok_or_else(|| anyhow!("{file}: unknown metadata.timeunit {unit}"))?,
        };
        let device = metadata.and_then(|m| m.get("device_name").or_else(|| m.get("device"))).and_then(Json::as_str);
        let results = json.get("results").and_then(Json::as_array).ok_or_else(|| anyhow!("{file}: no `results` array"))?;
        let mut entries = Vec::with_capacity(results.len());
        for (i, result) in results.iter().enumerate() {
            let at = format!("{file}: results[{i}]");
            let configuration = result.get("configuration").and_then(Json::as_object).ok_or_else(|| anyhow!("{at}: no `configuration` object"))?;
            let config = configuration
                .iter()
                .map(|(name, value)| Ok((name.clone(), integer(value).ok_or_else(|| anyhow!("{at}: parameter `{name}` is {value}, not an integer"))?)))
                .collect::<Result<Vec<(String, i64)>>>()?;
            let invalidity = result.get("invalidity").and_then(Json::as_str).ok_or_else(|| anyhow!("{at}: no `invalidity` string"))?;
            let runs = match result.pointer("/times/runtimes") {
                None => Vec::new(),
                Some(runs) => numbers(runs).ok_or_else(|| anyhow!("{at}: times.runtimes is not an array of numbers"))?,
            };
            let runs: Vec<f64> = runs.into_iter().map(|r| r * unit).collect();
            let objective_name = result.pointer("/objectives/0").and_then(Json::as_str).unwrap_or("time");
            let recorded = result
                .get("measurements")
                .and_then(Json::as_array)
                .and_then(|ms| ms.iter().find(|m| m.get("name").and_then(Json::as_str) == Some(objective_name)))
                .and_then(|m| m.get("value"))
                .and_then(Json::as_f64)
                .map(|v| v * unit);
            let measured = |verdict: Verdict| -> Result<Outcome> {
                let timing = timing(&runs).or_else(|| recorded.map(one_run));
                let timing = timing.ok_or_else(|| anyhow!("{at}: `{invalidity}` without times.runtimes or a `{objective_name}` measurement"))?;
                Ok(Outcome::Measured { timings: vec![timing], verdict })
            };
            let failed = |kind: FailureKind, what: &str| Outcome::Failed { kind, message: format!("recorded as {what} in {file}") };
            let outcome = match invalidity {
                "correct" => measured(Verdict::Unchecked)?,
                "correctness" => measured(unknown_mismatch())?,
                "compile" => failed(FailureKind::Compile, "a compile failure"),
                "runtime" => failed(FailureKind::Launch, "a runtime failure"),
                "timeout" => failed(FailureKind::Timeout, "a timeout"),
                "constraints" => failed(FailureKind::Infeasible, "violating the constraints"),
                other => bail!("{at}: unknown invalidity `{other}`"),
            };
            let recorded_us = if matches!(outcome, Outcome::Measured { .. }) { recorded.or_else(|| timing(&runs).map(|t| t.median_us)) } else { None };
            let in_space = invalidity != "constraints";
            entries.push((Configuration(config), Recording { outcome, recorded_us, in_space }));
        }
        ReplayRunner::build(file, device, entries)
    }

    /// Reads a Kernel Tuner cache file, including one cut short by an interrupted run (Kernel
    /// Tuner appends entries as it goes and closes the JSON only at the end).
    pub fn from_kernel_tuner_cache(path: &Path) -> Result<ReplayRunner> {
        ReplayRunner::kernel_tuner_cache(path.display().to_string(), &read_json(path)?)
    }

    fn kernel_tuner_cache(file: String, json: &Json) -> Result<ReplayRunner> {
        let names: Vec<String> = json
            .get("tune_params_keys")
            .and_then(Json::as_array)
            .and_then(|keys| keys.iter().map(|k| k.as_str().map(String::from)).collect())
            .ok_or_else(|| anyhow!("{file}: no `tune_params_keys` array of names"))?;
        let cache = json.get("cache").and_then(Json::as_object).ok_or_else(|| anyhow!("{file}: no `cache` object"))?;
        let device = json.get("device_name").and_then(Json::as_str);
        let mut entries = Vec::with_capacity(cache.len());
        for (key, entry) in cache {
            let at = format!("{file}: cache entry \"{key}\"");
            let config = names
                .iter()
                .map(|name| {
                    let value = entry.get(name).ok_or_else(|| anyhow!("{at}: no value for parameter `{name}`"))?;
                    Ok((name.clone(), integer(value).ok_or_else(|| anyhow!("{at}: parameter `{name}` is {value}, not an integer"))?))
                })
                .collect::<Result<Vec<(String, i64)>>>()?;
            let time = entry.get("time").ok_or_else(|| anyhow!("{at}: no `time`"))?;
            let failed = |kind: FailureKind, what: &str| Outcome::Failed { kind, message: format!("recorded as {what} in {file}") };
            let (outcome, recorded_us) = match time {
                Json::String(s) if s == "InvalidConfig" => (failed(FailureKind::Infeasible, "InvalidConfig"), None),
                Json::String(s) if s == "CompilationFailedConfig" => (failed(FailureKind::Compile, "CompilationFailedConfig"), None),
                Json::String(s) => (failed(FailureKind::Launch, s), None),
                Json::Number(n) => {
                    let ms = n.as_f64().unwrap_or(f64::INFINITY);
                    if ms >= 1e20 {
                        (failed(FailureKind::Launch, "failed (time 1e20)"), None)
                    } else {
                        let runs = entry.get("times").and_then(numbers).unwrap_or_default();
                        let runs: Vec<f64> = runs.into_iter().map(|r| r * MILLISECOND).collect();
                        let timing = timing(&runs).unwrap_or(one_run(ms * MILLISECOND));
                        (Outcome::Measured { timings: vec![timing], verdict: Verdict::Unchecked }, Some(ms * MILLISECOND))
                    }
                }
                other => bail!("{at}: `time` is {other}, neither a number nor a failure name"),
            };
            entries.push((Configuration(config), Recording { outcome, recorded_us, in_space: true }));
        }
        ReplayRunner::build(file, device, entries)
    }

    /// Serves `outcomes`, labelled `label` wherever the runner's source is shown.
    pub fn from_outcomes(label: &str, outcomes: Vec<(Configuration, Outcome)>) -> Result<ReplayRunner> {
        let entries = outcomes
            .into_iter()
            .map(|(config, outcome)| {
                let recorded_us = match &outcome {
                    Outcome::Measured { timings, .. } if !timings.is_empty() => Some(timings.iter().map(|t| t.median_us).sum()),
                    _ => None,
                };
                let in_space = !matches!(outcome, Outcome::Failed { kind: FailureKind::Infeasible, .. });
                (config, Recording { outcome, recorded_us, in_space })
            })
            .collect();
        ReplayRunner::build(label.to_string(), None, entries)
    }

    fn build(from: String, device: Option<&str>, entries: Vec<(Configuration, Recording)>) -> Result<ReplayRunner> {
        let mut names: Vec<String> = Vec::new();
        let mut records = HashMap::with_capacity(entries.len());
        for (config, recording) in entries {
            if names.is_empty() {
                names = config.0.iter().map(|(n, _)| n.clone()).collect();
            }
            let key = key_of(&names, &config)
                .ok_or_else(|| anyhow!("{from}: configuration `{config}` does not have the parameters {}", names.join(", ")))?;
            records.insert(key, recording);
        }
        Ok(ReplayRunner {
            source: RunnerSource::Replay { from: from.clone() },
            device: placeholder_device(device.unwrap_or(UNKNOWN_DEVICE)),
            from,
            names,
            records,
            baseline: None,
        })
    }

    /// The configuration whose recorded timing `prepare` returns as the baseline's.
    pub fn with_baseline(mut self, baseline: Configuration) -> ReplayRunner {
        self.baseline = Some(baseline);
        self
    }

    /// The recording of `config`, if any.
    pub fn recording(&self, config: &Configuration) -> Option<&Recording> {
        key_of(&self.names, config).and_then(|key| self.records.get(&key))
    }

    /// Every recorded configuration, in no particular order.
    pub fn configurations(&self) -> impl Iterator<Item = (Configuration, &Recording)> + '_ {
        self.records.iter().map(|(values, r)| (Configuration(self.names.iter().cloned().zip(values.iter().copied()).collect()), r))
    }

    /// The recorded space: each parameter's distinct recorded values, sorted; a point is
    /// feasible when it was recorded in the space (failed ones included, as a Kernel Tuner
    /// simulation counts them).
    pub fn space(&self) -> RecordedSpace {
        let params: Vec<(String, Vec<i64>)> = (0..self.names.len())
            .map(|i| {
                let mut values: Vec<i64> = self.records.keys().map(|k| k[i]).collect();
                values.sort_unstable();
                values.dedup();
                (self.names[i].clone(), values)
            })
            .collect();
        let feasible = self
            .records
            .iter()
            .filter(|(_, r)| r.in_space)
            .map(|(values, _)| values.iter().zip(&params).map(|(v, (_, all))| all.partition_point(|x| x < v)).collect())
            .collect();
        RecordedSpace { params, feasible }
    }
}

impl Runner for ReplayRunner {
    fn device(&self) -> &DeviceInfo {
        &self.device
    }

    fn source(&self) -> &RunnerSource {
        &self.source
    }

    fn needs_code(&self) -> bool {
        false
    }

    /// Replays ignore the problems and the code; the baseline's recorded timings, if any.
    fn prepare(&mut self, _problems: &[Problem], _baseline: &Kernel, _harness: &Path) -> Result<Vec<Timing>> {
        Ok(match self.baseline.as_ref().and_then(|b| self.recording(b)) {
            Some(Recording { outcome: Outcome::Measured { timings, .. }, .. }) => timings.clone(),
            _ => Vec::new(),
        })
    }

    fn measure(&mut self, config: &Configuration, _kernel: Option<&Kernel>) -> Outcome {
        match self.recording(config) {
            Some(recording) => recording.outcome.clone(),
            None => Outcome::Failed { kind: FailureKind::Infeasible, message: format!("not in the recording {}", self.from) },
        }
    }
}

/// The space of a recording (see [`ReplayRunner::space`]).
pub struct RecordedSpace {
    params: Vec<(String, Vec<i64>)>,
    feasible: HashSet<Point>,
}

impl RecordedSpace {
    /// The configuration of `point`.
    pub fn configuration(&self, point: &[usize]) -> Configuration {
        Configuration(self.params.iter().zip(point).map(|((name, values), &i)| (name.clone(), values[i])).collect())
    }

    /// How many points are feasible.
    pub fn len(&self) -> usize {
        self.feasible.len()
    }

    pub fn is_empty(&self) -> bool {
        self.feasible.is_empty()
    }
}

impl SearchSpace for RecordedSpace {
    fn params(&self) -> &[(String, Vec<i64>)] {
        &self.params
    }

    fn is_feasible(&self, point: &[usize]) -> bool {
        self.feasible.contains(point)
    }
}

const MILLISECOND: f64 = 1e3;

/// Microseconds per unit of a T4 `timeunit` (including Kernel Tuner's spelling "miliseconds").
fn time_unit(name: &str) -> Option<f64> {
    match name.to_ascii_lowercase().as_str() {
        "s" | "seconds" => Some(1e6),
        "ms" | "milliseconds" | "miliseconds" => Some(MILLISECOND),
        "us" | "µs" | "microseconds" => Some(1.0),
        "ns" | "nanoseconds" => Some(1e-3),
        _ => None,
    }
}

/// `config`'s values in `names` order; `None` unless it has exactly those parameters.
fn key_of(names: &[String], config: &Configuration) -> Option<Vec<i64>> {
    if config.0.len() != names.len() {
        return None;
    }
    names.iter().map(|n| config.get(n)).collect()
}

/// An integer, or a float with an integral value (JSON writers differ).
fn integer(value: &Json) -> Option<i64> {
    value.as_i64().or_else(|| value.as_f64().filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15).map(|f| f as i64))
}

fn numbers(value: &Json) -> Option<Vec<f64>> {
    value.as_array()?.iter().map(Json::as_f64).collect()
}

/// Median, extremes and interquartile spread of `runs` (µs); `None` when there are none.
fn timing(runs: &[f64]) -> Option<Timing> {
    let mut sorted: Vec<f64> = runs.iter().copied().filter(|r| r.is_finite()).collect();
    if sorted.is_empty() {
        return None;
    }
    sorted.sort_by(f64::total_cmp);
    let quantile = |q: f64| {
        let at = q * (sorted.len() - 1) as f64;
        let (low, high) = (at.floor() as usize, at.ceil() as usize);
        sorted[low] + (sorted[high] - sorted[low]) * (at - low as f64)
    };
    let median = quantile(0.5);
    Some(Timing {
        median_us: median,
        min_us: sorted[0],
        max_us: sorted[sorted.len() - 1],
        spread: if median > 0.0 { (quantile(0.75) - quantile(0.25)) / median } else { 0.0 },
        runs: sorted.len() as u32,
    })
}

fn one_run(us: f64) -> Timing {
    Timing { median_us: us, min_us: us, max_us: us, spread: 0.0, runs: 1 }
}

fn unknown_mismatch() -> Verdict {
    Verdict::Mismatch {
        problem: 0,
        arg: String::new(),
        index: 0,
        expected: f64::NAN,
        actual: f64::NAN,
        mismatches: 0,
        max_abs_error: f64::NAN,
        max_rel_error: f64::NAN,
        unwritten: 0,
        not_finite: 0,
    }
}

/// Reads JSON from `path`, gunzipping when the name ends in `.gz`; a JSON text cut short after
/// an entry is closed as Kernel Tuner closes it.
fn read_json(path: &Path) -> Result<Json> {
    let file = path.display();
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {file}"))?;
    let text = if path.extension().is_some_and(|e| e == "gz") {
        if !bytes.starts_with(&[0x1f, 0x8b]) {
            bail!("{file}: not a gzip file (the name ends in .gz)");
        }
        let mut text = String::new();
        flate2::read::GzDecoder::new(bytes.as_slice()).read_to_string(&mut text).with_context(|| format!("{file}: cannot decompress"))?;
        text
    } else {
        String::from_utf8(bytes).map_err(|e| anyhow!("{file}: not UTF-8 text (invalid byte at offset {})", e.utf8_error().valid_up_to()))?
    };
    match serde_json::from_str(&text) {
        Ok(json) => Ok(json),
        Err(error) => {
            let closed = format!("{}}}}}", text.trim_end().trim_end_matches(','));
            serde_json::from_str(&closed).map_err(|_| anyhow!("{file}: not valid JSON: {error}"))
        }
    }
}

/// A device the recording ran on, by name; the limits are an A100's, placeholders only: a
/// replay never compiles or launches anything.
fn placeholder_device(name: &str) -> DeviceInfo {
    DeviceInfo {
        name: name.to_string(),
        ordinal: 0,
        compute_capability: (8, 0),
        multiprocessors: 108,
        warp_size: 32,
        max_threads_per_block: 1024,
        max_threads_per_multiprocessor: 2048,
        max_blocks_per_multiprocessor: 32,
        shared_bytes_per_block: 48 * 1024,
        shared_bytes_per_block_optin: 163 * 1024,
        shared_bytes_per_multiprocessor: 164 * 1024,
        registers_per_block: 65536,
        registers_per_multiprocessor: 65536,
        l2_bytes: 40 * 1024 * 1024,
        memory_bytes: 40 * 1024 * 1024 * 1024,
        driver_version: 0,
        clock_khz: 1_410_000,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/replay").join(name)
    }

    /// A file of `contents` under a fresh temporary folder, named `name`.
    fn scratch(name: &str, contents: &[u8]) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("cutune-replay-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, contents).unwrap();
        path
    }

    fn config(values: &[(&str, i64)]) -> Configuration {
        Configuration(values.iter().map(|(n, v)| (n.to_string(), *v)).collect())
    }

    fn gzip(text: &str) -> Vec<u8> {
        use std::io::Write;
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        encoder.write_all(text.as_bytes()).unwrap();
        encoder.finish().unwrap()
    }

    const T4: &str = r#"{"schema_version": "1.0.0", "metadata": {"timeunit": "miliseconds", "device_name": "NVIDIA A100"},
        "results": [
          {"configuration": {"bx": 32, "tile": 1}, "invalidity": "correct", "correctness": 1,
           "times": {"runtimes": [2.0, 1.0, 1.5, 1.25]}, "objectives": ["time"],
           "measurements": [{"name": "time", "value": 1.4375, "unit": ""}]},
          {"configuration": {"tile": 2, "bx": 32}, "invalidity": "compile", "correctness": 0, "times": {}},
          {"configuration": {"bx": 64, "tile": 1}, "invalidity": "runtime", "correctness": 0, "times": {}},
          {"configuration": {"bx": 64, "tile": 2}, "invalidity": "timeout", "correctness": 0, "times": {}},
          {"configuration": {"bx": 128, "tile": 1}, "invalidity": "correctness", "correctness": 0,
           "times": {"runtimes": [0.5]}},
          {"configuration": {"bx": 128, "tile": 2}, "invalidity": "constraints", "correctness": 0, "times": {}}
        ]}"#;

    #[test]
    fn t4_results_replay_by_name_in_any_order() {
        let path = scratch("space_T4.json.gz", &gzip(T4));
        let mut runner = ReplayRunner::from_t4(&path).unwrap().with_baseline(config(&[("tile", 1), ("bx", 32)]));
        assert_eq!(runner.source(), &RunnerSource::Replay { from: path.display().to_string() });
        assert_eq!(runner.device().name, "NVIDIA A100");
        assert!(!runner.needs_code());

        let Outcome::Measured { timings, verdict } = runner.measure(&config(&[("tile", 1), ("bx", 32)]), None) else { panic!() };
        assert_eq!(verdict, Verdict::Unchecked);
        assert_eq!(timings, vec![Timing { median_us: 1375.0, min_us: 1000.0, max_us: 2000.0, spread: 0.4375 / 1.375, runs: 4 }]);
        assert_eq!(runner.recording(&config(&[("bx", 32), ("tile", 1)])).unwrap().recorded_us, Some(1437.5));

        let kind = |runner: &mut ReplayRunner, bx, tile| match runner.measure(&config(&[("bx", bx), ("tile", tile)]), None) {
            Outcome::Failed { kind, .. } => Some(kind),
            Outcome::Measured { .. } => None,
        };
        assert_eq!(kind(&mut runner, 32, 2), Some(FailureKind::Compile));
        assert_eq!(kind(&mut runner, 64, 1), Some(FailureKind::Launch));
        assert_eq!(kind(&mut runner, 64, 2), Some(FailureKind::Timeout));
        assert_eq!(kind(&mut runner, 128, 2), Some(FailureKind::Infeasible));
        let wrong = runner.measure(&config(&[("bx", 128), ("tile", 1)]), None);
        assert!(matches!(wrong, Outcome::Measured { verdict: Verdict::Mismatch { .. }, .. }), "{wrong:?}");

        let missing = runner.measure(&config(&[("bx", 256), ("tile", 1)]), None);
        assert_eq!(missing, Outcome::Failed { kind: FailureKind::Infeasible, message: format!("not in the recording {}", path.display()) });
        let other_names = runner.measure(&config(&[("bx", 32), ("tile", 1), ("unroll", 2)]), None);
        assert!(matches!(other_names, Outcome::Failed { kind: FailureKind::Infeasible, .. }));

        let baseline = runner.prepare(&[], &dummy_kernel(), Path::new("")).unwrap();
        assert_eq!(baseline.len(), 1);
        assert_eq!(baseline[0].median_us, 1375.0);

        let space = runner.space();
        assert_eq!(space.params(), &[("bx".to_string(), vec![32, 64, 128]), ("tile".to_string(), vec![1, 2])]);
        assert_eq!(space.len(), 5, "the constraint violation is outside the space; failures are inside");
        assert!(space.is_feasible(&[0, 1]));
        assert!(!space.is_feasible(&[2, 1]));
        assert_eq!(space.configuration(&[2, 0]).to_string(), "bx=128 tile=1");
    }

    fn dummy_kernel() -> Kernel {
        Kernel { module: super::super::Module { cubin: "none.cubin".into(), function: "k".into() }, launches: Vec::new() }
    }

    #[test]
    fn a_recording_of_either_kind_is_told_apart_by_its_contents() {
        let cache = ReplayRunner::from_file(&fixture("kernel_tuner_cache.json")).unwrap();
        assert_eq!(cache.device().name, "NVIDIA A100-PCIE-40GB");
        assert_eq!(cache.space().len(), 6);
        let t4 = ReplayRunner::from_file(&fixture("dedispersion_milo_A100_T4.json.gz")).unwrap();
        assert_eq!(t4.space().len(), 11130);
        let neither = ReplayRunner::from_file(&scratch("neither.json", b"{\"runs\": []}")).err().unwrap().to_string();
        assert!(neither.ends_with("neither.json: neither a T4 file (no `results`) nor a Kernel Tuner cache (no `cache`)"), "{neither}");
    }

    #[test]
    fn kernel_tuner_caches_replay_failures_by_their_names() {
        let path = fixture("kernel_tuner_cache.json");
        let mut runner = ReplayRunner::from_kernel_tuner_cache(&path).unwrap();
        assert_eq!(runner.device().name, "NVIDIA A100-PCIE-40GB");
        assert_eq!(runner.prepare(&[], &dummy_kernel(), Path::new("")).unwrap(), Vec::new(), "no baseline was named");
        let measure = |runner: &mut ReplayRunner, bx, tile| runner.measure(&config(&[("block_size_x", bx), ("tile", tile)]), None);
        let Outcome::Measured { timings, .. } = measure(&mut runner, 64, 1) else { panic!() };
        assert_eq!((timings[0].median_us, timings[0].runs), (500.0, 4));
        let Outcome::Measured { timings, .. } = measure(&mut runner, 256, 1) else { panic!() };
        assert_eq!((timings[0].median_us, timings[0].runs), (300.0, 1), "`time` alone is one run");
        assert!(matches!(measure(&mut runner, 64, 2), Outcome::Failed { kind: FailureKind::Compile, .. }));
        assert!(matches!(measure(&mut runner, 128, 2), Outcome::Failed { kind: FailureKind::Launch, .. }));
        assert!(matches!(measure(&mut runner, 2048, 1), Outcome::Failed { kind: FailureKind::Infeasible, .. }));
        let space = runner.space();
        assert_eq!(space.len(), 6, "Kernel Tuner counts its invalid configurations as evaluations");

        // Kernel Tuner closes the JSON only when a run ends; an interrupted run's cache lacks it.
        let text = std::fs::read_to_string(&path).unwrap();
        let without_root = text.trim_end().strip_suffix('}').unwrap();
        let cut = without_root.trim_end().strip_suffix('}').unwrap().trim_end().to_string() + ",\n";
        let runner = ReplayRunner::from_kernel_tuner_cache(&scratch("interrupted.json", cut.as_bytes())).unwrap();
        assert_eq!(runner.space().len(), 6);
    }

    #[test]
    fn outcomes_replay_under_their_label() {
        let timing = Timing { median_us: 3.0, min_us: 2.0, max_us: 4.0, spread: 0.1, runs: 10 };
        let outcomes = vec![
            (config(&[("a", 1)]), Outcome::Measured { timings: vec![timing], verdict: Verdict::Unchecked }),
            (config(&[("a", 2)]), Outcome::Failed { kind: FailureKind::Infeasible, message: "too many threads".into() }),
        ];
        let mut runner = ReplayRunner::from_outcomes("results.db", outcomes).unwrap();
        assert_eq!(runner.source(), &RunnerSource::Replay { from: "results.db".into() });
        assert_eq!(runner.device().name, UNKNOWN_DEVICE);
        assert_eq!(runner.measure(&config(&[("a", 1)]), None), Outcome::Measured { timings: vec![timing], verdict: Verdict::Unchecked });
        assert_eq!(runner.space().len(), 1);
        let mixed = vec![(config(&[("a", 1)]), Outcome::Failed { kind: FailureKind::Compile, message: String::new() }), (config(&[("b", 1)]), Outcome::Failed { kind: FailureKind::Compile, message: String::new() })];
        let error = ReplayRunner::from_outcomes("mixed", mixed).err().unwrap().to_string();
        assert_eq!(error, "mixed: configuration `b=1` does not have the parameters a");
    }

    #[test]
    fn bad_recordings_are_errors_that_name_the_file_and_the_problem() {
        let error = |path: &Path| ReplayRunner::from_t4(path).err().unwrap().to_string();
        let missing = Path::new("/nonexistent/space_T4.json");
        assert_eq!(error(missing), "cannot read /nonexistent/space_T4.json");
        let plain = scratch("plain.json.gz", T4.as_bytes());
        assert_eq!(error(&plain), format!("{}: not a gzip file (the name ends in .gz)", plain.display()));
        let broken = scratch("broken.json", b"{\"results\": [1, 2");
        assert!(error(&broken).starts_with(&format!("{}: not valid JSON: ", broken.display())), "{}", error(&broken));
        let no_results = scratch("no_results.json", b"{\"schema_version\": \"1.0.0\"}");
        assert_eq!(error(&no_results), format!("{}: no `results` array", no_results.display()));
        let no_invalidity = scratch("no_invalidity.json", br#"{"results": [{"configuration": {"a": 1}, "times": {}}]}"#);
        assert_eq!(error(&no_invalidity), format!("{}: results[0]: no `invalidity` string", no_invalidity.display()));
        let text_value = scratch("text_value.json", br#"{"results": [{"configuration": {"a": "x"}, "invalidity": "compile"}]}"#);
        assert_eq!(error(&text_value), format!("{}: results[0]: parameter `a` is \"x\", not an integer", text_value.display()));
        let no_times = scratch("no_times.json", br#"{"results": [{"configuration": {"a": 1}, "invalidity": "correct"}]}"#);
        assert_eq!(error(&no_times), format!("{}: results[0]: `correct` without times.runtimes or a `time` measurement", no_times.display()));
        let unit = scratch("unit.json", br#"{"metadata": {"timeunit": "fortnights"}, "results": []}"#);
        assert_eq!(error(&unit), format!("{}: unknown metadata.timeunit \"fortnights\"", unit.display()));

        let cache_error = |text: &str| {
            let path = scratch("cache.json", text.as_bytes());
            (ReplayRunner::from_kernel_tuner_cache(&path).err().unwrap().to_string(), path.display().to_string())
        };
        let (message, file) = cache_error(r#"{"cache": {}}"#);
        assert_eq!(message, format!("{file}: no `tune_params_keys` array of names"));
        let (message, file) = cache_error(r#"{"tune_params_keys": ["a"], "cache": {"1": {"time": 1.0}}}"#);
        assert_eq!(message, format!("{file}: cache entry \"1\": no value for parameter `a`"));
        let (message, file) = cache_error(r#"{"tune_params_keys": ["a"], "cache": {"1": {"a": 1, "time": [1]}}}"#);
        assert_eq!(message, format!("{file}: cache entry \"1\": `time` is [1], neither a number nor a failure name"));
    }
}
