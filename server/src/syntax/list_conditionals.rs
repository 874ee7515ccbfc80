//! Conditionals inside a parenthesised list, settled for the parser.
//!
//! Real code switches a kernel's parameters, and the launch's arguments with them, by a
//! preprocessor conditional in the middle of the list:
//!
//! ```c
//! __global__ void pad(float *dst, int w
//! #if (USE_TEXTURE)
//!                     , cudaTextureObject_t tex
//! #endif
//! )
//! ```
//!
//! The grammar takes `#if` only where a declaration or a statement may stand, so such a kernel
//! does not parse. The parser reads a view of the text in which each conditional that opens
//! inside parentheses is settled the way the preprocessor would settle it with the file's own
//! `#define`s (a name the file does not define is 0, as in C): its directive lines and the
//! branches not taken are blanked byte for byte, so the tree's ranges still index the real text,
//! which the compiler gets with its conditionals.

use std::borrow::Cow;
use std::collections::HashMap;

use super::consteval;

/// Object-like macros by name, with their values as written.
pub type Defines = HashMap<String, String>;

/// `text` with every conditional that opens inside parentheses settled (see the module), with
/// `included` defined before the file's own, or `text` itself when there is none.
pub(super) fn settled_in_lists<'a>(text: &'a str, included: &Defines) -> Cow<'a, str> {
    if !text.contains("#if") {
        return Cow::Borrowed(text);
    }
    let mut blanked: Vec<(usize, usize)> = Vec::new();
    let mut defines = included.clone();
    let mut groups: Vec<Group> = Vec::new();
    let mut depth = 0i32;
    let mut in_comment = false;
    let mut start = 0;
    for line in text.split_inclusive('\n') {
        let end = start + line.len();
        let live = groups.last().is_none_or(|g| g.live);
        match directive(line).filter(|_| !in_comment) {
            Some(Directive::If(condition)) => {
                let settled = depth > 0;
                let holds = settled && holds(&condition, &defines);
                groups.push(Group { settled, parent_live: live, taken: holds, live: live && (holds || !settled) });
                if settled {
                    blanked.push((start, end));
                }
            }
            Some(Directive::Elif(condition)) => {
                if let Some(g) = groups.last_mut().filter(|g| g.settled) {
                    let holds = !g.taken && holds(&condition, &defines);
                    g.taken |= holds;
                    g.live = g.parent_live && holds;
                    blanked.push((start, end));
                }
            }
            Some(Directive::Else) => {
                if let Some(g) = groups.last_mut().filter(|g| g.settled) {
                    g.live = g.parent_live && !g.taken;
                    g.taken = true;
                    blanked.push((start, end));
                }
            }
            Some(Directive::Endif) => {
                if groups.pop().is_some_and(|g| g.settled) {
                    blanked.push((start, end));
                }
            }
            Some(Directive::Define(name, value)) if live => {
                defines.insert(name, value);
            }
            Some(Directive::Undef(name)) if live => {
                defines.remove(&name);
            }
            _ if !live => blanked.push((start, end)),
            _ => {}
        }
        (depth, in_comment) = scan(line, depth, in_comment);
        start = end;
    }
    if blanked.is_empty() {
        return Cow::Borrowed(text);
    }
    let mut out = text.as_bytes().to_vec();
    for (from, to) in blanked {
        out[from..to].iter_mut().filter(|b| !matches!(**b, b'\n' | b'\r')).for_each(|b| *b = b' ');
    }
    // Only whole lines were blanked: their multi-byte characters go whole, as spaces.
    Cow::Owned(String::from_utf8(out).expect("whole lines were replaced by spaces"))
}

/// One `#if` … `#endif` group as the scan stands in it.
struct Group {
    /// Opened inside parentheses: the view settles it. Others are the grammar's to read.
    settled: bool,
    /// Whether the text around the group is kept.
    parent_live: bool,
    /// Whether a branch has been taken already.
    taken: bool,
    /// Whether the current branch is kept.
    live: bool,
}

