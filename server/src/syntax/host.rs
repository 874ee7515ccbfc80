//! Host code, as tree-sitter sees it: function definitions, their parameters and the calls
//! between them. Templatize's spec scaffold follows these from a launch up to `main`, and the
//! workspace index uses them to find which files hold a kernel's host code.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use tree_sitter::Node;

use super::{descendants, eval_constant, identifiers_in, Dim3, Document, Expr, LaunchDim, LaunchSite, Span};

/// The name a function definition declares (`Foo::bar` for a qualified one).
pub fn function_name<'d>(text: &'d str, function: Node<'d>) -> Option<&'d str> {
    let mut d = function.child_by_field_name("declarator");
    while let Some(n) = d {
        if n.kind() == "function_declarator" {
            return n.child_by_field_name("declarator").map(|name| &text[name.byte_range()]);
        }
        d = n.child_by_field_name("declarator");
    }
    None
}

/// Whether the function defined as `definition` runs on the device only: `__global__`, or
/// `__device__` without `__host__`, among the words before its name. Its calls cannot call a
/// host function.
pub fn runs_on_device_only(text: &str, definition: Node) -> bool {
    let end = definition.child_by_field_name("declarator").map_or(definition.start_byte(), |d| d.start_byte());
    let words: Vec<&str> = text[definition.start_byte()..end].split(|c: char| !(c.is_alphanumeric() || c == '_')).collect();
    let has = |word: &str| words.contains(&word);
    has("__global__") || (has("__device__") && !has("__host__"))
}

/// The file's function definitions, each as its name and its whole text.
pub fn function_definitions<'t>(text: &'t str, root: Node<'t>) -> Vec<(&'t str, &'t str)> {
    function_nodes(text, root).map(|(name, f)| (name, &text[f.byte_range()])).collect()
}

/// The texts of those of `functions` that `code` calls, and of those they call in turn.
pub fn functions_called_from<'t>(functions: &[(&'t str, &'t str)], code: &str) -> Vec<&'t str> {
    let mut called: Vec<&str> = Vec::new();
    let mut frontier = vec![code];
    while let Some(code) = frontier.pop() {
        let words: std::collections::HashSet<&str> = identifiers_in(code).collect();
        for &(name, definition) in functions {
            if words.contains(name) && !called.contains(&definition) {
                called.push(definition);
                frontier.push(definition);
            }
        }
    }
    called
}

/// The class a type names: `Simulation` of `const Simulation<float>&`, `ns::Runner`, `struct Options`.
pub fn class_of(ty: &str) -> &str {
    let ty = ty.trim();
    let ty = ["const ", "struct ", "class ", "typename "].iter().fold(ty, |t, prefix| t.strip_prefix(prefix).unwrap_or(t).trim_start());
    let ty = ty.split('<').next().unwrap_or(ty).trim_end_matches(['*', '&', ' ']);
    ty.rsplit("::").next().unwrap_or(ty).trim()
}

/// The class of a method's qualified name: `Simulation` of `Simulation<Real>::step`.
pub fn class_of_method(function: &str) -> Option<&str> {
    let (class, _) = function.rsplit_once("::")?;
    Some(class_of(class))
}

/// Every function definition under `root`, by name; the first of overloads.
pub fn functions<'d>(text: &'d str, root: Node<'d>) -> HashMap<&'d str, Node<'d>> {
    let mut out = HashMap::new();
    for (name, node) in function_nodes(text, root) {
        out.entry(name).or_insert(node);
    }
    out
}

/// Every function definition under `root` with its name, in the file's order: overloads and
/// namesakes in other namespaces each.
pub fn function_nodes<'d>(text: &'d str, root: Node<'d>) -> impl Iterator<Item = (&'d str, Node<'d>)> {
    descendants(root).filter(|n| n.kind() == "function_definition").filter_map(move |node| Some((function_name(text, node)?, node)))
}

/// The names of a function's parameters, in order; an unnamed one is empty.
pub fn parameter_names(text: &str, function: Node) -> Vec<String> {
    parameters(text, function).into_iter().map(|p| p.name).collect()
}

/// Whether two functions take the same parameters, as alternatives a program picks between
/// do (`oddEvenMergeSort` and `bitonicSort`): the same names in the same order, at least one,
/// and the same types but for what the pointers point to (a `float` `boxFilter` beside a
/// `boxFilterRGBA` of `unsigned int`).
pub fn take_the_same_parameters(a: &[Parameter], b: &[Parameter]) -> bool {
    !a.is_empty() && a.len() == b.len() && a.iter().zip(b).all(|(a, b)| a.name == b.name && !a.name.is_empty() && a.out == b.out && (a.ty == b.ty || a.out.is_some()))
}

/// The functions of `text` other than `except` that take the same parameters as `params`.
pub fn twins_of<'d>(text: &'d str, root: Node<'d>, params: &[Parameter], except: &str) -> Vec<(&'d str, Node<'d>)> {
    function_nodes(text, root).filter(|(name, node)| *name != except && *name != "main" && take_the_same_parameters(&parameters(text, *node), params)).collect()
}

/// One parameter of a host function.
pub struct Parameter {
    /// Empty when unnamed.
    pub name: String,
    /// The type without qualifiers, pointers or references (`const float* x` gives `float`).
    pub ty: String,
    /// The default argument's text (`float eps = 1e-5f`).
    pub default: Option<String>,
    /// A non-const reference or pointer (`int &blocks`, `int *height`): the function can set
    /// the caller's variable.
    pub out: Option<Out>,
}

/// How a function can set its caller's variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Out {
    /// `int &blocks`, given `blocks`.
    Reference,
    /// `int *height`, given `&height`.
    Pointer,
}

/// A function's parameters, in order.
pub fn parameters(text: &str, function: Node) -> Vec<Parameter> {
    let mut out = Vec::new();
    let mut d = function.child_by_field_name("declarator");
    while let Some(n) = d {
        if n.kind() == "function_declarator" {
            if let Some(list) = n.child_by_field_name("parameters") {
                let mut cursor = list.walk();
                for p in list.named_children(&mut cursor).filter(|p| matches!(p.kind(), "parameter_declaration" | "optional_parameter_declaration")) {
                    let name = p.child_by_field_name("declarator").and_then(declared_name);
                    let ty = p.child_by_field_name("type").map_or(String::new(), |t| text[t.byte_range()].to_string());
                    let default = p.child_by_field_name("default_value").map(|v| text[v.byte_range()].to_string());
                    let is_const = text[p.byte_range()].trim_start().starts_with("const");
                    let settable = match p.child_by_field_name("declarator").map(|d| (d.kind(), d.child_by_field_name("declarator").map(|n| n.kind()))) {
                        _ if is_const => None,
                        Some(("reference_declarator", _)) => Some(Out::Reference),
                        Some(("pointer_declarator", Some("identifier"))) => Some(Out::Pointer),
                        _ => None,
                    };
                    out.push(Parameter { name: name.map_or(String::new(), |n| text[n.byte_range()].to_string()), ty, default, out: settable });
                }
            }
            break;
        }
        d = n.child_by_field_name("declarator");
    }
    out
}

