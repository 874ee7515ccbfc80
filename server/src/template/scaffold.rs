//! The spec scaffold: what can be read off the kernel's signature, its launch and the host code
//! around it. What cannot be inferred is left as [`UNKNOWN`] (or a size missing from the
//! shape), which the spec validator reports as a diagnostic to fill in.

use std::collections::{BTreeSet, HashMap};

use tree_sitter::Node;

use crate::spec::{sha256_hex, split_top_level, ArgSpec, Baseline, Dtype, Init, KernelSpec, ParamSpec, Role, Shape, SolSpec, VerifySpec, UNKNOWN};
use crate::slice::{device_slice, SliceOptions};
use crate::syntax::{descendants, eval_constant, identifiers_in, Document, Kernel, LaunchSite, Param, TemplateParamKind};

/// Builds the spec of `kernel` from the templatized document; `original` gives the baseline.
pub fn infer(original: &Document, templated: &Document, kernel: &str, params: Vec<ParamSpec>, restrictions: Vec<String>, slice_options: &SliceOptions) -> KernelSpec {
    let model = templated.model();
    let k = model.kernel(kernel).expect("templatize keeps the kernel");
    let launch = model.launches_of(kernel).next();
    let host = launch.and_then(|l| HostContext::new(templated, l));
    let param_names: BTreeSet<&str> = params.iter().map(|p| p.name.as_str()).collect();

    let (grid, mut block) = match (launch, &host) {
        (Some(l), Some(h)) => (h.dims(&l.grid.text), h.dims(&l.block.text)),
        (Some(l), None) => (vec![l.grid.text.trim().to_string()], vec![l.block.text.trim().to_string()]),
        (None, _) => (vec![UNKNOWN.to_string()], vec![UNKNOWN.to_string()]),
    };
    // `k<half, 256><<<rows, 256>>>`: the block is the template parameter's value.
    if let Some(l) = launch {
        for (i, tp) in k.template_params.iter().enumerate() {
            let value = l.template_args.get(i).and_then(|a| a.value);
            if params.iter().any(|p| p.name == tp.name) && value.is_some() && block.len() == 1 && block[0].parse::<i64>().ok() == value {
                block[0] = tp.name.clone();
            }
        }
    }
    let shared_bytes = launch.and_then(|l| l.shared_bytes.as_ref()).map_or("0".to_string(), |e| e.text.trim().to_string());
    let body = super::kernel_definition(templated, k).and_then(|d| d.child_by_field_name("body"));
    let args: Vec<ArgSpec> = k
        .params
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let at_launch = launch.and_then(|l| l.args.get(i)).map(|a| a.trim().to_string());
            arg_spec(templated, body, p, at_launch.as_deref(), host.as_ref())
        })
        .collect();

    // Host expressions are C, where `/` on integers truncates; in the spec `/` is true division.
    let (grid, block, shared_bytes) = (grid.iter().map(|g| c_division(g)).collect::<Vec<_>>(), block.iter().map(|b| c_division(b)).collect::<Vec<_>>(), c_division(&shared_bytes));
    let args: Vec<ArgSpec> = args
        .into_iter()
        .map(|mut a| {
            a.length = a.length.map(|l| c_division(&l));
            if !a.dtype.is_float() {
                a.value = a.value.map(|v| c_division(&v));
            }
            a
        })
        .collect();
    let mut sizes = BTreeSet::new();
    let expressions = grid.iter().chain(&block).chain(std::iter::once(&shared_bytes));
    let arg_exprs = args.iter().filter_map(|a| if a.dtype.is_float() { a.length.as_ref() } else { a.length.as_ref().or(a.value.as_ref()) });
    for text in expressions.chain(arg_exprs) {
        for name in identifiers_in(text) {
            if !param_names.contains(name) && !is_keyword(name) {
                sizes.insert(name.to_string());
            }
        }
    }
    let mut shapes: Vec<Shape> = Vec::new();
    if let Some(h) = &host {
        let values: Vec<(String, Vec<Option<i64>>)> = sizes.iter().map(|s| (s.clone(), h.size_values(s))).collect();
        for path in 0..h.paths.len() {
            let shape: Shape = values.iter().filter_map(|(s, v)| Some((s.clone(), v[path]?))).collect();
            if !shapes.contains(&shape) {
                shapes.push(shape);
            }
        }
    }
    if shapes.is_empty() {
        shapes.push(Shape::new());
    }
    // A non-power-of-two shape along the grid's leading size, where tails hide bugs, unless
    // the file already has one.
    let has_odd = shapes.iter().any(|s| s.values().any(|v| *v > 1 && !(*v as u64).is_power_of_two()));
    if let Some(lead) = grid.first().filter(|g| sizes.contains(g.as_str()) && !has_odd) {
        if let Some(&value) = shapes[0].get(lead.as_str()).filter(|v| **v > 1) {
            let mut tail = shapes[0].clone();
            tail.insert(lead.clone(), value - 1);
            shapes.push(tail);
        }
    }

    let template_args = template_args(k, launch, &params);
    let deterministic = !(body.is_some_and(|b| contains_call(templated.text(), b, "atomicAdd")) && args.iter().any(|a| a.is_buffer() && a.dtype.is_float()));
    // The kernel exists (templatize checked), so slicing cannot fail on it.
    let source = device_slice(original, kernel, slice_options).map(|s| s.source).unwrap_or_else(|_| original.text().to_string());
    KernelSpec {
        name: kernel.to_string(),
        template_args,
        grid,
        block,
        shared_bytes,
        compiler_options: Vec::new(),
        shapes,
        args,
        params,
        restrictions,
        verify: VerifySpec { tolerances: Vec::new(), deterministic, contiguous: None },
        sol: SolSpec::default(),
        baseline: Baseline { sha256: sha256_hex(&source), source },
    }
}

