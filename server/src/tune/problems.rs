//! The problems a kernel is measured on: every spec shape with its arguments resolved.

use anyhow::{anyhow, bail, Result};

use crate::gpu::{Arg, Problem};
use crate::spec::{self, expr, Init, KernelSpec, Shape};

/// Inputs are filled the same way for the baseline and every candidate; this seed is part of
/// the results' key, so changing it re-measures.
pub const DATA_SEED: u64 = 0x5eed;

/// One [`Problem`] per shape of the spec, in order. Buffer lengths and scalar values are
/// evaluated with every parameter at its default: they describe the problem, not the code.
pub fn problems(kernel: &KernelSpec) -> Result<Vec<Problem>> {
    if kernel.shapes.is_empty() {
        bail!("the spec of `{}` has no shape to measure on", kernel.name);
    }
    kernel
        .shapes
        .iter()
        .enumerate()
        .map(|(index, shape)| {
            let label = shape_label(shape);
            problem(kernel, shape, &label, DATA_SEED.wrapping_add(index as u64)).map_err(|e| anyhow!("shape {} ({label}): {e}", index + 1))
        })
        .collect()
}

/// `hidden=4096 rows=4095`.
pub fn shape_label(shape: &Shape) -> String {
    shape.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ")
}

/// The problem of one shape: its arguments resolved, its data drawn from `seed`.
pub fn problem(kernel: &KernelSpec, shape: &Shape, label: &str, seed: u64) -> Result<Problem> {
    let env = spec::environment(kernel, shape, &|p| p.default);
    let lookup = |n: &str| env.get(n).copied();
    let args = kernel
        .args
        .iter()
        .map(|arg| {
            let evaluate = |what: &str, text: &str| {
                expr::parse(text).map_err(|e| e.message).and_then(|e| e.eval(&lookup).map_err(|e| e.message)).map_err(|why| anyhow!("argument `{}`: {what} `{text}`: {why}", arg.name))
            };
            match (&arg.length, &arg.value) {
                (Some(length), _) => {
                    let length = evaluate("length", length)?.as_integer().filter(|&n| n > 0).ok_or_else(|| anyhow!("argument `{}`: length `{length}` is not a positive integer", arg.name))?;
                    let role = arg.role.ok_or_else(|| anyhow!("argument `{}`: no role (input, output or inout)", arg.name))?;
                    // Outputs are poisoned before every run; their fill only matters for inouts.
                    let init = arg.init.clone().unwrap_or(Init::Uniform { low: -1.0, high: 1.0 });
                    Ok(Arg::Buffer { name: arg.name.clone(), dtype: arg.dtype, length: length as u64, role, init, tolerance: kernel.verify.tolerance(arg.dtype) })
                }
                (None, Some(value)) => Ok(Arg::Scalar { name: arg.name.clone(), dtype: arg.dtype, value: evaluate("value", value)?.as_f64() }),
                (None, None) => bail!("argument `{}` has neither a length (a buffer) nor a value (a scalar)", arg.name),
            }
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Problem { label: label.to_string(), args, seed })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::Role;

    fn rmsnorm() -> KernelSpec {
        let text = include_str!("../../../examples/rmsnorm.cutune.toml");
        spec::parse_spec(text).0.unwrap().kernels.remove(0)
    }

    #[test]
    fn every_shape_becomes_a_problem_with_resolved_lengths_and_scalars() {
        let problems = problems(&rmsnorm()).unwrap();
        assert_eq!(problems.len(), 1);
        assert_eq!(problems[0].label, "hidden=4096 rows=4095");
        let Arg::Buffer { length, role, .. } = &problems[0].args[0] else { panic!("{:?}", problems[0].args[0]) };
        assert_eq!((*length, *role), (4095 * 4096, Role::InOut));
        let Arg::Scalar { name, value, .. } = &problems[0].args[3] else { panic!() };
        assert_eq!((name.as_str(), *value), ("hidden", 4096.0));
        let Arg::Scalar { value, .. } = &problems[0].args[4] else { panic!() };
        assert!((value - 1e-6).abs() < 1e-12);
    }

    #[test]
    fn an_unresolvable_length_names_the_shape_and_argument() {
        let mut kernel = rmsnorm();
        kernel.args[1].length = Some("rows * width".into());
        let error = problems(&kernel).unwrap_err().to_string();
        assert!(error.starts_with("shape 1 (hidden=4096 rows=4095): argument `in`: length `rows * width`"), "{error}");
    }
}
