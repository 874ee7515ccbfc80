//! Function-like macros of a file expanded where it invokes them, for reading host code: a
//! project that writes its launchers with a macro (`TORCH_BINDING(f32, float, 1)` defining
//! `void add_f32(torch::Tensor a, …) { … add_f32_kernel<<<grid, block>>>(…); }`) and binds them
//! with another (`BIND(add_f32)` as `m.def("add_f32", &add_f32)`) has its launches and
//! bindings only in the expansion.
//!
//! Only invocations of macros whose body launches a kernel or binds a function are expanded,
//! each onto the line it starts on (a macro's body is one logical line), so every other line
//! keeps its number. Inside an expansion, every function-like macro of the file is expanded
//! too (`STRINGFY(func)` as `"func"`), as the preprocessor rescans.

use std::collections::HashMap;

use tree_sitter::Node;

use super::descendants;

/// What a macro body holds when it launches a kernel or binds a function for Python.
pub const CODE_WRITING_WORDS: [&str; 3] = ["<<<", ".def(", ".impl("];

/// How deep expansions inside expansions go: a macro that (wrongly) expands to itself stops.
const MAX_DEPTH: usize = 8;

/// A function-like macro: its parameters (`...` for the variadic rest) and its body on one line.
#[derive(Clone, Debug)]
struct Macro {
    params: Vec<String>,
    body: String,
}

impl Macro {
    /// Whether its body declares something (`constexpr int VEC = 4;`, `using scalar_t = float;`):
    /// a dispatch, which declares what the code it is given instantiates with.
    fn declares(&self) -> bool {
        ["constexpr ", "using ", "typedef "].iter().any(|w| self.body.contains(w))
    }

    /// The names its body declares (`scalar_t_in` of `using scalar_t_in = float;`, `VEC` of
    /// `constexpr int VEC = 4;`): code given to it that names one is instantiated by it.
    fn declared_names(&self) -> Vec<&str> {
        let mut names = Vec::new();
        for statement in self.body.split([';', '{', '}']) {
            let statement = statement.trim();
            let declared = match statement.strip_prefix("using ") {
                Some(alias) => alias.split_once('=').map(|(name, _)| name.trim()),
                None if statement.starts_with("typedef ") => statement.rsplit(|c: char| c.is_whitespace() || c == '*').next(),
                None if statement.starts_with("constexpr ") => statement.split_once('=').and_then(|(declaration, _)| declaration.split_whitespace().last()),
                None => None,
            };
            names.extend(declared.filter(|name| super::is_identifier(name)));
        }
        names
    }
}

/// What a call launches a kernel through: a dispatch macro given code that holds one of these
/// is expanded where it is invoked.
pub const LAUNCH_WORDS: [&str; 3] = ["<<<", "cudaLaunchKernel", "cuLaunchKernel"];

/// Function-like macros by name: those of the headers a file includes, which its own add to.
#[derive(Clone, Debug, Default)]
pub struct Macros(HashMap<String, Macro>);

impl Macros {
    /// The function-like macros `text` defines, read line by line (a header is not parsed for
    /// them); the first definition of a name stays.
    pub fn add_defined_in(&mut self, text: &str) {
        let mut at = 0;
        for line in text.split_inclusive('\n') {
            let start = at;
            at += line.len();
            if line.trim_start().starts_with('#') {
                if let Some((name, found)) = function_macro(&text[directive_range(text, start)]) {
                    self.0.entry(name).or_insert(found);
                }
            }
        }
    }

    /// The macros of `other` this does not define yet: those of a header read after.
    pub fn add_all(&mut self, other: &Macros) {
        for (name, found) in &other.0 {
            self.0.entry(name.clone()).or_insert_with(|| found.clone());
        }
    }