/// A C integer expression in the spec's language: `/` becomes `//`. Sizes and block counts are
/// non-negative, where flooring and C's truncation agree.
fn c_division(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 4);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '/' && chars.peek() != Some(&'/') {
            out.push_str("//");
        } else {
            out.push(c);
            if c == '/' {
                out.push(chars.next().expect("peeked"));
            }
        }
    }
    out
}

fn template_args(k: &Kernel, launch: Option<&LaunchSite>, params: &[ParamSpec]) -> Vec<String> {
    k.template_params
        .iter()
        .enumerate()
        .map(|(i, tp)| match &tp.kind {
            TemplateParamKind::Value { .. } if params.iter().any(|p| p.name == tp.name) => tp.name.clone(),
            _ => launch
                .and_then(|l| l.template_args.get(i))
                .map(|a| a.text.trim().to_string())
                .or_else(|| tp.default.clone())
                .unwrap_or_else(|| UNKNOWN.to_string()),
        })
        .collect()
}

fn arg_spec(doc: &Document, body: Option<Node>, p: &Param, at_launch: Option<&str>, host: Option<&HostContext>) -> ArgSpec {
    let (dtype, lanes) = dtype_of(&p.base_type).unwrap_or((Dtype::U8, 0));
    if p.pointer_depth == 0 {
        let value = at_launch.map_or(UNKNOWN.to_string(), |text| match dtype.is_float() {
            true => host.and_then(|h| h.float_value(text)).unwrap_or_else(|| UNKNOWN.to_string()),
            false => text.to_string(),
        });
        return ArgSpec { name: p.name.clone(), dtype, length: None, role: None, init: None, value: Some(value) };
    }
    let length = match (lanes, at_launch.and_then(|a| host.and_then(|h| h.buffer_length(a, &p.base_type)))) {
        (0, _) | (_, None) => UNKNOWN.to_string(),
        (1, Some(len)) => len,
        (lanes, Some(len)) => format!("({len}) * {lanes}"),
    };
    let role = if p.is_const { Role::Input } else { body.map_or(Role::InOut, |b| role_of(doc.text(), b, &p.name)) };
    let init = match role {
        Role::Output => None,
        _ if dtype.is_float() => Some(Init::Uniform { low: -1.0, high: 1.0 }),
        _ => Some(Init::Integers { low: 0, high: 128 }),
    };
    ArgSpec { name: p.name.clone(), dtype, length: Some(length), role: Some(role), init, value: None }
}

