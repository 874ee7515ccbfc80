//! The values an integer buffer of indices must hold for the original kernel to stay inside its
//! buffers: random integers up to 128 made mmcv's `assign_score_withk` fault on its own
//! assertion, and `roi_pool_backward` scatter past the end of its gradient.

use tree_sitter::Node;

use super::bounds::without_parentheses;
use crate::syntax::descendants;

/// The kernel's scalar parameter that the values read from the integer buffer `buffer` stay
/// below: a local given an element of it (`const int kn = (int)knn_idx[…];`) compared with one
/// the kernel's assertions or early exits hold it under (`assert(kn < N0)`, `if (kn >= N0 ||
/// kn < 0) return;`). `None` when no such comparison names one `is_bound_name` accepts.
pub(super) fn compared_extent<'t>(text: &'t str, body: Node, buffer: &str, is_bound_name: &dyn Fn(&str) -> bool) -> Option<&'t str> {
    let reads_element = |value: Node| descendants(value).any(|n| n.kind() == "subscript_expression" && n.child_by_field_name("argument").is_some_and(|a| &text[a.byte_range()] == buffer));
    let read_into: Vec<&str> = descendants(body)
        .filter(|n| n.kind() == "init_declarator" && n.child_by_field_name("value").is_some_and(reads_element))
        .filter_map(|n| n.child_by_field_name("declarator").filter(|d| d.kind() == "identifier"))
        .map(|d| &text[d.byte_range()])
        .collect();
    descendants(body).filter(|n| n.kind() == "binary_expression").find_map(|comparison| {
        let operand = |field: &str| comparison.child_by_field_name(field).map(|n| text[without_parentheses(n).byte_range()].trim());
        let (left, right) = (operand("left")?, operand("right")?);
        let (index, extent) = match &text[comparison.child_by_field_name("operator")?.byte_range()] {
            "<" | ">=" => (left, right),
            ">" | "<=" => (right, left),
            _ => return None,
        };
        (read_into.contains(&index) && is_bound_name(extent)).then_some(extent)
    })
}

/// What the values of an index buffer address in another buffer, in the kernel's names.
#[derive(Debug, PartialEq)]
pub(super) enum Addressed<'t> {
    /// A plane of this many elements, a product of scalar parameters and numbers: `points +=
    /// b * c * n + c_i * n; … points[idx[0]]` addresses `n` points.
    Plane(Vec<&'t str>),
    /// The rows of `stride` elements of the buffer parameter `buffer` (`wte + ix * C + c`: its
    /// length over `C`); with no stride, its whole length (`table[ix]`).
    Rows { buffer: &'t str, stride: Vec<&'t str> },
}

/// What the values read from the integer buffer `buffer` address, where every access they
/// offset says the same: an offset of a plane that all the other terms of the address are
/// multiples of (`grad_input + ((b * channels + c) * height * width)` then `+ argmax[i]`: a
/// plane of `height * width`), or rows of the buffer itself. Only reads of the whole element
/// count (`int t = idx[i];`, `idx[0]`, `*(idx + i)`, through casts), not `idx[i] - 1`.
pub(super) fn addressed_extent<'t>(text: &'t str, body: Node<'t>, buffer: &str, is_scalar: &dyn Fn(&str) -> bool, is_buffer: &dyn Fn(&str) -> bool) -> Option<Addressed<'t>> {
    let kernel = Kernel { text, body, buffer, is_scalar, is_buffer };
    let index_locals: Vec<&str> = kernel.locals_given(|value| kernel.reads_index_buffer(value));
    let mut found: Option<Addressed> = None;
    for (base, terms) in kernel.addresses() {
        let is_index = |term: Node| kernel.reads_index_buffer(term) || index_locals.contains(&kernel.text_of(term));
        let terms: Vec<Node> = terms.into_iter().flat_map(|t| kernel.expanded(t, &is_index)).collect();
        let mentions_index = |term: &Node| descendants(*term).any(is_index);
        if !terms.iter().any(mentions_index) {
            continue;
        }
        let (indexed, others): (Vec<Node>, Vec<Node>) = terms.into_iter().partition(|t| factors(*t).into_iter().any(is_index));
        let addressed = match indexed.as_slice() {
            [term] if !others.iter().any(mentions_index) => kernel.addressed(base, *term, &others, &is_index)?,
            _ => return None,
        };
        match &found {
            Some(known) if *known != addressed => return None,
            _ => found = Some(addressed),
        }
    }
    found
}

