//! C host expressions in the spec's language. The scaffold reads grids, blocks, lengths and
//! scalar values from host code; the spec's expressions are Python-like, so what C writes
//! differently is said the spec's way: integer `/` is `//`, a shift is a power of two, a
//! literal drops its suffix (`256u`, `1.0f`), `NULL` is 0, `warpSize` is 32, the `MAX`/`MIN`
//! macros every project defines are the spec's `max`/`min`, and `ceilf`, `floorf`, `fabs` are
//! `ceil`, `floor`, `abs`.

use tree_sitter::Node;

use crate::spec::UNKNOWN;
use crate::syntax::{parse_int_literal, parse_source};

/// What `/` means where the expression is used.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Division {
    /// Integers (sizes, extents, lengths): C's `/` truncates, which is the spec's `//` on the
    /// non-negative values these are.
    Floor,
    /// A floating-point scalar, where `/` is the same in both languages.
    True,
}

/// A declaration whose initialiser is the expression: the grammar parses it alone.
const PREFIX: &str = "long cutune_value = (";

/// Names C programs use for a value the spec writes as a number.
const CONSTANT_NAMES: [(&str, &str); 3] = [("NULL", "0"), ("nullptr", "0"), ("warpSize", "32")];

/// `text`, a C expression, in the spec's language. Text that is not one C expression (it
/// already holds the spec's `//` or `**`, or a `?` for a value still unknown) keeps its words
/// and only has its divisions read as `division` says.
pub(super) fn spec_expression(text: &str, division: Division) -> String {
    let trimmed = text.trim();
    if trimmed.is_empty() || trimmed.contains("//") || trimmed.contains("**") || trimmed == UNKNOWN {
        return divisions(text, division);
    }
    let source = format!("{PREFIX}{trimmed});");
    let tree = parse_source(&source);
    let root = tree.root_node();
    let value = crate::syntax::descendants(root).find(|n| n.kind() == "parenthesized_expression" && n.start_byte() == PREFIX.len() - 1);
    match value.and_then(|v| v.named_child(0)).filter(|_| !root.has_error()) {
        Some(expression) => Converter { source: &source, division }.convert(expression),
        None => divisions(text, division),
    }
}

/// Every `/` of `text` read as `division` says (an existing `//` stays).
fn divisions(text: &str, division: Division) -> String {
    if division == Division::True {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len() + 4);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '/' && chars.peek() != Some(&'/') {
            out.push_str("//");
        } else {
            out.push(c);
            if c == '/' {
                out.push(chars.next().expect("peeked"));
            }
        }
    }
    out
}

struct Converter<'s> {
    source: &'s str,
    division: Division,
}