enum Directive {
    If(String),
    Elif(String),
    Else,
    Endif,
    Define(String, String),
    Undef(String),
}

/// Whether `text` has a conditional inside a parenthesised list, which the macros of its
/// includes may settle.
pub fn has_conditional_in_list(text: &str) -> bool {
    matches!(settled_in_lists(text, &Defines::new()), Cow::Owned(_))
}

/// The object-like macros `text` defines, outside any reading of its conditionals.
pub fn defines_in(text: &str) -> impl Iterator<Item = (String, String)> + '_ {
    text.lines().filter_map(|line| match directive(line) {
        Some(Directive::Define(name, value)) => Some((name, value)),
        _ => None,
    })
}

fn directive(line: &str) -> Option<Directive> {
    let rest = line.trim_start().strip_prefix('#')?.trim_start();
    let word_end = rest.find(|c: char| !c.is_ascii_alphanumeric() && c != '_').unwrap_or(rest.len());
    let (word, tail) = rest.split_at(word_end);
    let tail = strip_comment(tail).trim();
    Some(match word {
        "if" => Directive::If(tail.to_string()),
        "ifdef" => Directive::If(format!("defined({tail})")),
        "ifndef" => Directive::If(format!("!defined({tail})")),
        "elif" => Directive::Elif(tail.to_string()),
        "else" => Directive::Else,
        "endif" => Directive::Endif,
        "define" => {
            let name_end = tail.find(|c: char| !c.is_ascii_alphanumeric() && c != '_').unwrap_or(tail.len());
            // A function-like macro is no value.
            if tail[name_end..].starts_with('(') {
                return None;
            }
            Directive::Define(tail[..name_end].to_string(), tail[name_end..].trim().to_string())
        }
        "undef" => Directive::Undef(tail.to_string()),
        _ => return None,
    })
}

fn strip_comment(text: &str) -> &str {
    let cut = [text.find("//"), text.find("/*")].into_iter().flatten().min().unwrap_or(text.len());
    &text[..cut]
}

/// Whether `condition` holds with `defines`; a name not defined is 0, and a condition the
/// evaluator cannot read does not hold.
fn holds(condition: &str, defines: &HashMap<String, String>) -> bool {
    let condition = with_defined_settled(condition, defines);
    let resolve = |name: &str| resolve(name, defines, 0);
    consteval::eval(&condition, &resolve).is_some_and(|v| v != 0)
}

fn resolve(name: &str, defines: &HashMap<String, String>, nesting: u8) -> Option<i64> {
    match defines.get(name) {
        None => Some(0),
        Some(value) if value.is_empty() => Some(0),
        Some(value) if nesting < 8 => consteval::eval(value, &|inner| resolve(inner, defines, nesting + 1)),
        Some(_) => None,
    }
}

/// `condition` with each `defined(NAME)` or `defined NAME` written as 1 or 0.
fn with_defined_settled(condition: &str, defines: &HashMap<String, String>) -> String {
    let mut out = String::new();
    let mut rest = condition;
    while let Some(at) = rest.find("defined") {
        let before_ok = !rest[..at].ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_');
        out.push_str(&rest[..at]);
        let after = rest[at + "defined".len()..].trim_start();
        let (inner, tail) = match after.strip_prefix('(') {
            Some(open) => match open.find(')') {
                Some(close) => (open[..close].trim(), &open[close + 1..]),
                None => ("", after),
            },
            None => {
                let end = after.find(|c: char| !c.is_ascii_alphanumeric() && c != '_').unwrap_or(after.len());
                (&after[..end], &after[end..])
            }
        };
        if !before_ok || inner.is_empty() {
            out.push_str("defined");
            rest = &rest[at + "defined".len()..];
            continue;
        }
        out.push_str(if defines.contains_key(inner) { "1" } else { "0" });
        rest = tail;
    }
    out.push_str(rest);
    out
}

