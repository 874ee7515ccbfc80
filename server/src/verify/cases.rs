//! The cases of each verification stage: which shapes and which inputs, worked out from the
//! spec alone (no GPU), so they are tested in CI.
//!
//! Generated shapes vary the contiguous size (the one that decides tails and alignment) and
//! keep the others from the smallest spec shape, halved until the buffers are no larger than
//! those of the largest spec shape: a sweep must not need more memory than tuning did.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::{anyhow, Result};
use serde::{Deserialize, Serialize};

use super::Stage;
use crate::gpu::{Arg, Problem};
use crate::space::{self, Configuration};
use crate::spec::{expr, Dtype, Init, KernelSpec, Role, Shape, Tolerance};
use crate::tune::{problem, shape_label, DATA_SEED};

/// Lengths the shape sweep gives the contiguous size: just under a power of two, just over
/// one, and a large prime-like vocabulary size (GPT-2's 50257).
pub const SWEEP_LENGTHS: [i64; 3] = [1023, 4097, 50257];

/// The buffers a generated shape may take even where the spec's shapes take less: a swept
/// length of a size every buffer squares (`SIZE * SIZE`, 50257² doubles are 20 GB, past any
/// `int` index) is left out, not run.
pub const GENERATED_BYTES_FLOOR: u64 = 1 << 30;

/// Adversarial inputs compare under this many times the spec's tolerances: extreme magnitudes
/// round differently when a candidate reorders arithmetic, without being wrong.
pub const NUMERICS_TOLERANCE_SCALE: f64 = 10.0;

/// The most bytes the numerics stage's buffers take together: adversarial values test the
/// arithmetic of each element, which the number of rows does not change, so the stage runs on
/// the smallest spec shape cut down to this (other sizes halved first, then the contiguous one).
/// On RMSNorm 8192 × 8192 fp16 this took each numerics case from 2–4 ms to 0.4 ms on the H100
/// (`cutune verify` case times, docs/verify.md).
pub const NUMERICS_BYTES: u64 = 16 << 20;

/// Runs of the candidate in the determinism and smoke stages: the first and third after the
/// same shared-memory pattern, the second after the other, so that a kernel reading shared
/// memory it did not write shows itself (see the worker's session).
pub const DETERMINISM_RUNS: u32 = 3;

/// One check to make: a problem, run by the baseline and the candidate.
#[derive(Clone, Debug)]
pub struct Case {
    pub stage: Stage,
    /// The shape, and for adversarial inputs what they are.
    pub label: String,
    pub shape: Shape,
    pub problem: Problem,
    pub runs: u32,
}

/// A case not run, with why: the spec does not allow it, or an earlier stage of the same plan
/// already runs it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Skipped {
    pub stage: Stage,
    pub label: String,
    pub why: String,
    /// The earlier stage whose case is the same check (shape, inputs, at least as many runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub covered_by: Option<Stage>,
}

/// Every case of the stages asked for, in stage order, and the cases left out.
#[derive(Clone, Debug, Default)]
pub struct Plan {
    pub cases: Vec<Case>,
    pub skipped: Vec<Skipped>,
}

/// Plans `stages` for `config` of `kernel`.
pub fn plan(kernel: &KernelSpec, config: &Configuration, stages: &[Stage]) -> Result<Plan> {
    let planner = Planner::new(kernel, config)?;
    let mut plan = Plan::default();
    let mut seen: BTreeSet<(Stage, String)> = BTreeSet::new();
    for &stage in stages {
        if planner.contiguous.is_none() && matches!(stage, Stage::Shapes | Stage::Edges) {
            let why = "no size of the spec is contiguous (no buffer's length names a size the kernel is given): set `verify.contiguous` to sweep one".to_string();
            plan.skipped.push(Skipped { stage, label: "generated lengths".into(), why, covered_by: None });
        }
        for (shape, inputs, runs) in planner.cases(stage) {
            let label = match &inputs {
                Some(inputs) => format!("{}, {}", shape_label(&shape), inputs.describe()),
                None => shape_label(&shape),
            };
            if !seen.insert((stage, label.clone())) {
                continue;
            }
            // The label names the shape and the inputs: an earlier case with the same label and
            // as many runs is the same check on other random data.
            if let Some(earlier) = plan.cases.iter().find(|c| c.label == label && c.runs >= runs) {
                let why = format!("the same check as stage {} ({})", earlier.stage.number(), earlier.stage.name());
                plan.skipped.push(Skipped { stage, label, why, covered_by: Some(earlier.stage) });
                continue;
            }
            match planner.case(stage, &label, &shape, inputs.as_ref(), runs, plan.cases.len()) {
                Ok(case) => plan.cases.push(case),
                Err(why) => plan.skipped.push(Skipped { stage, label, why, covered_by: None }),
            }
        }
    }
    Ok(plan)
}

