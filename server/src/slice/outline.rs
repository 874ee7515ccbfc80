//! The file's top-level structure as the slice sees it: items that can be kept or dropped, and the
//! groups around them (namespaces, `extern "C"` blocks, preprocessor conditionals) that are
//! emitted whenever something inside them is kept.

use std::collections::{HashMap, HashSet};

use tree_sitter::Node;

use crate::syntax::{identifiers_in, Point};

/// What a top-level item is, for deciding whether device code may use it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Role {
    Kernel { is_definition: bool },
    DeviceFunction,
    /// A `constexpr` function without `__device__`: nvcc lets device code use it in constant
    /// expressions (template arguments, array sizes), so it is kept, with a note for NVRTC.
    ConstexprFunction,
    Type,
    /// A `const`/`constexpr` variable.
    Constant,
    /// A `__constant__`, `__device__`, `__shared__` or `__managed__` variable.
    DeviceVariable,
    Macro,
    NamespaceAlias,
    Include { path: String },
    /// `using namespace N;`: kept when `N` is in the slice.
    UsingDirective { namespace: String },
    HostFunction,
    HostVariable,
    /// Anything else (pragmas, explicit instantiations, `static_assert`, `using std::min;`):
    /// never kept, never reported.
    Other,
}

/// A name used inside an item.
#[derive(Clone, Debug)]
pub(super) struct Reference {
    pub name: String,
    /// Where it is used, 0-based.
    pub at: Point,
    /// Declared inside the item (a parameter, a local variable, a template parameter): such a
    /// use cannot refer to a file-scope declaration, though it can still be a macro.
    pub is_local: bool,
    /// The leftmost component of a qualified name (`std` in `std::vector`).
    pub is_leading_scope: bool,
}

#[derive(Debug)]
pub(super) struct Item {
    pub role: Role,
    pub declares: Vec<String>,
    pub references: Vec<Reference>,
    /// The text emitted for the item, with attached comments.
    pub emit_start: usize,
    pub emit_end: usize,
    /// Where the item itself starts (without its comments), 0-based.
    pub start: Point,
    /// The groups around the item, outermost first.
    pub groups: Vec<usize>,
}

#[derive(Debug)]
pub(super) enum GroupKind {
    Namespace { name: String },
    Linkage,
    /// `#if`/`#ifdef`/`#ifndef`, or an `#elif`/`#else` branch nested in the group before it.
    Conditional,
    /// A region tree-sitter could not parse: its items are kept, with nothing around them.
    Error,
}

#[derive(Debug)]
pub(super) struct Group {
    pub kind: GroupKind,
    /// The text before the first child (`namespace ops {`, `#ifndef BLOCK`), and after the last.
    pub open: String,
    pub close: String,
    pub start_byte: usize,
    /// Where the group's closing text ends.
    pub end_byte: usize,
    /// Names in a conditional's condition: whatever the group holds depends on them.
    pub references: Vec<Reference>,
    pub entries: Vec<Entry>,
}

#[derive(Debug, Clone, Copy)]
pub(super) enum Entry {
    Item(usize),
    Group(usize),
}

#[derive(Debug, Default)]
pub(super) struct Outline {
    pub items: Vec<Item>,
    pub groups: Vec<Group>,
    pub top: Vec<Entry>,
}

impl Outline {
    /// The outline of the tree `root` of `text`, whose parse did not see the macros
    /// `hidden_macros` (names and offsets).
    pub fn of(root: Node, text: &str, hidden_macros: Vec<(usize, String)>) -> Outline {
        let mut outline = Outline::default();
        let qualifier_macros = crate::syntax::defines_in(text).filter(|(_, value)| is_qualifiers(value)).collect();
        let hidden_macros = hidden_macros.into_iter().map(|(at, name)| (at, reference_at(text, at, &name))).collect();
        let mut builder = Builder { text, outline: &mut outline, stack: Vec::new(), types_of_macros: HashMap::new(), qualifier_macros, hidden_macros };
        let top = builder.entries(root.children(&mut root.walk()).collect());
        outline.top = top;
        outline
    }
}

struct Builder<'a> {
    text: &'a str,
    outline: &'a mut Outline,
    /// Groups enclosing the children being read.
    stack: Vec<usize>,
    /// The types each function-like macro read so far defines when expanded.
    types_of_macros: HashMap<String, Vec<String>>,
    /// The file's macros that stand for a function's qualifiers (`#define HOST_DEVICE_INLINE
    /// __device__ __host__ inline`), by name.
    qualifier_macros: HashMap<String, String>,
    /// The macros the parser's view hides (`CUTLASS_PRAGMA_UNROLL`, a loop macro read as
    /// `while`), by offset: the tree has no identifier for them, yet the code uses them.
    hidden_macros: Vec<(usize, Reference)>,
}