    /// Whether `text` invokes one of these that [`expand_code_writing_macros`] may expand: a
    /// dispatch, or one that writes a launch or a binding. Most files invoke none, and are not
    /// parsed again to find out.
    pub fn may_expand_in(&self, text: &str) -> bool {
        let writing = code_writing(&self.0);
        let expanding: std::collections::HashSet<&str> = self.0.iter().filter(|(name, m)| m.declares() || writing.contains(name.as_str())).map(|(name, _)| name.as_str()).collect();
        !expanding.is_empty() && identifiers(text).any(|(word, _)| expanding.contains(word))
    }
}

/// `text` with the invocations of its launch- or binding-writing macros expanded, and those of
/// dispatch macros (its own or `included`) given a block that launches a kernel
/// (`DISPATCH_VEC(vec, VEC, { auto kernel = k<VEC, T>; cudaLaunchKernelEx(…); })`, each `case`
/// declaring `constexpr int VEC = 4;`); `None` when it has none.
pub fn expand_code_writing_macros(text: &str, root: Node, included: &Macros) -> Option<String> {
    let own = function_macros_in_order(text, root);
    let mut macros = included.0.clone();
    macros.extend(own.iter().filter_map(|(name, defined)| Some((name.clone(), defined.last()?.1.clone()))));
    let writing = code_writing(&macros);
    // A dispatch declares what the block it is given instantiates with: one is expanded where
    // the block launches, or names what a case declares (apex's `DISPATCH_…_INOUT_TYPES(…,
    // HostApplyLayerNorm<scalar_t_in, accscalar_t, scalar_t_out>(…))`, whose launch is a call away).
    let dispatches = |name: &str, start: usize| {
        let Some(dispatch) = macros.get(name).filter(|m| m.declares()) else { return false };
        let declared = dispatch.declared_names();
        let instantiates = |arg: &String| LAUNCH_WORDS.iter().any(|w| arg.contains(w)) || identifiers(arg).any(|(word, _)| declared.contains(&word));
        invocation_arguments(text, start + name.len()).is_some_and(|(args, _)| args.iter().any(instantiates))
    };
    let skipped: Vec<std::ops::Range<usize>> = descendants(root)
        .filter(|n| matches!(n.kind(), "preproc_def" | "preproc_function_def" | "comment" | "string_literal" | "raw_string_literal"))
        .map(|n| if n.kind().starts_with("preproc") { directive_range(text, n.start_byte()) } else { n.byte_range() })
        .collect();
    // A macro that writes a definition, invoked at file scope, is expanded too, even where it
    // writes no launch: left as written, a run of such invocations with no `;` between them
    // parses as one broken declaration that swallows the definitions after it.
    let defining = defining(&macros);
    let bodies = bodies(text, &skipped);
    let at_file_scope = |start: usize| !bodies.iter().any(|r| r.contains(&start));
    // A dispatch handed the macro it applies to each type (`DISPATCH_BY_DTYPE(dtype, CALL_LAUNCHER)`
    // invoking `fn(float)`, `fn(half)`, where `CALL_LAUNCHER(T)` calls `launcher<T>(…)`): the
    // calls are only in the expansion.
    let hands_a_macro = |name: &str, start: usize| invocation_arguments(text, start + name.len()).is_some_and(|(args, _)| args.iter().any(|arg| macros.contains_key(arg.trim())));
    // The invocations in code, not those in other directives, comments or strings.
    let expands = |name: &str, start: usize| {
        let writes = writing.contains(name) || (defining.contains(name) && at_file_scope(start));
        (writes || dispatches(name, start) || hands_a_macro(name, start)) && !skipped.iter().any(|r| r.contains(&start))
    };
    // A name the file defines more than once (in each branch of an `#ifndef … #else`, one
    // launching with raw pointers and one with tensors) is expanded as the definition before
    // the invocation says.
    let definition_at = |name: &str, at: usize| match own.get(name) {
        Some(defined) => defined.iter().rev().find(|(start, _)| *start <= at).or(defined.first()).map(|(_, found)| found),
        None => macros.get(name),
    };
    // The lines an invocation spanned stay lines, so that those after keep their numbers.
    splice_expansions(text, &definition_at, &expands, true, &[], 0)
}