struct Planner<'k> {
    kernel: &'k KernelSpec,
    config: &'k Configuration,
    default: Configuration,
    /// The spec shape with the smallest buffers, and the largest buffers' total bytes.
    smallest: Shape,
    byte_cap: u64,
    /// The smallest spec shape cut down to [`NUMERICS_BYTES`], where both kernels allow it.
    numerics: Shape,
    /// `None` when no buffer's length names a size: the generated lengths are left out.
    contiguous: Option<String>,
    /// Each size with the sizes equal to it in every spec shape, itself included: maybe one
    /// size of the program under two names (`input_size_0` and `output_size_0` of an output
    /// made from the input's dimensions), which a generated shape moves together as the program
    /// would, beside the shape that moves it alone (the sizes may be equal by chance).
    tied: BTreeMap<String, Vec<String>>,
    /// The sizes the kernel is given (a scalar's value, the grid, the block, shared memory):
    /// the others it cannot know, so a generated shape moves them only with a size it is given
    /// that equals them (a tensor's own `idx_size_2` of 3 neighbours stays 3).
    carried: BTreeSet<String>,
}

impl<'k> Planner<'k> {
    fn new(kernel: &'k KernelSpec, config: &'k Configuration) -> Result<Planner<'k>> {
        let sized: Vec<(u64, &Shape)> = kernel.shapes.iter().map(|s| Ok((buffer_bytes(kernel, s)?, s))).collect::<Result<_>>()?;
        let (_, smallest) = sized.iter().min_by_key(|(bytes, _)| *bytes).ok_or_else(|| anyhow!("the spec of `{}` has no shape", kernel.name))?;
        let byte_cap = sized.iter().map(|(bytes, _)| *bytes).max().unwrap_or(0);
        let contiguous = contiguous_variable(kernel, smallest);
        let tied = tied_sizes(&kernel.shapes);
        let carried = carried_sizes(kernel);
        let mut planner = Planner { kernel, config, default: Configuration::default_of(kernel), smallest: (*smallest).clone(), byte_cap, numerics: (*smallest).clone(), contiguous, tied, carried };
        let numerics = planner.capped(planner.smallest.clone(), NUMERICS_BYTES, true);
        if planner.allowed(&numerics).is_ok() {
            planner.numerics = numerics;
        }
        Ok(planner)
    }

    /// (shape, adversarial inputs, runs) of each case of `stage`, before checking them.
    fn cases(&self, stage: Stage) -> Vec<(Shape, Option<Inputs>, u32)> {
        let spec_shapes = || self.kernel.shapes.iter().cloned();
        match stage {
            Stage::Smoke => vec![(self.smallest.clone(), None, DETERMINISM_RUNS)],
            Stage::Shapes => {
                let sweep: Vec<Shape> = SWEEP_LENGTHS.iter().flat_map(|&n| self.with_contiguous(n)).collect();
                // A kernel that takes only whole tiles (`N % BN == 0`) allows none of the odd
                // lengths: the spec shape scaled to 3/4 and 1/2, each size kept a multiple of the
                // tiles it held, still varies every size.
                let scaled = match sweep.iter().any(|s| self.allowed(s).is_ok()) {
                    true => Vec::new(),
                    false => SCALES.iter().map(|&(times, over)| scaled(&self.smallest, times, over, &|name| self.kept(name))).collect(),
                };
                spec_shapes().chain(sweep).chain(scaled).map(|s| (s, None, 1)).collect()
            }
            Stage::Numerics => Inputs::ALL.into_iter().map(|inputs| (self.numerics.clone(), Some(inputs), 1)).collect(),
            Stage::Determinism => spec_shapes().map(|s| (s, None, DETERMINISM_RUNS)).collect(),
            Stage::Edges => {
                let threads = space::launch_dims(self.kernel, &self.smallest, self.config).map(|d| d.threads() as i64).unwrap_or(256);
                let given: Vec<&String> = self.smallest.keys().filter(|name| self.carried.contains(*name)).collect();
                let mut ones = self.smallest.clone();
                for name in &given {
                    ones.insert((*name).clone(), 1);
                }
                let mut shapes = vec![ones];
                for name in given {
                    let mut shape = self.smallest.clone();
                    self.set_alone(&mut shape, name, 1);
                    shapes.push(self.capped(shape, self.byte_cap, false));
                }
                // A single partial block, then lengths misaligned for vectors of 2, 4 and 8.
                for length in [threads - 1, threads + 1, 4 * threads + 3, 8 * threads + 5] {
                    shapes.extend(self.with_contiguous(length.max(1)));
                }
                let mut distinct: Vec<Shape> = Vec::with_capacity(shapes.len());
                for shape in shapes {
                    if !distinct.contains(&shape) {
                        distinct.push(shape);
                    }
                }
                distinct.into_iter().map(|s| (s, None, 1)).collect()
            }
        }
    }

    /// The smallest shape with the contiguous size `length`; and with the sizes tied to it
    /// `length` too, where there are any.
    fn with_contiguous(&self, length: i64) -> Vec<Shape> {
        let Some(contiguous) = &self.contiguous else { return Vec::new() };
        let mut alone = self.smallest.clone();
        self.set_alone(&mut alone, contiguous, length);
        let mut tied = self.smallest.clone();
        self.set(&mut tied, contiguous, length);
        let mut shapes = vec![self.capped(alone.clone(), self.byte_cap, false)];
        if tied != alone {
            shapes.push(self.capped(tied, self.byte_cap, false));
        }
        shapes
    }

    /// The sizes tied to `name`, itself included.
    fn tied_to<'s>(&'s self, name: &'s String) -> impl Iterator<Item = &'s String> {
        let tied = self.tied.get(name).map(Vec::as_slice).unwrap_or(std::slice::from_ref(name));
        tied.iter()
    }

    /// `shape` with `name` and the sizes tied to it set to `value`; of those, the ones the
    /// kernel is not given only grow (see [`Planner::set_alone`]).
    fn set(&self, shape: &mut Shape, name: &String, value: i64) {
        for tied in self.tied_to(name) {
            match self.carried.contains(tied) {
                true => {
                    shape.insert(tied.clone(), value);
                }
                false => grow_held(shape, tied, value),
            }
        }
    }

    /// `shape` with `name` set to `value`, and the tied sizes the kernel is not given grown to
    /// it where they are smaller (a bias's `weight_size_0` beside its `channels`): the original
    /// may read them as far as `name` says. They never shrink: the tie may be chance (mmcv's
    /// chamfer distance, 2 coordinates beside a batch of 2), and a larger buffer is never read
    /// past.
    fn set_alone(&self, shape: &mut Shape, name: &String, value: i64) {
        shape.insert(name.clone(), value);
        for held in self.tied_to(name).filter(|t| !self.carried.contains(*t)) {
            grow_held(shape, held, value);
        }
    }

    /// Whether generated shapes keep `name` at the spec's value: the kernel is not given it,
    /// nor any size equal to it in every spec shape.
    fn kept(&self, name: &String) -> bool {
        !self.tied_to(name).any(|t| self.carried.contains(t))
    }

    /// Halves the largest other size until the buffers fit `cap` bytes; when every other size
    /// is 1, the contiguous size too if `contiguous_too`.
    /// A size that no buffer's length names is kept: halving it saves no memory, and only makes
    /// a shape the kernel may not support (a GEMM over fixed `4096 * 4096` buffers at M = 1).
    fn capped(&self, mut shape: Shape, cap: u64, contiguous_too: bool) -> Shape {
        let mut kept: BTreeSet<String> = BTreeSet::new();
        loop {
            let Ok(bytes) = buffer_bytes(self.kernel, &shape) else { break };
            if bytes <= cap {
                break;
            }
            let contiguous = |name: &String| self.contiguous.as_ref().is_some_and(|c| self.tied_to(c).any(|t| t == name));
            let largest = |others_only: bool| {
                shape
                    .iter()
                    .filter(|(name, &value)| !(others_only && contiguous(name)) && value > 1 && !kept.contains(*name) && self.carried.contains(*name))
                    .max_by_key(|(_, &value)| value)
                    .map(|(name, _)| name.clone())
            };
            let Some(name) = largest(true).or_else(|| largest(false).filter(|_| contiguous_too)) else { break };
            let mut halved = shape.clone();
            self.set(&mut halved, &name, (shape[&name] + 1) / 2);
            if buffer_bytes(self.kernel, &halved).is_ok_and(|smaller| smaller < bytes) {
                shape = halved;
            } else {
                kept.extend(self.tied_to(&name).cloned());
            }
        }
        shape
    }

    /// Whether the spec's restrictions allow `shape` for both kernels; else why not.
    fn allowed(&self, shape: &Shape) -> Result<(), String> {
        for (who, config) in [("the original", &self.default), ("this configuration", self.config)] {
            space::check_restrictions(self.kernel, shape, config).map_err(|i| format!("not a shape {who} allows: {}", i.reason))?;
        }
        Ok(())
    }

    /// The case, when the spec's restrictions and launch expressions allow the shape for both
    /// kernels; else why not.
    fn case(&self, stage: Stage, label: &str, shape: &Shape, inputs: Option<&Inputs>, runs: u32, index: usize) -> Result<Case, String> {
        self.allowed(shape)?;
        let most = self.byte_cap.max(GENERATED_BYTES_FLOOR);
        match buffer_bytes(self.kernel, shape) {
            Ok(bytes) if bytes > most => return Err(format!("its buffers take {} MiB, more than the spec's shapes ({} MiB) and than {} MiB", bytes >> 20, self.byte_cap >> 20, most >> 20)),
            _ => {}
        }
        let seed = DATA_SEED.wrapping_add(1000 + index as u64);
        let mut problem = problem(self.kernel, shape, label, seed).map_err(|e| e.to_string())?;
        if let Some(inputs) = inputs {
            if !inputs.apply(&mut problem) {
                return Err("no floating-point input drawn from a uniform or normal distribution to replace".into());
            }
        }
        Ok(Case { stage, label: label.to_string(), shape: shape.clone(), problem, runs })
    }
}

