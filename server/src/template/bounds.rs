//! Buffer lengths read off the kernel's own bounds checks, for buffers the host code does not
//! allocate where it can be followed: `if (i < N) C[i] = A[i] + B[i];` touches `C` only below
//! `N`, so `C` needs `N` elements; and, given the launch, off the threads that index them
//! unchecked: `p[blockDim.x * blockIdx.x + threadIdx.x]` needs as many elements as the launch has
//! threads. A wrong guess cannot pass unseen: verification puts guard bytes after every buffer,
//! and the original kernel writing past them fails the check.

use tree_sitter::Node;

use crate::syntax::{descendants, identifiers_in};

/// The launch's grid and block, axis by axis, in the host's terms: the extents of `blockIdx`
/// and `threadIdx`.
pub(super) struct LaunchExtents {
    pub grid: Vec<String>,
    pub block: Vec<String>,
}

/// The elements `buffer` needs, when every access to it in `body` is a subscript by an index
/// the kernel bounds: `i` under `i < n` (an `if`, a loop condition or an early `return` on
/// `i >= n`) needs `n`; `y * w + x` under `x < w` and `y < h` needs `h * w`. The bounds may
/// name only what `is_bound_name` accepts (the kernel's scalar parameters). Given the `launch`,
/// a thread coordinate no check bounds is bounded by the launch: `blockIdx.x * blockDim.x +
/// threadIdx.x` by its threads along x, and `y * w + x` of such coordinates by `(rows - 1) * w +
/// columns`. A buffer used only as its first element (`*flag`, `atomicAdd(total, sum)`) needs 1.
/// `None` when the buffer is used any other way (passed on, offset, aliased) or its accesses
/// disagree.
pub(super) fn guarded_length(text: &str, body: Node, buffer: &str, is_bound_name: &dyn Fn(&str) -> bool, launch: Option<&LaunchExtents>) -> Option<String> {
    let mut length: Option<String> = None;
    for node in descendants(body).filter(|n| n.kind() == "identifier" && &text[n.byte_range()] == buffer) {
        let extent = match node.parent().filter(|p| p.kind() == "subscript_expression" && p.child_by_field_name("argument") == Some(node)) {
            Some(access) => {
                let index = access.child_by_field_name("indices").and_then(|i| i.named_child(0))?;
                Bounds { text, body, is_bound_name, launch }.extent(index, access, 0)?
            }
            None if is_first_element(text, node) => "1".to_string(),
            None => return None,
        };
        match &length {
            Some(known) if *known != extent => return None,
            _ => length = Some(extent),
        }
    }
    length
}

/// Whether the buffer `name` is used here as its first element only: `*total`, or the address
/// an atomic updates (`atomicAdd(total, sum)`, one sum for the whole grid).
fn is_first_element(text: &str, name: Node) -> bool {
    let Some(parent) = name.parent() else { return false };
    match parent.kind() {
        "pointer_expression" => parent.child(0).is_some_and(|op| &text[op.byte_range()] == "*"),
        "argument_list" => {
            let first = parent.named_child(0).is_some_and(|a| a.id() == name.id());
            let function = parent.parent().and_then(|call| call.child_by_field_name("function")).map(|f| &text[f.byte_range()]);
            first && function.is_some_and(|f| f.starts_with("atomic"))
        }
        _ => false,
    }
}

/// How many locals deep an index is read for its value.
const MAX_LOCALS: usize = 4;

struct Bounds<'t, 'f> {
    text: &'t str,
    body: Node<'t>,
    is_bound_name: &'f dyn Fn(&str) -> bool,
    launch: Option<&'f LaunchExtents>,
}