/// The type of every variable `body` declares, by name (qualifiers and pointers left off).
pub fn local_types(text: &str, body: Node) -> Vec<(String, String)> {
    descendants(body).filter(|n| n.kind() == "declaration").flat_map(|d| declared_types(text, d)).collect()
}

/// The names `declaration` declares, each with its type (qualifiers and pointers left off).
pub fn declared_types(text: &str, declaration: Node) -> Vec<(String, String)> {
    let Some(ty) = declaration.child_by_field_name("type") else { return Vec::new() };
    let mut cursor = declaration.walk();
    let names = declaration.children_by_field_name("declarator", &mut cursor).filter_map(declared_name);
    names.map(|name| (text[name.byte_range()].to_string(), text[ty.byte_range()].to_string())).collect()
}

/// The names a declaration, or one of its declarators, declares.
pub fn declared_names<'t>(text: &'t str, node: Node) -> Vec<&'t str> {
    let declarators: Vec<Node> = if node.kind() == "declaration" { node.children_by_field_name("declarator", &mut node.walk()).collect() } else { vec![node] };
    declarators.into_iter().filter_map(declared_name).map(|name| &text[name.byte_range()]).collect()
}

/// The identifier a declarator declares, through pointers, references and arrays.
pub fn declared_name(declarator: Node) -> Option<Node> {
    let mut node = declarator;
    // A reference declarator (`dim3 &dims`) and the parentheses of a function pointer
    // (`int (*reduce)(float *, int)`) hold their declarator as an unnamed child.
    while let Some(inner) = node.child_by_field_name("declarator").or_else(|| matches!(node.kind(), "reference_declarator" | "parenthesized_declarator").then(|| node.named_child(node.named_child_count().saturating_sub(1) as u32)).flatten()) {
        node = inner;
    }
    (node.kind() == "identifier").then_some(node)
}

/// One call of a function, in the host code of some file.
#[derive(Clone, Copy)]
pub struct Call<'d> {
    /// The text of the file the call is in, which `caller`'s byte ranges index.
    pub text: &'d str,
    pub caller: Node<'d>,
    pub node: Node<'d>,
    /// The arguments before those the callee takes: the key a dispatch names first
    /// (`DISPATCH_DEVICE_IMPL(key, a, b)` calls the implementation with `a, b`).
    pub key_arguments: usize,
}

impl<'d> Call<'d> {
    pub fn args(&self) -> Vec<String> {
        let args = self.node.child_by_field_name("arguments").map(|a| call_args(self.text, a)).unwrap_or_default();
        args.into_iter().skip(self.key_arguments).collect()
    }

    /// Whether the callee is written with a namespace (`ns::run(…)`, `::run(…)`).
    pub fn is_qualified(&self) -> bool {
        let callee = self.node.child_by_field_name("function");
        let callee = callee.map(|f| if f.kind() == "template_function" { f.child_by_field_name("name").unwrap_or(f) } else { f });
        callee.is_some_and(|f| f.kind() == "qualified_identifier")
    }

    /// `<float, 256>` of `run<float, 256>(...)`, each argument's text.
    pub fn template_args(&self) -> Vec<String> {
        let Some(function) = self.node.child_by_field_name("function") else { return Vec::new() };
        let Some(list) = function.child_by_field_name("arguments").filter(|_| function.kind() == "template_function") else { return Vec::new() };
        let mut cursor = list.walk();
        list.named_children(&mut cursor).map(|n| self.text[n.byte_range()].trim().to_string()).collect()
    }
}

/// Every call in `text` by callee name (template arguments and namespaces left off:
/// `ops::run<float>` is `run`), with the function it sits in.
pub fn calls_by_callee<'d>(text: &'d str, root: Node<'d>, out: &mut HashMap<&'d str, Vec<Call<'d>>>) {
    for node in descendants(root) {
        if node.kind() != "call_expression" {
            continue;
        }
        let Some(mut callee) = node.child_by_field_name("function") else { continue };
        while let Some(name) = callee.child_by_field_name("name").filter(|_| matches!(callee.kind(), "qualified_identifier" | "template_function")) {
            callee = name;
        }
        let Some(caller) = std::iter::successors(node.parent(), |n| n.parent()).find(|n| n.kind() == "function_definition") else { continue };
        out.entry(&text[callee.byte_range()]).or_default().push(Call { text, caller, node, key_arguments: 0 });
    }
}

/// The namespaces and classes that `node` is in, outermost first: those around it, then, where
/// it is in (or is) a function defined with a qualified name (`void ops::launch(…)`,
/// `Runner<T>::run`), that name's. An anonymous namespace adds nothing, as it adds nothing to
/// a name.
pub fn scope_of(text: &str, node: Node) -> Vec<String> {
    let mut enclosing: Vec<Node> = std::iter::successors(Some(node), |n| n.parent()).collect();
    enclosing.reverse();
    let mut scope = Vec::new();
    for around in &enclosing {
        match around.kind() {
            "namespace_definition" | "class_specifier" | "struct_specifier" => {
                let name = around.child_by_field_name("name").filter(|_| around.child_by_field_name("body").is_some_and(|b| b.byte_range().contains(&node.start_byte())));
                scope.extend(name.map(|n| scope_words(&text[n.byte_range()])).unwrap_or_default());
            }
            "function_definition" => {
                let name = function_name(text, *around).unwrap_or_default();
                scope.extend(name.rsplit_once("::").map(|(qualifier, _)| scope_words(qualifier)).unwrap_or_default());
            }
            _ => {}
        }
    }
    scope
}

/// `a::b`, `Runner<T>` → `["a", "b"]`, `["Runner"]`: the names of a qualifier, without
/// template arguments.
fn scope_words(qualifier: &str) -> Vec<String> {
    let mut depth = 0usize;
    let bare: String = qualifier.chars().filter(|c| {
        match c {
            '<' => depth += 1,
            '>' => depth = depth.saturating_sub(1),
            _ => return depth == 0 && !c.is_whitespace(),
        }
        false
    }).collect();
    bare.split("::").filter(|w| !w.is_empty()).map(str::to_string).collect()
}

