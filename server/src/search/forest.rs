//! A small regression forest over rows: the surrogate model of the model-based strategy.
//!
//! Features are small bin indices (a parameter's value index, say), so every split is
//! "feature f below bin k".
//! Every tree sees every sample; at each node it tries a few randomly chosen features and keeps
//! the split that reduces the squared error most, so the trees differ by the features they
//! tried. (Bootstrap samples did worse: with the handful of rows of an early search, they
//! leave out much of what little is known.) Value indices are small,
//! so a node's best split along one feature comes from a histogram in one pass over the node.
//! The spread of the trees' predictions is the model's uncertainty.

use super::Point;
use crate::space::SplitMix64;

#[derive(Clone, Copy, Debug)]
pub struct ForestSettings {
    pub trees: usize,
    /// Parameters tried at each node.
    pub splits_tried: usize,
    /// A node with fewer samples becomes a leaf.
    pub min_split: usize,
}

enum Node {
    Leaf(f64),
    /// Samples whose bin for `feature` is below `cut` go to `below`.
    Split { feature: usize, cut: usize, below: usize, above: usize },
}

struct Tree {
    nodes: Vec<Node>,
}

pub struct Forest {
    trees: Vec<Tree>,
}

/// What growing one tree needs besides the node's samples.
struct Grower<'a> {
    rows: &'a [Point],
    targets: &'a [f64],
    /// Features with more than one bin: the only ones worth splitting on.
    splittable: Vec<usize>,
    bins: &'a [usize],
    settings: &'a ForestSettings,
    /// Per bin: count, sum and sum of squares of the node's targets.
    histogram: Vec<(f64, f64, f64)>,
}

impl Forest {
    /// Fits `targets` from `rows` of features, each below its count in `bins`.
    pub fn fit(rows: &[Point], targets: &[f64], bins: &[usize], settings: &ForestSettings, rng: &mut SplitMix64) -> Forest {
        let n = targets.len();
        let mut grower = Grower {
            rows,
            targets,
            splittable: (0..bins.len()).filter(|&p| bins[p] > 1).collect(),
            bins,
            settings,
            histogram: Vec::new(),
        };
        let trees = (0..settings.trees)
            .map(|_| {
                let mut sample: Vec<usize> = (0..n).collect();
                let mut tree = Tree { nodes: Vec::new() };
                grower.grow(&mut tree, &mut sample, rng);
                tree
            })
            .collect();
        Forest { trees }
    }

    /// The mean and standard deviation of the trees' predictions for `row`.
    pub fn predict(&self, row: &[usize]) -> (f64, f64) {
        let k = self.trees.len().max(1) as f64;
        let (sum, sum_sq) = self.trees.iter().map(|t| t.predict(row)).fold((0.0, 0.0), |(s, q), p| (s + p, q + p * p));
        let mean = sum / k;
        (mean, (sum_sq / k - mean * mean).max(0.0).sqrt())
    }
}

impl Tree {
    fn predict(&self, row: &[usize]) -> f64 {
        let mut at = 0;
        loop {
            match self.nodes.get(at) {
                Some(Node::Leaf(value)) => return *value,
                Some(Node::Split { feature, cut, below, above }) => {
                    at = if row[*feature] < *cut { *below } else { *above };
                }
                None => return 0.0,
            }
        }
    }
}

impl Grower<'_> {
    /// Grows the subtree over `sample` (reordered in place) and returns its root's index.
    fn grow(&mut self, tree: &mut Tree, sample: &mut [usize], rng: &mut SplitMix64) -> usize {
        let mean = sample.iter().map(|&i| self.targets[i]).sum::<f64>() / sample.len().max(1) as f64;
        let at = tree.nodes.len();
        tree.nodes.push(Node::Leaf(mean));
        if sample.len() < self.settings.min_split.max(2) {
            return at;
        }
        let Some((feature, cut)) = self.best_split(sample, rng) else { return at };
        let mut split = 0;
        for i in 0..sample.len() {
            if self.rows[sample[i]][feature] < cut {
                sample.swap(i, split);
                split += 1;
            }
        }
        let (low, high) = sample.split_at_mut(split);
        let below = self.grow(tree, low, rng);
        let above = self.grow(tree, high, rng);
        tree.nodes[at] = Node::Split { feature, cut, below, above };
        at
    }

    /// The split of `sample` that lowers the squared error most along one of a few random
    /// features; `None` when the targets are all equal or nothing splits.
    fn best_split(&mut self, sample: &[usize], rng: &mut SplitMix64) -> Option<(usize, usize)> {
        let first = self.targets[sample[0]];
        if self.splittable.is_empty() || sample.iter().all(|&i| self.targets[i] == first) {
            return None;
        }
        let total = sample.iter().fold((0.0, 0.0, 0.0), |(n, s, q), &i| {
            let y = self.targets[i];
            (n + 1.0, s + y, q + y * y)
        });
        let mut best: Option<(f64, usize, usize)> = None;
        for _ in 0..self.settings.splits_tried.max(1) {
            let feature = self.splittable[rng.below(self.splittable.len() as u64) as usize];
            self.histogram.clear();
            self.histogram.resize(self.bins[feature], (0.0, 0.0, 0.0));
            for &i in sample {
                let y = self.targets[i];
                let bin = &mut self.histogram[self.rows[i][feature]];
                *bin = (bin.0 + 1.0, bin.1 + y, bin.2 + y * y);
            }
            let mut below = (0.0, 0.0, 0.0);
            for cut in 1..self.histogram.len() {
                let bin = self.histogram[cut - 1];
                below = (below.0 + bin.0, below.1 + bin.1, below.2 + bin.2);
                let above = (total.0 - below.0, total.1 - below.1, total.2 - below.2);
                // Only cuts just above a present value, with samples on both sides.
                if bin.0 == 0.0 || below.0 == 0.0 || above.0 < 0.5 {
                    continue;
                }
                let error = (below.2 - below.1 * below.1 / below.0) + (above.2 - above.1 * above.1 / above.0);
                if best.is_none_or(|(e, _, _)| error < e) {
                    best = Some((error, feature, cut));
                }
            }
        }
        best.map(|(_, feature, cut)| (feature, cut))
    }
}
