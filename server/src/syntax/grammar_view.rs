//! What the grammar reads of code that leans on the preprocessor.
//!
//! tree-sitter's grammar reads C++ as written, before any macro is expanded, so real kernels
//! that the compiler takes do not parse where a macro stands for a pragma, a loop header or an
//! attribute, or where a pragma stands where the grammar wants a statement. The parser reads a
//! view of the text in which each such shape is written as one the grammar can read, byte for
//! byte the same length (blanks and same-length words), so the tree's ranges still index the
//! real text, which the compiler gets as written:
//!
//! - `__align__(8)` before a struct's name is blanked (the grammar reads `struct __align__(8) S
//!   { … };` as a function);
//! - `#define CHECK() ` with trailing blanks and no value gets a `;` in its last blank (the
//!   grammar would read the next line, an `#endif`, as its value);
//! - a macro alone on its line that stands for a pragma (`CUTLASS_PRAGMA_UNROLL`, `CUTE_UNROLL`,
//!   FlashInfer's and CUTLASS's kernels) is blanked;
//! - a `#pragma` right after a loop's or an `if`'s header, where it stands before the body
//!   (`for (…)` / `#pragma unroll` / `for (…) …`), is blanked: the grammar takes directives only
//!   where a declaration or a statement may stand;
//! - a loop macro (`CUDA_KERNEL_LOOP(i, n) {`, DeepSpeed's and PyTorch's grid-stride loops) is
//!   read as `while (i, n) {`;
//! - `and`, `or` and `not` in an `#if` are read as `&&`, `||` and `!`;
//! - `typename K::Loader(smem).Load(…)`, a temporary of a dependent type, is read without
//!   `typename` (CUB's block loads in causal-conv1d);
//! - an attribute macro on a parameter (`CUTE_GRID_CONSTANT typename Mainloop::Params const p`)
//!   is blanked.

use std::borrow::Cow;

/// `text` as the grammar reads it (see the module). It runs on every edit, so a line is looked
/// at closely only when its first character or a word in it may start a shape of the module's.
pub(super) fn readable(text: &str) -> Cow<'_, str> {
    let mut view = View { text, bytes: None };
    // The last line of code before this one, trimmed, its comment not yet cut.
    let mut previous_line: Option<&str> = None;
    let mut start = 0;
    for line in text.split_inclusive('\n') {
        let line_start = start;
        start += line.len();
        let line = line.trim_end_matches(['\n', '\r']);
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with("//") {
            continue;
        }
        let indent = line.len() - line.trim_start().len();
        let previous_code = || previous_line.map(without_line_comment);
        if trimmed.starts_with('#') {
            if let Some(blank) = blank_after_empty_macro(line) {
                view.put(line_start + blank, b";");
            }
            if let Some(condition) = condition_of_if(trimmed) {
                alternative_tokens(&mut view, line_start + indent + (trimmed.len() - condition.len()), condition);
            }
            if is_pragma(trimmed) && previous_code().is_some_and(opens_a_body) {
                view.blank(line_start + indent, line_start + line.len());
            }
        } else if trimmed.starts_with(|c: char| c.is_ascii_uppercase() || c == '_') {
            let code = without_line_comment(trimmed);
            if is_pragma_macro(code) {
                view.blank(line_start + indent, line_start + indent + code.len());
            } else if let Some(name_len) = loop_macro_name(code, previous_code(), || next_code(&text[start..])) {
                let keyword: &[u8] = if name_len >= "while".len() { b"while" } else { b"if" };
                view.put(line_start + indent, keyword);
                view.blank(line_start + indent + keyword.len(), line_start + indent + name_len);
            }
        }
        if line.contains("__align__") {
            without_alignment(&mut view, line_start, line);
        }
        if line.contains("typename") {
            without_typename_of_temporaries(&mut view, line_start, line);
        }
        if line.contains("GRID_CONSTANT") && !trimmed.starts_with('#') {
            without_attribute_macros(&mut view, line_start, line);
        }
        previous_line = Some(trimmed);
    }
    view.finish()
}