/// Whether the call expression `call` in `text` can call a function defined in `scope` (see
/// [`scope_of`]) as C++ looks its name up: unqualified, from within that scope (or where the
/// file uses a namespace, which may bring it in); qualified (`ops::launch(…)`), where the
/// qualifier, read from the call's scope or an outer one, names that scope.
pub fn call_reaches_scope(text: &str, call: Node, scope: &[String], uses_namespaces: bool) -> bool {
    let Some(mut callee) = call.child_by_field_name("function") else { return true };
    if callee.kind() == "template_function" {
        callee = callee.child_by_field_name("name").unwrap_or(callee);
    }
    let written = &text[callee.byte_range()];
    let Some((qualifier, _)) = written.rsplit_once("::").filter(|_| callee.kind() == "qualified_identifier") else {
        return uses_namespaces || scope.is_empty() || scope_of(text, call).starts_with(scope);
    };
    let qualifier = scope_words(qualifier);
    if written.trim_start().starts_with("::") {
        return qualifier == scope;
    }
    let here = scope_of(text, call);
    (0..=here.len()).any(|k| here[..k].iter().chain(&qualifier).eq(scope.iter())) || uses_namespaces && scope.ends_with(&qualifier)
}

/// Whether `text` brings a namespace's names into others (`using namespace at;`).
pub fn uses_namespaces(text: &str) -> bool {
    text.contains("using namespace")
}

/// The implementations a file registers under a key, outside any function:
/// `REGISTER_DEVICE_IMPL(scale_impl, CUDA, scale_cuda);` (OpenMMLab's device registry) is the
/// key `scale_impl` → `scale_cuda`, which a call that names the key first dispatches to
/// (`DISPATCH_DEVICE_IMPL(scale_impl, input, output)` calls `scale_cuda(input, output)`). The
/// registering macro is one whose name says `REGISTER`, its first argument the key and its last
/// the implementation.
pub fn registered_implementations<'t>(text: &'t str, root: Node) -> Vec<(&'t str, &'t str)> {
    let mut out = Vec::new();
    for (word, at) in super::words_at(text).filter(|(w, _)| w.contains("REGISTER") && w.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')) {
        let after = &text[at + word.len()..];
        let Some(open) = after.find(|c: char| !c.is_whitespace()).filter(|&i| after[i..].starts_with('(')) else { continue };
        let Some(close) = super::matching_paren(&after[open..]) else { continue };
        let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
        let in_function = root.descendant_for_byte_range(at, at).is_some_and(|n| std::iter::successors(Some(n), |p| p.parent()).any(|p| p.kind() == "function_definition"));
        if text[line_start..at].trim_start().starts_with('#') || in_function {
            continue;
        }
        let args = crate::spec::split_top_level(&after[open + 1..open + close], ',');
        let (Some(key), Some(value)) = (args.first().map(|a| a.trim()), args.last().map(|a| a.trim().trim_start_matches('&').trim())) else { continue };
        if args.len() >= 2 && super::is_identifier(key) && super::is_identifier(value) {
            out.push((key, value));
        }
    }
    out
}

/// The calls that reach a registered implementation through its key (`registry`, key →
/// implementation): each call naming the key first (`DISPATCH_DEVICE_IMPL(scale_impl, x, y)`)
/// is one of the implementation, with the arguments after the key.
pub fn add_dispatched_calls<'d>(registry: &[(&'d str, &'d str)], calls: &mut HashMap<&'d str, Vec<Call<'d>>>) {
    let mut dispatched: Vec<(&'d str, Call<'d>)> = Vec::new();
    for (&callee, callee_calls) in calls.iter() {
        for call in callee_calls {
            let first = call.node.child_by_field_name("arguments").and_then(|a| a.named_child(0)).map(|n| &call.text[n.byte_range()]);
            let implementations = registry.iter().filter(|(key, value)| Some(*key) == first && *value != callee && *key != callee);
            dispatched.extend(implementations.map(|(_, value)| (*value, Call { key_arguments: 1, ..*call })));
        }
    }
    for (value, call) in dispatched {
        calls.entry(value).or_default().push(call);
    }
}

/// The text of each argument in an argument list.
pub fn call_args(text: &str, list: Node) -> Vec<String> {
    let mut cursor = list.walk();
    list.named_children(&mut cursor).filter(|n| n.kind() != "comment").map(|n| text[n.byte_range()].to_string()).collect()
}

/// The functions of `doc` whose bodies mention any of `names` (call them, launch them, take
/// their address), other than those functions themselves.
pub fn functions_mentioning(doc: &Document, names: &BTreeSet<String>) -> Vec<String> {
    let Some(tree) = doc.tree() else { return Vec::new() };
    let text = doc.text();
    functions(text, tree.root_node())
        .into_iter()
        .filter(|(name, _)| !names.contains(*name))
        .filter(|(_, node)| node.child_by_field_name("body").is_some_and(|b| identifiers_in(&code_of(text, b)).any(|w| names.contains(w))))
        .map(|(name, _)| name.to_string())
        .collect()
}

/// The text of `node` with its comments blanked out: a call commented out (`// evaluate(mmaBase,
/// "Mma-Base");`) mentions nothing.
fn code_of(text: &str, node: Node) -> String {
    let mut code = String::with_capacity(node.byte_range().len());
    let mut at = node.start_byte();
    for comment in descendants(node).filter(|n| n.kind() == "comment") {
        code.push_str(&text[at..comment.start_byte()]);
        code.push(' ');
        at = comment.end_byte();
    }
    code.push_str(&text[at..node.end_byte()]);
    code
}

/// The functions `root`'s functions call with a variable's address (`get_size(path, &rows)`),
/// other than CUDA's own (`cudaMalloc(&d_x, …)`).
pub fn given_an_address(text: &str, root: Node) -> BTreeSet<String> {
    let mut calls = HashMap::new();
    calls_by_callee(text, root, &mut calls);
    let is_cuda = |name: &str| name.starts_with("cuda") || name.starts_with("cu") && name[2..].starts_with(char::is_uppercase);
    calls.into_iter()
        .filter(|(callee, _)| crate::syntax::is_identifier(callee) && !is_cuda(callee))
        .filter(|(_, calls)| calls.iter().any(|c| c.args().iter().any(|a| a.trim().strip_prefix('&').is_some_and(|v| crate::syntax::is_identifier(v.trim())))))
        .map(|(callee, _)| callee.to_string())
        .collect()
}

