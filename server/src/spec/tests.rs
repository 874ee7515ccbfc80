//! Spec files in, model and diagnostics out; T1 files through import and export.

use std::path::PathBuf;

use super::t1::{export_t1, import_t1, parse_python_values};
use super::*;

const RMSNORM_SOURCE: &str = "#include <cuda_fp16.h>\n\n__global__ void rmsnorm_kernel(half* out, const half* in, int hidden, float eps) {\n  // 'quoted' and \"double\" and a \\ backslash\n}\n";

/// A complete, valid spec, written as templatize writes one (the sha256 is filled in below).
fn rmsnorm_toml(sha256: &str) -> String {
    format!(
        r##"version = 1
source = "rmsnorm.cu"

[[kernels]]
name = "rmsnorm_kernel"
grid = ["rows"]
block = ["RMSNORM_BLOCK_SIZE"]
restrictions = ["RMSNORM_BLOCK_SIZE % 32 == 0", "32 <= RMSNORM_BLOCK_SIZE * VEC <= 4096"]

[[kernels.shapes]]
rows = 8192
hidden = 4096

[[kernels.shapes]]
rows = 77
hidden = 5120

[[kernels.args]]
name = "out"
dtype = "f16"
length = "rows * hidden"
role = "output"

[[kernels.args]]
name = "in"
dtype = "f16"
length = "rows * hidden"
role = "input"
init = {{ dist = "uniform", low = -1.0, high = 1.0 }}

[[kernels.args]]
name = "hidden"
dtype = "i32"
value = "hidden"

[[kernels.args]]
name = "eps"
dtype = "f32"
value = "1e-6"

[[kernels.params]]
name = "RMSNORM_BLOCK_SIZE"
kind = "define"
default = 256
values = [64, 128, 256, 512, 1024]
origin = "#define BLOCK_SIZE 256"

[[kernels.params]]
name = "VEC"
kind = "define"
default = 1
values = [1, 2, 4, 8]

[kernels.verify]
tolerances = [{{ dtype = "f16", atol = 1e-2, rtol = 1e-2 }}]

[kernels.sol]
bytes = "2 * rows * hidden * 2"
flops = "3 * rows * hidden"

[kernels.baseline]
sha256 = "{sha256}"
source = '''
{RMSNORM_SOURCE}'''
"##
    )
}

fn valid_toml() -> String {
    rmsnorm_toml(&sha256_hex(RMSNORM_SOURCE))
}

/// Diagnostics as `line:column severity message` (1-based, as an editor shows them), with the
/// text they cover.
fn describe(text: &str, diagnostics: &[SpecDiagnostic]) -> String {
    diagnostics
        .iter()
        .map(|d| format!("{}:{} {}: {}\n    at `{}`", d.line + 1, d.column + 1, d.severity.as_str(), d.message, &text[d.range.clone()]))
        .collect::<Vec<_>>()
        .join("\n")
}

fn diagnostics_of(text: &str) -> Vec<SpecDiagnostic> {
    parse_spec(text).1
}

#[test]
fn a_valid_spec_parses_without_diagnostics() {
    let text = valid_toml();
    let (spec, diagnostics) = parse_spec(&text);
    assert_eq!(describe(&text, &diagnostics), "");
    let spec = spec.unwrap();
    let kernel = &spec.kernels[0];
    assert_eq!(kernel.shapes.len(), 2);
    assert_eq!(kernel.args[1].init, Some(Init::Uniform { low: -1.0, high: 1.0 }));
    assert_eq!(kernel.baseline.source, RMSNORM_SOURCE);
    assert_eq!(kernel.shared_bytes, "0");
    assert!(kernel.verify.deterministic);
}

#[test]
fn render_is_readable_and_reads_back_to_the_same_spec() {
    let (spec, _) = parse_spec(&valid_toml());
    let spec = spec.unwrap();
    let rendered = render_spec(&spec);
    insta::assert_snapshot!("rendered_rmsnorm", rendered);
    let (again, diagnostics) = parse_spec(&rendered);
    assert_eq!(describe(&rendered, &diagnostics), "");
    assert_eq!(again.as_ref(), Some(&spec));
    assert_eq!(render_spec(&again.unwrap()), rendered, "deterministic");
}

#[test]
fn render_round_trips_awkward_baselines_and_empty_lists() {
    let (spec, _) = parse_spec(&valid_toml());
    let mut spec = spec.unwrap();
    for source in ["ends with a quote'", "has ''' inside", "crlf\r\nline\r\n", "tab\tand \u{7f} delete", "", "no newline"] {
        spec.kernels[0].baseline.source = source.to_string();
        spec.kernels[0].baseline.sha256 = sha256_hex(source);
        let rendered = render_spec(&spec);
        let (again, _) = parse_spec(&rendered);
        assert_eq!(again.as_ref(), Some(&spec), "{source:?}:\n{rendered}");
    }
    let kernel = &mut spec.kernels[0];
    kernel.shapes.clear();
    kernel.args.clear();
    kernel.params.clear();
    kernel.restrictions.clear();
    kernel.verify = VerifySpec { tolerances: vec![], deterministic: false, contiguous: None };
    kernel.sol = SolSpec::default();
    kernel.shapes.push(Shape::from([("odd key".to_string(), 3)]));
    let rendered = render_spec(&spec);
    assert_eq!(parse_spec(&rendered).0.as_ref(), Some(&spec), "{rendered}");
    spec.kernels.clear();
    assert_eq!(parse_spec(&render_spec(&spec)).0.as_ref(), Some(&spec));
}

