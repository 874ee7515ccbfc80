//! Writes a spec as readable TOML: fields in the model's order, one table per argument and
//! parameter, the baseline as a `'''` block. The output is deterministic, and reading it back
//! with `parse_spec` gives the same `SpecFile`.

use std::fmt::Write;

use super::model::*;

/// The spec as TOML text, with a header comment naming the reference documentation.
pub fn render_spec(spec: &SpecFile) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# cutune tuning spec: how to run, check and bound the kernels of {}.", spec.source);
    let _ = writeln!(out, "# Expressions and fields: docs/spec.md. `{UNKNOWN}` marks a value still to be filled in.");
    let _ = writeln!(out, "version = {}", spec.version);
    let _ = writeln!(out, "source = {}", string(&spec.source));
    if spec.kernels.is_empty() {
        out.push_str("kernels = []\n");
    }
    for kernel in &spec.kernels {
        render_kernel(&mut out, kernel);
    }
    out
}

fn render_kernel(out: &mut String, kernel: &KernelSpec) {
    let _ = writeln!(out, "\n[[kernels]]");
    let _ = writeln!(out, "name = {}", string(&kernel.name));
    if !kernel.template_args.is_empty() {
        let _ = writeln!(out, "template_args = {}", string_array(&kernel.template_args));
    }
    let _ = writeln!(out, "grid = {}", string_array(&kernel.grid));
    let _ = writeln!(out, "block = {}", string_array(&kernel.block));
    let _ = writeln!(out, "shared_bytes = {}", string(&kernel.shared_bytes));
    if kernel.cooperative {
        let _ = writeln!(out, "cooperative = true");
    }
    if !kernel.compiler_options.is_empty() {
        let _ = writeln!(out, "compiler_options = {}", string_array(&kernel.compiler_options));
    }
    if !kernel.restrictions.is_empty() {
        out.push_str("restrictions = [\n");
        for r in &kernel.restrictions {
            let _ = writeln!(out, "  {},", string(r));
        }
        out.push_str("]\n");
    }
    // Arrays of tables cannot be empty, so empty lists stay inline in the kernel's table.
    for (key, empty) in [("shapes", kernel.shapes.is_empty()), ("args", kernel.args.is_empty()), ("params", kernel.params.is_empty())] {
        if empty {
            let _ = writeln!(out, "{key} = []");
        }
    }
    for shape in &kernel.shapes {
        out.push_str("\n[[kernels.shapes]]\n");
        for (name, value) in shape {
            let _ = writeln!(out, "{} = {value}", key(name));
        }
    }
    if !kernel.derived.is_empty() {
        out.push_str("\n[kernels.derived]\n");
        for (name, expression) in &kernel.derived {
            let _ = writeln!(out, "{} = {}", key(name), string(expression));
        }
    }
    if !kernel.unknown.is_empty() {
        out.push_str("\n[kernels.unknown]\n");
        for (name, made) in &kernel.unknown {
            let _ = writeln!(out, "{} = {}", key(name), string(made));
        }
    }
    if !kernel.chosen.is_empty() {
        out.push_str("\n[kernels.chosen]\n");
        for (name, why) in &kernel.chosen {
            let _ = writeln!(out, "{} = {}", key(name), string(why));
        }
    }
    for arg in &kernel.args {
        render_arg(out, arg);
    }
    for param in &kernel.params {
        out.push_str("\n[[kernels.params]]\n");
        let _ = writeln!(out, "name = {}", string(&param.name));
        let _ = writeln!(out, "kind = {}", string(param_kind(param.kind)));
        let _ = writeln!(out, "default = {}", param.default);
        let values: Vec<String> = param.values.iter().map(i64::to_string).collect();
        let _ = writeln!(out, "values = [{}]", values.join(", "));
        if !param.origin.is_empty() {
            let _ = writeln!(out, "origin = {}", string(&param.origin));
        }
    }
    out.push_str("\n[kernels.verify]\n");
    let _ = writeln!(out, "deterministic = {}", kernel.verify.deterministic);
    if let Some(contiguous) = &kernel.verify.contiguous {
        let _ = writeln!(out, "contiguous = {}", string(contiguous));
    }
    for tolerance in &kernel.verify.tolerances {
        out.push_str("\n[[kernels.verify.tolerances]]\n");
        let _ = writeln!(out, "dtype = {}", string(tolerance.dtype.name()));
        let _ = writeln!(out, "atol = {}", float(tolerance.atol));
        let _ = writeln!(out, "rtol = {}", float(tolerance.rtol));
    }
    if kernel.sol != SolSpec::default() {
        out.push_str("\n[kernels.sol]\n");
        if let Some(bytes) = &kernel.sol.bytes {
            let _ = writeln!(out, "bytes = {}", string(bytes));
        }
        if let Some(flops) = &kernel.sol.flops {
            let _ = writeln!(out, "flops = {}", string(flops));
        }
        if let Some(compute) = kernel.sol.compute {
            let _ = writeln!(out, "compute = {}", string(compute.as_str()));
        }
    }
    for capture in &kernel.captures {
        out.push_str("\n[[kernels.captures]]\n");
        let _ = writeln!(out, "file = {}", string(&capture.file));
        let sizes: Vec<String> = capture.shape.iter().map(|(name, value)| format!("{} = {value}", key(name))).collect();
        let _ = writeln!(out, "shape = {{ {} }}", sizes.join(", "));
    }
    out.push_str("\n[kernels.baseline]\n");
    let _ = writeln!(out, "sha256 = {}", string(&kernel.baseline.sha256));
    let _ = writeln!(out, "source = {}", block_string(&kernel.baseline.source));
}

