//! The preprocessor's branches as a reader of the source can tell them: which lines an
//! `#ifdef`, `#ifndef`, `#if defined(X)`, `#elif` or `#else` leaves in, given the macros defined
//! before them. Benchmark suites give a tuning knob a default this way (`#ifdef RD_WG_SIZE
//! #define BLOCK_SIZE RD_WG_SIZE #else #define BLOCK_SIZE 16 #endif`).

use std::collections::HashSet;

use super::{identifiers_in, is_identifier};

/// Calls `each(text, offset, line, active)` for every line of `texts` in order, trimmed, with
/// its byte offset in its text and whether the preprocessor takes the branch it is in, as the
/// macros defined so far (in the branches taken, in all the texts before) decide `#ifdef`,
/// `#ifndef`, `#if defined(X)`, `#elif defined(X)` and `#else`. A condition it cannot read
/// counts as true.
pub fn each_preprocessed_line<'t>(texts: &[&'t str], mut each: impl FnMut(&'t str, usize, &'t str, bool)) {
    let mut defined: HashSet<String> = HashSet::new();
    for text in texts {
        // Per open `#if`: whether the current branch is taken, and whether any branch was.
        let mut stack: Vec<(bool, bool)> = Vec::new();
        for raw in text.split_inclusive('\n') {
            let offset = raw.as_ptr() as usize - text.as_ptr() as usize;
            let line = raw.trim();
            let active = stack.iter().all(|(taken, _)| *taken);
            if let Some(directive) = line.strip_prefix('#').map(str::trim_start) {
                let (word, rest) = directive.split_once(char::is_whitespace).unwrap_or((directive, ""));
                let condition = |rest: &str| preprocessor_condition(rest.trim(), &defined);
                match word {
                    "ifdef" => stack.push(if defined.contains(rest.trim()) { (true, true) } else { (false, false) }),
                    "ifndef" => stack.push(if defined.contains(rest.trim()) { (false, false) } else { (true, true) }),
                    "if" => {
                        let c = condition(rest);
                        stack.push((c, c));
                    }
                    "elif" => {
                        if let Some(top) = stack.last_mut() {
                            let c = !top.1 && condition(rest);
                            *top = (c, top.1 || c);
                        }
                    }
                    "else" => {
                        if let Some(top) = stack.last_mut() {
                            *top = (!top.1, true);
                        }
                    }
                    "endif" => {
                        stack.pop();
                    }
                    "define" if active => {
                        if let Some(name) = identifiers_in(rest).next() {
                            defined.insert(name.to_string());
                        }
                    }
                    _ => {}
                }
            }
            each(text, offset, line, active);
        }
    }
}

/// `defined(X)`, `defined X`, `!defined(X)`, `0`, `1`; anything else counts as true.
fn preprocessor_condition(text: &str, defined: &HashSet<String>) -> bool {
    let (negated, text) = match text.strip_prefix('!') {
        Some(rest) => (true, rest.trim()),
        None => (false, text),
    };
    let value = if let Some(rest) = text.strip_prefix("defined") {
        let name = rest.trim().trim_start_matches('(').trim_end_matches(')').trim();
        if !is_identifier(name) {
            return true;
        }
        defined.contains(name)
    } else {
        match text {
            "0" => false,
            _ => return true,
        }
    };
    value != negated
}


/// The value of the `#define NAME <value>` of `text` that the preprocessor takes, with its
/// 1-based line: the first in a branch taken, as [`each_preprocessed_line`] decides them.
pub fn taken_define(text: &str, name: &str) -> Option<(u32, String)> {
    let mut found = None;
    let mut line_number = 0u32;
    each_preprocessed_line(&[text], |_, _, line, active| {
        line_number += 1;
        if found.is_some() || !active {
            return;
        }
        let Some(rest) = line.strip_prefix('#').map(str::trim_start).and_then(|d| d.strip_prefix("define")) else { return };
        let rest = rest.trim_start();
        let Some(after) = rest.strip_prefix(name).filter(|a| a.is_empty() || a.starts_with(char::is_whitespace)) else { return };
        let value = after.split("//").next().unwrap_or("").split("/*").next().unwrap_or("");
        found = Some((line_number, value.trim().to_string()));
    });
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    const CHAIN: &str = "#ifdef RD_WG_SIZE_0_0\n#define BLOCK_SIZE RD_WG_SIZE_0_0\n#elif defined(RD_WG_SIZE_0)\n#define BLOCK_SIZE RD_WG_SIZE_0\n#else\n#define BLOCK_SIZE 16\n#endif\n";

    #[test]
    fn the_define_a_chain_of_branches_takes_is_its_default() {
        assert_eq!(taken_define(CHAIN, "BLOCK_SIZE"), Some((6, "16".to_string())));
        let given = format!("#define RD_WG_SIZE_0 64\n{CHAIN}");
        assert_eq!(taken_define(&given, "BLOCK_SIZE"), Some((5, "RD_WG_SIZE_0".to_string())));
        assert_eq!(taken_define("#ifndef N\n#define N 256 // rows\n#endif\n", "N"), Some((2, "256".to_string())));
        assert_eq!(taken_define("#define NUMBER 3\n", "NUM"), None);
    }

    #[test]
    fn lines_say_whether_their_branch_is_taken() {
        let mut active = Vec::new();
        each_preprocessed_line(&[CHAIN], |_, offset, line, taken| active.push((offset, line.to_string(), taken)));
        let taken: Vec<&str> = active.iter().filter(|(_, line, taken)| *taken && line.starts_with("#define")).map(|(_, line, _)| line.as_str()).collect();
        assert_eq!(taken, ["#define BLOCK_SIZE 16"]);
        assert_eq!(active[1].0, CHAIN.find("#define BLOCK_SIZE RD_WG_SIZE_0_0").unwrap());
    }
}