/// The spec dtype of a C type and how many of it one element holds (`half2` is 2 halves);
/// `None` for types that are not numbers.
fn dtype_of(ty: &str) -> Option<(Dtype, u32)> {
    Some(match ty {
        "half" | "__half" => (Dtype::F16, 1),
        "half2" | "__half2" => (Dtype::F16, 2),
        "__nv_bfloat16" | "nv_bfloat16" => (Dtype::Bf16, 1),
        "__nv_bfloat162" | "nv_bfloat162" => (Dtype::Bf16, 2),
        "float" => (Dtype::F32, 1),
        "float2" => (Dtype::F32, 2),
        "float4" => (Dtype::F32, 4),
        "double" => (Dtype::F64, 1),
        "__nv_fp8_e4m3" => (Dtype::Fp8e4m3, 1),
        "__nv_fp8_e5m2" => (Dtype::Fp8e5m2, 1),
        "char" | "signed char" | "int8_t" => (Dtype::I8, 1),
        "unsigned char" | "uint8_t" | "bool" => (Dtype::U8, 1),
        "short" | "int16_t" => (Dtype::I16, 1),
        "unsigned short" | "uint16_t" => (Dtype::U16, 1),
        "int" | "int32_t" => (Dtype::I32, 1),
        "int4" => (Dtype::I32, 4),
        "unsigned" | "unsigned int" | "uint32_t" => (Dtype::U32, 1),
        "uint4" => (Dtype::U32, 4),
        "long long" | "int64_t" | "long" => (Dtype::I64, 1),
        "unsigned long long" | "uint64_t" | "size_t" | "unsigned long" => (Dtype::U64, 1),
        _ => return None,
    })
}

/// Whether the kernel writes the buffer `name` points to, reads it, or both, following pointers
/// derived from it (`half* row = out + offset`).
fn role_of(text: &str, body: Node, name: &str) -> Role {
    let mut names: BTreeSet<String> = BTreeSet::from([name.to_string()]);
    // Aliases first: declarations whose initial value mentions a tracked pointer.
    for node in descendants(body) {
        if node.kind() == "init_declarator" {
            let value = node.child_by_field_name("value").map(|v| &text[v.byte_range()]).unwrap_or("");
            let declarator = node.child_by_field_name("declarator");
            if declarator.is_some_and(|d| d.kind() == "pointer_declarator") && identifiers_in(value).any(|w| names.contains(w)) {
                if let Some(alias) = declarator.and_then(declared_name) {
                    names.insert(text[alias.byte_range()].to_string());
                }
            }
        }
    }
    let (mut reads, mut writes) = (false, false);
    for node in descendants(body) {
        if node.kind() != "identifier" || !names.contains(&text[node.byte_range()]) {
            continue;
        }
        let Some(parent) = node.parent() else { continue };
        let access = match parent.kind() {
            "subscript_expression" if parent.child_by_field_name("argument") == Some(node) => parent,
            "pointer_expression" if text[parent.byte_range()].starts_with('*') => parent,
            // Declarations, aliases and arithmetic: the accesses through the alias count.
            "init_declarator" | "pointer_declarator" | "binary_expression" | "parameter_declaration" => continue,
            // Passed on (`atomicAdd(out, v)`, a device function): assume both.
            _ => {
                reads = true;
                writes = true;
                continue;
            }
        };
        match access.parent() {
            Some(a) if a.kind() == "assignment_expression" && a.child_by_field_name("left") == Some(access) => {
                writes = true;
                if a.child_by_field_name("operator").is_some_and(|op| &text[op.byte_range()] != "=") {
                    reads = true;
                }
            }
            Some(u) if u.kind() == "update_expression" || (u.kind() == "pointer_expression" && text[u.byte_range()].starts_with('&')) => {
                reads = true;
                writes = true;
            }
            _ => reads = true,
        }
    }
    match (reads, writes) {
        (true, true) => Role::InOut,
        (false, true) => Role::Output,
        _ => Role::Input,
    }
}

