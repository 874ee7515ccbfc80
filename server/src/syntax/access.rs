//! What a kernel does with the buffers its pointer parameters point to: read them, write them,
//! or both. Templatize gives the spec's roles from it, and `spec check` holds a spec's roles up
//! against the original kernel, since the bound counts a buffer read and written twice.

use std::collections::BTreeSet;

use tree_sitter::Node;

use super::host::{declared_name, declared_names};
use super::{descendants, identifiers_in};

/// What a kernel does with a buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Neither read nor written through the pointer (passed as `NULL`, or not used).
    Untouched,
    Reads,
    Writes,
    ReadsAndWrites,
}

/// Whether the kernel only stores the scalar `name` into the memory its parameters point to, as
/// it is or through arithmetic (`ptr[i] = val;`, `out[i] = 2 * value + 1;`), or never reads it:
/// its value decides no index, bound, branch or call, so any value does the same work. A store
/// into shared memory or a local (`s_left[0] = lg;`) is read back by the kernel, which may
/// decide anything by it.
pub fn only_stored(text: &str, body: Node, name: &str) -> bool {
    let global = global_memory_names(text, body);
    descendants(body).filter(|n| n.kind() == "identifier" && &text[n.byte_range()] == name).all(|use_| {
        let mut value = use_;
        while let Some(parent) = value.parent().filter(|p| carries_value(text, *p, value)) {
            value = parent;
        }
        value.parent().is_some_and(|store| {
            let target = store.child_by_field_name("left");
            store.kind() == "assignment_expression"
                && store.child_by_field_name("right") == Some(value)
                && target.and_then(|t| stored_through(text, t)).is_some_and(|base| global.iter().any(|g| g == base))
        })
    })
}

/// The names through which the kernel whose body is `body` reaches the memory its parameters
/// point to: the parameters, and the local pointers made from anything but its `__shared__`
/// arrays (`float *out_row = out + row * n;`).
fn global_memory_names(text: &str, body: Node) -> Vec<String> {
    let mut names = body.parent().map(|kernel| super::host::parameter_names(text, kernel)).unwrap_or_default();
    let declarations: Vec<Node> = descendants(body).filter(|n| n.kind() == "declaration").collect();
    let shared: Vec<&str> = declarations.iter().filter(|d| text[d.byte_range()].contains("__shared__")).flat_map(|d| declared_names(text, *d)).collect();
    for declaration in declarations.iter().filter(|d| !text[d.byte_range()].contains("__shared__")) {
        for made in declaration.children_by_field_name("declarator", &mut declaration.walk()).filter(|d| d.kind() == "init_declarator") {
            let pointer = made.child_by_field_name("declarator").filter(|d| d.kind() == "pointer_declarator");
            let from_shared = made.child_by_field_name("value").is_some_and(|v| identifiers_in(&text[v.byte_range()]).any(|w| shared.contains(&w)));
            if let Some(name) = pointer.and_then(declared_name).filter(|_| !from_shared) {
                names.push(text[name.byte_range()].to_string());
            }
        }
    }
    names
}

/// The name a store target reaches memory through: `ptr` of `ptr[i]`, `*ptr`, `out->x` and
/// `params.out[i]`.
fn stored_through<'t>(text: &'t str, target: Node) -> Option<&'t str> {
    let mut node = target;
    loop {
        node = match node.kind() {
            "subscript_expression" | "pointer_expression" | "field_expression" => node.child_by_field_name("argument")?,
            "parenthesized_expression" | "cast_expression" => node.child_by_field_name("value").or_else(|| node.named_child(0))?,
            "identifier" => return Some(&text[node.byte_range()]),
            _ => return None,
        };
    }
}

