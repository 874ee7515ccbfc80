//! Model-based search: a regression forest learns the logarithm of the objective from the
//! points measured so far, and proposes the candidates with the lowest confidence bound.
//!
//! - The first points form a balanced design: each is the one of a few random feasible points
//!   that shares the fewest parameter values with those before it, so every parameter's values
//!   are seen early.
//! - The model sees only the parameters' values: each value's index, and for parameters of more
//!   than two values the power of two dividing the value (alignment matters on GPUs: warps,
//!   vector widths, banks; "multiple of 32" is not a threshold on the value).
//! - A failed point is left out of the model (it still counts as an evaluation and is never
//!   proposed again). Learnt as the worst objective seen, failures made the search settle for
//!   worse regions of the convolution space more often (`docs/search.md`).
//! - The candidates are random feasible points (to explore) and every one-parameter change of the
//!   best points (to refine). They are ranked by `mean - k * spread` of the trees' predictions,
//!   with `k` taking the values of [`ModelSettings::exploration`] in turn: a greedy choice, then
//!   an exploring one. A batch takes the best-ranked candidates.

use std::collections::HashSet;
use std::sync::Arc;

use super::domain::Domain;
use super::forest::{Forest, ForestSettings};
use super::{Point, SearchSpace, Strategy};
use crate::space::SplitMix64;

#[derive(Clone, Debug)]
pub struct ModelSettings {
    /// Points of the balanced design, measured before the first model.
    pub initial_points: usize,
    /// Random feasible points among which each design point is chosen.
    pub design_candidates: usize,
    pub forest: ForestSettings,
    /// Random feasible points scored per proposal.
    pub random_candidates: usize,
    /// The best points whose one-parameter changes are scored too.
    pub refined_points: usize,
    /// Weights of the uncertainty in the lower confidence bound, used in turn.
    pub exploration: Vec<f64>,
}

impl Default for ModelSettings {
    /// Tuned on the two benchmark-hub spaces over seeds 0..100 (`docs/search.md`).
    fn default() -> ModelSettings {
        ModelSettings {
            initial_points: 6,
            design_candidates: 10,
            forest: ForestSettings { trees: 16, splits_tried: 4, min_split: 2 },
            random_candidates: 300,
            refined_points: 3,
            exploration: vec![0.0, 1.0],
        }
    }
}

/// Turns a point into the forest's features, each a small bin index.
struct Encoder {
    features: Vec<Feature>,
    /// How many bins each feature has.
    bins: Vec<usize>,
}

enum Feature {
    /// The parameter's value index.
    Index(usize),
    /// The rank, among the parameter's values, of the power of two dividing each value.
    Alignment { param: usize, rank_of_value: Vec<usize> },
}

/// The exponent of the largest power of two dividing `value` (0 counts as the most aligned).
fn alignment(value: i64) -> u32 {
    if value == 0 { 64 } else { value.trailing_zeros() }
}

impl Encoder {
    fn new(params: &[(String, Vec<i64>)]) -> Encoder {
        let mut features = Vec::new();
        let mut bins = Vec::new();
        for (param, (_, values)) in params.iter().enumerate() {
            if values.len() > 1 {
                features.push(Feature::Index(param));
                bins.push(values.len());
            }
        }
        for (param, (_, values)) in params.iter().enumerate() {
            let mut distinct: Vec<u32> = values.iter().map(|&v| alignment(v)).collect();
            distinct.sort_unstable();
            distinct.dedup();
            // Two values are already told apart by their index.
            if values.len() > 2 && distinct.len() > 1 {
                let rank_of_value = values.iter().map(|&v| distinct.partition_point(|&a| a < alignment(v))).collect();
                features.push(Feature::Alignment { param, rank_of_value });
                bins.push(distinct.len());
            }
        }
        Encoder { features, bins }
    }

    fn encode(&self, point: &[usize]) -> Point {
        self.features
            .iter()
            .map(|feature| match feature {
                Feature::Index(param) => point[*param],
                Feature::Alignment { param, rank_of_value } => rank_of_value[point[*param]],
            })
            .collect()
    }
}

pub struct ModelBased {
    domain: Domain,
    encoder: Encoder,
    rng: SplitMix64,
    settings: ModelSettings,
    /// The balanced design's points.
    design: Vec<Point>,
    /// Told points and their objectives.
    observed: Vec<(Point, Option<f64>)>,
    /// Points proposed by the model so far (selects the exploration weight).
    modelled: usize,
}

