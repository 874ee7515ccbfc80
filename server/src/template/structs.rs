//! Structs passed to a kernel by value (`ConvParams params`), as PyTorch extensions and
//! CUTLASS-style code pass their arguments: which members the kernel reads, and what each is
//! (a pointer, and so a buffer, or a number).

use tree_sitter::Node;

use crate::syntax::{descendants, Document};

/// A member of a struct, as its declaration says.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Member {
    pub name: String,
    /// The declared type without qualifiers or declarators: `float` of `const float *in`,
    /// `void` of `void *__restrict__ x_ptr`.
    pub base_type: String,
    pub pointer_depth: u8,
    /// `const` on the pointee (or on the value).
    pub is_const: bool,
    /// Elements of an array member (`float scale[3]`), 1 for any other.
    pub elements: Option<u64>,
    /// The members of a struct declared in place (`struct { int rows; } inner;`).
    pub nested: Vec<Member>,
    /// A bit-field (`unsigned flag : 1`), a union declared in place, or an array whose length
    /// is no number the file defines: members whose bytes cannot be laid out here.
    pub layout_unknown: bool,
}

/// The members of the struct or class `name` that `documents` define, those of its base classes
/// first (where the compiler lays them out). `None` when no document defines it.
pub(super) fn members_of(documents: &[&Document], name: &str) -> Option<Vec<Member>> {
    members_at_depth(documents, name, 0)
}

/// How deep base classes are followed; a class is never its own base.
const MOST_BASES: usize = 8;

fn members_at_depth(documents: &[&Document], name: &str, depth: usize) -> Option<Vec<Member>> {
    let (text, definition) = definition_of(documents, name)?;
    let mut members = Vec::new();
    if depth < MOST_BASES {
        for base in base_classes(text, definition) {
            members.extend(members_at_depth(documents, &base, depth + 1).unwrap_or_default());
        }
    }
    members.extend(declared_members(text, definition.child_by_field_name("body")?));
    Some(members)
}

/// The text of the first document that defines the struct or class `name`, and its definition:
/// `struct name { … }`, or C's `typedef struct { … } name;`.
fn definition_of<'d>(documents: &[&'d Document], name: &str) -> Option<(&'d str, Node<'d>)> {
    let bare = name.trim().trim_start_matches("const ").trim_start_matches("struct ").trim();
    documents.iter().find_map(|document| {
        let text = document.text();
        let is_struct = |n: &Node| matches!(n.kind(), "struct_specifier" | "class_specifier") && n.child_by_field_name("body").is_some();
        let defined = descendants(document.tree()?.root_node()).find_map(|n| match n.kind() {
            "type_definition" => {
                let named = n.children_by_field_name("declarator", &mut n.walk()).any(|d| d.kind() == "type_identifier" && &text[d.byte_range()] == bare);
                n.child_by_field_name("type").filter(|t| named && is_struct(t))
            }
            _ if is_struct(&n) && n.child_by_field_name("name").is_some_and(|m| &text[m.byte_range()] == bare) => Some(n),
            _ => None,
        });
        defined.map(|definition| (text, definition))
    })
}

/// `RowsBase` of `struct ScaleParams : RowsBase` (and of `: public RowsBase`).
fn base_classes(text: &str, definition: Node) -> Vec<String> {
    let mut cursor = definition.walk();
    let clause = definition.children(&mut cursor).find(|c| c.kind() == "base_class_clause");
    let Some(clause) = clause else { return Vec::new() };
    let mut cursor = clause.walk();
    let bases = clause.named_children(&mut cursor).filter(|c| matches!(c.kind(), "type_identifier" | "qualified_identifier" | "template_type")).map(|c| text[c.byte_range()].to_string()).collect();
    bases
}

