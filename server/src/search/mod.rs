//! Search strategies over a parameter space, with budgets and stop rules.
//!
//! A strategy never runs anything itself: it is asked for the next points and told their
//! objective (lower is better; `None` when the point failed, was infeasible or wrong). The
//! tuning loop compiles and measures in between, so strategies work the same on the GPU and
//! on a replay. Every strategy is seeded: the same seed and the same answers give the same
//! points.

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
}
