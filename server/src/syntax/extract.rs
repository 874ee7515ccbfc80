//! Phase 1 of the analysis: the facts of one top-level item of a file (a function, a
//! declaration, a `#define`, a namespace...), from a tree-sitter tree and the queries in
//! `queries/cuda/`. What an item reads from the rest of the file comes in through an
//! [`Environment`] and the set of kernel names, so that its analysis can be cached and reused
//! while neither changes (see `incremental.rs`, phase 2).

use std::collections::{HashMap, HashSet};
use std::ops::Range;
use std::sync::{Arc, OnceLock};

use streaming_iterator::StreamingIterator;
use tree_sitter::{Node, Query, QueryCursor};

use super::consteval::{parse_int_literal, size_of_type};
use super::environment::{unqualified, ConstantSource, Environment, Locals};
use super::model::*;

/// A compiled query and the capture indices the extraction reads.
struct CompiledQuery {
    query: Query,
    captures: HashMap<&'static str, u32>,
}

impl CompiledQuery {
    fn new(source: &str, names: &[&'static str]) -> CompiledQuery {
        let query = Query::new(&super::language(), source)
            .unwrap_or_else(|e| panic!("embedded query does not compile: {e}"));
        let captures = names
            .iter()
            .map(|n| {
                let index = query
                    .capture_index_for_name(n)
                    .unwrap_or_else(|| panic!("embedded query lacks capture @{n}"));
                (*n, index)
            })
            .collect();
        CompiledQuery { query, captures }
    }

    fn index(&self, name: &str) -> u32 {
        self.captures[name]
    }
}

fn items_query() -> &'static CompiledQuery {
    static QUERY: OnceLock<CompiledQuery> = OnceLock::new();
    QUERY.get_or_init(|| {
        CompiledQuery::new(
            include_str!("../../../queries/cuda/items.scm"),
            &[
                "kernel", "kernel.name", "device", "device.name", "launch", "launch.callee",
                "launch.config", "launch.args", "define", "define.name", "define.value",
                "constant", "constant.qualifier", "constant.name", "constant.value",
            ],
        )
    })
}

fn kernel_body_query() -> &'static CompiledQuery {
    static QUERY: OnceLock<CompiledQuery> = OnceLock::new();
    QUERY.get_or_init(|| {
        CompiledQuery::new(
            include_str!("../../../queries/cuda/kernel_body.scm"),
            &["pragma", "pragma.argument", "block_dim", "stride", "shared", "name"],
        )
    })
}

/// Compiles both embedded queries now, so that a broken query fails at start-up, not mid-edit.
pub fn compile_queries() {
    items_query();
    kernel_body_query();
}

/// What an item declares for the whole file; it depends on the item's text alone.
#[derive(Clone, Debug, Default)]
pub(super) struct Declarations {
    /// Object-like `#define`s, without values: those depend on the whole file.
    pub defines: Vec<Define>,
    /// File- and namespace-scope `const`/`constexpr` integers, as (name, value text).
    pub constants: Vec<(String, String)>,
    pub kernel_names: Vec<String>,
}

/// The nodes of one item that the items query found, and the item's declarations.
#[derive(Default)]
pub(super) struct ItemNodes<'t> {
    kernels: Vec<(Node<'t>, Node<'t>)>,
    devices: Vec<(Node<'t>, Node<'t>)>,
    launches: Vec<Launch<'t>>,
    pub declarations: Declarations,
}

struct Launch<'t> {
    call: Node<'t>,
    callee: Node<'t>,
    config: Node<'t>,
    args: Node<'t>,
}

/// Runs the items query over the items of `root` at `wanted` (ascending indices into `items`,
/// the children of `root`) and returns their nodes, in the order of `wanted`. One query pass
/// per run of consecutive items: each pass starts at the root, and a pass per item would walk
/// the root's children once for every item.
pub(super) fn collect_items<'t>(root: Node<'t>, items: &[Node<'t>], wanted: &[usize], text: &'t str) -> Vec<ItemNodes<'t>> {
    let q = items_query();
    let mut collected: Vec<ItemNodes<'t>> = wanted.iter().map(|_| ItemNodes::default()).collect();
    let mut run_start = 0;
    while run_start < wanted.len() {
        let mut run_end = run_start + 1;
        while run_end < wanted.len() && wanted[run_end] == wanted[run_end - 1] + 1 {
            run_end += 1;
        }
        let run: Range<usize> = wanted[run_start]..wanted[run_end - 1] + 1;
        let mut cursor = QueryCursor::new();
        cursor.set_byte_range(items[run.start].start_byte()..items[run.end - 1].end_byte());
        let mut matches = cursor.matches(&q.query, root, text.as_bytes());
        while let Some(m) = matches.next() {
            let get = |name: &str| m.nodes_for_capture_index(q.index(name)).next();
            let Some(whole) = get("kernel").or(get("device")).or(get("launch")).or(get("define")).or(get("constant")) else {
                continue;
            };
            // The byte range also lets in items that touch the run's ends.
            let Some(index) = item_index(items, whole).filter(|i| run.contains(i)) else { continue };
            let nodes = &mut collected[run_start + index - run.start];
            if let (Some(item), Some(name)) = (get("kernel"), get("kernel.name")) {
                nodes.declarations.kernel_names.push(text[unqualified_name(name).0.byte_range()].to_string());
                nodes.kernels.push((item, name));
            } else if let (Some(item), Some(name)) = (get("device"), get("device.name")) {
                nodes.devices.push((item, name));
            } else if let Some(call) = get("launch") {
                nodes.launches.push(Launch {
                    call,
                    callee: get("launch.callee").expect("pattern captures callee"),
                    config: get("launch.config").expect("pattern captures config"),
                    args: get("launch.args").expect("pattern captures args"),
                });
            } else if let (Some(define), Some(name)) = (get("define"), get("define.name")) {
                let value_span = get("define.value").map(|v| define_value_span(v, text));
                let value_text = value_span.map(|v| text[v.start_byte..v.end_byte].to_string()).unwrap_or_default();
                nodes.declarations.defines.push(Define {
                    name: text[name.byte_range()].to_string(),
                    value_text,
                    value: None,
                    span: trimmed_span(define, text),
                    value_span,
                });
            } else if let (Some(qualifier), Some(name), Some(value)) =
                (get("constant.qualifier"), get("constant.name"), get("constant.value"))
            {
                if matches!(&text[qualifier.byte_range()], "const" | "constexpr") {
                    nodes.declarations.constants.push((text[name.byte_range()].to_string(), text[value.byte_range()].to_string()));
                }
            }
        }
        run_start = run_end;
    }
    collected
}