/// A use of `name` at the byte `at` of `text`.
fn reference_at(text: &str, at: usize, name: &str) -> Reference {
    let line_start = text[..at].rfind('\n').map_or(0, |newline| newline + 1);
    let at = Point { line: text[..line_start].matches('\n').count() as u32, column: (at - line_start) as u32 };
    Reference { name: name.to_string(), at, is_local: false, is_leading_scope: false }
}

/// Whether a macro's value is only a function's qualifiers (`__device__ __forceinline__`).
fn is_qualifiers(value: &str) -> bool {
    const QUALIFIERS: [&str; 9] = ["__device__", "__host__", "__global__", "__forceinline__", "__inline__", "__noinline__", "inline", "static", "constexpr"];
    let mut words = value.split_whitespace().peekable();
    words.peek().is_some() && words.all(|w| QUALIFIERS.contains(&w))
}

impl Builder<'_> {
    fn text_of(&self, node: Node) -> &str {
        &self.text[node.byte_range()]
    }

    /// Reads a list of sibling nodes, attaching comments to the items they belong to.
    fn entries(&mut self, children: Vec<Node>) -> Vec<Entry> {
        let mut entries = Vec::new();
        // The first comment of a run directly above the next item (no blank line in between).
        let mut leading_comment: Option<Node> = None;
        let mut previous: Option<Node> = None;
        for (index, child) in children.iter().copied().enumerate() {
            if child.kind() == "comment" {
                let trails_previous = previous.is_some_and(|p| p.end_position().row == child.start_position().row);
                if trails_previous {
                    if let Some(Entry::Item(last)) = entries.last() {
                        self.outline.items[*last].emit_end = child.end_byte();
                    }
                } else if leading_comment.is_none_or(|_| self.blank_line_between(previous, child)) {
                    leading_comment = Some(child);
                }
                previous = Some(child);
                continue;
            }
            let attached = leading_comment
                .take()
                .filter(|_| !self.blank_line_between(previous, child))
                .map(|c| c.start_byte());
            previous = Some(child);
            if let Some((name, declares)) = self.macro_invocation(child) {
                // The `;` after the call is a sibling, read as an empty statement.
                let end = match children.get(index + 1) {
                    Some(next) if next.kind() == "expression_statement" && self.text_of(*next).trim() == ";" => next.end_byte(),
                    _ => child.end_byte(),
                };
                let references = vec![Reference { name: self.text_of(name).to_string(), at: name.start_position().into(), is_local: false, is_leading_scope: false }];
                let start = child.start_position().into();
                let item = Item { role: Role::Type, declares, references, emit_start: attached.unwrap_or(child.start_byte()), emit_end: end, start, groups: self.stack.clone() };
                self.outline.items.push(item);
                entries.push(Entry::Item(self.outline.items.len() - 1));
                continue;
            }
            if child.kind() == "preproc_function_def" {
                self.read_macro_types(child);
            }
            if let Some(group) = self.group(child) {
                entries.push(Entry::Group(group));
                continue;
            }
            if !child.is_named() {
                continue;
            }
            // `struct S { ... };` at file scope: the `;` is a sibling of the specifier.
            let end = match children.get(index + 1) {
                Some(next) if next.kind() == ";" => next.end_byte(),
                _ => child.end_byte(),
            };
            let item = self.item(child, attached.unwrap_or(child.start_byte()), end);
            self.outline.items.push(item);
            entries.push(Entry::Item(self.outline.items.len() - 1));
        }
        entries
    }

    /// Records the types a function-like macro's expansion defines (`template <> struct
    /// Shared<t> { … }` defines `Shared`).
    fn read_macro_types(&mut self, definition: Node) {
        let (Some(name), Some(value)) = (definition.child_by_field_name("name"), definition.child_by_field_name("value")) else { return };
        let words: Vec<&str> = identifiers_in(self.text_of(value)).collect();
        let types: Vec<String> = words.windows(2).filter(|w| matches!(w[0], "struct" | "class" | "union")).map(|w| w[1].to_string()).collect();
        if !types.is_empty() {
            self.types_of_macros.insert(self.text_of(name).to_string(), types);
        }
    }

    /// The macro's name and the types a file-scope call of a macro read earlier defines
    /// (`BUILD_SHARED(float, s);`), which tree-sitter reads as an error: an item of its own,
    /// declaring them.
    fn macro_invocation<'t>(&self, node: Node<'t>) -> Option<(Node<'t>, Vec<String>)> {
        if node.kind() != "ERROR" {
            return None;
        }
        let mut named = named_children(node);
        let call = named.next().filter(|c| c.kind() == "function_declarator")?;
        if named.next().is_some() {
            return None;
        }
        let name = call.child_by_field_name("declarator")?;
        Some((name, self.types_of_macros.get(self.text_of(name))?.clone()))
    }

    fn blank_line_between(&self, previous: Option<Node>, next: Node) -> bool {
        previous.is_some_and(|p| next.start_position().row > p.end_position().row + 1)
            || previous.is_some_and(|p| self.text[p.end_byte()..next.start_byte()].matches('\n').count() > 1)
    }

    /// A node whose children are items in their own right, read as a group.
    fn group(&mut self, node: Node) -> Option<usize> {
        let mut end_byte = node.end_byte();
        let (kind, open, close, children, references) = match node.kind() {
            "namespace_definition" => {
                let body = node.child_by_field_name("body")?;
                let name = node.child_by_field_name("name").map(|n| self.text_of(n).to_string()).unwrap_or_default();
                let (open, close, children) = self.braced(node, body);
                end_byte = body.end_byte() - 1 + close.len();
                (GroupKind::Namespace { name }, open, close, children, Vec::new())
            }
            "linkage_specification" => {
                let body = node.child_by_field_name("body").filter(|b| b.kind() == "declaration_list")?;
                let (open, close, children) = self.braced(node, body);
                end_byte = body.end_byte() - 1 + close.len();
                (GroupKind::Linkage, open, close, children, Vec::new())
            }
            "preproc_if" | "preproc_ifdef" | "preproc_elif" | "preproc_elifdef" | "preproc_else" => {
                // The directive line opens the group; its children are everything after it
                // except the condition and the closing `#endif`, which `close` holds.
                let condition = node.child_by_field_name("condition").or_else(|| node.child_by_field_name("name"));
                let directive_end = condition.unwrap_or_else(|| node.child(0).expect("a directive has its keyword"));
                let open_end = self.text[directive_end.end_byte()..]
                    .find('\n')
                    .map_or(node.end_byte(), |at| directive_end.end_byte() + at);
                let open = self.text[node.start_byte()..open_end].trim_end().to_string();
                let mut close = String::new();
                let mut children = Vec::new();
                for child in node.children(&mut node.walk()) {
                    if child.start_byte() < open_end {
                        continue;
                    }
                    if child.kind() == "#endif" {
                        let line_end = self.text[child.start_byte()..].find('\n').map_or(self.text.len(), |at| child.start_byte() + at);
                        close = self.text[child.start_byte()..line_end].trim_end().to_string();
                        end_byte = child.start_byte() + close.len();
                    } else {
                        children.push(child);
                    }
                }
                let references = condition.map(|c| references_in(c, None, self.text)).unwrap_or_default();
                (GroupKind::Conditional, open, close, children, references)
            }
            "ERROR" => (GroupKind::Error, String::new(), String::new(), node.children(&mut node.walk()).collect(), Vec::new()),
            _ => return None,
        };
        let id = self.outline.groups.len();
        self.outline.groups.push(Group {
            kind,
            open,
            close,
            start_byte: node.start_byte(),
            end_byte,
            references,
            entries: Vec::new(),
        });
        self.stack.push(id);
        let entries = self.entries(children);
        self.stack.pop();
        self.outline.groups[id].entries = entries;
        Some(id)
    }

    /// `head { children }`: the text up to and including `{`, the closing `}` with a comment
    /// that trails it on the same line, and the children in between.
    fn braced<'t>(&self, node: Node<'t>, body: Node<'t>) -> (String, String, Vec<Node<'t>>) {
        let open = self.text[node.start_byte()..body.start_byte() + 1].to_string();
        let mut close = "}".to_string();
        if let Some(comment) = node.next_sibling().filter(|n| n.kind() == "comment" && n.start_position().row == body.end_position().row) {
            close = format!("}}{}", &self.text[body.end_byte()..comment.end_byte()]);
        }
        let children = body.children(&mut body.walk()).filter(|c| !matches!(c.kind(), "{" | "}")).collect();
        (open, close, children)
    }

    fn item(&self, node: Node, emit_start: usize, emit_end: usize) -> Item {
        let declaration = declared_item(node);
        let (role, declares) = self.role_and_names(declaration);
        let references = match role {
            Role::Include { .. } | Role::UsingDirective { .. } | Role::Other => Vec::new(),
            _ => {
                let hidden = self.hidden_macros.iter().filter(|(at, _)| node.byte_range().contains(at)).map(|(_, reference)| reference.clone());
                references_in(node, Some(node), self.text).into_iter().chain(hidden).collect()
            }
        };
        Item {
            role,
            declares,
            references,
            emit_start,
            emit_end,
            start: node.start_position().into(),
            groups: self.stack.clone(),
        }
    }

    fn role_and_names(&self, node: Node) -> (Role, Vec<String>) {
        let name_of = |field: &str| node.child_by_field_name(field).map(|n| unqualified(self.text_of(n)).to_string());
        match node.kind() {
            "function_definition" | "declaration" | "field_declaration" => {
                let specifiers = self.specifiers(node);
                let has = |word: &str| specifiers.contains(word);
                let declarators: Vec<Node> = node.children_by_field_name("declarator", &mut node.walk()).collect();
                if let Some(function) = declarators.iter().find_map(|d| function_declarator(*d)) {
                    let names = function.child_by_field_name("declarator").map(|n| unqualified(self.text_of(n)).to_string());
                    let role = if has("__global__") {
                        Role::Kernel { is_definition: node.kind() == "function_definition" }
                    } else if has("__device__") {
                        Role::DeviceFunction
                    } else if has("constexpr") {
                        Role::ConstexprFunction
                    } else {
                        Role::HostFunction
                    };
                    return (role, names.into_iter().collect());
                }
                let mut names: Vec<String> = declarators.iter().filter_map(|d| declarator_name(*d, self.text)).collect();
                let ty = node.child_by_field_name("type");
                names.extend(ty.map(|t| self.type_names(t)).unwrap_or_default());
                if declarators.is_empty() {
                    // `struct S;`, `template <int N> struct bits;`: a forward declaration, which
                    // the specialisations and uses of `S` need.
                    names.extend(ty.and_then(|t| self.forward_declared_name(t)));
                }
                let role = if ["__constant__", "__device__", "__shared__", "__managed__"].iter().any(|w| has(w)) {
                    Role::DeviceVariable
                } else if has("const") || has("constexpr") {
                    Role::Constant
                } else if declarators.is_empty() {
                    Role::Type
                } else {
                    Role::HostVariable
                };
                (role, names)
            }
            "struct_specifier" | "class_specifier" | "union_specifier" | "enum_specifier" => {
                let mut names = self.type_names(node);
                names.extend(self.forward_declared_name(node));
                (Role::Type, names)
            }
            "type_definition" => {
                let mut names: Vec<String> = node
                    .children_by_field_name("declarator", &mut node.walk())
                    .filter_map(|d| declarator_name(d, self.text))
                    .collect();
                names.extend(node.child_by_field_name("type").map(|t| self.type_names(t)).unwrap_or_default());
                (Role::Type, names)
            }
            "alias_declaration" | "concept_definition" => (Role::Type, name_of("name").into_iter().collect()),
            "namespace_alias_definition" => (Role::NamespaceAlias, name_of("name").into_iter().collect()),
            "preproc_def" | "preproc_function_def" => (Role::Macro, name_of("name").into_iter().collect()),
            "preproc_include" => {
                let path = node.child_by_field_name("path").map(|p| self.text_of(p).trim().to_string()).unwrap_or_default();
                (Role::Include { path }, Vec::new())
            }
            "using_declaration" if self.text_of(node).split_whitespace().nth(1) == Some("namespace") => {
                let namespace = named_children(node).last().map(|n| self.text_of(n).to_string()).unwrap_or_default();
                (Role::UsingDirective { namespace }, Vec::new())
            }
            _ => (Role::Other, Vec::new()),
        }
    }

    /// The words before a declaration's type and declarators: `__global__`, `static`,
    /// `constexpr`, `const`, `__constant__`, ...
    fn specifiers(&self, node: Node) -> HashSet<&str> {
        let mut cursor = node.walk();
        let mut words = HashSet::new();
        for (index, child) in node.children(&mut cursor).enumerate() {
            let field = node.field_name_for_child(index as u32);
            if matches!(field, Some("declarator" | "body" | "type")) {
                if field == Some("type") {
                    // `const float x`: the qualifier may sit inside the type in some grammars.
                    words.extend(named_children(child).filter(|c| c.kind() == "type_qualifier").map(|c| self.text_of(c)));
                }
                continue;
            }
            words.extend(self.text_of(child).split_whitespace());
        }
        // The grammar reads a qualifier macro before the return type (`HOST_DEVICE_INLINE int
        // f(…)`) as the type: the macro's qualifiers are the function's.
        let ty = node.child_by_field_name("type").map(|t| self.text_of(t));
        let macros: Vec<&str> = words.iter().copied().chain(ty).filter_map(|w| self.qualifier_macros.get(w)).map(String::as_str).collect();
        words.extend(macros.into_iter().flat_map(str::split_whitespace));
        words
    }

    /// The names a type specifier declares: its own name if it has a body, and the enumerators
    /// of an unscoped-or-not enum (a use of either needs the declaration).
    /// The name of a struct, class or union specifier without a body.
    fn forward_declared_name(&self, ty: Node) -> Option<String> {
        let is_record = matches!(ty.kind(), "struct_specifier" | "class_specifier" | "union_specifier");
        if !is_record || ty.child_by_field_name("body").is_some() {
            return None;
        }
        ty.child_by_field_name("name").map(|n| unqualified(self.text_of(n)).to_string())
    }

    fn type_names(&self, ty: Node) -> Vec<String> {
        let Some(body) = ty.child_by_field_name("body") else { return Vec::new() };
        let mut names: Vec<String> = ty.child_by_field_name("name").map(|n| unqualified(self.text_of(n)).to_string()).into_iter().collect();
        if ty.kind() == "enum_specifier" {
            names.extend(
                named_children(body)
                    .filter(|e| e.kind() == "enumerator")
                    .filter_map(|e| e.child_by_field_name("name"))
                    .map(|n| self.text_of(n).to_string()),
            );
        }
        names
    }
}

