//! Uniform random sampling of the feasible space, without repeats.

use std::sync::Arc;

use super::domain::Domain;
use super::{Point, SearchSpace, Strategy};
use crate::space::SplitMix64;

pub struct RandomSearch {
    domain: Domain,
    rng: SplitMix64,
}

impl RandomSearch {
    pub fn new(space: Arc<dyn SearchSpace>, seed: u64) -> RandomSearch {
        RandomSearch { domain: Domain::new(space), rng: SplitMix64::new(seed) }
    }
}

impl Strategy for RandomSearch {
    fn ask(&mut self, max: usize) -> Vec<Point> {
        let mut out = Vec::new();
        while out.len() < max {
            let Some(point) = self.domain.random_open(&mut self.rng) else { break };
            self.domain.mark(&point);
            out.push(point);
        }
        out
    }

    fn tell(&mut self, _point: &[usize], _objective: Option<f64>) {}

    fn lists_its_space(&self) -> bool {
        self.domain.is_listed()
    }
}