/// The macros that write a launch or a binding, themselves or through a macro that does
/// (`DISPATCH(N, K)` whose `switch` invokes `LAUNCH(64)`, which launches).
fn code_writing(macros: &HashMap<String, Macro>) -> std::collections::HashSet<&str> {
    let mut writing: std::collections::HashSet<&str> = macros.iter().filter(|(_, m)| CODE_WRITING_WORDS.iter().any(|w| m.body.contains(w))).map(|(n, _)| n.as_str()).collect();
    loop {
        let more: Vec<&str> = macros.iter().filter(|(n, m)| !writing.contains(n.as_str()) && identifiers(&m.body).any(|(w, _)| writing.contains(w))).map(|(n, _)| n.as_str()).collect();
        if more.is_empty() {
            return writing;
        }
        writing.extend(more);
    }
}

/// The braced bodies of `text` (functions, classes, initialisers), found by matching braces
/// outside `skipped`: the tree cannot say where they are when unexpanded invocations broke it.
/// A namespace's or an `extern "C"` block's braces are no body.
fn bodies(text: &str, skipped: &[std::ops::Range<usize>]) -> Vec<std::ops::Range<usize>> {
    let mut skipped = skipped.to_vec();
    skipped.sort_by_key(|r| r.start);
    let mut next_skipped = skipped.iter().peekable();
    let (mut open, mut out, mut resume) = (Vec::new(), Vec::new(), 0);
    for (at, c) in text.char_indices() {
        while next_skipped.peek().is_some_and(|r| r.start <= at) {
            resume = resume.max(next_skipped.next().map_or(0, |r| r.end));
        }
        if at < resume {
            continue;
        }
        match c {
            '{' => {
                let before = text[..at].trim_end();
                // `namespace`, `namespace name` or `extern "C"` right before the brace.
                let name_start = before.trim_end_matches(|c: char| c.is_ascii_alphanumeric() || c == '_').len();
                let scope = before.ends_with("extern \"C\"") || before.ends_with("namespace") || before[..name_start].trim_end().ends_with("namespace");
                open.push((at, scope));
            }
            '}' => {
                if let Some((start, false)) = open.pop() {
                    out.push(start..at + 1);
                }
            }
            _ => {}
        }
    }
    out
}

/// The macros whose body is a definition: it ends with the `}` of a body.
fn defining(macros: &HashMap<String, Macro>) -> std::collections::HashSet<&str> {
    macros.iter().filter(|(_, m)| m.body.ends_with('}') && m.body.contains(") {")).map(|(n, _)| n.as_str()).collect()
}

/// The file's function-like macros that take the address of an argument (`#define FLOAT4(v)
/// (reinterpret_cast<float4 *>(&(v))[0])`): an element passed to one is read or written as part
/// of a wider value, which must stay aligned.
pub fn address_taking_macros(text: &str, root: Node) -> std::collections::HashSet<String> {
    let takes_address = |m: &Macro| m.params.iter().any(|p| m.body.contains(&format!("&({p})")) || identifiers(&m.body).any(|(w, at)| w == p && m.body[..at].trim_end().ends_with('&')));
    function_macros(text, root).into_iter().filter(|(_, m)| takes_address(m)).map(|(name, _)| name).collect()
}

/// `code` (a part of `text`, a kernel's body) with each invocation of the file's address-taking
/// macros written out (`LDST64BITS(r[0])` as `(reinterpret_cast<float2 *>(&(r[0]))[0])`), so
/// that the wider value it reads is in sight.
pub fn with_address_taking_macros_expanded(text: &str, root: Node, code: &str) -> String {
    let macros = function_macros(text, root);
    let wide = address_taking_macros(text, root);
    let definition_at = |name: &str, _| macros.get(name).filter(|_| wide.contains(name));
    splice_expansions(code, &definition_at, &|_, _| true, false, &[], 0).unwrap_or_else(|| code.to_string())
}