/// The functions `root` calls to size a launch: in a launch's `<<<…>>>` or a `dim3`'s
/// extents (`dim3 grid(div_ceil(n, 64))`), other than CUDA's own.
pub fn sizing_launches(text: &str, root: Node) -> BTreeSet<String> {
    let in_configs = descendants(root)
        .filter(|n| n.kind() == "call_expression" && std::iter::successors(n.parent(), |p| p.parent()).take_while(|p| p.kind() != "compound_statement").any(|p| p.kind() == "kernel_call_syntax"))
        .filter_map(|call| call.child_by_field_name("function").filter(|f| f.kind() == "identifier"))
        .map(|f| &text[f.byte_range()]);
    // The grammar reads `dim3 grid(f(n, 64), m)` as a function's declaration (`f` a type, its
    // arguments parameters): the calls are read from the declarator's text.
    let dim3s = descendants(root).filter(|n| n.kind() == "declaration" && n.child_by_field_name("type").is_some_and(|t| &text[t.byte_range()] == "dim3"));
    let declarators = dim3s.flat_map(|declaration| declaration.children_by_field_name("declarator", &mut declaration.walk()).collect::<Vec<_>>());
    let in_dim3s = declarators.flat_map(|declarator| {
        let extents = declarator.child_by_field_name("parameters").or_else(|| declarator.child_by_field_name("value"));
        names_called_in(extents.map_or("", |e| &text[e.byte_range()]))
    });
    in_configs.chain(in_dim3s).filter(|name| !name.starts_with("cuda") && *name != "dim3").map(str::to_string).collect()
}

/// The names `text` calls: each identifier a `(` follows.
pub fn names_called_in(text: &str) -> Vec<&str> {
    super::words_at(text)
        .filter(|(word, at)| !word.starts_with(|c: char| c.is_ascii_digit()) && text[at + word.len()..].trim_start().starts_with('('))
        .map(|(word, _)| word)
        .collect()
}

/// The launches of `kernel` through the driver API in `doc`: `cuLaunchKernel(f, gx, gy, gz, bx,
/// by, bz, shared, stream, args, extra)` (or `cuLaunchCooperativeKernel`) where `f` comes from
/// `cuModuleGetFunction(&f, module, "kernel")`, with the kernel's arguments read from the
/// `void *args[] = {&a, &b}` the call passes; and through the runtime's
/// `cudaLaunchKernel((void *)kernel, grid, block, args, shared, stream)` (or
/// `cudaLaunchCooperativeKernel`). A launch that passes its arguments another way (the `extra`
/// buffer) is left out: its arguments cannot be read.
pub fn driver_launches(doc: &Document, kernel: &str) -> Vec<LaunchSite> {
    let Some(tree) = doc.tree() else { return Vec::new() };
    let text = doc.text();
    let root = tree.root_node();
    let calls_of = |names: &'static [&'static str]| {
        descendants(root).filter(move |n| n.kind() == "call_expression" && n.child_by_field_name("function").is_some_and(|f| names.contains(&&text[f.byte_range()])))
    };
    let quoted = format!("\"{kernel}\"");
    let found: BTreeSet<Handle> = calls_of(&["cuModuleGetFunction"])
        .filter_map(|call| {
            let args = call_args(text, call.child_by_field_name("arguments")?);
            (args.get(2).map(|a| a.trim()) == Some(quoted.as_str())).then(|| Handle::of(text, call, args[0].trim().trim_start_matches('&').trim()))
        })
        .collect();
    let handles = with_handles_handed_out(text, root, found);
    let mut out = Vec::new();
    for call in calls_of(&["cuLaunchKernel", "cuLaunchCooperativeKernel"]) {
        let Some(list) = call.child_by_field_name("arguments") else { continue };
        let mut cursor = list.walk();
        let nodes: Vec<Node> = list.named_children(&mut cursor).filter(|n| n.kind() != "comment").collect();
        if nodes.len() < 10 || !handles.contains(&Handle::of(text, call, text[nodes[0].byte_range()].trim())) {
            continue;
        }
        let function = std::iter::successors(call.parent(), |n| n.parent()).find(|n| n.kind() == "function_definition");
        // A kernel of no parameters is given none (`NULL`, and no `extra` buffer either).
        let is_null = |node: Option<&Node>| node.is_some_and(|n| matches!(text[n.byte_range()].trim(), "NULL" | "nullptr" | "0"));
        let passes_none = is_null(nodes.get(9)) && is_null(nodes.get(10));
        let args = match passes_none {
            true => Some(Vec::new()),
            false => function.and_then(|f| f.child_by_field_name("body")).and_then(|body| kernel_params_array(text, body, &text[nodes[9].byte_range()])),
        };
        let Some(args) = args else { continue };
        let dim = |first: usize| {
            let parts: Vec<&str> = nodes[first..first + 3].iter().map(|n| text[n.byte_range()].trim()).collect();
            let values: Option<Vec<u64>> = parts.iter().map(|p| eval_constant(p, &|_| None).and_then(|v| u64::try_from(v).ok())).collect();
            LaunchDim {
                text: format!("dim3({})", parts.join(", ")),
                span: Span { end_byte: nodes[first + 2].end_byte(), end: nodes[first + 2].end_position().into(), ..Span::of(nodes[first]) },
                extent: values.map(|v| Dim3 { x: v[0], y: v[1], z: v[2] }),
            }
        };
        let config = ApiLaunch { call, callee: nodes[0], function, grid: dim(1), block: dim(4), shared_bytes: Some(nodes[7]), stream: Some(nodes[8]) };
        out.push(config.site(text, kernel, args));
    }
    out.extend(runtime_launches(text, root, kernel));
    out.extend(configured_launches(text, root, kernel));
    out
}

