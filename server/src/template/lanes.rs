//! Vectorising a loop whose index is taken apart before it reaches memory
//! (`t = i / d; j = i - t * d; row = in + t * 2 * d; … row[j], row[d + j], out[i]`).
//!
//! Each loop variable's value is followed through the body's declarations as a function of the
//! lane, for the V consecutive elements a thread takes together: *uniform* (the same for every
//! lane) or *lane* (the first lane's value plus the lane), and whether it is a multiple of V. A
//! memory access whose pointer is uniform and whose index is a lane value touches V consecutive
//! elements, so it becomes one load or store. Division and remainder keep a lane value whole
//! only when the divisor is a multiple of V and the first lane's value is too: the divisor's is
//! checked at run time before the vector loop, and the chunks start at multiples of V.

use tree_sitter::Node;

use super::layout::{factor, for_header, indent_step, joined, leading_whitespace, operand, shifted};
use super::strategy::{plain_element, pointer_element_type, subscript_index, SimpleLoop};
use super::{contains_identifier, line_start, TextEdit, Unit};
use crate::syntax::{descendants, identifiers_in};

/// The guard of the helpers that load and store a vector where it may not be aligned.
const ACCESS_GUARD: &str = "CUTUNE_VEC_ACCESS";

/// How a value varies over the V lanes a thread takes together.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Lanes {
    /// The same in every lane; `multiple` when it is known to be a multiple of V.
    Uniform { multiple: bool },
    /// The first lane's value plus the lane; `aligned` when the first lane's is a multiple of V.
    Step { aligned: bool },
    Other,
}

/// One access `p[e]` of V consecutive elements.
pub(super) struct Site<'t> {
    node: Node<'t>,
    pointer: String,
    index: String,
    element: String,
    pub(super) element_bytes: u64,
    read: bool,
    written: bool,
    /// The loop body's statement it sits in.
    statement: Node<'t>,
}

impl Site<'_> {
    /// Whether the access is aligned exactly when its pointer is: `p[i]` at the element `var`
    /// itself (a chunk starts at a multiple of V), `p` a parameter the body never moves.
    fn aligned_with_pointer(&self, unit: &Unit, var: &str) -> bool {
        self.index.trim() == var && fixed_parameter(unit, &self.pointer)
    }
}

/// A loop the lane analysis vectorises: its accesses, the divisors that must be multiples of V,
/// and the `if`s whose condition is the same in every lane (their branches are taken by all V
/// lanes or by none, so accesses inside them stay whole).
pub(super) struct LanePlan<'t> {
    pub(super) sites: Vec<Site<'t>>,
    divisors: Vec<String>,
    uniform_ifs: Vec<Node<'t>>,
    /// The body's top-level declarations whose values are the same in every lane (`row = i /
    /// width`, `w = weight[row]`): computed once, before the lanes, from the first lane's element.
    uniform_declarations: Vec<Node<'t>>,
}

/// The plan for loop `l`, or why its accesses cannot be proven consecutive.
pub(super) fn plan<'t>(unit: &Unit<'t>, l: &SimpleLoop<'t>) -> Result<LanePlan<'t>, String> {
    if l.body.kind() != "compound_statement" {
        return Err(format!("the loop body is one statement using `{}` other than as `p[{}]`: not vectorised", l.var, l.var));
    }
    plan_statements(unit, &l.var, &statements_of(l.body), false)
}

/// A block's statements, comments left out.
pub(super) fn statements_of(block: Node) -> Vec<Node> {
    let mut cursor = block.walk();
    block.named_children(&mut cursor).filter(|n| n.kind() != "comment").collect()
}

/// The plan for `statements`, run once per element `var`. With `element_returns`, a `return`
/// ends the element (a kernel of one element per thread): allowed under an `if` the same in
/// every lane, where it becomes the lane loop's `continue`.
pub(super) fn plan_statements<'t>(unit: &Unit<'t>, var: &str, statements: &[Node<'t>], element_returns: bool) -> Result<LanePlan<'t>, String> {
    let text = unit.text();
    let not = |why: String| Err(format!("{why}: not vectorised"));
    if let Some(word) = super::strategy::thread_identity(unit, statements, var) {
        return not(format!("the body uses `{word}`, which depends on the thread: with several elements a thread, it would change"));
    }
    let deref_write = statements.iter().flat_map(|s| descendants(*s)).find(|n| {
        n.kind() == "assignment_expression" && n.child_by_field_name("left").is_some_and(|left| matches!(left.kind(), "pointer_expression" | "field_expression"))
    });
    if let Some(w) = deref_write {
        return not(format!("the body writes through `{}` (line {})", &text[w.child_by_field_name("left").expect("checked").byte_range()], unit.line_of(w.start_byte())));
    }
    let mut analysis = Analysis { unit, var, scope: statements, locals: Vec::new(), divisors: Vec::new(), element_returns, sites: Vec::new(), uniform_ifs: Vec::new(), uniform_declarations: Vec::new(), past_guard: false, atomics: calls_atomics(text, statements), hoisted: Vec::new(), own_writes: Vec::new() };
    analysis.visit(statements, false)?;
    let Analysis { sites, divisors, uniform_ifs, uniform_declarations, own_writes, .. } = analysis;
    if sites.is_empty() {
        return not("no access of consecutive elements".into());
    }
    // A written element is stored after the lanes: nothing may read its buffer, and a buffer
    // each lane writes on its own may not be a vector's.
    for w in sites.iter().filter(|s| s.written) {
        if sites.iter().any(|s| s.pointer == w.pointer && s.read && s.node != w.node) {
            return not(format!("`{}` is written and also accessed another way", w.pointer));
        }
    }
    if let Some(pointer) = own_writes.iter().find(|p| sites.iter().any(|s| &s.pointer == *p)) {
        return not(format!("`{pointer}` is written and also accessed another way"));
    }
    Ok(LanePlan { sites, divisors, uniform_ifs, uniform_declarations })
}

struct Analysis<'a, 't> {
    unit: &'a Unit<'t>,
    /// The element's index, and the statements run once per element.
    var: &'a str,
    scope: &'a [Node<'t>],
    /// The body's locals declared so far, with how they vary.
    locals: Vec<(String, Lanes)>,
    /// Divisors that must be multiples of V, as the source writes them.
    divisors: Vec<String>,
    element_returns: bool,
    sites: Vec<Site<'t>>,
    uniform_ifs: Vec<Node<'t>>,
    uniform_declarations: Vec<Node<'t>>,
    /// Whether a statement other than a declaration came before: one that may have returned,
    /// so that what follows may read memory only where it is valid.
    past_guard: bool,
    /// Whether the statements update memory atomically.
    atomics: bool,
    /// The locals of the hoisted declarations.
    hoisted: Vec<String>,
    /// Buffers a lane writes at an index of its own (`out_lse[row]`), as the original does.
    own_writes: Vec<String>,
}

