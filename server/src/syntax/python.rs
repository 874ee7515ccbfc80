//! Python that calls a PyTorch extension, read as host code. A C++ binding exports functions to
//! Python (`m.def("forward", &forward)`, `ops.impl("rms_norm", torch::kCUDA, &rms_norm)`); the
//! scripts that call them (a benchmark, a test) make the tensors whose sizes the kernels run on.
//! [`as_host_code`] writes such a script as the C++ the rest of cutune reads: its numbers, the
//! tensors it makes (`torch.randn(b, n, d)` as `torch::randn({b, n, d})`) and its calls of
//! exported functions, each on the line it has in the script, so that a place in it is a place
//! in the script. What it cannot write (classes, strings, most library calls) it leaves out.

use std::collections::HashMap;

use tree_sitter::{Node, Parser};

use super::host::call_args;

/// A function a C++ binding exports to Python: its name there and in C++, with the C++
/// parameters' names (for keyword arguments).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Binding {
    pub python: String,
    pub cpp: String,
    /// The template arguments the binding instantiates `cpp` with, as written (`<float>` of
    /// `&bias_gelu<float>`), or empty.
    pub template_args: String,
    pub params: Vec<String>,
    /// Of `params`, the last ones: a module's method is written with its class's `__init__`
    /// parameters after its own (`Carafe_forward(features, masks, kernel_size, …)`), which an
    /// object's calls take from the call that made it. Empty for a function.
    pub constructor: Vec<String>,
    /// For a function of another script, its parameters' defaults that are literals, as C++
    /// (`"iou"`, `0`), which a call that skips one passes. Empty for C++.
    pub defaults: Vec<Option<String>>,
    /// Whether it is a function of a script, not of the C++.
    pub in_script: bool,
    /// The extension the binding is built into (`xentropy_cuda`), where a build script says:
    /// of namesakes (every apex extension exports a `forward`), `xentropy_cuda.forward(…)`
    /// calls this one.
    pub module: Option<String>,
}

impl Binding {
    /// The C++ function's name without its namespaces (`fwd` of `softmax::fwd`).
    pub fn cpp_bare(&self) -> &str {
        self.cpp.rsplit("::").next().unwrap_or(&self.cpp)
    }
}

/// The functions `text` (C++) exports: `m.def("name", &function, …)` (also through
/// `torch::wrap_pybind_function`, `py::overload_cast<…>` or `TORCH_FN`) and
/// `m.impl("name", [dispatch key,] &function)`; a schema (`"name(Tensor x) -> ()"`) names it
/// before its parenthesis.
pub fn bindings(text: &str, root: Node) -> Vec<Binding> {
    let functions = super::host::functions(text, root);
    let mut out: Vec<Binding> = Vec::new();
    for call in super::descendants(root).filter(|n| n.kind() == "call_expression") {
        let Some(function) = call.child_by_field_name("function").filter(|f| f.kind() == "field_expression") else { continue };
        let method = function.child_by_field_name("field").map(|f| &text[f.byte_range()]);
        if !matches!(method, Some("def" | "impl")) {
            continue;
        }
        let Some(args) = call.child_by_field_name("arguments").map(|a| call_args(text, a)) else { continue };
        let Some(python) = args.first().and_then(|a| exported_name(a)) else { continue };
        let Some((written, template_args)) = args.iter().skip(1).rev().find_map(|a| bound_function(a)) else { continue };
        let bare = written.rsplit("::").next().unwrap_or(&written);
        let definition = functions.iter().find(|(name, _)| name.rsplit("::").next() == Some(bare)).map(|(_, f)| *f);
        // Named with its namespaces, as its scripts' calls are written: where the file defines
        // it, those it is defined in.
        let cpp = match definition.map(|f| super::host::scope_of(text, f)) {
            Some(scope) if !scope.is_empty() => format!("{}::{bare}", scope.join("::")),
            _ => written.clone(),
        };
        if out.iter().any(|b| b.python == python && b.cpp == cpp) {
            continue;
        }
        let params = definition.map(|f| super::host::parameter_names(text, f)).unwrap_or_default();
        out.push(Binding { python, cpp, template_args, params, constructor: Vec::new(), defaults: Vec::new(), in_script: false, module: None });
    }
    out
}

/// Whether `name` is the macro that opens a block of bindings (`PYBIND11_MODULE`,
/// `TORCH_LIBRARY`, `TORCH_LIBRARY_IMPL`, `TORCH_LIBRARY_FRAGMENT`).
pub fn is_binding_block(name: &str) -> bool {
    name == "PYBIND11_MODULE" || name.starts_with("TORCH_LIBRARY")
}

/// `forward` of `"forward"` or of the schema `"rms_norm(Tensor! out, …) -> ()"`.
fn exported_name(arg: &str) -> Option<String> {
    let name = arg.trim().strip_prefix('"')?.split(['"', '(']).next()?.trim();
    super::is_identifier(name).then(|| name.to_string())
}

/// `forward` of `&forward`, `torch::wrap_pybind_function(forward)`,
/// `py::overload_cast<int>(&ns::forward)` or `TORCH_FN(forward)`, with the template arguments of
/// an instantiation (`<float>` of `&ds_gelu<float>`); nothing for a lambda, a string or a
/// dispatch key.
fn bound_function(arg: &str) -> Option<(String, String)> {
    let mut arg = arg.trim();
    // A wrapper's argument: what the wrapper binds.
    while let Some(open) = arg.find('(').filter(|_| arg.ends_with(')')) {
        let wrapper = &arg[..open];
        if !["wrap_pybind_function", "overload_cast", "TORCH_FN"].iter().any(|w| wrapper.contains(w)) {
            return None;
        }
        arg = arg[open + 1..arg.len() - 1].trim();
    }
    let name = arg.trim_start_matches('&').trim();
    let (name, template_args) = match name.strip_suffix('>').and_then(|n| n.split_once('<')) {
        Some((name, args)) => (name.trim(), format!("<{args}>")),
        None => (name, String::new()),
    };
    let bare = name.rsplit("::").next()?;
    (super::is_identifier(bare) && !name.starts_with("torch::k") && !name.starts_with("c10::")).then(|| (name.trim_start_matches("::").to_string(), template_args))
}

/// The C++ that `python` stands for as host code of `bindings`, line for line: a module's
/// numbers and tensors at file scope, each function as a function, and the module's other
/// statements in functions named `{module}_py_line_{n}` after their first line.
pub fn as_host_code(python: &str, module: &str, bindings: &[Binding]) -> String {
    let Some(tree) = parse(python) else { return String::new() };
    let root = tree.root_node();
    let mut writer = Writer::of_script(python, root, bindings);
    writer.lines = vec![String::new(); python.lines().count() + 1];
    let module: String = module.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect();
    writer.lists = module_lists(python, root);
    writer.helper_lists = writer.lists_from_helpers(root);
    for statement in named_children(root) {
        writer.module_statement(statement, &module);
    }
    writer.lines.join("\n")
}

/// A Python script's syntax tree.
fn parse(python: &str) -> Option<tree_sitter::Tree> {
    let mut parser = Parser::new();
    let language: tree_sitter::Language = tree_sitter_python::LANGUAGE.into();
    parser.set_language(&language).ok()?;
    parser.parse(python, None)
}

/// The functions of the script `python` that lead to one of `callees` (the bindings, or
/// functions of other scripts that do), directly or through one another, each as a callee for
/// the scripts that call it in turn, with the word their text holds where they do: its name, or
/// for an autograd function's `forward` (`ShiftFn.forward`, called as `ShiftFn.apply(…)`) its
/// class's.
pub fn callers(python: &str, callees: &[Binding]) -> Vec<(Binding, String)> {
    let Some(tree) = parse(python) else { return Vec::new() };
    let writer = Writer::of_script(python, tree.root_node(), callees);
    let mut leading: Vec<String> = callees.iter().map(|b| b.python.clone()).collect();
    let mut out: Vec<(Binding, String)> = Vec::new();
    loop {
        let before = out.len();
        for (name, definition) in &writer.functions {
            let class = class_of(python, *definition);
            // Other scripts call module functions and autograd functions; a method of any
            // other class is called on objects this reading does not follow.
            let plain = definition.child_by_field_name("name").map_or("", |n| &python[n.byte_range()]);
            let mentioned_as = match &class {
                // A test is the runner's to call (pytest's `test_…`, a test case's methods).
                _ if plain.starts_with("test") => continue,
                None => name.clone(),
                Some(class) if *name == format!("{class}_forward") => class.clone(),
                Some(_) => continue,
            };
            if out.iter().any(|(found, _)| found.python == *name) {
                continue;
            }
            // A call of a callee, or an object made of a module whose `forward` is one; an
            // autograd function's `forward` leads where its `backward` does, which autograd runs
            // after it.
            let backward = class.as_ref().filter(|_| plain == "forward").and_then(|class| writer.functions.get(&format!("{class}_backward")));
            let bodies = std::iter::once(*definition).chain(backward.copied());
            let calls_leading = bodies.flat_map(super::descendants).filter(|n| n.kind() == "call").any(|call| {
                let function = call.child_by_field_name("function");
                let callee = function.and_then(|f| writer.callee_name(f, class.as_deref())).map(|(c, _)| c);
                let module = function.and_then(|f| writer.module_forward(f));
                callee.into_iter().chain(module).any(|c| leading.contains(&c))
            });
            if calls_leading {
                leading.push(name.clone());
                let binding = Binding { defaults: writer.literal_defaults(*definition), ..binding_of(python, name, cpp_name(name), *definition) };
                out.push((binding, mentioned_as));
            }
        }
        // An alias leads to the callees too: the module's functions that call it are callers
        // (`CARAFE.forward` returning `carafe(…)` of `carafe = CARAFEFunction.apply`).
        let aliases = module_aliases_of(&writer, tree.root_node(), &leading, &out);
        leading.extend(aliases.iter().map(|(alias, _)| alias.python.clone()));
        out.extend(aliases);
        if out.len() == before {
            break;
        }
    }
    out.sort_by(|a, b| a.0.python.cmp(&b.0.python));
    out
}

/// The module's names for functions that lead to the callees (`scale_rows =
/// ScaleRowsFunction.apply`, OpenMMLab's way to export an autograd function), not yet in
/// `found`: each a callee named by the alias that calls the function it names.
fn module_aliases_of(writer: &Writer, root: Node, leading: &[String], found: &[(Binding, String)]) -> Vec<(Binding, String)> {
    let statements = named_children(root).into_iter().filter(|n| n.kind() == "expression_statement");
    let aliases = statements.filter_map(|statement| writer.function_alias(statement)).filter(|(alias, function)| leading.contains(function) && !found.iter().any(|(b, _)| b.python == *alias));
    aliases
        .filter_map(|(alias, function)| {
            let definition = *writer.functions.get(&function)?;
            Some((Binding { defaults: writer.literal_defaults(definition), ..binding_of(writer.text, &alias, cpp_name(&function), definition) }, alias))
        })
        .collect()
}

/// The callee that the function `definition` of the script is for other scripts, by the name
/// `python` they call it by and its C++ name.
fn binding_of(text: &str, python: &str, cpp: String, definition: Node) -> Binding {
    let constructor: Vec<String> = constructor_parameters(text, definition).into_iter().map(|(name, _)| cpp_name(&text[name.byte_range()])).collect();
    let params = parameter_names(text, definition).into_iter().chain(constructor.iter().cloned()).collect();
    Binding { python: python.to_string(), cpp, template_args: String::new(), params, constructor, defaults: Vec::new(), in_script: true, module: None }
}

/// The class a function is a method of, where it is one.
fn class_of(text: &str, definition: Node) -> Option<String> {
    Some(text[enclosing_class(definition)?.child_by_field_name("name")?.byte_range()].to_string())
}

/// The class definition a function is a method of, where it is one.
fn enclosing_class(definition: Node) -> Option<Node> {
    let mut parent = definition.parent()?;
    if parent.kind() == "decorated_definition" {
        parent = parent.parent()?;
    }
    parent.parent().filter(|c| parent.kind() == "block" && c.kind() == "class_definition")
}

/// The `__init__` of a class, where it defines one.
fn constructor_of<'t>(text: &str, class: Node<'t>) -> Option<Node<'t>> {
    method_of(text, class, "__init__")
}

/// The method `name` a class defines.
fn method_of<'t>(text: &str, class: Node<'t>, name: &str) -> Option<Node<'t>> {
    let methods = named_children(class.child_by_field_name("body")?).into_iter().map(|m| if m.kind() == "decorated_definition" { m.child_by_field_name("definition").unwrap_or(m) } else { m });
    methods.filter(|m| m.kind() == "function_definition").find(|m| m.child_by_field_name("name").is_some_and(|n| &text[n.byte_range()] == name))
}

/// The parameters a method of a module is written with after its own: its class's `__init__`'s,
/// which the method reads as the object's attributes (`self.kernel_size`), but for names the
/// method's own parameters have. None for `__init__` itself or a class without one.
fn constructor_parameters<'t>(text: &str, definition: Node<'t>) -> Vec<(Node<'t>, Option<Node<'t>>)> {
    let Some(constructor) = enclosing_class(definition).and_then(|class| constructor_of(text, class)).filter(|c| *c != definition) else { return Vec::new() };
    let own = parameter_names(text, definition);
    parameters(text, constructor).into_iter().filter(|(name, _)| !own.contains(&cpp_name(&text[name.byte_range()]))).collect()
}

/// The name a function of the script has as host code: its own, or a method's qualified by its
/// class (`ShiftFn_forward`), as C++ cannot nest a function in a class the way Python does.
fn qualified_name(text: &str, definition: Node) -> Option<String> {
    let name = &text[definition.child_by_field_name("name")?.byte_range()];
    Some(match class_of(text, definition) {
        Some(class) => format!("{class}_{name}"),
        None => name.to_string(),
    })
}

struct Writer<'a> {
    text: &'a str,
    bindings: &'a [Binding],
    /// The functions the script defines, by their qualified names: calls of them are host calls too.
    functions: HashMap<String, Node<'a>>,
    /// The class whose method is being written: `self.make_inputs(…)` calls its method.
    class: Option<String>,
    /// The locals of the function being written that name a host function
    /// (`loss_func = xentropy.SoftmaxCrossEntropyLoss.apply`), with the function's name.
    aliases: HashMap<String, String>,
    /// The command-line options the script declares with `argparse`, by their attribute
    /// (`num_tokens` of `--num-tokens`), with their defaults as C++: the run without arguments.
    options: HashMap<String, String>,
    /// The parameters of the function being written: one called (`op(out, x)`) is a function
    /// the caller passes (`run(ext.rms_norm, out, x)`), which C++ calls through a pointer.
    params: Vec<String>,
    /// Of those, the ones annotated as a tuple of sizes (`output_size: Tuple`): read by index
    /// (`output_size[0]`) as a shape is, `output_size.size(0)` of the tensor a tuple stands for.
    tuple_params: Vec<String>,
    /// The C++ of each line of the script.
    lines: Vec<String>,
    /// The lists the module names (`sizes = [1024, 4096]`, `shapes = [(s, k) for s in …]`),
    /// which its loops walk, and its dictionaries (`mode_dict = {'iou': 0, 'iof': 1}`).
    lists: HashMap<&'a str, Node<'a>>,
    /// Inside a function of the script whose call is read in place (see [`Writer::returned`]):
    /// its parameters and locals, each with the value it has there, or none where that cannot
    /// be written.
    locals: HashMap<String, Option<String>>,
    /// Of those locals, the lists (`Ms = list(range(sep, top + sep, sep))`) and dictionaries.
    local_lists: HashMap<String, Node<'a>>,
    /// The lists the module unpacks from a helper of the script (`Ms, Ns, Ks = get_mnk()`):
    /// their first and largest items, in the helper's values.
    helper_lists: HashMap<String, ListEnds>,
    /// The attributes the class being written sets in its `__init__` (`self.kernel_size =
    /// kernel_size`), each with its value over the `__init__`'s parameters.
    attributes: HashMap<String, String>,
    /// The locals of the function being written that name an object of a module
    /// (`carafe = Carafe(5, 4, 2)`): the module's `forward` and the arguments it was made with.
    objects: HashMap<String, (String, Node<'a>)>,
    /// Of the autograd function being written, what its `forward` keeps for its `backward`.
    context: Option<Context>,
    /// Whether the function being written is an autograd function's `forward`, whose `return`
    /// runs the `backward` as autograd does.
    in_forward: bool,
    /// How many copies of what follows an `if` chosen by optional arguments the statement being
    /// written is in (see [`Writer::optional_branches`]).
    optional_depth: usize,
    /// The row a copy is written on, in place of each statement's own.
    row_override: Option<usize>,
}

/// What an autograd function's `forward` keeps on its context for the `backward`
/// (`ctx.patch = patch`, `ctx.input_shape = x.size()`, `ctx.save_for_backward(argmax)`,
/// `ctx.for_backwards = (idx, n)`). The backward takes each as a parameter before its own
/// (`ctx_patch`, `ctx_saved_0`, an item of a tuple as `ctx_for_backwards_0`), and the
/// forward's `return` calls it with them and a gradient shaped like each output: the run
/// autograd makes when the program differentiates what the forward returned.
#[derive(Clone, Debug, Default)]
struct Context {
    /// The attributes the forward sets, in order.
    attributes: Vec<String>,
    /// Of those, the ones set to a tensor's whole shape (`x.size()`): the C++ local stands for
    /// a tensor of that shape.
    shapes: Vec<String>,
    /// How many tensors the forward saves.
    saved: usize,
    /// The attributes set to a tuple written item by item (`(idx, n)`, or a local made so), with
    /// the most items any sets: the backward reads each item (`idx, n = ctx.for_backwards`),
    /// tensors and numbers alike.
    tuples: Vec<(String, usize)>,
}

impl Context {
    /// The backward's parameters that carry the context, as the forward's locals are named.
    fn parameters(&self) -> Vec<String> {
        let attributes = self.attributes.iter().flat_map(|a| {
            let items = self.tuples.iter().find(|(t, _)| t == a).map_or(0, |(_, n)| *n);
            std::iter::once(format!("ctx_{a}")).chain((0..items).map(move |k| format!("ctx_{a}_{k}")))
        });
        attributes.chain((0..self.saved).map(|k| format!("ctx_saved_{k}"))).collect()
    }

    /// The prefix of the parameters that carry the items of what `held` names
    /// (`ctx.saved_tensors`, an attribute set to a tuple), as [`Writer::held_by_context`] reads it.
    fn items_of(&self, held: &str) -> Option<String> {
        match held {
            "saved_tensors" => Some("ctx_saved".to_string()),
            attribute => self.tuples.iter().any(|(t, _)| t == attribute).then(|| format!("ctx_{attribute}")),
        }
    }
}

/// What a name is bound to: a value written as C++, or data written as lists and tuples
/// (`case` of `for case in [([[1., 0], [0, 1.]], [0, 1]), …]`), whose items and shape are read
/// where they are used (`np.array(case[0])`).
#[derive(Clone, Debug)]
enum Bound<'a> {
    Value(String),
    Data(Node<'a>),
}

/// The first and the largest item of a list, as C++, where they can be written.
#[derive(Clone, Debug, Default)]
struct ListEnds {
    first: Option<String>,
    largest: Option<String>,
}

/// An argument the reading could not write (`ctx.output_size[0]` of a tuple, a string): a name
/// nothing defines, so the host reading follows it to no value and says so, where a number in
/// its place would be taken for the program's.
const UNWRITTEN: &str = "unread_python_value";

