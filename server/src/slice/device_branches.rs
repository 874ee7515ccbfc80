//! Conditionals on the macros every NVRTC compilation defines (`__CUDACC__`, `__CUDACC_RTC__`,
//! `__CUDA_ARCH__`), decided before the slice is parsed. Headers shared with host code wrap
//! declaration specifiers in them, even between `template <class T>` and the function it
//! declares (`#ifdef __CUDACC__ / __host__ __device__ / #endif`): the parser splits such a
//! function, and the slice kept an `#endif` without its `#if`. The directive lines of a decided
//! group become empty lines, as do the lines of the branch NVRTC does not take, so every line
//! keeps its number.

/// The macros NVRTC defines in every compilation.
const DEVICE_MACROS: &[&str] = &["__CUDACC__", "__CUDACC_RTC__", "__CUDA_ARCH__"];

/// An open conditional group.
enum Group {
    /// On one of [`DEVICE_MACROS`] alone: whether its current branch is taken.
    Decided { taken: bool },
    /// On anything else: left to the compiler.
    Open,
}

/// `text` with the conditionals on [`DEVICE_MACROS`] decided, or `text` as it is where a
/// decided group has an `#elif` (rare; the compiler then decides it, as before) or the groups
/// do not balance.
pub(super) fn with_device_branches(text: &str) -> String {
    decided(text).unwrap_or_else(|| text.to_string())
}

fn decided(text: &str) -> Option<String> {
    let mut groups: Vec<Group> = Vec::new();
    let mut out = String::with_capacity(text.len());
    let mut changed = false;
    for line in text.split_inclusive('\n') {
        let skipped = groups.iter().any(|g| matches!(g, Group::Decided { taken: false }));
        let keep = match directive(line) {
            Some((keyword @ ("if" | "ifdef" | "ifndef"), condition)) => {
                let group = match device_condition(keyword, condition) {
                    Some(taken) => Group::Decided { taken },
                    None => Group::Open,
                };
                let decided = matches!(group, Group::Decided { .. });
                groups.push(group);
                !decided && !skipped
            }
            Some(("elif" | "elifdef" | "elifndef", _)) => match groups.last()? {
                Group::Decided { .. } => return None,
                Group::Open => !skipped,
            },
            Some(("else", _)) => match groups.last_mut()? {
                Group::Decided { taken } => {
                    *taken = !*taken;
                    false
                }
                Group::Open => !skipped,
            },
            Some(("endif", _)) => match groups.pop()? {
                Group::Decided { .. } => false,
                Group::Open => !skipped,
            },
            _ => !skipped,
        };
        if keep {
            out.push_str(line);
        } else {
            changed = true;
            if line.ends_with('\n') {
                out.push('\n');
            }
        }
    }
    (groups.is_empty() && changed).then_some(out)
}

/// A preprocessor line's directive and the rest, comments left out.
fn directive(line: &str) -> Option<(&str, &str)> {
    let rest = line.trim_start().strip_prefix('#')?.trim_start();
    let end = rest.find(|c: char| !c.is_ascii_alphanumeric() && c != '_').unwrap_or(rest.len());
    let (name, rest) = rest.split_at(end);
    let rest = rest.split("//").next().unwrap_or("").split("/*").next().unwrap_or("").trim();
    Some((name, rest))
}

/// Whether the branch of `#if`/`#ifdef`/`#ifndef condition` is taken when it tests one of
/// [`DEVICE_MACROS`] alone (`defined(__CUDACC__)`, `!defined __CUDA_ARCH__`), `None` otherwise.
fn device_condition(keyword: &str, condition: &str) -> Option<bool> {
    let tested = |name: &str| DEVICE_MACROS.contains(&name.trim());
    match keyword {
        "ifdef" => tested(condition).then_some(true),
        "ifndef" => tested(condition).then_some(false),
        _ => {
            let (negated, rest) = match condition.strip_prefix('!') {
                Some(rest) => (true, rest.trim_start()),
                None => (false, condition),
            };
            let name = rest.strip_prefix("defined")?.trim();
            let name = name.strip_prefix('(').and_then(|n| n.strip_suffix(')')).unwrap_or(name);
            tested(name).then_some(!negated)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_specifier_under_cudacc_is_kept_and_its_directives_become_empty_lines() {
        let text = "template <class T>\n#ifdef __CUDACC__\n__host__ __device__\n#endif\nT lo(const T &a, const T &b) { return a < b ? a : b; }\n";
        assert_eq!(with_device_branches(text), "template <class T>\n\n__host__ __device__\n\nT lo(const T &a, const T &b) { return a < b ? a : b; }\n");
    }

    #[test]
    fn the_host_branch_goes_and_other_conditionals_stay() {
        let text = "#if !defined(__CUDA_ARCH__)\n#include <cstdio>\n#else\n#define ON_DEVICE 1\n#endif\n#ifdef USE_FAST\n#define F 1\n#endif\n";
        assert_eq!(with_device_branches(text), "\n\n\n#define ON_DEVICE 1\n\n#ifdef USE_FAST\n#define F 1\n#endif\n");
    }

    #[test]
    fn nested_groups_inside_a_dropped_branch_go_with_it() {
        let text = "#ifndef __CUDACC__\n#ifdef X\nint host_only;\n#endif\n#endif // __CUDACC__\nint both;\n";
        assert_eq!(with_device_branches(text), "\n\n\n\n\nint both;\n");
    }

    #[test]
    fn text_without_such_groups_or_with_an_elif_in_one_is_left_as_it_is() {
        for text in ["#if FOO > 2\nint a;\n#endif\n", "#ifdef __CUDACC__\nint a;\n#elif defined(X)\nint b;\n#endif\n", "#ifdef __CUDACC__\nint a;\n"] {
            assert_eq!(with_device_branches(text), text);
        }
    }
}