/// The declaration inside `template <...>` and `extern "C"` wrappers.
fn declared_item(node: Node) -> Node {
    match node.kind() {
        "template_declaration" => named_children(node)
            .filter(|c| c.kind() != "template_parameter_list")
            .last()
            .map_or(node, declared_item),
        "linkage_specification" => node.child_by_field_name("body").map_or(node, declared_item),
        _ => node,
    }
}

/// The `function_declarator` of a function declaration, through `*`/`&` return-type declarators.
fn function_declarator(declarator: Node) -> Option<Node> {
    match declarator.kind() {
        "function_declarator" => Some(declarator),
        "pointer_declarator" | "reference_declarator" | "attributed_declarator" => {
            named_children(declarator).find_map(function_declarator)
        }
        _ => None,
    }
}

/// The name a (possibly initialised, pointer or array) declarator introduces.
fn declarator_name(declarator: Node, text: &str) -> Option<String> {
    match declarator.kind() {
        "identifier" | "type_identifier" | "field_identifier" => Some(text[declarator.byte_range()].to_string()),
        "qualified_identifier" => Some(unqualified(&text[declarator.byte_range()]).to_string()),
        _ => named_children(declarator)
            .filter(|c| !matches!(c.kind(), "type_qualifier" | "ms_pointer_modifier"))
            .find_map(|c| declarator_name(c, text)),
    }
}

