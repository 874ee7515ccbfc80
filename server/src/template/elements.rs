//! Several consecutive elements per thread in a kernel of one element per thread
//! (`int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) { … }`, or `if (i >= n) return;`
//! and the rest): each thread takes V consecutive elements, their accesses that step with the
//! element as one load or store (the lane analysis of `lanes.rs`), and the host's grid is
//! divided by V. The original stays under `#if NAME == 1`, the default.

use tree_sitter::Node;

use super::lanes::{self, LanePlan};
use super::layout::{factor, indent_step, leading_whitespace, operand};
use super::strategy::{divided_grids, inside_rewrite, is_grid_stride_start, unreached_grids_note, VECTORIZE_ROW_LOOPS};
use super::{line_start, Note, Outcome, Rewrite, TextEdit, Transform, Unit};
use crate::spec::{ParamKind, ParamSpec};
use crate::syntax::{descendants, host};

pub struct VectorizeElements;

/// The kernel's element index, its bound and the statements run for each element.
struct Elements<'t> {
    declaration: Node<'t>,
    var: String,
    var_type: String,
    start: String,
    end: String,
    /// The statements run for the element, and the original text from the index's line on.
    statements: Vec<Node<'t>>,
    region_end: usize,
    /// `if (i < n) { … }` (or one statement): what it guards; `if (i >= n) return;`: none, the
    /// statements follow.
    guarded_block: Option<Node<'t>>,
}

impl Transform for VectorizeElements {
    fn name(&self) -> &'static str {
        "vectorize-elements"
    }

    fn apply(&self, unit: &Unit) -> Outcome {
        let Some(body) = unit.body() else { return Outcome::NotApplicable("the kernel has no body".into()) };
        if unit.applied.contains(&VECTORIZE_ROW_LOOPS) {
            return Outcome::NotApplicable("the kernel's loops are vectorised".into());
        }
        let elements = match elements(unit, body) {
            None => return Outcome::NotApplicable("no element index `i = blockIdx.x * blockDim.x + threadIdx.x` checked against a bound at the kernel's top level".into()),
            Some(Err(note)) => return Outcome::Refused(note),
            Some(Ok(elements)) => elements,
        };
        let line = unit.line_of(elements.declaration.start_byte());
        let launches: Vec<_> = unit.model.launches_of(&unit.kernel.name).collect();
        if launches.is_empty() {
            return Outcome::Refused(Note { line: Some(line), message: "no launch in this file to give a smaller grid: not vectorised".into() });
        }
        let name = unit.fresh_name("VEC");
        let grid_edits = match divided_grids(unit, &launches, &name) {
            Ok(edits) => edits,
            Err(note) => return Outcome::Refused(Note { message: format!("{}: not vectorised", note.message), ..note }),
        };
        let plan = match lanes::plan_statements(unit, &elements.var, &elements.statements, true) {
            Ok(plan) => plan,
            Err(why) => return Outcome::Refused(Note { line: Some(line), message: why }),
        };
        let widest = plan.sites.iter().map(|s| s.element_bytes).max().unwrap_or(4);
        let values: Vec<i64> = [1i64, 2, 4, 8, 16].into_iter().filter(|v| *v as u64 * widest <= 16).collect();
        let mut rewrite = Rewrite::default();
        rewrite.edits.extend(super::strategy::vec_bits_edit_if_missing(unit));
        rewrite.edits.extend(lanes::access_helpers_edit(unit, &[(&plan, &elements.var)]));
        // The parameter must be defined before the first launch as well as the kernel.
        let first_launch = launches.iter().map(|l| l.span.start_byte).min().expect("checked non-empty");
        rewrite.edits.push(if first_launch < unit.kernel.span.start_byte { unit.define_block_at(first_launch, &name, "1") } else { unit.define_block(&name, "1") });
        let text = unit.text();
        let start = line_start(text, elements.declaration.start_byte());
        let new_text = format!("#if {name} == 1\n{}\n#else\n{}#endif", &text[start..elements.region_end], vectorized(unit, &elements, &plan, &name));
        rewrite.edits.push(TextEdit { range: start..elements.region_end, new_text });
        rewrite.edits.extend(grid_edits);
        rewrite.notes.extend(unreached_grids_note(unit, &name));
        let origin = format!("consecutive elements per thread from line {line}, the grid divided by it; 1 is the original one element per thread");
        rewrite.params.push(ParamSpec { name: name.clone(), kind: ParamKind::Define, default: 1, values, origin });
        rewrite.summary = format!("each thread takes `{name}` consecutive elements from line {line}, loaded and stored together when aligned; the grid is divided by it");
        Outcome::Applied(rewrite)
    }
}