/// `cudaLaunchKernelEx(&config, kernel, a, b, …)`: the arguments follow the kernel, and the grid,
/// block, dynamic shared memory and stream are the fields the function gives `config`
/// (`config.gridDim = grid;`). A field it does not give leaves the launch out.
fn configured_launches(text: &str, root: Node, kernel: &str) -> Vec<LaunchSite> {
    let calls = descendants(root).filter(|n| n.kind() == "call_expression" && n.child_by_field_name("function").is_some_and(|f| &text[f.byte_range()] == "cudaLaunchKernelEx"));
    let mut out = Vec::new();
    for call in calls {
        let Some(list) = call.child_by_field_name("arguments") else { continue };
        let mut cursor = list.walk();
        let nodes: Vec<Node> = list.named_children(&mut cursor).filter(|n| n.kind() != "comment").collect();
        // `add_rows<4>`: the kernel, instantiated.
        let (name, template_args) = match nodes.get(1).filter(|n| n.kind() == "template_function") {
            Some(instance) => {
                let arguments = instance.child_by_field_name("arguments");
                let mut cursor = instance.walk();
                let as_expr = |a: Node| {
                    let t = text[a.byte_range()].trim().to_string();
                    Expr { value: eval_constant(&t, &|_| None), text: t, span: Span::of(a) }
                };
                let args: Vec<Expr> = arguments.map(|list| list.named_children(&mut cursor).map(as_expr).collect()).unwrap_or_default();
                (instance.child_by_field_name("name").map_or("", |n| &text[n.byte_range()]), args)
            }
            None => (nodes.get(1).map_or("", |n| launched_name(&text[n.byte_range()])), Vec::new()),
        };
        if nodes.len() < 2 || name != kernel {
            continue;
        }
        let config = text[nodes[0].byte_range()].trim().trim_start_matches('&').trim();
        let function = std::iter::successors(call.parent(), |n| n.parent()).find(|n| n.kind() == "function_definition");
        let Some(body) = function.and_then(|f| f.child_by_field_name("body")) else { continue };
        let field = |name: &str| {
            descendants(body).filter(|n| n.kind() == "assignment_expression" && n.start_byte() < call.start_byte()).filter_map(|assignment| {
                let left = text[assignment.child_by_field_name("left")?.byte_range()].replace(' ', "");
                (left == format!("{config}.{name}") || left == format!("{config}->{name}")).then_some(assignment.child_by_field_name("right")?)
            }).last()
        };
        let (Some(grid), Some(block)) = (field("gridDim"), field("blockDim")) else { continue };
        let args = nodes[2..].iter().map(|n| text[n.byte_range()].trim().to_string()).collect();
        let config = ApiLaunch { call, callee: nodes[1], function, grid: dim3_value(text, grid), block: dim3_value(text, block), shared_bytes: field("dynamicSmemBytes"), stream: field("stream") };
        out.push(LaunchSite { template_args, ..config.site(text, kernel, args) });
    }
    out
}

/// A grid or block an API launch is given as a `dim3` value (`grid`, `dim3(n / 256)`, `256`),
/// its extent where it is a number.
fn dim3_value(text: &str, node: Node) -> LaunchDim {
    let t = text[node.byte_range()].trim().to_string();
    let extent = eval_constant(&t, &|_| None).and_then(|v| u64::try_from(v).ok()).map(|x| Dim3 { x, y: 1, z: 1 });
    LaunchDim { text: t, span: Span::of(node), extent }
}

/// A variable that holds a kernel's handle: its name, and the function that declares it (its
/// start byte), none for one at file scope.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Handle {
    function: Option<usize>,
    name: String,
}

impl Handle {
    /// `name` as the code at `node` sees it: the local of the function around, else the file's.
    fn of(text: &str, node: Node, name: &str) -> Handle {
        let function = std::iter::successors(node.parent(), |n| n.parent()).find(|n| n.kind() == "function_definition");
        let declares = |f: &Node| {
            let local = f.child_by_field_name("body").is_some_and(|body| local_types(text, body).iter().any(|(n, _)| n == name));
            local || parameter_names(text, *f).iter().any(|p| p == name)
        };
        Handle { function: function.filter(declares).map(|f| f.start_byte()), name: name.to_string() }
    }
}

/// `handles`, the variables holding a kernel's handle, with those the functions that find it
/// hand to their callers: `CUfunction k = load(module);` where `load` ends `return found;`,
/// and `init(argc, argv, &k)` where `init` sets `*out = found;` through its parameter `out`.
fn with_handles_handed_out(text: &str, root: Node, mut handles: BTreeSet<Handle>) -> BTreeSet<Handle> {
    const MAX_ROUNDS: usize = 3;
    let functions = functions(text, root);
    let mut calls = HashMap::new();
    calls_by_callee(text, root, &mut calls);
    for _ in 0..MAX_ROUNDS {
        let mut more = BTreeSet::new();
        for (name, function) in &functions {
            let Some(body) = function.child_by_field_name("body") else { continue };
            let params = parameter_names(text, *function);
            let (returned, set_params) = handles_handed_out(text, body, &handles);
            for call in calls.get(name).into_iter().flatten() {
                if returned {
                    more.extend(variable_given_call(text, call.node).map(|v| Handle::of(text, call.node, &v)));
                }
                for (param, arg) in params.iter().zip(call.args()) {
                    if let Some(variable) = arg.trim().strip_prefix('&').map(str::trim).filter(|v| set_params.contains(param) && crate::syntax::is_identifier(v)) {
                        more.insert(Handle::of(text, call.node, variable));
                    }
                }
            }
        }
        if more.is_subset(&handles) {
            break;
        }
        handles.extend(more);
    }
    handles
}

/// Whether `body` returns one of `handles`, and the names it stores one through (`*out = h;`).
fn handles_handed_out(text: &str, body: Node, handles: &BTreeSet<Handle>) -> (bool, BTreeSet<String>) {
    // The name first: working out whose local it is walks the function.
    let is_handle = |node: Option<Node>| {
        node.is_some_and(|n| {
            let name = text[n.byte_range()].trim();
            handles.iter().any(|h| h.name == name) && handles.contains(&Handle::of(text, n, name))
        })
    };
    let mut returned = false;
    let mut set = BTreeSet::new();
    for node in descendants(body) {
        match node.kind() {
            "return_statement" => returned |= is_handle(node.named_child(0)),
            "assignment_expression" if is_handle(node.child_by_field_name("right")) => {
                let target = node.child_by_field_name("left").filter(|l| l.kind() == "pointer_expression").and_then(|l| l.child_by_field_name("argument"));
                set.extend(target.filter(|t| t.kind() == "identifier").map(|t| text[t.byte_range()].to_string()));
            }
            _ => {}
        }
    }
    (returned, set)
}

/// The variable a call's value is given to: `k` of `CUfunction k = load(m);` or `k = load(m);`.
fn variable_given_call(text: &str, call: Node) -> Option<String> {
    let parent = call.parent()?;
    let target = match parent.kind() {
        "init_declarator" => parent.child_by_field_name("declarator").and_then(declared_name),
        "assignment_expression" => parent.child_by_field_name("left").filter(|l| l.kind() == "identifier"),
        _ => None,
    }?;
    Some(text[target.byte_range()].to_string())
}

