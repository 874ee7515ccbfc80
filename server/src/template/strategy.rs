//! Strategy rewrites: new code that computes the same result, faster for some parameter values.
//!
//! Each applies only to a pattern it recognises with certainty and says why otherwise. The
//! rewritten code sits behind `#if PARAM == 1 / original / #else / rewrite / #endif` (or changes
//! only host code), so that the default instantiation is the original kernel, token for token.

use tree_sitter::Node;

use super::keep_row::{KeptPointer, KeptRow, WalkedRow};
use super::layout::{factor, for_header, indent_step, joined, leading_whitespace, operand, pragmas_at_margin, shifted};
use super::{contains_identifier, line_start, Note, Outcome, Rewrite, TextEdit, Transform, Unit};
use crate::spec::{ParamKind, ParamSpec};
use crate::syntax::{descendants, identifiers_in, LaunchSite};

/// Several items per thread in a grid-stride loop: a smaller grid, the same loop. Only the
/// host's grid changes, so the kernel's code does not.
pub struct GridStrideItems;

/// Vectorised global loads and stores of width V in row loops
/// (`for (i = threadIdx.x; i < n; i += blockDim.x)`) and grid-stride loops, with an alignment
/// guard and a scalar tail.
pub struct VectorizeRowLoops;

/// The name of [`VectorizeRowLoops`], which later transforms look for among those applied.
pub(super) const VECTORIZE_ROW_LOOPS: &str = "vectorize";

/// The helper type that moves V elements as one 2-, 4-, 8- or 16-byte access.
const VEC_BITS_GUARD: &str = "CUTUNE_VEC_BITS";

pub(super) fn normalized(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace()).collect::<String>().replace("(size_t)", "").replace("(int)", "").replace("(unsigned)", "")
}

pub(super) fn is_grid_stride_start(text: &str) -> bool {
    matches!(
        normalized(text).as_str(),
        "blockIdx.x*blockDim.x+threadIdx.x" | "threadIdx.x+blockIdx.x*blockDim.x" | "blockDim.x*blockIdx.x+threadIdx.x" | "threadIdx.x+blockDim.x*blockIdx.x"
    )
}

/// `for (i = threadIdx.x; …; i += blockDim.x)`: a block's threads across a row; the start may
/// be a local set to `threadIdx.x` once (`tid`).
pub(super) fn is_row_loop(unit: &Unit, l: &SimpleLoop) -> bool {
    is_thread_index(unit, l.start.trim()) && normalized(&l.step) == "blockDim.x"
}

/// A row loop of a block's threads, or of a warp's lanes: `for (i = lane; i < n; i += 32)` with
/// the lane a local set once to `threadIdx.x % 32` (or `& 31`, `% WARP_SIZE`), or a cooperative
/// group's `for (i = warp.thread_rank(); i < n; i += warp.size())` (llm.c's kernels).
pub(super) fn walks_row(unit: &Unit, l: &SimpleLoop) -> bool {
    let step = normalized(&l.step);
    if let Some(group) = normalized(&l.start).strip_suffix(".thread_rank()") {
        return step == format!("{group}.size()");
    }
    is_row_loop(unit, l) || matches!(step.as_str(), "32" | "WARP_SIZE" | "warpSize") && is_local_of(unit, l.start.trim(), is_lane_index)
}

fn is_lane_index(value: &str) -> bool {
    matches!(value, "threadIdx.x%32" | "threadIdx.x&31" | "threadIdx.x%WARP_SIZE" | "threadIdx.x%warpSize")
}

/// Whether `name` is `what` (normalised), or a local of the kernel set once to it and never
/// assigned.
fn is_local_of(unit: &Unit, name: &str, what: fn(&str) -> bool) -> bool {
    if what(&normalized(name)) {
        return true;
    }
    let Some(body) = unit.body() else { return false };
    let text = unit.text();
    let set = descendants(body).filter(|n| n.kind() == "init_declarator").any(|d| {
        d.child_by_field_name("declarator").is_some_and(|n| &text[n.byte_range()] == name) && d.child_by_field_name("value").is_some_and(|v| what(&normalized(&text[v.byte_range()])))
    });
    set && !names_in(text, body, name).into_iter().any(|n| is_assigned(text, n))
}

fn is_grid_stride_step(text: &str) -> bool {
    matches!(normalized(text).as_str(), "blockDim.x*gridDim.x" | "gridDim.x*blockDim.x")
}

/// `for (T i = start; i < end; i += step) body`, taken apart.
pub(super) struct SimpleLoop<'t> {
    pub(super) node: Node<'t>,
    pub(super) var_type: String,
    pub(super) var: String,
    pub(super) start: String,
    pub(super) end: String,
    pub(super) step: String,
    pub(super) body: Node<'t>,
}

pub(super) fn simple_loop<'t>(text: &'t str, node: Node<'t>) -> Option<SimpleLoop<'t>> {
    let init = node.child_by_field_name("initializer")?;
    if init.kind() != "declaration" {
        return None;
    }
    let var_type = text[init.child_by_field_name("type")?.byte_range()].to_string();
    let declarator = init.child_by_field_name("declarator").filter(|d| d.kind() == "init_declarator")?;
    let var = text[declarator.child_by_field_name("declarator")?.byte_range()].to_string();
    let start = text[declarator.child_by_field_name("value")?.byte_range()].to_string();
    let condition = node.child_by_field_name("condition")?;
    let (left, op, right) = binary(text, condition)?;
    if left != var || op != "<" {
        return None;
    }
    let update = node.child_by_field_name("update").filter(|u| u.kind() == "assignment_expression")?;
    let target = &text[update.child_by_field_name("left")?.byte_range()];
    let operator = &text[update.child_by_field_name("operator")?.byte_range()];
    if target != var || operator != "+=" {
        return None;
    }
    let step = text[update.child_by_field_name("right")?.byte_range()].to_string();
    Some(SimpleLoop { node, var_type, var, start, end: right.to_string(), step, body: node.child_by_field_name("body")? })
}

fn binary<'t>(text: &'t str, node: Node) -> Option<(&'t str, &'t str, &'t str)> {
    if node.kind() != "binary_expression" {
        return None;
    }
    let part = |f: &str| node.child_by_field_name(f).map(|n| &text[n.byte_range()]);
    Some((part("left")?, part("operator")?, part("right")?))
}

fn for_loops(root: Node) -> Vec<Node> {
    descendants(root).filter(|n| n.kind() == "for_statement").collect()
}