/// The element index at the kernel's top level and its bound check, `None` when there is none,
/// an error when it is there but the rest is not as it must be.
fn elements<'t>(unit: &Unit<'t>, body: Node<'t>) -> Option<Result<Elements<'t>, Note>> {
    let text = unit.text();
    let statements = lanes::statements_of(body);
    let (k, declaration) = statements.iter().enumerate().find(|(_, s)| s.kind() == "declaration" && !inside_rewrite(unit, **s, "1") && index_declaration(text, **s).is_some())?;
    let (var, var_type, start) = index_declaration(text, *declaration)?;
    let line = unit.line_of(declaration.start_byte());
    let refuse = |message: String| Some(Err(Note { line: Some(line), message: format!("{message}: not vectorised") }));
    let check = statements.get(k + 1).filter(|s| s.kind() == "if_statement" && s.child_by_field_name("alternative").is_none())?;
    let condition = check.child_by_field_name("condition").and_then(|c| c.named_child(0))?;
    let consequence = check.child_by_field_name("consequence")?;
    let (left, op, right) = binary(text, condition)?;
    let (end, guarded_block, statements, region_end) = match (left == var, op, right == var) {
        (true, "<", _) | (_, ">", true) if k + 2 == statements.len() => {
            let end = if left == var { right } else { left };
            let guarded = if consequence.kind() == "compound_statement" { lanes::statements_of(consequence) } else { vec![consequence] };
            (end.to_string(), Some(consequence), guarded, check.end_byte())
        }
        (true, ">=", _) | (_, "<=", true) if is_return(text, consequence) && k + 2 < statements.len() => {
            let end = if left == var { right } else { left };
            (end.to_string(), None, statements[k + 2..].to_vec(), statements.last().expect("checked").end_byte())
        }
        _ => return refuse(format!("`{var}` is not checked against its bound as `if ({var} < n) …` ending the kernel or `if ({var} >= n) return;`")),
    };
    // The grid shrinks: nothing else may depend on which block a thread is in.
    for grid_name in ["blockIdx", "gridDim"] {
        let stray = descendants(body).find(|n| n.kind() == "identifier" && &text[n.byte_range()] == grid_name && !declaration.byte_range().contains(&n.start_byte()));
        if let Some(stray) = stray {
            return Some(Err(Note { line: Some(unit.line_of(stray.start_byte())), message: format!("`{grid_name}` is used outside the element index here, so a smaller grid could change the result: not vectorised") }));
        }
    }
    let assigned = descendants(body).any(|n| match n.kind() {
        "assignment_expression" => n.child_by_field_name("left").is_some_and(|l| text[l.byte_range()] == var),
        "update_expression" => n.child_by_field_name("argument").is_some_and(|a| text[a.byte_range()] == var),
        _ => false,
    });
    if assigned {
        return refuse(format!("`{var}` is assigned after it is set"));
    }
    Some(Ok(Elements { declaration: *declaration, var, var_type, start, end, statements, region_end, guarded_block }))
}

/// `T i = blockIdx.x * blockDim.x + threadIdx.x;`: the name, the type, the value.
fn index_declaration(text: &str, declaration: Node) -> Option<(String, String, String)> {
    let name = index_holder(text, declaration)?;
    let value = declaration.child_by_field_name("declarator")?.child_by_field_name("value")?;
    let ty = declaration.child_by_field_name("type")?;
    let value_text = &text[value.byte_range()];
    is_grid_stride_start(value_text).then(|| (name.to_string(), text[ty.byte_range()].to_string(), value_text.trim().to_string()))
}

fn binary<'t>(text: &'t str, node: Node) -> Option<(&'t str, &'t str, &'t str)> {
    if node.kind() != "binary_expression" {
        return None;
    }
    let part = |f: &str| node.child_by_field_name(f).map(|n| text[n.byte_range()].trim());
    Some((part("left")?, part("operator")?, part("right")?))
}

/// `return;` or `{ return; }`.
fn is_return(text: &str, node: Node) -> bool {
    let statement = if node.kind() == "compound_statement" { lanes::statements_of(node).first().copied().filter(|_| lanes::statements_of(node).len() == 1) } else { Some(node) };
    statement.is_some_and(|s| s.kind() == "return_statement" && text[s.byte_range()].trim_end_matches(';').trim() == "return")
}

