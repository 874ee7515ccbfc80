//! A genetic algorithm that hands out a whole generation at a time, so that the tuning loop can
//! compile and measure it in parallel.
//!
//! Parents are the best points measured so far (elitism without re-measuring), chosen by
//! tournament; a child takes each parameter from either parent (uniform crossover), then each
//! parameter mutates with probability 1/(number of parameters), to an adjacent value or any
//! value. A child that is infeasible or already proposed is bred again a bounded number of times,
//! then replaced by a random point, which also keeps the population diverse.

use std::collections::VecDeque;
use std::sync::Arc;

use super::domain::Domain;
use super::{Point, SearchSpace, Strategy};
use crate::space::SplitMix64;

/// Points per generation.
pub const GENERATION_SIZE: usize = 20;
const TOURNAMENT_SIZE: usize = 3;
const BREEDING_TRIES: usize = 20;

pub struct Genetic {
    domain: Domain,
    rng: SplitMix64,
    /// Bred and not yet asked for.
    queue: VecDeque<Point>,
    /// Asked and not yet told.
    unanswered: usize,
    /// Every point that produced an objective, best first.
    measured: Vec<(Point, f64)>,
}

impl Genetic {
    pub fn new(space: Arc<dyn SearchSpace>, seed: u64) -> Genetic {
        Genetic { domain: Domain::new(space), rng: SplitMix64::new(seed), queue: VecDeque::new(), unanswered: 0, measured: Vec::new() }
    }

    fn breed_generation(&mut self) {
        for _ in 0..GENERATION_SIZE {
            let child = if self.measured.len() >= 2 { self.breed_child() } else { None };
            let Some(child) = child.or_else(|| self.domain.random_open(&mut self.rng)) else { break };
            self.domain.mark(&child);
            self.queue.push_back(child);
        }
    }

    fn breed_child(&mut self) -> Option<Point> {
        let mutation_rate = 1.0 / self.domain.radices().len().max(1) as f64;
        for _ in 0..BREEDING_TRIES {
            let mother = self.tournament();
            let father = self.tournament();
            let mut child: Point = (0..mother.len()).map(|i| if self.rng.below(2) == 0 { mother[i] } else { father[i] }).collect();
            for (param, &radix) in self.domain.radices().iter().enumerate() {
                if radix > 1 && self.rng.next_f64() < mutation_rate {
                    child[param] = if self.rng.below(2) == 0 {
                        let step_up = self.rng.below(2) == 0;
                        if (step_up && child[param] + 1 < radix) || child[param] == 0 { child[param] + 1 } else { child[param] - 1 }
                    } else {
                        self.rng.below(radix as u64) as usize
                    };
                }
            }
            if self.domain.is_open(&child) {
                return Some(child);
            }
        }
        None
    }

    /// The best of a few parents drawn from the best `GENERATION_SIZE` measured points.
    fn tournament(&mut self) -> Point {
        let pool = self.measured.len().min(GENERATION_SIZE) as u64;
        let winner = (0..TOURNAMENT_SIZE).map(|_| self.rng.below(pool) as usize).min().unwrap_or(0);
        self.measured[winner].0.clone()
    }
}

impl Strategy for Genetic {
    fn ask(&mut self, max: usize) -> Vec<Point> {
        if self.queue.is_empty() {
            if self.unanswered > 0 {
                return Vec::new();
            }
            self.breed_generation();
        }
        let take = max.min(self.queue.len());
        self.unanswered += take;
        self.queue.drain(..take).collect()
    }

    fn tell(&mut self, point: &[usize], objective: Option<f64>) {
        self.unanswered = self.unanswered.saturating_sub(1);
        if let Some(objective) = objective {
            let at = self.measured.partition_point(|(_, o)| *o <= objective);
            self.measured.insert(at, (point.to_vec(), objective));
        }
    }

    fn lists_its_space(&self) -> bool {
        self.domain.is_listed()
    }
}