/// `cudaLaunchKernel((void *)kernel, grid, block, args, shared, stream)` and
/// `cudaLaunchCooperativeKernel`, whose grid and block are `dim3` values as a `<<<…>>>` launch's.
fn runtime_launches(text: &str, root: Node, kernel: &str) -> Vec<LaunchSite> {
    let named = ["cudaLaunchKernel", "cudaLaunchCooperativeKernel"];
    let calls = descendants(root).filter(|n| n.kind() == "call_expression" && n.child_by_field_name("function").is_some_and(|f| named.contains(&&text[f.byte_range()])));
    let mut out = Vec::new();
    for call in calls {
        let Some(list) = call.child_by_field_name("arguments") else { continue };
        let mut cursor = list.walk();
        let nodes: Vec<Node> = list.named_children(&mut cursor).filter(|n| n.kind() != "comment").collect();
        if nodes.len() < 4 || launched_name(&text[nodes[0].byte_range()]) != kernel {
            continue;
        }
        let function = std::iter::successors(call.parent(), |n| n.parent()).find(|n| n.kind() == "function_definition");
        let Some(args) = function.and_then(|f| f.child_by_field_name("body")).and_then(|body| kernel_params_array(text, body, &text[nodes[3].byte_range()])) else { continue };
        let config = ApiLaunch { call, callee: nodes[0], function, grid: dim3_value(text, nodes[1]), block: dim3_value(text, nodes[2]), shared_bytes: nodes.get(4).copied(), stream: nodes.get(5).copied() };
        out.push(config.site(text, kernel, args));
    }
    out
}

/// A launch through an API call (`cuLaunchKernel`, `cudaLaunchKernel`, their cooperative
/// forms): the call, the kernel's handle or name, the function it is in, and its configuration.
struct ApiLaunch<'t> {
    call: Node<'t>,
    callee: Node<'t>,
    function: Option<Node<'t>>,
    grid: LaunchDim,
    block: LaunchDim,
    shared_bytes: Option<Node<'t>>,
    stream: Option<Node<'t>>,
}

impl ApiLaunch<'_> {
    fn site(self, text: &str, kernel: &str, args: Vec<String>) -> LaunchSite {
        let expr = |node: Node| {
            let t = text[node.byte_range()].trim().to_string();
            Expr { value: eval_constant(&t, &|_| None), text: t, span: Span::of(node) }
        };
        LaunchSite {
            kernel: kernel.to_string(),
            resolved: false,
            span: Span::of(self.call),
            callee_span: Span::of(self.callee),
            template_args: Vec::new(),
            grid: self.grid,
            block: self.block,
            shared_bytes: self.shared_bytes.map(expr),
            stream: self.stream.map(expr),
            args,
            enclosing_function: self.function.and_then(|f| function_name(text, f)).map(str::to_string),
            max_threads: None,
        }
    }
}

/// The kernel a runtime launch names: `kernel`, `(void *)kernel`, `reinterpret_cast<const void
/// *>(&kernel)` → `kernel`.
fn launched_name(argument: &str) -> &str {
    let mut a = argument.trim();
    if let Some(inner) = a.strip_prefix("reinterpret_cast<").and_then(|r| r.split_once(">(")).and_then(|(_, r)| r.strip_suffix(')')) {
        a = inner.trim();
    }
    if let Some((_, rest)) = a.strip_prefix('(').and_then(|r| r.split_once(')')).filter(|(ty, _)| ty.trim_end().ends_with('*')) {
        a = rest.trim();
    }
    a.trim_start_matches('&').trim()
}

/// The values a driver-API launch passes as its kernel's arguments: `args` (or `&args[0]`)
/// names `void *args[] = {&d_a, (void *)&n, reinterpret_cast<void *>(&d_b)}` in `body`, whose
/// elements give `d_a`, `n` and `d_b`.
fn kernel_params_array(text: &str, body: Node, passed: &str) -> Option<Vec<String>> {
    let passed = passed.trim();
    let name = passed.strip_prefix('&').and_then(|p| p.trim().strip_suffix("[0]")).unwrap_or(passed).trim();
    let init = descendants(body).find_map(|node| {
        let declarator = node.child_by_field_name("declarator").filter(|_| node.kind() == "init_declarator")?;
        let value = node.child_by_field_name("value").filter(|v| v.kind() == "initializer_list")?;
        (declared_name(declarator).map(|n| &text[n.byte_range()]) == Some(name)).then_some(value)
    });
    let elements: Vec<String> = match init {
        Some(init) => {
            let mut cursor = init.walk();
            init.named_children(&mut cursor).filter(|n| n.kind() != "comment").map(|n| address_taken(&text[n.byte_range()])).collect()
        }
        None => elements_assigned(text, body, name)?,
    };
    elements.iter().all(|e| !e.is_empty()).then_some(elements)
}

/// The addresses an array of kernel arguments is given element by element, in order:
/// `params[0] = (void *)&g_out; params[1] = (void *)&g_in;`. None unless every element from the
/// first is given once.
fn elements_assigned(text: &str, body: Node, array: &str) -> Option<Vec<String>> {
    let mut given: BTreeMap<i64, String> = BTreeMap::new();
    for node in descendants(body).filter(|n| n.kind() == "assignment_expression") {
        let Some(left) = node.child_by_field_name("left").filter(|l| l.kind() == "subscript_expression") else { continue };
        let Some(right) = node.child_by_field_name("right") else { continue };
        let element = &text[left.byte_range()];
        let Some((target, index)) = element.strip_suffix(']').and_then(|e| e.split_once('[')) else { continue };
        let Some(index) = eval_constant(index, &|_| None).filter(|_| target.trim() == array) else { continue };
        if given.insert(index, address_taken(&text[right.byte_range()])).is_some() {
            return None;
        }
    }
    let in_order = given.keys().copied().eq(0..given.len() as i64);
    (in_order && !given.is_empty()).then(|| given.into_values().collect())
}

/// The element a loop before byte `before` gives each element of `array`, over its variable:
/// `("i", "(i + 1) * 256")` of `for (int i = 0; i < n; i++) { sizes[i] = (i + 1) * 256; }`.
/// `None` where no such loop fills it.
pub fn element_filled_by_loop(text: &str, body: Node, array: &str, before: usize) -> Option<(String, String)> {
    descendants(body).filter(|n| n.kind() == "for_statement" && n.end_byte() <= before).find_map(|for_loop| {
        let variable = loop_variable(text, for_loop)?;
        let loop_body = for_loop.child_by_field_name("body")?;
        descendants(loop_body).filter(|n| n.kind() == "assignment_expression" && n.child(1).is_some_and(|op| &text[op.byte_range()] == "=")).find_map(|assignment| {
            let left = assignment.child_by_field_name("left").filter(|l| l.kind() == "subscript_expression")?;
            let (target, index) = text[left.byte_range()].strip_suffix(']')?.split_once('[')?;
            let right = assignment.child_by_field_name("right")?;
            (target.trim() == array && index.trim() == variable).then(|| (variable.clone(), text[right.byte_range()].to_string()))
        })
    })
}