impl<'t> Analysis<'_, 't> {
    fn text(&self) -> &'t str {
        self.unit.text()
    }

    /// Whether a declaration the same in every lane may be computed before the lanes: not where
    /// the statements update memory atomically (its reads could move past that), not when it
    /// reads a local the lanes compute, and past a
    /// statement that could have returned only if it reads no memory (`w = weight[row]` after
    /// `if (row >= rows) return;` would read past the end).
    fn may_hoist(&self, declaration: Node) -> bool {
        let text = self.text();
        // A local computed in the lanes (not hoisted) is not there yet before them.
        let lane_local = identifiers_in(&text[declaration.byte_range()]).any(|w| self.locals.iter().any(|(n, _)| n == w) && !self.hoisted.iter().any(|h| h == w));
        let reads_memory = descendants(declaration).any(|n| match n.kind() {
            "subscript_expression" => true,
            "pointer_expression" => n.child_by_field_name("operator").is_some_and(|op| &text[op.byte_range()] == "*"),
            "field_expression" => n.child_by_field_name("operator").is_some_and(|op| &text[op.byte_range()] == "->"),
            _ => false,
        });
        !self.atomics && !lane_local && (!self.past_guard || !reads_memory)
    }

    /// The statements of a block run once per lane, `under_uniform_if` when a branch the same in
    /// every lane holds them.
    fn visit(&mut self, statements: &[Node<'t>], under_uniform_if: bool) -> Result<(), String> {
        let text = self.text();
        for statement in statements {
            let line = self.unit.line_of(statement.start_byte());
            match statement.kind() {
                "declaration" | "expression_statement" => {
                    self.past_guard |= !under_uniform_if && statement.kind() == "expression_statement";
                    for subscript in descendants(*statement).filter(|n| n.kind() == "subscript_expression") {
                        if let Some(site) = self.site(subscript, *statement)? {
                            self.sites.push(site);
                        }
                    }
                    if statement.kind() == "declaration" {
                        let (sites, declared) = (self.sites.len(), self.locals.len());
                        let may_hoist = self.may_hoist(*statement);
                        self.declare(*statement);
                        let uniform = self.locals[declared..].iter().all(|(_, lanes)| matches!(lanes, Lanes::Uniform { .. }));
                        if !under_uniform_if && uniform && self.sites.len() == sites && self.locals.len() > declared && may_hoist {
                            self.uniform_declarations.push(*statement);
                            self.hoisted.extend(self.locals[declared..].iter().map(|(n, _)| n.clone()));
                        }
                    }
                }
                "if_statement" => {
                    self.past_guard |= !under_uniform_if;
                    self.visit_if(*statement)?
                }
                "return_statement" if self.element_returns && under_uniform_if && text[statement.byte_range()].trim_end_matches(';').trim() == "return" => {}
                "return_statement" if self.element_returns => {
                    return Err(format!("`return` at line {line} is not under a condition the same in every lane, so some lanes of a chunk would end early: not vectorised"));
                }
                kind => {
                    let keyword = kind.trim_end_matches("_statement");
                    return Err(format!("the body has a statement other than a declaration, an expression or an `if` (`{keyword}`, line {line}), which is not taken lane by lane: not vectorised"));
                }
            }
        }
        Ok(())
    }

    /// An `if` the same in every lane: its branches' accesses stay whole. Otherwise each lane
    /// takes it on its own, so it may hold no access of consecutive elements and no `return`.
    fn visit_if(&mut self, statement: Node<'t>) -> Result<(), String> {
        let text = self.text();
        let line = self.unit.line_of(statement.start_byte());
        let condition = statement.child_by_field_name("condition").ok_or_else(|| format!("the `if` at line {line} has no condition: not vectorised"))?;
        // `if (c)`: the clause around the expression.
        let condition = condition.child_by_field_name("value").or_else(|| condition.named_child(0)).filter(|_| condition.kind() == "condition_clause").unwrap_or(condition);
        let (consequence, alternative) = branches_of(statement);
        let branches: Vec<Node<'t>> = consequence.into_iter().chain(alternative).collect();
        if matches!(self.lanes(condition), Lanes::Uniform { .. }) {
            self.uniform_ifs.push(statement);
            for branch in branches {
                let inner = if branch.kind() == "compound_statement" { statements_of(branch) } else { vec![branch] };
                let declared = self.locals.len();
                self.visit(&inner, true)?;
                self.locals.truncate(declared);
            }
            return Ok(());
        }
        for node in descendants(statement) {
            match node.kind() {
                "return_statement" | "break_statement" | "continue_statement" | "goto_statement" => {
                    return Err(format!("`{}` at line {} is under a condition that differs between lanes: not vectorised", text[node.byte_range()].trim_end_matches(';').trim(), self.unit.line_of(node.start_byte())));
                }
                "subscript_expression" if self.site(node, statement)?.is_some() => {
                    return Err(format!("`{}` is under a condition that differs between lanes (line {}): a vector access would touch elements the lanes may not", &text[node.byte_range()], self.unit.line_of(node.start_byte())));
                }
                _ => {}
            }
        }
        Ok(())
    }

    fn declare(&mut self, declaration: Node<'t>) {
        let mut cursor = declaration.walk();
        let declarators: Vec<Node> = declaration.children_by_field_name("declarator", &mut cursor).collect();
        for d in declarators {
            let Some(name) = d.child_by_field_name("declarator").map(|n| declared_name(self.text(), n)) else { continue };
            let lanes = match d.child_by_field_name("value") {
                Some(value) if !self.assigned_in_loop(&name) => self.lanes(value),
                _ => Lanes::Other,
            };
            self.locals.push((name, lanes));
        }
    }

    /// Whether `name` is assigned anywhere in the statements other than where it is declared.
    fn assigned_in_loop(&self, name: &str) -> bool {
        let text = self.text();
        self.scope.iter().flat_map(|s| descendants(*s)).any(|n| match n.kind() {
            "assignment_expression" => n.child_by_field_name("left").is_some_and(|left| &text[left.byte_range()] == name),
            "update_expression" => n.child_by_field_name("argument").is_some_and(|a| &text[a.byte_range()] == name),
            _ => false,
        })
    }

    fn lanes(&mut self, node: Node) -> Lanes {
        let text = self.text();
        match node.kind() {
            "parenthesized_expression" => node.named_child(0).map_or(Lanes::Other, |n| self.lanes(n)),
            "cast_expression" => node.child_by_field_name("value").map_or(Lanes::Other, |n| self.lanes(n)),
            "number_literal" | "field_expression" | "sizeof_expression" => Lanes::Uniform { multiple: false },
            "identifier" => {
                let name = &text[node.byte_range()];
                if name == self.var {
                    return Lanes::Step { aligned: true };
                }
                if let Some((_, lanes)) = self.locals.iter().rev().find(|(n, _)| n == name) {
                    return *lanes;
                }
                if self.assigned_in_loop(name) || self.declared_in_loop(name) {
                    Lanes::Other
                } else {
                    Lanes::Uniform { multiple: self.divisors.iter().any(|d| d == name) }
                }
            }
            "true" | "false" | "null" | "nullptr" => Lanes::Uniform { multiple: false },
            // The same element in every lane, of a buffer the statements do not write.
            "subscript_expression" => {
                let (Some(pointer), Some(index)) = (node.child_by_field_name("argument"), subscript_index(node)) else { return Lanes::Other };
                let same = matches!(self.lanes(pointer), Lanes::Uniform { .. }) && matches!(self.lanes(index), Lanes::Uniform { .. });
                if same && !self.written_in_loop(&text[pointer.byte_range()]) { Lanes::Uniform { multiple: false } } else { Lanes::Other }
            }
            "unary_expression" => match node.child_by_field_name("argument").map(|a| self.lanes(a)) {
                Some(Lanes::Uniform { .. }) => Lanes::Uniform { multiple: false },
                _ => Lanes::Other,
            },
            // A function of values the same in every lane is too, unless it changes memory.
            "call_expression" => {
                let callee = node.child_by_field_name("function").map(|f| &text[f.byte_range()]).unwrap_or("");
                let arguments: Vec<Node> = node.child_by_field_name("arguments").map(|a| {
                    let mut cursor = a.walk();
                    a.named_children(&mut cursor).filter(|n| n.kind() != "comment").collect()
                }).unwrap_or_default();
                let pure = !callee.contains("atomic") && arguments.iter().all(|a| matches!(self.lanes(*a), Lanes::Uniform { .. }));
                if pure { Lanes::Uniform { multiple: false } } else { Lanes::Other }
            }
            "binary_expression" => {
                let (Some(left), Some(right), Some(op)) = (node.child_by_field_name("left"), node.child_by_field_name("right"), node.child_by_field_name("operator")) else {
                    return Lanes::Other;
                };
                let op = &text[op.byte_range()];
                let a = self.lanes(left);
                if matches!(op, "/" | "%") {
                    return self.divided(a, right, op);
                }
                let b = self.lanes(right);
                if matches!(op, "==" | "!=" | "<" | ">" | "<=" | ">=" | "&&" | "||") {
                    let both = matches!(a, Lanes::Uniform { .. }) && matches!(b, Lanes::Uniform { .. });
                    return if both { Lanes::Uniform { multiple: false } } else { Lanes::Other };
                }
                combined(a, op, b)
            }
            _ => Lanes::Other,
        }
    }

    /// `a / d` or `a % d`: a lane value stays whole when its first lane's value and `d` are
    /// multiples of V (the chunk then lies within one multiple of `d`); `d` must then be the
    /// same throughout the loop, and its being a multiple is checked before it.
    fn divided(&mut self, a: Lanes, divisor: Node, op: &str) -> Lanes {
        let d = self.lanes(divisor);
        match (a, d) {
            (Lanes::Uniform { .. }, Lanes::Uniform { .. }) => Lanes::Uniform { multiple: false },
            (Lanes::Step { aligned: true }, Lanes::Uniform { multiple }) if multiple || self.loop_invariant(divisor) => {
                let written = self.text()[divisor.byte_range()].trim().to_string();
                if !multiple && !self.divisors.contains(&written) {
                    self.divisors.push(written);
                }
                if op == "/" { Lanes::Uniform { multiple: false } } else { Lanes::Step { aligned: true } }
            }
            _ => Lanes::Other,
        }
    }

    /// Whether `node`'s value is fixed before the loop: it names nothing the loop declares or
    /// assigns.
    fn loop_invariant(&self, node: Node) -> bool {
        let text = self.text();
        descendants(node).filter(|n| n.kind() == "identifier").all(|n| {
            let name = &text[n.byte_range()];
            name != self.var && !self.assigned_in_loop(name) && !self.declared_in_loop(name)
        })
    }

    /// Whether the statements store to `pointer[…]`.
    fn written_in_loop(&self, pointer: &str) -> bool {
        let text = self.text();
        let stored = |target: Option<Node>| target.filter(|t| t.kind() == "subscript_expression").and_then(|t| t.child_by_field_name("argument")).is_some_and(|p| text[p.byte_range()].trim() == pointer.trim());
        self.scope.iter().flat_map(|s| descendants(*s)).any(|n| match n.kind() {
            "assignment_expression" => stored(n.child_by_field_name("left")),
            "update_expression" => stored(n.child_by_field_name("argument")),
            _ => false,
        })
    }

    fn declared_in_loop(&self, name: &str) -> bool {
        let text = self.text();
        self.scope.iter().flat_map(|s| descendants(*s)).filter(|n| n.kind() == "init_declarator" || n.kind() == "declaration").any(|d| {
            d.child_by_field_name("declarator").is_some_and(|n| declared_name(text, n) == name)
        })
    }

    /// `subscript` as an access of consecutive elements, `None` when its index is not a lane
    /// value (each lane reads its own element, as before), or why it cannot be vectorised.
    fn site(&mut self, subscript: Node<'t>, statement: Node<'t>) -> Result<Option<Site<'t>>, String> {
        let text = self.text();
        let (Some(pointer), Some(index)) = (subscript.child_by_field_name("argument"), subscript_index(subscript)) else { return Ok(None) };
        let written = subscript.parent().is_some_and(|a| a.kind() == "assignment_expression" && a.child_by_field_name("left") == Some(subscript));
        let index_lanes = self.lanes(index);
        let pointer_name = text[pointer.byte_range()].trim().to_string();
        let line = self.unit.line_of(subscript.start_byte());
        match index_lanes {
            Lanes::Step { .. } => {}
            // Each lane writes it as the element did, in the elements' order.
            _ if written && pointer.kind() == "identifier" => {
                self.own_writes.push(pointer_name);
                return Ok(None);
            }
            _ if written => return Err(format!("`{}` is written at an index that is not one element per lane (line {line}): not vectorised", &text[subscript.byte_range()])),
            _ => return Ok(None),
        }
        if pointer.kind() != "identifier" || !matches!(self.lanes(pointer), Lanes::Uniform { .. }) {
            return Err(format!("`{}` is not a pointer the same in every lane (line {line}): not vectorised", &text[subscript.byte_range()]));
        }
        let element = pointer_element_type(self.unit, &pointer_name).ok_or_else(|| format!("`{pointer_name}` is not a pointer parameter or a pointer derived from one: not vectorised"))?;
        let element_bytes = self.unit.element_bytes(&element).filter(|b| [1, 2, 4, 8].contains(b)).ok_or_else(|| format!("the size of `{element}` is not known: not vectorised"))?;
        if conditional(subscript, statement) {
            return Err(format!("`{}` is under a condition (line {line}): a vector access would touch elements the loop may not", &text[subscript.byte_range()]));
        }
        let compound = written && subscript.parent().and_then(|a| a.child_by_field_name("operator")).is_some_and(|op| &text[op.byte_range()] != "=");
        let index = text[index.byte_range()].trim().to_string();
        Ok(Some(Site { node: subscript, pointer: pointer_name, index, element, element_bytes, read: !written || compound, written, statement }))
    }
}

