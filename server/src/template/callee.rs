//! What a called function leaves in the variables its caller passes by reference. Host helpers
//! that work out a launch (`getNumBlocksAndThreads(kernel, n, maxBlocks, maxThreads, blocks,
//! threads)`) set them in several ways, under conditions; the spec can say that with
//! conditionals, and the launch's own branch often settles them.

use std::collections::HashMap;

use tree_sitter::Node;

use crate::syntax::matching_paren;
use crate::syntax::rename_identifiers_in;
use crate::spec::expr::{self, BinaryOp, CompareOp, Expr, ExprKind, Function};
use crate::syntax::{descendants, identifiers_in};

/// `cudaDeviceProp` fields that are limits of the hardware.
const DEVICE_LIMITS: [&str; 6] = ["maxGridSize", "maxThreadsPerBlock", "maxThreadsDim", "sharedMemPerBlock", "sharedMemPerBlockOptin", "regsPerBlock"];

/// The value each of `outs` (the callee's reference parameters) holds when `body` returns, in
/// the callee's names, for those the body sets; `None` where it cannot be told: set in a loop or
/// a `switch`, or from the callee's own state; all are `None` when the body may return early
/// (a `return` under a condition), which this reading does not follow. The members the body
/// sets of a struct taken by reference (`params.n = n;` of `Params &params`) come after the outs,
/// named by their path (`params.n`), read the same way.
///
/// Statements are read in order. An `if` whose condition `decide` settles takes that branch; one
/// it does not gives each name the branches set differently a conditional, `(c) ? (a) : (b)`;
/// one that tests a limit of the device (`blocks > prop.maxGridSize[0]`) is not taken, since the
/// tuner launches nothing over the device's limits. Where one reference parameter's value reads
/// another that is not set again later (`blocks = (n + threads - 1) / threads`), the other stays
/// a name: the caller's variable, which holds that value after the call.
pub(super) fn reference_values(text: &str, body: Node, outs: &[String], pointers: &[String], decide: &dyn Fn(&str) -> Option<i64>) -> Vec<(String, Option<String>)> {
    let mut state = State::default();
    let reader = Reader { text, outs, pointers, decide };
    reader.statement(body, &mut state);
    let mut members: Vec<&String> = state.values.keys().filter(|name| reader.is_member_of_out(name)).collect();
    members.sort();
    outs.iter()
        .chain(members)
        .filter_map(|out| {
            let slot = state.values.get(out)?;
            let current = slot.reads.iter().all(|(name, version)| state.versions.get(name).copied().unwrap_or(0) == *version);
            Some((out.clone(), slot.value.clone().filter(|_| current && !state.tainted_after_return)))
        })
        .collect()
}

/// A name's value so far, and the reference parameters (with their versions) it reads by name.
#[derive(Clone, Debug, Default, PartialEq)]
struct Slot {
    value: Option<String>,
    reads: Vec<(String, u32)>,
}

#[derive(Clone, Debug, Default)]
struct State {
    /// Locals and reference parameters the body has set.
    values: HashMap<String, Slot>,
    /// How many times each reference parameter has been set.
    versions: HashMap<String, u32>,
    /// The statements read so far end in a `return`.
    returned: bool,
    /// A `return` under a condition was passed: what the body leaves holds only sometimes.
    tainted_after_return: bool,
}

struct Reader<'a> {
    text: &'a str,
    outs: &'a [String],
    /// The outs that are pointers (`int *height`), set as `*height = …`.
    pointers: &'a [String],
    decide: &'a dyn Fn(&str) -> Option<i64>,
}