/// `ns::Type<int>` → `Type`.
fn unqualified(name: &str) -> &str {
    let without_args = name.split('<').next().unwrap_or(name);
    without_args.rsplit("::").next().unwrap_or(without_args).trim()
}

fn named_children<'t>(node: Node<'t>) -> impl Iterator<Item = Node<'t>> {
    (0..node.named_child_count() as u32).filter_map(move |i| node.named_child(i))
}

/// Every name used under `node`, in source order. Names inside preprocessor text (a macro's
/// body, a `#pragma unroll N`) are split out of that text. With `item`, names that `item`
/// declares locally are marked so.
pub(super) fn references_in(node: Node, item: Option<Node>, text: &str) -> Vec<Reference> {
    let mut references = Vec::new();
    let mut cursor = node.walk();
    let mut visit_children = true;
    loop {
        let current = cursor.node();
        if visit_children {
            match current.kind() {
                "identifier" | "type_identifier" | "namespace_identifier" => {
                    let is_declared_name = item.is_some_and(|item| declares_locally(current, item));
                    references.push(Reference {
                        name: text[current.byte_range()].to_string(),
                        at: current.start_position().into(),
                        is_local: is_declared_name,
                        is_leading_scope: is_leading_scope(current),
                    });
                }
                "preproc_arg" => references.extend(names_in_preprocessor_text(current, text)),
                _ => {}
            }
        }
        if (visit_children && cursor.goto_first_child()) || cursor.goto_next_sibling() {
            visit_children = true;
        } else if cursor.goto_parent() && cursor.node() != node {
            visit_children = false;
        } else {
            break;
        }
    }
    mark_locals(&mut references);
    references
}