impl Converter<'_> {
    fn text(&self, node: Node) -> &str {
        &self.source[node.byte_range()]
    }

    fn convert(&self, node: Node) -> String {
        match node.kind() {
            "number_literal" => without_suffix(self.text(node)).to_string(),
            "identifier" => CONSTANT_NAMES.iter().find(|(name, _)| *name == self.text(node)).map_or_else(|| self.text(node).to_string(), |(_, value)| value.to_string()),
            "null" => "0".to_string(),
            "binary_expression" => self.binary(node),
            "call_expression" => self.call(node),
            _ => self.with_children_converted(node),
        }
    }

    /// The node's text with each named child converted in place, the text between them kept.
    fn with_children_converted(&self, node: Node) -> String {
        let mut out = String::new();
        let mut at = node.start_byte();
        let mut cursor = node.walk();
        for child in node.named_children(&mut cursor) {
            out.push_str(&self.source[at..child.start_byte()]);
            out.push_str(&self.convert(child));
            at = child.end_byte();
        }
        out.push_str(&self.source[at..node.end_byte()]);
        out
    }

    fn binary(&self, node: Node) -> String {
        let (Some(left), Some(operator), Some(right)) = (node.child_by_field_name("left"), node.child_by_field_name("operator"), node.child_by_field_name("right")) else {
            return self.with_children_converted(node);
        };
        let power = match operator.kind() {
            "&" => return self.rounded_up(left, right).or_else(|| self.rounded_up(right, left)).unwrap_or_else(|| self.with_children_converted(node)),
            "<<" => "*",
            ">>" => "//",
            "/" if self.division == Division::Floor => {
                let between = |from: usize, to: usize| &self.source[from..to];
                return format!("{}{}//{}{}", self.convert(left), between(left.end_byte(), operator.start_byte()), between(operator.end_byte(), right.start_byte()), self.convert(right));
            }
            _ => return self.with_children_converted(node),
        };
        // C's shifts bind looser than `+` and tighter than comparisons: the left operand keeps
        // its grouping in parentheses, and the power of two takes the right one whole.
        // A shift inside a shift is parenthesised already, as it is not in parentheses of C's.
        let grouped = |operand: Node, text: String| if matches!(operand.kind(), "identifier" | "number_literal" | "parenthesized_expression") || is_shift(operand) { text } else { format!("({text})") };
        let exponent = grouped(right, self.convert(right));
        let shifted = match (power, without_suffix(self.text(left))) {
            ("*", "1") => format!("2 ** {exponent}"),
            _ => format!("{} {power} 2 ** {exponent}", grouped(left, self.convert(left))),
        };
        let in_parentheses = node.parent().is_some_and(|p| p.kind() == "parenthesized_expression" && p.start_byte() >= PREFIX.len());
        if in_parentheses { shifted } else { format!("({shifted})") }
    }

    /// C's rounding up to a power of two, `~0x3f & (x + 0x3f)` or `(x + 63) & ~63`, as
    /// `ceil_div(x, 64) * 64`: `mask` is the complement of one less than the power, `value` the
    /// sum. Any operator that may hold a `&` unparenthesised binds looser than the product.
    fn rounded_up(&self, mask: Node, value: Node) -> Option<String> {
        (mask.kind() == "unary_expression" && self.text(mask.child_by_field_name("operator")?) == "~").then_some(())?;
        let low_bits = parse_int_literal(self.text(mask.child_by_field_name("argument")?))?;
        let power = low_bits.checked_add(1).filter(|p| *p > 0 && (p & (p - 1)) == 0)?;
        let sum = match value.kind() {
            "parenthesized_expression" => value.named_child(0)?,
            _ => value,
        };
        (sum.kind() == "binary_expression" && self.text(sum.child_by_field_name("operator")?) == "+").then_some(())?;
        let (left, right) = (sum.child_by_field_name("left")?, sum.child_by_field_name("right")?);
        let rounded = match (parse_int_literal(self.text(left)), parse_int_literal(self.text(right))) {
            (_, Some(added)) if added == low_bits => left,
            (Some(added), _) if added == low_bits => right,
            _ => return None,
        };
        Some(format!("ceil_div({}, {power}) * {power}", self.convert(rounded)))
    }

    /// `MAX(a, b)`, `std::min<int>(a, b)`, `ceilf(x)`, `fabs(x)`: the spec's `max`, `min`,
    /// `ceil`, `abs`; the libraries' rounded-up divisions (PyTorch's `at::cuda::ATenCeilDiv`,
    /// `at::ceil_div`, CUTLASS's `cutlass::ceil_div`): `ceil_div`.
    fn call(&self, node: Node) -> String {
        let Some(function) = node.child_by_field_name("function") else { return self.with_children_converted(node) };
        let name = self.text(function);
        let bare = name.rsplit("::").next().unwrap_or(name);
        let bare = bare.split('<').next().unwrap_or(bare).trim();
        let spec_name = match bare {
            "MAX" | "Max" | "max" | "fmax" | "fmaxf" => "max",
            "MIN" | "Min" | "min" | "fmin" | "fminf" => "min",
            "ceilf" => "ceil",
            "floorf" => "floor",
            "fabs" | "fabsf" => "abs",
            "ATenCeilDiv" | "ceil_div" | "THCCeilDiv" | "divUp" | "div_up" | "ceildiv" => "ceil_div",
            _ => return self.with_children_converted(node),
        };
        let Some(arguments) = node.child_by_field_name("arguments") else { return self.with_children_converted(node) };
        format!("{spec_name}{}", self.with_children_converted(arguments))
    }
}

fn is_shift(node: Node) -> bool {
    node.kind() == "binary_expression" && node.child_by_field_name("operator").is_some_and(|o| matches!(o.kind(), "<<" | ">>"))
}