fn declared_name(declarator: Node) -> Option<Node> {
    let mut node = declarator;
    while let Some(inner) = node.child_by_field_name("declarator") {
        node = inner;
    }
    (node.kind() == "identifier").then_some(node)
}

fn contains_call(text: &str, body: Node, function: &str) -> bool {
    descendants(body).any(|node| node.kind() == "call_expression" && node.child_by_field_name("function").is_some_and(|f| &text[f.byte_range()] == function))
}

fn is_keyword(word: &str) -> bool {
    matches!(word, "sizeof" | "dim3" | "int" | "unsigned" | "size_t" | "long" | "static_cast" | "min" | "max")
}

/// How many call paths (and so shapes) are followed at most, and how deep.
const MAX_PATHS: usize = 8;
const MAX_DEPTH: usize = 4;

/// The host code around a launch: every path of calls that reaches the launching function,
/// with the constants of each function on it, to put numbers on the sizes. Each path gives one
/// shape (`run_case(8192, 8192)` and `run_case(4095, 1000)` give two).
struct HostContext<'d> {
    text: &'d str,
    /// Each path starts at the launcher; frame `i + 1` calls frame `i`.
    paths: Vec<Vec<Frame<'d>>>,
    defines: HashMap<String, i64>,
    /// File-scope constants defined as another name: `constexpr int kBlock = BLOCK_SIZE;`.
    file_constants: HashMap<String, String>,
}

#[derive(Clone)]
struct Frame<'d> {
    scope: Scope<'d>,
    params: Vec<String>,
    /// The arguments this function was called with, in the next frame's names.
    called_with: Option<Vec<String>>,
}

/// A function's local declarations, name to initial value text, in order.
#[derive(Clone)]
struct Scope<'d> {
    body: Option<Node<'d>>,
    values: Vec<(String, String)>,
}

impl<'d> Scope<'d> {
    fn of(text: &'d str, function: Node<'d>) -> Scope<'d> {
        let body = function.child_by_field_name("body");
        let mut values = Vec::new();
        if let Some(body) = body {
            for node in descendants(body) {
                if node.kind() == "init_declarator" {
                    if let (Some(d), Some(v)) = (node.child_by_field_name("declarator").and_then(declared_name), node.child_by_field_name("value")) {
                        values.push((text[d.byte_range()].to_string(), text[v.byte_range()].to_string()));
                    }
                }
            }
        }
        Scope { body, values }
    }

    fn value_text(&self, name: &str) -> Option<&str> {
        self.values.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
}

impl<'d> HostContext<'d> {
    fn new(doc: &'d Document, launch: &LaunchSite) -> Option<HostContext<'d>> {
        let text = doc.text();
        let root = doc.tree()?.root_node();
        let functions = functions(text, root);
        let launcher = *functions.get(launch.enclosing_function.as_deref()?)?;
        let calls = calls_by_callee(text, root);
        let mut paths = Vec::new();
        let start = Frame { scope: Scope::of(text, launcher), params: parameter_names(text, launcher), called_with: None };
        extend_paths(text, &calls, launcher, vec![start], &mut paths);
        let defines = doc.model().defines.iter().filter_map(|d| Some((d.name.clone(), d.value?))).collect();
        Some(HostContext { text, paths, defines, file_constants: file_constants(text, root) })
    }

    fn launcher(&self) -> &Frame<'d> {
        &self.paths[0][0]
    }