/// Whether `node` sits in an earlier rewrite, `#if NAME == value / original / #else / rewrite
/// / #endif` (either branch), where `NAME` is a `#define` of the file. A vector width's original
/// is `== 1`, a switch's `== 0`.
pub(super) fn inside_rewrite(unit: &Unit, node: Node, value: &str) -> bool {
    std::iter::successors(node.parent(), |n| n.parent()).any(|n| {
        n.kind() == "preproc_if"
            && n.child_by_field_name("condition").is_some_and(|c| {
                let text = &unit.text()[c.byte_range()];
                text.split_once("==").is_some_and(|(name, v)| v.trim() == value && unit.model.defines.iter().any(|d| d.name == name.trim()))
            })
    })
}

pub(super) fn names_in<'t>(text: &str, root: Node<'t>, name: &str) -> Vec<Node<'t>> {
    descendants(root).filter(|n| n.kind() == "identifier" && &text[n.byte_range()] == name).collect()
}

impl Transform for GridStrideItems {
    fn name(&self) -> &'static str {
        "grid-stride-items"
    }

    fn apply(&self, unit: &Unit) -> Outcome {
        let Some(body) = unit.body() else { return Outcome::NotApplicable("the kernel has no body".into()) };
        let text = unit.text();
        let loops: Vec<SimpleLoop> = for_loops(body)
            .into_iter()
            .filter_map(|n| simple_loop(text, n))
            .filter(|l| is_grid_stride_start(&l.start) && is_grid_stride_step(&l.step))
            .collect();
        let Some(first) = loops.first() else {
            return Outcome::NotApplicable("no grid-stride loop `for (i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)`".into());
        };
        let launches: Vec<_> = unit.model.launches_of(&unit.kernel.name).collect();
        if launches.is_empty() {
            return Outcome::NotApplicable("no launch in this file to give a smaller grid".into());
        }
        if launches.iter().any(|l| unit.lifted.iter().any(|p| p.kind == ParamKind::Define && p.name.contains("ITEMS") && contains_identifier(&l.grid.text, &p.name))) {
            return Outcome::NotApplicable("the grid already divides by an items-per-thread parameter".into());
        }
        // The grid's size must not matter anywhere else: every `blockIdx`/`gridDim` of the
        // kernel is in the loops' headers.
        let headers: Vec<std::ops::Range<usize>> = loops.iter().map(|l| l.node.start_byte()..l.body.start_byte()).collect();
        for grid_name in ["blockIdx", "gridDim"] {
            if let Some(stray) = names_in(text, body, grid_name).into_iter().find(|n| !headers.iter().any(|h| h.contains(&n.start_byte()))) {
                return Outcome::Refused(Note {
                    line: Some(unit.line_of(stray.start_byte())),
                    message: format!("`{grid_name}` is used outside the grid-stride loop here, so a smaller grid could change the result"),
                });
            }
        }
        let mut rewrite = Rewrite::default();
        let name = unit.fresh_name("ITEMS_PER_THREAD");
        match divided_grids(unit, &launches, &name) {
            Ok(edits) => rewrite.edits.extend(edits),
            Err(note) => return Outcome::Refused(note),
        }
        rewrite.edits.push(unit.define_block(&name, "1"));
        rewrite.notes.extend(unreached_grids_note(unit, &name));
        let line = unit.line_of(first.node.start_byte());
        let origin = format!("items per thread of the grid-stride loop at line {line}: the grid is divided by it");
        rewrite.params.push(ParamSpec { name: name.clone(), kind: ParamKind::Define, default: 1, values: vec![1, 2, 4, 8, 16], origin });
        rewrite.summary = format!("grid-stride loop at line {line}: the grid is divided by `{name}` items per thread");
        Outcome::Applied(rewrite)
    }
}

/// The edits that divide every launch's grid by `name` (rounded up): the grid where it is a
/// number, or the first extent of the `dim3` variable it names (`dim3 grid(n / 256, 1)`) when
/// the launches of this kernel are all that use the variable. Why not, at the launch.
pub(super) fn divided_grids(unit: &Unit, launches: &[&LaunchSite], name: &str) -> Result<Vec<TextEdit>, Note> {
    let divided = |extent: &str| format!("({} + {name} - 1) / {name}", operand(extent));
    let mut edits: Vec<TextEdit> = Vec::new();
    for launch in launches {
        let grid = launch.grid.text.trim();
        let refuse = |why: String| Err(Note { line: Some(unit.line_at(launch.span)), message: format!("the grid `{grid}` {why}") });
        if grid.starts_with("dim3") || grid.starts_with('{') || has_top_level_comma(grid) {
            return refuse("has several dimensions".into());
        }
        let edit = match dim3_variable(unit, launch, grid) {
            Some(Ok(first_extent)) => TextEdit { range: first_extent.byte_range(), new_text: divided(&unit.text()[first_extent.byte_range()]) },
            Some(Err(why)) => return refuse(why),
            None => TextEdit { range: launch.grid.span.start_byte..launch.grid.span.end_byte, new_text: divided(grid) },
        };
        if !edits.contains(&edit) {
            edits.push(edit);
        }
    }
    Ok(edits)
}

/// For a rewrite that divides this file's grids by `name`: what the kernel's launches it does
/// not reach (another file's, one through a pointer) run. They keep their grid, which is still
/// right, the threads past the end finding no element, but not what was tuned.
pub(super) fn unreached_grids_note(unit: &Unit, name: &str) -> Option<Note> {
    let places = unit.unreached_launches;
    (!places.is_empty()).then(|| Note {
        line: Some(unit.line_of(unit.kernel.span.start_byte)),
        message: format!("the launches at {} keep their grid: right at any `{name}`, with threads that find no element, but slower than the tuned launch here", places.join(", ")),
    })
}

