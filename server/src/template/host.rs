//! The host code around a launch, across the files of the workspace: every path of calls that
//! reaches the launching function, with the constants of each function on it, to put numbers on
//! the sizes and to find the launch choices the program makes at run time.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::Path;

use tree_sitter::Node;

use super::callee;
use super::command_line::{CommandLine, OptionInRun};
use super::loop_passes;
use super::objects;
use super::layout::operand;
use super::data_files::{image_loaded_by, ImageLoad};
use super::tensors;
use super::texture::{self, TextureSetup};
use crate::spec::{expr, split_top_level, Dtype, TextureLayout, BLOCKS_PER_SM, DEVICE_SIZES, UNKNOWN};
use crate::syntax::preprocess::each_preprocessed_line;
use crate::syntax::host::{add_dispatched_calls, function_nodes, address_taken, call_args, call_reaches_scope, registered_implementations, scope_of, uses_namespaces, without_pointer_cast, calls_by_callee, class_of, declared_name, element_filled_by_loop, function_name, functions, local_types, names_called_in, parameters, runs_on_device_only, take_the_same_parameters, Call, Out, Parameter};
use crate::syntax::{balancing_position, descendants, eval_constant, eval_float, identifiers_in, is_identifier, matching_paren, rename_identifiers_in, size_of_type, Document, LaunchSite};

/// The host calls that make texture objects and their arrays.
const TEXTURE_CALLS: [&str; 6] = ["cudaCreateTextureObject", "cudaMallocArray", "cudaMalloc3DArray", "cuTexObjectCreate", "cuArrayCreate", "cuArray3DCreate"];

/// `tex` of `&tex`, without spaces.
fn without_address(arg: &str) -> String {
    arg.trim().trim_start_matches('&').split_whitespace().collect()
}

/// The index a range-based `for` reads its elements at, as the sweep it is.
const RANGE_INDEX: &str = "each";

/// How many call paths (and so shapes) are kept at most, how many are read to choose them
/// from, and how deep: a PyTorch extension's test reaches its launch through its package's
/// wrappers and an autograd function, the binding and the launcher (seven calls).
const MAX_PATHS: usize = 8;
const MAX_PATHS_READ: usize = 64;
const MAX_DEPTH: usize = 8;

/// Every path of calls that reaches a launch, from the files given. Each path gives one shape
/// (`run_case(8192, 8192)` and `run_case(4095, 1000)` give two).
pub(super) struct HostContext<'d> {
    /// Each path starts at the launcher; frame `i + 1` calls frame `i`.
    pub(super) paths: Vec<Vec<Frame<'d>>>,
    /// The paths only the command line asks for, when the program has others: no shape of the
    /// default run, but where a buffer they share with it may be allocated.
    asked_paths: Vec<Vec<Frame<'d>>>,
    defines: HashMap<String, i64>,
    /// Where each `#define NAME <integer>` is, by name: the text of its file and its offset there.
    literal_macros: HashMap<String, (&'d str, usize)>,
    /// File-scope constants defined as another name: `constexpr int kBlock = BLOCK_SIZE;`.
    file_constants: HashMap<String, String>,
    /// File-scope variables with an initial value that no function assigns another (`static
    /// const uint PARTIAL_COUNT = 240;`, `int nthreads = 64;` changed only from the command line).
    globals: HashMap<String, String>,
    /// Every device allocation in the files, pointer → bytes: a file-scope buffer is often
    /// allocated in an `init` function off the launch's call path.
    allocations: HashMap<String, String>,
    /// `typedef float floatX;` and `using floatX = float;` in the branches the preprocessor takes.
    type_aliases: HashMap<String, String>,
    /// Host variables that hold a device property: `cuda_num_SMs = prop.multiProcessorCount;`
    /// is `sm_count`.
    device_variables: HashMap<String, &'static str>,
    /// The values the branches around the launch fix: `block_size` is 16 inside `if (block_size
    /// == 16)` and 512 under `case 512:` of `switch (threads)`.
    branch_values: HashMap<String, i64>,
    /// Host functions that only return an expression (`div_up(a, b)`), inlined into launch
    /// expressions.
    expression_functions: HashMap<String, ExpressionFunction>,
    /// The static constant members of classes and class templates: `Packed128` → `size` →
    /// (`[ElementType]`, `sizeof(int4) / sizeof(ElementType)`).
    static_members: HashMap<String, StaticMembers>,
    /// Struct fields the workspace sets to one constant of the program, outside loops
    /// (`hostArrays->numBlocks = numBlocks;` in an init function): field → its value as an
    /// expression over the program's macros (`NUM_ELEMENTS / THREADS_PER_BLOCK`, rounded up).
    fields: HashMap<String, String>,
    /// The calls that make texture objects and the arrays behind them, by callee:
    /// `cudaCreateTextureObject`, `cudaMallocArray`, `cudaMalloc3DArray`.
    texture_calls: HashMap<&'static str, Vec<Call<'d>>>,
    /// The host functions of the files and their calls.
    graph: CallGraph<'d>,
    /// Every object the files make with `new` and assign (`psystem = new ParticleSystem(…)`).
    made_with_new: Vec<NewObject<'d>>,
    /// The conditions of the `if`s around the launch in the launcher, each with whether the
    /// launch is in the branch taken when it holds.
    branch_conditions: Vec<(String, bool)>,
    /// The variables of the `for` loops around the launch in the launcher: a condition on one
    /// holds for some passes, not for the launch's values.
    loop_variables: BTreeSet<String>,
    /// The dtype dispatch macro the launch is in, PyTorch's or a project's over it
    /// (`AT_DISPATCH_FLOATING_TYPES_AND_HALF(…, [&] { kernel<scalar_t><<<…>>>(…); })`), which
    /// names `scalar_t`.
    dispatch: Option<String>,
    /// The host files, where [`first_instantiated_type`](Self::first_instantiated_type) looks
    /// for instantiations only when a type is left open.
    documents: Vec<&'d Document>,
}

/// Where a value without a number is made ([`HostContext::value_source`]): in the file whose
/// text is `text`, at byte `at`, in `function`.
pub(super) struct ValueSource<'d> {
    pub text: &'d str,
    pub at: usize,
    pub function: String,
    pub made_by: Made,
}

/// A call of the launcher's twin that stands in for the calls nobody makes of the launcher.
pub(super) struct TwinCall<'d> {
    pub launcher: String,
    pub twin: String,
    /// The function that makes the call.
    pub caller: String,
    /// The call's file and where in it the call is.
    pub text: &'d str,
    pub at: usize,
}

pub(super) enum Made {
    /// An expression the host code gives no number for (`x.numel()`, `q_len * batch_size`).
    Expression(String),
    /// A parameter of `function`, which no file calls (its callers are elsewhere: Python
    /// bindings, another program).
    Parameter(String),
    /// A member of `class`, which the method `function` reads.
    Member { name: String, class: String },
    /// Stepped (`n *= 2`) in the body of a loop, as many times as the loop runs.
    SteppedInLoop(String),
    /// Written by a call of `callee` through a pointer or a reference (`&numBlocksPerSm`): the
    /// occupancy calculator, whose answer depends on the compiled kernel and the device, or a
    /// function of the workspace (`defined`) whose work templatize does not follow.
    Call { callee: String, defined: bool },
    /// Read from the command line (`atoi(argv[3])`), which the program's documented run, if it
    /// has one (`run`), does not give a number for.
    CommandLine { read: String, run: Option<String> },
    /// A buffer allocated with `bytes`, which templatize could not count in the kernel's
    /// elements: `unknown_types` are the types in its `sizeof`s whose size it does not know.
    Allocation { bytes: String, unknown_types: Vec<String> },
}

impl ValueSource<'_> {
    /// Where the value comes from, for a person, with its `place` (`file:line`): a PyTorch
    /// tensor's size is named as one.
    pub(super) fn describe(&self, place: &str) -> String {
        let function = &self.function;
        match &self.made_by {
            Made::Expression(text) => match (tensors::size_read(text).map(|(t, _)| t), tensors::data_of(text).map(|(t, _)| t)) {
                (Some(tensor), _) => format!("the program makes it as `{text}` in `{function}` ({place}), a size of the PyTorch tensor `{tensor}`, known only when the program runs"),
                (_, Some(tensor)) => format!("the program makes it as `{text}` in `{function}` ({place}), the data of the PyTorch tensor `{tensor}`, whose length only the running program knows"),
                _ => format!("the program makes it as `{text}` in `{function}` ({place})"),
            },
            Made::Parameter(name) => format!("it is the parameter `{name}` of `{function}` ({place}), which nothing in the workspace calls"),
            Made::SteppedInLoop(name) => format!("the program steps `{name}` in a loop in `{function}` ({place}), as many times as the loop runs"),
            Made::Call { callee, defined: false } => format!("the program sets it with `{callee}` in `{function}` ({place}), which only the running program answers"),
            Made::Call { callee, defined: true } => format!("the program sets it with `{callee}` in `{function}` ({place}), a function of the workspace whose work templatize does not follow"),
            Made::Member { name, class } => format!("it is the member `{name}` of `{class}`, read in `{function}` ({place}), which the program sets as it runs"),
            Made::CommandLine { read, run: Some(run) } => format!("the program reads it from the command line as `{read}` in `{function}` ({place}), and its documented run {run} gives no number there"),
            Made::CommandLine { read, run: None } => format!("the program reads it from the command line as `{read}` in `{function}` ({place}), and no script beside it (`run`, `*.sh`) runs it with arguments"),
            Made::Allocation { bytes, unknown_types } if unknown_types.is_empty() => format!("the program allocates `{bytes}` bytes for it in `{function}` ({place}), which templatize could not count in the kernel's elements"),
            Made::Allocation { bytes, unknown_types } => format!("the program allocates `{bytes}` bytes for it in `{function}` ({place}), and templatize does not know the size of `{}`", unknown_types.join("`, `")),
        }
    }
}

/// A file whose host code may be on a launch's call path, with the folder it is in (`None` for
/// a text that has no file).
pub(super) struct HostFile<'d> {
    pub document: &'d Document,
    pub path: Option<&'d Path>,
}

/// A class's template parameters and its `static constexpr` members' initialisers.
#[derive(Default)]
struct StaticMembers {
    template_params: Vec<String>,
    values: HashMap<String, String>,
}

/// How the length of the data of a tensor a caller passes down is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TensorSizes {
    /// In the launcher's names only: each dimension a name passed down holds.
    Held,
    /// Else with a size of its own for each dimension no name holds (`weight_size_0`).
    Named,
}

#[derive(Clone)]
pub(super) struct Frame<'d> {
    /// The text of the file the function is in.
    text: &'d str,
    scope: Scope<'d>,
    params: Vec<String>,
    /// The type of each parameter, without qualifiers or pointers.
    param_types: Vec<String>,
    /// The default argument of each parameter that has one.
    param_defaults: Vec<Option<String>>,
    /// The names of the function's template parameters, when it is a template.
    template_params: Vec<String>,
    /// The default argument of each template parameter that has one (`int STRIDE = 2048`).
    template_defaults: Vec<Option<String>>,
    /// The call of this function in the next frame.
    called_by: Option<Call<'d>>,
    /// The function whose calls stand for this one's, which nothing calls: its twin
    /// (`CallGraph::twin_called`). `None`: its own calls.
    called_as: Option<&'d str>,
}

impl<'d> Frame<'d> {
    /// The frame of `function`, read at byte `point` (the launch or the call towards it).
    fn of(text: &'d str, function: Node<'d>, point: usize, graph: &CallGraph<'d>) -> Frame<'d> {
        let parameters = parameters(text, function);
        let scope = Scope::of(text, function, point, graph);
        // A parameter a loop before the point steps (`for (; log2N > 11; log2N -= 2)`) holds there
        // what the loop left, not the caller's argument: it is read as a local of no known value
        // (its name left blank keeps the others' positions).
        let stepped = |name: &str| scope.given_at_point(name).is_some_and(|(value, at)| value == UNKNOWN && is_step_of(&text[at..], name));
        let params = parameters.iter().map(|p| if stepped(&p.name) { String::new() } else { p.name.clone() }).collect();
        let param_types = parameters.iter().map(|p| p.ty.clone()).collect();
        let param_defaults = parameters.into_iter().map(|p| p.default).collect();
        let (template_params, template_defaults) = template_parameters(text, function).into_iter().unzip();
        Frame { text, scope, params, param_types, param_defaults, template_params, template_defaults, called_by: None, called_as: None }
    }

    /// The argument this function was called with for its parameter `index`, in the next
    /// frame's names, or the parameter's default when the call leaves it out.
    fn argument(&self, index: usize) -> Option<String> {
        let args = self.called_with()?;
        args.get(index).cloned().or_else(|| self.param_defaults.get(index)?.clone())
    }

    /// The object the caller passes for parameter `index`, by value, reference or address
    /// (`params` of `launch(&params)`), in the next frame's names.
    fn passed_object(&self, index: usize) -> Option<String> {
        let passed = self.argument(index)?;
        Some(strip_outer_parens(passed.trim().trim_start_matches(['&', '*']).trim()).to_string())
    }

    /// The extents of the `dim3` named `name` at this frame's point: constructed here or at file
    /// scope (`dim3 grid;` is 1, 1, 1), with the members assigned since (`grid.x = n / 256`).
    /// Names in them stand for their values where the `dim3` was made, not at the point.
    fn dim3_components(&self, name: &str) -> Option<Vec<String>> {
        let file = self.scope.body.map(|b| std::iter::successors(Some(b), |n| n.parent()).last().expect("a node is its own ancestor"));
        // `threads = dim3(512, 1)`; an `int grid = (n + 255) / 256` is no `dim3`.
        let assigned_whole = self.scope.value_given(name).and_then(|(v, at)| Some((dim3_arguments(v)?, at)));
        let constructed = assigned_whole
            .or_else(|| self.scope.body.and_then(|b| dim3_local(self.text, b, name, self.scope.point)))
            .map(|(components, at)| components.iter().map(|c| self.scope.as_written_at(c, at)).collect())
            .or_else(|| file.and_then(|f| dim3_global(self.text, f, name)));
        // A member assigned after the launch (`nblocks.x = …` later in the loop, for another
        // kernel) is not what the constructed `dim3` gives the launch on the loop's first pass.
        let reaches = |(_, at): &(&str, usize)| constructed.is_none() || *at < self.scope.point;
        let given: Vec<Option<(&str, usize)>> = ["x", "y", "z"].iter().map(|axis| self.scope.value_given(&format!("{name}.{axis}")).filter(reaches)).collect();
        // `if (grid.x > 65535) { grid.y = grid.x / 32768; grid.x = 32768; }`: which extents the
        // launch gets depends on a condition the spec cannot say; no extents rather than wrong ones.
        if given.iter().flatten().any(|(_, at)| self.scope.is_conditional_at(*at)) {
            return None;
        }
        let assigned: Vec<Option<String>> = given.into_iter().map(|g| g.map(|(v, at)| self.scope.as_written_at(v, at))).collect();
        if constructed.is_none() && assigned.iter().all(Option::is_none) {
            return None;
        }
        let mut components = constructed.unwrap_or_default();
        components.resize(3, "1".to_string());
        for (component, value) in components.iter_mut().zip(assigned) {
            if let Some(value) = value {
                *component = strip_casts_everywhere(&value);
            }
        }
        while components.len() > 1 && components.last().is_some_and(|c| c == "1") {
            components.pop();
        }
        Some(components)
    }

    /// The class this function is a method of, by its qualified name or where it is defined.
    fn class(&self) -> Option<&'d str> {
        objects::class_of_definition(self.text, self.scope.body?.parent()?)
    }

    fn is_method(&self) -> bool {
        self.class().is_some()
    }

    /// The arguments this function was called with, in the next frame's names.
    fn called_with(&self) -> Option<Vec<String>> {
        self.called_by.map(|c| c.args())
    }
}

/// `value` with each local that holds a tensor's shape (`const auto sizes = x.sizes();`) read
/// as that shape (`sizes[0]` as `x.sizes()[0]`), which is a size read from the tensor.
fn tensor_shapes_read(value: &str, values: &[(String, String, usize)]) -> String {
    let shape_of = |name: &str| {
        let (_, held, _) = values.iter().rfind(|(n, _, _)| n == name)?;
        let tensor = held.trim().strip_suffix(".sizes()")?;
        is_identifier(tensor).then(|| held.trim().to_string())
    };
    rename_identifiers_in(value, shape_of)
}

/// A function's local declarations and assignments, name to value text, in order, read at one
/// point of the function: the launch, or the call towards it.
#[derive(Clone, Default)]
struct Scope<'d> {
    body: Option<Node<'d>>,
    /// (name, value, byte offset); a member assignment's name is `grid.x`.
    values: Vec<(String, String, usize)>,
    /// The byte offset the values are read at.
    point: usize,
    /// The byte ranges of the loops around the point.
    loops_around_point: Vec<std::ops::Range<usize>>,
    /// The variables a call sets through reference parameters, with the callee's name:
    /// `numThreads` → `getNumBlocksAndThreads`.
    set_by: HashMap<String, String>,
    /// The images the function loads, whose sizes the variables they set take.
    images: Vec<ImageLoad>,
    /// The values read from the command line that the program's run gives no number for:
    /// (name, value, byte offset).
    command_line_reads: Vec<(String, String, usize)>,
    /// Whether a value is read from the command line of the program's documented run.
    reads_run: bool,
}

impl<'d> Scope<'d> {
    fn of(text: &'d str, function: Node<'d>, point: usize, graph: &CallGraph<'d>) -> Scope<'d> {
        let body = function.child_by_field_name("body");
        let dispatched = body.map(|b| dispatched_constants(text, b)).unwrap_or_default();
        let mut values: Vec<(String, String, usize)> = dispatched.iter().map(|(member, value)| (member.clone(), value.clone(), 0)).collect();
        let mut set_by = HashMap::new();
        let mut images = Vec::new();
        let folder = graph.folder_of(text);
        let run = graph.run_of(text);
        let mut command_line_reads = Vec::new();
        let mut reads_run = false;
        let file_root = std::iter::successors(Some(function), |n| n.parent()).last().unwrap_or(function);
        for node in body.into_iter().flat_map(descendants) {
            let (target, value) = match node.kind() {
                "call_expression" => {
                    // A path from the command line (`sdkFindFilePath(name, argv[0])`) still names the file.
                    let value_of = |name: &str| body.and_then(|b| value_before(text, b, name, node.start_byte(), run)).or_else(|| file_scope_value(text, file_root, name)).or_else(|| image_passed_for(text, function, name, graph));
                    if let Some((pitch, bytes)) = pitched_allocation(text, node) {
                        values.push((pitch, bytes, node.start_byte()));
                        continue;
                    }
                    let callee = node.child_by_field_name("function").map_or("", |f| &text[f.byte_range()]);
                    let loader_params = graph.definition_called(text, node).map(|(t, definition)| crate::syntax::host::parameter_names(t, definition)).unwrap_or_default();
                    if let Some(load) = image_loaded_by(text, node, folder, &value_of, &loader_params) {
                        let (width, height) = load.size;
                        values.push((load.width.clone(), width.to_string(), node.start_byte()));
                        values.push((load.height.clone(), height.to_string(), node.start_byte()));
                        images.push(load);
                        continue;
                    }
                    // What the occupancy calculator writes (`&numBlocksPerSm`, `&blockSize`)
                    // depends on the compiled kernel and the device: no value the source gives
                    // (not the `0` it was declared with).
                    // `sscanf(argv[2], "%d", &n)`: the documented run's argument.
                    let args = node.child_by_field_name("arguments").map(|a| call_args(text, a)).unwrap_or_default();
                    if let Some((name, value)) = run.scanned(callee, &args) {
                        match value {
                            Some(value) => {
                                reads_run = true;
                                values.push((name, value, node.start_byte()));
                            }
                            None => command_line_reads.push((name, text[node.byte_range()].to_string(), node.start_byte())),
                        }
                        continue;
                    }
                    if let Some(set) = occupancy_outputs(text, node) {
                        let value = match blocks_per_sm_of(text, node, &graph.kernel) {
                            true => BLOCKS_PER_SM,
                            false => UNKNOWN,
                        };
                        values.extend(set.into_iter().map(|name| (name, value.to_string(), node.start_byte())));
                        continue;
                    }
                    if let Some((callee, set)) = out_arguments(text, node, graph) {
                        for (name, value) in set {
                            // A call the values so far rule out (`if (input_file)` with
                            // `input_file` still `NULL`) sets nothing.
                            let value = given_after_earlier(text, node, body, &name, value, &values, run, Decided::ByValues);
                            set_by.insert(name.clone(), callee.to_string());
                            values.push((name, value, node.start_byte()));
                        }
                    }
                    continue;
                }
                // `for (int size : SIZE)`: each of `SIZE`'s elements in turn, read as a sweep.
                "for_range_loop" => {
                    let name = node.child_by_field_name("declarator").and_then(declared_name);
                    let range = node.child_by_field_name("right").filter(|r| r.kind() == "identifier");
                    if let (Some(name), Some(range)) = (name, range) {
                        values.push((text[name.byte_range()].to_string(), format!("{}[{RANGE_INDEX}]", &text[range.byte_range()]), node.start_byte()));
                    }
                    continue;
                }
                // A name declared in a block the point is not in (the other branch's `int n`) is
                // another variable.
                "init_declarator" if !in_sight_of(node, point) => continue,
                "init_declarator" => (node.child_by_field_name("declarator").and_then(declared_name), node.child_by_field_name("value")),
                // `enum { SHMEM_SZ = MAX(...) };` in the function: a constant like another.
                "enumerator" => (node.child_by_field_name("name"), node.child_by_field_name("value")),
                "assignment_expression" if node.child_by_field_name("operator").is_some_and(|o| &text[o.byte_range()] == "=") => {
                    (node.child_by_field_name("left").filter(|l| matches!(l.kind(), "identifier" | "field_expression") || is_member_element(text, *l)), node.child_by_field_name("right"))
                }
                // `stride /= sizeof(float)` or `if (n % 256) blocks++;` once, outside any loop:
                // the earlier value, stepped.
                "assignment_expression" | "update_expression" => {
                    if let Some(stepped) = stepped_once(text, node, body, &values, run, point) {
                        values.push(stepped);
                    }
                    continue;
                }
                _ => continue,
            };
            let (Some(target), Some(mut value)) = (target, value) else { continue };
            // `m = n = k = size`: each of them is `size`.
            while value.kind() == "assignment_expression" && value.child_by_field_name("operator").is_some_and(|o| &text[o.byte_range()] == "=") {
                let Some(right) = value.child_by_field_name("right") else { break };
                value = right;
            }
            let name = text[target.byte_range()].replace(' ', "");
            // A value written over several lines may say what each term is for, in comments.
            let value = replace_members(&without_comments(&text[value.byte_range()]), |object, member| dispatched.get(&format!("{object}.{member}")).cloned());
            let value = tensor_shapes_read(&value, &values);
            // `n = n + 1` steps the earlier value, as `n += 1` does.
            if reads_variable(&value, &name) {
                if let Some(stepped) = (node.kind() == "assignment_expression").then(|| stepped_once(text, node, body, &values, run, point)).flatten() {
                    values.push(stepped);
                }
                continue;
            }
            // Made while the program reads its options (getopt's `case 's':`): only where the
            // run gives the option, and with its argument.
            let option = body.and_then(|b| run.option_around(text, node, b));
            reads_run |= option.is_some() && run.written_in.is_some();
            let value = match option {
                Some(OptionInRun::Absent) => continue,
                Some(option) => run.read_option(&value, &option).unwrap_or(value),
                None => value,
            };
            // A value read from the command line (`n = atoi(argv[1])`) is the documented run's
            // argument; without one it overrides the default only when the user asks, and the
            // default is the program's own.
            let value = match reads_command_line(&value) {
                true => match run.read(&value) {
                    Some(read) => {
                        reads_run = true;
                        read
                    }
                    None => {
                        command_line_reads.push((name, value, node.start_byte()));
                        continue;
                    }
                },
                false => value,
            };
            let value = value.as_str();
            // `if (n < 256) threads = n;` after `threads = 256`: `min`, not `n` alone, the
            // choice the spec keeps.
            let value = match node.kind() {
                "assignment_expression" => given_after_earlier(text, node, body, &name, value.to_string(), &values, run, Decided::ByTheRun),
                _ => value.to_string(),
            };
            values.push((name, value, node.start_byte()));
        }
        let loops_around_point = body.into_iter().flat_map(descendants).filter(|n| LOOP_KINDS.contains(&n.kind()) && n.byte_range().contains(&point)).map(|n| n.byte_range()).collect();
        Scope { body, values, point, loops_around_point, set_by, images, command_line_reads, reads_run }
    }

    /// Gives the loop variable `name` the start `value` in the loop whose initializer is `initializer`.
    fn start_loop_at(&mut self, initializer: &std::ops::Range<usize>, name: &str, value: &str) {
        for (n, given, at) in &mut self.values {
            if n == name && initializer.contains(at) {
                *given = value.to_string();
            }
        }
    }

    /// The value `name` holds at the scope's point: the last one given before it, else (a value
    /// set later in a loop, or out of order) the first. None where that is what the occupancy
    /// calculator wrote: the name stays, for a captured launch to give.
    fn value_text(&self, name: &str) -> Option<&str> {
        self.value_given(name).map(|(value, _)| value)
    }

    /// The function and byte offset of the call that sets `name` to a value no source gives (the
    /// occupancy calculator's `&numBlocksPerSm`), when that is the value at the point.
    fn set_by_call(&self, text: &str, name: &str) -> Option<(String, usize)> {
        let (value, at) = self.given_at_point(name)?;
        called_at(text, value, at)
    }

    /// [`Scope::set_by_call`] for the last value given `name` before byte `before`.
    fn set_by_call_before(&self, text: &str, name: &str, before: usize) -> Option<(String, usize)> {
        let (_, value, at) = self.values.iter().rfind(|(n, _, at)| n == name && *at < before)?;
        called_at(text, value, *at)
    }

    /// Whether the statement at byte `at` runs only under a condition (an `if`'s branch, a
    /// `case`) that the scope's point is not under too.
    fn is_conditional_at(&self, at: usize) -> bool {
        let Some(node) = self.body.and_then(|b| b.descendant_for_byte_range(at, at)) else { return false };
        enclosing_in(node, self.body).iter().any(|n| {
            let branch = n.kind() == "case_statement" || n.parent().is_some_and(|p| p.kind() == "if_statement" && p.child_by_field_name("condition") != Some(*n));
            branch && !n.byte_range().contains(&self.point)
        })
    }

    /// [`Scope::value_text`] with the byte offset where the value is given.
    fn value_given(&self, name: &str) -> Option<(&str, usize)> {
        self.given_at_point(name).filter(|(v, _)| *v != UNKNOWN)
    }

    /// The type a `using name = T;` or `typedef T name;` in a block around the point gives
    /// `name` before it: what a dispatch's `case` instantiates its block with
    /// (`case kFloat: { using scalar_t = float; k<scalar_t><<<…>>>(…); }`).
    fn type_alias_at_point(&self, text: &str, name: &str) -> Option<String> {
        let at = self.body?.descendant_for_byte_range(self.point, self.point)?;
        let blocks = std::iter::successors(Some(at), |n| n.parent()).take_while(|n| Some(*n) != self.body.and_then(|b| b.parent())).filter(|n| n.kind() == "compound_statement");
        blocks.into_iter().find_map(|block| {
            let mut cursor = block.walk();
            let before = block.named_children(&mut cursor).filter(|c| c.end_byte() <= self.point).collect::<Vec<_>>();
            before.into_iter().rev().find_map(|statement| {
                let (alias, ty) = type_alias(text[statement.byte_range()].trim())?;
                // A type the launcher works out (`decltype(make_tiled_copy(…))` of its locals)
                // is no type the spec can write.
                (alias == name && !ty.contains('(')).then_some(ty)
            })
        })
    }

    /// The last value given `name` before the point, `?` left out: what a struct's member holds
    /// at the launch (a cleanup's `input.g_a = NULL;` after it is no value of it).
    fn given_before_point(&self, name: &str) -> Option<&str> {
        self.values.iter().rfind(|(n, v, at)| n == name && *at < self.point && v != UNKNOWN).map(|(_, v, _)| v.as_str())
    }

    /// The last value given `name` before the point, else the first one given, `?` included;
    /// but none where that one is given later in a loop around the point: the first pass
    /// reads the value the loop was entered with (a parameter's, `size = n_blocks;` after the
    /// launch in `while (size > 1)`).
    fn given_at_point(&self, name: &str) -> Option<(&str, usize)> {
        let mut given = self.values.iter().filter(|(n, _, _)| n == name);
        let first = given.clone().next().filter(|(_, _, at)| !self.loops_around_point.iter().any(|l| l.contains(at)));
        given.rfind(|(_, _, at)| *at < self.point).or(first).map(|(_, v, at)| (v.as_str(), *at))
    }

    /// `expression`, written at byte `at`, as it reads at the scope's point: each name given
    /// another value between the two stands for (the value it had at `at`), so that
    /// `dim3 grid(n / 256); n = 2 * n;` still launches the blocks of the first `n`. A name with
    /// no value before `at` (a parameter) stays.
    fn as_written_at(&self, expression: &str, at: usize) -> String {
        self.pinned_at(expression, at, 0)
    }

    fn pinned_at(&self, expression: &str, at: usize, depth: usize) -> String {
        // Values naming each other (`a = b; b = a;`) end somewhere.
        const MAX_DEPTH: usize = 8;
        if depth == MAX_DEPTH {
            return expression.to_string();
        }
        rename_identifiers_in(expression, |word| {
            let changed = self.values.iter().any(|(n, _, given)| n == word && *given > at && *given < self.point);
            if !changed {
                return None;
            }
            let (_, value, _) = self.values.iter().rfind(|(n, _, given)| n == word && *given < at)?;
            (value != UNKNOWN).then(|| format!("({})", self.pinned_at(value, at, depth + 1)))
        })
    }
}

/// The variables whose address a call of the occupancy calculator (`cudaOccupancy…`,
/// `cuOccupancy…`) is given, `None` for another call.
fn occupancy_outputs(text: &str, call: Node) -> Option<Vec<String>> {
    let callee = call.child_by_field_name("function").map(|f| &text[f.byte_range()])?;
    if !callee.starts_with("cudaOccupancy") && !callee.starts_with("cuOccupancy") {
        return None;
    }
    let args = call_args(text, call.child_by_field_name("arguments")?);
    Some(args.iter().filter(|a| a.trim().starts_with('&')).map(|a| address_taken(a)).filter(|n| !n.is_empty()).collect())
}

/// Whether `call` asks the occupancy calculator how many blocks of `kernel` an SM holds
/// (`cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel, threads, bytes)`): the spec's
/// [`BLOCKS_PER_SM`], which the tuner works out for each configuration as the program would.
/// The block and shared memory it is asked for are taken to be the launch's.
fn blocks_per_sm_of(text: &str, call: Node, kernel: &str) -> bool {
    let callee = call.child_by_field_name("function").map_or("", |f| &text[f.byte_range()]);
    let args = call.child_by_field_name("arguments").map(|a| call_args(text, a)).unwrap_or_default();
    // `(void *)kernel`, `&kernel`, `kernel<float, 256>`: the kernel's name.
    let asked = args.get(1).map(|a| without_pointer_cast(a).trim().trim_start_matches('&').split('<').next().unwrap_or_default().trim().to_string());
    matches!(callee, "cudaOccupancyMaxActiveBlocksPerMultiprocessor" | "cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags") && !kernel.is_empty() && asked.as_deref() == Some(kernel)
}

/// A launch choice the host program makes at run time (a block size passed down from `main`,
/// read from a sweep, or a host constant): what the spec can vary without recompiling.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct LaunchChoice {
    /// The value the program launches with (the first of a sweep).
    pub default: i64,
    /// The values the program sweeps, when it does.
    pub sweep: Vec<i64>,
    /// Where the value comes from, for the spec's `origin`.
    pub origin: String,
}

impl<'d> HostContext<'d> {
    /// The context of `launch`, which is in `launch_doc`; `files` are every file whose
    /// functions may be on the call path (`launch_doc` among them).
    pub(super) fn new(files: &[HostFile<'d>], launch_doc: &'d Document, launch: &LaunchSite) -> Option<HostContext<'d>> {
        let documents: Vec<&Document> = files.iter().map(|f| f.document).collect();
        let text = launch_doc.text();
        let root = launch_doc.tree()?.root_node();
        let launcher = descendants(root).filter(|n| n.kind() == "function_definition").filter(|n| n.byte_range().contains(&launch.span.start_byte)).last()?;
        let mut calls: HashMap<&str, Vec<Call>> = HashMap::new();
        // PyTorch's warp size on CUDA (`C10_WARP_SIZE`, which its headers define) is a number
        // to work with and to write; a project's own definition, read after, wins.
        let (torch_warp_size, warp_size) = ("C10_WARP_SIZE", device_property("warpSize").expect("every GPU's warp size is known"));
        let mut defines = HashMap::from([(torch_warp_size.to_string(), warp_size.parse().expect("the warp size is a number"))]);
        let mut literal_macros = HashMap::new();
        let mut file_constants = HashMap::new();
        let mut globals = HashMap::new();
        let mut allocated = HashMap::new();
        let mut device_variables = HashMap::from([(torch_warp_size.to_string(), warp_size)]);
        let mut static_members = HashMap::new();
        let mut expression_functions = HashMap::new();
        let mut made_with_new = Vec::new();
        let (type_aliases, untaken) = preprocessed_reading(&documents.iter().map(|d| d.text()).collect::<Vec<_>>());
        let mut registry = Vec::new();
        for doc in &documents {
            registry.extend(doc.tree().map(|tree| registered_implementations(doc.text(), tree.root_node())).unwrap_or_default());
            device_variables.extend(device_variables_of(doc.text()));
            let Some(tree) = doc.tree() else { continue };
            calls_by_callee(doc.text(), tree.root_node(), &mut calls);
            globals.extend(globals_of(doc.text(), tree.root_node()));
            for Allocation { pointer, bytes, .. } in allocations(doc.text(), tree.root_node()) {
                allocated.entry(pointer).or_insert(bytes);
            }
            static_members.extend(static_members_of(doc.text(), tree.root_node()));
            expression_functions.extend(expression_functions_of(doc.text(), tree.root_node()));
            made_with_new.extend(objects_made_with_new(doc.text(), tree.root_node()));
        }
        add_dispatched_calls(&registry, &mut calls);
        // A name the launch's own file defines is that file's, whatever another program of the
        // workspace defines it as (`#define M_GLOBAL` in each tensor-core sample): that file
        // goes last, so its values win.
        let launch_file_last = documents.iter().filter(|d| !std::ptr::eq(**d, launch_doc)).chain(std::iter::once(&launch_doc));
        for doc in launch_file_last {
            let taken = |d: &&crate::syntax::Define| !untaken.contains(&(doc.text().as_ptr(), line_start(doc.text(), d.span.start_byte)));
            defines.extend(doc.model().defines.iter().filter(taken).filter_map(|d| Some((d.name.clone(), d.value?))));
            for define in doc.model().defines.iter().filter(taken) {
                match define.value.is_some() && define.value_text.trim().starts_with(|c: char| c.is_ascii_digit()) {
                    true => literal_macros.insert(define.name.clone(), (doc.text(), define.span.start_byte)),
                    false => literal_macros.remove(&define.name),
                };
            }
            if let Some(tree) = doc.tree() {
                file_constants.extend(file_constants_of(doc.text(), tree.root_node()));
            }
        }
        let mut definitions: HashMap<&str, Vec<(&str, Node)>> = HashMap::new();
        let mut defined_in: HashSet<(*const u8, &str)> = HashSet::new();
        for doc in &documents {
            if let Some(tree) = doc.tree() {
                for (name, node) in function_nodes(doc.text(), tree.root_node()) {
                    definitions.entry(bare_name(name)).or_default().push((doc.text(), node));
                    // One under an `#if` or its `#else` may be a stub the build leaves out
                    // (`#if CUDART_VERSION < 2020` … `reduce()`): the calls beside it may be of
                    // another file's. (`#ifndef`, an include guard's, is no such doubt.)
                    let alternative = std::iter::successors(node.parent(), |n| n.parent()).any(|n| matches!(n.kind(), "preproc_if" | "preproc_else" | "preproc_elif" | "preproc_elifdef"));
                    if !alternative {
                        defined_in.insert((doc.text().as_ptr(), bare_name(name)));
                    }
                }
            }
        }
        let texture_calls = TEXTURE_CALLS.iter().map(|&name| (name, calls.get(name).cloned().unwrap_or_default())).collect();
        let paths = files.iter().map(|f| (f.document.text().as_ptr(), f.path)).collect();
        // The documented run of each program that reads its command line.
        let runs = files.iter().filter(|f| f.document.text().contains("argv")).filter_map(|f| Some((f.document.text().as_ptr(), CommandLine::of_program(f.path?)))).collect();
        let graph = CallGraph::new(&launch.kernel, calls, definitions, defined_in, paths, runs);
        let (paths, asked_paths) = call_paths(&graph, Frame::of(text, launcher, launch.span.start_byte, &graph));
        // A file-scope variable is read in its own file: only the files on the call paths set
        // those the launch reads, not a namesake of another program of the workspace.
        let on_paths: Vec<&Document> = documents.iter().copied().filter(|d| paths.iter().flatten().any(|f| std::ptr::eq(f.text, d.text()))).collect();
        for doc in &on_paths {
            if let Some(tree) = doc.tree() {
                let (text, root) = (doc.text(), tree.root_node());
                keep_own_file_scope_values(text, root, globals_of(text, root), &mut globals);
                keep_own_file_scope_values(text, root, file_constants_of(text, root), &mut file_constants);
            }
        }
        // Set again by a function of the program, a global's initial value is no size to read;
        // another program's function setting a namesake (a local `width` of one of a samples
        // repository's 750 files) leaves it alone.
        let reassigned: HashSet<String> = on_paths.iter().filter_map(|d| Some(assigned_in_functions(d.text(), d.tree()?.root_node()))).flatten().collect();
        globals.retain(|name, _| !reassigned.contains(name));
        for doc in &on_paths {
            if let Some(tree) = doc.tree() {
                globals.extend(globals_set_from_run(doc.text(), tree.root_node(), graph.run_of(doc.text())));
            }
            globals.extend(command_line_flags(doc.text(), graph.run_of(doc.text())));
        }
        globals.extend(globals_loaded_from_images(&on_paths, &graph));
        let launch_node = root.descendant_for_byte_range(launch.span.start_byte, launch.span.end_byte);
        let branch_values = launch_node.map(|n| branch_values_around(text, n)).unwrap_or_default();
        let branch_conditions = launch_node.map(|n| branch_conditions_around(text, n)).unwrap_or_default();
        let loop_variables = launch_node.map(|n| loop_variables_around(text, n)).unwrap_or_default();
        let dispatch = launch_node.and_then(|n| torch_dispatch_around(text, n));
        let fields = fields_set_once(&documents, &defines, &graph);
        let mut context = HostContext { paths, asked_paths, defines, literal_macros, file_constants, globals, allocations: allocated, type_aliases, device_variables, branch_values, expression_functions, static_members, fields, texture_calls, graph, made_with_new, branch_conditions, loop_variables, dispatch, documents };
        context.paths = context.paths.iter().map(|path| context.at_first_pass_taken(path)).collect();
        context.put_the_runs_branches_first();
        Some(context)
    }

    /// Orders the call paths by how many of the branches their calls are made in the run does
    /// not take, fewest first; of those that miss as many and start from the same function (a
    /// script's loop calling `run(op, x, stages=1)`, then `run(op, x, stages=2)`), the one whose
    /// calls that function makes first; the others keep their order.
    fn put_the_runs_branches_first(&mut self) {
        let paths = std::mem::take(&mut self.paths);
        let verdicts: Vec<Vec<BranchVerdict>> = paths.iter().map(|path| self.branch_verdicts(path)).collect();
        let not_taken: HashSet<&(usize, String, bool)> = verdicts.iter().flatten().filter(|v| v.taken == Some(false)).map(|v| &v.branch).collect();
        let missed = |verdicts: &[BranchVerdict]| verdicts.iter().filter(|v| v.taken == Some(false) || v.taken.is_none() && not_taken.contains(&v.branch)).count();
        // The outermost function of each path, by where it comes first in the paths' order.
        let outermost = |path: &[Frame]| path.last().map(|f| (f.text.as_ptr(), f.scope.body.map(|b| b.id())));
        let mut first_seen = Vec::new();
        for path in &paths {
            if !first_seen.contains(&outermost(path)) {
                first_seen.push(outermost(path));
            }
        }
        let program_order = |path: &[Frame]| {
            let function = first_seen.iter().position(|f| *f == outermost(path));
            let calls: Vec<usize> = path.iter().rev().filter_map(|f| f.called_by).map(|c| c.node.start_byte()).collect();
            (function, calls)
        };
        let mut ranked: Vec<((usize, (Option<usize>, Vec<usize>)), Vec<Frame<'d>>)> = paths.iter().zip(&verdicts).map(|(path, verdicts)| ((missed(verdicts), program_order(path)), path.clone())).collect();
        ranked.sort_by(|(a, _), (b, _)| a.cmp(b));
        self.paths = ranked.into_iter().map(|(_, path)| path).collect();
    }

    /// Whether the program's run takes each branch that the path's calls are made in: of
    /// `switch (d) { case 32: launch<32>(q); … case 64: launch<64>(q); }` with `d = q.size(3)`
    /// and a `q` of 64 columns, the path through `launch<32>` is made in a branch the run does
    /// not take. A condition the host code does not settle on this path (an argument passed
    /// on through a variadic template) is unknown here.
    fn branch_verdicts(&self, path: &[Frame]) -> Vec<BranchVerdict> {
        let calls = path.iter().enumerate().filter_map(|(at, frame)| Some((at + 1, frame.called_by?)));
        calls
            .flat_map(|(caller, call)| branch_conditions_around(call.text, call.node).into_iter().map(move |(condition, holds)| (caller, call, condition, holds)))
            .map(|(caller, call, condition, holds)| BranchVerdict {
                taken: self.eval_text(path, caller, strip_outer_parens(&condition), 0).map(|value| (value != 0) == holds),
                branch: (call.node.id(), condition, holds),
            })
            .collect()
    }

    /// `path`, or, where the program's run does not reach the launch on the first pass of the
    /// counted loops around it and the calls to it (`for (n = 64; n <= N; n *= 2) sort(n)`,
    /// which launches under `n > 1024`), the path at the first passes that do: each loop's
    /// start is the first of its passes that leaves fewer of the launch's conditions false.
    fn at_first_pass_taken(&self, path: &[Frame<'d>]) -> Vec<Frame<'d>> {
        let mut current = path.to_vec();
        let Some(mut failing) = self.conditions_failing(&current).filter(|f| *f > 0) else { return current };
        for at in 0..path.len() {
            let frame = &path[at];
            let Some(body) = frame.scope.body else { continue };
            let point = frame.scope.point;
            let loops = descendants(body).filter(|n| n.kind() == "for_statement" && n.child_by_field_name("body").is_some_and(|b| b.byte_range().contains(&point)));
            for for_node in loops {
                let Some(counted) = loop_passes::counted_loop(frame.text, for_node, &|text| self.eval_text(&current, at, text, 0)) else { continue };
                for value in counted.passes.iter().skip(1) {
                    let mut candidate = current.clone();
                    candidate[at].scope.start_loop_at(&counted.initializer, &counted.variable, &value.to_string());
                    match self.conditions_failing(&candidate) {
                        Some(0) => return candidate,
                        Some(fewer) if fewer < failing => {
                            (current, failing) = (candidate, fewer);
                            break;
                        }
                        _ => {}
                    }
                }
            }
        }
        path.to_vec()
    }

    /// How many of the conditions around the launch are false on `path`; `None` when one has
    /// no value there.
    fn conditions_failing(&self, path: &[Frame]) -> Option<usize> {
        let mut failing = 0;
        for (condition, holds) in &self.branch_conditions {
            let value = self.eval_text(path, 0, strip_outer_parens(condition), 0)?;
            failing += usize::from((value != 0) != *holds);
        }
        Some(failing)
    }

    /// How the program makes the texture object the launcher passes as `arg`: the
    /// `cudaCreateTextureObject` that sets it, on the call path (followed through the callers'
    /// arguments) or anywhere in the files (an object kept at file scope); then the descriptors
    /// it is given, and the array or memory they name.
    pub(super) fn texture_setup(&self, arg: &str) -> Option<TextureSetup> {
        let path = self.paths.first()?;
        let mut names: Vec<(usize, String)> = Vec::new();
        let mut name = without_address(arg);
        for (at, frame) in path.iter().enumerate() {
            names.push((at, name.clone()));
            let Some(passed) = frame.params.iter().position(|p| *p == name).and_then(|index| frame.argument(index)) else { break };
            name = without_address(&passed);
        }
        let frame_of = |call: &Call| path.iter().position(|f| f.scope.body.is_some() && f.scope.body == call.caller.child_by_field_name("body"));
        let object_of = |call: &Call| call.args().first().map(|a| without_address(a));
        let creates: Vec<&Call> = ["cudaCreateTextureObject", "cuTexObjectCreate"].iter().flat_map(|f| self.texture_calls.get(f).into_iter().flatten()).collect();
        let on_path = creates.iter().find(|c| names.iter().any(|(at, n)| object_of(c).as_ref() == Some(n) && frame_of(c) == Some(*at)));
        let create = *on_path.or_else(|| creates.iter().find(|c| names.iter().any(|(_, n)| object_of(c).as_ref() == Some(n))))?;
        let body = create.caller.child_by_field_name("body")?;
        let values = texture::values_in(create.text, body);
        let args = create.args();
        let mut setup = TextureSetup::default();
        if let Some(desc) = args.get(2) {
            texture::sampling(&values, &without_address(desc), &mut setup);
        }
        let resource = without_address(args.get(1)?);
        let field = |name: &str| values.iter().rev().find(|(left, _)| *left == format!("{resource}.{name}")).map(|(_, value)| value.as_str());
        let in_spec = |extent: &str| self.extent_in_spec_names(path, create, extent);
        // The driver's descriptors give the format and channels apart (`res.linear.format`).
        let driver_format = |of: &str| texture::driver_format(field(&format!("{of}.format"))?, field(&format!("{of}.numChannels"))?);
        match field("resType") {
            Some("cudaResourceTypeLinear") => {
                setup.layout = Some(TextureLayout::Linear);
                setup.texels = field("res.linear.desc").map(|d| self.channel_formats(d, create.text, body)).unwrap_or_default();
            }
            Some("CU_RESOURCE_TYPE_LINEAR") => {
                setup.layout = Some(TextureLayout::Linear);
                setup.texels = driver_format("res.linear").into_iter().collect();
            }
            Some(pitched @ ("cudaResourceTypePitch2D" | "CU_RESOURCE_TYPE_PITCH2D")) => {
                setup.texels = match pitched {
                    "cudaResourceTypePitch2D" => field("res.pitch2D.desc").map(|d| self.channel_formats(d, create.text, body)).unwrap_or_default(),
                    _ => driver_format("res.pitch2D").into_iter().collect(),
                };
                setup.extent = ["res.pitch2D.width", "res.pitch2D.height"].iter().map(|f| field(f).map_or(UNKNOWN.to_string(), in_spec)).collect();
            }
            _ => {
                let array = field("res.array.array").or(field("res.array.hArray"))?.to_string();
                self.array_setup(path, &array, create, &mut setup);
            }
        }
        Some(setup)
    }

    /// The extent, format and layout of the CUDA array `array`, from the `cudaMallocArray` or
    /// `cudaMalloc3DArray` that makes it (in the function that makes the texture, else anywhere);
    /// or from the driver's `cuArrayCreate` or `cuArray3DCreate` and the descriptor it is given.
    fn array_setup(&self, path: &[Frame], array: &str, create: &Call, setup: &mut TextureSetup) {
        let allocations = ["cudaMallocArray", "cudaMalloc3DArray", "cuArrayCreate", "cuArray3DCreate"].iter().flat_map(|&f| self.texture_calls.get(f).into_iter().flatten().map(move |c| (f, c)));
        let allocations: Vec<(&str, &Call)> = allocations.filter(|(_, c)| c.args().first().map(|a| without_address(a)).as_deref() == Some(array)).collect();
        let Some(&(function, alloc)) = allocations.iter().find(|(_, c)| c.caller == create.caller).or(allocations.first()) else { return };
        let Some(body) = alloc.caller.child_by_field_name("body") else { return };
        let args = alloc.args();
        let values = texture::values_in(alloc.text, body);
        if function.starts_with("cuArray") {
            return self.driver_array_setup(path, alloc, &values, setup);
        }
        let extent: Vec<String> = match function {
            "cudaMallocArray" => args.iter().skip(2).take(2).cloned().collect(),
            _ => {
                let given = args.get(2).map(|e| without_address(e)).unwrap_or_default();
                let made = self.extent_made(alloc.text, alloc.caller, &given, 0);
                made.and_then(|m| Some(split_args(m.strip_prefix("make_cudaExtent")?.trim().strip_prefix('(')?.strip_suffix(')')?))).unwrap_or_default()
            }
        };
        setup.extent = self.array_extent_in_spec_names(path, alloc, &extent);
        let flags = args.get(if function == "cudaMallocArray" { 4 } else { 3 }).map_or("", String::as_str);
        if flags.contains("cudaArrayLayered") {
            setup.layout = Some(TextureLayout::Layered);
        } else if flags.contains("cudaArrayCubemap") {
            setup.layout = Some(TextureLayout::Cubemap);
        }
        setup.texels = args.get(1).map(|d| self.channel_formats(&without_address(d), alloc.text, body)).unwrap_or_default();
    }

    /// The extent, format and layout of a driver array made by `alloc` (`cuArrayCreate(&array,
    /// &desc)`), from the fields its descriptor is given in `values` (`desc.Width = width`).
    fn driver_array_setup(&self, path: &[Frame], alloc: &Call, values: &[(String, String)], setup: &mut TextureSetup) {
        let Some(desc) = alloc.args().get(1).map(|d| without_address(d)) else { return };
        let field = |name: &str| values.iter().rev().find(|(left, _)| *left == format!("{desc}.{name}")).map(|(_, value)| value.trim());
        let extent: Vec<&str> = ["Width", "Height", "Depth"].iter().map(|f| field(f).unwrap_or("0")).collect();
        setup.extent = self.array_extent_in_spec_names(path, alloc, &extent);
        let flags = field("Flags").unwrap_or_default();
        if flags.contains("CUDA_ARRAY3D_LAYERED") {
            setup.layout = Some(TextureLayout::Layered);
        } else if flags.contains("CUDA_ARRAY3D_CUBEMAP") {
            setup.layout = Some(TextureLayout::Cubemap);
        }
        setup.texels = field("Format").zip(field("NumChannels")).and_then(|(format, channels)| texture::driver_format(format, channels)).into_iter().collect();
    }

    /// An array's extent as `alloc` gives it, in the spec's names: the trailing `0`s (the
    /// dimensions a 1D or 2D array does not use) left off.
    fn array_extent_in_spec_names<S: AsRef<str>>(&self, path: &[Frame], alloc: &Call, extent: &[S]) -> Vec<String> {
        let used = extent.iter().rposition(|e| e.as_ref().trim() != "0").map_or(1, |last| last + 1).min(extent.len());
        extent[..used].iter().map(|e| self.extent_in_spec_names(path, alloc, e.as_ref())).collect()
    }

    /// The `make_cudaExtent(…)` that `extent`, as the function `function` in `text` names it,
    /// holds: made there, given earlier in the function, the parameter its first caller passes
    /// (`initCuda(h_volume, volumeSize)`), or a file-scope constant.
    fn extent_made(&self, text: &'d str, function: Node<'d>, extent: &str, depth: usize) -> Option<String> {
        if extent.starts_with("make_cudaExtent") {
            return Some(extent.to_string());
        }
        if depth > 4 {
            return None;
        }
        let body = function.child_by_field_name("body")?;
        if let Some((_, value)) = texture::values_in(text, body).into_iter().rev().find(|(name, _)| name == extent) {
            return self.extent_made(text, function, &value, depth + 1);
        }
        let at = crate::syntax::host::parameter_names(text, function).iter().position(|p| p == extent);
        let passed = at.and_then(|at| {
            let name = function_name(text, function)?;
            let call = self.graph.callers_of(text, function, name).into_iter().next()?;
            Some((call, without_address(call.args().get(at)?)))
        });
        match passed {
            Some((call, argument)) => self.extent_made(call.text, call.caller, &argument, depth + 1),
            None => self.globals.get(extent).filter(|v| v.starts_with("make_cudaExtent")).cloned(),
        }
    }

    /// The formats a channel format descriptor may hold: made in place, or every value the
    /// function (or the file scope) gives the variable.
    fn channel_formats(&self, desc: &str, text: &str, body: Node) -> Vec<(Dtype, u32)> {
        if let Some(format) = texture::channel_format(desc) {
            return vec![format];
        }
        let given = texture::values_in(text, body).into_iter().filter(|(name, _)| name == desc).map(|(_, value)| value);
        given.chain(self.globals.get(desc).cloned()).filter_map(|value| texture::channel_format(&value)).collect()
    }

    /// An extent given in the function that makes a texture (or its array), in the spec's
    /// names. On the call path, the callers' arguments name it; in a function a frame of the
    /// path calls (`volume = make_volume(nx, ny, nz)`), that call's arguments do. Elsewhere (an
    /// `init` function), it is kept only when every name in it is a constant or a parameter of
    /// the launcher of that name.
    fn extent_in_spec_names(&self, path: &[Frame], made_in: &Call, extent: &str) -> String {
        let extent = strip_casts_everywhere(extent);
        let body = made_in.caller.child_by_field_name("body");
        if let Some(at) = path.iter().position(|f| f.scope.body.is_some() && f.scope.body == body) {
            return self.in_spec_names(&self.to_launcher_names(path, at, &extent));
        }
        if let Some((at, args)) = self.call_from_path(path, made_in) {
            let params = crate::syntax::host::parameter_names(made_in.text, made_in.caller);
            let passed = rename_identifiers_in(&extent, |w| {
                let arg = args.get(params.iter().position(|p| p == w)?)?;
                Some(if is_identifier(arg) { arg.clone() } else { format!("({arg})") })
            });
            return self.in_spec_names(&self.to_launcher_names(path, at, &passed));
        }
        let known = |w: &str| self.defines.contains_key(w) || self.globals.contains_key(w) || self.launcher().params.iter().any(|p| p == w);
        let all_known = identifiers_in(&extent).all(known);
        if all_known { self.in_spec_names(&extent) } else { UNKNOWN.to_string() }
    }

    /// The first call, in a function of the call path, of the function `call` is in: the frame
    /// and the call's arguments.
    fn call_from_path(&self, path: &[Frame], call: &Call) -> Option<(usize, Vec<String>)> {
        let name = function_name(call.text, call.caller)?;
        path.iter().enumerate().find_map(|(at, frame)| {
            let found = descendants(frame.scope.body?).find(|n| n.kind() == "call_expression" && n.child_by_field_name("function").is_some_and(|f| bare_name(&frame.text[f.byte_range()]) == bare_name(name)))?;
            Some((at, call_args(frame.text, found.child_by_field_name("arguments")?)))
        })
    }

    /// Whether `name` is an object-like `#define` of the files in view.
    pub(super) fn is_macro(&self, name: &str) -> bool {
        self.defines.contains_key(name)
    }

    /// Whether `name` is a constant the kernel's code is compiled with where it names it: an
    /// object-like `#define`, or a file-scope constant (`int const THREADS = 65536;`; device
    /// code can read no other host variable).
    pub(super) fn is_compiled_constant(&self, name: &str) -> bool {
        self.is_macro(name) || self.globals.contains_key(name)
    }

    /// Whether `name` is a template parameter of the launcher (`kHeadDim` of
    /// `launch_attention<kHeadDim, kStage>`): each instantiation is another kernel.
    pub(super) fn is_launcher_template_param(&self, name: &str) -> bool {
        self.launcher().template_params.iter().any(|p| p == name)
    }

    /// Another `#define` that writes out a value of macro `name` (`value`): one named after it
    /// that holds its square or its log2 (`BLOCK_SIZE2 64` and `BLOCK_SIZE_LOG2 3` beside
    /// `BLOCK_SIZE 8`), which a new value of `name` would leave behind.
    pub(super) fn macro_written_out(&self, name: &str, value: i64) -> Option<(&str, i64)> {
        let log2 = (value > 0 && value & (value - 1) == 0).then(|| i64::from(value.trailing_zeros()));
        let derived = |v: i64| Some(v) == value.checked_mul(value) || Some(v) == log2;
        let mut related: Vec<(&str, i64)> = self.literal_macros.keys().filter(|other| other.len() > name.len() && other.starts_with(name)).filter_map(|other| Some((other.as_str(), *self.defines.get(other)?))).filter(|(_, v)| derived(*v)).collect();
        related.sort_unstable();
        related.into_iter().next()
    }

    /// A `#define name <integer>` of the workspace: its value, and where it is (the text of its
    /// file and its offset there).
    pub(super) fn literal_macro(&self, name: &str) -> Option<(i64, &'d str, usize)> {
        let (text, at) = self.literal_macros.get(name)?;
        Some((*self.defines.get(name)?, text, *at))
    }

    /// The name of the function that launches the kernel.
    pub(super) fn launcher_name(&self) -> String {
        frame_name(self.launcher())
    }

    /// The files the host code was read from.
    pub(super) fn documents(&self) -> &[&'d Document] {
        &self.documents
    }

    pub(super) fn launcher(&self) -> &Frame<'d> {
        &self.paths[0][0]
    }

    /// Grid or block components: `dim3(a, b)`, a `dim3` local, or a plain expression.
    pub(super) fn dims(&self, text: &str) -> Vec<String> {
        let text = text.trim();
        let constructed = dim3_arguments(text).filter(|_| !text.starts_with('('));
        let launcher = self.launcher();
        let named = || launcher.dim3_components(text).or_else(|| self.dim3_passed(text));
        let parts = match (constructed, is_identifier(text).then(named).flatten()) {
            (Some(args), _) => args,
            (None, Some(args)) => args,
            // A `dim3` whose extents cannot be told stays itself (a `?` with where it is made),
            // not the text it was constructed with.
            (None, None) if self.is_extent_variable(text) => return vec![text.to_string()],
            (None, None) => vec![text.to_string()],
        };
        parts.iter().map(|p| self.in_spec_names(p)).collect()
    }

    /// Whether the launcher's `name` is a `dim3` (or `uint3`), a local or a parameter.
    fn is_extent_variable(&self, name: &str) -> bool {
        let launcher = self.launcher();
        let is_extent = |ty: &str| EXTENT_TYPES.contains(&ty.trim().trim_start_matches("const ").trim());
        let local = launcher.scope.body.is_some_and(|b| local_types(launcher.text, b).iter().any(|(n, ty)| n == name && is_extent(ty)));
        local || launcher.params.iter().zip(&launcher.param_types).any(|(p, ty)| p == name && is_extent(ty))
    }

    /// The extents of a `dim3` the launcher takes as its parameter `name` (`launch(dim3 grid, …)`),
    /// from the caller that constructs it (`dim3 grid(width / block.x, height / block.y)`), with
    /// the members of that caller's other `dim3`s (`block.x`) read there, in the launcher's names.
    fn dim3_passed(&self, name: &str) -> Option<Vec<String>> {
        let path = self.paths.first()?;
        self.passed_for(name).into_iter().find_map(|(at, arg)| {
            let caller = &path[at];
            let components = dim3_arguments(&arg).filter(|_| !arg.starts_with('(')).or_else(|| is_identifier(&arg).then(|| caller.dim3_components(&arg)).flatten())?;
            let member = |object: &str, member: &str| {
                let axis = ["x", "y", "z"].iter().position(|a| *a == member)?;
                Some(caller.dim3_components(object)?.get(axis).cloned().unwrap_or_else(|| "1".to_string()))
            };
            Some(components.iter().map(|c| self.to_launcher_names(path, at, &replace_members(c, member))).collect())
        })
    }

    /// What the callers up the first call path pass for the launcher's parameter `name`: each
    /// caller's place on the path with its argument, followed while that is the caller's own
    /// parameter.
    fn passed_for(&self, name: &str) -> Vec<(usize, String)> {
        let Some(path) = self.paths.first() else { return Vec::new() };
        let mut passed = Vec::new();
        let mut current = name.to_string();
        for at in 0..path.len() - 1 {
            let Some(arg) = path[at].params.iter().position(|p| *p == current).and_then(|index| path[at].argument(index)) else { break };
            let arg = strip_casts_everywhere(&arg).trim().to_string();
            passed.push((at + 1, arg.clone()));
            current = arg;
        }
        passed
    }

    /// `text` (a grid extent or a buffer length, in the spec's names) with each launcher
    /// parameter that the caller works out from the block it passes beside it
    /// (`getNumBlocksAndThreads(..., numBlocks, numThreads)`, then `reduce(size, numThreads,
    /// numBlocks)`) replaced by that work, in the launcher's names: the grid and the buffers
    /// sized by it move with the block the spec varies. Conditions of that work which the
    /// launch's branch settles (`case 6:` of `switch (whichKernel)`) take their branch.
    pub(super) fn worked_out_by_caller(&self, text: &str, block: &[String]) -> String {
        // What each configuration makes: its block, and the blocks of it an SM holds.
        let in_block = |word: &str| word == BLOCKS_PER_SM || block.iter().any(|b| identifiers_in(b).any(|w| w == word));
        let known = |word: &str| word == BLOCKS_PER_SM || DEVICE_SIZES.iter().any(|(n, _)| *n == word) || self.launcher().params.iter().any(|p| p == word) || self.defines.contains_key(word) || expr::Function::from_name(word).is_some() || self.paths.first().and_then(|path| self.callers_name(path, word)).is_some();
        let settle = |name: &str| match in_block(name) {
            true => None,
            false => self.branch_values.get(name).copied().or_else(|| self.defines.get(name).copied()),
        };
        let run = self.graph.run_of(self.launcher().text);
        let decide = |condition: &str| eval_constant(condition, &settle).or_else(|| run.decide(condition));
        let worked_out = rename_identifiers_in(text, |word| {
            let value = callee::settled_conditionals(&self.computed_by_caller(word, &in_block)?, &decide);
            let usable = expr::parse(&value).is_ok() && identifiers_in(&value).all(known) && identifiers_in(&value).any(in_block);
            usable.then(|| format!("({value})"))
        });
        match worked_out == text {
            true => worked_out,
            false => callee::readable(&super::spec_text::spec_expression(&self.in_spec_names(&worked_out), super::spec_text::Division::Floor)),
        }
    }

    /// The value a caller gives the launcher's parameter `name`, when it computes it (not a
    /// constant, which stays a size), in the launcher's names. The parameter may be passed down
    /// through several functions first; names of the computing function that do not reach the
    /// launcher (`maxBlocks = 64`) are replaced by their values, but for those worked out from
    /// the block (`in_block`: `smallBlockCol = BLOCK_SIZE - pyramid_height * HALO * 2`), which
    /// are written out so that the work still moves with it.
    fn computed_by_caller(&self, name: &str, in_block: &dyn Fn(&str) -> bool) -> Option<String> {
        let path = self.paths.first()?;
        for (caller_at, arg) in self.passed_for(name) {
            let caller = &path[caller_at];
            if let Some(value) = caller.scope.value_text(&arg) {
                if eval_constant(value, &|_| None).is_some() {
                    return None;
                }
                let value = written_out_from_block(caller, value, in_block, 0);
                let value = rename_identifiers_in(&value, |word| match Self::launcher_parameter_of(path, caller_at, word) {
                    Some(_) => None,
                    None if in_block(word) => None,
                    None => self.eval_text(path, caller_at, word, 0).map(|v| v.to_string()),
                });
                return Some(self.in_spec_names(&self.to_launcher_names(path, caller_at, &value)));
            }
            if !is_identifier(&arg) {
                // An expression passed as it is (`sort_each_tile(out, in, n / TILE)`).
                if eval_constant(&arg, &|_| None).is_some() {
                    return None;
                }
                let value = rename_identifiers_in(&arg, |word| Some(self.to_launcher_names(path, caller_at, word)).filter(|w| w != word));
                return Some(self.in_spec_names(&value));
            }
        }
        None
    }

    /// The launcher parameter that frame `at`'s `name` is passed down to, argument by argument.
    fn launcher_parameter_of(path: &[Frame], at: usize, name: &str) -> Option<String> {
        let mut current = name.to_string();
        for level in (1..=at).rev() {
            let below = &path[level - 1];
            let args = below.called_with().unwrap_or_default();
            current = args.iter().position(|a| a.trim() == current).and_then(|j| below.params.get(j))?.clone();
        }
        Some(current)
    }

    /// A launch expression with the launcher's computed locals (`blocks = (n + 255) / 256`)
    /// and file constants (`kBlock = BLOCK_SIZE`) replaced by what they stand for.
    pub(super) fn in_spec_names(&self, text: &str) -> String {
        self.in_spec_names_keeping_block(text, None)
    }

    /// [`in_spec_names`](Self::in_spec_names), with the extents of the launch's block, the
    /// `dim3` variable `block` (`threads.y`), left as [`BLOCK_EXTENT_NAMES`] wherever the
    /// expression reads them, for the spec's block to take their place: shared memory sized
    /// `threads.x * threads.y * sizeof(U)` follows a block the tuner varies.
    pub(super) fn in_spec_names_keeping_block(&self, text: &str, block: Option<&str>) -> String {
        let kept = |text: &str| match block {
            Some(block) => replace_members(text, |object, member| BLOCK_EXTENT_NAMES.iter().zip(["x", "y", "z"]).find(|(_, axis)| object == block && *axis == member).map(|(name, _)| name.to_string())),
            None => text.to_string(),
        };
        let launcher = &self.launcher().scope;
        let mut expanded = self.members_resolved(&kept(&strip_casts_everywhere(&lines_joined(text))));
        // Locals defined through other locals (`block_y = block_size / 32`, then `grid =
        // ceil_div(N, block_y)`) need a few rounds.
        for _ in 0..4 {
            // Members first: `block_dim.y` is a component, not `block_dim`'s whole value.
            // A brace-initialised value (`cudaExtent extent = {w, h, d};`) written out leaves
            // `(w, h, d).width`, whose component [`components_picked`] takes.
            let next = rename_identifiers_in(&self.members_resolved(&kept(&expanded)), |word| {
                let init = launcher.value_text(word).map(|init| strip_casts_everywhere(&lines_joined(init)))?;
                // A constant stays a name: a size of the shape, or a launch choice; so does a
                // dimension read from a tensor (`N = Q.size(2)`), whose value the tensor's maker
                // gives.
                let dimension = tensors::size_read(&init).is_some_and(|(_, read)| matches!(read, tensors::SizeRead::Dim(_)));
                // A tensor (`a_contig = a.contiguous()`) is read by its sizes, not inlined.
                if eval_constant(&init, &|_| None).is_some() || dimension || tensors::made_tensor(&init).is_some() {
                    return None;
                }
                let init = init.trim_start_matches('{').trim_end_matches('}').trim().to_string();
                Some(if init.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') { init } else { format!("({init})") })
            });
            let next = components_picked(&next);
            if next == expanded {
                break;
            }
            expanded = next;
        }
        let expanded = self.static_members_resolved(&self.members_resolved(&self.functions_inlined(&expanded)));
        let expanded = rename_identifiers_in(&expanded, |word| self.file_constants.get(word).cloned());
        let expanded = self.sizes_of_types(&self.device_sizes_named(&expanded));
        let expanded = tensors::replace_size_reads(&expanded, |tensor, read| Some(self.size_read_in_spec(tensor, read)));
        strip_outer_parens(&without_exact_int_calls(&expanded)).to_string()
    }

    /// The spec's expression for a size read from the launcher's tensor `tensor`: a dimension
    /// is the launcher's local that holds it or the same dimension of another tensor (`N` for
    /// `Q.size(2)` or `K.size(2)` where `const int N = Q.size(2)` and `k = torch::randn_like(q)`),
    /// else a name of it in the first tensor the launcher takes with it (`Q_size_2`); `numel()`
    /// and strides are products of dimensions. One size has one name, so that checks that vary
    /// the sizes vary the tensors together.
    fn size_read_in_spec(&self, tensor: &str, read: tensors::SizeRead) -> String {
        let Some(path) = self.paths.first() else { return read.name(tensor) };
        let Some(rank) = self.tensor_dims(path, 0, tensor, 0).map(|(_, dims)| dims.len()) else { return read.name(tensor) };
        let made_as = |t: &str, read: tensors::SizeRead| self.dimension_made_as(path, 0, t, read);
        let dim = |k: usize| {
            let wanted = made_as(tensor, tensors::SizeRead::Dim(k as i64));
            let same = |t: &str, r: tensors::SizeRead| (t == tensor && r.is_dim(k, rank)) || (wanted.is_some() && made_as(t, r) == wanted);
            let launcher = &self.launcher().scope;
            let holder = launcher.values.iter().find(|(name, value, _)| {
                let held = tensors::size_read(value).is_some_and(|(t, r)| same(t, r));
                held && is_identifier(name) && launcher.value_text(name) == Some(value.as_str())
            });
            if let Some((name, _, _)) = holder {
                return name.clone();
            }
            if let Some(passed) = self.dimension_passed_down(path, tensor, k, rank) {
                return passed;
            }
            // The first tensor the launcher takes with that dimension names it.
            let taken = self.launcher().params.iter().find_map(|p| {
                let rank = self.tensor_dims(path, 0, p, 0)?.1.len();
                (0..rank).map(|j| tensors::SizeRead::Dim(j as i64)).find(|&r| same(p, r)).map(|r| r.name(p))
            });
            taken.unwrap_or_else(|| tensors::SizeRead::Dim(k as i64).name(tensor))
        };
        let product = |from: usize| if from >= rank { "1".to_string() } else { (from..rank).map(dim).collect::<Vec<_>>().join(" * ") };
        let at = |k: i64| tensors::dim_index(k, rank);
        match read {
            tensors::SizeRead::Dim(k) => at(k).map_or_else(|| read.name(tensor), dim),
            tensors::SizeRead::Numel => format!("({})", product(0)),
            tensors::SizeRead::Stride(k) => at(k).map_or_else(|| read.name(tensor), |k| format!("({})", product(k + 1))),
            tensors::SizeRead::Rank => rank.to_string(),
        }
    }

    /// The launcher's parameter that a caller passes dimension `k` of the launcher's tensor
    /// `tensor` (of `rank` dimensions) down as: a local of the caller that holds it
    /// (`int batch = pts.size(0); box_pool_impl(batch, …, pts, …)`), the nearest caller first.
    fn dimension_passed_down(&self, path: &[Frame], tensor: &str, k: usize, rank: usize) -> Option<String> {
        let wanted = self.dimension_made_as(path, 0, tensor, tensors::SizeRead::Dim(k as i64));
        (1..path.len()).find_map(|at| {
            let frame = &path[at];
            let there = self.name_in_frame(path, at, tensor)?;
            let same = |t: &str, r: tensors::SizeRead| (t == there && r.is_dim(k, rank)) || (wanted.is_some() && self.dimension_made_as(path, at, t, r) == wanted);
            let held = |(name, value, _): &&(String, String, usize)| is_identifier(name) && frame.scope.value_text(name) == Some(value.as_str()) && tensors::size_read(value).is_some_and(|(t, r)| same(t, r));
            let (holder, _, _) = frame.scope.values.iter().find(held)?;
            let down = self.to_launcher_names(path, at, holder);
            self.launcher().params.contains(&down).then_some(down)
        })
    }

    /// The name frame `at` of `path` has for the launcher's parameter `name`: the argument each
    /// caller up to it passes for it, where each is a plain name.
    fn name_in_frame(&self, path: &[Frame], at: usize, name: &str) -> Option<String> {
        let mut name = name.to_string();
        for frame in &path[..at] {
            let index = frame.params.iter().position(|p| *p == name)?;
            let passed = frame.called_with()?.get(index)?.trim().to_string();
            name = is_identifier(&passed).then_some(passed)?;
        }
        Some(name)
    }

    /// Where and as what the dimension that `read` reads of frame `at`'s tensor `tensor` was
    /// made (`hidden_size` of the test that made both `x` and `weight` with it): the same
    /// dimension of two tensors is one size.
    fn dimension_made_as(&self, path: &[Frame], at: usize, tensor: &str, read: tensors::SizeRead) -> Option<(usize, String)> {
        self.dimension_made_as_within(path, at, tensor, read, 0)
    }

    fn dimension_made_as_within(&self, path: &[Frame], at: usize, tensor: &str, read: tensors::SizeRead, depth: usize) -> Option<(usize, String)> {
        const MAX_DEPTH: usize = 8;
        let (made_at, dims) = self.tensor_dims(path, at, tensor, 0)?;
        let k = match read {
            tensors::SizeRead::Dim(k) => tensors::dim_index(k, dims.len())?,
            _ => return None,
        };
        let made = dims.get(k)?.clone();
        // A local that holds another tensor's dimension (`batch = points.size(0)` of
        // `boxes.view(batch, -1, 7)`) makes it that dimension.
        let held = path.get(made_at).and_then(|frame| frame.scope.value_text(&made)).and_then(tensors::size_read).filter(|_| is_identifier(&made) && depth < MAX_DEPTH);
        if let Some((other, read)) = held {
            return self.dimension_made_as_within(path, made_at, other, read, depth + 1);
        }
        // A number is no name: `64` of one dimension is not `64` of another, unless it is
        // the same dimension of tensors made alike.
        let place = match eval_constant(&made, &|_| None) {
            Some(_) => format!("{k} of {}", dims.join(", ")),
            None => made,
        };
        Some((made_at, place))
    }

    /// The length of a tensor's data that frame `at` (a caller of the launcher) passes down as
    /// a pointer (`softclamp_cuda(stream, x.data_ptr<float>(), numel)`), in the launcher's
    /// names: a local of that frame that holds its `numel()` (`numel = x.numel()`) or each of
    /// its dimensions, passed down to the launcher.
    fn passed_tensor_length(&self, path: &[Frame], at: usize, tensor: &str, sizes: TensorSizes) -> Option<String> {
        let (_, dims) = self.tensor_dims(path, at, tensor, 0)?;
        let dimension = |k: usize| {
            let read = tensors::SizeRead::Dim(k as i64);
            self.held_size_read(path, at, tensor, read).unwrap_or_else(|| read.call(tensor))
        };
        let length = self.held_size_read(path, at, tensor, tensors::SizeRead::Numel).unwrap_or_else(|| (0..dims.len()).map(dimension).collect::<Vec<_>>().join(" * "));
        let launcher_knows = |word: &str| self.launcher().params.iter().any(|p| p == word) || self.launcher().scope.value_text(word).is_some();
        let in_launcher = self.to_launcher_names(path, at, &length);
        if identifiers_in(&in_launcher).all(launcher_knows) {
            return Some(self.in_spec_names(&in_launcher));
        }
        if sizes == TensorSizes::Held {
            return None;
        }
        let named = tensors::replace_size_reads(&length, |t, read| (t == tensor).then(|| self.own_size_read_name(path, at, tensor, read)));
        let in_launcher = self.to_launcher_names(path, at, &named);
        let callers_size = |word: &str| tensors::named_read(word).is_some_and(|(t, _)| self.tensor_dims(path, at, t, 0).is_some());
        let all_known = identifiers_in(&in_launcher).all(|word| launcher_knows(word) || callers_size(word));
        all_known.then(|| self.in_spec_names(&in_launcher))
    }

    /// The local of frame `at` that holds size `read` of tensor `tensor` as it is read (`batch =
    /// x.sizes()[0]`), or the same dimension of a tensor made alike (`out =
    /// torch.empty_like(x)`); a dimension passed down as it is read (`row_center_cuda(…,
    /// x.size(0))`) becomes the parameter it is passed as.
    fn held_size_read(&self, path: &[Frame], at: usize, tensor: &str, read: tensors::SizeRead) -> Option<String> {
        let frame = path.get(at)?;
        let rank = self.tensor_dims(path, at, tensor, 0)?.1.len();
        let wanted = self.dimension_made_as(path, at, tensor, read);
        let same = |t: &str, r: tensors::SizeRead| match read {
            tensors::SizeRead::Dim(k) => (t == tensor && tensors::dim_index(k, rank).is_some_and(|k| r.is_dim(k, rank))) || (wanted.is_some() && self.dimension_made_as(path, at, t, r) == wanted),
            _ => t == tensor && r == read,
        };
        let held = |(name, value, _): &&(String, String, usize)| is_identifier(name) && frame.scope.value_text(name) == Some(value.as_str()) && tensors::size_read(value).is_some_and(|(t, r)| same(t, r));
        frame.scope.values.iter().find(held).map(|(name, _, _)| name.clone())
    }

    /// A size of its own for a dimension no local holds nor a caller passes down (a bias the
    /// kernel indexes by a channel it is given apart), named for the tensor of frame `at`
    /// (`weight_size_0`), whose value [`Self::size_values`] reads where the tensor is made; for
    /// the same dimension of a tensor the frame takes first, by that one's name (`input_size_1`
    /// for `output` made `empty_like(input)`).
    fn own_size_read_name(&self, path: &[Frame], at: usize, tensor: &str, read: tensors::SizeRead) -> String {
        let Some((frame, wanted)) = path.get(at).zip(self.dimension_made_as(path, at, tensor, read)) else { return read.name(tensor) };
        let taken = |p: &String| {
            let rank = self.tensor_dims(path, at, p, 0)?.1.len();
            (0..rank).map(|j| tensors::SizeRead::Dim(j as i64)).find(|&r| self.dimension_made_as(path, at, p, r).as_ref() == Some(&wanted)).map(|r| r.name(p))
        };
        frame.params.iter().filter(|p| !p.is_empty()).find_map(taken).unwrap_or_else(|| read.name(tensor))
    }

    /// What the program works the launcher's size `name` out from, in the spec's names, step
    /// by step along the first call path through the locals it is given, the arguments passed
    /// for it and the dimensions its tensor is made with, nearest first: `input_size_1 / 2`
    /// for `pairs`, which a caller makes as `input.size(1) / 2`; `height / patch` for
    /// `output.size(2)` of an output made `(…, x.size(2) // patch, …)` where `x` is passed as
    /// `input` and `height = input.size(2)`; `input_size_0` for `output.size(0)` of one made
    /// `(x.size(0), …)`. Each step is said each way [`Self::said_in_spec_names`] names a
    /// tensor's size. The scaffold keeps the first made of the spec's other sizes that gives
    /// every shape's value.
    pub(super) fn size_worked_out(&self, name: &str) -> Vec<String> {
        let Some(path) = self.paths.first() else { return Vec::new() };
        // A size the spec names for a read of the launcher's tensor (`output_size_2`).
        let launcher_has = |n: &str| path[0].params.iter().any(|p| p == n) || path[0].scope.value_text(n).is_some();
        let start = match tensors::named_read(name).filter(|(tensor, _)| !launcher_has(name) && launcher_has(tensor)) {
            Some((tensor, read)) => read.call(tensor),
            None => name.to_string(),
        };
        let mut said: Vec<String> = self.trail_of_size(path, start).into_iter().flat_map(|(at, made)| self.said_in_spec_names(path, at, &made)).collect();
        said.dedup();
        said
    }

    /// The conditions `a == b` the program asserts on the first call path (`assert(…)`, a
    /// Python `assert` too), said as [`Self::size_worked_out`] says a size: sizes the program
    /// keeps equal, from which the spec may work one out.
    pub(super) fn asserted_equalities(&self) -> Vec<String> {
        let Some(path) = self.paths.first() else { return Vec::new() };
        let equalities = asserted_conditions(path).into_iter().filter(|(_, condition)| condition.contains("=="));
        equalities.flat_map(|(at, condition)| self.said_in_spec_names(path, at, &strip_casts_everywhere(&condition))).collect()
    }

    /// `made` of frame `at` in the spec's names, each way a tensor's size it reads may be
    /// named: as the launcher names the tensors passed down, as the frame's own tensors
    /// (`input_size_1`, or the local that holds it), or by the local of a function further down
    /// that holds it.
    fn said_in_spec_names(&self, path: &[Frame], at: usize, made: &str) -> Vec<String> {
        let mut said = vec![self.in_spec_names(&self.to_launcher_names(path, at, made))];
        if !is_identifier(made) && tensors::size_read(made).is_none() {
            let own = tensors::replace_size_reads(made, |tensor, read| Some(self.held_size_read(path, at, tensor, read).unwrap_or_else(|| self.own_size_read_name(path, at, tensor, read))));
            said.push(self.in_spec_names(&self.to_launcher_names(path, at, &own)));
            // A size a function further down holds (`channels = value.size(1)` in the binding
            // a test's `value.size(1)` reaches) by that function's name for it.
            let held_below = (1..=at).rev().fold(made.to_string(), |text, level| {
                let held = tensors::replace_size_reads(&text, |tensor, read| self.held_size_read(path, level, tensor, read));
                self.to_callee_names(path, level, &held)
            });
            said.push(self.in_spec_names(&held_below));
        }
        said
    }

    /// The steps a size (a name or a size read in the launcher's frame) is made by along
    /// `path`, each with its frame, after `made` itself: the locals it is given, the arguments
    /// passed for it, the dimensions its tensor is made with, up to the first arithmetic, a
    /// number, or nothing the code shows.
    fn trail_of_size(&self, path: &[Frame], mut made: String) -> Vec<(usize, String)> {
        let mut steps = Vec::new();
        let mut at = 0;
        for _ in 0..32 {
            let frame = &path[at];
            let next = if is_identifier(&made) {
                match frame.scope.value_given(&made) {
                    Some((value, _)) => Some(value.to_string()),
                    None => frame.params.iter().position(|p| *p == made).filter(|_| at + 1 < path.len()).and_then(|index| {
                        at += 1;
                        frame.argument(index)
                    }),
                }
            } else if let Some((tensor, tensors::SizeRead::Dim(k))) = tensors::size_read(&made) {
                self.tensor_dims(path, at, tensor, 0).and_then(|(made_at, dims)| {
                    at = made_at;
                    dims.get(tensors::dim_index(k, dims.len())?).cloned()
                })
            } else {
                None
            };
            let Some(next) = next else { break };
            made = strip_outer_parens(without_float_casts(&strip_casts_everywhere(&next)).trim()).to_string();
            // A number is the program's own; so is a size of another kind (`x.numel()`).
            let arithmetic = !is_identifier(&made) && tensors::size_read(&made).is_none();
            if eval_constant(&made, &|_| None).is_some() || (!arithmetic && tensors::size_read(&made).is_some_and(|(_, r)| !matches!(r, tensors::SizeRead::Dim(_)))) {
                break;
            }
            steps.push((at, made.clone()));
            if arithmetic {
                break;
            }
        }
        steps
    }

    /// The length of the data of a tensor the launcher passes (`Q.data_ptr<float>()`) in
    /// elements of `element`, in the spec's names: the product of its dimensions.
    fn tensor_data_length(&self, arg: &str, element: &str) -> Option<String> {
        let (tensor, typed) = tensors::data_of(arg)?;
        let dims = self.tensor_dims_in_spec(tensor)?;
        // A `float` tensor read as `float4`s has a quarter as many.
        let (numerator, denominator) = typed.map_or(Some((1, 1)), |t| self.elements_per_allocated(&self.template_argument(t), element))?;
        let mut length = dims.join(" * ");
        if numerator != 1 {
            length = format!("{length} * {numerator}");
        }
        if denominator != 1 {
            length = format!("{length} / {denominator}");
        }
        Some(callee::readable(&length))
    }

    /// The dimensions of the tensor the launcher names `tensor`, in the spec's names, each
    /// parenthesised: as the launcher made it, else as the sizes read from it are named.
    pub(super) fn tensor_dims_in_spec(&self, tensor: &str) -> Option<Vec<String>> {
        let path = self.paths.first()?;
        let (made_at, dims) = self.tensor_dims(path, 0, tensor, 0)?;
        Some(match made_at {
            // Made by the launcher: its dimensions are in its names.
            0 => dims.iter().map(|d| format!("({})", self.in_spec_names(d))).collect(),
            _ => (0..dims.len()).map(|k| self.size_read_in_spec(tensor, tensors::SizeRead::Dim(k as i64))).collect(),
        })
    }

    /// `cuda_num_SMs` and `prop.multiProcessorCount` → `sm_count`, and the other device sizes.
    fn device_sizes_named(&self, text: &str) -> String {
        let text = replace_members(&device_arrays_named(&torch_device_properties_named(text)), |_, member| device_property(member).map(str::to_string));
        rename_identifiers_in(&text, |word| self.device_variables.get(word).map(|s| s.to_string()))
    }

    /// `threads.x` of the launcher's `dim3 threads(32, 8)` → `32`, and `grid.x` after
    /// `grid.x = n / 256` → `(n / 256)`. A member of a parameter (`dimsA.x` of `const dim3
    /// &dimsA`) becomes a size named `dimsA_x`, whose value the callers give.
    fn members_resolved(&self, text: &str) -> String {
        let launcher = self.launcher();
        replace_members(text, |object, member| {
            let parenthesised = |value: String| if is_identifier(&value) || value.parse::<i64>().is_ok() { value } else { format!("({value})") };
            if let Some(value) = launcher.scope.value_text(&format!("{object}.{member}")) {
                return Some(parenthesised(strip_casts_everywhere(value)));
            }
            let component = ["x", "y", "z"].iter().position(|c| *c == member);
            if let Some(dims) = component.and_then(|_| launcher.dim3_components(object)) {
                return Some(parenthesised(dims.get(component?).cloned().unwrap_or_else(|| "1".to_string())));
            }
            if let Some(value) = self.fields.get(member).filter(|_| component.is_none()) {
                return Some(format!("({value})"));
            }
            launcher.params.iter().any(|p| p == object).then(|| self.member_named_by_callers(object, member).unwrap_or_else(|| format!("{object}_{member}")))
        })
    }

    /// The name a caller gives the member `member` of the struct the launcher takes as
    /// `object` (`n` where `shift_all` fills `params.n = n` and passes `params` down), so that
    /// a size has one name whether the grid or a buffer's length reads it. The first caller
    /// that assigns the member a plain name says it.
    fn member_named_by_callers(&self, object: &str, member: &str) -> Option<String> {
        let path = self.paths.first()?;
        let mut object = object.to_string();
        for (at, frame) in path.iter().enumerate() {
            let index = frame.params.iter().position(|p| *p == object)?;
            object = frame.passed_object(index)?;
            let caller = path.get(at + 1)?;
            if let Some(value) = caller.scope.given_before_point(&format!("{object}.{member}")) {
                let value = strip_outer_parens(value.trim());
                return is_identifier(value).then(|| value.to_string());
            }
        }
        None
    }

    /// `div_up(n, 256)` where `int div_up(int a, int b) { return (a + b - 1) / b; }` →
    /// `((n + 256 - 1) / 256)`; the spec's own functions (`ceil_div`, `min`) stay.
    fn functions_inlined(&self, text: &str) -> String {
        let mut text = text.to_string();
        for _ in 0..4 {
            let mut changed = false;
            let mut out = String::with_capacity(text.len());
            let mut rest = text.as_str();
            while let Some(open) = rest.find('(') {
                let name_start = rest[..open].rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).map_or(0, |i| i + 1);
                let name = &rest[name_start..open];
                let close = matching_paren(&rest[open..]).map(|c| open + c);
                // A method of an object (`input->n()`) is another function than a free one.
                let is_method = rest[..name_start].trim_end().ends_with(['.', '>']);
                let function = self.expression_functions.get(name).filter(|_| expr::Function::from_name(name).is_none() && !is_method);
                match (function, close) {
                    (Some(function), Some(close)) => {
                        let args = split_args(&rest[open + 1..close]);
                        let inlined = rename_identifiers_in(&function.value, |w| {
                            let i = function.params.iter().position(|(p, _)| p == w)?;
                            let a = args.get(i).or(function.params[i].1.as_ref())?;
                            Some(if is_identifier(a) { a.clone() } else { format!("({a})") })
                        });
                        out.push_str(&rest[..name_start]);
                        out.push_str(&format!("({inlined})"));
                        rest = &rest[close + 1..];
                        changed = true;
                    }
                    _ => {
                        out.push_str(&rest[..=open]);
                        rest = &rest[open + 1..];
                    }
                }
            }
            out.push_str(rest);
            text = out;
            if !changed {
                break;
            }
        }
        text
    }

    /// `x128::size` where `typedef Packed128<float> x128;` and `Packed128<T>` has
    /// `static constexpr int size = sizeof(int4) / sizeof(T);` → `4`.
    fn static_members_resolved(&self, text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(at) = rest.find("::") {
            let is_word = |c: char| c.is_ascii_alphanumeric() || c == '_';
            // `Packed128<floatX>::size`: the template's arguments belong to the class.
            let name_end = match rest[..at].strip_suffix('>') {
                Some(before) => matching_open_angle(before).unwrap_or(at),
                None => at,
            };
            let class_start = rest[..name_end].rfind(|c: char| !is_word(c)).map_or(0, |i| i + 1);
            let member_end = rest[at + 2..].find(|c: char| !is_word(c)).map_or(rest.len(), |i| at + 2 + i);
            match self.static_member(&rest[class_start..at], &rest[at + 2..member_end]) {
                Some(value) => {
                    out.push_str(&rest[..class_start]);
                    out.push_str(&value.to_string());
                }
                None => out.push_str(&rest[..member_end]),
            }
            rest = &rest[member_end..];
        }
        out.push_str(rest);
        out
    }

    /// The value of `class::member`, the class named in the launcher (its template parameter
    /// `Traits` is the type the call path instantiates it with).
    fn static_member(&self, class: &str, member: &str) -> Option<i64> {
        let class = self.template_argument(class);
        // A template parameter no call instantiates is no class yet (a namesake alias elsewhere
        // is another type).
        if self.launcher().template_params.contains(&class) {
            return None;
        }
        let resolved = self.resolve_type(&class);
        let (name, args) = match resolved.split_once('<') {
            Some((name, args)) => (name.trim(), split_args(args.trim_end().strip_suffix('>')?)),
            None => (resolved.as_str(), Vec::new()),
        };
        self.member_value(name, &args, member, 0)
    }

    /// `member` of the class template `class` instantiated with `args`: its initializer with the
    /// template's parameters given and the class's other members (`kRows = kThreads * kItems`)
    /// worked out in turn.
    fn member_value(&self, class: &str, args: &[String], member: &str, depth: usize) -> Option<i64> {
        let members = self.static_members.get(class)?;
        let init = members.values.get(member)?;
        let init = rename_identifiers_in(init, |word| match members.template_params.iter().position(|p| p == word) {
            Some(i) => args.get(i).cloned(),
            None if depth < 8 && word != member && members.values.contains_key(word) => self.member_value(class, args, word, depth + 1).map(|v| v.to_string()),
            None => None,
        });
        eval_constant(&strip_casts_everywhere(&self.sizes_of_types(&init)), &|name| self.defines.get(name).copied())
    }

    /// A type with its aliases followed: `floatX` is `float` where `typedef float floatX;`, and
    /// `Point` of C's `struct Point`.
    pub(super) fn resolve_type(&self, ty: &str) -> String {
        let ty = ty.trim();
        let mut current = ty.strip_prefix("struct ").unwrap_or(ty).trim().to_string();
        for _ in 0..8 {
            match self.type_aliases.get(&current) {
                Some(next) => current = next.clone(),
                None => break,
            }
        }
        current
    }

    /// The bytes of a `ty` through the program's aliases: a number's, or those of a struct the
    /// files define (see [`structs::size_of_struct`]).
    pub(super) fn size_of(&self, ty: &str) -> Option<u64> {
        let ty = self.resolve_type(ty);
        size_of_type(&ty).or_else(|| super::structs::size_of_struct(self.documents(), &ty, &|t| self.resolve_type(t)))
    }

    /// How many of the kernel's `element`s one `sizeof(allocated)` of an allocation holds, as a
    /// reduced fraction: 1 for the same type through aliases or any type when the element's size
    /// is unknown (a template parameter); 2 for `sizeof(float)` bytes of a `bf16` buffer (llm.c
    /// allocates its `floatX` statistics with `sizeof(float)`); `None` when the allocated type's
    /// size is unknown.
    fn elements_per_allocated(&self, allocated: &str, element: &str) -> Option<(u64, u64)> {
        let (allocated, element) = (self.resolve_type(allocated), self.resolve_type(element));
        if allocated.replace(' ', "") == element.replace(' ', "") || allocated.contains('*') {
            return Some((1, 1));
        }
        match (self.size_of(&allocated), self.size_of(&element)) {
            (Some(a), Some(e)) => {
                let g = gcd(a, e);
                Some((a / g, e / g))
            }
            (_, None) => Some((1, 1)),
            (None, Some(_)) => None,
        }
    }

    /// The types of the `sizeof`s in `text` whose size is not known, through their aliases.
    fn unsized_types(&self, text: &str) -> Vec<String> {
        let mut unknown_types: Vec<String> = Vec::new();
        for (_, inner) in calls_named(text, "sizeof") {
            let ty = text[inner].trim();
            if self.size_of(ty).is_none() && !unknown_types.iter().any(|t| t == ty) {
                unknown_types.push(ty.to_string());
            }
        }
        unknown_types
    }

    /// `sizeof(floatX)` → `4`, for the types whose size is known.
    /// `sizeof(T)` of a type the launcher names, through its aliases and the host templates'
    /// parameters on the first call path (`Real` of `PricingEngine<Real>`, made as `<float>`).
    fn sizes_of_types(&self, text: &str) -> String {
        self.sizes_of_types_at(self.paths.first().map_or(&[], |path| path.as_slice()), 0, text)
    }

    /// [`sizes_of_types`](Self::sizes_of_types) as frame `at` of `path` reads them: also
    /// `sizeof(scalar_t)` where a dispatch's `case` there says `using scalar_t = float;`.
    fn sizes_of_types_at(&self, path: &[Frame], at: usize, text: &str) -> String {
        replace_calls(text, "sizeof", |ty| {
            let local = self.type_at_point(path, at, ty, 0);
            self.size_of(&self.type_at(path, at, &local)).map(|b| b.to_string())
        })
    }

    /// The run its project documents for the program on the first call path, when a function
    /// on it reads a value from that run's command line: `./srad 100 0.5 502 458` (run:1).
    pub(super) fn documented_run(&self) -> Option<String> {
        self.paths.first()?.iter().filter(|frame| frame.scope.reads_run).find_map(|frame| self.graph.run_of(frame.text).describe())
    }

    /// Where the first call path calls the launcher's twin in its place (see
    /// `CallGraph::twin_called`).
    pub(super) fn twin_call(&self) -> Option<TwinCall<'d>> {
        let [launcher, caller, ..] = self.paths.first()?.as_slice() else { return None };
        let (call, twin) = (launcher.called_by?, launcher.called_as?.to_string());
        Some(TwinCall { launcher: frame_name(launcher), twin, caller: frame_name(caller), text: call.text, at: call.node.start_byte() })
    }

    /// Whether the program's run (the first call path) reaches the launch: `Some(false)` when
    /// an `if` around it takes the other branch there, `None` when a condition has no value.
    pub(super) fn launch_taken(&self) -> Option<bool> {
        let path = self.paths.first()?;
        let mut taken = Some(true);
        for (condition, holds) in &self.branch_conditions {
            // A `case`'s branch says its switch's value is the label's: the condition asks
            // what the value is before that, as the launcher computes it.
            let condition = rename_identifiers_in(condition, |word| {
                self.branch_values.contains_key(word).then(|| path[0].scope.value_text(word).map(|v| format!("({v})"))).flatten()
            });
            match self.eval_text(path, 0, strip_outer_parens(&condition), 0) {
                Some(value) if (value != 0) != *holds => return Some(false),
                Some(_) => {}
                None => taken = None,
            }
        }
        taken
    }

    /// The value of a size named at the launch, along each call path that gives one.
    /// A name the launcher does not know is a caller's, left by a length worked out there
    /// (`N` of `mergeSort`, which passes its launcher `N / TILE` and `TILE`): its value is that
    /// of the nearest caller with a parameter or local of the name.
    pub(super) fn size_values(&self, name: &str) -> Vec<Option<i64>> {
        self.paths
            .iter()
            .map(|path| {
                self.eval_name(path, 0, name, 0)
                    .or_else(|| {
                        let caller = self.callers_name(path, name)?;
                        self.eval_name(path, caller, name, 0)
                    })
                    .or_else(|| {
                        // A read of a caller's tensor (`weight_size_0`): the nearest frame that
                        // names it as a tensor (the launcher may name its data the same).
                        let (tensor, read) = tensors::named_read(name)?;
                        (1..path.len()).find_map(|at| self.eval_size_read(path, at, tensor, read, 0))
                    })
            })
            .collect()
    }

    /// The nearest caller on `path` with a parameter, local or object's member `name`, when
    /// the launcher has none of that name.
    fn callers_name(&self, path: &[Frame], name: &str) -> Option<usize> {
        let names = |at: usize| {
            let frame = &path[at];
            // A local of no known value (stepped in a loop) is named there all the same.
            frame.params.iter().any(|p| p == name) || frame.scope.given_at_point(name).is_some() || self.member_in_caller(path, at, name).is_some()
        };
        match names(0) {
            true => None,
            false => (0..path.len()).find(|&at| names(at)),
        }
    }

    /// Where the program makes a value it gives no number for (a size, a scalar, a buffer): the
    /// name followed from the launch
    /// along the first call path, through the values it is given and the arguments passed for
    /// it, to the expression that is no plain name (`x.numel()`) or to a parameter of a function
    /// that nothing in the files calls. `None` when the trail ends in nothing the code shows.
    pub(super) fn value_source(&self, name: &str) -> Option<ValueSource<'d>> {
        let path = self.paths.first()?;
        // A size the spec names for a read of the launcher's tensor (`a_contig_numel`); a
        // variable of the program that only looks like one (`matrix_dim`) is followed as any other.
        let launcher_has = |n: &str| path[0].params.iter().any(|p| p == n) || path[0].scope.value_text(n).is_some();
        // `params_dim` of a struct parameter is its member `params.dim`, not a tensor's rank.
        let typed_otherwise = |n: &str| path[0].params.iter().position(|p| p == n).is_some_and(|i| path[0].param_types.get(i).is_some_and(|t| !t.contains("Tensor")));
        if let Some((tensor, read)) = tensors::named_read(name).filter(|(tensor, _)| !launcher_has(name) && launcher_has(tensor) && !typed_otherwise(tensor)) {
            let launcher = &path[0];
            return Some(ValueSource { text: launcher.text, at: launcher.scope.point, function: frame_name(launcher), made_by: Made::Expression(read.call(tensor)) });
        }
        let (mut at, mut name) = (0, name.to_string());
        // Each step moves to another name or an outer frame; a cycle of names ends here.
        for _ in 0..32 {
            let frame = path.get(at)?;
            // A buffer allocated here (its declaration's `= 0` says nothing of its length).
            if let Some(allocation) = frame.scope.body.and_then(|b| allocations(frame.text, b).find(|a| a.pointer == name)) {
                let made_by = Made::Allocation { unknown_types: self.unsized_types(&allocation.bytes), bytes: allocation.bytes };
                return Some(ValueSource { text: frame.text, at: allocation.at, function: frame_name(frame), made_by });
            }
            if let Some((value, given_at)) = frame.scope.value_given(&name) {
                let value = without_float_casts(&strip_casts_everywhere(value));
                let value = strip_outer_parens(value.trim()).to_string();
                if is_identifier(&value) && value != name {
                    name = value;
                    continue;
                }
                return Some(ValueSource { text: frame.text, at: given_at, function: frame_name(frame), made_by: Made::Expression(value) });
            }
            if let Some((_, read, read_at)) = frame.scope.command_line_reads.iter().rfind(|(n, _, at)| *n == name && *at < frame.scope.point) {
                let made_by = Made::CommandLine { read: read.clone(), run: self.graph.run_of(frame.text).describe() };
                return Some(ValueSource { text: frame.text, at: *read_at, function: frame_name(frame), made_by });
            }
            if let Some((_, stepped_at)) = frame.scope.given_at_point(&name).filter(|(v, at)| *v == UNKNOWN && is_step_of(&frame.text[*at..], &name)) {
                // A value a call set, stepped once (`blocks *= sm_count` after the occupancy
                // calculator), is the call's to answer.
                let made_by = match frame.scope.set_by_call_before(frame.text, &name, stepped_at) {
                    Some((callee, called_at)) => return Some(ValueSource { text: frame.text, at: called_at, function: frame_name(frame), made_by: self.made_by_call(callee) }),
                    None => Made::SteppedInLoop(name),
                };
                return Some(ValueSource { text: frame.text, at: stepped_at, function: frame_name(frame), made_by });
            }
            if let Some(callee) = frame.scope.set_by_call(frame.text, &name) {
                return Some(ValueSource { text: frame.text, at: callee.1, function: frame_name(frame), made_by: self.made_by_call(callee.0) });
            }
            if let Some((passed, made_at)) = self.member_in_caller(path, at, &name).filter(|_| !frame.params.contains(&name)) {
                let passed = strip_outer_parens(strip_casts_everywhere(&passed).trim()).to_string();
                if !is_identifier(&passed) {
                    let caller = &path[made_at];
                    return Some(ValueSource { text: caller.text, at: caller.scope.point, function: frame_name(caller), made_by: Made::Expression(passed) });
                }
                (at, name) = (made_at, passed);
                continue;
            }
            if let Some(source) = self.global_read_from_command_line(&name).filter(|_| !frame.params.contains(&name)) {
                return Some(source);
            }
            let Some(index) = frame.params.iter().position(|p| *p == name) else {
                // Neither a local nor a parameter of a method: a member of its class.
                let function = frame_name(frame);
                let class = function.rsplit_once("::")?.0.to_string();
                return Some(ValueSource { text: frame.text, at: frame.scope.point, function, made_by: Made::Member { name, class } });
            };
            let Some((call, caller)) = frame.called_by.zip(path.get(at + 1)) else {
                let function = frame.scope.body.and_then(|b| b.parent())?;
                return Some(ValueSource { text: frame.text, at: function.start_byte(), function: frame_name(frame), made_by: Made::Parameter(name) });
            };
            let passed = without_float_casts(&strip_casts_everywhere(&frame.argument(index)?));
            let passed = strip_outer_parens(passed.trim()).to_string();
            if !is_identifier(&passed) {
                return Some(ValueSource { text: caller.text, at: call.node.start_byte(), function: frame_name(caller), made_by: Made::Expression(passed) });
            }
            (at, name) = (at + 1, passed);
        }
        None
    }

    fn made_by_call(&self, callee: String) -> Made {
        let defined = self.graph.definitions.contains_key(bare_name(&callee));
        Made::Call { callee, defined }
    }

    /// Where a function sets the file-scope variable `name` from the command line (`cols =
    /// atoi(argv[2]);` in `init`), when the program's run gives it no number.
    fn global_read_from_command_line(&self, name: &str) -> Option<ValueSource<'d>> {
        let mut functions: Vec<(&&str, &(&str, Node))> = self.graph.definitions.iter().flat_map(|(name, namesakes)| namesakes.iter().map(move |d| (name, d))).collect();
        functions.sort_by_key(|(function, _)| **function);
        functions.into_iter().find_map(|(function, &(text, definition))| {
            let body = definition.child_by_field_name("body")?;
            let assignment = descendants(body).filter(|n| n.kind() == "assignment_expression").find(|a| {
                let target = a.child_by_field_name("left").map(|l| &text[l.byte_range()]);
                let read = a.child_by_field_name("right").map(|r| &text[r.byte_range()]);
                target == Some(name) && read.is_some_and(reads_command_line) && !declared_in(text, body, name)
            })?;
            let root = std::iter::successors(Some(definition), |n| n.parent()).last()?;
            let at_file_scope = file_scope_declarations(root).into_iter().any(|decl| decl.children_by_field_name("declarator", &mut decl.walk()).any(|d| declared_name(d).is_some_and(|n| &text[n.byte_range()] == name)));
            if !at_file_scope {
                return None;
            }
            let read = text[assignment.child_by_field_name("right")?.byte_range()].to_string();
            let made_by = Made::CommandLine { read, run: self.graph.run_of(text).describe() };
            Some(ValueSource { text, at: assignment.start_byte(), function: function.to_string(), made_by })
        })
    }

    /// A member of its object that the method of frame `at` reads, with the frame of `path`
    /// in whose names it is: the object's member where the caller gives it a value
    /// (`test.numSims = 1 << 20` before `test()`), else the argument the object is made with
    /// for the constructor parameter that sets it (`128` of `Simulation<float> sim(n, 128)` for
    /// `m_block_size`).
    fn member_in_caller(&self, path: &[Frame<'d>], at: usize, member: &str) -> Option<(String, usize)> {
        let (object, _) = Self::object_of(path, at)?;
        let field = format!("{object}.{member}");
        if path.get(at + 1)?.scope.value_text(&field).is_some() {
            return Some((field, at + 1));
        }
        let (made_at, members) = self.members_constructed_from(path, at)?;
        members.into_iter().find(|(_, m)| m == member).map(|(arg, _)| (arg, made_at))
    }

    /// The value of a constant member of the class whose method `frame` is, named there
    /// unqualified (`kMaxThreads` of `static const uint kMaxThreads = 256;`), with the class.
    fn class_constant<'f>(&self, frame: &Frame<'f>, name: &str) -> Option<(i64, &'f str)> {
        let class = frame.class()?;
        Some((self.member_value(class, &[], name, 0)?, class))
    }

    /// The object frame `at`'s method was called on and its class, when the object is one of
    /// that class (`sim` of `sim.step(d)` for `Simulation<Real>::step`).
    fn object_of<'p>(path: &'p [Frame], at: usize) -> Option<(String, &'p str)> {
        let frame = path.get(at)?;
        let class = frame.class()?;
        let (object, ty) = objects::called_object(&frame.called_by?)?;
        (class_of(&ty) == class).then_some((object, class))
    }

    /// The arguments that frame `at`'s object is constructed with, each with the member the
    /// constructor sets from it (`paths` → `m_paths` for `Simulation<Real> sim(paths, …)`), and
    /// the frame of `path` in whose names they are: the caller's, or the one that makes the
    /// object with `new` or calls the function that does.
    fn members_constructed_from(&self, path: &[Frame<'d>], at: usize) -> Option<(usize, Vec<(String, String)>)> {
        let (object, class) = Self::object_of(path, at)?;
        let caller = path.get(at + 1)?;
        let (made_at, args) = match objects::construction_args(caller.text, caller.scope.body?, &object) {
            Some(args) => (at + 1, args),
            None => self.made_with_new(path, &object, class)?,
        };
        let (text, constructor) = self.graph.definition(class)?;
        Some((made_at, objects::members_set(text, constructor).into_iter().filter_map(|(member, index)| Some((args.get(index)?.trim().to_string(), member))).collect()))
    }

    /// The arguments of the `new` that makes the object `object` of `class` outside its
    /// method's caller (`swarm = new Swarm(count, 0.5f);` in an init function, `swarm` at file
    /// scope), with the frame of `path` in whose names they are: the frame that makes it, or
    /// the one that calls the function that does, its parameters then being its arguments.
    fn made_with_new(&self, path: &[Frame<'d>], object: &str, class: &str) -> Option<(usize, Vec<String>)> {
        // In a samples repository a namesake program may make its own: the launch's folder's first.
        let home = self.graph.folder_of(self.launcher().text);
        let mut made = self.made_with_new.iter().filter(|m| m.object == object && m.class == class);
        let first = made.clone().next();
        let &NewObject { text, function, assignment, ref args, .. } = made.find(|m| self.graph.folder_of(m.text) == home).or(first)?;
        if let Some(at) = path.iter().position(|f| f.scope.body.is_some() && f.scope.body == function.child_by_field_name("body")) {
            return Some((at, args.clone()));
        }
        let (at, passed) = self.call_from_path(path, &Call { text, caller: function, node: assignment, key_arguments: 0 })?;
        let params = crate::syntax::host::parameter_names(text, function);
        let args = args.iter().map(|arg| rename_identifiers_in(arg, |w| {
            let given = passed.get(params.iter().position(|p| p == w)?)?;
            Some(if is_identifier(given) { given.clone() } else { format!("({given})") })
        }));
        Some((at, args.collect()))
    }

    fn eval_name(&self, path: &[Frame], at: usize, name: &str, depth: usize) -> Option<i64> {
        if let Some(v) = self.defines.get(name) {
            return Some(*v);
        }
        if let Some((_, v)) = DEVICE_SIZES.iter().find(|(n, _)| *n == name) {
            return Some(*v);
        }
        // A dispatch's `constexpr static bool kFlag = true;`.
        if let Some(v) = ["false", "true"].iter().position(|literal| *literal == name) {
            return Some(v as i64);
        }
        if depth > 16 {
            return None;
        }
        // The launch's branch (`case 0:` of `switch (whichKernel)`) fixes what the callers pass
        // down to that name too.
        let in_launcher = if at == 0 { Some(name.to_string()) } else { Self::launcher_parameter_of(path, at, name) };
        if let Some(value) = in_launcher.and_then(|n| self.branch_values.get(&n)) {
            return Some(*value);
        }
        let frame = path.get(at)?;
        if let Some(text) = frame.scope.value_text(name) {
            // A size a range-based `for` sweeps (`for (int size : SIZE) { m = size; ... }`): the
            // largest, the problem a benchmark loop builds up to; an indexed sweep's first.
            let ranged = |(first, values): (String, Vec<i64>)| match text.trim().ends_with(&format!("[{RANGE_INDEX}]")) {
                true => values.iter().max().map_or(first, i64::to_string),
                false => first,
            };
            let value = list_element(frame, text).or_else(|| sweep_element(frame, text).map(ranged)).or_else(|| filled_element(frame, text));
            return self.eval_text(path, at, value.as_deref().unwrap_or(text), depth + 1);
        }
        if let Some(index) = frame.template_params.iter().position(|p| p == name) {
            let (arg, named_in) = template_argument_passed(path, at, index).or_else(|| Some((frame.template_defaults.get(index)?.clone()?, at)))?;
            return self.eval_text(path, named_in, &arg, depth + 1);
        }
        match frame.params.iter().position(|p| p == name) {
            Some(index) => self.eval_text(path, at + 1, &frame.argument(index)?, depth + 1),
            None if self.globals.contains_key(name) => self.eval_text(path, at, &self.globals[name], depth + 1),
            // `dimsA_x`, the size [`Self::members_resolved`] names for `dimsA.x`.
            None => {
                if let Some((value, _)) = self.class_constant(frame, name) {
                    return Some(value);
                }
                if let Some((passed, made_at)) = self.member_in_caller(path, at, name) {
                    return self.eval_text(path, made_at, &passed, depth + 1);
                }
                // `Q_size_0`, the size [`Self::in_spec_names`] names for `Q.size(0)`.
                if let Some(value) = tensors::named_read(name).and_then(|(tensor, read)| self.eval_size_read(path, at, tensor, read, depth + 1)) {
                    return Some(value);
                }
                // `dim_cpu_number_boxes`: the object is the frame's parameter the name starts with.
                let mut splits = name.match_indices('_').map(|(i, _)| (&name[..i], &name[i + 1..]));
                let object_is_parameter = |object: &str| frame.params.iter().any(|p| p == object);
                let (object, member) = splits.find(|(object, _)| object_is_parameter(object)).or_else(|| name.rsplit_once('_'))?;
                self.eval_member(path, at, object, member, depth + 1)
            }
        }
    }

    /// The value of `object.member` in frame `at`: assigned (`grid.x = ...`), a component of a
    /// `dim3` constructed there, or the same member of what the caller passed as `object`.
    fn eval_member(&self, path: &[Frame], at: usize, object: &str, member: &str, depth: usize) -> Option<i64> {
        let frame = path.get(at)?;
        if depth > 16 {
            return None;
        }
        if let Some(value) = frame.scope.value_text(&format!("{object}.{member}")) {
            return self.eval_text(path, at, value, depth + 1);
        }
        let component = ["x", "y", "z"].iter().position(|c| *c == member);
        if let Some(dims) = component.and_then(|_| frame.dim3_components(object)) {
            return self.eval_text(path, at, dims.get(component?).map_or("1", String::as_str), depth + 1);
        }
        if let Some(value) = self.member_set_by_callee(frame, object, member) {
            return self.eval_text(path, at, &value, depth + 1);
        }
        let Some(index) = frame.params.iter().position(|p| p == object) else {
            let value = self.fields.get(member).filter(|_| component.is_none())?;
            return self.eval_text(path, at, value, depth + 1);
        };
        let arg = strip_casts_everywhere(&frame.argument(index)?);
        let arg = arg.trim_start_matches('&').trim();
        is_identifier(arg).then(|| self.eval_member(path, at + 1, arg, member, depth + 1)).flatten()
    }

    fn eval_text(&self, path: &[Frame], at: usize, text: &str, depth: usize) -> Option<i64> {
        if let Some(element) = path.get(at).and_then(|frame| list_element(frame, text)).filter(|_| depth < 16) {
            return self.eval_text(path, at, &element, depth + 1);
        }
        let text = self.strings_compared(path, at, &strip_casts_everywhere(text), depth);
        let text = tensors::replace_size_reads(&text, |tensor, read| self.eval_size_read(path, at, tensor, read, depth + 1).map(|v| v.to_string()));
        let text = replace_members(&text, |object, member| self.eval_member(path, at, object, member, depth + 1).map(|v| v.to_string()));
        eval_constant(&self.sizes_of_types_at(path, at, &text), &|name| self.eval_name(path, at, name, depth))
    }

    /// `text` with each comparison of a name and a string literal (`pool_mode == "max"`, as a
    /// script's `0 if pool_mode == 'max' else 1` is written) replaced by its truth, `1` or `0`,
    /// where the name holds a string literal along the path; others as they are.
    fn strings_compared(&self, path: &[Frame], at: usize, text: &str, depth: usize) -> String {
        if !text.contains('"') {
            return text.to_string();
        }
        // A string is equal to the same string only, never to a number (a script's `None`).
        let literal = |operand: &str| self.literal(path, at, operand, depth + 1);
        replace_comparisons(text, |left, equal, right| Some(((literal(left)? == literal(right)?) == equal) as i64))
    }

    /// The literal, a string or a number, that `text` is or that the name `text` holds in
    /// frame `at` (given there, passed by a caller, or at file scope), as written.
    fn literal(&self, path: &[Frame], at: usize, text: &str, depth: usize) -> Option<String> {
        let text = text.trim();
        let string = text.len() > 1 && text.starts_with('"') && text.ends_with('"') && !text[1..text.len() - 1].contains(['"', '\\']);
        if string || text.parse::<f64>().is_ok() {
            return Some(text.to_string());
        }
        if depth > 16 || !is_identifier(text) {
            return None;
        }
        let frame = path.get(at)?;
        if let Some(value) = frame.scope.value_text(text) {
            return (value.trim() != text).then(|| self.literal(path, at, value, depth + 1)).flatten();
        }
        match frame.params.iter().position(|p| p == text) {
            Some(index) => self.literal(path, at + 1, &frame.argument(index)?, depth + 1),
            None => self.literal(path, at, self.globals.get(text)?, depth + 1),
        }
    }

    /// The value of a size read from tensor `tensor` of frame `at` (`x.size(0)`), from the
    /// dimensions the tensor was made with.
    fn eval_size_read(&self, path: &[Frame], at: usize, tensor: &str, read: tensors::SizeRead, depth: usize) -> Option<i64> {
        let (made_at, dims) = self.tensor_dims(path, at, tensor, depth)?;
        let dims: Option<Vec<i64>> = dims.iter().map(|d| self.eval_text(path, made_at, d, depth + 1)).collect();
        read.of(&dims?)
    }

    /// The dimensions tensor `name` of frame `at` was made with, and the frame whose names they
    /// are in: made there (`torch::empty({n, d})`, or like another tensor), passed down by a
    /// caller, or made at file scope.
    fn tensor_dims(&self, path: &[Frame], at: usize, name: &str, depth: usize) -> Option<(usize, Vec<String>)> {
        let (made_at, value) = self.tensor_made(path, at, name, depth)?;
        self.made_tensor_dims(path, made_at, &value, depth)
    }

    /// The expression that made tensor `name` of frame `at`, and the frame it is in: the
    /// value given it there, a caller's argument for it, or the file's, through the other
    /// names it has (`a_f16 = a.half()` in a script: `auto a_f16 = a;`).
    fn tensor_made(&self, path: &[Frame], at: usize, name: &str, depth: usize) -> Option<(usize, String)> {
        if depth > 16 {
            return None;
        }
        let frame = path.get(at)?;
        let (made_at, value) = match (frame.scope.value_text(name), frame.params.iter().position(|p| p == name)) {
            (Some(value), _) => (at, value.to_string()),
            (None, Some(index)) => (at + 1, frame.argument(index)?),
            (None, None) => (at, self.globals.get(name)?.clone()),
        };
        let value = strip_casts_everywhere(&value);
        match is_identifier(value.trim()) && (made_at != at || value.trim() != name) {
            true => self.tensor_made(path, made_at, value.trim(), depth + 1),
            false => Some((made_at, value)),
        }
    }

    /// The value the tensor whose data `arg` passes is filled with (`torch::full({n}, P1)`), in
    /// the spec's names.
    pub(super) fn tensor_fill_in_spec(&self, arg: &str) -> Option<String> {
        let (tensor, _) = tensors::data_of(arg)?;
        let path = self.paths.first()?;
        let (made_at, value) = self.tensor_made(path, 0, tensor, 0)?;
        let fill = tensors::fill_of(&value)?;
        Some(self.in_spec_names(&self.to_launcher_names(path, made_at, &fill)))
    }

    /// The dimensions of the tensor `value` makes in frame `made_at`, and the frame whose names
    /// they are in (see [`HostContext::tensor_dims`]).
    fn made_tensor_dims(&self, path: &[Frame], made_at: usize, value: &str, depth: usize) -> Option<(usize, Vec<String>)> {
        // One of two tensors by a condition the path settles (`(aligned) ? (torch::empty({rows}))
        // : (torch::empty({rows, cols}))`, a script's `if` whose branches make each).
        let value = strip_outer_parens(value.trim());
        if let Some((question, colon)) = callee::top_level_conditional(value).filter(|_| depth < 16) {
            let taken = match self.eval_text(path, made_at, &value[..question], depth + 1)? {
                0 => &value[colon + 1..],
                _ => &value[question + 1..colon],
            };
            let taken = strip_outer_parens(taken.trim());
            return match is_identifier(taken) {
                true => self.tensor_dims(path, made_at, taken, depth + 1),
                false => self.made_tensor_dims(path, made_at, taken, depth + 1),
            };
        }
        match tensors::made_tensor(&strip_casts_everywhere(value))? {
            tensors::MadeTensor::Dims(dims) => Some((made_at, dims)),
            tensors::MadeTensor::Like(other) => self.tensor_dims(path, made_at, &other, depth + 1),
            // The extents are the slicing frame's names, the whole dimensions the other's.
            tensors::MadeTensor::Sliced(other, extents) => {
                let (at, dims) = self.tensor_dims(path, made_at, &other, depth + 1)?;
                let names_agree = at == made_at || extents.iter().all(Option::is_none);
                names_agree.then(|| (at, tensors::sliced_dims(&extents, dims)))
            }
            tensors::MadeTensor::Reordered(other, order) => {
                let (at, dims) = self.tensor_dims(path, made_at, &other, depth + 1)?;
                Some((at, order.of(dims)?))
            }
            tensors::MadeTensor::Repeated(item, times) => {
                let shape = match is_identifier(&item) {
                    true => self.tensor_dims(path, made_at, &item, depth + 1),
                    false => self.made_tensor_dims(path, made_at, &item, depth + 1),
                };
                shape.or_else(|| Some((made_at, vec![item; times])))
            }
        }
    }

    /// Whether the value the launcher sees for `name` is worked out from `word`, through the
    /// names it is made of (`THREADS = GRID_SIZE * BLOCK_SIZE` at file scope, from `BLOCK_SIZE`).
    pub(super) fn made_from(&self, name: &str, word: &str) -> bool {
        let launcher = self.launcher();
        let mut pending = vec![name.to_string()];
        let mut seen: HashSet<String> = HashSet::new();
        while let Some(current) = pending.pop() {
            if current == word {
                return true;
            }
            if seen.len() > 64 || !seen.insert(current.clone()) {
                continue;
            }
            if let Some(value) = launcher.scope.value_text(&current).or_else(|| self.globals.get(&current).map(String::as_str)) {
                pending.extend(identifiers_in(value).map(str::to_string));
            }
        }
        false
    }

    /// Where the launcher's `name` gets its value along the first call path, when that is a
    /// choice of the host program: a constant, or an element of a constant array the program
    /// loops over. `None` when it is computed from something else (a size, an input).
    pub(super) fn launch_choice(&self, name: &str) -> Option<LaunchChoice> {
        let path = self.paths.first()?;
        let (mut at, mut current) = (0, name.to_string());
        for _ in 0..16 {
            let frame = path.get(at)?;
            if let Some(&value) = self.defines.get(&current) {
                // A macro of the kernel's own file is the defines transform's to lift; one of
                // another file (a header the launcher includes) only sets the launch here.
                return (current == name).then(|| LaunchChoice { default: value, sweep: Vec::new(), origin: format!("`#define {current} {value}` in the host code") });
            }
            if let Some(&value) = self.branch_values.get(&current).filter(|_| at == 0) {
                return Some(LaunchChoice { default: value, sweep: Vec::new(), origin: format!("`{current}` is {value} in the branch of the launch in `{}`", frame_name(frame)) });
            }
            if let Some(init) = frame.scope.value_text(&current) {
                if let Some((first, sweep)) = sweep_element(frame, init) {
                    let default = self.eval_text(path, at, &first, 0)?;
                    let origin = format!("`{current}` swept over {{{}}} in `{}`", join(&sweep), frame_name(frame));
                    return Some(LaunchChoice { default, sweep, origin });
                }
                let init = strip_casts_everywhere(init);
                if is_identifier(&init) {
                    current = init;
                    continue;
                }
                let default = self.eval_text(path, at, &init, 0)?;
                let origin = match frame.scope.set_by.get(&current) {
                    Some(callee) => format!("`{current}` as `{callee}` sets it in `{}`", frame_name(frame)),
                    None => format!("`{current} = {init}` in `{}`", frame_name(frame)),
                };
                return Some(LaunchChoice { default, sweep: Vec::new(), origin });
            }
            let (passed, passed_at) = match frame.params.iter().position(|p| *p == current) {
                Some(index) => (frame.argument(index)?, at + 1),
                None => match self.globals.get(&current) {
                    Some(init) => {
                        let default = self.eval_text(path, at, init, 0)?;
                        return Some(LaunchChoice { default, sweep: Vec::new(), origin: format!("`{current} = {init}` at file scope") });
                    }
                    None => match self.class_constant(frame, &current) {
                        Some((default, class)) => return Some(LaunchChoice { default, sweep: Vec::new(), origin: format!("`{current}` is {default} in class `{class}`") }),
                        None => self.member_in_caller(path, at, &current)?,
                    },
                },
            };
            let arg = strip_casts_everywhere(&passed);
            at = passed_at;
            if is_identifier(&arg) {
                current = arg;
                continue;
            }
            if let Some((first, sweep)) = path.get(at).and_then(|caller| sweep_element(caller, &arg)) {
                let default = self.eval_text(path, at, &first, 0)?;
                let origin = format!("`{arg}` swept over {{{}}} in `{}`", join(&sweep), path.get(at).map(frame_name).unwrap_or_default());
                return Some(LaunchChoice { default, sweep, origin });
            }
            let default = self.eval_text(path, at, &arg, 0)?;
            let caller = path.get(at).map(frame_name).unwrap_or_default();
            return Some(LaunchChoice { default, sweep: Vec::new(), origin: format!("`{arg}` passed as `{current}` by `{caller}`") });
        }
        None
    }

    /// A template argument of the launch, with the host templates' parameters on the first
    /// call path replaced by what their callers instantiate (`T` of `run<T>` called as
    /// `run<float>` is `float`).
    pub(super) fn template_argument(&self, text: &str) -> String {
        if let Some(ty) = dispatched_default(text, self.dispatch.as_deref()) {
            return ty.to_string();
        }
        let Some(path) = self.paths.first() else { return text.to_string() };
        // `(stages)`, a macro's parameter as its body writes it.
        let mut current = self.members_resolved(strip_outer_parens(text.trim()));
        // The frame whose names `current` is in: a template argument is the caller's.
        let mut at = 0;
        while let Some(frame) = path.get(at) {
            let Some(index) = frame.template_params.iter().position(|p| *p == current) else { break };
            match template_argument_passed(path, at, index) {
                Some(passed) => (current, at) = passed,
                // Deduced from what the call passes for a parameter of that type
                // (`HostLayerNormGradient(dout.data_ptr<scalar_t_out>(), …)`).
                None => match self.deduced_in_frame(path, at, &current, None, 0) {
                    Ok(ty) => return ty,
                    Err(_) => break,
                },
            }
        }
        // A constant the function works out (`constexpr int kTileQ = (kHeadDim < 128) ? 8 : 4;`)
        // has its value for the instantiation.
        let constant = path.get(at).is_some_and(|frame| frame.scope.value_text(&current).is_some());
        if let Some(frame) = path.get(at) {
            if let Some(ty) = frame.scope.type_alias_at_point(frame.text, &current) {
                return self.type_at_point(path, at, &ty, 0);
            }
        }
        match constant.then(|| self.eval_name(path, at, &current, 0)).flatten() {
            Some(value) => value.to_string(),
            // A caller's alias (`using Traits = RowTraits<128, 4>;` in `main`) is its type.
            None if at > 0 => self.resolve_type(&current),
            None => current,
        }
    }

    /// The name of the dtype dispatch around frame `at`'s point: the launch's, or the call
    /// towards it.
    fn dispatch_at(&self, path: &[Frame], at: usize) -> Option<String> {
        match at.checked_sub(1) {
            None => self.dispatch.clone(),
            Some(callee) => path.get(callee)?.called_by.as_ref().and_then(|call| torch_dispatch_around(call.text, call.node)),
        }
    }

    /// `ty` as frame `at` of `path` reads it at its point: the aliases declared before it
    /// (`using accscalar_t = at::acc_type<scalar_t_0, true>;` after `using scalar_t_0 = float;`)
    /// replaced by their types, PyTorch's `scalar_t` where a floating-point dispatch is around
    /// the point, its accumulate type worked out (`float`).
    fn type_at_point(&self, path: &[Frame], at: usize, ty: &str, depth: usize) -> String {
        let Some(frame) = path.get(at) else { return ty.to_string() };
        let dispatch = self.dispatch_at(path, at);
        let local = |word: &str| match dispatched_default(word, dispatch.as_deref()) {
            Some(default) => Some(default.to_string()),
            None => frame.scope.type_alias_at_point(frame.text, word).filter(|_| depth < 4).map(|t| self.type_at_point(path, at, &t, depth + 1)),
        };
        let ty = rename_identifiers_in(ty, local);
        let ty = tensors::accumulate_type(&ty).unwrap_or(ty);
        self.resolve_type(&ty)
    }

    /// The type of the value the launcher passes as `arg` (a variable), followed up the first
    /// call path through host templates' type parameters: what a kernel template's type
    /// parameter is deduced as.
    pub(super) fn argument_type(&self, arg: &str) -> Option<String> {
        self.followed_argument_type(arg).ok()
    }

    /// The type [`argument_type`](Self::argument_type) leaves open where the first call path
    /// ends at a host template no call instantiates: the first instantiation the files name
    /// (`template void launch<float>(…);`, a binding's `&ds_gelu<float>`), the code's default
    /// among those it makes.
    pub(super) fn first_instantiated_type(&self, arg: &str) -> Option<String> {
        let (function, index) = self.followed_argument_type(arg).err()??;
        let named = self.documents.iter().filter_map(|doc| Some((doc.text(), doc.tree()?)));
        let args = named.flat_map(|(text, tree)| instantiations_named(text, tree.root_node())).find(|(name, _)| *name == bare_name(&function))?.1;
        Some(self.resolve_type(args.get(index)?))
    }

    /// The type of `arg` followed up the first call path, or where it ends open: the function
    /// that takes the type as its template parameter at that index, with no call to say it.
    fn followed_argument_type(&self, arg: &str) -> Result<String, Option<(String, usize)>> {
        let path = self.paths.first().ok_or(None)?;
        self.type_from_frame(path, 0, arg, 0)
    }

    /// The type of the value `arg` (a variable or a pointer made from a tensor or a cast) in
    /// frame `at` of `path`: declared there, else a host template's type parameter deduced up
    /// the path.
    fn type_from_frame(&self, path: &[Frame], at: usize, arg: &str, depth: usize) -> Result<String, Option<(String, usize)>> {
        let frame = path.get(at).ok_or(None)?;
        let current = offered_pointer(arg.trim());
        let declared = frame.scope.body.map(|b| local_types(frame.text, b)).unwrap_or_default().into_iter().find(|(n, _)| *n == current).map(|(_, t)| t);
        let (ty, param_index) = match declared.or_else(|| cast_pointee(current)) {
            Some(ty) => (ty, None),
            None => {
                let index = frame.params.iter().position(|p| p == current).ok_or(None)?;
                (frame.param_types.get(index).ok_or(None)?.clone(), Some(index))
            }
        };
        let ty = ty.trim_start_matches("const ").trim().to_string();
        if !frame.template_params.contains(&ty) {
            return Ok(self.type_at_point(path, at, &ty, 0));
        }
        self.deduced_in_frame(path, at, &ty, param_index, depth)
    }

    /// The host template parameter `ty` of frame `at`, as its call gives it: explicit
    /// (`run<float>(…)`, or the caller's object's, `PricingEngine<Real> pricer`), else deduced
    /// from the caller's argument for a parameter declared with it: `first` (the one the value
    /// came through) first, then the others in order (`T* grad_input` passed
    /// `grad_input.data_ptr<scalar_t_in>()`, where `x.data_ptr<T>()` tells nothing).
    fn deduced_in_frame(&self, path: &[Frame], at: usize, ty: &str, first: Option<usize>, depth: usize) -> Result<String, Option<(String, usize)>> {
        let frame = path.get(at).ok_or(None)?;
        let tp_index = frame.template_params.iter().position(|t| t == ty).ok_or(None)?;
        let Some(call) = frame.called_by else { return Err(Some((frame_name(frame), tp_index))) };
        if let Some((explicit, named_in)) = template_argument_passed(path, at, tp_index) {
            return Ok(self.resolve_type(&self.type_at(path, named_in, &explicit)));
        }
        if depth > 8 {
            return Err(None);
        }
        let declared_with = frame.param_types.iter().enumerate().filter(|(i, t)| Some(*i) != first && t.trim_start_matches("const ").trim() == ty).map(|(i, _)| i);
        let args = call.args();
        let mut open = None;
        for index in first.into_iter().chain(declared_with) {
            match args.get(index).map(|arg| self.type_from_frame(path, at + 1, arg, depth + 1)) {
                Some(Ok(deduced)) => return Ok(deduced),
                Some(Err(end)) => open = open.or(end),
                None => {}
            }
        }
        Err(open)
    }

    /// The conditions the host code asserts along the first call path, in the launcher's
    /// names: `assert(block_size % 32 == 0)`; and those of the `if`s the launch is under in the
    /// launcher (`if (arrayLength <= SHARED_SIZE_LIMIT)`), which hold whenever it runs.
    pub(super) fn assertions(&self) -> Vec<String> {
        let Some(path) = self.paths.first() else { return Vec::new() };
        let mut out: Vec<String> = self
            .branch_conditions
            .iter()
            .filter(|(condition, _)| !identifiers_in(condition).any(|w| self.loop_variables.contains(w)))
            .filter_map(|(condition, holds)| bound_under(strip_outer_parens(condition), *holds))
            .map(|condition| self.in_spec_names(&self.to_launcher_names(path, 0, &strip_casts_everywhere(&condition))))
            .collect();
        for (at, condition) in asserted_conditions(path) {
            out.push(self.in_spec_names(&self.to_launcher_names(path, at, &strip_casts_everywhere(&condition))));
        }
        out
    }

    /// The cases of the `switch`es the first call path runs through above the launcher, in the
    /// spec's names: `switch (d) { case 64: launch<64>(q, o); … }` with `d = q.size(3)` gives
    /// `q_size_3 == 64`, which the instantiation it picks was compiled for.
    pub(super) fn dispatched_cases(&self) -> Vec<String> {
        let Some(path) = self.paths.first() else { return Vec::new() };
        let mut out = Vec::new();
        for (at, frame) in path.iter().enumerate() {
            let Some(call) = frame.called_by else { continue };
            let cases = std::iter::successors(call.node.parent(), |n| n.parent()).take_while(|n| n.kind() != "function_definition").filter(|n| n.kind() == "case_statement");
            for case in cases {
                if let Some(CaseTaken::When(condition)) = case_condition(call.text, case, &|_| None) {
                    let condition = self.in_spec_names(&self.to_launcher_names(path, at + 1, &strip_casts_everywhere(&condition)));
                    // `(q_size_3) == 64`, the subject renamed as a whole, reads `q_size_3 == 64`.
                    out.push(match condition.split_once(" == ") {
                        Some((subject, label)) if !label.contains("||") => format!("{} == {}", strip_outer_parens(subject.trim()), label.trim()),
                        _ => condition,
                    });
                }
            }
        }
        out
    }

    /// A floating-point scalar's value along the first call path: a literal at the launch, or
    /// an expression of the host code (`1.0f / sqrtf(HS)`, a default argument).
    pub(super) fn float_value(&self, text: &str) -> Option<String> {
        let path = self.paths.first()?;
        // `Real(0.5)` in a host template over `Real`, or where a dispatch's `case` says
        // `using real_t = float;`: a cast to the type it is instantiated with.
        let frame = &path[0];
        let local_types = names_called_in(text).into_iter().filter(|name| frame.scope.type_alias_at_point(frame.text, name).is_some()).map(str::to_string).collect::<Vec<_>>();
        let types = frame.template_params.iter().chain(&local_types);
        let text = types.fold(without_float_casts(text), |text, ty| replace_calls(&text, ty, |inner| Some(format!("({inner})"))));
        let value = self.eval_float_text(path, 0, &text, 0)?;
        // `1e20` written out is an integer no spec expression holds (beyond 64 bits).
        Some(match value != 0.0 && !(1e-4..1e15).contains(&value.abs()) {
            true => format!("{value:e}"),
            false => format!("{value}"),
        })
    }

    fn eval_float_text(&self, path: &[Frame], at: usize, text: &str, depth: usize) -> Option<f64> {
        if depth > 16 {
            return None;
        }
        // A member given a value before the point (`p.weights[0] = 0.25f;`), which is no plain
        // name for `eval_float_name` to read.
        let member = Some(text.trim()).filter(|t| t.contains('.') && !t.contains(' ') && t.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_'));
        if let Some(value) = member.and_then(|m| path.get(at)?.scope.given_before_point(m)) {
            return self.eval_float_text(path, at, value, depth + 1);
        }
        let text = tensors::replace_size_reads(text, |tensor, read| self.eval_size_read(path, at, tensor, read, depth + 1).map(|v| v.to_string()));
        eval_float(&constant_bitwise_folded(&text), &|name| self.eval_float_name(path, at, name, depth + 1))
    }

    fn eval_float_name(&self, path: &[Frame], at: usize, name: &str, depth: usize) -> Option<f64> {
        let frame = path.get(at)?;
        if let Some(text) = frame.scope.value_text(name) {
            return self.eval_float_text(path, at, text, depth);
        }
        if let Some(index) = frame.params.iter().position(|p| p == name) {
            return self.eval_float_text(path, at + 1, &frame.argument(index)?, depth);
        }
        // A member of a struct the caller passes (`params.shift` of `launch(params)`): the same
        // member of the caller's struct.
        if let Some((object, member)) = name.split_once('.') {
            if let Some(index) = frame.params.iter().position(|p| p == object) {
                return self.eval_float_text(path, at + 1, &format!("{}.{member}", frame.passed_object(index)?), depth);
            }
        }
        if let Some(init) = self.globals.get(name) {
            return self.eval_float_text(path, at, init, depth);
        }
        self.eval_name(path, at, name, depth).map(|v| v as f64)
    }

    /// The element count of the buffer passed as `arg`, from the `cudaMalloc` that allocates
    /// it, in the launcher's names: on the first call path that allocates it (a path through a
    /// buffer the program maps from OpenGL allocates none), the paths the command line asks for
    /// last.
    pub(super) fn buffer_length(&self, arg: &str, element: &str) -> Option<String> {
        if let Some(length) = self.tensor_data_length(arg, element) {
            return Some(length);
        }
        self.paths.iter().chain(&self.asked_paths).find_map(|path| self.buffer_length_on(path, arg, element, TensorSizes::Held))
    }

    /// The length of the data of a tensor a caller passes down for `arg`, with a size of its
    /// own for each dimension no name of the launcher holds (`weight_size_0` of a bias the
    /// kernel indexes by a channel count it is given apart), whose value the tensor's maker
    /// gives: after the allocation and the kernel's own bounds, where they say nothing.
    pub(super) fn tensor_length_of_own_sizes(&self, arg: &str, element: &str) -> Option<String> {
        self.paths.first().and_then(|path| self.buffer_length_on(path, arg, element, TensorSizes::Named))
    }

    fn buffer_length_on(&self, path: &[Frame], arg: &str, element: &str, sizes: TensorSizes) -> Option<String> {
        self.length_from(path, 0, without_pointer_cast(arg), Vec::new(), element, 0, sizes)
    }

    /// The length of the buffer frame `start` of `path` calls `name`, `offsets` elements into
    /// it (`q = qkv + 0 * B * T * C` leaves `length(qkv) - offset`).
    fn length_from(&self, path: &[Frame], start: usize, name: &str, mut offsets: Vec<String>, element: &str, depth: usize, sizes: TensorSizes) -> Option<String> {
        let mut name = name.to_string();
        for (at, frame) in path.iter().enumerate().skip(start) {
            if let Some((base, offset)) = element_address(&name) {
                offsets.push(self.to_launcher_names(path, at, &offset));
                name = base;
            }
            for _ in 0..4 {
                let Some((base, offset)) = frame.scope.body.and_then(|b| pointer_offset(frame.text, b, &name)) else { break };
                offsets.push(self.to_launcher_names(path, at, &offset));
                name = base;
            }
            if let Some(member) = self.member_behind_getter(&name) {
                name = member;
            }
            // A struct's member the frame assigns before the launch (`params.in = in;`, as a
            // struct passed by value is filled): the buffer assigned.
            if let Some(value) = frame.scope.given_before_point(&name).filter(|_| name.contains('.') && offsets.is_empty()) {
                if let Some((tensor, _)) = tensors::data_of(value) {
                    return self.passed_tensor_length(path, at, tensor, sizes);
                }
                name = without_pointer_cast(value.trim()).to_string();
                // Another member pointed into (`input.g_b = input.g_b_raw + 1;` in an init function).
                if let Some((base, offset)) = member_plus_offset(&name) {
                    offsets.push(self.to_launcher_names(path, at, &offset));
                    name = base;
                }
            }
            let dotted = name.replace("->", ".");
            let member = dotted.split_once('.').filter(|(object, member)| is_identifier(object) && is_identifier(member));
            let allocated = frame.scope.body.and_then(|b| malloc_bytes(frame.text, b, &name).or_else(|| element_bytes(frame.text, b, &name))).or_else(|| self.allocated_by_helper(frame, &name));
            // A member of the method's own object (`m_A` in `Harness::evaluate`), which its constructor allocates.
            let allocated = allocated.or_else(|| (is_identifier(&name) && !frame.params.contains(&name)).then(|| self.allocated_by_constructor(frame, &name)).flatten());
            let allocated_for_member = |(object, member): (&str, &str)| self.allocated_by_callee(frame, object, member).or_else(|| self.allocated_by_method(frame, object, member));
            if let Some(bytes) = allocated.or_else(|| member.and_then(allocated_for_member)) {
                let length = self.elements_in(&bytes, element, &frame.scope, &|ty| self.type_at(path, at, ty))?;
                let mut length = self.to_launcher_names(path, at, &length);
                let is_zero = |offset: &str| split_top_level(offset, '*').iter().any(|f| eval_constant(f, &|_| None) == Some(0));
                for offset in offsets.iter().filter(|o| !is_zero(o)) {
                    length = format!("{length} - ({offset})");
                }
                return Some(self.in_spec_names(&length));
            }
            // A member of an object the caller passes: the same member of the caller's object.
            if let Some((object, member)) = member {
                if let Some(index) = frame.params.iter().position(|p| p == object) {
                    name = format!("{}.{member}", frame.passed_object(index)?);
                    continue;
                }
            }
            match frame.params.iter().position(|p| *p == name) {
                Some(index) => {
                    let passed = frame.argument(index)?;
                    if let Some((tensor, _)) = tensors::data_of(&passed).filter(|_| offsets.is_empty()) {
                        return self.passed_tensor_length(path, at + 1, tensor, sizes);
                    }
                    name = without_pointer_cast(&passed).to_string();
                }
                None if frame.scope.body.is_some_and(|b| local_types(frame.text, b).iter().any(|(n, _)| *n == name)) => {
                    return self.local_pointer_length(path, at, &name, offsets, element, depth, sizes);
                }
                // A file-scope buffer: the callers see the same one.
                None => continue,
            }
        }
        // In the launcher's names: a size the callers pass down (`launch(…, image_width)`) is the
        // parameter it becomes there, as in the grid.
        let length = offsets.is_empty().then(|| self.global_buffer_length(&name, element)).flatten()?;
        Some(self.in_spec_names(&self.to_launcher_names(path, path.len() - 1, &length)))
    }

    /// The bytes that a function `frame` calls with `object` allocates for its `member`, in the
    /// frame's names: a struct of device buffers set up by an init function
    /// (`initInputData(input, n)` doing `cudaMalloc(&(data.g_a), sizeof(float) * size)`).
    fn allocated_by_callee(&self, frame: &Frame, object: &str, member: &str) -> Option<String> {
        self.allocated_through_call(frame, &|arg| arg.trim_start_matches('&').trim() == object, &|param| Some(format!("{}.{member}", param.name)))
    }

    /// The bytes that a function of the workspace, called with `name` for a parameter it takes
    /// by reference, allocates for it, in the frame's names: `alloc_bytes(h_array, ds *
    /// sizeof(int))` of `void alloc_bytes(T &ptr, size_t num_bytes) { cudaMallocManaged(&ptr,
    /// num_bytes); }`.
    fn allocated_by_helper(&self, frame: &Frame, name: &str) -> Option<String> {
        self.allocated_through_call(frame, &|arg| arg == name, &|param| (param.out == Some(Out::Reference)).then(|| param.name.clone()))
    }

    /// The bytes that a function of the workspace allocates for what `pointer` names of the
    /// parameter it takes an argument that `passes` for, with its parameters the call's
    /// arguments: the first call of the frame before its point that has one.
    fn allocated_through_call(&self, frame: &Frame, passes: &dyn Fn(&str) -> bool, pointer: &dyn Fn(&Parameter) -> Option<String>) -> Option<String> {
        let body = frame.scope.body?;
        descendants(body).filter(|n| n.kind() == "call_expression" && n.start_byte() < frame.scope.point).find_map(|call| {
            let args = call_args(frame.text, call.child_by_field_name("arguments")?);
            let index = args.iter().position(|a| passes(a.trim()))?;
            let (text, definition) = self.graph.definition_called(frame.text, call)?;
            let params = parameters(text, definition);
            let pointer = pointer(params.get(index)?)?;
            let allocation = allocations(text, definition).find(|a| a.pointer.replace("->", ".") == pointer)?;
            let bytes = members_given_before(text, definition, &allocation.bytes, allocation.at);
            let scope = Scope::of(text, definition, allocation.at, &self.graph);
            Some(self.in_callers_names(&scope, &params, &args, &bytes))
        })
    }

    /// `value`, an expression of a called function at its `scope`'s point, in the caller's
    /// names: the function's locals written out as they are given there, its parameters as the
    /// call's `args`, the helpers and function-like macros it calls inlined.
    fn in_callers_names(&self, scope: &Scope, params: &[Parameter], args: &[String], value: &str) -> String {
        const ROUNDS: usize = 4;
        let is_param = |word: &str| params.iter().any(|p| p.name == word);
        let mut value = value.to_string();
        for _ in 0..ROUNDS {
            value = rename_identifiers_in(&value, |word| scope.value_given(word).filter(|_| !is_param(word)).map(|(v, _)| format!("({v})")));
        }
        let passed = |word: &str| params.iter().position(|p| p.name == word).and_then(|j| args.get(j)).map(|a| format!("({})", a.trim()));
        self.functions_inlined(&rename_identifiers_in(&value, passed))
    }

    /// What a function of the workspace that the frame calls with `object` (or its address)
    /// before its point sets that object's `member` to, in the frame's names, the function's
    /// locals written out: `(rowCount)` for `initializeSolver(&solverState, rowCount, …)`, which
    /// does `solverState->rowCount = rowCount;`. The last such call counts.
    fn member_set_by_callee(&self, frame: &Frame, object: &str, member: &str) -> Option<String> {
        let body = frame.scope.body?;
        let calls: Vec<Node> = descendants(body).filter(|n| n.kind() == "call_expression" && n.start_byte() < frame.scope.point).collect();
        calls.into_iter().rev().find_map(|call| {
            let args = call_args(frame.text, call.child_by_field_name("arguments")?);
            let index = args.iter().position(|a| a.trim().trim_start_matches('&').trim() == object)?;
            let (text, definition) = self.graph.definition_called(frame.text, call)?;
            let params = parameters(text, definition);
            let param = &params.get(index)?.name;
            let scope = Scope::of(text, definition, definition.child_by_field_name("body")?.end_byte() - 1, &self.graph);
            let set = [format!("{param}->{member}"), format!("{param}.{member}")].iter().find_map(|field| scope.value_given(field).map(|(v, _)| v.to_string()));
            Some(self.in_callers_names(&scope, &params, &args, &set?))
        })
    }

    /// The bytes that a method called on `object` before the frame's point allocates for its
    /// `member`, in the frame's names: a buffer class (`X.init(size); X.cuda();` with
    /// `cudaMalloc(&d_ptr_, size_ * sizeof(T))`). The members the count reads are what the
    /// constructor and the methods called before set them to from their arguments
    /// (`size_ = size;`) or work out from those (`elems_ = rows_ * cols_;`), the class's type
    /// parameters what the object's type gives (`CBuffer<half>`). The object is a local, or a
    /// member that the constructor of the frame's class makes (`m_a = std::make_shared<Matrix>(…)`).
    fn allocated_by_method(&self, frame: &Frame, object: &str, member: &str) -> Option<String> {
        let body = frame.scope.body?;
        let (ty, constructed_with) = match local_types(frame.text, body).into_iter().find(|(name, _)| name == object) {
            Some((_, ty)) => (ty, objects::construction_args(frame.text, body, object)),
            None => self.member_object_made(frame, object).map(|(ty, args)| (ty, Some(args)))?,
        };
        let class = class_of(&ty);
        let method_of_class = |name: &str| self.graph.definition_in_class(name, class);
        let calls_on_object = descendants(body).filter(|n| n.kind() == "call_expression" && n.start_byte() < frame.scope.point).filter_map(|call| {
            let function = call.child_by_field_name("function").filter(|f| f.kind() == "field_expression")?;
            (frame.text[function.child_by_field_name("argument")?.byte_range()].trim() == object).then_some(())?;
            let (text, definition) = method_of_class(&frame.text[function.child_by_field_name("field")?.byte_range()])?;
            Some((call_args(frame.text, call.child_by_field_name("arguments")?), text, definition))
        });
        let constructed = constructed_with.and_then(|args| Some((args, method_of_class(class)?)));
        let is_constructed = constructed.is_some();
        let methods: Vec<(Vec<String>, &str, Node)> = constructed.map(|(args, (text, definition))| (args, text, definition)).into_iter().chain(calls_on_object).collect();
        let (bytes, type_params) = methods.iter().find_map(|&(_, text, definition)| {
            let allocation = allocations(text, definition).find(|a| a.pointer.trim_start_matches("this->") == member)?;
            Some((allocation.bytes, template_parameters(text, definition).into_iter().map(|(name, _)| name).collect::<Vec<String>>()))
        })?;
        // The last value each member is given before the point, from the argument it takes.
        let mut members: HashMap<String, String> = HashMap::new();
        for (args, text, definition) in &methods {
            for (set, index) in objects::members_set(text, *definition) {
                if let Some(arg) = args.get(index) {
                    members.insert(set, format!("({})", arg.trim()));
                }
            }
        }
        // Then what the constructor works out from those members (`m_elems = m_rows * m_cols`).
        if let Some((_, text, constructor)) = methods.first().filter(|_| is_constructed) {
            for (set, value) in objects::members_computed(text, *constructor) {
                if identifiers_in(&value).all(|word| members.contains_key(word)) {
                    let value = rename_identifiers_in(&value, |word| members.get(word).cloned());
                    members.insert(set, format!("({value})"));
                }
            }
        }
        let type_args = objects::type_template_args(&ty);
        Some(rename_identifiers_in(&bytes, |word| members.get(word).cloned().or_else(|| type_params.iter().position(|p| p == word).and_then(|i| type_args.get(i).cloned()))))
    }

    /// The type a member object of the frame's class is made as and the arguments it is made
    /// with, in the names of the members the frame's method reads: `Matrix`, `[m_m, m_k]` for
    /// `m_a = std::make_shared<Matrix>(m, k)` in a constructor that sets `m_m(m), m_k(k)`.
    fn member_object_made(&self, frame: &Frame, object: &str) -> Option<(String, Vec<String>)> {
        let class = frame.class()?;
        let (text, constructor) = self.graph.definition_in_class(class, class)?;
        let (ty, args) = objects::member_made(text, constructor, object)?;
        let args = args.iter().map(|arg| in_member_names(text, constructor, arg)).collect::<Option<Vec<String>>>()?;
        Some((ty, args))
    }

    /// The bytes the constructor of the frame's class allocates for the member `member`, in
    /// the names of the members the frame's method reads: `m_M * m_K * sizeof(float)` for
    /// `cudaMalloc(&m_A, M * K * sizeof(float))` in a constructor that sets `m_M(M), m_K(K)`.
    fn allocated_by_constructor(&self, frame: &Frame, member: &str) -> Option<String> {
        let class = frame.class()?;
        let (text, constructor) = self.graph.definition_in_class(class, class)?;
        let allocation = allocations(text, constructor).find(|a| a.pointer.trim_start_matches("this->") == member)?;
        in_member_names(text, constructor, &allocation.bytes)
    }

    /// The member a getter called on an object returns, as that object's member:
    /// `m_a.m_device` for `m_a->device()` where `half *device() const { return m_device; }`.
    fn member_behind_getter(&self, call: &str) -> Option<String> {
        let called = call.trim().strip_suffix("()")?;
        let (object, method) = called.rsplit_once("->").or_else(|| called.rsplit_once('.'))?;
        (is_identifier(object.trim()) && is_identifier(method.trim())).then_some(())?;
        let (text, definition) = self.graph.definition(method.trim())?;
        let body = definition.child_by_field_name("body")?;
        let mut cursor = body.walk();
        let statements: Vec<Node> = body.named_children(&mut cursor).filter(|n| n.kind() != "comment").collect();
        let [statement] = statements.as_slice() else { return None };
        (statement.kind() == "return_statement").then_some(())?;
        let returned = text[statement.named_child(0)?.byte_range()].trim().trim_start_matches("this->");
        is_identifier(returned).then(|| format!("{}.{returned}", object.trim()))
    }

    /// The length of a local pointer of frame `at` that takes another buffer (`okey = d_BufKey`)
    /// or one of two (`(pass & 1) ? d_Buf : d_Dst`, or the same set in the branches of an
    /// `if`, ping-pong buffers): the kernel works on either, so on no more than the shorter.
    fn local_pointer_length(&self, path: &[Frame], at: usize, name: &str, offsets: Vec<String>, element: &str, depth: usize, sizes: TensorSizes) -> Option<String> {
        const MAX_LOCAL_POINTERS: usize = 4;
        if depth >= MAX_LOCAL_POINTERS {
            return None;
        }
        let value = strip_outer_parens(path[at].scope.value_text(name)?.trim()).to_string();
        let buffer = |text: &str| Some(without_pointer_cast(strip_outer_parens(text.trim())).to_string()).filter(|b| is_identifier(b) && b != name);
        let length_of = |buffer: String| self.length_from(path, at, &buffer, offsets.clone(), element, depth + 1, sizes);
        let Some((question, colon)) = callee::top_level_conditional(&value) else {
            return length_of(buffer(&value)?);
        };
        // `lse.has_value() ? lse.value().data_ptr<float>() : nullptr`: an optional tensor's data,
        // which the caller gives (where it gives none, the tensor has no length to follow).
        if strip_all_outer_parens(&value[..question]).ends_with(".has_value()") {
            let (tensor, _) = tensors::data_of(strip_all_outer_parens(&value[question + 1..colon]))?;
            return self.passed_tensor_length(path, at, tensor, sizes);
        }
        let first = length_of(buffer(&value[question + 1..colon])?)?;
        let second = length_of(buffer(&value[colon + 1..])?)?;
        Some(if first == second { first } else { format!("min({first}, {second})") })
    }

    /// The element count of `bytes` of `element`s; a byte count held in a variable, a
    /// file-scope constant (`DATA_SZ = N * sizeof(float)`) or a struct field is followed once.
    /// `instantiated` names the types of the allocating function's template parameters.
    fn elements_in(&self, bytes: &str, element: &str, scope: &Scope, instantiated: &dyn Fn(&str) -> String) -> Option<String> {
        let bytes = match self.globals.get(bytes.trim()) {
            Some(global) if scope.value_text(bytes.trim()).is_none() => global.as_str(),
            _ => bytes,
        };
        // A byte count kept in a struct field (`arrays->bytes`) the program sets once.
        let bytes = replace_members(bytes, |_, member| self.fields.get(member).map(|v| format!("({v})")));
        let stripped = strip_element_size(&bytes, &|ty| self.elements_per_allocated(&instantiated(ty), element), scope);
        // A count of bytes with no `sizeof` is a count of byte-sized elements (`cudaMalloc(&flag, 1)`).
        let bytes_are_elements = !bytes.contains("sizeof") && self.size_of(&instantiated(element)) == Some(1);
        stripped.or_else(|| bytes_are_elements.then(|| strip_outer_parens(bytes.trim()).to_string()))
    }

    /// The type frame `at` calls `ty`: a host template's type parameter (`T` of `runTest<T>`)
    /// is what its callers instantiate it with (`runTest<int>`), read through the aliases in
    /// sight where the frame that names it calls (a dispatch's `using scalar_t_out = float;`).
    fn type_at(&self, path: &[Frame], at: usize, ty: &str) -> String {
        let mut current = ty.trim().to_string();
        let mut named_in = at;
        while let Some(frame) = path.get(named_in) {
            let Some(index) = frame.template_params.iter().position(|p| *p == current) else { break };
            match template_argument_passed(path, named_in, index) {
                Some(passed) => (current, named_in) = passed,
                None => match self.deduced_in_frame(path, named_in, &current, None, 0) {
                    Ok(ty) => return ty,
                    Err(_) => break,
                },
            }
        }
        // Read where the frame that names it calls: a dispatch's case declares
        // `using scalar_t_out = float;` before the call.
        self.type_at_point(path, named_in, &current, 0)
    }

    /// The length of a file-scope buffer, allocated anywhere in the files with a byte count of
    /// constants, directly or through the allocating function's locals: a count that names
    /// anything else of that function means nothing at the launch.
    fn global_buffer_length(&self, name: &str, element: &str) -> Option<String> {
        let bytes = self.allocations.get(name)?;
        let constant = |w: &str| self.defines.contains_key(w) || self.globals.contains_key(w) || expr::Function::from_name(w).is_some();
        let all_constant = |length: &str| identifiers_in(length).all(constant);
        let length = self.elements_in(bytes, element, &Scope::default(), &|ty| ty.to_string()).filter(|l| all_constant(l));
        let length = length.or_else(|| self.allocated_from_locals(name, bytes, element))?;
        all_constant(&length).then_some(length)
    }

    /// The element count of a file-scope buffer that an init function allocates from its own
    /// locals (`unsigned count = width * height; cudaMalloc(&pixels, count * sizeof(uint));`),
    /// the locals replaced by their values there.
    fn allocated_from_locals(&self, name: &str, bytes: &str, element: &str) -> Option<String> {
        const ROUNDS: usize = 4;
        let allocates = |text: &str, definition: &Node| definition.child_by_field_name("body").is_some_and(|b| malloc_bytes(text, b, name).as_deref() == Some(bytes));
        let &(text, function) = self.graph.definitions.values().flatten().find(|(text, definition)| allocates(text, definition))?;
        // The point is inside the body, where its locals are in sight.
        let last = function.child_by_field_name("body")?.end_byte() - 1;
        let scope = Scope::of(text, function, last, &self.graph);
        let mut length = self.elements_in(bytes, element, &scope, &|ty| ty.to_string())?;
        for _ in 0..ROUNDS {
            length = rename_identifiers_in(&length, |word| scope.value_text(word).filter(|v| *v != UNKNOWN).map(|v| format!("({})", strip_casts_everywhere(v))));
        }
        Some(length)
    }

    /// Rewrites an expression in frame `at`'s names into the launcher's: locals are replaced by
    /// their initial values, names passed down as arguments by the parameters they become.
    fn to_launcher_names(&self, path: &[Frame], at: usize, text: &str) -> String {
        (1..=at).rev().fold(text.to_string(), |text, level| self.to_callee_names(path, level, &text))
    }

    /// `text` of frame `level` in the names of the function it calls on `path`, frame
    /// `level - 1`: see [`Self::to_launcher_names`].
    fn to_callee_names(&self, path: &[Frame], level: usize, text: &str) -> String {
        let frame = &path[level];
        let below = &path[level - 1];
        let args = below.called_with().unwrap_or_default();
        // Only the arguments of a construction in this frame are in its names.
        let members = self.members_constructed_from(path, level - 1).filter(|(made_at, _)| *made_at == level).map(|(_, members)| members).unwrap_or_default();
        let text = with_arguments_named(text, &args, &below.params);
        rename_identifiers_in(&text, |word| {
            // A parameter the callee steps in a loop (its name left blank) is not the argument
            // where the callee launches: the argument is said by its own value.
            if let Some(param) = args.iter().position(|a| a.trim() == word).and_then(|j| below.params.get(j)).filter(|p| !p.is_empty()) {
                return Some(param.clone());
            }
            if let Some((_, member)) = members.iter().find(|(arg, _)| arg == word) {
                return Some(member.clone());
            }
            let init = frame.scope.value_text(word)?;
            let init = strip_casts_everywhere(init);
            // An element of the caller's constant list (`max_size = SIZE[SIZE.size() - 1]`),
            // which the spec cannot index, is its value.
            if let Some(value) = list_element(frame, &init).and_then(|element| self.eval_text(path, level, &element, 0)) {
                return Some(value.to_string());
            }
            let renamed = rename_identifiers_in(&init, |w| args.iter().position(|a| a.trim() == w).and_then(|j| below.params.get(j).filter(|p| !p.is_empty()).cloned()));
            Some(format!("({renamed})"))
        })
    }
}

/// The condition of each `assert(…)` in the frames of `path`, with its frame.
fn asserted_conditions(path: &[Frame]) -> Vec<(usize, String)> {
    let mut conditions = Vec::new();
    for (at, frame) in path.iter().enumerate() {
        let Some(body) = frame.scope.body else { continue };
        for node in descendants(body).filter(|n| n.kind() == "call_expression") {
            let is_assert = node.child_by_field_name("function").is_some_and(|f| &frame.text[f.byte_range()] == "assert");
            let condition = node.child_by_field_name("arguments").map(|a| call_args(frame.text, a)).and_then(|a| a.into_iter().next());
            if let Some(condition) = condition.filter(|_| is_assert) {
                conditions.push((at, condition));
            }
        }
    }
    conditions
}

/// `B * T * C * 2` where the callee was passed `B * T * C` as `N` → `N * 2`: the arguments that
/// are expressions, replaced by the parameters they become (whitespace aside).
fn with_arguments_named(text: &str, args: &[String], params: &[String]) -> String {
    let mut out = text.to_string();
    for (arg, param) in args.iter().zip(params) {
        let arg = strip_casts_everywhere(arg);
        let arg = strip_outer_parens(&arg);
        let is_expression = arg.contains(['+', '-', '*', '/']) || tensors::size_read(arg).is_some();
        if is_identifier(arg) || !is_expression || param.is_empty() {
            continue;
        }
        out = replace_whole(&out, arg, param);
    }
    out
}

/// Replaces `what` in `text`, whitespace aside, where it is a whole operand: not part of a
/// longer name, and not the tail of a division (`a * b` inside `x / a * b` is not `a * b`).
pub(super) fn replace_whole(text: &str, what: &str, with: &str) -> String {
    let is_word = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '.';
    let wanted: Vec<char> = what.chars().filter(|c| !c.is_whitespace()).collect();
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        // Match `wanted` from chars[i], skipping whitespace in the text.
        let (mut j, mut k) = (i, 0);
        while k < wanted.len() && j < chars.len() {
            if chars[j].1.is_whitespace() {
                j += 1;
            } else if chars[j].1 == wanted[k] {
                j += 1;
                k += 1;
            } else {
                break;
            }
        }
        let before = text[..chars[i].0].trim_end().chars().last();
        let after = chars.get(j).map(|c| c.1);
        let bounded = !before.is_some_and(|c| is_word(c) || c == '/') && !after.is_some_and(is_word);
        if k == wanted.len() && bounded && !chars[i].1.is_whitespace() {
            out.push_str(with);
            i = j;
        } else {
            out.push(chars[i].1);
            i += 1;
        }
    }
    out
}

/// What the spec writes for a device property the host code reads (a `cudaDeviceProp` field,
/// `maxGridSize[1]` with its index, or a `cudaDevAttr…`): a device size where GPUs differ, the
/// number itself where every GPU CUDA 13 supports (compute capability 7.5 on) has the same.
fn device_property(field: &str) -> Option<&'static str> {
    match field {
        "multiProcessorCount" | "cudaDevAttrMultiProcessorCount" => Some("sm_count"),
        "maxThreadsPerMultiProcessor" | "cudaDevAttrMaxThreadsPerMultiProcessor" => Some("threads_per_sm"),
        "sharedMemPerBlockOptin" | "cudaDevAttrMaxSharedMemoryPerBlockOptin" => Some("shared_bytes_per_block_optin"),
        "clockRate" | "cudaDevAttrClockRate" => Some("clock_khz"),
        "l2CacheSize" | "cudaDevAttrL2CacheSize" => Some("l2_bytes"),
        "maxThreadsPerBlock" | "cudaDevAttrMaxThreadsPerBlock" => Some("1024"),
        "warpSize" | "cudaDevAttrWarpSize" => Some("32"),
        "sharedMemPerBlock" | "cudaDevAttrMaxSharedMemoryPerBlock" => Some("49152"),
        "maxGridSize[0]" | "cudaDevAttrMaxGridDimX" => Some("2147483647"),
        "maxGridSize[1]" | "maxGridSize[2]" | "cudaDevAttrMaxGridDimY" | "cudaDevAttrMaxGridDimZ" => Some("65535"),
        "maxThreadsDim[0]" | "maxThreadsDim[1]" | "cudaDevAttrMaxBlockDimX" | "cudaDevAttrMaxBlockDimY" => Some("1024"),
        "maxThreadsDim[2]" | "cudaDevAttrMaxBlockDimZ" => Some("64"),
        _ => None,
    }
}

/// The fields of PyTorch's properties of the current device
/// (`at::cuda::getCurrentDeviceProperties()->multiProcessorCount`) as [`device_property`]
/// writes them.
fn torch_device_properties_named(text: &str) -> String {
    const CALL: &str = "getCurrentDeviceProperties()";
    let mut out = text.to_string();
    let mut from = 0;
    while let Some(found) = out[from..].find(CALL).map(|i| from + i) {
        let mut start = out[..found].rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':')).map_or(0, |i| i + 1);
        let mut call_end = found + CALL.len();
        // A local the properties were kept in, written out as its value in parentheses
        // (`(at::cuda::getCurrentDeviceProperties())->warpSize`).
        if out[..start].ends_with('(') && out[call_end..].starts_with(")->") {
            start -= 1;
            call_end += 1;
        }
        let after = &out[call_end..];
        let member_len = after.strip_prefix("->").map(|m| m.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(m.len()));
        // An array field is read with its index (`->maxGridSize[1]`).
        let member_len = member_len.map(|len| match after[2 + len..].strip_prefix('[').and_then(|r| r.find(']')) {
            Some(close) if device_property(&after[2..2 + len + close + 2]).is_some() => len + close + 2,
            _ => len,
        });
        match member_len.and_then(|len| device_property(&after[2..2 + len]).map(|value| (value, call_end + 2 + len))) {
            Some((value, end)) => {
                out.replace_range(start..end, value);
                from = start + value.len();
            }
            None => from = call_end,
        }
    }
    out
}

/// The device properties in `text` that are an element of an array field
/// (`prop.maxGridSize[1]`, `p->maxThreadsDim[2]`) as [`device_property`] writes them.
fn device_arrays_named(text: &str) -> String {
    let mut out = text.to_string();
    for field in ["maxGridSize", "maxThreadsDim"] {
        let mut from = 0;
        while let Some(found) = out[from..].find(field).map(|i| from + i) {
            let object_end = out[..found].strip_suffix('.').or_else(|| out[..found].strip_suffix("->")).map(|o| o.trim_end().len());
            let object_start = object_end.map(|end| out[..end].rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).map_or(0, |i| i + 1));
            let rest = &out[found + field.len()..];
            let index = rest.strip_prefix('[').and_then(|r| r.split_once(']')).map(|(index, _)| index.trim());
            match (object_start.zip(object_end), index.and_then(|i| device_property(&format!("{field}[{i}]")))) {
                (Some((start, end)), Some(value)) if is_identifier(&out[start..end]) => {
                    let close = found + field.len() + rest.find(']').expect("an index was read") + 1;
                    out.replace_range(start..close, value);
                    from = start + value.len();
                }
                _ => from = found + field.len(),
            }
        }
    }
    out
}

/// `name = prop.multiProcessorCount;` and `cudaDeviceGetAttribute(&name, cudaDevAttrMultiProcessorCount, dev)`
/// anywhere in `text`: the variables that hold a device property, and nothing else (not
/// `blocks`, clamped with `if (blocks > prop.maxGridSize[0]) blocks = prop.maxGridSize[0];`).
fn device_variables_of(text: &str) -> Vec<(String, &'static str)> {
    let mut out = Vec::new();
    let mut assigned_otherwise = BTreeSet::new();
    for statement in text.split(';') {
        let statement = statement.trim();
        if let Some((target, value)) = statement.split_once('=').filter(|(_, value)| !value.starts_with('=')) {
            let target = target.split_whitespace().last().unwrap_or("");
            let value: String = value.replace("->", ".").split_whitespace().collect();
            let field = value.split_once('.').filter(|(object, field)| is_identifier(object) && is_identifier(field.split('[').next().unwrap_or(field))).map(|(_, field)| field);
            match field.and_then(device_property) {
                Some(name) if is_identifier(target) => out.push((target.to_string(), name)),
                // `int num_sms = 0;` before the property is read: a start, not another value.
                _ if is_identifier(target) && eval_constant(&value, &|_| None).is_none() => drop(assigned_otherwise.insert(target.to_string())),
                _ => {}
            }
        }
        if let Some(args) = statement.split_once("cudaDeviceGetAttribute(").map(|(_, a)| a) {
            let args = split_args(args.trim_end_matches(')'));
            if let (Some(target), Some(name)) = (args.first().and_then(|t| t.strip_prefix('&')), args.get(1).and_then(|a| device_property(a))) {
                out.push((target.trim().to_string(), name));
            }
        }
    }
    out.retain(|(name, _)| !assigned_otherwise.contains(name));
    out
}

/// Replaces `object.member` (not `a.b.c`, not numbers like `1.5`) where `resolve` gives a value.
fn replace_members(text: &str, resolve: impl Fn(&str, &str) -> Option<String>) -> String {
    let is_word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    // `object.member` and `object->member` alike.
    while let Some(dot) = rest.find(['.', '-']) {
        let access = if rest[dot..].starts_with("->") { 2 } else if rest[dot..].starts_with('.') { 1 } else { 0 };
        if access == 0 {
            out.push_str(&rest[..=dot]);
            rest = &rest[dot + 1..];
            continue;
        }
        let object_start = rest[..dot].rfind(|c: char| !is_word(c)).map_or(0, |i| i + 1);
        let object = &rest[object_start..dot];
        let member_end = rest[dot + access..].find(|c: char| !is_word(c)).map_or(rest.len(), |i| dot + access + i);
        let member = &rest[dot + access..member_end];
        let chained = rest[..object_start].ends_with('.') || rest[..object_start].ends_with("->") || rest[member_end..].starts_with(['.', '(']) || rest[member_end..].starts_with("->");
        match (is_identifier(object) && is_identifier(member) && !chained).then(|| resolve(object, member)).flatten() {
            Some(value) => {
                out.push_str(&rest[..object_start]);
                out.push_str(&value);
            }
            None => out.push_str(&rest[..member_end]),
        }
        rest = &rest[member_end..];
    }
    out.push_str(rest);
    out
}

/// Struct fields that the functions of `documents` assign, outside loops, only with values that
/// settle to one constant of the program where each is assigned (through the function's locals,
/// the `defines` and fields settled before): `hostArrays->numElements = NUM_ELEMENTS;`, then
/// `hostArrays->numBlocks = numBlocks;` with `numBlocks` computed from it, and a copy
/// `deviceRefArrays->numElements = hostArrays->numElements;`.
fn fields_set_once(documents: &[&Document], defines: &HashMap<String, i64>, graph: &CallGraph) -> HashMap<String, String> {
    let mut assignments: HashMap<String, Vec<(&str, Node, String, usize)>> = HashMap::new();
    for doc in documents {
        let Some(tree) = doc.tree() else { continue };
        let text = doc.text();
        for function in descendants(tree.root_node()).filter(|n| n.kind() == "function_definition") {
            let body = function.child_by_field_name("body");
            for node in body.into_iter().flat_map(descendants).filter(|n| n.kind() == "assignment_expression") {
                let Some(left) = node.child_by_field_name("left").filter(|l| l.kind() == "field_expression") else { continue };
                let Some(field) = left.child_by_field_name("field").map(|f| text[f.byte_range()].to_string()) else { continue };
                let plain = node.child_by_field_name("operator").is_some_and(|o| &text[o.byte_range()] == "=");
                // A step, or an assignment in a loop, makes the field no constant.
                let value = node.child_by_field_name("right").map(|r| text[r.byte_range()].to_string()).filter(|_| plain && !in_loop(&enclosing_in(node, body)));
                assignments.entry(field).or_default().push((text, function, value.unwrap_or_else(|| UNKNOWN.to_string()), node.start_byte()));
            }
        }
    }
    let mut fields: HashMap<String, String> = HashMap::new();
    // A field's value may read another's (`numBlocks` from `numElements`): a few rounds.
    for _ in 0..4 {
        let mut settled_any = false;
        for (field, given) in &assignments {
            if fields.contains_key(field) || given.iter().any(|(_, _, value, _)| value == UNKNOWN) {
                continue;
            }
            // A copy from another object's same field (`ref->n = host->n`) agrees by itself.
            let copy = |value: &str| value.rsplit_once("->").or_else(|| value.rsplit_once('.')).is_some_and(|(object, member)| is_identifier(object.trim()) && member.trim() == field);
            let constant = |expr: &str| eval_constant(expr, &|name| defines.get(name).copied());
            // A value that is a number as written needs no reading of its function (each
            // reading walks it): the first that is not stops the field.
            let mut expanded = given.iter().filter(|(_, _, value, _)| !copy(value)).map(|(text, function, value, at)| match constant(value) {
                Some(_) => value.clone(),
                None => expanded_in(&Frame::of(text, *function, *at, graph).scope, value, &fields, 0),
            });
            let Some(first) = expanded.next() else { continue };
            let Some(value) = constant(&first) else { continue };
            if expanded.all(|e| constant(&e) == Some(value)) {
                fields.insert(field.clone(), first);
                settled_any = true;
            }
        }
        if !settled_any {
            break;
        }
    }
    fields
}

/// `expr` with the locals of `scope` replaced by their values and the settled `fields` by
/// theirs, a few levels deep: what it is in the program's macros and numbers.
fn expanded_in(scope: &Scope, expr: &str, fields: &HashMap<String, String>, depth: usize) -> String {
    let expr = replace_members(&strip_casts_everywhere(expr), |_, member| fields.get(member).map(|v| format!("({v})")));
    rename_identifiers_in(&expr, |name| {
        let value = scope.value_text(name).filter(|v| *v != UNKNOWN && depth < 4)?;
        Some(format!("({})", expanded_in(scope, value, fields, depth + 1)))
    })
}

/// Whether `value` reads the variable `name`: `x.numel()` calls a method of that name and
/// does not.
fn reads_variable(value: &str, name: &str) -> bool {
    let is_word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    value.match_indices(name).any(|(at, _)| {
        let (before, after) = (&value[..at], &value[at + name.len()..]);
        let member = before.trim_end().ends_with('.') || before.trim_end().ends_with("->");
        !before.ends_with(is_word) && !after.starts_with(is_word) && !member
    })
}

/// The template arguments the call of `frame`'s function gives it: written at the call
/// (`run<float>(…)`), or, for a method called on an object, those of the object's type
/// (`Simulation<float> sim`).
/// The element type a cast argument points to: `(T *)x.data_ptr()`, `static_cast<const float
/// *>(p)`, `reinterpret_cast<half *>(p)`, `x.data_ptr<at::Half>()`.
fn cast_pointee(arg: &str) -> Option<String> {
    let arg = arg.trim();
    let pointee = |ty: &str| ty.trim().strip_suffix('*').map(|t| t.trim().trim_start_matches("const ").trim_end_matches(" const").trim().to_string());
    if let Some(rest) = arg.strip_prefix('(') {
        let close = rest.find(')')?;
        return pointee(&rest[..close]).filter(|ty| ty.split("::").all(is_identifier));
    }
    for cast in ["static_cast<", "reinterpret_cast<"] {
        if let Some(rest) = arg.strip_prefix(cast) {
            return pointee(&rest[..rest.find(">(")?]);
        }
    }
    tensor_data_type(arg)
}

/// The pointer a value that may be null offers: `x->data_ptr<T>()` of
/// `x.has_value() ? x->data_ptr<T>() : nullptr`.
fn offered_pointer(arg: &str) -> &str {
    let Some((question, colon)) = super::callee::top_level_conditional(arg) else { return arg };
    let (offered, otherwise) = (arg[question + 1..colon].trim(), arg[colon + 1..].trim());
    let null = |text: &str| matches!(text, "nullptr" | "NULL" | "0");
    match (null(offered), null(otherwise)) {
        (false, true) => offered,
        (true, false) => otherwise,
        _ => arg,
    }
}

/// The element type of a tensor's data the argument points into: `x.data_ptr<float>()`,
/// `x.data<T>()`, an optional's `x->data_ptr<T>()`, and an offset into it
/// (`value.data_ptr<scalar_t>() + n * per_sample`).
fn tensor_data_type(arg: &str) -> Option<String> {
    ["data_ptr", "data", "mutable_data_ptr", "const_data_ptr"].iter().find_map(|accessor| {
        let (_, rest) = arg.split_once(&format!(".{accessor}<")).or_else(|| arg.split_once(&format!("->{accessor}<")))?;
        let (ty, after) = rest.split_once(">()")?;
        let after = after.trim_start();
        (after.is_empty() || after.starts_with(['+', '-'])).then(|| ty.trim().to_string())
    })
}

/// Each host function template of `root` named with template arguments and not called there:
/// `template void launch<float>(float *, int);` and `&ds_gelu<float>`, with its arguments.
fn instantiations_named<'t>(text: &'t str, root: Node<'t>) -> Vec<(&'t str, Vec<String>)> {
    let called = |node: Node| node.parent().is_some_and(|p| p.kind() == "call_expression" && p.child_by_field_name("function") == Some(node));
    descendants(root)
        .filter(|n| n.kind() == "template_function" && !called(*n))
        .filter_map(|n| {
            let name = &text[n.child_by_field_name("name")?.byte_range()];
            let list = n.child_by_field_name("arguments")?;
            let mut cursor = list.walk();
            let args: Vec<String> = list.named_children(&mut cursor).map(|a| text[a.byte_range()].trim().to_string()).collect();
            Some((bare_name(name), args))
        })
        .collect()
}

fn template_args_of(frame: &Frame) -> Vec<String> {
    let Some(call) = frame.called_by else { return Vec::new() };
    let explicit = call.template_args();
    if !explicit.is_empty() || !frame.is_method() {
        return explicit;
    }
    objects::called_object(&call).map(|(_, ty)| objects::type_template_args(&ty)).unwrap_or_default()
}

/// The template argument the call of frame `at` gives its template parameter `index`, and the
/// frame whose names it is written in: written at the call (`run<float>(…)`, the caller's), or
/// where the function was handed over as the parameter it is called through
/// (`perf_gemm(launch<2, 2048>, …)`, which calls it as `gemm(…)`: the caller's caller's).
fn template_argument_passed(path: &[Frame], at: usize, index: usize) -> Option<(String, usize)> {
    let frame = path.get(at)?;
    if let Some(arg) = template_args_of(frame).get(index) {
        return Some((arg.clone(), at + 1));
    }
    let call = frame.called_by?;
    let callee = call.node.child_by_field_name("function")?;
    let caller = path.get(at + 1)?;
    let parameter = caller.params.iter().position(|p| *p == call.text[callee.byte_range()])?;
    let handed = caller.argument(parameter)?;
    let args = handed_over(&handed).1?;
    Some((split_args(args).get(index)?.trim().to_string(), at + 2))
}

/// What an argument that hands a function over names: the function, and the template arguments
/// of an instantiation (`&run`, `run<2, 2048>` → `run`, `2, 2048`).
fn handed_over(arg: &str) -> (&str, Option<&str>) {
    let arg = arg.trim().trim_start_matches('&').trim();
    match arg.strip_suffix('>').and_then(|a| a.split_once('<')) {
        Some((name, args)) => (name.trim(), Some(args)),
        None => (arg, None),
    }
}

fn frame_name(frame: &Frame) -> String {
    frame.scope.body.and_then(|b| b.parent()).and_then(|f| function_name(frame.text, f)).unwrap_or("?").to_string()
}

fn join(values: &[i64]) -> String {
    values.iter().map(i64::to_string).collect::<Vec<_>>().join(", ")
}

/// `block_sizes[j]` where the frame has `int block_sizes[] = {32, 64, 128}`: the first element's
/// text and every element's value.
/// `SIZE[SIZE.size() - 1]` where `SIZE` is `{128, 256, 4096}`: the element at a constant index
/// of a list the frame initialises, `X.size()` counting its elements.
fn list_element(frame: &Frame, init: &str) -> Option<String> {
    let (array, index) = init.trim().strip_suffix(']')?.split_once('[')?;
    let array = array.trim();
    let elements = without_comments(frame.scope.value_text(array)?.trim().strip_prefix('{')?.strip_suffix('}')?);
    let elements: Vec<String> = split_args(&elements).into_iter().filter(|e| !e.is_empty()).collect();
    let index = replace_calls(&index.replace(&format!("{array}.size"), "size_of_list"), "size_of_list", |_| Some(elements.len().to_string()));
    let at = usize::try_from(eval_constant(&index, &|_| None)?).ok()?;
    elements.get(at).cloned()
}

/// `M_list[j]` where a loop before the frame's point fills `M_list[i] = (i + 1) * 256`: that
/// element, over the index read (`((j) + 1) * 256`).
fn filled_element(frame: &Frame, init: &str) -> Option<String> {
    let (array, index) = init.trim().strip_suffix(']')?.split_once('[')?;
    let (variable, element) = element_filled_by_loop(frame.text, frame.scope.body?, array.trim(), frame.scope.point)?;
    Some(rename_identifiers_in(&element, |word| (word == variable).then(|| format!("({})", index.trim()))))
}

fn sweep_element(frame: &Frame, init: &str) -> Option<(String, Vec<i64>)> {
    let array = init.trim().strip_suffix(']')?.split_once('[')?.0.trim();
    let elements = without_comments(frame.scope.value_text(array)?.trim().strip_prefix('{')?.strip_suffix('}')?);
    let values: Option<Vec<i64>> = split_args(&elements).iter().filter(|e| !e.is_empty()).map(|e| eval_constant(e, &|_| None)).collect();
    let values = values.filter(|v| !v.is_empty())?;
    Some((values[0].to_string(), values))
}

/// `expression`, over the parameters of the constructor defined as `constructor`, in the names
/// of the members that keep them (`m_M * m_K` of `M * K` where it sets `m_M(M), m_K(K)`); `None`
/// where it reads a parameter no member keeps, which means nothing in a method's names.
fn in_member_names(text: &str, constructor: Node, expression: &str) -> Option<String> {
    let params = parameters(text, constructor);
    let set = objects::members_set(text, constructor);
    let member_of_param = |word: &str| {
        let index = params.iter().position(|p| p.name == word)?;
        set.iter().find(|(_, i)| *i == index).map(|(member, _)| member.clone())
    };
    let kept = identifiers_in(expression).all(|word| !params.iter().any(|p| p.name == word) || member_of_param(word).is_some());
    kept.then(|| rename_identifiers_in(expression, member_of_param))
}

/// `32, /*768,*/ 1024` → `32,  1024`.
fn without_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("/*") {
        out.push_str(&rest[..start]);
        rest = rest[start..].find("*/").map_or("", |end| &rest[start + end + 2..]);
    }
    out.push_str(rest);
    out.lines().map(|l| l.split("//").next().unwrap_or("")).collect::<Vec<_>>().join(" ")
}

/// The names of a template function's template parameters (`typename T`, `int N`, `class U = V`),
/// each with its default argument if it has one. A method defined in its class template's body
/// has the class's (`reset` of `template <typename Real> class Simulation { void reset(Real *d)
/// {…} }`).
fn template_parameters(text: &str, function: Node) -> Vec<(String, Option<String>)> {
    if let Some(template) = function.parent().filter(|p| p.kind() == "template_declaration") {
        return template_parameters_of(text, template);
    }
    let class = std::iter::successors(function.parent(), |n| n.parent()).take_while(|n| n.kind() != "function_definition").find(|n| matches!(n.kind(), "class_specifier" | "struct_specifier"));
    match class.and_then(|c| c.parent()).filter(|p| p.kind() == "template_declaration") {
        Some(template) => template_parameters_of(text, template),
        None => Vec::new(),
    }
}

/// The names of a `template_declaration`'s parameters, each with its default argument if it
/// has one.
fn template_parameters_of(text: &str, template: Node) -> Vec<(String, Option<String>)> {
    let Some(list) = template.child_by_field_name("parameters") else { return Vec::new() };
    let mut cursor = list.walk();
    list.named_children(&mut cursor)
        .filter_map(|p| {
            let name = match p.child_by_field_name("declarator").or_else(|| p.child_by_field_name("name")) {
                Some(declarator) => declared_name(declarator).unwrap_or(declarator),
                None => {
                    let mut inner = p.walk();
                    let last = p.named_children(&mut inner).filter(|c| c.kind() == "type_identifier").last();
                    last?
                }
            };
            let default = p.child_by_field_name("default_value").or_else(|| p.child_by_field_name("default_type"));
            Some((text[name.byte_range()].to_string(), default.map(|d| text[d.byte_range()].trim().to_string())))
        })
        .collect()
}

/// The names the `if (name == N)` and `switch (name) { case N: }` around `node` fix, with their
/// values, innermost first.
fn branch_values_around(text: &str, node: Node) -> HashMap<String, i64> {
    let mut values = HashMap::new();
    let mut child = node;
    for parent in std::iter::successors(node.parent(), |n| n.parent()) {
        let fixed = match parent.kind() {
            "if_statement" if parent.child_by_field_name("consequence") == Some(child) => {
                parent.child_by_field_name("condition").and_then(|c| equality(&text[c.byte_range()]))
            }
            "case_statement" => {
                let value = parent.child_by_field_name("value").and_then(|v| eval_constant(&text[v.byte_range()], &|_| None));
                let switch = std::iter::successors(parent.parent(), |n| n.parent()).find(|n| n.kind() == "switch_statement");
                let subject = switch.and_then(|s| s.child_by_field_name("condition")).map(|c| text[c.byte_range()].trim().trim_start_matches('(').trim_end_matches(')').trim().to_string());
                subject.filter(|s| is_identifier(s)).zip(value)
            }
            _ => None,
        };
        if let Some((name, value)) = fixed {
            values.entry(name).or_insert(value);
        }
        child = parent;
    }
    values
}

/// The conditions of the `if`s around `node` in its function, each with whether `node` is in
/// the branch taken when it holds.
fn branch_conditions_around(text: &str, node: Node) -> Vec<(String, bool)> {
    let mut conditions = Vec::new();
    let mut child = node;
    for parent in std::iter::successors(node.parent(), |n| n.parent()).take_while(|n| n.kind() != "function_definition") {
        if parent.kind() == "if_statement" {
            let holds = match (parent.child_by_field_name("consequence"), parent.child_by_field_name("alternative")) {
                (Some(consequence), _) if consequence == child => Some(true),
                (_, Some(alternative)) if alternative == child => Some(false),
                _ => None,
            };
            if let Some((condition, holds)) = parent.child_by_field_name("condition").zip(holds) {
                conditions.push((text[condition.byte_range()].to_string(), holds));
            }
        }
        if parent.kind() == "case_statement" {
            if let Some(CaseTaken::When(condition)) = case_condition(text, parent, &|_| None) {
                conditions.push((condition, true));
            }
        }
        child = parent;
    }
    conditions
}

/// The variables the `for` loops around `node` in its function declare or update.
fn loop_variables_around(text: &str, node: Node) -> BTreeSet<String> {
    let loops = std::iter::successors(node.parent(), |n| n.parent()).take_while(|n| n.kind() != "function_definition").filter(|n| n.kind() == "for_statement");
    let mut names = BTreeSet::new();
    for header in loops.flat_map(|l| ["initializer", "update"].into_iter().filter_map(move |field| l.child_by_field_name(field))) {
        let assigned = descendants(header).filter_map(|n| match n.kind() {
            "init_declarator" => n.child_by_field_name("declarator"),
            "assignment_expression" => n.child_by_field_name("left"),
            "update_expression" => n.child_by_field_name("argument"),
            _ => None,
        });
        names.extend(assigned.filter(|n| n.kind() == "identifier").map(|n| text[n.byte_range()].to_string()));
    }
    names
}

/// The bound an `if`'s condition puts on the code in its branch (`holds`: the `then` branch):
/// one ordering of two operands (`a <= b`, or `a > b` in the `else`). An equality is left
/// out: `if (block_size == 16) k<16> else k<32>` picks an instantiation, which tuning varies.
fn bound_under(condition: &str, holds: bool) -> Option<String> {
    const OPPOSITES: [(&str, &str); 4] = [("<=", ">"), (">=", "<"), ("<", ">="), (">", "<=")];
    if ["&&", "||", "?", "<<", ">>", "==", "!="].iter().any(|op| condition.contains(op)) {
        return None;
    }
    OPPOSITES.iter().find_map(|(op, opposite)| {
        let (left, right) = condition.split_once(op)?;
        let op = if holds { op } else { opposite };
        (!right.contains(['<', '>', '=', '!'])).then(|| format!("{} {op} {}", left.trim(), right.trim()))
    })
}

/// `(block_size == 16)` → (`block_size`, 16).
fn equality(condition: &str) -> Option<(String, i64)> {
    let inner = condition.trim().trim_start_matches('(').trim_end_matches(')');
    let (left, right) = inner.split_once("==")?;
    let (left, right) = (left.trim(), right.trim());
    match (eval_constant(left, &|_| None), eval_constant(right, &|_| None)) {
        (None, Some(v)) if is_identifier(left) => Some((left.to_string(), v)),
        (Some(v), None) if is_identifier(right) => Some((right.to_string(), v)),
        _ => None,
    }
}

/// The host functions of the files in view: every call by callee, and every definition.
struct CallGraph<'d> {
    calls: HashMap<&'d str, Vec<Call<'d>>>,
    /// Every definition of each bare name, in the files' order: namesakes in other namespaces
    /// (each extension's `fwd`) are other functions.
    definitions: HashMap<&'d str, Vec<(&'d str, Node<'d>)>>,
    /// The names each file defines a function of, by the address of its text.
    defined_in: HashSet<(*const u8, &'d str)>,
    /// The calls that pass a name as an argument, by that name, with the argument's position:
    /// `run(launch_softmax_1, 256)` under `launch_softmax_1`, at 0.
    passing: HashMap<String, Vec<(Call<'d>, usize)>>,
    /// The path of each file, by the address of its text.
    paths: HashMap<*const u8, Option<&'d Path>>,
    /// The run its project documents for the program of each file that reads its command line
    /// (`./srad 100 0.5 502 458` in a `run` script beside it), by the address of its text.
    runs: HashMap<*const u8, CommandLine>,
    /// The calls made on an object, by method and the object's class: `sim.step(d)` of a
    /// `Simulation<float> sim` under (`step`, `Simulation`), `sim()` under `operator()`.
    method_calls: HashMap<(String, String), Vec<Call<'d>>>,
    /// The kernel whose launch is read: what the occupancy calculator says of it is the spec's
    /// [`BLOCKS_PER_SM`].
    kernel: String,
}

impl<'d> CallGraph<'d> {
    fn new(kernel: &str, calls: HashMap<&'d str, Vec<Call<'d>>>, definitions: HashMap<&'d str, Vec<(&'d str, Node<'d>)>>, defined_in: HashSet<(*const u8, &'d str)>, paths: HashMap<*const u8, Option<&'d Path>>, runs: HashMap<*const u8, CommandLine>) -> CallGraph<'d> {
        let mut passing: HashMap<String, Vec<(Call<'d>, usize)>> = HashMap::new();
        let mut method_calls: HashMap<(String, String), Vec<Call<'d>>> = HashMap::new();
        // The variables of each calling function and of each file, read once however many
        // calls they hold.
        let mut variables: HashMap<usize, Vec<(String, String)>> = HashMap::new();
        let mut file_scope: HashMap<*const u8, Vec<(String, String)>> = HashMap::new();
        for call in calls.values().flatten() {
            for (index, arg) in call.args().iter().enumerate() {
                let (name, _) = handed_over(arg);
                if is_identifier(name) {
                    passing.entry(name.to_string()).or_default().push((*call, index));
                }
            }
            let Some(object) = objects::object_named(call) else { continue };
            let declared = variables.entry(call.caller.id()).or_insert_with(|| objects::function_variables(call));
            let in_file = file_scope.entry(call.text.as_ptr()).or_insert_with(|| objects::file_scope_variables(call.text, call.caller));
            let Some((_, ty)) = declared.iter().chain(in_file.iter()).find(|(name, _)| name == object) else { continue };
            if let Some(method) = objects::method_called(call) {
                method_calls.entry((method, class_of(ty).to_string())).or_default().push(*call);
            }
        }
        CallGraph { calls, definitions, defined_in, passing, paths, runs, method_calls, kernel: kernel.to_string() }
    }

    /// The folder of the file whose text is `text`.
    fn folder_of(&self, text: &str) -> Option<&'d Path> {
        self.paths.get(&text.as_ptr()).copied().flatten().and_then(Path::parent)
    }

    /// Whether the file whose text is `text` is a Python script read as host code: its
    /// functions' defaults that C++ cannot say are left out, so calls may pass fewer arguments.
    fn is_script(&self, text: &str) -> bool {
        self.paths.get(&text.as_ptr()).copied().flatten().is_some_and(|path| path.extension().is_some_and(|e| e == "py"))
    }

    /// The run of the program the file whose text is `text` is part of: the one its project
    /// documents, else the run without arguments.
    fn run_of(&self, text: &str) -> &CommandLine {
        static WITHOUT_ARGUMENTS: CommandLine = CommandLine { args: Vec::new(), written_in: None };
        self.runs.get(&text.as_ptr()).unwrap_or(&WITHOUT_ARGUMENTS)
    }

    /// The calls that reach the function defined as `definition` (named `function`): by name,
    /// through a function parameter that a caller passes it as (`run(launch_softmax_1, 256)`,
    /// where `run(Kernel kernel, int block)` calls `kernel(..., block)`: the call `kernel(...)`
    /// in `run`), and, for a method, on objects of its class (`sim.step(d)`).
    fn callers_of(&self, text: &str, definition: Node, function: &str) -> Vec<Call<'d>> {
        let mut callers = self.callers_by_name(text, definition, bare_name(function));
        // A file that defines a function of that name calls its own (a CPU reference,
        // `flowGold.cpp`'s `Downscale`, beside the launcher `Downscale` of a `.cuh`), unless
        // the call names another's namespace (`::bbox_overlaps`, a script calling its binding).
        callers.retain(|c| c.text.as_ptr() == text.as_ptr() || c.is_qualified() || !self.defined_in.contains(&(c.text.as_ptr(), bare_name(function))));
        // A call of another function of that name (DeepSpeed's inference and training modules
        // each define a `launch_bias_gelu`, of 5 and 6 parameters) would pass its arguments
        // to the wrong parameters.
        let namesakes = self.definitions.get(bare_name(function)).map_or(0, Vec::len);
        if !self.is_script(text) {
            let arity = Arity::of(text, definition);
            callers.retain(|c| arity.takes(c.args().len(), namesakes > 1));
        }
        if let Some(class) = objects::class_of_definition(text, definition) {
            let on_objects = self.method_calls.get(&(bare_name(function).to_string(), class.to_string())).into_iter().flatten();
            callers.extend(on_objects.filter(|c| !callers.iter().any(|known| known.node == c.node)).copied().collect::<Vec<_>>());
        }
        if callers.is_empty() {
            callers = self.handed_to_a_library(text, definition, function);
        }
        callers
    }

    /// The calls of its own folder that hand the function defined as `definition`, which takes
    /// no parameters, to a function the workspace does not define: a library calls it back
    /// after that point (`glutDisplayFunc(display)` in `main`, after `main` made the objects
    /// `display` uses), so the call that hands it over stands for those calls.
    fn handed_to_a_library(&self, text: &str, definition: Node, function: &str) -> Vec<Call<'d>> {
        if !parameters(text, definition).is_empty() {
            return Vec::new();
        }
        let handed = self.passing.get(bare_name(function)).into_iter().flatten().map(|(call, _)| *call);
        handed.filter(|call| self.folder_of(call.text) == self.folder_of(text) && self.definition_called(call.text, call.node).is_none()).collect()
    }

    /// The function of `function`'s folder, defined as `twin` in `text`, that takes the same
    /// parameters as the uncalled `function` (defined as `definition`) and that the program
    /// calls: `bitonicSort`, which `main` calls, beside `oddEvenMergeSort` of the same
    /// parameters, which nothing calls; a `boxFilterRGBA` of `unsigned int` buffers beside
    /// the `float` `boxFilter`. The program would call it the same way. Of several, the first
    /// where all are called from the same calls (a harness's `tester.evaluate(mmaNaive, …)`
    /// for each variant but the one commented out); `None` where there is no such function or
    /// they are called from different places.
    fn twin_called(&self, text: &'d str, definition: Node<'d>, function: &str) -> Option<(&'d str, Node<'d>, &'d str)> {
        if bare_name(function) == "main" {
            return None;
        }
        let (params, folder) = (parameters(text, definition), self.folder_of(text));
        let twins = self.definitions.iter().filter(|(name, _)| **name != bare_name(function) && **name != "main").flat_map(|(name, defined)| defined.iter().map(move |&(text, node)| (text, node, *name)));
        let same_parameters = twins.filter(|&(twin_text, twin, _)| self.folder_of(twin_text) == folder && take_the_same_parameters(&parameters(twin_text, twin), &params));
        let mut called: Vec<_> = same_parameters
            .filter_map(|(twin_text, twin, name)| {
                let calls: BTreeSet<usize> = self.callers_of(twin_text, twin, name).iter().map(|c| c.node.id()).collect();
                (!calls.is_empty()).then_some(((twin_text, twin, name), calls))
            })
            .collect();
        // The file's own twin first, then in the files' and the definitions' order.
        called.sort_by_key(|((twin_text, twin, _), _)| (twin_text.as_ptr() != text.as_ptr(), self.paths.get(&twin_text.as_ptr()).copied().flatten(), twin.start_byte()));
        let ((twin, calls), others) = called.split_first()?;
        others.iter().all(|(_, other)| other == calls).then_some(*twin)
    }

    /// The first definition of `name` in the files.
    fn definition(&self, name: &str) -> Option<(&'d str, Node<'d>)> {
        self.definitions.get(name)?.first().copied()
    }

    /// The definition of `name` that is a member of `class` (a method, or its constructor).
    fn definition_in_class(&self, name: &str, class: &str) -> Option<(&'d str, Node<'d>)> {
        self.definitions.get(name)?.iter().copied().find(|&(text, definition)| objects::class_of_definition(text, definition) == Some(class))
    }

    /// The definition the call expression `call` in `text` calls: its callee's bare name, a
    /// method's (`tester.evaluate(…)`) or a template's (`run<T>(…)`).
    fn definition_called(&self, text: &str, call: Node) -> Option<(&'d str, Node<'d>)> {
        let callee = call.child_by_field_name("function").map(|f| f.child_by_field_name("name").or_else(|| f.child_by_field_name("field")).unwrap_or(f))?;
        self.namesake_called(text, call, bare_name(&text[callee.byte_range()]))
    }

    /// Of the definitions of `name`, the one C++ finds from `call` in `text`: a namesake in
    /// another namespace (each apex extension's `fwd`) is another function, and of those in
    /// reach, the call's own file's is the one it calls (a script's own `run_benchmark`, beside
    /// another script's). The first where none is in reach as written (a call through a macro,
    /// say).
    fn namesake_called(&self, text: &str, call: Node, name: &str) -> Option<(&'d str, Node<'d>)> {
        let namesakes = self.definitions.get(name)?;
        if namesakes.len() == 1 {
            return namesakes.first().copied();
        }
        let reached: Vec<_> = namesakes.iter().filter(|&&(defined_in, definition)| call_reaches_scope(text, call, &scope_of(defined_in, definition), uses_namespaces(text))).collect();
        let own = reached.iter().find(|(defined_in, _)| defined_in.as_ptr() == text.as_ptr());
        own.or(reached.first()).copied().or(namesakes.first()).copied()
    }

    /// The function `call` calls and the name of its parameter at `index`.
    fn parameter_passed(&self, call: &Call<'d>, index: usize) -> Option<(Node<'d>, String)> {
        let (text, definition) = self.definition_called(call.text, call.node)?;
        Some((definition, parameters(text, definition).into_iter().nth(index)?.name))
    }

    /// The calls of `function`, defined in `text` as `definition`.
    fn callers_by_name(&self, text: &str, definition: Node, function: &str) -> Vec<Call<'d>> {
        let mut callers = self.calls.get(function).cloned().unwrap_or_default();
        // A kernel or a device function calls the device namesake of a host launcher (llm.c's
        // `adamw_kernel3` calls the `__device__ adamw_update`, beside the host one that launches it).
        if !runs_on_device_only(text, definition) {
            callers.retain(|c| !runs_on_device_only(c.text, c.caller));
        }
        // A namesake in another namespace (apex's `fwd` of each softmax extension) is another
        // function; a script calls the one its binding names.
        let scope = scope_of(text, definition);
        let mut widened_in: HashMap<*const u8, bool> = HashMap::new();
        callers.retain(|c| {
            let widened = *widened_in.entry(c.text.as_ptr()).or_insert_with(|| !self.is_script(c.text) && uses_namespaces(c.text));
            call_reaches_scope(c.text, c.node, &scope, widened)
        });
        // The function parameters it is passed as, and those they are passed on as
        // (`run_benchmark(reduction, …)` passing `reduce` on to `run_reduction(reduce, …)`).
        let mut through: Vec<(Node, String)> = self.passing.get(function).into_iter().flatten().filter_map(|(call, index)| self.parameter_passed(call, *index)).collect();
        let mut seen = std::collections::HashSet::new();
        while let Some((definition, parameter)) = through.pop() {
            if seen.len() >= MAX_PATHS_READ || !seen.insert((definition.id(), parameter.clone())) {
                continue;
            }
            for c in self.calls.get(parameter.as_str()).into_iter().flatten().filter(|c| c.caller == definition) {
                if !callers.iter().any(|known| known.node == c.node) {
                    callers.push(*c);
                }
            }
            let passed_on = self.passing.get(&parameter).into_iter().flatten().filter(|(c, _)| c.caller == definition);
            through.extend(passed_on.filter_map(|(call, index)| self.parameter_passed(call, *index)));
        }
        // In a project of many programs (a samples repository), `runTest` and `main` are in
        // every folder: the calls beside the function's definition are its program's. A Python
        // package's function is any script's to call (its tests are in another folder). Of
        // namesakes, the definition in question's (OpenMMLab's `parrots/three_nn.cpp` beside
        // `pytorch/three_nn.cpp`, each a build of its own).
        let folder = |text: &str| self.folder_of(text);
        let home = Some(text).filter(|text| !self.is_script(text)).and_then(folder);
        if home.is_some() && callers.iter().any(|c| folder(c.text) == home) {
            callers.retain(|c| folder(c.text) == home);
        }
        callers
    }
}

/// How many arguments a function takes.
struct Arity {
    /// Its parameters without a default argument.
    required: usize,
    /// All its parameters; none for `(...)` or a parameter pack.
    most: Option<usize>,
}

impl Arity {
    fn of(text: &str, definition: Node) -> Arity {
        let params = parameters(text, definition);
        let variadic = definition.child_by_field_name("declarator").is_some_and(|d| descendants(d).any(|n| matches!(n.kind(), "..." | "variadic_parameter_declaration")));
        // `f(void)` takes none.
        let params: Vec<_> = params.into_iter().filter(|p| !(p.name.is_empty() && p.ty == "void")).collect();
        Arity { required: params.iter().filter(|p| p.default.is_none()).count(), most: (!variadic).then_some(params.len()) }
    }

    /// Whether a call of `count` arguments may call the function. Fewer than its parameters
    /// without defaults counts only where the name has other definitions: defaults may be in a
    /// header's declaration, which the definition does not repeat.
    fn takes(&self, count: usize, has_namesakes: bool) -> bool {
        self.most.is_none_or(|most| count <= most) && (!has_namesakes || count >= self.required)
    }
}

/// The compile-time constants a generic lambda receives from a dispatcher: `auto launch =
/// [&](auto int_const) { k<int_const.value><<<...>>>(...); }; dispatch_launch(launch,
/// block_size);`, where the dispatcher calls `launch(std::integral_constant<int, 32>{})` under
/// `case 32:` of `switch (block_size)`, makes `int_const.value` the value of `block_size`:
/// member → the variable passed beside the lambda.
fn dispatched_constants(text: &str, body: Node) -> HashMap<String, String> {
    let mut out = HashMap::new();
    for lambda in descendants(body).filter(|n| n.kind() == "lambda_expression") {
        let Some(variable) = lambda.parent().filter(|p| p.kind() == "init_declarator").and_then(|d| d.child_by_field_name("declarator")) else { continue };
        let variable = &text[variable.byte_range()];
        let Some(list) = lambda.child_by_field_name("declarator").and_then(|d| d.child_by_field_name("parameters")) else { continue };
        let mut cursor = list.walk();
        let declared: Vec<Node> = list.named_children(&mut cursor).collect();
        let [declaration] = declared.as_slice() else { continue };
        let is_auto = declaration.child_by_field_name("type").is_some_and(|t| &text[t.byte_range()] == "auto");
        let Some(name) = declaration.child_by_field_name("declarator").and_then(declared_name).filter(|_| is_auto) else { continue };
        let parameter = &text[name.byte_range()];
        let dispatch = descendants(body).filter(|n| n.kind() == "call_expression").filter_map(|c| c.child_by_field_name("arguments").map(|a| call_args(text, a)));
        for args in dispatch.filter(|args| args.iter().any(|a| a.trim() == variable)) {
            if let [other] = args.iter().filter(|a| a.trim() != variable).collect::<Vec<_>>().as_slice() {
                if is_identifier(other.trim()) {
                    out.insert(format!("{parameter}.value"), other.trim().to_string());
                }
            }
        }
    }
    out
}

/// The caller's variables that `call` sets through the callee's non-const reference parameters
/// (`computeGridSize(n, 256, numBlocks, numThreads)` of `void computeGridSize(uint n, uint
/// blockSize, uint &numBlocks, uint &numThreads)`) or pointers it is given the variable's
/// address for (`get_size(path, &height)`), each with its value in the caller's names
/// (see [`callee::reference_values`]): conditions that the literal arguments settle take their
/// branch, the others stay conditionals for the launch's own branch to settle. `?` when the
/// value cannot be told: the value from before the call no longer holds either way.
fn out_arguments<'t>(text: &'t str, call: Node, graph: &CallGraph) -> Option<(&'t str, Vec<(String, String)>)> {
    let callee = call.child_by_field_name("function").map(|f| f.child_by_field_name("name").unwrap_or(f))?;
    let callee = bare_name(&text[callee.byte_range()]);
    let (callee_text, definition) = graph.namesake_called(text, call, callee)?;
    let params = parameters(callee_text, definition);
    let (Some(body), true) = (definition.child_by_field_name("body"), params.iter().any(|p| p.out.is_some())) else { return None };
    let args = call.child_by_field_name("arguments").map(|a| call_args(text, a)).unwrap_or_default();
    let argument = |word: &str| params.iter().position(|p| p.name == word).and_then(|i| args.get(i)).map(|a| a.trim());
    let in_caller_names = |value: &str| {
        let renamed = rename_identifiers_in(value, |word| {
            let arg = argument(word)?;
            Some(if is_identifier(arg) || arg.parse::<i64>().is_ok() { arg.to_string() } else { format!("({arg})") })
        });
        // `*threads` of an out parameter given `&threads` is the caller's `threads`.
        without_derefs_of_addresses(&renamed)
    };
    let literal = |word: &str| argument(word).and_then(|a| eval_constant(a, &|_| None));
    let run = graph.run_of(text);
    let decide = |condition: &str| eval_constant(condition, &literal).or_else(|| run.decide(condition));
    let outs: Vec<String> = params.iter().filter(|p| p.out.is_some()).map(|p| p.name.clone()).collect();
    let pointers: Vec<String> = params.iter().filter(|p| p.out == Some(Out::Pointer)).map(|p| p.name.clone()).collect();
    let values = callee::reference_values(callee_text, body, &outs, &pointers, &decide);
    let mut out = Vec::new();
    for (param, value) in values {
        // A member of a struct the callee fills (`params.batch = batch;` in `set_params(params,
        // batch, …)`): the caller's struct has it after the call.
        if let Some((object, member)) = param.split_once('.') {
            let Some(variable) = argument(object).filter(|a| is_identifier(a)) else { continue };
            out.push((format!("{variable}.{member}"), value.map_or_else(|| UNKNOWN.to_string(), |v| in_caller_names(&v))));
            continue;
        }
        // Through a pointer, only a variable whose address is given is the caller's to lose.
        let variable = match pointers.contains(&param) {
            true => argument(&param).and_then(|a| a.strip_prefix('&')).map(str::trim),
            false => argument(&param),
        };
        let Some(variable) = variable.filter(|a| is_identifier(a)) else { continue };
        out.push((variable.to_string(), value.map_or_else(|| UNKNOWN.to_string(), |v| in_caller_names(&v))));
    }
    Some((callee, out))
}

/// `*(&threads)` → `threads`: what a pointer parameter points at, where the caller passed a
/// variable's address.
fn without_derefs_of_addresses(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("*(&") {
        let after = &rest[at + 3..];
        let name_end = after.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(after.len());
        let name = after[..name_end].trim();
        match after[name_end..].strip_prefix(')').filter(|_| is_identifier(name)) {
            Some(tail) => {
                out.push_str(&rest[..at]);
                out.push_str(name);
                rest = tail;
            }
            None => {
                out.push_str(&rest[..at + 3]);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Whether the program's run takes a branch a call of a path is made in: the branch is the call
/// (by its node), the condition and whether it holds there; a path that another path reaches the
/// same call by, with the condition settled there as not taken, does not take it either.
struct BranchVerdict {
    branch: (usize, String, bool),
    taken: Option<bool>,
}

/// How surely a call path's outermost function is where the program starts, surest first: `main`,
/// a function of no parameters, a script's test (pytest's `test_…`, a test case's methods) or
/// its module's statements (0); a script's other functions, which a caller may pass other
/// tensors (1); a C++ function with parameters nothing calls (2), which gives no values
/// (OpenMMLab's Parrots binding beside its PyTorch one).
fn start_rank(graph: &CallGraph, top: &Frame) -> u8 {
    let name = top.scope.body.and_then(|b| b.parent()).and_then(|f| function_name(top.text, f)).unwrap_or_default();
    let is_test = name.starts_with("test") || name.contains("_test") || name.contains("_py_line_");
    match (top.params.is_empty() || name == "main", graph.is_script(top.text)) {
        (true, _) => 0,
        (false, true) if is_test => 0,
        (false, true) => 1,
        (false, false) => 2,
    }
}

/// The call paths that reach `launcher`, those of the program's own run first: a path through a
/// call made only when the user asks for it on the command line (a `-shmoo` sweep from one
/// element up) is no shape the program runs by default, and is kept only when there is no other;
/// otherwise it is returned apart, second.
fn call_paths<'d>(graph: &CallGraph<'d>, launcher: Frame<'d>) -> (Vec<Vec<Frame<'d>>>, Vec<Vec<Frame<'d>>>) {
    let mut paths = Vec::new();
    extend_paths(graph, vec![launcher], &mut paths);
    let asked = |path: &Vec<Frame>| path.iter().filter_map(|f| f.called_by).any(|c| asked_for_on_command_line(&c, graph.run_of(c.text)));
    let (mut asked_paths, mut paths): (Vec<_>, Vec<_>) = paths.into_iter().partition(asked);
    paths.sort_by_key(|path| path.last().map(|top| start_rank(graph, top)));
    if paths.is_empty() {
        paths = std::mem::take(&mut asked_paths);
    }
    paths.truncate(MAX_PATHS);
    asked_paths.truncate(MAX_PATHS);
    (paths, asked_paths)
}

/// Follows the calls of the last frame's function upwards, collecting every path that ends at a
/// function nobody else on the path calls (or at the depth limit).
fn extend_paths<'d>(graph: &CallGraph<'d>, mut path: Vec<Frame<'d>>, out: &mut Vec<Vec<Frame<'d>>>) {
    if out.len() >= MAX_PATHS_READ {
        return;
    }
    let last = path.last().expect("paths start with the launcher");
    let definition = last.scope.body.and_then(|b| b.parent());
    let named = definition.and_then(|f| Some((f, function_name(last.text, f)?)));
    let mut callers = named.filter(|_| path.len() < MAX_DEPTH).map(|(f, n)| graph.callers_of(last.text, f, n)).unwrap_or_default();
    // A launcher nobody calls is called as its twin is, where it has one.
    if let (true, [_], Some((f, n))) = (callers.is_empty(), path.as_slice(), named) {
        if let Some((text, twin, name)) = graph.twin_called(last.text, f, n) {
            callers = graph.callers_of(text, twin, name);
            path[0].called_as = Some(name);
        }
    }
    // A caller already on the path (recursion) leads nowhere new.
    let callers: Vec<_> = callers.into_iter().filter(|call| !path.iter().any(|f| f.scope.body == call.caller.child_by_field_name("body"))).collect();
    let callers = passing_the_callee(&path, callers);
    if callers.is_empty() {
        out.push(path);
        return;
    }
    for call in callers {
        let mut next = path.clone();
        next.last_mut().expect("paths start with the launcher").called_by = Some(call);
        next.push(Frame::of(call.text, call.caller, call.node.start_byte(), graph));
        extend_paths(graph, next, out);
    }
}

/// Of the calls of the path's last function, those that pass it the function the path came
/// from where the path came through one of its parameters: `run(perf_func, x, out)` calls
/// `perf_func(x, out)`, and only `run(transpose_f32, x, y)` leads to `transpose_f32`, not
/// `run(row_sum_f32, x, sums)`. A caller that passes on a parameter of its own stays (what it
/// passes, its caller says); where no caller passes the function by its name, all stay.
fn passing_the_callee<'d>(path: &[Frame<'d>], callers: Vec<Call<'d>>) -> Vec<Call<'d>> {
    let [.., below, last] = path else { return callers };
    let Some(into_last) = below.called_by else { return callers };
    let callee = into_last.node.child_by_field_name("function").map(|f| &into_last.text[f.byte_range()]);
    let Some(index) = callee.and_then(|name| last.params.iter().position(|p| p == name)) else { return callers };
    let Some(function) = below.called_as.or_else(|| below.scope.body.and_then(|b| b.parent()).and_then(|f| function_name(below.text, f))) else { return callers };
    let names_it = |arg: &str| {
        let (arg, _) = handed_over(arg);
        bare_name(arg) == bare_name(&function) || arg.rsplit(['.', ':']).next() == Some(bare_name(&function))
    };
    let passes_on = |call: &Call, arg: &str| parameters(call.text, call.caller).iter().any(|p| p.name == arg.trim());
    let passing: Vec<Call<'d>> = callers.iter().filter(|call| call.args().get(index).is_some_and(|a| names_it(a) || passes_on(call, a))).copied().collect();
    match passing.is_empty() {
        true => callers,
        false => passing,
    }
}

/// One walk of `texts`' preprocessor branches: the type aliases of the branches taken
/// (`typedef`, `using`, `#define fp float`), and the `#define`s of the branches not taken, by the
/// address of the text and the line's offset in it (`#define BLOCK_SIZE RD_WG_SIZE_0_0` under
/// `#ifdef RD_WG_SIZE_0_0`, a size a build may give with `-D`, beside the `#else` that defines 16).
fn preprocessed_reading(texts: &[&str]) -> (HashMap<String, String>, std::collections::HashSet<(*const u8, usize)>) {
    let mut aliases = HashMap::new();
    let mut untaken = std::collections::HashSet::new();
    each_preprocessed_line(texts, |text, offset, line, active| match active {
        true => {
            if let Some((name, ty)) = type_alias(line) {
                aliases.entry(name).or_insert(ty);
            }
        }
        false => {
            if line.strip_prefix('#').is_some_and(|d| d.trim_start().starts_with("define")) {
                untaken.insert((text.as_ptr(), offset));
            }
        }
    });
    (aliases, untaken)
}

/// The name and the type of a line that gives a type another name: `typedef float real;`,
/// `using real = float;`, `#define fp float`.
fn type_alias(line: &str) -> Option<(String, String)> {
    if let Some(rest) = line.strip_prefix('#').map(str::trim_start).and_then(|d| d.strip_prefix("define")) {
        let name = identifiers_in(rest).next()?;
        let after = &rest.trim_start()[name.len()..];
        let value = after.split("//").next().unwrap_or("").trim();
        return (!after.starts_with('(') && size_of_type(value).is_some()).then(|| (name.to_string(), value.to_string()));
    }
    // A dependent type (`typedef typename I::base_type T;`) is a template's own, inside it: no
    // name of the program's at file scope.
    let concrete = |ty: &str| !ty.contains('(') && !ty.starts_with("typename ");
    if let Some(alias) = line.strip_prefix("typedef ").and_then(|l| l.strip_suffix(';')) {
        let (ty, name) = alias.trim().rsplit_once(char::is_whitespace)?;
        return (is_identifier(name) && concrete(ty.trim())).then(|| (name.to_string(), ty.trim().to_string()));
    }
    let (name, ty) = line.strip_prefix("using ").and_then(|l| l.strip_suffix(';')).and_then(|l| l.split_once('='))?;
    (is_identifier(name.trim()) && concrete(ty.trim())).then(|| (name.trim().to_string(), ty.trim().to_string()))
}

/// The offset of the start of the line that byte `at` of `text` is on.
fn line_start(text: &str, at: usize) -> usize {
    text[..at.min(text.len())].rfind('\n').map_or(0, |newline| newline + 1)
}

/// `Runner::launch` is called as `launch`: the last component of a qualified name.
fn bare_name(name: &str) -> &str {
    name.rsplit("::").next().unwrap_or(name)
}

/// A host function that only works out a value from its parameters, or a function-like macro.
#[derive(Clone, Debug)]
struct ExpressionFunction {
    /// Each parameter's name and default argument (`const int threads = THREADS_PER_BLOCK`).
    params: Vec<(String, Option<String>)>,
    /// The returned expression over the parameters.
    value: String,
}

/// The functions of the file that only work out a value: a `return` of an expression, after
/// locals that it reads.
fn expression_functions_of(text: &str, root: Node) -> Vec<(String, ExpressionFunction)> {
    let mut out = Vec::new();
    for (name, function) in functions(text, root) {
        let Some(body) = function.child_by_field_name("body") else { continue };
        let mut cursor = body.walk();
        let statements: Vec<Node> = body.named_children(&mut cursor).filter(|n| n.kind() != "comment").collect();
        let Some((last, before)) = statements.split_last() else { continue };
        let Some(value) = last.named_child(0).filter(|_| last.kind() == "return_statement") else { continue };
        let params: Vec<(String, Option<String>)> = parameters(text, function).into_iter().map(|p| (p.name, p.default)).collect();
        let counted = || match &params[..] {
            [(param, _)] => log2_counted(text, before, &text[value.byte_range()], param),
            _ => None,
        };
        let Some(returned) = returned_value(text, body, before, &text[value.byte_range()]).or_else(counted) else { continue };
        out.push((bare_name(name).to_string(), ExpressionFunction { params, value: strip_casts_everywhere(&returned) }));
    }
    // Function-like macros are the same to a launch expression: `CEIL_DIV(M, N)` where
    // `#define CEIL_DIV(M, N) (((M) + (N)-1) / (N))`.
    for node in descendants(root).filter(|n| n.kind() == "preproc_function_def") {
        let (Some(name), Some(params), Some(value)) = (node.child_by_field_name("name"), node.child_by_field_name("parameters"), node.child_by_field_name("value")) else { continue };
        let mut cursor = params.walk();
        let params: Vec<(String, Option<String>)> = params.named_children(&mut cursor).map(|p| (text[p.byte_range()].trim().to_string(), None)).collect();
        let body = text[value.byte_range()].trim();
        if !params.iter().any(|(p, _)| p == "...") && !body.contains('#') && !body.contains(';') {
            out.push((text[name.byte_range()].to_string(), ExpressionFunction { params, value: strip_casts_everywhere(body) }));
        }
    }
    out
}

/// The value of a function that counts the doublings up to its parameter (PyTorch's
/// `log2_ceil`: `int r = 0; while ((1 << r) < value) ++r; return r;`): `ceil(log2(value))`,
/// 0 for a value below 2 as the loop gives.
fn log2_counted(text: &str, statements: &[Node], returned: &str, param: &str) -> Option<String> {
    let [declaration, count] = statements else { return None };
    let squeezed = |node: &Node| text[node.byte_range()].chars().filter(|c| !c.is_whitespace()).collect::<String>();
    let counter = returned.trim();
    let starts_at_zero = declaration.kind() == "declaration" && squeezed(declaration).ends_with(&format!("{counter}=0;"));
    let condition = count.child_by_field_name("condition").map(|c| squeezed(&c)).unwrap_or_default();
    let condition = condition.trim_start_matches('(').trim_end_matches(')');
    let doubles_up_to = [format!("1<<{counter})<{param}"), format!("1<<{counter}<{param}")].iter().any(|c| condition == c);
    let step = count.child_by_field_name("body").map(|b| squeezed(&b)).unwrap_or_default();
    let steps_by_one = [format!("++{counter}"), format!("{counter}++"), format!("{counter}+=1")].iter().any(|s| step.trim_matches(|c| c == '{' || c == '}' || c == ';') == s);
    (count.kind() == "while_statement" && starts_at_zero && doubles_up_to && steps_by_one).then(|| format!("ceil(log2(max({param}, 1)))"))
}

/// The value a function returns after other statements (`size_t smem = std::max(…);
/// cudaFuncSetAttribute(…, smem); return smem;`, `int blocks = (n + t - 1) / t; int most = 4096;
/// return min(blocks, most);`): the returned expression with each local it reads replaced by
/// its initial value, where every such local is declared once among `statements` and never set
/// again.
fn returned_value(text: &str, body: Node, statements: &[Node], returned: &str) -> Option<String> {
    let mut value = returned.to_string();
    // Locals made of earlier locals take a round each.
    for _ in 0..8 {
        let locals: Vec<&str> = identifiers_in(&value).filter(|w| declared_in(text, body, w)).collect();
        if locals.is_empty() {
            return Some(value);
        }
        let initials: HashMap<&str, &str> = locals.iter().map(|&l| local_initial(text, body, statements, l).map(|i| (l, i))).collect::<Option<_>>()?;
        let whole = |w: &str| value == w;
        value = rename_identifiers_in(&value, |w| initials.get(w).map(|i| if i.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') || whole(w) { i.to_string() } else { format!("({i})") }));
    }
    None
}

/// The initial value of local `name` of a function's `statements`, where it is declared once,
/// never set again and not passed to a function that could set it.
fn local_initial<'t>(text: &'t str, body: Node, statements: &[Node], name: &str) -> Option<&'t str> {
    let declarators = statements.iter().filter(|s| s.kind() == "declaration").flat_map(|d| d.children_by_field_name("declarator", &mut d.walk()).collect::<Vec<_>>());
    let locals: Vec<Node> = declarators.filter(|d| d.kind() == "init_declarator").collect();
    let named = |d: &&Node| d.child_by_field_name("declarator").and_then(declared_name).is_some_and(|n| &text[n.byte_range()] == name);
    let [declarator] = locals.iter().filter(named).collect::<Vec<_>>()[..] else { return None };
    let initial = &text[declarator.child_by_field_name("value")?.byte_range()];
    // Set again, or through its address by a call (`int n = 0; cudaGetDeviceCount(&n);`).
    let set_again = descendants(body).any(|n| match n.kind() {
        "assignment_expression" => n.child_by_field_name("left").is_some_and(|l| &text[l.byte_range()] == name),
        "update_expression" => n.child_by_field_name("argument").is_some_and(|a| &text[a.byte_range()] == name),
        "pointer_expression" => n.child_by_field_name("argument").is_some_and(|a| &text[a.byte_range()] == name) && text[n.byte_range()].starts_with('&'),
        _ => false,
    });
    // Passed as it is to one of the program's functions, which may take it by reference
    // (`query(count);`); the CUDA APIs, the standard library, the arithmetic a spec can say
    // (`min`), casts and macros (`HLOG(…)`) read it.
    let passed_on = descendants(body).filter(|n| n.kind() == "call_expression").any(|call| {
        let callee = call.child_by_field_name("function").map_or("", |f| &text[f.byte_range()]);
        let reads_only = callee.starts_with("cu") || callee.starts_with("std::") || callee.contains("printf") || callee.contains("_cast<") || callee.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_') || expr::Function::from_name(callee).is_some();
        !reads_only && call.child_by_field_name("arguments").is_some_and(|a| call_args(text, a).iter().any(|arg| arg.trim() == name))
    });
    (!set_again && !passed_on && !initial.starts_with('{')).then_some(initial)
}

/// Where the `<` that the `>` just past `text` closes is.
fn matching_open_angle(text: &str) -> Option<usize> {
    balancing_position(text.char_indices().rev(), '>', '<', 1)
}

/// Every class (template) of the file with `static constexpr`/`static const` members.
fn static_members_of(text: &str, root: Node) -> Vec<(String, StaticMembers)> {
    let mut out = Vec::new();
    for class in descendants(root).filter(|n| matches!(n.kind(), "struct_specifier" | "class_specifier")) {
        let (Some(name), Some(body)) = (class.child_by_field_name("name"), class.child_by_field_name("body")) else { continue };
        let mut members = StaticMembers::default();
        let mut cursor = body.walk();
        for field in body.named_children(&mut cursor).filter(|f| f.kind() == "field_declaration") {
            let field_text = &text[field.byte_range()];
            if !field_text.trim_start().starts_with("static") {
                continue;
            }
            let (Some(declarator), Some(value)) = (field.child_by_field_name("declarator"), field.child_by_field_name("default_value")) else { continue };
            members.values.insert(text[declared_name(declarator).unwrap_or(declarator).byte_range()].to_string(), text[value.byte_range()].to_string());
        }
        if members.values.is_empty() {
            continue;
        }
        let template = class.parent().filter(|p| p.kind() == "template_declaration").or_else(|| class.parent()?.parent().filter(|p| p.kind() == "template_declaration"));
        members.template_params = template.map(|t| template_parameters_of(text, t).into_iter().map(|(name, _)| name).collect()).unwrap_or_default();
        out.push((text[name.byte_range()].to_string(), members));
    }
    out
}

/// An object made with `new` and assigned: `psystem = new ParticleSystem(numParticles, …)`
/// in the function `function`.
struct NewObject<'d> {
    text: &'d str,
    function: Node<'d>,
    assignment: Node<'d>,
    object: &'d str,
    class: &'d str,
    args: Vec<String>,
}

/// The objects `text` makes with `new` and assigns in its functions.
fn objects_made_with_new<'d>(text: &'d str, root: Node<'d>) -> Vec<NewObject<'d>> {
    if !text.contains("new ") {
        return Vec::new();
    }
    let assignments = descendants(root).filter(|n| n.kind() == "assignment_expression");
    assignments
        .filter_map(|assignment| {
            let made = assignment.child_by_field_name("right").filter(|r| r.kind() == "new_expression")?;
            let object = &text[assignment.child_by_field_name("left")?.byte_range()];
            let class = class_of(&text[made.child_by_field_name("type")?.byte_range()]);
            let function = std::iter::successors(assignment.parent(), |n| n.parent()).find(|n| n.kind() == "function_definition")?;
            Some(NewObject { text, function, assignment, object, class, args: call_args(text, made.child_by_field_name("arguments")?) })
        })
        .collect()
}

/// The file-scope variables of a file that have an initial value: name → its text.
fn globals_of(text: &str, root: Node) -> HashMap<String, String> {
    let mut out = HashMap::new();
    for decl in file_scope_declarations(root) {
        let mut inner = decl.walk();
        for init in decl.children_by_field_name("declarator", &mut inner).filter(|d| d.kind() == "init_declarator") {
            let name = init.child_by_field_name("declarator").filter(|d| d.kind() == "identifier");
            if let (Some(name), Some(value)) = (name, init.child_by_field_name("value")) {
                out.insert(text[name.byte_range()].to_string(), text[value.byte_range()].to_string());
            }
        }
    }
    out
}

/// The values (`own`) a file on the call paths gives the names it declares at file scope, in
/// `values`: such a name is that file's, declared with no value (`unsigned int width, height;`,
/// set as the program runs) or not, never a namesake of another program of the workspace
/// (`const uint width = 640` of another sample).
fn keep_own_file_scope_values(text: &str, root: Node, own: HashMap<String, String>, values: &mut HashMap<String, String>) {
    // `extern int n;` names a variable another file defines.
    let is_extern = |decl: &Node| decl.children(&mut decl.walk()).any(|c| c.kind() == "storage_class_specifier" && &text[c.byte_range()] == "extern");
    for decl in file_scope_declarations(root).into_iter().filter(|d| !is_extern(d)) {
        let mut inner = decl.walk();
        for declarator in decl.children_by_field_name("declarator", &mut inner) {
            let name = match declarator.kind() {
                "identifier" => Some(declarator),
                "init_declarator" => declarator.child_by_field_name("declarator").filter(|d| d.kind() == "identifier"),
                _ => None,
            };
            let Some(name) = name.map(|n| &text[n.byte_range()]) else { continue };
            match own.get(name) {
                Some(value) => values.insert(name.to_string(), value.clone()),
                None => values.remove(name),
            };
        }
    }
}

/// File-scope variables a function sets to the size of an image it loads (`LoadBMPFile(&pixels,
/// &imageW, &imageH, path)` in `main`, where `imageW` and `imageH` are globals that other
/// functions launch with).
/// The image file that the callers of `function` in its own folder all name for its parameter
/// `param`, as a string literal: `"teapot512.pgm"` for `initializeData(char *file)` called as
/// `initializeData(image_path)` after `image_path = sdkFindFilePath("teapot512.pgm", argv[0])`.
fn image_passed_for(text: &str, function: Node, param: &str, graph: &CallGraph) -> Option<String> {
    let index = crate::syntax::host::parameter_names(text, function).iter().position(|p| p == param)?;
    let folder = |t: &str| graph.folder_of(t);
    let callers: Vec<Call> = graph.callers_by_name(text, function, bare_name(function_name(text, function)?)).into_iter().filter(|call| folder(call.text) == folder(text)).collect();
    let named = callers.iter().map(|call| {
        let arg = call.args().get(index)?.clone();
        let body = call.caller.child_by_field_name("body")?;
        let root = std::iter::successors(Some(call.caller), |n| n.parent()).last()?;
        let value_of = |name: &str| value_before(call.text, body, name, call.node.start_byte(), graph.run_of(call.text)).or_else(|| file_scope_value(call.text, root, name));
        super::data_files::image_named(&arg, &value_of)
    });
    let names: Vec<Option<String>> = named.collect();
    let first = names.first()?.clone()?;
    names.iter().all(|n| n.as_deref() == Some(first.as_str())).then(|| format!("\"{first}\""))
}

fn globals_loaded_from_images(documents: &[&Document], graph: &CallGraph) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for doc in documents {
        let Some(tree) = doc.tree() else { continue };
        let text = doc.text();
        for (_, function) in functions(text, tree.root_node()) {
            let Some(body) = function.child_by_field_name("body") else { continue };
            // Only functions with a call that takes two addresses can load an image.
            let may_load = descendants(body).any(|n| n.kind() == "call_expression" && text[n.byte_range()].matches('&').count() >= 2);
            if !may_load {
                continue;
            }
            let locals: Vec<String> = local_types(text, body).into_iter().map(|(name, _)| name).collect();
            for load in Scope::of(text, function, function.end_byte(), graph).images {
                for (name, value) in [(load.width, load.size.0), (load.height, load.size.1)] {
                    if !locals.contains(&name) {
                        out.push((name.clone(), value.to_string()));
                    }
                    // A file-scope variable the function gives the local's value (`imWidth = (int)w`).
                    out.extend(globals_given(text, body, &name).into_iter().filter(|global| !locals.contains(global)).map(|global| (global, value.to_string())));
                }
            }
        }
    }
    out
}

/// The variables `body` sets to the value of its variable `name` and nothing else (`imWidth =
/// (int)w`): a cast aside, the assignment's value is the name.
fn globals_given(text: &str, body: Node, name: &str) -> Vec<String> {
    descendants(body)
        .filter(|n| n.kind() == "assignment_expression")
        .filter_map(|assignment| {
            (&text[assignment.child_by_field_name("operator")?.byte_range()] == "=").then_some(())?;
            let target = &text[assignment.child_by_field_name("left")?.byte_range()];
            let value = strip_casts_everywhere(&text[assignment.child_by_field_name("right")?.byte_range()]);
            (strip_outer_parens(value.trim()) == name && is_identifier(target)).then(|| target.to_string())
        })
        .collect()
}

/// `name /= k`, `name *= k`, `name += k`, `name -= k`, `name++`, `name--`, or `name = name + 1`
/// (any value that reads `name`), outside any loop of `body`: `name`'s value from before it,
/// stepped (a pitch in bytes made a pitch in elements).
/// Under one `if` (`if (n % 256 != 0) blocks++;`, C's rounded-up division), the step is taken
/// where the condition holds: `(n % 256 != 0) ? ((n / 256) + (1)) : (n / 256)`, which the spec
/// writes `ceil_div(n, 256)`; under several, where all hold.
fn stepped_once(text: &str, node: Node, body: Option<Node>, values: &[(String, String, usize)], run: &CommandLine, point: usize) -> Option<(String, String, usize)> {
    let target = match node.kind() {
        "update_expression" => node.child_by_field_name("argument")?,
        _ => node.child_by_field_name("left")?,
    };
    let name = Some(&text[target.byte_range()]).filter(|_| target.kind() == "identifier")?;
    let unknown = || Some((name.to_string(), UNKNOWN.to_string(), node.start_byte()));
    let enclosing = enclosing_in(node, body);
    let loop_node = enclosing.iter().find(|n| LOOP_KINDS.contains(&n.kind()));
    // A loop that ends before the point leaves what it steps as many times as it ran
    // (`for (; log2N > 11; log2N -= 2, N >>= 2)` before a launch of `N / 4` threads).
    let ended_before_point = loop_node.is_some_and(|l| !l.byte_range().contains(&point));
    // A loop's own step (`n *= 2` in its header) is the loop's business while the point is in it.
    if loop_node.is_some_and(|l| !l.child_by_field_name("body").is_some_and(|b| b.byte_range().contains(&node.start_byte()))) {
        return if ended_before_point { unknown() } else { None };
    }
    let step = match node.kind() {
        "update_expression" => {
            let operator = if text[node.byte_range()].contains("++") { "+" } else { "-" };
            format!("{operator} (1)")
        }
        _ => {
            // `x = y = x > y ? x : y`: each of them is the last value.
            let mut right = node.child_by_field_name("right")?;
            while right.kind() == "assignment_expression" && right.child_by_field_name("operator").is_some_and(|o| &text[o.byte_range()] == "=") {
                right = right.child_by_field_name("right")?;
            }
            let right = &text[right.byte_range()];
            match text[node.child_by_field_name("operator")?.byte_range()].strip_suffix('=')? {
                "" => right.to_string(),
                operator if matches!(operator, "/" | "*" | "+" | "-" | "<<" | ">>") => format!("{operator} ({right})"),
                _ => return unknown(),
            }
        }
    };
    // `name = name + 1` is its own value, rewritten; `name += 1` the value it steps.
    let plain = node.kind() == "assignment_expression" && text[node.child_by_field_name("operator")?.byte_range()] == *"=";
    let Some((_, before, before_at)) = values.iter().rev().find(|(n, _, _)| n == name) else {
        // A parameter stepped in a loop: the caller's value is where the loop starts.
        return if ended_before_point { unknown() } else { None };
    };
    // A step in a loop's body happens as many times as the loop runs, unless the value is given
    // again in each pass (`unsigned int bytes = …; bytes += pad;`): then it is stepped once.
    if let Some(loop_node) = loop_node.filter(|l| !l.byte_range().contains(before_at)) {
        return match product_of_sizes(text, node, *loop_node, before, values) {
            Some(numel) => Some((name.to_string(), numel, node.start_byte())),
            None => unknown(),
        };
    }
    // What the occupancy calculator wrote, stepped, is still unknown.
    if before == UNKNOWN || enclosing.iter().any(|n| n.kind() == "conditional_expression") {
        return unknown();
    }
    let stepped = match plain {
        true => rename_identifiers_in(&step, |word| (word == name).then(|| format!("({before})"))),
        false => format!("({before}) {step}"),
    };
    match given_under_condition(text, &enclosing, name, before, stepped, values, run) {
        Some(value) => Some((name.to_string(), value, node.start_byte())),
        None => unknown(),
    }
}

/// `n *= x.size(i)` in `for (int i = S; i < B; ++i)` after `n = 1`: the product of the
/// dimensions the loop reads. Over every dimension (`i = 0; i < x.dim()`, or `< ndim`, a local
/// holding `x.dim()`) the tensor's element count, `x.numel()`; between bounds the function
/// gives numbers (`i = 0; i < dim` with `const int64_t dim = 1`, apex's softmax) each of those
/// dimensions, `x.size(0)`, and `1` where the loop reads none.
fn product_of_sizes(text: &str, step: Node, loop_node: Node, before: &str, values: &[(String, String, usize)]) -> Option<String> {
    const MAX_DIMENSIONS: i64 = 8;
    let operator = &text[step.child_by_field_name("operator")?.byte_range()];
    let (variable, start) = loop_passes::start_of(text, loop_node.child_by_field_name("initializer")?)?;
    let (tensor, index) = tensor_size_call(&text[step.child_by_field_name("right")?.byte_range()])?;
    let condition = loop_node.child_by_field_name("condition").filter(|c| c.kind() == "binary_expression")?;
    let (left, compare, right) = (condition.child_by_field_name("left")?, condition.child_by_field_name("operator")?, condition.child_by_field_name("right")?);
    let given = |name: &str| values.iter().rev().find(|(n, _, _)| n == name).map(|(_, value, _)| value.clone());
    let bound = text[right.byte_range()].trim();
    let bound = given(bound).unwrap_or_else(|| bound.to_string());
    let update: String = text[loop_node.child_by_field_name("update")?.byte_range()].split_whitespace().collect();
    let by_one = [format!("++{variable}"), format!("{variable}++"), format!("{variable}+=1")].contains(&update);
    let counts_up = operator == "*=" && before.trim() == "1" && text[left.byte_range()] == variable && index == variable && &text[compare.byte_range()] == "<" && by_one;
    if !counts_up {
        return None;
    }
    let rank_of_tensor = [format!("{tensor}.dim()"), format!("{tensor}.ndimension()")].iter().any(|r| r == bound.trim());
    if rank_of_tensor && start.trim() == "0" {
        return Some(format!("{tensor}.numel()"));
    }
    let number = |expression: &str| eval_constant(expression, &|name| eval_constant(&given(name)?, &|_| None));
    let (first, end) = (number(start)?, number(&bound)?);
    (end - first <= MAX_DIMENSIONS).then_some(())?;
    let dimensions: Vec<String> = (first..end).map(|k| format!("{tensor}.size({k})")).collect();
    Some(if dimensions.is_empty() { "1".to_string() } else { dimensions.join(" * ") })
}

/// The function a call that gives no number starts with (`cudaOccupancy…(&blocks, …)` at byte
/// `at`), for a value it left unknown.
fn called_at(text: &str, value: &str, at: usize) -> Option<(String, usize)> {
    let callee = text[at..].split('(').next()?.trim();
    (value == UNKNOWN && is_identifier(callee)).then(|| (callee.to_string(), at))
}

/// Whether `statement` begins by stepping `name`: `n *= 2`, `n += k`, `n++`.
fn is_step_of(statement: &str, name: &str) -> bool {
    let rest = statement.strip_prefix(name).map(str::trim_start).unwrap_or_default();
    ["*=", "/=", "+=", "-=", "<<=", ">>=", "++", "--"].iter().any(|op| rest.starts_with(op))
}

/// `x.size(i)` as the tensor's name and the index's text.
fn tensor_size_call(text: &str) -> Option<(&str, &str)> {
    let (tensor, rest) = text.trim().split_once(".size(")?;
    let index = rest.strip_suffix(')')?.trim();
    (is_identifier(tensor) && is_identifier(index)).then_some((tensor, index))
}

/// The nodes around `node` up to the function's `body`, innermost first.
fn enclosing_in<'t>(node: Node<'t>, body: Option<Node<'t>>) -> Vec<Node<'t>> {
    std::iter::successors(node.parent(), |n| n.parent()).take_while(|n| Some(*n) != body).collect()
}

/// The kinds of tree-sitter nodes that are loops.
const LOOP_KINDS: [&str; 4] = ["for_statement", "while_statement", "do_statement", "for_range_loop"];

/// `value`, read in `frame`, with each local whose value is worked out from the block (a name
/// `in_block` says is one, itself or through other locals) written out as that value.
fn written_out_from_block(frame: &Frame, value: &str, in_block: &dyn Fn(&str) -> bool, depth: usize) -> String {
    const MAX_DEPTH: usize = 4;
    rename_identifiers_in(value, |word| {
        let local = frame.scope.value_text(word).filter(|_| depth < MAX_DEPTH && !in_block(word))?;
        let written = written_out_from_block(frame, local, in_block, depth + 1);
        let from_block = identifiers_in(&written).any(in_block);
        from_block.then(|| format!("({written})"))
    })
}

/// What decides the `if`s around a value given after an earlier one.
#[derive(Clone, Copy, PartialEq)]
enum Decided {
    /// Only the program's documented run: a condition on other values stays a choice.
    ByTheRun,
    /// Also the values given so far (a call under `if (input_file)`, still `NULL`, is not made).
    ByValues,
}

/// The value `name` holds after `node` gives it `value`, where an earlier value may stay: `value`
/// itself in a loop or with no earlier value; under `if`s outside the earlier value's own block,
/// the value those branches choose ([`given_under_condition`]), or the earlier one where
/// `decided` rules the branch out; unknown where a condition cannot be read.
#[allow(clippy::too_many_arguments)]
fn given_after_earlier(text: &str, node: Node, body: Option<Node>, name: &str, value: String, values: &[(String, String, usize)], run: &CommandLine, decided: Decided) -> String {
    let earlier = values.iter().rev().find(|(n, _, _)| n == name).filter(|(_, before, _)| before != UNKNOWN);
    let Some((_, before, given_at)) = earlier else { return value };
    let enclosing: Vec<Node> = enclosing_in(node, body).into_iter().filter(|n| !n.byte_range().contains(given_at)).collect();
    if in_loop(&enclosing) {
        return value;
    }
    if decided == Decided::ByValues && branch_not_taken(text, &enclosing, values) {
        return before.clone();
    }
    given_under_condition(text, &enclosing, name, before, value, values, run).unwrap_or_else(|| UNKNOWN.to_string())
}

/// Whether one of the `enclosing` nodes is a loop.
fn in_loop(enclosing: &[Node]) -> bool {
    enclosing.iter().any(|n| LOOP_KINDS.contains(&n.kind()))
}

/// `value`, given to `name` by a statement whose ancestors up to the function's body are
/// `enclosing`, as `name` holds it afterwards: `value` itself outside any `if`; under `if (c)`
/// (or several, `else` branches negated and all joined by `&&`), `(c) ? (value) : (before)`; in a
/// `case` of a `switch`, `c` says the switch's value is the case's.
/// Each condition is read with the earlier value where it tests `name`, and decided as the
/// program's `run` decides it where it reads the command line.
fn given_under_condition(text: &str, enclosing: &[Node], name: &str, before: &str, value: String, values: &[(String, String, usize)], run: &CommandLine) -> Option<String> {
    let mut conditions: Vec<String> = Vec::new();
    for n in enclosing {
        if n.kind() == "case_statement" {
            match case_condition(text, *n, &|expr| settled(values, expr, 0))? {
                CaseTaken::Settled(false) => return Some(before.to_string()),
                CaseTaken::Settled(true) => {}
                CaseTaken::When(condition) => conditions.push(format!("({})", rename_identifiers_in(&condition, |word| (word == name).then(|| format!("({before})"))))),
            }
            continue;
        }
        let Some(branch) = n.parent().filter(|p| p.kind() == "if_statement") else { continue };
        let taken = branch.child_by_field_name("consequence") == Some(*n);
        if !taken && branch.child_by_field_name("alternative") != Some(*n) {
            continue;
        }
        let condition = branch.child_by_field_name("condition").map(|c| &text[c.byte_range()])?;
        let condition = rename_identifiers_in(condition.trim(), |word| (word == name).then(|| format!("({before})")));
        match run.decide(&condition) {
            // A flag the program's own run does not give (`-sizemult`): that run's value.
            Some(holds) if (holds != 0) != taken => return Some(before.to_string()),
            Some(_) => {}
            None if taken => conditions.push(format!("({condition})")),
            None => conditions.push(format!("!({condition})")),
        }
    }
    Some(match conditions.is_empty() {
        true => value,
        false => format!("({}) ? ({value}) : ({before})", conditions.join(" && ")),
    })
}

/// Whether a `case` of a `switch` runs.
enum CaseTaken {
    /// The switch's value is a constant of the program (`const int mode = 1;`): a dispatch the
    /// program settles, not a choice that varies.
    Settled(bool),
    /// Where the condition holds.
    When(String),
}

/// When the statements of `case` (a `case` or `default` of a `switch`) run: the switch's value
/// equal to the case's or to one of the empty cases just above it (`case 1: case 2:`), or, for
/// `default`, to none of the others; settled where `constant` gives the switch's value and every
/// label's. None where an earlier case with statements falls through into it.
fn case_condition(text: &str, case: Node, constant: &dyn Fn(&str) -> Option<i64>) -> Option<CaseTaken> {
    let labels = case.parent().filter(|b| b.kind() == "compound_statement")?;
    let switch = labels.parent().filter(|s| s.kind() == "switch_statement")?;
    let subject = text[switch.child_by_field_name("condition")?.byte_range()].trim();
    let subject = subject.strip_prefix('(').and_then(|s| s.strip_suffix(')')).unwrap_or(subject).trim().to_string();
    let cases: Vec<Node> = labels.named_children(&mut labels.walk()).filter(|c| c.kind() == "case_statement").collect();
    let at = cases.iter().position(|c| *c == case)?;
    let value = |c: &Node| c.child_by_field_name("value").map(|v| text[v.byte_range()].trim().to_string());
    let mut values = vec![value(&case)];
    for earlier in cases[..at].iter().rev() {
        match case_statements(*earlier).last() {
            None => values.push(value(earlier)),
            Some(last) if ends_in_jump(*last) => break,
            Some(_) => return None,
        }
    }
    let is_default = values.iter().any(Option::is_none);
    let reached: Vec<String> = values.into_iter().flatten().collect();
    // `default` (with the empty cases above it, `case 3: default:`): none of the other labels.
    let labels: Vec<String> = if is_default { cases.iter().filter_map(value).filter(|l| !reached.contains(l)).collect() } else { reached };
    if let Some(switched) = constant(&subject) {
        let settled: Option<Vec<i64>> = labels.iter().map(|l| constant(l)).collect();
        if let Some(settled) = settled {
            return Some(CaseTaken::Settled(settled.contains(&switched) != is_default));
        }
    }
    // Bare names and numbers: `(mode)` would read as a cast.
    let compared = |op: &str| labels.iter().map(|l| format!("{} {op} {}", operand(&subject), operand(l))).collect::<Vec<_>>();
    Some(CaseTaken::When(match is_default {
        // `default`: none of the labelled cases.
        true if labels.is_empty() => "1".to_string(),
        true => compared("!=").join(" && "),
        false => compared("==").join(" || "),
    }))
}

/// The value of `expr` where it is a constant of the program: numbers, and names whose last value
/// in `values` is one, a few levels deep.
fn settled(values: &[(String, String, usize)], expr: &str, depth: usize) -> Option<i64> {
    eval_constant(&strip_casts_everywhere(expr), &|name| {
        if let Some(literal) = pointer_or_truth_literal(name) {
            return Some(literal);
        }
        let (_, value, _) = values.iter().rev().find(|(n, _, _)| n == name)?;
        (depth < 4 && value != UNKNOWN).then(|| settled(values, value, depth + 1)).flatten()
    })
}

/// Whether an `if` among `enclosing` takes the other branch by the values given so far: a
/// call under `if (input_file)` with `input_file` still `NULL` is not made.
fn branch_not_taken(text: &str, enclosing: &[Node], values: &[(String, String, usize)]) -> bool {
    enclosing.iter().any(|n| {
        let Some(branch) = n.parent().filter(|p| p.kind() == "if_statement") else { return false };
        let taken = branch.child_by_field_name("consequence") == Some(*n);
        let holds = branch.child_by_field_name("condition").and_then(|c| settled(values, &text[c.byte_range()], 0));
        holds.is_some_and(|holds| (holds != 0) != taken)
    })
}

/// What [`HostContext::in_spec_names_keeping_block`] writes for the block's extents, x to z.
pub(super) const BLOCK_EXTENT_NAMES: [&str; 3] = ["__block_extent_x", "__block_extent_y", "__block_extent_z"];

/// The number a null pointer or a truth value stands for in a condition.
fn pointer_or_truth_literal(name: &str) -> Option<i64> {
    match name {
        "NULL" | "nullptr" | "false" => Some(0),
        "true" => Some(1),
        _ => None,
    }
}

/// The statements of a `case`, after its label.
fn case_statements(case: Node) -> Vec<Node> {
    let label = case.child_by_field_name("value");
    case.named_children(&mut case.walk()).filter(|s| s.kind() != "comment" && Some(*s) != label).collect()
}

/// Whether `statement` leaves its `case` (`break`, `return`, …), itself or as a block's last.
fn ends_in_jump(statement: Node) -> bool {
    match statement.kind() {
        "break_statement" | "return_statement" | "continue_statement" | "goto_statement" | "throw_statement" => true,
        "compound_statement" => statement.named_children(&mut statement.walk()).filter(|s| s.kind() != "comment").last().is_some_and(ends_in_jump),
        _ => false,
    }
}

/// The last value `body` gives `name` (declared with it, or assigned) before byte `point`, in the
/// program's `run`: not one assigned only when the user asks for it and the run does not
/// (`if (getCmdLineArgumentString(argc, argv, "image", &filename)) image_filename = filename;`).
fn value_before(text: &str, body: Node, name: &str, point: usize, run: &CommandLine) -> Option<String> {
    descendants(body)
        .take_while(|n| n.start_byte() < point)
        .filter_map(|n| match n.kind() {
            "init_declarator" => n.child_by_field_name("declarator").and_then(declared_name).zip(n.child_by_field_name("value")),
            "assignment_expression" if !only_when_asked(text, n, body, run) => n.child_by_field_name("left").zip(n.child_by_field_name("right")),
            _ => None,
        })
        .filter(|(target, _)| &text[target.byte_range()] == name)
        .last()
        .map(|(_, value)| text[value.byte_range()].to_string())
}

/// Whether `node` runs only under a condition on the command line that the program's `run`
/// does not take.
fn only_when_asked(text: &str, node: Node, body: Node, run: &CommandLine) -> bool {
    let mut child = node;
    while let Some(parent) = child.parent().filter(|p| p.id() != body.id()) {
        if parent.kind() == "if_statement" {
            let condition = parent.child_by_field_name("condition").map(|c| run.decide(&text[c.byte_range()]));
            let in_consequence = parent.child_by_field_name("consequence").is_some_and(|c| c.id() == child.id());
            let in_alternative = parent.child_by_field_name("alternative").is_some_and(|a| a.id() == child.id());
            match condition.flatten() {
                Some(0) if in_consequence => return true,
                Some(v) if v != 0 && in_alternative => return true,
                _ => {}
            }
        }
        child = parent;
    }
    false
}

/// The value a file-scope declaration gives `name` (`const char *imageFilename = "a.pgm"`).
fn file_scope_value(text: &str, root: Node, name: &str) -> Option<String> {
    file_scope_declarations(root).into_iter().find_map(|decl| {
        let mut cursor = decl.walk();
        let init = decl
            .children_by_field_name("declarator", &mut cursor)
            .filter(|d| d.kind() == "init_declarator")
            .find(|d| d.child_by_field_name("declarator").and_then(declared_name).is_some_and(|n| &text[n.byte_range()] == name))?;
        init.child_by_field_name("value").map(|v| text[v.byte_range()].to_string())
    })
}

/// The names functions assign with `=`, but for values read from the command line, which
/// change the program's defaults only when the user asks.
fn assigned_in_functions(text: &str, root: Node) -> Vec<String> {
    let mut out = Vec::new();
    for assignment in descendants(root).filter(|n| n.kind() == "assignment_expression") {
        let (Some(left), Some(right)) = (assignment.child_by_field_name("left").filter(|l| l.kind() == "identifier"), assignment.child_by_field_name("right")) else { continue };
        let (name, value) = (&text[left.byte_range()], &text[right.byte_range()]);
        // `noise += step` and `lerp = MAX(lerp - step, 0)` step from the initial value, which
        // stays the program's starting point (a key handler's, say).
        let is_plain = assignment.child_by_field_name("operator").is_some_and(|o| &text[o.byte_range()] == "=");
        if is_plain && !identifiers_in(value).any(|w| w == name) && !reads_command_line(value) && !is_clamp(text, assignment, name) {
            out.push(name.to_string());
        }
    }
    out
}

/// The file-scope variables of a file that a function sets once from the command line
/// (`cols = atoi(argv[1]);` in `init`), under conditions the program's documented `run` takes
/// (`if (argc == 4)`), with the value that run gives them.
fn globals_set_from_run(text: &str, root: Node, run: &CommandLine) -> Vec<(String, String)> {
    if run.written_in.is_none() {
        return Vec::new();
    }
    let file_scope: BTreeSet<&str> = file_scope_declarations(root)
        .into_iter()
        .flat_map(|decl| decl.children_by_field_name("declarator", &mut decl.walk()).collect::<Vec<_>>())
        .filter_map(|d| match d.kind() {
            "identifier" => Some(&text[d.byte_range()]),
            "init_declarator" => d.child_by_field_name("declarator").filter(|n| n.kind() == "identifier").map(|n| &text[n.byte_range()]),
            _ => None,
        })
        .collect();
    let mut set: HashMap<&str, Vec<Option<String>>> = HashMap::new();
    for function in descendants(root).filter(|n| n.kind() == "function_definition") {
        let Some(body) = function.child_by_field_name("body") else { continue };
        for assignment in descendants(body).filter(|n| n.kind() == "assignment_expression") {
            let Some(left) = assignment.child_by_field_name("left").filter(|l| l.kind() == "identifier") else { continue };
            let name = &text[left.byte_range()];
            if !file_scope.contains(name) || declared_in(text, body, name) {
                continue;
            }
            let value = assignment.child_by_field_name("right").map(|r| &text[r.byte_range()]).filter(|v| reads_command_line(v));
            let given = value.filter(|_| taken_in_run(text, assignment, body, run)).and_then(|v| run.read(v));
            set.entry(name).or_default().push(given);
        }
    }
    set.into_iter().filter_map(|(name, values)| match values.as_slice() {
        [Some(value)] => Some((name.to_string(), value.clone())),
        _ => None,
    }).collect()
}

/// The command-line flags a file defines with gflags (`DEFINE_uint32(M, 512, "rows")` makes
/// `FLAGS_M`), each with the value the program's documented run gives it (`-M=1024`), else its
/// default; a bool's is 1 or 0.
fn command_line_flags(text: &str, run: &CommandLine) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for line in text.lines() {
        let Some((kind, rest)) = line.trim_start().strip_prefix("DEFINE_").and_then(|d| d.split_once('(')) else { continue };
        let mut fields = rest.splitn(3, ',').map(str::trim);
        let (Some(name), Some(default)) = (fields.next(), fields.next()) else { continue };
        if !is_identifier(name) {
            continue;
        }
        let value = match (kind.trim(), run.flag(name)) {
            ("bool", Some(given)) => u8::from(given.is_none_or(|v| v == "true" || v == "1")).to_string(),
            ("bool", None) => u8::from(default == "true").to_string(),
            ("int32" | "uint32" | "int64" | "uint64" | "double", Some(Some(given))) => given.to_string(),
            ("int32" | "uint32" | "int64" | "uint64" | "double", _) => default.to_string(),
            _ => continue,
        };
        out.push((format!("FLAGS_{name}"), value));
    }
    out
}

/// Whether `body` declares a local `name`, which hides a file-scope one.
fn declared_in(text: &str, body: Node, name: &str) -> bool {
    descendants(body).any(|n| matches!(n.kind(), "declaration" | "parameter_declaration") && n.children_by_field_name("declarator", &mut n.walk()).any(|d| declared_name(d).is_some_and(|d| &text[d.byte_range()] == name)))
}

/// Whether `node` runs once in the program's `run`: under no loop of `body`, and each `if`
/// around it decided by that run and taken.
fn taken_in_run(text: &str, node: Node, body: Node, run: &CommandLine) -> bool {
    let mut child = node;
    while let Some(parent) = child.parent().filter(|p| p.id() != body.id()) {
        if LOOP_KINDS.contains(&parent.kind()) {
            return false;
        }
        if parent.kind() == "if_statement" {
            let Some(holds) = parent.child_by_field_name("condition").and_then(|c| run.decide(&text[c.byte_range()])) else { return false };
            let in_consequence = parent.child_by_field_name("consequence").is_some_and(|c| c.id() == child.id());
            if (holds != 0) != in_consequence {
                return false;
            }
        }
        child = parent;
    }
    true
}

/// Whether `assignment` of `name` is the branch of an `if` that tests `name` itself (`if (radius
/// > 64) radius = 64;`): a bound on a value that steps, not a new starting point.
fn is_clamp(text: &str, assignment: Node, name: &str) -> bool {
    let Some(statement) = assignment.parent().filter(|p| p.kind() == "expression_statement") else { return false };
    let mut up = statement.parent();
    while let Some(node) = up {
        match node.kind() {
            "compound_statement" | "else_clause" => up = node.parent(),
            "if_statement" => return node.child_by_field_name("condition").is_some_and(|c| identifiers_in(&text[c.byte_range()]).any(|w| w == name)),
            _ => return false,
        }
    }
    false
}

/// Whether `call` runs only when the user asks for it on the command line: it is in the branch
/// of an `if` whose condition reads the command line (`if (argc > 2)`) and that the program's
/// documented `run` does not decide taken, or a variable set only from it (`if (runShmoo)`
/// after `bool runShmoo = checkCmdLineFlag(argc, argv, "shmoo")`).
fn asked_for_on_command_line(call: &Call, run: &CommandLine) -> bool {
    let text = call.text;
    let Some(body) = call.caller.child_by_field_name("body") else { return false };
    let reads_flag = |value: &str| reads_command_line(value) || identifiers_in(value).any(|w| w == "argc" || w == "checkCmdLineFlag");
    // Only from it: `kernel_num = 1`, changed by `atoi(argv[1])`, is the program's choice too.
    let set_from_flag = |name: &str| {
        let values: Vec<&str> = descendants(body)
            .filter_map(|n| match n.kind() {
                "init_declarator" => n.child_by_field_name("declarator").zip(n.child_by_field_name("value")),
                "assignment_expression" => n.child_by_field_name("left").zip(n.child_by_field_name("right")),
                _ => None,
            })
            .filter(|(target, _)| text[target.byte_range()].trim() == name)
            .map(|(_, value)| &text[value.byte_range()])
            .collect();
        !values.is_empty() && values.iter().all(|v| reads_flag(v))
    };
    let mut child = call.node;
    for parent in std::iter::successors(call.node.parent(), |n| n.parent()).take_while(|n| *n != body) {
        if parent.kind() == "if_statement" && parent.child_by_field_name("consequence") == Some(child) {
            let condition = parent.child_by_field_name("condition").map_or("", |c| &text[c.byte_range()]);
            let taken_by_run = run.written_in.is_some() && run.decide(condition).is_some_and(|holds| holds != 0);
            if !taken_by_run && (reads_flag(condition) || identifiers_in(condition).any(set_from_flag)) {
                return true;
            }
        }
        child = parent;
    }
    false
}

/// Whether a value is read from the command line (`atoi(argv[1])`, `getCmdLineArgumentInt`).
fn reads_command_line(value: &str) -> bool {
    identifiers_in(value).any(|w| w == "argv" || w == "optarg" || w.starts_with("getCmdLineArgument"))
}

fn file_constants_of(text: &str, root: Node) -> HashMap<String, String> {
    let mut out = HashMap::new();
    for decl in file_scope_declarations(root) {
        let mut inner = decl.walk();
        for init in decl.children_by_field_name("declarator", &mut inner).filter(|d| d.kind() == "init_declarator") {
            if let (Some(name), Some(value)) = (init.child_by_field_name("declarator"), init.child_by_field_name("value")) {
                if value.kind() == "identifier" {
                    out.insert(text[name.byte_range()].to_string(), text[value.byte_range()].to_string());
                }
            }
        }
    }
    out
}

/// `p.weights[0]`: an element of a struct's array member at a literal index, which a struct
/// filled member by member assigns as it does `p.n`.
fn is_member_element(text: &str, node: Node) -> bool {
    let literal_index = node.child_by_field_name("indices").or_else(|| node.child_by_field_name("index")).is_some_and(|i| text[i.byte_range()].trim_matches(['[', ']', ' ']).chars().all(|c| c.is_ascii_digit()));
    node.kind() == "subscript_expression" && node.child_by_field_name("argument").is_some_and(|a| a.kind() == "field_expression") && literal_index
}

pub(super) fn strip_outer_parens(text: &str) -> &str {
    let t = text.trim();
    match t.strip_prefix('(').and_then(|r| r.strip_suffix(')')) {
        Some(inner) if balanced(inner) => inner.trim(),
        _ => t,
    }
}

/// `(((x)))` → `x`.
pub(super) fn strip_all_outer_parens(text: &str) -> &str {
    let mut text = text.trim();
    while strip_outer_parens(text) != text {
        text = strip_outer_parens(text);
    }
    text
}

fn balanced(text: &str) -> bool {
    let mut depth = 0i32;
    for c in text.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            _ => {}
        }
        if depth < 0 {
            return false;
        }
    }
    depth == 0
}

/// Splits `a, f(b, c), d` at its top-level commas.
pub(super) fn split_args(text: &str) -> Vec<String> {
    split_top_level(text, ',').into_iter().map(|a| a.trim().to_string()).collect()
}

/// The constructor arguments of `dim3 name(...)` or `dim3 name = dim3(...)`/`{...}` in `body`
/// that byte `point` sees, and the byte offset of the declaration: the last made before it in
/// a block around it, else the first in sight.
fn dim3_local(text: &str, body: Node, name: &str, point: usize) -> Option<(Vec<String>, usize)> {
    let in_sight: Vec<(Vec<String>, usize)> =
        descendants(body).filter(|n| n.kind() == "declaration" && in_sight_of(*n, point)).filter_map(|node| Some((dim3_declared(text, node, name)?, node.start_byte()))).collect();
    let last_before = in_sight.iter().rposition(|(_, at)| *at < point).unwrap_or(0);
    in_sight.into_iter().nth(last_before)
}

/// Whether what `declaration` declares is in scope at byte `point`: the block it is declared
/// in (a `{ … }`, or a `for` for its initializer) holds the point.
fn in_sight_of(declaration: Node, point: usize) -> bool {
    let block = std::iter::successors(declaration.parent(), |n| n.parent()).find(|n| matches!(n.kind(), "compound_statement" | "for_statement" | "for_range_loop" | "function_definition"));
    block.is_none_or(|b| b.kind() == "function_definition" || b.byte_range().contains(&point))
}

/// The extents `declaration` gives the `dim3` named `name`: `dim3 name(a, b)`, `const dim3
/// name = dim3(a)`, `dim3 name{a}`, or 1, 1, 1 for `dim3 name;`.
fn dim3_declared(text: &str, declaration: Node, name: &str) -> Option<Vec<String>> {
    if declaration.child_by_field_name("type").is_none_or(|t| !EXTENT_TYPES.contains(&&text[t.byte_range()])) {
        return None;
    }
    declaration.children_by_field_name("declarator", &mut declaration.walk()).find_map(|declarator| {
        if declarator.kind() == "identifier" {
            return (&text[declarator.byte_range()] == name).then(|| vec!["1".to_string()]);
        }
        let declared = declarator.child_by_field_name("declarator").filter(|d| &text[d.byte_range()] == name)?;
        let value = &text[declarator.byte_range()][declared.end_byte() - declarator.start_byte()..];
        dim3_arguments(value.trim().trim_start_matches('=').trim())
    })
}

/// `(a, b)`, `{a, b}` or `dim3(a, b)` → `[a, b]`.
fn dim3_arguments(value: &str) -> Option<Vec<String>> {
    let value = value.trim();
    let value = EXTENT_CONSTRUCTORS.iter().find_map(|c| value.strip_prefix(c)).unwrap_or(value).trim();
    let inner = value.strip_prefix('(').and_then(|r| r.strip_suffix(')')).or_else(|| value.strip_prefix('{').and_then(|r| r.strip_suffix('}')))?;
    balanced(inner).then(|| split_args(inner))
}

/// The types a launch takes as its grid or block: `dim3`, or the vector a `make_uint3` makes.
const EXTENT_TYPES: [&str; 2] = ["dim3", "uint3"];
/// What makes one, and how the value is written: `dim3(a, b)`, `make_uint3(a, b, 1)`.
const EXTENT_CONSTRUCTORS: [&str; 2] = ["dim3", "make_uint3"];

/// The extents of a file-scope `dim3 name(...)`, or 1, 1, 1 for a `dim3 name;`.
fn dim3_global(text: &str, root: Node, name: &str) -> Option<Vec<String>> {
    file_scope_declarations(root).into_iter().find_map(|node| dim3_declared(text, node, name))
}

/// The declarations at file scope, those inside `extern "C"` included (`extern "C" const uint
/// MIN_SHORT_ARRAY_SIZE = 4;`).
pub(super) fn file_scope_declarations(root: Node) -> Vec<Node> {
    let mut out = Vec::new();
    let mut cursor = root.walk();
    for child in root.named_children(&mut cursor) {
        match child.kind() {
            "declaration" => out.push(child),
            // A header's whole text, inside its include guard.
            "preproc_ifdef" if is_include_guard(child) => out.extend(file_scope_declarations(child)),
            "linkage_specification" => {
                let Some(body) = child.child_by_field_name("body") else { continue };
                match body.kind() {
                    "declaration" => out.push(body),
                    _ => out.extend(body.named_children(&mut body.walk()).filter(|n| n.kind() == "declaration")),
                }
            }
            _ => {}
        }
    }
    out
}

/// `#ifndef NAME` `#define NAME …` `#endif` with no `#else`: what a header reads the first
/// time it is included, which is all of it.
fn is_include_guard(ifdef: Node) -> bool {
    let negated = ifdef.child(0).is_some_and(|c| c.kind() == "#ifndef");
    let defines_first = ifdef.named_child(1).is_some_and(|c| c.kind() == "preproc_def");
    negated && defines_first && ifdef.child_by_field_name("alternative").is_none()
}

/// `base` and `offset` of an argument that points into a buffer: `&d_a[2 * i]` or `d_a + 2 * i`.
fn element_address(arg: &str) -> Option<(String, String)> {
    let arg = strip_outer_parens(arg.trim());
    if let Some(element) = arg.strip_prefix('&').map(str::trim).and_then(|e| e.strip_suffix(']')) {
        let (base, offset) = element.split_once('[')?;
        let base = base.trim();
        return (is_identifier(base) && balanced(offset)).then(|| (base.to_string(), offset.trim().to_string()));
    }
    let (base, offset) = arg.split_once('+')?;
    let base = without_pointer_cast(base.trim());
    (is_identifier(base) && balanced(offset) && !offset.contains(['+', '-'])).then(|| (base.to_string(), offset.trim().to_string()))
}

/// `bytes`, or, where they are a member that `function` sets before `at`, what it sets it to:
/// `sizeof(float) * mat_size` for `result.mat_size_f` of an init function that did
/// `result.mat_size_f = sizeof(float) * mat_size;`.
fn members_given_before(text: &str, function: Node, bytes: &str, at: usize) -> String {
    let Some(body) = function.child_by_field_name("body") else { return bytes.to_string() };
    let mut bytes = bytes.to_string();
    for assignment in descendants(body).filter(|n| n.kind() == "assignment_expression" && n.end_byte() <= at) {
        let (Some(left), Some(right)) = (assignment.child_by_field_name("left"), assignment.child_by_field_name("right")) else { continue };
        let member = text[left.byte_range()].trim();
        if left.kind() == "field_expression" && bytes.trim() == member {
            bytes = text[right.byte_range()].to_string();
        }
    }
    bytes
}

/// `object.member + offset` taken apart.
fn member_plus_offset(text: &str) -> Option<(String, String)> {
    let (base, offset) = text.split_once('+')?;
    let (object, member) = base.trim().split_once('.')?;
    let offset = offset.trim();
    (is_identifier(object) && is_identifier(member) && !offset.is_empty() && split_top_level(text, '+').len() == 2).then(|| (base.trim().to_string(), offset.to_string()))
}

/// `name = base + offset` (a declaration or an assignment) in `body`: the pointer `name` is
/// `offset` elements into `base`.
fn pointer_offset(text: &str, body: Node, name: &str) -> Option<(String, String)> {
    descendants(body).find_map(|node| {
        let (target, value) = match node.kind() {
            "init_declarator" => (node.child_by_field_name("declarator").and_then(declared_name)?, node.child_by_field_name("value")?),
            "assignment_expression" => (node.child_by_field_name("left")?, node.child_by_field_name("right")?),
            _ => return None,
        };
        if &text[target.byte_range()] != name || value.kind() != "binary_expression" {
            return None;
        }
        let operator = value.child_by_field_name("operator").map(|o| &text[o.byte_range()]);
        let (base, offset) = (value.child_by_field_name("left")?, value.child_by_field_name("right")?);
        let base = without_pointer_cast(&text[base.byte_range()]);
        (operator == Some("+") && is_identifier(base)).then(|| (base.to_string(), text[offset.byte_range()].to_string()))
    })
}

/// The byte count given to `cudaMalloc(&name, bytes)` (with or without a `(void**)` cast).
fn malloc_bytes(text: &str, body: Node, name: &str) -> Option<String> {
    allocations(text, body).find(|a| a.pointer == name).map(|a| a.bytes)
}

/// The bytes of `buffers[t % 2]`, an element of an array of buffers at an index the source
/// does not fix (ping-pong buffers, `int *gpuResult[2]`), when `body` allocates each element it
/// allocates (`cudaMalloc(&buffers[0], …)`, `&buffers[1]`) with the same bytes.
fn element_bytes(text: &str, body: Node, name: &str) -> Option<String> {
    let (base, _) = name.strip_suffix(']')?.split_once('[')?;
    let base = base.trim();
    let mut elements = allocations(text, body).filter(|a| crate::syntax::host::element_at_number(&a.pointer).is_some_and(|(b, _)| b == base)).map(|a| a.bytes);
    let first = elements.next()?;
    elements.all(|bytes| bytes == first).then_some(first)
}

/// A device allocation: the pointer it sets, the bytes asked for, and where the call starts.
pub(super) struct Allocation {
    pub pointer: String,
    pub bytes: String,
    pub at: usize,
}

/// The device allocations under `node`.
pub(super) fn allocations<'t>(text: &'t str, node: Node<'t>) -> impl Iterator<Item = Allocation> + 't {
    descendants(node).filter(|n| n.kind() == "call_expression").filter_map(move |call| {
        let function = call.child_by_field_name("function")?;
        let args = call_args(text, call.child_by_field_name("arguments")?);
        let (pointer, bytes) = match &text[function.byte_range()] {
            "cudaMalloc" | "cudaMallocManaged" | "cudaMallocAsync" | "cuMemAlloc" | "cuMemAllocManaged" => (address_taken(args.first()?), strip_outer_parens(args.get(1)?).to_string()),
            "cudaMallocPitch" => (address_taken(args.first()?), pitched_bytes(args.get(2)?, args.get(3)?)),
            _ => return None,
        };
        Some(Allocation { pointer, bytes, at: call.start_byte() })
    })
}

/// `cudaMallocPitch(&ptr, &pitch, widthBytes, height)`: the pitch it sets, and its value.
fn pitched_allocation(text: &str, call: Node) -> Option<(String, String)> {
    let function = call.child_by_field_name("function")?;
    if &text[function.byte_range()] != "cudaMallocPitch" {
        return None;
    }
    let args = call_args(text, call.child_by_field_name("arguments")?);
    let pitch = args.get(1)?.trim().strip_prefix('&')?.trim();
    let width_bytes = args.get(2)?;
    is_identifier(pitch).then(|| (pitch.to_string(), row_pitch(width_bytes)))
}

/// The row pitch `cudaMallocPitch` gives a row of `width_bytes`: the row rounded up to the
/// pitch alignment, 512 bytes on the GPUs cutune tunes on (the run passes this pitch and
/// allocates with it, so a device that aligns otherwise only pads differently).
fn row_pitch(width_bytes: &str) -> String {
    format!("((({}) + {PITCH_ALIGNMENT} - 1) / {PITCH_ALIGNMENT} * {PITCH_ALIGNMENT})", width_bytes.trim())
}

/// The bytes of a pitched allocation, written as elements times the element's size when the row
/// is (`Size.width * sizeof(float)`), so that the buffer's length reads in elements.
fn pitched_bytes(width_bytes: &str, height: &str) -> String {
    let (pitch, height) = (row_pitch(width_bytes), height.trim());
    match width_bytes.rfind("sizeof(").map(|at| &width_bytes[at..]).filter(|s| s.ends_with(')') && balanced(s)) {
        Some(element) => format!("{pitch} / {element} * ({height}) * {element}"),
        None => format!("{pitch} * ({height})"),
    }
}

/// The alignment of a row `cudaMallocPitch` allocates.
const PITCH_ALIGNMENT: u32 = 512;

/// `rows * hidden * sizeof(half)` → `rows * hidden` (for a buffer of halves; `rows * hidden * 2`
/// for one of bytes); a variable holding the byte count is followed once through `scope`.
fn strip_element_size(bytes: &str, elements_per: &dyn Fn(&str) -> Option<(u64, u64)>, scope: &Scope) -> Option<String> {
    let bytes = bytes.trim();
    let bytes = match scope.value_text(bytes) {
        Some(init) if identifiers_in(bytes).count() == 1 && !bytes.contains('(') => init.trim(),
        _ => bytes,
    };
    let bytes = without_integer_static_casts(bytes);
    let bytes = with_sizeof_parenthesised(&expand_vector_sizes(strip_outer_parens(&bytes), scope));
    let factors = split_top_level(&bytes, '*');
    let ratio = |f: &str| {
        // `sizeof( unsigned int )` → `unsigned int`: one space between a type's words.
        let operand = f.trim().strip_prefix("sizeof")?.trim_start().strip_prefix('(')?.strip_suffix(')')?;
        let operand = operand.split_whitespace().collect::<Vec<_>>().join(" ");
        // `sizeof *d_results`, `sizeof(d_results[0])`: the size of the buffer's own element.
        if operand.starts_with('*') || operand.replace(' ', "").ends_with("[0]") {
            return Some((1, 1));
        }
        elements_per(&operand)
    };
    let (position, (numerator, denominator)) = factors.iter().enumerate().find_map(|(i, f)| Some((i, ratio(f)?)))?;
    let mut rest: Vec<String> = factors.iter().enumerate().filter(|(i, _)| *i != position).map(|(_, f)| strip_casts_everywhere(f.trim())).collect();
    if numerator != 1 {
        rest.push(numerator.to_string());
    }
    let product = if rest.is_empty() { "1".to_string() } else { rest.join(" * ") };
    Some(if denominator == 1 { product } else { format!("{product} / {denominator}") })
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a.max(1) } else { gcd(b, a % b) }
}

/// `sizeof *d_results` → `sizeof(*d_results)`: the operand of an unparenthesised `sizeof` is
/// not a factor of its own.
fn with_sizeof_parenthesised(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("sizeof") {
        out.push_str(&rest[..at + 6]);
        rest = &rest[at + 6..];
        if let Some(pointer) = rest.trim_start().strip_prefix('*').map(str::trim_start) {
            let name_len = pointer.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(pointer.len());
            if name_len > 0 {
                out.push_str(&format!("(*{})", &pointer[..name_len]));
                rest = &pointer[name_len..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// `h_a.size()` of a `std::vector<float> h_a(n)` → `(n)`.
fn expand_vector_sizes(bytes: &str, scope: &Scope) -> String {
    let mut out = bytes.to_string();
    for (name, init, _) in &scope.values {
        let call = format!("{name}.size()");
        let args = init.trim().strip_prefix('(').and_then(|i| i.strip_suffix(')'));
        if let Some(args) = args.filter(|_| out.contains(&call)) {
            let count = split_args(args).into_iter().next().unwrap_or_default();
            out = out.replace(&call, &format!("({count})"));
        }
    }
    out
}

/// The type PyTorch's `scalar_t` is first instantiated as by the dispatch macro `dispatch`:
/// every floating-point dispatch has `float`, PyTorch's default dtype, PyTorch's own
/// (`AT_DISPATCH_FLOATING_TYPES_AND_HALF`) and a project's over them
/// (`VLLM_DISPATCH_FLOATING_TYPES`).
fn dispatched_default(ty: &str, dispatch: Option<&str>) -> Option<&'static str> {
    (ty.trim() == "scalar_t" && dispatch.is_some_and(|d| d.contains("FLOAT"))).then_some("float")
}

/// The name of the dtype dispatch macro (`AT_DISPATCH_…`, a project's `…_DISPATCH_…`) whose
/// lambda holds `node`.
fn torch_dispatch_around(text: &str, node: Node) -> Option<String> {
    std::iter::successors(node.parent(), |n| n.parent())
        .filter(|n| n.kind() == "call_expression")
        .filter_map(|call| call.child_by_field_name("function"))
        .map(|function| text[function.byte_range()].to_string())
        .find(|name| is_identifier(name) && name.contains("DISPATCH"))
}

/// `(size_t)rows * hidden` → `rows * hidden`: integer casts the spec's expressions do not need;
/// and `(unsigned int)ceil(n / (float)block)`, C's rounded-up division, → `ceil_div(n, block)`.
fn strip_casts_everywhere(text: &str) -> String {
    let text = without_integer_static_casts(text);
    let mut out = String::with_capacity(text.len());
    let mut rest = text.as_str();
    while let Some(open) = rest.find('(') {
        let close = rest[open..].find(')').map(|c| open + c);
        // `sizeof(int)` and `f(unsigned)` are not casts.
        let after_name = rest[..open].trim_end().ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_');
        let is_integer_cast = !after_name && close.is_some_and(|close| is_integer_type(&rest[open + 1..close]));
        out.push_str(&rest[..open]);
        match close.filter(|_| is_integer_cast) {
            // `(int)(height * scale)` truncates what may be a fraction: `int(…)` says so.
            Some(close) if truncates_a_product(&rest[close + 1..]) => {
                out.push_str("int");
                rest = rest[close + 1..].trim_start();
            }
            Some(close) => rest = &rest[close + 1..],
            None => {
                out.push('(');
                rest = &rest[open + 1..];
            }
        }
    }
    out.push_str(rest);
    components_picked(&ceil_divisions(out.trim()))
}

/// `make_cudaExtent(w, h, d).width` → `w`, `make_int2(a, b).y` → `b`, and `(w, h, d).height`
/// → `h`, what a brace-initialised `cudaExtent extent = {w, h, d};` leaves where `extent` is
/// written out: the component the member names, by the type's order of members.
fn components_picked(text: &str) -> String {
    const MEMBERS: [[&str; 4]; 2] = [["x", "y", "z", "w"], ["width", "height", "depth", ""]];
    let is_word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    // The `(` that the `)` ending `text` closes.
    let opening_paren = |text: &str| balancing_position(text.char_indices().rev(), ')', '(', 0);
    let mut out = text.to_string();
    // From the right, so that each replacement leaves the earlier offsets as they were.
    let mut search_end = out.len();
    while let Some(dot) = out[..search_end].rfind(").") {
        search_end = dot;
        let member: String = out[dot + 2..].chars().take_while(|c| is_word(*c)).collect();
        let Some(index) = MEMBERS.iter().find_map(|names| names.iter().position(|n| !n.is_empty() && *n == member)) else { continue };
        let Some(open) = opening_paren(&out[..=dot]) else { continue };
        let callee_start = out[..open].trim_end_matches(is_word).len();
        let (mut callee, mut inner) = (&out[callee_start..open], &out[open + 1..dot]);
        // `(make_int2(w, h)).x`: the parentheses a value written out gets.
        while callee.is_empty() && inner.trim().ends_with(')') {
            let inner_open = opening_paren(inner.trim()).unwrap_or(0);
            let name = &inner.trim()[..inner_open];
            if !name.chars().all(is_word) {
                break;
            }
            (callee, inner) = (name, &inner.trim()[inner_open + 1..inner.trim().len() - 1]);
        }
        let is_constructor = callee.is_empty() || callee == "dim3" || (callee.starts_with("make_") && callee[5..].starts_with(|c: char| c.is_ascii_alphabetic()));
        let args = split_args(inner);
        if !is_constructor || args.len() < 2 {
            continue;
        }
        // `dim3(n).y` is 1; a brace list's missing members are 0 or the type's default.
        let Some(component) = args.get(index).cloned().or_else(|| (callee == "dim3").then(|| "1".to_string())) else { continue };
        let end = dot + 2 + member.len();
        let replacement = match is_identifier(&component) || component.parse::<i64>().is_ok() {
            true => component,
            false => format!("({component})"),
        };
        out.replace_range(callee_start..end, &replacement);
        search_end = callee_start.min(out.len());
    }
    out
}

/// `1 << 22` → `4194304`, and each parenthesised group of numbers alone that shifts or masks
/// (`(1u << 20) * 0.5` → `1048576 * 0.5`), for a floating-point value to evaluate: the
/// float evaluator reads no bitwise operators. Groups with a name stay as they are.
fn constant_bitwise_folded(text: &str) -> String {
    const BITWISE: [&str; 5] = ["<<", ">>", "&", "|", "^"];
    let folds = |group: &str| BITWISE.iter().any(|op| group.contains(op)) && identifiers_in(group).next().is_none();
    if folds(text) {
        if let Some(value) = eval_constant(text, &|_| None) {
            return value.to_string();
        }
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('(') {
        out.push_str(&rest[..open]);
        let Some(close) = matching_paren(&rest[open..]).map(|c| open + c) else { break };
        let inner = &rest[open + 1..close];
        // `f(1 << 4)`: the call keeps its parentheses; its argument folds inside them.
        let is_call = rest[..open].trim_end().ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_');
        match (!is_call && folds(inner)).then(|| eval_constant(inner, &|_| None)).flatten() {
            Some(value) => out.push_str(&value.to_string()),
            None => {
                out.push('(');
                out.push_str(&constant_bitwise_folded(inner));
                out.push(')');
            }
        }
        rest = &rest[close + 1..];
    }
    out.push_str(rest);
    out
}

/// Whether `operand`, what an integer cast is applied to, starts with a parenthesised product
/// or quotient (`(height * scale)`), which may be a fraction the cast truncates.
fn truncates_a_product(operand: &str) -> bool {
    let operand = operand.trim_start();
    let Some(inner) = operand.strip_prefix('(').and_then(|rest| matching_paren(operand).map(|close| &rest[..close - 1])) else { return false };
    inner.contains(['*', '/', '.'])
}

/// `text` without the `int(…)` calls around integer arithmetic (no floating-point literal
/// inside): there the C cast truncated nothing, and the spec reads better without it.
fn without_exact_int_calls(text: &str) -> String {
    replace_calls(text, "int", |inner| (!has_float_literal(inner)).then(|| format!("({inner})")))
}

/// Whether `text` holds a floating-point literal (`0.5`, `2.f`, `1e-3`).
fn has_float_literal(text: &str) -> bool {
    let words = text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '.' || c == '_'));
    let is_hex = |w: &str| w.starts_with("0x") || w.starts_with("0X");
    words.filter(|w| w.starts_with(|c: char| c.is_ascii_digit() || c == '.')).any(|w| w.contains('.') || (!is_hex(w) && w.contains(['e', 'E', 'f', 'F'])))
}

/// `static_cast<size_t>(a * b)` → `(a * b)`: the C++ spelling of an integer cast.
fn without_integer_static_casts(text: &str) -> String {
    const CAST: &str = "static_cast<";
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(CAST) {
        let inner = &rest[at + CAST.len()..];
        match inner.find('>').filter(|close| is_integer_type(&inner[..*close])) {
            Some(close) => {
                out.push_str(&rest[..at]);
                rest = &inner[close + 1..];
            }
            None => {
                out.push_str(&rest[..at + CAST.len()]);
                rest = inner;
            }
        }
    }
    out.push_str(rest);
    out
}

/// `unsigned int`, `size_t`, `uint32_t`, `long long`: the integer types a cast names.
pub(super) fn is_integer_type(text: &str) -> bool {
    let words: Vec<&str> = text.split_whitespace().collect();
    let plain = |w: &str| matches!(w, "int" | "unsigned" | "signed" | "long" | "short" | "const");
    let named = |w: &str| matches!(w, "size_t" | "ssize_t" | "uint" | "uint32_t" | "int32_t" | "uint64_t" | "int64_t" | "ptrdiff_t" | "clock_t");
    match words.as_slice() {
        [] => false,
        [one] => plain(one) || named(one),
        many => many.iter().all(|w| plain(w)),
    }
}

/// `ceil(n / (float)block)`, `ceil(float(n) / block)` and `ceil(n / 256.0)` → `ceil_div(n,
/// block)`: a division made in floating point only to round up. `ceil(n / 256)` divides
/// integers, which C rounds down before `ceil` sees them: `n / 256`. Other `ceil`s stay.
fn ceil_divisions(text: &str) -> String {
    replace_calls(text, "ceil", |written| {
        let inner = without_float_casts(written);
        let [dividend, divisor] = split_top_level(&inner, '/')[..] else { return None };
        let (dividend, divisor) = (strip_outer_parens(dividend), strip_outer_parens(divisor));
        if divides_integers(written) {
            return Some(format!("({} / {})", super::layout::operand(dividend), super::layout::operand(divisor)));
        }
        let divisor = real_literal_as_integer(divisor).unwrap_or_else(|| divisor.to_string());
        Some(format!("ceil_div({dividend}, {divisor})"))
    })
}

/// The `ceil(a / b)` calls in `text` whose division is of integers (no floating-point cast or
/// literal): C rounds the quotient down before `ceil` sees it, so nothing is rounded up.
pub(super) fn ceils_of_integer_divisions(text: &str) -> Vec<String> {
    calls_named(text, "ceil").into_iter().filter(|(_, inner)| divides_integers(&text[inner.clone()])).map(|(call, _)| text[call].to_string()).collect()
}

/// Whether `text` is one division with no floating-point cast or literal in it.
fn divides_integers(text: &str) -> bool {
    without_float_casts(text) == text && !has_float_literal(text) && split_top_level(text, '/').len() == 2
}

/// `256` of `256.0` or `256.f`: a whole number written as a floating-point literal.
fn real_literal_as_integer(text: &str) -> Option<String> {
    let value: f64 = text.trim().trim_end_matches(['f', 'F']).parse().ok()?;
    (value.fract() == 0.0 && value.abs() < 1e15).then(|| (value as i64).to_string())
}

/// Each call `function(inner)` in `text` (not the tail of a longer name) replaced by what
/// `replace` makes of `inner`; calls it gives `None` for stay.
pub(super) fn replace_calls(text: &str, function: &str, replace: impl Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    for (call, inner) in calls_named(text, function) {
        // Inside a call already replaced.
        if call.start < copied {
            continue;
        }
        if let Some(replacement) = replace(&text[inner]) {
            out.push_str(&text[copied..call.start]);
            out.push_str(&replacement);
            copied = call.end;
        }
    }
    out.push_str(&text[copied..]);
    out
}

/// The calls `function(inner)` in `text` (not the tail of a longer name), nested ones too, in
/// order: the byte range of each call and that of its `inner`.
pub(super) fn calls_named(text: &str, function: &str) -> Vec<(std::ops::Range<usize>, std::ops::Range<usize>)> {
    let opening = format!("{function}(");
    let mut calls = Vec::new();
    let mut from = 0;
    while let Some(at) = text[from..].find(&opening).map(|at| from + at) {
        let open = at + function.len();
        let is_call = !text[..at].ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_');
        if let Some(close) = matching_paren(&text[open..]).map(|e| open + e).filter(|_| is_call) {
            calls.push((at..close + 1, open + 1..close));
        }
        from = open + 1;
    }
    calls
}

/// `text` with its continued lines (a `\` at a line's end, outside a macro too) joined, also
/// where the line's end was already made a space, and each run of spaces made one.
fn lines_joined(text: &str) -> String {
    if !text.contains('\\') {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let continued = c == '\\' && chars.peek().is_some_and(|next| next.is_whitespace());
        if continued || c.is_whitespace() {
            while chars.peek().is_some_and(|next| next.is_whitespace()) {
                chars.next();
            }
            if !out.ends_with(' ') {
                out.push(' ');
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// `text` with each comparison `a == b` or `a != b` of two operands (names, numbers or string
/// literals, at least one a string) replaced by what `truth(a, equal, b)` gives, where it
/// gives something.
fn replace_comparisons(text: &str, truth: impl Fn(&str, bool, &str) -> Option<i64>) -> String {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '.';
    let operator_at = |rest: &str| rest.match_indices("==").chain(rest.match_indices("!=")).map(|(at, _)| at).filter(|&at| !rest[..at].ends_with(['<', '>', '=', '!'])).min();
    // The operand that ends `before` and the one that starts `after`: a string literal whole.
    let left_start = |before: &str| match before.strip_suffix('"') {
        Some(inner) => inner.rfind('"'),
        None => Some(before.rfind(|c: char| !word(c)).map_or(0, |i| i + 1)),
    };
    let right_end = |after: &str| match after.strip_prefix('"') {
        Some(inner) => inner.find('"').map(|i| i + 2),
        None => Some(after.find(|c: char| !word(c)).unwrap_or(after.len())),
    };
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = operator_at(rest) {
        let before = rest[..at].trim_end();
        let after = rest[at + 2..].trim_start();
        let operands = left_start(before).zip(right_end(after)).filter(|&(start, end)| {
            let (left, right) = (&before[start..], &after[..end]);
            !left.is_empty() && !right.is_empty() && (left.starts_with('"') || right.starts_with('"'))
        });
        match operands.and_then(|(start, end)| Some((start, end, truth(&before[start..], &rest[at..at + 1] == "=", &after[..end])?))) {
            Some((start, end, value)) => {
                out.push_str(&before[..start]);
                out.push_str(&value.to_string());
                rest = &after[end..];
            }
            None => {
                out.push_str(&rest[..at + 2]);
                rest = &rest[at + 2..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// `n / (float)block` → `n / block`, and `float(n)`, `(double)n`, `static_cast<float>(n)` the same.
fn without_float_casts(text: &str) -> String {
    let out = text.replace("(float)", "").replace("(double)", "");
    let out = ["float", "double"].iter().fold(out, |out, function| replace_calls(&out, function, |inner| Some(format!("({inner})"))));
    without_static_casts_to_reals(&out)
}

/// `text` with each `static_cast<T>(` to a type that is no integer's (`float`, a dispatch's
/// `scalar_t`, `half`) read as a plain `(`: a floating-point scalar's value does not change
/// with its precision.
fn without_static_casts_to_reals(text: &str) -> String {
    const INTEGER_WORDS: [&str; 12] = ["int", "long", "short", "char", "unsigned", "signed", "bool", "size_t", "int64_t", "int32_t", "uint32_t", "uint64_t"];
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("static_cast<") {
        let after = &rest[at + "static_cast<".len()..];
        let Some(close) = after.find('>').filter(|&close| after[close + 1..].trim_start().starts_with('(')) else {
            out.push_str(&rest[..at + "static_cast<".len()]);
            rest = after;
            continue;
        };
        let ty = &after[..close];
        let integer = identifiers_in(ty).any(|word| INTEGER_WORDS.contains(&word) || word.starts_with("uint") || word.starts_with("int"));
        out.push_str(&rest[..at]);
        if integer {
            out.push_str(&rest[at..at + "static_cast<".len() + close + 1]);
        }
        rest = &after[close + 1..];
    }
    out.push_str(rest);
    out
}


#[cfg(test)]
mod tests {
    use super::*;

    /// The frame of the first function of `doc` at its call of `go(`.
    fn frame_at_go(doc: &Document) -> Frame<'_> {
        let text = doc.text();
        let function = descendants(doc.tree().unwrap().root_node()).find(|n| n.kind() == "function_definition").unwrap();
        let graph = CallGraph::new("", HashMap::new(), HashMap::new(), HashSet::new(), HashMap::new(), HashMap::new());
        Frame::of(text, function, text.find("go(").unwrap(), &graph)
    }

    #[test]
    fn comparisons_with_string_literals_are_replaced_where_their_truth_is_known() {
        let truth = |left: &str, equal: bool, right: &str| {
            let value = |operand: &str| match operand {
                "mode" => Some("\"avg\"".to_string()),
                literal if literal.starts_with('"') => Some(literal.to_string()),
                _ => None,
            };
            Some(((value(left)? == value(right)?) == equal) as i64)
        };
        assert_eq!(replace_comparisons("(mode == \"max\") ? (0) : (1)", truth), "(0) ? (0) : (1)");
        assert_eq!(replace_comparisons("\"avg\" != mode && other == \"x\"", truth), "0 && other == \"x\"");
        assert_eq!(replace_comparisons("a == b + 1", truth), "a == b + 1");
        assert_eq!(replace_comparisons("(mode == \"max pool\") ? 1 : 2", truth), "(0) ? 1 : 2");
    }

    #[test]
    fn a_cast_to_a_real_type_keeps_the_value_and_one_to_an_integer_stays() {
        assert_eq!(without_float_casts("static_cast<scalar_t>(spatial_scale)"), "(spatial_scale)");
        assert_eq!(without_float_casts("static_cast<float>(a) * static_cast<int>(b)"), "(a) * static_cast<int>(b)");
        assert_eq!(without_float_casts("static_cast<uint32_t>(n) + (float)x"), "static_cast<uint32_t>(n) + x");
    }

    #[test]
    fn a_helper_that_returns_a_local_after_other_work_is_its_initial_value() {
        let text = "size_t prepare() {\n  int device = 0;\n  cudaGetDevice(&device);\n  size_t bytes = std::max(ROWS * 64, COLS * 32) * sizeof(half);\n  LOG(\"%f KiB\", static_cast<double>(bytes) / 1024);\n  cudaFuncSetAttribute(k, attr, bytes);\n  return bytes;\n}\nint per_device() {\n  int device = 0;\n  int count = device + 1;\n  return count;\n}\ninline int grid_for(const int n, const int threads = THREADS) {\n  int wanted = (n + threads - 1) / threads;\n  int most = 4096;\n  return min(wanted, most);\n}\nint grown() {\n  int n = 4;\n  n *= 2;\n  return n;\n}\nint devices() {\n  int n = 0;\n  cudaGetDeviceCount(&n);\n  return n;\n}\nint sms() {\n  int count{0};\n  query(count);\n  return count;\n}\nint queried() {\n  int count = 0;\n  query(count);\n  return count;\n}\n";
        let doc = Document::new(text.to_string());
        let functions: HashMap<String, ExpressionFunction> = expression_functions_of(text, doc.tree().unwrap().root_node()).into_iter().collect();
        let value = |name: &str| functions.get(name).map(|f| f.value.as_str());
        assert_eq!(value("prepare"), Some("std::max(ROWS * 64, COLS * 32) * sizeof(half)"));
        // Locals made of other locals, each set once: the returned expression over the parameters.
        assert_eq!(value("per_device"), Some("0 + 1"));
        assert_eq!(value("grid_for"), Some("min(((n + threads - 1) / threads), 4096)"));
        assert_eq!(functions["grid_for"].params, vec![("n".to_string(), None), ("threads".to_string(), Some("THREADS".to_string()))]);
        // Set again (through its address too), or passed to one of the program's functions,
        // which may set it by reference: not a value of its own.
        for other in ["grown", "devices", "sms", "queried"] {
            assert!(!functions.contains_key(other), "{other}: {functions:?}");
        }
    }

    #[test]
    fn what_an_out_parameter_points_at_is_the_callers_variable() {
        assert_eq!(without_derefs_of_addresses("(rows + *(&threads) - 1) / *(&threads)"), "(rows + threads - 1) / threads");
        assert_eq!(without_derefs_of_addresses("n *(&a[0])"), "n *(&a[0])");
    }

    #[test]
    fn a_helper_that_counts_doublings_is_a_rounded_up_log2() {
        let text = "int log2_ceil(int value) {
    int log2_value = 0;
    while ((1 << log2_value) < value) ++log2_value;
    return log2_value;
}
int bits(int n) {
  int b = 0;
  while (1 << b < n) { b++; }
  return b;
}
int halvings(int n) {
  int b = 0;
  while ((1 << b) < n) b += 2;
  return b;
}
";
        let doc = Document::new(text.to_string());
        let functions: HashMap<String, ExpressionFunction> = expression_functions_of(text, doc.tree().unwrap().root_node()).into_iter().collect();
        assert_eq!(functions["log2_ceil"].value, "ceil(log2(max(value, 1)))");
        assert_eq!(functions["bits"].value, "ceil(log2(max(n, 1)))");
        // A loop that steps otherwise counts something else.
        assert!(!functions.contains_key("halvings"), "{functions:?}");
        let doubled = expr::parse("2 ** ceil(log2(max(n, 1)))").unwrap();
        let at = |n: i64| doubled.eval(&|_| Some(expr::Value::Int(n))).unwrap();
        assert_eq!([at(0), at(1), at(2), at(3), at(1000), at(1024)].map(|v| v.as_f64()), [1.0, 1.0, 2.0, 4.0, 1024.0, 1024.0]);
    }

    #[test]
    fn gflags_definitions_give_their_defaults_or_the_runs_values() {
        let text = "DEFINE_uint32(M, 512, \"rows\");\nDEFINE_int64(steps, 1 << 10, \"steps\");\nDEFINE_bool(check, false, \"check\");\nDEFINE_string(name, \"x\", \"label\");\n";
        let flags = |args: &[&str]| command_line_flags(text, &CommandLine { args: args.iter().map(|a| a.to_string()).collect(), written_in: None });
        let named = |pairs: &[(&str, &str)]| pairs.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect::<Vec<_>>();
        assert_eq!(flags(&[]), named(&[("FLAGS_M", "512"), ("FLAGS_steps", "1 << 10"), ("FLAGS_check", "0")]));
        assert_eq!(flags(&["-M=1024", "--check"]), named(&[("FLAGS_M", "1024"), ("FLAGS_steps", "1 << 10"), ("FLAGS_check", "1")]));
    }

    #[test]
    fn lines_continued_with_a_backslash_are_one_expression() {
        assert_eq!(lines_joined("min(blocks * sms, \\\n                (n + 255) / 256)"), "min(blocks * sms, (n + 255) / 256)");
        assert_eq!(lines_joined("min(a, \\    b)"), "min(a, b)", "the line's end already a space");
        assert_eq!(lines_joined("a  +\n b"), "a  +\n b", "no continuation: as written");
    }

    #[test]
    fn a_value_a_call_sets_says_whether_the_workspace_defines_the_call() {
        let made = |callee: &str, defined: bool| ValueSource { text: "", at: 0, function: "run".into(), made_by: Made::Call { callee: callee.into(), defined } }.describe("main.cu:3");
        assert_eq!(made("cudaOccupancyMaxPotentialBlockSize", false), "the program sets it with `cudaOccupancyMaxPotentialBlockSize` in `run` (main.cu:3), which only the running program answers");
        assert_eq!(made("getNumBlocksAndThreads", true), "the program sets it with `getNumBlocksAndThreads` in `run` (main.cu:3), a function of the workspace whose work templatize does not follow");
    }

    #[test]
    fn a_scope_reads_local_enums_chained_assignments_range_loops_and_list_elements() {
        let text = "void run() {\n  enum { SHMEM_SZ = 2 * TILE };\n  std::vector<int> sizes = {256, 1024, 2048};\n  long m, n, largest;\n  largest = sizes[sizes.size() - 1];\n  for (int size : sizes) {\n    m = n = size;\n    go(m, n);\n  }\n}\n";
        let doc = Document::new(text.to_string());
        let frame = frame_at_go(&doc);
        assert_eq!(frame.scope.value_text("SHMEM_SZ"), Some("2 * TILE"));
        assert_eq!(frame.scope.value_text("m"), Some("size"));
        assert_eq!(frame.scope.value_text("n"), Some("size"));
        assert_eq!(frame.scope.value_text("size"), Some("sizes[each]"));
        assert_eq!(list_element(&frame, "sizes[sizes.size() - 1]").as_deref(), Some("2048"));
        assert_eq!(list_element(&frame, "sizes[0]").as_deref(), Some("256"));
        assert_eq!(list_element(&frame, "sizes[5]"), None);
        assert_eq!(sweep_element(&frame, "sizes[each]").map(|(_, values)| values), Some(vec![256, 1024, 2048]));
    }

    #[test]
    fn a_value_written_over_lines_with_a_comment_for_each_term_is_read_without_them() {
        let text = "void run() {\n  const int bytes =\n    (2 * tile * sizeof(float))  // keys and values\n    + (rows * 4) /* scores */;\n  go(bytes);\n}\n";
        let doc = Document::new(text.to_string());
        let frame = frame_at_go(&doc);
        let bytes = frame.scope.value_text("bytes").expect("`bytes` is given a value");
        assert_eq!(bytes.split_whitespace().collect::<Vec<_>>().join(" "), "(2 * tile * sizeof(float)) + (rows * 4)");
    }

    #[test]
    fn a_value_given_in_a_case_of_a_switch_holds_where_the_switch_takes_that_case() {
        let text = "void run(int mode) {\n  int threads = 64;\n  int items = 1;\n  switch (mode) {\n    case 0: threads = 128; break;\n    case 1:\n    case 2: { threads = 256; items *= 4; break; }\n    default: threads = 512;\n  }\n  int tail = 8;\n  switch (mode) {\n    case 0: tail = 16;\n    case 1: tail = 32; break;\n  }\n  int step = 1;\n  switch (mode) {\n    case 4: step = 2; break;\n    case 3:\n    default: step = 3;\n  }\n  go(threads, items, tail, step);\n}\n";
        let doc = Document::new(text.to_string());
        let frame = frame_at_go(&doc);
        let threads = frame.scope.value_text("threads").unwrap();
        let plain = |v: &str| crate::template::callee::readable(v);
        assert_eq!(plain(threads), "mode != 0 && mode != 1 && mode != 2 ? 512 : mode == 2 || mode == 1 ? 256 : mode == 0 ? 128 : 64");
        assert_eq!(plain(frame.scope.value_text("items").unwrap()), "mode == 2 || mode == 1 ? 4 : 1");
        // `case 1` is reached from `case 0` too, which has no `break`: not read.
        assert_eq!(frame.scope.value_text("tail"), None);
        // `case 3:` falls into `default:`, which is then every value but 4.
        assert_eq!(plain(frame.scope.value_text("step").unwrap()), "mode != 4 ? 3 : mode == 4 ? 2 : 1");
        // A mode the program fixes settles the switch: each name the value its case gives.
        let settled = text.replace("void run(int mode) {", "void run() {\n  const int mode = 2;");
        let doc = Document::new(settled);
        let frame = frame_at_go(&doc);
        assert_eq!(frame.scope.value_text("threads"), Some("256"));
        assert_eq!(frame.scope.value_text("items"), Some("(1) * (4)"));
    }

    #[test]
    fn a_pointer_into_a_tensors_data_has_its_element_type() {
        assert_eq!(cast_pointee("value.data_ptr<scalar_t>() + n * per_chunk").as_deref(), Some("scalar_t"));
        assert_eq!(cast_pointee("x.data<float>()").as_deref(), Some("float"));
        assert_eq!(cast_pointee("(half *)x.data_ptr()").as_deref(), Some("half"));
        assert_eq!(cast_pointee("x.data_ptr<float>()[0]"), None);
        assert_eq!(dispatched_default("scalar_t", Some("AT_DISPATCH_FLOATING_TYPES_AND_HALF")), Some("float"));
        assert_eq!(dispatched_default("scalar_t", Some("AT_DISPATCH_INTEGRAL_TYPES")), None);
    }

    #[test]
    fn a_member_of_a_vector_or_extent_written_out_is_its_component() {
        assert_eq!(strip_casts_everywhere("(VOLUME_STEPS, 0, 0).width + 255"), "VOLUME_STEPS + 255");
        assert_eq!(strip_casts_everywhere("ceil_div(make_cudaExtent(w, h * 2, d).height, 16)"), "ceil_div((h * 2), 16)");
        assert_eq!(strip_casts_everywhere("make_int2(a, b).y * dim3(n, 4).z"), "b * 1");
        assert_eq!(strip_casts_everywhere("((make_int2(IMAGE_W, IMAGE_H)).x + 15) / 16"), "(IMAGE_W + 15) / 16");
        // A call's result, not a constructor; a parenthesised value's own member.
        assert_eq!(strip_casts_everywhere("size(a, b).x"), "size(a, b).x");
        assert_eq!(strip_casts_everywhere("(w, h).depth"), "(w, h).depth", "a member the list leaves out is not 1");
        assert_eq!(strip_casts_everywhere("(input_size).width"), "(input_size).width");
    }

    #[test]
    fn shifts_and_masks_of_numbers_alone_are_their_values() {
        assert_eq!(constant_bitwise_folded("1<<22"), "4194304");
        assert_eq!(constant_bitwise_folded("(1u << 20) * x"), "1048576 * x");
        assert_eq!(constant_bitwise_folded("max(1 << 4, x)"), "max(1 << 4, x)");
        assert_eq!(constant_bitwise_folded("f(1 << 4) + (0xff & 0x0f)"), "f(16) + 15");
        assert_eq!(constant_bitwise_folded("(x << 2) + 1"), "(x << 2) + 1");
    }

    #[test]
    fn integer_casts_go_and_a_rounded_up_float_division_is_ceil_div() {
        assert_eq!(strip_casts_everywhere("(unsigned int)ceil(nelem / (float)block.x)"), "ceil_div(nelem, block.x)");
        assert_eq!(strip_casts_everywhere("(uint32_t)ceil(float(n) / (threads * 2))"), "ceil_div(n, threads * 2)");
        assert_eq!(strip_casts_everywhere("(size_t)rows * (unsigned long long)cols"), "rows * cols");
        // Not casts: `sizeof(int)`, a parenthesised expression; a `ceil` of something else stays.
        assert_eq!(strip_casts_everywhere("n * sizeof(int)"), "n * sizeof(int)");
        assert_eq!(strip_casts_everywhere("(n + 255) / 256"), "(n + 255) / 256");
        assert_eq!(strip_casts_everywhere("ceil(log2(n))"), "ceil(log2(n))");
        // A block written as a floating-point number; a division of integers, which C rounds
        // down before `ceil` sees it.
        assert_eq!(strip_casts_everywhere("(int)ceil(n / 256.0)"), "ceil_div(n, 256)");
        assert_eq!(strip_casts_everywhere("2 * ceil(n / 256)"), "2 * (n / 256)");
        assert_eq!(strip_casts_everywhere("ceil((rows * cols) / threads)"), "((rows * cols) / threads)");
        // A product or quotient cast to an integer may have been a fraction: the truncation
        // stays, and goes where the spec's expression turns out to hold only integers.
        assert_eq!(strip_casts_everywhere("(int)(height * scaling_ratio)"), "int(height * scaling_ratio)");
        assert_eq!(strip_casts_everywhere("(int) (n * 0.5)"), "int(n * 0.5)");
        assert_eq!(strip_casts_everywhere("(int)(width)"), "(width)");
        assert_eq!(without_exact_int_calls("int(height * 0.5) * int(width * 2)"), "int(height * 0.5) * (width * 2)");
        assert_eq!(eval_constant("int(6 * 7) + 1", &|_| None), Some(43));
        assert!(has_float_literal("n * .5") && has_float_literal("2.f * n") && has_float_literal("1e-3") && !has_float_literal("0x1F * n2") && !has_float_literal("0XFF + 2"));
    }

    #[test]
    fn a_dim3_is_read_from_constructors_and_braces_not_from_any_parentheses() {
        assert_eq!(dim3_arguments("dim3(512, 1)"), Some(vec!["512".to_string(), "1".to_string()]));
        assert_eq!(dim3_arguments("{16, 8}"), Some(vec!["16".to_string(), "8".to_string()]));
        assert_eq!(dim3_arguments("make_uint3(w / 64, h, 1)"), Some(vec!["w / 64".to_string(), "h".to_string(), "1".to_string()]));
        assert_eq!(dim3_arguments("(n + 255) / (256)"), None);
    }

    #[test]
    fn names_in_a_dim3_keep_the_values_they_had_where_it_was_made() {
        let values = vec![
            ("rows".to_string(), "height".to_string(), 10),
            ("a".to_string(), "rows".to_string(), 15),
            ("rows".to_string(), "height / 2".to_string(), 30),
            ("a".to_string(), "7".to_string(), 32),
            ("k".to_string(), UNKNOWN.to_string(), 5),
            ("k".to_string(), "4".to_string(), 33),
        ];
        let scope = Scope { values, point: 40, ..Scope::default() };
        assert_eq!(scope.as_written_at("(width * rows + 127) / 128", 20), "(width * (height) + 127) / 128");
        assert_eq!(scope.as_written_at("(width * rows + 127) / 128", 35), "(width * rows + 127) / 128", "made after the change");
        assert_eq!(scope.as_written_at("a + width", 20), "((height)) + width", "through a name that changed too");
        assert_eq!(scope.as_written_at("k", 20), "k", "what the occupancy calculator wrote stays a name");
    }

    #[test]
    fn the_size_of_the_buffers_own_element_is_stripped_too() {
        let scope = Scope::default();
        let unknown = |_: &str| None;
        assert_eq!(strip_element_size("NUM_OF_BLOCKS * sizeof *devResults", &unknown, &scope).as_deref(), Some("NUM_OF_BLOCKS"));
        assert_eq!(strip_element_size("n * sizeof(d_out[0])", &unknown, &scope).as_deref(), Some("n"));
        assert_eq!(strip_element_size("sizeof(*d_out) * rows", &unknown, &scope).as_deref(), Some("rows"));
    }

    #[test]
    fn element_size_is_stripped_from_byte_counts() {
        let scope = Scope { values: vec![("bytes".into(), "n * sizeof(float)".into(), 0)], point: 1, ..Scope::default() };
        let half = |ty: &str| (ty == "half").then_some((1, 1));
        let float = |ty: &str| (ty == "float").then_some((1, 1));
        assert_eq!(strip_element_size("rows * hidden * sizeof(half)", &half, &scope).as_deref(), Some("rows * hidden"));
        assert_eq!(strip_element_size("sizeof(float) * (size_t)n", &float, &scope).as_deref(), Some("n"));
        assert_eq!(strip_element_size("bytes", &float, &scope).as_deref(), Some("n"));
        assert_eq!(strip_element_size("n * 4", &float, &scope), None);
        let floats_as_halves = |ty: &str| (ty == "float").then_some((2, 1));
        assert_eq!(strip_element_size("n * sizeof(float)", &floats_as_halves, &scope).as_deref(), Some("n * 2"));
        // C++'s cast of the whole count, and the parentheses it leaves.
        assert_eq!(strip_element_size("static_cast<size_t>(sizeof(float) * w * h)", &float, &scope).as_deref(), Some("w * h"));
        assert_eq!(strip_casts_everywhere("static_cast<long long>(n) * 2"), "(n) * 2");
        assert_eq!(strip_casts_everywhere("static_cast<float>(n) * 2"), "static_cast<float>(n) * 2");
    }

    #[test]
    fn a_method_is_no_read_of_its_namesake() {
        assert!(!reads_variable("x.numel()", "numel"));
        assert!(!reads_variable("input->size", "size"));
        assert!(!reads_variable("numel_total / 2", "numel"));
        assert!(reads_variable("numel / 2", "numel"));
        assert!(reads_variable("2 * (n)", "n"));
    }

    #[test]
    fn arguments_passed_as_expressions_become_the_parameters() {
        let args = vec!["B * T * C".to_string(), "(int)(n + 1)".to_string()];
        let params = vec!["N".to_string(), "m".to_string()];
        assert_eq!(with_arguments_named("B * T * C * 2", &args, &params), "N * 2");
        assert_eq!(with_arguments_named("B*T*C", &args, &params), "N");
        assert_eq!(with_arguments_named("n + 1", &args, &params), "m");
        assert_eq!(with_arguments_named("x / B * T * C", &args, &params), "x / B * T * C");
        assert_eq!(with_arguments_named("B * T * CC", &args, &params), "B * T * CC");
    }

    #[test]
    fn device_properties_become_device_sizes() {
        let text = "int num_sms = 0;\nvoid setup() { cudaDeviceProp p; num_sms = p.multiProcessorCount; grid = p.multiProcessorCount * 2; cudaDeviceGetAttribute(&tps, cudaDevAttrMaxThreadsPerMultiProcessor, 0); }";
        let found = device_variables_of(text);
        assert_eq!(found, vec![("num_sms".to_string(), "sm_count"), ("tps".to_string(), "threads_per_sm")]);
        let members = replace_members("p.multiProcessorCount * 2 / threads.x + 1.5", |o, m| match (o, m) {
            ("threads", "x") => Some("256".into()),
            (_, m) => device_property(m).map(String::from),
        });
        assert_eq!(members, "sm_count * 2 / 256 + 1.5");
        // Limits every GPU CUDA 13 runs on shares are numbers; the clock is the device's.
        let text = "void setup() { int rate; cudaDeviceGetAttribute(&rate, cudaDevAttrClockRate, dev); int most = prop.maxGridSize [1]; int t = p->maxThreadsPerBlock;
            blocks = n / 256; if (blocks > prop.maxGridSize[0]) { blocks = prop.maxGridSize[0]; } }";
        assert_eq!(device_variables_of(text), vec![("rate".to_string(), "clock_khz"), ("most".to_string(), "65535"), ("t".to_string(), "1024")]);
        assert_eq!(device_arrays_named("dim3(prop.maxGridSize[1], 1), p->maxThreadsDim[2] + a.maxGridSize[n]"), "dim3(65535, 1), 64 + a.maxGridSize[n]");
        // PyTorch's cached properties of the current device (apex's MLP kernels).
        let torch = "(at::cuda::getCurrentDeviceProperties()->multiProcessorCount) * blocks_per_sm + getCurrentDeviceProperties()->name";
        assert_eq!(torch_device_properties_named(torch), "(sm_count) * blocks_per_sm + getCurrentDeviceProperties()->name");
        // An array field with its index (apex's layer norm caps its grid's rows).
        let rows = "std::min((uint64_t)n1, at::cuda::getCurrentDeviceProperties()->maxGridSize[1]) + x->maxGridSize[k]";
        assert_eq!(torch_device_properties_named(rows), "std::min((uint64_t)n1, 65535) + x->maxGridSize[k]");
        // Kept in a local, which the reading writes out as its value in parentheses.
        let local = "min(((at::cuda::getCurrentDeviceProperties())->maxThreadsPerBlock), (n + 1))";
        assert_eq!(torch_device_properties_named(local), "min((1024), (n + 1))");
    }

    #[test]
    fn caller_names_are_renamed_to_launcher_names() {
        let renamed = rename_identifiers_in("tokens * d_hidden", |w| (w == "d_hidden").then(|| "hidden".to_string()));
        assert_eq!(renamed, "tokens * hidden");
    }

    #[test]
    fn the_branches_around_a_launch_fix_the_names_they_compare() {
        let text = "void run(int block_size, int threads) {\n  if (block_size == 16) {\n    switch (threads) {\n    case 512:\n      k<16><<<g, threads>>>(x);\n      break;\n    }\n  } else {\n    k<32><<<g, 32>>>(x);\n  }\n}\n";
        let doc = Document::new(text.to_string());
        let root = doc.tree().unwrap().root_node();
        let at = |needle: &str| root.descendant_for_byte_range(text.find(needle).unwrap(), text.find(needle).unwrap() + needle.len()).unwrap();
        let inner = branch_values_around(text, at("k<16>"));
        assert_eq!(inner, HashMap::from([("block_size".to_string(), 16), ("threads".to_string(), 512)]));
        // The `else` branch fixes nothing.
        assert!(branch_values_around(text, at("k<32>")).is_empty());
    }

    #[test]
    fn a_function_takes_calls_between_its_required_and_all_its_parameters() {
        let text = "void none(void) {}\nvoid some(int a, int b = 2) {}\nvoid any(int a, ...) {}\ntemplate <typename... T> void pack(T... t) {}\n";
        let doc = Document::new(text.to_string());
        let root = doc.tree().unwrap().root_node();
        let arity = |name: &str| Arity::of(text, descendants(root).find(|n| n.kind() == "function_definition" && text[n.byte_range()].contains(&format!("{name}("))).unwrap());
        assert!(arity("none").takes(0, true) && !arity("none").takes(1, false));
        assert!(arity("some").takes(1, true) && arity("some").takes(2, true) && !arity("some").takes(3, false));
        // Too few counts only beside namesakes: the defaults may be in a header's declaration.
        assert!(!arity("some").takes(0, true) && arity("some").takes(0, false));
        assert!(arity("any").takes(5, true) && arity("pack").takes(7, true));
    }

    #[test]
    fn top_level_commas_split_dim3_arguments() {
        assert_eq!(split_args("(n + 31) / 32, min(a, b), 1"), vec!["(n + 31) / 32", "min(a, b)", "1"]);
    }
}
