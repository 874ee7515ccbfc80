//! The parameter space of a kernel spec: configurations, the restrictions they must meet, and
//! how one configuration becomes an NVRTC request.
//!
//! Spaces multiply quickly (five parameters of five values are 3,125 configurations), so they
//! are counted and sampled by index without materialising every configuration.

mod fit;

use std::collections::{BTreeMap, BTreeSet};

use crate::compile::{CompileRequest, KernelResources};
use crate::gpu::{DeviceInfo, LaunchDims};
use crate::spec::expr::{self, Value};
use crate::spec::{self, KernelSpec, ParamKind, ParamSpec, Shape};

pub use fit::{fit, Occupancy};

/// Parameter name to value, in the spec's parameter order.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Configuration(pub Vec<(String, i64)>);

impl Configuration {
    pub fn default_of(kernel: &KernelSpec) -> Configuration {
        Configuration(kernel.params.iter().map(|p| (p.name.clone(), p.default)).collect())
    }

    pub fn get(&self, name: &str) -> Option<i64> {
        self.0.iter().find(|(n, _)| n == name).map(|(_, v)| *v)
    }
}

impl std::fmt::Display for Configuration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts: Vec<String> = self.0.iter().map(|(n, v)| format!("{n}={v}")).collect();
        f.write_str(&parts.join(" "))
    }
}

/// Every configuration of the spec, in mixed-radix order over the parameters' values.
pub struct Space<'k> {
    kernel: &'k KernelSpec,
}

impl<'k> Space<'k> {
    pub fn new(kernel: &'k KernelSpec) -> Space<'k> {
        Space { kernel }
    }

    /// How many configurations, saturating at `u64::MAX`.
    pub fn count(&self) -> u64 {
        self.kernel.params.iter().fold(1u64, |n, p| n.saturating_mul(p.values.len() as u64))
    }

    /// The configuration at `index` (less than [`Space::count`]).
    pub fn at(&self, mut index: u64) -> Configuration {
        let mut values = Vec::with_capacity(self.kernel.params.len());
        for p in self.kernel.params.iter().rev() {
            let radix = p.values.len().max(1) as u64;
            values.push((p.name.clone(), p.values.get((index % radix) as usize).copied().unwrap_or(p.default)));
            index /= radix;
        }
        values.reverse();
        Configuration(values)
    }

    /// The default configuration first, then every configuration when there are at most `limit`,
    /// else `limit - 1` distinct ones drawn with a seeded generator: the same seed, the same
    /// sample.
    pub fn sample(&self, limit: u64, seed: u64) -> Vec<Configuration> {
        let default = Configuration::default_of(self.kernel);
        let count = self.count();
        let mut out = vec![default.clone()];
        if count <= limit {
            out.extend((0..count).map(|i| self.at(i)).filter(|c| *c != default));
            return out;
        }
        let mut rng = SplitMix64::new(seed);
        let mut seen = std::collections::HashSet::new();
        // Bounded, in case the space holds fewer distinct configurations than asked for.
        for _ in 0..limit.saturating_mul(20) {
            if out.len() as u64 >= limit {
                break;
            }
            let index = rng.below(count);
            if seen.insert(index) {
                let c = self.at(index);
                if c != default {
                    out.push(c);
                }
            }
        }
        out
    }
}

/// A small, well-known generator (Steele et al.): reproducible across platforms and versions.
/// Every seeded choice in cutune (samples, search strategies, input data) draws from it.
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1), from the top 53 bits.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in [0, n); `n` must be positive.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// Why a configuration cannot run, decided before compiling it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Infeasible {
    pub reason: String,
}

/// The names a configuration's expressions see: the shape's sizes, the parameters, the scalar
/// arguments.
pub fn environment(kernel: &KernelSpec, shape: &Shape, config: &Configuration) -> BTreeMap<String, Value> {
    spec::environment(kernel, shape, &|p| config.get(&p.name).unwrap_or(p.default))
}

/// The hardware's limits on a block, the same on every CUDA GPU since compute capability 2.0.
const MAX_THREADS_PER_BLOCK: i64 = 1024;
const MAX_BLOCK_DIM: [i64; 3] = [1024, 1024, 64];
const MAX_GRID_DIM: [i64; 3] = [(1 << 31) - 1, 65_535, 65_535];

