//! Warp-shuffle reductions: a shared-memory tree reduction
//! (`for (s = N / 2; s > 0; s >>= 1) { if (t < s) a[t] += a[t + s]; __syncthreads(); }`, log2(N)
//! barriers and shared-memory round trips) becomes a sum within each warp by
//! `__shfl_xor_sync`, one shared stage across the warps, and a sum of those in the first warp:
//! three barriers whatever N. The original loop stays under `#if NAME == 0`, the default.

use tree_sitter::Node;

use super::layout::{indent_step, leading_whitespace};
use super::strategy::{inside_rewrite, is_thread_index};
use super::{line_start, Note, Outcome, Rewrite, TextEdit, Transform, Unit};
use crate::spec::{ParamKind, ParamSpec};
use crate::syntax::{descendants, parse_int_literal};

pub struct WarpShuffleReduce;

/// The threads of a warp, which `__shfl_xor_sync` exchanges values between.
const WARP: i64 = 32;

/// A tree reduction, taken apart.
struct Tree<'t> {
    node: Node<'t>,
    /// The shared array, its element type, and the thread's index into it.
    array: String,
    element: String,
    thread: String,
    /// How many elements it reduces: the loop starts at half of it.
    count: String,
}

impl Transform for WarpShuffleReduce {
    fn name(&self) -> &'static str {
        "warp-shuffle-reduce"
    }

    fn apply(&self, unit: &Unit) -> Outcome {
        let Some(body) = unit.body() else { return Outcome::NotApplicable("the kernel has no body".into()) };
        let text = unit.text();
        let loops = descendants(body).filter(|n| n.kind() == "for_statement" && !inside_rewrite(unit, *n, "0"));
        let trees: Vec<Tree> = loops.filter_map(|n| tree_reduction(unit, n)).collect();
        if trees.is_empty() {
            return Outcome::NotApplicable("no shared-memory tree reduction `for (s = N / 2; s > 0; s >>= 1) { if (t < s) a[t] += a[t + s]; __syncthreads(); }`".into());
        }
        let mut notes = Vec::new();
        let mut accepted = Vec::new();
        for tree in trees {
            match whole_warps(unit, &tree.count).and_then(|()| only_the_total_read_after(text, body, &tree)) {
                Ok(()) => accepted.push(tree),
                Err(why) => notes.push(Note { line: Some(unit.line_of(tree.node.start_byte())), message: why }),
            }
        }
        if accepted.is_empty() {
            // Every tree's reason, each at its line.
            let message = notes.iter().map(|n| format!("line {}: {}", n.line.unwrap_or_default(), n.message)).collect::<Vec<_>>().join("; ");
            return Outcome::Refused(Note { line: notes[0].line, message });
        }
        let name = unit.fresh_name("WARP_SHUFFLE");
        let mut rewrite = Rewrite { notes, ..Rewrite::default() };
        rewrite.edits.push(unit.define_block(&name, "0"));
        let mut lines = Vec::new();
        for tree in &accepted {
            let start = line_start(text, tree.node.start_byte());
            rewrite.edits.push(TextEdit { range: start..tree.node.end_byte(), new_text: shuffled(unit, tree, &name) });
            lines.push(unit.line_of(tree.node.start_byte()).to_string());
        }
        let lines = lines.join(", ");
        let origin = format!("tree reduction at line {lines} by warp shuffles when 1; 0 is the original loop");
        rewrite.params.push(ParamSpec { name: name.clone(), kind: ParamKind::Define, default: 0, values: vec![0, 1], origin });
        rewrite.summary = format!("tree reduction(s) at line {lines} sum by warp shuffles when `{name}` is 1");
        Outcome::Applied(rewrite)
    }
}

/// Text without whitespace, for matching code whatever its layout.
pub(super) fn squeezed(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace()).collect()
}

/// `node` as a tree reduction over a one-dimensional `__shared__` array, or `None`.
fn tree_reduction<'t>(unit: &Unit<'t>, node: Node<'t>) -> Option<Tree<'t>> {
    let text = unit.text();
    let part = |field: &str| node.child_by_field_name(field).map(|n| squeezed(&text[n.byte_range()]));
    let init = node.child_by_field_name("initializer").filter(|i| i.kind() == "declaration")?;
    let declarator = init.child_by_field_name("declarator").filter(|d| d.kind() == "init_declarator")?;
    let s = text[declarator.child_by_field_name("declarator")?.byte_range()].to_string();
    let start = squeezed(&text[declarator.child_by_field_name("value")?.byte_range()]);
    let count = start.strip_suffix("/2").or_else(|| start.strip_suffix(">>1"))?;
    let count = count.strip_prefix('(').and_then(|c| c.strip_suffix(')')).unwrap_or(count).to_string();
    if ![format!("{s}>0"), format!("0<{s}"), format!("{s}>=1")].contains(&part("condition")?) {
        return None;
    }
    if ![format!("{s}>>=1"), format!("{s}/=2"), format!("{s}={s}/2"), format!("{s}={s}>>1")].contains(&part("update")?) {
        return None;
    }
    let statements: Vec<Node> = node.child_by_field_name("body").filter(|b| b.kind() == "compound_statement")?.named_children(&mut node.walk()).filter(|n| n.kind() != "comment").collect();
    let [step, barrier] = statements.as_slice() else { return None };
    if squeezed(&text[barrier.byte_range()]) != "__syncthreads();" || step.kind() != "if_statement" {
        return None;
    }
    let condition = squeezed(&text[step.child_by_field_name("condition")?.byte_range()]);
    let thread = condition.strip_prefix('(')?.strip_suffix(&format!("<{s})"))?.to_string();
    let sum = squeezed(&text[step.child_by_field_name("consequence")?.byte_range()]);
    let sum = sum.strip_prefix('{').and_then(|b| b.strip_suffix('}')).unwrap_or(&sum);
    let shared = unit.kernel.shared.iter().find(|a| sum.starts_with(&format!("{}[", a.name)))?;
    let array = &shared.name;
    let (own, other) = (format!("{array}[{thread}]"), [format!("{array}[{thread}+{s}]"), format!("{array}[{s}+{thread}]")]);
    let adds = other.iter().any(|o| sum == format!("{own}+={o};") || sum == format!("{own}={own}+{o};"));
    // The shuffles start the warps' sums from 0, which these types convert from exactly.
    let arithmetic = matches!(shared.element_type.as_str(), "float" | "double" | "int" | "unsigned" | "unsigned int" | "long long" | "unsigned long long");
    if !adds || !arithmetic || shared.dims.len() > 1 || !is_thread_index(unit, &thread) {
        return None;
    }
    Some(Tree { node, array: array.clone(), element: shared.element_type.clone(), thread, count })
}