/// The macros' names that `view`, [`readable`] of `text`, blanks or rewrites, with their
/// offsets: names the code uses all the same (a slice keeps their `#define`s).
pub(super) fn hidden_macros(text: &str, view: &Cow<str>) -> Vec<(usize, String)> {
    let Cow::Owned(view) = view else { return Vec::new() };
    let hidden = |word: &str, at: usize| text.as_bytes()[at..at + word.len()] != view.as_bytes()[at..at + word.len()];
    super::words_at(text).filter(|&(word, at)| is_macro_name(word) && hidden(word, at)).map(|(word, at)| (at, word.to_string())).collect()
}

/// The text with the replacements made so far; copied on the first one only.
struct View<'a> {
    text: &'a str,
    bytes: Option<Vec<u8>>,
}

impl<'a> View<'a> {
    fn put(&mut self, at: usize, replacement: &[u8]) {
        self.bytes.get_or_insert_with(|| self.text.as_bytes().to_vec())[at..at + replacement.len()].copy_from_slice(replacement);
    }

    /// Blanks `start..end`, keeping its line breaks.
    fn blank(&mut self, start: usize, end: usize) {
        let bytes = self.bytes.get_or_insert_with(|| self.text.as_bytes().to_vec());
        bytes[start..end].iter_mut().filter(|b| !matches!(**b, b'\n' | b'\r')).for_each(|b| *b = b' ');
    }

    fn finish(self) -> Cow<'a, str> {
        match self.bytes {
            // Only ASCII bytes were written, each over a whole character (a blank, a word, a
            // directive's line), so the bytes stay UTF-8.
            Some(bytes) => Cow::Owned(String::from_utf8(bytes).expect("ASCII written over whole characters")),
            None => Cow::Borrowed(self.text),
        }
    }
}

/// The offset of the last trailing blank of a `#define` line that names a macro and gives it
/// no value (`#define CHECK() `), if the line is one.
fn blank_after_empty_macro(line: &str) -> Option<usize> {
    let directive = line.trim_start().strip_prefix('#')?.trim_start().strip_prefix("define")?;
    let name_and_args = directive.trim();
    let trailing = line.len() - line.trim_end().len();
    if trailing == 0 || !directive.starts_with([' ', '\t']) {
        return None;
    }
    let name_end = name_and_args.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(name_and_args.len());
    let (name, args) = name_and_args.split_at(name_end);
    let args_only = args.is_empty() || (args.starts_with('(') && args.ends_with(')') && !args[1..].contains('('));
    (!name.is_empty() && args_only).then(|| line.len() - 1)
}

/// The condition of an `#if` or `#elif` line, as the tail of `directive`.
fn condition_of_if(directive: &str) -> Option<&str> {
    let rest = directive.strip_prefix('#')?.trim_start();
    let condition = rest.strip_prefix("if").or_else(|| rest.strip_prefix("elif"))?;
    condition.starts_with([' ', '\t', '(', '!']).then_some(condition)
}

/// `and`, `or` and `not` in the condition at `at`, written as the operators they spell.
fn alternative_tokens(view: &mut View, at: usize, condition: &str) {
    for (word, offset) in super::words_at(condition) {
        let operator: &[u8] = match word {
            "and" => b"&& ",
            "or" => b"||",
            "not" => b"!  ",
            _ => continue,
        };
        view.put(at + offset, operator);
    }
}

fn is_pragma(directive: &str) -> bool {
    directive.strip_prefix('#').is_some_and(|rest| rest.trim_start().starts_with("pragma"))
}

/// Whether a `#pragma` after `line` (a line of code, its comment cut) stands where the body of a
/// loop or an `if` goes: after a header that ends with `)`, or after `else` or `do`.
fn opens_a_body(line: &str) -> bool {
    !line.starts_with('#') && (line.ends_with(')') || matches!(line.trim_start_matches('}').trim(), "else" | "do"))
}