/// The index of the item that holds `node`: the last one starting at or before it that also
/// reaches its end (a zero-width item can share a start with the next).
fn item_index(items: &[Node], node: Node) -> Option<usize> {
    let starting_before = items.partition_point(|i| i.start_byte() <= node.start_byte());
    (0..starting_before).rev().find(|&i| items[i].end_byte() >= node.end_byte())
}

/// One item's share of the model, computed under one environment and one set of kernel names;
/// spans are where the item stood when it was analysed.
#[derive(Clone, Debug, Default)]
pub(super) struct ItemAnalysis {
    pub kernels: Vec<Kernel>,
    pub device_functions: Vec<DeviceFunction>,
    /// With `max_threads` left `None`: it reads the launched kernel, which may be in another item.
    pub launches: Vec<LaunchSite>,
    /// Each kernel name the launches call, and whether the file declared it: whether a launch
    /// is resolved decides which kernel its tunable sites belong to.
    pub resolutions: Vec<(String, bool)>,
    /// Tunable sites found while analysing the kernels, then the launches, in the order the
    /// whole-file analysis records them (ties in the final sort keep that order).
    pub kernel_tunables: Vec<TunableEvent>,
    pub launch_tunables: Vec<TunableEvent>,
    pub syntax_errors: Vec<SyntaxError>,
}

#[derive(Clone, Debug)]
pub(super) enum TunableEvent {
    Site(TunableSite),
    /// A kernel's use of the `#define` `name`: the whole-file pass records each define's site
    /// once per kernel, so it decides which use records it.
    DefineUse { kernel: String, name: String, locals: Arc<Locals> },
}

/// Analyses the item `item`, whose nodes `collect_items` found.
pub(super) fn analyze_item<'t>(
    text: &'t str,
    item: Node<'t>,
    nodes: ItemNodes<'t>,
    env: &Environment,
    kernel_names: &HashSet<String>,
) -> ItemAnalysis {
    let mut extractor = Extractor { text, env, kernel_names, analysis: ItemAnalysis::default(), tunables: Vec::new() };
    for (kernel, name) in nodes.kernels {
        let kernel = extractor.kernel(kernel, name);
        extractor.analysis.kernels.push(kernel);
    }
    extractor.analysis.kernel_tunables = std::mem::take(&mut extractor.tunables);
    extractor.build_device_functions(nodes.devices);
    extractor.build_launches(nodes.launches);
    extractor.analysis.launch_tunables = extractor.tunables;
    extractor.analysis.syntax_errors = syntax_errors(item, text);
    extractor.analysis
}

struct Extractor<'t, 'e> {
    text: &'t str,
    env: &'e Environment,
    kernel_names: &'e HashSet<String>,
    analysis: ItemAnalysis,
    tunables: Vec<TunableEvent>,
}