impl Reader<'_> {
    fn statement(&self, node: Node, state: &mut State) {
        if state.returned {
            return;
        }
        match node.kind() {
            "compound_statement" => {
                let mut cursor = node.walk();
                for child in node.named_children(&mut cursor) {
                    self.statement(child, state);
                }
            }
            "expression_statement" => {
                let mut cursor = node.walk();
                for child in node.named_children(&mut cursor) {
                    self.expression(child, state);
                }
            }
            "declaration" => {
                let mut cursor = node.walk();
                for declarator in node.children_by_field_name("declarator", &mut cursor) {
                    let name = declarator.child_by_field_name("declarator").filter(|_| declarator.kind() == "init_declarator").unwrap_or(declarator);
                    let name = self.text[name.byte_range()].trim().to_string();
                    let slot = match declarator.child_by_field_name("value") {
                        Some(value) => {
                            self.calls_in(value, state);
                            self.value_of(&self.text[value.byte_range()], &name, state)
                        }
                        None => Slot::default(),
                    };
                    state.values.insert(name, slot);
                }
            }
            "if_statement" => {
                // `if (fscanf(file, "%d", &rows) != 1)`: the condition's calls run first.
                if let Some(condition) = node.child_by_field_name("condition") {
                    self.calls_in(condition, state);
                }
                self.branch(node, state)
            }
            "return_statement" => state.returned = true,
            // Loops, `switch` and the rest: what they set is not known.
            _ => {
                for set in descendants(node).filter_map(|n| self.target_of(n)) {
                    self.set(&set, Slot::default(), state);
                }
            }
        }
    }

    fn expression(&self, node: Node, state: &mut State) {
        match node.kind() {
            "comma_expression" => {
                let mut cursor = node.walk();
                for child in node.named_children(&mut cursor) {
                    self.expression(child, state);
                }
            }
            "assignment_expression" => {
                let (Some(left), Some(right), Some(operator)) = (node.child_by_field_name("left"), node.child_by_field_name("right"), node.child_by_field_name("operator")) else { return };
                self.calls_in(right, state);
                let name = self.assigned_name(left);
                let right = &self.text[right.byte_range()];
                let slot = match &self.text[operator.byte_range()] {
                    "=" => self.value_of(right, &name, state),
                    compound => self.value_of(&format!("{name} {} ({right})", compound.trim_end_matches('=')), &name, state),
                };
                self.set(&name, slot, state);
            }
            "update_expression" => {
                let (Some(argument), Some(operator)) = (node.child_by_field_name("argument"), node.child_by_field_name("operator")) else { return };
                let name = self.text[argument.byte_range()].trim().to_string();
                let step = if &self.text[operator.byte_range()] == "++" { "+" } else { "-" };
                let slot = self.value_of(&format!("{name} {step} 1"), &name, state);
                self.set(&name, slot, state);
            }
            _ => self.calls_in(node, state),
        }
    }

    /// Reads the calls in `node` (itself included): a call given an out's address
    /// (`fscanf(f, "%d", &rows)`), or an out pointer (`fscanf(f, "%d", height)`), may set it to
    /// anything.
    fn calls_in(&self, node: Node, state: &mut State) {
        for call in descendants(node).filter(|n| n.kind() == "call_expression") {
            let Some(arguments) = call.child_by_field_name("arguments") else { continue };
            let mut cursor = arguments.walk();
            for argument in arguments.named_children(&mut cursor) {
                let text = self.text[argument.byte_range()].trim();
                let set = match text.strip_prefix('&') {
                    Some(variable) => Some(variable.trim()),
                    None => self.pointers.iter().any(|p| p == text).then_some(text),
                };
                if let Some(variable) = set {
                    self.set(variable, Slot::default(), state);
                }
            }
        }
    }

    /// The name an assignment's left side sets: `height` of `*height = …` for an out pointer,
    /// `params.w[0]` of `params.w[ 0 ] = …`.
    fn assigned_name(&self, left: Node) -> String {
        let text = self.text[left.byte_range()].trim();
        match text.strip_prefix('*').map(str::trim) {
            Some(pointer) if self.pointers.iter().any(|p| p == pointer) => pointer.to_string(),
            _ => text.split_whitespace().collect(),
        }
    }

    /// Whether `name` is a member of an out taken by reference (`params.n`, `params.w[0]`).
    fn is_member_of_out(&self, name: &str) -> bool {
        let by_reference = self.outs.iter().filter(|o| !self.pointers.contains(o));
        by_reference.into_iter().any(|out| name.strip_prefix(out.as_str()).is_some_and(|rest| rest.starts_with('.')))
    }

    /// The name an assignment or an update in `node` sets.
    fn target_of(&self, node: Node) -> Option<String> {
        match node.kind() {
            "assignment_expression" => Some(self.assigned_name(node.child_by_field_name("left")?)),
            "update_expression" => Some(self.text[node.child_by_field_name("argument")?.byte_range()].trim().to_string()),
            _ => None,
        }
    }

    fn set(&self, name: &str, slot: Slot, state: &mut State) {
        if self.outs.iter().any(|o| o == name) || self.is_member_of_out(name) {
            *state.versions.entry(name.to_string()).or_default() += 1;
        } else if !state.values.contains_key(name) {
            // Neither a local nor a reference parameter: the caller never sees it.
            return;
        }
        state.values.insert(name.to_string(), slot);
    }

    /// `text`, the new value of `target`, with the locals and `target` replaced by their values
    /// so far; another reference parameter set before (and not set again later) is read by name.
    fn value_of(&self, text: &str, target: &str, state: &State) -> Slot {
        let mut reads = Vec::new();
        let mut known = true;
        let value = rename_identifiers_in(text, |word| {
            let is_out = self.outs.iter().any(|o| o == word);
            let slot = state.values.get(word);
            match slot {
                Some(_) if is_out && word != target => {
                    reads.push((word.to_string(), state.versions.get(word).copied().unwrap_or(0)));
                    None
                }
                Some(Slot { value: Some(value), reads: read }) => {
                    reads.extend(read.iter().cloned());
                    Some(format!("({value})"))
                }
                // An out not set so far: the caller's variable holds that value after the call
                // too, unless the body sets it later (its version then moves on).
                None if is_out && word != target => {
                    reads.push((word.to_string(), 0));
                    None
                }
                // A local without a value, or the target's own value from before the call, which
                // its name no longer holds after.
                Some(Slot { value: None, .. }) => {
                    known = false;
                    None
                }
                None if is_out => {
                    known = false;
                    None
                }
                None => None,
            }
        });
        Slot { value: known.then_some(value), reads }
    }

    /// `text` of a condition with every local and reference parameter replaced by its value
    /// now; `None` when one of them has none.
    fn condition_of(&self, text: &str, state: &State) -> Option<String> {
        let mut known = true;
        let value = rename_identifiers_in(text, |word| match state.values.get(word).map(|s| &s.value) {
            Some(Some(value)) => Some(format!("({value})")),
            Some(None) => {
                known = false;
                None
            }
            None if self.outs.iter().any(|o| o == word) => {
                known = false;
                None
            }
            None => None,
        });
        known.then_some(value)
    }

    fn branch(&self, node: Node, state: &mut State) {
        let Some(condition) = node.child_by_field_name("condition").map(|c| c.child_by_field_name("value").unwrap_or(c)) else { return };
        let condition = &self.text[condition.byte_range()];
        let consequence = node.child_by_field_name("consequence");
        let alternative = node.child_by_field_name("alternative").and_then(|a| a.named_child(0));
        let taken = if DEVICE_LIMITS.iter().any(|limit| identifiers_in(condition).any(|w| w == *limit)) {
            Some(false)
        } else {
            self.condition_of(condition, state).and_then(|c| (self.decide)(&c)).map(|v| v != 0)
        };
        match taken {
            Some(true) => consequence.into_iter().for_each(|c| self.statement(c, state)),
            Some(false) => alternative.into_iter().for_each(|a| self.statement(a, state)),
            None => {
                let condition = self.condition_of(condition, state);
                let mut if_true = state.clone();
                let mut if_false = state.clone();
                consequence.into_iter().for_each(|c| self.statement(c, &mut if_true));
                alternative.into_iter().for_each(|a| self.statement(a, &mut if_false));
                *state = merged(condition.as_deref(), if_true, if_false);
            }
        }
    }
}