struct Kernel<'t, 'f> {
    text: &'t str,
    body: Node<'t>,
    buffer: &'f str,
    is_scalar: &'f dyn Fn(&str) -> bool,
    is_buffer: &'f dyn Fn(&str) -> bool,
}

impl<'t> Kernel<'t, '_> {
    fn text_of(&self, node: Node) -> &'t str {
        self.text[without_parentheses(node).byte_range()].trim()
    }

    /// Whether `node` is one element of the index buffer: `idx[i]`, `*(idx + i)`, `(int)idx[i]`.
    fn reads_index_buffer(&self, node: Node) -> bool {
        let node = without_casts(node);
        let pointer = match node.kind() {
            "subscript_expression" => node.child_by_field_name("argument"),
            "pointer_expression" if node.child(0).is_some_and(|o| o.kind() == "*") => node.child_by_field_name("argument").map(|a| sum_terms(a)[0]),
            _ => None,
        };
        pointer.is_some_and(|p| self.text_of(p) == self.buffer)
    }

    /// The locals whose declaration gives them a value `accepts`.
    fn locals_given(&self, accepts: impl Fn(Node) -> bool) -> Vec<&'t str> {
        descendants(self.body)
            .filter(|n| n.kind() == "init_declarator" && n.child_by_field_name("value").is_some_and(&accepts))
            .filter_map(|n| n.child_by_field_name("declarator").filter(|d| d.kind() == "identifier"))
            .map(|d| &self.text[d.byte_range()])
            .collect()
    }

    /// Every address the kernel forms from a pointer: `p[e]` and `p + e + …`, each as the
    /// pointer and the terms added to it.
    fn addresses(&self) -> Vec<(&'t str, Vec<Node<'t>>)> {
        let mut addresses = Vec::new();
        for node in descendants(self.body) {
            match node.kind() {
                "subscript_expression" => {
                    let (Some(pointer), Some(index)) = (node.child_by_field_name("argument"), node.child_by_field_name("indices").and_then(|i| i.named_child(0))) else { continue };
                    addresses.push((self.text_of(pointer), sum_terms(index)));
                }
                // The whole sum once, not each of its partial sums.
                "binary_expression" if self.operator(node) == "+" && !node.parent().is_some_and(|p| p.kind() == "binary_expression" && self.operator(p) == "+") => {
                    let mut terms = sum_terms(node);
                    let Some(at) = terms.iter().position(|t| self.pointer_of(self.text_of(*t)).is_some()) else { continue };
                    let pointer = terms.remove(at);
                    addresses.push((self.text_of(pointer), terms));
                }
                _ => {}
            }
        }
        addresses.into_iter().filter(|(pointer, _)| *pointer != self.buffer).collect()
    }

    /// The buffer parameter `name` points into, and the offset added to it before: itself,
    /// advanced at most once (`points += b * n;`), or a local pointer made from one (`float* row
    /// = x + r * n;`).
    fn pointer_of(&self, name: &'t str) -> Option<(&'t str, Vec<Node<'t>>)> {
        let assigned: Vec<Node> = descendants(self.body)
            .filter(|n| n.kind() == "assignment_expression" && n.child_by_field_name("left").is_some_and(|l| self.text_of(l) == name))
            .collect();
        if (self.is_buffer)(name) {
            return match assigned.as_slice() {
                [] => Some((name, vec![])),
                [advance] if advance.child_by_field_name("operator").is_some_and(|o| &self.text[o.byte_range()] == "+=") => Some((name, sum_terms(advance.child_by_field_name("right")?))),
                _ => None,
            };
        }
        if !assigned.is_empty() {
            return None;
        }
        let declared = descendants(self.body).find(|n| n.kind() == "init_declarator" && n.child_by_field_name("declarator").is_some_and(|d| d.kind() == "pointer_declarator" && d.child_by_field_name("declarator").is_some_and(|i| &self.text[i.byte_range()] == name)))?;
        let mut terms = sum_terms(declared.child_by_field_name("value")?);
        let at = terms.iter().position(|t| (self.is_buffer)(self.text_of(*t)))?;
        let base = self.text_of(terms.remove(at));
        Some((base, terms))
    }

    /// A term that is a local summing an index (`in_idx` of `int in_idx = b * n + idx[0];`)
    /// stands for its sum's terms; any other term for itself.
    fn expanded(&self, term: Node<'t>, is_index: &dyn Fn(Node) -> bool) -> Vec<Node<'t>> {
        let name = self.text_of(term);
        let declared = descendants(self.body).find(|n| {
            n.kind() == "init_declarator" && n.child_by_field_name("declarator").is_some_and(|d| d.kind() == "identifier" && &self.text[d.byte_range()] == name)
        });
        match declared.and_then(|d| d.child_by_field_name("value")) {
            Some(value) if without_parentheses(term).kind() == "identifier" && !is_index(term) && descendants(value).any(is_index) => sum_terms(value),
            _ => vec![term],
        }
    }

    /// What the index term `indexed` (the index times a stride, `ix * C`) of an address into
    /// `pointer` addresses, given the address's `others` terms: those that are multiples of the
    /// stride step over planes of rows, the rest stay within a row (`+ c`).
    fn addressed(&self, pointer: &'t str, indexed: Node, others: &[Node<'t>], is_index: &dyn Fn(Node) -> bool) -> Option<Addressed<'t>> {
        let (base, offset) = self.pointer_of(pointer)?;
        let stride: Vec<&str> = factors(indexed).into_iter().filter(|f| !is_index(*f)).map(|f| self.text_of(f)).collect();
        if !stride.iter().all(|f| self.is_factor(f)) {
            return None;
        }
        // Each multiple of the stride as its factors besides the stride's.
        let mut planes: Vec<Vec<&str>> = Vec::new();
        for term in others.iter().copied().chain(offset) {
            let mut factors: Vec<&str> = factors(term).into_iter().map(|f| self.text_of(f)).collect();
            let stride_factors: Vec<usize> = stride.iter().filter_map(|s| factors.iter().position(|f| f == s)).collect();
            if stride_factors.len() == stride.len() {
                factors.retain(|f| !stride.contains(f));
                planes.push(factors);
            } else if words(self.text_of(term)).any(|w| stride.contains(&w)) && !self.is_remainder_by(term, &stride) {
                // Partly the stride (`c / C`, `(x + 1) * C` written otherwise): no telling.
                return None;
            }
        }
        let Some((first, rest)) = planes.split_first() else { return Some(Addressed::Rows { buffer: base, stride }) };
        let common: Vec<&str> = first.iter().copied().filter(|f| self.is_factor(f) && rest.iter().all(|t| t.contains(f))).collect();
        (!common.is_empty()).then_some(Addressed::Plane(common))
    }

    /// Whether `term` is a remainder by the stride (`i % C`), so within one row.
    fn is_remainder_by(&self, term: Node, stride: &[&str]) -> bool {
        let term = without_parentheses(term);
        let divisor = term.child_by_field_name("right").map(|r| factors(r).into_iter().map(|f| self.text_of(f)).collect::<Vec<_>>());
        term.kind() == "binary_expression" && self.operator(term) == "%" && divisor.as_deref() == Some(stride)
    }

    /// A scalar parameter or a number.
    fn is_factor(&self, text: &str) -> bool {
        (self.is_scalar)(text) || (!text.is_empty() && text.chars().all(|c| c.is_ascii_digit()))
    }

    fn operator(&self, binary: Node) -> &str {
        binary.child_by_field_name("operator").map_or("", |o| &self.text[o.byte_range()])
    }
}