impl<'t> Extractor<'t, '_> {
    fn text_of(&self, node: Node) -> &'t str {
        &self.text[node.byte_range()]
    }

    fn eval(&self, text: &str, locals: &Locals) -> Option<i64> {
        self.env.eval(text, locals)
    }

    fn kernel(&mut self, item: Node<'t>, name_node: Node<'t>) -> Kernel {
        // An out-of-line definition (`ns::k`) or an explicit specialisation (`k<float>`) is `k`.
        let (name_node, _) = unqualified_name(name_node);
        let name = self.text_of(name_node).to_string();
        let template = item.parent().filter(|p| p.kind() == "template_declaration");
        let linkage = item.parent().filter(|p| p.kind() == "linkage_specification");
        let outer = template.or(linkage).unwrap_or(item);
        // `extern "C" __global__ void k()`, or a kernel inside an `extern "C" { ... }` block.
        let block_linkage = item
            .parent()
            .filter(|p| p.kind() == "declaration_list")
            .and_then(|list| list.parent())
            .filter(|p| p.kind() == "linkage_specification");
        let extern_c = linkage
            .or(block_linkage)
            .and_then(|l| l.child_by_field_name("value"))
            .is_some_and(|v| self.text_of(v) == "\"C\"");
        let body = item.child_by_field_name("body");
        let template_params = template
            .and_then(|t| t.child_by_field_name("parameters"))
            .map(|list| self.template_params(list))
            .unwrap_or_default();
        let declarator = item.child_by_field_name("declarator");
        let params = declarator
            .and_then(|d| d.child_by_field_name("parameters"))
            .map(|list| self.params(list))
            .unwrap_or_default();
        let launch_bounds = named_children(item)
            .find(|c| c.kind() == "launch_bounds")
            .map(|lb| self.launch_bounds(lb));

        for p in &template_params {
            if let TemplateParamKind::Value { integer: true, .. } = p.kind {
                let value = p.default.as_deref().and_then(|d| self.eval(d, &Locals::default()));
                self.push_tunable(TunableKind::TemplateParam, Some(&name), p.span, p.name.clone(), value);
            }
        }
        if let Some(lb) = &launch_bounds {
            self.push_expr_tunable(TunableKind::LaunchBoundsMaxThreads, &name, &lb.max_threads);
            if let Some(min) = &lb.min_blocks {
                self.push_expr_tunable(TunableKind::LaunchBoundsMinBlocks, &name, min);
            }
        }
        // Template parameters hide defines of the same name inside the kernel, and so do the
        // kernel's parameters: a macro of that name would have rewritten the declaration, so
        // where the parameter is declared the macro is not defined (a `#define BlockWidth 80`
        // under an `#ifdef` that also leaves `short BlockWidth` out of the list).
        let mut locals = Locals::default();
        for name in template_params.iter().map(|p| &p.name).chain(params.iter().map(|p| &p.name)) {
            locals.scalars.insert(name.clone(), None);
        }
        let locals = Arc::new(locals);
        let shared = match body {
            Some(body) => self.scan_body(&name, body, &locals),
            None => Vec::new(),
        };
        if let Some(lb) = &launch_bounds {
            self.note_defines_in(&name, lb.span, &locals);
        }

        let signature_end = body.map(|b| b.start_byte()).unwrap_or(item.end_byte());
        Kernel {
            signature: self.signature(outer, signature_end),
            name,
            span: Span::of(outer),
            name_span: Span::of(name_node),
            is_definition: body.is_some(),
            extern_c,
            template_params,
            params,
            launch_bounds,
            shared,
        }
    }

    fn template_params(&self, list: Node) -> Vec<TemplateParam> {
        named_children(list)
            .filter_map(|p| {
                let span = Span::of(p);
                match p.kind() {
                    "type_parameter_declaration" | "optional_type_parameter_declaration" => {
                        let name = named_children(p).find(|c| c.kind() == "type_identifier")?;
                        Some(TemplateParam {
                            name: self.text_of(name).to_string(),
                            kind: TemplateParamKind::Type,
                            default: p.child_by_field_name("default_type").map(|d| self.text_of(d).to_string()),
                            span,
                        })
                    }
                    "parameter_declaration" | "optional_parameter_declaration" => {
                        let ty = self.text_of(p.child_by_field_name("type")?).to_string();
                        let name = p.child_by_field_name("declarator")?;
                        Some(TemplateParam {
                            name: self.text_of(name).to_string(),
                            kind: TemplateParamKind::Value { integer: is_integer_type(&ty), ty },
                            default: p.child_by_field_name("default_value").map(|d| self.text_of(d).to_string()),
                            span,
                        })
                    }
                    _ => None,
                }
            })
            .collect()
    }

    /// A declaration's text from `start` to `end` of `outer` on one line, as the build compiles
    /// it: its tokens, so that a conditional inside its parameter list shows settled (the
    /// parser read neither the directives nor the branches not taken).
    fn signature(&self, outer: Node, end: usize) -> String {
        let text = &self.text[outer.start_byte()..end];
        if !text.contains('#') {
            return fold_whitespace(text.trim_end_matches(';'));
        }
        let mut out = String::new();
        let mut last_end = None;
        for token in descendants(outer).take_while(|n| n.start_byte() < end).filter(|n| n.child_count() == 0 && n.end_byte() <= end && n.start_byte() < n.end_byte()) {
            if last_end.is_some_and(|e| e < token.start_byte()) {
                out.push(' ');
            }
            out.push_str(self.text_of(token));
            last_end = Some(token.end_byte());
        }
        fold_whitespace(out.trim_end_matches(';'))
    }

    fn params(&self, list: Node) -> Vec<Param> {
        named_children(list)
            // `int *partial_sums = NULL` is an optional parameter: the kernel still takes it.
            .filter(|p| matches!(p.kind(), "parameter_declaration" | "optional_parameter_declaration"))
            // `k(void)` takes nothing: C's spelling of an empty list.
            .filter(|p| !(p.child_by_field_name("declarator").is_none() && self.text_of(*p).trim() == "void"))
            .map(|p| {
                let mut declarator = p.child_by_field_name("declarator");
                let mut pointer_depth = 0u8;
                let mut is_restrict = false;
                let mut name_node = None;
                while let Some(d) = declarator {
                    match d.kind() {
                        "pointer_declarator" | "reference_declarator" => {
                            pointer_depth += u8::from(d.kind() == "pointer_declarator");
                            is_restrict |= named_children(d)
                                .any(|c| c.kind() == "type_qualifier" && is_restrict_qualifier(self.text_of(c)));
                            declarator = d.child_by_field_name("declarator").or_else(|| d.named_child((d.named_child_count() as u32).saturating_sub(1)));
                        }
                        "array_declarator" => {
                            pointer_depth += 1;
                            declarator = d.child_by_field_name("declarator");
                        }
                        "identifier" => {
                            name_node = Some(d);
                            declarator = None;
                        }
                        _ => declarator = None,
                    }
                }
                let is_const = named_children(p).any(|c| c.kind() == "type_qualifier" && self.text_of(c) == "const");
                is_restrict |= named_children(p).any(|c| c.kind() == "type_qualifier" && is_restrict_qualifier(self.text_of(c)));
                let full = self.text_of(p);
                let ty = match name_node {
                    Some(n) => {
                        let (s, e) = (n.start_byte() - p.start_byte(), n.end_byte() - p.start_byte());
                        format!("{}{}", &full[..s], &full[e..])
                    }
                    None => full.to_string(),
                };
                Param {
                    name: name_node.map(|n| self.text_of(n).to_string()).unwrap_or_default(),
                    ty: fold_whitespace(&ty),
                    base_type: p.child_by_field_name("type").map(|t| fold_whitespace(self.text_of(t))).unwrap_or_default(),
                    pointer_depth,
                    is_const,
                    is_restrict,
                    span: Span::of(p),
                }
            })
            .collect()
    }

    fn launch_bounds(&self, node: Node) -> LaunchBounds {
        let mut args = named_children(node).filter(|c| c.kind() != "comment");
        let locals = Locals::default();
        let max_threads = args.next().map(|a| self.expr(a, &locals)).unwrap_or_else(|| Expr {
            text: String::new(),
            span: Span::of(node),
            value: None,
        });
        let min_blocks = args.next().map(|a| self.expr(a, &locals));
        LaunchBounds { max_threads, min_blocks, span: Span::of(node) }
    }

    fn expr(&self, node: Node, locals: &Locals) -> Expr {
        let text = self.text_of(node);
        Expr { text: text.to_string(), span: Span::of(node), value: self.eval(text, locals) }
    }

    /// Records the tunable sites of one kernel body and returns its `__shared__` declarations.
    fn scan_body(&mut self, kernel: &str, body: Node<'t>, locals: &Arc<Locals>) -> Vec<SharedDecl> {
        let q = kernel_body_query();
        let mut cursor = QueryCursor::new();
        cursor.set_byte_range(body.byte_range());
        let mut matches = cursor.matches(&q.query, body, self.text.as_bytes());
        let mut shared = Vec::new();
        let mut names = Vec::new();
        while let Some(m) = matches.next() {
            let get = |name: &str| m.nodes_for_capture_index(q.index(name)).next();
            if let Some(pragma) = get("pragma") {
                let argument = self.text_of(get("pragma.argument").expect("pattern captures argument"));
                let factor = argument.trim().strip_prefix("unroll").map(str::trim).unwrap_or("");
                let value = if factor.is_empty() { None } else { self.eval(factor, locals) };
                let span = trimmed_span(pragma, self.text);
                self.push_tunable(TunableKind::PragmaUnroll, Some(kernel), span, fold_whitespace(&self.text[span.start_byte..span.end_byte]), value);
                // The factor is preprocessor text, not identifier nodes: find its defines here.
                self.note_defines_in(kernel, span, locals);
            } else if let Some(node) = get("block_dim") {
                self.push_tunable(TunableKind::BlockDim, Some(kernel), Span::of(node), self.text_of(node).to_string(), None);
            } else if let Some(node) = get("stride") {
                if self.is_compile_time(node, locals) {
                    let value = self.eval(self.text_of(node), locals);
                    self.push_tunable(TunableKind::LoopStride, Some(kernel), Span::of(node), self.text_of(node).to_string(), value);
                }
            } else if let Some(node) = get("shared") {
                shared.extend(self.shared_decls(kernel, node, locals));
            } else if let Some(node) = get("name") {
                names.push(node);
            }
        }
        for name in names {
            self.note_define(kernel, self.text_of(name), locals);
        }
        shared
    }

    /// Whether an expression in a kernel is fixed when the kernel is compiled: literals, template
    /// parameters, `#define`s, file-scope constants and operators over them. `blockDim.x`, an
    /// argument or a local computed at run time make it a run-time value.
    fn is_compile_time(&self, node: Node, locals: &Locals) -> bool {
        match node.kind() {
            "number_literal" | "sizeof_expression" | "comment" => true,
            "identifier" | "qualified_identifier" => {
                let name = self.text_of(node);
                locals.contains_key(name) || self.env.contains(unqualified(name))
            }
            "binary_expression" | "unary_expression" | "parenthesized_expression" | "conditional_expression" => {
                named_children(node).all(|c| self.is_compile_time(c, locals))
            }
            "cast_expression" => node.child_by_field_name("value").is_some_and(|v| self.is_compile_time(v, locals)),
            _ => false,
        }
    }

    fn shared_decls(&mut self, kernel: &str, decl: Node<'t>, locals: &Locals) -> Vec<SharedDecl> {
        let is_extern = named_children(decl)
            .any(|c| c.kind() == "storage_class_specifier" && self.text_of(c) == "extern");
        let element_type = decl
            .child_by_field_name("type")
            .map(|t| fold_whitespace(self.text_of(t)))
            .unwrap_or_default();
        let mut cursor = decl.walk();
        let declarators: Vec<Node> = decl.children_by_field_name("declarator", &mut cursor).collect();
        declarators
            .into_iter()
            .map(|declarator| {
                let mut dims = Vec::new();
                let mut node = declarator;
                let mut name = String::new();
                loop {
                    match node.kind() {
                        "array_declarator" => {
                            if let Some(size) = node.child_by_field_name("size") {
                                let dim = self.expr(size, locals);
                                if self.is_compile_time(size, locals) {
                                    self.push_expr_tunable(TunableKind::SharedArrayDim, kernel, &dim);
                                }
                                dims.push(dim);
                            }
                            node = match node.child_by_field_name("declarator") {
                                Some(inner) => inner,
                                None => break,
                            };
                        }
                        "init_declarator" => match node.child_by_field_name("declarator") {
                            Some(inner) => node = inner,
                            None => break,
                        },
                        _ => {
                            name = self.text_of(node).to_string();
                            break;
                        }
                    }
                }
                // The walk went from the outer declarator inwards: the last dimension first.
                dims.reverse();
                let bytes = if is_extern {
                    None
                } else {
                    size_of_type(&element_type).and_then(|size| {
                        dims.iter().try_fold(size, |acc, d| acc.checked_mul(u64::try_from(d.value?).ok()?))
                    })
                };
                SharedDecl { name, element_type: element_type.clone(), dims, is_extern, bytes, span: Span::of(decl) }
            })
            .collect()
    }

    fn note_defines_in(&mut self, kernel: &str, span: Span, locals: &Arc<Locals>) {
        for word in identifiers_in(&self.text[span.start_byte..span.end_byte]) {
            self.note_define(kernel, word, locals);
        }
    }

    /// Notes that `kernel` uses `name`, when that is a `#define` the kernel does not shadow.
    fn note_define(&mut self, kernel: &str, name: &str, locals: &Arc<Locals>) {
        if locals.contains_key(name) || !matches!(self.env.get(name), Some(ConstantSource::Define(_))) {
            return;
        }
        self.tunables.push(TunableEvent::DefineUse { kernel: kernel.to_string(), name: name.to_string(), locals: locals.clone() });
    }

    fn push_tunable(&mut self, kind: TunableKind, kernel: Option<&str>, span: Span, text: String, value: Option<i64>) {
        self.tunables.push(TunableEvent::Site(TunableSite { kind, kernel: kernel.map(str::to_string), span, text, value }));
    }

    fn push_expr_tunable(&mut self, kind: TunableKind, kernel: &str, expr: &Expr) {
        self.push_tunable(kind, Some(kernel), expr.span, expr.text.clone(), expr.value);
    }

    fn build_device_functions(&mut self, devices: Vec<(Node<'t>, Node<'t>)>) {
        for (item, name_node) in devices {
            let (name_node, _) = unqualified_name(name_node);
            let outer = item.parent().filter(|p| p.kind() == "template_declaration").unwrap_or(item);
            let body = item.child_by_field_name("body");
            let signature_end = body.map(|b| b.start_byte()).unwrap_or(item.end_byte());
            self.analysis.device_functions.push(DeviceFunction {
                name: self.text_of(name_node).to_string(),
                span: Span::of(outer),
                name_span: Span::of(name_node),
                signature: self.signature(outer, signature_end),
                is_definition: body.is_some(),
            });
        }
    }

    fn build_launches(&mut self, launches: Vec<Launch<'t>>) {
        let mut scopes: HashMap<usize, HostScope> = HashMap::new();
        for launch in launches {
            let enclosing = enclosing_function(launch.call);
            let locals = match enclosing {
                Some(f) => {
                    let scope = scopes.entry(f.id()).or_insert_with(|| self.host_scope(f));
                    scope.visible_at(launch.call.start_byte())
                }
                None => Locals::default(),
            };
            let site = self.launch_site(&launch, enclosing, &Arc::new(locals));
            self.analysis.launches.push(site);
        }
    }

    fn launch_site(&mut self, launch: &Launch<'t>, enclosing: Option<Node<'t>>, locals: &Arc<Locals>) -> LaunchSite {
        let callee = launch_callee(launch.callee);
        let template_args: Vec<Expr> = callee
            .template_args
            .map(|a| named_children(a).filter(|c| c.kind() != "comment").map(|c| self.expr(c, locals)).collect())
            .unwrap_or_default();
        let kernel = self.text_of(callee.name).to_string();
        let resolved = self.kernel_names.contains(&kernel);
        self.analysis.resolutions.push((kernel.clone(), resolved));
        let owner = resolved.then_some(kernel.as_str());

        let config: Vec<Node> = named_children(launch.config).filter(|c| c.kind() != "comment").collect();
        let dim = |node: Option<&Node<'t>>| -> LaunchDim {
            match node {
                Some(n) => LaunchDim { text: self.text_of(*n).to_string(), span: Span::of(*n), extent: self.dim3(*n, locals) },
                None => LaunchDim { text: String::new(), span: Span::of(launch.config), extent: None },
            }
        };
        let grid = dim(config.first());
        let block = dim(config.get(1));
        let shared_bytes = config.get(2).map(|n| self.expr(*n, locals));
        let stream = config.get(3).map(|n| self.expr(*n, locals));

        if let Some(block_node) = config.get(1) {
            self.launch_block_tunables(owner, *block_node, locals);
            if let Some(grid_node) = config.first() {
                self.grid_tunables(owner, *grid_node, *block_node, block.extent);
            }
        }
        for arg in &template_args {
            if arg.value.is_some() {
                self.push_tunable(TunableKind::LaunchTemplateArg, owner, arg.span, arg.text.clone(), arg.value);
            }
        }
        if let Some(kernel_name) = owner {
            for node in config.iter().take(2) {
                let text = self.text_of(*node).to_string();
                for word in identifiers_in(&text) {
                    self.note_define(kernel_name, word, locals);
                }
            }
            let args_text: Vec<String> = template_args.iter().map(|a| a.text.clone()).collect();
            for text in args_text {
                for word in identifiers_in(&text) {
                    self.note_define(kernel_name, word, locals);
                }
            }
        }

        LaunchSite {
            kernel,
            resolved,
            span: Span::covering(callee.start, launch.call),
            callee_span: Span::covering(callee.start, launch.callee),
            template_args,
            grid,
            block,
            shared_bytes,
            stream,
            args: named_children(launch.args).filter(|c| c.kind() != "comment").map(|c| self.text_of(c).to_string()).collect(),
            enclosing_function: enclosing.and_then(function_name).map(|n| self.text_of(n).to_string()),
            max_threads: None,
        }
    }

    /// The extent of a grid or block argument: an integer, `dim3(x, y, z)`, or a name bound to one.
    fn dim3(&self, node: Node, locals: &Locals) -> Option<Dim3> {
        if node.kind() == "call_expression" && node.child_by_field_name("function").is_some_and(|f| self.text_of(f) == "dim3") {
            let args = node.child_by_field_name("arguments")?;
            return self.dim3_from_args(args, locals);
        }
        if node.kind() == "identifier" {
            if let Some(dims) = locals.dims.get(self.text_of(node)) {
                return *dims;
            }
        }
        let v = u64::try_from(self.eval(self.text_of(node), locals)?).ok()?;
        Some(Dim3 { x: v, y: 1, z: 1 })
    }

    fn dim3_from_args(&self, args: Node, locals: &Locals) -> Option<Dim3> {
        let values: Vec<u64> = named_children(args)
            .filter(|c| c.kind() != "comment")
            .map(|c| u64::try_from(self.eval(self.text_of(c), locals)?).ok())
            .collect::<Option<_>>()?;
        match values.as_slice() {
            [x] => Some(Dim3 { x: *x, y: 1, z: 1 }),
            [x, y] => Some(Dim3 { x: *x, y: *y, z: 1 }),
            [x, y, z] => Some(Dim3 { x: *x, y: *y, z: *z }),
            _ => None,
        }
    }

    fn launch_block_tunables(&mut self, owner: Option<&str>, block: Node<'t>, locals: &Locals) {
        let mut sites = Vec::new();
        visit(block, &mut |n| match n.kind() {
            "number_literal" => {
                sites.push((Span::of(n), self.text_of(n).to_string(), parse_int_literal(self.text_of(n))));
                false
            }
            "identifier" | "qualified_identifier" => {
                let name = self.text_of(n);
                let is_callee = n.parent().is_some_and(|p| p.kind() == "call_expression" && p.child_by_field_name("function") == Some(n));
                let value = match locals.dims.get(name) {
                    Some(dims) => dims.map(|d| d.total() as i64),
                    None => self.eval(name, locals),
                };
                // A runtime value (an argument, a computed local) is not a choice made in the source.
                if !is_callee && value.is_some() {
                    sites.push((Span::of(n), name.to_string(), value));
                }
                false
            }
            _ => true,
        });
        for (span, text, value) in sites {
            self.push_tunable(TunableKind::LaunchBlock, owner, span, text, value);
        }
    }

    /// Grid literals and names that follow the block size: `(n + 255) / 256`, `(n + B - 1) / B`.
    fn grid_tunables(&mut self, owner: Option<&str>, grid: Node<'t>, block: Node<'t>, block_extent: Option<Dim3>) {
        let block_text = self.text_of(block);
        let block_is_name = matches!(block.kind(), "identifier" | "qualified_identifier");
        let block_x = block_extent.filter(|d| d.y == 1 && d.z == 1).map(|d| d.x as i64);
        let mut sites = Vec::new();
        visit(grid, &mut |n| {
            match n.kind() {
                "number_literal" => {
                    let v = parse_int_literal(self.text_of(n));
                    if let (Some(v), Some(b)) = (v, block_x) {
                        if b > 1 && (v == b || v == b - 1) {
                            sites.push((Span::of(n), self.text_of(n).to_string(), Some(v)));
                        }
                    }
                }
                "identifier" | "qualified_identifier" if block_is_name && self.text_of(n) == block_text => {
                    sites.push((Span::of(n), block_text.to_string(), block_x));
                    return false;
                }
                _ => {}
            }
            true
        });
        for (span, text, value) in sites {
            self.push_tunable(TunableKind::GridFromBlock, owner, span, text, value);
        }
    }

    /// Local constants of a host function, to evaluate the launches inside it.
    fn host_scope(&self, function: Node<'t>) -> HostScope {
        let mut scope = HostScope::default();
        let Some(body) = function.child_by_field_name("body") else { return scope };
        let mut assigned = HashSet::new();
        let mut declarations = Vec::new();
        visit(body, &mut |n| {
            match n.kind() {
                "declaration" => declarations.push(n),
                "assignment_expression" => {
                    if let Some(l) = n.child_by_field_name("left") {
                        assigned.insert(self.text_of(l).to_string());
                    }
                }
                "update_expression" => {
                    if let Some(a) = n.child_by_field_name("argument") {
                        assigned.insert(self.text_of(a).to_string());
                    }
                }
                _ => {}
            }
            true
        });
        for decl in declarations {
            let ty = decl.child_by_field_name("type").map(|t| self.text_of(t)).unwrap_or("");
            let mut cursor = decl.walk();
            for declarator in decl.children_by_field_name("declarator", &mut cursor) {
                let (name, value) = match declarator.kind() {
                    "init_declarator" => match (declarator.child_by_field_name("declarator"), declarator.child_by_field_name("value")) {
                        (Some(n), Some(v)) => (n, Some(v)),
                        _ => continue,
                    },
                    // `dim3 block(TILE_DIM, BLOCK_ROWS);` parses as a function prototype whose
                    // parameter types are the names; in a function body it is a constructor call.
                    "function_declarator" => match (declarator.child_by_field_name("declarator"), declarator.child_by_field_name("parameters")) {
                        (Some(n), Some(p)) => (n, Some(p)),
                        _ => continue,
                    },
                    "identifier" => (declarator, None),
                    _ => continue,
                };
                if name.kind() != "identifier" {
                    continue;
                }
                let name_text = self.text_of(name).to_string();
                // A name assigned after its declaration is not a constant.
                if assigned.contains(&name_text) {
                    scope.push(decl.start_byte(), name_text, LocalValue::Scalar(None));
                    continue;
                }
                let locals_so_far = scope.visible_at(decl.start_byte());
                if ty == "dim3" {
                    let dims = match value {
                        Some(v) if is_constructor_args(v) => self.dim3_from_args(v, &locals_so_far),
                        Some(v) => self.dim3(v, &locals_so_far),
                        None => Some(Dim3 { x: 1, y: 1, z: 1 }),
                    };
                    scope.push(decl.start_byte(), name_text, LocalValue::Dim3(dims));
                } else if is_integer_type(ty) {
                    let v = value.and_then(|v| {
                        if is_constructor_args(v) {
                            let inner: Vec<Node> = named_children(v).collect();
                            (inner.len() == 1).then(|| self.eval(self.text_of(inner[0]), &locals_so_far)).flatten()
                        } else {
                            self.eval(self.text_of(v), &locals_so_far)
                        }
                    });
                    scope.push(decl.start_byte(), name_text, LocalValue::Scalar(v));
                } else {
                    scope.push(decl.start_byte(), name_text, LocalValue::Scalar(None));
                }
            }
        }
        scope
    }
}