/// Whether every block is a whole number of warps, which the shuffles need: the tree's size is
/// a literal or a lifted parameter whose values are all multiples of the warp size.
fn whole_warps(unit: &Unit, count: &str) -> Result<(), String> {
    let whole = |v: i64| v > 0 && v % WARP == 0;
    if let Some(value) = parse_int_literal(count) {
        return if whole(value) { Ok(()) } else { Err(format!("the tree reduces {value} elements, not a whole number of warps: not rewritten")) };
    }
    match unit.lifted.iter().find(|p| p.name == count) {
        Some(param) if param.values.iter().all(|&v| whole(v)) => Ok(()),
        Some(param) => Err(format!("`{}` takes values that are not whole warps ({:?}): not rewritten", param.name, param.values)),
        None => Err(format!("the tree's size `{count}` is no literal or parameter whose values are whole warps, which the shuffles need: not rewritten")),
    }
}

/// Whether the kernel, after the loop, reads only the total (`a[0]`) from the array, since the
/// shuffles leave the other elements holding other values than the tree's.
fn only_the_total_read_after(text: &str, body: Node, tree: &Tree) -> Result<(), String> {
    for subscript in descendants(body).filter(|n| n.kind() == "subscript_expression" && n.start_byte() >= tree.node.end_byte()) {
        let Some(argument) = subscript.child_by_field_name("argument") else { continue };
        if text[argument.byte_range()] != tree.array {
            continue;
        }
        let index = subscript.child_by_field_name("indices").or_else(|| subscript.child_by_field_name("index")).map(|i| squeezed(&text[i.byte_range()]));
        let written = subscript.parent().is_some_and(|p| p.kind() == "assignment_expression" && p.child_by_field_name("left") == Some(subscript));
        if !written && !matches!(index.as_deref(), Some("0" | "[0]")) {
            return Err(format!("`{}` is read after the reduction other than at [0]: the shuffles leave other values there", squeezed(&text[subscript.byte_range()])));
        }
    }
    Ok(())
}

/// The `#if NAME == 0 / loop / #else / shuffles / #endif` that replaces the tree.
fn shuffled(unit: &Unit, tree: &Tree, name: &str) -> String {
    let text = unit.text();
    let original = &text[line_start(text, tree.node.start_byte())..tree.node.end_byte()];
    let indent = leading_whitespace(&text[line_start(text, tree.node.start_byte())..]);
    let step = indent_step(text);
    let (inner, innermost) = (format!("{indent}{step}"), format!("{indent}{step}{step}"));
    let (array, element, thread, count) = (&tree.array, &tree.element, &tree.thread, &tree.count);
    let value = unit.local_name(&format!("{array}_sum"));
    let offset = unit.local_name("offset");
    let warp_sum = |at: &str| {
        let loop_header = format!("for (int {offset} = {}; {offset} > 0; {offset} /= 2) {{", WARP / 2);
        format!("{at}{loop_header}\n{at}{step}{value} += __shfl_xor_sync(0xffffffff, {value}, {offset});\n{at}}}")
    };
    [
        format!("#if {name} == 0"),
        original.to_string(),
        "#else".to_string(),
        format!("{indent}{{"),
        format!("{inner}// Each warp sums its lanes by shuffles, the first warp sums the warps' sums."),
        format!("{inner}{element} {value} = {thread} < {count} ? {array}[{thread}] : 0;"),
        warp_sum(&inner),
        format!("{inner}__syncthreads();"),
        format!("{inner}if ({thread} % {WARP} == 0 && {thread} < {count}) {array}[{thread} / {WARP}] = {value};"),
        format!("{inner}__syncthreads();"),
        format!("{inner}if ({thread} < {WARP}) {{"),
        format!("{innermost}{value} = {thread} < ({count} + {}) / {WARP} ? {array}[{thread}] : 0;", WARP - 1),
        warp_sum(&innermost),
        format!("{innermost}if ({thread} == 0) {array}[0] = {value};"),
        format!("{inner}}}"),
        format!("{inner}__syncthreads();"),
        format!("{indent}}}"),
        "#endif".to_string(),
    ]
    .join("\n")
}