/// How `a op b` varies, for `+`, `-` and `*`.
fn combined(a: Lanes, op: &str, b: Lanes) -> Lanes {
    use Lanes::{Other, Step, Uniform};
    match (op, a, b) {
        ("+" | "-", Uniform { multiple: x }, Uniform { multiple: y }) => Uniform { multiple: x && y },
        ("+" | "-", Step { aligned }, Uniform { multiple }) => Step { aligned: aligned && multiple },
        ("+", Uniform { multiple }, Step { aligned }) => Step { aligned: aligned && multiple },
        ("-", Step { aligned: x }, Step { aligned: y }) => Uniform { multiple: x && y },
        ("*", Uniform { multiple: x }, Uniform { multiple: y }) => Uniform { multiple: x || y },
        _ => Other,
    }
}

/// The name a declarator declares (`p` of `* p`, `a` of `a[4]`).
fn declared_name(text: &str, declarator: Node) -> String {
    let mut node = declarator;
    while let Some(inner) = node.child_by_field_name("declarator") {
        node = inner;
    }
    text[node.byte_range()].to_string()
}

/// Whether `node` is evaluated only under a condition within `statement` (`?:`, `&&`, `||`).
fn conditional(node: Node, statement: Node) -> bool {
    std::iter::successors(node.parent(), |n| n.parent()).take_while(|n| *n != statement).any(|n| match n.kind() {
        "conditional_expression" | "lambda_expression" => true,
        "binary_expression" => n.child_by_field_name("operator").is_some_and(|op| matches!(op.kind(), "&&" | "||")),
        _ => false,
    })
}

