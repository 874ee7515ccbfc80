//! Reads a spec file and checks it, reporting every problem at its exact place in the TOML text.
//!
//! Two parsers run over the text: `toml` deserialises it into the model (its errors carry spans,
//! and `deny_unknown_fields` catches misspelt keys), and `toml_edit` keeps the document tree
//! with the span of every value, so the semantic checks can point inside the file, down to the
//! offending name inside an expression string.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;
use std::ops::Range;

use sha2::{Digest, Sha256};
use toml_edit::{Document, Item};

use super::expr::{self, Expr, Value};
use super::model::*;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
    Information,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Information => "information",
        }
    }
}

/// One problem in a spec file. `range` is in bytes of the TOML text; `line` and `column` are the
/// 0-based position of its start (column in UTF-8 bytes).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct SpecDiagnostic {
    pub severity: Severity,
    pub range: Range<usize>,
    pub line: u32,
    pub column: u32,
    pub message: String,
    /// For a `?`: the value the message suggests, which an editor can offer to write.
    pub suggestion: Option<String>,
}

/// Parses and checks a spec. The model comes back whenever the TOML deserialises, even when
/// semantic checks found errors; the diagnostics are sorted by position.
pub fn parse_spec(text: &str) -> (Option<SpecFile>, Vec<SpecDiagnostic>) {
    let mut checker = Checker { text, doc: None, diagnostics: Vec::new() };
    let doc = match Document::parse(text) {
        Ok(doc) => doc,
        Err(e) => {
            checker.push(Severity::Error, e.span().unwrap_or(0..0), first_line(e.message()));
            return (None, checker.diagnostics);
        }
    };
    let spec = match toml::from_str::<SpecFile>(text) {
        Ok(spec) => spec,
        Err(e) => {
            let message = first_line(e.message());
            // The scaffold writes `?` where it could not infer an enumerated value (a dtype, a role).
            let message = if message.starts_with("unknown variant `?`") {
                format!("this value is unknown (`?`) and must be filled in: {message}")
            } else {
                message
            };
            checker.push(Severity::Error, e.span().unwrap_or(0..0), message);
            return (None, checker.diagnostics);
        }
    };
    checker.doc = Some(doc);
    checker.check_file(&spec);
    let mut diagnostics = checker.diagnostics;
    diagnostics.sort_by_key(|d| (d.range.start, d.severity));
    (Some(spec), diagnostics)
}

fn first_line(message: &str) -> String {
    message.trim().lines().next().unwrap_or("").to_string()
}

/// The 0-based line and UTF-8 byte column of `offset` in `text`.
pub fn line_column(text: &str, offset: usize) -> (u32, u32) {
    let before = &text.as_bytes()[..offset.min(text.len())];
    let line = before.iter().filter(|&&b| b == b'\n').count();
    let line_start = before.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    (line as u32, (before.len() - line_start) as u32)
}

/// One step of a path into the TOML document.
#[derive(Clone, Copy)]
enum Seg<'a> {
    Key(&'a str),
    Index(usize),
}

use Seg::{Index as I, Key as K};

struct Checker<'t> {
    text: &'t str,
    doc: Option<Document<&'t str>>,
    diagnostics: Vec<SpecDiagnostic>,
}

/// The names an expression of one kernel may use, by what they are.
struct Scope<'k> {
    sizes: BTreeSet<&'k str>,
    params: BTreeSet<&'k str>,
    scalars: BTreeSet<&'k str>,
    /// Sizes no shape gives and unknown scalars, with where the program makes each.
    unknown: &'k BTreeMap<String, String>,
    /// The kernel's name, for the capture that would give them.
    kernel: &'k str,
}

impl Scope<'_> {
    fn contains(&self, name: &str) -> bool {
        self.sizes.contains(name) || self.params.contains(name) || self.scalars.contains(name) || name == BLOCKS_PER_SM
    }
}

/// An expression field of a kernel: where it is and what to call it in messages.
struct Field<'p> {
    path: Vec<Seg<'p>>,
    kind: FieldKind,
    what: String,
    example: String,
    /// Where the program makes the value, when the spec's `unknown` says (scalars).
    made: Option<&'p str>,
}

/// What an expression field must evaluate to.
#[derive(Clone, Copy, PartialEq, Eq)]
enum FieldKind {
    /// A grid or block extent: an integer >= 1.
    Extent,
    /// A buffer length: an integer >= 1.
    Length,
    /// A scalar argument: any number.
    Scalar,
    /// True for every configuration the search may try.
    Restriction,
    /// Shared memory bytes, SOL bytes and flops: a number >= 0.
    Amount,
}

impl<'t> Checker<'t> {
    fn push(&mut self, severity: Severity, range: Range<usize>, message: impl Into<String>) {
        let (line, column) = line_column(self.text, range.start);
        self.diagnostics.push(SpecDiagnostic { severity, range, line, column, message: message.into(), suggestion: None });
    }

    /// The span of the value at `path`, or of the deepest table on the way when the key is absent.
    fn span(&self, path: &[Seg]) -> Range<usize> {
        let Some(doc) = &self.doc else { return 0..0 };
        let mut item: &Item = doc.as_item();
        let mut best = 0..0;
        for seg in path {
            let next = match seg {
                Seg::Key(k) => item.get(*k),
                Seg::Index(i) => item.get(*i),
            };
            match next {
                Some(next) => {
                    item = next;
                    if let Some(span) = item.span() {
                        best = span;
                    }
                }
                None => break,
            }
        }
        best
    }

    fn at(&mut self, severity: Severity, path: &[Seg], message: impl Into<String>) {
        let span = self.span(path);
        self.push(severity, span, message);
    }