enum LocalValue {
    Scalar(Option<i64>),
    Dim3(Option<Dim3>),
}

/// Declarations of a host function in source order, so a launch sees only those before it.
#[derive(Default)]
struct HostScope {
    entries: Vec<(usize, String, LocalValue)>,
}

impl HostScope {
    fn push(&mut self, at: usize, name: String, value: LocalValue) {
        self.entries.push((at, name, value));
    }

    fn visible_at(&self, offset: usize) -> Locals {
        let mut locals = Locals::default();
        for (_, name, value) in self.entries.iter().filter(|(at, ..)| *at < offset) {
            match value {
                LocalValue::Scalar(v) => {
                    locals.dims.remove(name);
                    locals.scalars.insert(name.clone(), *v);
                }
                LocalValue::Dim3(d) => {
                    locals.scalars.remove(name);
                    locals.dims.insert(name.clone(), *d);
                }
            }
        }
        locals
    }
}

fn syntax_errors(root: Node, text: &str) -> Vec<SyntaxError> {
    let mut errors = Vec::new();
    if !root.has_error() {
        return errors;
    }
    visit(root, &mut |n| {
        if n.is_missing() {
            errors.push(SyntaxError { span: Span::of(n), message: format!("missing `{}`", n.kind()) });
            false
        } else if n.is_error() {
            // Error recovery can wrap lines of valid code; the error is where the node starts.
            let whole = Span::of(n);
            let first_line = text[n.byte_range()].lines().next().unwrap_or("").trim_end();
            let span = sub_span(whole, text, whole.start_byte, whole.start_byte + first_line.len());
            let mut snippet: String = first_line.chars().take(40).collect();
            if snippet.len() < first_line.len() {
                snippet.push('…');
            }
            errors.push(SyntaxError { span, message: format!("unexpected `{}`", fold_whitespace(&snippet)) });
            false
        } else {
            n.has_error()
        }
    });
    errors
}