fn render_arg(out: &mut String, arg: &ArgSpec) {
    out.push_str("\n[[kernels.args]]\n");
    render_arg_keys(out, arg);
    if let Some(struct_type) = &arg.struct_type {
        let _ = writeln!(out, "struct = {}", string(struct_type));
    }
    for field in &arg.fields {
        out.push_str("\n[[kernels.args.fields]]\n");
        render_arg_keys(out, field);
    }
}

/// An argument's or a field's own keys.
fn render_arg_keys(out: &mut String, arg: &ArgSpec) {
    let _ = writeln!(out, "name = {}", string(&arg.name));
    if let Some(dtype) = arg.element {
        let _ = writeln!(out, "dtype = {}", string(dtype.name()));
    }
    if let Some(length) = &arg.length {
        let _ = writeln!(out, "length = {}", string(length));
    }
    if let Some(role) = arg.role {
        let _ = writeln!(out, "role = {}", word(&role));
    }
    if let Some(init) = &arg.init {
        let init = match init {
            Init::Uniform { low, high } => format!("{{ dist = \"uniform\", low = {}, high = {} }}", float(*low), float(*high)),
            Init::Normal { mean, std } => format!("{{ dist = \"normal\", mean = {}, std = {} }}", float(*mean), float(*std)),
            Init::Integers { low, high } => format!("{{ dist = \"integers\", low = {low}, high = {high} }}"),
            Init::Mixed { large, small } => format!("{{ dist = \"mixed\", large = {}, small = {} }}", float(*large), float(*small)),
        };
        let _ = writeln!(out, "init = {init}");
    }
    if let Some(extent) = &arg.indexes {
        let _ = writeln!(out, "indexes = {}", string(extent));
    }
    if let Some(value) = &arg.value {
        let _ = writeln!(out, "value = {}", string(value));
    }
    if let Some(texture) = &arg.texture {
        let _ = writeln!(out, "texture = {}", texture_table(texture));
    }
    if let Some(compare) = arg.compare {
        let _ = writeln!(out, "compare = {}", word(&compare));
    }
}