    /// Maps a byte range inside the string value at `value_span` to a range in the file, when the
    /// string is written without escapes (so its text is its value); otherwise the whole value.
    fn inner_span(&self, value_span: Range<usize>, value: &str, inner: Range<usize>) -> Range<usize> {
        let raw = &self.text[value_span.clone()];
        let quote = if raw.starts_with("\"\"\"") || raw.starts_with("'''") { 3 } else { 1 };
        if raw.len() < 2 * quote {
            return value_span;
        }
        let mut body_start = value_span.start + quote;
        let mut body = &raw[quote..raw.len() - quote];
        if quote == 3 && body.starts_with('\n') {
            body = &body[1..];
            body_start += 1;
        }
        let escaped = raw.starts_with('"') && body.contains('\\');
        if body != value || escaped {
            return value_span;
        }
        body_start + inner.start..body_start + inner.end
    }

    fn check_file(&mut self, spec: &SpecFile) {
        if spec.version != 1 {
            let message = format!("version {} is not supported: this cutune reads version 1", spec.version);
            self.at(Severity::Error, &[K("version")], message);
        }
        if is_unknown(&spec.source) {
            self.at(Severity::Error, &[K("source")], "source is unknown: name the `.cu` file, relative to this spec");
        }
        if spec.kernels.is_empty() {
            self.at(Severity::Warning, &[K("kernels")], "no kernels: add a [[kernels]] table for each kernel to tune");
        }
        let mut seen = BTreeSet::new();
        for (k, kernel) in spec.kernels.iter().enumerate() {
            if !seen.insert(kernel.name.as_str()) {
                let message = format!("kernel `{}` is described twice", kernel.name);
                self.at(Severity::Error, &[K("kernels"), I(k), K("name")], message);
            }
            self.check_kernel(k, kernel);
        }
    }

