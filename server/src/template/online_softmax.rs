//! Online softmax: a row's maximum and its sum of exponentials, each a pass over the row with a
//! block reduction after it,
//!
//! ```text
//! for (j = threadIdx.x; j < n; j += blockDim.x) m = fmaxf(m, E(j));
//! m = block_max(m, …);
//! float s = 0.f;
//! for (j = threadIdx.x; j < n; j += blockDim.x) s += expf(E(j) - m);
//! s = block_sum(s, …);
//! ```
//!
//! become, when `NAME` is 1, one pass that keeps a running maximum and rescales the sum whenever
//! it grows: the row is read once instead of twice. When `NAME` is 2 both passes stay, each
//! thread's sum taken around its own maximum, and the two block reductions come after both: the
//! block no longer waits between the passes (softmax with its row in registers, brute force on
//! the H100: 156.14 → 146.75 µs on one lease, 169.65 → 160.98 µs on another; docs/benchmarks.md). Either way the threads' sums are rescaled to the block's maximum before
//! they are added. The original passes stay under `#if NAME == 0`, the default.

use tree_sitter::Node;

use super::layout::{for_header, indent_step, leading_whitespace};
use super::strategy::{combines_threads, inside_rewrite, is_row_loop, loop_start_with_pragmas, normalized, shuffling_functions, simple_loop, SimpleLoop};
use super::{contains_identifier, line_start, Note, Outcome, Rewrite, TextEdit, Transform, Unit};
use crate::spec::{ParamKind, ParamSpec};
use crate::syntax::descendants;

pub struct OnlineSoftmax;

/// The two passes and their reductions, taken apart.
struct Passes<'t> {
    max_loop: SimpleLoop<'t>,
    /// The running maximum and the sum of exponentials (locals of the kernel).
    max: String,
    sum: String,
    /// The element's value, `E(j)`, as both loops write it.
    value: String,
    /// `expf` as the sum loop calls it.
    exp_fn: String,
    /// `m = block_max(m, …);` and `s = block_sum(s, …);`.
    max_reduce: Node<'t>,
    sum_reduce: Node<'t>,
    /// `float s = 0.f;` when it sits between the passes.
    sum_declaration: Option<Node<'t>>,
    /// The maximum's type and initial value.
    value_type: String,
    max_start: String,
}

impl Passes<'_> {
    /// Whether the maximum starts at an infinity (`-INFINITY`), where `exp(m - m)` is NaN.
    fn infinite_start(&self) -> bool {
        self.max_start.to_ascii_lowercase().contains("inf")
    }

    /// `value` (0 or 1) as a literal of the maximum's type: `1.f`, `1.0` or `1`.
    fn literal(&self, value: u8) -> String {
        match self.value_type.trim() {
            "float" => format!("{value}.f"),
            "double" => format!("{value}.0"),
            _ => value.to_string(),
        }
    }
}

