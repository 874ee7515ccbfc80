//! What a captured launch tells a spec: the sizes the program ran with (its scalar arguments),
//! the grid, the template arguments, each buffer's extent and whether the kernel wrote it.
//! Captures fill what the source could not say; what it did say is kept, and checked against
//! them.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use cutune_capture::report::{CaptureFile, CapturedParam, CAPTURE_EXTENSION};

use crate::gpu::worker::data;
use crate::spec::{environment, expr, CaptureSpec, KernelSpec, ParamKind, ParamSpec, Role, Shape, UNKNOWN};
use crate::syntax::{identifiers_in, is_identifier};

use super::kernel_name;

/// The folder, under a workspace root, where `cutune profile` keeps captures.
pub fn captures_folder(root: &Path) -> PathBuf {
    root.join(".cutune").join("captures")
}

/// The name captures of `kernel` (a source name) take: `<stem>-<N>.cutcap`.
pub fn capture_stem(kernel: &str) -> String {
    kernel.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).collect()
}

/// The captures of `kernel` (a source name) under `root`, in name order: each opened, or why
/// it cannot be used (a truncated file, another kernel's launch).
pub fn captures_of(root: &Path, kernel: &str) -> Vec<Result<CaptureFile, String>> {
    let Ok(entries) = std::fs::read_dir(captures_folder(root)) else { return Vec::new() };
    let stem = capture_stem(kernel);
    let is_this_kernels = |path: &Path| {
        path.extension().is_some_and(|e| e == CAPTURE_EXTENSION)
            && path.file_stem().and_then(|s| s.to_str()).and_then(|s| s.rsplit_once('-')).is_some_and(|(name, index)| name == stem && index.parse::<u32>().is_ok())
    };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| is_this_kernels(p)).collect();
    paths.sort();
    paths.iter().map(|path| open_capture_of(path, kernel)).collect()
}

fn open_capture_of(path: &Path, kernel: &str) -> Result<CaptureFile, String> {
    let file = CaptureFile::open(path).map_err(|e| e.to_string())?;
    let captured = kernel_name(&file.capture.kernel);
    if captured.base != kernel {
        return Err(format!("{}: a launch of `{}`, not of `{kernel}`", path.display(), captured.display()));
    }
    Ok(file)
}

/// Fills `spec` from `capture`, whose file the spec will name as `file`: returns what it
/// changed, for the templatize report, or why the capture does not fit the kernel.
pub fn apply(spec: &mut KernelSpec, capture: &CaptureFile, file: &str) -> Result<Vec<String>, String> {
    let header = &capture.capture;
    if header.params.len() != spec.args.len() {
        return Err(format!("{}: the capture has {} arguments, the kernel {}", capture.path.display(), header.params.len(), spec.args.len()));
    }
    let mut notes = Vec::new();
    let mut shape = spec.shapes.first().cloned().unwrap_or_default();
    fill_template_args(spec, &header.kernel, &mut notes);
    fill_scalars(spec, &header.params, &mut shape, &mut notes)?;
    fill_sizes_of_extents(spec, header.grid, header.block, &mut shape, &mut notes);
    fill_size_behind_grid(spec, header.grid, header.block, &mut shape, &mut notes);
    fill_extents(spec, "grid", header.grid, &shape, &mut notes);
    fill_extents(spec, "block", header.block, &shape, &mut notes);
    fill_shared_bytes(spec, header.shared_bytes, &shape, &mut notes);
    fill_buffers(spec, capture, &shape, &mut notes)?;
    keep_derived(spec, &mut shape);
    if spec.captures.is_empty() {
        replace_shapes(&mut spec.shapes, &shape, &mut notes);
    } else if !spec.shapes.contains(&shape) {
        spec.shapes.push(shape.clone());
    }
    spec.captures.retain(|c| c.file != file);
    spec.captures.push(CaptureSpec { file: file.to_string(), shape });
    Ok(notes)
}

/// A derived size the capture gave (a scalar's value) stays derived where the shape's other
/// sizes work it out the same, so that shapes made from this one keep the two consistent; one
/// that disagrees is the program's number, which the shape keeps.
fn keep_derived(spec: &KernelSpec, shape: &mut Shape) {
    let others: Shape = shape.iter().filter(|(name, _)| !spec.derived.contains_key(*name)).map(|(n, v)| (n.clone(), *v)).collect();
    let worked_out = crate::spec::sizes_of(spec, &others);
    shape.retain(|name, value| !spec.derived.contains_key(name) || worked_out.get(name).and_then(|v| v.as_integer()) != Some(*value));
}