    fn check_kernel(&mut self, k: usize, kernel: &KernelSpec) {
        let base = |rest: &[Seg<'static>]| -> Vec<Seg<'static>> { [K("kernels"), I(k)].iter().chain(rest).copied().collect() };
        if is_unknown(&kernel.name) {
            self.at(Severity::Error, &base(&[K("name")]), "kernel name is unknown: write the `__global__` function's name");
        }
        let scope = self.check_names(k, kernel);
        self.check_derived(k, kernel, &scope);
        let sizes_example = kernel.shapes.first().map(|s| s.keys().cloned().collect::<Vec<_>>().join(" * ")).filter(|s| !s.is_empty()).unwrap_or_else(|| "n".into());
        let first_size = kernel.shapes.first().and_then(|s| s.keys().next().cloned()).unwrap_or_else(|| "n".into());
        // The block size: the block the spec launches, else a parameter named for it (another
        // parameter, an unroll factor, would be a wrong example).
        let first_param = kernel
            .block
            .first()
            .filter(|b| !is_unknown(b))
            .cloned()
            .or_else(|| kernel.params.iter().find(|p| matches!(p.kind, ParamKind::Define | ParamKind::Template) && p.name.to_ascii_uppercase().contains("BLOCK")).map(|p| p.name.clone()))
            .unwrap_or_else(|| "BLOCK_SIZE".to_string());

        let mut fields: Vec<(Field, &str)> = Vec::new();
        for (key, extents) in [("grid", &kernel.grid), ("block", &kernel.block)] {
            if extents.is_empty() || extents.len() > 3 {
                let message = format!("{key} has {} extents: give 1 to 3 (x, y, z)", extents.len());
                self.at(Severity::Error, &base(&[K(key)]), message);
            }
            for (i, text) in extents.iter().enumerate() {
                let axis = ["x", "y", "z"].get(i).copied().unwrap_or("?");
                let example = if key == "grid" { format!("ceil_div({first_size}, {first_param})") } else { first_param.clone() };
                fields.push((Field { path: base(&[K(key), I(i)]), kind: FieldKind::Extent, what: format!("{key} extent {axis}"), example, made: kernel.unknown.get(key).map(String::as_str) }, text));
            }
        }
        fields.push((Field { path: base(&[K("shared_bytes")]), kind: FieldKind::Amount, what: "shared_bytes".into(), example: "0".into(), made: kernel.unknown.get("shared_bytes").map(String::as_str) }, &kernel.shared_bytes));
        for (path, named, arg) in args_with_paths(k, kernel) {
            let at = |key: &'static str| path.iter().copied().chain([K(key)]).collect::<Vec<_>>();
            let made = kernel.unknown.get(&named.key).map(String::as_str);
            if let Some(length) = &arg.length {
                let what = format!("length of {}", named.what("argument"));
                fields.push((Field { path: at("length"), kind: FieldKind::Length, what, example: sizes_example.clone(), made }, length));
            }
            if let Some(value) = &arg.value {
                let what = format!("value of {}", named.what("scalar argument"));
                fields.push((Field { path: at("value"), kind: FieldKind::Scalar, what, example: first_size.clone(), made }, value));
            }
            if let Some(extent) = &arg.indexes {
                let what = format!("index extent of {}", named.what("argument"));
                fields.push((Field { path: at("indexes"), kind: FieldKind::Length, what, example: first_size.clone(), made: None }, extent));
            }
            for (i, extent) in arg.texture.iter().flat_map(|t| t.extent.iter().enumerate()) {
                let axis = ["x", "y", "z"].get(i).copied().unwrap_or("?");
                let what = format!("extent {axis} of texture `{}`", arg.name);
                let path = path.iter().copied().chain([K("texture"), K("extent"), I(i)]).collect();
                fields.push((Field { path, kind: FieldKind::Length, what, example: first_size.clone(), made: None }, extent));
            }
        }
        for (r, text) in kernel.restrictions.iter().enumerate() {
            let example = format!("{first_param} <= 1024");
            fields.push((Field { path: base(&[K("restrictions"), I(r)]), kind: FieldKind::Restriction, what: format!("restriction {}", r + 1), example, made: None }, text));
        }
        if let Some(bytes) = &kernel.sol.bytes {
            let example = format!("2 * {sizes_example} * 2");
            fields.push((Field { path: base(&[K("sol"), K("bytes")]), kind: FieldKind::Amount, what: "SOL bytes".into(), example, made: None }, bytes));
        }
        if let Some(flops) = &kernel.sol.flops {
            fields.push((Field { path: base(&[K("sol"), K("flops")]), kind: FieldKind::Amount, what: "SOL flops".into(), example: sizes_example.clone(), made: None }, flops));
        }

        let mut parsed = Vec::new();
        for (field, text) in &fields {
            if let Some(expr) = self.check_expression(field, text, &scope) {
                parsed.push((field, expr));
            }
        }
        self.check_unknown_strings(k, kernel);
        self.check_chosen_sizes(k, kernel);
        self.check_args(k, kernel);
        self.check_params(k, kernel);
        self.check_verify(k, kernel);
        self.check_sol(k, kernel);
        self.check_baseline(k, kernel);
        self.check_roles(k, kernel);
        self.check_default_configuration(k, kernel, &parsed);
    }

    /// Sizes, parameters and arguments: shapes agree, no name is used twice. Returns the scope.
    fn check_names<'k>(&mut self, k: usize, kernel: &'k KernelSpec) -> Scope<'k> {
        let shapes_path = [K("kernels"), I(k), K("shapes")];
        match kernel.shapes.first() {
            None => self.at(
                Severity::Error,
                &shapes_path,
                "no shapes: add a [[kernels.shapes]] table giving every size, e.g. `rows = 8192`",
            ),
            Some(first) => {
                for (s, shape) in kernel.shapes.iter().enumerate().skip(1) {
                    let missing: Vec<_> = first.keys().filter(|key| !shape.contains_key(*key)).map(|key| format!("`{key}`")).collect();
                    let extra: Vec<_> = shape.keys().filter(|key| !first.contains_key(*key)).map(|key| format!("`{key}`")).collect();
                    if missing.is_empty() && extra.is_empty() {
                        continue;
                    }
                    let mut message = format!("shape {} does not name the same sizes as shape 1", s + 1);
                    if !missing.is_empty() {
                        let _ = write!(message, "; missing {}", missing.join(", "));
                    }
                    if !extra.is_empty() {
                        let _ = write!(message, "; extra {}", extra.join(", "));
                    }
                    self.at(Severity::Error, &[K("kernels"), I(k), K("shapes"), I(s)], message);
                }
            }
        }
        let mut scope = Scope { sizes: BTreeSet::new(), params: BTreeSet::new(), scalars: BTreeSet::new(), unknown: &kernel.unknown, kernel: &kernel.name };
        for shape in &kernel.shapes {
            scope.sizes.extend(shape.keys().map(String::as_str));
        }
        scope.sizes.extend(kernel.derived.keys().map(String::as_str));
        for (p, param) in kernel.params.iter().enumerate() {
            let path = [K("kernels"), I(k), K("params"), I(p), K("name")];
            if !scope.params.insert(&param.name) {
                self.at(Severity::Error, &path, format!("parameter `{}` is declared twice", param.name));
            } else if scope.sizes.contains(param.name.as_str()) {
                self.at(Severity::Error, &path, format!("`{}` is both a size and a parameter: rename one", param.name));
            }
        }
        let mut arg_names = BTreeSet::new();
        for (a, arg) in kernel.args.iter().enumerate() {
            let path = [K("kernels"), I(k), K("args"), I(a), K("name")];
            if is_unknown(&arg.name) {
                self.at(Severity::Error, &path, format!("name of argument {} is unknown: write the kernel parameter's name", a + 1));
                continue;
            }
            if !arg_names.insert(arg.name.as_str()) {
                self.at(Severity::Error, &path, format!("argument `{}` is declared twice", arg.name));
                continue;
            }
            let Some(value) = arg.value.as_deref().filter(|_| !arg.is_buffer()) else { continue };
            let shadows = scope.sizes.contains(arg.name.as_str()) || scope.params.contains(arg.name.as_str());
            // `hidden = hidden` (a size passed to the kernel) is the common case and harmless.
            if shadows && value.trim() != arg.name {
                let message = format!(
                    "scalar argument `{}` has the name of a size or parameter but the value `{value}`: expressions could not tell them apart",
                    arg.name
                );
                self.at(Severity::Error, &path, message);
            } else if !shadows {
                scope.scalars.insert(&arg.name);
            }
        }
        scope
    }

    /// Each derived size is an expression over the other sizes that every shape can evaluate
    /// to an integer: no parameter (a size is the problem's, the same for every
    /// configuration), no cycle.
    fn check_derived(&mut self, k: usize, kernel: &KernelSpec, scope: &Scope) {
        for (name, text) in &kernel.derived {
            let path = [K("kernels"), I(k), K("derived"), K(name.as_str())];
            let value_span = self.span(&path);
            let expr = match expr::parse(text) {
                Ok(expr) => expr,
                Err(e) => {
                    let range = self.inner_span(value_span, text, e.span.clone());
                    self.push(Severity::Error, range, format!("derived size `{name}`: {}", e.message));
                    continue;
                }
            };
            let not_sizes: Vec<(&str, Range<usize>)> = expr.names().into_iter().filter(|(word, _)| !scope.sizes.contains(word)).collect();
            for (word, span) in &not_sizes {
                let range = self.inner_span(value_span.clone(), text, span.clone());
                let known = scope.sizes.iter().filter(|s| **s != name).copied().collect::<Vec<_>>().join(", ");
                self.push(Severity::Error, range, format!("`{word}` in derived size `{name}` is not a size (known: {known}): a derived size is worked out from the shape's sizes alone"));
            }
            if !not_sizes.is_empty() {
                continue;
            }
            for (s, shape) in kernel.shapes.iter().enumerate() {
                let sizes = sizes_of(kernel, shape);
                if sizes.contains_key(name) {
                    continue;
                }
                let waiting = expr.free_variables().into_iter().find(|n| kernel.derived.contains_key(n) && !sizes.contains_key(n));
                let why = match (waiting, expr.eval_integer(&|n| sizes.get(n).copied())) {
                    (Some(other), _) => format!("it needs the derived size `{other}`, which cannot be worked out first (derived sizes may not name each other in a cycle)"),
                    (None, Err(e)) => e.message,
                    (None, Ok(_)) => "it cannot be evaluated".to_string(),
                };
                self.push(Severity::Error, value_span.clone(), format!("derived size `{name}` cannot be worked out on shape {}: {why}", s + 1));
                break;
            }
        }
    }

    /// Parses one expression field and checks its names; `None` when it is unknown or broken.
    fn check_expression(&mut self, field: &Field, text: &str, scope: &Scope) -> Option<Expr> {
        let value_span = self.span(&field.path);
        if is_unknown(text) {
            let wanted = match field.kind {
                FieldKind::Extent | FieldKind::Length | FieldKind::Amount => "an expression over the sizes and parameters",
                FieldKind::Scalar => "a number or an expression over the sizes",
                FieldKind::Restriction => "a condition over the parameters and sizes",
            };
            let message = match field.made {
                Some(made) => format!("{} is unknown ({made}): write {wanted}, e.g. `{}`", field.what, field.example),
                None => format!("{} is unknown: write {wanted}, e.g. `{}`", field.what, field.example),
            };
            self.push(Severity::Error, value_span, message);
            // Offered to write only when it names what the spec has: `n` in a spec without `n`
            // is an illustration, not a value.
            let known = |w: &str| scope.contains(w) || expr::Function::from_name(w).is_some();
            if let Some(pushed) = self.diagnostics.last_mut().filter(|_| crate::syntax::identifiers_in(&field.example).all(known)) {
                pushed.suggestion = Some(field.example.to_string());
            }
            return None;
        }
        let expr = match expr::parse(text) {
            Ok(expr) => expr,
            Err(e) => {
                let range = self.inner_span(value_span, text, e.span.clone());
                self.push(Severity::Error, range, format!("{}: {}", field.what, e.message));
                return None;
            }
        };
        let mut all_known = true;
        for (name, span) in expr.names() {
            if !scope.contains(name) {
                all_known = false;
                let range = self.inner_span(value_span.clone(), text, span);
                let known: Vec<&str> = scope.sizes.iter().chain(&scope.params).chain(&scope.scalars).copied().collect();
                let known = if known.is_empty() { "none are declared".to_string() } else { format!("known: {}", known.join(", ")) };
                let message = match scope.unknown.get(name) {
                    Some(made) => format!("{}: {}", field.what, no_shape_gives(name, made, scope.kernel)),
                    None => format!("`{name}` in {} is not a size, a parameter or a scalar argument ({known})", field.what),
                };
                self.push(Severity::Error, range, message);
            }
        }
        all_known.then_some(expr)
    }

    /// `?` left in fields that are not expressions.
    fn check_unknown_strings(&mut self, k: usize, kernel: &KernelSpec) {
        for (i, arg) in kernel.template_args.iter().enumerate() {
            if is_unknown(arg) {
                // A template parameter not yet passed is the likelier fill than a type.
                let unused = kernel.params.iter().find(|p| p.kind == ParamKind::Template && !kernel.template_args.iter().any(|a| a.trim() == p.name));
                let example = unused.map_or("float", |p| p.name.as_str());
                let message = format!(
                    "template argument {} is unknown: write the type or value the program instantiates (e.g. `{example}`), or capture a launch (`cutune profile --kernel {} -- CMD`) and templatize again",
                    i + 1,
                    kernel.name
                );
                self.at(Severity::Error, &[K("kernels"), I(k), K("template_args"), I(i)], message);
            }
        }
        for (i, option) in kernel.compiler_options.iter().enumerate() {
            if is_unknown(option) {
                self.at(Severity::Error, &[K("kernels"), I(k), K("compiler_options"), I(i)], "compiler option is unknown: write the NVRTC option, e.g. `-std=c++17`, or remove it");
            }
        }
    }

    /// A size templatize chose (no program gives it) tunes the kernel on that size, not the
    /// program's: said until the user deletes the entry.
    fn check_chosen_sizes(&mut self, k: usize, kernel: &KernelSpec) {
        for (size, why) in &kernel.chosen {
            let value = kernel.shapes.first().and_then(|shape| shape.get(size)).map_or(String::new(), |v| format!(" = {v}"));
            let message = format!(
                "size `{size}`{value} is templatize's choice ({why}): tuning measures that size; write the sizes your program runs in each [[kernels.shapes]], then delete this entry"
            );
            self.at(Severity::Warning, &[K("kernels"), I(k), K("chosen"), K(size)], message);
        }
    }

    /// A texture argument: its data layout as CUDA can make it, and sampling its texels allows.
    fn check_texture(&mut self, path: &[Seg], name: &str, arg: &ArgSpec, texture: &TextureSpec) {
        if arg.length.is_some() || arg.value.is_some() {
            self.at(Severity::Error, path, format!("texture `{name}` has a length or a value: a texture's size is its `extent`, so remove them"));
        }
        let dims = texture.extent.len();
        let (fewest, most) = match texture.layout {
            TextureLayout::Linear => (1, 1),
            TextureLayout::Array => (1, 3),
            TextureLayout::Layered => (2, 3),
            TextureLayout::Cubemap => (3, 3),
        };
        if dims < fewest || dims > most {
            let layout = format!("{:?}", texture.layout).to_lowercase();
            let message = format!("texture `{name}` has {dims} extents; a {layout} texture has {fewest} to {most} (a layered one ends with its layers, a cube map is [w, w, 6])");
            self.at(Severity::Error, path, message);
        } else if texture.layout == TextureLayout::Cubemap && texture.extent[2].trim() != "6" {
            self.at(Severity::Error, path, format!("texture `{name}` is a cube map, which has 6 faces: its extent is [w, w, 6]"));
        }
        if ![1, 2, 4].contains(&texture.channels) {
            self.at(Severity::Error, path, format!("texture `{name}` has {} channels; CUDA textures have 1, 2 or 4", texture.channels));
        }
        let integer = matches!(arg.dtype(), Dtype::I8 | Dtype::I16 | Dtype::I32 | Dtype::U8 | Dtype::U16 | Dtype::U32);
        if !(integer || matches!(arg.dtype(), Dtype::F16 | Dtype::F32)) {
            self.at(Severity::Error, path, format!("texture `{name}` has texels of {:?}; CUDA textures hold f16, f32 or 8-, 16- and 32-bit integers", arg.dtype()));
        }
        let narrow = matches!(arg.dtype(), Dtype::I8 | Dtype::I16 | Dtype::U8 | Dtype::U16);
        if texture.read == TextureRead::NormalizedFloat && !narrow {
            self.at(Severity::Error, path, format!("texture `{name}` reads normalized floats, which only 8- and 16-bit integer texels have"));
        }
        if texture.filter == TextureFilter::Linear && integer && texture.read == TextureRead::Element {
            self.at(Severity::Error, path, format!("texture `{name}` filters linearly, which needs float texels or read = \"normalized_float\""));
        }
    }

    fn check_args(&mut self, k: usize, kernel: &KernelSpec) {
        for (a, arg) in kernel.args.iter().enumerate() {
            if arg.is_struct() {
                self.check_struct(&[K("kernels"), I(k), K("args"), I(a)], arg);
            }
        }
        for (base, named, arg) in args_with_paths(k, kernel) {
            if arg.is_struct() {
                continue;
            }
            let path = |key: &'static str| base.iter().copied().chain([K(key)]).collect::<Vec<_>>();
            let (name, what) = (&named.key, named.what("argument"));
            if arg.element.is_none() {
                self.at(Severity::Error, &path("name"), format!("{what} has no dtype: add dtype = \"f32\" (or the type it holds)"));
            }
            if let Some(texture) = &arg.texture {
                self.check_texture(&path("texture"), name, arg, texture);
            }
            match (&arg.length, &arg.value) {
                _ if arg.is_texture() => {}
                (Some(_), Some(_)) => self.at(Severity::Error, &path("value"), format!("{what} has both a length (a buffer) and a value (a scalar): keep one")),
                (None, None) => self.at(Severity::Error, &path("name"), format!("{what} has neither a length (a buffer), a value (a scalar) nor a texture")),
                (Some(_), None) => {
                    if arg.role.is_none() {
                        let message = format!("buffer `{name}` has no role: add role = \"input\", \"output\" or \"inout\"");
                        self.at(Severity::Error, &path("name"), message);
                    }
                }
                (None, Some(_)) => {
                    if arg.role.is_some() {
                        self.at(Severity::Warning, &path("role"), format!("scalar `{name}` has a role; only buffers have one, so it is ignored"));
                    }
                    if arg.init.is_some() {
                        self.at(Severity::Warning, &path("init"), format!("scalar `{name}` has an init; scalars take their value, so it is ignored"));
                    }
                }
            }
            let bad_init = match &arg.init {
                Some(Init::Uniform { low, high }) if low.is_nan() || high.is_nan() || low > high => Some(format!("uniform init of `{name}` needs low <= high")),
                Some(Init::Normal { std, .. }) if std.is_nan() || *std < 0.0 => Some(format!("normal init of `{name}` needs std >= 0")),
                Some(Init::Integers { low, high }) if low >= high => Some(format!("integers init of `{name}` draws from [low, high) and needs low < high")),
                Some(Init::Mixed { large, small }) if !(large.is_finite() && small.is_finite()) => Some(format!("mixed init of `{name}` needs finite scales")),
                _ => None,
            };
            if let Some(message) = bad_init {
                self.at(Severity::Error, &path("init"), message);
            }
            if arg.indexes.is_some() {
                if arg.length.is_none() || arg.dtype().is_float() {
                    self.at(Severity::Error, &path("indexes"), format!("{what} has an index extent, which only a buffer of integers has"));
                } else if arg.init.is_some() {
                    self.at(Severity::Error, &path("init"), format!("buffer `{name}` has both an init and an index extent, which draws its values from [0, extent): keep one"));
                }
            }
        }
    }

    /// A struct passed by value: its type is named, it says nothing of its own but its fields,
    /// and each field is a buffer or a scalar named by a member, once.
    fn check_struct(&mut self, path: &[Seg], arg: &ArgSpec) {
        let at = |key: &'static str| path.iter().copied().chain([K(key)]).collect::<Vec<_>>();
        let name = &arg.name;
        if arg.struct_type.as_deref().is_some_and(|t| t.trim().is_empty() || is_unknown(t)) {
            self.at(Severity::Error, &at("struct"), format!("the type of struct `{name}` is unknown: write the C++ type the kernel takes, e.g. `Params`"));
        }
        let own = [("dtype", arg.element.is_some()), ("length", arg.length.is_some()), ("value", arg.value.is_some()), ("role", arg.role.is_some()), ("init", arg.init.is_some()), ("indexes", arg.indexes.is_some()), ("texture", arg.texture.is_some()), ("compare", arg.compare.is_some())];
        for (key, _) in own.iter().filter(|(_, present)| *present) {
            self.at(Severity::Error, &at(key), format!("struct `{name}` has a {key}: a struct has only its fields, each with its own"));
        }
        let mut seen = BTreeSet::new();
        for (f, field) in arg.fields.iter().enumerate() {
            let field_path: Vec<Seg> = path.iter().copied().chain([K("fields"), I(f), K("name")]).collect();
            if !is_member_path(&field.name) {
                let message = format!("field `{}` of `{name}` is not a member: name it as C++ reads it from the struct (`x_ptr`, `shape.rows`, `strides[1]`)", field.name);
                self.at(Severity::Error, &field_path, message);
            } else if !seen.insert(field.name.as_str()) {
                self.at(Severity::Error, &field_path, format!("field `{}` of `{name}` is given twice", field.name));
            }
            if field.is_struct() || field.is_texture() {
                self.at(Severity::Error, &field_path, format!("field `{}` of `{name}` is a buffer or a scalar; name a nested struct's members by their path (`inner.n`)", field.name));
            }
        }
    }

    fn check_params(&mut self, k: usize, kernel: &KernelSpec) {
        for (p, param) in kernel.params.iter().enumerate() {
            let path = |key: &'static str| [K("kernels"), I(k), K("params"), I(p), K(key)];
            if is_unknown(&param.name) {
                self.at(Severity::Error, &path("name"), format!("name of parameter {} is unknown", p + 1));
            }
            if param.values.is_empty() {
                self.at(Severity::Error, &path("values"), format!("parameter `{}` has no values: list at least its default", param.name));
            } else if !param.values.contains(&param.default) {
                let message = format!(
                    "default {} of `{}` is not one of its values {:?}: the default configuration must be in the search space",
                    param.default, param.name, param.values
                );
                self.at(Severity::Error, &path("default"), message);
            }
            let distinct: BTreeSet<_> = param.values.iter().collect();
            if distinct.len() != param.values.len() {
                self.at(Severity::Warning, &path("values"), format!("parameter `{}` lists a value more than once", param.name));
            }
            if param.kind == ParamKind::FastMath && param.values.iter().any(|v| *v != 0 && *v != 1) {
                self.at(Severity::Warning, &path("values"), format!("`{}` is a fast_math switch: its values should be 0 and 1", param.name));
            }
        }
    }

    fn check_verify(&mut self, k: usize, kernel: &KernelSpec) {
        let mut seen = BTreeSet::new();
        for (t, tolerance) in kernel.verify.tolerances.iter().enumerate() {
            let path = |key: &'static str| [K("kernels"), I(k), K("verify"), K("tolerances"), I(t), K(key)];
            for (key, value) in [("atol", tolerance.atol), ("rtol", tolerance.rtol)] {
                if !value.is_finite() || value < 0.0 {
                    self.at(Severity::Error, &path(key), format!("{key} must be a finite number >= 0, not {value}"));
                }
            }
            if !seen.insert(tolerance.dtype) {
                self.at(Severity::Warning, &path("dtype"), format!("a second tolerance for {:?}: the last one wins", tolerance.dtype));
            }
        }
        if let Some(name) = &kernel.verify.contiguous {
            if let Some(s) = kernel.shapes.iter().position(|shape| !shape.contains_key(name)) {
                let message = format!("contiguous names `{name}`, which shape {} does not have: it must be a size variable", s + 1);
                self.at(Severity::Error, &[K("kernels"), I(k), K("verify"), K("contiguous")], message);
            }
        }
    }

    /// An unknown `compute` is refused when the TOML is read (with the accepted values).
    fn check_sol(&mut self, k: usize, kernel: &KernelSpec) {
        if let (Some(compute), None) = (kernel.sol.compute, &kernel.sol.flops) {
            let message = format!(
                "SOL compute `{}` picks the arithmetic rate for SOL flops, and there are none: add `flops` or remove `compute`",
                compute.as_str()
            );
            self.at(Severity::Warning, &[K("kernels"), I(k), K("sol"), K("compute")], message);
        }
    }

    /// Holds each in-out buffer up against what the original kernel does with it: the bound
    /// counts an in-out buffer twice, so one the kernel only writes (or only reads) would put
    /// the bound above what a correct kernel can reach. Specs written before roles were read
    /// from the body marked every non-const pointer in-out.
    fn check_roles(&mut self, k: usize, kernel: &KernelSpec) {
        // Parsed only when there is an in-out buffer to check: this runs on every edit of a spec.
        if is_unknown(&kernel.baseline.source) || !kernel.args.iter().any(|a| a.role == Some(Role::InOut)) {
            return;
        }
        let text = kernel.baseline.source.as_str();
        let tree = crate::syntax::parse_source(text);
        let is_kernel = |f: &tree_sitter::Node| crate::syntax::host::function_name(text, *f).is_some_and(|n| n == kernel.name) && f.child_by_field_name("body").is_some();
        let Some(body) = crate::syntax::descendants(tree.root_node()).filter(|n| n.kind() == "function_definition").find(is_kernel).and_then(|f| f.child_by_field_name("body")) else { return };
        for (a, arg) in kernel.args.iter().enumerate() {
            if arg.role != Some(Role::InOut) {
                continue;
            }
            let (does, role) = match crate::syntax::access_of(text, body, &arg.name) {
                crate::syntax::Access::ReadsAndWrites | crate::syntax::Access::Untouched => continue,
                crate::syntax::Access::Writes => ("only writes", "output"),
                crate::syntax::Access::Reads => ("only reads", "input"),
            };
            let message = format!("`{}` is in-out, but the original kernel {does} it: the bound counts an in-out buffer twice; its role is \"{role}\"", arg.name);
            self.at(Severity::Warning, &[K("kernels"), I(k), K("args"), I(a), K("role")], message);
        }
    }

    fn check_baseline(&mut self, k: usize, kernel: &KernelSpec) {
        let path = |key: &'static str| [K("kernels"), I(k), K("baseline"), K(key)];
        let baseline = &kernel.baseline;
        if is_unknown(&baseline.source) {
            self.at(Severity::Error, &path("source"), "baseline source is unknown: paste the original kernel here (`cutune templatize` does this)");
            return;
        }
        if is_unknown(&baseline.sha256) {
            self.at(Severity::Error, &path("sha256"), format!("baseline sha256 is unknown: it is {}", sha256_hex(&baseline.source)));
            return;
        }
        let actual = sha256_hex(&baseline.source);
        if !baseline.sha256.eq_ignore_ascii_case(&actual) {
            let message = format!(
                "the baseline source does not match its sha256 (it hashes to {actual}): the baseline was edited; \
                 verification compares against the source as it is now"
            );
            self.at(Severity::Warning, &path("sha256"), message);
        }
    }

    /// Evaluates the expressions under each shape with every parameter at its default, and warns
    /// where the default configuration (the original kernel) would be infeasible. Each field is
    /// reported once, for the first shape where it fails.
    fn check_default_configuration(&mut self, k: usize, kernel: &KernelSpec, parsed: &[(&Field, Expr)]) {
        let mut reported: BTreeSet<String> = BTreeSet::new();
        for (s, shape) in kernel.shapes.iter().enumerate() {
            let Some(env) = default_environment(kernel, shape) else { continue };
            let lookup = |n: &str| env.get(n).copied();
            let with_values = |expr: &Expr| -> String {
                let used: Vec<String> =
                    expr.free_variables().iter().filter_map(|n| env.get(n.as_str()).map(|v| format!("{n} = {v}"))).collect();
                let shape = if kernel.shapes.len() > 1 { format!("shape {}", s + 1) } else { String::new() };
                match (shape.is_empty(), used.is_empty()) {
                    (true, true) => String::new(),
                    (false, true) => format!(" ({shape})"),
                    (true, false) => format!(" (with {})", used.join(", ")),
                    (false, false) => format!(" ({shape}, with {})", used.join(", ")),
                }
            };
            let mut threads_per_block: Option<i64> = Some(1);
            for (field, expr) in parsed {
                if reported.contains(&field.what) {
                    continue;
                }
                let what = &field.what;
                let problem = match field.kind {
                    FieldKind::Restriction => match expr.eval(&lookup) {
                        Ok(v) if v.is_true() => None,
                        Ok(_) => Some(format!("the default configuration violates {what}{}", with_values(expr))),
                        Err(e) => Some(format!("{what} cannot be evaluated for the default configuration: {e}{}", with_values(expr))),
                    },
                    FieldKind::Extent | FieldKind::Length => match expr.eval_integer(&lookup) {
                        Ok(v) if v < 1 => Some(format!("{what} is {v} for the default configuration{}", with_values(expr))),
                        Ok(v) => {
                            if field.path.iter().any(|seg| matches!(seg, Seg::Key("block"))) {
                                threads_per_block = threads_per_block.and_then(|t| t.checked_mul(v));
                            }
                            None
                        }
                        Err(e) => Some(format!("{what}: {e}{}", with_values(expr))),
                    },
                    FieldKind::Amount => match expr.eval(&lookup) {
                        Ok(v) if v.as_f64() < 0.0 => Some(format!("{what} is {v} for the default configuration{}", with_values(expr))),
                        Ok(_) => None,
                        Err(e) => Some(format!("{what}: {e}{}", with_values(expr))),
                    },
                    // Scalars that fail to evaluate make `default_environment` give up (reported below).
                    FieldKind::Scalar => None,
                };
                if let Some(message) = problem {
                    reported.insert(field.what.clone());
                    let span = self.span(&field.path);
                    self.push(Severity::Warning, span, message);
                }
            }
            if let Some(threads) = threads_per_block.filter(|t| *t > 1024) {
                if reported.insert("threads per block".into()) {
                    // Not even the original can run so: nothing is measured against it.
                    let message = format!("the default configuration launches {threads} threads per block; CUDA allows at most 1024");
                    self.at(Severity::Error, &[K("kernels"), I(k), K("block")], message);
                }
            }
        }
        for (field, expr) in parsed.iter().filter(|(f, _)| f.kind == FieldKind::Scalar) {
            let Some(shape) = kernel.shapes.first() else { break };
            let env: BTreeMap<String, Value> = sizes_of(kernel, shape).into_iter().chain(kernel.params.iter().map(|p| (p.name.clone(), Value::Int(p.default)))).collect();
            if let Err(e) = expr.eval(&|n| env.get(n).copied()) {
                let span = self.span(&field.path);
                let unknown_size = expr.names().into_iter().map(|(name, _)| name).find(|name| !env.contains_key(*name) && kernel.unknown.contains_key(*name));
                // Nothing can run without it: the buffers' lengths and the launch often follow it.
                let message = match unknown_size {
                    Some(name) => format!("{}: {}", field.what, no_shape_gives(name, &kernel.unknown[name], &kernel.name)),
                    None => format!("{}: {e} (scalars may use sizes and parameters, not other scalars)", field.what),
                };
                self.push(Severity::Error, span, message);
            }
        }
    }
}

