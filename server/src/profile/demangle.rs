//! A kernel's name as profilers give it (mangled, or demangled with its signature) split into
//! what the workspace can be searched for: the qualified name, its template arguments and its
//! parameter types.

use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KernelName {
    /// `ns::kernel`, without template arguments.
    pub qualified: String,
    /// The last component of `qualified`: what `__global__` defines.
    pub base: String,
    pub template_args: Vec<String>,
    /// Parameter types, when the name carries a signature.
    pub parameters: Option<Vec<String>>,
}

impl KernelName {
    /// `kernel<64, 8>`: the name a person reads, without return type or parameters.
    pub fn display(&self) -> String {
        if self.template_args.is_empty() {
            self.qualified.clone()
        } else {
            format!("{}<{}>", self.qualified, self.template_args.join(", "))
        }
    }
}

/// Reads `raw`: an Itanium-mangled name (`_Z...`), a demangled signature
/// (`void ns::k<64>(float*, int)`), or a plain name (`extern "C"` kernels).
pub fn kernel_name(raw: &str) -> KernelName {
    let demangled = raw
        .starts_with("_Z")
        .then(|| cpp_demangle::Symbol::new(raw).ok()?.demangle().ok())
        .flatten()
        .unwrap_or_else(|| raw.to_string());
    parse_signature(demangled.trim())
}

fn parse_signature(text: &str) -> KernelName {
    let (head, parameters) = match parameter_list(text) {
        Some((open, close)) => (&text[..open], Some(split_template_args(&text[open + 1..close]))),
        None => (text, None),
    };
    // The return type, when there is one, is separated from the name by a top-level space.
    let name = last_top_level_word(head.trim());
    let (qualified, template_args) = match trailing_angle_list(name) {
        Some(open) => (&name[..open], split_template_args(&name[open + 1..name.len() - 1])),
        None => (name, Vec::new()),
    };
    let base = split_top_level_by(qualified, "::").pop().unwrap_or_default();
    KernelName {
        qualified: qualified.to_string(),
        base,
        template_args,
        parameters: parameters.map(|p| p.into_iter().filter(|t| !t.is_empty() && t != "void").collect()),
    }
}

/// Byte positions of the last top-level `(`…`)` that ends the text (ignoring trailing
/// qualifiers such as `const`).
fn parameter_list(text: &str) -> Option<(usize, usize)> {
    let close = text.rfind(')')?;
    let mut depth = 0i32;
    for (i, c) in text[..=close].char_indices().rev() {
        match c {
            ')' | '>' | ']' => depth += 1,
            '(' | '<' | '[' => {
                depth -= 1;
                if depth == 0 {
                    return (c == '(').then_some((i, close));
                }
            }
            _ => {}
        }
    }
    None
}

/// Where the `<` of a template argument list that ends `name` starts.
fn trailing_angle_list(name: &str) -> Option<usize> {
    if !name.ends_with('>') {
        return None;
    }
    let mut depth = 0i32;
    for (i, c) in name.char_indices().rev() {
        match c {
            '>' | ')' => depth += 1,
            '<' | '(' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

fn last_top_level_word(text: &str) -> &str {
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in text.char_indices() {
        match c {
            '<' | '(' | '[' => depth += 1,
            '>' | ')' | ']' => depth -= 1,
            ' ' if depth == 0 => start = i + 1,
            _ => {}
        }
    }
    &text[start..]
}

/// `a, b<c, d>` → `[a, b<c, d>]`: a template's argument list split at its own commas, not at
/// those inside angle brackets, parentheses or brackets.
pub(crate) fn split_template_args(text: &str) -> Vec<String> {
    split_top_level_by(text, ",")
}

fn split_top_level_by(text: &str, separator: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    let mut i = 0;
    while i < text.len() {
        let c = text[i..].chars().next().expect("in bounds");
        match c {
            '<' | '(' | '[' => depth += 1,
            '>' | ')' | ']' => depth -= 1,
            _ if depth == 0 && text[i..].starts_with(separator) => {
                parts.push(text[start..i].trim().to_string());
                i += separator.len();
                start = i;
                continue;
            }
            _ => {}
        }
        i += c.len_utf8();
    }
    parts.push(text[start..].trim().to_string());
    parts
}

#[cfg(test)]
mod tests {
    use super::kernel_name;

    #[test]
    fn mangled_names_give_their_name_template_arguments_and_parameters() {
        let name = kernel_name("_Z5scalePffi");
        assert_eq!((name.qualified.as_str(), name.base.as_str()), ("scale", "scale"));
        assert_eq!(name.parameters.unwrap(), ["float*", "float", "int"]);

        let name = kernel_name("_Z7sgemm1DILi64ELi64ELi8ELi8EEviiifPKfS1_fPf");
        assert_eq!(name.display(), "sgemm1D<64, 64, 8, 8>");
        assert_eq!(name.parameters.unwrap().len(), 8);

        let name = kernel_name("_ZN4vllm15rms_norm_kernelIN3c104HalfELi8EEEvPT_PKS3_fii");
        assert_eq!(name.qualified, "vllm::rms_norm_kernel");
        assert_eq!(name.base, "rms_norm_kernel");
        assert_eq!(name.template_args, ["c10::Half", "8"]);
    }

    #[test]
    fn demangled_and_plain_names_read_the_same_way() {
        let name = kernel_name("void at::native::(anonymous namespace)::softmax_warp_forward<float, float, float, 10, false>(float*, float const*, int, int, int)");
        assert_eq!(name.qualified, "at::native::(anonymous namespace)::softmax_warp_forward");
        assert_eq!(name.base, "softmax_warp_forward");
        assert_eq!(name.template_args.len(), 5);
        assert_eq!(name.parameters.unwrap().len(), 5);

        let name = kernel_name("vecAdd");
        assert_eq!((name.base.as_str(), name.parameters), ("vecAdd", None));

        let name = kernel_name("reduce_kernel(float const*, float*, int)");
        assert_eq!(name.display(), "reduce_kernel");
        assert_eq!(name.parameters.unwrap(), ["float const*", "float*", "int"]);
    }
}
