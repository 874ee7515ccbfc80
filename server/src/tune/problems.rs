//! The problems a kernel is measured on: every spec shape with its arguments resolved.

use anyhow::{anyhow, bail, Result};

use std::path::Path;

use cutune_capture::report::CaptureFile;

use crate::gpu::{Arg, CapturedData, Problem, StructField};
use crate::spec::{self, expr, CaptureSpec, Init, KernelSpec, Role, Shape};

/// Inputs are filled the same way for the baseline and every candidate; this seed is part of
/// the results' key, so changing it re-measures.
pub const DATA_SEED: u64 = 0x5eed;

/// One [`Problem`] per shape of the spec, in order. Buffer lengths and scalar values are
/// evaluated with every parameter at its default: they describe the problem, not the code.
/// The spec's captured launches follow, each on the program's own data.
pub fn problems(kernel: &KernelSpec) -> Result<Vec<Problem>> {
    if kernel.shapes.is_empty() {
        bail!("the spec of `{}` has no shape to measure on", kernel.name);
    }
    let shapes = kernel.shapes.iter().enumerate().map(|(index, shape)| {
        let label = shape_label(shape);
        problem(kernel, shape, &label, DATA_SEED.wrapping_add(index as u64)).map_err(|e| anyhow!("shape {} ({label}): {e}", index + 1))
    });
    let captured = kernel.captures.iter().enumerate().map(|(index, capture)| {
        let seed = DATA_SEED.wrapping_add((kernel.shapes.len() + index) as u64);
        captured_problem(kernel, capture, seed).map_err(|e| anyhow!("captured launch {}: {e}", capture.file))
    });
    shapes.chain(captured).collect()
}

/// The problem of a captured launch: its shape's arguments, its inputs filled from the file.
fn captured_problem(kernel: &KernelSpec, capture: &CaptureSpec, seed: u64) -> Result<Problem> {
    let file = CaptureFile::open(Path::new(&capture.file))?;
    let name = Path::new(&capture.file).file_name().map_or(capture.file.clone(), |n| n.to_string_lossy().into_owned());
    let mut problem = problem(kernel, &capture.shape, &format!("captured {name}"), seed)?;
    if file.capture.params.len() != problem.args.len() {
        bail!("the capture has {} arguments, the kernel {}", file.capture.params.len(), problem.args.len());
    }
    for (arg, captured) in problem.args.iter_mut().zip(&file.capture.params) {
        let (Arg::Buffer { role, data, .. }, Some(buffer)) = (arg, &captured.buffer) else { continue };
        if let (Some(before), true) = (buffer.before, *role != Role::Output) {
            *data = Some(CapturedData { file: file.path.clone(), offset: file.file_offset(before), bytes: before.len });
        }
    }
    Ok(problem)
}

/// `hidden=4096 rows=4095`.
pub fn shape_label(shape: &Shape) -> String {
    shape.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ")
}

/// The problem of one shape: its arguments resolved, its data drawn from `seed`.
pub fn problem(kernel: &KernelSpec, shape: &Shape, label: &str, seed: u64) -> Result<Problem> {
    let env = spec::environment(kernel, shape, &|p| p.default);
    let lookup = |n: &str| env.get(n).copied();
    let args = kernel.args.iter().map(|arg| resolved(kernel, shape, &lookup, arg, &arg.name)).collect::<Result<Vec<_>>>()?;
    Ok(Problem { label: label.to_string(), args, seed })
}