/// The file's function-like macros by name, their bodies joined onto one line without comments.
/// Read from each directive's text: tree-sitter parses a body with a comment in it as an error.
fn function_macros(text: &str, root: Node) -> HashMap<String, Macro> {
    function_macros_in_order(text, root).into_iter().filter_map(|(name, mut defined)| Some((name, defined.pop()?.1))).collect()
}

/// The file's function-like macros by name, each definition with its offset, in the file's order.
fn function_macros_in_order(text: &str, root: Node) -> HashMap<String, Vec<(usize, Macro)>> {
    let mut macros: HashMap<String, Vec<(usize, Macro)>> = HashMap::new();
    for node in descendants(root).filter(|n| matches!(n.kind(), "preproc_def" | "preproc_function_def")) {
        if let Some((name, found)) = function_macro(&text[directive_range(text, node.start_byte())]) {
            macros.entry(name).or_default().push((node.start_byte(), found));
        }
    }
    macros
}

/// The directive starting at `start`: to the end of its last continued line. (tree-sitter may
/// end the node early at a comment in the body.)
fn directive_range(text: &str, start: usize) -> std::ops::Range<usize> {
    let mut end = start;
    for line in text[start..].split_inclusive('\n') {
        end += line.len();
        if !line.trim_end().ends_with('\\') {
            break;
        }
    }
    start..end
}

/// `#define NAME(a, b) body` as its name and [`Macro`]; `None` for an object-like macro.
fn function_macro(directive: &str) -> Option<(String, Macro)> {
    let rest = directive.trim_start().strip_prefix('#')?.trim_start().strip_prefix("define")?.trim_start();
    let name_end = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))?;
    let (name, rest) = rest.split_at(name_end);
    // A function-like macro's `(` follows its name at once.
    let params_text = rest.strip_prefix('(')?;
    let close = params_text.find(')')?;
    let params = one_line(&params_text[..close]).split(',').map(|p| p.trim().to_string()).filter(|p| !p.is_empty()).collect();
    Some((name.to_string(), Macro { params, body: one_line(&params_text[close + 1..]) }))
}

/// A macro body as the preprocessor sees it: continuations joined, comments gone.
fn one_line(body: &str) -> String {
    let mut out = String::with_capacity(body.len());
    let mut chars = body.chars().peekable();
    let mut quote: Option<char> = None;
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), _) => {
                out.push(c);
                if c == '\\' {
                    out.extend(chars.next());
                } else if c == q {
                    quote = None;
                }
            }
            (None, '"' | '\'') => {
                quote = Some(c);
                out.push(c);
            }
            (None, '\\') if chars.peek().is_some_and(|n| *n == '\n' || *n == '\r') => {
                while chars.peek().is_some_and(|n| *n == '\n' || *n == '\r') {
                    chars.next();
                }
                out.push(' ');
            }
            (None, '/') if chars.peek() == Some(&'/') => {
                // To the end of the physical line; a continuation there still joins the next.
                while chars.peek().is_some_and(|n| *n != '\n' && *n != '\\') {
                    chars.next();
                }
            }
            (None, '/') if chars.peek() == Some(&'*') => {
                chars.next();
                let mut previous = ' ';
                for inner in chars.by_ref() {
                    if previous == '*' && inner == '/' {
                        break;
                    }
                    previous = inner;
                }
                out.push(' ');
            }
            (None, c) if c.is_whitespace() => out.push(' '),
            _ => out.push(c),
        }
        // Runs of blanks outside literals are one, as the preprocessor's tokens have them.
        if quote.is_none() && out.ends_with("  ") {
            out.pop();
        }
    }
    out.trim().to_string()
}

/// Each identifier of `text` with its offset.
fn identifiers(text: &str) -> impl Iterator<Item = (&str, usize)> {
    super::words_at(text).filter(|(word, _)| !word.starts_with(|c: char| c.is_ascii_digit()))
}

