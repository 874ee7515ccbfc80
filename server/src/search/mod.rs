//! Search strategies over a parameter space, with budgets and stop rules.
//!
//! A strategy never runs anything itself: it is asked for the next points and told their
//! objective (lower is better; `None` when the point failed, was infeasible or wrong). The
//! tuning loop compiles and measures in between, so strategies work the same on the GPU and
//! on a replay. Every strategy is seeded: the same seed and the same answers give the same
//! points. No strategy proposes a point twice or proposes an infeasible one.
//!
//! [`Search`] wraps a strategy with budgets and stop rules; [`efficiency`] measures how many
//! evaluations each strategy needs on recorded spaces (`docs/search.md`).

mod annealing;
mod brute_force;
mod domain;
mod driver;
pub mod efficiency;
mod forest;
mod genetic;
mod model;
mod random;
#[cfg(test)]
mod tests;

use std::sync::Arc;

pub use annealing::Annealing;
pub use brute_force::BruteForce;
pub use driver::{Limits, Search, StopHook, StopReason};
pub use forest::ForestSettings;
pub use genetic::Genetic;
pub use model::{ModelBased, ModelSettings};
pub use random::RandomSearch;

/// A configuration as the index of each parameter's value, in the space's parameter order.
pub type Point = Vec<usize>;

/// The parameters (names and values, in order) and which combinations may run.
pub trait SearchSpace: Send + Sync {
    /// Each parameter's name and candidate values.
    fn params(&self) -> &[(String, Vec<i64>)];
    /// Whether `point` satisfies the space's restrictions. Cheap: no compile, no launch.
    fn is_feasible(&self, point: &[usize]) -> bool;
}

/// Proposes points and learns from their results.
pub trait Strategy: Send {
    /// Up to `max` distinct points not proposed before; fewer when the strategy needs results
    /// first; empty when it has nothing left to propose.
    fn ask(&mut self, max: usize) -> Vec<Point>;
    /// The objective of a point returned by `ask`: lower is better, `None` for a failure.
    fn tell(&mut self, point: &[usize], objective: Option<f64>);
    /// Whether an empty `ask` means that no feasible point is left; false where the space is
    /// too large to list and random draws only met none.
    fn lists_its_space(&self) -> bool {
        true
    }
}

/// The strategies by the names the CLI, the spec and the results use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum StrategyName {
    BruteForce,
    Random,
    Annealing,
    Genetic,
    Model,
}

impl StrategyName {
    pub const ALL: [StrategyName; 5] =
        [StrategyName::BruteForce, StrategyName::Random, StrategyName::Annealing, StrategyName::Genetic, StrategyName::Model];

    pub fn as_str(self) -> &'static str {
        match self {
            StrategyName::BruteForce => "brute-force",
            StrategyName::Random => "random",
            StrategyName::Annealing => "annealing",
            StrategyName::Genetic => "genetic",
            StrategyName::Model => "model",
        }
    }
}

impl std::fmt::Display for StrategyName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for StrategyName {
    type Err = String;

    fn from_str(text: &str) -> Result<StrategyName, String> {
        StrategyName::ALL.into_iter().find(|n| n.as_str() == text).ok_or_else(|| {
            let names: Vec<&str> = StrategyName::ALL.iter().map(|n| n.as_str()).collect();
            format!("unknown search strategy `{text}`; expected one of {}", names.join(", "))
        })
    }
}

/// The strategy `name` over `space`, seeded with `seed` (brute force ignores it).
pub fn new_strategy(name: StrategyName, space: Arc<dyn SearchSpace>, seed: u64) -> Box<dyn Strategy> {
    match name {
        StrategyName::BruteForce => Box::new(BruteForce::new(space)),
        StrategyName::Random => Box::new(RandomSearch::new(space, seed)),
        StrategyName::Annealing => Box::new(Annealing::new(space, seed)),
        StrategyName::Genetic => Box::new(Genetic::new(space, seed)),
        StrategyName::Model => Box::new(ModelBased::new(space, seed)),
    }
}