/// The helpers the lane loop's accesses use, once per file; none when every access of `plans`
/// (each with its loop's element variable) tests its alignment with its chunk.
pub(super) fn access_helpers_edit(unit: &Unit, plans: &[(&LanePlan, &str)]) -> Option<TextEdit> {
    let needed = plans.iter().any(|(plan, var)| plan.sites.iter().any(|s| !s.aligned_with_pointer(unit, var)));
    if !needed || contains_identifier(unit.text(), ACCESS_GUARD) {
        return None;
    }
    let mut edit = unit.define_block(ACCESS_GUARD, "");
    edit.new_text = format!(
        "#ifndef {ACCESS_GUARD}\n#define {ACCESS_GUARD}\n\
         // The elements at p as one access of BITS when p is aligned to it, else one at a time.\n\
         template <typename BITS, typename T>\n\
         __device__ __forceinline__ BITS cutune_load(const T* p) {{\n  \
           if ((unsigned long long)p % sizeof(BITS) == 0) return *reinterpret_cast<const BITS*>(p);\n  \
           BITS bits;\n  \
           T* elements = reinterpret_cast<T*>(&bits);\n  \
           for (int k = 0; k < (int)(sizeof(BITS) / sizeof(T)); ++k) elements[k] = p[k];\n  \
           return bits;\n\
         }}\n\n\
         template <typename BITS, typename T>\n\
         __device__ __forceinline__ void cutune_store(T* p, const BITS& bits) {{\n  \
           if ((unsigned long long)p % sizeof(BITS) == 0) {{\n    \
             *reinterpret_cast<BITS*>(p) = bits;\n    \
             return;\n  \
           }}\n  \
           const T* elements = reinterpret_cast<const T*>(&bits);\n  \
           for (int k = 0; k < (int)(sizeof(BITS) / sizeof(T)); ++k) p[k] = elements[k];\n\
         }}\n\
         #endif\n\n"
    );
    Some(edit)
}

