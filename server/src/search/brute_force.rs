//! Every feasible point once, in mixed-radix order (the last parameter varies fastest).

use std::sync::Arc;

use super::domain::MixedRadix;
use super::{Point, SearchSpace, Strategy};

pub struct BruteForce {
    space: Arc<dyn SearchSpace>,
    order: MixedRadix,
}

impl BruteForce {
    /// Brute force visits every point whatever the seed, so it takes none.
    pub fn new(space: Arc<dyn SearchSpace>) -> BruteForce {
        let radices: Vec<usize> = space.params().iter().map(|(_, values)| values.len()).collect();
        BruteForce { order: MixedRadix::new(&radices), space }
    }
}

impl Strategy for BruteForce {
    fn ask(&mut self, max: usize) -> Vec<Point> {
        let space = &self.space;
        self.order.by_ref().filter(|p| space.is_feasible(p)).take(max).collect()
    }

    fn tell(&mut self, _point: &[usize], _objective: Option<f64>) {}
}