/// What to do about the size `name`, which no shape gives, made by the program as `made`.
/// How messages name an argument or a struct's field, and its key in `[kernels.unknown]`.
struct ArgName {
    /// `n`, or `params.x_ptr` for a field.
    key: String,
    field: bool,
}

impl ArgName {
    /// "argument `n`" (with `kind` for the word), or "field `x_ptr` of `params`".
    fn what(&self, kind: &str) -> String {
        match (self.field, self.key.split_once('.')) {
            (true, Some((arg, member))) => format!("field `{member}` of `{arg}`"),
            _ => format!("{kind} `{}`", self.key),
        }
    }
}

/// Every argument with its path in the file and its name, each struct's fields after it.
fn args_with_paths(k: usize, kernel: &KernelSpec) -> Vec<(Vec<Seg<'static>>, ArgName, &ArgSpec)> {
    let mut all = Vec::new();
    for (a, arg) in kernel.args.iter().enumerate() {
        let path = vec![K("kernels"), I(k), K("args"), I(a)];
        all.push((path.clone(), ArgName { key: arg.name.clone(), field: false }, arg));
        for (f, field) in arg.fields.iter().enumerate() {
            let field_path = path.iter().copied().chain([K("fields"), I(f)]).collect();
            all.push((field_path, ArgName { key: format!("{}.{}", arg.name, field.name), field: true }, field));
        }
    }
    all
}