/// The factors the shapes stage scales the spec shape by where the kernel allows none of the
/// swept lengths: 3/4 (4096 → 3072, not a power of two) and 1/2.
const SCALES: [(i64, i64); 2] = [(3, 4), (1, 2)];

/// The largest power of two a scaled size stays a multiple of: the tiles a whole-tile kernel
/// takes are no larger.
const LARGEST_TILE: i64 = 1024;

/// `shape` with each size but the `kept` ones times `times / over`, rounded down to a multiple
/// of the power of two (up to [`LARGEST_TILE`]) it was a multiple of, so that whole tiles stay
/// whole.
/// A size the kernel is not given, grown to `value` where it is smaller: the original may read
/// its buffer as far as a tied size it is given says, and a larger buffer is never read past.
fn grow_held(shape: &mut Shape, held: &String, value: i64) {
    let old = shape.get(held).copied().unwrap_or(value);
    shape.insert(held.clone(), old.max(value));
}

fn scaled(shape: &Shape, times: i64, over: i64, kept: &dyn Fn(&String) -> bool) -> Shape {
    let scale = |size: i64| {
        let grain = (1_i64 << size.trailing_zeros().min(62)).min(LARGEST_TILE);
        (size * times / over / grain * grain).max(grain.min(size))
    };
    shape.iter().map(|(name, &size)| (name.clone(), if size < 4 || kept(name) { size } else { scale(size) })).collect()
}

