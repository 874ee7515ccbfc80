//! Host code that keeps a launch's values in an object: a method called on it (`sim.step(d)`,
//! `estimator()` of `operator()`), and the members its constructor sets from the arguments it
//! is made with (`Simulation<float> sim(paths, 128)` of `Simulation(unsigned n, unsigned block) :
//! m_paths(n), m_block_size(block) {}`).

use tree_sitter::Node;

use crate::syntax::host::{declared_types, call_args, class_of, class_of_method, function_name, local_types, parameters, Call};
use crate::syntax::{descendants, is_identifier};

/// The object a call is made on and its declared type, when the callee is a method of it
/// (`sim.step(d)`, `p->step(d)`) or the object itself (`sim()`, its `operator()`): the type
/// is that of a local or a parameter of the calling function, else of a variable of its file.
pub(super) fn called_object(call: &Call) -> Option<(String, String)> {
    let object = object_named(call)?;
    let type_in = |variables: Vec<(String, String)>| variables.into_iter().find(|(name, _)| name == object).map(|(_, ty)| ty);
    let ty = type_in(function_variables(call)).or_else(|| type_in(file_scope_variables(call.text, call.caller)))?;
    Some((object.to_string(), ty))
}

/// The name a call is made on (`sim` of `sim.step(d)` and of `sim()`), before its type is known;
/// an element of an array of objects is called on the array (`ops` of `ops[i].run(d)`).
pub(super) fn object_named<'t>(call: &Call<'t>) -> Option<&'t str> {
    let function = call.node.child_by_field_name("function")?;
    let object = match function.kind() {
        "field_expression" => {
            let object = function.child_by_field_name("argument")?;
            match object.kind() {
                "subscript_expression" => object.child_by_field_name("argument")?,
                _ => object,
            }
        }
        "identifier" => function,
        _ => return None,
    };
    Some(&call.text[object.byte_range()]).filter(|o| is_identifier(o))
}

/// The calling function's locals and parameters with their declared types.
pub(super) fn function_variables(call: &Call) -> Vec<(String, String)> {
    let locals = call.caller.child_by_field_name("body").map(|body| local_types(call.text, body)).unwrap_or_default();
    locals.into_iter().chain(parameters(call.text, call.caller).into_iter().map(|p| (p.name, p.ty))).collect()
}

/// The file-scope variables of the file `node` is in, with their declared types (`Swarm *swarm
/// = 0;`, made with `new` in an init function).
pub(super) fn file_scope_variables(text: &str, node: Node) -> Vec<(String, String)> {
    let root = std::iter::successors(Some(node), |n| n.parent()).last().unwrap_or(node);
    super::host::file_scope_declarations(root).into_iter().flat_map(|d| declared_types(text, d)).collect()
}

/// The method a call names (`step` of `sim.step(d)`), `operator()` for a call of the object.
pub(super) fn method_called(call: &Call) -> Option<String> {
    let function = call.node.child_by_field_name("function")?;
    match function.kind() {
        "field_expression" => Some(call.text[function.child_by_field_name("field")?.byte_range()].to_string()),
        "identifier" => Some("operator()".to_string()),
        _ => None,
    }
}

/// The class a function definition is a method of: by its qualified name (`Simulation<Real>::step`),
/// or the class it is defined in.
pub(super) fn class_of_definition<'t>(text: &'t str, function: Node<'t>) -> Option<&'t str> {
    if let Some(class) = function_name(text, function).and_then(class_of_method) {
        return Some(class);
    }
    let class = std::iter::successors(function.parent(), |n| n.parent()).find(|n| matches!(n.kind(), "class_specifier" | "struct_specifier"))?;
    Some(class_of(&text[class.child_by_field_name("name")?.byte_range()]))
}

/// The template arguments a type gives its class: `["float"]` of `Simulation<float>`.
pub(super) fn type_template_args(ty: &str) -> Vec<String> {
    let Some((_, rest)) = ty.split_once('<') else { return Vec::new() };
    let Some(inner) = rest.rfind('>').map(|end| &rest[..end]) else { return Vec::new() };
    crate::profile::split_template_args(inner)
}