/// When `grid` names a `dim3` variable of the launch's function: its first extent, or why it
/// cannot be divided (another launch or other code uses it, or its extents are not written).
pub(super) fn dim3_variable<'t>(unit: &Unit<'t>, launch: &LaunchSite, grid: &str) -> Option<Result<Node<'t>, String>> {
    let text = unit.text();
    if !crate::syntax::is_identifier(grid) {
        return None;
    }
    let root = unit.doc.tree()?.root_node();
    let function = enclosing_function(root, launch)?;
    // `dim3 threads, blocks;` declares both: each declarator, with the declaration it is in.
    let dim3_of = |scope: Node<'t>| {
        descendants(scope)
            .filter(|n| n.kind() == "declaration" && n.start_byte() < launch.span.start_byte)
            .filter(|d| d.child_by_field_name("type").is_some_and(|t| text[t.byte_range()].trim() == "dim3"))
            .flat_map(|d| d.children_by_field_name("declarator", &mut d.walk()).map(move |i| (d, i)).collect::<Vec<_>>())
            .filter(|(_, i)| &text[i.child_by_field_name("declarator").unwrap_or(*i).byte_range()] == grid)
    };
    let Some((declaration, declarator)) = dim3_of(function).last() else {
        // A `dim3` of the file, set somewhere else (`grid_1d.x = …`): its extents are not at hand.
        return dim3_of(root).next().map(|_| Err("is a `dim3` that the launch's function does not declare".to_string()));
    };
    if read_by_other_code(unit, function, declaration, grid) {
        return Some(Err(format!("is a `dim3` that other code of `{}` uses too", launch.enclosing_function.as_deref().unwrap_or("the function"))));
    }
    let value = declarator.child_by_field_name("value");
    let arguments = match value {
        Some(v) if v.kind() == "argument_list" => Some(v),
        Some(v) if v.kind() == "call_expression" => v.child_by_field_name("arguments"),
        _ => None,
    };
    let first = arguments.and_then(|list| list.named_child(0));
    Some(first.ok_or_else(|| "is a `dim3` whose extents are not written where it is declared".to_string()))
}

/// The host function a launch sits in.
pub(super) fn enclosing_function<'t>(root: Node<'t>, launch: &LaunchSite) -> Option<Node<'t>> {
    let at = root.descendant_for_byte_range(launch.span.start_byte, launch.span.start_byte)?;
    std::iter::successors(Some(at), |n| n.parent()).find(|n| n.kind() == "function_definition")
}

/// Whether `function` reads the local `name` (declared at `declaration`) anywhere but in the
/// grids of this kernel's launches: another kernel's launch, say.
pub(super) fn read_by_other_code(unit: &Unit, function: Node, declaration: Node, name: &str) -> bool {
    let grids: Vec<std::ops::Range<usize>> = unit.model.launches_of(&unit.kernel.name).map(|l| l.grid.span.start_byte..l.grid.span.end_byte).collect();
    names_in(unit.text(), function, name).into_iter().any(|n| !declaration.byte_range().contains(&n.start_byte()) && !grids.iter().any(|g| g.contains(&n.start_byte())))
}

/// Whether `expr` has a comma outside parentheses and brackets (`a, b`, not `ceil_div(n, b)`).
fn has_top_level_comma(expr: &str) -> bool {
    let mut depth = 0i32;
    expr.chars().any(|c| {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth -= 1,
            _ => {}
        }
        c == ',' && depth == 0
    })
}

/// A pointer the loop accesses as `p[i]`, with its element type.
#[derive(Clone)]
pub(super) struct Access {
    pub(super) pointer: String,
    pub(super) element: String,
    element_bytes: u64,
    pub(super) read: bool,
    written: bool,
}

impl Transform for VectorizeRowLoops {
    fn name(&self) -> &'static str {
        VECTORIZE_ROW_LOOPS
    }

    fn apply(&self, unit: &Unit) -> Outcome {
        let Some(body) = unit.body() else { return Outcome::NotApplicable("the kernel has no body".into()) };
        let text = unit.text();
        let row_loops: Vec<SimpleLoop> = for_loops(body)
            .into_iter()
            .filter(|n| !inside_rewrite(unit, *n, "1"))
            .filter_map(|n| simple_loop(text, n))
            .filter(|l| walks_row(unit, l) || is_grid_stride_start(&l.start) && is_grid_stride_step(&l.step))
            .collect();
        if row_loops.is_empty() {
            return Outcome::NotApplicable("no row loop `for (i = threadIdx.x; i < n; i += blockDim.x)` or grid-stride loop left to vectorise".into());
        }
        let mut accepted = Vec::new();
        let mut notes = Vec::new();
        // (a loop, a later loop that reads a thread's share of it): both vector loops or neither.
        let mut shared_with = Vec::new();
        for l in &row_loops {
            let shares = accumulators_combined(unit, l);
            shared_with.extend(shares.readers.iter().map(|reader| (l.node.start_byte(), *reader)));
            match shares.refusal.map_or_else(|| loop_plan(unit, l), Err) {
                Ok(plan) => accepted.push((l, plan)),
                Err(why) => notes.push(Note { line: Some(unit.line_of(l.node.start_byte())), message: why }),
            }
        }
        notes.extend(without_lone_sharers(unit, &mut accepted, &shared_with));
        if accepted.is_empty() {
            return Outcome::Refused(notes.remove(0));
        }
        let widest = accepted.iter().map(|(_, plan)| plan.widest_element()).max().unwrap_or(4);
        let values: Vec<i64> = [1i64, 2, 4, 8, 16].into_iter().filter(|v| *v as u64 * widest <= 16).collect();
        let name = unit.fresh_name("VEC");
        let mut rewrite = Rewrite { notes, ..Rewrite::default() };
        rewrite.edits.extend(vec_bits_edit_if_missing(unit));
        rewrite.edits.push(unit.define_block(&name, "1"));
        let mut lines = Vec::new();
        let lane_plans: Vec<(&super::lanes::LanePlan, &str)> = accepted
            .iter()
            .filter_map(|(l, plan)| match plan {
                LoopPlan::Lanes(lanes) => Some((lanes, l.var.as_str())),
                LoopPlan::Direct(_) => None,
            })
            .collect();
        rewrite.edits.extend(super::lanes::access_helpers_edit(unit, &lane_plans));
        let walked: Vec<WalkedRow> = accepted
            .iter()
            .filter_map(|(l, plan)| match plan {
                LoopPlan::Direct(accesses) => Some(WalkedRow { walk: l, accesses }),
                LoopPlan::Lanes(_) => None,
            })
            .collect();
        let kept_row = super::keep_row::plan(unit, &walked).unwrap_or_else(|note| {
            rewrite.notes.push(note);
            None
        });
        // Loops that read each other's shares must take the same vectors: all kept or none.
        let walks_at = |row: &KeptRow, start: usize| accepted.iter().any(|(l, _)| l.node.start_byte() == start && row.walks(l));
        let kept_apart = |row: &KeptRow| shared_with.iter().any(|(a, b)| walks_at(row, *a) != walks_at(row, *b));
        let kept_row = match kept_row {
            Some(row) if kept_apart(&row) => {
                rewrite.notes.push(Note { line: None, message: "loops that read a thread's share of another are not all in the row kept in registers: the row is not kept".into() });
                None
            }
            other => other,
        };
        let kept_name = unit.fresh_name("ROW_REGS");
        let row_accesses: Vec<Access> = kept_row.as_ref().map_or_else(Vec::new, |row| row_loop_accesses(&accepted, row));
        let keeping = kept_row.as_ref().map(|row| Keeping { row, param: &kept_name, aligned_with: &row_accesses });
        for (l, plan) in &accepted {
            let start = loop_start_with_pragmas(text, l.node.start_byte());
            let new_text = match plan {
                LoopPlan::Direct(accesses) => vectorized_loop(unit, l, accesses, &name, keeping.as_ref().filter(|k| k.row.walks(l))),
                LoopPlan::Lanes(plan) => super::lanes::lane_loop(unit, l, plan, &name, &|element| bits_type_name(unit, element)),
            };
            rewrite.edits.push(TextEdit { range: start..l.node.end_byte(), new_text });
            lines.push(unit.line_of(l.node.start_byte()).to_string());
        }
        // Loops an earlier rewrite wrote all stand at that rewrite's first line.
        lines.dedup();
        let origin = format!("vector width of the loops at line {}; 1 is the original scalar loop", lines.join(", "));
        rewrite.params.push(ParamSpec { name: name.clone(), kind: ParamKind::Define, default: 1, values, origin });
        rewrite.summary = format!("loop(s) at line {} load and store `{name}` elements at a time when aligned", lines.join(", "));
        if let Some(k) = &keeping {
            let at = k.row.declare_at;
            rewrite.edits.push(TextEdit { range: at..at, new_text: kept_registers(unit, k, &name, leading_whitespace(&text[first_loop_line(text, k.row)..])) });
        }
        if let Some(row) = &kept_row {
            rewrite.edits.push(unit.define_block(&kept_name, "0"));
            let loops = row.lines(unit);
            let origin = format!("vectors of the row each thread keeps in registers for the loops at {loops} when `{name}` is above 1; 0 reads the row again in each loop");
            rewrite.params.push(ParamSpec { name: kept_name.clone(), kind: ParamKind::Define, default: 0, values: vec![0, 1, 2, 4, 8], origin });
            rewrite.restrictions.push(format!("{kept_name} == 0 || {name} > 1"));
            rewrite.summary.push_str(&format!("; the loops at {loops} keep up to `{kept_name}` vectors of the row in registers"));
        }
        Outcome::Applied(rewrite)
    }
}