/// The sizes the kernel is given: those its scalars' values, its launch (grid, block, shared
/// memory) and its template arguments name, a derived size standing for the sizes it is
/// worked out from.
fn carried_sizes(kernel: &KernelSpec) -> BTreeSet<String> {
    let scalars = kernel.leaf_args().filter_map(|arg| arg.value.as_deref());
    let launch = kernel.grid.iter().chain(&kernel.block).chain(&kernel.template_args).map(String::as_str).chain([kernel.shared_bytes.as_str()]);
    let mut pending: Vec<String> = scalars.chain(launch).filter_map(|text| expr::parse(text).ok()).flat_map(|e| e.free_variables()).collect();
    let mut carried = BTreeSet::new();
    while let Some(name) = pending.pop() {
        if !carried.insert(name.clone()) {
            continue;
        }
        if let Some(derived) = kernel.derived.get(&name).and_then(|text| expr::parse(text).ok()) {
            pending.extend(derived.free_variables());
        }
    }
    carried
}

/// Each size of `shapes` with those equal to it in every one of them, itself first; sizes tied
/// to none are left out.
fn tied_sizes(shapes: &[Shape]) -> BTreeMap<String, Vec<String>> {
    let Some(first) = shapes.first() else { return BTreeMap::new() };
    let equal_everywhere = |a: &String, b: &String| shapes.iter().all(|shape| shape.get(a).is_some() && shape.get(a) == shape.get(b));
    first
        .keys()
        .filter_map(|name| {
            let others: Vec<String> = first.keys().filter(|other| *other != name && equal_everywhere(name, other)).cloned().collect();
            (!others.is_empty()).then(|| (name.clone(), std::iter::once(name.clone()).chain(others).collect()))
        })
        .collect()
}

/// The size variable along the contiguous dimension: `verify.contiguous`, else the last size
/// the kernel is given in the length of the largest buffer whose length names one (row-major:
/// `rows * hidden` → `hidden`; `idx_size_0 * n * idx_size_2` → `n`).
pub fn contiguous_variable(kernel: &KernelSpec, shape: &Shape) -> Option<String> {
    if let Some(name) = &kernel.verify.contiguous {
        return Some(name.clone());
    }
    let problem = problem(kernel, shape, "", 0).ok()?;
    let mut buffers: Vec<(u64, &crate::spec::ArgSpec)> =
        problem.leaf_args().zip(kernel.leaf_args()).filter(|(arg, _)| matches!(arg, Arg::Buffer { .. })).map(|(arg, spec)| (arg.device_bytes(), spec)).collect();
    buffers.sort_by_key(|(bytes, _)| std::cmp::Reverse(*bytes));
    let carried = carried_sizes(kernel);
    let given = |name: &str| shape.contains_key(name) && carried.contains(name);
    // A derived size (`hidden = pairs * 2`) moves with the size it is worked out from.
    let swept = |name: &str| -> Option<String> {
        match kernel.derived.get(name) {
            Some(derived) => expr::parse(derived).ok()?.names().into_iter().rev().map(|(name, _)| name).find(|name| given(name)).map(str::to_string),
            None => given(name).then(|| name.to_string()),
        }
    };
    buffers.iter().find_map(|(_, buffer)| expr::parse(buffer.length.as_deref()?).ok()?.names().into_iter().rev().find_map(|(name, _)| swept(name)))
}

/// The total bytes of a shape's buffers and textures.
fn buffer_bytes(kernel: &KernelSpec, shape: &Shape) -> Result<u64> {
    let problem = problem(kernel, shape, &shape_label(shape), 0)?;
    Ok(problem.args.iter().map(Arg::device_bytes).sum())
}

/// The adversarial inputs of the numerics stage. Each replaces the data of every
/// floating-point input drawn from a uniform or normal distribution (indices and other integer
/// data stay as they are), and loosens the tolerances by [`NUMERICS_TOLERANCE_SCALE`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Inputs {
    /// Between half the dtype's largest finite value and that value.
    NearMax,
    /// Within four times the dtype's smallest normal value of zero.
    NearZero,
    /// Half the elements around 1e3 (or a quarter of the dtype's maximum, if smaller), half
    /// around 1e-3, at random.
    MixedScales,
    /// Every element 0.75.
    AllEqual,
    AllZero,
}

impl Inputs {
    pub const ALL: [Inputs; 5] = [Inputs::NearMax, Inputs::NearZero, Inputs::MixedScales, Inputs::AllEqual, Inputs::AllZero];