/// The data members a `{ … }` body declares, in order; methods and static members are none.
fn declared_members(text: &str, body: Node) -> Vec<Member> {
    let mut members = Vec::new();
    let mut cursor = body.walk();
    for declaration in body.named_children(&mut cursor).filter(|d| d.kind() == "field_declaration") {
        let mut inner = declaration.walk();
        let is_static = declaration.named_children(&mut inner).any(|c| c.kind() == "storage_class_specifier" && &text[c.byte_range()] == "static");
        let Some(ty) = declaration.child_by_field_name("type") else { continue };
        if is_static {
            continue;
        }
        let mut inner = declaration.walk();
        let is_const = declaration.named_children(&mut inner).any(|c| c.kind() == "type_qualifier" && &text[c.byte_range()] == "const");
        let nested = match ty.kind() {
            "struct_specifier" | "union_specifier" => ty.child_by_field_name("body").map(|b| declared_members(text, b)).unwrap_or_default(),
            _ => Vec::new(),
        };
        let mut inner = declaration.walk();
        let packed = ty.kind() == "union_specifier" || declaration.named_children(&mut inner).any(|c| c.kind() == "bitfield_clause");
        let mut inner = declaration.walk();
        for declarator in declaration.children_by_field_name("declarator", &mut inner) {
            if let Some(member) = member_of(text, declarator) {
                let layout_unknown = member.layout_unknown || packed;
                members.push(Member { base_type: text[ty.byte_range()].to_string(), is_const, nested: nested.clone(), layout_unknown, ..member });
            }
        }
    }
    members
}

/// A declarator's name, pointer depth and array length; `None` for a method.
fn member_of(text: &str, declarator: Node) -> Option<Member> {
    let (mut pointer_depth, mut elements, mut layout_unknown) = (0u8, None, false);
    let mut node = declarator;
    loop {
        match node.kind() {
            "field_identifier" | "identifier" => {
                let name = text[node.byte_range()].to_string();
                return Some(Member { name, base_type: String::new(), pointer_depth, is_const: false, elements, nested: Vec::new(), layout_unknown });
            }
            "pointer_declarator" => {
                pointer_depth += 1;
                node = node.child_by_field_name("declarator")?;
            }
            "array_declarator" => {
                let size = node.child_by_field_name("size").and_then(|s| array_length(text, &text[s.byte_range()]));
                layout_unknown |= size.is_none();
                elements = Some(elements.unwrap_or(1) * size.unwrap_or(1));
                node = node.child_by_field_name("declarator")?;
            }
            _ => return None,
        }
    }
}

/// The bytes a `name` takes, as C++ lays out a struct of data members: its base classes, then
/// each member at the next multiple of its alignment, pointers of 8 bytes, the whole rounded up
/// to its largest alignment. Types are read through `resolve` (the program's aliases). `None`
/// when a member's size is not known here (a template parameter, a type no document defines) or
/// its bytes are not laid out one after the other (a bit-field, a union).
pub(super) fn size_of_struct(documents: &[&Document], name: &str, resolve: &dyn Fn(&str) -> String) -> Option<u64> {
    struct_layout(documents, name, resolve, 0).map(|(size, _)| size)
}

/// The size and alignment of the struct `name`: its bases first, as whole objects.
fn struct_layout(documents: &[&Document], name: &str, resolve: &dyn Fn(&str) -> String, depth: usize) -> Option<(u64, u64)> {
    let (text, definition) = definition_of(documents, name).filter(|_| depth < MOST_BASES)?;
    let bases = base_classes(text, definition).iter().map(|base| Some((struct_layout(documents, base, resolve, depth + 1)?, 1))).collect::<Option<Vec<_>>>()?;
    let members = declared_members(text, definition.child_by_field_name("body")?);
    Some(laid_out(bases.into_iter().chain(members_laid_out(documents, &members, resolve, depth)?)))
}

/// Each member's element size and alignment, with its count of elements.
fn members_laid_out(documents: &[&Document], members: &[Member], resolve: &dyn Fn(&str) -> String, depth: usize) -> Option<Vec<((u64, u64), u64)>> {
    members.iter().map(|member| Some((member_layout(documents, member, resolve, depth)?, member.elements.unwrap_or(1)))).collect()
}