/// Every pointer the loops that walk `row` access, once each.
fn row_loop_accesses(accepted: &[(&SimpleLoop, LoopPlan)], row: &KeptRow) -> Vec<Access> {
    let mut all: Vec<Access> = Vec::new();
    for (_, plan) in accepted.iter().filter(|(l, _)| row.walks(l)) {
        let LoopPlan::Direct(accesses) = plan else { continue };
        for a in accesses {
            if !all.iter().any(|b| b.pointer == a.pointer) {
                all.push(a.clone());
            }
        }
    }
    all
}

/// The pointers a row loop reads and writes at `[i]`, or why it cannot be vectorised.
fn loop_accesses(unit: &Unit, l: &SimpleLoop) -> Result<Vec<Access>, String> {
    let text = unit.text();
    no_jumps_or_barriers(unit, l)?;
    if let Some(word) = thread_identity(unit, &[l.body], &l.var) {
        return Err(format!("the loop body uses `{word}`, which depends on the thread: a vector loop gives each thread other elements, not vectorised"));
    }
    if !names_in(text, l.body, &l.var).is_empty() && names_in(text, l.body, &l.var).iter().any(|n| is_assigned(text, *n)) {
        return Err(format!("the loop assigns `{}`: not vectorised", l.var));
    }
    let mut accesses: Vec<Access> = Vec::new();
    for use_ in names_in(text, l.body, &l.var) {
        let Some(subscript) = subscript_of(use_) else {
            return Err(format!("`{}` is used other than as `p[{}]` (line {}): not vectorised", l.var, l.var, unit.line_of(use_.start_byte())));
        };
        let pointer_node = subscript.child_by_field_name("argument").filter(|a| a.kind() == "identifier");
        let Some(pointer_node) = pointer_node else { return Err("a subscript of something other than a named pointer: not vectorised".into()) };
        let pointer = text[pointer_node.byte_range()].to_string();
        let Some(element) = pointer_element_type(unit, &pointer) else {
            return Err(format!("`{pointer}` is not a pointer parameter or a pointer derived from one: not vectorised"));
        };
        let Some(element_bytes) = unit.element_bytes(&element).filter(|b| [1, 2, 4, 8].contains(b)) else {
            return Err(format!("the size of `{element}` is not known: not vectorised"));
        };
        let written = subscript.parent().is_some_and(|a| a.kind() == "assignment_expression" && a.child_by_field_name("left") == Some(subscript));
        let compound = written && subscript.parent().and_then(|a| a.child_by_field_name("operator")).is_some_and(|op| &text[op.byte_range()] != "=");
        match accesses.iter_mut().find(|a| a.pointer == pointer) {
            Some(a) => {
                a.read |= !written || compound;
                a.written |= written;
            }
            None => accesses.push(Access { pointer, element, element_bytes, read: !written || compound, written }),
        }
    }
    if accesses.is_empty() {
        return Err("the loop accesses no global memory at `[i]`".into());
    }
    for a in accesses.iter().filter(|a| a.written) {
        let uses = names_in(text, l.body, &a.pointer);
        let indexed_by_var = |n: &Node| {
            let subscript = n.parent().filter(|p| p.kind() == "subscript_expression" && p.child_by_field_name("argument") == Some(*n));
            subscript.and_then(subscript_index).is_some_and(|i| text[i.byte_range()] == *l.var)
        };
        if uses.iter().any(|n| !indexed_by_var(n)) {
            return Err(format!("`{}` is written and also used another way in the loop: not vectorised", a.pointer));
        }
    }
    Ok(accesses)
}

/// Refuses a body that leaves the loop early, waits for other threads or adds atomically: the
/// vector loop changes which elements a thread takes, and in what order.
fn no_jumps_or_barriers(unit: &Unit, l: &SimpleLoop) -> Result<(), String> {
    for word in ["break", "continue", "return", "goto", "__syncthreads", "__syncwarp", "atomic"] {
        if subtree_contains_token(unit.text(), l.body, word) {
            return Err(format!("the loop body contains `{word}`: not vectorised"));
        }
    }
    Ok(())
}

