//! The client's settings (section `cutune`): from `initializationOptions`, then from
//! `workspace/configuration` and on every `workspace/didChangeConfiguration`. The editors send
//! the same object in all three (docs/editors.md).

use std::path::PathBuf;

use clap::ValueEnum;
use serde_json::Value;

use crate::search::StrategyName;

/// Configurations per tuning run when the client does not say.
pub const DEFAULT_BUDGET: u64 = 200;

#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    /// CUDA device index.
    pub device: u32,
    /// `None`: brute force when the space fits the budget, else the model-based search.
    pub strategy: Option<StrategyName>,
    pub budget: u64,
    pub nvrtc_path: Option<PathBuf>,
    /// Folder holding `.cutune/results.db`; `None`: the tuned file's folder.
    pub results_location: Option<PathBuf>,
    /// Recorded measurements to replay instead of measuring (no GPU needed).
    pub replay: Option<PathBuf>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings { device: 0, strategy: None, budget: DEFAULT_BUDGET, nvrtc_path: None, results_location: None, replay: None }
    }
}

impl Settings {
    /// One line for the log, e.g. `device 0, strategy auto, budget 200, replay none`.
    pub fn describe(&self) -> String {
        let path = |p: &Option<PathBuf>| p.as_ref().map_or_else(|| "none".to_string(), |p| p.display().to_string());
        let strategy = self.strategy.map_or_else(|| "auto".to_string(), |s| s.to_string());
        format!(
            "device {}, strategy {strategy}, budget {}, NVRTC {}, results in {}, replay {}",
            self.device,
            self.budget,
            path(&self.nvrtc_path),
            path(&self.results_location),
            path(&self.replay)
        )
    }

    /// Reads the settings object, or one holding it under `cutune`. Unknown keys are ignored;
    /// a value of the wrong kind keeps its default and is named in the returned problems.
    pub fn from_json(value: &Value) -> (Settings, Vec<String>) {
        let object = value.get("cutune").filter(|v| v.is_object()).unwrap_or(value);
        let mut settings = Settings::default();
        let mut problems = Vec::new();
        let Some(object) = object.as_object() else {
            if !value.is_null() {
                problems.push(format!("the settings are not an object: {value}"));
            }
            return (settings, problems);
        };
        for (key, value) in object {
            let mut wrong = |expected: &str| problems.push(format!("setting cutune.{key} must be {expected}, not {value}"));
            match key.as_str() {
                "device" => match value.as_u64().and_then(|d| u32::try_from(d).ok()) {
                    Some(device) => settings.device = device,
                    None => wrong("a device index (0, 1, …)"),
                },
                "strategy" => match value.as_str() {
                    Some("") => {}
                    Some(name) => match StrategyName::from_str(name, true) {
                        Ok(strategy) => settings.strategy = Some(strategy),
                        Err(_) => wrong("one of brute-force, random, annealing, genetic, model"),
                    },
                    None => wrong("a strategy name"),
                },
                "budget" => match value.as_u64().filter(|b| *b > 0) {
                    Some(budget) => settings.budget = budget,
                    None => wrong("a whole number of configurations, at least 1"),
                },
                "nvrtcPath" => path(value, &mut settings.nvrtc_path, &mut wrong),
                "resultsLocation" => path(value, &mut settings.results_location, &mut wrong),
                "replay" => path(value, &mut settings.replay, &mut wrong),
                _ => {}
            }
        }
        (settings, problems)
    }
}

/// A path setting: empty means not set.
fn path(value: &Value, slot: &mut Option<PathBuf>, wrong: &mut impl FnMut(&str)) {
    match value {
        Value::Null => *slot = None,
        Value::String(path) if path.is_empty() => *slot = None,
        Value::String(path) => *slot = Some(PathBuf::from(path)),
        _ => wrong("a path (a string)"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_setting_is_read_and_empty_paths_mean_unset() {
        let (settings, problems) = Settings::from_json(&json!({
            "device": 1, "strategy": "random", "budget": 40, "nvrtcPath": "/opt/libnvrtc.so",
            "resultsLocation": "", "replay": "rec.t4.json", "trace": {"server": "off"}
        }));
        assert_eq!(problems, Vec::<String>::new());
        assert_eq!(
            settings,
            Settings {
                device: 1,
                strategy: Some(StrategyName::Random),
                budget: 40,
                nvrtc_path: Some("/opt/libnvrtc.so".into()),
                results_location: None,
                replay: Some("rec.t4.json".into()),
            }
        );
        // The same object under `cutune`, as some clients send it.
        assert_eq!(Settings::from_json(&json!({"cutune": {"budget": 7}})).0.budget, 7);
        assert_eq!(Settings::from_json(&Value::Null), (Settings::default(), vec![]));
    }

    #[test]
    fn wrong_values_keep_their_defaults_and_are_named() {
        let (settings, problems) = Settings::from_json(&json!({"device": -1, "strategy": "fastest", "budget": 0, "replay": 3}));
        assert_eq!(settings, Settings::default());
        assert_eq!(problems.len(), 4, "{problems:?}");
        assert!(problems[0].contains("cutune.budget must be a whole number"), "{problems:?}");
        assert!(problems.iter().any(|p| p.contains("cutune.strategy must be one of brute-force")), "{problems:?}");
    }
}