/// A name declared inside the item hides file-scope declarations everywhere in the item: an
/// approximation (it ignores where the local is declared) that errs towards keeping less.
fn mark_locals(references: &mut [Reference]) {
    let locals: HashSet<String> = references.iter().filter(|r| r.is_local).map(|r| r.name.clone()).collect();
    for reference in references.iter_mut() {
        reference.is_local = locals.contains(&reference.name);
    }
}

/// Whether `name` is the declared name of a parameter, template parameter or local variable
/// (not of `item` itself, whose name is a file-scope declaration).
fn declares_locally(name: Node, item: Node) -> bool {
    let mut node = name;
    while let Some(parent) = node.parent() {
        match parent.kind() {
            // An array's size and a variable's initial value are uses, not the declared name
            // (`__shared__ int tile[TILE];`, `int x = LIMIT;`).
            "array_declarator" | "init_declarator" if parent.child_by_field_name("declarator") != Some(node) => return false,
            "pointer_declarator" | "reference_declarator" | "array_declarator" | "init_declarator"
            | "attributed_declarator" | "parenthesized_declarator" => node = parent,
            "parameter_declaration" | "optional_parameter_declaration" | "variadic_parameter_declaration"
            | "for_range_loop" | "declaration" => {
                return parent != item
                    && declared_item(item) != parent
                    && parent.children_by_field_name("declarator", &mut parent.walk()).any(|d| d == node);
            }
            "type_parameter_declaration" | "optional_type_parameter_declaration" | "variadic_type_parameter_declaration" => {
                return node == name && name.kind() == "type_identifier"
            }
            // A function-like macro's parameters.
            "preproc_params" => return true,
            _ => return false,
        }
    }
    false
}

