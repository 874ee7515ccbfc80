//! T1, the JSON tuning-problem format of Kernel Tuner and KTT (schema in
//! `tests/fixtures/t1/T1-input-schema-1.0.0.json`): import one into a spec, export a spec's kernel
//! to one. Both directions report, by JSON path, what has no counterpart on the other side.
//!
//! Mapping (`docs/spec.md` has the full table):
//! - `ProblemSize[i]` becomes the size `problem_size_i` of a single shape.
//! - `LocalSize` is the block. The grid comes from `GridDivX/Y/Z` when present, as Kernel Tuner
//!   computes it: `ceil_div(problem_size_d, product of the listed parameters)`; otherwise from
//!   `GlobalSize`, which is the grid for `GlobalSizeType` CUDA and the total thread count
//!   (grid = `ceil_div(global, local)`) for OpenCL.
//! - `max(p)` / `min(p)` over a parameter in an argument `Size` (Kernel Tuner's "largest value of
//!   p") becomes that number, since a buffer's length cannot depend on the configuration.
//! - Export writes Python expressions (`ceil_div(a, b)` as `-(-a // b)`), `GlobalSizeType`
//!   CUDA, and `GridDiv` for every grid extent of the form `ceil_div(problem_size_d, p * q)`, so
//!   that importing the export gives the same spec.

use std::collections::BTreeMap;

use anyhow::{bail, Context, Result};
use serde_json::{json, Map, Value as Json};

use super::expr::{self, Expr, ExprKind, Function, Value};
use super::model::*;
use super::split_top_level;

/// Something of one format that the other cannot express, at a JSON path of the T1 file
/// (`$.KernelSpecification.GridDivX`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct T1Note {
    pub path: String,
    pub message: String,
}

#[derive(Clone, Debug)]
pub struct T1Import {
    /// One kernel; its baseline is unknown (`?`): T1 has no kernel source.
    pub spec: SpecFile,
    pub notes: Vec<T1Note>,
}

#[derive(Clone, Debug)]
pub struct T1Export {
    pub json: Json,
    pub notes: Vec<T1Note>,
}

const AXES: [&str; 3] = ["X", "Y", "Z"];

/// The size name that stands for `ProblemSize[i]`.
pub fn problem_size_name(i: usize) -> String {
    format!("problem_size_{i}")
}

struct Notes(Vec<T1Note>);

impl Notes {
    fn add(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.0.push(T1Note { path: path.into(), message: message.into() });
    }

    fn not_mapped(&mut self, path: impl Into<String>, why: &str) {
        self.add(path, format!("not mapped: {why}"));
    }
}

// ---------------------------------------------------------------------------------------------
// Import

