//! A strategy under budgets and stop rules: the object the tuning loop drives.
//!
//! Evaluations are counted as Kernel Tuner counts them: distinct points measured, failed ones
//! included. A batch never asks for more points than the evaluation budget has left.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use super::{Point, Strategy};

/// Asked with the best objective after every recorded evaluation; a reason stops the search
/// (the speed-of-light stage stops when the best is close enough to the bound).
pub type StopHook = Box<dyn FnMut(f64) -> Option<String> + Send>;

/// Budgets and stop rules; `None` leaves a rule out.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Limits {
    /// Distinct points evaluated, failed ones included.
    pub max_evaluations: Option<usize>,
    pub max_time: Option<Duration>,
    /// Stop after this many evaluations in a row without a better objective.
    pub patience: Option<usize>,
    /// Stop once the best objective is at or below this (the tuning loop derives it from a
    /// target speedup).
    pub target: Option<f64>,
}

/// Why a search stopped.
#[derive(Clone, Debug, PartialEq)]
pub enum StopReason {
    Budget { evaluations: usize },
    NoImprovement { evaluations: usize },
    TimeLimit { limit: Duration },
    TargetReached,
    Exhausted,
    /// Random draws from a space too large to list met no feasible point not tried yet.
    NoneDrawn { draws: usize },
    /// The stop hook's reason.
    Hook(String),
}

impl std::fmt::Display for StopReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StopReason::Budget { evaluations } => write!(f, "budget of {evaluations} evaluations used"),
            StopReason::NoImprovement { evaluations } => write!(f, "no improvement in {evaluations} evaluations"),
            StopReason::TimeLimit { limit } => write!(f, "time limit of {} s reached", limit.as_secs_f64()),
            StopReason::TargetReached => f.write_str("target reached"),
            StopReason::Exhausted => f.write_str("space exhausted"),
            StopReason::NoneDrawn { draws } => write!(f, "{draws} random draws met no feasible configuration not tried yet (the space is too large to list; its restrictions leave few)"),
            StopReason::Hook(reason) => f.write_str(reason),
        }
    }
}

pub struct Search {
    strategy: Box<dyn Strategy>,
    limits: Limits,
    hook: Option<StopHook>,
    started: Instant,
    evaluations: usize,
    /// Evaluations since the best last improved.
    since_improvement: usize,
    best: Option<(Point, f64)>,
    /// Handed out by `next` and not recorded yet.
    outstanding: HashSet<Point>,
    stopped: Option<StopReason>,
}

impl Search {
    /// Starts the clock of the time limit.
    pub fn new(strategy: Box<dyn Strategy>, limits: Limits) -> Search {
        Search {
            strategy,
            limits,
            hook: None,
            started: Instant::now(),
            evaluations: 0,
            since_improvement: 0,
            best: None,
            outstanding: HashSet::new(),
            stopped: None,
        }
    }

    /// Sets the target objective, known only once the baseline has run (by then the first
    /// candidates are compiling).
    pub fn set_target(&mut self, target: Option<f64>) {
        self.limits.target = target;
    }

    /// Sets or clears the stop hook, e.g. once the speed-of-light bound is known.
    pub fn set_hook(&mut self, hook: Option<StopHook>) {
        self.hook = hook;
    }

    pub fn with_hook(mut self, hook: StopHook) -> Search {
        self.hook = Some(hook);
        self
    }

    /// Up to `max` points to evaluate next, within the evaluation budget; empty once stopped,
    /// or while the strategy waits for outstanding results.
    pub fn next(&mut self, max: usize) -> Vec<Point> {
        if self.stop_reason().is_some() {
            return Vec::new();
        }
        let left = self.limits.max_evaluations.map_or(usize::MAX, |m| m.saturating_sub(self.evaluations + self.outstanding.len()));
        let wanted = max.min(left);
        if wanted == 0 {
            return Vec::new();
        }
        let points = self.strategy.ask(wanted);
        if points.is_empty() && self.outstanding.is_empty() {
            self.stopped = Some(match self.strategy.lists_its_space() {
                true => StopReason::Exhausted,
                false => StopReason::NoneDrawn { draws: super::domain::REJECTION_TRIES },
            });
        }
        self.outstanding.extend(points.iter().cloned());
        points
    }

    /// The result of a point returned by `next`: its objective, or `None` when it failed.
    /// Points not handed out by `next`, or recorded before, are ignored.
    pub fn record(&mut self, point: &[usize], objective: Option<f64>) {
        if !self.outstanding.remove(point) {
            return;
        }
        self.evaluations += 1;
        self.strategy.tell(point, objective);
        let improved = objective.is_some_and(|o| self.best.as_ref().is_none_or(|(_, best)| o < *best));
        if let (true, Some(o)) = (improved, objective) {
            self.best = Some((point.to_vec(), o));
            self.since_improvement = 0;
        } else {
            self.since_improvement += 1;
        }
        if self.stopped.is_some() {
            return;
        }
        let best = self.best.as_ref().map(|(_, o)| *o);
        self.stopped = if best.zip(self.limits.target).is_some_and(|(b, t)| b <= t) {
            Some(StopReason::TargetReached)
        } else if let Some(reason) = best.and_then(|b| self.hook.as_mut().and_then(|hook| hook(b))) {
            Some(StopReason::Hook(reason))
        } else if self.limits.max_evaluations.is_some_and(|m| self.evaluations >= m) {
            Some(StopReason::Budget { evaluations: self.evaluations })
        } else if self.limits.patience.is_some_and(|p| self.since_improvement >= p) {
            Some(StopReason::NoImprovement { evaluations: self.since_improvement })
        } else {
            None
        };
    }

    /// Why the search stopped; `None` while it goes on.
    pub fn stop_reason(&self) -> Option<StopReason> {
        if let Some(reason) = &self.stopped {
            return Some(reason.clone());
        }
        let limit = self.limits.max_time?;
        (self.started.elapsed() >= limit).then_some(StopReason::TimeLimit { limit })
    }

    /// The best point recorded and its objective.
    pub fn best(&self) -> Option<(Point, f64)> {
        self.best.clone()
    }

    /// Distinct points recorded, failed ones included.
    pub fn evaluations(&self) -> usize {
        self.evaluations
    }
}