/// A macro alone on its line (a comment after it aside) whose name says it stands for a pragma:
/// `CUTLASS_PRAGMA_UNROLL`, `CUTE_UNROLL`, `CUTLASS_PRAGMA_NO_UNROLL`.
pub fn is_pragma_macro(line: &str) -> bool {
    let code = without_line_comment(line.trim());
    is_macro_name(code) && (code.contains("UNROLL") || code.contains("PRAGMA"))
}

fn is_macro_name(word: &str) -> bool {
    word.starts_with(|c: char| c.is_ascii_uppercase() || c == '_') && word.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

/// The length of the name of a loop macro that `line` calls as a loop's header: a macro's name
/// and its arguments alone on a line where a statement starts, with the body's `{` after them
/// or on the next line of code (`CUDA_1D_KERNEL_LOOP(j, N / unroll_factor)`). A call with no
/// `;` before a block is no statement C++ has, so nothing else reads this way.
fn loop_macro_name<'a>(line: &str, previous_code: Option<&str>, next_code: impl FnOnce() -> Option<&'a str>) -> Option<usize> {
    let open = line.find('(')?;
    let name = line[..open].trim_end();
    if !is_macro_name(name) {
        return None;
    }
    let close = open + super::matching_paren(&line[open..])?;
    let after = line[close + 1..].trim();
    let block_follows = after == "{" || (after.is_empty() && next_code().is_some_and(|next| next.starts_with('{')));
    let starts_a_statement = previous_code.is_none_or(|p| p.ends_with([';', '{', '}']) || p.starts_with('#'));
    (block_follows && starts_a_statement).then_some(name.len())
}

/// The first line of code in `text`, trimmed.
fn next_code(text: &str) -> Option<&str> {
    text.lines().map(str::trim).find(|line| !line.is_empty() && !line.starts_with("//"))
}

fn without_line_comment(line: &str) -> &str {
    line.find("//").map_or(line, |at| line[..at].trim_end())
}

/// Each `__align__(N)` of `line` (at `start`) blanked.
fn without_alignment(view: &mut View, start: usize, line: &str) {
    const ATTRIBUTE: &str = "__align__";
    for (at, _) in line.match_indices(ATTRIBUTE) {
        let rest = &line[at + ATTRIBUTE.len()..];
        let open = at + ATTRIBUTE.len() + (rest.len() - rest.trim_start().len());
        let end = match line[open..].starts_with('(').then(|| super::matching_paren(&line[open..])).flatten().map(|close| open + close) {
            Some(close) => close + 1,
            None => at + ATTRIBUTE.len(),
        };
        view.blank(start + at, start + end);
    }
}

/// `typename` blanked before a qualified name called as a temporary's constructor
/// (`typename Ktraits::BlockLoadT(smem_load).Load(…)`): the grammar reads the call without it.
/// In a template's argument list (after `<` or `,`) it names a function type, and stays.
fn without_typename_of_temporaries(view: &mut View, start: usize, line: &str) {
    for (word, at) in super::words_at(line) {
        if word != "typename" || line[..at].trim_end().ends_with(['<', ',']) {
            continue;
        }
        let rest = &line[at + word.len()..];
        let name_len = rest.trim_start().find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':')).unwrap_or(rest.trim_start().len());
        let name = &rest.trim_start()[..name_len];
        if name.contains("::") && rest.trim_start()[name_len..].trim_start().starts_with('(') {
            view.blank(start + at, start + at + word.len());
        }
    }
}