#[test]
fn toml_syntax_errors_have_a_position() {
    let text = "version = 1\nsource = \"a.cu\n";
    let (spec, diagnostics) = parse_spec(text);
    assert!(spec.is_none());
    let d = &diagnostics[0];
    assert_eq!((d.severity, d.line), (Severity::Error, 1));
    assert!(d.message.contains("string"), "{}", d.message);
}

#[test]
fn unknown_fields_and_wrong_types_point_at_the_key_or_value() {
    let text = valid_toml().replace("role = \"input\"", "role = \"input\"\nrole_typo = 1");
    let (spec, diagnostics) = parse_spec(&text);
    assert!(spec.is_none());
    insta::assert_snapshot!("unknown_field", describe(&text, &diagnostics));

    let text = valid_toml().replace("default = 256", "default = \"256\"");
    insta::assert_snapshot!("wrong_type", describe(&text, &diagnostics_of(&text)));

    let text = valid_toml().replace("dtype = \"i32\"", "dtype = \"?\"");
    insta::assert_snapshot!("unknown_dtype", describe(&text, &diagnostics_of(&text)));
}

#[test]
fn semantic_problems_are_reported_where_they_are() {
    let text = valid_toml()
        .replace("version = 1", "version = 2")
        .replace("grid = [\"rows\"]", "grid = [\"ceil_div(rows, BLOK)\", \"1\", \"1\", \"1\"]")
        .replace("\"rows * hidden\"\nrole = \"output\"", "\"?\"\nrole = \"output\"")
        .replace("length = \"rows * hidden\"\nrole = \"input\"", "length = \"rows * (hidden\"")
        .replace("rows = 77\nhidden = 5120", "rows = 77\ncols = 5120")
        .replace("name = \"VEC\"", "name = \"RMSNORM_BLOCK_SIZE\"")
        .replace("default = 1\n", "default = 3\n")
        .replace("values = [64, 128, 256, 512, 1024]", "values = []")
        .replace("atol = 1e-2", "atol = -1e-2")
        .replace("// 'quoted'", "// edited 'quoted'")
        .replace("\"RMSNORM_BLOCK_SIZE % 32 == 0\"", "\"RMSNORM_BLOCK_SIZE % 3 == 2\"");
    let (spec, diagnostics) = parse_spec(&text);
    assert!(spec.is_some(), "semantic errors keep the model");
    insta::assert_snapshot!("semantic_problems", describe(&text, &diagnostics));
}

#[test]
fn unknown_markers_say_what_to_fill_in() {
    let text = valid_toml()
        .replace("name = \"rmsnorm_kernel\"", "name = \"?\"")
        .replace("block = [\"RMSNORM_BLOCK_SIZE\"]", "block = [\"?\"]")
        .replace("length = \"rows * hidden\"\nrole = \"output\"", "length = \"?\"\nrole = \"output\"")
        .replace("value = \"1e-6\"", "value = \"?\"")
        .replace("bytes = \"2 * rows * hidden * 2\"", "bytes = \"?\"");
    let text = text.replace(&format!("sha256 = \"{}\"", sha256_hex(RMSNORM_SOURCE)), "sha256 = \"?\"");
    insta::assert_snapshot!("unknown_markers", describe(&text, &diagnostics_of(&text)));
    let text = valid_toml().replace("role = \"input\"\n", "").replace("\"rows * hidden\"\nrole = \"output\"", "\"rows * hidden\"");
    let diagnostics = diagnostics_of(&text);
    assert_eq!(diagnostics.iter().filter(|d| d.message.contains("has no role")).count(), 2, "{}", describe(&text, &diagnostics));
}

#[test]
fn argument_and_parameter_problems() {
    let text = valid_toml()
        .replace("name = \"in\"", "name = \"out\"")
        .replace("name = \"eps\"\ndtype = \"f32\"\nvalue = \"1e-6\"", "name = \"eps\"\ndtype = \"f32\"\nrole = \"input\"\nvalue = \"1e-6\"\nlength = \"rows\"")
        .replace("value = \"hidden\"", "value = \"hidden * 2\"")
        .replace("low = -1.0, high = 1.0", "low = 1.0, high = -1.0")
        .replace("kind = \"define\"\ndefault = 1\nvalues = [1, 2, 4, 8]", "kind = \"fast_math\"\ndefault = 1\nvalues = [1, 2, 2]");
    insta::assert_snapshot!("argument_and_parameter_problems", describe(&text, &diagnostics_of(&text)));
}