/// The variable a `for` loop declares in its initializer: `i` of `for (int i = 0; …)`.
fn loop_variable(text: &str, for_loop: Node) -> Option<String> {
    let declaration = for_loop.child_by_field_name("initializer").filter(|i| i.kind() == "declaration")?;
    let declarator = declaration.child_by_field_name("declarator")?;
    Some(text[declared_name(declarator).unwrap_or(declarator).byte_range()].to_string())
}

/// What a pointer cast casts: `(floatX*)x`, `reinterpret_cast<uint4 *>(x)`,
/// `static_cast<void **>(&p)` → `x`, `x`, `&p`; any other text as it is (`(float*)a + k`
/// casts only `a`).
pub fn without_pointer_cast(text: &str) -> &str {
    let text = text.trim();
    let named = ["reinterpret_cast<", "static_cast<", "const_cast<"].iter().find_map(|cast| text.strip_prefix(cast));
    let (ty, operand) = match named {
        Some(rest) => match rest.split_once(">(").and_then(|(ty, operand)| Some((ty, operand.strip_suffix(')')?))) {
            Some(cast) => cast,
            None => return text,
        },
        None => match text.strip_prefix('(').and_then(|rest| rest.split_once(')')) {
            Some(cast) => cast,
            None => return text,
        },
    };
    let operand = operand.trim();
    if ty.trim_end().ends_with('*') && is_one_term(operand) { operand } else { text }
}

/// `(buffers, 1)` of `buffers[1]`: an array's element at a literal index.
pub fn element_at_number(text: &str) -> Option<(&str, u32)> {
    let (base, index) = text.trim().strip_suffix(']')?.split_once('[')?;
    let base = base.trim();
    (base.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') && !base.is_empty()).then_some(())?;
    Some((base, index.trim().parse().ok()?))
}

/// `x`, `&p`, `a.b->c`, `d[2 * i]`, `(x + 1)`, `x.data_ptr<float>()`: no operator outside
/// brackets but a leading `&`.
fn is_one_term(text: &str) -> bool {
    let mut depth = 0i32;
    // `& d_x`, spaced, is `&d_x`.
    let mut chars = text.strip_prefix('&').map_or(text, str::trim_start).chars().peekable();
    let mut any = false;
    while let Some(c) = chars.next() {
        any = true;
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            '-' if depth == 0 && chars.peek() == Some(&'>') => {
                chars.next();
            }
            // Template arguments and namespaces: `x.data_ptr<at::Half>()`.
            c if depth == 0 && !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '<' | '>' | ':')) => return false,
            _ => {}
        }
        if depth < 0 {
            return false;
        }
    }
    any && depth == 0
}