    pub fn describe(self) -> &'static str {
        match self {
            Inputs::NearMax => "inputs near the dtype's maximum",
            Inputs::NearZero => "inputs near zero",
            Inputs::MixedScales => "inputs of mixed scales (1e3 and 1e-3)",
            Inputs::AllEqual => "all inputs equal",
            Inputs::AllZero => "all inputs zero",
        }
    }

    fn init(self, dtype: Dtype) -> Init {
        let (max, min_normal) = float_range(dtype);
        match self {
            Inputs::NearMax => Init::Uniform { low: max / 2.0, high: max },
            Inputs::NearZero => Init::Uniform { low: -4.0 * min_normal, high: 4.0 * min_normal },
            Inputs::MixedScales => Init::Mixed { large: (max / 4.0).min(1e3), small: 1e-3 },
            Inputs::AllEqual => Init::Uniform { low: 0.75, high: 0.75 },
            Inputs::AllZero => Init::Uniform { low: 0.0, high: 0.0 },
        }
    }

    /// Replaces the inputs' data and loosens the tolerances; false when no input qualifies.
    fn apply(self, problem: &mut Problem) -> bool {
        let mut replaced = false;
        for arg in problem.args.iter_mut().flat_map(Arg::leaves_mut) {
            let (dtype, read, init) = match arg {
                Arg::Buffer { dtype, role, init, tolerance, .. } => {
                    *tolerance = Tolerance { dtype: *dtype, atol: tolerance.atol * NUMERICS_TOLERANCE_SCALE, rtol: tolerance.rtol * NUMERICS_TOLERANCE_SCALE };
                    (*dtype, *role != Role::Output, init)
                }
                Arg::Texture { dtype, init, .. } => (*dtype, true, init),
                Arg::Scalar { .. } | Arg::Struct { .. } => continue,
            };
            if read && dtype.is_float() && matches!(init, Init::Uniform { .. } | Init::Normal { .. }) {
                *init = self.init(dtype);
                replaced = true;
            }
        }
        replaced
    }
}