/// The state after an `if` whose condition is not known: each name the branches leave
/// differently holds a conditional (nothing when the condition itself is not known).
fn merged(condition: Option<&str>, if_true: State, if_false: State) -> State {
    let mut out = if_true.clone();
    out.returned = if_true.returned && if_false.returned;
    out.tainted_after_return = if_true.tainted_after_return || if_false.tainted_after_return || if_true.returned != if_false.returned;
    let names: Vec<&String> = if_true.values.keys().chain(if_false.values.keys()).collect();
    for name in names {
        let (a, b) = (if_true.values.get(name), if_false.values.get(name));
        if a == b {
            continue;
        }
        let slot = match (condition, a.and_then(|s| s.value.as_ref()), b.and_then(|s| s.value.as_ref())) {
            (Some(c), Some(x), Some(y)) => {
                let reads = a.into_iter().chain(b).flat_map(|s| s.reads.iter().cloned()).collect();
                Slot { value: Some(format!("({}) ? ({x}) : ({y})", c.trim())), reads }
            }
            _ => Slot::default(),
        };
        out.values.insert(name.clone(), slot);
    }
    for (name, version) in &if_false.versions {
        let other = if_true.versions.get(name).copied().unwrap_or(0);
        if *version != other {
            out.versions.insert(name.clone(), other.max(*version) + 1);
        }
    }
    out
}