/// Each `…GRID_CONSTANT` macro of `line` (at `start`) blanked: an attribute a macro spells
/// (`CUTE_GRID_CONSTANT` is `__grid_constant__` where the architecture has it).
fn without_attribute_macros(view: &mut View, start: usize, line: &str) {
    for (word, at) in super::words_at(line) {
        if word.ends_with("GRID_CONSTANT") && is_macro_name(word) {
            view.blank(start + at, start + at + word.len());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_macro_with_trailing_blanks_is_closed_and_others_stay() {
        assert_eq!(readable("#define A \n#define B(x) \n#define C 1 \n#define D \\\n  2\n"), "#define A;\n#define B(x);\n#define C 1 \n#define D \\\n  2\n");
    }

    #[test]
    fn alignment_is_blanked_to_its_closing_paren() {
        assert_eq!(readable("struct __align__(8) S { float a; };\n"), "struct              S { float a; };\n");
    }

    #[test]
    fn a_pragma_macro_alone_on_its_line_is_blanked() {
        let text = "  CUTLASS_PRAGMA_UNROLL\n  for (;;) {}\n  CUTE_UNROLL // note\n  DONE\n";
        assert_eq!(readable(text), "                       \n  for (;;) {}\n              // note\n  DONE\n");
    }

    #[test]
    fn a_pragma_is_blanked_only_where_a_body_goes() {
        let text = "for (i = 0; i < 4; ++i)  // rows\n#pragma unroll\n  for (;;) {}\n{\n#pragma unroll\n  for (;;) {}\n}\n";
        let expected = "for (i = 0; i < 4; ++i)  // rows\n              \n  for (;;) {}\n{\n#pragma unroll\n  for (;;) {}\n}\n";
        assert_eq!(readable(text), expected);
        assert_eq!(readable("else\n#pragma unroll\nx();\n"), "else\n              \nx();\n");
    }

    #[test]
    fn a_loop_macro_before_a_block_reads_as_a_while_loop() {
        assert_eq!(readable("x = 0;\nCUDA_1D_KERNEL_LOOP(j, N / 4)\n{\n"), "x = 0;\nwhile              (j, N / 4)\n{\n");
        assert_eq!(readable("{\n  LOOP(i, n) {\n"), "{\n  if  (i, n) {\n");
        // A statement with its `;`, a function's name on its own line, a lower-case call: as written.
        for text in ["{\n  CHECK(x);\n  {\n", "__global__ void\nKERNEL(float *x)\n{\n", "{\n  loop(i, n)\n  {\n"] {
            assert_eq!(readable(text), text);
        }
    }

    #[test]
    fn alternative_tokens_in_a_conditional_are_operators() {
        assert_eq!(readable("#if (defined(A) and (B == 9)) or not C\n"), "#if (defined(A) &&  (B == 9)) || !   C\n");
        assert_eq!(readable("#define and_then 1\nx = a and b;\n"), "#define and_then 1\nx = a and b;\n");
    }

    #[test]
    fn typename_before_a_temporary_is_blanked() {
        let text = "typename K::Load(s).Load(x);\nusing T = typename K::T;\nf<typename K::T(int)>();\n";
        assert_eq!(readable(text), "         K::Load(s).Load(x);\nusing T = typename K::T;\nf<typename K::T(int)>();\n");
    }

    #[test]
    fn a_grid_constant_macro_on_a_parameter_is_blanked() {
        let text = "k(CUTE_GRID_CONSTANT typename M::Params const p,\n#define CUTE_GRID_CONSTANT __grid_constant__\n";
        assert_eq!(readable(text), "k(                   typename M::Params const p,\n#define CUTE_GRID_CONSTANT __grid_constant__\n");
    }

    #[test]
    fn the_macros_the_view_hides_are_named() {
        let text = "CUTLASS_PRAGMA_UNROLL\nfor (;;) {}\nfor (;;)\n#pragma unroll FACTOR\nx();\n{\nLOOP(i, N)\n{\n";
        let hidden = |text| hidden_macros(text, &readable(text));
        assert_eq!(hidden(text), [(0, "CUTLASS_PRAGMA_UNROLL".to_string()), (58, "FACTOR".to_string()), (72, "LOOP".to_string())]);
        assert!(hidden("#if A and B\n#endif\n").is_empty());
    }

    #[test]
    fn text_with_nothing_to_change_is_borrowed() {
        assert!(matches!(readable("__global__ void k(float *x) { x[0] = 1.0f; }\n"), Cow::Borrowed(_)));
    }
}