impl Bounds<'_, '_> {
    /// One past the largest value `index` takes at `at`; `locals` is how many locals deep the
    /// index was read (each stands for its value, up to [`MAX_LOCALS`]: two locals may be each
    /// other's values in separate blocks).
    fn extent(&self, index: Node, at: Node, locals: usize) -> Option<String> {
        let index = without_parentheses(index);
        match index.kind() {
            // A local computed once (`uint i = __umul24(y, w) + x;`) stands for its value.
            "identifier" => self.bound(&self.text[index.byte_range()], at).or_else(|| {
                let value = self.local_value(&self.text[index.byte_range()]).filter(|_| locals < MAX_LOCALS)?;
                self.extent(value, at, locals + 1)
            }),
            "field_expression" => match self.builtin(index)? {
                ("blockIdx", axis) => self.launch?.grid.get(axis).cloned(),
                ("threadIdx", axis) => self.launch?.block.get(axis).cloned(),
                _ => None,
            },
            // `row * width + col`: rows of `width`, the last as long as `col` goes.
            "binary_expression" if self.operator(index) == "+" => {
                let (left, right) = (without_parentheses(index.child_by_field_name("left")?), without_parentheses(index.child_by_field_name("right")?));
                let ((a, b), column) = match self.factors(left) {
                    Some(factors) => (factors, right),
                    None => (self.factors(right)?, left),
                };
                let columns = self.extent(column, at, locals)?;
                [(a, b), (b, a)].into_iter().find_map(|(row, width)| {
                    let width = self.width(width, locals)?;
                    let rows = self.extent(row, at, locals)?;
                    Some(match columns == width {
                        true => format!("{} * {}", parenthesised(&rows), parenthesised(&width)),
                        false => format!("({} - 1) * {} + {}", parenthesised(&rows), parenthesised(&width), parenthesised(&columns)),
                    })
                })
            }
            _ => None,
        }
    }

    /// The row width a factor of an index stands for: a scalar parameter, a number, or the
    /// block's extent (`blockDim.x`, or a local that holds it).
    fn width(&self, factor: Node, locals: usize) -> Option<String> {
        let factor = without_parentheses(factor);
        let text = self.text[factor.byte_range()].trim();
        match factor.kind() {
            "number_literal" => Some(text.to_string()),
            "identifier" if (self.is_bound_name)(text) => Some(text.to_string()),
            "identifier" => self.width(self.local_value(text).filter(|_| locals < MAX_LOCALS)?, locals + 1),
            "field_expression" => match self.builtin(factor)? {
                ("blockDim", axis) => self.launch?.block.get(axis).cloned(),
                _ => None,
            },
            _ => None,
        }
    }

    /// `threadIdx.y` → (`threadIdx`, 1): a built-in coordinate and its axis.
    fn builtin(&self, field: Node) -> Option<(&'static str, usize)> {
        let object = self.text[field.child_by_field_name("argument")?.byte_range()].trim();
        let member = &self.text[field.child_by_field_name("field")?.byte_range()];
        let axis = ["x", "y", "z"].iter().position(|a| *a == member)?;
        let object = ["blockIdx", "threadIdx", "blockDim"].into_iter().find(|b| *b == object)?;
        Some((object, axis))
    }

    /// The bound the kernel checks `name` against before `at`: an enclosing `if` or loop
    /// condition, or an early `return` at the top of the body.
    fn bound(&self, name: &str, at: Node) -> Option<String> {
        let enclosing = std::iter::successors(at.parent(), |n| n.parent()).take_while(|n| n.id() != self.body.id());
        let mut child = at;
        for ancestor in enclosing {
            let condition = match ancestor.kind() {
                "if_statement" if ancestor.child_by_field_name("consequence") == Some(child) => ancestor.child_by_field_name("condition").and_then(|c| c.child_by_field_name("value")),
                "for_statement" if ancestor.child_by_field_name("body") == Some(child) => ancestor.child_by_field_name("condition"),
                // `i < n ? in[i] : 0.0f`, a reduction's load.
                "conditional_expression" if ancestor.child_by_field_name("consequence") == Some(child) => ancestor.child_by_field_name("condition"),
                _ => None,
            };
            if let Some(bound) = condition.and_then(|c| self.upper_bound(c, name, "&&", false)) {
                return Some(bound);
            }
            child = ancestor;
        }
        let mut cursor = self.body.walk();
        let statements: Vec<Node> = self.body.named_children(&mut cursor).take_while(|s| s.end_byte() <= at.start_byte()).collect();
        let early_exits = statements.into_iter().filter(|s| s.kind() == "if_statement" && returns(*s));
        early_exits.filter_map(|s| s.child_by_field_name("condition")?.child_by_field_name("value")).find_map(|c| self.upper_bound(c, name, "||", true))
    }