/// `x_ptr`, `shape.rows`, `strides[1]`: a member as C++ reads it from a struct.
fn is_member_path(text: &str) -> bool {
    let is_name = |part: &str| part.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_') && part.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    text.split('.').all(|part| {
        let (name, subscripts) = part.split_once('[').map_or((part, ""), |(n, rest)| (n, rest));
        is_name(name) && (subscripts.is_empty() || subscripts.strip_suffix(']').is_some_and(|inner| inner.split("][").all(|i| !i.is_empty() && i.chars().all(|c| c.is_ascii_digit()))))
    })
}

fn no_shape_gives(name: &str, made: &str, kernel: &str) -> String {
    format!(
        "`{name}` is a size no shape gives ({made}): write `{name} = …` in each `[[kernels.shapes]]`, or capture a launch (`cutune profile --kernel {kernel} -- CMD`) and templatize again"
    )
}

/// The names a configuration's expressions see: the sizes of `shape`, each parameter's value
/// (`value_of`), and the scalar arguments evaluated over those. A scalar that cannot be
/// evaluated is left out (it is reported on the scalar itself).
pub fn environment(kernel: &KernelSpec, shape: &Shape, value_of: &dyn Fn(&ParamSpec) -> i64) -> BTreeMap<String, Value> {
    let mut env = sizes_of(kernel, shape);
    for param in &kernel.params {
        env.insert(param.name.clone(), Value::Int(value_of(param)));
    }
    for arg in kernel.args.iter().filter(|a| !a.is_buffer()) {
        let value = arg.value.as_deref().and_then(|t| expr::parse(t).ok()).and_then(|e| e.eval(&|n| env.get(n).copied()).ok());
        if let Some(value) = value {
            env.insert(arg.name.clone(), value);
        }
    }
    if let Some(bound) = blocks_per_sm_bound_of(kernel, &env) {
        env.insert(BLOCKS_PER_SM.to_string(), Value::Int(bound));
    }
    env
}