/// Whether `parent` passes `child`'s value on as arithmetic does: a cast, parentheses, a sign,
/// `+ - * /`, or a branch of `?:` (not its condition).
fn carries_value(text: &str, parent: Node, child: Node) -> bool {
    match parent.kind() {
        "parenthesized_expression" | "cast_expression" => true,
        "unary_expression" => parent.child_by_field_name("operator").is_some_and(|o| matches!(&text[o.byte_range()], "-" | "+")),
        "binary_expression" => parent.child_by_field_name("operator").is_some_and(|o| matches!(&text[o.byte_range()], "+" | "-" | "*" | "/")),
        "conditional_expression" => parent.child_by_field_name("condition") != Some(child),
        _ => false,
    }
}

/// How many calls deep [`access_of`] follows a buffer into the file's own functions.
const MAX_ROLE_DEPTH: usize = 4;

/// Whether the kernel whose body is `body` writes the buffer `name` points to, reads it, or both,
/// following pointers derived from it (`half* row = out + offset`), pointer casts and the
/// file's functions it is passed to (`store(out + i, v)`).
/// `name` may be a struct's member by its path (`params.out_ptr`).
pub fn access_of(text: &str, body: Node, name: &str) -> Access {
    access_at_depth(text, body, name, 0)
}

fn access_at_depth(text: &str, body: Node, name: &str, depth: usize) -> Access {
    let mut names: BTreeSet<String> = BTreeSet::from([name.to_string()]);
    // Aliases first: declarations whose initial value mentions a tracked pointer.
    for node in descendants(body) {
        if node.kind() == "init_declarator" {
            let value = node.child_by_field_name("value").map(|v| &text[v.byte_range()]).unwrap_or("");
            let declarator = node.child_by_field_name("declarator");
            if declarator.is_some_and(|d| d.kind() == "pointer_declarator") && names.iter().any(|n| mentions(value, n)) {
                if let Some(alias) = declarator.and_then(declared_name) {
                    names.insert(text[alias.byte_range()].to_string());
                }
            }
        }
    }
    let (mut reads, mut writes) = (false, false);
    for node in descendants(body) {
        let named = match node.kind() {
            "identifier" => names.contains(&text[node.byte_range()]),
            // A struct's member (`params.out`), tracked by its path.
            "field_expression" => names.contains(&text[node.byte_range()].split_whitespace().collect::<String>()),
            _ => false,
        };
        if !named {
            continue;
        }
        // `*reinterpret_cast<uint4*>(out + i) = v` writes `out` as `out[i] = v` does.
        let Some(pointer) = pointer_of(text, node) else { continue };
        let Some(parent) = pointer.parent() else { continue };
        let access = match parent.kind() {
            // `pos[i].x += v` writes `pos` as much as `pos[i] += v` does, and a tensor
            // accessor's `out[b][c] = v` as much as `out[b * C + c] = v`.
            "subscript_expression" if parent.child_by_field_name("argument") == Some(pointer) => {
                std::iter::successors(Some(parent), element_around).last().unwrap_or(parent)
            }
            "pointer_expression" if text[parent.byte_range()].starts_with('*') => parent,
            // A tensor accessor's `x.size(0)`, `x.stride(1)`: its extents, no element.
            "field_expression" if parent.child_by_field_name("field").is_some_and(|f| matches!(&text[f.byte_range()], "size" | "stride")) => continue,
            // Declarations, aliases and comparisons: the accesses through the alias count.
            "init_declarator" | "pointer_declarator" | "binary_expression" | "parameter_declaration" => continue,
            // Moving the pointer (`p += offset;`, `p = base;`, `p++;`) touches no element.
            "assignment_expression" if parent.child_by_field_name("left") == Some(pointer) => continue,
            "update_expression" if parent.parent().is_some_and(|s| s.kind() == "expression_statement" || s.kind() == "for_statement") => continue,
            // Passed to a function of the file: what that function does with it.
            "argument_list" if depth < MAX_ROLE_DEPTH => {
                add(&mut reads, &mut writes, passed_access(text, parent, pointer, depth));
                continue;
            }
            // Passed on elsewhere (`atomicAdd(out, v)`): assume both.
            _ => {
                reads = true;
                writes = true;
                continue;
            }
        };
        // `FLOAT4(c[i]) = v`: a macro (or a function returning a reference) that stands for the
        // element on the left of an assignment writes it.
        let stood_for = access.parent().filter(|a| a.kind() == "argument_list").and_then(|a| a.parent()).filter(|call| call.kind() == "call_expression");
        if let Some(compound) = assignment_to(text, access).or_else(|| stood_for.and_then(|call| assignment_to(text, call))) {
            writes = true;
            reads |= compound;
            continue;
        }
        match access.parent() {
            // `&x[i]` passed to a function (`__ldg(&x[i])`): what the function does with it.
            Some(address) if address.kind() == "pointer_expression" && text[address.byte_range()].starts_with('&') && address.parent().is_some_and(|a| a.kind() == "argument_list") && depth < MAX_ROLE_DEPTH => {
                add(&mut reads, &mut writes, passed_access(text, address.parent().expect("checked"), address, depth));
            }
            Some(u) if u.kind() == "update_expression" || (u.kind() == "pointer_expression" && text[u.byte_range()].starts_with('&')) => {
                reads = true;
                writes = true;
            }
            _ => reads = true,
        }
    }
    match (reads, writes) {
        (true, true) => Access::ReadsAndWrites,
        (false, true) => Access::Writes,
        (true, false) => Access::Reads,
        (false, false) => Access::Untouched,
    }
}