/// The program's shape replaces the source's: those came from call paths the program may never
/// take (a test sweep from 1 element up, a path that skips the launch's own arithmetic), and a
/// kernel may assume what its real callers guarantee (`n >= 2 * blockSize`).
fn replace_shapes(shapes: &mut Vec<Shape>, captured: &Shape, notes: &mut Vec<String>) {
    let others = shapes.iter().filter(|s| *s != captured && !s.is_empty()).count();
    if others > 0 {
        notes.push(format!("the program's shape replaces {others} shape(s) read from the source"));
    }
    *shapes = vec![captured.clone()];
}

/// Open template arguments (`?`) take the program's; a tuning parameter in their place starts
/// from the program's value. A type the source names otherwise becomes the type the program
/// launched with: the source's may be a host function's local alias (`typedef … state_t;
/// kernel<state_t>`), which device code cannot see, and the launch says what it stood for.
fn fill_template_args(spec: &mut KernelSpec, mangled: &str, notes: &mut Vec<String>) {
    let name = kernel_name(mangled);
    if name.template_args.len() != spec.template_args.len() {
        return;
    }
    for (arg, captured) in spec.template_args.iter_mut().zip(name.template_args) {
        let value = integer_argument(&captured);
        if arg.trim() == UNKNOWN {
            notes.push(format!("template argument `{captured}` from the captured launch"));
            *arg = captured;
        } else if let (Some(param), Some(value)) = (spec.params.iter_mut().find(|p| p.name == arg.trim()), value) {
            start_from(param, value, notes);
        } else if value.is_none() && squeezed(arg) != squeezed(&captured) {
            notes.push(format!("template argument `{captured}` from the captured launch (the source wrote `{arg}`)"));
            *arg = captured;
        }
    }
}

/// A type's text without spaces, to compare `unsigned int[32]` with `unsigned int [32]`.
fn squeezed(text: &str) -> String {
    text.split_whitespace().collect()
}

/// A template argument as the demangler writes an integer or a bool (`(unsigned int)256`,
/// `256u`, `true`).
fn integer_argument(text: &str) -> Option<i64> {
    let value = text.strip_prefix('(').and_then(|t| t.split_once(')')).map_or(text, |(_, v)| v).trim();
    match value {
        "true" => Some(1),
        "false" => Some(0),
        // Negative values are written as such (`-1`); the rest as C literals (`128u`, `0x80`).
        _ => crate::syntax::parse_int_literal(value).or_else(|| value.parse().ok()),
    }
}

/// The program ran with `value`: the parameter's default (the original kernel, the baseline)
/// becomes it.
fn start_from(param: &mut ParamSpec, value: i64, notes: &mut Vec<String>) {
    if param.default == value {
        return;
    }
    notes.push(format!("`{}` starts from {value}, the program's value (the source suggested {})", param.name, param.default));
    param.default = value;
    if !param.values.contains(&value) {
        param.values.push(value);
        param.values.sort_unstable();
    }
}

/// A scalar whose value is a size (`n`) gives that size; one the source could not express
/// (`?`, or host code such as `x.size(0)`) becomes a size of its own name, or a number.
fn fill_scalars(spec: &mut KernelSpec, params: &[CapturedParam], shape: &mut Shape, notes: &mut Vec<String>) -> Result<(), String> {
    let param_names: Vec<String> = spec.params.iter().map(|p| p.name.clone()).collect();
    // Scalars may use sizes and parameters, not other scalars.
    let names: BTreeSet<String> = shape.keys().cloned().chain(param_names.iter().cloned()).collect();
    for (arg, captured) in spec.args.iter_mut().zip(params) {
        let Some(value) = arg.value.clone() else { continue };
        let bytes = captured.value_bytes()?;
        if bytes.len() != data::element_bytes(arg.dtype()) {
            // A struct passed by value: no number of the spec stands for its bytes.
            notes.push(format!("argument `{}` is {} bytes in the captured launch, not one {}: a struct passed by value, left as the source gave it", arg.name, bytes.len(), arg.dtype().name()));
            continue;
        }
        let number = data::decode(arg.dtype(), &bytes).as_f64();
        let size = value.trim();
        let is_size = is_identifier(size) && !param_names.iter().any(|p| p == size);
        if is_size && !arg.dtype().is_float() {
            if shape.insert(size.to_string(), number as i64) != Some(number as i64) {
                notes.push(format!("size `{size}` = {} from argument `{}` of the captured launch", number as i64, arg.name));
            }
        } else if !expressible(size, &|name| names.contains(name)) {
            if arg.dtype().is_float() {
                arg.value = Some(format_number(number));
            } else {
                shape.insert(arg.name.clone(), number as i64);
                arg.value = Some(arg.name.clone());
            }
            notes.push(format!("argument `{}` = {} from the captured launch (the source gave `{value}`)", arg.name, format_number(number)));
        }
    }
    Ok(())
}