/// The sizes of `shape` and those [`KernelSpec::derived`] works out from them; a derived size
/// that cannot be evaluated (a name no shape gives) is left out, and reported on its own.
pub fn sizes_of(kernel: &KernelSpec, shape: &Shape) -> BTreeMap<String, Value> {
    let mut sizes: BTreeMap<String, Value> = shape.iter().map(|(k, v)| (k.clone(), Value::Int(*v))).collect();
    // One derived size may name another: each round evaluates those whose names are known.
    for _ in 0..kernel.derived.len() {
        let settled: Vec<(String, i64)> = kernel
            .derived
            .iter()
            .filter(|(name, _)| !sizes.contains_key(*name))
            .filter_map(|(name, text)| Some((name.clone(), expr::parse(text).ok()?.eval_integer(&|n| sizes.get(n).copied()).ok()?)))
            .collect();
        if settled.is_empty() {
            break;
        }
        sizes.extend(settled.into_iter().map(|(name, value)| (name, Value::Int(value))));
    }
    sizes
}

/// [`BLOCKS_PER_SM`] before compiling, for a kernel whose expressions name it and whose shape
/// does not give it (a captured launch's number): the most its block allows on the shape's GPU.
fn blocks_per_sm_bound_of(kernel: &KernelSpec, env: &BTreeMap<String, Value>) -> Option<i64> {
    if env.contains_key(BLOCKS_PER_SM) || !names_blocks_per_sm(kernel) {
        return None;
    }
    let threads = kernel.block.iter().try_fold(1i64, |threads, extent| {
        let extent = expr::parse(extent).ok()?.eval_integer(&|n| env.get(n).copied()).ok()?;
        threads.checked_mul(extent)
    })?;
    let threads_per_sm = match env.get("threads_per_sm") {
        Some(Value::Int(n)) => *n,
        _ => DEVICE_SIZES.iter().find(|(n, _)| *n == "threads_per_sm").map_or(2048, |(_, v)| *v),
    };
    Some(blocks_per_sm_bound(threads, threads_per_sm))
}