/// The arguments of an invocation whose name ends at `after`: `(a, f(b, c))` gives `a` and
/// `f(b, c)`, and the offset past the `)`. `None` where no `(` follows.
fn invocation_arguments(text: &str, after: usize) -> Option<(Vec<String>, usize)> {
    let open = after + text[after..].len() - text[after..].trim_start().len();
    if !text[open..].starts_with('(') {
        return None;
    }
    let mut depth = 0;
    let mut args = Vec::new();
    let mut start = open + 1;
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for (i, c) in text[open..].char_indices().map(|(i, c)| (open + i, c)) {
        if let Some(q) = quote {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                _ if c == q => quote = None,
                _ => {}
            }
            continue;
        }
        match c {
            '"' | '\'' => quote = Some(c),
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => {
                depth -= 1;
                if depth == 0 {
                    args.push(text[start..i].trim().to_string());
                    if args.len() == 1 && args[0].is_empty() {
                        args.clear();
                    }
                    return Some((args, i + 1));
                }
            }
            ',' if depth == 1 => {
                args.push(text[start..i].trim().to_string());
                start = i + 1;
            }
            _ => {}
        }
    }
    None
}

/// The body of `found` with its parameters replaced by `args`: `#p` is the argument quoted,
/// `a ## b` pastes, `__VA_ARGS__` is the arguments past the named ones.
fn substitute(found: &Macro, args: &[String]) -> String {
    let value_of = |name: &str| -> Option<String> {
        if name == "__VA_ARGS__" {
            let named = found.params.iter().filter(|p| *p != "...").count();
            return found.params.iter().any(|p| p == "...").then(|| args.get(named..).unwrap_or_default().join(", "));
        }
        let index = found.params.iter().position(|p| p == name)?;
        Some(args.get(index).cloned().unwrap_or_default())
    };
    let body = &found.body;
    let mut out = String::with_capacity(body.len() * 2);
    let mut copied = 0;
    for (word, start) in identifiers(body) {
        let Some(value) = value_of(word) else { continue };
        let before = body[..start].trim_end();
        let stringified = before.ends_with('#') && !before.ends_with("##");
        let cut = if stringified { before.len() - 1 } else { start };
        if cut < copied {
            continue;
        }
        out.push_str(&body[copied..cut]);
        if stringified {
            out.push_str(&format!("\"{}\"", value.replace('\\', "\\\\").replace('"', "\\\"")));
        } else {
            out.push_str(&value);
        }
        copied = start + word.len();
    }
    out.push_str(&body[copied..]);
    paste_tokens(&out)
}

/// `a ## b` as `ab`.
fn paste_tokens(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("##") {
        out.push_str(rest[..at].trim_end());
        rest = rest[at + 2..].trim_start();
    }
    out.push_str(rest);
    out
}

/// `text` with each invocation of a macro that `expands` accepts (by name and offset) replaced
/// by its expansion, `definition_at` giving the macro in effect at an offset, in which the
/// preprocessor's rescan expands every macro but the `active` ones (those being expanded), as
/// defined where the outer invocation is; with `keep_lines`, an invocation over several lines
/// leaves as many newlines after its expansion. `None` when nothing was expanded.
fn splice_expansions<'m>(text: &str, definition_at: &dyn Fn(&str, usize) -> Option<&'m Macro>, expands: &dyn Fn(&str, usize) -> bool, keep_lines: bool, active: &[&str], depth: usize) -> Option<String> {
    if depth >= MAX_DEPTH {
        return None;
    }
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    for (name, start) in identifiers(text) {
        let Some(found) = definition_at(name, start).filter(|_| !active.contains(&name)) else { continue };
        if start < copied || !expands(name, start) {
            continue;
        }
        let Some((args, end)) = invocation_arguments(text, start + name.len()) else { continue };
        // An argument over several lines (a dispatch's block) joins the one line the expansion
        // is, its comments gone, so that the lines after keep their numbers.
        let args: Vec<String> = args.iter().map(|a| one_line(a)).collect();
        let active: Vec<&str> = active.iter().copied().chain([name]).collect();
        let replacement = substitute(found, &args);
        let rescanned = |inner: &str, at: usize| !in_string(&inner[..at]);
        let defined_here = |inner: &str, _| definition_at(inner, start);
        let with_rescan = |body: &str| splice_expansions(body, &defined_here, &|_, at| rescanned(body, at), false, &active, depth + 1);
        out.push_str(&text[copied..start]);
        out.push_str(&with_rescan(&replacement).unwrap_or(replacement));
        if keep_lines {
            out.extend(std::iter::repeat_n('\n', text[start..end].matches('\n').count()));
        }
        copied = end;
    }
    if copied == 0 {
        return None;
    }
    out.push_str(&text[copied..]);
    Some(out)
}