    /// Grid or block components: `dim3(a, b)`, a `dim3` local, or a plain expression.
    fn dims(&self, text: &str) -> Vec<String> {
        let text = text.trim();
        let inner = text.strip_prefix("dim3").map(str::trim).and_then(|t| t.strip_prefix('(').and_then(|t| t.strip_suffix(')')));
        let parts = match (inner, self.launcher().scope.body.and_then(|b| dim3_local(self.text, b, text))) {
            (Some(inner), _) => split_args(inner),
            (None, Some(args)) => args,
            (None, None) => vec![text.to_string()],
        };
        parts.iter().map(|p| self.in_spec_names(p)).collect()
    }

    /// A launch expression with the launcher's computed locals (`blocks = (n + 255) / 256`)
    /// and file constants (`kBlock = BLOCK_SIZE`) replaced by what they stand for.
    fn in_spec_names(&self, text: &str) -> String {
        let launcher = &self.launcher().scope;
        let expanded = rename_identifiers_in(text, |word| {
            let init = launcher.value_text(word).map(strip_casts_everywhere)?;
            Some(if init.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') { init } else { format!("({init})") })
        });
        let expanded = rename_identifiers_in(&expanded, |word| self.file_constants.get(word).cloned());
        strip_outer_parens(&expanded).to_string()
    }

    /// The value of a size named at the launch, along each call path that gives one.
    fn size_values(&self, name: &str) -> Vec<Option<i64>> {
        self.paths.iter().map(|path| self.eval_name(path, 0, name, 0)).collect()
    }

    fn eval_name(&self, path: &[Frame], at: usize, name: &str, depth: usize) -> Option<i64> {
        if let Some(v) = self.defines.get(name) {
            return Some(*v);
        }
        if depth > 16 {
            return None;
        }
        let frame = path.get(at)?;
        if let Some(text) = frame.scope.value_text(name) {
            return self.eval_text(path, at, text, depth + 1);
        }
        let index = frame.params.iter().position(|p| p == name)?;
        let arg = frame.called_with.as_ref()?.get(index)?;
        self.eval_text(path, at + 1, arg, depth + 1)
    }

    fn eval_text(&self, path: &[Frame], at: usize, text: &str, depth: usize) -> Option<i64> {
        eval_constant(&strip_casts_everywhere(text), &|name| self.eval_name(path, at, name, depth))
    }

    /// A floating-point scalar: a literal at the launch, or one passed down a call path.
    fn float_value(&self, text: &str) -> Option<String> {
        let literal = |t: &str| {
            let t = t.trim().trim_end_matches(['f', 'F']);
            t.parse::<f64>().ok().map(|_| t.to_string())
        };
        let mut current = text.trim().to_string();
        for frame in self.paths.first()? {
            if let Some(v) = literal(&current) {
                return Some(v);
            }
            if let Some(v) = frame.scope.value_text(&current) {
                current = v.trim().to_string();
                continue;
            }
            let index = frame.params.iter().position(|p| *p == current)?;
            current = frame.called_with.as_ref()?.get(index)?.trim().to_string();
        }
        literal(&current)
    }

    /// The element count of the buffer passed as `arg`, from the `cudaMalloc` that allocates
    /// it, in the launcher's names.
    fn buffer_length(&self, arg: &str, element: &str) -> Option<String> {
        let path = self.paths.first()?;
        let mut name = arg.trim().to_string();
        for (at, frame) in path.iter().enumerate() {
            if let Some(bytes) = frame.scope.body.and_then(|b| malloc_bytes(self.text, b, &name)) {
                let length = strip_element_size(&bytes, element, &frame.scope)?;
                return Some(self.to_launcher_names(path, at, &length));
            }
            let index = frame.params.iter().position(|p| *p == name)?;
            name = frame.called_with.as_ref()?.get(index)?.trim().to_string();
        }
        None
    }

    /// Rewrites an expression in frame `at`'s names into the launcher's: locals are replaced by
    /// their initial values, names passed down as arguments by the parameters they become.
    fn to_launcher_names(&self, path: &[Frame], at: usize, text: &str) -> String {
        let mut text = text.to_string();
        for level in (1..=at).rev() {
            let frame = &path[level];
            let below = &path[level - 1];
            let args = below.called_with.as_deref().unwrap_or_default();
            text = rename_identifiers_in(&text, |word| {
                if let Some(j) = args.iter().position(|a| a.trim() == word) {
                    return below.params.get(j).cloned();
                }
                let init = frame.scope.value_text(word)?;
                let init = strip_casts_everywhere(init);
                let renamed = rename_identifiers_in(&init, |w| args.iter().position(|a| a.trim() == w).and_then(|j| below.params.get(j).cloned()));
                Some(format!("({renamed})"))
            });
        }
        text
    }
}

fn file_constants(text: &str, root: Node) -> HashMap<String, String> {
    let mut out = HashMap::new();
    let mut cursor = root.walk();
    for decl in root.named_children(&mut cursor).filter(|n| n.kind() == "declaration") {
        let mut inner = decl.walk();
        for init in decl.children_by_field_name("declarator", &mut inner).filter(|d| d.kind() == "init_declarator") {
            if let (Some(name), Some(value)) = (init.child_by_field_name("declarator"), init.child_by_field_name("value")) {
                if value.kind() == "identifier" {
                    out.insert(text[name.byte_range()].to_string(), text[value.byte_range()].to_string());
                }
            }
        }
    }
    out
}

fn strip_outer_parens(text: &str) -> &str {
    let t = text.trim();
    match t.strip_prefix('(').and_then(|r| r.strip_suffix(')')) {
        Some(inner) if balanced(inner) => inner.trim(),
        _ => t,
    }
}

fn balanced(text: &str) -> bool {
    let mut depth = 0i32;
    for c in text.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            _ => {}
        }
        if depth < 0 {
            return false;
        }
    }
    depth == 0
}