/// The size and alignment of parts placed one after another, each at the next multiple of its
/// alignment, the whole rounded up to the largest.
fn laid_out(parts: impl IntoIterator<Item = ((u64, u64), u64)>) -> (u64, u64) {
    let (mut size, mut align) = (0u64, 1u64);
    for ((bytes, part_align), count) in parts {
        size = size.next_multiple_of(part_align) + bytes * count;
        align = align.max(part_align);
    }
    (size.next_multiple_of(align), align)
}

/// The size and alignment of one of a member's elements.
fn member_layout(documents: &[&Document], member: &Member, resolve: &dyn Fn(&str) -> String, depth: usize) -> Option<(u64, u64)> {
    match member {
        Member { layout_unknown: true, .. } => None,
        Member { pointer_depth: 1.., .. } => Some((8, 8)),
        Member { nested, .. } if !nested.is_empty() => Some(laid_out(members_laid_out(documents, nested, resolve, depth)?)),
        _ => {
            let ty = resolve(member.base_type.trim_start_matches("const ").trim());
            scalar_layout(&ty).or_else(|| struct_layout(documents, &ty, resolve, depth + 1))
        }
    }
}

/// The size and alignment of a number or CUDA vector type: a number, or a vector of two or four
/// lanes, is aligned to its size (up to 16), one of three lanes to its scalar's. `None` for
/// other types of known size (cuRAND's states), whose alignment their headers decide.
fn scalar_layout(ty: &str) -> Option<(u64, u64)> {
    let ty = ty.trim_start_matches("const ").trim();
    let size = crate::syntax::size_of_type(ty)?;
    match crate::syntax::vector_type(ty) {
        Some((scalar, 3)) => Some((size, crate::syntax::size_of_type(scalar)?)),
        _ if [1, 2, 4, 8, 16].contains(&size) => Some((size, size)),
        _ => None,
    }
}

/// The length an array declarator gives (`3`, `SIZE` where the file says `#define SIZE (1<<18)`).
fn array_length(text: &str, written: &str) -> Option<u64> {
    let defined = |name: &str| crate::syntax::defines_in(text).find(|(n, _)| n == name).and_then(|(_, value)| crate::syntax::eval_constant(&value, &|_| None));
    u64::try_from(crate::syntax::eval_constant(written.trim(), &defined)?).ok()
}

/// The member at `path` (`x_ptr`, `inner.rows`, `scale[2]`) of a struct with `members`:
/// nested members followed through structs declared in place or defined in `documents`, a
/// subscript reading one element of an array.
pub(super) fn member_at(documents: &[&Document], members: &[Member], path: &str) -> Option<Member> {
    let (first, rest) = path.split_once('.').map_or((path, None), |(f, r)| (f, Some(r)));
    let (name, subscripted) = first.split_once('[').map_or((first, false), |(n, _)| (n, true));
    let member = members.iter().find(|m| m.name == name)?;
    let element = Member { elements: if subscripted { None } else { member.elements }, ..member.clone() };
    match rest {
        None => Some(element),
        Some(rest) if !member.nested.is_empty() => member_at(documents, &member.nested, rest),
        Some(rest) => member_at(documents, &members_of(documents, &member.base_type)?, rest),
    }
}

/// The members the kernel reads from its struct parameter `param`, as paths in the order first
/// read: `x_ptr` of `params.x_ptr`, `inner.rows`, `scale[2]`. A subscript that is not a number
/// (`params.scale[i]`) is no member of its own: the path stops before it, at the array. A
/// method called on a member (`params.shape.size()`) leaves the method out.
pub(super) fn paths_read(text: &str, body: Node, param: &str) -> Vec<String> {
    let code = &text[body.byte_range()];
    let mut paths: Vec<String> = Vec::new();
    let mut from = 0;
    while let Some(found) = code[from..].find(param) {
        let start = from + found;
        from = start + param.len();
        let before_is_word = code[..start].chars().next_back().is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.');
        let rest = &code[from..];
        if before_is_word || !rest.starts_with('.') {
            continue;
        }
        let path = member_path(&rest[1..]);
        if !path.is_empty() && !paths.contains(&path) {
            paths.push(path);
        }
    }
    paths
}