/// `text` with each conditional whose condition `resolve` settles replaced by the branch it
/// takes: `(kind < 3) ? (a) : (b)` is `(b)` where `kind` is 6.
pub(super) fn settled_conditionals(text: &str, resolve: &dyn Fn(&str) -> Option<i64>) -> String {
    // Each argument of a call on its own: `min(64, (kind < 3) ? (a) : (b))`.
    let parts: Vec<String> = crate::spec::split_top_level(text, ',')
        .into_iter()
        .map(|part| {
            let indent = &part[..part.len() - part.trim_start().len()];
            format!("{indent}{}", settled_in_groups(&settled_at_top(part.trim(), resolve), resolve))
        })
        .collect();
    parts.join(",")
}

/// `text` with the conditionals inside each parenthesised group settled.
fn settled_in_groups(text: &str, resolve: &dyn Fn(&str) -> Option<i64>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('(') {
        let Some(close) = matching_paren(&rest[open..]).map(|c| open + c) else { break };
        out.push_str(&rest[..=open]);
        out.push_str(&settled_conditionals(&rest[open + 1..close], resolve));
        out.push(')');
        rest = &rest[close + 1..];
    }
    out.push_str(rest);
    out
}

/// The branch a conditional at the top level of `text` takes, when `resolve` settles it.
fn settled_at_top(text: &str, resolve: &dyn Fn(&str) -> Option<i64>) -> String {
    let mut text = text.to_string();
    for _ in 0..16 {
        let Some((question, colon)) = top_level_conditional(&text) else { break };
        let Some(value) = crate::syntax::eval_constant(&text[..question], resolve) else { break };
        text = if value != 0 { text[question + 1..colon].trim().to_string() } else { text[colon + 1..].trim().to_string() };
    }
    text
}

/// The byte offsets of the `?` and its `:` of a conditional at the top level of `text`.
pub(super) fn top_level_conditional(text: &str) -> Option<(usize, usize)> {
    let mut depth = 0i32;
    let mut question = None;
    let mut nested = 0;
    for (i, c) in text.char_indices() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            '?' if depth == 0 => match question {
                None => question = Some(i),
                Some(_) => nested += 1,
            },
            ':' if depth == 0 && question.is_some() && !text[i..].starts_with("::") && !text[..i].ends_with(':') => {
                if nested == 0 {
                    return Some((question?, i));
                }
                nested -= 1;
            }
            _ => {}
        }
    }
    None
}