/// Follows the calls of `function` upwards, collecting every path that ends at a function
/// nobody in the file calls (or at the depth limit).
fn extend_paths<'d>(text: &'d str, calls: &HashMap<&'d str, Vec<(Node<'d>, Vec<String>)>>, function: Node<'d>, path: Vec<Frame<'d>>, out: &mut Vec<Vec<Frame<'d>>>) {
    if out.len() >= MAX_PATHS {
        return;
    }
    let name = function_name(text, function);
    let callers = name.and_then(|n| calls.get(n)).filter(|_| path.len() < MAX_DEPTH);
    let Some(callers) = callers.filter(|c| !c.is_empty()) else {
        out.push(path);
        return;
    };
    for (caller, args) in callers {
        if path.iter().any(|f| f.scope.body == caller.child_by_field_name("body")) {
            continue;
        }
        let mut next = path.clone();
        next.last_mut().expect("paths start with the launcher").called_with = Some(args.clone());
        next.push(Frame { scope: Scope::of(text, *caller), params: parameter_names(text, *caller), called_with: None });
        extend_paths(text, calls, *caller, next, out);
    }
}

/// Every call in the file, by callee name, with the function it sits in and its arguments.
fn calls_by_callee<'d>(text: &'d str, root: Node<'d>) -> HashMap<&'d str, Vec<(Node<'d>, Vec<String>)>> {
    let mut out: HashMap<&str, Vec<(Node, Vec<String>)>> = HashMap::new();
    for node in descendants(root) {
        if node.kind() != "call_expression" {
            continue;
        }
        let (Some(f), Some(args)) = (node.child_by_field_name("function"), node.child_by_field_name("arguments")) else { continue };
        let Some(caller) = std::iter::successors(node.parent(), |n| n.parent()).find(|n| n.kind() == "function_definition") else { continue };
        out.entry(&text[f.byte_range()]).or_default().push((caller, call_args(text, args)));
    }
    out
}

fn function_name<'d>(text: &'d str, function: Node<'d>) -> Option<&'d str> {
    let mut d = function.child_by_field_name("declarator");
    while let Some(n) = d {
        if n.kind() == "function_declarator" {
            return n.child_by_field_name("declarator").map(|name| &text[name.byte_range()]);
        }
        d = n.child_by_field_name("declarator");
    }
    None
}