/// `{ extent = ["w", "h"], channels = 4, filter = "linear", ... }`: the fields that differ from
/// the defaults, besides the extent.
fn texture_table(texture: &TextureSpec) -> String {
    let mut fields = vec![format!("extent = {}", string_array(&texture.extent))];
    if texture.layout != TextureLayout::default() {
        fields.push(format!("layout = {}", word(&texture.layout)));
    }
    if texture.channels != 1 {
        fields.push(format!("channels = {}", texture.channels));
    }
    if texture.filter != TextureFilter::default() {
        fields.push(format!("filter = {}", word(&texture.filter)));
    }
    if texture.address != TextureAddress::default() {
        fields.push(format!("address = {}", word(&texture.address)));
    }
    if texture.normalized_coords {
        fields.push("normalized_coords = true".to_string());
    }
    if texture.read != TextureRead::default() {
        fields.push(format!("read = {}", word(&texture.read)));
    }
    format!("{{ {} }}", fields.join(", "))
}

/// A unit enum's TOML string, its serde name (`Role::InOut` is `"inout"`), so that what is
/// written reads back as the same value.
fn word<T: serde::Serialize>(value: &T) -> String {
    toml::Value::try_from(value).map(|v| v.to_string()).unwrap_or_default()
}


fn param_kind(kind: ParamKind) -> &'static str {
    match kind {
        ParamKind::Define => "define",
        ParamKind::Template => "template",
        ParamKind::FastMath => "fast_math",
        ParamKind::MaxRegisters => "max_registers",
        ParamKind::Launch => "launch",
    }
}

/// A TOML string literal: a literal `'…'` string when the text allows, else a basic string.
fn string(text: &str) -> String {
    toml::Value::String(text.to_string()).to_string()
}

fn string_array(items: &[String]) -> String {
    let items: Vec<String> = items.iter().map(|s| string(s)).collect();
    format!("[{}]", items.join(", "))
}

fn float(x: f64) -> String {
    toml::Value::Float(x).to_string()
}

fn key(name: &str) -> String {
    let bare = !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if bare { name.to_string() } else { string(name) }
}

/// Source code as a multi-line literal string, which needs no escapes, when it can be one: no
/// `'''` inside, no control characters other than tab and newline, and not ending in `'`
/// (which would merge with the closing delimiter). Otherwise an escaped basic string.
fn block_string(text: &str) -> String {
    let literal_ok = !text.contains("'''")
        && !text.ends_with('\'')
        && text.chars().all(|c| c == '\n' || c == '\t' || !c.is_control());
    if literal_ok {
        // The newline after the opening delimiter is not part of the value.
        format!("'''\n{text}'''")
    } else {
        string(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The serde name of a unit enum variant.
    fn serde_name<T: serde::Serialize>(value: &T) -> String {
        match toml::Value::try_from(value) {
            Ok(toml::Value::String(s)) => s,
            other => panic!("not a unit variant: {other:?}"),
        }
    }

    /// The hand-written names are the ones deserialisation reads.
    #[test]
    fn names_match_serde() {
        for d in [Dtype::F16, Dtype::Bf16, Dtype::F32, Dtype::F64, Dtype::Fp8e4m3, Dtype::Fp8e5m2, Dtype::I8, Dtype::I16, Dtype::I32, Dtype::I64, Dtype::U8, Dtype::U16, Dtype::U32, Dtype::U64] {
            assert_eq!(d.name(), serde_name(&d));
        }
        for k in [ParamKind::Define, ParamKind::Template, ParamKind::FastMath, ParamKind::MaxRegisters, ParamKind::Launch] {
            assert_eq!(param_kind(k), serde_name(&k));
        }
        for r in [Role::Input, Role::Output, Role::InOut] {
            let mut out = String::new();
            render_arg(&mut out, &ArgSpec { name: "x".into(), element: Some(Dtype::F32), role: Some(r), ..ArgSpec::default() });
            assert!(out.contains(&format!("role = \"{}\"", serde_name(&r))), "{out}");
        }
    }
}