/// Whether the kernel's launch, lengths or restrictions name [`BLOCKS_PER_SM`].
pub fn names_blocks_per_sm(kernel: &KernelSpec) -> bool {
    let names = |text: &String| crate::syntax::identifiers_in(text).any(|w| w == BLOCKS_PER_SM);
    kernel.grid.iter().chain(&kernel.restrictions).chain(std::iter::once(&kernel.shared_bytes)).any(names) || kernel.leaf_args().filter_map(|a| a.length.as_ref()).any(names)
}

/// [`environment`] with every parameter at its default; `None` when a scalar cannot be evaluated.
pub fn default_environment(kernel: &KernelSpec, shape: &Shape) -> Option<BTreeMap<String, Value>> {
    let env = environment(kernel, shape, &|p| p.default);
    let mut scalars = kernel.args.iter().filter(|a| !a.is_buffer() && a.value.is_some());
    scalars.all(|a| env.contains_key(&a.name)).then_some(env)
}

fn is_unknown(text: &str) -> bool {
    text.trim() == UNKNOWN
}

/// Lower-case hex SHA-256, the form `baseline.sha256` holds.
pub fn sha256_hex(text: &str) -> String {
    Sha256::digest(text.as_bytes()).iter().fold(String::with_capacity(64), |mut out, b| {
        let _ = write!(out, "{b:02x}");
        out
    })
}