/// The arguments `object` is constructed with in `body` (`Simulation<float> sim(a, b)`,
/// `Options o{a, b}`, `auto sim = Simulation<float>(a, b)`), each's text.
pub(super) fn construction_args(text: &str, body: Node, object: &str) -> Option<Vec<String>> {
    // `Simulation<Real> sim(paths, block)` of names only reads as a function's declaration
    // (C++'s most vexing parse): its parameters' types are the arguments.
    let declared_as_function = descendants(body).filter(|n| n.kind() == "function_declarator").find_map(|declarator| {
        let name = declarator.child_by_field_name("declarator")?;
        (&text[name.byte_range()] == object && declarator.parent()?.kind() == "declaration").then_some(())?;
        let list = declarator.child_by_field_name("parameters")?;
        let mut cursor = list.walk();
        let params: Vec<Node> = list.named_children(&mut cursor).collect();
        params.iter().all(|p| p.kind() == "parameter_declaration" && p.child_by_field_name("declarator").is_none()).then(|| params.iter().map(|p| text[p.byte_range()].to_string()).collect())
    });
    declared_as_function.or_else(|| descendants(body).filter(|n| n.kind() == "init_declarator").find_map(|declarator| {
        let name = declarator.child_by_field_name("declarator")?;
        (&text[name.byte_range()] == object).then_some(())?;
        let value = declarator.child_by_field_name("value")?;
        let list = match value.kind() {
            "argument_list" | "initializer_list" => value,
            "call_expression" | "new_expression" => value.child_by_field_name("arguments")?,
            _ => return None,
        };
        Some(call_args(text, list))
    }))
}

/// Each member the constructor sets from one of its parameters, with the parameter's index:
/// the initializer list first (`m_paths(n)`), then plain assignments in its body (`m_paths = n;`).
pub(super) fn members_set(text: &str, constructor: Node) -> Vec<(String, usize)> {
    let params = parameters(text, constructor);
    let index_of = |value: &str| params.iter().position(|p| p.name == value.trim());
    let initialised = descendants(constructor).filter(|n| n.kind() == "field_initializer").filter_map(|init| {
        let mut cursor = init.walk();
        let children: Vec<Node> = init.named_children(&mut cursor).collect();
        let (field, args) = (children.first()?, children.get(1)?);
        match call_args(text, *args).as_slice() {
            [value] => Some((text[field.byte_range()].to_string(), index_of(value)?)),
            _ => None,
        }
    });
    let body = constructor.child_by_field_name("body");
    let assigned = body.into_iter().flat_map(descendants).filter(|n| n.kind() == "assignment_expression").filter_map(|assignment| {
        let target = text[assignment.child_by_field_name("left")?.byte_range()].trim_start_matches("this->");
        (&text[assignment.child_by_field_name("operator")?.byte_range()] == "=").then_some(())?;
        Some((target.to_string(), index_of(&text[assignment.child_by_field_name("right")?.byte_range()])?))
    });
    initialised.chain(assigned).collect()
}

/// The class a constructor makes its member `member` of, and the arguments it passes, in the
/// constructor's names: `m_a = std::make_shared<Matrix>(m, k)` (or `make_unique`,
/// `new Matrix(m, k)`) in its body, or `m_a(new Matrix(m, k))` in its initializer list.
pub(super) fn member_made(text: &str, constructor: Node, member: &str) -> Option<(String, Vec<String>)> {
    let made_of = |value: Node| -> Option<(String, Vec<String>)> {
        match value.kind() {
            "new_expression" => Some((text[value.child_by_field_name("type")?.byte_range()].to_string(), call_args(text, value.child_by_field_name("arguments")?))),
            "call_expression" => {
                let function = &text[value.child_by_field_name("function")?.byte_range()];
                let made = ["std::make_shared<", "std::make_unique<", "make_shared<", "make_unique<"].iter().find_map(|maker| function.strip_prefix(maker))?;
                Some((made.strip_suffix('>')?.trim().to_string(), call_args(text, value.child_by_field_name("arguments")?)))
            }
            _ => None,
        }
    };
    let names_member = |target: Node| text[target.byte_range()].trim().trim_start_matches("this->") == member;
    descendants(constructor).find_map(|node| match node.kind() {
        "assignment_expression" => {
            (names_member(node.child_by_field_name("left")?) && &text[node.child_by_field_name("operator")?.byte_range()] == "=").then_some(())?;
            made_of(node.child_by_field_name("right")?)
        }
        "field_initializer" => {
            let mut cursor = node.walk();
            let children: Vec<Node> = node.named_children(&mut cursor).collect();
            names_member(*children.first()?).then_some(())?;
            let list = children.get(1)?;
            let mut cursor = list.walk();
            let values: Vec<Node> = list.named_children(&mut cursor).collect();
            match values.as_slice() {
                [value] => made_of(*value),
                _ => None,
            }
        }
        _ => None,
    })
}