/// Pre-order walk; `f` returns whether to descend into the node's children.
/// Every node under `root`, `root` first, in source order.
pub fn descendants(root: Node) -> impl Iterator<Item = Node> {
    let mut cursor = root.walk();
    let mut next = Some(root);
    std::iter::from_fn(move || {
        let current = next?;
        // The cursor stands on `current`: step into it, else past it, never above `root`.
        next = if cursor.goto_first_child() {
            Some(cursor.node())
        } else {
            loop {
                if cursor.node() == root {
                    break None;
                }
                if cursor.goto_next_sibling() {
                    break Some(cursor.node());
                }
                if !cursor.goto_parent() {
                    break None;
                }
            }
        };
        Some(current)
    })
}

fn visit<'t>(root: Node<'t>, f: &mut dyn FnMut(Node<'t>) -> bool) {
    let mut cursor = root.walk();
    let mut descend = f(root);
    loop {
        if descend && cursor.goto_first_child() {
            descend = f(cursor.node());
            continue;
        }
        loop {
            if cursor.node() == root {
                return;
            }
            if cursor.goto_next_sibling() {
                descend = f(cursor.node());
                break;
            }
            if !cursor.goto_parent() {
                return;
            }
        }
    }
}

/// The arguments of a direct initialisation: `(x, y)`, `{x, y}`, or the parameter list of a
/// declaration that tree-sitter read as a prototype.
fn is_constructor_args(node: Node) -> bool {
    matches!(node.kind(), "argument_list" | "initializer_list" | "parameter_list")
}