/// The member path at the start of `text` (after `params.`): names joined by `.`, literal
/// subscripts kept; a method's name and what follows it left out.
fn member_path(text: &str) -> String {
    let mut path = String::new();
    let mut rest = text;
    loop {
        let name_length = rest.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(rest.len());
        if name_length == 0 || rest[name_length..].trim_start().starts_with('(') {
            return path.trim_end_matches('.').to_string();
        }
        path.push_str(&rest[..name_length]);
        rest = &rest[name_length..];
        while let Some(subscript) = rest.strip_prefix('[') {
            let Some(close) = subscript.find(']') else { return path };
            let index = subscript[..close].trim();
            if index.is_empty() || !index.chars().all(|c| c.is_ascii_digit()) {
                return path;
            }
            path.push_str(&format!("[{index}]"));
            rest = &subscript[close + 1..];
        }
        match rest.strip_prefix('.') {
            Some(after) => {
                path.push('.');
                rest = after;
            }
            None => return path,
        }
    }
}

/// The type the kernel casts a `void *` member to where it reads it: `input_t` of
/// `reinterpret_cast<input_t *>(params.x_ptr)` or of `(input_t *)params.x_ptr`.
pub(super) fn cast_type(text: &str, body: Node, param: &str, path: &str) -> Option<String> {
    let code: String = text[body.byte_range()].split_whitespace().collect::<Vec<_>>().join(" ");
    let read = format!("{param}.{path}");
    for (at, _) in code.match_indices(&read) {
        let after = &code[at + read.len()..];
        if after.starts_with(|c: char| c.is_alphanumeric() || c == '_' || c == '.' || c == '[') {
            continue;
        }
        let before = code[..at].trim_end();
        let before = before.strip_suffix('(').map(str::trim_end).unwrap_or(before);
        // `reinterpret_cast<T *>(`, `static_cast<const T*>(`
        if let Some(cast) = before.strip_suffix('>') {
            let open = cast.rfind('<')?;
            let keyword = cast[..open].trim_end();
            if keyword.ends_with("reinterpret_cast") || keyword.ends_with("static_cast") {
                return pointee(&cast[open + 1..]);
            }
        }
        // `(T *)params.x_ptr`, `(const T*)(params.x_ptr)`
        if let Some(cast) = before.strip_suffix(')') {
            let open = cast.rfind('(')?;
            return pointee(&cast[open + 1..]);
        }
    }
    None
}