/// One argument on `shape`: a buffer's length, a scalar's value, a texture's extent, a
/// struct's fields at their offsets. `name` is the argument's, or the field's as
/// `params.x_ptr`.
fn resolved(kernel: &KernelSpec, shape: &Shape, lookup: &dyn Fn(&str) -> Option<expr::Value>, arg: &spec::ArgSpec, name: &str) -> Result<Arg> {
    let evaluate = |what: &str, text: &str| {
        expr::parse(text).map_err(|e| e.message).and_then(|e| e.eval(lookup).map_err(|e| e.message)).map_err(|why| anyhow!("argument `{name}`: {what} `{text}`: {why}"))
    };
    if arg.is_struct() {
        return struct_arg(kernel, shape, lookup, arg);
    }
    if let Some(texture) = &arg.texture {
        let extent = texture
            .extent
            .iter()
            .map(|text| evaluate("texture extent", text)?.as_integer().filter(|&n| n > 0).map(|n| n as u64).ok_or_else(|| anyhow!("argument `{name}`: texture extent `{text}` is not a positive integer")))
            .collect::<Result<Vec<_>>>()?;
        let init = arg.init.clone().unwrap_or(Init::Uniform { low: -1.0, high: 1.0 });
        return Ok(Arg::Texture {
            name: name.to_string(),
            dtype: arg.dtype(),
            extent,
            layout: texture.layout,
            channels: texture.channels,
            filter: texture.filter,
            address: texture.address,
            normalized_coords: texture.normalized_coords,
            read: texture.read,
            init,
        });
    }
    match (&arg.length, &arg.value) {
        (Some(length), _) => {
            let largest = largest_length(kernel, shape, length).map_err(|why| anyhow!("argument `{name}`: length `{length}`: {why}"))?;
            // An empty tensor is a buffer of none: mmcv's `roi_align` passes `new_zeros(0)` for
            // the indices of a pooling mode that keeps none.
            let length = largest.filter(|&n| n >= 0).ok_or_else(|| anyhow!("argument `{name}`: length `{length}` is not a whole number of elements"))?;
            let role = arg.role.ok_or_else(|| anyhow!("argument `{name}`: no role (input, output or inout)"))?;
            // Outputs are poisoned before every run; their fill only matters for inouts.
            let init = match &arg.indexes {
                Some(extent) => {
                    let high = evaluate("index extent", extent)?.as_integer().filter(|&n| n > 0).ok_or_else(|| anyhow!("argument `{name}`: index extent `{extent}` is not a positive integer"))?;
                    Init::Integers { low: 0, high }
                }
                None => arg.init.clone().unwrap_or(Init::Uniform { low: -1.0, high: 1.0 }),
            };
            let (tolerance, compare) = (kernel.verify.tolerance(arg.dtype()), arg.compare.unwrap_or_default());
            Ok(Arg::Buffer { name: name.to_string(), dtype: arg.dtype(), length: length as u64, role, init, tolerance, data: None, compare })
        }
        (None, Some(value)) => Ok(Arg::Scalar { name: name.to_string(), dtype: arg.dtype(), value: evaluate("value", value)?.as_f64() }),
        (None, None) => bail!("argument `{name}` has neither a length (a buffer) nor a value (a scalar)"),
    }
}

/// A struct argument: its fields resolved and placed where the compiler's layout puts them,
/// each the size the struct gives its member (a buffer's is a pointer's).
fn struct_arg(kernel: &KernelSpec, shape: &Shape, lookup: &dyn Fn(&str) -> Option<expr::Value>, arg: &spec::ArgSpec) -> Result<Arg> {
    let type_name = arg.struct_type.as_deref().unwrap_or("?");
    let layout = arg.layout.as_ref().ok_or_else(|| anyhow!("struct `{}` ({type_name}): its layout comes from compiling the kernel's source, which has not been done", arg.name))?;
    let mut fields = Vec::with_capacity(arg.fields.len());
    for (field, &(offset, member_bytes)) in arg.fields.iter().zip(&layout.fields) {
        let name = format!("{}.{}", arg.name, field.name);
        let resolved = resolved(kernel, shape, lookup, field, &name)?;
        let (bytes, what) = match &resolved {
            Arg::Scalar { dtype, .. } => (crate::gpu::worker::data::element_bytes(*dtype) as u64, format!("its dtype {}", dtype.name())),
            _ => (std::mem::size_of::<u64>() as u64, "a buffer's address".to_string()),
        };
        if bytes != member_bytes {
            bail!("field `{}` of struct `{}` is {member_bytes} bytes in `{type_name}`, but {what} is {bytes}", field.name, arg.name);
        }
        fields.push(StructField { offset, arg: resolved });
    }
    Ok(Arg::Struct { name: arg.name.clone(), bytes: layout.bytes, fields })
}

/// How many configurations of the parameters a length names are tried for its largest value.
const MOST_LENGTH_CONFIGURATIONS: usize = 4096;