/// Checks the spec's restrictions and the block's shape for `config` on `shape`.
pub fn check_restrictions(kernel: &KernelSpec, shape: &Shape, config: &Configuration) -> Result<(), Infeasible> {
    let env = environment(kernel, shape, config);
    let lookup = |n: &str| env.get(n).copied();
    for restriction in &kernel.restrictions {
        let verdict = expr::parse(restriction).map_err(|e| e.message).and_then(|e| e.eval(&lookup).map_err(|e| e.message));
        match verdict {
            Ok(v) if v.is_true() => {}
            Ok(_) => return Err(Infeasible { reason: format!("restriction `{restriction}` is false") }),
            Err(why) => return Err(Infeasible { reason: format!("restriction `{restriction}` cannot be evaluated: {why}") }),
        }
    }
    let dims = launch_dims(kernel, shape, config)?;
    let threads = dims.threads() as i64;
    if threads > MAX_THREADS_PER_BLOCK {
        return Err(Infeasible { reason: format!("{threads} threads per block; the limit is {MAX_THREADS_PER_BLOCK}") });
    }
    Ok(())
}

/// Narrows each parameter's values to those the restrictions can allow: a conjunct of one
/// (`kPad >= 0 and kPad % 8 == 0`) that names a single parameter not yet pinned to one value,
/// besides the sizes every shape of `sizes` gives, rules out the values that make it false on
/// some shape. A parameter left one value is that number in the other conjuncts
/// (`BLOCK_ROW_WARPS == BLOCK_COLS // 64` once `BLOCK_COLS` is 128), until nothing narrows: a
/// search drawing at random rarely meets a chain of such ties all at once. A parameter whose
/// default a conjunct refuses keeps its values. With no `sizes`, a conjunct naming a size
/// narrows nothing.
pub fn narrow_to_restricted_values(params: &mut [ParamSpec], restrictions: &[String], sizes: &[BTreeMap<String, Value>]) {
    let parsed: Vec<expr::Expr> = restrictions.iter().filter_map(|r| expr::parse(r).ok()).collect();
    let conjuncts: Vec<&expr::Expr> = parsed.iter().flat_map(conjuncts_of).collect();
    let no_sizes = [BTreeMap::new()];
    let shapes = if sizes.is_empty() { &no_sizes[..] } else { sizes };
    let mut narrowed = true;
    while narrowed {
        narrowed = false;
        for conjunct in &conjuncts {
            let pinned: BTreeMap<String, i64> = params.iter().filter_map(|p| match p.values[..] {
                [value] => Some((p.name.clone(), value)),
                _ => None,
            }).collect();
            let names = conjunct.free_variables();
            let open: Vec<&String> = names.iter().filter(|n| !pinned.contains_key(*n) && !shapes.iter().all(|s| s.contains_key(*n))).collect();
            let [name] = open[..] else { continue };
            let Some(param) = params.iter_mut().find(|p| &p.name == name) else { continue };
            let allows = |v: i64| {
                shapes.iter().all(|sizes| {
                    let value_of = |word: &str| match word == name {
                        true => Some(Value::Int(v)),
                        false => pinned.get(word).map(|&p| Value::Int(p)).or_else(|| sizes.get(word).copied()),
                    };
                    conjunct.eval(&value_of).is_ok_and(|holds| holds.is_true())
                })
            };
            if allows(param.default) && !param.values.iter().all(|v| allows(*v)) {
                param.values.retain(|v| allows(*v));
                narrowed = true;
            }
        }
    }
}

/// The operands of `expr`'s top-level `and`s (`a && b && c` → `a`, `b`, `c`): each must hold.
fn conjuncts_of(expr: &expr::Expr) -> Vec<&expr::Expr> {
    match &expr.kind {
        expr::ExprKind::Binary(expr::BinaryOp::And, a, b) => conjuncts_of(a).into_iter().chain(conjuncts_of(b)).collect(),
        _ => vec![expr],
    }
}

/// For each parameter but the compiler options, the values it takes in the configurations the
/// restrictions and the block's limits allow on `shape`, the compiler options at their
/// defaults; `None` when there are more than `limit` such configurations to look at.
pub fn values_allowed(kernel: &KernelSpec, shape: &Shape, limit: u64) -> Option<Vec<(String, BTreeSet<i64>)>> {
    let is_option = |p: &ParamSpec| matches!(p.kind, ParamKind::FastMath | ParamKind::MaxRegisters);
    let params = kernel.params.iter().map(|p| if is_option(p) { ParamSpec { values: vec![p.default], ..p.clone() } } else { p.clone() }).collect();
    let execution = KernelSpec { params, ..kernel.clone() };
    let space = Space::new(&execution);
    if space.count() > limit {
        return None;
    }
    let mut allowed: Vec<(String, BTreeSet<i64>)> = execution.params.iter().filter(|p| !is_option(p)).map(|p| (p.name.clone(), BTreeSet::new())).collect();
    for config in (0..space.count()).map(|i| space.at(i)).filter(|c| check_restrictions(&execution, shape, c).is_ok()) {
        for (name, values) in &mut allowed {
            values.extend(config.get(name));
        }
    }
    Some(allowed)
}

