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

#[cfg(test)]
mod tests {
    use super::*;

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