/// PyTorch's helpers that make a tuple of sizes of one number (`_pair(3)` is `(3, 3)`) and
/// keep a tuple as it is; host code calls them by the same names, which the reading of shapes
/// knows.
pub(crate) const TUPLE_HELPERS: [&str; 3] = ["_single", "_pair", "_triple"];

/// C++ words a Python name may be but a C++ one may not.
/// `main` too: C++'s `main` takes no such parameters, and nothing may call it.
const CPP_KEYWORDS: [&str; 17] = ["auto", "class", "new", "delete", "this", "int", "float", "double", "long", "char", "void", "struct", "namespace", "template", "typename", "default", "main"];

impl<'a> Writer<'a> {
    /// A writer of `text` that knows nothing of it yet and has no lines.
    fn bare(text: &'a str, bindings: &'a [Binding]) -> Writer<'a> {
        Writer {
            text,
            bindings,
            functions: HashMap::new(),
            class: None,
            aliases: HashMap::new(),
            options: HashMap::new(),
            params: Vec::new(),
            tuple_params: Vec::new(),
            lines: Vec::new(),
            lists: HashMap::new(),
            locals: HashMap::new(),
            local_lists: HashMap::new(),
            helper_lists: HashMap::new(),
            attributes: HashMap::new(),
            objects: HashMap::new(),
            context: None,
            in_forward: false,
            optional_depth: 0,
            row_override: None,
        }
    }

    /// A writer of the script whose syntax tree is `root`, knowing its functions and the
    /// defaults of its command-line options; no lines yet.
    fn of_script(text: &'a str, root: Node<'a>, bindings: &'a [Binding]) -> Writer<'a> {
        let mut writer = Writer::bare(text, bindings);
        writer.options = option_defaults(&writer, root);
        writer.functions = super::descendants(root).filter(|n| n.kind() == "function_definition").filter_map(|f| Some((qualified_name(text, f)?, f))).collect();
        writer
    }

    /// A writer of the same script, into empty lines of its own.
    fn beside(&self) -> Writer<'a> {
        Writer {
            functions: self.functions.clone(),
            class: self.class.clone(),
            options: self.options.clone(),
            lines: vec![String::new(); self.lines.len()],
            lists: self.lists.clone(),
            helper_lists: self.helper_lists.clone(),
            attributes: self.attributes.clone(),
            context: self.context.clone(),
            ..Writer::bare(self.text, self.bindings)
        }
    }

    fn text(&self, node: Node<'a>) -> &'a str {
        &self.text[node.byte_range()]
    }

    fn put(&mut self, row: usize, code: &str) {
        let row = self.row_override.unwrap_or(row);
        let last = self.lines.len() - 1;
        let line = &mut self.lines[row.min(last)];
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(code);
    }

    fn module_statement(&mut self, statement: Node<'a>, module: &str) {
        match statement.kind() {
            "function_definition" => self.function(statement, &HashMap::new()),
            "decorated_definition" => match statement.child_by_field_name("definition") {
                Some(definition) if definition.kind() == "function_definition" => self.function(definition, &parametrized(self.text, statement, &self.lists)),
                Some(class) if class.kind() == "class_definition" => self.class(class),
                _ => {}
            },
            "class_definition" => self.class(statement),
            // Numbers and tensors at file scope, where every function of the module sees them.
            "expression_statement" if self.assignments(statement).is_some_and(|a| a.iter().all(|(_, value)| !self.calls_host(value))) && self.unpacked_call(statement).is_none() => self.statement(statement),
            _ => {
                let mut body = self.beside();
                body.statement(statement);
                if body.lines.iter().all(String::is_empty) {
                    return;
                }
                let (first, last) = (statement.start_position().row, statement.end_position().row);
                self.put(first, &format!("void {module}_py_line_{}() {{", first + 1));
                for (row, code) in body.lines.into_iter().enumerate().filter(|(_, c)| !c.is_empty()) {
                    self.put(row, &code);
                }
                self.put(last, "}");
            }
        }
    }

    /// Each method of a class as a function of its own (`ShiftFn_forward`, a test case's
    /// `LabelTest_test_sizes`), without the object it is called on (`self`, `ctx`).
    fn class(&mut self, class: Node<'a>) {
        let Some(body) = class.child_by_field_name("body") else { return };
        self.class = class.child_by_field_name("name").map(|n| self.text(n).to_string());
        self.attributes = constructor_of(self.text, class).map(|c| self.attributes_set_by(c)).unwrap_or_default();
        if let Some(set_up) = method_of(self.text, class, "setUp") {
            self.set_up_attributes(set_up);
        }
        self.context = self.class.as_deref().and_then(|name| self.context_of(name));
        for member in named_children(body) {
            match member.kind() {
                "function_definition" => self.function(member, &HashMap::new()),
                "decorated_definition" => {
                    if let Some(definition) = member.child_by_field_name("definition").filter(|d| d.kind() == "function_definition") {
                        self.function(definition, &parametrized(self.text, member, &self.lists));
                    }
                }
                _ => {}
            }
        }
        self.class = None;
        self.attributes.clear();
        self.context = None;
    }

    /// The attributes `constructor` sets to a value over its parameters (`self.kernel_size =
    /// kernel_size`, `self.scale = float(scale)`), each with that value; the first where it
    /// sets one twice.
    fn attributes_set_by(&self, constructor: Node<'a>) -> HashMap<String, String> {
        let params = parameter_names(self.text, constructor);
        let mut out = HashMap::new();
        for assignment in super::descendants(constructor).filter(|n| n.kind() == "assignment") {
            let (Some(left), Some(right)) = (assignment.child_by_field_name("left"), assignment.child_by_field_name("right")) else { continue };
            let Some(attribute) = self.on_self(left) else { continue };
            let Some(value) = self.expression(right).filter(|v| super::identifiers_in(v).all(|w| params.iter().any(|p| p == w))) else { continue };
            out.entry(attribute.to_string()).or_insert(value);
        }
        out
    }

    /// The attributes a test case's `setUp` sets (`self.rows = random.randint(1, 1000)`, `self.x =
    /// torch.randn(self.rows, 64)`), each read with those before it, for its tests to read
    /// (`self.x`); not one that reads the method's own locals.
    fn set_up_attributes(&mut self, set_up: Node<'a>) {
        let locals: Vec<String> = super::descendants(set_up)
            .filter(|n| n.kind() == "assignment")
            .filter_map(|a| a.child_by_field_name("left"))
            .flat_map(|left| std::iter::once(left).chain(named_children(left)))
            .filter(|n| n.kind() == "identifier")
            .map(|n| cpp_name(self.text(n)))
            .chain(parameter_names(self.text, set_up))
            .collect();
        for assignment in super::descendants(set_up).filter(|n| n.kind() == "assignment") {
            let (Some(left), Some(right)) = (assignment.child_by_field_name("left"), assignment.child_by_field_name("right")) else { continue };
            let Some(attribute) = self.on_self(left) else { continue };
            if let Some(value) = self.expression(right).filter(|v| super::identifiers_in(v).all(|w| !locals.iter().any(|l| l == w))) {
                self.attributes.insert(attribute.to_string(), value);
            }
        }
    }

    /// `x` of `self.x` (an attribute node).
    fn on_self(&self, node: Node<'a>) -> Option<&'a str> {
        (node.kind() == "attribute").then_some(())?;
        node.child_by_field_name("object").filter(|o| self.text(*o) == "self")?;
        Some(self.text(node.child_by_field_name("attribute")?))
    }

    /// What the autograd function `class` (a class with a `forward` and a `backward`, or a
    /// `Function` with a `forward`) keeps on its context in its `forward`; `None` for any
    /// other class.
    fn context_of(&self, class: &str) -> Option<Context> {
        let forward = *self.functions.get(&format!("{class}_forward"))?;
        // A forward without a backward keeps things on its context too (`ctx.output_size =
        // _pair(output_size)`), in a class of `Function`'s.
        let of_function = || enclosing_class(forward).and_then(|c| c.child_by_field_name("superclasses")).is_some_and(|bases| named_children(bases).iter().any(|b| matches!(self.text(*b), "Function" | "torch.autograd.Function" | "autograd.Function")));
        (self.functions.contains_key(&format!("{class}_backward")) || of_function()).then_some(())?;
        let mut context = Context::default();
        for node in super::descendants(forward) {
            if let Some((attribute, value)) = self.context_attribute_set(node) {
                if let Some(items) = self.tuple_items(value) {
                    match context.tuples.iter_mut().find(|(t, _)| *t == attribute) {
                        Some((_, most)) => *most = (*most).max(items.len()),
                        None => context.tuples.push((attribute.clone(), items.len())),
                    }
                }
                if !context.attributes.contains(&attribute) {
                    // A tuple the forward made before (`params = (pooled_height, …)`) too.
                    let made_before = || self.last_value_of(value).is_some_and(|v| self.is_tuple_of_sizes(v));
                    if self.shape_of(value).is_some() || self.is_tuple_of_sizes(value) || made_before() {
                        context.shapes.push(attribute.clone());
                    }
                    context.attributes.push(attribute);
                }
            } else if let Some(saved) = self.saved_for_backward(node) {
                context.saved = context.saved.max(saved.len());
            }
        }
        Some(context)
    }

    /// Whether `value` makes a tuple of sizes: written (`(pool_h, pool_w)`), or by PyTorch's
    /// helpers that repeat a number into one (`_pair(kernel_size)`).
    fn is_tuple_of_sizes(&self, value: Node<'a>) -> bool {
        let value = unparenthesized(value);
        match value.kind() {
            "tuple" => true,
            "call" => value.child_by_field_name("function").is_some_and(|f| TUPLE_HELPERS.contains(&self.text(f))),
            _ => false,
        }
    }

    /// The items of the tuple `value` writes (`(idx, n)`), or of the one the local it names was
    /// last set to (`params = (h, w)`).
    fn tuple_items(&self, value: Node<'a>) -> Option<Vec<Node<'a>>> {
        let value = unparenthesized(value);
        let tuple = unparenthesized(self.last_value_of(value).unwrap_or(value));
        (tuple.kind() == "tuple").then(|| data_items(tuple))
    }

    /// What the local `name` (an identifier node) was last set to before it, in its function.
    fn last_value_of(&self, name: Node<'a>) -> Option<Node<'a>> {
        (name.kind() == "identifier").then_some(())?;
        let function = std::iter::successors(name.parent(), |n| n.parent()).find(|n| n.kind() == "function_definition")?;
        let assigned = super::descendants(function).filter(|a| a.kind() == "assignment" && a.end_byte() <= name.start_byte() && a.child_by_field_name("left").is_some_and(|l| self.text(l) == self.text(name)));
        assigned.last()?.child_by_field_name("right")
    }

    /// `ctx.patch = patch` (an assignment node): the attribute and its value.
    fn context_attribute_set(&self, node: Node<'a>) -> Option<(String, Node<'a>)> {
        (node.kind() == "assignment").then_some(())?;
        let attribute = self.on_context(node.child_by_field_name("left")?)?;
        Some((attribute.to_string(), node.child_by_field_name("right")?))
    }

    /// `patch` of `ctx.patch` (an attribute node): an attribute of an autograd function's context.
    fn on_context(&self, node: Node<'a>) -> Option<&'a str> {
        (node.kind() == "attribute").then_some(())?;
        node.child_by_field_name("object").filter(|o| self.text(*o) == "ctx")?;
        Some(self.text(node.child_by_field_name("attribute")?))
    }

    /// The tensors `ctx.save_for_backward(a, b)` (a call node) keeps.
    fn saved_for_backward(&self, node: Node<'a>) -> Option<Vec<Node<'a>>> {
        (node.kind() == "call").then_some(())?;
        (self.text(node.child_by_field_name("function")?) == "ctx.save_for_backward").then_some(())?;
        Some(named_children(node.child_by_field_name("arguments")?))
    }

    /// The forward's `return out` (or `return out, argmax`) as autograd runs the backward after
    /// it: with the context and a gradient like each output (none for an output that is no name).
    fn backward_after(&self, returned: Node<'a>) -> Option<String> {
        let (class, context) = (self.class.as_deref()?, self.context.as_ref()?);
        let backward = *self.functions.get(&format!("{class}_backward"))?;
        let outputs = match returned.kind() {
            "expression_list" | "tuple" => named_children(returned),
            _ => vec![returned],
        };
        let gradients = parameters(self.text, backward).into_iter().enumerate().map(|(k, _)| match outputs.get(k).filter(|o| o.kind() == "identifier") {
            Some(output) => format!("torch::empty_like({})", cpp_name(self.text(*output))),
            None => UNWRITTEN.to_string(),
        });
        let args: Vec<String> = context.parameters().into_iter().chain(gradients).collect();
        Some(format!("{}({});", cpp_name(&format!("{class}_backward")), args.join(", ")))
    }

    /// The prefix of the backward's parameters for the items `node` holds: `ctx.saved_tensors`,
    /// or an attribute the forward set to a tuple (`ctx.for_backwards`).
    fn held_by_context(&self, node: Node<'a>) -> Option<String> {
        self.context.as_ref()?.items_of(self.on_context(node)?)
    }

    /// `ctx.saved_tensors[k]` or `ctx.for_backwards[k]` (a subscript node) as the backward's
    /// parameter for that item.
    fn context_item(&self, subscript: Node<'a>) -> Option<String> {
        let prefix = self.held_by_context(subscript.child_by_field_name("value")?)?;
        let index: usize = self.text(subscript.child_by_field_name("subscript")?).parse().ok()?;
        Some(format!("{prefix}_{index}"))
    }

    /// `def f(a, b=2):` as `void f(auto a, auto b = 2) {…}`; a parametrized test's names
    /// (`@pytest.mark.parametrize("n", [7, 4096])`) are its locals, at their first values.
    fn function(&mut self, definition: Node<'a>, parametrized: &HashMap<String, Bound<'a>>) {
        let (Some(name), Some(body)) = (definition.child_by_field_name("name"), definition.child_by_field_name("body")) else { return };
        let method = self.text(name);
        let context = self.context.as_ref();
        let mut params: Vec<String> = match context.filter(|_| method == "backward") {
            Some(context) => context.parameters().into_iter().map(|p| format!("auto {p}")).collect(),
            None => Vec::new(),
        };
        self.in_forward = context.is_some() && method == "forward";
        for (name, default) in parameters(self.text, definition).into_iter().chain(constructor_parameters(self.text, definition)) {
            let name = self.text(name);
            if parametrized.contains_key(name) {
                continue;
            }
            match default.and_then(|d| self.expression(d)) {
                Some(value) => params.push(format!("auto {} = {value}", cpp_name(name))),
                None => params.push(format!("auto {}", cpp_name(name))),
            }
        }
        let row = definition.start_position().row;
        let name = qualified_name(self.text, definition).unwrap_or_else(|| self.text(name).to_string());
        self.put(row, &format!("void {}({}) {{", cpp_name(&name), params.join(", ")));
        let mut names: Vec<_> = parametrized.iter().collect();
        names.sort_by_key(|(name, _)| *name);
        for (name, value) in names {
            self.bind_local(row, name, value.clone());
        }
        self.params = parameter_names(self.text, definition);
        self.tuple_params = tuple_parameters(self.text, definition);
        self.block(body);
        self.params.clear();
        self.tuple_params.clear();
        self.aliases.clear();
        self.local_lists.clear();
        self.objects.clear();
        self.in_forward = false;
        self.put(definition.end_position().row, "}");
    }

    fn block(&mut self, block: Node<'a>) {
        self.statements(&named_children(block));
    }

    /// Statements of one block, in order; an `if` chosen by optional arguments takes those after
    /// it into its branches.
    fn statements(&mut self, statements: &[Node<'a>]) {
        for (k, statement) in statements.iter().enumerate() {
            if statement.kind() == "if_statement" && self.optional_branches(*statement, &statements[k + 1..]) {
                return;
            }
            self.statement(*statement);
        }
    }

    /// One statement of a function: assignments and calls of host functions are written; the
    /// bodies of `with`, of an `if`'s first branch and of a loop's first pass are read in place.
    fn statement(&mut self, statement: Node<'a>) {
        let row = statement.start_position().row;
        match statement.kind() {
            "expression_statement" => {
                let expression = statement.named_child(0);
                if let Some((attribute, value)) = expression.and_then(|e| self.context_attribute_set(e)).filter(|_| self.in_forward) {
                    // A shape kept as a tensor of that shape, for `new_zeros(ctx.input_shape)`.
                    let written = match self.shape_of(value) {
                        Some(tensor) => Some(format!("torch::empty_like({tensor})")),
                        None => self.expression(value),
                    };
                    if let Some(written) = written {
                        self.put(row, &format!("auto ctx_{attribute} = {written};"));
                    }
                    // Each item of a tuple too, for the backward that reads it item by item.
                    let items = self.tuple_items(value).unwrap_or_default();
                    for (k, item) in items.into_iter().enumerate() {
                        if let Some(value) = self.expression(item) {
                            self.put(row, &format!("auto ctx_{attribute}_{k} = {value};"));
                        }
                    }
                } else if let Some(saved) = expression.and_then(|e| self.saved_for_backward(e)).filter(|_| self.in_forward) {
                    for (k, tensor) in saved.into_iter().enumerate() {
                        if let Some(value) = self.expression(tensor) {
                            self.put(row, &format!("auto ctx_saved_{k} = {value};"));
                        }
                    }
                } else if let Some((name, object)) = self.object_made(statement) {
                    self.objects.insert(name, object);
                } else if let Some((alias, function)) = self.function_alias(statement) {
                    self.aliases.insert(alias, function);
                } else if let Some(assignments) = self.assignments(statement) {
                    if let Some(call) = self.unpacked_call(statement) {
                        self.put(row, &format!("{call};"));
                    }
                    // `x = x.contiguous()` keeps the tensor it names, `x = float(x)` the
                    // number: no new value.
                    for (name, value) in assignments.into_iter().filter(|(name, value)| name != value.trim_start_matches('(').trim_end_matches(')')) {
                        self.put(row, &format!("auto {name} = {value};"));
                    }
                } else {
                    // `print(n, run(ext.op, x))`: the host calls inside what is no host call.
                    for call in self.outermost_host_calls(statement) {
                        self.put(row, &format!("{call};"));
                    }
                }
                // After the value is written: `shift = torch.tensor(shift)` reads the data first.
                self.keep_local_data(statement);
            }
            // A wrapper that returns what the op returns: the call is the statement.
            "return_statement" => {
                if let Some(call) = statement.named_child(0).filter(|c| c.kind() == "call").and_then(|c| self.host_call(c)) {
                    self.put(row, &format!("{call};"));
                }
                if let Some(backward) = statement.named_child(0).filter(|_| self.in_forward).and_then(|r| self.backward_after(r)) {
                    self.put(row, &backward);
                }
            }
            "with_statement" => {
                if let Some(body) = statement.child_by_field_name("body") {
                    self.block(body);
                }
            }
            "if_statement" => {
                let clauses = named_children(statement).into_iter().filter(|c| matches!(c.kind(), "elif_clause" | "else_clause"));
                match statement.child_by_field_name("condition").and_then(|c| on_cuda(self.text(c))) {
                    // A branch for another device (`if x.device.type == 'npu':`): the CUDA
                    // path is the other one.
                    Some(false) => {
                        let taken = clauses.last().filter(|c| c.kind() == "else_clause").and_then(|c| c.child_by_field_name("body"));
                        if let Some(body) = taken {
                            self.block(body);
                        }
                        return;
                    }
                    Some(true) => {
                        if let Some(body) = statement.child_by_field_name("consequence") {
                            self.block(body);
                        }
                        return;
                    }
                    None => {}
                }
                if self.assigned_in_branches(statement) {
                    return;
                }
                // Read in place: what the branch assigns, the function has after it, as Python
                // scopes names (`if weight is None: weight = x.new_empty(0)`).
                if let Some(body) = statement.child_by_field_name("consequence") {
                    self.block(body);
                }
                // The other branches' calls are calls the program may make too (a timing
                // helper's `perf_func(q, k, v, out, stages)` beside `perf_func(q, k, v, out)`,
                // for ops of other parameters); their assignments stay the first branch's.
                for clause in named_children(statement).into_iter().filter(|c| matches!(c.kind(), "elif_clause" | "else_clause")) {
                    for call in self.outermost_host_calls(clause) {
                        self.put(clause.start_position().row, &format!("{{ {call}; }}"));
                    }
                }
            }
            "for_statement" => self.first_pass(statement),
            // `assert masks.size(1) == kernel_size * kernel_size * group_size`: sizes the program
            // keeps equal, from which the spec may work one out.
            "assert_statement" => {
                // `assert pool(x).shape == (1, 16, 4, 4)` runs the op.
                for call in self.outermost_host_calls(statement) {
                    self.put(row, &format!("{call};"));
                }
                if let Some((left, right)) = statement.named_child(0).and_then(|c| self.equality(c)) {
                    self.put(row, &format!("assert({left} == {right});"));
                }
            }
            _ => {}
        }
    }

    /// An `if` that chooses by which optional arguments are given (`if xyz_batch_cnt is not None
    /// and center_batch_cnt is not None: … else: …`), written as C++'s `if`, `else if` and
    /// `else`, each branch whole: the host code reads which one the call's arguments take (a
    /// `None` left out is `0`). What follows the `if` in its block (`after`) runs after whichever
    /// branch is taken, with the names that branch made, which outlive it in Python but not in a
    /// C++ block: it is written into each branch, a copy on the row the next branch opens on.
    /// `false`, with nothing written, for any other `if`.
    fn optional_branches(&mut self, statement: Node<'a>, after: &[Node<'a>]) -> bool {
        // `if`s one after another copy what follows each twice: so deep, and no deeper.
        const MAX_COPIED_DEPTH: usize = 3;
        let clauses: Vec<Node> = named_children(statement).into_iter().filter(|c| matches!(c.kind(), "elif_clause" | "else_clause")).collect();
        let condition_of = |clause: Node<'a>| self.given_condition(clause.child_by_field_name("condition")?);
        let openings: Option<Vec<(usize, String)>> = clauses
            .iter()
            .map(|clause| match clause.kind() {
                "elif_clause" => condition_of(*clause).map(|condition| (clause.start_position().row, format!("}} else if ({condition}) {{"))),
                _ => Some((clause.start_position().row, "} else {".to_string())),
            })
            .collect();
        let copied = if self.optional_depth < MAX_COPIED_DEPTH { after } else { &[] };
        // A lone `if lengths is None: lengths = torch.full(…)` is a branch of its own only where
        // something follows to read what it made (as a conditional value, `lengths` would be
        // read in its own definition).
        let (Some(first), Some(mut openings), false) = (condition_of(statement), openings, clauses.is_empty() && copied.is_empty()) else { return false };
        let mut bodies = vec![statement.child_by_field_name("consequence")];
        bodies.extend(clauses.iter().map(|c| c.child_by_field_name("consequence").or_else(|| c.child_by_field_name("body"))));
        // With no `else`, what follows runs when no branch is taken too.
        if !copied.is_empty() && !clauses.last().is_some_and(|c| c.kind() == "else_clause") {
            openings.push((statement.end_position().row, "} else {".to_string()));
            bodies.push(None);
        }
        self.put(statement.start_position().row, &format!("if ({first}) {{"));
        self.optional_depth += 1;
        for (k, body) in bodies.into_iter().enumerate() {
            if let Some(body) = body {
                self.block(body);
            }
            let Some((row, opening)) = openings.get(k) else {
                self.statements(copied);
                continue;
            };
            let outer = self.row_override;
            self.row_override = Some(outer.unwrap_or(*row));
            self.statements(copied);
            self.row_override = outer;
            self.put(*row, opening);
        }
        self.optional_depth -= 1;
        self.put(copied.last().unwrap_or(&statement).end_position().row, "}");
        if copied.is_empty() {
            self.statements(after);
        }
        true
    }

    /// An `if` whose branches only assign (`if aligned: ious = b.new_zeros(rows) else: ious =
    /// b.new_zeros((rows, cols))`, mmcv's `bbox_overlaps`), written as one conditional value
    /// per name after it, `auto ious = (aligned) ? (torch::empty({rows})) : (…);`, which the
    /// host reading settles by the caller's arguments; a name a branch leaves keeps its value
    /// there. `false`, with nothing written, for any other `if` (one that calls the host too).
    fn assigned_in_branches(&mut self, statement: Node<'a>) -> bool {
        let mut branches = vec![(statement.child_by_field_name("condition"), statement.child_by_field_name("consequence"))];
        for clause in named_children(statement).into_iter().filter(|c| matches!(c.kind(), "elif_clause" | "else_clause")) {
            let condition = clause.child_by_field_name("condition").filter(|_| clause.kind() == "elif_clause");
            branches.push((condition, clause.child_by_field_name("consequence").or_else(|| clause.child_by_field_name("body"))));
        }
        if branches.last().is_some_and(|(condition, _)| condition.is_some()) {
            branches.push((None, None));
        }
        let mut names: Vec<String> = Vec::new();
        let mut written: Vec<(Option<String>, HashMap<String, String>)> = Vec::new();
        for (condition, body) in branches {
            let condition = match condition {
                Some(c) => match self.condition(c) {
                    Some(c) => Some(c),
                    None => return false,
                },
                None => None,
            };
            let mut assigned = HashMap::new();
            for statement in body.map(named_children).unwrap_or_default() {
                match statement.kind() {
                    "assert_statement" | "pass_statement" | "comment" => continue,
                    "expression_statement" if self.outermost_host_calls(statement).is_empty() && self.unpacked_call(statement).is_none() => {}
                    _ => return false,
                }
                let Some(pairs) = self.assignments(statement) else { return false };
                for (name, value) in pairs {
                    if !names.contains(&name) {
                        names.push(name.clone());
                    }
                    assigned.insert(name, value);
                }
            }
            written.push((condition, assigned));
        }
        if names.is_empty() {
            return false;
        }
        let end = statement.end_position().row;
        for name in names {
            let kept = name.clone();
            let value = written.iter().rev().fold(None, |otherwise: Option<String>, (condition, assigned)| {
                let value = assigned.get(&name).cloned().unwrap_or_else(|| kept.clone());
                Some(match (condition, otherwise) {
                    (Some(condition), Some(otherwise)) => format!("({condition}) ? ({value}) : ({otherwise})"),
                    _ => value,
                })
            });
            if let Some(value) = value.filter(|v| *v != name) {
                self.put(end, &format!("auto {name} = {value};"));
            }
        }
        true
    }

    /// A condition on which optional arguments are given, in C++: `x is not None` as `x != 0`,
    /// joined by `and`, `or` and `not`; `None` for any other condition.
    fn given_condition(&self, condition: Node<'a>) -> Option<String> {
        match condition.kind() {
            "parenthesized_expression" => Some(format!("({})", self.given_condition(condition.named_child(0)?)?)),
            "not_operator" => Some(format!("!({})", self.given_condition(condition.child_by_field_name("argument")?)?)),
            "boolean_operator" => {
                let operator = match self.text(condition.child_by_field_name("operator")?) {
                    "and" => "&&",
                    "or" => "||",
                    _ => return None,
                };
                Some(format!("{} {operator} {}", self.given_condition(condition.child_by_field_name("left")?)?, self.given_condition(condition.child_by_field_name("right")?)?))
            }
            "comparison_operator" => {
                let children: Vec<Node> = condition.children(&mut condition.walk()).collect();
                // `is not` is one operator.
                let [name, operator, none] = children[..] else { return None };
                let operators = match self.text(operator).split_whitespace().collect::<Vec<_>>()[..] {
                    ["is"] => "==",
                    ["is", "not"] => "!=",
                    _ => return None,
                };
                (name.kind() == "identifier" && none.kind() == "none").then(|| format!("{} {operators} 0", cpp_name(self.text(name))))
            }
            _ => None,
        }
    }

    /// The two sides of `a == b`, in C++; `None` for any other condition.
    fn equality(&self, condition: Node<'a>) -> Option<(String, String)> {
        let children: Vec<Node> = condition.children(&mut condition.walk()).collect();
        let [left, operator, right] = children[..] else { return None };
        (condition.kind() == "comparison_operator" && operator.kind() == "==").then_some(())?;
        Some((self.expression(left)?, self.expression(right)?))
    }

    /// `x = [[1., 0], [0, 1.]]` keeps the data `x` names, for where it is read; any other value
    /// of a name ends the data it named.
    fn keep_local_data(&mut self, statement: Node<'a>) {
        let Some(assignment) = statement.named_child(0).filter(|a| a.kind() == "assignment") else { return };
        let (Some(left), Some(right)) = (assignment.child_by_field_name("left"), assignment.child_by_field_name("right")) else { return };
        if left.kind() != "identifier" {
            return;
        }
        let name = self.text(left).to_string();
        let right = unparenthesized(right);
        match right.kind() {
            "list" | "tuple" | "dictionary" => self.local_lists.insert(name, right),
            _ => self.local_lists.remove(&name),
        };
    }

    /// `carafe = Carafe(5, 4, 2)`, an object of a module whose `forward` leads to a callee: its
    /// name, the `forward` and the arguments it is made with.
    fn object_made(&self, statement: Node<'a>) -> Option<(String, (String, Node<'a>))> {
        let assignment = statement.named_child(0).filter(|a| a.kind() == "assignment")?;
        let left = assignment.child_by_field_name("left").filter(|l| l.kind() == "identifier")?;
        let made = assignment.child_by_field_name("right").filter(|r| r.kind() == "call")?;
        // `.to(device)`, `.cuda()` keep the object.
        let made = std::iter::successors(Some(made), |call| {
            let function = call.child_by_field_name("function").filter(|f| f.kind() == "attribute")?;
            matches!(self.text(function.child_by_field_name("attribute")?), "to" | "cuda" | "eval" | "train" | "half" | "float" | "double").then(|| function.child_by_field_name("object")).flatten().filter(|o| o.kind() == "call")
        })
        .last()?;
        let forward = self.module_forward(made.child_by_field_name("function")?)?;
        Some((self.text(left).to_string(), (forward, made.child_by_field_name("arguments")?)))
    }

    /// The `forward` of the module a constructor call's `function` names (`Carafe`,
    /// `ops.Carafe`), where it is a function of the script or a callee.
    fn module_forward(&self, function: Node<'a>) -> Option<String> {
        let class = match function.kind() {
            "identifier" => self.text(function),
            "attribute" => self.text(function.child_by_field_name("attribute")?),
            _ => return None,
        };
        // A class's name is capitalised; a function's `forward` of the same words is not one.
        class.starts_with(|c: char| c.is_ascii_uppercase()).then_some(())?;
        let forward = format!("{class}_forward");
        (self.functions.contains_key(&forward) || self.bindings.iter().any(|b| b.python == forward)).then_some(forward)
    }

    /// `f = module.ShiftFn.apply` (or another name of a host function): `f` and the function's
    /// name, for the calls of `f` that follow.
    fn function_alias(&self, statement: Node<'a>) -> Option<(String, String)> {
        let assignment = statement.named_child(0).filter(|a| a.kind() == "assignment")?;
        let left = assignment.child_by_field_name("left").filter(|l| l.kind() == "identifier")?;
        let right = assignment.child_by_field_name("right").filter(|r| matches!(r.kind(), "attribute" | "identifier"))?;
        let (name, _) = self.callee_name(right, self.class.as_deref())?;
        let known = self.functions.contains_key(&name) || self.bindings.iter().any(|b| b.python == name);
        known.then(|| (self.text(left).to_string(), name))
    }

    /// The host calls in `node`, outermost first: those no other host call holds.
    fn outermost_host_calls(&self, node: Node<'a>) -> Vec<String> {
        if node.kind() == "call" {
            if let Some(call) = self.host_call(node) {
                return vec![call];
            }
        }
        named_children(node).into_iter().flat_map(|child| self.outermost_host_calls(child)).collect()
    }

    /// A loop's first pass: `for n in [1024, 4096]:` runs its body with `n = 1024` first, as
    /// the program's first launch does; `for _ in range(10):` with `_ = 0`; `for s, k in
    /// shapes:` over `shapes = [(s, k) for s in sizes for k in widths]` with each at its list's first.
    fn first_pass(&mut self, loop_node: Node<'a>) {
        let (Some(left), Some(right), Some(body)) = (loop_node.child_by_field_name("left"), loop_node.child_by_field_name("right"), loop_node.child_by_field_name("body")) else { return };
        let row = loop_node.start_position().row;
        self.put(row, "{");
        for (name, value) in self.first_item(left, right) {
            self.bind_local(row, &name, value);
        }
        self.block(body);
        self.put(body.end_position().row, "}");
    }

    /// `name` bound to `value` on `row`: a value declared there, data kept for where it is read.
    fn bind_local(&mut self, row: usize, name: &str, value: Bound<'a>) {
        match value {
            Bound::Value(value) => self.put(row, &format!("auto {} = {value};", cpp_name(name))),
            Bound::Data(data) => {
                self.local_lists.insert(name.to_string(), data);
            }
        }
    }

    /// What `target` is at the first item of `iterable`, as (name, C++ value) pairs in the
    /// order they are declared: a list or tuple (written, or one the module names), a
    /// comprehension (its own loops' first items, then its element), `range(…)`.
    fn first_item(&self, target: Node<'a>, iterable: Node<'a>) -> Vec<(String, Bound<'a>)> {
        let from_helper = (iterable.kind() == "identifier" && !self.lists.contains_key(self.text(iterable))).then(|| self.helper_lists.get(self.text(iterable))).flatten();
        if let Some(ends) = from_helper {
            return ends.first.clone().filter(|_| target.kind() == "identifier").map(|first| vec![(cpp_name(self.text(target)), Bound::Value(first))]).unwrap_or_default();
        }
        let iterable = match iterable.kind() {
            "identifier" => self.data_named(iterable).unwrap_or(iterable),
            _ => first_branch(iterable),
        };
        match iterable.kind() {
            "list" | "tuple" => iterable.named_child(0).map(|item| self.bind(target, item)).unwrap_or_default(),
            "list_comprehension" | "generator_expression" => {
                let clauses = named_children(iterable).into_iter().filter(|c| c.kind() == "for_in_clause");
                let mut out: Vec<(String, Bound<'a>)> = clauses
                    .filter_map(|clause| Some((clause.child_by_field_name("left")?, clause.child_by_field_name("right")?)))
                    .flat_map(|(left, right)| self.first_item(left, right))
                    .collect();
                out.extend(iterable.child_by_field_name("body").map(|element| self.bind(target, element)).unwrap_or_default());
                out
            }
            // `for m, n in zip(ms, ns)`, `for n, d in product(*factors)` (itertools'): each name at
            // its list's first item.
            "call" if iterable.child_by_field_name("function").is_some_and(|f| matches!(self.text(f), "zip" | "product" | "itertools.product")) => {
                let lists = iterable.child_by_field_name("arguments").map(|a| self.spread_lists(a)).unwrap_or_default();
                let names = named_children(target);
                match matches!(target.kind(), "pattern_list" | "tuple_pattern") && names.len() == lists.len() {
                    true => names.into_iter().zip(lists).flat_map(|(name, list)| self.first_item(name, list)).collect(),
                    false => Vec::new(),
                }
            }
            "call" if iterable.child_by_field_name("function").is_some_and(|f| self.text(f) == "list") => {
                iterable.child_by_field_name("arguments").and_then(|a| a.named_child(0)).map(|list| self.first_item(target, list)).unwrap_or_default()
            }
            "call" if iterable.child_by_field_name("function").is_some_and(|f| self.text(f) == "range") => {
                self.first_of(iterable).filter(|_| target.kind() == "identifier").map(|v| vec![(cpp_name(self.text(target)), Bound::Value(v))]).unwrap_or_default()
            }
            _ => Vec::new(),
        }
    }

    /// The data (a list, tuple or dictionary) an identifier names: the function's local, else
    /// the module's.
    fn data_named(&self, name: Node<'a>) -> Option<Node<'a>> {
        (name.kind() == "identifier").then_some(())?;
        self.local_lists.get(self.text(name)).or_else(|| self.lists.get(self.text(name))).copied()
    }

    /// The lists a call is given, each `*factors` (a list of lists the code names) spread into
    /// its items: `product(*[ns, ds])` iterates `ns` and `ds`.
    fn spread_lists(&self, arguments: Node<'a>) -> Vec<Node<'a>> {
        let spread = |argument: Node<'a>| {
            let named = argument.named_child(0).and_then(|n| self.data_named(n));
            let list = named.or_else(|| argument.named_child(0)).filter(|l| matches!(l.kind(), "list" | "tuple"));
            list.map(data_items).unwrap_or_default()
        };
        let items = named_children(arguments).into_iter().filter(|a| a.kind() != "comment");
        items.flat_map(|argument| if argument.kind() == "list_splat" { spread(argument) } else { vec![argument] }).collect()
    }

    /// `target` bound to `item`: a name to its value (not to itself, as a comprehension's
    /// `(s, k) for s in …` would) or to the data it is, a tuple of names to a tuple of as many
    /// values.
    fn bind(&self, target: Node<'a>, item: Node<'a>) -> Vec<(String, Bound<'a>)> {
        let item = unparenthesized(item);
        match (target.kind(), item.kind()) {
            ("identifier", "list" | "tuple") => vec![(cpp_name(self.text(target)), Bound::Data(item))],
            ("identifier", _) => {
                let name = cpp_name(self.text(target));
                self.expression(item).filter(|value| *value != name).map(|value| vec![(name, Bound::Value(value))]).unwrap_or_default()
            }
            ("pattern_list" | "tuple_pattern", "tuple" | "list") if target.named_child_count() == item.named_child_count() => {
                named_children(target).into_iter().zip(named_children(item)).flat_map(|(t, i)| self.bind(t, i)).collect()
            }
            _ => Vec::new(),
        }
    }

    /// `a = …` and `a, b = …, …` where every value can be written: (name, value) pairs.
    fn assignments(&self, statement: Node<'a>) -> Option<Vec<(String, String)>> {
        let assignment = statement.named_child(0).filter(|a| a.kind() == "assignment")?;
        let (left, right) = (assignment.child_by_field_name("left")?, assignment.child_by_field_name("right")?);
        let pairs: Vec<(Node, Node)> = match (left.kind(), right.kind()) {
            // `rois, argmax = ctx.saved_tensors`, `idx, n = ctx.for_backwards`: what the forward
            // kept, in order.
            ("pattern_list" | "tuple_pattern", "attribute") if self.held_by_context(right).is_some() => {
                let prefix = self.held_by_context(right)?;
                let names = named_children(left).into_iter().enumerate().filter(|(_, n)| n.kind() == "identifier" && self.text(*n) != "_");
                return Some(names.map(|(k, name)| (cpp_name(self.text(name)), format!("{prefix}_{k}"))).collect());
            }
            // `B, N, _ = x.size()` (or `x.shape`): each name the dimension at its place.
            ("pattern_list" | "tuple_pattern", "call" | "attribute") if self.shape_of(right).is_some() => {
                let tensor = self.shape_of(right)?;
                let names = named_children(left).into_iter().enumerate().filter(|(_, n)| n.kind() == "identifier" && self.text(*n) != "_");
                return Some(names.map(|(k, name)| (cpp_name(self.text(name)), format!("{tensor}.size({k})"))).collect());
            }
            // `q, k, v = make_inputs(b, n)`: what the function returns, item by item.
            ("pattern_list" | "tuple_pattern", "call") => {
                let returned = self.returned(right)?;
                let names = named_children(left);
                (names.len() == returned.len()).then_some(())?;
                let written = names.into_iter().zip(returned).filter_map(|(name, value)| Some((cpp_name(self.text(name).trim()), value?))).filter(|(name, _)| super::is_identifier(name));
                return Some(written.collect());
            }
            ("identifier", _) => vec![(left, right)],
            ("pattern_list" | "tuple_pattern", "expression_list" | "tuple") if left.named_child_count() == right.named_child_count() => {
                named_children(left).into_iter().zip(named_children(right)).collect()
            }
            _ => return None,
        };
        pairs.into_iter().map(|(name, value)| (name.kind() == "identifier").then(|| Some((cpp_name(self.text(name)), self.expression(value)?))).flatten()).collect()
    }

    /// The host call whose result `statement` unpacks (`out, secs = run(ext.op, x)`): it runs
    /// the op whatever its results are.
    fn unpacked_call(&self, statement: Node<'a>) -> Option<String> {
        let assignment = statement.named_child(0).filter(|a| a.kind() == "assignment")?;
        assignment.child_by_field_name("left").filter(|l| matches!(l.kind(), "pattern_list" | "tuple_pattern"))?;
        self.host_call(assignment.child_by_field_name("right").filter(|r| r.kind() == "call")?)
    }

    /// What a call of a function of the script returns (`return q, k, v`), item by item, each
    /// written where it can be: the function read in place, its parameters being the call's
    /// arguments (or their defaults), its locals the values they are given on the way to the
    /// `return` (an `if`'s first branch, as elsewhere).
    fn returned(&self, call: Node<'a>) -> Option<Vec<Option<String>>> {
        let (inner, items) = self.read_in_place(call)?;
        Some(items.into_iter().map(|item| inner.returned_value(item)).collect())
    }

    /// The function of the script that `call` calls, read in place up to its `return`: a
    /// writer that knows its locals there, and the items it returns.
    fn read_in_place(&self, call: Node<'a>) -> Option<(Writer<'a>, Vec<Node<'a>>)> {
        let function = call.child_by_field_name("function")?;
        // `ext.forward(…)` is the binding's, not a function `forward` of the script.
        let (name, by_class) = self.callee_name(function, self.class.as_deref())?;
        let definition = *self.functions.get(&name).filter(|_| function.kind() == "identifier" || by_class)?;
        let arguments = call.child_by_field_name("arguments")?;
        let positional = self.arguments(arguments);
        let mut inner = self.beside();
        for (at, (name, default)) in parameters(self.text, definition).into_iter().enumerate() {
            let name = self.text(name);
            let passed = match self.keyword(arguments, name) {
                Some(value) => self.expression(value),
                None => positional.get(at).cloned().flatten(),
            };
            let value = passed.or_else(|| self.expression(default?));
            inner.locals.insert(name.to_string(), value);
        }
        let items = inner.read_to_return(definition.child_by_field_name("body")?)?;
        Some((inner, items))
    }

    /// Reads `block` in place up to its `return`, keeping each local's value; what it returns.
    /// A `return` in an `if` is an early exit (`if "sdpa" in tag: return None`): what the
    /// block returns after it is the result, that one only where none follows.
    fn read_to_return(&mut self, block: Node<'a>) -> Option<Vec<Node<'a>>> {
        let mut early = None;
        for statement in named_children(block) {
            match statement.kind() {
                "expression_statement" => {
                    let Some(assignment) = statement.named_child(0).filter(|a| a.kind() == "assignment") else { continue };
                    let (Some(left), Some(right)) = (assignment.child_by_field_name("left"), assignment.child_by_field_name("right")) else { continue };
                    if left.kind() == "identifier" {
                        let name = self.text(left).to_string();
                        match is_list(self.text, right) {
                            true => self.local_lists.insert(name.clone(), right),
                            false => self.local_lists.remove(&name),
                        };
                        self.locals.insert(name, self.expression(right));
                    }
                }
                "if_statement" => {
                    let returned = statement.child_by_field_name("consequence").and_then(|body| self.read_to_return(body));
                    early = early.or(returned);
                }
                "with_statement" => {
                    if let Some(returned) = statement.child_by_field_name("body").and_then(|body| self.read_to_return(body)) {
                        return Some(returned);
                    }
                }
                "return_statement" => {
                    let value = statement.named_child(0)?;
                    let items = match value.kind() {
                        "expression_list" | "tuple" => named_children(value),
                        _ => vec![value],
                    };
                    return Some(items);
                }
                _ => {}
            }
        }
        early
    }

    /// The lists the module unpacks from calls of the script's functions
    /// (`Ms, Ns, Ks = get_mnk()` with `return Ms, Ns, Ks`), by the names it gives them.
    fn lists_from_helpers(&self, root: Node<'a>) -> HashMap<String, ListEnds> {
        let mut out = HashMap::new();
        let assignments = named_children(root).into_iter().filter(|s| s.kind() == "expression_statement").filter_map(|s| s.named_child(0)).filter(|a| a.kind() == "assignment");
        for assignment in assignments {
            let (Some(left), Some(call)) = (assignment.child_by_field_name("left"), assignment.child_by_field_name("right").filter(|r| r.kind() == "call")) else { continue };
            let Some((inner, items)) = self.read_in_place(call) else { continue };
            let names = match left.kind() {
                "pattern_list" | "tuple_pattern" => named_children(left),
                _ => vec![left],
            };
            if names.len() != items.len() {
                continue;
            }
            for (name, item) in names.into_iter().zip(items) {
                let list = match item.kind() {
                    "identifier" => inner.local_lists.get(inner.text(item)).copied(),
                    _ => Some(item).filter(|i| is_list(inner.text, *i)),
                };
                if let Some(list) = list.filter(|_| name.kind() == "identifier") {
                    out.insert(self.text(name).to_string(), ListEnds { first: inner.first_of(list), largest: inner.largest_item(list) });
                }
            }
        }
        out
    }

    /// The first item of a list of numbers: written (`[64, 128]`), `list(…)` of one, or a
    /// `range`.
    fn first_of(&self, list: Node<'a>) -> Option<String> {
        match list.kind() {
            "list" | "tuple" => self.expression(list.named_child(0)?),
            "call" => {
                let arguments = list.child_by_field_name("arguments")?;
                match (self.text(list.child_by_field_name("function")?), self.arguments(arguments).as_slice()) {
                    ("list", _) => self.first_of(arguments.named_child(0)?),
                    ("range", [_]) => Some("0".to_string()),
                    ("range", [start, ..]) => start.clone(),
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// The largest item of a list of numbers: one the module or a helper names, one written
    /// with numbers, `list(…)` of one, or a `range` (its last item).
    fn largest_item(&self, list: Node<'a>) -> Option<String> {
        match list.kind() {
            "identifier" => match self.lists.get(self.text(list)) {
                Some(named) => self.largest_item(*named),
                None => self.helper_lists.get(self.text(list))?.largest.clone(),
            },
            "list" | "tuple" => named_children(list).into_iter().map(|item| self.expression(item)?.parse::<i64>().ok()).collect::<Option<Vec<i64>>>()?.into_iter().max().map(|m| m.to_string()),
            "call" => {
                let arguments = list.child_by_field_name("arguments")?;
                let function = self.text(list.child_by_field_name("function")?);
                if function == "list" {
                    return self.largest_item(arguments.named_child(0)?);
                }
                let bounds = self.arguments(arguments).into_iter().collect::<Option<Vec<String>>>()?;
                match (function, bounds.as_slice()) {
                    ("range", [stop] | [_, stop]) => Some(format!("{} - 1", parenthesized(stop))),
                    ("range", [start, stop, step]) => {
                        let (start, stop, step) = (parenthesized(start), parenthesized(stop), parenthesized(step));
                        Some(format!("{start} + ({stop} - {start} - 1) / {step} * {step}"))
                    }
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// A returned item: a local as its value, anything else as written.
    fn returned_value(&self, item: Node<'a>) -> Option<String> {
        match self.locals.get(self.text(item)) {
            Some(local) if item.kind() == "identifier" => local.clone(),
            _ => self.expression(item),
        }
    }

    /// Whether `value` (written C++) calls a host function, which only a function can.
    fn calls_host(&self, value: &str) -> bool {
        super::identifiers_in(value).any(|w| self.functions.contains_key(w) || self.bindings.iter().any(|b| b.cpp_bare() == w))
    }

    /// A Python expression as C++, where it is a number, a name, arithmetic, a tensor made by
    /// a shape or like another, a size read from a tensor, or a call of a host function.
    fn expression(&self, node: Node<'a>) -> Option<String> {
        let text = self.text(node);
        match node.kind() {
            "integer" => Some(text.replace('_', "")),
            "float" => Some(text.replace('_', "")),
            "true" => Some("1".into()),
            "false" | "none" => Some("0".into()),
            "identifier" => match self.locals.get(text) {
                Some(local) => local.as_deref().map(parenthesized),
                None => Some(cpp_name(text)),
            },
            "parenthesized_expression" => Some(format!("({})", self.expression(node.named_child(0)?)?)),
            // A tuple of sizes (`(pool_h, pool_w)`) stands for a tensor of that shape, as a
            // shape an autograd function keeps does: its items are read as `t.size(k)`.
            "tuple" => {
                let items = data_items(node);
                let written = items.iter().map(|item| self.expression(*item)).collect::<Option<Vec<_>>>()?;
                (!written.is_empty()).then(|| format!("torch::empty({{{}}})", written.join(", ")))
            }
            "string" => self.string_literal(node),
            // `0 if pool_mode == 'max' else 1`.
            "conditional_expression" => {
                let [value, condition, otherwise] = named_children(node)[..] else { return None };
                Some(format!("({}) ? ({}) : ({})", self.condition(condition)?, self.expression(value)?, self.expression(otherwise)?))
            }
            "unary_operator" => {
                let operator = node.child_by_field_name("operator").map(|o| self.text(o))?;
                (operator == "-" || operator == "+").then_some(())?;
                Some(format!("{operator}{}", self.expression(node.child_by_field_name("argument")?)?))
            }
            "binary_operator" => {
                let operator = self.text(node.child_by_field_name("operator")?);
                let (left, right) = (self.expression(node.child_by_field_name("left")?)?, self.expression(node.child_by_field_name("right")?)?);
                match operator {
                    "+" | "-" | "*" | "%" | "<<" | ">>" | "&" | "|" | "/" => Some(format!("{left} {operator} {right}")),
                    "//" => Some(format!("{left} / {right}")),
                    "**" => {
                        let (base, exponent) = (left.parse::<i64>().ok()?, right.parse::<u32>().ok()?);
                        base.checked_pow(exponent).map(|v| v.to_string())
                    }
                    _ => None,
                }
            }
            "subscript" => self
                .context_item(node)
                .or_else(|| self.shape_read(node))
                .or_else(|| self.leading_slice(node))
                .or_else(|| self.looked_up(node))
                .or_else(|| self.expression(self.data_item(node)?)),
            // `args.num_tokens` of `parser.add_argument("--num-tokens", default=4096)`.
            // An exported function passed as a value (`run(ext.rms_norm, …)`).
            "attribute" => {
                let attribute = self.text(node.child_by_field_name("attribute")?);
                // What an autograd function's forward keeps on its context.
                if self.on_context(node).is_some() && self.context.as_ref().is_some_and(|c| c.attributes.iter().any(|a| a == attribute)) {
                    return Some(format!("ctx_{attribute}"));
                }
                // An attribute a module's `__init__` sets, read by its methods.
                // Not where the method's own parameter has the name the value reads.
                if node.child_by_field_name("object").is_some_and(|o| self.text(o) == "self") {
                    if let Some(value) = self.attributes.get(attribute).filter(|v| !super::identifiers_in(v).any(|w| self.params.iter().any(|p| p == w))) {
                        return Some(value.clone());
                    }
                }
                // By its bare name, which the callee's parameter it is passed to calls it by.
                let exported = self.binding_called(attribute, node).map(|b| b.cpp_bare().to_string());
                // A tensor's `data` is the tensor.
                let data = || (attribute == "data").then(|| self.expression(node.child_by_field_name("object")?)).flatten();
                self.options.get(attribute).cloned().or(exported).or_else(data)
            }
            "call" => self.call(node),
            _ => None,
        }
    }

    /// A plain string literal (`'max'`) as C++ writes it; `None` for an f-string, bytes or one
    /// with escapes or quotes inside.
    fn string_literal(&self, string: Node<'a>) -> Option<String> {
        let parts = named_children(string);
        let plain = parts.iter().all(|p| matches!(p.kind(), "string_start" | "string_content" | "string_end"));
        let prefix = parts.first().map_or("", |start| self.text(*start).trim_end_matches(['"', '\'']));
        let content = parts.iter().find(|p| p.kind() == "string_content").map_or("", |c| self.text(*c));
        (plain && prefix.chars().all(|c| matches!(c, 'r' | 'R' | 'u' | 'U')) && !content.contains(['"', '\\', '\n'])).then(|| format!("\"{content}\""))
    }

    /// A condition in C++: comparisons (`mode == 'max'`, `n > 0`), `x is None` and the like
    /// joined by `and`, `or` and `not`, or a value read as true where it is not zero.
    fn condition(&self, condition: Node<'a>) -> Option<String> {
        if let Some(given) = self.given_condition(condition) {
            return Some(given);
        }
        match condition.kind() {
            "comparison_operator" => {
                let children: Vec<Node> = condition.children(&mut condition.walk()).collect();
                let [left, operator, right] = children[..] else { return None };
                let operator = self.text(operator);
                ["==", "!=", "<", ">", "<=", ">="].contains(&operator).then_some(())?;
                Some(format!("{} {operator} {}", self.expression(left)?, self.expression(right)?))
            }
            "boolean_operator" => {
                let operator = if self.text(condition.child_by_field_name("operator")?) == "and" { "&&" } else { "||" };
                Some(format!("({}) {operator} ({})", self.condition(condition.child_by_field_name("left")?)?, self.condition(condition.child_by_field_name("right")?)?))
            }
            "not_operator" => Some(format!("!({})", self.condition(condition.child_by_field_name("argument")?)?)),
            _ => self.expression(condition),
        }
    }

    /// A dictionary's value looked up by a key (`mode_dict[mode]` of `mode_dict = {'iou': 0,
    /// 'iof': 1}`), as the conditions that choose it: `(mode == "iou") ? (0) : (…)`, the last
    /// choice a value no source gives.
    fn looked_up(&self, subscript: Node<'a>) -> Option<String> {
        let value = subscript.child_by_field_name("value").filter(|v| v.kind() == "identifier")?;
        let dictionary = self.data_named(value).filter(|d| d.kind() == "dictionary")?;
        let key = self.expression(subscript.child_by_field_name("subscript")?)?;
        // Every entry a `key: value` pair: a `**other` spliced in is entries no one wrote here.
        let entries = named_children(dictionary).into_iter().filter(|e| e.kind() != "comment");
        let pairs = entries.map(|pair| Some((self.expression(pair.child_by_field_name("key")?)?, self.expression(pair.child_by_field_name("value")?)?)));
        let pairs: Vec<(String, String)> = pairs.collect::<Option<_>>()?;
        Some(pairs.iter().rev().fold(UNWRITTEN.to_string(), |otherwise, (k, v)| format!("({} == {k}) ? ({v}) : ({otherwise})", parenthesized(&key))))
    }

    /// `x.shape[0]` and `x.size()[0]` as `x.size(0)`; an item of a shape the context keeps
    /// (`ctx.output_size[0]`) so too.
    fn shape_read(&self, subscript: Node<'a>) -> Option<String> {
        let index = self.expression(subscript.child_by_field_name("subscript")?)?;
        let tensor = self.shape_of(subscript.child_by_field_name("value")?)?;
        Some(format!("{tensor}.size({index})"))
    }

    /// `a[:m, :k]` (each dimension from its start, whole or to an extent) as libtorch's
    /// `a.index({Slice(None, m), Slice(None, k)})`.
    fn leading_slice(&self, subscript: Node<'a>) -> Option<String> {
        let tensor = subscript.child_by_field_name("value").filter(|v| v.kind() == "identifier")?;
        let items: Vec<Node> = subscript.children_by_field_name("subscript", &mut subscript.walk()).collect();
        let extents = items.iter().map(|item| self.slice_from_start(*item)).collect::<Option<Vec<_>>>()?;
        Some(format!("{}.index({{{}}})", cpp_name(self.text(tensor)), extents.join(", ")))
    }

    /// `:m` (or `0:m`) as `Slice(None, m)`, `:` as `Slice()`; `None` for another start, a step
    /// or an index.
    fn slice_from_start(&self, item: Node<'a>) -> Option<String> {
        let children: Vec<Node> = item.children(&mut item.walk()).collect();
        let [colon] = children.iter().filter(|c| c.kind() == ":").collect::<Vec<_>>()[..] else { return None };
        let (before, after): (Vec<&Node>, Vec<&Node>) = children.iter().filter(|c| c.is_named()).partition(|c| c.start_byte() < colon.start_byte());
        let from_start = match before.as_slice() {
            [] => true,
            [start] => self.text(**start) == "0",
            _ => false,
        };
        match (item.kind() == "slice" && from_start, after.as_slice()) {
            (true, []) => Some("Slice()".to_string()),
            (true, [stop]) => Some(format!("Slice(None, {})", self.expression(**stop)?)),
            _ => None,
        }
    }

    fn call(&self, call: Node<'a>) -> Option<String> {
        if let Some(host) = self.host_call(call) {
            return Some(host);
        }
        let function = call.child_by_field_name("function")?;
        let arguments = call.child_by_field_name("arguments")?;
        if function.kind() == "identifier" && TUPLE_HELPERS.contains(&self.text(function)) && arguments.named_child_count() == 1 {
            return Some(format!("{}({})", self.text(function), self.arguments(arguments).first()?.clone()?));
        }
        if function.kind() == "identifier" && matches!(self.text(function), "int" | "float") {
            return Some(format!("({})", self.arguments(arguments).first()?.clone()?));
        }
        // `max(sizes)`: the largest item of a list.
        if function.kind() == "identifier" && self.text(function) == "max" && arguments.named_child_count() == 1 {
            return self.largest_item(arguments.named_child(0)?);
        }
        let (object, method) = match function.kind() {
            "attribute" => (function.child_by_field_name("object")?, self.text(function.child_by_field_name("attribute")?)),
            _ => return None,
        };
        match self.text(object) {
            "torch" => return self.made_by_torch(method, arguments),
            "np" | "numpy" => return self.made_by_numpy(method, arguments),
            "np.random" | "numpy.random" => return self.made_at_random(method, arguments),
            // A size a test draws (`random.randint(1, 1000)`): the largest it may draw.
            "random" if method == "randint" => return self.arguments(arguments).get(1)?.clone(),
            _ => {}
        }
        match method {
            // Methods that keep the shape: the tensor or array they are called on.
            "cuda" | "to" | "half" | "float" | "bfloat16" | "double" | "int" | "long" | "short" | "bool" | "byte" | "char" | "type" | "contiguous" | "clone" | "detach" | "requires_grad_" | "cpu" | "pin_memory" | "zero_" | "fill_" | "uniform_" | "normal_" | "astype" | "sigmoid" | "abs" | "exp" | "relu" | "tanh" | "sqrt" | "neg" | "cos" | "sin" | "tan" | "log" | "log2" | "log1p" | "expm1" | "rsqrt" | "reciprocal" | "square" | "sign" | "floor" | "ceil" | "round" | "trunc" | "erf" | "clamp" | "clamp_" | "clip" | "softmax" | "log_softmax" | "masked_fill" | "add_" | "sub_" | "mul_" | "div_" | "copy_" | "random_" | "bernoulli_" => {
                self.expression(object)
            }
            "unsqueeze" => Some(format!("{}.unsqueeze({})", self.expression(object)?, self.arguments(arguments).first()?.clone()?)),
            // A reduction over one dimension takes it away, or leaves it of extent 1
            // (`keepdim=True`); `squeeze(k)` takes away one of extent 1.
            "sum" | "mean" | "amax" | "amin" | "prod" | "var" | "std" | "norm" | "logsumexp" | "argmax" | "argmin" | "squeeze" => {
                let dim = self.arguments(arguments).into_iter().next().flatten().filter(|_| method != "norm").or_else(|| self.expression(self.keyword(arguments, "dim")?))?;
                dim.parse::<i64>().ok()?;
                let reduced = format!("{}.{method}({dim})", self.expression(object)?);
                let kept = self.keyword(arguments, "keepdim").is_some_and(|k| self.text(k) == "True");
                Some(if kept { format!("{reduced}.unsqueeze({dim})") } else { reduced })
            }
            "view" | "reshape" => Some(format!("torch::empty({{{}}})", self.viewed_dims(object, arguments)?)),
            // A tensor made on another's device (`input.new_zeros(input.size())`, `x.new_empty(n, 4)`).
            "new_zeros" | "new_empty" | "new_ones" | "new_full" => self.shape_of_another(arguments).or_else(|| match method {
                "new_full" => Some(format!("torch::empty({{{}}})", self.shape_argument(arguments, 0)?)),
                _ => Some(format!("torch::empty({{{}}})", self.dims(arguments)?)),
            }),
            // Dimensions in another order: libtorch's own methods (`v.transpose(-2, -1)`,
            // `q.permute({0, 2, 1, 3})`).
            "transpose" | "swapaxes" | "swapdims" | "t" => Some(format!("{}.{method}({})", self.expression(object)?, self.dims(arguments).unwrap_or_default())),
            "permute" => Some(format!("{}.permute({{{}}})", self.expression(object)?, self.dims(arguments)?)),
            "size" => {
                let args = self.arguments(arguments);
                let index = args.first()?.clone()?;
                (object.kind() == "identifier").then(|| format!("{}.size({index})", cpp_name(self.text(object))))
            }
            "numel" => (object.kind() == "identifier").then(|| format!("{}.numel()", cpp_name(self.text(object)))),
            _ => None,
        }
    }

    /// `torch.randn(b, n, d)`, `torch.empty((b, n), dtype=…)`, `torch.full((n,), 1.0)`,
    /// `torch.randint(0, 10, (n,))`, `torch.arange(n)`, `torch.zeros_like(x)`.
    fn made_by_torch(&self, function: &str, arguments: Node<'a>) -> Option<String> {
        match function {
            "empty" | "zeros" | "ones" | "randn" | "rand" => self.shape_of_another(arguments).or_else(|| Some(format!("torch::{function}({{{}}})", self.dims(arguments)?))),
            // The value a count is filled with (`torch.full((n,), P1)`, each cloud's length)
            // bounds what a kernel reads through it.
            "full" => {
                let shape = self.shape_argument(arguments, 0)?;
                match named_children(arguments).get(1).filter(|v| v.kind() != "keyword_argument").and_then(|value| self.expression(*value)) {
                    Some(value) => Some(format!("torch::full({{{shape}}}, {value})")),
                    None => Some(format!("torch::empty({{{shape}}})")),
                }
            }
            "randint" => Some(format!("torch::empty({{{}}})", self.shape_argument(arguments, 2).or_else(|| self.shape_argument(arguments, 1))?)),
            "arange" => Some(format!("torch::empty({{{}}})", self.arange_length(arguments)?)),
            "tensor" | "as_tensor" | "from_numpy" => self.from_data(arguments),
            // The legacy constructors: of data, or of dimensions (`torch.FloatTensor(2, 3)`).
            "Tensor" | "FloatTensor" | "DoubleTensor" | "HalfTensor" | "LongTensor" | "IntTensor" | "BoolTensor" | "ByteTensor" => {
                self.from_data(arguments).or_else(|| Some(format!("torch::empty({{{}}})", self.dims(arguments)?)))
            }
            "empty_like" | "zeros_like" | "ones_like" | "randn_like" | "rand_like" | "full_like" => {
                let first = arguments.named_child(0).filter(|a| a.kind() == "identifier")?;
                Some(format!("torch::{function}({})", cpp_name(self.text(first))))
            }
            _ => None,
        }
    }

    /// NumPy's arrays, as tensors of their shapes: `np.array(data)`, `np.zeros((n, 3))`,
    /// `np.arange(n)`, `np.zeros_like(a)`.
    fn made_by_numpy(&self, function: &str, arguments: Node<'a>) -> Option<String> {
        match function {
            "array" | "asarray" | "ascontiguousarray" => self.from_data(arguments),
            "zeros" | "ones" | "empty" | "full" => Some(format!("torch::empty({{{}}})", self.shape_argument(arguments, 0)?)),
            "arange" => Some(format!("torch::empty({{{}}})", self.arange_length(arguments)?)),
            "zeros_like" | "ones_like" | "empty_like" | "full_like" => {
                let first = arguments.named_child(0).filter(|a| a.kind() == "identifier")?;
                Some(format!("torch::empty_like({})", cpp_name(self.text(first))))
            }
            _ => None,
        }
    }

    /// NumPy's random arrays (`np.random.rand(b, n)`, `np.random.uniform(-1, 1, (b, n, 3))`), as
    /// tensors of their shapes.
    fn made_at_random(&self, function: &str, arguments: Node<'a>) -> Option<String> {
        let shape = match function {
            "rand" | "randn" => self.dims(arguments)?,
            "random" | "random_sample" | "sample" | "standard_normal" => self.shape_argument(arguments, 0)?,
            // The distribution's two parameters, then the shape.
            "uniform" | "normal" | "randint" => self.shape_argument(arguments, 2)?,
            _ => return None,
        };
        Some(format!("torch::empty({{{shape}}})"))
    }

    /// A tensor or array of data (`torch.tensor([[1., 2.], [3., 4.]])`, `np.array(case[0])`),
    /// of the data's shape; or of another array, the one it copies (`torch.from_numpy(np_x)`).
    fn from_data(&self, arguments: Node<'a>) -> Option<String> {
        let data = named_children(arguments).into_iter().find(|a| a.kind() != "keyword_argument")?;
        if let Some(lengths) = self.nested_lengths(data) {
            return Some(format!("torch::empty({{{}}})", lengths.join(", ")));
        }
        // A number makes a tensor of no dimensions, which no kernel's sizes come from.
        self.expression(data).filter(|copied| copied.parse::<f64>().is_err() && matches!(data.kind(), "identifier" | "call" | "attribute"))
    }

    /// A tensor of another's shape, where the first argument is that shape (`x.size()`,
    /// `x.shape`, spread or not): `torch::empty_like(x)`.
    fn shape_of_another(&self, arguments: Node<'a>) -> Option<String> {
        let first = named_children(arguments).into_iter().find(|a| a.kind() != "keyword_argument")?;
        // Its dimensions spread as arguments (`new_zeros(*x.shape)`) are the same shape.
        let first = match first.kind() {
            "list_splat" => first.named_child(0)?,
            _ => first,
        };
        Some(format!("torch::empty_like({})", self.shape_of(first)?))
    }

    /// The tensor whose whole shape `node` is (`x.size()`, `x.shape`), as C++ names it.
    fn shape_of(&self, node: Node<'a>) -> Option<String> {
        // A shape an autograd function's forward keeps (`ctx.input_shape = x.size()`).
        if let Some(attribute) = self.on_context(node) {
            return self.context.as_ref()?.shapes.iter().any(|s| s == attribute).then(|| format!("ctx_{attribute}"));
        }
        let tensor = match node.kind() {
            "identifier" if self.tuple_params.iter().any(|p| p == self.text(node)) => node,
            "attribute" if node.child_by_field_name("attribute").is_some_and(|a| self.text(a) == "shape") => node.child_by_field_name("object")?,
            "call" if node.child_by_field_name("arguments").is_some_and(|a| a.named_child_count() == 0) => {
                let function = node.child_by_field_name("function").filter(|f| f.kind() == "attribute")?;
                (self.text(function.child_by_field_name("attribute")?) == "size").then_some(())?;
                function.child_by_field_name("object")?
            }
            _ => return None,
        };
        (tensor.kind() == "identifier").then(|| cpp_name(self.text(tensor)))
    }

    /// The shape of data written as nested lists (`[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]` is 2 × 3),
    /// or of data a name holds (see [`Writer::data_node`]): each level's length, read from its
    /// first item; a level made by a comprehension over a `range` has the range's length.
    fn nested_lengths(&self, data: Node<'a>) -> Option<Vec<String>> {
        let mut node = self.data_node(data)?;
        let mut lengths = Vec::new();
        loop {
            let (length, first) = match node.kind() {
                "list" | "tuple" => {
                    let items = data_items(node);
                    // A starred item has no length written.
                    if items.iter().any(|i| i.kind() == "list_splat") {
                        return None;
                    }
                    (items.len().to_string(), items.first().copied())
                }
                "list_comprehension" => (self.comprehension_length(node)?, node.child_by_field_name("body")),
                _ => break,
            };
            lengths.push(length);
            let Some(first) = first else { break };
            node = first;
        }
        (!lengths.is_empty()).then_some(lengths)
    }

    /// How many items a comprehension over one `range` makes (`[[i, i + 1] for i in range(1000)]`).
    fn comprehension_length(&self, comprehension: Node<'a>) -> Option<String> {
        let clauses: Vec<Node> = named_children(comprehension).into_iter().filter(|c| matches!(c.kind(), "for_in_clause" | "if_clause")).collect();
        let [clause] = clauses[..] else { return None };
        let range = clause.child_by_field_name("right").filter(|r| r.kind() == "call")?;
        (self.text(range.child_by_field_name("function")?) == "range").then_some(())?;
        self.arange_length(range.child_by_field_name("arguments")?)
    }

    /// The data (nested lists and tuples, written) that `node` is: written in place, a name
    /// the module or the function gives such data (`inputs = [([[1., 0], [0, 1.]], [0, 1]), …]`,
    /// a loop's `case` over it, a test's parametrized `shape`), or an item of such data read
    /// by its index (`case[0]`).
    fn data_node(&self, node: Node<'a>) -> Option<Node<'a>> {
        match node.kind() {
            "list" | "tuple" | "list_comprehension" => Some(node),
            "parenthesized_expression" => self.data_node(unparenthesized(node)),
            "identifier" => self.data_named(node).filter(|n| matches!(n.kind(), "list" | "tuple" | "list_comprehension")),
            "subscript" => self.data_node(self.data_item(node)?),
            _ => None,
        }
    }

    /// The item of written data that `subscript` reads by a number (`case[0]`, `shape[-1]`).
    fn data_item(&self, subscript: Node<'a>) -> Option<Node<'a>> {
        let data = self.data_node(subscript.child_by_field_name("value")?).filter(|d| d.kind() != "list_comprehension")?;
        let index: i64 = self.text(subscript.child_by_field_name("subscript")?).parse().ok()?;
        let items = data_items(data);
        let at = if index < 0 { index + i64::try_from(items.len()).ok()? } else { index };
        let item = *items.get(usize::try_from(at).ok()?)?;
        Some(unparenthesized(item))
    }

    /// How many elements `arange(end)`, `arange(start, end)` or `arange(start, end, step)` makes.
    fn arange_length(&self, arguments: Node<'a>) -> Option<String> {
        match self.arguments(arguments).as_slice() {
            [Some(end)] => Some(end.clone()),
            [Some(start), Some(end)] if start == "0" => Some(end.clone()),
            [Some(start), Some(end)] => Some(format!("({end}) - ({start})")),
            [Some(start), Some(end), Some(step)] => Some(format!("(({end}) - ({start}) + ({step}) - 1) / ({step})")),
            _ => None,
        }
    }

    /// The dimensions `object.view(…)` gives it: as written, but for one written `-1`, which is
    /// what the others leave of the elements (`boxes.view(b, -1, 7)`: `boxes.numel() / (b * 7)`).
    fn viewed_dims(&self, object: Node<'a>, arguments: Node<'a>) -> Option<String> {
        let mut dims = self.dim_list(arguments)?;
        let Some(inferred) = dims.iter().position(|d| d == "-1") else { return Some(dims.join(", ")) };
        let tensor = self.expression(object).filter(|t| super::is_identifier(t))?;
        let others: Vec<String> = dims.iter().enumerate().filter(|(k, _)| *k != inferred).map(|(_, d)| parenthesized(d)).collect();
        dims[inferred] = match others.is_empty() {
            true => format!("{tensor}.numel()"),
            false => format!("{tensor}.numel() / ({})", others.join(" * ")),
        };
        Some(dims.join(", "))
    }

    /// The dimensions a shape is given as: each positional argument (`randn(b, n)`), one
    /// tuple or list (`randn((b, n))`), or `size=`.
    fn dims(&self, arguments: Node<'a>) -> Option<String> {
        self.dim_list(arguments).map(|d| d.join(", "))
    }

    /// [`Writer::dims`], one by one.
    fn dim_list(&self, arguments: Node<'a>) -> Option<Vec<String>> {
        let written = |nodes: Vec<Node<'a>>| nodes.into_iter().map(|e| self.expression(e)).collect::<Option<Vec<_>>>();
        let positional: Vec<Node> = named_children(arguments).into_iter().filter(|a| a.kind() != "keyword_argument").collect();
        // A shape the function made before (`out_shape = (n, c, h // 2, w // 2)`) is its tuple.
        let local_list = |node: Node<'a>| match node.kind() {
            "identifier" => self.local_lists.get(self.text(node)).copied().unwrap_or(node),
            _ => node,
        };
        let positional: Vec<Node> = positional.into_iter().map(local_list).collect();
        let shape = self.keyword(arguments, "size").map(local_list).or_else(|| positional.first().copied().filter(|only| positional.len() == 1 && matches!(only.kind(), "tuple" | "list")));
        match shape {
            Some(size) if matches!(size.kind(), "tuple" | "list") => written(named_children(size)),
            Some(size) => written(vec![size]),
            None => written(positional),
        }
    }

    /// The shape given as the positional argument `index` or as `size=`.
    fn shape_argument(&self, arguments: Node<'a>, index: usize) -> Option<String> {
        let positional: Vec<Node> = named_children(arguments).into_iter().filter(|a| a.kind() != "keyword_argument").collect();
        self.tuple(self.keyword(arguments, "size").or_else(|| positional.get(index).copied())?)
    }

    fn tuple(&self, node: Node<'a>) -> Option<String> {
        match node.kind() {
            "tuple" | "list" => named_children(node).into_iter().map(|e| self.expression(e)).collect::<Option<Vec<_>>>().map(|d| d.join(", ")),
            _ => self.expression(node),
        }
    }

    fn keyword<'t>(&self, arguments: Node<'t>, name: &str) -> Option<Node<'t>> {
        named_children(arguments).into_iter().filter(|a| a.kind() == "keyword_argument").find(|a| a.child_by_field_name("name").is_some_and(|n| self.text(n) == name))?.child_by_field_name("value")
    }

    /// The positional arguments, each written where it can be.
    fn arguments(&self, arguments: Node<'a>) -> Vec<Option<String>> {
        named_children(arguments).into_iter().filter(|a| a.kind() != "keyword_argument").map(|a| self.expression(a)).collect()
    }

    /// The name of the function a call's `function` calls, as the script's functions and the
    /// callees are named: a name as it is; `self.method` of a method of `class` as
    /// `Class_method`; `ShiftFn.apply` of an autograd function as its `ShiftFn_forward`, and
    /// `Class.method` so where that is a known function; `torch.ops.ns.op.default` as `op`;
    /// any other attribute (`ext.forward`) as the attribute. With it, whether the name is a
    /// method's, named through its class.
    fn callee_name(&self, function: Node<'a>, class: Option<&str>) -> Option<(String, bool)> {
        match function.kind() {
            "identifier" => match self.aliases.get(self.text(function)) {
                Some(aliased) => Some((aliased.clone(), true)),
                None => Some((self.text(function).to_string(), false)),
            },
            "attribute" => {
                let attribute = self.text(function.child_by_field_name("attribute")?);
                let object = function.child_by_field_name("object")?;
                let known = |name: &str| self.functions.contains_key(name) || self.bindings.iter().any(|b| b.python == name);
                let qualified = |class: &str| {
                    let method = if attribute == "apply" { "forward" } else { attribute };
                    Some(format!("{class}_{method}")).filter(|name| known(name))
                };
                let in_class = match (object.kind(), self.text(object)) {
                    ("identifier", "self" | "cls") => class.and_then(qualified),
                    // `ShiftFn.apply` or `module.ShiftFn.apply`: the class is the last name.
                    ("identifier", _) => qualified(self.text(object)),
                    ("attribute", _) => qualified(self.text(object.child_by_field_name("attribute")?)),
                    _ => None,
                };
                if let Some(name) = in_class {
                    return Some((name, true));
                }
                // `torch.ops.ns.op.default(…)`: the op's default overload.
                let name = match attribute {
                    "default" => self.text(object.kind().eq("attribute").then_some(object)?.child_by_field_name("attribute")?),
                    name => name,
                };
                Some((name.to_string(), false))
            }
            _ => None,
        }
    }

    /// A call of an exported function (`ext.forward(q, k, v)`, `torch.ops.ns.rms_norm(…)`, or
    /// by its name), of a function of the script or of an object of a module, with its keyword
    /// arguments put where the parameters they name are; `gradcheck(f, (x, y))` calls `f(x, y)`.
    fn host_call(&self, call: Node<'a>) -> Option<String> {
        let function = call.child_by_field_name("function")?;
        let arguments = named_children(call.child_by_field_name("arguments")?);
        match self.checked(function, &arguments) {
            Some((checked, inputs)) => self.call_of(checked, &inputs),
            None => self.call_of(function, &arguments),
        }
    }

    /// The function autograd's `gradcheck(f, (x, y), eps=…)` (or `gradgradcheck`) checks, with
    /// the inputs it calls it on.
    fn checked(&self, function: Node<'a>, arguments: &[Node<'a>]) -> Option<(Node<'a>, Vec<Node<'a>>)> {
        let name = self.text(function).rsplit('.').next()?;
        matches!(name, "gradcheck" | "gradgradcheck").then_some(())?;
        let (checked, inputs) = (*arguments.first()?, *arguments.get(1)?);
        let inputs = match inputs.kind() {
            "tuple" | "list" => named_children(inputs),
            _ => vec![inputs],
        };
        Some((checked, inputs))
    }

    /// The binding exported as `name` that `function` (`name` or `module.name`) calls: of
    /// several, the one built into the module it names.
    fn binding_called(&self, name: &str, function: Node<'a>) -> Option<&Binding> {
        let module = function.child_by_field_name("object").filter(|_| function.kind() == "attribute").map(|o| self.text(o));
        let named = || self.bindings.iter().filter(|b| b.python == name);
        let of_module = named().find(|b| b.module.is_some() && b.module.as_deref() == module);
        // A bare name is what the script imported: another script's function before the
        // extension's namesake (mmcv's `bbox_overlaps` wraps `ext_module.bbox_overlaps`).
        let imported = named().find(|b| b.in_script).filter(|_| function.kind() == "identifier");
        of_module.or(imported).or_else(|| named().next())
    }

    /// The defaults of `definition`'s parameters (its class's `__init__`'s after) that are
    /// literals, as C++: what another script's call that skips one passes. A default naming
    /// this script's values would mean nothing there.
    fn literal_defaults(&self, definition: Node<'a>) -> Vec<Option<String>> {
        let is_literal = |d: Node| matches!(d.kind(), "integer" | "float" | "true" | "false" | "none" | "string") || d.kind() == "unary_operator" && d.named_child(0).is_some_and(|n| matches!(n.kind(), "integer" | "float"));
        let params = parameters(self.text, definition).into_iter().chain(constructor_parameters(self.text, definition));
        params.map(|(_, default)| default.filter(|d| is_literal(*d)).and_then(|d| self.expression(d))).collect()
    }

    /// A call of `function` with `arguments` (positional, then keywords) as C++, where it is a
    /// host call: an object's (`carafe(x, m)`, `Carafe(5, 4, 2)(x, m)`) passes what the object
    /// was made with as its module's `__init__` parameters.
    fn call_of(&self, function: Node<'a>, arguments: &[Node<'a>]) -> Option<String> {
        let object = match function.kind() {
            "identifier" => self.objects.get(self.text(function)).cloned(),
            "call" => function.child_by_field_name("function").and_then(|f| self.module_forward(f)).zip(function.child_by_field_name("arguments")),
            _ => None,
        };
        let (name, by_class) = match &object {
            Some((forward, _)) => (forward.clone(), true),
            None => self.callee_name(function, self.class.as_deref())?,
        };
        let binding = self.binding_called(&name, function);
        // A function of the script is called by its name, or as a method of its class
        // (`self.make_inputs(…)`, `ShiftFn.apply(…)`); `ext.forward(…)` is the binding's.
        let own = self.functions.get(&name).filter(|_| function.kind() == "identifier" || by_class);
        let passed = function.kind() == "identifier" && self.params.iter().any(|p| *p == cpp_name(&name));
        let (callee, params, constructor): (String, Vec<String>, Vec<String>) = match (binding, own) {
            (_, Some(definition)) => {
                let binding = binding_of(self.text, &name, cpp_name(&name), *definition);
                (binding.cpp, binding.params, binding.constructor)
            }
            // Qualified where the script has a namesake (mmcv's `bbox_overlaps` calls
            // `ext_module.bbox_overlaps`): a script's own function is never qualified.
            (Some(binding), None) if self.functions.contains_key(binding.cpp_bare()) && !binding.cpp.contains("::") => {
                (format!("::{}{}", binding.cpp, binding.template_args), binding.params.clone(), binding.constructor.clone())
            }
            (Some(binding), None) => (format!("{}{}", binding.cpp, binding.template_args), binding.params.clone(), binding.constructor.clone()),
            (None, None) if passed => (cpp_name(&name), Vec::new(), Vec::new()),
            (None, None) => return None,
        };
        // A parameter the call skips (a keyword names a later one) takes its default, where
        // the script gives one.
        let defaults: Vec<Option<String>> = match (own, binding) {
            (Some(definition), _) => parameters(self.text, *definition).into_iter().chain(constructor_parameters(self.text, *definition)).map(|(_, default)| default.and_then(|d| self.expression(d))).collect(),
            (None, Some(binding)) => binding.defaults.clone(),
            (None, None) => Vec::new(),
        };
        let skipped = |at: usize| defaults.get(at).cloned().flatten().unwrap_or_else(|| UNWRITTEN.to_string());
        let mut args: Vec<String> = Vec::new();
        self.place_arguments(arguments, &params, 0, &skipped, &mut args);
        if let Some((_, made_with)) = object {
            while args.len() < params.len() - constructor.len() {
                args.push(skipped(args.len()));
            }
            self.place_arguments(&named_children(made_with), &params, params.len() - constructor.len(), &skipped, &mut args);
        }
        Some(format!("{callee}({})", args.join(", ")))
    }

    /// Puts `arguments` into `args`: the positional ones from the parameter `first` on, each
    /// keyword's at the parameter it names (after the rest where none does); a parameter
    /// passed over takes `skipped` of its place. An argument that cannot be written still holds
    /// its place, as [`UNWRITTEN`]: not a number the reading could take for the value.
    fn place_arguments(&self, arguments: &[Node<'a>], params: &[String], first: usize, skipped: &dyn Fn(usize) -> String, args: &mut Vec<String>) {
        let (keywords, positional): (Vec<Node>, Vec<Node>) = arguments.iter().partition(|a| a.kind() == "keyword_argument");
        let fill_to = |args: &mut Vec<String>, len: usize| {
            while args.len() < len {
                args.push(skipped(args.len()));
            }
        };
        for (k, argument) in positional.into_iter().enumerate() {
            let value = self.expression(argument).unwrap_or_else(|| UNWRITTEN.into());
            fill_to(args, first + k + 1);
            args[first + k] = value;
        }
        for keyword in keywords {
            let (Some(name), Some(value)) = (keyword.child_by_field_name("name"), keyword.child_by_field_name("value")) else { continue };
            let value = self.expression(value).unwrap_or_else(|| UNWRITTEN.into());
            match params.iter().position(|p| p == self.text(name)) {
                Some(at) => {
                    fill_to(args, at + 1);
                    args[at] = value;
                }
                None => args.push(value),
            }
        }
    }
}

/// Whether a condition holds on the CUDA path, where it asks only which device the tensors are
/// on (`x.device.type == 'npu'`, `x.is_cuda`, `x.device.type != 'cuda'`): a package with ops for
/// several devices branches so, and the kernel's shapes are those of the CUDA branch. `None`
/// for any other condition.
fn on_cuda(condition: &str) -> Option<bool> {
    let condition = condition.trim().trim_start_matches('(').trim_end_matches(')').trim();
    if let Some(object) = condition.strip_suffix(".is_cuda") {
        return super::is_identifier(object.trim()).then_some(true);
    }
    let (left, right, equal) = match (condition.split_once("!="), condition.split_once("==")) {
        (Some((l, r)), _) => (l, r, false),
        (None, Some((l, r))) => (l, r, true),
        _ => return None,
    };
    let device = |side: &str| side.trim().strip_suffix(".device.type").map(str::trim).filter(|o| super::is_identifier(o)).is_some();
    let name = |side: &str| side.trim().strip_prefix(['\'', '"']).and_then(|s| s.strip_suffix(['\'', '"'])).map(str::to_string);
    let named = match (device(left), device(right)) {
        (true, false) => name(right)?,
        (false, true) => name(left)?,
        _ => return None,
    };
    Some((named == "cuda") == equal)
}

/// A Python function's parameters, in order, each with its default (`*args` and `**kwargs`
/// left out).
fn parameters<'t>(text: &str, definition: Node<'t>) -> Vec<(Node<'t>, Option<Node<'t>>)> {
    let Some(list) = definition.child_by_field_name("parameters") else { return Vec::new() };
    // A method's object (`self`, a class method's `cls`, an autograd function's `ctx`) is not
    // what its callers pass.
    // Typed too (`ctx: Any`).
    let object = |p: Node| {
        let name = if p.kind() == "typed_parameter" { p.named_child(0) } else { Some(p) };
        name.is_some_and(|n| matches!(&text[n.byte_range()], "self" | "cls" | "ctx"))
    };
    let skip = usize::from(class_of(text, definition).is_some() && list.named_child(0).is_some_and(object));
    named_children(list)
        .into_iter()
        .skip(skip)
        .filter_map(|param| match param.kind() {
            "identifier" => Some((param, None)),
            "typed_parameter" => Some((param.named_child(0).filter(|n| n.kind() == "identifier")?, None)),
            "default_parameter" | "typed_default_parameter" => Some((param.child_by_field_name("name")?, param.child_by_field_name("value"))),
            _ => None,
        })
        .collect()
}

/// The names of a Python function's parameters annotated as a tuple that holds no tensors
/// (`output_size: Tuple`, `kernel_size: Tuple[int, int]`), as C++ names them.
fn tuple_parameters(text: &str, definition: Node) -> Vec<String> {
    let Some(list) = definition.child_by_field_name("parameters") else { return Vec::new() };
    let annotated = |param: Node| -> Option<String> {
        let name = match param.kind() {
            "typed_parameter" => param.named_child(0).filter(|n| n.kind() == "identifier")?,
            "typed_default_parameter" => param.child_by_field_name("name")?,
            _ => return None,
        };
        let annotation = &text[param.child_by_field_name("type")?.byte_range()];
        (annotation.to_lowercase().starts_with("tuple") && !annotation.contains("Tensor")).then(|| cpp_name(&text[name.byte_range()]))
    };
    named_children(list).into_iter().filter_map(annotated).collect()
}

/// The names of a Python function's parameters as C++ names them.
fn parameter_names(text: &str, definition: Node) -> Vec<String> {
    parameters(text, definition).into_iter().map(|(name, _)| cpp_name(&text[name.byte_range()])).collect()
}

/// The defaults of the options a script declares with `argparse`
/// (`parser.add_argument("--num-tokens", type=int, default=4096)`), by the attribute the parsed
/// arguments hold each in (`dest=`, or the long name with `-` as `_`).
fn option_defaults(writer: &Writer, root: Node) -> HashMap<String, String> {
    let mut out = HashMap::new();
    for call in super::descendants(root).filter(|n| n.kind() == "call") {
        let is_option = call.child_by_field_name("function").is_some_and(|f| f.kind() == "attribute" && f.child_by_field_name("attribute").is_some_and(|a| writer.text(a) == "add_argument"));
        let Some(arguments) = call.child_by_field_name("arguments").filter(|_| is_option) else { continue };
        let Some(default) = writer.keyword(arguments, "default").and_then(|d| writer.expression(d)) else { continue };
        let unquoted = |node: Node| writer.text(node).trim_matches(['"', '\'']).to_string();
        let flags: Vec<String> = named_children(arguments).into_iter().filter(|a| a.kind() == "string").map(unquoted).collect();
        let long = flags.iter().find(|f| f.starts_with("--")).or(flags.first());
        let dest = writer.keyword(arguments, "dest").map(unquoted).or_else(|| long.map(|f| f.trim_start_matches('-').replace('-', "_")));
        if let Some(dest) = dest.filter(|d| super::is_identifier(d)) {
            out.insert(dest, default);
        }
    }
    out
}

/// The value of `a if c else b` the run without arguments takes as the script reads: `a`, as
/// an `if`'s first branch is read (`Ds = [64, 128] if not args.D else [args.D]`); any other
/// node itself.
fn first_branch(node: Node) -> Node {
    match node.kind() {
        "conditional_expression" => node.named_child(0).unwrap_or(node),
        _ => node,
    }
}

/// What `node` holds inside any parentheses around it (`([[1.0, 2.0]])` is a list).
fn unparenthesized(node: Node) -> Node {
    match node.kind() {
        "parenthesized_expression" => node.named_child(0).map_or(node, unparenthesized),
        _ => node,
    }
}

/// The items of a list or tuple as written, without the comments between them.
fn data_items(data: Node) -> Vec<Node> {
    named_children(data).into_iter().filter(|i| i.kind() != "comment").collect()
}

/// Whether `node` makes a list: written, a comprehension, `list(…)` or `range(…)`.
fn is_list(text: &str, node: Node) -> bool {
    match node.kind() {
        "list" | "tuple" | "list_comprehension" => true,
        "call" => node.child_by_field_name("function").is_some_and(|f| matches!(&text[f.byte_range()], "list" | "range")),
        _ => false,
    }
}

/// `value` as one operand: in parentheses unless it is a name or a number.
fn parenthesized(value: &str) -> String {
    match super::is_identifier(value) || value.parse::<f64>().is_ok() {
        true => value.to_string(),
        false => format!("({value})"),
    }
}

fn named_children(node: Node) -> Vec<Node> {
    let mut cursor = node.walk();
    node.named_children(&mut cursor).collect()
}

/// A Python name as a C++ one: a C++ keyword gets a trailing underscore.
fn cpp_name(name: &str) -> String {
    match CPP_KEYWORDS.contains(&name) {
        true => format!("{name}_"),
        false => name.to_string(),
    }
}

/// The lists the module assigns to a name: `HIDDEN_SIZES = [768, 5120]`, and comprehensions
/// (`SHAPES = [(s, k) for s in SIZES for k in WIDTHS]`); its dictionaries too.
fn module_lists<'t>(text: &'t str, root: Node<'t>) -> HashMap<&'t str, Node<'t>> {
    let assignments = named_children(root).into_iter().filter(|s| s.kind() == "expression_statement").filter_map(|s| s.named_child(0)).filter(|a| a.kind() == "assignment");
    assignments
        .filter_map(|a| Some((a.child_by_field_name("left").filter(|l| l.kind() == "identifier")?, a.child_by_field_name("right").map(first_branch).map(unparenthesized).filter(|r| matches!(r.kind(), "list" | "tuple" | "list_comprehension" | "dictionary"))?)))
        .map(|(name, list)| (&text[name.byte_range()], list))
        .collect()
}

/// The names a test's `@pytest.mark.parametrize("n", [7, 4096])` decorators set, each to its
/// first value written as C++ (`"n, d", [(7, 64), …]` too, and a list the module names).
fn parametrized<'a>(text: &'a str, decorated: Node<'a>, lists: &HashMap<&str, Node<'a>>) -> HashMap<String, Bound<'a>> {
    let writer = Writer::bare(text, &[]);
    let mut out = HashMap::new();
    for decorator in named_children(decorated).into_iter().filter(|d| d.kind() == "decorator") {
        let Some(call) = decorator.named_child(0).filter(|c| c.kind() == "call") else { continue };
        let is_parametrize = call.child_by_field_name("function").is_some_and(|f| text[f.byte_range()].ends_with("parametrize"));
        let Some(arguments) = call.child_by_field_name("arguments").filter(|_| is_parametrize) else { continue };
        let args = named_children(arguments);
        let (Some(names), Some(values)) = (args.first(), args.get(1)) else { continue };
        // A list the module names (`HIDDEN_SIZES = [768, 5120]`).
        let values = match values.kind() {
            "identifier" => lists.get(&text[values.byte_range()]).unwrap_or(values),
            _ => values,
        };
        let names: Vec<&str> = text[names.byte_range()].trim_matches(['"', '\'']).split(',').map(str::trim).collect();
        let Some(first) = values.named_child(0).filter(|_| matches!(values.kind(), "list" | "tuple")) else { continue };
        let firsts: Vec<Node> = match (names.len(), first.kind()) {
            (1, _) => vec![first],
            (_, "tuple" | "list") => named_children(first),
            _ => continue,
        };
        for (name, value) in names.iter().zip(firsts) {
            let bound = match value.kind() {
                "list" | "tuple" => Some(Bound::Data(value)),
                _ => writer.expression(value).map(Bound::Value),
            };
            if let Some(bound) = bound {
                out.insert(name.to_string(), bound);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn binding(python: &str, cpp: &str, params: &[&str]) -> Binding {
        Binding { python: python.into(), cpp: cpp.into(), template_args: String::new(), params: params.iter().map(|p| p.to_string()).collect(), constructor: Vec::new(), defaults: Vec::new(), in_script: false, module: None }
    }

    #[test]
    fn bindings_are_read_from_pybind_and_torch_library_registrations() {
        let text = r#"
torch::Tensor forward(torch::Tensor q, torch::Tensor k);
void rms_norm(torch::Tensor& out, torch::Tensor& input, double epsilon) {}
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
    m.def("forward", torch::wrap_pybind_function(forward), "forward");
    m.def("norm", &rms_norm, "rms norm");
}
TORCH_LIBRARY(_C, ops) {
    ops.def("rms_norm(Tensor! out, Tensor input, float epsilon) -> ()");
    ops.impl("rms_norm", torch::kCUDA, &rms_norm);
}
"#;
        let doc = crate::syntax::Document::new(text.to_string());
        let found = bindings(text, doc.tree().unwrap().root_node());
        assert_eq!(found, vec![binding("forward", "forward", &[]), binding("norm", "rms_norm", &["out", "input", "epsilon"]), binding("rms_norm", "rms_norm", &["out", "input", "epsilon"])]);
    }

    #[test]
    fn the_functions_that_lead_to_a_callee_are_callees_of_other_scripts() {
        let script = "\
class ShiftFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, alpha=1.0):
        ctx.alpha = alpha
        return shift_function(x, alpha)

    @staticmethod
    def backward(ctx, grad):
        return grad, None

def shift(x, alpha=1.0):
    return ShiftFn.apply(x, alpha)

def unrelated(x):
    return x

def test_shift():
    shift(torch.randn(4, 8))
";
        let found = callers(script, &[binding("shift_function", "shift_function", &["x", "alpha"])]);
        // The autograd function's `forward` is called through its class, and `shift` calls it
        // through `apply`; the test is the runner's.
        let forward = Binding { defaults: vec![None, Some("1.0".into())], in_script: true, ..binding("ShiftFn_forward", "ShiftFn_forward", &["x", "alpha"]) };
        assert_eq!(found[0], (forward, "ShiftFn".to_string()));
        assert_eq!(found.iter().map(|(b, word)| (b.python.as_str(), word.as_str())).collect::<Vec<_>>(), [("ShiftFn_forward", "ShiftFn"), ("shift", "shift")]);
    }

    #[test]
    fn a_module_name_for_an_autograd_functions_apply_is_a_callee_named_by_it() {
        let script = "\
class ScaleFn(Function):
    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, s):
        out = x.new_zeros(x.size())
        rows = x.new_empty(x.shape[0], 4)
        ext_module.scale_forward(x, s, out)
        return out

scale = ScaleFn.apply
other = len
";
        let found = callers(script, &[binding("scale_forward", "scale_forward", &["x", "s", "out"])]);
        // Other scripts call `scale(x, s)`: the alias is a callee that calls `ScaleFn_forward`.
        let in_script = |b: Binding| Binding { defaults: vec![None, None], in_script: true, ..b };
        assert_eq!(found, vec![(in_script(binding("ScaleFn_forward", "ScaleFn_forward", &["x", "s"])), "ScaleFn".to_string()), (in_script(binding("scale", "ScaleFn_forward", &["x", "s"])), "scale".to_string())]);
        let code = as_host_code(script, "forward", &[binding("scale_forward", "scale_forward", &["x", "s", "out"])]);
        let data = as_host_code("points = [[[0.5, 1.0, 2.0], [1.5, 1.0, 0.0]]]\ndef test_points():\n    x = torch.tensor(points, device='cuda')\n    y = torch.tensor([[1, 2], [3, 4], [5, 6]])\n    ScaleFn.apply(x, y)\n", "test_points", &found.iter().map(|(b, _)| b.clone()).collect::<Vec<_>>());
        // Data written as nested lists: each level's length.
        assert!(data.contains("auto x = torch::empty({1, 2, 3});") && data.contains("auto y = torch::empty({3, 2});"), "{data}");
        // A tensor made on another's device: of the shape the first argument names.
        assert!(code.contains("auto out = torch::empty_like(x);"), "{code}");
        assert!(code.contains("auto rows = torch::empty({x.size(0), 4});"), "{code}");
    }

    #[test]
    fn an_asserted_equality_of_sizes_is_written_and_other_assertions_are_not() {
        let script = "\
def forward(features, masks, k):
    assert masks.size(1) == k * k
    assert masks.shape[-1] == features.size(-1) * 2
    assert k >= 1
    assert features.is_contiguous()
    carafe(features, masks, k)
";
        let code = as_host_code(script, "forward", &[binding("carafe", "carafe", &["features", "masks", "k"])]);
        assert!(code.contains("assert(masks.size(1) == k * k);") && code.contains("assert(masks.size(-1) == features.size(-1) * 2);"), "{code}");
        assert_eq!(code.matches("assert(").count(), 2, "{code}");
    }

    #[test]
    fn a_branch_for_another_device_is_not_the_cuda_path_and_a_shape_unpacks_into_its_dimensions() {
        let script = "\
def forward(target, source):
    B, N, _ = target.size()
    m = source.shape[1]
    if source.device.type == 'npu':
        source = source.transpose(2, 1).contiguous()
        dist = target.new_empty(B, 3, N)
    else:
        dist = target.new_empty(B, N, 3)
    if target.is_cuda:
        k = 3
    else:
        k = 4
    nearest(target, source, dist, B, N, m, k)
";
        let code = as_host_code(script, "forward", &[binding("nearest", "nearest", &["target", "source", "dist", "b", "n", "m", "k"])]);
        let lines: Vec<&str> = code.lines().collect();
        assert_eq!(lines[1], "auto B = target.size(0); auto N = target.size(1);", "{code}");
        // Neither the other device's transposition nor its output: the `else` is the CUDA path.
        assert!(!code.contains("transpose") && code.contains("auto dist = torch::empty({B, N, 3});"), "{code}");
        assert!(code.contains("auto k = 3;") && !code.contains("auto k = 4;"), "{code}");
        assert_eq!(on_cuda("x.device.type != 'cuda'"), Some(false));
        assert_eq!(on_cuda("'mlu' == x.device.type"), Some(false));
        assert_eq!(on_cuda("x.dim() == 3"), None);
    }

    #[test]
    fn methods_are_functions_of_their_class_called_on_self_or_through_apply() {
        let script = "\
class RowsTest(unittest.TestCase):
    def make_inputs(self, batch, n):
        x = torch.randn(batch, n)
        return x, 0.5

    def test_rows(self):
        x, alpha = self.make_inputs(2, 1024)
        x = x.contiguous()
        out = interface.ShiftFn.apply(x, alpha=alpha)
        shift = interface.ShiftFn.apply
        shift(x, 0.25)
";
        let code = as_host_code(script, "test_rows", &[binding("ShiftFn_forward", "ShiftFn_forward", &["x", "alpha"])]);
        let lines: Vec<&str> = code.lines().collect();
        assert_eq!(lines[1], "void RowsTest_make_inputs(auto batch, auto n) {", "{code}");
        assert_eq!(lines[5], "void RowsTest_test_rows() {", "{code}");
        // The helper read in place; `x = x.contiguous()` keeps the tensor; the class's
        // `apply` is its `forward`, named as the other script's callee.
        assert_eq!(lines[6], "RowsTest_make_inputs(2, 1024); auto x = torch::randn({2, 1024}); auto alpha = 0.5;", "{code}");
        assert_eq!(lines[7], "", "{code}");
        assert_eq!(lines[8], "auto out = ShiftFn_forward(x, alpha);", "{code}");
        // A local that names the function: its calls are the function's.
        assert_eq!(lines[9..=10], ["", "ShiftFn_forward(x, 0.25); }"], "{code}");
    }

    #[test]
    fn the_calls_of_every_branch_are_written_and_the_assignments_of_the_first() {
        let script = "\
def bench(op, x, out, stages=-1):
    if stages >= 1:
        n = 1
        op(x, out, stages)
    elif stages == 0:
        n = 2
        op(x, out, 0)
    else:
        op(x, out)
";
        let code = as_host_code(script, "bench", &[]);
        let lines: Vec<&str> = code.lines().collect();
        assert_eq!(lines[1..=8], ["", "auto n = 1;", "op(x, out, stages);", "{ op(x, out, 0); }", "", "", "{ op(x, out); }", "}"], "{code}");
    }

    #[test]
    fn a_helpers_results_are_read_in_place_and_the_call_they_come_from_stays() {
        let script = "\
Ds = [64, 128] if not args.D else [args.D]
def make(b, d, scale=2):
    if not ones:
        x = torch.randn((b, d * scale))
    else:
        x = torch.ones(b, d)
    return x, torch.zeros(b)
def run(op, x, tag):
    if 'skip' in tag:
        return None, 0
    op(x)
    return x, 1
for d in Ds:
    x, y = make(4, d)
    out, _ = run(ext.forward, x, 'a')
";
        let code = as_host_code(script, "bench", &[binding("forward", "flash_forward", &[])]);
        let lines: Vec<&str> = code.lines().collect();
        // The list's first branch, as an `if`'s; the helper's `if` read as its first branch.
        assert_eq!(lines[12], "void bench_py_line_13() { { auto d = 64;");
        assert_eq!(lines[13], "make(4, d); auto x = torch::randn({4, d * 2}); auto y = torch::zeros({4});");
        // `return None, 0` under an `if` is an early exit: the results are the last `return`'s.
        // The string holds its place as C++'s string literal.
        assert_eq!(lines[14], r#"run(flash_forward, x, "a"); auto out = x; auto _ = 1; } }"#);
    }

    #[test]
    fn lists_a_helper_returns_are_walked_by_zip_and_their_largest_items_size_tensors() {
        let script = "\
def get_sizes(step=256):
    ms = list(range(step, 1024 + step, step))
    ks = [64, 128]
    return ms, ks
ms, ks = get_sizes()
top = max(ms)
A = torch.randn((top, max(ks)))
for m, k in zip(ms, ks):
    a = A[:m, :k].contiguous()
    ext.forward(a)
";
        let code = as_host_code(script, "bench", &[binding("forward", "flash_forward", &[])]);
        let lines: Vec<&str> = code.lines().collect();
        // The last item of `range(256, 1280, 256)`.
        assert_eq!(lines[5], "auto top = 256 + ((1024 + 256) - 256 - 1) / 256 * 256;");
        assert_eq!(lines[6], "auto A = torch::randn({top, 128});");
        assert_eq!(lines[7], "void bench_py_line_8() { { auto m = 256; auto k = 64;");
        assert_eq!(lines[8], "auto a = A.index({Slice(None, m), Slice(None, k)});");
    }

    #[test]
    fn a_product_of_factor_lists_starts_at_each_lists_first_item() {
        let script = "\
from itertools import product
def check():
    Ns = [1, 4]
    Ds = [3, 5]
    factors = [Ns, Ds]
    for N, D in product(*factors):
        x = torch.randn(N, 24, D)
        ext.forward(x)
    for P, K in itertools.product([8, 16], (2, 3)):
        ext.forward(torch.randn(P, K))
";
        let code = as_host_code(script, "bench", &[binding("forward", "knn_forward", &[])]);
        let lines: Vec<&str> = code.lines().collect();
        assert_eq!(lines[5], "{ auto N = 1; auto D = 3;");
        assert_eq!(lines[6], "auto x = torch::randn({N, 24, D});");
        assert_eq!(lines[8], "{ auto P = 8; auto K = 2;");
    }

    #[test]
    fn a_script_becomes_host_code_line_for_line() {
        let script = "\
import torch
ext = load(name='ext', sources=['main.cpp'])
batch, heads = 16, 12
seq_len = 2 ** 6
q = torch.randn(batch, heads, seq_len, 64).cuda()
k = torch.randn_like(q)
print('start')
with torch.no_grad():
    out = ext.forward(q, k)
";
        let code = as_host_code(script, "bench", &[binding("forward", "flash_forward", &[])]);
        let lines: Vec<&str> = code.lines().collect();
        assert_eq!(lines.len(), script.lines().count());
        assert_eq!(lines[2], "auto batch = 16; auto heads = 12;");
        assert_eq!(lines[3], "auto seq_len = 64;");
        assert_eq!(lines[4], "auto q = torch::randn({batch, heads, seq_len, 64});");
        assert_eq!(lines[5], "auto k = torch::randn_like(q);");
        assert_eq!(lines[6], "", "what is no host code is left out");
        assert_eq!(lines[7], "void bench_py_line_8() {");
        assert_eq!(lines[8], "auto out = flash_forward(q, k); }");
    }

    #[test]
    fn functions_tests_and_loops_take_their_first_values() {
        let script = "\
import pytest, torch

@pytest.mark.parametrize(\"num_tokens\", [7, 83, 4096])
@pytest.mark.parametrize(\"hidden_size, eps\", [(768, 1e-5), (5120, 1e-6)])
def test_norm(num_tokens, hidden_size, eps, dtype):
    x = torch.empty((num_tokens, hidden_size), dtype=dtype)
    out = torch.empty_like(x)
    ops.rms_norm(out, x, epsilon=eps)

def bench(n, d=1024):
    x = torch.rand(size=(n, d))
    ops.rms_norm(x, x, 1e-6)

if __name__ == '__main__':
    for n in [4096, 8192]:
        bench(n)
";
        let code = as_host_code(script, "test_norm", &[binding("rms_norm", "rms_norm", &["out", "input", "epsilon"])]);
        let lines: Vec<&str> = code.lines().collect();
        assert_eq!(lines[4], "void test_norm(auto dtype) { auto eps = 1e-5; auto hidden_size = 768; auto num_tokens = 7;");
        assert_eq!(lines[5], "auto x = torch::empty({num_tokens, hidden_size});");
        assert_eq!(lines[7], "rms_norm(out, x, eps); }");
        assert_eq!(lines[9], "void bench(auto n, auto d = 1024) {");
        assert_eq!(lines[10], "auto x = torch::rand({n, d});");
        assert_eq!(lines[13], "void test_norm_py_line_14() {");
        assert_eq!(lines[14], "{ auto n = 4096;");
        assert_eq!(lines[15], "bench(n); } }");
    }

    #[test]
    fn loops_over_named_lists_and_comprehensions_take_their_first_items() {
        let script = "\
Ss = [1024, 2048]
Ks = [4096, 8192]
SKs = [(S, K) for S in Ss for K in Ks]

for S, K in SKs:
    x = torch.randn((S, K))
    lib.sigmoid_f32(x, x)

for n in Ks:
    lib.sigmoid_f32(torch.randn(n), torch.randn(n))
    ids = torch.randint(0, n, size=(n,)).cuda().int().contiguous()
    x = torch.arange(0, n * 2).reshape(n, 2).float()
    y = torch.arange(1, n, 2)

for (rows, cols), scale in [((64, 32), 2)]:
    lib.sigmoid_f32(torch.randn(rows, cols * scale), torch.randn(rows, cols * scale))
";
        let code = as_host_code(script, "bench", &[binding("sigmoid_f32", "sigmoid_f32", &[])]);
        let lines: Vec<&str> = code.lines().collect();
        assert_eq!(lines[4], "void bench_py_line_5() { { auto S = 1024; auto K = 4096;", "{code}");
        assert_eq!(lines[5], "auto x = torch::randn({S, K});", "{code}");
        assert_eq!(lines[8], "void bench_py_line_9() { { auto n = 4096;", "{code}");
        assert_eq!(lines[10], "auto ids = torch::empty({n});", "{code}");
        assert_eq!(lines[11], "auto x = torch::empty({n, 2});", "{code}");
        assert_eq!(lines[12], "auto y = torch::empty({((n) - (1) + (2) - 1) / (2)}); } }", "{code}");
        assert_eq!(lines[14], "void bench_py_line_15() { { auto rows = 64; auto cols = 32; auto scale = 2;", "{code}");
    }

    #[test]
    fn tensors_made_of_written_data_or_numpy_arrays_have_their_shapes() {
        let script = "\
cases = ([
    ([[0.5, 1.0, 2.0], [1.5, 1.0, 0.0]], [1, 0]),  # rows, labels
    ([[0.5, 1.0]], [1]),
])

def check(dtype):
    for case, expected in zip(cases, [0.1, 0.2]):
        np_rows = np.array(case[0])
        rows = torch.from_numpy(np_rows).cuda().type(dtype)
        labels = torch.tensor(case[-1], device='cuda')
        ext.label_loss(rows, labels)

@pytest.mark.parametrize('shape', [(2, 600, 3), (1, 1, 3)])
def test_random(shape):
    b = shape[0]
    pts = np.random.uniform(-1.0, 1.0, (b, shape[1], 3)).astype(np.float32)
    grid = np.zeros((b, 8))
    ext.label_loss(torch.tensor(pts, dtype=torch.float), torch.tensor(grid).unsqueeze(0))

def test_boxes():
    boxes = torch.tensor([[1.0 + i, 2.0, 3.0 + i, 4.0] for i in range(1000)])
    shifts = [[[1, 0, 1], [0, 1, 1]]]
    for shift in shifts:
        shift = torch.tensor(shift).int()
        ext.label_loss(boxes, shift)
";
        let code = as_host_code(script, "test_loss", &[binding("label_loss", "label_loss", &["rows", "labels"])]);
        let lines: Vec<&str> = code.lines().collect();
        // A loop's item is data (a tuple of nested lists), read by index where it is used.
        assert_eq!(lines[6], "{ auto expected = 0.1;", "{code}");
        assert_eq!(lines[7], "auto np_rows = torch::empty({2, 3});", "{code}");
        assert_eq!(lines[8], "auto rows = np_rows;", "{code}");
        assert_eq!(lines[9], "auto labels = torch::empty({2});", "{code}");
        // A parametrized tuple read by index; NumPy's random arrays and zeros; an added dimension.
        assert_eq!(lines[13], "void test_random() {", "{code}");
        assert_eq!(lines[14], "auto b = 2;", "{code}");
        assert_eq!(lines[15], "auto pts = torch::empty({b, 600, 3});", "{code}");
        assert_eq!(lines[16], "auto grid = torch::empty({b, 8});", "{code}");
        assert_eq!(lines[17], "label_loss(pts, grid.unsqueeze(0)); }", "{code}");
        // A comprehension over a range has the range's length; a name bound to data and then
        // to a tensor names the tensor.
        assert_eq!(lines[20], "auto boxes = torch::empty({1000, 4});", "{code}");
        assert_eq!(lines[23], "auto shift = torch::empty({2, 3});", "{code}");
        assert_eq!(lines[24], "label_loss(boxes, shift); } }", "{code}");
        let viewed = as_host_code("def f(boxes, b):\n    v = boxes.view(b, -1, 7)\n    w = boxes.reshape(-1)\n", "f", &[]);
        assert!(viewed.contains("auto v = torch::empty({b, boxes.numel() / (b * 7), 7});") && viewed.contains("auto w = torch::empty({boxes.numel()});"), "{viewed}");
    }

    #[test]
    fn a_reduction_over_one_dimension_takes_it_away_or_keeps_it_of_extent_one() {
        let script = "\
def test_norm():
    x = torch.randn(256, 1024, device='cuda')
    mean = x.mean(1)
    peak = x.amax(dim=-1, keepdim=True)
    total = x.sum(dim)
    ext.row_norm(x, mean, peak, total)
";
        let code = as_host_code(script, "test_norm", &[binding("row_norm", "row_norm", &["x", "mean", "peak", "total"])]);
        assert!(code.contains("auto mean = x.mean(1);"), "{code}");
        assert!(code.contains("auto peak = x.amax(-1).unsqueeze(-1);"), "{code}");
        assert!(!code.contains("x.sum("), "a dimension only the run knows: {code}");
    }

    #[test]
    fn tuples_of_sizes_are_shapes_whose_items_are_read_as_sizes() {
        let script = "\
class PoolFn(Function):
    @staticmethod
    def forward(ctx, x, output_size, mode='avg', activation=None):
        modes = {'max': 0, 'avg': 1}
        ctx.output_size = _pair(output_size)
        out_h, out_w = ctx.output_size
        out = x.new_zeros((x.size(0), ctx.output_size[0], ctx.output_size[1]))
        ext.pool(x, out, out_h, out_w, modes[mode], 1 if activation == 'relu' else 0)
        return out

def test_pool():
    x = torch.randn(2, 8, 8)
    assert PoolFn.apply(x, (2, 3), 'max').shape == (2, 2, 3)
";
        let code = as_host_code(script, "test_pool", &[binding("pool", "pool", &["x", "out", "h", "w", "mode", "relu"])]);
        assert!(code.contains("auto ctx_output_size = _pair(output_size);"), "{code}");
        assert!(code.contains("auto out_h = ctx_output_size.size(0); auto out_w = ctx_output_size.size(1);"), "{code}");
        assert!(code.contains("auto out = torch::empty({x.size(0), ctx_output_size.size(0), ctx_output_size.size(1)});"), "{code}");
        assert!(code.contains(r#"pool(x, out, out_h, out_w, (mode == "max") ? (0) : ((mode == "avg") ? (1) : (unread_python_value)), (activation == "relu") ? (1) : (0));"#), "{code}");
        // The op an assertion runs, with the tuple it is given as a tensor of that shape.
        assert!(code.contains(r#"PoolFn_forward(x, torch::empty({2, 3}), "max");"#), "{code}");
    }

    #[test]
    fn a_tuple_kept_on_the_context_is_read_item_by_item_after_the_branch_the_call_takes() {
        // mmcv's GroupingOperation: each branch keeps its own tuple of tensors and sizes, and the
        // backward after the `if` unpacks the one its branch made.
        let script = "\
class Group(Function):
    @staticmethod
    def forward(ctx, features, idx, counts=None):
        if counts is not None:
            n = features.size(0)
            out = features.new_zeros((idx.size(0), n))
            ctx.for_backwards = (n, idx, counts)
        else:
            b, n = features.size()
            out = features.new_zeros((b, idx.size(1)))
            ctx.for_backwards = (idx, n)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        idx, n = ctx.for_backwards
        grad = grad_out.new_zeros(idx.size(0), n)
        ext.group_backward(grad_out.data.contiguous(), idx, grad.data, ctx.for_backwards[1])
        return grad, None
";
        let code = as_host_code(script, "m", &[binding("group_backward", "group_backward", &["g", "idx", "grad", "n"])]);
        let lines: Vec<&str> = code.lines().collect();
        assert_eq!(lines[6], "auto ctx_for_backwards = torch::empty({n, idx, counts}); auto ctx_for_backwards_0 = n; auto ctx_for_backwards_1 = idx; auto ctx_for_backwards_2 = counts;", "{code}");
        // What follows the `if` runs in each branch, the first's copy where the next opens.
        assert_eq!(lines[7], "Group_backward(ctx_for_backwards, ctx_for_backwards_0, ctx_for_backwards_1, ctx_for_backwards_2, torch::empty_like(out)); } else {", "{code}");
        assert_eq!(lines[10], "auto ctx_for_backwards = torch::empty({idx, n}); auto ctx_for_backwards_0 = idx; auto ctx_for_backwards_1 = n;", "{code}");
        assert_eq!(lines[11], "Group_backward(ctx_for_backwards, ctx_for_backwards_0, ctx_for_backwards_1, ctx_for_backwards_2, torch::empty_like(out)); } }", "{code}");
        assert!(code.contains("void Group_backward(auto ctx_for_backwards, auto ctx_for_backwards_0, auto ctx_for_backwards_1, auto ctx_for_backwards_2, auto grad_out) {"), "{code}");
        assert!(code.contains("auto idx = ctx_for_backwards_0; auto n = ctx_for_backwards_1;"), "{code}");
        // A tensor's `data` is the tensor.
        assert!(code.contains("group_backward(grad_out, idx, grad, ctx_for_backwards_1);"), "{code}");
        // With no `else`, what follows runs when no branch is taken too.
        let no_else = as_host_code("def f(x, y=None, z=None):\n    if y is not None:\n        n = 2\n    elif z is not None:\n        n = 3\n    ext.op(x, n)\n", "m", &[binding("op", "op", &["x", "n"])]);
        let lines: Vec<&str> = no_else.lines().collect();
        assert_eq!(lines[1..], ["if (y != 0) {", "auto n = 2;", "op(x, n); } else if (z != 0) {", "auto n = 3; op(x, n); } else {", "op(x, n); } }"], "{no_else}");
        // A default made when the argument is left out (pytorch3d's `knn_points`): the made
        // tensor in its branch, the caller's in the other, not a value defined by itself.
        let lone = as_host_code("def f(p, lengths=None):\n    if lengths is None:\n        lengths = torch.full((p.shape[0],), 8)\n    ext.op(p, lengths)\n", "m", &[binding("op", "op", &["p", "lengths"])]);
        let lines: Vec<&str> = lone.lines().collect();
        assert_eq!(lines[1..], ["if (lengths == 0) {", "auto lengths = torch::full({p.size(0)}, 8); op(p, lengths); } else {", "op(p, lengths); } }"], "{lone}");
    }

    #[test]
    fn a_test_case_reads_what_its_set_up_made() {
        // apex's `IndexMul2dTest`: sizes drawn at random, tensors made of them, all on `self`.
        let script = "\
class MulTest(unittest.TestCase):
    def setUp(self, seed=0):
        torch.manual_seed(seed)
        self.rows = random.randint(1, 1000)
        self.features = random.randint(1, 256)
        self.x = torch.randn(size=(self.rows, self.features)).cuda()
        self.x_half = self.x.clone().half()
        scale = 2.0
        self.y = self.x * scale

    def test_mul(self):
        ext.mul(self.x, self.x_half, self.y)
";
        let code = as_host_code(script, "m", &[binding("mul", "mul", &["x", "h", "y"])]);
        // The largest size a draw may give; not what reads the method's own locals.
        assert!(code.contains("mul(torch::randn({1000, 256}), torch::randn({1000, 256}), unread_python_value);"), "{code}");
    }

    #[test]
    fn a_parameter_annotated_as_a_tuple_is_read_by_index_as_a_shape() {
        // mmcv's PrRoIPool: `output_size: Tuple` read as `int(output_size[0])`, the scale
        // converted in place, the parameters kept on the context as a tuple made before, the
        // gradients made by spreading a saved tensor's shape.
        let script = "\
class PoolFn(Function):
    @staticmethod
    def forward(ctx, x, rois, output_size: Tuple, scale: float = 1.0):
        h = int(output_size[0])
        w = int(output_size[1])
        scale = float(scale)
        out = x.new_zeros((rois.size(0), x.size(1), h, w))
        params = (h, w, scale)
        ext.pool(x, rois, out, params[0], params[1], params[2])
        ctx.params = params
        ctx.save_for_backward(x, rois)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        x, rois = ctx.saved_tensors
        grad_x = grad_out.new_zeros(*x.shape)
        ext.pool_backward(grad_out, rois, grad_x, ctx.params[0], ctx.params[1])
        return grad_x, None, None, None
";
        let code = as_host_code(script, "m", &[binding("pool", "pool", &["x", "rois", "out", "h", "w", "scale"]), binding("pool_backward", "pool_backward", &["g", "rois", "gx", "h", "w"])]);
        assert!(code.contains("auto h = (output_size.size(0));") && code.contains("auto w = (output_size.size(1));"), "{code}");
        assert!(!code.contains("auto scale = (scale)"), "a parameter converted in place is no new local: {code}");
        assert!(code.contains("auto grad_x = torch::empty_like(x);"), "{code}");
        // The tuple's items, kept one by one.
        assert!(code.contains("auto ctx_params_0 = h; auto ctx_params_1 = w; auto ctx_params_2 = scale;"), "{code}");
        assert!(code.contains("pool_backward(grad_out, rois, grad_x, ctx_params_0, ctx_params_1);"), "{code}");
        // Not a tuple of sizes: a tuple of tensors, or no annotation.
        let tensors = script.replace("output_size: Tuple", "output_size: Tuple[torch.Tensor, torch.Tensor]");
        assert!(!as_host_code(&tensors, "m", &[]).contains("output_size.size(0)"));
        assert!(!as_host_code(&script.replace("output_size: Tuple", "output_size"), "m", &[]).contains("output_size.size(0)"));
    }

    #[test]
    fn an_object_of_a_module_calls_its_forward_with_what_it_was_made_with() {
        let package = "\
class BlurFunction(Function):
    @staticmethod
    def forward(ctx, x, radius, scale):
        out = x.new_zeros(x.size())
        ext_module.blur_forward(x, out, radius, scale)
        return out

class Blur(nn.Module):
    def __init__(self, radius, scale=1.0, name='blur'):
        super().__init__()
        self.radius = radius
        self.scale = float(scale)
        self.label = name.upper()

    def forward(self, x):
        return BlurFunction.apply(x, self.radius, self.scale)
";
        let found = callers(package, &[binding("blur_forward", "blur_forward", &["x", "out", "radius", "scale"])]);
        // The module's `forward` takes its `__init__`'s parameters after its own.
        // Its literal defaults are what another script's call that skips one passes.
        let defaults = vec![None, None, Some("1.0".into()), Some("\"blur\"".into())];
        let module = Binding { constructor: vec!["radius".into(), "scale".into(), "name".into()], defaults, in_script: true, ..binding("Blur_forward", "Blur_forward", &["x", "radius", "scale", "name"]) };
        assert_eq!(found.iter().find(|(b, _)| b.python == "Blur_forward"), Some(&(module, "Blur".to_string())), "{found:?}");
        let code = as_host_code(package, "blur", &[binding("blur_forward", "blur_forward", &["x", "out", "radius", "scale"])]);
        let lines: Vec<&str> = code.lines().collect();
        assert_eq!(lines[14], r#"void Blur_forward(auto x, auto radius, auto scale = 1.0, auto name = "blur") {"#, "{code}");
        assert_eq!(lines[15], "BlurFunction_forward(x, radius, (scale)); }", "{code}");
        let test = "\
def test_blur():
    x = torch.rand(2, 3, 16, 16)
    blur = Blur(3, scale=2.0).cuda()
    y = blur(x)
    gradcheck(Blur(5), (x.double(),), eps=1e-3)
    gradcheck(BlurFunction.apply, (x, 1, 1.0))
";
        let callees: Vec<Binding> = found.iter().map(|(b, _)| b.clone()).collect();
        let code = as_host_code(test, "test_blur", &callees);
        let lines: Vec<&str> = code.lines().collect();
        assert_eq!(lines[3], "auto y = Blur_forward(x, 3, 2.0);", "{code}");
        assert_eq!(lines[4], "Blur_forward(x, 5);", "{code}");
        assert_eq!(lines[5], "BlurFunction_forward(x, 1, 1.0); }", "{code}");
    }

    #[test]
    fn a_skipped_parameter_takes_its_default_and_what_cannot_be_written_is_no_number() {
        let script = "\
def launch(x, eps=1e-5, scale=1.0, mode='sum'):
    ext.op(x, eps, scale, mode)

def test_launch():
    x = torch.rand(8, 32)
    launch(x, scale=2.0)
    launch(x, 1e-3, mode='max')
";
        let code = as_host_code(script, "test_op", &[binding("op", "op", &["x", "eps", "scale", "mode"])]);
        let lines: Vec<&str> = code.lines().collect();
        assert_eq!(lines[5], "launch(x, 1e-5, 2.0);", "{code}");
        // A string is C++'s string literal: no number taken for the program's, but one a
        // condition compares (`0 if mode == 'max' else 1`).
        assert_eq!(lines[6], r#"launch(x, 1e-3, 1.0, "max"); }"#, "{code}");
    }

    #[test]
    fn an_autograd_functions_backward_runs_after_its_forward_with_what_the_forward_kept() {
        let package = "\
class PoolFunction(Function):
    @staticmethod
    def forward(ctx, x, patch=2):
        ctx.patch = patch
        ctx.input_shape = x.size()
        out_shape = (x.size(0), x.size(1) // patch)
        out = x.new_zeros(out_shape)
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        x, _ = ctx.saved_tensors
        grad_in = grad_out.new_zeros(ctx.input_shape)
        ext.pool_backward(grad_out, ctx.saved_tensors[1], grad_in, ctx.patch)
        return grad_in, None
";
        // Only the backward calls the binding: the forward leads to it all the same.
        let backward = [binding("pool_backward", "pool_backward", &["grad_out", "out", "grad_in", "patch"])];
        let found = callers(package, &backward);
        assert_eq!(found.iter().map(|(b, by)| (b.python.as_str(), by.as_str())).collect::<Vec<_>>(), [("PoolFunction_forward", "PoolFunction")], "{found:?}");
        let code = as_host_code(package, "pool", &backward);
        let lines: Vec<&str> = code.lines().collect();
        assert_eq!(lines[3], "auto ctx_patch = patch;", "{code}");
        // A shape kept is a tensor of that shape; a tuple made before gives a shape its items.
        assert_eq!(lines[4], "auto ctx_input_shape = torch::empty_like(x);", "{code}");
        assert_eq!(lines[6], "auto out = torch::empty({x.size(0), x.size(1) / patch});", "{code}");
        assert_eq!(lines[7], "auto ctx_saved_0 = x; auto ctx_saved_1 = out;", "{code}");
        assert_eq!(lines[8], "PoolFunction_backward(ctx_patch, ctx_input_shape, ctx_saved_0, ctx_saved_1, torch::empty_like(out)); }", "{code}");
        assert_eq!(lines[11], "void PoolFunction_backward(auto ctx_patch, auto ctx_input_shape, auto ctx_saved_0, auto ctx_saved_1, auto grad_out) {", "{code}");
        assert_eq!(lines[12], "auto x = ctx_saved_0;", "{code}");
        assert_eq!(lines[13], "auto grad_in = torch::empty_like(ctx_input_shape);", "{code}");
        assert_eq!(lines[14], "pool_backward(grad_out, ctx_saved_1, grad_in, ctx_patch);", "{code}");
    }

    #[test]
    fn a_module_that_calls_its_function_through_the_packages_alias_is_a_caller() {
        // OpenMMLab's `carafe = CARAFEFunction.apply`, called by `CARAFE.forward`, and a test's
        // object of that name.
        let package = "\
class BlurFunction(Function):
    @staticmethod
    def forward(ctx, x, radius):
        out = x.new_zeros(x.size())
        ext_module.blur_forward(x, out, radius)
        return out

blur = BlurFunction.apply

class Blur(nn.Module):
    def __init__(self, radius):
        super().__init__()
        self.radius = radius

    def forward(self, x):
        return blur(x, self.radius)
";
        let found = callers(package, &[binding("blur_forward", "blur_forward", &["x", "out", "radius"])]);
        let names: Vec<&str> = found.iter().map(|(b, _)| b.python.as_str()).collect();
        assert_eq!(names, ["BlurFunction_forward", "Blur_forward", "blur"], "{found:?}");
        let test = "def test_blur():\n    x = torch.rand(2, 3, 16, 16)\n    blur = Blur(3)\n    y = blur(x)\n";
        let callees: Vec<Binding> = found.iter().map(|(b, _)| b.clone()).collect();
        let code = as_host_code(test, "test_blur", &callees);
        assert_eq!(code.lines().nth(3), Some("auto y = Blur_forward(x, 3); }"), "{code}");
    }

    #[test]
    fn slices_from_the_start_of_a_preallocated_tensor_keep_their_extents() {
        // xlite-dev/LeetCUDA's GEMM benchmarks slice each problem out of the largest one.
        let script = "\
A = torch.randn((MAX_M, MAX_K)).cuda()
for M in [4096]:
    a = A[:M, :].contiguous()
    b = A[0:M, :64]
    c = A[1:M]
    d = A[:M:2]
    lib.gemm(a, b)
";
        let code = as_host_code(script, "bench", &[binding("gemm", "gemm", &[])]);
        assert!(code.contains("auto a = A.index({Slice(None, M), Slice()});"), "{code}");
        assert!(code.contains("auto b = A.index({Slice(None, M), Slice(None, 64)});"), "{code}");
        assert!(!code.contains("auto c =") && !code.contains("auto d ="), "a slice from elsewhere or with a step: {code}");
    }

    #[test]
    fn transposed_and_permuted_tensors_are_libtorchs_methods() {
        // LeetCUDA's flash attention passes `tv = v.transpose(-2, -1).contiguous()`.
        let script = "\
def get_qkv(B, H, N, D):
    v = torch.randn((B, H, N, D)).cuda()
    tv = v.transpose(-2, -1).contiguous()
    fv = v.permute(0, 2, 1, 3)
    m = v[0, 0].t()
    return tv, fv
tv, fv = get_qkv(1, 8, 1024, 64)
lib.attn(tv, fv)
";
        let code = as_host_code(script, "bench", &[binding("attn", "attn", &[])]);
        assert!(code.contains("auto tv = v.transpose(-2, -1);"), "{code}");
        assert!(code.contains("auto fv = v.permute({0, 2, 1, 3});"), "{code}");
    }

    #[test]
    fn elementwise_methods_keep_the_tensor_they_are_called_on() {
        let script = "\
def test_rotate():
    angle = torch.rand(64, device='cuda')
    lib.rotate(angle.cos(), angle.sin().clamp(-1, 1))
";
        let code = as_host_code(script, "test_rotate", &[binding("rotate", "rotate", &[])]);
        assert!(code.contains("rotate(angle, angle);"), "{code}");
    }

    #[test]
    fn options_take_their_defaults_and_keywords_their_parameters_place() {
        let script = "\
import argparse

def main(tokens, hidden):
    x = torch.randn(tokens, hidden)
    ext.softclamp_(x, 3.0)

if __name__ == '__main__':
    parser = argparse.ArgumentParser()
    parser.add_argument('--tokens', type=int, default=4096)
    parser.add_argument('--hidden-size', type=int, default=2 ** 10)
    parser.add_argument('-b', '--batch', dest='batch_size', type=int, default=8)
    args = parser.parse_args()
    main(hidden=args.hidden_size, tokens=args.tokens * args.batch_size)
";
        let code = as_host_code(script, "bench", &[binding("softclamp_", "softclamp_", &[])]);
        let lines: Vec<&str> = code.lines().collect();
        assert_eq!(lines[2], "void main_(auto tokens, auto hidden) {", "{code}");
        assert_eq!(lines[12], "main_(4096 * 8, 1024); }", "{code}");
    }

    #[test]
    fn an_op_passed_to_a_timing_function_is_called_through_its_parameter() {
        let script = "def run(op, out, x, iters=100):\n    for _ in range(iters):\n        op(out, x, 1e-6)\n\nrun(torch.ops.my_ops.rms_norm, out, x)\n";
        let code = as_host_code(script, "bench", &[binding("rms_norm", "rms_norm", &[])]);
        let lines: Vec<&str> = code.lines().collect();
        assert_eq!(lines[0], "void run(auto op, auto out, auto x, auto iters = 100) {", "{code}");
        assert_eq!(lines[2], "op(out, x, 1e-6); } }", "{code}");
        assert_eq!(lines[4], "void bench_py_line_5() { run(rms_norm, out, x); }", "{code}");
        let printed = as_host_code("print(n, run(torch.ops.my_ops.rms_norm, out, x))\ndef run(op, out, x):\n    op(out, x)\n", "bench", &[binding("rms_norm", "rms_norm", &[])]);
        assert_eq!(printed.lines().next(), Some("void bench_py_line_1() { run(rms_norm, out, x); }"), "{printed}");
    }

    #[test]
    fn an_ops_default_overload_returned_by_a_wrapper_is_a_call_of_the_op() {
        let script = "def mymuladd(a, b, c):\n    return torch.ops.extension_cpp.mymuladd.default(a, b, c)\n";
        let code = as_host_code(script, "ops", &[binding("mymuladd", "mymuladd_cuda", &[])]);
        assert_eq!(code.lines().collect::<Vec<_>>(), ["void mymuladd(auto a, auto b, auto c) {", "mymuladd_cuda(a, b, c); }"]);
    }

    #[test]
    fn an_if_on_which_optional_arguments_are_given_keeps_its_branches_for_the_host_code_to_choose() {
        let script = "\
def near(xyz, centers, counts=None):
    if counts is not None and not (centers is None):
        idx = centers.new_zeros(centers.shape[0])
        ext.near_stack(centers, xyz, idx, counts)
    elif counts is None:
        b, n, _ = xyz.size()
        idx = xyz.new_zeros(b, n)
        ext.near(centers, xyz, idx, b)
    else:
        idx = None
    return idx
";
        let bindings = [binding("near_stack", "near_stack", &["centers", "xyz", "idx", "counts"]), binding("near", "near", &["centers", "xyz", "idx", "b"])];
        let lines: Vec<String> = as_host_code(script, "ops", &bindings).lines().map(str::to_string).collect();
        assert_eq!(lines[1], "if (counts != 0 && !((centers == 0))) {", "{lines:?}");
        assert_eq!(lines[4], "} else if (counts == 0) {", "{lines:?}");
        assert_eq!(lines[5], "auto b = xyz.size(0); auto n = xyz.size(1);", "{lines:?}");
        // The binding, not the script's namesake that calls it.
        assert_eq!(lines[7], "::near(centers, xyz, idx, b);", "{lines:?}");
        assert_eq!(lines[8], "} else {", "{lines:?}");
        // Branches that only assign: one conditional value per name, after the `if`.
        let assigned = as_host_code("def f(x, n, aligned=False):\n    if n > 4:\n        y = x.new_zeros(n)\n    elif aligned:\n        assert n == 2\n    else:\n        y = x\n    return y\n", "ops", &[]);
        assert!(assigned.contains("auto y = (n > 4) ? (torch::empty({n})) : ((aligned) ? (y) : (x));") && !assigned.contains("if ("), "{assigned}");
        // A branch that calls the host is read as before: the first branch in place.
        let calling = as_host_code("def f(x, n):\n    if n > 4:\n        y = x.new_zeros(n)\n        ext.op(y)\n    else:\n        y = x\n", "ops", &[binding("op", "op", &["y"])]);
        assert!(calling.contains("auto y = torch::empty({n});") && !calling.contains('?'), "{calling}");
    }
}