impl Transform for OnlineSoftmax {
    fn name(&self) -> &'static str {
        "online-softmax"
    }

    fn apply(&self, unit: &Unit) -> Outcome {
        let Some(body) = unit.body() else { return Outcome::NotApplicable("the kernel has no body".into()) };
        let blocks: Vec<Node> = descendants(body).filter(|n| n.kind() == "compound_statement" && !inside_rewrite(unit, *n, "0")).collect();
        let mut refusal = None;
        let mut found = None;
        'search: for block in blocks {
            let statements = statements(block);
            for k in 0..statements.len() {
                match passes_at(unit, &statements, k) {
                    Some(Ok(passes)) => {
                        found = Some(passes);
                        break 'search;
                    }
                    Some(Err(why)) => refusal = refusal.or(Some(Note { line: Some(unit.line_of(statements[k].start_byte())), message: why })),
                    None => {}
                }
            }
        }
        let Some(passes) = found else {
            return match refusal {
                Some(note) => Outcome::Refused(note),
                None => Outcome::NotApplicable("no row loop taking a maximum (`m = fmaxf(m, x[j])`) followed by a block reduction of it".into()),
            };
        };
        let name = unit.fresh_name("ONLINE");
        let text = unit.text();
        let start = loop_start_with_pragmas(text, passes.max_loop.node.start_byte());
        let end = passes.sum_reduce.end_byte();
        let mut rewrite = Rewrite::default();
        rewrite.edits.push(unit.define_block(&name, "0"));
        let new_text = format!("#if {name} == 0\n{}\n#elif {name} == 1\n{}#else\n{}#endif", &text[start..end], merged(unit, &passes), reduced_after_both(unit, &passes, start));
        rewrite.edits.push(TextEdit { range: start..end, new_text });
        let (first, second) = (unit.line_of(passes.max_loop.node.start_byte()), unit.line_of(passes.sum_reduce.start_byte()));
        let origin = format!(
            "max and sum passes at lines {first}–{second}: 1 is one pass with a rescaled sum, 2 the two passes around each thread's own maximum with both block reductions after them; 0 is the original"
        );
        rewrite.params.push(ParamSpec { name: name.clone(), kind: ParamKind::Define, default: 0, values: vec![0, 1, 2], origin });
        rewrite.summary = format!("max and sum passes at lines {first}–{second} read the row once when `{name}` is 1, and reduce over the block once both are done when 2");
        Outcome::Applied(rewrite)
    }
}

/// The statements of a block, comments left out.
fn statements(block: Node) -> Vec<Node> {
    let mut cursor = block.walk();
    block.named_children(&mut cursor).filter(|n| n.kind() != "comment").collect()
}