/// The `#else` branch: V consecutive elements per thread, together where they are whole, else
/// one at a time as the original does.
fn vectorized(unit: &Unit, e: &Elements, plan: &LanePlan, vec: &str) -> String {
    let text = unit.text();
    let indent = leading_whitespace(&text[line_start(text, e.declaration.start_byte())..]);
    let step = indent_step(text);
    let inner = format!("{indent}{step}");
    let (i, ty, end) = (&e.var, &e.var_type, operand(&e.end));
    let first = unit.local_name(&format!("{i}_vec"));
    let bit_type = |element: &str| super::strategy::bits_type_name(unit, element);
    let writer = lanes::Writer::new(unit, plan, i, vec, &bit_type);
    let (prologue, whole) = writer.prologue(indent, &unit.local_name(&format!("{i}_whole")));
    let mut out = format!("{indent}const {ty} {first} = {} * {vec};\n{prologue}", factor(&e.start));
    let room = format!("{first} + {vec} <= {end}");
    let condition = whole.map_or(room.clone(), |w| format!("{w} && {room}"));
    out.push_str(&format!("{indent}if ({condition}) {{\n"));
    let with_comments: Vec<Node> = match e.guarded_block {
        Some(block) if block.kind() == "compound_statement" => {
            let mut cursor = block.walk();
            block.named_children(&mut cursor).collect()
        }
        Some(statement) => vec![statement],
        None => e.statements.clone(),
    };
    out.push_str(&writer.chunk(&inner, i, ty, &first, &with_comments));
    // The last chunk, or one a divisor would split: the original, one element at a time.
    let one_at_a_time = match e.guarded_block {
        Some(block) => super::layout::shifted(&returns_continuing(text, block.byte_range(), &e.statements), &step),
        None => {
            let from = line_start(text, e.statements[0].start_byte());
            let lines: String = returns_continuing(text, from..e.region_end, &e.statements).lines().map(|l| if l.trim().is_empty() { "\n".to_string() } else { format!("{step}{step}{l}\n") }).collect();
            format!("{{\n{lines}{inner}}}")
        }
    };
    out.push_str(&format!("{indent}}} else {{\n{inner}for ({ty} {i} = {first}; {i} < {end} && {i} < {first} + {vec}; ++{i}) {one_at_a_time}\n{indent}}}\n"));
    out
}

/// `text[range]` with the element's `return`s (those outside any loop or `switch` of its own)
/// as `continue`: in the loop over the last chunk's elements, they end one element, as they
/// ended the thread's one.
fn returns_continuing(text: &str, range: std::ops::Range<usize>, statements: &[Node]) -> String {
    let mut returns: Vec<Node> = statements
        .iter()
        .flat_map(|s| descendants(*s))
        .filter(|n| n.kind() == "return_statement")
        .filter(|n| !std::iter::successors(n.parent(), |p| p.parent()).take_while(|p| p.start_byte() >= range.start).any(|p| matches!(p.kind(), "for_statement" | "while_statement" | "do_statement" | "switch_statement" | "for_range_loop" | "lambda_expression")))
        .collect();
    returns.sort_by_key(|n| n.start_byte());
    let mut out = String::new();
    let mut at = range.start;
    for r in returns {
        out.push_str(&text[at..r.start_byte()]);
        out.push_str("continue;");
        at = r.end_byte();
    }
    out.push_str(&text[at..range.end]);
    out
}

/// What ties a thread to the others of its block or to the grid's shape: with none of it, the
/// block is only a grouping of the threads.
const SHARED_BETWEEN_THREADS: [&str; 17] = [
    "__syncthreads", "__shared__", "__syncwarp", "shfl", "__ballot", "__any", "__all", "__activemask", "__match", "__reduce", "this_thread_block", "tiled_partition", "this_grid",
    "gridDim", "warpSize", "cooperative_groups", "asm",
];

/// How a kernel's threads, each on the elements of its flat index alone, stand to the grid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum FlatThreads {
    /// The index is checked against a bound before anything is read: extra threads of a grid
    /// that does not divide evenly do nothing.
    Guarded,
    /// Elements are read before the bound is checked (or it never is): the grid must launch as
    /// many threads as the program's, not one more.
    Unguarded,
}

/// Whether each thread of the kernel whose body is `body` works on the elements of its flat
/// index alone (`i = blockIdx.x * blockDim.x + threadIdx.x`, or a multiple of it) and shares
/// nothing with the other threads of its block: then how the threads are grouped into blocks
/// changes no result, and a block of any size does the same work when the grid launches as
/// many threads. `None` when they are not.
pub(super) fn flat_threads(text: &str, body: Node) -> Option<FlatThreads> {
    let index = flat_index(text, body)?;
    Some(if guarded_first(text, body, index) { FlatThreads::Guarded } else { FlatThreads::Unguarded })
}