/// A host expression as a person would write it in the spec: `(n + (t * 2 - 1)) // (t * 2)` is
/// `ceil_div(n, t * 2)`, `(a < b) ? a : b` is `min(a, b)`, with no parentheses it does not need.
/// Text the spec cannot read stays as it is.
pub(super) fn readable(text: &str) -> String {
    match expr::parse(text) {
        Ok(parsed) => simplified(parsed).to_spec_text(),
        Err(_) => text.to_string(),
    }
}

fn simplified(e: Expr) -> Expr {
    let inner = |e: Box<Expr>| Box::new(simplified(*e));
    let kind = match e.kind {
        ExprKind::Unary(op, a) => ExprKind::Unary(op, inner(a)),
        ExprKind::Binary(op, a, b) => ExprKind::Binary(op, inner(a), inner(b)),
        ExprKind::Compare(first, rest) => ExprKind::Compare(inner(first), rest.into_iter().map(|(op, e)| (op, simplified(e))).collect()),
        ExprKind::Conditional { condition, if_true, if_false } => ExprKind::Conditional { condition: inner(condition), if_true: inner(if_true), if_false: inner(if_false) },
        ExprKind::Call(f, args) => ExprKind::Call(f, args.into_iter().map(simplified).collect()),
        leaf => leaf,
    };
    let e = Expr { kind: folded_same_condition(kind), span: e.span };
    let e = ceil_division(&e).or_else(|| rounded_up_by_condition(&e)).or_else(|| min_or_max(&e)).unwrap_or(e);
    without_unit(&e).unwrap_or(e)
}

/// `a * 1`, `1 * a`, `a // 1`, `ceil_div(a, 1)` → `a`: a parameter's default of 1 written in
/// (a launch of one row per block).
fn without_unit(e: &Expr) -> Option<Expr> {
    let is_one = |e: &Expr| e.kind == ExprKind::Int(1);
    match &e.kind {
        ExprKind::Binary(BinaryOp::Mul, a, one) | ExprKind::Binary(BinaryOp::FloorDiv, a, one) if is_one(one) => Some((**a).clone()),
        ExprKind::Binary(BinaryOp::Mul, one, a) if is_one(one) => Some((**a).clone()),
        ExprKind::Call(Function::CeilDiv, args) if args.len() == 2 && is_one(&args[1]) => Some(args[0].clone()),
        _ => None,
    }
}

/// `c ? (c ? a : x) : b` → `c ? a : b`, and `c ? a : (c ? x : b)` → `c ? a : b`: an `if`/`else`
/// pair that sets one name, read branch by branch.
fn folded_same_condition(kind: ExprKind) -> ExprKind {
    let ExprKind::Conditional { condition, mut if_true, mut if_false } = kind else { return kind };
    if let ExprKind::Conditional { condition: inner, if_true: taken, .. } = &if_true.kind {
        if same(inner, &condition) {
            if_true = taken.clone();
        }
    }
    if let ExprKind::Conditional { condition: inner, if_false: not_taken, .. } = &if_false.kind {
        if same(inner, &condition) {
            if_false = not_taken.clone();
        }
    }
    ExprKind::Conditional { condition, if_true, if_false }
}

fn same(a: &Expr, b: &Expr) -> bool {
    a.to_spec_text() == b.to_spec_text()
}

fn call(function: Function, args: Vec<Expr>, span: &std::ops::Range<usize>) -> Expr {
    Expr { kind: ExprKind::Call(function, args), span: span.clone() }
}