#[test]
fn sol_compute_is_fp32_or_fp16_and_needs_flops() {
    let with = |replacement: &str| valid_toml().replace("flops = \"3 * rows * hidden\"", replacement);
    let text = with("flops = \"3 * rows * hidden\"\ncompute = \"fp16\"");
    let (spec, diagnostics) = parse_spec(&text);
    assert_eq!(describe(&text, &diagnostics), "");
    let spec = spec.unwrap();
    assert_eq!(spec.kernels[0].sol.compute, Some(SolCompute::Fp16));
    assert_eq!(parse_spec(&render_spec(&spec)).0.as_ref(), Some(&spec), "compute survives rendering");

    let text = with("flops = \"3 * rows * hidden\"\ncompute = \"fp64\"");
    let diagnostics = diagnostics_of(&text);
    assert_eq!(diagnostics.len(), 1, "{}", describe(&text, &diagnostics));
    assert!(diagnostics[0].message.contains("unknown variant `fp64`, expected `fp32` or `fp16`"), "{}", diagnostics[0].message);
    assert_eq!(&text[diagnostics[0].range.clone()], "\"fp64\"");

    let text = with("compute = \"fp32\"");
    let diagnostics = diagnostics_of(&text);
    assert_eq!(diagnostics.len(), 1, "{}", describe(&text, &diagnostics));
    assert_eq!(diagnostics[0].severity, Severity::Warning);
    assert!(diagnostics[0].message.starts_with("SOL compute `fp32` picks the arithmetic rate for SOL flops, and there are none"), "{}", diagnostics[0].message);
    assert_eq!(&text[diagnostics[0].range.clone()], "\"fp32\"");
}

#[test]
fn expression_errors_point_inside_the_string() {
    let text = valid_toml().replace("flops = \"3 * rows * hidden\"", "flops = \"3 * rows * hiden\"");
    let diagnostics = diagnostics_of(&text);
    assert_eq!(diagnostics.len(), 1, "{}", describe(&text, &diagnostics));
    let d = &diagnostics[0];
    assert_eq!(&text[d.range.clone()], "hiden");
    let line = text.lines().nth(d.line as usize).unwrap();
    assert_eq!(&line[d.column as usize..d.column as usize + 5], "hiden");
    assert!(d.message.starts_with("`hiden` in SOL flops is not a size, a parameter or a scalar argument (known: hidden, rows, "), "{}", d.message);

    // With an escape in the string, the position of the whole string is the honest answer.
    let text = valid_toml().replace("flops = \"3 * rows * hidden\"", "flops = \"3 * rows * hiden\\u0020\"");
    let d = &diagnostics_of(&text)[0];
    assert_eq!(&text[d.range.clone()], "\"3 * rows * hiden\\u0020\"");
}

/// The rmsnorm spec with the hidden size given as `pairs`, the size it is worked out from.
fn with_derived_hidden(derived: &str) -> String {
    valid_toml().replace("hidden = 4096", "pairs = 2048").replace("hidden = 5120", "pairs = 2560").replace("\n[[kernels.args]]\nname = \"out\"", &format!("\n[kernels.derived]\n{derived}\n\n[[kernels.args]]\nname = \"out\""))
}

#[test]
fn a_derived_size_is_worked_out_on_every_shape_from_its_own_sizes() {
    let text = with_derived_hidden("hidden = \"pairs * 2\"");
    let (spec, diagnostics) = parse_spec(&text);
    assert_eq!(describe(&text, &diagnostics), "");
    let kernel = &spec.unwrap().kernels[0];
    assert_eq!(kernel.derived.get("hidden").map(String::as_str), Some("pairs * 2"));
    let hidden = |shape: &Shape| sizes_of(kernel, shape).get("hidden").copied();
    assert_eq!(hidden(&kernel.shapes[1]), Some(expr::Value::Int(5120)));
    // A shape verification makes has its own: the two never disagree.
    let made = Shape::from([("rows".to_string(), 3), ("pairs".to_string(), 7)]);
    assert_eq!(hidden(&made), Some(expr::Value::Int(14)));
    let env = environment(kernel, &made, &|p| p.default);
    assert_eq!(env.get("hidden"), Some(&expr::Value::Int(14)), "scalars and lengths see it: {env:?}");
    // A shape that gives the size itself (a captured launch) keeps its number.
    let captured = Shape::from([("rows".to_string(), 3), ("pairs".to_string(), 7), ("hidden".to_string(), 15)]);
    assert_eq!(hidden(&captured), Some(expr::Value::Int(15)));
    // Rendered, it reads back the same.
    let rendered = render_spec(&parse_spec(&text).0.unwrap());
    assert!(rendered.contains("\n[kernels.derived]\nhidden = \"pairs * 2\"\n"), "{rendered}");
    assert_eq!(parse_spec(&rendered).0, parse_spec(&text).0);
}

#[test]
fn a_derived_size_of_a_parameter_a_cycle_or_a_broken_expression_is_an_error_where_it_is() {
    let message = |derived: &str| {
        let text = with_derived_hidden(derived);
        describe(&text, &diagnostics_of(&text))
    };
    let of_parameter = message("hidden = \"pairs * VEC\"");
    assert!(of_parameter.contains("`VEC` in derived size `hidden` is not a size (known: pairs, rows): a derived size is worked out from the shape's sizes alone\n    at `VEC`"), "{of_parameter}");
    let cycle = message("hidden = \"half * 2\"\nhalf = \"hidden // 2\"");
    assert!(cycle.contains("derived size `half` cannot be worked out on shape 1: it needs the derived size `hidden`, which cannot be worked out first (derived sizes may not name each other in a cycle)"), "{cycle}");
    let broken = message("hidden = \"pairs * \"");
    assert!(broken.starts_with("19:19 error: derived size `hidden`: expected a number, a name or `(`, found the end of the expression"), "{broken}");
    let zero = message("hidden = \"pairs // (rows - rows)\"");
    assert!(zero.contains("derived size `hidden` cannot be worked out on shape 1: "), "{zero}");
}