    /// The bound on `name` in one of `condition`'s terms joined by `joiner` (`&&` for the
    /// condition to go on, `||` for an exit's); `negated` reads the exit's terms (`i >= n`).
    fn upper_bound(&self, condition: Node, name: &str, joiner: &str, negated: bool) -> Option<String> {
        let condition = without_parentheses(condition);
        if condition.kind() != "binary_expression" {
            return None;
        }
        let operator = self.operator(condition);
        let (left, right) = (condition.child_by_field_name("left")?, condition.child_by_field_name("right")?);
        if operator == joiner {
            return self.upper_bound(left, name, joiner, negated).or_else(|| self.upper_bound(right, name, joiner, negated));
        }
        let (left_text, right_text) = (self.text[left.byte_range()].trim(), self.text[right.byte_range()].trim());
        // Normalised to `name OP bound`.
        let (operator, bound) = match (left_text == name, right_text == name) {
            (true, false) => (operator, right_text),
            (false, true) => (mirrored(operator)?, left_text),
            _ => return None,
        };
        if !identifiers_in(bound).all(|w| (self.is_bound_name)(w)) || bound.contains(['(', '[', '?', '.']) {
            return None;
        }
        match (operator, negated) {
            ("<", false) | (">=", true) => Some(bound.to_string()),
            ("<=", false) | (">", true) => Some(format!("{} + 1", parenthesised(bound))),
            _ => None,
        }
    }

    /// The two factors of `a * b`, or of the 24-bit multiplies old samples use
    /// (`__umul24(a, b)`, `__mul24(a, b)`).
    fn factors<'n>(&self, product: Node<'n>) -> Option<(Node<'n>, Node<'n>)> {
        let pair = |a: Option<Node<'n>>, b: Option<Node<'n>>| Some((without_parentheses(a?), without_parentheses(b?)));
        match product.kind() {
            "binary_expression" if self.operator(product) == "*" => pair(product.child_by_field_name("left"), product.child_by_field_name("right")),
            "call_expression" if product.child_by_field_name("function").is_some_and(|f| matches!(&self.text[f.byte_range()], "__umul24" | "__mul24")) => {
                let arguments = product.child_by_field_name("arguments")?;
                (arguments.named_child_count() == 2).then(|| pair(arguments.named_child(0), arguments.named_child(1))).flatten()
            }
            _ => None,
        }
    }

    /// The value of the local `name`, when the body declares it once with a value and never
    /// assigns it again.
    fn local_value(&self, name: &str) -> Option<Node<'_>> {
        let is_name = |n: Option<Node>| n.is_some_and(|n| n.kind() == "identifier" && &self.text[n.byte_range()] == name);
        let mut declared = descendants(self.body).filter(|n| n.kind() == "init_declarator" && is_name(n.child_by_field_name("declarator")));
        let value = declared.next().filter(|_| declared.next().is_none())?.child_by_field_name("value")?;
        let assigned = descendants(self.body).any(|n| match n.kind() {
            "assignment_expression" => is_name(n.child_by_field_name("left").map(without_parentheses)),
            "update_expression" => is_name(n.child_by_field_name("argument").map(without_parentheses)),
            _ => false,
        });
        (!assigned).then_some(value)
    }

    fn operator(&self, binary: Node) -> &str {
        binary.child_by_field_name("operator").map_or("", |o| &self.text[o.byte_range()])
    }
}

/// `a OP b` is `b mirrored(OP) a`.
fn mirrored(operator: &str) -> Option<&'static str> {
    Some(match operator {
        "<" => ">",
        ">" => "<",
        "<=" => ">=",
        ">=" => "<=",
        _ => return None,
    })
}