/// Reads a T1 file. Fails only when the text is not JSON or lacks what every spec needs
/// (`KernelSpecification.KernelName`); everything else that does not map becomes a note.
pub fn import_t1(json_text: &str) -> Result<T1Import> {
    let root: Json = serde_json::from_str(json_text).context("not JSON")?;
    let root = root.as_object().context("not a T1 file: the top level is not a JSON object")?;
    let mut notes = Notes(Vec::new());
    for (key, _) in root {
        match key.as_str() {
            "ConfigurationSpace" | "KernelSpecification" => {}
            "General" => notes.not_mapped("$.General", "benchmark name and output settings belong to the tuner run"),
            other => notes.not_mapped(format!("$.{other}"), "cutune has no counterpart"),
        }
    }
    let space = root.get("ConfigurationSpace").and_then(Json::as_object);
    let params = match space {
        Some(space) => import_parameters(space, &mut notes),
        None => {
            notes.add("$.ConfigurationSpace", "missing: the spec has no parameters");
            Vec::new()
        }
    };
    let restrictions = space.map(|s| import_conditions(s, &params, &mut notes)).unwrap_or_default();
    let ks = root
        .get("KernelSpecification")
        .and_then(Json::as_object)
        .context("not a T1 file: $.KernelSpecification is missing or not an object")?;
    let name = ks
        .get("KernelName")
        .and_then(Json::as_str)
        .context("$.KernelSpecification.KernelName is missing or not a string")?
        .to_string();
    let source = ks.get("KernelFile").and_then(Json::as_str).unwrap_or(UNKNOWN).to_string();
    let shape = import_problem_size(ks, &mut notes);
    let (grid, block) = import_launch(ks, &params, &shape, &mut notes);
    let args = import_arguments(ks, &params, &mut notes);
    let mut compiler_options = Vec::new();
    for (key, value) in ks {
        let path = format!("$.KernelSpecification.{key}");
        match key.as_str() {
            "KernelName" | "KernelFile" | "ProblemSize" | "LocalSize" | "GlobalSize" | "GlobalSizeType" | "GridDivX"
            | "GridDivY" | "GridDivZ" | "Arguments" => {}
            "Language" if value == "CUDA" => {}
            "Language" => notes.add(path, format!("the kernel is {}: cutune compiles CUDA with NVRTC, so this kernel file will not compile as it is", value.as_str().unwrap_or("not CUDA"))),
            "CompilerOptions" => match value.as_array().map(|a| a.iter().map(|o| o.as_str().map(str::to_string)).collect::<Option<Vec<_>>>()) {
                Some(Some(options)) => compiler_options = options,
                _ => notes.add(path, "not a list of strings; ignored"),
            },
            "SharedMemory" => {}
            "Stream" if value.is_null() => {}
            "BenchmarkName" => notes.not_mapped(path, "the spec is named after its kernel"),
            _ => notes.not_mapped(path, "cutune has no counterpart"),
        }
    }
    let shared_bytes = match ks.get("SharedMemory") {
        None => "0".to_string(),
        Some(Json::Number(n)) if n.is_i64() => n.to_string(),
        Some(other) => {
            notes.add("$.KernelSpecification.SharedMemory", format!("`{other}` is not an integer; shared_bytes is unknown"));
            UNKNOWN.to_string()
        }
    };
    let kernel = KernelSpec {
        name,
        template_args: Vec::new(),
        grid,
        block,
        shared_bytes,
        cooperative: false,
        compiler_options,
        shapes: vec![shape],
        derived: Default::default(),
        unknown: Default::default(),
        chosen: Default::default(),
        args,
        params,
        restrictions,
        verify: VerifySpec::default(),
        sol: SolSpec::default(),
        captures: Vec::new(),
        baseline: Baseline { sha256: UNKNOWN.to_string(), source: UNKNOWN.to_string() },
    };
    Ok(T1Import { spec: SpecFile { version: 1, source, kernels: vec![kernel] }, notes: notes.0 })
}

fn import_parameters(space: &Map<String, Json>, notes: &mut Notes) -> Vec<ParamSpec> {
    for key in space.keys().filter(|k| *k != "TuningParameters" && *k != "Conditions") {
        notes.not_mapped(format!("$.ConfigurationSpace.{key}"), "cutune has no counterpart");
    }
    let Some(list) = space.get("TuningParameters").and_then(Json::as_array) else {
        notes.add("$.ConfigurationSpace.TuningParameters", "missing or not a list: the spec has no parameters");
        return Vec::new();
    };
    let mut params = Vec::new();
    for (i, p) in list.iter().enumerate() {
        let path = format!("$.ConfigurationSpace.TuningParameters[{i}]");
        let Some(name) = p.get("Name").and_then(Json::as_str) else {
            notes.add(format!("{path}.Name"), "missing or not a string; parameter skipped");
            continue;
        };
        match p.get("Type").and_then(Json::as_str) {
            Some("int" | "uint") | None => {}
            Some(other) => {
                notes.add(format!("{path}.Type"), format!("`{other}` parameters are not supported (cutune parameters are integers); `{name}` skipped"));
                continue;
            }
        }
        let values = match p.get("Values").and_then(Json::as_str).map(parse_python_values) {
            Some(Ok(values)) => values,
            Some(Err(e)) => {
                notes.add(format!("{path}.Values"), format!("{e}; `{name}` skipped"));
                continue;
            }
            None => {
                notes.add(format!("{path}.Values"), format!("missing or not a string; `{name}` skipped"));
                continue;
            }
        };
        let default = match p.get("Default") {
            Some(Json::Number(n)) if n.is_i64() => n.as_i64().unwrap_or_default(),
            Some(Json::Array(items)) if items.len() == 1 && items[0].is_i64() => {
                notes.add(format!("{path}.Default"), "a one-element list; read as its element");
                items[0].as_i64().unwrap_or_default()
            }
            other => {
                let first = values.first().copied().unwrap_or_default();
                let what = other.map_or("missing".to_string(), |o| format!("`{o}` is not an integer"));
                notes.add(format!("{path}.Default"), format!("{what}; the first value, {first}, is the default"));
                first
            }
        };
        for key in p.as_object().into_iter().flat_map(|o| o.keys()) {
            if !matches!(key.as_str(), "Name" | "Type" | "Values" | "Default") {
                notes.not_mapped(format!("{path}.{key}"), "cutune has no counterpart");
            }
        }
        params.push(ParamSpec {
            name: name.to_string(),
            kind: ParamKind::Define,
            default,
            values,
            origin: format!("T1 ConfigurationSpace.TuningParameters[{i}]"),
        });
    }
    params
}