fn named_children<'t>(node: Node<'t>) -> impl Iterator<Item = Node<'t>> {
    (0..node.named_child_count() as u32).filter_map(move |i| node.named_child(i))
}

/// What a launch calls, taken apart.
struct Callee<'t> {
    /// Where the callee's text starts.
    start: Node<'t>,
    /// The kernel's unqualified name.
    name: Node<'t>,
    template_args: Option<Node<'t>>,
}

/// Takes apart `k`, `ns::k`, `k<256>` and `ns::k<256, float>`. When error recovery merged broken
/// text before a launch into its callee (a launch above it that lacks a `>`), the callee ends in
/// the name.
fn launch_callee(callee: Node) -> Callee {
    let is_name = |n: Node| matches!(n.kind(), "identifier" | "qualified_identifier" | "template_function");
    let mut start = callee;
    if !is_name(callee) && callee.has_error() {
        let mut node = callee;
        while let Some(last) = node.named_child((node.named_child_count() as u32).saturating_sub(1)) {
            if last.end_byte() != callee.end_byte() {
                break;
            }
            node = last;
            if is_name(node) {
                start = node;
                break;
            }
        }
    }
    let (name, template_args) = unqualified_name(start);
    Callee { start, name, template_args }
}

/// The unqualified name in `k`, `ns::k`, `k<float>` or `ns::k<256>`, and the template arguments.
fn unqualified_name(node: Node) -> (Node, Option<Node>) {
    match (node.kind(), node.child_by_field_name("name")) {
        ("qualified_identifier", Some(inner)) => unqualified_name(inner),
        ("template_function", Some(inner)) => (unqualified_name(inner).0, node.child_by_field_name("arguments")),
        _ => (node, None),
    }
}