/// `std` in `std::vector`, but not `std` in `cuda::std::min`.
fn is_leading_scope(node: Node) -> bool {
    let Some(parent) = node.parent().filter(|p| p.kind() == "qualified_identifier") else { return false };
    if parent.child_by_field_name("scope") != Some(node) {
        return false;
    }
    !parent
        .parent()
        .is_some_and(|g| g.kind() == "qualified_identifier" && g.child_by_field_name("name") == Some(parent))
}

fn names_in_preprocessor_text(node: Node, text: &str) -> Vec<Reference> {
    let arg = &text[node.byte_range()];
    let start: Point = node.start_position().into();
    let mut names = Vec::new();
    let mut chars = arg.char_indices().peekable();
    let (mut line, mut line_start) = (start.line, 0usize);
    let mut in_string: Option<char> = None;
    while let Some((at, c)) = chars.next() {
        if c == '\n' {
            line += 1;
            line_start = at + 1;
            continue;
        }
        if let Some(quote) = in_string {
            if c == '\\' {
                chars.next();
            } else if c == quote {
                in_string = None;
            }
            continue;
        }
        if c == '"' || c == '\'' {
            in_string = Some(c);
            continue;
        }
        if c.is_ascii_digit() {
            // A number, suffix and exponent included (`1e5f`, `0x1Fu`): not a name.
            while chars.peek().is_some_and(|(_, n)| n.is_ascii_alphanumeric() || *n == '_' || *n == '.') {
                chars.next();
            }
            continue;
        }
        if c.is_ascii_alphabetic() || c == '_' {
            let mut end = at + 1;
            while let Some((next_at, _)) = chars.next_if(|(_, n)| n.is_ascii_alphanumeric() || *n == '_') {
                end = next_at + 1;
            }
            let column = if line == start.line { start.column + at as u32 } else { (at - line_start) as u32 };
            names.push(Reference {
                name: arg[at..end].to_string(),
                at: Point { line, column },
                is_local: false,
                is_leading_scope: arg[end..].starts_with("::") && !arg[..at].ends_with("::"),
            });
        }
    }
    names
}