/// The access that takes `access` further into an element: a member of it, or the next
/// dimension's index.
fn element_around<'t>(access: &Node<'t>) -> Option<Node<'t>> {
    access.parent().filter(|p| p.kind() == "field_expression" || (p.kind() == "subscript_expression" && p.child_by_field_name("argument") == Some(*access)))
}

/// Whether `value` mentions the pointer `name`: a variable, or a struct's member by its path
/// (`params.out` in `(float *)params.out + i`, not in `params.out_ptr`).
fn mentions(value: &str, name: &str) -> bool {
    if !name.contains('.') {
        return identifiers_in(value).any(|w| w == name);
    }
    let compact: String = value.split_whitespace().collect();
    compact.match_indices(name).any(|(at, _)| {
        let before = compact[..at].chars().next_back();
        let after = compact[at + name.len()..].chars().next();
        !before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.') && !after.is_some_and(|c| c.is_alphanumeric() || c == '_')
    })
}

/// Whether `target` is the left side of an assignment, and if so whether a compound one (`+=`),
/// which reads it too.
fn assignment_to(text: &str, target: Node) -> Option<bool> {
    let assignment = target.parent().filter(|a| a.kind() == "assignment_expression" && a.child_by_field_name("left") == Some(target))?;
    Some(assignment.child_by_field_name("operator").is_some_and(|op| &text[op.byte_range()] != "="))
}

/// What the function called with `arguments` does with the buffer passed as `argument`: read,
/// write or both, from its body when the file defines it; both when it does not (`atomicAdd`).
fn passed_access(text: &str, arguments: Node, argument: Node, depth: usize) -> Access {
    let callee = arguments.parent().filter(|c| c.kind() == "call_expression").and_then(|c| c.child_by_field_name("function"));
    let callee = callee.map(|f| f.child_by_field_name("name").unwrap_or(f)).map(|f| &text[f.byte_range()]);
    let mut cursor = arguments.walk();
    let index = arguments.named_children(&mut cursor).position(|a| a == argument);
    if let Some(access) = callee.zip(index).and_then(|(name, i)| builtin_access(name, i)) {
        return access;
    }
    let root = std::iter::successors(Some(arguments), |n| n.parent()).last().expect("a node has a root");
    let definition = callee.and_then(|name| super::host::functions(text, root).into_iter().find(|(f, _)| *f == name).map(|(_, node)| node));
    let parameter = definition.zip(index).and_then(|(d, i)| super::host::parameters(text, d).into_iter().nth(i)).filter(|p| !p.name.is_empty());
    match (definition.and_then(|d| d.child_by_field_name("body")), parameter) {
        // A function that takes the pointer and touches nothing through it has lost it on the
        // way (turned into an integer and back, as llm.c's `atomicAddX` does): assume both.
        (Some(body), Some(parameter)) => match access_at_depth(text, body, &parameter.name, depth + 1) {
            Access::Untouched => Access::ReadsAndWrites,
            access => access,
        },
        _ => Access::ReadsAndWrites,
    }
}