/// A grid or block extent that is a size of the shape alone (`num_blocks_mult`) is what the
/// program launched with: the value the source read for it (the `= 0` a count is declared with,
/// before a copy from the device sets it) gives way to the program's.
fn fill_sizes_of_extents(spec: &KernelSpec, grid: [u32; 3], block: [u32; 3], shape: &mut Shape, notes: &mut Vec<String>) {
    for (extents, captured) in [(&spec.grid, grid), (&spec.block, block)] {
        for (extent, &value) in extents.iter().zip(&captured) {
            let size = extent.trim();
            let Some(&read) = shape.get(size).filter(|read| **read != i64::from(value)) else { continue };
            notes.push(format!("size `{size}` = {value}, as the program launched (the source gave {read})"));
            shape.insert(size.to_string(), i64::from(value));
        }
    }
}

/// A grid the source works out from a size it cannot follow (`(m_samples + B - 1) / B`, over a
/// class member) keeps its arithmetic, so that it follows the block when the block is a
/// parameter: the size is taken as the captured grid times the captured block, the work of
/// whole blocks, when that gives the captured grid back.
fn fill_size_behind_grid(spec: &KernelSpec, grid: [u32; 3], block: [u32; 3], shape: &mut Shape, notes: &mut Vec<String>) {
    for (axis, extent) in spec.grid.iter().enumerate().take(3) {
        let env = environment(spec, shape, &|p| p.default);
        let Ok(parsed) = expr::parse(extent) else { continue };
        let unknown: BTreeSet<&str> = identifiers_in(extent).filter(|w| !env.contains_key(*w) && expr::Function::from_name(w).is_none()).collect();
        let [size] = unknown.into_iter().collect::<Vec<_>>()[..] else { continue };
        if spec.block.iter().any(|b| identifiers_in(b).any(|w| w == size)) {
            continue;
        }
        let whole_blocks = grid[axis] as i64 * block[axis] as i64;
        let value_with = |v: i64| parsed.eval(&|n| if n == size { Some(expr::Value::Int(v)) } else { env.get(n).copied() }).ok().and_then(|v| v.as_integer());
        if value_with(whole_blocks) == Some(grid[axis] as i64) {
            notes.push(format!("size `{size}` = {whole_blocks}, the captured grid's {} blocks of {} threads, for grid extent {axis} `{extent}`", grid[axis], block[axis]));
            shape.insert(size.to_string(), whole_blocks);
        }
    }
}

/// Grid or block extents the spec cannot evaluate become a size of equal value, or the number
/// (a grid the source divides by a block parameter, `ceil_div(work, BLOCK)`); an extent that is
/// a launch parameter starts from the program's value.
fn fill_extents(spec: &mut KernelSpec, what: &str, captured: [u32; 3], shape: &Shape, notes: &mut Vec<String>) {
    let extents = if what == "grid" { &spec.grid } else { &spec.block };
    for (extent, &value) in extents.iter().zip(&captured) {
        if let Some(param) = spec.params.iter_mut().find(|p| p.name == extent.trim() && p.kind == ParamKind::Launch) {
            start_from(param, value as i64, notes);
        }
    }
    let env = environment(spec, shape, &|p| p.default);
    // Per axis, the launch parameter the block is, with its value, for a grid to follow.
    let blocks_follow: Vec<Option<(String, i64)>> = match what {
        "grid" => spec.block.iter().map(|b| spec.params.iter().find(|p| p.kind == ParamKind::Launch && p.name == b.trim()).map(|p| (p.name.clone(), p.default))).collect(),
        _ => Vec::new(),
    };
    let extents = if what == "grid" { &mut spec.grid } else { &mut spec.block };
    let dims = captured.iter().rposition(|&e| e != 1).map_or(1, |last| last + 1).max(extents.len());
    extents.resize(dims, "1".to_string());
    for (axis, (extent, &value)) in extents.iter_mut().zip(&captured).enumerate() {
        let evaluated = expr::parse(extent).ok().and_then(|e| e.eval(&|n| env.get(n).copied()).ok()).and_then(|v| v.as_integer());
        // Before compiling, `blocks_per_sm` is the most the block allows; the compiled kernel
        // may hold fewer (its registers, its shared memory), as the program's launch did.
        let resident = identifiers_in(extent).any(|w| w == crate::spec::BLOCKS_PER_SM);
        match evaluated {
            Some(v) if v == value as i64 => {}
            Some(v) if resident && v > value as i64 => notes.push(format!("{what} extent {axis} `{extent}` is {value} in the program's launch: the blocks the compiled kernel fits on an SM, which tuning works out for each configuration")),
            Some(v) => notes.push(format!("{what} extent {axis} `{extent}` gives {v}, but the program launched {value}: check the spec's sizes")),
            None => {
                let named = |value: i64| shape.iter().find(|(_, v)| **v == value).map(|(name, _)| name.clone());
                let replacement = match blocks_follow.get(axis) {
                    // The source divides the work by the block, which is a parameter: the grid
                    // keeps doing so, over the work of the captured launch's whole blocks.
                    Some(Some((param, block))) if identifiers_in(extent).any(|w| w == param) => {
                        let work = value as i64 * block;
                        format!("ceil_div({}, {param})", named(work).unwrap_or_else(|| work.to_string()))
                    }
                    _ => named(value as i64).unwrap_or_else(|| value.to_string()),
                };
                notes.push(format!("{what} extent {axis} = `{replacement}` from the captured launch (the source gave `{extent}`)"));
                *extent = replacement;
            }
        }
    }
}

