//! Elements of the kernel's own arrays read or written as wider values (`LDST64BITS(r_load_a[0])`,
//! `*((int4 *)(&tile[row][0]) + lane % 2)`): the rows of the array, and the offsets into a row
//! that the parameters make, must stay whole numbers of the wider value, and a thread's own array
//! must hold it. A configuration that breaks either faults with a misaligned address: LeetCUDA's
//! HGEMMs with `TN = 2` left `half r_load_b[TN / 2]` one half wide, read as a `float2`, and with
//! `OFFSET = 2` padded rows of `s_a[BK][BM + OFFSET]` to 4-byte multiples, read as `float2`s.

use tree_sitter::Node;

use super::bounds::parenthesised;
use super::host::strip_all_outer_parens;
use crate::syntax::{descendants, identifiers_in, size_of_type};

/// An element of an array reached through a pointer to a wider type.
#[derive(Debug, PartialEq)]
struct WideAccess<'c> {
    array: &'c str,
    /// The subscripts, outermost first.
    indices: Vec<&'c str>,
    /// The bytes of the wider value.
    bytes: u64,
}

/// An array the kernel declares.
#[derive(Debug, PartialEq)]
struct DeclaredArray {
    name: String,
    element_bytes: u64,
    /// The extents, outermost first.
    dims: Vec<String>,
    shared: bool,
}

/// The conditions, C's, under which every wider access to an array the kernel whose body is
/// `body` declares stays aligned and within the array. `written_out` writes the kernel's
/// constants out (`ty` as `(threadIdx.y)`); a run-time value (a thread's index, a loop's
/// variable) in an offset counts as 1, as a thread's share of the row is one step of it.
pub(super) fn alignment_conditions(text: &str, root: Node, body: Node, is_parameter: &dyn Fn(&str) -> bool, written_out: &dyn Fn(&str) -> String) -> Vec<String> {
    let code = crate::syntax::macros::with_address_taking_macros_expanded(text, root, &text[body.byte_range()]);
    let arrays = declared_arrays(text, body);
    let declared: Vec<&str> = descendants(body)
        .filter(|n| n.kind() == "declaration")
        .flat_map(|d| d.children_by_field_name("declarator", &mut d.walk()).collect::<Vec<_>>())
        .filter_map(crate::syntax::host::declared_name)
        .map(|n| &text[n.byte_range()])
        .collect();
    let once = |offset: &str| {
        let mut offset = written_out(offset);
        for index in ["threadIdx", "blockIdx"] {
            for axis in ["x", "y", "z"] {
                offset = offset.replace(&format!("{index}.{axis}"), "1");
            }
        }
        let offset = crate::syntax::rename_identifiers_in(&offset, |word| (declared.contains(&word) && !is_parameter(word)).then(|| "1".to_string()));
        offset.replace("(1) * ", "").replace("1 * ", "")
    };
    let mut out: Vec<String> = Vec::new();
    for access in wide_accesses(&code) {
        let Some(array) = arrays.iter().find(|a| a.name == access.array && a.dims.len() == access.indices.len()) else { continue };
        for condition in conditions(&access, array, is_parameter, &once, written_out) {
            if !out.contains(&condition) {
                out.push(condition);
            }
        }
    }
    out
}

/// What keeps `access` of `array` aligned: each row a whole number of wider values, each part of
/// the offset into the row that a parameter makes too, and, in a thread's own array, room for the
/// wider value where it is read.
fn conditions(access: &WideAccess, array: &DeclaredArray, is_parameter: &dyn Fn(&str) -> bool, once: &dyn Fn(&str) -> String, written_out: &dyn Fn(&str) -> String) -> Vec<String> {
    if access.bytes <= array.element_bytes || access.bytes % array.element_bytes != 0 {
        return Vec::new();
    }
    let lanes = access.bytes / array.element_bytes;
    let names_a_parameter = |text: &str| identifiers_in(text).any(is_parameter);
    let mut out = Vec::new();
    for row in 1..array.dims.len() {
        let stride = match &array.dims[row..] {
            [only] => strip_all_outer_parens(&written_out(only)).to_string(),
            several => several.iter().map(|d| parenthesised(&written_out(d))).collect::<Vec<_>>().join(" * "),
        };
        if names_a_parameter(&stride) {
            out.push(format!("{} % {lanes} == 0", parenthesised(&stride)));
        }
    }
    let Some(offset) = access.indices.last().map(|i| written_out(i)) else { return out };
    for term in additive_terms(&offset).into_iter().filter(|t| names_a_parameter(t)) {
        out.push(format!("{} % {lanes} == 0", parenthesised(strip_all_outer_parens(&once(term)))));
    }
    let within = parenthesised(strip_all_outer_parens(&written_out(array.dims.last().expect("as many dims as indices"))));
    if !array.shared && identifiers_in(&offset).all(is_parameter) && names_a_parameter(&format!("{offset} {within}")) {
        let end = match offset.trim().parse::<u64>() {
            Ok(first) => (first + lanes).to_string(),
            Err(_) => format!("{} + {lanes}", parenthesised(&offset)),
        };
        out.push(format!("{end} <= {within}"));
    }
    out
}