/// `(a + (b - 1)) // b` and `(a + b - 1) // b` → `ceil_div(a, b)`.
fn ceil_division(e: &Expr) -> Option<Expr> {
    let ExprKind::Binary(BinaryOp::FloorDiv, numerator, divisor) = &e.kind else { return None };
    let is_one = |e: &Expr| e.kind == ExprKind::Int(1);
    let dividend = match &numerator.kind {
        ExprKind::Binary(BinaryOp::Add, a, rest) => match &rest.kind {
            ExprKind::Binary(BinaryOp::Sub, d, one) if is_one(one) && same(d, divisor) => a,
            _ => return None,
        },
        ExprKind::Binary(BinaryOp::Sub, sum, one) if is_one(one) => match &sum.kind {
            ExprKind::Binary(BinaryOp::Add, a, d) if same(d, divisor) => a,
            _ => return None,
        },
        _ => return None,
    };
    Some(call(Function::CeilDiv, vec![(**dividend).clone(), (**divisor).clone()], &e.span))
}

/// `a % b != 0 ? a // b + 1 : a // b` (a count rounded up by a step under a condition) →
/// `ceil_div(a, b)`.
fn rounded_up_by_condition(e: &Expr) -> Option<Expr> {
    let ExprKind::Conditional { condition, if_true, if_false } = &e.kind else { return None };
    let remainder = match &condition.kind {
        ExprKind::Compare(r, rest) if matches!(rest.as_slice(), [(CompareOp::Ne, zero)] if zero.kind == ExprKind::Int(0)) => r,
        _ => condition,
    };
    let ExprKind::Binary(BinaryOp::Rem, a, b) = &remainder.kind else { return None };
    let ExprKind::Binary(BinaryOp::FloorDiv, a2, b2) = &if_false.kind else { return None };
    let ExprKind::Binary(BinaryOp::Add, quotient, one) = &if_true.kind else { return None };
    let whole = same(a, a2) && same(b, b2) && same(quotient, if_false) && one.kind == ExprKind::Int(1);
    whole.then(|| call(Function::CeilDiv, vec![(**a).clone(), (**b).clone()], &e.span))
}