/// Shared memory the spec cannot evaluate (host code such as `sizeof(T) * m_blockSize`) becomes
/// the program's bytes.
fn fill_shared_bytes(spec: &mut KernelSpec, captured: u32, shape: &Shape, notes: &mut Vec<String>) {
    let env = environment(spec, shape, &|p| p.default);
    let evaluated = expr::parse(&spec.shared_bytes).ok().and_then(|e| e.eval(&|n| env.get(n).copied()).ok()).and_then(|v| v.as_integer());
    match evaluated {
        Some(v) if v == captured as i64 => {}
        Some(v) => notes.push(format!("shared_bytes `{}` gives {v}, but the program launched with {captured}: check the spec's sizes", spec.shared_bytes)),
        None => {
            notes.push(format!("shared_bytes = {captured} from the captured launch (the source gave `{}`)", spec.shared_bytes));
            spec.shared_bytes = captured.to_string();
        }
    }
}

/// Whether the spec can evaluate `text` once the names `known` accepts have values: it parses,
/// and names nothing else (host code such as `static_cast<int>(tenor / dt)` or `x.size(0)`
/// parses, but names what only the program knew).
fn expressible(text: &str, known: &dyn Fn(&str) -> bool) -> bool {
    text.trim() != UNKNOWN && expr::parse(text).is_ok() && identifiers_in(text).all(|w| known(w) || expr::Function::from_name(w).is_some())
}

/// Lengths the spec lacks become the captured extent (a product of sizes when one matches);
/// a buffer the kernel changed is written, whatever the source suggested.
fn fill_buffers(spec: &mut KernelSpec, capture: &CaptureFile, shape: &Shape, notes: &mut Vec<String>) -> Result<(), String> {
    let sizes = sizes_in_argument_order(spec, shape);
    // A length over sizes and parameters (`blocks * BLOCK`) is the source's and stays.
    let names = environment(spec, shape, &|p| p.default);
    for (arg, captured) in spec.args.iter_mut().zip(&capture.capture.params) {
        let (Some(length), Some(buffer)) = (&arg.length, &captured.buffer) else { continue };
        let elements = buffer.bytes / data::element_bytes(arg.dtype()) as u64;
        if !expressible(length, &|name| names.contains_key(name)) {
            let replacement = product_of_sizes(&sizes, elements).unwrap_or_else(|| elements.to_string());
            notes.push(format!("length of `{}` = `{replacement}` from the captured allocation (the source gave `{length}`)", arg.name));
            arg.length = Some(replacement);
        }
        if let (Some(before), Some(after), Some(Role::Input)) = (buffer.before, buffer.after, arg.role) {
            if !capture.blobs_equal(before, after).map_err(|e| e.to_string())? {
                notes.push(format!("buffer `{}` is written: the captured launch changed it", arg.name));
                arg.role = Some(Role::InOut);
            }
        }
    }
    Ok(())
}

/// The shape's positive sizes, those the kernel's arguments pass first, in their order: a
/// product of them then reads as the kernel's own (`rows * cols`).
fn sizes_in_argument_order(spec: &KernelSpec, shape: &Shape) -> Vec<(String, i64)> {
    let position = |name: &str| spec.args.iter().position(|a| a.value.as_deref().map(str::trim) == Some(name)).unwrap_or(usize::MAX);
    let mut sizes: Vec<(String, i64)> = shape.iter().filter(|(_, v)| **v > 0).map(|(n, v)| (n.clone(), *v)).collect();
    sizes.sort_by_key(|(name, _)| position(name));
    sizes
}

/// `rows * cols` when the product of one to three sizes is `elements`, else `2 * n` when a
/// small multiple of one size is (two coordinates per point, the bytes of a struct per item).
fn product_of_sizes(sizes: &[(String, i64)], elements: u64) -> Option<String> {
    products_of_sizes(sizes, elements).or_else(|| {
        let target = elements as i64;
        sizes.iter().find_map(|(name, value)| (2..=16).find(|k| value.checked_mul(*k) == Some(target)).map(|k| format!("{k} * {name}")))
    })
}

