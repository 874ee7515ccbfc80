//! Simulated annealing: a walk over neighbouring points that accepts a worse point with a
//! probability that shrinks as the temperature cools.
//!
//! Differences are taken on the logarithm of the objective, so the temperature means the same
//! for kernels of microseconds and of seconds: at temperature `t`, a point `x` times slower is
//! accepted with probability `x^(-1/t)`. A neighbour changes one parameter, to an adjacent value
//! (three times in four) or to any value. When every neighbour of the current point has been
//! proposed, the walk restarts from a random point at the starting temperature.

use std::sync::Arc;

use super::domain::Domain;
use super::{Point, SearchSpace, Strategy};
use crate::space::SplitMix64;

/// Starting temperature: a point twice as slow is accepted with probability 1/2.
const INITIAL_TEMPERATURE: f64 = std::f64::consts::LN_2;
/// Cooling per evaluation.
const COOLING: f64 = 0.97;
const MIN_TEMPERATURE: f64 = 1e-3;

pub struct Annealing {
    domain: Domain,
    rng: SplitMix64,
    temperature: f64,
    /// The walk's position and its log objective (`None` until a start point succeeds).
    current: Option<(Point, f64)>,
    /// Points asked and not yet told, in the order they were asked.
    pending: Vec<(Point, Option<Option<f64>>)>,
}

impl Annealing {
    pub fn new(space: Arc<dyn SearchSpace>, seed: u64) -> Annealing {
        Annealing {
            domain: Domain::new(space),
            rng: SplitMix64::new(seed),
            temperature: INITIAL_TEMPERATURE,
            current: None,
            pending: Vec::new(),
        }
    }

    fn random_neighbour(&mut self, of: &[usize]) -> Option<Point> {
        let adjacent_only = self.rng.below(4) != 0;
        let mut neighbours = self.domain.open_neighbours(of, adjacent_only);
        if neighbours.is_empty() && adjacent_only {
            neighbours = self.domain.open_neighbours(of, false);
        }
        (!neighbours.is_empty()).then(|| neighbours.swap_remove(self.rng.below(neighbours.len() as u64) as usize))
    }

    /// Moves the walk through the answered batch, in the order it was asked.
    fn settle(&mut self) {
        for (point, answer) in std::mem::take(&mut self.pending) {
            let Some(Some(objective)) = answer else { continue };
            let candidate = objective.max(f64::MIN_POSITIVE).ln();
            let accept = match &self.current {
                None => true,
                Some((_, current)) => {
                    candidate <= *current || self.rng.next_f64() < (-(candidate - current) / self.temperature).exp()
                }
            };
            if accept {
                self.current = Some((point, candidate));
            }
            self.temperature = (self.temperature * COOLING).max(MIN_TEMPERATURE);
        }
    }
}

impl Strategy for Annealing {
    fn ask(&mut self, max: usize) -> Vec<Point> {
        if self.pending.iter().any(|(_, answer)| answer.is_none()) {
            return Vec::new();
        }
        self.settle();
        let mut out = Vec::new();
        while out.len() < max {
            let next = match self.current.clone() {
                Some((point, _)) => self.random_neighbour(&point),
                None => None,
            };
            let next = match next {
                Some(p) => p,
                None => {
                    // No start yet, or a neighbourhood used up: restart from a random point.
                    self.current = None;
                    self.temperature = INITIAL_TEMPERATURE;
                    match self.domain.random_open(&mut self.rng) {
                        Some(p) => p,
                        None => break,
                    }
                }
            };
            self.domain.mark(&next);
            self.pending.push((next.clone(), None));
            out.push(next);
            if self.current.is_none() {
                // A start point must be answered before the walk can move from it.
                break;
            }
        }
        out
    }

    fn tell(&mut self, point: &[usize], objective: Option<f64>) {
        if let Some(slot) = self.pending.iter_mut().find(|(p, _)| p == point) {
            slot.1 = Some(objective);
        }
    }

    fn lists_its_space(&self) -> bool {
        self.domain.is_listed()
    }
}