/// The passes when `statements[k]` starts them: the max loop, its reduction, the sum's
/// declaration (optional), the sum loop and its reduction, in that order and nothing between.
/// `None` when no max pass starts there, an error when the rest is not as it must be.
fn passes_at<'t>(unit: &Unit<'t>, statements: &[Node<'t>], k: usize) -> Option<Result<Passes<'t>, String>> {
    let text = unit.text();
    let max_loop = simple_loop(text, *statements.get(k)?).filter(|l| is_row_loop(unit, l))?;
    let (max, value) = max_update(text, only_statement(max_loop.body)?)?;
    let max_reduce = *statements.get(k + 1)?;
    reduction(unit, max_reduce, &max, "max")?;
    // Only a softmax's maximum is worth a word: something after it takes `exp(… - max)`.
    let exponentiates = |n: &Node| {
        let later = &text[n.byte_range()];
        ["expf", "__expf", "exp"].iter().any(|f| contains_identifier(later, f)) && contains_identifier(later, &max)
    };
    statements[k + 2..].iter().any(exponentiates).then(|| sum_pass(unit, statements, k + 2, max_loop, max, value, max_reduce))
}

/// The sum pass that must follow a max pass from `statements[next]` on, or why it does not.
fn sum_pass<'t>(unit: &Unit<'t>, statements: &[Node<'t>], mut next: usize, max_loop: SimpleLoop<'t>, max: String, value: String, max_reduce: Node<'t>) -> Result<Passes<'t>, String> {
    let text = unit.text();
    let not_merged = |what: &str| format!("the maximum `{max}` is not followed by {what}: the passes are not merged");
    let sum_declaration = statements.get(next).filter(|n| zero_declaration(text, **n).is_some()).copied();
    next += usize::from(sum_declaration.is_some());
    let sum_loop = statements.get(next).and_then(|n| simple_loop(text, *n)).filter(|l| is_row_loop(unit, l)).ok_or_else(|| not_merged("a row loop over the same elements"))?;
    let same_row = [(&max_loop.var, &sum_loop.var), (&max_loop.start, &sum_loop.start), (&max_loop.end, &sum_loop.end), (&max_loop.step, &sum_loop.step)];
    if same_row.iter().any(|(a, b)| normalized(a) != normalized(b)) {
        return Err(not_merged("a loop over the same elements (its header differs)"));
    }
    let (sum, exp_fn) = only_statement(sum_loop.body)
        .and_then(|statement| sum_update(text, statement, &max, &value))
        .ok_or_else(|| not_merged(&format!("`s += expf({value} - {max})` alone in the next loop")))?;
    if sum_declaration.is_some_and(|d| zero_declaration(text, d) != Some(sum.clone())) {
        return Err(not_merged(&format!("the declaration of `{sum}`")));
    }
    let sum_reduce = *statements.get(next + 1).ok_or_else(|| not_merged("a block reduction of the sum"))?;
    reduction(unit, sum_reduce, &sum, "sum").ok_or_else(|| not_merged(&format!("a block sum `{sum} = block_sum({sum}, …)` right after the sum loop")))?;
    // The value must be the element's, the same each time it is evaluated.
    let pure = !value.contains('=') && !value.contains("++") && !value.contains("--") && !contains_identifier(&value, "atomic");
    if !pure || !contains_identifier(&value, &max_loop.var) || contains_identifier(&value, &max) || contains_identifier(&value, &sum) {
        return Err(format!("`{value}` is not a plain function of the element: the passes are not merged"));
    }
    let (value_type, max_start) = local_declaration(unit, &max).ok_or_else(|| format!("`{max}` is not a local of the kernel with an initial value: the passes are not merged"))?;
    local_declaration(unit, &sum).ok_or_else(|| format!("`{sum}` is not a local of the kernel with an initial value: the passes are not merged"))?;
    Ok(Passes { max_loop, max, sum, value, exp_fn, max_reduce, sum_reduce, sum_declaration, value_type, max_start })
}

/// The one statement of a loop body: `stmt;` or `{ stmt; }`.
fn only_statement(body: Node) -> Option<Node> {
    match body.kind() {
        "expression_statement" => Some(body),
        "compound_statement" => match statements(body).as_slice() {
            [one] if one.kind() == "expression_statement" => Some(*one),
            _ => None,
        },
        _ => None,
    }
}

/// `left op right;` as texts, with the right side's node.
fn assignment<'t>(text: &'t str, statement: Node<'t>) -> Option<(&'t str, &'t str, Node<'t>)> {
    let expression = statement.named_child(0).filter(|e| e.kind() == "assignment_expression")?;
    let left = expression.child_by_field_name("left").filter(|l| l.kind() == "identifier")?;
    let operator = expression.child_by_field_name("operator")?;
    Some((&text[left.byte_range()], &text[operator.byte_range()], expression.child_by_field_name("right")?))
}

/// A call's function name and its arguments.
fn call<'t>(text: &'t str, node: Node<'t>) -> Option<(&'t str, Vec<Node<'t>>)> {
    if node.kind() != "call_expression" {
        return None;
    }
    let function = &text[node.child_by_field_name("function")?.byte_range()];
    let list = node.child_by_field_name("arguments")?;
    let mut cursor = list.walk();
    let arguments = list.named_children(&mut cursor).filter(|n| n.kind() != "comment").collect();
    Some((function, arguments))
}

/// `m = fmaxf(m, E);` (or `fmaxf(E, m)`, `max`, `fmax`): the maximum and `E`.
fn max_update(text: &str, statement: Node) -> Option<(String, String)> {
    let (max, operator, right) = assignment(text, statement)?;
    let (function, arguments) = call(text, right)?;
    if operator != "=" || !matches!(function.trim_start_matches("::"), "fmaxf" | "fmax" | "max") || arguments.len() != 2 {
        return None;
    }
    let argument = |n: &Node| text[n.byte_range()].trim().to_string();
    let value = match (argument(&arguments[0]), argument(&arguments[1])) {
        (a, b) if a == max => b,
        (a, b) if b == max => a,
        _ => return None,
    };
    Some((max.to_string(), value))
}