/// What in `nodes` depends on which thread runs it (`threadIdx`, a local set from it, the lane
/// id read by `asm`, warp votes and shuffles), other than the element index `var`: vectorising
/// hands each thread other elements, so such a value would change.
pub(super) fn thread_identity(unit: &Unit, nodes: &[Node], var: &str) -> Option<String> {
    const WARP_WORDS: [&str; 6] = ["__shfl", "__ballot", "__activemask", "__any", "__all", "__match"];
    let text = unit.text();
    let body = unit.body()?;
    let from_thread: Vec<&str> = descendants(body)
        .filter(|n| n.kind() == "init_declarator")
        .filter(|d| d.child_by_field_name("value").is_some_and(|v| contains_identifier(&text[v.byte_range()], "threadIdx")))
        .filter_map(|d| d.child_by_field_name("declarator").map(|n| &text[n.byte_range()]))
        .filter(|name| *name != var)
        .collect();
    nodes.iter().find_map(|node| {
        let here = &text[node.byte_range()];
        identifiers_in(here).find(|w| *w == "threadIdx" || *w == "asm" || *w == "__asm__" || from_thread.contains(w) || WARP_WORDS.iter().any(|p| w.starts_with(p))).map(str::to_string)
    })
}

/// What a loop is vectorised by: its `p[i]` accesses, or the lane analysis when `i` is also
/// taken apart.
enum LoopPlan<'t> {
    Direct(Vec<Access>),
    Lanes(super::lanes::LanePlan<'t>),
}

impl LoopPlan<'_> {
    fn widest_element(&self) -> u64 {
        match self {
            LoopPlan::Direct(accesses) => accesses.iter().map(|a| a.element_bytes).max().unwrap_or(4),
            LoopPlan::Lanes(plan) => plan.sites.iter().map(|s| s.element_bytes).max().unwrap_or(4),
        }
    }
}

/// How to vectorise `l`, or why not (its accumulators are checked apart, see
/// [`accumulators_combined`]).
fn loop_plan<'t>(unit: &Unit<'t>, l: &SimpleLoop<'t>) -> Result<LoopPlan<'t>, String> {
    let only_subscripts = names_in(unit.text(), l.body, &l.var).into_iter().all(|n| {
        subscript_of(n).is_some_and(|s| s.child_by_field_name("argument").is_some_and(|a| a.kind() == "identifier"))
    });
    if only_subscripts {
        return loop_accesses(unit, l).map(LoopPlan::Direct);
    }
    no_jumps_or_barriers(unit, l)?;
    super::lanes::plan(unit, l).map(LoopPlan::Lanes)
}

/// Drops, until none is left, each loop of a pair in `shared_with` (by where they start) whose
/// other loop is not vectorised by its accesses as well: a thread's share read by a loop that
/// takes other elements than the loop that made it would be of other elements. The notes say
/// which.
fn without_lone_sharers(unit: &Unit, accepted: &mut Vec<(&SimpleLoop, LoopPlan)>, shared_with: &[(usize, usize)]) -> Vec<Note> {
    let mut notes = Vec::new();
    loop {
        let direct: Vec<usize> = accepted.iter().filter(|(_, plan)| matches!(plan, LoopPlan::Direct(_))).map(|(l, _)| l.node.start_byte()).collect();
        let still_accepted = |start: usize| accepted.iter().any(|(l, _)| l.node.start_byte() == start);
        // A loop still to be vectorised in a pair that will not be vectorised alike.
        let lone = shared_with.iter().flat_map(|(a, b)| [(*a, *b), (*b, *a)]).find(|(a, b)| still_accepted(*a) && !(direct.contains(a) && direct.contains(b)));
        let Some((dropped, other)) = lone else { return notes };
        accepted.retain(|(l, _)| l.node.start_byte() != dropped);
        notes.push(Note {
            line: Some(unit.line_of(dropped)),
            message: format!("the loop shares each thread's partial result with the loop at line {}, which is not vectorised the same way: not vectorised", unit.line_of(other)),
        });
    }
}

/// The pointers a loop subscripts with its index, sorted: two loops over the same elements that
/// index the same pointers are vectorised with the same vectors for each thread.
fn pointers_indexed(unit: &Unit, l: &SimpleLoop) -> Vec<String> {
    let text = unit.text();
    let mut pointers: Vec<String> = names_in(text, l.body, &l.var)
        .into_iter()
        .filter_map(subscript_of)
        .filter(|s| subscript_index(*s).is_some_and(|i| text[i.byte_range()].trim() == l.var))
        .filter_map(|s| s.child_by_field_name("argument").map(|a| text[a.byte_range()].to_string()))
        .collect();
    pointers.sort();
    pointers.dedup();
    pointers
}

/// The later loop that `use_` sits in when it walks the same elements as `l` (the same header)
/// through the same pointers: once both are vectorised, each thread takes the same elements in
/// both, so a thread's share from `l` may be read there (a thread's own maximum, which its own
/// sum of exponentials is taken around).
fn same_walk<'t>(unit: &Unit<'t>, l: &SimpleLoop<'t>, use_: Node<'t>) -> Option<usize> {
    let text = unit.text();
    let other = std::iter::successors(use_.parent(), |p| p.parent()).filter(|p| p.kind() == "for_statement").find_map(|p| simple_loop(text, p))?;
    let header = |l: &SimpleLoop| [normalized(&l.var), normalized(&l.start), normalized(&l.end), normalized(&l.step)];
    (header(&other) == header(l) && pointers_indexed(unit, &other) == pointers_indexed(unit, l)).then(|| other.node.start_byte())
}

/// How a loop's thread shares are read after it: see [`accumulators_combined`].
struct SharesRead {
    /// Where the later loops over the same elements that read a share start.
    readers: Vec<usize>,
    /// Why the loop is not vectorised, when a share is read elsewhere before it is combined.
    refusal: Option<String>,
}