/// `(a < b) ? a : b` → `min(a, b)`, and the other spellings of `min` and `max`.
fn min_or_max(e: &Expr) -> Option<Expr> {
    let ExprKind::Conditional { condition, if_true, if_false } = &e.kind else { return None };
    let ExprKind::Compare(x, rest) = &condition.kind else { return None };
    let [(op, y)] = rest.as_slice() else { return None };
    let less = matches!(op, CompareOp::Lt | CompareOp::Le);
    let greater = matches!(op, CompareOp::Gt | CompareOp::Ge);
    let function = if same(if_true, x) && same(if_false, y) {
        if less { Function::Min } else if greater { Function::Max } else { return None }
    } else if same(if_true, y) && same(if_false, x) {
        if less { Function::Max } else if greater { Function::Min } else { return None }
    } else {
        return None;
    };
    Some(call(function, vec![(**x).clone(), y.clone()], &e.span))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::{eval_constant, Document};

    fn values_of(source: &str, decide: &dyn Fn(&str) -> Option<i64>) -> HashMap<String, Option<String>> {
        let doc = Document::new(source.to_string());
        let root = doc.tree().expect("parses").root_node();
        let function = descendants(root).find(|n| n.kind() == "function_definition").expect("a function");
        let body = function.child_by_field_name("body").expect("a body");
        let outs = vec!["blocks".to_string(), "threads".to_string()];
        let pointers: Vec<String> = outs.iter().filter(|o| source.contains(&format!("*{o}"))).cloned().collect();
        reference_values(source, body, &outs, &pointers, decide).into_iter().collect()
    }

    const HELPER: &str = "void shape(int kind, int n, int most, int &blocks, int &threads) {
    cudaDeviceProp prop;
    if (kind < 3) {
        threads = (n < 256) ? next_pow2(n) : 256;
        blocks = (n + threads - 1) / threads;
    } else {
        threads = 128;
        blocks = (n + (threads * 2 - 1)) / (threads * 2);
    }
    if (blocks > prop.maxGridSize[0]) {
        blocks /= 2;
        threads *= 2;
    }
    if (kind >= 6) {
        blocks = MIN(most, blocks);
    }
}";

    #[test]
    fn undecided_branches_give_conditionals_and_device_limits_are_not_taken() {
        let values = values_of(HELPER, &|text| eval_constant(text, &|_| None));
        let blocks = values["blocks"].clone().expect("known");
        let by_kind = "(kind < 3) ? ((n + threads - 1) / threads) : ((n + (threads * 2 - 1)) / (threads * 2))";
        assert_eq!(blocks, format!("(kind >= 6) ? (MIN(most, ({by_kind}))) : ({by_kind})"));
        assert_eq!(values["threads"].as_deref(), Some("(kind < 3) ? ((n < 256) ? next_pow2(n) : 256) : (128)"));
    }

    #[test]
    fn decided_conditions_take_their_branch() {
        let kind_is = |value: i64| move |text: &str| eval_constant(text, &|w| (w == "kind").then_some(value));
        let values = values_of(HELPER, &kind_is(7));
        assert_eq!(values["blocks"].as_deref(), Some("MIN(most, ((n + (threads * 2 - 1)) / (threads * 2)))"));
        assert_eq!(values["threads"].as_deref(), Some("128"));
        let values = values_of(HELPER, &kind_is(0));
        assert_eq!(values["blocks"].as_deref(), Some("(n + threads - 1) / threads"));
    }

    #[test]
    fn a_value_read_by_name_and_then_changed_is_unknown() {
        let source = "void f(int n, int &blocks, int &threads) { threads = 64; blocks = n / threads; threads = 128; }";
        let values = values_of(source, &|_| None);
        assert_eq!(values["blocks"], None);
        assert_eq!(values["threads"].as_deref(), Some("128"));
    }

    #[test]
    fn loops_locals_without_values_and_conditional_returns_make_values_unknown() {
        let looped = values_of("void f(int n, int &blocks, int &threads) { threads = 32; while (threads < n) threads *= 2; }", &|_| None);
        assert_eq!(looped["threads"], None);
        let local = values_of("void f(int n, int &blocks, int &threads) { int t; int u = n * 2; threads = t; blocks = u + 1; }", &|_| None);
        assert_eq!(local["threads"], None);
        assert_eq!(local["blocks"].as_deref(), Some("(n * 2) + 1"));
        let returns = values_of("void f(int n, int &blocks, int &threads) { if (n == 0) return; blocks = n; }", &|_| None);
        assert_eq!(returns["blocks"], None);
        let decided = values_of("void f(int n, int &blocks, int &threads) { if (1) return; blocks = n; }", &|t| eval_constant(t, &|_| None));
        assert!(!decided.contains_key("blocks"));
    }

    #[test]
    fn members_of_a_struct_by_reference_are_read_as_the_outs_are() {
        let source = "void f(int n, Params &blocks, int &threads) { int half = n / 2; blocks.n = half; blocks.t = threads; blocks.w[ 0 ] = 0.5f; if (n > 4) blocks.k = 4; else blocks.k = 2; if (n > 8) blocks.x = 1; for (int i = 0; i < n; ++i) blocks.y = i; }";
        let values = values_of(source, &|_| None);
        assert_eq!(values["blocks.n"].as_deref(), Some("(n / 2)"));
        assert_eq!(values["blocks.w[0]"].as_deref(), Some("0.5f"));
        // An out the body reads and never sets keeps the caller's value.
        assert_eq!(values["blocks.t"].as_deref(), Some("threads"));
        assert_eq!(values["blocks.k"].as_deref(), Some("(n > 4) ? (4) : (2)"));
        // Set under one branch only, or in a loop: what the caller's struct holds is not known.
        assert_eq!((values["blocks.x"].as_deref(), values["blocks.y"].as_deref()), (None, None));
        let decided = values_of(source, &|text| eval_constant(text, &|w| (w == "n").then_some(16)));
        assert_eq!((decided["blocks.k"].as_deref(), decided["blocks.x"].as_deref()), (Some("4"), Some("1")));
    }

    #[test]
    fn pointers_are_set_through_and_calls_given_an_out_may_set_it() {
        let through = values_of("void f(int n, int *blocks, int *threads) { *threads = 128; *blocks = (n + 127) / 128; }", &|_| None);
        assert_eq!(through["threads"].as_deref(), Some("128"));
        assert_eq!(through["blocks"].as_deref(), Some("(n + 127) / 128"));
        let read = values_of("void f(FILE *file, int *blocks, int *threads) { *threads = 0; fscanf(file, \"%d %d\", blocks, threads); }", &|_| None);
        assert_eq!(read["threads"], None);
        assert_eq!(read["blocks"], None);
        let scanned = values_of("void f(int &blocks, int &threads) { threads = 64; std::scanf(\"%d\", &threads); blocks = 2; }", &|_| None);
        assert_eq!(scanned["threads"], None);
        assert_eq!(scanned["blocks"].as_deref(), Some("2"));
        // Calls in a condition, a declaration's value or an assignment's right side count too.
        let checked = "void f(FILE *file, int *blocks, int *threads) { int b = 0, t = 0; if (fscanf(file, \"%d\", &b) != 1) exit(1); int got = fscanf(file, \"%d\", &t); *blocks = b; *threads = t; }";
        let checked = values_of(checked, &|_| None);
        assert_eq!((checked["blocks"].as_deref(), checked["threads"].as_deref()), (None, None));
    }

    #[test]
    fn conditionals_settle_where_their_condition_is_known() {
        let kind = |w: &str| (w == "kind").then_some(6);
        let text = "(kind >= 6) ? (min(64, (kind < 3) ? (a) : (b))) : (c)";
        assert_eq!(settled_conditionals(text, &|t| eval_constant(t, &kind)), "(min(64, (b)))");
        // `n` is a size: its condition stays for the spec to evaluate per shape.
        assert_eq!(settled_conditionals("(n < 256) ? (n) : (256)", &|t| eval_constant(t, &kind)), "(n < 256) ? (n) : (256)");
        assert_eq!(settled_conditionals("x + (kind < 3 ? 1 : 2) * y", &|t| eval_constant(t, &kind)), "x + (2) * y");
    }

    #[test]
    fn host_arithmetic_reads_as_a_person_would_write_it() {
        assert_eq!(readable("((((64) < ((((size + (threads * 2 - 1)) // (threads * 2))))) ? (64) : ((((size + (threads * 2 - 1)) // (threads * 2))))))"), "min(64, ceil_div(size, threads * 2))");
        assert_eq!(readable("(n % THREADS != 0) ? ((n // THREADS) + 1) : (n // THREADS)"), "ceil_div(n, THREADS)");
        assert_eq!(readable("n % 256 ? n // 256 + 1 : n // 256"), "ceil_div(n, 256)");
        assert_eq!(readable("(n < 256) ? ((n < 256) ? (n) : (0)) : (256)"), "min(n, 256)");
        assert_eq!(readable("c > 1 ? a : (c > 1 ? x : b)"), "c > 1 ? a : b");
        assert_eq!(readable("n % 256 != 0 ? n // 128 + 1 : n // 128"), "n % 256 != 0 ? n // 128 + 1 : n // 128");
        assert_eq!(readable("(n + t - 1) // t"), "ceil_div(n, t)");
        assert_eq!(readable("(a > b) ? a : b"), "max(a, b)");
        assert_eq!(readable("(n + t - 2) // t"), "(n + t - 2) // t");
        assert_eq!(readable("f(x) ?"), "f(x) ?");
        assert_eq!(readable("ceil_div(rows, 1) * cols"), "rows * cols");
        assert_eq!(readable("1 * (n // 1)"), "n");
        assert_eq!(readable("(n + 1 - 1) // 1"), "n");
        assert_eq!(readable("n / 1"), "n / 1", "a true division makes a real number");
    }
}