#[test]
fn the_default_configuration_is_checked_against_restrictions_and_limits() {
    let text = valid_toml()
        .replace("default = 256", "default = 1024")
        .replace("block = [\"RMSNORM_BLOCK_SIZE\"]", "block = [\"RMSNORM_BLOCK_SIZE\", \"2\"]")
        .replace("default = 1\n", "default = 8\n")
        .replace("grid = [\"rows\"]", "grid = [\"rows / 2\"]");
    insta::assert_snapshot!("default_configuration", describe(&text, &diagnostics_of(&text)));
}

#[test]
fn line_and_column_are_zero_based_utf8_bytes() {
    assert_eq!(line_column("ab\ncé\nx", 0), (0, 0));
    assert_eq!(line_column("ab\ncé\nx", 3), (1, 0));
    assert_eq!(line_column("ab\ncé\nx", 7), (2, 0));
    assert_eq!(line_column("ab\ncé\nx", 6), (1, 3));
}

// ---------------------------------------------------------------------------------------------
// T1

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/t1").join(name)
}

const HUB_FILES: [&str; 4] = ["convolution_milo.json", "dedispersion_milo.json", "gemm_milo.json", "hotspot_milo.json"];

fn load(name: &str) -> (String, serde_json::Value) {
    let text = std::fs::read_to_string(fixture(name)).unwrap();
    let json = serde_json::from_str(&text).unwrap();
    (text, json)
}

fn schema_validator() -> jsonschema::Validator {
    let (_, schema) = load("T1-input-schema-1.0.0.json");
    jsonschema::validator_for(&schema).unwrap()
}

/// Evaluates a T1 expression as a Python tuner would, with `ProblemSize` and parameter values;
/// `max(p)` of a parameter is its largest value.
fn eval_t1(text: &str, problem_size: &[i64], params: &[(String, Vec<i64>)], config: &[i64]) -> expr::Value {
    let mut rewritten = text.to_string();
    for (i, v) in problem_size.iter().enumerate() {
        rewritten = rewritten.replace(&format!("ProblemSize[{i}]"), &v.to_string());
    }
    for (name, values) in params {
        rewritten = rewritten.replace(&format!("max({name})"), &values.iter().max().unwrap().to_string());
    }
    let e = expr::parse(&rewritten).unwrap_or_else(|e| panic!("{rewritten}: {e}"));
    e.eval(&|n| params.iter().position(|(p, _)| p == n).map(|i| expr::Value::Int(config[i]))).unwrap()
}

/// The spec with every expression printed from its syntax tree, so that specs that differ only
/// in spacing and redundant parentheses compare equal.
fn canonical(mut spec: SpecFile) -> SpecFile {
    let print = |text: &mut String| {
        if let Ok(e) = expr::parse(text) {
            *text = e.to_string();
        }
    };
    for kernel in &mut spec.kernels {
        kernel.grid.iter_mut().chain(&mut kernel.block).chain(&mut kernel.restrictions).for_each(print);
        print(&mut kernel.shared_bytes);
        for arg in &mut kernel.args {
            arg.length.iter_mut().chain(&mut arg.value).for_each(print);
        }
        kernel.sol.bytes.iter_mut().chain(&mut kernel.sol.flops).for_each(print);
    }
    spec
}

