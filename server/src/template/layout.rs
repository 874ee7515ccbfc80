//! The layout of the code templatize writes into a user's file: indented with the file's own
//! step, moved blocks re-indented to where they now sit, no needless parentheses, long
//! conditions broken as a person would break them.

use crate::syntax::is_identifier;

/// Lines longer than this are broken where the code allows.
const LINE_WIDTH: usize = 100;

/// The file's indentation step: a tab, or the number of spaces a line opening a block (`{` at
/// its end) most often adds to the next line. Two spaces when the file says nothing.
pub(super) fn indent_step(text: &str) -> String {
    let mut counts = std::collections::BTreeMap::<String, usize>::new();
    let mut previous: Option<&str> = None;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        if let Some(opener) = previous.filter(|p| p.trim_end().ends_with('{')) {
            let (outer, inner) = (leading_whitespace(opener), leading_whitespace(line));
            if let Some(step) = inner.strip_prefix(outer).filter(|s| !s.is_empty()) {
                if step == "\t" || step.chars().all(|c| c == ' ') && step.len() <= 8 {
                    *counts.entry(step.to_string()).or_default() += 1;
                }
            }
        }
        previous = Some(line);
    }
    counts.into_iter().max_by_key(|(step, n)| (*n, std::cmp::Reverse(step.len()))).map_or_else(|| "  ".to_string(), |(step, _)| step)
}

/// The whitespace a line starts with.
pub(super) fn leading_whitespace(line: &str) -> &str {
    &line[..line.len() - line.trim_start().len()]
}

/// `block` (a `{ … }` that starts mid-line) moved `extra` deeper: every line after the first
/// gets `extra` in front, except blank lines and preprocessor lines at the margin.
pub(super) fn shifted(block: &str, extra: &str) -> String {
    let mut lines = block.split('\n');
    let mut out = lines.next().unwrap_or_default().to_string();
    for line in lines {
        out.push('\n');
        if !line.trim().is_empty() && !line.starts_with('#') {
            out.push_str(extra);
        }
        out.push_str(line);
    }
    out
}

/// `expr` as an operand of a binary operator: bare when it is a name or a number, else in
/// parentheses.
pub(super) fn operand(expr: &str) -> String {
    let expr = expr.trim();
    let is_number = expr.chars().next().is_some_and(|c| c.is_ascii_digit()) && expr.chars().all(|c| c.is_ascii_alphanumeric() || c == '.');
    if is_identifier(expr) || is_number { expr.to_string() } else { format!("({expr})") }
}

/// `expr` as a factor of a product (`expr * V`, `n + expr`): bare when it is a name, a member
/// (`threadIdx.x`), a member call without arguments, a number or already a product of those,
/// else in parentheses.
pub(super) fn factor(expr: &str) -> String {
    let expr = expr.trim();
    let simple = expr.split('*').all(|part| {
        let part = part.trim();
        let part = part.strip_suffix("()").unwrap_or(part);
        !part.is_empty() && part.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
    });
    if simple { expr.to_string() } else { format!("({expr})") }
}

/// `head` followed by `terms` joined by ` op `, on one line when it fits in the line width,
/// else one term per line aligned under the first (`op` ending each broken line).
pub(super) fn joined(head: &str, terms: &[String], op: &str, tail: &str) -> String {
    let one_line = format!("{head}{}{tail}", terms.join(&format!(" {op} ")));
    if one_line.len() <= LINE_WIDTH || terms.len() < 2 {
        return one_line;
    }
    let align = " ".repeat(head.len());
    format!("{head}{}{tail}", terms.join(&format!(" {op}\n{align}")))
}

/// `words` as `//` comment lines at `indent`, each broken before the line width.
pub(super) fn comment(indent: &str, words: &str) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut line = format!("{indent}//");
    for word in words.split_whitespace() {
        if line.len() + 1 + word.len() > LINE_WIDTH && line.len() > indent.len() + 2 {
            lines.push(std::mem::replace(&mut line, format!("{indent}//")));
        }
        line.push(' ');
        line.push_str(word);
    }
    lines.push(line);
    lines
}

/// `left = right;` at `indent`, on one line when it fits in the line width, else `right` on the
/// next line, one step deeper.
pub(super) fn assignment(indent: &str, step: &str, left: &str, right: &str) -> String {
    let one_line = format!("{indent}{left} = {right};");
    if one_line.len() <= LINE_WIDTH {
        return one_line;
    }
    format!("{indent}{left} =\n{indent}{step}{right};")
}