fn products_of_sizes(sizes: &[(String, i64)], elements: u64) -> Option<String> {
    let target = elements as i64;
    for (i, (a, va)) in sizes.iter().enumerate() {
        if *va == target {
            return Some((*a).clone());
        }
        for (j, (b, vb)) in sizes.iter().enumerate().skip(i + 1) {
            if va.checked_mul(*vb) == Some(target) {
                return Some(format!("{a} * {b}"));
            }
            for (c, vc) in sizes.iter().skip(j + 1) {
                if va.checked_mul(*vb).and_then(|p| p.checked_mul(*vc)) == Some(target) {
                    return Some(format!("{a} * {b} * {c}"));
                }
            }
        }
    }
    None
}

fn format_number(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e15 {
        format!("{}", value as i64)
    } else {
        format!("{value}")
    }
}

/// Captures of a small kernel, written as the capture library writes them, for tests here and
/// in the stages that read captures.
#[cfg(test)]
pub(crate) mod test_capture {
    use std::path::Path;

    use cutune_capture::report::{BlobRange, Capture, CapturedBuffer, CapturedParam, CaptureWriter};

    /// A kernel whose launcher takes its sizes from tensors: the source cannot say them.
    pub const SOURCE: &str = r#"__global__ void scale_rows(float *out, const float *in, const float *weight, int rows, int cols) {
    int row = blockIdx.x;
    for (int col = threadIdx.x; col < cols; col += blockDim.x) {
        out[row * cols + col] = in[row * cols + col] * weight[col];
    }
}

void scale_rows_op(Tensor in, Tensor weight, Tensor out) {
    int rows = in.size(0);
    int cols = in.size(1);
    scale_rows<<<rows, 256>>>(out.data_ptr(), in.data_ptr(), weight.data_ptr(), rows, cols);
}
"#;

    pub struct Launch {
        pub rows: u32,
        pub cols: u32,
        /// Whether `in` changes during the launch (a kernel that writes it).
        pub in_written: bool,
    }

    /// Writes a capture of `scale_rows` as the capture library would: each buffer's bytes
    /// before and after.
    pub fn write_capture(path: &Path, launch: &Launch) {
        write_capture_of(path, "_Z10scale_rowsPfPKfS1_ii", launch);
    }

    pub fn write_capture_of(path: &Path, mangled: &str, launch: &Launch) {
        write_launch(path, mangled, launch, [256, 1, 1], 0);
    }

    /// [`write_capture_of`] for a launch of `block` with `shared_bytes` of dynamic shared memory.
    pub fn write_launch(path: &Path, mangled: &str, launch: &Launch, block: [u32; 3], shared_bytes: u32) {
        let elements = (launch.rows * launch.cols) as usize;
        let mut writer = CaptureWriter::create(path).unwrap();
        let blob = |writer: &mut CaptureWriter, bytes: &[u8]| {
            let offset = writer.position();
            writer.append(bytes).unwrap();
            Some(BlobRange { offset, len: bytes.len() as u64 })
        };
        let floats = |n: usize, value: f32| value.to_le_bytes().repeat(n);
        let buffer = |writer: &mut CaptureWriter, offset: u64, before: Vec<u8>, after: Vec<u8>| {
            let (base, bytes) = (0x7000_0000 + (offset << 24), before.len() as u64);
            let buffer = CapturedBuffer { allocation_base: base, allocation_bytes: bytes, bytes, before: blob(writer, &before), after: blob(writer, &after) };
            CapturedParam::new(offset, &base.to_le_bytes(), Some(buffer))
        };
        let out = buffer(&mut writer, 0, floats(elements, 0.0), floats(elements, 2.0));
        let input = buffer(&mut writer, 8, floats(elements, 1.0), floats(elements, if launch.in_written { 3.0 } else { 1.0 }));
        let weight = buffer(&mut writer, 16, floats(launch.cols as usize, 2.0), floats(launch.cols as usize, 2.0));
        let scalar = |offset: u64, value: u32| CapturedParam::new(offset, &value.to_le_bytes(), None);
        let params = vec![out, input, weight, scalar(24, launch.rows), scalar(28, launch.cols)];
        let capture = Capture { kernel: mangled.into(), grid: [launch.rows, 1, 1], block, shared_bytes, params, buffers_omitted: None, seconds: 0.0 };
        writer.finish(&capture).unwrap();
    }
}

#[cfg(test)]
mod tests {
    use super::test_capture::{write_capture, write_capture_of, write_launch, Launch, SOURCE};
    use super::*;
    use crate::slice::SliceOptions;
    use crate::template::templatize;

    fn templatized() -> KernelSpec {
        templatize(SOURCE, "scale_rows", &SliceOptions::default()).expect("templatizes").spec
    }