fn functions<'d>(text: &'d str, root: Node<'d>) -> HashMap<&'d str, Node<'d>> {
    let mut out = HashMap::new();
    for node in descendants(root) {
        if node.kind() == "function_definition" {
            if let Some(name) = function_name(text, node) {
                out.entry(name).or_insert(node);
            }
        }
    }
    out
}

fn parameter_names(text: &str, function: Node) -> Vec<String> {
    let mut names = Vec::new();
    let mut d = function.child_by_field_name("declarator");
    while let Some(n) = d {
        if n.kind() == "function_declarator" {
            if let Some(list) = n.child_by_field_name("parameters") {
                let mut cursor = list.walk();
                for p in list.named_children(&mut cursor).filter(|p| p.kind() == "parameter_declaration") {
                    let name = p.child_by_field_name("declarator").and_then(declared_name);
                    names.push(name.map_or(String::new(), |n| text[n.byte_range()].to_string()));
                }
            }
            break;
        }
        d = n.child_by_field_name("declarator");
    }
    names
}

fn call_args(text: &str, list: Node) -> Vec<String> {
    let mut cursor = list.walk();
    list.named_children(&mut cursor).filter(|n| n.kind() != "comment").map(|n| text[n.byte_range()].to_string()).collect()
}

/// Splits `a, f(b, c), d` at its top-level commas.
fn split_args(text: &str) -> Vec<String> {
    split_top_level(text, ',').into_iter().map(|a| a.trim().to_string()).collect()
}

/// The constructor arguments of `dim3 name(...)` or `dim3 name = dim3(...)`/`{...}` in `body`.
fn dim3_local(text: &str, body: Node, name: &str) -> Option<Vec<String>> {
    let mut found = None;
    for node in descendants(body) {
        if found.is_some() || node.kind() != "declaration" {
            continue;
        }
        let is_dim3 = node.child_by_field_name("type").is_some_and(|t| &text[t.byte_range()] == "dim3");
        if !is_dim3 {
            continue;
        }
        let decl = &text[node.byte_range()];
        let Some(rest) = decl.trim_start_matches("dim3").trim_start().strip_prefix(name) else { continue };
        let rest = rest.trim_start().trim_start_matches('=').trim().trim_start_matches("dim3").trim().trim_end_matches(';').trim();
        let inner = rest.strip_prefix('(').and_then(|r| r.strip_suffix(')')).or_else(|| rest.strip_prefix('{').and_then(|r| r.strip_suffix('}')));
        found = inner.map(split_args);
    }
    found
}

/// The byte count given to `cudaMalloc(&name, bytes)` (with or without a `(void**)` cast).
fn malloc_bytes(text: &str, body: Node, name: &str) -> Option<String> {
    let mut found = None;
    for node in descendants(body) {
        if found.is_some() || node.kind() != "call_expression" {
            continue;
        }
        let Some(f) = node.child_by_field_name("function") else { continue };
        if !matches!(&text[f.byte_range()], "cudaMalloc" | "cudaMallocManaged" | "cudaMallocAsync") {
            continue;
        }
        let args = node.child_by_field_name("arguments").map(|a| call_args(text, a)).unwrap_or_default();
        let target = args.first().map(|a| a.replace("(void**)", "").replace("(void **)", "").replace(' ', ""));
        if target.as_deref() == Some(&format!("&{name}")) {
            found = args.get(1).cloned();
        }
    }
    found
}