/// `float` of `const float *`; `None` when the type is no single pointer.
fn pointee(pointer: &str) -> Option<String> {
    let inner = pointer.trim().strip_suffix('*')?.trim();
    let inner = inner.trim_start_matches("const ").trim_end_matches(" const").replace("__restrict__", "");
    let inner = inner.trim();
    (!inner.is_empty() && !inner.contains('*')).then(|| inner.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SOURCE: &str = "typedef unsigned int index_t;
struct Base { int rows, cols; index_t stride; static const int kWarps = 4; };
struct Params : public Base {
    const float *in;
    void *__restrict__ out_ptr;
    float scale[3];
    struct { int n; double bias; } inner;
    Base other;
    __device__ int width() const { return cols; }
};
__global__ void k(Params params) {
    float *out = reinterpret_cast<float *>(params.out_ptr);
    for (int i = threadIdx.x; i < params.cols; i += blockDim.x) out[i] = params.in[i] * params.scale[2] + params.scale[i % 3] + params.inner.bias + params.other.rows + params.width();
}
";

    fn document() -> Document {
        Document::new(SOURCE.to_string())
    }

    #[test]
    fn a_struct_of_data_members_is_sized_as_the_compiler_lays_it_out() {
        let doc = document();
        let resolve = |ty: &str| if ty == "index_t" { "unsigned int".to_string() } else { ty.to_string() };
        // Base: 3 × 4 bytes. Params: Base, two pointers at 16 and 24, `scale` at 32, `inner`
        // (an int, then a double at 8: 16 bytes) at 48, `other` at 64: 76, rounded up to 80.
        assert_eq!(size_of_struct(&[&doc], "Base", &resolve), Some(12));
        assert_eq!(size_of_struct(&[&doc], "struct Params", &resolve), Some(80));
        // C's `typedef struct { … } name;`.
        let typedef = Document::new("typedef struct { int rows; float *data; } Matrix;".to_string());
        assert_eq!(size_of_struct(&[&typedef], "Matrix", &|t: &str| t.to_string()), Some(16));
        assert_eq!(members_of(&[&typedef], "Matrix").map(|m| m.len()), Some(2));
        // A base is a whole object: its tail padding is not the derived struct's.
        let tail = Document::new("struct Wide { double d; int i; };\nstruct Longer : Wide { int j; };\nstruct V { char c; float3 p; float4 q; };".to_string());
        assert_eq!(size_of_struct(&[&tail], "Longer", &|t: &str| t.to_string()), Some(24));
        assert_eq!(size_of_struct(&[&tail], "V", &|t: &str| t.to_string()), Some(32));
        // Unknown to the program's aliases, a bit-field, a union: no size.
        assert_eq!(size_of_struct(&[&doc], "Base", &|t: &str| t.to_string()), None);
        let packed = Document::new("#define HALF (1 << 3)\nstruct F { unsigned a : 3; int b; };\nstruct U { union { int i; float f; } v; };\nstruct A { float a[HALF * 2]; };\nstruct B { float b[LENGTH]; };".to_string());
        let sizes = ["F", "U", "A", "B"].map(|name| size_of_struct(&[&packed], name, &|t: &str| t.to_string()));
        assert_eq!(sizes, [None, None, Some(64), None]);
    }

    #[test]
    fn members_come_from_the_definition_base_classes_first_without_methods_or_statics() {
        let doc = document();
        let members = members_of(&[&doc], "Params").expect("defined");
        let names: Vec<&str> = members.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["rows", "cols", "stride", "in", "out_ptr", "scale", "inner", "other"]);
        let by_name = |n: &str| members.iter().find(|m| m.name == n).unwrap();
        assert_eq!((by_name("in").base_type.as_str(), by_name("in").pointer_depth, by_name("in").is_const), ("float", 1, true));
        assert_eq!((by_name("out_ptr").base_type.as_str(), by_name("out_ptr").pointer_depth, by_name("out_ptr").is_const), ("void", 1, false));
        assert_eq!(by_name("scale").elements, Some(3));
        assert_eq!(members_of(&[&doc], "Missing"), None);
    }

    #[test]
    fn paths_are_the_members_read_nested_and_subscripted_ones_followed() {
        let doc = document();
        let tree = doc.tree().unwrap();
        let body = descendants(tree.root_node()).filter(|n| n.kind() == "function_definition").last().and_then(|f| f.child_by_field_name("body")).unwrap();
        let paths = paths_read(SOURCE, body, "params");
        assert_eq!(paths, ["out_ptr", "cols", "in", "scale[2]", "scale", "inner.bias", "other.rows"]);
        let members = members_of(&[&doc], "Params").unwrap();
        assert_eq!(member_at(&[&doc], &members, "inner.bias").map(|m| m.base_type), Some("double".to_string()));
        assert_eq!(member_at(&[&doc], &members, "other.rows").map(|m| m.base_type), Some("int".to_string()));
        assert_eq!(member_at(&[&doc], &members, "scale[2]").map(|m| m.elements), Some(None));
        assert_eq!(cast_type(SOURCE, body, "params", "out_ptr").as_deref(), Some("float"));
        assert_eq!(cast_type(SOURCE, body, "params", "in"), None);
    }
}