/// The text a lane plan writes, at one indentation.
pub(super) struct Writer<'a, 't> {
    unit: &'a Unit<'t>,
    plan: &'a LanePlan<'t>,
    vec: &'a str,
    step: String,
    /// A local name per site, and a vector type name per element type.
    names: Vec<String>,
    bit_types: Vec<(String, String)>,
    lane: String,
    /// Per site: whether its chunk's address is aligned exactly when its pointer is (`p[i]`, `p` a
    /// parameter the body never moves, `i` the element): the pointer is tested once, with the
    /// chunk's other conditions, and the access needs no test of its own.
    aligned_with_pointer: Vec<bool>,
}

impl<'a, 't> Writer<'a, 't> {
    pub(super) fn new(unit: &'a Unit<'t>, plan: &'a LanePlan<'t>, var: &str, vec: &'a str, bit_type: &dyn Fn(&str) -> String) -> Self {
        let mut names: Vec<String> = Vec::new();
        for s in &plan.sites {
            let wanted = format!("{}_v", s.pointer);
            let name = std::iter::once(wanted.clone()).chain((2..).map(|k| format!("{wanted}{k}"))).find(|n| !names.contains(n) && unit.local_name(n) == *n).expect("a free name");
            names.push(name);
        }
        let mut bit_types: Vec<(String, String)> = Vec::new();
        for s in &plan.sites {
            let element = plain_element(&s.element);
            if !bit_types.iter().any(|(e, _)| *e == element) {
                let name = bit_type(&element);
                bit_types.push((element, name));
            }
        }
        let aligned_with_pointer = plan.sites.iter().map(|s| s.aligned_with_pointer(unit, var)).collect();
        Writer { unit, plan, vec, step: indent_step(unit.text()), names, bit_types, lane: unit.local_name(&format!("{var}_lane")), aligned_with_pointer }
    }

    /// Whether the chunk's condition has tested `s`'s alignment ([`Writer::prologue`]).
    fn is_aligned(&self, s: &Site) -> bool {
        self.plan.sites.iter().position(|t| std::ptr::eq(t, s)).is_some_and(|at| self.aligned_with_pointer[at])
    }

    fn bits(&self, s: &Site) -> &str {
        &self.bit_types.iter().find(|(e, _)| *e == plain_element(&s.element)).expect("every element has a type").1
    }

    /// The vector types, and the condition that the divisors are multiples of V (`None` when
    /// there are none) as a local named `whole`.
    pub(super) fn prologue(&self, indent: &str, whole: &str) -> (String, Option<String>) {
        let mut out = String::new();
        for (element, name) in &self.bit_types {
            out.push_str(&format!("{indent}typedef typename cutune_bits<{} * sizeof({element})>::type {name};\n", self.vec));
        }
        // A chunk of V starts at a multiple of V; it stays within one row when the divisors are too,
        // and its accesses `p[i]` are aligned when their pointers are.
        let mut terms: Vec<String> = self.plan.divisors.iter().map(|d| format!("{} % {} == 0", operand(d), self.vec)).collect();
        for (s, _) in self.plan.sites.iter().zip(&self.aligned_with_pointer).filter(|(_, aligned)| **aligned) {
            let term = format!("(unsigned long long){} % sizeof({}) == 0", s.pointer, self.bits(s));
            if !terms.contains(&term) {
                terms.push(term);
            }
        }
        if terms.is_empty() {
            return (out, None);
        }
        out.push_str(&joined(&format!("{indent}const bool {whole} = "), &terms, "&&", ";\n"));
        (out, Some(whole.to_string()))
    }

    /// One chunk: the declarations the same in every lane, computed once from the first lane's
    /// element, then the lanes (see [`Writer::lanes`]).
    pub(super) fn chunk(&self, indent: &str, var: &str, ty: &str, first: &str, statements: &[Node]) -> String {
        let mut out = String::new();
        for declaration in statements.iter().filter(|s| self.plan.uniform_declarations.contains(s)) {
            out.push_str(&format!("{indent}{}\n", self.first_lane_text(*declaration, var, first)));
        }
        self.lanes(&mut out, indent, var, ty, first, statements);
        out
    }