/// The parenthesis depth and whether a block comment is open after `line`, given both before
/// it. Strings, characters and comments hold no parentheses.
fn scan(line: &str, mut depth: i32, mut in_comment: bool) -> (i32, bool) {
    let bytes = line.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if in_comment {
            if bytes[i..].starts_with(b"*/") {
                in_comment = false;
                i += 2;
            } else {
                i += 1;
            }
            continue;
        }
        match bytes[i] {
            b'/' if bytes[i..].starts_with(b"//") => break,
            b'/' if bytes[i..].starts_with(b"/*") => {
                in_comment = true;
                i += 2;
                continue;
            }
            quote @ (b'"' | b'\'') => {
                i += 1;
                while i < bytes.len() && bytes[i] != quote {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
            }
            b'(' => depth += 1,
            b')' => depth = (depth - 1).max(0),
            _ => {}
        }
        i += 1;
    }
    (depth, in_comment)
}

#[cfg(test)]
mod tests {
    use super::*;

    const KERNEL: &str = "#define USE_TEXTURE 1\n\
        __global__ void pad(float *dst,\n\
        #ifndef FIXED_WIDTH\n\
        \x20   short width,\n\
        #else\n\
        \x20   short unused,\n\
        #endif\n\
        \x20   int n\n\
        #if (USE_TEXTURE)\n\
        \x20   , cudaTextureObject_t tex\n\
        #endif\n\
        )\n\
        {\n\
        #ifdef FIXED_WIDTH\n\
        \x20   const int w = 64;\n\
        #endif\n\
        }\n";

    #[test]
    fn a_conditional_in_a_parameter_list_keeps_the_branch_the_file_defines_and_the_same_byte_offsets() {
        let view = settled_in_lists(KERNEL, &Defines::new());
        assert_eq!(view.len(), KERNEL.len());
        assert_eq!(view.lines().count(), KERNEL.lines().count());
        let kept: Vec<&str> = view.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
        assert_eq!(
            kept,
            [
                "#define USE_TEXTURE 1",
                "__global__ void pad(float *dst,",
                "short width,",
                "int n",
                ", cudaTextureObject_t tex",
                ")",
                "{",
                // A conditional between statements is the grammar's: it stays.
                "#ifdef FIXED_WIDTH",
                "const int w = 64;",
                "#endif",
                "}",
            ]
        );
    }

    #[test]
    fn a_name_the_file_does_not_define_is_zero_and_elif_takes_the_first_that_holds() {
        let text = "f(a,\n#if MODE == 2\n b,\n#elif defined MODE_ONE || MODE_ONE\n c,\n#elif 1\n d,\n#else\n e,\n#endif\n z);\n";
        let kept: Vec<String> = settled_in_lists(text, &Defines::new()).lines().map(|l| l.trim().to_string()).filter(|l| !l.is_empty()).collect();
        assert_eq!(kept, ["f(a,", "d,", "z);"]);
        let defined = format!("#define MODE 2\n{text}");
        let kept: Vec<String> = settled_in_lists(&defined, &Defines::new()).lines().map(|l| l.trim().to_string()).filter(|l| !l.is_empty()).collect();
        assert_eq!(kept, ["#define MODE 2", "f(a,", "b,", "z);"]);
        // Defined in a header the file includes: the launch in a `.cu` of a kernel in a `.cuh`.
        let included = Defines::from([("MODE_ONE".to_string(), "1".to_string())]);
        let kept: Vec<String> = settled_in_lists(text, &included).lines().map(|l| l.trim().to_string()).filter(|l| !l.is_empty()).collect();
        assert_eq!(kept, ["f(a,", "c,", "z);"]);
    }

    #[test]
    fn parentheses_in_comments_and_strings_do_not_open_a_list() {
        let text = "// f(\nconst char *s = \"(\";\n/* ( */\n#if 0\nint x;\n#endif\n";
        assert!(matches!(settled_in_lists(text, &Defines::new()), Cow::Borrowed(_)));
    }
}
