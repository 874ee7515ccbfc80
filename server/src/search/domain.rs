//! The part of a space a strategy may still propose: feasible points not proposed before.
//!
//! Spaces may be far too large to list, so points are drawn by rejection with a bounded number
//! of tries; a space of at most [`ENUMERATION_LIMIT`] points is listed once instead, so that
//! sampling stays uniform and exhaustion is known exactly.

use std::collections::HashSet;
use std::sync::Arc;

use super::{Point, SearchSpace};
use crate::space::SplitMix64;

/// Spaces with at most this many points (feasible or not) are listed up front.
pub const ENUMERATION_LIMIT: u128 = 1 << 17;

/// Random draws before concluding that a large space has no feasible point left to offer.
pub const REJECTION_TRIES: usize = 10_000;

pub struct Domain {
    space: Arc<dyn SearchSpace>,
    radices: Vec<usize>,
    /// Every feasible point in mixed-radix order, when the space is small enough to list.
    feasible: Option<Vec<Point>>,
    proposed: HashSet<Point>,
}

impl Domain {
    pub fn new(space: Arc<dyn SearchSpace>) -> Domain {
        let radices: Vec<usize> = space.params().iter().map(|(_, values)| values.len()).collect();
        let feasible = (size(&radices) <= ENUMERATION_LIMIT).then(|| {
            MixedRadix::new(&radices).filter(|p| space.is_feasible(p)).collect()
        });
        Domain { space, radices, feasible, proposed: HashSet::new() }
    }

    /// Whether every feasible point is listed, so that an empty draw means none is left.
    pub fn is_listed(&self) -> bool {
        self.feasible.is_some()
    }

    /// How many values each parameter has.
    pub fn radices(&self) -> &[usize] {
        &self.radices
    }

    /// Whether `point` is in range, feasible and not proposed yet.
    pub fn is_open(&self, point: &[usize]) -> bool {
        point.len() == self.radices.len()
            && point.iter().zip(&self.radices).all(|(&i, &n)| i < n)
            && !self.proposed.contains(point)
            && self.space.is_feasible(point)
    }

    /// Records `point` as proposed; false when it already was.
    pub fn mark(&mut self, point: &[usize]) -> bool {
        self.proposed.insert(point.to_vec())
    }

    /// A uniformly drawn open point, not yet marked; `None` when none was found.
    pub fn random_open(&self, rng: &mut SplitMix64) -> Option<Point> {
        match &self.feasible {
            Some(all) => {
                if all.len() <= self.proposed.len() {
                    return None;
                }
                for _ in 0..64 {
                    let p = &all[rng.below(all.len() as u64) as usize];
                    if !self.proposed.contains(p) {
                        return Some(p.clone());
                    }
                }
                // Nearly exhausted: draw among the few that are left.
                let left: Vec<&Point> = all.iter().filter(|p| !self.proposed.contains(*p)).collect();
                left.get(rng.below(left.len() as u64) as usize).map(|p| (*p).clone())
            }
            None => (0..REJECTION_TRIES).map(|_| self.random_point(rng)).find(|p| self.is_open(p)),
        }
    }

    /// Any point of the space, feasible or not, uniformly.
    pub fn random_point(&self, rng: &mut SplitMix64) -> Point {
        self.radices.iter().map(|&n| rng.below(n.max(1) as u64) as usize).collect()
    }

    /// Open points that differ from `point` in one parameter: by one value step when
    /// `adjacent_only`, else by any value.
    pub fn open_neighbours(&self, point: &[usize], adjacent_only: bool) -> Vec<Point> {
        let mut out = Vec::new();
        for (param, &n) in self.radices.iter().enumerate() {
            let current = point[param];
            let values: Vec<usize> = if adjacent_only {
                [current.checked_sub(1), Some(current + 1)].into_iter().flatten().filter(|&v| v < n).collect()
            } else {
                (0..n).filter(|&v| v != current).collect()
            };
            for v in values {
                let mut neighbour = point.to_vec();
                neighbour[param] = v;
                if self.is_open(&neighbour) {
                    out.push(neighbour);
                }
            }
        }
        out
    }
}

/// How many points the radices span (saturating).
pub fn size(radices: &[usize]) -> u128 {
    radices.iter().fold(1u128, |n, &r| n.saturating_mul(r as u128))
}

/// Every point of a space in mixed-radix order (the last parameter varies fastest).
pub struct MixedRadix {
    radices: Vec<usize>,
    next: Option<Point>,
}

impl MixedRadix {
    pub fn new(radices: &[usize]) -> MixedRadix {
        let empty = radices.contains(&0);
        MixedRadix { radices: radices.to_vec(), next: (!empty).then(|| vec![0; radices.len()]) }
    }
}

impl Iterator for MixedRadix {
    type Item = Point;

    fn next(&mut self) -> Option<Point> {
        let current = self.next.take()?;
        let mut successor = current.clone();
        for digit in (0..successor.len()).rev() {
            successor[digit] += 1;
            if successor[digit] < self.radices[digit] {
                self.next = Some(successor);
                return Some(current);
            }
            successor[digit] = 0;
        }
        Some(current)
    }
}