/// `s += expf(E - m);` with the max pass's `E` and `m`: the sum and the function.
fn sum_update(text: &str, statement: Node, max: &str, value: &str) -> Option<(String, String)> {
    let (sum, operator, right) = assignment(text, statement)?;
    let (function, arguments) = call(text, right)?;
    if operator != "+=" || !matches!(function.trim_start_matches("::"), "expf" | "__expf" | "exp") || arguments.len() != 1 {
        return None;
    }
    let difference = arguments[0];
    let (left, minus, right) = (difference.child_by_field_name("left")?, difference.child_by_field_name("operator")?, difference.child_by_field_name("right")?);
    let same_value = normalized(&text[left.byte_range()]) == normalized(value);
    (difference.kind() == "binary_expression" && &text[minus.byte_range()] == "-" && text[right.byte_range()].trim() == max && same_value).then(|| (sum.to_string(), function.to_string()))
}

/// `NAME = f(NAME, …);` where `f` combines the threads' values and its name says it takes their
/// `kind` (`max`, `sum`).
fn reduction(unit: &Unit, statement: Node, name: &str, kind: &str) -> Option<()> {
    let text = unit.text();
    let (left, operator, right) = assignment(text, statement)?;
    let (function, arguments) = call(text, right)?;
    let combines = combines_threads(function) || shuffling_functions(unit).iter().any(|s| s == function);
    let first = arguments.first().map(|a| text[a.byte_range()].trim());
    (left == name && operator == "=" && combines && function.to_ascii_lowercase().contains(kind) && first == Some(name)).then_some(())
}

/// The name of `T s = 0;` (any zero literal), a declaration of one local.
fn zero_declaration(text: &str, node: Node) -> Option<String> {
    if node.kind() != "declaration" {
        return None;
    }
    let declarator = node.child_by_field_name("declarator").filter(|d| d.kind() == "init_declarator")?;
    let value = &text[declarator.child_by_field_name("value")?.byte_range()];
    let zero = value.trim_end_matches(['f', 'F']).trim_start_matches('0').trim_start_matches('.').trim_start_matches('0').is_empty();
    let mut cursor = node.walk();
    let single = node.children_by_field_name("declarator", &mut cursor).count() == 1;
    let name = declarator.child_by_field_name("declarator")?;
    (zero && single).then(|| text[name.byte_range()].to_string())
}

/// The type and initial value of a local of the kernel (`float m = -INFINITY;`).
fn local_declaration(unit: &Unit, name: &str) -> Option<(String, String)> {
    let text = unit.text();
    descendants(unit.body()?).filter(|n| n.kind() == "declaration").find_map(|declaration| {
        let mut cursor = declaration.walk();
        let declarators: Vec<Node> = declaration.children_by_field_name("declarator", &mut cursor).collect();
        declarators.into_iter().filter(|d| d.kind() == "init_declarator").find_map(|d| {
            let declared = d.child_by_field_name("declarator").filter(|n| n.kind() == "identifier" && &text[n.byte_range()] == name)?;
            let value = d.child_by_field_name("value")?;
            let ty = declaration.child_by_field_name("type")?;
            (declared.kind() == "identifier").then(|| (text[ty.byte_range()].to_string(), text[value.byte_range()].trim().to_string()))
        })
    })
}