fn t1_params(json: &serde_json::Value) -> Vec<(String, Vec<i64>)> {
    json["ConfigurationSpace"]["TuningParameters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["Name"].as_str().unwrap().to_string(), parse_python_values(p["Values"].as_str().unwrap()).unwrap()))
        .collect()
}

fn t1_default(p: &serde_json::Value) -> i64 {
    p["Default"].as_i64().or_else(|| p["Default"][0].as_i64()).unwrap()
}

/// Import, export, validate against the schema, and compare the tuning space with the original:
/// parameters, values, defaults, restrictions (evaluated on sampled configurations), sizes and
/// arguments. Then import the export: the spec must come back unchanged.
#[test]
fn t1_hub_files_round_trip_through_a_spec() {
    let validator = schema_validator();
    for name in HUB_FILES {
        let (text, original) = load(name);
        assert!(validator.is_valid(&original), "{name}: the fixture itself validates");
        let imported = import_t1(&text).unwrap();
        let kernel_name = original["KernelSpecification"]["KernelName"].as_str().unwrap();
        let exported = export_t1(&imported.spec, kernel_name).unwrap();
        let out = &exported.json;
        let errors: Vec<String> = validator.iter_errors(out).map(|e| format!("{} at {}", e, e.instance_path)).collect();
        assert!(errors.is_empty(), "{name}: {errors:?}");

        // Parameters: names, order, values and defaults.
        let (orig_params, out_params) = (t1_params(&original), t1_params(out));
        assert_eq!(orig_params, out_params, "{name}");
        let defaults = |j: &serde_json::Value| j["ConfigurationSpace"]["TuningParameters"].as_array().unwrap().iter().map(t1_default).collect::<Vec<_>>();
        assert_eq!(defaults(&original), defaults(out), "{name}");

        // Restrictions: same count, same verdict on the default and on sampled configurations.
        let conditions = |j: &serde_json::Value| -> Vec<(String, Vec<String>)> {
            j["ConfigurationSpace"]["Conditions"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| (c["Expression"].as_str().unwrap().to_string(), c["Parameters"].as_array().unwrap().iter().map(|p| p.as_str().unwrap().to_string()).collect()))
                .collect()
        };
        let (orig_conditions, out_conditions) = (conditions(&original), conditions(out));
        assert_eq!(orig_conditions.len(), out_conditions.len(), "{name}");
        let problem_size: Vec<i64> = original["KernelSpecification"]["ProblemSize"].as_array().unwrap().iter().map(|v| v.as_i64().unwrap()).collect();
        let mut configs = vec![defaults(&original)];
        let mut seed = 0x9e3779b97f4a7c15u64;
        for _ in 0..2000 {
            configs.push(
                orig_params
                    .iter()
                    .map(|(_, values)| {
                        seed ^= seed << 13;
                        seed ^= seed >> 7;
                        seed ^= seed << 17;
                        values[(seed % values.len() as u64) as usize]
                    })
                    .collect(),
            );
        }
        for ((orig_expr, orig_listed), (out_expr, out_listed)) in orig_conditions.iter().zip(&out_conditions) {
            for listed in orig_listed {
                assert!(out_listed.contains(listed), "{name}: {out_expr} lists {out_listed:?}, lacks {listed}");
            }
            for config in &configs {
                let a = eval_t1(orig_expr, &problem_size, &orig_params, config).is_true();
                let b = eval_t1(out_expr, &problem_size, &orig_params, config).is_true();
                assert_eq!(a, b, "{name}: `{orig_expr}` vs `{out_expr}` on {config:?}");
            }
        }

        // Sizes, launch geometry, kernel identity.
        let ks = |j: &serde_json::Value, key: &str| j["KernelSpecification"][key].clone();
        assert_eq!(ks(&original, "ProblemSize"), ks(out, "ProblemSize"), "{name}");
        assert_eq!(ks(&original, "LocalSize"), ks(out, "LocalSize"), "{name}");
        for key in ["GridDivX", "GridDivY", "GridDivZ", "KernelName", "KernelFile", "CompilerOptions", "SharedMemory"] {
            assert_eq!(ks(&original, key), ks(out, key), "{name}: {key}");
        }

        // Arguments: every field the format defines, sizes compared by value.
        let (orig_args, out_args) = (ks(&original, "Arguments"), ks(out, "Arguments"));
        let (orig_args, out_args) = (orig_args.as_array().unwrap(), out_args.as_array().unwrap());
        assert_eq!(orig_args.len(), out_args.len(), "{name}");
        let defaults_now = defaults(&original);
        for (a, b) in orig_args.iter().zip(out_args) {
            for key in ["Name", "Type", "MemoryType", "AccessType", "FillType", "FillValue", "Output"] {
                assert_eq!(a[key], b[key], "{name}: argument {} {key}", a["Name"]);
            }
            let size = |v: &serde_json::Value| match v {
                serde_json::Value::String(s) => Some(eval_t1(s, &problem_size, &orig_params, &defaults_now)),
                serde_json::Value::Number(n) => Some(expr::Value::Int(n.as_i64().unwrap())),
                _ => None,
            };
            assert_eq!(size(&a["Size"]), size(&b["Size"]), "{name}: argument {} Size", a["Name"]);
        }

        // Importing the export gives the same spec, up to the spelling of expressions.
        let again = import_t1(&exported.json.to_string()).unwrap();
        assert_eq!(canonical(again.spec), canonical(imported.spec), "{name}");
    }
}

#[test]
fn t1_import_reports_what_does_not_map_by_json_path() {
    let mut report = String::new();
    for name in HUB_FILES {
        let (text, _) = load(name);
        let imported = import_t1(&text).unwrap();
        report.push_str(&format!("== {name}\n"));
        for note in &imported.notes {
            report.push_str(&format!("{}: {}\n", note.path, note.message));
        }
        let rendered = render_spec(&imported.spec);
        let (_, diagnostics) = parse_spec(&rendered);
        for d in diagnostics {
            report.push_str(&format!("spec {}:{} {}: {}\n", d.line + 1, d.column + 1, d.severity.as_str(), d.message));
        }
    }
    insta::assert_snapshot!("t1_import_notes", report);
}

#[test]
fn t1_imported_hotspot_reads_as_expected() {
    let (text, _) = load("hotspot_milo.json");
    let imported = import_t1(&text).unwrap();
    let kernel = &imported.spec.kernels[0];
    insta::assert_snapshot!("t1_hotspot_spec", render_spec(&imported.spec));
    assert_eq!(kernel.grid, ["ceil_div(problem_size_0, block_size_x * tile_size_x)", "ceil_div(problem_size_1, block_size_y * tile_size_y)"]);
    assert_eq!(kernel.block, ["block_size_x", "block_size_y"]);
    let block_x = kernel.params.iter().find(|p| p.name == "block_size_x").unwrap();
    assert_eq!(block_x.values[..6], [1, 2, 4, 8, 16, 32]);
    assert_eq!(block_x.values.len(), 5 + 32);
    assert_eq!(kernel.params.iter().find(|p| p.name == "block_size_y").unwrap().values, [1, 2, 4, 8, 16, 32]);
}

#[test]
fn t1_opencl_global_size_is_divided_by_the_block() {
    let text = r#"{"ConfigurationSpace": {"TuningParameters": [{"Name": "bx", "Type": "int", "Values": "[32, 64]", "Default": 32}]},
        "KernelSpecification": {"Language": "CUDA", "KernelName": "k", "KernelFile": "k.cu", "GlobalSizeType": "OpenCL",
        "ProblemSize": [1000], "LocalSize": {"X": "bx"}, "GlobalSize": {"X": "ProblemSize[0]"},
        "Arguments": [{"Name": "x", "Type": "float4", "MemoryType": "Vector", "Size": 4}]}}"#;
    let imported = import_t1(text).unwrap();
    assert_eq!(imported.spec.kernels[0].grid, ["ceil_div(problem_size_0, bx)"]);
    assert!(imported.spec.kernels[0].args.is_empty());
    assert_eq!(imported.notes[0].path, "$.KernelSpecification.Arguments[0].Type");
    assert!(imported.notes[0].message.contains("`float4` has no cutune dtype"));
}