/// The terms of `expression` joined by `+` or `-` outside parentheses, each with its sign.
fn additive_terms(expression: &str) -> Vec<&str> {
    let mut terms = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (at, c) in expression.char_indices() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            '+' | '-' if depth == 0 && at > start && !expression[..at].trim_end().ends_with(['*', '/', '%', '(']) => {
                terms.push(expression[start..at].trim());
                start = at;
            }
            _ => {}
        }
    }
    terms.push(expression[start..].trim());
    terms.into_iter().map(|t| t.trim_start_matches('+').trim()).filter(|t| !t.is_empty()).collect()
}

/// The arrays declared in `body` whose element size is known: `__shared__` tiles and a thread's
/// own (`half r_load_a[TM / 2];`).
fn declared_arrays(text: &str, body: Node) -> Vec<DeclaredArray> {
    let mut out = Vec::new();
    for declaration in descendants(body).filter(|n| n.kind() == "declaration") {
        let Some(element_bytes) = declaration.child_by_field_name("type").and_then(|t| size_of_type(&text[t.byte_range()])) else { continue };
        let shared = text[declaration.byte_range()].contains("__shared__");
        for declarator in declaration.children_by_field_name("declarator", &mut declaration.walk()) {
            let mut node = match declarator.kind() {
                "init_declarator" => declarator.child_by_field_name("declarator"),
                _ => Some(declarator),
            };
            let mut dims = Vec::new();
            while let Some(array) = node.filter(|n| n.kind() == "array_declarator") {
                dims.push(array.child_by_field_name("size").map(|s| text[s.byte_range()].to_string()));
                node = array.child_by_field_name("declarator");
            }
            let (Some(name), Some(dims)) = (node.filter(|n| n.kind() == "identifier"), dims.into_iter().rev().collect::<Option<Vec<String>>>()) else { continue };
            if !dims.is_empty() {
                out.push(DeclaredArray { name: text[name.byte_range()].to_string(), element_bytes, dims, shared });
            }
        }
    }
    out
}

/// The elements `code` takes the address of to read or write as a wider type:
/// `reinterpret_cast<float2 *>(&(r[0]))` and `(int4 *)(&tile[i][0])`.
fn wide_accesses(code: &str) -> Vec<WideAccess<'_>> {
    let mut out = Vec::new();
    for (at, _) in code.match_indices("*>").chain(code.match_indices("*)")) {
        let closes_cast = code[at + 1..].starts_with('>');
        let opening = if closes_cast { "reinterpret_cast<" } else { "(" };
        let Some(type_start) = code[..at].rfind(opening).map(|start| start + opening.len()) else { continue };
        let cast_type = code[type_start..at].trim().trim_start_matches("const ").trim_start_matches("volatile ").trim();
        if !cast_type.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ' ') {
            continue;
        }
        let Some(bytes) = size_of_type(cast_type) else { continue };
        let operand = code[at + 2..].trim_start();
        let operand = match operand.strip_prefix('(') {
            Some(_) => balanced(operand, '(', ')').map(|inner| &inner[1..inner.len() - 1]),
            None if !closes_cast => Some(operand),
            None => None,
        };
        if let Some((array, indices)) = operand.and_then(|o| o.trim_start().strip_prefix('&')).and_then(element) {
            out.push(WideAccess { array, indices, bytes });
        }
    }
    out
}

/// `text` from its start through the bracket that closes the one it opens with.
fn balanced(text: &str, open: char, close: char) -> Option<&str> {
    let mut depth = 0;
    for (at, c) in text.char_indices() {
        if c == open {
            depth += 1;
        } else if c == close {
            depth -= 1;
            if depth == 0 {
                return Some(&text[..=at]);
            }
        }
    }
    None
}