/// A float dtype's largest finite and smallest normal values.
fn float_range(dtype: Dtype) -> (f64, f64) {
    match dtype {
        Dtype::F16 => (65504.0, 6.103515625e-5),
        Dtype::Bf16 => (3.3895313892515355e38, f32::MIN_POSITIVE as f64),
        Dtype::Fp8e4m3 => (448.0, 0.015625),
        Dtype::Fp8e5m2 => (57344.0, 6.103515625e-5),
        Dtype::F64 => (f64::MAX, f64::MIN_POSITIVE),
        _ => (f32::MAX as f64, f32::MIN_POSITIVE as f64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec;

    fn example(name: &str) -> KernelSpec {
        let path = format!("{}/../examples/{name}.cutune.toml", env!("CARGO_MANIFEST_DIR"));
        spec::parse_spec(&std::fs::read_to_string(path).unwrap()).0.unwrap().kernels.remove(0)
    }

    fn labels(plan: &Plan, stage: Stage) -> Vec<String> {
        plan.cases.iter().filter(|c| c.stage == stage).map(|c| c.label.clone()).collect()
    }

    #[test]
    fn the_contiguous_size_is_the_last_in_the_largest_buffer() {
        let rmsnorm = example("rmsnorm");
        assert_eq!(contiguous_variable(&rmsnorm, &rmsnorm.shapes[0]).as_deref(), Some("hidden"));
        let mut named = rmsnorm.clone();
        named.verify.contiguous = Some("rows".into());
        assert_eq!(contiguous_variable(&named, &named.shapes[0]).as_deref(), Some("rows"));
    }

    #[test]
    fn buffers_of_fixed_length_leave_out_the_generated_lengths_and_say_why() {
        // cuda-samples' simpleP2P: `1024 * 1024 * 16` floats, the grid over `buf_size`.
        let mut kernel = example("rmsnorm");
        for arg in kernel.args.iter_mut().filter(|a| a.length.is_some()) {
            arg.length = Some("1024 * 16".into());
        }
        let plan = plan(&kernel, &Configuration::default_of(&kernel), &Stage::ALL).unwrap();
        assert_eq!(labels(&plan, Stage::Smoke).len(), 1);
        assert!(!labels(&plan, Stage::Numerics).is_empty());
        let left_out: Vec<(Stage, &str)> = plan.skipped.iter().filter(|s| s.label == "generated lengths").map(|s| (s.stage, s.why.as_str())).collect();
        let why = "no size of the spec is contiguous (no buffer's length names a size the kernel is given): set `verify.contiguous` to sweep one";
        assert_eq!(left_out, [(Stage::Shapes, why), (Stage::Edges, why)]);
        assert!(labels(&plan, Stage::Shapes).iter().all(|l| !l.contains("1023") && !l.contains("50257")));
    }

    #[test]
    fn a_swept_length_every_buffer_squares_is_left_out_past_the_memory_floor() {
        // A transpose of `SIZE * SIZE` elements, its only size: 4097 stays within 1 GiB, 50257 not.
        let mut kernel = example("rmsnorm");
        kernel.shapes = vec![[("SIZE".to_string(), 2048)].into_iter().collect()];
        for arg in kernel.args.iter_mut().filter(|a| a.length.is_some()) {
            arg.length = Some("SIZE * SIZE".into());
        }
        kernel.args.retain(|a| a.length.is_some());
        kernel.grid = vec!["ceil_div(SIZE, 16)".into()];
        kernel.restrictions.clear();
        let plan = plan(&kernel, &Configuration::default_of(&kernel), &[Stage::Shapes]).unwrap();
        assert_eq!(labels(&plan, Stage::Shapes), ["SIZE=2048", "SIZE=1023", "SIZE=4097"]);
        let skipped: Vec<(&str, &str)> = plan.skipped.iter().map(|s| (s.label.as_str(), s.why.as_str())).collect();
        assert_eq!(skipped.len(), 1, "{skipped:?}");
        assert_eq!(skipped[0].0, "SIZE=50257");
        assert!(skipped[0].1.starts_with("its buffers take ") && skipped[0].1.ends_with("MiB) and than 1024 MiB"), "{skipped:?}");
    }

    #[test]
    fn rmsnorm_sweeps_odd_hidden_sizes_within_the_spec_memory() {
        let kernel = example("rmsnorm");
        let config = Configuration::default_of(&kernel);
        let plan = plan(&kernel, &config, &Stage::ALL).unwrap();
        assert_eq!(labels(&plan, Stage::Smoke), ["hidden=4096 rows=4095"]);
        assert_eq!(plan.cases[0].runs, DETERMINISM_RUNS);
        // rows halves until the buffers are no larger than 4095 × 4096's. The spec shape itself
        // is smoke's case, already run three times: neither shapes nor determinism repeat it.
        assert_eq!(labels(&plan, Stage::Shapes), ["hidden=1023 rows=4095", "hidden=4097 rows=2048", "hidden=50257 rows=256"]);
        let cap = buffer_bytes(&kernel, &kernel.shapes[0]).unwrap();
        for case in &plan.cases {
            assert!(buffer_bytes(&kernel, &case.shape).unwrap() <= cap, "{}", case.label);
        }
        assert_eq!(labels(&plan, Stage::Determinism), Vec::<String>::new());
        let covered: Vec<(Stage, &str, Option<Stage>)> = plan.skipped.iter().map(|s| (s.stage, s.why.as_str(), s.covered_by)).collect();
        assert_eq!(
            covered,
            [
                (Stage::Shapes, "the same check as stage 1 (smoke)", Some(Stage::Smoke)),
                (Stage::Determinism, "the same check as stage 1 (smoke)", Some(Stage::Smoke))
            ]
        );
        // Block of 256: one partial block, then lengths misaligned for vectors.
        assert_eq!(
            labels(&plan, Stage::Edges),
            ["hidden=1 rows=1", "hidden=1 rows=4095", "hidden=4096 rows=1", "hidden=255 rows=4095", "hidden=257 rows=4095", "hidden=1027 rows=4095", "hidden=2053 rows=4095"]
        );
    }

    #[test]
    fn a_derived_size_follows_the_size_each_generated_shape_sweeps() {
        // The weight's length is worked out from the row's (`weight_size_0 = hidden`): every
        // shape verification makes has its own, never another.
        let mut kernel = example("rmsnorm");
        kernel.derived.insert("weight_size_0".into(), "hidden".into());
        kernel.args.iter_mut().filter(|a| a.length.as_deref() == Some("hidden")).for_each(|a| a.length = Some("weight_size_0".into()));
        let plan = plan(&kernel, &Configuration::default_of(&kernel), &[Stage::Shapes, Stage::Edges]).unwrap();
        assert_eq!(labels(&plan, Stage::Shapes), ["hidden=4096 rows=4095", "hidden=1023 rows=4095", "hidden=4097 rows=2048", "hidden=50257 rows=256"]);
        let weight = |case: &Case| crate::spec::sizes_of(&kernel, &case.shape).get("weight_size_0").copied();
        for case in &plan.cases {
            assert_eq!(weight(case), Some(expr::Value::Int(case.shape["hidden"])), "{}", case.label);
        }
        // With the weight the largest buffer, its length's derived size names the swept one.
        kernel.args.iter_mut().filter(|a| a.length.as_deref() == Some("(rows * hidden)")).for_each(|a| a.length = Some("rows * weight_size_0".into()));
        assert_eq!(contiguous_variable(&kernel, &kernel.shapes[0]).as_deref(), Some("hidden"));
    }

    #[test]
    fn a_size_the_kernel_is_not_given_follows_the_given_size_it_equals() {
        // The weight's length is a size of its own (`weight_size_0`, read from the tensor a
        // script made), equal to `hidden` in the spec's shape. The kernel is given `hidden`
        // only and reads the weight that far: a generated shape never sets the weight's alone
        // (1 beside `hidden` = 4096 would be a shape the original reads past).
        let mut kernel = example("rmsnorm");
        kernel.shapes[0].insert("weight_size_0".into(), 4096);
        kernel.args.iter_mut().filter(|a| a.length.as_deref() == Some("hidden")).for_each(|a| a.length = Some("weight_size_0".into()));
        let plan = plan(&kernel, &Configuration::default_of(&kernel), &[Stage::Shapes, Stage::Edges]).unwrap();
        assert_eq!(
            labels(&plan, Stage::Shapes),
            ["hidden=4096 rows=4095 weight_size_0=4096", "hidden=1023 rows=4095 weight_size_0=4096", "hidden=4097 rows=2048 weight_size_0=4097", "hidden=50257 rows=256 weight_size_0=50257"]
        );
        // It grows with `hidden`, never shrinks: the tie may be chance, and a larger buffer is
        // never read past.
        let edges = labels(&plan, Stage::Edges);
        assert_eq!(edges[..3], ["hidden=1 rows=1 weight_size_0=4096", "hidden=1 rows=4095 weight_size_0=4096", "hidden=4096 rows=1 weight_size_0=4096"], "{edges:?}");
        assert!(edges.iter().all(|l| l.contains("weight_size_0=4096")), "{edges:?}");
    }

    #[test]
    fn sizes_the_kernel_is_given_equal_in_every_shape_move_together_and_alone() {
        // Both sizes reach the kernel: the tie may be chance (mmcv's backward had its 32
        // channels tied to an output's 32 rows), so each is also set alone, and a group at 1
        // together would be a problem of no program.
        let mut kernel = example("rmsnorm");
        kernel.shapes[0].insert("weight_size_0".into(), 4096);
        kernel.args.iter_mut().filter(|a| a.length.as_deref() == Some("hidden")).for_each(|a| a.length = Some("weight_size_0".into()));
        let mut given = kernel.args.iter().find(|a| a.name == "hidden").unwrap().clone();
        (given.name, given.value) = ("weight_length".into(), Some("weight_size_0".into()));
        kernel.args.push(given);
        let plan = plan(&kernel, &Configuration::default_of(&kernel), &[Stage::Shapes, Stage::Edges]).unwrap();
        assert_eq!(
            labels(&plan, Stage::Shapes),
            ["hidden=4096 rows=4095 weight_size_0=4096", "hidden=1023 rows=4095 weight_size_0=4096", "hidden=1023 rows=4095 weight_size_0=1023", "hidden=4097 rows=2048 weight_size_0=4096", "hidden=4097 rows=2048 weight_size_0=4097", "hidden=50257 rows=256 weight_size_0=4096", "hidden=50257 rows=256 weight_size_0=50257"]
        );
        let edges = labels(&plan, Stage::Edges);
        assert!(edges.contains(&"hidden=1 rows=4095 weight_size_0=4096".to_string()) && !edges.contains(&"hidden=1 rows=4095 weight_size_0=1".to_string()), "{edges:?}");
        assert!(edges.contains(&"hidden=4096 rows=4095 weight_size_0=1".to_string()), "{edges:?}");
        assert!(edges.contains(&"hidden=255 rows=4095 weight_size_0=255".to_string()), "{edges:?}");
        // Sizes equal in one shape but not another are no tie.
        let mut untied = kernel.clone();
        let mut other = untied.shapes[0].clone();
        other.insert("weight_size_0".into(), 8192);
        untied.shapes.push(other);
        let untied_plan = super::plan(&untied, &Configuration::default_of(&untied), &[Stage::Shapes]).unwrap();
        let shapes = labels(&untied_plan, Stage::Shapes);
        assert!(!shapes.iter().any(|l| l == "hidden=1023 rows=4095 weight_size_0=1023"), "{shapes:?}");
    }

    #[test]
    fn a_size_the_kernel_is_given_nowhere_keeps_the_spec_value() {
        // mmcv's three_interpolate: `idx` is (b, n, 3), the kernel given `b` and `n` and reading
        // three neighbours. `idx_size_2` is no size to sweep, halve, scale or set to 1.
        let mut kernel = example("rmsnorm");
        kernel.shapes[0].insert("neighbours".into(), 3);
        for arg in kernel.args.iter_mut().filter(|a| a.name == "in") {
            arg.length = Some("rows * hidden * neighbours".into());
        }
        assert_eq!(contiguous_variable(&kernel, &kernel.shapes[0]).as_deref(), Some("hidden"));
        kernel.restrictions.push("hidden % 1024 == 0".into());
        let plan = plan(&kernel, &Configuration::default_of(&kernel), &Stage::ALL).unwrap();
        assert!(!plan.cases.is_empty());
        for case in &plan.cases {
            assert_eq!(case.shape["neighbours"], 3, "{}", case.label);
        }
        // Scaled where the restriction refuses the swept lengths (the spec shape is smoke's);
        // halved for numerics.
        assert_eq!(labels(&plan, Stage::Shapes), ["hidden=3072 neighbours=3 rows=3071", "hidden=2048 neighbours=3 rows=2047"]);
        assert!(labels(&plan, Stage::Numerics)[0].starts_with("hidden=4096 neighbours=3 rows=256,"), "{:?}", labels(&plan, Stage::Numerics));
        assert!(plan.skipped.iter().all(|s| !s.label.contains("neighbours=1")), "{:?}", plan.skipped);
    }

    #[test]
    fn a_stage_asked_for_alone_runs_its_own_cases() {
        let kernel = example("rmsnorm");
        let plan = plan(&kernel, &Configuration::default_of(&kernel), &[Stage::Determinism]).unwrap();
        assert_eq!(labels(&plan, Stage::Determinism), ["hidden=4096 rows=4095"]);
        assert!(plan.cases.iter().all(|c| c.runs == DETERMINISM_RUNS));
        assert!(plan.skipped.is_empty(), "{:?}", plan.skipped);
    }

    #[test]
    fn a_case_with_more_runs_than_the_earlier_one_is_still_run() {
        // Shapes runs the spec shape once; determinism needs three runs of it.
        let kernel = example("rmsnorm");
        let plan = plan(&kernel, &Configuration::default_of(&kernel), &[Stage::Shapes, Stage::Determinism]).unwrap();
        assert_eq!(labels(&plan, Stage::Shapes)[0], "hidden=4096 rows=4095");
        assert_eq!(labels(&plan, Stage::Determinism), ["hidden=4096 rows=4095"]);
    }

    #[test]
    fn numerics_replace_float_inputs_and_loosen_tolerances() {
        let kernel = example("rmsnorm");
        let plan = plan(&kernel, &Configuration::default_of(&kernel), &[Stage::Numerics]).unwrap();
        assert_eq!(plan.cases.len(), 5);
        let near_max = &plan.cases[0];
        // rows halved until both 4096-wide buffers fit in NUMERICS_BYTES; the row stays whole.
        assert_eq!(near_max.label, "hidden=4096 rows=512, inputs near the dtype's maximum");
        assert!(buffer_bytes(&kernel, &near_max.shape).unwrap() <= NUMERICS_BYTES);
        for arg in &near_max.problem.args {
            if let Arg::Buffer { name, init, tolerance, role, .. } = arg {
                // An output's data is poison, whatever its `init`: only what the kernel reads changes.
                if *role != Role::Output {
                    assert_eq!(*init, Init::Uniform { low: 32752.0, high: 65504.0 }, "{name}");
                }
                assert_eq!((tolerance.atol, tolerance.rtol), (0.1, 0.1), "{name}");
            }
        }
        let zero = &plan.cases[4];
        assert!(zero.problem.args.iter().any(|a| matches!(a, Arg::Buffer { init: Init::Uniform { low: 0.0, high: 0.0 }, .. })));
    }

    #[test]
    fn numerics_shrink_the_contiguous_size_last_and_keep_shapes_the_restrictions_allow() {
        let mut kernel = example("rmsnorm");
        kernel.shapes[0].insert("hidden".into(), 1 << 24);
        kernel.shapes[0].insert("rows".into(), 2);
        let cut = plan(&kernel, &Configuration::default_of(&kernel), &[Stage::Numerics]).unwrap();
        assert_eq!(cut.cases[0].label, "hidden=2097152 rows=1, inputs near the dtype's maximum");
        // A restriction the cut-down shape breaks: the stage keeps the spec shape.
        kernel.restrictions.push("rows == 2".into());
        let kept = plan(&kernel, &Configuration::default_of(&kernel), &[Stage::Numerics]).unwrap();
        assert_eq!(kept.cases[0].label, "hidden=16777216 rows=2, inputs near the dtype's maximum");
    }

    #[test]
    fn numerics_keep_the_sizes_no_buffer_length_names() {
        // Fixed-size buffers (a benchmark allocating its largest problem once): halving `rows`
        // would save nothing, so the shape stays as the spec gives it.
        let mut kernel = example("rmsnorm");
        kernel.shapes.truncate(1);
        kernel.shapes[0].insert("hidden".into(), 4096);
        kernel.shapes[0].insert("rows".into(), 4096);
        for arg in kernel.args.iter_mut().filter(|a| a.is_buffer()) {
            arg.length = Some("4096 * 4096".into());
        }
        let plan = plan(&kernel, &Configuration::default_of(&kernel), &[Stage::Numerics]).unwrap();
        assert_eq!(plan.cases[0].label, "hidden=4096 rows=4096, inputs near the dtype's maximum");
    }

    #[test]
    fn integer_inputs_are_not_replaced_and_without_float_inputs_numerics_are_skipped() {
        let mut kernel = example("rmsnorm");
        for arg in kernel.args.iter_mut().filter(|a| a.is_buffer()) {
            arg.init = Some(Init::Integers { low: 0, high: 4 });
        }
        let plan = plan(&kernel, &Configuration::default_of(&kernel), &[Stage::Numerics]).unwrap();
        assert!(plan.cases.is_empty());
        assert_eq!(plan.skipped.len(), 5);
        assert!(plan.skipped[0].why.contains("no floating-point input"), "{:?}", plan.skipped[0]);
    }

    #[test]
    fn shapes_the_restrictions_refuse_are_skipped_with_the_restriction() {
        let mut kernel = example("rmsnorm");
        kernel.restrictions.push("hidden % 1024 == 0".into());
        let plan = plan(&kernel, &Configuration::default_of(&kernel), &[Stage::Shapes]).unwrap();
        let swept: Vec<(&str, &str)> = plan.skipped.iter().map(|s| (s.label.as_str(), s.why.as_str())).collect();
        let why = "not a shape the original allows: restriction `hidden % 1024 == 0` is false";
        assert_eq!(swept, [("hidden=1023 rows=4095", why), ("hidden=4097 rows=2048", why), ("hidden=50257 rows=256", why)]);
        // SGEMM_CUDA's tiled kernels compare no size with anything: where every swept length is
        // refused, the sizes shrink together, each kept a multiple of the tiles it held.
        assert_eq!(labels(&plan, Stage::Shapes), ["hidden=4096 rows=4095", "hidden=3072 rows=3071", "hidden=2048 rows=2047"]);
        // Where a swept length is allowed, the sweep is enough.
        let plain = example("rmsnorm");
        let swept_alone = super::plan(&plain, &Configuration::default_of(&plain), &[Stage::Shapes]).unwrap();
        assert!(labels(&swept_alone, Stage::Shapes).iter().all(|l| !l.contains("3072")));
    }

    #[test]
    fn every_case_has_its_own_seed() {
        let kernel = example("softmax");
        let plan = plan(&kernel, &Configuration::default_of(&kernel), &Stage::ALL).unwrap();
        let seeds: BTreeSet<u64> = plan.cases.iter().map(|c| c.problem.seed).collect();
        assert_eq!(seeds.len(), plan.cases.len());
        // Two spec shapes: the smaller one (rows=255) is the smoke test's.
        assert_eq!(labels(&plan, Stage::Smoke), ["cols=32000 rows=255"]);
    }
}