/// `rows * hidden * sizeof(half)` → `rows * hidden`; a variable holding the byte count is
/// followed once through `scope`.
fn strip_element_size(bytes: &str, element: &str, scope: &Scope) -> Option<String> {
    let bytes = bytes.trim();
    let bytes = match scope.value_text(bytes) {
        Some(init) if identifiers_in(bytes).count() == 1 && !bytes.contains('(') => init.trim(),
        _ => bytes,
    };
    let bytes = expand_vector_sizes(bytes, scope);
    let factors = split_top_level(&bytes, '*');
    let is_size_of = |f: &str| {
        let f = f.replace(' ', "");
        f.starts_with("sizeof(") && (f == format!("sizeof({})", element.replace(' ', "")) || f.contains('*'))
    };
    let position = factors.iter().position(|f| is_size_of(f))?;
    let rest: Vec<&str> = factors.iter().enumerate().filter(|(i, _)| *i != position).map(|(_, f)| f.trim()).collect();
    let rest: Vec<String> = rest.iter().map(|f| strip_casts_everywhere(f)).collect();
    Some(if rest.is_empty() { "1".to_string() } else { rest.join(" * ") })
}

/// `h_a.size()` of a `std::vector<float> h_a(n)` → `(n)`.
fn expand_vector_sizes(bytes: &str, scope: &Scope) -> String {
    let mut out = bytes.to_string();
    for (name, init) in &scope.values {
        let call = format!("{name}.size()");
        let args = init.trim().strip_prefix('(').and_then(|i| i.strip_suffix(')'));
        if let Some(args) = args.filter(|_| out.contains(&call)) {
            let count = split_args(args).into_iter().next().unwrap_or_default();
            out = out.replace(&call, &format!("({count})"));
        }
    }
    out
}

/// `(size_t)rows * hidden` → `rows * hidden`: integer casts the spec's expressions do not need.
fn strip_casts_everywhere(text: &str) -> String {
    let mut out = text.to_string();
    for cast in ["(size_t)", "(int)", "(long)", "(long long)", "(unsigned)", "(int64_t)", "(uint64_t)"] {
        out = out.replace(cast, "");
    }
    out.trim().to_string()
}

fn rename_identifiers_in(text: &str, rename: impl Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        if !word.is_empty() {
            let starts_ident = word.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_');
            out.push_str(&starts_ident.then(|| rename(word)).flatten().unwrap_or_else(|| word.clone()));
            word.clear();
        }
    };
    for c in text.chars() {
        if c.is_ascii_alphanumeric() || c == '_' {
            word.push(c);
        } else {
            flush(&mut word, &mut out);
            out.push(c);
        }
    }
    flush(&mut word, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn element_size_is_stripped_from_byte_counts() {
        let scope = Scope { body: None, values: vec![("bytes".into(), "n * sizeof(float)".into())] };
        assert_eq!(strip_element_size("rows * hidden * sizeof(half)", "half", &scope).as_deref(), Some("rows * hidden"));
        assert_eq!(strip_element_size("sizeof(float) * (size_t)n", "float", &scope).as_deref(), Some("n"));
        assert_eq!(strip_element_size("bytes", "float", &scope).as_deref(), Some("n"));
        assert_eq!(strip_element_size("n * 4", "float", &scope), None);
    }

    #[test]
    fn caller_names_are_renamed_to_launcher_names() {
        let renamed = rename_identifiers_in("tokens * d_hidden", |w| (w == "d_hidden").then(|| "hidden".to_string()));
        assert_eq!(renamed, "tokens * hidden");
    }

    #[test]
    fn c_division_truncates_in_the_spec_too() {
        assert_eq!(c_division("(n + B - 1) / B"), "(n + B - 1) // B");
        assert_eq!(c_division("a // b / c"), "a // b // c");
    }

    #[test]
    fn top_level_commas_split_dim3_arguments() {
        assert_eq!(split_args("(n + 31) / 32, min(a, b), 1"), vec!["(n + 31) / 32", "min(a, b)", "1"]);
    }

    #[test]
    fn vector_types_count_their_lanes() {
        assert_eq!(dtype_of("float4"), Some((Dtype::F32, 4)));
        assert_eq!(dtype_of("__half"), Some((Dtype::F16, 1)));
        assert_eq!(dtype_of("MyStruct"), None);
    }
}