/// Whether every local the loop accumulates into (`sum += …` on a name declared outside it) is
/// combined over the threads after the loop: stored to shared memory at the thread's index,
/// passed to a shuffle or a reduction (by name, or a function of the file that shuffles), or
/// added atomically; or read before that only in later loops over the same elements
/// ([`same_walk`]), which must then be vectorised alike, or all stay scalar.
/// The vector loop hands each thread other elements than the scalar loop: the threads' total is
/// the same, each thread's share is not.
fn accumulators_combined(unit: &Unit, l: &SimpleLoop) -> SharesRead {
    let text = unit.text();
    let mut shares = SharesRead { readers: Vec::new(), refusal: None };
    let Some(body) = unit.body() else { return shares };
    let declared_inside: Vec<&str> = descendants(l.body).filter(|n| n.kind() == "init_declarator").filter_map(|d| d.child_by_field_name("declarator")).map(|n| &text[n.byte_range()]).collect();
    let mut accumulators: Vec<&str> = descendants(l.body)
        .filter(|n| matches!(n.kind(), "assignment_expression" | "update_expression"))
        .filter_map(|n| n.child_by_field_name("left").or_else(|| n.child_by_field_name("argument")))
        .filter(|left| left.kind() == "identifier")
        .map(|left| &text[left.byte_range()])
        .filter(|name| !declared_inside.contains(name))
        .collect();
    accumulators.sort_unstable();
    accumulators.dedup();
    let shuffling = shuffling_functions(unit);
    let combines = |node: Node| {
        std::iter::successors(node.parent(), |p| p.parent()).take_while(|p| p.kind() != "expression_statement" && p.kind() != "compound_statement").any(|p| match p.kind() {
            "call_expression" => p.child_by_field_name("function").is_some_and(|f| {
                let callee = &text[f.byte_range()];
                combines_threads(callee) || shuffling.iter().any(|s| s == callee)
            }),
            "assignment_expression" => p.child_by_field_name("left").filter(|left| left.kind() == "subscript_expression").is_some_and(|left| {
                let array = left.child_by_field_name("argument").map(|a| &text[a.byte_range()]);
                let index = subscript_index(left).map(|i| text[i.byte_range()].trim().to_string());
                array.is_some_and(|a| unit.kernel.shared.iter().any(|s| s.name == a)) && index.is_some_and(|i| is_thread_index(unit, &i))
            }),
            _ => false,
        })
    };
    for name in accumulators {
        let not_combined = || {
            format!(
                "`{name}` gathers each thread's share of the loop and is not combined over the threads after it (in shared memory at the thread's index, by shuffles or atomically) before it is read: a vector loop gives each thread other elements, not vectorised"
            )
        };
        for use_ in names_in(text, body, name).into_iter().filter(|n| n.start_byte() >= l.node.end_byte()) {
            let assignment = use_.parent().filter(|p| p.kind() == "assignment_expression" && p.child_by_field_name("left") == Some(use_));
            if let Some(assignment) = assignment {
                // `sum = warp_sum(sum)` or a new value: the thread's share is gone from here on.
                let right = assignment.child_by_field_name("right");
                let replaced = right.is_some_and(|r| names_in(text, r, name).iter().all(|n| combines(*n)));
                let plain = assignment.child_by_field_name("operator").is_some_and(|op| &text[op.byte_range()] == "=");
                if plain && replaced {
                    break;
                }
                shares.refusal.get_or_insert_with(not_combined);
                break;
            }
            if combines(use_) {
                continue;
            }
            match same_walk(unit, l, use_) {
                Some(reader) => shares.readers.push(reader),
                None => {
                    shares.refusal.get_or_insert_with(not_combined);
                }
            }
        }
    }
    shares.readers.sort_unstable();
    shares.readers.dedup();
    shares
}

/// Whether a call of `callee` combines a value over threads by its name: a shuffle
/// (`__shfl_xor_sync`), a reduction (`cg::reduce`, `__reduce_add_sync`, CUB's
/// `BlockReduce(…).Reduce`, a helper of another file such as `blockReduceSum`), CUB's `.Sum`,
/// or an atomic.
pub(super) fn combines_threads(callee: &str) -> bool {
    let lower = callee.to_ascii_lowercase();
    lower.contains("shfl") || lower.contains("reduce") || lower.starts_with("atomic") || callee.ends_with(".Sum")
}

/// The functions of the file that shuffle values between a warp's lanes, themselves or through
/// another such function (`block_sum` calling `warp_sum`).
pub(super) fn shuffling_functions(unit: &Unit) -> Vec<String> {
    let Some(tree) = unit.doc.tree() else { return Vec::new() };
    let functions = crate::syntax::host::function_definitions(unit.text(), tree.root_node());
    let shuffles = |definition: &str| std::iter::once(definition).chain(crate::syntax::host::functions_called_from(&functions, definition)).any(|d| d.contains("__shfl"));
    functions.iter().filter(|(_, definition)| shuffles(definition)).map(|(name, _)| name.to_string()).collect()
}

/// Whether `name` is `threadIdx.x`, or a local of the kernel set to it once and never assigned
/// again (`const int tid = threadIdx.x;`).
pub(super) fn is_thread_index(unit: &Unit, name: &str) -> bool {
    is_local_of(unit, name, |value| value == "threadIdx.x")
}

/// The `p[i]` whose index is exactly the node `index`.
fn subscript_of(index: Node) -> Option<Node> {
    let mut holder = index.parent()?;
    if holder.kind() == "subscript_argument_list" {
        holder = holder.parent()?;
    }
    (holder.kind() == "subscript_expression" && subscript_index(holder) == Some(index)).then_some(holder)
}

pub(super) fn subscript_index(subscript: Node) -> Option<Node> {
    subscript.child_by_field_name("index").or_else(|| {
        let list = subscript.child_by_field_name("indices")?;
        let mut cursor = list.walk();
        let first = list.named_children(&mut cursor).next();
        first
    })
}

pub(super) fn is_assigned(text: &str, name: Node) -> bool {
    name.parent().is_some_and(|p| match p.kind() {
        "assignment_expression" => p.child_by_field_name("left") == Some(name),
        "update_expression" => true,
        "pointer_expression" => text[p.byte_range()].starts_with('&'),
        _ => false,
    })
}

/// Whether `word` is an identifier in the subtree; `atomic` stands for every `atomic...` call.
fn subtree_contains_token(text: &str, root: Node, word: &str) -> bool {
    identifiers_in(&text[root.byte_range()]).any(|w| w == word || (word == "atomic" && w.starts_with("atomic")))
}

/// The element type of a kernel pointer parameter, or of a pointer the kernel derives from one
/// (`const half* row = in + offset;`).
pub(super) fn pointer_element_type(unit: &Unit, name: &str) -> Option<String> {
    if let Some(p) = unit.kernel.params.iter().find(|p| p.name == name && p.pointer_depth == 1) {
        return Some(p.base_type.clone());
    }
    let text = unit.text();
    for node in descendants(unit.body()?).filter(|n| n.kind() == "declaration") {
        let mut cursor = node.walk();
        for d in node.children_by_field_name("declarator", &mut cursor) {
            let pointer = d.child_by_field_name("declarator").filter(|p| d.kind() == "init_declarator" && p.kind() == "pointer_declarator");
            let declared = pointer.and_then(|p| p.child_by_field_name("declarator")).map(|n| &text[n.byte_range()]);
            let value = d.child_by_field_name("value").map(|v| &text[v.byte_range()]).unwrap_or("");
            let from_param = unit.kernel.params.iter().any(|p| p.pointer_depth == 1 && contains_identifier(value, &p.name));
            if declared == Some(name) && from_param && pointer.is_none_or(|p| text[p.byte_range()].matches('*').count() <= 1) {
                let ty = node.child_by_field_name("type")?;
                return Some(text[ty.byte_range()].to_string());
            }
        }
    }
    None
}