/// The flat index of a kernel whose threads each work on their own elements and share nothing
/// with their block (see [`flat_threads`]).
fn flat_index<'t>(text: &str, body: Node<'t>) -> Option<Node<'t>> {
    let root = std::iter::successors(Some(body), |n| n.parent()).last().unwrap_or(body);
    let called = host::functions_called_from(&host::function_definitions(text, root), &text[body.byte_range()]);
    // `__shfl_xor_sync` and `__all_sync` by their prefixes, the rest by name.
    let shared = |word: &str| word.contains("shfl") || SHARED_BETWEEN_THREADS.iter().any(|w| word == *w || (w.starts_with("__") && word.starts_with(w)));
    let mentions = |code: &str, of: &dyn Fn(&str) -> bool| crate::syntax::identifiers_in(code).any(of);
    let place = |word: &str| matches!(word, "threadIdx" | "blockIdx" | "blockDim");
    if mentions(&text[body.byte_range()], &shared) || called.iter().any(|f| mentions(f, &shared) || mentions(f, &place)) {
        return None;
    }
    // Each built-in of the thread's place is read once, in the flat index.
    let flat: Vec<Node> = descendants(body).filter(|n| n.kind() == "binary_expression" && is_grid_stride_start(&text[n.byte_range()])).collect();
    let [index] = flat.as_slice() else { return None };
    let built_ins = descendants(body).filter(|n| n.kind() == "identifier" && place(&text[n.byte_range()])).count();
    (built_ins == 3).then_some(*index)
}

/// Whether the variable holding the flat `index` is checked against a bound before anything
/// else is done.
fn guarded_first(text: &str, body: Node, index: Node) -> bool {
    guard_count(text, body, index).is_some()
}

/// The elements that the threads of a [`FlatThreads::Guarded`] kernel cover: what its flat
/// index is checked against (`n` of `if (i < n) …`, `n + 1` of `if (i > n) return;`).
pub(super) fn guarded_count(text: &str, body: Node) -> Option<String> {
    guard_count(text, body, flat_index(text, body)?)
}

/// The count a [`FlatThreads::Guarded`] kernel's index is checked against, and how many elements
/// apart the threads' indices lie: 4 for `i = 4 * (blockIdx.x * blockDim.x + threadIdx.x)` (a
/// thread takes a `float4`), else 1. `None` where the index is made any other way.
pub(super) fn guarded_elements(text: &str, body: Node) -> Option<(String, i64)> {
    let index = flat_index(text, body)?;
    Some((guard_count(text, body, index)?, index_scale(text, index)?))
}

/// The literal factor the declaration holding the flat `index` scales it by (1 when it holds the
/// index itself).
fn index_scale(text: &str, index: Node) -> Option<i64> {
    let index = outside_parentheses(index)?;
    let parent = index.parent()?;
    if parent.kind() == "init_declarator" {
        return Some(1);
    }
    let operator = parent.child_by_field_name("operator").map(|o| &text[o.byte_range()]);
    if parent.kind() != "binary_expression" || operator != Some("*") || outside_parentheses(parent)?.parent()?.kind() != "init_declarator" {
        return None;
    }
    let factor = [parent.child_by_field_name("left")?, parent.child_by_field_name("right")?].into_iter().find(|n| n.id() != index.id())?;
    crate::syntax::parse_int_literal(&text[factor.byte_range()]).filter(|f| *f > 0)
}

/// `node` with the parentheses around it.
fn outside_parentheses(node: Node) -> Option<Node> {
    std::iter::successors(Some(node), |n| n.parent().filter(|p| p.kind() == "parenthesized_expression")).last()
}