/// Whether an `if` does nothing but return.
fn returns(statement: Node) -> bool {
    let Some(consequence) = statement.child_by_field_name("consequence") else { return false };
    if statement.child_by_field_name("alternative").is_some() {
        return false;
    }
    match consequence.kind() {
        "return_statement" => true,
        "compound_statement" => consequence.named_child_count() == 1 && consequence.named_child(0).is_some_and(|c| c.kind() == "return_statement"),
        _ => false,
    }
}

pub(super) fn without_parentheses(mut node: Node) -> Node {
    while node.kind() == "parenthesized_expression" {
        match node.named_child(0) {
            Some(inner) => node = inner,
            None => break,
        }
    }
    node
}

/// `expression` as one operand: a name or a number as it is, else in parentheses.
pub(super) fn parenthesised(expression: &str) -> String {
    if expression.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        expression.to_string()
    } else {
        format!("({expression})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::Document;

    fn length_of(source: &str, buffer: &str) -> Option<String> {
        let doc = Document::new(source.to_string());
        let root = doc.tree().unwrap().root_node();
        let function = descendants(root).find(|n| n.kind() == "function_definition").unwrap();
        let body = function.child_by_field_name("body").unwrap();
        let scalars = ["n", "w", "h", "len", "rows"];
        guarded_length(doc.text(), body, buffer, &|name| scalars.contains(&name), None)
    }

    #[test]
    fn an_index_under_an_if_is_bounded_by_its_condition() {
        let source = "__global__ void add(const float *a, float *c, int n) {\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) c[i] = a[i] + 1.0f;\n}\n";
        assert_eq!(length_of(source, "a").as_deref(), Some("n"));
        assert_eq!(length_of(source, "c").as_deref(), Some("n"));
    }

    #[test]
    fn early_returns_and_grid_stride_loops_bound_their_index() {
        let exit = "__global__ void k(int *data, int len) {\n  int id = blockIdx.x * blockDim.x + threadIdx.x;\n  if (id > len)\n    return;\n  data[id] += 1;\n}\n";
        assert_eq!(length_of(exit, "data").as_deref(), Some("len + 1"));
        let stride = "__global__ void k(float *x, int n) {\n  for (int i = threadIdx.x; i < n; i += blockDim.x * gridDim.x) { x[i] *= 2.0f; }\n}\n";
        assert_eq!(length_of(stride, "x").as_deref(), Some("n"));
    }

    #[test]
    fn a_load_under_a_conditional_expression_is_bounded_by_its_condition() {
        let source = "__global__ void k(const float *in, float *out, int n) {\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  float v = i < n ? in[i] : 0.0f;\n  if (i < n) out[i] = v;\n}\n";
        assert_eq!(length_of(source, "in").as_deref(), Some("n"));
        // The other branch is where the index is out of bounds.
        let inverted = "__global__ void k(const float *in, float *out, int n) {\n  int i = threadIdx.x;\n  float v = i < n ? 0.0f : in[i];\n  out[0] = v;\n}\n";
        assert_eq!(length_of(inverted, "in"), None);
    }

    #[test]
    fn a_row_major_index_needs_rows_times_width() {
        let source = "__global__ void k(float *out, int w, int h) {\n  int x = threadIdx.x, y = blockIdx.y;\n  if (x >= w || y >= h) return;\n  out[y * w + x] = 0.0f;\n}\n";
        assert_eq!(length_of(source, "out").as_deref(), Some("h * w"));
        // cuda-samples' render kernels: the index a local of a 24-bit multiply.
        let samples = "__global__ void k(uint *out, uint w, uint h) {\n  uint x = __umul24(blockIdx.x, blockDim.x) + threadIdx.x;\n  uint y = __umul24(blockIdx.y, blockDim.y) + threadIdx.y;\n  if ((x < w) && (y < h)) {\n    uint i = __umul24(y, w) + x;\n    out[i] = 1;\n  }\n}\n";
        assert_eq!(length_of(samples, "out").as_deref(), Some("h * w"));
        let moved = samples.replace("out[i] = 1;", "i += 1;\n    out[i] = 1;");
        assert_eq!(length_of(&moved, "out"), None, "a local assigned again is not its value");
        let each_others = "__global__ void k(float *out, int w) {\n  { int i = j; }\n  { int j = i; out[j] = 0.0f; }\n}\n";
        assert_eq!(length_of(each_others, "out"), None, "locals that are each other's values end the reading");
    }

    fn length_in_launch(source: &str, buffer: &str) -> Option<String> {
        let doc = Document::new(source.to_string());
        let body = descendants(doc.tree().unwrap().root_node()).find(|n| n.kind() == "function_definition").unwrap().child_by_field_name("body").unwrap();
        let launch = LaunchExtents { grid: vec!["gx".into(), "gy".into()], block: vec!["bx".into(), "by".into()] };
        guarded_length(doc.text(), body, buffer, &|name| ["n", "w"].contains(&name), Some(&launch))
    }

    #[test]
    fn unchecked_thread_coordinates_are_bounded_by_the_launch() {
        let flat = "__global__ void k(char *p, char v) { p[blockDim.x * blockIdx.x + threadIdx.x] = v; }\n";
        assert_eq!(length_in_launch(flat, "p").as_deref(), Some("gx * bx"));
        assert_eq!(length_of(flat, "p"), None, "without the launch nothing bounds them");
        let per_block = "__global__ void k(float *sums) { if (threadIdx.x == 0) sums[blockIdx.x] = 1.0f; }\n";
        assert_eq!(length_in_launch(per_block, "sums").as_deref(), Some("gx"));
        // cuda-samples' simpleCUDA2GL: the block's extents through locals, rows of `w`.
        let image = "__global__ void k(unsigned *out, int w) {\n  int tx = threadIdx.x, ty = threadIdx.y;\n  int bw = blockDim.x, bh = blockDim.y;\n  int x = blockIdx.x * bw + tx;\n  int y = blockIdx.y * bh + ty;\n  out[y * w + x] = 0;\n}\n";
        assert_eq!(length_in_launch(image, "out").as_deref(), Some("((gy * by) - 1) * w + (gx * bx)"));
        // A check still bounds what it checks: the columns below `w` fill whole rows.
        let checked = image.replace("out[y * w + x] = 0;", "if (x < w) out[y * w + x] = 0;");
        assert_eq!(length_in_launch(&checked, "out").as_deref(), Some("(gy * by) * w"));
        let guarded = "__global__ void k(float *x, int n) {\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) x[i] = 0.0f;\n}\n";
        assert_eq!(length_in_launch(guarded, "x").as_deref(), Some("n"));
        let strided = "__global__ void k(float *x) { x[2 * threadIdx.x] = 0.0f; }\n";
        assert_eq!(length_in_launch(strided, "x"), None, "a multiple of a coordinate is no coordinate");
    }

    #[test]
    fn unbounded_or_escaping_buffers_have_no_length_and_a_total_has_one() {
        let unguarded = "__global__ void k(float *out, int n) {\n  out[threadIdx.x] = 0.0f;\n}\n";
        assert_eq!(length_of(unguarded, "out"), None);
        let passed_on = "__global__ void k(float *out, int n) {\n  int i = threadIdx.x;\n  if (i < n) { out[i] = 0.0f; atomicAdd(out, 1.0f); }\n}\n";
        assert_eq!(length_of(passed_on, "out"), None);
        let bound_by_a_local = "__global__ void k(float *out, int n) {\n  int m = n / 2;\n  int i = threadIdx.x;\n  if (i < m) out[i] = 0.0f;\n}\n";
        assert_eq!(length_of(bound_by_a_local, "out"), None);
        // The whole grid's one total: its first element.
        let total = "__global__ void k(const float *in, float *total, int n) {\n  int i = threadIdx.x;\n  if (i < n) atomicAdd(total, in[i]);\n}\n";
        assert_eq!(length_of(total, "total").as_deref(), Some("1"));
        assert_eq!(length_of("__global__ void k(int *flag) { *flag = 1; }\n", "flag").as_deref(), Some("1"));
        let disagreeing = "__global__ void k(float *out, int n, int rows) {\n  int i = threadIdx.x;\n  if (i < n) out[i] = 0.0f;\n  if (i < rows) out[i] = 1.0f;\n}\n";
        assert_eq!(length_of(disagreeing, "out"), None);
    }
}