/// Whether the end of `before` is inside a string literal (an odd number of unescaped quotes).
fn in_string(before: &str) -> bool {
    let mut inside = false;
    let mut escaped = false;
    for c in before.chars() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '"' => inside = !inside,
            _ => {}
        }
    }
    inside
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expanded(text: &str) -> Option<String> {
        let doc = crate::syntax::Document::new(text.to_string());
        expand_code_writing_macros(text, doc.tree().unwrap().root_node(), &Macros::default())
    }

    #[test]
    fn an_invocation_expands_the_definition_before_it() {
        // One definition per branch of the build, the second launching with tensors' data: the
        // first branch's launcher is its own definition's.
        let text = "\
#ifndef TORCH_BUILD
#define LAUNCH(n) k<(n)><<<1, 32>>>(a, b);
void run(float *a, float *b) { LAUNCH(4) }
#else
#define LAUNCH(n) k<(n)><<<1, 32>>>(x.data_ptr(), y.data_ptr());
void run(torch::Tensor x, torch::Tensor y) { LAUNCH(8) }
#endif
";
        let out = expanded(text).unwrap();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[2], "void run(float *a, float *b) { k<(4)><<<1, 32>>>(a, b); }");
        assert_eq!(lines[5], "void run(torch::Tensor x, torch::Tensor y) { k<(8)><<<1, 32>>>(x.data_ptr(), y.data_ptr()); }");
    }

    #[test]
    fn a_dispatch_handed_a_macro_is_expanded_with_the_calls_it_applies() {
        let text = "\
#define DISPATCH_BY_DTYPE(dtype, fn) { if (dtype == kHalf) { fn(half); } else { fn(float); } }
#define CALL_LAUNCHER(T) { launcher<T>(out, in); }
void run(torch::Tensor out, torch::Tensor in) { DISPATCH_BY_DTYPE(out.scalar_type(), CALL_LAUNCHER); }
void other() { CALL_LAUNCHER(int); }
";
        let out = expanded(text).unwrap();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[2], "void run(torch::Tensor out, torch::Tensor in) { { if (out.scalar_type() == kHalf) { { launcher<half>(out, in); }; } else { { launcher<float>(out, in); }; } }; }");
        // Invoked alone, a macro that only calls is left as written.
        assert_eq!(lines[3], "void other() { CALL_LAUNCHER(int); }");
    }

    #[test]
    fn a_launcher_written_by_a_macro_is_expanded_on_the_invocations_line() {
        let text = "\
#define STRINGFY(str) #str
#define BIND(func) m.def(STRINGFY(func), &func, STRINGFY(func));
#define LAUNCHER(packed, element, \\
                 n) \\
  void relu_##packed(torch::Tensor x) { \\
    dim3 block(256 / (n)); /* threads */ \\
    relu_##packed##_kernel<<<1, block>>>(reinterpret_cast<element *>(x.data_ptr())); \\
  }

// LAUNCHER(not, an, invocation)
LAUNCHER(f32, float, 1)
LAUNCHER(f16x2,
         half, 2)