    /// `statements` for every lane of the chunk. An `if` the same in every lane at their top level
    /// is taken once, before the lanes, where it can be ([`Writer::unswitchable`]): each branch
    /// then runs its own lanes, with no test per lane and every store reached (merge_attn_states:
    /// 77.4 → 73.8 µs on the H100, docs/benchmarks.md). Otherwise one lane loop: the vectors,
    /// the statements once per lane (`var` = `first + lane`) with their accesses read from and
    /// written to the vectors, then the stores.
    fn lanes(&self, out: &mut String, indent: &str, var: &str, ty: &str, first: &str, statements: &[Node<'t>]) {
        if let Some(at) = self.unswitchable(statements) {
            let text = self.unit.text();
            let inner = format!("{indent}{}", self.step);
            let (before, statement, after) = (&statements[..at], statements[at], &statements[at + 1..]);
            let condition = statement.child_by_field_name("condition").map_or("", |c| &text[c.byte_range()]);
            let (consequence, alternative) = branches_of(statement);
            let (then, otherwise) = (taken(before, consequence, after), taken(before, alternative, after));
            // A branch that does nothing (`if (m == -INFINITY) return;`) gets no lanes.
            match (inert(text, &then), inert(text, &otherwise)) {
                (true, true) => return,
                (true, false) => {
                    out.push_str(&format!("{indent}if (!{condition}) {{\n"));
                    self.lanes(out, &inner, var, ty, first, &otherwise);
                    out.push_str(&format!("{indent}}}\n"));
                    return;
                }
                (false, true) => {
                    out.push_str(&format!("{indent}if {condition} {{{}\n", self.after_brace(consequence)));
                    self.lanes(out, &inner, var, ty, first, &then);
                    out.push_str(&format!("{indent}}}\n"));
                    return;
                }
                (false, false) => {}
            }
            out.push_str(&format!("{indent}if {condition} {{{}\n", self.after_brace(consequence)));
            self.lanes(out, &inner, var, ty, first, &then);
            if self.unswitchable(&otherwise).is_some() {
                // A chained `else if`, taken before the lanes too: written as one.
                let mut chained = String::new();
                self.lanes(&mut chained, indent, var, ty, first, &otherwise);
                out.push_str(&format!("{indent}}} else {}", chained.trim_start()));
            } else {
                out.push_str(&format!("{indent}}} else {{{}\n", self.after_brace(alternative)));
                self.lanes(out, &inner, var, ty, first, &otherwise);
                out.push_str(&format!("{indent}}}\n"));
            }
            return;
        }
        let (vec, lane, step) = (self.vec, &self.lane, &self.step);
        let lane_indent = format!("{indent}{step}");
        let within = |s: &Site| statements.iter().any(|t| t.byte_range().contains(&s.statement.start_byte()));
        let sites: Vec<(&Site, &String)> = self.plan.sites.iter().zip(&self.names).filter(|(s, _)| within(s)).collect();
        for (s, name) in &sites {
            let element = plain_element(&s.element);
            out.push_str(&format!("{indent}{} {name}_bits;\n", self.bits(s)));
            let constness = if s.written { "" } else { "const " };
            out.push_str(&format!("{indent}{constness}{element}* {name} = reinterpret_cast<{constness}{element}*>(&{name}_bits);\n"));
            if s.written {
                out.push_str(&format!("{indent}{element}* {name}_at = nullptr;\n"));
            }
        }
        out.push_str(&format!("{indent}for (int {lane} = 0; {lane} < {vec}; ++{lane}) {{\n"));
        out.push_str(&format!("{lane_indent}const {ty} {var} = {first} + {lane};\n"));
        self.write_statements(out, &lane_indent, statements);
        out.push_str(&format!("{indent}}}\n"));
        // Under an `if` (or past one that returns) a store may not have been reached.
        let branches = statements.iter().any(|s| descendants(*s).any(|n| self.plan.uniform_ifs.contains(&n)));
        for (s, name) in sites.iter().filter(|(s, _)| s.written) {
            let guard = if branches { format!("if ({name}_at != nullptr) ") } else { String::new() };
            match self.is_aligned(s) {
                true => out.push_str(&format!("{indent}{guard}*reinterpret_cast<{}*>({name}_at) = {name}_bits;\n", self.bits(s))),
                false => out.push_str(&format!("{indent}{guard}cutune_store({name}_at, {name}_bits);\n")),
            }
        }
    }

    /// The first `if` of `statements` (their top level) that is the same in every lane, when it
    /// may be taken before the lanes instead of in each: the statements before it do not declare
    /// or assign what its condition reads, nor write memory it reads, and the condition changes
    /// nothing (no assignment, no call but of a pure function), so testing it once, first, is
    /// testing it in every lane.
    fn unswitchable(&self, statements: &[Node<'t>]) -> Option<usize> {
        let text = self.unit.text();
        let at = statements.iter().position(|s| self.plan.uniform_ifs.contains(s))?;
        let condition = statements[at].child_by_field_name("condition")?;
        let changes = changes_something(text, condition);
        let read: Vec<&str> = identifiers_in(&text[condition.byte_range()]).collect();
        let reads_memory = descendants(condition).any(|n| matches!(n.kind(), "subscript_expression" | "pointer_expression" | "field_expression"));
        let before: Vec<Node> = statements[..at].iter().filter(|s| !self.plan.uniform_declarations.contains(s)).flat_map(|s| descendants(*s)).collect();
        let changed: Vec<String> = before
            .iter()
            .filter_map(|n| match n.kind() {
                "init_declarator" => n.child_by_field_name("declarator").map(|d| declared_name(text, d)),
                "assignment_expression" => n.child_by_field_name("left").map(|l| text[l.byte_range()].to_string()),
                "update_expression" => n.child_by_field_name("argument").map(|a| text[a.byte_range()].to_string()),
                _ => None,
            })
            .collect();
        let changes_what_it_reads = changed.iter().any(|t| identifiers_in(t).any(|w| read.contains(&w)));
        let may_write_memory = before.iter().any(|n| matches!(n.kind(), "assignment_expression" | "update_expression" | "call_expression"));
        let interferes = changes_what_it_reads || reads_memory && may_write_memory;
        (!changes && !interferes).then_some(at)
    }

    /// `statements` once per lane at `indent`: each site's load (lane 0's) before the statement
    /// that uses it, the statement with its sites read from and written to the vectors.
    fn write_statements(&self, out: &mut String, indent: &str, statements: &[Node]) {
        let text = self.unit.text();
        let lane = &self.lane;
        for statement in statements {
            if self.plan.uniform_declarations.contains(statement) {
                continue;
            }
            if self.plan.uniform_ifs.contains(statement) {
                out.push_str(indent);
                self.write_uniform_if(out, indent, *statement);
                out.push('\n');
                continue;
            }
            if statement.kind() == "return_statement" {
                // The element is done; the lanes are all done together, as the `if` is uniform.
                out.push_str(&format!("{indent}continue;\n"));
                continue;
            }
            let here: Vec<(&Site, &String)> = self.plan.sites.iter().zip(&self.names).filter(|(s, _)| s.statement == *statement).collect();
            // The first lane's element is where the vector starts.
            for (s, name) in &here {
                let address = format!("&{}[{}]", s.pointer, s.index);
                if s.read && self.is_aligned(s) {
                    out.push_str(&format!("{indent}if ({lane} == 0) {name}_bits = *reinterpret_cast<const {}*>({address});\n", self.bits(s)));
                } else if s.read {
                    out.push_str(&format!("{indent}if ({lane} == 0) {name}_bits = cutune_load<{}>({address});\n", self.bits(s)));
                }
                if s.written {
                    out.push_str(&format!("{indent}if ({lane} == 0) {name}_at = {address};\n"));
                }
            }
            let mut line = String::new();
            let mut at = statement.start_byte();
            let mut replaced = here.clone();
            replaced.sort_by_key(|(s, _)| s.node.start_byte());
            for (s, name) in replaced {
                line.push_str(&text[at..s.node.start_byte()]);
                line.push_str(&format!("{name}[{lane}]"));
                at = s.node.end_byte();
            }
            line.push_str(&text[at..statement.end_byte()]);
            let statement_indent = leading_whitespace(&text[line_start(text, statement.start_byte())..]);
            let extra = indent.strip_prefix(statement_indent).unwrap_or("");
            out.push_str(&format!("{indent}{}\n", shifted(&line, extra)));
        }
    }

    /// A declaration the same in every lane, as the first lane computes it: the element `var`
    /// is `first`.
    fn first_lane_text(&self, declaration: Node, var: &str, first: &str) -> String {
        let text = self.unit.text();
        let mut out = String::new();
        let mut at = declaration.start_byte();
        for name in descendants(declaration).filter(|n| n.kind() == "identifier" && &text[n.byte_range()] == var) {
            out.push_str(&text[at..name.start_byte()]);
            out.push_str(first);
            at = name.end_byte();
        }
        out.push_str(&text[at..declaration.end_byte()]);
        out
    }

    /// The comment after a branch's opening brace, on its line (`{  // both parts empty`), with
    /// the space before it: it stays on the line of the `if` taken before the lanes.
    fn after_brace(&self, branch: Option<Node>) -> String {
        let text = self.unit.text();
        match branch.and_then(brace_comment) {
            Some(comment) => format!("{}{}", &text[branch.expect("has the comment").start_byte() + 1..comment.start_byte()], &text[comment.byte_range()]),
            None => String::new(),
        }
    }

    /// An `if` the same in every lane from its keyword on, its branches in braces.
    fn write_uniform_if(&self, out: &mut String, indent: &str, statement: Node) {
        let text = self.unit.text();
        let inner = format!("{indent}{}", self.step);
        let condition = statement.child_by_field_name("condition").map_or("", |c| &text[c.byte_range()]);
        out.push_str(&format!("if {condition} {{\n"));
        let (consequence, alternative) = branches_of(statement);
        if let Some(consequence) = consequence {
            self.write_statements(out, &inner, &with_comments(consequence));
        }
        out.push_str(&format!("{indent}}}"));
        match alternative {
            Some(chained) if self.plan.uniform_ifs.contains(&chained) => {
                out.push_str(" else ");
                self.write_uniform_if(out, indent, chained);
            }
            Some(alternative) => {
                out.push_str(" else {\n");
                self.write_statements(out, &inner, &with_comments(alternative));
                out.push_str(&format!("{indent}}}"));
            }
            None => {}
        }
    }
}

/// Functions a condition may call and still change nothing.
const PURE_FUNCTIONS: [&str; 12] = ["min", "max", "fminf", "fmaxf", "fmin", "fmax", "fabsf", "fabs", "abs", "isnan", "isinf", "isfinite"];

/// The statements of one branch of an `if` taken before the lanes: those `before` it, the
/// branch's, then those `after` it, unless the branch ends in a `return`, which ends the element
/// there (and, the lanes' last statement now, is left out).
fn taken<'t>(before: &[Node<'t>], branch: Option<Node<'t>>, after: &[Node<'t>]) -> Vec<Node<'t>> {
    let mut statements = before.to_vec();
    let mut own = branch.map(with_comments).unwrap_or_default();
    // The comment on the brace's line goes with the `if` (see [`Writer::after_brace`]).
    own.retain(|n| Some(*n) != branch.and_then(brace_comment));
    let returns = own.iter().rev().find(|n| n.kind() != "comment").is_some_and(|n| n.kind() == "return_statement");
    if returns {
        let last = own.iter().rposition(|n| n.kind() == "return_statement").expect("checked");
        own.remove(last);
    }
    statements.extend(own);
    if !returns {
        statements.extend_from_slice(after);
    }
    statements
}