/// `for (init; condition; update) {` at `indent`, on one line when it fits in the line width,
/// else one clause a line aligned after `for (`.
pub(super) fn for_header(indent: &str, init: &str, condition: &str, update: &str) -> String {
    let clauses = [format!("{init};"), format!("{condition};"), format!("{update}) {{")];
    let one_line = format!("{indent}for ({} {} {}", clauses[0], clauses[1], clauses[2]);
    if one_line.len() <= LINE_WIDTH {
        return one_line;
    }
    let align = format!("{indent}     ");
    format!("{indent}for ({}\n{align}{}\n{align}{}", clauses[0], clauses[1], clauses[2])
}

/// Whether the file writes its `#pragma`s at the margin rather than indented with the code.
pub(super) fn pragmas_at_margin(text: &str) -> bool {
    let (margin, indented) = text.lines().filter(|l| l.trim_start().starts_with("#pragma")).fold((0, 0), |(m, i), l| if l.starts_with('#') { (m + 1, i) } else { (m, i + 1) });
    margin > indented
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_break_before_the_line_width() {
        let words = "word ".repeat(40);
        let lines = comment("    ", &words);
        assert!(lines.len() > 1 && lines.iter().all(|l| l.len() <= LINE_WIDTH && l.starts_with("    // word")), "{lines:?}");
        assert_eq!(lines.join(" ").matches("word").count(), 40);
        assert_eq!(comment("", "short"), vec!["// short".to_string()]);
    }

    #[test]
    fn a_long_assignment_continues_on_the_next_line() {
        assert_eq!(assignment("  ", "  ", "int a", "b"), "  int a = b;");
        let long = "x".repeat(100);
        assert_eq!(assignment("  ", "  ", "int a", &long), format!("  int a =\n    {long};"));
    }

    #[test]
    fn the_step_is_what_an_opening_brace_adds_most_often() {
        assert_eq!(indent_step("void f() {\n    int a;\n    if (a) {\n        b();\n    }\n}\n"), "    ");
        assert_eq!(indent_step("void f() {\n\tint a;\n}\n"), "\t");
        // Continuation lines aligned under a parenthesis are no step.
        assert_eq!(indent_step("void f(int a,\n       int b) {\n  g(a,\n    b);\n  if (a) {\n    h();\n  }\n}\n"), "  ");
        assert_eq!(indent_step("int x;\n"), "  ");
    }

    #[test]
    fn a_moved_block_keeps_its_shape_one_step_deeper() {
        let block = "{\n    float v = x[i];\n#pragma unroll\n    sum += v;\n\n  }";
        assert_eq!(shifted(block, "  "), "{\n      float v = x[i];\n#pragma unroll\n      sum += v;\n\n    }");
    }

    #[test]
    fn operands_get_parentheses_only_when_they_need_them() {
        assert_eq!(operand("hidden"), "hidden");
        assert_eq!(operand(" 4096 "), "4096");
        assert_eq!(operand("n * 2"), "(n * 2)");
        assert_eq!(operand("p->n"), "(p->n)");
    }

    #[test]
    fn a_long_for_header_breaks_at_its_clauses() {
        assert_eq!(for_header("  ", "int i = 0", "i < n", "++i"), "  for (int i = 0; i < n; ++i) {");
        let long = for_header("    ", "int i_vec = (blockIdx.x * blockDim.x + threadIdx.x) * VEC", "i_vec < i_vec_end", "i_vec += blockDim.x * gridDim.x * VEC");
        assert_eq!(long, "    for (int i_vec = (blockIdx.x * blockDim.x + threadIdx.x) * VEC;\n         i_vec < i_vec_end;\n         i_vec += blockDim.x * gridDim.x * VEC) {");
    }

    #[test]
    fn factors_of_a_product_keep_products_bare() {
        assert_eq!(factor("threadIdx.x"), "threadIdx.x");
        assert_eq!(factor("blockDim.x * gridDim.x"), "blockDim.x * gridDim.x");
        assert_eq!(factor("blockIdx.x * blockDim.x + threadIdx.x"), "(blockIdx.x * blockDim.x + threadIdx.x)");
        assert_eq!(factor("n / 2"), "(n / 2)");
        assert_eq!(factor("warp.thread_rank()"), "warp.thread_rank()");
        assert_eq!(factor("f(n)"), "(f(n))");
    }

    #[test]
    fn long_conjunctions_break_one_term_a_line_aligned_under_the_first() {
        let short = joined("  const bool ok = ", &["a".into(), "b".into()], "&&", ";");
        assert_eq!(short, "  const bool ok = a && b;");
        let terms: Vec<String> = (0..3).map(|i| format!("(unsigned long long)(pointer_number_{i}) % (VEC * sizeof(float)) == 0")).collect();
        let long = joined("  const bool ok = ", &terms, "&&", ";");
        let lines: Vec<&str> = long.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(lines[0].ends_with("== 0 &&") && lines[2].ends_with("== 0;"), "{long}");
        assert_eq!(lines[1].find('('), lines[0].find('('));
    }
}