fn import_conditions(space: &Map<String, Json>, params: &[ParamSpec], notes: &mut Notes) -> Vec<String> {
    let Some(list) = space.get("Conditions").and_then(Json::as_array) else { return Vec::new() };
    let mut restrictions = Vec::new();
    for (i, c) in list.iter().enumerate() {
        let path = format!("$.ConfigurationSpace.Conditions[{i}]");
        let Some(text) = c.get("Expression").and_then(Json::as_str) else {
            notes.add(format!("{path}.Expression"), "missing or not a string; condition skipped");
            continue;
        };
        match expr::parse(text) {
            Ok(e) => {
                let listed: Vec<&str> = c.get("Parameters").and_then(Json::as_array).map(|a| a.iter().filter_map(Json::as_str).collect()).unwrap_or_default();
                let unlisted: Vec<String> = e.free_variables().into_iter().filter(|n| !listed.contains(&n.as_str()) && params.iter().any(|p| &p.name == n)).collect();
                if !unlisted.is_empty() {
                    // Harmless for cutune, which reads the names from the expression itself.
                    notes.add(format!("{path}.Parameters"), format!("does not list {} although the expression uses it", unlisted.join(", ")));
                }
            }
            Err(e) => notes.add(format!("{path}.Expression"), format!("does not parse ({e}); kept as written")),
        }
        restrictions.push(text.to_string());
    }
    restrictions
}

fn import_problem_size(ks: &Map<String, Json>, notes: &mut Notes) -> Shape {
    let mut shape = Shape::new();
    let Some(sizes) = ks.get("ProblemSize") else { return shape };
    let Some(sizes) = sizes.as_array() else {
        notes.add("$.KernelSpecification.ProblemSize", "not a list; the spec has no sizes");
        return shape;
    };
    for (i, size) in sizes.iter().enumerate() {
        match size.as_i64() {
            Some(v) => {
                shape.insert(problem_size_name(i), v);
            }
            None => notes.add(format!("$.KernelSpecification.ProblemSize[{i}]"), format!("`{size}` is not an integer; size skipped")),
        }
    }
    shape
}