#[test]
fn t1_values_forms() {
    assert_eq!(parse_python_values("[16, 32, 64]"), Ok(vec![16, 32, 64]));
    assert_eq!(parse_python_values("[2**i for i in range(0, 6)]"), Ok(vec![1, 2, 4, 8, 16, 32]));
    assert_eq!(parse_python_values("[1, 2] + list(range(32, 96+1, 32))"), Ok(vec![1, 2, 32, 64, 96]));
    assert_eq!(parse_python_values("range(3)"), Ok(vec![0, 1, 2]));
    assert_eq!(parse_python_values("[4, 3, 2, ]"), Ok(vec![4, 3, 2]));
    assert_eq!(parse_python_values("list(range(10, 0, -4))"), Ok(vec![10, 6, 2]));
    assert!(parse_python_values("[0.5, 1]").unwrap_err().contains("needs an integer"));
    assert!(parse_python_values("np.arange(4)").unwrap_err().contains("is not a form cutune reads"));
    assert_eq!(parse_python_values("[]"), Err("no values".to_string()));
}

#[test]
fn t1_export_of_a_native_spec_validates_and_names_its_losses() {
    let (spec, _) = parse_spec(&valid_toml());
    let spec = spec.unwrap();
    let exported = export_t1(&spec, "rmsnorm_kernel").unwrap();
    let validator = schema_validator();
    assert!(validator.is_valid(&exported.json), "{:#}", exported.json);
    let mut report = format!("{:#}\n", exported.json);
    for note in &exported.notes {
        report.push_str(&format!("{}: {}\n", note.path, note.message));
    }
    insta::assert_snapshot!("t1_export_rmsnorm", report);
    assert!(export_t1(&spec, "nope").unwrap_err().to_string().contains("no kernel `nope` in the spec (it has rmsnorm_kernel)"));
}