fn enclosing_function(node: Node) -> Option<Node> {
    let mut current = node.parent();
    while let Some(n) = current {
        if n.kind() == "function_definition" {
            return Some(n);
        }
        current = n.parent();
    }
    None
}

fn function_name(function: Node) -> Option<Node> {
    let mut declarator = function.child_by_field_name("declarator");
    while let Some(d) = declarator {
        if d.kind() == "function_declarator" {
            return d.child_by_field_name("declarator");
        }
        declarator = d.child_by_field_name("declarator");
    }
    None
}

/// A node's span without surrounding whitespace, such as the newline preprocessor nodes end with.
fn trimmed_span(node: Node, text: &str) -> Span {
    let span = Span::of(node);
    let raw = &text[span.start_byte..span.end_byte];
    let start = span.start_byte + (raw.len() - raw.trim_start().len());
    let end = span.start_byte + raw.trim_end().len();
    sub_span(span, text, start, end.max(start))
}

/// A `#define`'s value without a trailing `//` comment, which tree-sitter keeps in the value.
fn define_value_span(value: Node, text: &str) -> Span {
    let span = trimmed_span(value, text);
    let raw = &text[span.start_byte..span.end_byte];
    match raw.find("//").filter(|&at| !raw[..at].contains(['"', '\''])) {
        Some(at) => sub_span(span, text, span.start_byte, span.start_byte + raw[..at].trim_end().len()),
        None => span,
    }
}

/// The bytes `start..end` of `outer`, with their points counted from `outer`'s start.
fn sub_span(outer: Span, text: &str, start: usize, end: usize) -> Span {
    let point_at = |offset: usize| {
        let before = &text[outer.start_byte..offset];
        match before.rfind('\n') {
            Some(newline) => Point {
                line: outer.start.line + before.matches('\n').count() as u32,
                column: (before.len() - newline - 1) as u32,
            },
            None => Point { line: outer.start.line, column: outer.start.column + before.len() as u32 },
        }
    };
    Span { start_byte: start, end_byte: end, start: point_at(start), end: point_at(end) }
}