    fn arg<'s>(spec: &'s KernelSpec, name: &str) -> &'s crate::spec::ArgSpec {
        spec.args.iter().find(|a| a.name == name).unwrap()
    }

    #[test]
    fn a_capture_gives_the_sizes_grid_and_lengths_the_source_could_not() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("scale_rows-0.cutcap");
        write_capture(&path, &Launch { rows: 64, cols: 48, in_written: false });
        let mut spec = templatized();
        // The source says `out` is as long as the launch's blocks cover, but not how many rows.
        assert_eq!((arg(&spec, "rows").value.as_deref(), arg(&spec, "out").length.as_deref()), (Some("rows"), Some("rows * cols")));
        assert!(spec.shapes[0].get("rows").is_none(), "the source alone cannot say it");

        let notes = apply(&mut spec, &CaptureFile::open(&path).unwrap(), "captures/scale_rows-0.cutcap").unwrap();

        let shape = &spec.shapes[0];
        assert_eq!((shape.get("rows"), shape.get("cols")), (Some(&64), Some(&48)), "{notes:?}");
        assert_eq!(arg(&spec, "rows").value.as_deref(), Some("rows"));
        assert_eq!(arg(&spec, "cols").value.as_deref(), Some("cols"));
        // `rows` read from the tensor is a size of the source's too, so rows-per-block applies.
        assert_eq!(spec.grid[0], "ceil_div(rows, SCALE_ROWS_ROWS_PER_BLOCK)", "{notes:?}");
        assert_eq!(arg(&spec, "out").length.as_deref(), Some("rows * cols"));
        assert_eq!(arg(&spec, "weight").length.as_deref(), Some("cols"));
        assert_eq!(arg(&spec, "in").role, Some(Role::Input));
        assert_eq!(spec.captures, vec![CaptureSpec { file: "captures/scale_rows-0.cutcap".into(), shape: shape.clone() }]);
    }

    #[test]
    fn a_derived_size_a_capture_gives_stays_derived_where_it_agrees() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("scale_rows-0.cutcap");
        write_capture(&path, &Launch { rows: 64, cols: 48, in_written: false });
        // `cols` worked out from a size of its own (`pairs = x.size(1) / 2` in a caller).
        let derived = |spec: &mut KernelSpec, pairs: i64| {
            spec.derived.insert("cols".into(), "pairs * 2".into());
            spec.shapes = vec![Shape::from([("rows".to_string(), 8), ("pairs".to_string(), pairs)])];
        };
        let mut spec = templatized();
        derived(&mut spec, 24);
        let notes = apply(&mut spec, &CaptureFile::open(&path).unwrap(), "c.cutcap").unwrap();
        assert_eq!(spec.shapes, vec![Shape::from([("rows".to_string(), 64), ("pairs".to_string(), 24)])], "{notes:?}");
        // Where the shape works it out otherwise, the program's number is the shape's.
        let mut spec = templatized();
        derived(&mut spec, 20);
        apply(&mut spec, &CaptureFile::open(&path).unwrap(), "c.cutcap").unwrap();
        assert_eq!(spec.shapes[0].get("cols"), Some(&48), "{:?}", spec.shapes);
    }

    #[test]
    fn a_buffer_the_launch_changed_is_written_whatever_the_source_said() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("scale_rows-0.cutcap");
        write_capture(&path, &Launch { rows: 8, cols: 32, in_written: true });
        let mut spec = templatized();
        let notes = apply(&mut spec, &CaptureFile::open(&path).unwrap(), "c.cutcap").unwrap();
        assert_eq!(arg(&spec, "in").role, Some(Role::InOut));
        assert!(notes.iter().any(|n| n.contains("buffer `in` is written")), "{notes:?}");
    }

    #[test]
    fn a_size_the_grid_is_alone_takes_the_launched_value() {
        // The source read the count's declaration (`= 0`); the program copied the real one
        // back from the device before the launch.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("scale_rows-0.cutcap");
        write_capture(&path, &Launch { rows: 16, cols: 32, in_written: false });
        let mut spec = templatized();
        spec.shapes = vec![Shape::from([("tasks".to_string(), 0), ("cols".to_string(), 32)])];
        spec.grid = vec!["tasks".into()];
        let notes = apply(&mut spec, &CaptureFile::open(&path).unwrap(), "c.cutcap").unwrap();
        assert!(notes.iter().any(|n| n == "size `tasks` = 16, as the program launched (the source gave 0)"), "{notes:?}");
        assert_eq!(spec.shapes[0].get("tasks"), Some(&16), "{:?}", spec.shapes);
        assert!(!notes.iter().any(|n| n.contains("but the program launched")), "{notes:?}");
    }

    #[test]
    fn what_the_source_said_is_kept_and_a_disagreement_is_noted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("scale_rows-0.cutcap");
        write_capture(&path, &Launch { rows: 16, cols: 32, in_written: false });
        let mut spec = templatized();
        spec.shapes = vec![Shape::from([("rows".to_string(), 16), ("cols".to_string(), 32)])];
        spec.grid = vec!["rows * 2".into()];
        let over_a_parameter = "ceil_div(cols * SCALE_ROWS_BLOCK_SIZE, SCALE_ROWS_BLOCK_SIZE)";
        spec.args.iter_mut().find(|a| a.name == "weight").unwrap().length = Some(over_a_parameter.into());
        let notes = apply(&mut spec, &CaptureFile::open(&path).unwrap(), "c.cutcap").unwrap();
        assert_eq!(spec.grid, vec!["rows * 2".to_string()]);
        assert_eq!(arg(&spec, "weight").length.as_deref(), Some(over_a_parameter), "{notes:?}");
        assert!(notes.iter().any(|n| n.contains("grid extent 0 `rows * 2` gives 32, but the program launched 16")), "{notes:?}");
        assert_eq!(spec.shapes.len(), 1, "the captured shape is the source's: {:?}", spec.shapes);
    }

    #[test]
    fn host_code_the_spec_cannot_evaluate_takes_the_programs_values() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("scale_rows-0.cutcap");
        write_launch(&path, "_Z10scale_rowsPfPKfS1_ii", &Launch { rows: 64, cols: 48, in_written: false }, [256, 1, 1], 1024);
        let mut spec = templatized();
        // What a launcher of class members and casts gives (`m_block * sizeof(float)`).
        spec.shared_bytes = "m_block * sizeof(float)".into();
        spec.args.iter_mut().find(|a| a.name == "cols").unwrap().value = Some("static_cast<int>(tenor / dt)".into());

        let notes = apply(&mut spec, &CaptureFile::open(&path).unwrap(), "c.cutcap").unwrap();

        assert_eq!(spec.shared_bytes, "1024", "{notes:?}");
        assert_eq!(arg(&spec, "cols").value.as_deref(), Some("cols"));
        assert_eq!(spec.shapes[0].get("cols"), Some(&48));
        assert!(notes.iter().any(|n| n.contains("argument `cols` = 48 from the captured launch (the source gave `static_cast<int>(tenor / dt)`)")), "{notes:?}");
    }

    /// `(n * 8192) / (BLOCK * omp_get_num_threads())`: a grid the spec cannot evaluate, over a
    /// block that is a parameter, must still follow the block, or a larger block overruns.
    #[test]
    fn a_grid_over_a_block_parameter_keeps_following_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("scale_rows-0.cutcap");
        write_capture(&path, &Launch { rows: 16, cols: 48, in_written: false });
        let mut spec = templatized();
        spec.params.retain(|p| p.kind != ParamKind::Launch);
        spec.params.push(ParamSpec { name: "BLOCK".into(), kind: ParamKind::Launch, default: 256, values: vec![128, 256, 512], origin: String::new() });
        spec.block = vec!["BLOCK".into()];
        spec.grid = vec!["(rows * 256) // (BLOCK * omp_get_num_threads())".into()];

        let notes = apply(&mut spec, &CaptureFile::open(&path).unwrap(), "c.cutcap").unwrap();

        assert_eq!(spec.grid, ["ceil_div(4096, BLOCK)"], "16 blocks of 256 threads: {notes:?}");
        spec.grid = vec!["omp_get_num_threads() * 2".into()];
        apply(&mut spec, &CaptureFile::open(&path).unwrap(), "c.cutcap").unwrap();
        assert_eq!(spec.grid, ["rows"], "a grid the source does not divide by the block stays the program's");
    }

    #[test]
    fn a_type_the_source_names_by_a_host_alias_becomes_the_launched_type() {
        let mangled = "_Z10scale_rowsIfEvPfPKfS2_ii";
        assert_eq!(kernel_name(mangled).template_args, ["float"], "the test's symbol");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("scale_rows-0.cutcap");
        write_capture_of(&path, mangled, &Launch { rows: 4, cols: 8, in_written: false });
        let mut spec = templatized();
        spec.template_args = vec!["state_t".into()];

        let notes = apply(&mut spec, &CaptureFile::open(&path).unwrap(), "c.cutcap").unwrap();

        assert_eq!(spec.template_args, ["float"]);
        assert!(notes.iter().any(|n| n == "template argument `float` from the captured launch (the source wrote `state_t`)"), "{notes:?}");
        let mut same = templatized();
        same.template_args = vec!["float".into()];
        let notes = apply(&mut same, &CaptureFile::open(&path).unwrap(), "c.cutcap").unwrap();
        assert!(!notes.iter().any(|n| n.contains("template argument")), "{notes:?}");
    }

    /// A block set from a class member (`m_block`, given to a constructor) cannot be followed in
    /// the source; the captured launch gives its value, and it becomes a launch parameter that
    /// the grid and the shared memory written over it follow.
    #[test]
    fn a_block_the_source_cannot_follow_is_a_launch_parameter_from_the_captured_value() {
        let source = SOURCE.replace(
            "void scale_rows_op(Tensor in, Tensor weight, Tensor out) {",
            "struct RowScaler { int m_block; void run(Tensor in, Tensor weight, Tensor out); };\n\nvoid RowScaler::run(Tensor in, Tensor weight, Tensor out) {",
        )
        .replace("scale_rows<<<rows, 256>>>", "scale_rows<<<rows, m_block, m_block * sizeof(float)>>>");
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(captures_folder(root.path())).unwrap();
        write_launch(&captures_folder(root.path()).join("scale_rows-0.cutcap"), "_Z10scale_rowsPfPKfS1_ii", &Launch { rows: 16, cols: 64, in_written: false }, [128, 1, 1], 512);
        let file = root.path().join("rows.cu");

        let result = crate::template::templatize_in_workspace(&source, "scale_rows", &file, &SliceOptions::default(), &[], root.path()).unwrap();

        let spec = &result.spec;
        let block = spec.params.iter().find(|p| p.name == "m_block").expect("the block is a parameter");
        assert_eq!((block.kind, block.default, block.values.as_slice()), (ParamKind::Launch, 128, [32, 64, 128, 256, 512, 1024].as_slice()));
        assert_eq!(spec.block, ["m_block"]);
        assert_eq!(spec.shared_bytes, "m_block * 4", "the source's arithmetic stays, now over the parameter");
        let without = crate::template::templatize(&source, "scale_rows", &SliceOptions::default()).unwrap();
        assert!(!without.spec.params.iter().any(|p| p.name == "m_block"), "no capture, no value: {:?}", without.spec.params);
    }

    #[test]
    fn a_capture_of_another_signature_is_refused_with_the_file_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("scale_rows-0.cutcap");
        write_capture(&path, &Launch { rows: 4, cols: 4, in_written: false });
        let mut spec = templatized();
        spec.args.pop();
        let why = apply(&mut spec, &CaptureFile::open(&path).unwrap(), "c.cutcap").unwrap_err();
        assert!(why.contains("scale_rows-0.cutcap") && why.contains("5 arguments, the kernel 4"), "{why}");
    }

    #[test]
    fn captures_of_a_kernel_are_found_by_name_and_broken_ones_said() {
        let dir = tempfile::tempdir().unwrap();
        let folder = captures_folder(dir.path());
        std::fs::create_dir_all(&folder).unwrap();
        write_capture(&folder.join("scale_rows-0.cutcap"), &Launch { rows: 4, cols: 4, in_written: false });
        std::fs::write(folder.join("scale_rows-1.cutcap"), b"cutune capture\n\0truncated").unwrap();
        write_capture_of(&folder.join("other_kernel-0.cutcap"), "_Z12other_kernelPfPKfS1_ii", &Launch { rows: 4, cols: 4, in_written: false });
        std::fs::copy(folder.join("other_kernel-0.cutcap"), folder.join("scale_rows-2.cutcap")).unwrap();

        let found = captures_of(dir.path(), "scale_rows");

        assert_eq!(found.len(), 3, "{found:?}");
        assert_eq!(found[0].as_ref().unwrap().path, folder.join("scale_rows-0.cutcap"));
        let truncated = found[1].as_ref().unwrap_err();
        assert!(truncated.contains("scale_rows-1.cutcap") && truncated.contains("too short"), "{truncated}");
        let misnamed = found[2].as_ref().unwrap_err();
        assert!(misnamed.contains("scale_rows-2.cutcap") && misnamed.contains("not of `scale_rows`"), "{misnamed}");
    }

    #[test]
    fn template_arguments_read_as_the_demangler_writes_them() {
        assert_eq!(integer_argument("(unsigned int)256"), Some(256));
        assert_eq!(integer_argument("128u"), Some(128));
        assert_eq!(integer_argument("true"), Some(1));
        assert_eq!(integer_argument("float"), None);
    }

    #[test]
    fn the_programs_shape_replaces_the_sources() {
        let shape = |pairs: &[(&str, i64)]| pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect::<Shape>();
        let mut shapes = vec![shape(&[("n", 1)]), shape(&[]), shape(&[("n", 4096)])];
        let mut notes = Vec::new();
        replace_shapes(&mut shapes, &shape(&[("n", 4096)]), &mut notes);
        assert_eq!(shapes, [shape(&[("n", 4096)])]);
        assert_eq!(notes, ["the program's shape replaces 1 shape(s) read from the source"]);
    }
}