/// The vector types' definitions, unless the file has them.
pub(super) fn vec_bits_edit_if_missing(unit: &Unit) -> Option<TextEdit> {
    (!contains_identifier(unit.text(), VEC_BITS_GUARD)).then(|| vec_bits_edit(unit))
}

fn vec_bits_edit(unit: &Unit) -> TextEdit {
    let mut edit = unit.define_block(VEC_BITS_GUARD, "");
    edit.new_text = format!(
        "#ifndef {VEC_BITS_GUARD}\n#define {VEC_BITS_GUARD}\n\
         // One access of BYTES bytes, for vectorised loads and stores.\n\
         template <int BYTES> struct cutune_bits;\n\
         template <> struct cutune_bits<2> {{ typedef unsigned short type; }};\n\
         template <> struct cutune_bits<4> {{ typedef unsigned int type; }};\n\
         template <> struct cutune_bits<8> {{ typedef uint2 type; }};\n\
         template <> struct cutune_bits<16> {{ typedef uint4 type; }};\n\
         #endif\n\n"
    );
    edit
}

/// The start of the loop's line, or of the `#pragma` lines right above it, which belong to the
/// original loop.
pub(super) fn loop_start_with_pragmas(text: &str, loop_start: usize) -> usize {
    let mut start = line_start(text, loop_start);
    while start > 0 {
        let previous = line_start(text, start - 1);
        if !text[previous..start].trim_start().starts_with("#pragma") {
            break;
        }
        start = previous;
    }
    start
}


/// What the loops that walk one row share when a thread keeps the row's vectors in registers.
struct Keeping<'a> {
    row: &'a KeptRow,
    /// The parameter: how many vectors of the row a thread keeps.
    param: &'a str,
    /// Every pointer the loops access: each loop's vectors start where all of them are aligned,
    /// so that the `k`-th vector of a thread is the same elements in every loop.
    aligned_with: &'a [Access],
}