/// A T1 expression in this spec's terms: `ProblemSize[i]` becomes `problem_size_i`, and
/// `max(p)` / `min(p)` of a parameter its largest / smallest value.
fn rewrite_t1_expression(text: &str, params: &[ParamSpec]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix("ProblemSize[") {
            let digits = after.bytes().take_while(u8::is_ascii_digit).count();
            if digits > 0 && after[digits..].starts_with(']') {
                out.push_str(&problem_size_name(after[..digits].parse().unwrap_or_default()));
                rest = &after[digits + 1..];
                continue;
            }
        }
        let at_word_start = !out.ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_');
        if at_word_start {
            if let Some((replacement, len)) = extreme_of_parameter(rest, params) {
                out.push_str(&replacement);
                rest = &rest[len..];
                continue;
            }
        }
        let c = rest.chars().next().unwrap_or_default();
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// `max(p)` or `min(p)` at the start of `text`, for a parameter p: its value and the matched length.
fn extreme_of_parameter(text: &str, params: &[ParamSpec]) -> Option<(String, usize)> {
    let (is_max, after) = match (text.strip_prefix("max("), text.strip_prefix("min(")) {
        (Some(after), _) => (true, after),
        (_, Some(after)) => (false, after),
        _ => return None,
    };
    let close = after.find(')')?;
    let param = params.iter().find(|p| p.name == after[..close].trim())?;
    let value = if is_max { param.values.iter().max() } else { param.values.iter().min() }?;
    Some((value.to_string(), 4 + close + 1))
}

/// A T1 size field (`"X": "block_size_x"` or a number) as an expression.
fn size_field(value: &Json) -> Option<String> {
    match value {
        Json::String(s) => Some(s.trim().to_string()),
        Json::Number(n) if n.is_i64() => Some(n.to_string()),
        _ => None,
    }
}

fn import_launch(ks: &Map<String, Json>, params: &[ParamSpec], shape: &Shape, notes: &mut Notes) -> (Vec<String>, Vec<String>) {
    let local = ks.get("LocalSize").and_then(Json::as_object);
    let global = ks.get("GlobalSize").and_then(Json::as_object);
    let size_type = ks.get("GlobalSizeType").and_then(Json::as_str).unwrap_or("CUDA");
    if !matches!(size_type, "CUDA" | "OpenCL") {
        notes.add("$.KernelSpecification.GlobalSizeType", format!("`{size_type}` read as OpenCL (global size in threads)"));
    }
    let mut grid = Vec::new();
    let mut block = Vec::new();
    for (d, axis) in AXES.iter().enumerate() {
        let local_d = match local.and_then(|l| l.get(*axis)) {
            None => "1".to_string(),
            Some(v) => size_field(v).map(|s| rewrite_t1_expression(&s, params)).unwrap_or_else(|| {
                notes.add(format!("$.KernelSpecification.LocalSize.{axis}"), format!("`{v}` is neither an expression nor an integer"));
                UNKNOWN.to_string()
            }),
        };
        let global_d = global.and_then(|g| g.get(*axis)).map(|v| size_field(v).map(|s| rewrite_t1_expression(&s, params)));
        let grid_div = ks.get(&format!("GridDiv{axis}"));
        let grid_d = match (grid_div, global_d) {
            (Some(div), global_d) => {
                let path = format!("$.KernelSpecification.GridDiv{axis}");
                let names: Option<Vec<&str>> = div.as_array().and_then(|a| a.iter().map(Json::as_str).collect());
                let size = problem_size_name(d);
                match names {
                    Some(names) if shape.contains_key(&size) => {
                        if global_d.is_some() {
                            notes.add(
                                format!("$.KernelSpecification.GlobalSize.{axis}"),
                                format!("not used: GridDiv{axis} gives the grid, as in Kernel Tuner"),
                            );
                        }
                        if names.is_empty() { size } else { format!("ceil_div({size}, {})", names.join(" * ")) }
                    }
                    Some(_) => {
                        notes.add(path, format!("ProblemSize has no entry {d} to divide; grid extent unknown"));
                        UNKNOWN.to_string()
                    }
                    None => {
                        notes.add(path, "not a list of parameter names; grid extent unknown");
                        UNKNOWN.to_string()
                    }
                }
            }
            (None, Some(Some(g))) if size_type == "CUDA" => g,
            (None, Some(Some(g))) => {
                if local_d == "1" { g } else { format!("ceil_div({g}, {local_d})") }
            }
            (None, Some(None)) => {
                notes.add(format!("$.KernelSpecification.GlobalSize.{axis}"), "neither an expression nor an integer; grid extent unknown");
                UNKNOWN.to_string()
            }
            (None, None) => "1".to_string(),
        };
        grid.push(grid_d);
        block.push(local_d);
    }
    // Trailing extents of 1 are implied.
    for extents in [&mut grid, &mut block] {
        while extents.len() > 1 && extents.last().is_some_and(|e| e == "1") {
            extents.pop();
        }
    }
    (grid, block)
}

fn t1_dtype(t: &str) -> Option<Dtype> {
    Some(match t {
        "half" => Dtype::F16,
        "float" => Dtype::F32,
        "double" => Dtype::F64,
        "int8" => Dtype::I8,
        "int16" => Dtype::I16,
        "int32" => Dtype::I32,
        "int64" => Dtype::I64,
        "uint8" => Dtype::U8,
        "uint16" => Dtype::U16,
        "uint32" => Dtype::U32,
        "uint64" => Dtype::U64,
        _ => return None,
    })
}

fn import_arguments(ks: &Map<String, Json>, params: &[ParamSpec], notes: &mut Notes) -> Vec<ArgSpec> {
    let Some(list) = ks.get("Arguments").and_then(Json::as_array) else { return Vec::new() };
    let mut args = Vec::new();
    for (i, a) in list.iter().enumerate() {
        let path = format!("$.KernelSpecification.Arguments[{i}]");
        let name = match a.get("Name").and_then(Json::as_str) {
            Some(n) => n.to_string(),
            None => {
                notes.add(format!("{path}.Name"), format!("missing; named `arg{i}`"));
                format!("arg{i}")
            }
        };
        let type_name = a.get("Type").and_then(Json::as_str).unwrap_or("");
        let Some(dtype) = t1_dtype(type_name) else {
            notes.add(format!("{path}.Type"), format!("`{type_name}` has no cutune dtype (vector and custom types are not supported); `{name}` skipped"));
            continue;
        };
        let fill_value = a.get("FillValue").and_then(Json::as_f64);
        let mut arg = ArgSpec { name: name.clone(), element: Some(dtype), ..ArgSpec::default() };
        match a.get("MemoryType").and_then(Json::as_str) {
            Some("Vector") => {
                arg.length = Some(match a.get("Size").and_then(size_field) {
                    Some(size) => rewrite_t1_expression(&size, params),
                    None => {
                        notes.add(format!("{path}.Size"), format!("missing or not an expression; the length of `{name}` is unknown"));
                        UNKNOWN.to_string()
                    }
                });
                arg.role = match a.get("AccessType").and_then(Json::as_str) {
                    Some("ReadOnly") => Some(Role::Input),
                    Some("WriteOnly") => Some(Role::Output),
                    Some("ReadWrite") => Some(Role::InOut),
                    _ => {
                        notes.add(format!("{path}.AccessType"), format!("missing or unknown; the role of `{name}` must be set"));
                        None
                    }
                };
                arg.init = import_fill(a, arg.role, &path, notes);
            }
            Some("Scalar") => {
                arg.value = Some(match fill_value {
                    Some(v) if dtype == Dtype::F32 || dtype == Dtype::F64 || dtype == Dtype::F16 => format!("{v:?}"),
                    Some(v) if v.fract() == 0.0 => format!("{}", v as i64),
                    _ => {
                        notes.add(format!("{path}.FillValue"), format!("missing or not a {type_name}; the value of `{name}` is unknown"));
                        UNKNOWN.to_string()
                    }
                });
            }
            other => {
                notes.add(format!("{path}.MemoryType"), format!("`{}` arguments are not supported (only Vector and Scalar); `{name}` skipped", other.unwrap_or("missing MemoryType")));
                continue;
            }
        }
        for key in a.as_object().into_iter().flat_map(|o| o.keys()) {
            let mapped = matches!(key.as_str(), "Name" | "Type" | "MemoryType" | "Size" | "AccessType" | "FillType" | "FillValue" | "Output");
            if key == "MemType" {
                notes.not_mapped(format!("{path}.{key}"), "cutune passes every buffer as a kernel argument, never as a __constant__ symbol");
            } else if !mapped {
                notes.not_mapped(format!("{path}.{key}"), "cutune has no counterpart");
            }
        }
        args.push(arg);
    }
    args
}

/// T1's fill of a buffer as an init: `Random` with FillValue v is uniform on [0, v]; `Constant`
/// v is uniform on [v, v], except zeros in a write-only buffer, which need no init.
fn import_fill(a: &Json, role: Option<Role>, path: &str, notes: &mut Notes) -> Option<Init> {
    let fill_value = a.get("FillValue").and_then(Json::as_f64).unwrap_or(1.0);
    match a.get("FillType").and_then(Json::as_str) {
        Some("Random") => Some(Init::Uniform { low: 0.0, high: fill_value }),
        Some("Constant") if role == Some(Role::Output) && fill_value == 0.0 => None,
        Some("Constant") => Some(Init::Uniform { low: fill_value, high: fill_value }),
        None => None,
        Some(other) => {
            notes.not_mapped(format!("{path}.FillType"), &format!("`{other}` fills are not supported; the default init applies"));
            None
        }
    }
}

/// The values of a T1 parameter: a Python list expression of the forms the benchmark hub uses —
/// `[1, 2, 4]`, `[2**i for i in range(0, 6)]`, `list(range(32, 1024+1, 32))`, and `+` of those.
pub fn parse_python_values(text: &str) -> std::result::Result<Vec<i64>, String> {
    let mut values = Vec::new();
    for part in split_top_level(text, '+') {
        let part = part.trim();
        if let Some(inner) = part.strip_prefix('[').and_then(|p| p.strip_suffix(']')) {
            if let Some((element, range)) = split_comprehension(inner) {
                let (var, range) = range;
                let element = expr::parse(element.trim()).map_err(|e| format!("`{element}`: {}", e.message))?;
                for i in python_range(range)? {
                    let v = element.eval_integer(&|n| (n == var).then_some(Value::Int(i))).map_err(|e| format!("`{part}`: {e}"))?;
                    values.push(v);
                }
            } else if !inner.trim().is_empty() {
                for item in split_top_level(inner, ',') {
                    if item.trim().is_empty() {
                        continue; // a trailing comma
                    }
                    values.push(constant_integer(item)?);
                }
            }
        } else if let Some(inner) = part.strip_prefix("list(").and_then(|p| p.strip_suffix(')')) {
            values.extend(python_range(inner.trim())?);
        } else if part.starts_with("range(") {
            values.extend(python_range(part)?);
        } else {
            return Err(format!("`{part}` is not a form cutune reads (a list, a list comprehension over range, or list(range(…)))"));
        }
    }
    if values.is_empty() {
        return Err("no values".into());
    }
    Ok(values)
}

fn constant_integer(text: &str) -> std::result::Result<i64, String> {
    let e = expr::parse(text.trim()).map_err(|e| format!("`{}`: {}", text.trim(), e.message))?;
    e.eval_integer(&|_| None).map_err(|e| format!("`{}`: {e}", text.trim()))
}

/// `EXPR for VAR in range(…)` → (EXPR, (VAR, `range(…)`)).
fn split_comprehension(inner: &str) -> Option<(&str, (&str, &str))> {
    let for_at = inner.find(" for ")?;
    let (element, rest) = (&inner[..for_at], &inner[for_at + 5..]);
    let in_at = rest.find(" in ")?;
    Some((element, (rest[..in_at].trim(), rest[in_at + 4..].trim())))
}

/// Python's `range(stop)`, `range(start, stop)`, `range(start, stop, step)`.
fn python_range(text: &str) -> std::result::Result<Vec<i64>, String> {
    let args = text
        .strip_prefix("range(")
        .and_then(|t| t.strip_suffix(')'))
        .ok_or_else(|| format!("`{text}` is not a call of range"))?;
    let args = split_top_level(args, ',').into_iter().map(constant_integer).collect::<std::result::Result<Vec<_>, _>>()?;
    let (start, stop, step) = match args[..] {
        [stop] => (0, stop, 1),
        [start, stop] => (start, stop, 1),
        [start, stop, step] if step != 0 => (start, stop, step),
        _ => return Err(format!("`{text}`: range takes 1 to 3 arguments and a non-zero step")),
    };
    let mut values = Vec::new();
    let mut i = start;
    while (step > 0 && i < stop) || (step < 0 && i > stop) {
        values.push(i);
        i += step;
    }
    Ok(values)
}

// ---------------------------------------------------------------------------------------------
// Export

/// Writes kernel `kernel_name` of `spec` as T1. Fails when the kernel does not exist or one of
/// its expressions does not parse; what T1 cannot say becomes a note.
pub fn export_t1(spec: &SpecFile, kernel_name: &str) -> Result<T1Export> {
    let Some(kernel) = spec.kernels.iter().find(|k| k.name == kernel_name) else {
        let names: Vec<&str> = spec.kernels.iter().map(|k| k.name.as_str()).collect();
        bail!("no kernel `{kernel_name}` in the spec (it has {})", if names.is_empty() { "none".into() } else { names.join(", ") });
    };
    if let Some(passed) = kernel.args.iter().find(|a| a.is_struct()) {
        bail!("argument `{}` is a struct passed by value, which T1 has no way to describe", passed.name);
    }
    if let Some(texture) = kernel.args.iter().find(|a| a.is_texture()) {
        bail!("argument `{}` is a texture, which T1 has no way to describe", texture.name);
    }
    let mut notes = Notes(Vec::new());
    // T1 has no derived sizes: each is a problem size of its own, at its value on the shape.
    let shape: Shape = kernel.shapes.first().map(|first| super::sizes_of(kernel, first).into_iter().filter_map(|(name, value)| Some((name, value.as_integer()?))).collect()).unwrap_or_default();
    if kernel.shapes.len() > 1 {
        notes.add("$.KernelSpecification.ProblemSize", format!("T1 has one problem size; the first of {} shapes is exported", kernel.shapes.len()));
    }
    let size_order = problem_size_order(&shape);
    if size_order.iter().enumerate().any(|(i, n)| *n != problem_size_name(i)) {
        let mapping: Vec<String> = size_order.iter().enumerate().map(|(i, n)| format!("ProblemSize[{i}] = {n}")).collect();
        notes.add("$.KernelSpecification.ProblemSize", format!("T1 sizes are positional: {}", mapping.join(", ")));
    }
    let renames: BTreeMap<String, String> = size_order.iter().enumerate().map(|(i, n)| (n.clone(), format!("ProblemSize[{i}]"))).collect();
    let rename = |n: &str| renames.get(n).cloned();
    let python = |text: &str, what: &str| -> Result<(Expr, String)> {
        let e = expr::parse(text).map_err(|e| anyhow::anyhow!("{what} `{text}` does not parse: {e}"))?;
        let printed = e.to_python(&rename);
        Ok((e, printed))
    };
    let is_param = |n: &str| kernel.params.iter().any(|p| p.name == n);

    let parameters: Vec<Json> = kernel
        .params
        .iter()
        .enumerate()
        .map(|(i, p)| {
            if p.kind != ParamKind::Define {
                notes.add(format!("$.ConfigurationSpace.TuningParameters[{i}]"), format!("`{}` is a {:?} parameter; T1 tuners pass every parameter as a #define", p.name, p.kind));
            }
            let values: Vec<String> = p.values.iter().map(i64::to_string).collect();
            json!({ "Name": p.name, "Type": "int", "Values": format!("[{}]", values.join(", ")), "Default": p.default })
        })
        .collect();
    let mut conditions = Vec::new();
    for r in &kernel.restrictions {
        let (e, printed) = python(r, "restriction")?;
        let used: Vec<String> = e.free_variables().into_iter().filter(|n| is_param(n)).collect();
        conditions.push(json!({ "Expression": printed, "Parameters": used }));
    }

    let mut local = Map::new();
    let mut global = Map::new();
    let mut kernel_spec = Map::new();
    for (d, axis) in AXES.iter().enumerate() {
        let block_d = kernel.block.get(d).map(String::as_str).unwrap_or("1");
        local.insert(axis.to_string(), Json::String(python(block_d, "block extent")?.1));
        let grid_d = kernel.grid.get(d).map(String::as_str).unwrap_or("1");
        let (grid_expr, printed) = python(grid_d, "grid extent")?;
        global.insert(axis.to_string(), Json::String(printed));
        if let Some(divisors) = grid_divisors(&grid_expr, size_order.get(d)) {
            kernel_spec.insert(format!("GridDiv{axis}"), json!(divisors));
        }
    }
    if kernel.grid.len() > 3 || kernel.block.len() > 3 {
        notes.add("$.KernelSpecification", "more than 3 grid or block extents; the first 3 are exported");
    }

    let env: BTreeMap<String, Value> = super::validate::default_environment(kernel, &shape).unwrap_or_default();
    let mut arguments = Vec::new();
    for (i, arg) in kernel.args.iter().enumerate() {
        let path = format!("$.KernelSpecification.Arguments[{i}]");
        let (type_name, type_size) = match arg.dtype() {
            Dtype::F16 => ("half", None),
            Dtype::F32 => ("float", None),
            Dtype::F64 => ("double", None),
            Dtype::I8 => ("int8", None),
            Dtype::I16 => ("int16", None),
            Dtype::I32 => ("int32", None),
            Dtype::I64 => ("int64", None),
            Dtype::U8 => ("uint8", None),
            Dtype::U16 => ("uint16", None),
            Dtype::U32 => ("uint32", None),
            Dtype::U64 => ("uint64", None),
            Dtype::Bf16 => ("custom", Some(2)),
            Dtype::Fp8e4m3 | Dtype::Fp8e5m2 => ("custom", Some(1)),
        };
        let mut a = Map::new();
        a.insert("Name".into(), json!(arg.name));
        a.insert("Type".into(), json!(type_name));
        if let Some(size) = type_size {
            notes.add(format!("{path}.Type"), format!("{:?} has no T1 type; written as custom of {size} bytes", arg.dtype()));
            a.insert("TypeSize".into(), json!(size));
        }
        if let Some(length) = &arg.length {
            let (e, printed) = python(length, "length")?;
            a.insert("MemoryType".into(), json!("Vector"));
            a.insert("Size".into(), match e.kind {
                ExprKind::Int(n) => json!(n),
                _ => json!(printed),
            });
            match arg.role {
                Some(Role::Input) => a.insert("AccessType".into(), json!("ReadOnly")),
                Some(Role::Output) => a.insert("AccessType".into(), json!("WriteOnly")),
                Some(Role::InOut) => a.insert("AccessType".into(), json!("ReadWrite")),
                None => {
                    notes.add(format!("{path}.AccessType"), format!("`{}` has no role", arg.name));
                    None
                }
            };
            let (fill_type, fill_value) = match arg.init {
                None => ("Constant", 0.0),
                Some(Init::Uniform { low, high }) if low == high => ("Constant", low),
                Some(Init::Uniform { low, high }) => {
                    if low != 0.0 {
                        notes.add(format!("{path}.FillValue"), format!("T1 random fills start at 0; the low bound {low} of `{}` is lost", arg.name));
                    }
                    ("Random", high)
                }
                Some(Init::Normal { mean, std }) => {
                    notes.add(format!("{path}.FillType"), format!("T1 has no normal fill; `{}` (mean {mean}, std {std}) is written as Random up to mean + 3 std", arg.name));
                    ("Random", mean + 3.0 * std)
                }
                Some(Init::Integers { low, high }) => {
                    notes.add(format!("{path}.FillType"), format!("T1 has no integer fill; `{}` [{low}, {high}) is written as Random up to {high}", arg.name));
                    ("Random", high as f64)
                }
                Some(Init::Mixed { large, small }) => {
                    notes.add(format!("{path}.FillType"), format!("T1 has no mixed-scale fill; `{}` (scales {large} and {small}) is written as Random up to {large}", arg.name));
                    ("Random", large.abs().max(small.abs()))
                }
            };
            a.insert("FillType".into(), json!(fill_type));
            a.insert("FillValue".into(), json!(fill_value));
            if matches!(arg.role, Some(Role::Output | Role::InOut)) {
                // Kernel Tuner's benchmark-hub files mark the buffers to compare this way.
                a.insert("Output".into(), json!(1));
            }
        } else if let Some(value) = &arg.value {
            let (e, _) = python(value, "scalar value")?;
            a.insert("MemoryType".into(), json!("Scalar"));
            a.insert("AccessType".into(), json!("ReadOnly"));
            match e.eval(&|n| env.get(n).copied()) {
                Ok(Value::Int(v)) => a.insert("FillValue".into(), json!(v)),
                Ok(Value::Float(v)) => a.insert("FillValue".into(), json!(v)),
                Err(err) => {
                    notes.add(format!("{path}.FillValue"), format!("the value of `{}` cannot be computed ({err}); left out", arg.name));
                    None
                }
            };
        }
        arguments.push(Json::Object(a));
    }

    kernel_spec.insert("Language".into(), json!("CUDA"));
    if !kernel.compiler_options.is_empty() {
        kernel_spec.insert("CompilerOptions".into(), json!(kernel.compiler_options));
    }
    kernel_spec.insert("KernelName".into(), json!(kernel.name));
    kernel_spec.insert("KernelFile".into(), json!(spec.source));
    kernel_spec.insert("GlobalSizeType".into(), json!("CUDA"));
    kernel_spec.insert("LocalSize".into(), Json::Object(local));
    kernel_spec.insert("GlobalSize".into(), Json::Object(global));
    kernel_spec.insert("ProblemSize".into(), json!(size_order.iter().map(|n| shape[n]).collect::<Vec<_>>()));
    match expr::parse(&kernel.shared_bytes).ok().and_then(|e| e.eval_integer(&|_| None).ok()) {
        Some(bytes) => {
            kernel_spec.insert("SharedMemory".into(), json!(bytes));
        }
        None => notes.add("$.KernelSpecification.SharedMemory", format!("shared_bytes `{}` depends on the configuration; T1 holds a number, so it is left out", kernel.shared_bytes)),
    }
    kernel_spec.insert("Arguments".into(), json!(arguments));
    if !kernel.template_args.is_empty() {
        notes.not_mapped("$.KernelSpecification", "T1 has no template arguments; template_args are dropped");
    }
    if kernel.verify != VerifySpec::default() || kernel.sol != SolSpec::default() {
        notes.not_mapped("$", "verify and sol have no T1 counterpart");
    }
    let mut space = Map::new();
    space.insert("TuningParameters".into(), json!(parameters));
    if !conditions.is_empty() {
        space.insert("Conditions".into(), json!(conditions));
    }
    let json = json!({
        "General": { "FormatVersion": 1, "BenchmarkName": kernel.name, "OutputFormat": "JSON" },
        "ConfigurationSpace": space,
        "KernelSpecification": kernel_spec,
    });
    Ok(T1Export { json, notes: notes.0 })
}

/// The sizes in `ProblemSize` order: `problem_size_0, 1, …` when the shape uses exactly those
/// names (as an import does), otherwise the shape's alphabetical order.
fn problem_size_order(shape: &Shape) -> Vec<String> {
    let imported: Vec<String> = (0..shape.len()).map(problem_size_name).collect();
    if imported.iter().all(|n| shape.contains_key(n)) {
        imported
    } else {
        shape.keys().cloned().collect()
    }
}

/// The `GridDiv` list of a grid extent `ceil_div(size_d, p * q …)` whose size is this axis's
/// problem size; `None` for any other form.
fn grid_divisors(grid: &Expr, axis_size: Option<&String>) -> Option<Vec<String>> {
    let ExprKind::Call(Function::CeilDiv, args) = &grid.kind else { return None };
    match &args[0].kind {
        ExprKind::Name(n) if Some(n) == axis_size => {}
        _ => return None,
    }
    fn factors(e: &Expr, out: &mut Vec<String>) -> bool {
        match &e.kind {
            ExprKind::Name(n) => {
                out.push(n.clone());
                true
            }
            ExprKind::Binary(expr::BinaryOp::Mul, a, b) => factors(a, out) && factors(b, out),
            _ => false,
        }
    }
    let mut out = Vec::new();
    factors(&args[1], &mut out).then_some(out)
}