/// The terms of a sum, through parentheses: `(a * n + b) + c` is `a * n`, `b`, `c`.
fn sum_terms(node: Node) -> Vec<Node> {
    split_binary(node, "+")
}

/// The factors of a product, through parentheses.
fn factors(node: Node) -> Vec<Node> {
    split_binary(node, "*")
}

fn split_binary<'t>(node: Node<'t>, operator: &str) -> Vec<Node<'t>> {
    let node = without_parentheses(node);
    let is_operator = node.kind() == "binary_expression" && node.child_by_field_name("operator").is_some_and(|o| o.kind() == operator);
    match (is_operator, node.child_by_field_name("left"), node.child_by_field_name("right")) {
        (true, Some(left), Some(right)) => split_binary(left, operator).into_iter().chain(split_binary(right, operator)).collect(),
        _ => vec![node],
    }
}

/// The names and numbers of an expression.
fn words(expression: &str) -> impl Iterator<Item = &str> {
    expression.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).filter(|w| !w.is_empty())
}

fn without_casts(node: Node) -> Node {
    let node = without_parentheses(node);
    match node.kind() {
        "cast_expression" => node.child_by_field_name("value").map_or(node, without_casts),
        _ => node,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::Document;

    fn body_of(doc: &Document) -> Node<'_> {
        descendants(doc.tree().unwrap().root_node()).find(|n| n.kind() == "function_definition").unwrap().child_by_field_name("body").unwrap()
    }

    #[test]
    fn indices_read_from_a_buffer_stay_below_the_extent_the_kernel_holds_them_under() {
        let index = |source: &str, buffer: &str| {
            let doc = Document::new(source.to_string());
            compared_extent(doc.text(), body_of(&doc), buffer, &|name| ["n", "rows"].contains(&name)).map(str::to_string)
        };
        let asserted = "__global__ void k(const long *idx, const float *x, float *y, int n) {\n  const int j = (int)idx[threadIdx.x];\n  assert(j < n);\n  y[threadIdx.x] = x[j];\n}\n";
        assert_eq!(index(asserted, "idx").as_deref(), Some("n"));
        let exits = "__global__ void k(const int *idx, float *y, int rows) {\n  int r = idx[blockIdx.x];\n  if (r >= rows || r < 0) return;\n  y[r] = 1.0f;\n}\n";
        assert_eq!(index(exits, "idx").as_deref(), Some("rows"));
        // Compared with a local, or read and never compared: no extent the spec could say.
        let local = "__global__ void k(const int *idx, float *y, int n) {\n  int m = n / 2;\n  int r = idx[0];\n  if (r < m) y[r] = 1.0f;\n}\n";
        assert_eq!(index(local, "idx"), None);
        let unchecked = "__global__ void k(const int *idx, float *y, int n) {\n  int r = idx[0];\n  y[r] = 1.0f;\n}\n";
        assert_eq!(index(unchecked, "idx"), None);
    }

    fn addressed(source: &str, buffer: &str) -> Option<String> {
        let doc = Document::new(source.to_string());
        let scalars = ["n", "m", "c", "C", "V", "height", "width", "channels"];
        let buffers = ["points", "grad_points", "grad_input", "wte", "probs", "table", "out", "x"];
        let found = addressed_extent(doc.text(), body_of(&doc), buffer, &|name| scalars.contains(&name), &|name| buffers.contains(&name));
        found.map(|a| match a {
            Addressed::Plane(factors) => format!("plane {}", factors.join(" * ")),
            Addressed::Rows { buffer, stride } => format!("rows of {buffer} by [{}]", stride.join(", ")),
        })
    }

    #[test]
    fn indices_into_an_advanced_pointer_address_the_plane_its_offset_steps_over() {
        let gather = "__global__ void k(int b, int c, int n, int m, const float *points, const int *idx, float *out) {\n  int bs = blockIdx.z, ci = blockIdx.y, p = threadIdx.x;\n  out += bs * c * m + ci * m + p;\n  idx += bs * m + p;\n  points += bs * c * n + ci * n;\n  out[0] = points[idx[0]];\n}\n";
        assert_eq!(addressed(gather, "idx").as_deref(), Some("plane n"));
        let scatter = "__global__ void k(int c, int n, float *grad_points, const int *idx) {\n  atomicAdd(grad_points + blockIdx.z * c * n + blockIdx.y * n + idx[threadIdx.x], 1.0f);\n}\n";
        assert_eq!(addressed(scatter, "idx").as_deref(), Some("plane n"));
        let summed_in_a_local = "__global__ void k(int c, int n, const float *points, const int *idx, float *out) {\n  int in_idx = blockIdx.z * c * n + blockIdx.y * n + idx[threadIdx.x];\n  out[threadIdx.x] = points[in_idx];\n}\n";
        assert_eq!(addressed(summed_in_a_local, "idx").as_deref(), Some("plane n"));
        let pooled = "__global__ void k(const int *argmax, float *grad_input, int channels, int height, int width) {\n  int c = threadIdx.x, b = blockIdx.x;\n  float *grad_input_offset = grad_input + ((b * channels + c) * height * width);\n  int argmax_index = argmax[threadIdx.x];\n  if (argmax_index != -1) atomicAdd(grad_input_offset + argmax_index, 1.0f);\n}\n";
        assert_eq!(addressed(pooled, "argmax").as_deref(), Some("plane height * width"));
    }

    #[test]
    fn indices_scaled_by_a_row_address_rows_of_the_buffer() {
        let embedding = "__global__ void k(float *out, const int *inp, const float *wte, int C) {\n  int c = threadIdx.x;\n  int ix = inp[blockIdx.x];\n  const float *wte_ix = wte + ix * C + c;\n  out[blockIdx.x * C + c] = *wte_ix;\n}\n";
        assert_eq!(addressed(embedding, "inp").as_deref(), Some("rows of wte by [C]"));
        let row_of_probs = "__global__ void k(const float *probs, const int *targets, float *out, int V) {\n  const float *probs_bt = probs + blockIdx.x * V;\n  int ix = targets[blockIdx.x];\n  out[blockIdx.x] = probs_bt[ix];\n}\n";
        assert_eq!(addressed(row_of_probs, "targets").as_deref(), Some("plane V"));
        let whole_table = "__global__ void k(const float *table, const long *keys, float *out) {\n  out[threadIdx.x] = table[(int)keys[threadIdx.x]];\n}\n";
        assert_eq!(addressed(whole_table, "keys").as_deref(), Some("rows of table by []"));
        // Points of 3 coordinates in batches of `n`: the rows of one batch.
        let batched = "__global__ void k(const float *x, const int *idx, float *out, int n) {\n  int src = idx[threadIdx.x];\n  for (int j = 0; j < 3; j++) out[3 * threadIdx.x + j] = x[blockIdx.z * n * 3 + src * 3 + j];\n}\n";
        assert_eq!(addressed(batched, "idx").as_deref(), Some("plane n"));
        let within_the_row = "__global__ void k(const float *wte, const int *inp, float *out, int C) {\n  int ix = inp[blockIdx.x];\n  out[threadIdx.x] = wte[ix * C + threadIdx.x % C];\n}\n";
        assert_eq!(addressed(within_the_row, "inp").as_deref(), Some("rows of wte by [C]"));
        let partly_the_stride = "__global__ void k(const float *wte, const int *inp, float *out, int C) {\n  int ix = inp[blockIdx.x];\n  out[threadIdx.x] = wte[ix * C + threadIdx.x / C];\n}\n";
        assert_eq!(addressed(partly_the_stride, "inp"), None);
    }

    #[test]
    fn shifted_disagreeing_or_unresolved_indices_address_nothing_known() {
        let shifted = "__global__ void k(const int *idx, float *out, int n) {\n  int j = idx[threadIdx.x] - 1;\n  out[j] = 1.0f;\n}\n";
        assert_eq!(addressed(shifted, "idx"), None);
        let shifted_in_place = "__global__ void k(const int *idx, float *out, int n) {\n  out[idx[threadIdx.x] - 1] = 1.0f;\n}\n";
        assert_eq!(addressed(shifted_in_place, "idx"), None);
        let disagreeing = "__global__ void k(const int *idx, float *out, const float *x, int n, int m) {\n  int j = idx[0];\n  out[blockIdx.x * n + j] = x[blockIdx.x * m + j];\n}\n";
        assert_eq!(addressed(disagreeing, "idx"), None);
        let no_common_factor = "__global__ void k(const int *idx, float *out, int n, int m) {\n  out[blockIdx.x * n + threadIdx.x * m + idx[0]] = 1.0f;\n}\n";
        assert_eq!(addressed(no_common_factor, "idx"), None);
        let reassigned = "__global__ void k(const int *idx, float *out, int n) {\n  out = out + n;\n  out[idx[0]] = 1.0f;\n}\n";
        assert_eq!(addressed(reassigned, "idx"), None);
        let unused = "__global__ void k(const int *idx, float *out, int n) {\n  out[threadIdx.x] = (float)idx[threadIdx.x];\n}\n";
        assert_eq!(addressed(unused, "idx"), None);
    }
}