fn vectorized_loop(unit: &Unit, l: &SimpleLoop, accesses: &[Access], vec: &str, keeping: Option<&Keeping>) -> String {
    let text = unit.text();
    let start = loop_start_with_pragmas(text, l.node.start_byte());
    let original = &text[start..l.node.end_byte()];
    let indent = leading_whitespace(&text[line_start(text, l.node.start_byte())..]);
    let step = indent_step(text);
    let inner = format!("{indent}{step}");
    let (i, ty, end) = (&l.var, &l.var_type, operand(&l.end));
    let vec_i = unit.local_name(&format!("{i}_vec"));
    let lane = unit.local_name(&format!("{i}_lane"));
    let limit = unit.local_name(&format!("{i}_vec_end"));
    let aligned = unit.local_name(&format!("{i}_aligned"));
    let locals: Vec<(String, &Access)> = accesses.iter().map(|a| (unit.local_name(&format!("{}_v", a.pointer)), a)).collect();
    // One name per element type for the register that holds `{vec}` of them.
    let mut bit_types: Vec<(String, String)> = Vec::new();
    for a in accesses {
        let element = plain_element(&a.element);
        if !bit_types.iter().any(|(e, _)| *e == element) {
            let name = bits_type_name(unit, &element);
            bit_types.push((element, name));
        }
    }
    let bits = |a: &Access| bit_types.iter().find(|(e, _)| *e == plain_element(&a.element)).expect("every element has a type").1.clone();

    // The body with every `p[i]` read from and written to the lane of a local vector.
    let mut lane_body = String::new();
    let mut at = l.body.start_byte();
    let mut subscripts: Vec<Node> = names_in(text, l.body, i).into_iter().filter_map(subscript_of).collect();
    subscripts.sort_by_key(|n| n.start_byte());
    for s in subscripts {
        let pointer = &text[s.child_by_field_name("argument").expect("checked").byte_range()];
        let local = &locals.iter().find(|(_, a)| a.pointer == pointer).expect("every access has a local").0;
        lane_body.push_str(&text[at..s.start_byte()]);
        lane_body.push_str(&format!("{local}[{lane}]"));
        at = s.end_byte();
    }
    lane_body.push_str(&text[at..l.body.end_byte()]);

    // Vectors start where every pointer is at a whole vector: the same element of each when
    // their phases (elements past a vector boundary) agree; the elements before it, and all of
    // them when the phases differ, go one at a time.
    let phase = unit.local_name(&format!("{i}_phase"));
    let head = unit.local_name(&format!("{i}_head"));
    let phase_of = |a: &Access| format!("(unsigned long long){} / sizeof({}) % {vec}", operand(&a.pointer), plain_element(&a.element));
    let peel = format!("({vec} - {phase}) % {vec}");
    let mut guard = vec![format!("{end} >= {peel}")];
    guard.extend(accesses[1..].iter().map(|a| format!("{} == {phase}", phase_of(a))));
    let other_loops_pointers = keeping.map_or(&[][..], |k| k.aligned_with).iter().filter(|a| !accesses.iter().any(|b| b.pointer == a.pointer));
    guard.extend(other_loops_pointers.map(|a| format!("{} == {phase}", phase_of(a))));
    let mut out = format!("#if {vec} == 1\n{original}\n#else\n{indent}{{\n");
    for (element, name) in &bit_types {
        out.push_str(&format!("{inner}typedef typename cutune_bits<{vec} * sizeof({element})>::type {name};\n"));
    }
    out.push_str(&format!("{inner}const {ty} {phase} = {};\n", phase_of(&accesses[0])));
    out.push_str(&joined(&format!("{inner}const bool {aligned} = "), &guard, "&&", ";\n"));
    out.push_str(&format!("{inner}const {ty} {head} = {aligned} ? {peel} : 0;\n"));
    out.push_str(&format!("{inner}const {ty} {limit} = {aligned} ? {end} - ({end} - {head}) % {vec} : 0;\n"));
    let (first, stride) = (factor(&l.start), factor(&l.step));
    let scalar_body = shifted(&text[l.body.byte_range()], &step);
    let head_header = for_header(&inner, &format!("{ty} {i} = {}", l.start.trim()), &format!("{i} < {head}"), &format!("{i} += {}", l.step.trim()));
    out.push_str(&format!("{} {scalar_body}\n", head_header.strip_suffix(" {").expect("a for header ends with its brace")));
    // One vector at `{vec_i}`: each access lives in a register of its size, viewed as elements
    // by the lanes.
    let vector = |at: &str, kept_at: Option<&str>| {
        let kept = |a: &Access| keeping.zip(kept_at).and_then(|(k, chunk)| k.row.kept(&a.pointer).map(|p| (k, p, chunk)));
        let mut out = String::new();
        for (local, a) in &locals {
            let (element, bits) = (plain_element(&a.element), bits(a));
            let read = match kept(a) {
                // A loop that fills the registers loaded them all before its first vector.
                Some((k, p, chunk)) if a.read || k.row.reads_kept(l, &a.pointer) => format!(" = {}[{chunk}]", kept_array(unit, p)),
                _ if a.read => format!(" = *reinterpret_cast<const {bits}*>({} + {vec_i})", a.pointer),
                _ => String::new(),
            };
            out.push_str(&format!("{at}{bits} {local}_bits{read};\n"));
            out.push_str(&format!("{at}{element}* {local} = reinterpret_cast<{element}*>(&{local}_bits);\n"));
        }
        // A loop of a constant `{vec}` trips: the compiler unrolls it without being asked.
        out.push_str(&format!("{at}for (int {lane} = 0; {lane} < {vec}; ++{lane}) {}\n", shifted(&lane_body, &at[indent.len()..])));
        for (local, a) in locals.iter().filter(|(_, a)| a.written) {
            out.push_str(&format!("{at}*reinterpret_cast<{}*>({} + {vec_i}) = {local}_bits;\n", bits(a), a.pointer));
        }
        for (local, a) in &locals {
            if let Some((_, p, chunk)) = kept(a).filter(|(k, _, _)| a.written && k.row.read_later(l, &a.pointer)) {
                out.push_str(&format!("{at}{}[{chunk}] = {local}_bits;\n", kept_array(unit, p)));
            }
        }
        out
    };
    // Thread t's chunks of `{vec}` are those its scalar loop would start at, times `{vec}`.
    let mut vector_start = format!("{head} + {first} * {vec}");
    if let Some(k) = keeping {
        let chunk = unit.local_name(&format!("{i}_kept"));
        let param = k.param;
        let deeper = format!("{inner}{step}");
        let unroll = format!("{}#pragma unroll\n", if pragmas_at_margin(text) { "" } else { &inner });
        let chunk_header = format!(
            "{unroll}{}\n{deeper}const {ty} {vec_i} = {head} + ({first} + {chunk} * {stride}) * {vec};\n",
            for_header(&inner, &format!("int {chunk} = 0"), &format!("{chunk} < {param}"), &format!("++{chunk}"))
        );
        out.push_str(&format!("#if {param} > 0\n"));
        // The loop that fills the registers loads every kept vector before it computes with
        // any: a thread has them all in flight at once.
        let filled: Vec<String> = locals
            .iter()
            .filter(|(_, a)| a.read && !k.row.reads_kept(l, &a.pointer))
            .filter_map(|(_, a)| k.row.kept(&a.pointer).map(|p| format!("{deeper}{step}{}[{chunk}] = *reinterpret_cast<const {}*>({} + {vec_i});\n", kept_array(unit, p), bits(a), a.pointer)))
            .collect();
        if !filled.is_empty() {
            out.push_str(&format!("{chunk_header}{deeper}if ({vec_i} < {limit}) {{\n{}{deeper}}}\n{inner}}}\n", filled.concat()));
        }
        out.push_str(&chunk_header);
        out.push_str(&format!("{deeper}if ({vec_i} < {limit}) {{\n{}{deeper}}}\n{inner}}}\n#endif\n", vector(&format!("{deeper}{step}"), Some(&chunk))));
        vector_start = format!("{head} + ({first} + {param} * {stride}) * {vec}");
    }
    out.push_str(&for_header(&inner, &format!("{ty} {vec_i} = {vector_start}"), &format!("{vec_i} < {limit}"), &format!("{vec_i} += {stride} * {vec}")));
    out.push('\n');
    out.push_str(&vector(&format!("{inner}{step}"), None));
    out.push_str(&format!("{inner}}}\n"));
    let tail_header = for_header(&inner, &format!("{ty} {i} = {limit} + {first}"), &format!("{i} < {end}"), &format!("{i} += {}", l.step.trim()));
    out.push_str(&format!("{} {scalar_body}\n", tail_header.strip_suffix(" {").expect("a for header ends with its brace")));
    out.push_str(&format!("{indent}}}\n#endif"));
    out
}

/// The start of the line of the row's first loop, whose indentation the registers' declaration takes.
fn first_loop_line(text: &str, row: &KeptRow) -> usize {
    line_start(text, *row.loops.first().expect("a kept row has loops"))
}

/// The registers a thread keeps its vectors of the row in, declared above the first loop that
/// walks it (above the outermost `#if` around it, where it has one).
fn kept_registers(unit: &Unit, k: &Keeping, vec: &str, indent: &str) -> String {
    let param = k.param;
    let mut out = format!("#if {vec} > 1 && {param} > 0\n{indent}// Each thread's first vectors of the row, kept in registers for the loops at {}.\n", k.row.lines(unit));
    for p in &k.row.pointers {
        out.push_str(&format!("{indent}typename cutune_bits<{vec} * sizeof({})>::type {}[{param}];\n", p.element, kept_array(unit, p)));
    }
    out.push_str("#endif\n");
    out
}

fn kept_array(unit: &Unit, p: &KeptPointer) -> String {
    unit.local_name(&format!("{}_kept", p.pointer))
}

/// The local type name of a register holding a vector of `element`s: `half_bits`.
pub(super) fn bits_type_name(unit: &Unit, element: &str) -> String {
    unit.local_name(&format!("{}_bits", element.replace(|c: char| !c.is_ascii_alphanumeric() && c != '_', "_")))
}

/// An element type without its qualifiers: `const half __restrict__` → `half`.
pub(super) fn plain_element(element: &str) -> String {
    element.split_whitespace().filter(|w| !matches!(*w, "const" | "__restrict__" | "__restrict" | "volatile")).collect::<Vec<_>>().join(" ")
}