int after = 1;
PYBIND11_MODULE(ext, m) {
  BIND(relu_f32)
}
";
        let out = expanded(text).unwrap();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), text.lines().count());
        assert_eq!(lines[9], "// LAUNCHER(not, an, invocation)");
        assert_eq!(lines[10], "void relu_f32(torch::Tensor x) { dim3 block(256 / (1)); relu_f32_kernel<<<1, block>>>(reinterpret_cast<float *>(x.data_ptr())); }");
        assert!(lines[11].starts_with("void relu_f16x2(torch::Tensor x) {") && lines[11].contains("relu_f16x2_kernel<<<1, block>>>(reinterpret_cast<half *>"), "{}", lines[11]);
        assert_eq!(lines[12], "");
        assert_eq!(lines[13], "int after = 1;");
        assert_eq!(lines[15].trim(), "m.def(\"relu_f32\", &relu_f32, \"relu_f32\");");
    }

    #[test]
    fn a_dispatch_is_expanded_where_its_block_names_what_the_cases_declare() {
        let mut included = Macros::default();
        included.add_defined_in("#define DISPATCH_INOUT(TIN, TOUT, ...) \\\n  switch (TIN) { \\\n  case kFloat: { using in_t = float; switch (TOUT) { case kHalf: { using out_t = __half; __VA_ARGS__; break; } } break; } \\\n  }\n#define DISPATCH_ONE(T, ...) switch (T) { case kFloat: { using one_t = float; __VA_ARGS__; break; } }\n");
        let text = "\
void norm(Tensor x, Tensor y) {
  DISPATCH_INOUT(x.scalar_type(), y.scalar_type(), using acc_t = float; apply<in_t, acc_t, out_t>(y, x););
  DISPATCH_ONE(x.scalar_type(), other<float>(x););
}
";
        let doc = crate::syntax::Document::new(text.to_string());
        let out = expand_code_writing_macros(text, doc.tree().unwrap().root_node(), &included).unwrap();
        // The call that instantiates `in_t` and `out_t` is made in each case that declares them;
        // code that names nothing a case declares is left as written.
        assert_eq!(out.lines().nth(1), Some("  switch (x.scalar_type()) { case kFloat: { using in_t = float; switch (y.scalar_type()) { case kHalf: { using out_t = __half; using acc_t = float; apply<in_t, acc_t, out_t>(y, x);; break; } } break; } };"));
        assert_eq!(out.lines().nth(2), Some("  DISPATCH_ONE(x.scalar_type(), other<float>(x););"));
    }

    #[test]
    fn a_dispatch_of_an_included_header_is_expanded_where_its_block_launches() {
        let mut included = Macros::default();
        included.add_defined_in("#pragma once\n#define DISPATCH_VEC(v, VEC, ...) \\\n  switch (v) { \\\n  case 4: { constexpr int VEC = 4; __VA_ARGS__ break; } \\\n  }\n#define CHECK(call) { cudaError_t e = (call); if (e) return e; }\n");
        let text = "\
cudaError_t f(int v, cudaLaunchConfig_t config) {
  DISPATCH_VEC(v, VEC, {
    auto kernel = k<VEC>;
    CHECK(cudaLaunchKernelEx(&config, kernel, n));
  });
  CHECK(cudaLaunchKernelEx(&config, other, n));
  return cudaSuccess;
}
";
        let doc = crate::syntax::Document::new(text.to_string());
        let out = expand_code_writing_macros(text, doc.tree().unwrap().root_node(), &included).unwrap();
        // The dispatch on its line, its block's lines kept as lines; the wrapper inside it expanded
        // by the rescan, the one outside (a wrapper declares nothing) left as written.
        assert_eq!(out.lines().nth(1), Some("  switch (v) { case 4: { constexpr int VEC = 4; { auto kernel = k<VEC>; { cudaError_t e = (cudaLaunchKernelEx(&config, kernel, n)); if (e) return e; }; } break; } }"));
        assert_eq!(out.lines().count(), text.lines().count());
        assert_eq!(out.lines().nth(5), Some("  CHECK(cudaLaunchKernelEx(&config, other, n));"));
    }

    #[test]
    fn a_macro_that_invokes_a_launching_macro_is_expanded_with_it() {
        let text = "\
#define LAUNCH(K) norm<(K)><<<grid, block>>>( /* rows */ \\
    x, (K));