/// A buffer's length on `shape`: the largest over the values of the parameters it names (one
/// partial result per block, the block a parameter), since the buffer is made once for every
/// configuration. What a configuration leaves unwritten keeps the poison, which a comparison by
/// sum skips. `None` when the value is not an integer.
fn largest_length(kernel: &KernelSpec, shape: &Shape, text: &str) -> std::result::Result<Option<i64>, String> {
    let parsed = expr::parse(text).map_err(|e| e.message)?;
    let names = parsed.free_variables();
    let varied: Vec<&spec::ParamSpec> = kernel.params.iter().filter(|p| names.contains(&p.name) && !p.values.is_empty()).collect();
    let product = varied.iter().try_fold(1usize, |n, p| n.checked_mul(p.values.len())).filter(|&n| n <= MOST_LENGTH_CONFIGURATIONS);
    let mut largest: Option<i64> = None;
    for index in 0..product.unwrap_or(1) {
        let chosen = |param: &spec::ParamSpec| match varied.iter().position(|p| p.name == param.name) {
            Some(at) if product.is_some() => {
                let stride: usize = varied[..at].iter().map(|p| p.values.len()).product();
                param.values[(index / stride) % param.values.len()]
            }
            _ => param.default,
        };
        let env = spec::environment(kernel, shape, &chosen);
        let Some(value) = parsed.eval(&|n| env.get(n).copied()).map_err(|e| e.message)?.as_integer() else { return Ok(None) };
        largest = Some(largest.map_or(value, |l: i64| l.max(value)));
    }
    Ok(largest)
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
        assert_eq!((*length, *role), (4095 * 4096, Role::Output));
        let Arg::Scalar { name, value, .. } = &problems[0].args[3] else { panic!() };
        assert_eq!((name.as_str(), *value), ("hidden", 4096.0));
        let Arg::Scalar { value, .. } = &problems[0].args[4] else { panic!() };
        assert!((value - 1e-6).abs() < 1e-12);
    }

    #[test]
    fn a_length_that_names_a_parameter_holds_what_any_configuration_writes() {
        let mut kernel = rmsnorm();
        let block = kernel.params.iter().find(|p| p.name == "BLOCK_SIZE").expect("a block parameter").clone();
        let output = kernel.args.iter_mut().find(|a| a.name == "out").expect("an output");
        output.length = Some(format!("ceil_div(rows * 64, {})", block.name));
        let smallest = *block.values.iter().min().expect("values");
        let problems = problems(&kernel).unwrap();
        let rows = kernel.shapes[0]["rows"];
        let length = problems[0].args.iter().find_map(|a| match a {
            Arg::Buffer { name, length, .. } if name == "out" => Some(*length as i64),
            _ => None,
        });
        assert_eq!(length, Some((rows * 64 + smallest - 1) / smallest));
    }

    #[test]
    fn an_empty_tensor_is_a_buffer_of_none_and_a_negative_length_is_refused() {
        let mut kernel = rmsnorm();
        kernel.args[1].length = Some("rows - rows".into());
        let problems_of_empty = problems(&kernel).unwrap();
        assert!(matches!(&problems_of_empty[0].args[1], Arg::Buffer { length: 0, .. }), "{:?}", problems_of_empty[0].args[1]);
        kernel.args[1].length = Some("rows - hidden - 1".into());
        let error = problems(&kernel).unwrap_err().to_string();
        assert!(error.ends_with("argument `in`: length `rows - hidden - 1` is not a whole number of elements"), "{error}");
    }

    #[test]
    fn an_unresolvable_length_names_the_shape_and_argument() {
        let mut kernel = rmsnorm();
        kernel.args[1].length = Some("rows * width".into());
        let error = problems(&kernel).unwrap_err().to_string();
        assert!(error.starts_with("shape 1 (hidden=4096 rows=4095): argument `in`: length `rows * width`"), "{error}");
    }

    #[test]
    fn a_captured_launch_is_one_more_problem_on_the_programs_inputs() {
        use crate::profile::captured::{apply, test_capture};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("scale_rows-0.cutcap");
        test_capture::write_capture(&path, &test_capture::Launch { rows: 8, cols: 16, in_written: false });
        let mut kernel = crate::template::templatize(test_capture::SOURCE, "scale_rows", &Default::default()).unwrap().spec;
        let file = CaptureFile::open(&path).unwrap();
        apply(&mut kernel, &file, &path.to_string_lossy()).unwrap();
        kernel.shapes.push(Shape::from([("rows".to_string(), 64), ("cols".to_string(), 64)]));

        let problems = problems(&kernel).unwrap();

        assert_eq!(problems.iter().map(|p| p.label.as_str()).collect::<Vec<_>>(), ["cols=16 rows=8", "cols=64 rows=64", "captured scale_rows-0.cutcap"]);
        let data: Vec<Option<&CapturedData>> = problems[2].args.iter().map(|a| if let Arg::Buffer { data, .. } = a { data.as_ref() } else { None }).collect();
        let input = file.capture.params[1].buffer.as_ref().unwrap().before.unwrap();
        assert_eq!(data[0], None, "an output starts poisoned, not from the capture");
        assert_eq!(data[1], Some(&CapturedData { file: path.clone(), offset: file.file_offset(input), bytes: 8 * 16 * 4 }));
        assert!(problems[..2].iter().all(|p| p.args.iter().all(|a| !matches!(a, Arg::Buffer { data: Some(_), .. }))));
    }

    #[test]
    fn a_texture_argument_gets_its_extent_and_sampling() {
        let mut kernel = rmsnorm();
        let input = kernel.args.iter_mut().find(|a| a.name == "in").unwrap();
        input.length = None;
        input.role = None;
        input.texture = Some(crate::spec::TextureSpec {
            extent: vec!["hidden".into(), "rows".into()],
            layout: crate::spec::TextureLayout::Array,
            channels: 2,
            filter: crate::spec::TextureFilter::Linear,
            address: crate::spec::TextureAddress::Wrap,
            normalized_coords: true,
            read: crate::spec::TextureRead::Element,
        });
        let problems = problems(&kernel).unwrap();
        let Arg::Texture { extent, channels, filter, normalized_coords, .. } = &problems[0].args[1] else { panic!("{:?}", problems[0].args[1]) };
        let shape = &kernel.shapes[0];
        assert_eq!(extent, &vec![shape["hidden"] as u64, shape["rows"] as u64]);
        assert_eq!((*channels, *filter, *normalized_coords), (2, crate::spec::TextureFilter::Linear, true));
    }

    /// rmsnorm with `in` and `hidden` moved into a struct `params` whose layout is given.
    fn with_params(layout: Option<spec::StructLayout>) -> KernelSpec {
        let mut kernel = rmsnorm();
        let fields: Vec<spec::ArgSpec> = kernel.args.drain(1..=3).rev().collect();
        kernel.args.insert(1, spec::ArgSpec { name: "params".into(), struct_type: Some("NormParams".into()), fields, layout, ..spec::ArgSpec::default() });
        kernel
    }

    #[test]
    fn a_structs_fields_are_resolved_and_placed_at_the_compilers_offsets() {
        let layout = spec::StructLayout { bytes: 24, fields: vec![(0, 4), (8, 8), (16, 8)] };
        let problems = problems(&with_params(Some(layout))).unwrap();
        let Arg::Struct { name, bytes, fields } = &problems[0].args[1] else { panic!("{:?}", problems[0].args[1]) };
        assert_eq!((name.as_str(), *bytes), ("params", 24));
        let placed: Vec<(u64, &str)> = fields.iter().map(|f| (f.offset, f.arg.name())).collect();
        assert_eq!(placed, [(0, "params.hidden"), (8, "params.weight"), (16, "params.in")]);
        let Arg::Scalar { value, .. } = &fields[0].arg else { panic!() };
        assert_eq!(*value, 4096.0);
        let leaves: Vec<&str> = problems[0].leaf_args().map(Arg::name).collect();
        assert_eq!(leaves, ["out", "params.hidden", "params.weight", "params.in", "eps"]);
    }

    #[test]
    fn a_field_of_another_size_than_its_member_and_a_struct_without_layout_are_refused() {
        let narrow = spec::StructLayout { bytes: 24, fields: vec![(0, 8), (8, 8), (16, 8)] };
        let why = problems(&with_params(Some(narrow))).unwrap_err().to_string();
        assert!(why.contains("field `hidden` of struct `params` is 8 bytes in `NormParams`, but its dtype i32 is 4"), "{why}");
        let why = problems(&with_params(None)).unwrap_err().to_string();
        assert!(why.contains("struct `params` (NormParams): its layout comes from compiling the kernel's source"), "{why}");
    }
}