/// The array and the subscripts of the element `text` starts with (`(r[0])`, `tile[i][j]`), or
/// `None` when it names no subscripted element.
fn element(text: &str) -> Option<(&str, Vec<&str>)> {
    let rest = strip_all_outer_parens(text);
    let name_end = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len());
    let (name, mut rest) = rest.split_at(name_end);
    let mut indices = Vec::new();
    while let Some(subscript) = rest.trim_start().strip_prefix('[').and_then(|_| balanced(rest.trim_start(), '[', ']')) {
        indices.push(subscript[1..subscript.len() - 1].trim());
        rest = &rest.trim_start()[subscript.len()..];
    }
    let ends_here = rest.trim_start().is_empty() || rest.trim_start().starts_with([')', '+', ';', ',']);
    (!name.is_empty() && !indices.is_empty() && name.starts_with(|c: char| !c.is_ascii_digit()) && ends_here).then_some((name, indices))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::Document;

    fn conditions_of(kernel: &str, parameters: &[&str]) -> Vec<String> {
        let doc = Document::new(kernel.to_string());
        let model = doc.model();
        let k = &model.kernels[0];
        let body = super::super::kernel_definition(&doc, k).and_then(|d| d.child_by_field_name("body")).expect("a body");
        let constants = super::super::scaffold::kernel_constants(doc.text(), body);
        let written_out = |text: &str| super::super::renamed_until_settled(text, |word| constants.get(word).map(|value| format!("({value})")));
        alignment_conditions(doc.text(), doc.tree().expect("parsed").root_node(), body, &|w| parameters.contains(&w), &written_out)
    }

    #[test]
    fn wide_reads_of_a_threads_array_and_of_a_padded_tile_keep_rows_offsets_and_room() {
        let kernel = "\
#define LDST64BITS(value) (reinterpret_cast<float2 *>(&(value))[0])
template <int BM, int BK, int TM, int OFFSET>
__global__ void k(half *a) {
  const int ty = threadIdx.y;
  __shared__ half s_a[BK][BM + OFFSET];
  half r_load[TM / 2];
  half r_comp[TM];
  LDST64BITS(r_load[0]) = LDST64BITS(a[threadIdx.x * 4]);
  for (int tk = 0; tk < BK; tk++) {
    LDST64BITS(r_comp[0]) = LDST64BITS(s_a[tk][ty * TM / 2]);
    LDST64BITS(r_comp[TM / 2]) = LDST64BITS(s_a[tk][ty * TM / 2 + BM / 2]);
  }
  a[0] = r_comp[0] + r_load[0];
}
";
        let found = conditions_of(kernel, &["BM", "BK", "TM", "OFFSET"]);
        assert_eq!(
            found,
            [
                "4 <= (TM / 2)",
                "4 <= TM",
                "(BM + OFFSET) % 4 == 0",
                "(TM / 2) % 4 == 0",
                "(TM / 2) + 4 <= TM",
                "(BM / 2) % 4 == 0",
            ],
            "the global read `a[threadIdx.x * 4]` is the program's business"
        );
    }

    #[test]
    fn c_casts_of_an_element_plus_lanes_are_wide_accesses_and_a_float_array_read_as_floats_is_not() {
        let kernel = "\
template <int K_PAD>
__global__ void k(const half *a, float *out) {
  __shared__ half tile[16][16 + K_PAD];
  __shared__ float sums[32];
  const int lane = threadIdx.x % 32;
  *((int4 *)(&tile[lane / 2][0]) + lane % 2) = *((const int4 *)(&a[lane * 8]));
  *(float *)(&sums[lane]) = 1.f;
  out[lane] = sums[lane] + __half2float(tile[lane][0]);
}
";
        assert_eq!(conditions_of(kernel, &["K_PAD"]), ["(16 + K_PAD) % 8 == 0"]);
    }

    #[test]
    fn terms_split_at_signs_outside_brackets() {
        assert_eq!(additive_terms("ty * TM / 2 + BM / 2"), ["ty * TM / 2", "BM / 2"]);
        assert_eq!(additive_terms("(a + b) * c - d[i + 1]"), ["(a + b) * c", "- d[i + 1]"]);
        assert_eq!(additive_terms("-x + y * -2"), ["-x", "y * -2"]);
    }
}