/// Adds what a call does with the buffer to what the kernel does with it.
fn add(reads: &mut bool, writes: &mut bool, access: Access) {
    *reads |= matches!(access, Access::Reads | Access::ReadsAndWrites);
    *writes |= matches!(access, Access::Writes | Access::ReadsAndWrites);
}

/// What a CUDA built-in does with the pointer it takes as argument `index`: the cache-hinted
/// loads (`__ldcs(p)`, llm.c's streaming reads) read it, the cache-hinted stores (`__stcs(p, v)`)
/// write it, `memcpy(dst, src, n)` writes its first and reads its second. `None` for any other
/// function (atomics read and write).
fn builtin_access(function: &str, index: usize) -> Option<Access> {
    const LOADS: [&str; 6] = ["__ldg", "__ldca", "__ldcg", "__ldcs", "__ldlu", "__ldcv"];
    const STORES: [&str; 4] = ["__stwb", "__stcg", "__stcs", "__stwt"];
    match (function, index) {
        (f, 0) if LOADS.contains(&f) => Some(Access::Reads),
        (f, 0) if STORES.contains(&f) => Some(Access::Writes),
        ("memcpy", 0) => Some(Access::Writes),
        ("memcpy", 1) => Some(Access::Reads),
        _ => None,
    }
}

/// The expression that still points into the buffer `identifier` names: the identifier with
/// the pointer arithmetic (`out + i`), parentheses and pointer casts (`(float4*)p`,
/// `reinterpret_cast<uint4*>(p)`) around it. `None` where it becomes a number: an alignment
/// test (`(unsigned long long)(p) % 16`) neither reads nor writes the buffer.
fn pointer_of<'t>(text: &str, identifier: Node<'t>) -> Option<Node<'t>> {
    const CASTS: [&str; 3] = ["reinterpret_cast", "static_cast", "const_cast"];
    let mut current = identifier;
    while let Some(parent) = current.parent() {
        match parent.kind() {
            "parenthesized_expression" => {}
            "binary_expression" if matches!(parent.child_by_field_name("operator").map(|o| &text[o.byte_range()]), Some("+" | "-")) => {}
            "cast_expression" => {
                let to_pointer = parent.child_by_field_name("type").is_some_and(|t| text[t.byte_range()].contains('*'));
                if !to_pointer {
                    return None;
                }
            }
            "argument_list" => {
                let call = parent.parent().filter(|c| c.kind() == "call_expression");
                let cast = call.and_then(|c| c.child_by_field_name("function")).filter(|f| f.kind() == "template_function");
                let Some(cast) = cast.filter(|f| f.child_by_field_name("name").is_some_and(|n| CASTS.contains(&&text[n.byte_range()]))) else { break };
                if !cast.child_by_field_name("arguments").is_some_and(|a| text[a.byte_range()].contains('*')) {
                    return None;
                }
                current = call.expect("a cast is a call");
                continue;
            }
            _ => break,
        }
        current = parent;
    }
    Some(current)
}