#define DISPATCH(N, K) \\
  dim3 grid((N)); \\
  switch ((K)) { \\
  case 64: LAUNCH(64) break; \\
  }
void norm_f32(torch::Tensor x) {
  const int N = x.size(0);
  DISPATCH(N, x.size(1))
}
";
        let out = expanded(text).unwrap();
        assert_eq!(out.lines().nth(9), Some("  dim3 grid((N)); switch ((x.size(1))) { case 64: norm<(64)><<<grid, block>>>( x, (64)); break; }"));
    }

    #[test]
    fn definitions_a_macro_writes_at_file_scope_are_expanded_though_they_launch_nothing() {
        // xlite-dev/LeetCUDA: a formatter wrote one launcher macro's `<<<` as `< < <`.
        let text = "\
#define BIND(func) m.def(#func, &func);
#define LAUNCHER(tag) void copy_##tag(torch::Tensor x) { copy_##tag##_kernel<<<1, 32>>>(x); }
#define BROKEN(tag) void copy_##tag##2d(torch::Tensor x) { copy_##tag##2d_kernel < < < 1, 32 >>> (x); }
#define CHECK(x) if (!(x)) { throw 1; }
LAUNCHER(f32)
BROKEN(f32)
namespace ops { BROKEN(f16) }
void run(torch::Tensor x) {
  CHECK(x.is_cuda())
}
PYBIND11_MODULE(ext, m) {
  BIND(copy_f32)
}
";
        let out = expanded(text).unwrap();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[5], "void copy_f322d(torch::Tensor x) { copy_f322d_kernel < < < 1, 32 >>> (x); }");
        assert_eq!(lines[6], "namespace ops { void copy_f162d(torch::Tensor x) { copy_f162d_kernel < < < 1, 32 >>> (x); } }");
        assert_eq!(lines[8], "  CHECK(x.is_cuda())", "a macro inside a function body is left as written");
        let doc = crate::syntax::Document::new(out.clone());
        let bindings = crate::syntax::python::bindings(doc.text(), doc.tree().unwrap().root_node());
        assert_eq!(bindings.iter().map(|b| b.cpp.as_str()).collect::<Vec<_>>(), ["copy_f32"], "{out}");
    }

    #[test]
    fn bodies_are_braces_other_than_namespaces_and_extern_c_blocks() {
        let text = "namespace {\nvoid f() { int a[] = {1}; }\n}\nnamespace ops {\n}\nextern \"C\" {\n}\nstruct S { int x; };\n";
        let found: Vec<&str> = bodies(text, &[]).into_iter().map(|r| &text[r]).collect();
        assert_eq!(found, ["{1}", "{ int a[] = {1}; }", "{ int x; }"]);
    }

    #[test]
    fn files_without_code_writing_macros_are_left_alone() {
        assert_eq!(expanded("#define CEIL(a, b) (((a) + (b) - 1) / (b))\nint n = CEIL(10, 3);\n"), None);
        assert_eq!(expanded("#define LAUNCH(k) k<<<1, 1>>>()\n"), None, "defined, never invoked");
    }

    #[test]
    fn variadic_arguments_and_nested_parentheses_pass_through() {
        let text = "#define RUN(kernel, ...) kernel<<<1, 32>>>(__VA_ARGS__)\nvoid go() { RUN(scale, f(a, b), n); }\n";
        let out = expanded(text).unwrap();
        assert_eq!(out.lines().nth(1), Some("void go() { scale<<<1, 32>>>(f(a, b), n); }"));
    }
}