/// A C literal without its type suffix: `256u` → `256`, `1.0f` → `1.0`, `0x10UL` → `0x10`.
fn without_suffix(literal: &str) -> &str {
    let is_hex = literal.starts_with("0x") || literal.starts_with("0X");
    let is_float = !is_hex && (literal.contains('.') || literal.contains(['e', 'E']));
    let suffix = |c: char| matches!(c, 'u' | 'U' | 'l' | 'L') || (is_float && matches!(c, 'f' | 'F'));
    literal.trim_end_matches(suffix)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn floor(text: &str) -> String {
        spec_expression(text, Division::Floor)
    }

    #[test]
    fn integer_division_is_floor_division() {
        assert_eq!(floor("(n + B - 1) / B"), "(n + B - 1) // B");
        assert_eq!(floor("a // b / c"), "a // b // c");
        assert_eq!(spec_expression("x / 2.0f", Division::True), "x / 2.0");
    }

    #[test]
    fn literal_suffixes_are_dropped() {
        assert_eq!(floor("256u * n"), "256 * n");
        assert_eq!(floor("1024UL + 0x10ull"), "1024 + 0x10");
        assert_eq!(spec_expression("w * 1.0f / 3.5F", Division::True), "w * 1.0 / 3.5");
        assert_eq!(floor("1e3f"), "1e3");
    }

    #[test]
    fn shifts_are_powers_of_two_with_c_grouping() {
        assert_eq!(floor("1 << log2N"), "(2 ** log2N)");
        assert_eq!(floor("3 << k"), "(3 * 2 ** k)");
        // C reads `a + b << c - 1` as `(a + b) << (c - 1)`.
        assert_eq!(floor("a + b << c - 1"), "((a + b) * 2 ** (c - 1))");
        assert_eq!(floor("n >> 2"), "(n // 2 ** 2)");
        assert_eq!(floor("(N >> 1) / 256"), "(N // 2 ** 1) // 256");
        assert_eq!(floor("1 << n << 2"), "((2 ** n) * 2 ** 2)");
    }

    #[test]
    fn rounding_up_to_a_power_of_two_is_a_multiple_of_a_ceiling_division() {
        assert_eq!(floor("~0x3f & (4 * (W + 2 * R) + 0x3f)"), "ceil_div(4 * (W + 2 * R), 64) * 64");
        assert_eq!(floor("(n + 255u) & ~255"), "ceil_div(n, 256) * 256");
        assert_eq!(floor("2 * ((31 + n) & ~31)"), "2 * (ceil_div(n, 32) * 32)");
        // Not that idiom: a mask that is no power of two less one, or another addend, stays
        // bitwise (and the spec says why it cannot read it).
        assert_eq!(floor("(n + 5) & ~5"), "(n + 5) & ~5");
        assert_eq!(floor("(n + 3) & ~63"), "(n + 3) & ~63");
        assert_eq!(floor("n & 0xff"), "n & 0xff");
    }

    #[test]
    fn names_for_numbers_and_max_min_macros() {
        assert_eq!(floor("NULL"), "0");
        assert_eq!(floor("n / warpSize"), "n // 32");
        assert_eq!(floor("MAX(a * 4, b / 2)"), "max(a * 4, b // 2)");
        assert_eq!(floor("std::min<int>(n, 1024)"), "min(n, 1024)");
        assert_eq!(floor("at::cuda::ATenCeilDiv(n, THREADS)"), "ceil_div(n, THREADS)");
        assert_eq!(floor("std::min(at::ceil_div<int64_t>(n, 256), max_grid)"), "min(ceil_div(n, 256), max_grid)");
        assert_eq!(spec_expression("ceilf(w / 3.0f)", Division::True), "ceil(w / 3.0)");
        // A name that merely contains one of these stays.
        assert_eq!(floor("NULL_COUNT + maxSize"), "NULL_COUNT + maxSize");
    }

    #[test]
    fn text_that_is_not_one_c_expression_only_has_its_divisions_read() {
        assert_eq!(floor("?"), "?");
        assert_eq!(floor("ceil_div(n, 4) // 2 / k"), "ceil_div(n, 4) // 2 // k");
        assert_eq!(floor("x ** 2 / 4"), "x ** 2 // 4");
        assert_eq!(floor("n +"), "n +");
    }
}
