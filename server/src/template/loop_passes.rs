//! The passes of a counted host loop (`for (uint n = 64; n <= N; n *= 2)`): the values its
//! variable takes, for a launch that the loop reaches on some of them only (`if (n <= 1024)`
//! one kernel, else another).

use std::ops::Range;

use tree_sitter::Node;

use crate::syntax::host::declared_name;
use crate::syntax::{eval_constant, is_identifier};

/// Passes looked at, at most: a sweep of sizes is a few dozen at most.
const MAX_PASSES: usize = 64;

/// A `for` loop over one variable from a start to a bound in constant steps.
pub(super) struct CountedLoop {
    pub variable: String,
    /// The initializer's bytes, where the variable's start is given.
    pub initializer: Range<usize>,
    /// The variable's value in each pass, in order.
    pub passes: Vec<i64>,
}

/// `for_node` taken apart as a counted loop, with the start and the bound valued by `value_of`
/// (in the loop's function); `None` for any other loop.
pub(super) fn counted_loop(text: &str, for_node: Node, value_of: &dyn Fn(&str) -> Option<i64>) -> Option<CountedLoop> {
    let initializer = for_node.child_by_field_name("initializer")?;
    let (variable, start) = start_of(text, initializer)?;
    let condition = for_node.child_by_field_name("condition")?;
    let (left, compare, bound) = binary(text, condition)?;
    let bound = value_of(bound)?;
    let step = step_of(text, for_node.child_by_field_name("update")?, &variable)?;
    if left != variable {
        return None;
    }
    let mut value = value_of(start)?;
    let mut passes = Vec::new();
    while holds(value, compare, bound)? && passes.len() < MAX_PASSES {
        passes.push(value);
        let next = step(value)?;
        if next == value {
            break;
        }
        value = next;
    }
    Some(CountedLoop { variable, initializer: initializer.byte_range(), passes })
}

/// `uint n = 64` or `n = 64`: the variable and its start's text.
pub(super) fn start_of<'t>(text: &'t str, initializer: Node) -> Option<(String, &'t str)> {
    let (target, value) = match initializer.kind() {
        "declaration" => {
            let declarator = initializer.child_by_field_name("declarator").filter(|d| d.kind() == "init_declarator")?;
            (declarator.child_by_field_name("declarator").and_then(declared_name)?, declarator.child_by_field_name("value")?)
        }
        "assignment_expression" => (initializer.child_by_field_name("left")?, initializer.child_by_field_name("right")?),
        _ => return None,
    };
    let name = &text[target.byte_range()];
    is_identifier(name).then(|| (name.to_string(), &text[value.byte_range()]))
}

fn binary<'t>(text: &'t str, node: Node) -> Option<(&'t str, &'t str, &'t str)> {
    if node.kind() != "binary_expression" {
        return None;
    }
    let part = |field: &str| node.child_by_field_name(field).map(|n| text[n.byte_range()].trim());
    Some((part("left")?, part("operator")?, part("right")?))
}

fn holds(value: i64, compare: &str, bound: i64) -> Option<bool> {
    Some(match compare {
        "<" => value < bound,
        "<=" => value <= bound,
        ">" => value > bound,
        ">=" => value >= bound,
        "!=" => value != bound,
        _ => return None,
    })
}

/// The step of `n *= 2`, `n <<= 1`, `n += 32`, `n /= 2`, `n++`, `--n`: the next value from one.
fn step_of(text: &str, update: Node, variable: &str) -> Option<Box<dyn Fn(i64) -> Option<i64>>> {
    let target = match update.kind() {
        "update_expression" => update.child_by_field_name("argument"),
        _ => update.child_by_field_name("left"),
    };
    if target.map(|t| &text[t.byte_range()]) != Some(variable) {
        return None;
    }
    if update.kind() == "update_expression" {
        let increments = text[update.byte_range()].contains("++");
        return Some(Box::new(move |v: i64| if increments { v.checked_add(1) } else { v.checked_sub(1) }));
    }
    let operator = &text[update.child_by_field_name("operator")?.byte_range()];
    let by = eval_constant(&text[update.child_by_field_name("right")?.byte_range()], &|_| None)?;
    Some(match operator {
        "*=" => Box::new(move |v: i64| v.checked_mul(by)),
        "+=" => Box::new(move |v: i64| v.checked_add(by)),
        "-=" => Box::new(move |v: i64| v.checked_sub(by)),
        "/=" if by != 0 => Box::new(move |v: i64| Some(v / by)),
        "<<=" if (0..32).contains(&by) => Box::new(move |v: i64| v.checked_mul(1 << by)),
        ">>=" if (0..63).contains(&by) => Box::new(move |v: i64| Some(v >> by)),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::{descendants, Document};

    fn passes(code: &str) -> Option<(String, Vec<i64>)> {
        let doc = Document::new(format!("void f() {{ {code} {{ run(); }} }}"));
        let tree = doc.tree().expect("parses");
        let for_node = descendants(tree.root_node()).find(|n| n.kind() == "for_statement").expect("a loop");
        let value_of = |t: &str| eval_constant(t, &|name| (name == "N").then_some(8192));
        counted_loop(doc.text(), for_node, &value_of).map(|l| (l.variable, l.passes))
    }

    #[test]
    fn a_counted_loop_gives_each_value_its_variable_takes() {
        assert_eq!(passes("for (uint n = 1024; n <= N; n *= 2)"), Some(("n".into(), vec![1024, 2048, 4096, 8192])));
        assert_eq!(passes("for (n = 4096; n < N; n <<= 1)"), Some(("n".into(), vec![4096])));
        assert_eq!(passes("for (int i = 0; i < 3; i++)"), Some(("i".into(), vec![0, 1, 2])));
        assert_eq!(passes("for (int s = N / 2; s > 1024; s /= 2)"), Some(("s".into(), vec![4096, 2048])));
        // A bound the code gives no number for, or a step that is no constant: no passes known.
        assert_eq!(passes("for (int i = 0; i < count; i++)"), None);
        assert_eq!(passes("for (int i = 1; i < N; i *= k)"), None);
    }
}