/// `&x`, `(void *)&x` and `reinterpret_cast<void *>(&x)` → `x`; empty when the element is not
/// the address of a variable.
pub fn address_taken(element: &str) -> String {
    let mut e = without_pointer_cast(element);
    while let Some(inner) = e.strip_prefix('(').and_then(|r| r.strip_suffix(')')) {
        e = inner.trim();
    }
    match e.strip_prefix('&').map(|name| name.trim()).map(|name| name.strip_prefix('(').and_then(|n| n.strip_suffix(')')).unwrap_or(name).trim()) {
        // `&d_x`, `&bufs.x`, `&arrays->data`, `&(input.g_a)`.
        Some(name) if name.replace("->", ".").chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.') => name.to_string(),
        // `&buffers[1]`: an element of an array of pointers, at a number.
        Some(name) if element_at_number(name).is_some() => name.split_whitespace().collect(),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_array_a_loop_fills_gives_each_element_over_the_loops_variable() {
        let code = "int main() {\n  int sizes[8];\n  int other[8];\n  for (int i = 0; i < 8; i++) {\n    other[i] += 1;\n    sizes[i] = (i + 1) * 256;\n  }\n  int n = sizes[0];\n}\n";
        let doc = Document::new(code.to_string());
        let body = descendants(doc.tree().unwrap().root_node()).find(|n| n.kind() == "compound_statement").unwrap();
        let read = code.find("int n").unwrap();
        assert_eq!(element_filled_by_loop(code, body, "sizes", read), Some(("i".to_string(), "(i + 1) * 256".to_string())));
        // `other[i] += 1` adds to what is there: no element is given.
        assert_eq!(element_filled_by_loop(code, body, "other", read), None);
        // A loop after the read has not run there.
        assert_eq!(element_filled_by_loop(code, body, "sizes", code.find("for").unwrap()), None);
    }

    #[test]
    fn alternatives_take_the_same_parameters_but_for_what_buffers_hold() {
        let params = |code: &str| {
            let doc = Document::new(code.to_string());
            let function = descendants(doc.tree().unwrap().root_node()).find(|n| n.kind() == "function_definition").unwrap();
            parameters(doc.text(), function)
        };
        let floats = params("void f(float* out, const float* in, int n) {}");
        assert!(take_the_same_parameters(&floats, &params("void g(unsigned* out, const float* in, int n) {}")));
        assert!(!take_the_same_parameters(&floats, &params("void g(float* out, const double* in, int n) {}")), "a read-only buffer's type is its own");
        assert!(!take_the_same_parameters(&floats, &params("void g(float* out, const float* in, long n) {}")));
        assert!(!take_the_same_parameters(&floats, &params("void g(float* dst, const float* in, int n) {}")));
        assert!(!take_the_same_parameters(&floats, &params("void g(const float* in, float* out, int n) {}")));
        assert!(!take_the_same_parameters(&params("void f() {}"), &params("void g() {}")));
    }

    #[test]
    fn functions_that_size_a_launch_are_read_from_dim3s_and_launch_configurations() {
        // `dim3 grid(div_ceil(n, br), …)` parses as a function's declaration.
        let text = "void f() {\n  dim3 grid(div_ceil(seq_len, br), heads * 2), block(round_up(d));\n  dim3 rest = dim3(cdiv(n, 3));\n  int tiles = count_tiles(n);\n  k<<<div_up(n, 4), 32, cudaGetSmem(n)>>>(scale(x));\n}\n";
        let tree = crate::syntax::document::parse_source(text);
        let found: Vec<String> = sizing_launches(text, tree.root_node()).into_iter().collect();
        assert_eq!(found, ["cdiv", "div_ceil", "div_up", "round_up"]);
    }

    #[test]
    fn the_pointer_an_allocation_is_given_is_read_through_casts_and_spaces() {
        assert_eq!(address_taken("&d_x"), "d_x");
        assert_eq!(address_taken("(void **)&d_x"), "d_x");
        assert_eq!(address_taken("(void**)& E_C"), "E_C", "Rodinia writes a space after the `&`");
        assert_eq!(address_taken("reinterpret_cast<void **>(&bufs.x)"), "bufs.x");
        assert_eq!(address_taken("(void **)&x + 1"), "");
        assert_eq!(address_taken("(void**)&gpuResult[1]"), "gpuResult[1]", "an array of buffers");
        assert_eq!(address_taken("&bufs[i]"), "", "not at a number");
    }

    #[test]
    fn parameters_are_named_through_pointers_references_and_function_pointers() {
        let text = "void run(int (*reduce)(float *, int), const float *in, dim3 &dims, float (&row)[4], void (*done)()) {}";
        let tree = crate::syntax::document::parse_source(text);
        let function = tree.root_node().named_child(0).unwrap();
        let names: Vec<String> = parameters(text, function).into_iter().map(|p| p.name).collect();
        assert_eq!(names, ["reduce", "in", "dims", "row", "done"]);
    }

    #[test]
    fn a_name_in_a_comment_is_no_mention() {
        let text = "int main() {\n    // evaluate(naive);\n    /* evaluate(wide); */\n    evaluate(tiled);\n}\n";
        let doc = Document::new(text.to_string());
        let names = |words: &[&str]| words.iter().map(|w| w.to_string()).collect::<BTreeSet<String>>();
        assert_eq!(functions_mentioning(&doc, &names(&["tiled"])), ["main"]);
        assert!(functions_mentioning(&doc, &names(&["naive", "wide"])).is_empty());
    }

    #[test]
    fn kernels_and_device_functions_run_on_the_device_only() {
        let text = "\
template <typename T> __global__ void k(T* x) {}
__device__ __forceinline__ float f(float x) { return x; }
__host__ __device__ int both(int x) { return x; }
static inline void launch(int n) {}
template <typename T> void run(T* x) {}
";
        let tree = crate::syntax::document::parse_source(text);
        let device_only: Vec<(&str, bool)> = function_nodes(text, tree.root_node()).map(|(name, node)| (name, runs_on_device_only(text, node))).collect();
        assert_eq!(device_only, [("k", true), ("f", true), ("both", false), ("launch", false), ("run", false)]);
    }

    #[test]
    fn a_call_reaches_the_namesake_its_namespaces_name() {
        let text = "\
namespace fused { namespace rows { void fwd_cuda(int n) {} void fwd(int n) { fwd_cuda(n); } } }
namespace fused::causal { void fwd_cuda(int n) {} void fwd(int n) { fwd_cuda(n); } }
template <typename T> struct Runner { static void run(int n); };
template <typename T> void Runner<T>::run(int n) { fused::rows::fwd_cuda(n); }
namespace fused { void top(int n) { rows::fwd(n); causal::fwd(n); ::fused::causal::fwd_cuda(n); Runner<float>::run(n); } }
namespace { void local(int n) { fused::rows::fwd(n); } }
";
        let tree = crate::syntax::document::parse_source(text);
        let mut calls = HashMap::new();
        calls_by_callee(text, tree.root_node(), &mut calls);
        let definitions: Vec<Node> = descendants(tree.root_node()).filter(|n| n.kind() == "function_definition").collect();
        let scope_of_definition = |name: &str, nth: usize| scope_of(text, *definitions.iter().filter(|d| function_name(text, **d).is_some_and(|f| f.ends_with(name))).nth(nth).unwrap());
        assert_eq!(scope_of_definition("fwd_cuda", 1), ["fused", "causal"]);
        assert_eq!(scope_of_definition("run", 0), ["Runner"]);
        // Qualified calls are found by the bare name, and each reaches its own namespace's.
        let callers = |name: &str, scope: &[String]| -> Vec<&str> {
            calls[name].iter().filter(|c| call_reaches_scope(c.text, c.node, scope, false)).map(|c| function_name(text, c.caller).unwrap()).collect()
        };
        assert_eq!(callers("fwd_cuda", &scope_of_definition("fwd_cuda", 0)), ["fwd", "Runner<T>::run"]);
        assert_eq!(callers("fwd_cuda", &scope_of_definition("fwd_cuda", 1)), ["fwd", "top"]);
        assert_eq!(callers("fwd", &scope_of_definition("fwd", 0)), ["top", "local"]);
        assert_eq!(callers("run", &scope_of_definition("run", 0)), ["top"]);
        // Where a file uses a namespace, an unqualified call may reach any.
        let unqualified = &calls["fwd_cuda"][0];
        assert!(!call_reaches_scope(text, unqualified.node, &scope_of_definition("fwd_cuda", 1), false) && call_reaches_scope(text, unqualified.node, &scope_of_definition("fwd_cuda", 1), true));
    }

    #[test]
    fn a_dispatch_of_a_registered_key_is_a_call_of_its_implementation() {
        let text = "\
#define REGISTER_DEVICE_IMPL(key, device, value) static Registrar key##device(#key, value)
void scale_cuda(Tensor x, Tensor out) { launch(x, out); }
REGISTER_DEVICE_IMPL(scale_impl, CUDA, scale_cuda);
REGISTER_OP(shift_impl, &shift_cuda);
void scale_impl(Tensor x, Tensor out) {
  DISPATCH_DEVICE_IMPL(scale_impl, x, out);
  REGISTER_DEVICE_IMPL(inside, CUDA, a_function);
}
void forward(Tensor x, Tensor out) { scale_impl(x, out); }
";
        let tree = crate::syntax::document::parse_source(text);
        // Outside functions only, and not the macro's own definition.
        let registry = registered_implementations(text, tree.root_node());
        assert_eq!(registry, [("scale_impl", "scale_cuda"), ("shift_impl", "shift_cuda")]);
        let mut calls = HashMap::new();
        calls_by_callee(text, tree.root_node(), &mut calls);
        add_dispatched_calls(&registry, &mut calls);
        // Called from `scale_impl` with the arguments after the key; the call of `scale_impl`
        // itself in `forward` is no dispatch.
        let [dispatch] = calls["scale_cuda"].as_slice() else { panic!("{:?}", calls["scale_cuda"].len()) };
        assert_eq!((function_name(text, dispatch.caller), dispatch.args()), (Some("scale_impl"), vec!["x".to_string(), "out".to_string()]));
    }
}