#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::Document;

    fn access_in(source: &str, name: &str) -> Access {
        let doc = Document::new(source.to_string());
        let root = doc.tree().expect("parses").root_node();
        let kernel = descendants(root).filter(|n| n.kind() == "function_definition").find(|f| doc.text()[f.byte_range()].contains("__global__")).expect("a kernel");
        access_of(doc.text(), kernel.child_by_field_name("body").expect("a body"), name)
    }

    #[test]
    fn a_scalar_only_stored_decides_no_work() {
        let only = |source: &str, name: &str| {
            let doc = Document::new(source.to_string());
            let root = doc.tree().expect("parses").root_node();
            let kernel = descendants(root).find(|n| n.kind() == "function_definition").expect("a kernel");
            only_stored(doc.text(), kernel.child_by_field_name("body").expect("a body"), name)
        };
        let fill = "__global__ void k(char* ptr, int sz, char val) { for (int i = threadIdx.x; i < sz; i += blockDim.x) ptr[i] = val; }";
        assert!(only(fill, "val"));
        assert!(!only(fill, "sz"), "a loop bound");
        assert!(only("__global__ void k(float* d, float v) { *d = 2.f * (float)(v) + 1.f; }", "v"));
        assert!(only("__global__ void k(float* d, float v) { d[0] = 1.f; }", "v"), "never read");
        assert!(!only("__global__ void k(float* d, float v) { if (v > 0) d[0] = v; }", "v"), "a branch");
        assert!(!only("__global__ void k(float* d, int v) { d[v] = 1.f; }", "v"), "an index");
        assert!(!only("__global__ void k(float* d, float v) { d[0] = expf(v); }", "v"), "a call");
        assert!(!only("__global__ void k(float* d, float v) { float w = v; d[0] = w; }", "v"), "a local, not followed");
        assert!(!only("__global__ void k(float* d, float v) { __shared__ float s[2]; s[0] = v; __syncthreads(); if (s[0] < 1.f) d[0] = 1.f; }", "v"), "shared memory the kernel reads back");
        assert!(only("struct P { float *out; }; __global__ void k(P p, float v) { p.out[threadIdx.x] = v; }", "v"), "a buffer of a struct parameter");
        assert!(only("__global__ void k(float* d, int n, float v) { float *row = d + blockIdx.x * n; row[threadIdx.x] = v; }", "v"), "a pointer into a parameter's buffer");
        assert!(!only("__global__ void k(float* d, float v) { extern __shared__ float s[]; float *half = s + 32; half[0] = v; __syncthreads(); if (s[32] < 1.f) d[0] = 1.f; }", "v"), "a pointer into shared memory");
        assert!(!only("__global__ void k(float* d, float v) { float staged[2]; staged[0] = v; if (staged[0] < 1.f) d[0] = 1.f; }", "v"), "a local array");
    }

    #[test]
    fn cache_hinted_loads_read_and_stores_write() {
        // llm.c's layernorm: streaming stores of the outputs, streaming loads of the input.
        let streaming = "__global__ void k(float* out, float* mean, float* x, int c) {
            float m = __ldcs(x + c) + __ldg(&x[0]);
            __stcs(mean + blockIdx.x, m);
            __stcs(out + c, m * 2.f);
        }";
        assert_eq!(access_in(streaming, "out"), Access::Writes);
        assert_eq!(access_in(streaming, "mean"), Access::Writes);
        assert_eq!(access_in(streaming, "x"), Access::Reads);
        let copy = "__global__ void k(float* dst, float* src) { memcpy(dst + threadIdx.x, src, 4); }";
        assert_eq!(access_in(copy, "dst"), Access::Writes);
        assert_eq!(access_in(copy, "src"), Access::Reads);
        // A helper that turns the address into an integer: what it does cannot be followed.
        let through_integer = "__device__ void add_to(float* addr, float v) { unsigned long long bits = (unsigned long long)addr; atomicAdd((float*)bits, v); }
            __global__ void k(float* sums) { add_to(&sums[threadIdx.x], 1.f); }";
        assert_eq!(access_in(through_integer, "sums"), Access::ReadsAndWrites);
        // A hinted load of a buffer the kernel also stores: both.
        let in_place = "__global__ void k(float* y) { __stcs(y + threadIdx.x, __ldcs(y + threadIdx.x) * 2.f); }";
        assert_eq!(access_in(in_place, "y"), Access::ReadsAndWrites);
    }

    #[test]
    fn accesses_follow_casts_aliases_and_the_files_functions() {
        let aligned = "__global__ void k(float* out, const float* in, int n) {
            float* row = out + blockIdx.x * n;
            bool aligned = (unsigned long long)(row) % 16 == 0;
            if (aligned) { *reinterpret_cast<float4*>(row + 4 * threadIdx.x) = make_float4(0, 0, 0, 0); }
            else { row[threadIdx.x] = in[threadIdx.x]; }
        }";
        assert_eq!(access_in(aligned, "out"), Access::Writes);
        let cast_only = "__global__ void k(float* out) { *((float2*)out + threadIdx.x) = make_float2(1, 2); }";
        assert_eq!(access_in(cast_only, "out"), Access::Writes);
        let helpers = "__device__ void put(float* p, float v) { p[0] = v; }
            __device__ void bump(float* p, float v) { p[0] += v; }
            __global__ void k(float* a, float* b, float* c) { put(a + threadIdx.x, 1.0f); bump(b, 2.0f); atomicAdd(c, 1.0f); }";
        assert_eq!(access_in(helpers, "a"), Access::Writes);
        assert_eq!(access_in(helpers, "b"), Access::ReadsAndWrites);
        assert_eq!(access_in(helpers, "c"), Access::ReadsAndWrites);
        let read_back = "__global__ void k(float* y, int n) { y[threadIdx.x] = 1.0f; __syncthreads(); float s = y[n - 1 - threadIdx.x]; y[threadIdx.x] = s; }";
        assert_eq!(access_in(read_back, "y"), Access::ReadsAndWrites);
    }

    #[test]
    fn a_macro_standing_for_an_element_on_the_left_of_an_assignment_writes_it() {
        // xlite-dev/LeetCUDA's 128-bit stores: `#define FLOAT4(v) (reinterpret_cast<float4 *>(&(v))[0])`.
        let packed = "__global__ void k(float* a, float* c, float* d, int n) {
            int i = 4 * (blockIdx.x * blockDim.x + threadIdx.x);
            if (i < n) { float4 v = FLOAT4(a[i]); FLOAT4(c[i]) = v; FLOAT4(d[i]) += v; }
        }";
        assert_eq!(access_in(packed, "a"), Access::Reads);
        assert_eq!(access_in(packed, "c"), Access::Writes);
        assert_eq!(access_in(packed, "d"), Access::ReadsAndWrites);
    }

    #[test]
    fn a_tensor_accessor_indexed_dimension_by_dimension_is_written_where_its_element_is() {
        let accessors = "__global__ void k(at::PackedTensorAccessor64<float, 3, at::RestrictPtrTraits> out, at::PackedTensorAccessor64<float, 3, at::RestrictPtrTraits> sums, at::PackedTensorAccessor64<float, 2, at::RestrictPtrTraits> x) {
            const int b = blockIdx.x, c = threadIdx.x;
            if (c >= out.size(1) || c >= x.stride(0)) return;
            out[b][c][0] = x[b][c];
            sums[b][c][1] += x[b][c];
        }";
        assert_eq!(access_in(accessors, "out"), Access::Writes);
        assert_eq!(access_in(accessors, "sums"), Access::ReadsAndWrites);
        assert_eq!(access_in(accessors, "x"), Access::Reads);
    }

    #[test]
    fn moving_a_pointer_touches_no_element() {
        // cuda-samples' mergeSort moves its unqualified parameters to the block's segment, then
        // reads through a helper of the file.
        let moved = "template <int DIR> __device__ unsigned find(unsigned v, unsigned* data, int n) { return data[n / 2] < v ? n : 0; }
            __global__ void k(unsigned* ranks, unsigned* keys, int stride) {
                keys += blockIdx.x * 2 * stride;
                ranks += blockIdx.x;
                for (unsigned* p = keys; p < keys + 4; p++) { ranks[0] += *p; }
                keys++;
                ranks[1] = find<1>(keys[threadIdx.x], keys + stride, stride);
            }";
        assert_eq!(access_in(moved, "keys"), Access::Reads);
        assert_eq!(access_in(moved, "ranks"), Access::ReadsAndWrites);
        // A step through the elements is still an access of the one it reaches.
        let stepped = "__global__ void k(float* out, int n) { for (int i = 0; i < n; i++) { *out++ = 1.f; } }";
        assert_eq!(access_in(stepped, "out"), Access::ReadsAndWrites);
    }
}