/// Each member the constructor's body sets to an expression (`m_elems = m_rows * m_cols;`),
/// with the expression's text, in the order it sets them; a member set to a parameter alone is
/// `members_set`'s.
pub(super) fn members_computed(text: &str, constructor: Node) -> Vec<(String, String)> {
    let params = parameters(text, constructor);
    let body = constructor.child_by_field_name("body");
    body.into_iter()
        .flat_map(descendants)
        .filter(|n| n.kind() == "assignment_expression")
        .filter_map(|assignment| {
            let target = text[assignment.child_by_field_name("left")?.byte_range()].trim_start_matches("this->");
            (&text[assignment.child_by_field_name("operator")?.byte_range()] == "=" && is_identifier(target)).then_some(())?;
            let value = text[assignment.child_by_field_name("right")?.byte_range()].trim();
            (!params.iter().any(|p| p.name == value)).then(|| (target.to_string(), value.to_string()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::host::{calls_by_callee, functions};
    use crate::syntax::Document;
    use std::collections::HashMap;

    const PROGRAM: &str = "template <typename Real> class Simulation {
public:
    Simulation(unsigned int paths, unsigned int block_size) : m_paths(paths), m_block_size(block_size) {}
    void step(Real* d);
    void operator()();
private:
    unsigned int m_paths, m_block_size, m_seed;
};
struct Options { unsigned int paths; };
void run(Simulation<double>& sim, double* d) { sim.step(d); }
int main() {
    Options options{1 << 20};
    Simulation<float> sim(options.paths, 128);
    Simulation<float> named(paths, block_size);
    sim.step(d);
    sim();
}
";

    #[test]
    fn a_method_called_on_an_object_names_the_objects_class_and_its_constructor_the_arguments() {
        let doc = Document::new(PROGRAM.to_string());
        let root = doc.tree().expect("parses").root_node();
        let mut calls = HashMap::new();
        calls_by_callee(doc.text(), root, &mut calls);
        let of = |callee: &str| calls[callee].iter().map(|c| (called_object(c), method_called(c))).collect::<Vec<_>>();
        assert_eq!(of("sim.step"), vec![(Some(("sim".into(), "Simulation<double>".into())), Some("step".into())), (Some(("sim".into(), "Simulation<float>".into())), Some("step".into()))]);
        assert_eq!(of("sim"), vec![(Some(("sim".into(), "Simulation<float>".into())), Some("operator()".into()))]);
        assert_eq!((class_of("const Simulation<float>&"), class_of_method("Simulation<Real>::step")), ("Simulation", Some("Simulation")));
        assert_eq!(type_template_args("Simulation<std::pair<int, int>, 4>"), ["std::pair<int, int>", "4"]);

        let main = functions(doc.text(), root)["main"];
        let body = main.child_by_field_name("body").expect("a body");
        assert_eq!(construction_args(doc.text(), body, "sim"), Some(vec!["options.paths".to_string(), "128".to_string()]));
        assert_eq!(construction_args(doc.text(), body, "options"), Some(vec!["1 << 20".to_string()]));
        assert_eq!(construction_args(doc.text(), body, "named"), Some(vec!["paths".to_string(), "block_size".to_string()]));
        let constructor = descendants(root).find(|n| n.kind() == "function_definition" && doc.text()[n.byte_range()].starts_with("Simulation(")).expect("the constructor");
        // `m_seed` is set from no parameter.
        assert_eq!(members_set(doc.text(), constructor), [("m_paths".to_string(), 0), ("m_block_size".to_string(), 1)]);
    }

    #[test]
    fn a_constructor_makes_member_objects_and_works_out_members_from_others() {
        let text = "class Harness {
public:
    Harness(size_t m, size_t k) : m_m(m), m_k(k), m_c(new Matrix(m, 1)) {
        m_a = std::make_shared<Matrix>(m_m, m_k, \"A\");
        this->m_b = std::make_unique<Matrix<half>>(k, m);
        m_elems = m_m * m_k;
        m_ready = true;
    }
};
";
        let doc = Document::new(text.to_string());
        let root = doc.tree().expect("parses").root_node();
        let constructor = descendants(root).find(|n| n.kind() == "function_definition").expect("the constructor");
        let made = |member: &str| member_made(doc.text(), constructor, member);
        assert_eq!(made("m_a"), Some(("Matrix".to_string(), vec!["m_m".to_string(), "m_k".to_string(), "\"A\"".to_string()])));
        assert_eq!(made("m_b"), Some(("Matrix<half>".to_string(), vec!["k".to_string(), "m".to_string()])));
        assert_eq!(made("m_c"), Some(("Matrix".to_string(), vec!["m".to_string(), "1".to_string()])));
        assert_eq!(made("m_m"), None);
        let computed: Vec<(String, String)> = members_computed(doc.text(), constructor);
        let names: Vec<&str> = computed.iter().map(|(member, _)| member.as_str()).collect();
        assert_eq!(names, ["m_a", "m_b", "m_elems", "m_ready"]);
        assert_eq!(computed[2].1, "m_m * m_k");
    }
}