/// The one pass and the combination of the threads' maxima and sums.
fn merged(unit: &Unit, p: &Passes) -> String {
    let text = unit.text();
    let indent = leading_whitespace(&text[line_start(text, p.max_loop.node.start_byte())..]);
    let step = indent_step(text);
    let (inner, innermost) = (format!("{indent}{step}"), format!("{indent}{step}{step}"));
    let (m, s, exp) = (&p.max, &p.sum, &p.exp_fn);
    let value = unit.local_name("value");
    let one = p.literal(1);
    let mut out = String::new();
    if let Some(declaration) = p.sum_declaration {
        out.push_str(&format!("{indent}{}\n", &text[declaration.byte_range()]));
    }
    let l = &p.max_loop;
    out.push_str(&for_header(indent, &format!("{} {} = {}", l.var_type, l.var, l.start.trim()), &format!("{} < {}", l.var, l.end.trim()), &format!("{} += {}", l.var, l.step.trim())));
    out.push('\n');
    out.push_str(&format!("{inner}const {} {value} = {};\n", p.value_type, p.value));
    // With an infinite start, the sum has nothing to add until a finite maximum: exp(-inf - -inf)
    // would be NaN.
    let infinite_start = p.infinite_start();
    let comment = if infinite_start { format!("; `{m}` still {} means nothing counted yet", p.max_start) } else { String::new() };
    out.push_str(&format!("{inner}// A new maximum rescales the sum so far{comment}.\n"));
    out.push_str(&format!("{inner}if ({value} > {m}) {{\n{innermost}{s} = {s} * {exp}({m} - {value}) + {one};\n{innermost}{m} = {value};\n"));
    let otherwise = if infinite_start { format!("}} else if ({m} != {}) {{", p.max_start) } else { "} else {".to_string() };
    out.push_str(&format!("{inner}{otherwise}\n{innermost}{s} += {exp}({value} - {m});\n{inner}}}\n{indent}}}\n"));
    // The loop adds nothing while the maximum is still its infinite start, so the sum needs no
    // guard when it is rescaled.
    out.push_str(&rescaled_reductions(unit, p, indent, false));
    out
}

/// The passes as they are, but for the reductions: the max pass's goes after the sum pass, so
/// that each thread's sum is taken around its own maximum, then rescaled. `start` is where the
/// max pass's lines begin.
fn reduced_after_both(unit: &Unit, p: &Passes, start: usize) -> String {
    let text = unit.text();
    let indent = leading_whitespace(&text[line_start(text, p.max_loop.node.start_byte())..]);
    // Whole lines where the reductions stand on their own, as they do; cut at the statements
    // where one shares a line with a loop. `from` is a line's start or a reduction's end.
    let lines = |from: usize, to: usize| {
        let rest_of_line = text[from..].len() - text[from..].trim_start_matches([' ', '\t']).len();
        let from = if text[from + rest_of_line..].starts_with('\n') { from + rest_of_line + 1 } else { from };
        let mut part = text[from..to].trim_end_matches([' ', '\t']).to_string();
        if !part.is_empty() && !part.ends_with('\n') {
            part.push('\n');
        }
        part
    };
    // A thread whose elements are all the maximum's infinite start sums NaNs (`exp(-inf - -inf)`)
    // where the original adds zeros: its sum is left out.
    format!(
        "{}{}{}",
        lines(start, p.max_reduce.start_byte()),
        lines(p.max_reduce.end_byte(), p.sum_reduce.start_byte()),
        rescaled_reductions(unit, p, indent, p.infinite_start())
    )
}

/// The block's maximum, then the block's sum of the threads' sums, each rescaled from the
/// thread's maximum to the block's (left out when `guard_infinite_start` and the thread's maximum
/// is still its infinite start), in the reductions' own calls.
fn rescaled_reductions(unit: &Unit, p: &Passes, indent: &str, guard_infinite_start: bool) -> String {
    let text = unit.text();
    let (m, s, exp) = (&p.max, &p.sum, &p.exp_fn);
    let block_max = unit.local_name(&format!("{m}_block"));
    let mut out = format!("{indent}// Each thread's sum is relative to its own maximum: rescale it to the block's.\n");
    let max_call = text[assignment(text, p.max_reduce).expect("matched").2.byte_range()].to_string();
    out.push_str(&format!("{indent}const {} {block_max} = {max_call};\n", p.value_type));
    let sum_call = assignment(text, p.sum_reduce).expect("matched").2;
    let first = call(text, sum_call).expect("matched").1[0];
    let rescale = format!("{s} * {exp}({m} - {block_max})");
    let contribution = match guard_infinite_start {
        true => format!("{m} == {} ? {} : {rescale}", p.max_start, p.literal(0)),
        false => rescale,
    };
    let rescaled = format!("{}{contribution}{}", &text[sum_call.start_byte()..first.start_byte()], &text[first.end_byte()..sum_call.end_byte()]);
    out.push_str(&format!("{indent}{s} = {rescaled};\n{indent}{m} = {block_max};\n"));
    out
}