/// Whether evaluating `node` may change something: an assignment, an increment, a call of a
/// function that is not pure.
fn changes_something(text: &str, node: Node) -> bool {
    descendants(node).any(|n| match n.kind() {
        "assignment_expression" | "update_expression" => true,
        "call_expression" => !n.child_by_field_name("function").is_some_and(|f| PURE_FUNCTIONS.contains(&&text[f.byte_range()])),
        _ => false,
    })
}

/// Whether `statements` do nothing but declare locals from expressions that change nothing:
/// lanes of them would compute values no one reads.
fn inert(text: &str, statements: &[Node]) -> bool {
    statements.iter().all(|s| match s.kind() {
        "comment" => true,
        "declaration" => !changes_something(text, *s),
        _ => false,
    })
}

/// An `if`'s statement and its `else`'s (a chained `if`, a block or one statement).
fn branches_of(statement: Node) -> (Option<Node>, Option<Node>) {
    let alternative = statement.child_by_field_name("alternative").map(|a| if a.kind() == "else_clause" { a.named_child(0).unwrap_or(a) } else { a });
    (statement.child_by_field_name("consequence"), alternative)
}

/// Whether `statements` call an atomic (`atomicAdd`, `atomicMax`, …).
fn calls_atomics(text: &str, statements: &[Node]) -> bool {
    statements.iter().flat_map(|s| descendants(*s)).any(|n| n.kind() == "call_expression" && n.child_by_field_name("function").is_some_and(|f| text[f.byte_range()].contains("atomic")))
}