/// The grid, block and dynamic shared memory of `config` on `shape`, from the spec's
/// expressions; a grid of [`spec::BLOCKS_PER_SM`] at the most the block allows, before the
/// configuration is compiled ([`launch_dims_compiled`] gives the one it runs with).
pub fn launch_dims(kernel: &KernelSpec, shape: &Shape, config: &Configuration) -> Result<LaunchDims, Infeasible> {
    launch_dims_in(kernel, environment(kernel, shape, config))
}

/// The launch of `config` on `shape` as its compiled kernel runs on `device`: where the spec
/// names [`spec::BLOCKS_PER_SM`], the occupancy `resources` give the block, as the program's
/// call of the occupancy calculator would.
pub fn launch_dims_compiled(kernel: &KernelSpec, shape: &Shape, config: &Configuration, device: &DeviceInfo, resources: Option<&KernelResources>) -> Result<LaunchDims, Infeasible> {
    let mut env = environment(kernel, shape, config);
    let bounded = launch_dims_in(kernel, env.clone())?;
    let (Some(resources), false) = (resources, shape.contains_key(spec::BLOCKS_PER_SM) || !spec::names_blocks_per_sm(kernel)) else { return Ok(bounded) };
    let resident = fit::fit(device, bounded.threads(), resources, bounded.shared_bytes as u64)?;
    env.insert(spec::BLOCKS_PER_SM.to_string(), Value::Int(resident.blocks_per_multiprocessor as i64));
    launch_dims_in(kernel, env)
}

fn launch_dims_in(kernel: &KernelSpec, env: BTreeMap<String, Value>) -> Result<LaunchDims, Infeasible> {
    let lookup = |n: &str| env.get(n).copied();
    let evaluate = |what: &str, text: &str| {
        expr::parse(text)
            .map_err(|e| e.message)
            .and_then(|e| e.eval_integer(&lookup).map_err(|e| e.message))
            .map_err(|why| Infeasible { reason: format!("{what} `{text}`: {why}") })
    };
    let extents = |what: &str, texts: &[String], limits: [i64; 3]| -> Result<[u32; 3], Infeasible> {
        let mut out = [1u32; 3];
        for (axis, text) in texts.iter().enumerate().take(3) {
            let value = evaluate(what, text)?;
            if value < 1 || value > limits[axis] {
                let name = ["x", "y", "z"][axis];
                return Err(Infeasible { reason: format!("{what} extent {name} is {value}; it must be 1 to {}", limits[axis]) });
            }
            out[axis] = value as u32;
        }
        Ok(out)
    };
    let grid = extents("grid", &kernel.grid, MAX_GRID_DIM)?;
    let block = extents("block", &kernel.block, MAX_BLOCK_DIM)?;
    let shared = evaluate("shared_bytes", &kernel.shared_bytes)?;
    let shared_bytes = u32::try_from(shared).map_err(|_| Infeasible { reason: format!("shared_bytes is {shared}") })?;
    Ok(LaunchDims { grid, block, shared_bytes, cooperative: kernel.cooperative })
}

/// The NVRTC request that builds `config`: parameters as `-D` defines, compiler-option
/// parameters as options, template parameters in the instantiation's name expression.
pub fn compile_request(kernel: &KernelSpec, source: &str, arch: &str, config: &Configuration) -> CompileRequest {
    let mut request = CompileRequest::new(source, format!("{}.cu", kernel.name), arch);
    request.options = kernel.compiler_options.clone();
    for p in &kernel.params {
        let value = config.get(&p.name).unwrap_or(p.default);
        match p.kind {
            ParamKind::Define => request.defines.push((p.name.clone(), value.to_string())),
            ParamKind::FastMath if value != 0 => request.options.push("--use_fast_math".into()),
            ParamKind::MaxRegisters if value > 0 => request.options.push(format!("--maxrregcount={value}")),
            ParamKind::FastMath | ParamKind::MaxRegisters | ParamKind::Template | ParamKind::Launch => {}
        }
    }
    request.name_expressions.push(name_expression(kernel, config));
    request
}