impl ModelBased {
    pub fn new(space: Arc<dyn SearchSpace>, seed: u64) -> ModelBased {
        ModelBased::with_settings(space, seed, ModelSettings::default())
    }

    pub fn with_settings(space: Arc<dyn SearchSpace>, seed: u64, settings: ModelSettings) -> ModelBased {
        ModelBased {
            encoder: Encoder::new(space.params()),
            domain: Domain::new(space),
            rng: SplitMix64::new(seed),
            settings,
            design: Vec::new(),
            observed: Vec::new(),
            modelled: 0,
        }
    }

    /// Of a few random open points, the one sharing fewest parameter values with the design.
    fn balanced_point(&mut self) -> Option<Point> {
        let mut best: Option<(usize, Point)> = None;
        for _ in 0..self.settings.design_candidates.max(1) {
            let Some(candidate) = self.domain.random_open(&mut self.rng) else { break };
            let shared: usize = self.design.iter().map(|d| d.iter().zip(&candidate).filter(|(a, b)| a == b).count()).sum();
            if best.as_ref().is_none_or(|(s, _)| shared < *s) {
                best = Some((shared, candidate));
            }
        }
        best.map(|(_, point)| point)
    }

    /// Up to `count` open candidates, each the best-ranked under the next exploration weight;
    /// `None` before any point succeeded.
    fn propose(&mut self, count: usize) -> Option<Vec<Point>> {
        let mut measured: Vec<(&Point, f64)> = self.observed.iter().filter_map(|(p, o)| o.map(|o| (p, log_objective(o)))).collect();
        if measured.is_empty() {
            return None;
        }
        let features: Vec<Point> = measured.iter().map(|(p, _)| self.encoder.encode(p)).collect();
        let targets: Vec<f64> = measured.iter().map(|(_, y)| *y).collect();
        measured.sort_by(|a, b| a.1.total_cmp(&b.1));
        let forest = Forest::fit(&features, &targets, &self.encoder.bins, &self.settings.forest, &mut self.rng);

        let mut candidates: Vec<Point> = Vec::new();
        let mut seen: HashSet<Point> = HashSet::new();
        for (point, _) in measured.iter().take(self.settings.refined_points) {
            candidates.extend(self.domain.open_neighbours(point, false).into_iter().filter(|n| seen.insert(n.clone())));
        }
        for _ in 0..self.settings.random_candidates {
            let Some(point) = self.domain.random_open(&mut self.rng) else { break };
            if seen.insert(point.clone()) {
                candidates.push(point);
            }
        }
        let predictions: Vec<(f64, f64)> = candidates.iter().map(|c| forest.predict(&self.encoder.encode(c))).collect();
        let mut taken = vec![false; candidates.len()];
        let mut out = Vec::new();
        for _ in 0..count {
            let weights = &self.settings.exploration;
            let weight = if weights.is_empty() { 0.0 } else { weights[self.modelled % weights.len()] };
            let best = (0..candidates.len())
                .filter(|&i| !taken[i])
                .map(|i| (predictions[i].0 - weight * predictions[i].1, i))
                .min_by(|a, b| a.0.total_cmp(&b.0));
            let Some((_, i)) = best else { break };
            taken[i] = true;
            self.modelled += 1;
            out.push(candidates[i].clone());
        }
        Some(out)
    }
}

fn log_objective(objective: f64) -> f64 {
    objective.max(f64::MIN_POSITIVE).ln()
}

impl Strategy for ModelBased {
    fn ask(&mut self, max: usize) -> Vec<Point> {
        let mut out = Vec::new();
        while out.len() < max && self.design.len() < self.settings.initial_points {
            let Some(point) = self.balanced_point() else { break };
            self.domain.mark(&point);
            self.design.push(point.clone());
            out.push(point);
        }
        if out.len() < max && self.design.len() >= self.settings.initial_points {
            let wanted = max - out.len();
            // Until something succeeds there is nothing to learn from: keep sampling.
            let proposals = match self.propose(wanted) {
                Some(points) => points,
                None => (0..wanted).map_while(|_| self.domain.random_open(&mut self.rng).inspect(|p| { self.domain.mark(p); })).collect(),
            };
            for point in proposals {
                self.domain.mark(&point);
                out.push(point);
            }
        }
        out
    }

    fn tell(&mut self, point: &[usize], objective: Option<f64>) {
        self.observed.push((point.to_vec(), objective));
    }

    fn lists_its_space(&self) -> bool {
        self.domain.is_listed()
    }
}