/// Whether `pointer` is a pointer parameter of the kernel that its body never assigns or steps:
/// its alignment is the same for every thread and every chunk.
fn fixed_parameter(unit: &Unit, pointer: &str) -> bool {
    let text = unit.text();
    let is_parameter = unit.kernel.params.iter().any(|p| p.name == pointer && p.pointer_depth > 0);
    let body = super::kernel_definition(unit.doc, unit.kernel).and_then(|d| d.child_by_field_name("body"));
    let moves = |n: &Node| match n.kind() {
        "assignment_expression" => n.child_by_field_name("left").is_some_and(|l| &text[l.byte_range()] == pointer),
        "update_expression" => n.child_by_field_name("argument").is_some_and(|a| &text[a.byte_range()] == pointer),
        _ => false,
    };
    is_parameter && body.is_some_and(|b| !descendants(b).any(|n| moves(&n)))
}

/// The comment right after a block's opening brace, on the same line.
fn brace_comment(branch: Node) -> Option<Node> {
    let first = branch.named_child(0).filter(|_| branch.kind() == "compound_statement")?;
    (first.kind() == "comment" && first.start_position().row == branch.start_position().row).then_some(first)
}

/// A branch's statements with their comments (one statement without braces is itself).
fn with_comments(branch: Node) -> Vec<Node> {
    if branch.kind() != "compound_statement" {
        return vec![branch];
    }
    let mut cursor = branch.walk();
    branch.named_children(&mut cursor).collect()
}

/// The loop as `#if VEC == 1 / original / #else / lanes / #endif`: chunks of `vec` elements, the
/// body run once per lane with its consecutive accesses as one load before the first lane and
/// one store after the last, then the scalar loop for the rest.
pub(super) fn lane_loop(unit: &Unit, l: &SimpleLoop, plan: &LanePlan, vec: &str, bit_type: &dyn Fn(&str) -> String) -> String {
    let text = unit.text();
    let start = super::strategy::loop_start_with_pragmas(text, l.node.start_byte());
    let original = &text[start..l.node.end_byte()];
    let indent = leading_whitespace(&text[line_start(text, l.node.start_byte())..]);
    let writer = Writer::new(unit, plan, &l.var, vec, bit_type);
    let step = &writer.step;
    let (inner, innermost) = (format!("{indent}{step}"), format!("{indent}{step}{step}"));
    let (i, ty, end) = (&l.var, &l.var_type, operand(&l.end));
    let vec_i = unit.local_name(&format!("{i}_vec"));
    let limit = unit.local_name(&format!("{i}_vec_end"));
    let (prologue, whole) = writer.prologue(&inner, &unit.local_name(&format!("{i}_whole")));
    let mut out = format!("#if {vec} == 1\n{original}\n#else\n{indent}{{\n{prologue}");
    let limit_value = match whole {
        None => format!("{end} - {end} % {vec}"),
        Some(whole) => format!("{whole} ? {end} - {end} % {vec} : 0"),
    };
    out.push_str(&format!("{inner}const {ty} {limit} = {limit_value};\n"));
    let (first, stride) = (factor(&l.start), factor(&l.step));
    out.push_str(&for_header(&inner, &format!("{ty} {vec_i} = {first} * {vec}"), &format!("{vec_i} < {limit}"), &format!("{vec_i} += {stride} * {vec}")));
    out.push('\n');
    let mut cursor = l.body.walk();
    let with_comments: Vec<Node> = l.body.named_children(&mut cursor).collect();
    out.push_str(&writer.chunk(&innermost, i, ty, &vec_i, &with_comments));
    out.push_str(&format!("{inner}}}\n"));
    let tail_body = shifted(&text[l.body.byte_range()], step);
    let tail_header = for_header(&inner, &format!("{ty} {i} = {limit} + {first}"), &format!("{i} < {end}"), &format!("{i} += {}", l.step.trim()));
    out.push_str(&format!("{} {tail_body}\n", tail_header.strip_suffix(" {").expect("a for header ends with its brace")));
    out.push_str(&format!("{indent}}}\n#endif"));
    out
}