/// `&kernel` or `&kernel<half, 256>`, with the configuration's values for template parameters.
pub fn name_expression(kernel: &KernelSpec, config: &Configuration) -> String {
    if kernel.template_args.is_empty() {
        return format!("&{}", kernel.name);
    }
    let args: Vec<String> = kernel
        .template_args
        .iter()
        .map(|a| config.get(a.trim()).map_or_else(|| a.trim().to_string(), |v| v.to_string()))
        .collect();
    format!("&{}<{}>", kernel.name, args.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{ParamSpec, SpecFile};

    fn spec() -> KernelSpec {
        let text = include_str!("../../../tests/fixtures/spec/space.cutune.toml");
        let (file, diagnostics): (Option<SpecFile>, _) = crate::spec::parse_spec(text);
        assert!(diagnostics.iter().all(|d| d.severity != crate::spec::Severity::Error), "{diagnostics:?}");
        file.unwrap().kernels.remove(0)
    }

    #[test]
    fn a_parameter_pinned_by_a_restriction_is_its_number_in_the_others() {
        let param = |name: &str, default: i64, values: &[i64]| ParamSpec { name: name.into(), kind: ParamKind::Define, default, values: values.to_vec(), origin: String::new() };
        let params = vec![param("COLS", 128, &[32, 64, 128, 256]), param("ROW_WARPS", 2, &[1, 2, 4, 8]), param("WARPS", 8, &[2, 4, 8, 16]), param("STRIDE", 32, &[8, 16, 32])];
        let restrictions = ["WARPS == ROW_WARPS * 4", "ROW_WARPS == COLS // 64 and STRIDE >= 8", "128 == COLS", "STRIDE >= n"].map(String::from);
        let narrowed = |sizes: &[BTreeMap<String, Value>]| {
            let mut params = params.clone();
            narrow_to_restricted_values(&mut params, &restrictions, sizes);
            params.into_iter().map(|p| (p.name, p.values)).collect::<Vec<_>>()
        };
        let expected = |stride: &[i64]| vec![("COLS".to_string(), vec![128]), ("ROW_WARPS".into(), vec![2]), ("WARPS".into(), vec![8]), ("STRIDE".into(), stride.to_vec())];
        assert_eq!(narrowed(&[]), expected(&[8, 16, 32]), "without shapes, a restriction on a size narrows nothing");
        // On every shape: `STRIDE >= n` for n = 16 and n = 12 leaves 16 and 32.
        let shape = |n: i64| BTreeMap::from([("n".to_string(), Value::Int(n))]);
        assert_eq!(narrowed(&[shape(16), shape(12)]), expected(&[16, 32]));
        // A default the restriction refuses: the values stay as the user wrote them.
        assert_eq!(narrowed(&[shape(64)]), expected(&[8, 16, 32]));
    }

    #[test]
    fn configurations_are_indexed_in_mixed_radix_order() {
        let k = spec();
        let space = Space::new(&k);
        assert_eq!(space.count(), 4 * 3 * 2);
        assert_eq!(space.at(0).to_string(), "BLOCK=64 VEC=1 fast_math=0");
        assert_eq!(space.at(1).to_string(), "BLOCK=64 VEC=1 fast_math=1");
        assert_eq!(space.at(23).to_string(), "BLOCK=2048 VEC=4 fast_math=1");
    }

    #[test]
    fn samples_start_with_the_default_and_repeat_with_the_seed() {
        let k = spec();
        let space = Space::new(&k);
        let all = space.sample(100, 7);
        assert_eq!(all.len(), 24);
        assert_eq!(all[0], Configuration::default_of(&k));
        let a = space.sample(5, 1);
        assert_eq!(a.len(), 5);
        assert_eq!(a, space.sample(5, 1));
        assert_ne!(a, space.sample(5, 2));
    }

    #[test]
    fn restrictions_and_block_limits_make_configurations_infeasible_with_a_reason() {
        let k = spec();
        let shape = k.shapes[0].clone();
        let ok = Configuration(vec![("BLOCK".into(), 128), ("VEC".into(), 2), ("fast_math".into(), 0)]);
        assert_eq!(check_restrictions(&k, &shape, &ok), Ok(()));
        let odd = Configuration(vec![("BLOCK".into(), 128), ("VEC".into(), 4), ("fast_math".into(), 0)]);
        assert_eq!(check_restrictions(&k, &shape, &odd).unwrap_err().reason, "restriction `hidden % VEC == 0` is false");
        let big = Configuration(vec![("BLOCK".into(), 2048), ("VEC".into(), 1), ("fast_math".into(), 0)]);
        assert_eq!(check_restrictions(&k, &shape, &big).unwrap_err().reason, "block extent x is 2048; it must be 1 to 1024");
    }

    #[test]
    fn the_values_allowed_are_those_of_feasible_configurations_with_compiler_options_at_their_defaults() {
        let k = spec();
        let values = |shape: &Shape, limit| values_allowed(&k, shape, limit).map(|v| v.into_iter().map(|(n, set)| (n, set.into_iter().collect::<Vec<_>>())).collect::<Vec<_>>());
        // hidden = 6: VEC 4 does not divide it; BLOCK 2048 is over the block's limit.
        let shape = k.shapes[0].clone();
        assert_eq!(values(&shape, 12), Some(vec![("BLOCK".into(), vec![64, 128, 256]), ("VEC".into(), vec![1, 2])]));
        let odd = Shape::from([("rows".to_string(), 4), ("hidden".to_string(), 7)]);
        assert_eq!(values(&odd, 12), Some(vec![("BLOCK".into(), vec![64, 128, 256]), ("VEC".into(), vec![1])]));
        // 4 x 3 configurations once fast_math keeps its default: over a limit of 11.
        assert_eq!(values(&shape, 11), None);
    }

    #[test]
    fn a_grid_of_the_blocks_an_sm_holds_follows_the_compiled_kernel() {
        let mut k = spec();
        k.grid = vec!["min(rows * 1024, blocks_per_sm * sm_count)".into()];
        k.args[0].length = Some("blocks_per_sm * sm_count".into());
        let shape = Shape::from([("rows".to_string(), 4), ("hidden".to_string(), 6), ("sm_count".to_string(), 132)]);
        let config = Configuration(vec![("BLOCK".into(), 256), ("VEC".into(), 1), ("fast_math".into(), 0)]);
        // Before compiling: the most blocks of 256 threads an SM of 2048 holds.
        assert_eq!(environment(&k, &shape, &config)["blocks_per_sm"], Value::Int(8));
        assert_eq!(launch_dims(&k, &shape, &config).unwrap().grid, [8 * 132, 1, 1]);
        let h100 = DeviceInfo::datasheet("sm_90").unwrap();
        let light = KernelResources { registers: 32, ..KernelResources::default() };
        assert_eq!(launch_dims_compiled(&k, &shape, &config, &h100, Some(&light)).unwrap().grid, [8 * 132, 1, 1]);
        // 128 registers a thread: 65536 / (128 × 256) = 2 blocks an SM.
        let heavy = KernelResources { registers: 128, ..KernelResources::default() };
        assert_eq!(launch_dims_compiled(&k, &shape, &config, &h100, Some(&heavy)).unwrap().grid, [2 * 132, 1, 1]);
        // A shape that gives it (a captured launch's number) keeps it.
        let captured = Shape::from([("rows".to_string(), 4), ("hidden".to_string(), 6), ("sm_count".to_string(), 132), ("blocks_per_sm".to_string(), 3)]);
        assert_eq!(launch_dims_compiled(&k, &captured, &config, &h100, Some(&heavy)).unwrap().grid, [3 * 132, 1, 1]);
        // A kernel that does not name it is launched as the spec says, compiled or not.
        let plain = spec();
        assert_eq!(launch_dims_compiled(&plain, &shape, &config, &h100, Some(&heavy)).unwrap(), launch_dims(&plain, &shape, &config).unwrap());
        assert!(!environment(&plain, &shape, &config).contains_key("blocks_per_sm"));
    }

    #[test]
    fn a_configuration_becomes_defines_options_and_a_name_expression() {
        let mut k = spec();
        k.template_args = vec!["half".into(), "BLOCK".into()];
        k.params.push(ParamSpec { name: "regs".into(), kind: ParamKind::MaxRegisters, default: 0, values: vec![0, 64], origin: String::new() });
        let config = Configuration(vec![("BLOCK".into(), 256), ("VEC".into(), 2), ("fast_math".into(), 1), ("regs".into(), 64)]);
        let request = compile_request(&k, "src", "sm_90", &config);
        assert_eq!(request.defines, vec![("BLOCK".to_string(), "256".to_string()), ("VEC".to_string(), "2".to_string())]);
        assert_eq!(request.options, vec!["-std=c++17", "--use_fast_math", "--maxrregcount=64"]);
        assert_eq!(request.name_expressions, vec!["&row_scale<half, 256>"]);
    }
}