#[test]
fn t1_import_refuses_what_is_not_t1() {
    assert!(import_t1("{").unwrap_err().to_string().starts_with("not JSON"));
    assert!(import_t1("[]").unwrap_err().to_string().contains("not a JSON object"));
    assert!(import_t1(r#"{"KernelSpecification": {}}"#).unwrap_err().to_string().contains("KernelName"));
}

#[test]
fn tolerances_default_per_dtype_and_the_last_override_wins() {
    let verify = VerifySpec {
        tolerances: vec![
            Tolerance { dtype: Dtype::F16, atol: 1.0, rtol: 1.0 },
            Tolerance { dtype: Dtype::F16, atol: 0.5, rtol: 0.25 },
        ],
        deterministic: true,
        contiguous: None,
    };
    assert_eq!((verify.tolerance(Dtype::F16).atol, verify.tolerance(Dtype::F16).rtol), (0.5, 0.25));
    assert_eq!(verify.tolerance(Dtype::F32), Dtype::F32.default_tolerance());
    assert_eq!(Dtype::I32.default_tolerance().atol, 0.0);
}

#[test]
fn templatizing_again_keeps_the_entry_and_its_baseline_and_updates_the_parameters() {
    let (file, _) = parse_spec(include_str!("../../../tests/fixtures/spec/space.cutune.toml"));
    let mut file = file.unwrap();
    file.kernels[0].shapes[0].insert("rows".into(), 77);
    let mut scaffold = file.kernels[0].clone();
    scaffold.baseline = Baseline { sha256: sha256_hex("templatized"), source: "templatized".into() };
    scaffold.shapes.clear();
    scaffold.params.retain(|p| p.name != "VEC");
    scaffold.params.push(ParamSpec { name: "UNROLL".into(), kind: ParamKind::Define, default: 1, values: vec![1, 2], origin: String::new() });

    let merged = with_kernel(file.clone(), scaffold).kernels.remove(0);

    assert_eq!(merged.baseline, file.kernels[0].baseline);
    assert_eq!(merged.shapes[0]["rows"], 77);
    let names: Vec<&str> = merged.params.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["BLOCK", "fast_math", "UNROLL"]);
}

#[test]
fn tuning_sets_the_device_sizes_of_every_shape_to_the_measuring_gpu() {
    let mut kernel = crate::spec::parse_spec(include_str!("../../../examples/block_reduce.cutune.toml")).0.expect("the example parses").kernels.remove(0);
    kernel.shapes = vec![Shape::from([("n".to_string(), 4096), ("sm_count".to_string(), 132), ("clock_khz".to_string(), 1_980_000)]), Shape::from([("n".to_string(), 17)])];
    let on_smaller = with_device_sizes(&kernel, &[("sm_count", 114), ("clock_khz", 1_755_000)]);
    assert_eq!(on_smaller.shapes[0], Shape::from([("n".to_string(), 4096), ("sm_count".to_string(), 114), ("clock_khz".to_string(), 1_755_000)]));
    // A shape that does not name a device size is left alone, and so is a count the device
    // did not report.
    assert_eq!(on_smaller.shapes[1], kernel.shapes[1]);
    assert_eq!(with_device_sizes(&kernel, &[("sm_count", 0), ("clock_khz", 0)]).shapes, kernel.shapes);
}

/// The valid spec with its `in` buffer made a texture: `[[kernels.args]]` with `texture`.
fn with_texture(texture: &str, dtype: &str) -> String {
    valid_toml().replace("name = \"in\"\ndtype = \"f16\"\nlength = \"rows * hidden\"\nrole = \"input\"", &format!("name = \"in\"\ndtype = \"{dtype}\"\ntexture = {texture}"))
}

#[test]
fn a_texture_argument_reads_back_and_renders_its_sampling() {
    let text = with_texture(r#"{ extent = ["hidden", "rows"], channels = 4, filter = "linear", address = "wrap", normalized_coords = true, read = "normalized_float" }"#, "u8");
    let (spec, diagnostics) = parse_spec(&text);
    assert_eq!(describe(&text, &diagnostics), "");
    let spec = spec.unwrap();
    let texture = spec.kernels[0].args[1].texture.clone().unwrap();
    assert_eq!(texture.extent, ["hidden", "rows"]);
    assert_eq!((texture.channels, texture.filter, texture.address, texture.read), (4, TextureFilter::Linear, TextureAddress::Wrap, TextureRead::NormalizedFloat));
    let rendered = render_spec(&spec);
    assert!(rendered.contains(r#"texture = { extent = ["hidden", "rows"], channels = 4, filter = "linear", address = "wrap", normalized_coords = true, read = "normalized_float" }"#), "{rendered}");
    assert_eq!(parse_spec(&rendered).0, Some(spec));
    // Defaults are left out: one float channel, point sampling, clamped, texel coordinates.
    let plain = with_texture(r#"{ extent = ["hidden"] }"#, "f32");
    let rendered = render_spec(&parse_spec(&plain).0.unwrap());
    assert!(rendered.contains("texture = { extent = [\"hidden\"] }\n"), "{rendered}");
}

#[test]
fn textures_cuda_cannot_make_are_errors_that_say_why() {
    let cases = [
        (r#"{ extent = ["hidden"], channels = 3 }"#, "f32", "texture `in` has 3 channels; CUDA textures have 1, 2 or 4"),
        (r#"{ extent = ["hidden", "hidden", "5"], layout = "cubemap" }"#, "f32", "texture `in` is a cube map, which has 6 faces: its extent is [w, w, 6]"),
        (r#"{ extent = ["hidden", "rows"], layout = "linear" }"#, "f32", "texture `in` has 2 extents; a linear texture has 1 to 1"),
        (r#"{ extent = ["hidden"] }"#, "f64", "texture `in` has texels of F64; CUDA textures hold f16, f32 or 8-, 16- and 32-bit integers"),
        (r#"{ extent = ["hidden"], read = "normalized_float" }"#, "i32", "texture `in` reads normalized floats, which only 8- and 16-bit integer texels have"),
        (r#"{ extent = ["hidden"], filter = "linear" }"#, "u8", "texture `in` filters linearly, which needs float texels or read = \"normalized_float\""),
        (r#"{ extent = ["?"] }"#, "f32", "extent x of texture `in` is unknown"),
    ];
    for (texture, dtype, expected) in cases {
        let text = with_texture(texture, dtype);
        let found = describe(&text, &diagnostics_of(&text));
        assert!(found.contains(expected), "{texture} {dtype}: {found}");
    }
}

#[test]
fn what_the_spec_has_no_number_for_is_reported_with_where_the_program_makes_it() {
    // The sizes come from a tensor and `eps` from Python, as in a PyTorch op: no shape gives
    // `rows` or `hidden`, and `unknown` says where the program makes each.
    let text = valid_toml()
        .replace("[[kernels.shapes]]\nrows = 8192\nhidden = 4096\n\n[[kernels.shapes]]\nrows = 77\nhidden = 5120\n", "[[kernels.shapes]]\n")
        .replace("value = \"1e-6\"", "value = \"?\"")
        .replace(
            "[[kernels.args]]\nname = \"out\"",
            "[kernels.unknown]\nrows = \"the program makes it as `x.size(0)` in `rmsnorm_` (ops.cpp:12)\"\neps = \"it is the parameter `eps` of `rmsnorm_` (ops.cpp:9)\"\n\n[[kernels.args]]\nname = \"out\"",
        );
    let (spec, diagnostics) = parse_spec(&text);
    assert_eq!(spec.as_ref().map(|s| s.kernels[0].unknown.len()), Some(2));
    let messages: Vec<&str> = diagnostics.iter().map(|d| d.message.as_str()).collect();
    let grid = messages.iter().find(|m| m.starts_with("grid extent x:")).unwrap_or_else(|| panic!("{}", describe(&text, &diagnostics)));
    assert!(
        grid.contains("`rows` is a size no shape gives (the program makes it as `x.size(0)` in `rmsnorm_` (ops.cpp:12)): write `rows = …` in each `[[kernels.shapes]]`, or capture a launch (`cutune profile --kernel rmsnorm_kernel -- CMD`)"),
        "{grid}"
    );
    let eps = messages.iter().find(|m| m.starts_with("value of scalar argument `eps`")).unwrap();
    assert!(eps.starts_with("value of scalar argument `eps` is unknown (it is the parameter `eps` of `rmsnorm_` (ops.cpp:9)): write a number"), "{eps}");
    // `hidden` has no entry: the message it always had.
    assert!(messages.contains(&"value of scalar argument `hidden`: `hidden` has no value (scalars may use sizes and parameters, not other scalars)"), "{}", describe(&text, &diagnostics));

    // Rendered after the shapes, and read back the same.
    let spec = spec.unwrap();
    let rendered = render_spec(&spec);
    assert!(rendered.contains("[[kernels.shapes]]\n\n[kernels.unknown]\neps = \"it is the parameter"), "{rendered}");
    assert_eq!(parse_spec(&rendered).0, Some(spec));
}

/// The rmsnorm spec with its `eps` scalar replaced by a struct passed by value.
fn with_struct(fields: &str) -> String {
    valid_toml().replace(
        "[[kernels.args]]\nname = \"eps\"\ndtype = \"f32\"\nvalue = \"1e-6\"\n",
        &format!("[[kernels.args]]\nname = \"params\"\nstruct = \"NormParams\"\n{fields}"),
    )
}

#[test]
fn a_struct_argument_reads_renders_and_reads_back() {
    let text = with_struct(
        "\n[[kernels.args.fields]]\nname = \"eps\"\ndtype = \"f32\"\nvalue = \"1e-6\"\n\n[[kernels.args.fields]]\nname = \"stats.sum\"\ndtype = \"f32\"\nlength = \"rows\"\nrole = \"output\"\n",
    );
    let (spec, diagnostics) = parse_spec(&text);
    assert_eq!(describe(&text, &diagnostics), "");
    let spec = spec.unwrap();
    let params = &spec.kernels[0].args[3];
    assert_eq!((params.struct_type.as_deref(), params.element, params.fields.len()), (Some("NormParams"), None, 2));
    assert_eq!(spec.kernels[0].leaf_args().map(|a| a.name.as_str()).collect::<Vec<_>>(), ["out", "in", "hidden", "eps", "stats.sum"]);
    let rendered = render_spec(&spec);
    assert!(rendered.contains("name = \"params\"\nstruct = \"NormParams\"\n\n[[kernels.args.fields]]\nname = \"eps\"\ndtype = \"f32\""), "{rendered}");
    assert_eq!(parse_spec(&rendered).0.as_ref(), Some(&spec));
}

#[test]
fn a_struct_field_is_checked_as_an_argument_and_named_as_the_structs() {
    let text = with_struct("\n[[kernels.args.fields]]\nname = \"stats.sum\"\ndtype = \"f32\"\nlength = \"rows * width\"\n\n[[kernels.args.fields]]\nname = \"eps\"\nvalue = \"?\"\n");
    let described = describe(&text, &diagnostics_of(&text));
    assert!(described.contains("buffer `params.stats.sum` has no role"), "{described}");
    assert!(described.contains("length of field `stats.sum` of `params`"), "{described}");
    assert!(described.contains("`width`"), "{described}");
    assert!(described.contains("field `eps` of `params` has no dtype"), "{described}");
    assert!(described.contains("value of field `eps` of `params` is unknown"), "{described}");
}

#[test]
fn a_struct_has_only_fields_each_a_member_once() {
    let text = with_struct("dtype = \"f32\"\n\n[[kernels.args.fields]]\nname = \"eps\"\ndtype = \"f32\"\nvalue = \"1\"\n\n[[kernels.args.fields]]\nname = \"eps\"\ndtype = \"f32\"\nvalue = \"2\"\n\n[[kernels.args.fields]]\nname = \"x->y\"\ndtype = \"f32\"\nvalue = \"2\"\n");
    let diagnostics = diagnostics_of(&text);
    let described = describe(&text, &diagnostics);
    assert!(described.contains("struct `params` has a dtype: a struct has only its fields"), "{described}");
    assert!(described.contains("field `eps` of `params` is given twice"), "{described}");
    assert!(described.contains("field `x->y` of `params` is not a member"), "{described}");
    assert_eq!(diagnostics.iter().filter(|d| d.severity == Severity::Error).count(), 3, "{described}");
    assert!(with_struct("").contains("struct = \"NormParams\""));
    assert_eq!(describe(&with_struct(""), &diagnostics_of(&with_struct(""))), "", "a struct the kernel reads nothing of is all zeros");
}