/// The count the variable holding the flat `index` is checked against before anything else is
/// done, the check ending the kernel (`if (i < n) { … }`) or leaving it (`if (i >= n) return;`).
fn guard_count(text: &str, body: Node, index: Node) -> Option<String> {
    let statements = lanes::statements_of(body);
    let k = statements.iter().position(|s| s.byte_range().contains(&index.start_byte()))?;
    let holder = (statements[k].kind() == "declaration").then(|| index_holder(text, statements[k])).flatten();
    // Constants may come between (`const half one = __float2half(1.0f);`).
    let guard = (k + 1..statements.len()).find(|&g| statements[g].kind() != "declaration" || reads_memory(statements[g]))?;
    let check = statements[guard];
    let var = holder.filter(|_| check.kind() == "if_statement" && check.child_by_field_name("alternative").is_none())?;
    if statements[..k].iter().any(|s| reads_memory(*s)) {
        return None;
    }
    let (left, op, right) = binary(text, check.child_by_field_name("condition").and_then(|c| c.named_child(0))?)?;
    let one_more = |bound: &str| format!("{} + 1", operand(bound));
    let ends_kernel = guard + 1 == statements.len();
    let returns = check.child_by_field_name("consequence").is_some_and(|c| is_return(text, c));
    match (left == var, op, right == var) {
        (true, "<", _) if ends_kernel => Some(right.to_string()),
        (true, "<=", _) if ends_kernel => Some(one_more(right)),
        (_, ">", true) if ends_kernel => Some(left.to_string()),
        (_, ">=", true) if ends_kernel => Some(one_more(left)),
        (true, ">=", _) if returns => Some(right.to_string()),
        (true, ">", _) if returns => Some(one_more(right)),
        (_, "<=", true) if returns => Some(left.to_string()),
        (_, "<", true) if returns => Some(one_more(left)),
        _ => None,
    }
}

/// Whether `statement` may read memory: an element, a dereference, or a call given anything but
/// numbers.
fn reads_memory(statement: Node) -> bool {
    descendants(statement).any(|n| match n.kind() {
        "subscript_expression" | "pointer_expression" => true,
        "call_expression" => n.child_by_field_name("arguments").is_some_and(|a| a.named_children(&mut a.walk()).any(|arg| arg.kind() != "number_literal")),
        _ => false,
    })
}

/// The name `declaration` declares, when it is one name given a value.
fn index_holder<'t>(text: &'t str, declaration: Node) -> Option<&'t str> {
    let declarators: Vec<Node> = declaration.children_by_field_name("declarator", &mut declaration.walk()).collect();
    let [d] = declarators.as_slice() else { return None };
    d.child_by_field_name("declarator").filter(|n| n.kind() == "identifier").map(|n| &text[n.byte_range()])
}

#[cfg(test)]
mod tests {
    use super::{guarded_count, guarded_elements};
    use crate::syntax::Document;

    fn count_of(kernel: &str) -> Option<String> {
        let doc = Document::new(kernel.to_string());
        let definition = crate::syntax::descendants(doc.tree().unwrap().root_node()).find(|n| n.kind() == "function_definition").unwrap();
        guarded_count(doc.text(), definition.child_by_field_name("body").unwrap())
    }

    #[test]
    fn the_count_a_flat_index_is_checked_against() {
        let ending = "__global__ void k(int *x, int n) {\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) {\n    x[i] = 0;\n  }\n}\n";
        assert_eq!(count_of(ending).as_deref(), Some("n"));
        let leaving = "__global__ void k(int *x, int n) {\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i > n) return;\n  x[i] = 0;\n}\n";
        assert_eq!(count_of(leaving).as_deref(), Some("n + 1"));
        // Read before the check: the threads past the count are not idle.
        let unguarded = "__global__ void k(int *x, int n) {\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  x[i] = 0;\n}\n";
        assert_eq!(count_of(unguarded), None);
        // A block's threads that meet at a barrier are one block's work.
        let shared = "__global__ void k(int *x, int n) {\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) {\n    __syncthreads();\n    x[i] = 0;\n  }\n}\n";
        assert_eq!(count_of(shared), None);
    }

    #[test]
    fn a_flat_index_scaled_by_a_literal_steps_over_that_many_elements() {
        let elements = |kernel: &str| {
            let doc = Document::new(kernel.to_string());
            let definition = crate::syntax::descendants(doc.tree().unwrap().root_node()).find(|n| n.kind() == "function_definition").unwrap();
            guarded_elements(doc.text(), definition.child_by_field_name("body").unwrap())
        };
        let one = "__global__ void k(float *x, int n) {\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) x[i] = 0;\n}\n";
        assert_eq!(elements(one), Some(("n".to_string(), 1)));
        let four = "__global__ void k(float *x, int n) {\n  int i = 4 * (blockIdx.x * blockDim.x + threadIdx.x);\n  if (i < n) x[i] = 0;\n}\n";
        assert_eq!(elements(four), Some(("n".to_string(), 4)));
        // An offset is no step between threads.
        let offset = "__global__ void k(float *x, int n) {\n  int i = (blockIdx.x * blockDim.x + threadIdx.x) + 4;\n  if (i < n) x[i] = 0;\n}\n";
        assert_eq!(elements(offset), None);
    }
}