fn fold_whitespace(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Whether `text` is one C identifier (`row`, `_n2`).
pub fn is_identifier(text: &str) -> bool {
    text.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') && text.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `text` with each identifier that `rename` names written as that name; members (`grid.x`,
/// `p->n`) and qualified names (`std::count`) are left alone.
pub fn rename_identifiers_in(text: &str, mut rename: impl FnMut(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut word = String::new();
    // A member (`grid.x`, `p->n`, `std::count`) is the object's or the scope's, whatever else
    // shares its name.
    let mut is_member = false;
    let mut flush = |word: &mut String, out: &mut String, is_member: bool| {
        if !word.is_empty() {
            let starts_ident = word.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_');
            out.push_str(&(starts_ident && !is_member).then(|| rename(word)).flatten().unwrap_or_else(|| word.clone()));
            word.clear();
        }
    };
    for c in text.chars() {
        if c.is_ascii_alphanumeric() || c == '_' {
            if word.is_empty() {
                is_member = out.ends_with('.') || out.ends_with("->") || out.ends_with("::");
            }
            word.push(c);
        } else {
            flush(&mut word, &mut out, is_member);
            out.push(c);
        }
    }
    flush(&mut word, &mut out, is_member);
    out
}

pub fn identifiers_in(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| w.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_'))
}

/// The index of the `)` that closes the `(` `text` starts with.
pub fn matching_paren(text: &str) -> Option<usize> {
    balancing_position(text.char_indices(), '(', ')', 0)
}

/// The position, walking `chars`, where `closing` brings the nesting (`depth` to start with,
/// one deeper at each `opening`) back to zero.
pub fn balancing_position(chars: impl Iterator<Item = (usize, char)>, opening: char, closing: char, mut depth: i32) -> Option<usize> {
    for (i, c) in chars {
        if c == opening {
            depth += 1;
        } else if c == closing {
            depth -= 1;
            if depth == 0 {
                return Some(i);
            }
        }
    }
    None
}

/// Each word of `text` (a run of letters, digits and `_`: a name or a number) with its offset.
pub fn words_at(text: &str) -> impl Iterator<Item = (&str, usize)> {
    let bytes = text.as_bytes();
    let is_word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let mut at = 0;
    std::iter::from_fn(move || {
        while at < bytes.len() && !is_word(bytes[at]) {
            at += 1;
        }
        let start = at;
        while at < bytes.len() && is_word(bytes[at]) {
            at += 1;
        }
        (at > start).then(|| (&text[start..at], start))
    })
}

/// The names `text` seems to define functions of: an identifier before a parenthesised list
/// that a body follows (`int frame_size(int *w, int *h) {`, `) const {`). A lexical scan, no
/// parse: it may name a macro's use or a name in a comment, so a caller that needs the
/// definition parses the file to confirm; what it must not do is miss one.
pub fn function_definitions_in(text: &str) -> impl Iterator<Item = &str> {
    let bytes = text.as_bytes();
    let mut opened: Vec<Option<&str>> = Vec::new();
    let mut defined = Vec::new();
    for (at, &byte) in bytes.iter().enumerate() {
        match byte {
            b'(' => opened.push(identifier_ending_at(text, at)),
            b')' => {
                let Some(Some(name)) = opened.pop() else { continue };
                if body_follows(&text[at + 1..]) && !matches!(name, "if" | "for" | "while" | "switch" | "catch" | "return" | "sizeof") {
                    defined.push(name);
                }
            }
            _ => {}
        }
    }
    defined.into_iter()
}

/// The identifier that ends just before `at`, spaces between allowed.
fn identifier_ending_at(text: &str, at: usize) -> Option<&str> {
    let before = text[..at].trim_end();
    let start = before.char_indices().rev().find(|(_, c)| !(c.is_ascii_alphanumeric() || *c == '_')).map_or(0, |(i, c)| i + c.len_utf8());
    let word = &before[start..];
    word.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_').then_some(word)
}

/// Whether `rest`, what follows a parameter list, opens a body, after qualifiers
/// (`const`, `noexcept`, `override`).
fn body_follows(rest: &str) -> bool {
    let mut rest = rest.trim_start();
    while let Some(after) = after_qualifier(rest) {
        rest = after.trim_start();
    }
    rest.starts_with('{')
}

/// What follows the qualifier `rest` starts with, if it does.
fn after_qualifier(rest: &str) -> Option<&str> {
    let word = &rest[..rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len())];
    matches!(word, "const" | "noexcept" | "override" | "final" | "mutable" | "volatile").then(|| &rest[word.len()..])
}

fn is_restrict_qualifier(text: &str) -> bool {
    matches!(text, "__restrict__" | "__restrict" | "restrict")
}

fn is_integer_type(ty: &str) -> bool {
    let ty = ty.trim_start_matches("const ").trim();
    matches!(
        ty,
        "int" | "unsigned" | "unsigned int" | "signed" | "long" | "unsigned long" | "long long"
            | "unsigned long long" | "short" | "unsigned short" | "size_t" | "int32_t" | "uint32_t"
            | "int64_t" | "uint64_t" | "int16_t" | "uint16_t" | "int8_t" | "uint8_t" | "char"
            | "bool" | "auto" | "uint" | "ushort" | "ulong"
    ) || ty.starts_with("std::size_t")
}

#[cfg(test)]
mod tests {
    use super::rename_identifiers_in;

    #[test]
    fn members_and_qualified_names_keep_their_names() {
        let renamed = rename_identifiers_in("std::count(v.begin(), v.end(), count) + p->count", |w| (w == "count").then(|| "kept".to_string()));
        assert_eq!(renamed, "std::count(v.begin(), v.end(), kept) + p->count");
    }
}
