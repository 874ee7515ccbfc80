//! The spec scaffold: what can be read off the kernel's signature, its launch and the host code
//! around it. What cannot be inferred is left as [`UNKNOWN`] (or a size missing from the
//! shape), which the spec validator reports as a diagnostic to fill in.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use tree_sitter::Node;

use super::derivations;
use super::elements::FlatThreads;
use super::bounds::{guarded_length, LaunchExtents};
use super::index_values;
use super::host::{HostContext, HostFile, LaunchChoice};
use super::spec_text::{spec_expression, Division};
use super::structs;
use super::tensors;
use super::texture;
use super::vector_access;
use super::LineOrigins;
use crate::profile::split_template_args;
use crate::slice::{device_slice, SliceOptions};
use crate::spec::{expr, sha256_hex, ArgSpec, Baseline, Compare, Dtype, Init, KernelSpec, ParamKind, ParamSpec, Role, Shape, SolSpec, VerifySpec, UNKNOWN};
use crate::syntax::host::{declared_name, driver_launches, local_types};
use crate::syntax::{access_of, descendants, identifiers_in, is_identifier, Access, Document, Kernel, LaunchSite, Param, Span, TemplateParamKind};
use crate::workspace::HostDocument;

/// The kernel's file as its launch is read: the text (templatized, or as the user wrote it) and,
/// where the file writes code with macros (a dispatch given the launch, a launcher written by a
/// macro), that text with them expanded, line for line, which is where its host code is read.
#[derive(Clone, Copy)]
pub struct KernelFile<'a> {
    pub text: &'a Document,
    pub expanded: Option<&'a Document>,
    pub path: Option<&'a Path>,
}

impl<'a> KernelFile<'a> {
    /// The document the file's host code is read from.
    fn host_code(&self) -> &'a Document {
        self.expanded.unwrap_or(self.text)
    }

    /// The file's document whose text `text` is, as written or expanded: its lines are the
    /// file's lines.
    fn document_of(&self, text: &str) -> Option<&'a Document> {
        std::iter::once(self.text).chain(self.expanded).find(|doc| std::ptr::eq(text, doc.text()))
    }
}

/// What the scaffold found besides the spec: where the launch it read is, and the launch
/// choices it lifted, for the templatize report.
pub struct Inferred {
    pub spec: KernelSpec,
    /// `None` when no launch of the kernel was found.
    pub launch: Option<LaunchFound>,
    /// Where none was found, the launch the kernel's flat index asks for, as the report says it.
    pub unlaunched: Option<String>,
}

pub struct LaunchFound {
    /// The file the launch is in, when it is not the kernel's.
    pub other_file: Option<PathBuf>,
    pub line: u32,
    /// The parameters lifted from the host program's launch choices.
    pub choices: Vec<ParamSpec>,
    /// Why a name of the launch's block was not lifted.
    pub held: Vec<String>,
    /// The run the project documents for the program (`./srad 100 0.5 502 458` (run:1)),
    /// when the shapes read their sizes from its command line.
    pub documented_run: Option<String>,
    /// Where the program calls a twin of the uncalled launcher, whose calls gave the sizes.
    pub twin_call: Option<String>,
}

/// What the spec is inferred with besides the two documents.
pub struct Surroundings<'a> {
    /// The host code of the workspace's other files, nearest first.
    pub hosts: &'a [HostDocument],
    /// The block of a launch `cutune profile` captured, when there is one: the value of a block
    /// the host code sets where it cannot be followed (a class member).
    pub captured_block: Option<[u32; 3]>,
    /// Where the templatized file's lines stood in the user's file.
    pub origins: &'a LineOrigins,
    /// A transform found the kernel counting on the block's thread count ([`super::Rewrite::keeps_block_threads`]).
    pub keeps_block_threads: bool,
}

/// Builds the spec of `kernel` from the templatized document and the host code of the other
/// files given (the workspace's); `original` gives the baseline.
pub fn infer(original: &Document, own: KernelFile, kernel: &str, mut params: Vec<ParamSpec>, mut restrictions: Vec<String>, slice_options: &SliceOptions, around: &Surroundings) -> Inferred {
    let Surroundings { hosts, captured_block, origins, keeps_block_threads } = *around;
    let templated = own.text;
    let model = templated.model();
    let k = model.kernel(kernel).expect("templatize keeps the kernel");
    let (found, host) = match find_launch(own, hosts, kernel) {
        Some((doc, launch, host)) => (Some((doc, launch)), host),
        None => (None, None),
    };
    let site = found.as_ref().map(|(doc, l)| (*doc, l.as_ref()));
    let launch = site.map(|(_, l)| l);
    // A launch in the kernel's own file stands where templatize's rewrites moved it.
    let in_kernel_file = site.is_some_and(|(doc, _)| own.document_of(doc.text()).is_some());
    let user_line = |l: &LaunchSite| if in_kernel_file { origins.original(l.span.start.line) + 1 } else { l.span.start.line + 1 };

    let (mut grid, mut block) = match (launch, &host) {
        (Some(l), Some(h)) => {
            let block = h.dims(&l.block.text);
            (h.dims(&l.grid.text).iter().map(|g| h.worked_out_by_caller(g, &block)).collect(), block)
        }
        (Some(l), None) => (vec![l.grid.text.trim().to_string()], vec![l.block.text.trim().to_string()]),
        (None, _) => (vec![UNKNOWN.to_string()], vec![UNKNOWN.to_string()]),
    };
    // `k<half, 256><<<rows, 256>>>`: the block is the template parameter's value.
    if let Some(l) = launch {
        for (i, tp) in k.template_params.iter().enumerate() {
            let value = l.template_args.get(i).and_then(|a| a.value);
            if let (true, Some(value), 1) = (params.iter().any(|p| p.name == tp.name), value, block.len()) {
                if block[0].parse::<i64>().ok() == Some(value) {
                    block[0] = tp.name.clone();
                    grid = grid.iter().map(|g| grid_following_block(g, value, &tp.name)).collect();
                }
            }
        }
    }
    // The block's extents stay names in the shared memory, until the spec's block is settled.
    let block_variable = launch.map(|l| l.block.text.trim()).filter(|b| is_identifier(b));
    let mut shared_bytes = launch.and_then(|l| l.shared_bytes.as_ref()).map_or("0".to_string(), |e| match &host {
        Some(h) => h.in_spec_names_keeping_block(&e.text, block_variable),
        None => e.text.trim().to_string(),
    });
    let body = super::kernel_definition(templated, k).and_then(|d| d.child_by_field_name("body"));
    // Lengths and roles are read from the kernel as the user wrote it: the rewrites' loops (a
    // vector loop up to `i_vec_end`) say less about the buffers than the original's.
    let original_kernel = original.model().kernels.iter().find(|o| o.is_definition && o.name == kernel).cloned();
    let original_body = original_kernel.as_ref().and_then(|o| super::kernel_definition(original, o)).and_then(|d| d.child_by_field_name("body"));
    let template_args = template_args(k, launch, &params, host.as_ref(), &slice_options.template_args);
    // `sizeof(T)` in the launcher's arithmetic, where the launch passes its own `T` on and the
    // program's instantiation gave the type.
    if let Some(l) = launch {
        let passed_on = |text: &str| sizes_of_passed_types(text, l, &template_args);
        grid = grid.iter().map(|g| passed_on(g)).collect();
        block = block.iter().map(|b| passed_on(b)).collect();
        shared_bytes = passed_on(&shared_bytes);
    }
    // `T* y` of a kernel instantiated with `float` is a buffer of floats.
    let scalars: Vec<&str> = k.params.iter().filter(|p| p.pointer_depth == 0).map(|p| p.name.as_str()).collect();
    let instantiated = |ty: &str| k.template_params.iter().position(|tp| tp.name == ty).and_then(|i| template_args.get(i)).filter(|a| a.as_str() != UNKNOWN).cloned();
    // The original's launch, for buffers its threads index unchecked: what the program
    // allocates for them does not change with the configuration tuned.
    let at_defaults = |extent: &String| crate::syntax::rename_identifiers_in(extent, |word| params.iter().find(|p| p.name == word).map(|p| p.default.to_string()));
    let launch_extents = (!grid.iter().chain(&block).any(|e| e.contains(UNKNOWN))).then(|| LaunchExtents { grid: grid.iter().map(at_defaults).collect(), block: block.iter().map(at_defaults).collect() });
    let (args, host_lengths): (Vec<ArgSpec>, Vec<bool>) = k
        .params
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let at_launch = launch.and_then(|l| l.args.get(i)).map(|a| a.trim().to_string());
            let element = instantiated(&p.base_type).unwrap_or_else(|| p.base_type.clone());
            // An unnamed parameter (a tag) is named by its place, `arg6`, for the spec to list.
            let named = Param { name: format!("arg{}", i + 1), ..p.clone() };
            let p = if p.name.is_empty() { &named } else { p };
            if let Some(accessor) = tensors::accessor_type(&p.ty).filter(|_| p.pointer_depth == 0) {
                let element = instantiated(&accessor.element).unwrap_or_else(|| accessor.element.clone());
                return (accessor_arg_spec(original.text(), original_body, p, &accessor, &element, at_launch.as_deref(), host.as_ref()), true);
            }
            arg_spec(original, original_body, p, &element, at_launch.as_deref(), host.as_ref(), &scalars, launch_extents.as_ref())
        })
        .unzip();

    // Host expressions are C: said in the spec's language (`/` on integers truncates, where the
    // spec's `/` is true division; shifts, literal suffixes, `MAX`).
    // A `#define` made of lifted ones (`THREADS_PER_BLOCK` is `(WARP_SIZE * WARPS_PER_BLOCK)`)
    // changes with them: written out, it is not taken for a size of the shape.
    let lifted: BTreeSet<&str> = params.iter().map(|p| p.name.as_str()).collect();
    // Written as a person would: `ceil_div(n, BLOCK)`, no parentheses the spec does not need.
    let in_spec = |text: &str, division| super::callee::readable(super::host::strip_outer_parens(&spec_expression(&with_defines_of_parameters(text, templated, &lifted), division)));
    let integer = |text: &str| in_spec(text, Division::Floor);
    grid = grid.iter().map(|g| integer(g)).collect();
    block = block.iter().map(|b| integer(b)).collect();
    let mut shared_bytes = integer(&shared_bytes);
    let said_in_spec = |mut a: ArgSpec| {
        a.length = a.length.map(|l| integer(&l));
        if let Some(texture) = &mut a.texture {
            texture.extent = texture.extent.iter().map(|e| integer(e)).collect();
        }
        let float = a.dtype().is_float();
        let division = if float { Division::True } else { Division::Floor };
        // A count the caller works out from the block (`tiles * TILE` with `tiles = n /
        // TILE`) moves with the block, as the grid does.
        let worked_out = |v: String| match &host {
            Some(h) if !float => h.worked_out_by_caller(&v, &block),
            _ => v,
        };
        a.value = a.value.take().map(worked_out).map(|v| in_spec(&v, division));
        a
    };
    let mut args: Vec<ArgSpec> = args
        .into_iter()
        .map(|a| {
            let mut a = said_in_spec(a);
            a.fields = std::mem::take(&mut a.fields).into_iter().map(said_in_spec).collect();
            a
        })
        .collect();
    if let Some(b) = body {
        mark_partial_results(templated.text(), b, k, &mut args);
    }
    // A kernel no program launches (one being written, or launched from code the workspace does
    // not hold), whose threads each take their own flat index below a count: the launch that
    // index asks for, with a block to tune and the count of templatize's choosing.
    let unlaunched = match (site, body) {
        (None, Some(b)) => launch_from_own_index(kernel, templated.text(), b, &params, &mut args, &mut grid, &mut block),
        _ => None,
    };
    let renamed_sizes = match &host {
        // A method's own name (`step` of `Simulation<Real>::step`): the spec's names are identifiers.
        Some(h) => rename_shadowed_sizes(h.launcher_name().rsplit("::").next().unwrap_or_default(), &mut grid, &mut block, &mut shared_bytes, &mut args, &host_lengths),
        None => Vec::new(),
    };

    let mut choices = Vec::new();
    let mut held = Vec::new();
    if let (Some((_, l)), Some(h)) = (site, &host) {
        // A macro or a file-scope constant the kernel's code uses (to size its shared tile) goes
        // with that code: a build.
        let constants = file_scope_constants(templated);
        let in_body: BTreeSet<&str> = body.map(|b| identifiers_in(&templated.text()[b.byte_range()]).filter(|w| h.is_macro(w) || constants.iter().any(|c| c.name == *w)).collect()).unwrap_or_default();
        let threads_bound;
        let partitioned = body.and_then(|b| mixed_per_block_output(templated.text(), b, &args));
        // The definition the kernel's file sees (its folder's header, not a namesake of another
        // program of the workspace); one of the file itself where the lines are the user's.
        let definition = |name: &str| {
            if let Some(constant) = constants.iter().find(|c| c.name == name) {
                let place = place_in(templated.text(), constant.at, own, hosts, origins);
                return Some(BuildValue { value: constant.value, place, written: constant.written.clone() });
            }
            let seen = crate::slice::where_defined(templated.text(), name, slice_options).filter(|(path, ..)| Some(path.as_path()) != slice_options.file.as_deref());
            let (value, place) = match seen {
                Some((path, line, value)) => (crate::syntax::parse_int_literal(&value)?, format!("{}:{line}", file_name(&path))),
                None => h.literal_macro(name).map(|(value, text, at)| (value, place_in(text, at, own, hosts, origins)))?,
            };
            Some(BuildValue { value, place, written: format!("#define {name} {value}") })
        };
        let macros = BodyMacros { names: &in_body, definition: &definition };
        (choices, threads_bound, held) = launch_choices(h, &args, &params, &block, &macros, captured_block, partitioned);
        restrictions.extend(threads_bound);
        // A block the lift left literal (in another file, which templatize does not edit, or a
        // `dim3` of numbers): the spec varies the launch. Not when the kernel has fixed-size
        // `__shared__` arrays: those are laid out for that block (a 32 × 9 tile of sums), and
        // another block would read past them. A `__shared__` scalar (a flag, a counter) is
        // one per block whatever its size.
        // Nor when the block is a member of a class the kernel reads it from too (`Traits::kThreads`,
        // the stride of its loops): the kernel is written for that block.
        let body_text = body.map_or("", |b| &templated.text()[b.byte_range()]);
        if choices.is_empty() && k.shared.iter().all(|s| s.is_extern || s.dims.is_empty()) && !block_is_kernels_member(&l.block.text, body_text) {
            let (literal, threads_bound) = literal_block_choices(kernel, user_line(l), &mut grid, &mut block);
            choices.extend(literal);
            restrictions.extend(threads_bound);
        }
        restrictions.extend(template_block_ties(k, l, &params, &choices, &block));
        insert_before_compiler_options(&mut params, choices.iter().cloned());
    }
    // A buffer the caller sizes by the grid it works out (one partial sum per block) moves with
    // the block too; after the choices, which take a name a length uses for a size.
    if let Some(h) = &host {
        for arg in crate::spec::leaves_mut(&mut args) {
            arg.length = arg.length.take().map(|l| h.worked_out_by_caller(&l, &block));
        }
    }
    shared_bytes = with_kept_block_extents(&shared_bytes, &block);
    if let Some(unlaunched) = &unlaunched {
        insert_before_compiler_options(&mut params, unlaunched.choice.clone());
    }
    let mut param_names: BTreeSet<String> = params.iter().map(|p| p.name.clone()).collect();
    let mut unsayable = unsayable_expressions(kernel, site.is_some(), &mut grid, &mut block, &mut shared_bytes, &mut args);
    // An extent is a scalar's value as the spec finally says it: renamed, and `?` where the
    // program's expression is none a spec can say.
    if let Some(b) = body {
        mark_index_extents(templated.text(), b, &mut args);
        let no_number = |name: &str| host.as_ref().is_none_or(|h| h.size_values(&host_name_of(&renamed_sizes, name)).iter().all(Option::is_none));
        // Read in the kernel as written: a transform's staging (`out_v[lane] = …` before one
        // vector store) is no store of the program's.
        let written = original.model().kernel(kernel).and_then(|ok| super::kernel_definition(original, ok)).and_then(|d| d.child_by_field_name("body"));
        let (text, written) = written.map_or((templated.text(), b), |w| (original.text(), w));
        give_stored_values_any_number(text, written, &mut args, &grid, &block, &shared_bytes, &no_number);
    }
    let mut sizes = BTreeSet::new();
    let expressions = grid.iter().chain(&block).chain(std::iter::once(&shared_bytes));
    let leaves = || crate::spec::leaves(&args);
    let arg_exprs = leaves().filter_map(|a| if a.dtype().is_float() { a.length.as_ref() } else { a.length.as_ref().or(a.value.as_ref()) });
    let arg_exprs = arg_exprs.chain(args.iter().flat_map(|a| a.texture.iter().flat_map(|t| &t.extent)));
    // A buffer's length may name a scalar argument (`n` of `if (i < n)`): its value says what
    // it is, so it is no size of its own, unless that value is the host's size of that name.
    let scalar_args: BTreeSet<&str> = args.iter().filter(|a| a.value.as_deref().is_some_and(|v| !identifiers_in(v).any(|w| w == a.name))).map(|a| a.name.as_str()).collect();
    for text in expressions.chain(arg_exprs) {
        for name in identifiers_in(text) {
            // `blocks_per_sm` is each configuration's, not the problem's.
            if !param_names.contains(name) && !scalar_args.contains(name) && !is_keyword(name) && expr::Function::from_name(name).is_none() && name != crate::spec::BLOCKS_PER_SM {
                sizes.insert(name.to_string());
            }
        }
    }
    let mut shapes: Vec<Shape> = Vec::new();
    let host_name = |size: &String| host_name_of(&renamed_sizes, size);
    if let Some(h) = &host {
        let values: Vec<(String, Vec<Option<i64>>)> = sizes.iter().map(|s| (s.clone(), h.size_values(&host_name(s)))).collect();
        for path in 0..h.paths.len() {
            let shape: Shape = values.iter().filter_map(|(s, v)| Some((s.clone(), v[path]?))).collect();
            if !shapes.contains(&shape) {
                shapes.push(shape);
            }
        }
        // A call path that gives only some of the sizes is not a shape the program runs (it
        // reached the launcher another way): keep those that give the most, and of them those
        // that give the same sizes as the first, as every shape must name the same.
        let fullest = shapes.iter().rev().max_by_key(|s| s.len()).map(|s| s.keys().cloned().collect::<Vec<String>>()).unwrap_or_default();
        shapes.retain(|s| s.keys().eq(fullest.iter()));
    }
    if shapes.is_empty() {
        shapes.push(Shape::new());
    }
    if let Some(unlaunched) = &unlaunched {
        for size in unlaunched.chosen.keys() {
            shapes[0].insert(size.clone(), CHOSEN_ELEMENTS);
        }
    }
    // A macro the kernel's own code uses (`PER_BOX` of `positions + box * PER_BOX`) is compiled
    // into it: no shape may give it another value (the verification's edge cases try sizes of 1).
    // So is a template parameter of the launcher: the kernel's template arguments are those of
    // the first instantiation, and the shapes of other instantiations go.
    let in_body: BTreeSet<&str> = body.map(|b| identifiers_in(&templated.text()[b.byte_range()]).collect()).unwrap_or_default();
    let compiled = |s: &&String| host.as_ref().is_some_and(|h| (in_body.contains(s.as_str()) && h.is_compiled_constant(s)) || h.is_launcher_template_param(&host_name(s)));
    let compiled_names: Vec<&String> = sizes.iter().filter(compiled).collect();
    // What a compiled constant is made of keeps its value with it (`GRID_SIZE` of
    // `THREADS = GRID_SIZE * BLOCK_SIZE`): another would leave the two disagreeing.
    let made_compiled = |s: &&String| host.as_ref().is_some_and(|h| compiled_names.iter().any(|c| c != s && h.made_from(&host_name(c), &host_name(s))));
    let compiled_in: Vec<(&String, i64)> = sizes.iter().filter(|s| compiled(s) || made_compiled(s)).filter_map(|s| Some((s, *shapes[0].get(s)?))).collect();
    shapes.retain(|shape| compiled_in.iter().all(|(s, value)| shape.get(s.as_str()) == Some(value)));
    restrictions.extend(compiled_in.iter().map(|(size, value)| format!("{size} == {value}")));
    // Sizes a caller works out from the others stay in the shapes until the end, for the
    // restrictions worked out from them; the spec then writes them as derived.
    let spec_name = |host: &str| renamed_sizes.iter().find(|(name, _)| name == host).map(|(_, renamed)| renamed.clone());
    let free_sizes: BTreeSet<&String> = sizes.iter().filter(|s| !compiled_in.iter().any(|(c, _)| c == s)).collect();
    let derived = match &host {
        Some(h) => {
            let asserted = h.asserted_equalities();
            let worked_out = |size: &String| {
                let host_size = host_name(size);
                let said = h.size_worked_out(&host_size).into_iter().chain(asserted.iter().filter_map(|a| equal_to(a, &host_size)));
                said.map(|text| crate::syntax::rename_identifiers_in(&text, spec_name)).collect()
            };
            derived_sizes(&free_sizes, &shapes, &worked_out)
        }
        None => BTreeMap::new(),
    };
    // A non-power-of-two shape along the grid's leading size, where tails hide bugs, unless
    // the file already has one. A macro of the host's that no buffer's length names is a count
    // of blocks the program picks (cuda_hgemm's `dim3 grid(BLOCK_STRIDE, …)`), not a problem
    // size with a tail.
    let has_odd = shapes.iter().any(|s| s.values().any(|v| *v > 1 && !(*v as u64).is_power_of_two()));
    // A kernel of independent threads over a flat index, whose block is the problem's (`K` of
    // `k<<<S, K>>>` over `S * K` elements): the grid may follow a block of any size instead.
    let flat = match (choices.is_empty(), body, site) {
        (true, Some(b), Some(_)) => super::elements::flat_threads(templated.text(), b),
        _ => None,
    };
    // Threads that read before checking their bound run only on shapes their threads cover
    // exactly: a tail is no shape of theirs.
    let tail_runs = flat != Some(FlatThreads::Unguarded);
    let blocks_picked = |name: &str| host.as_ref().is_some_and(|h| h.is_macro(&host_name(&name.to_string()))) && !leaves().any(|a| a.length.as_deref().is_some_and(|l| identifiers_in(l).any(|w| w == name)));
    let free_lead = |g: &&String| !compiled_in.iter().any(|(s, _)| *s == *g) && !derived.contains_key(g.as_str());
    if let Some(lead) = grid.first().filter(|g| tail_runs && sizes.contains(g.as_str()) && !has_odd && free_lead(g) && !blocks_picked(g)) {
        if let Some(&value) = shapes[0].get(lead.as_str()).filter(|v| **v > 1) {
            let mut tail = shapes[0].clone();
            tail.insert(lead.clone(), value - 1);
            shapes.push(tail);
        }
    }
    if let (Some(flat), Some((_, l))) = (flat, site) {
        let original_block = block.first().cloned().unwrap_or_default();
        if let Some((choice, covered)) = flat_block_choice(kernel, user_line(l), &mut grid, &mut block, &shapes[0], &sizes) {
            insert_before_compiler_options(&mut params, [choice.clone()]);
            param_names.insert(choice.name.clone());
            choices.push(choice);
            let exactly = (flat == FlatThreads::Unguarded).then_some(covered);
            let divided = divided_evenly(&original_block, &shapes).into_iter().chain(exactly);
            restrictions.extend(divided.filter(|r| !restrictions.contains(r)).collect::<Vec<_>>());
        }
    }
    // A block the host code does not say (through a helper's arithmetic the spec cannot
    // follow) but a captured launch does, of threads that each take their own flat index below
    // a count: the grid follows the block, which replaces any choice the unsaid block named.
    let count = captured_block.and(body).and_then(|b| super::elements::guarded_count(templated.text(), b));
    let unsaid = block.iter().any(|b| b.contains(UNKNOWN));
    let only_launch_choices = choices.iter().all(|c| c.kind == ParamKind::Launch);
    let block_names_build = block.iter().any(|b| identifiers_in(b).any(|w| params.iter().any(|p| p.name == w && p.kind != ParamKind::Launch)));
    if let (Some(count), Some(captured), true) = (count, captured_block, (choices.is_empty() || unsaid) && only_launch_choices && !block_names_build) {
        let name = match choices.as_slice() {
            [one] => one.name.clone(),
            _ => format!("{}_BLOCK_SIZE", super::param_prefix(kernel)),
        };
        if let Some(choice) = captured_flat_block_choice(&name, &count, captured, &args, &mut grid, &mut block) {
            params.retain(|p| !choices.iter().any(|c| c.name == p.name));
            param_names.retain(|p| !choices.iter().any(|c| c.name == *p));
            insert_before_compiler_options(&mut params, [choice.clone()]);
            param_names.insert(choice.name.clone());
            choices = vec![choice];
            unsayable.retain(|(key, _)| key != "grid" && key != "block");
        }
    }
    // Where the program makes what the spec has no number for: `name` in the launcher's names.
    let made = |name: &str| {
        let place = |text: &str, at: usize| place_in(text, at, own, hosts, origins);
        match (&host, site) {
            (Some(h), _) => match h.value_source(name) {
                Some(source) => source.describe(&place(source.text, source.at)),
                None => format!("the launch in `{}` passes it, and the source gives no number for it", h.launcher_name()),
            },
            (None, Some((doc, l))) => format!("the launch ({}) passes it; its host code was not read", place(doc.text(), l.span.start_byte)),
            (None, None) => format!("no launch of `{kernel}` was found in the workspace"),
        }
    };
    // A member (`size.width`) has its own error: the spec cannot name it.
    let unknown_sizes = sizes.iter().filter(|size| is_identifier(size) && shapes.iter().all(|shape| !shape.contains_key(*size))).map(|size| (size.clone(), made(&host_name(size))));
    let left_unknown = |a: &ArgSpec| a.value.as_deref() == Some(UNKNOWN) || a.length.as_deref() == Some(UNKNOWN);
    let passed = |i: usize| launch.and_then(|l| l.args.get(i)).map(|text| super::host::strip_outer_parens(text.trim()).to_string()).unwrap_or_default();
    let unknown_args = args.iter().enumerate().filter(|(_, a)| left_unknown(a)).map(|(i, a)| (a.name.clone(), made(&passed(i))));
    // A struct's field, where the launcher assigns the struct it passes (`params.x = …`).
    let unknown_fields = args.iter().enumerate().flat_map(|(i, a)| a.fields.iter().filter(|f| left_unknown(f)).map(move |f| (i, a, f)));
    let unknown_fields = unknown_fields.map(|(i, a, f)| (format!("{}.{}", a.name, f.name), made(&format!("{}.{}", passed(i), f.name))));
    let unknown_args = unknown_args.chain(unknown_fields);
    let unknown = unknown_sizes.chain(unknown_args).chain(unsayable).collect();
    // The kernel's own expressions in the spec's terms, for the restrictions its loops and tiles give.
    let kernel_terms = body.map(|b| KernelTerms::of(templated.text(), b, &block));
    let unchecked = body.zip(kernel_terms.as_ref()).map(|(b, terms)| whole_tiles_unchecked(templated.text(), b, &grid, terms, &args)).unwrap_or_default();
    for restriction in whole_blocks(&grid, &sizes, &params, &shapes).into_iter().chain(holding_at_defaults(unchecked, &params, &shapes)) {
        if !restrictions.contains(&restriction) {
            restrictions.push(restriction);
        }
    }
    // A block the kernel's template parameters make (`dim3 block((BM * BN) / TM)` in the
    // launcher) moves with them, as a block of launch choices does.
    let block_params: Vec<&ParamSpec> = params.iter().filter(|p| p.kind == ParamKind::Template && block.iter().any(|b| identifiers_in(b).any(|w| w == p.name))).collect();
    if choices.is_empty() {
        let bounds = template_block_bounds(&params, &block, keeps_block_threads);
        restrictions.extend(bounds.into_iter().filter(|r| !restrictions.contains(r)).collect::<Vec<_>>());
    }
    let known = |text: &str| identifiers_in(text).all(|w| param_names.contains(w) || sizes.contains(w) || expr::Function::from_name(w).is_some());
    // A loop whose uniform step a configuration makes 0 never ends (a candidate the watchdog
    // would have to kill): such configurations are out of the space.
    let lifted_steps = body.zip(kernel_terms.as_ref()).map(|(b, terms)| positive_loop_steps(templated.text(), b, terms)).unwrap_or_default();
    // A configuration that breaks one of the kernel's `static_assert`s does not compile; the
    // template parameters the spec fixes are their numbers there.
    let fixed = |word: &str| instantiated(word).filter(|a| a.parse::<i64>().is_ok());
    let static_asserts: Vec<String> = body.map(|b| static_assertions(templated.text(), b)).unwrap_or_default().iter().map(|c| super::renamed_until_settled(c, fixed)).collect();
    for condition in lifted_steps.iter().chain(&static_asserts).map(|c| spec_expression(c, Division::Floor)) {
        let names_a_parameter = identifiers_in(&condition).any(|w| param_names.contains(w));
        if names_a_parameter && known(&condition) && expr::parse(&condition).is_ok() && !restrictions.contains(&condition) {
            restrictions.push(condition);
        }
    }
    // An element of the kernel's own arrays read as a wider value (`LDST64BITS(r_load_b[0])`)
    // stays aligned and within its array; each condition holds for the program's values.
    let root = templated.tree().map(|t| t.root_node());
    let aligned = match (body, root, kernel_terms.as_ref()) {
        (Some(b), Some(root), Some(terms)) => vector_access::alignment_conditions(templated.text(), root, b, &|w| param_names.contains(w), &|t| terms.written_out(t)),
        _ => Vec::new(),
    };
    let aligned: Vec<String> = aligned.iter().map(|c| spec_expression(c, Division::Floor)).filter(|c| identifiers_in(c).any(|w| param_names.contains(w)) && known(c) && expr::parse(c).is_ok()).collect();
    for condition in holding_at_defaults(aligned, &params, &shapes) {
        if !restrictions.contains(&condition) {
            restrictions.push(condition);
        }
    }
    // A tile the block's rows walk in strides of the block (`for (j = 0; j < TILE_DIM; j +=
    // BLOCK_ROWS)` indexing row `threadIdx.y + j`) holds a whole number of strides; a tile of the
    // problem's sizes is the bounds checks' business.
    let strided = body.zip(kernel_terms.as_ref()).map(|(b, terms)| block_strided_tiles(templated.text(), b, terms)).unwrap_or_default();
    for condition in strided.iter().map(|c| spec_expression(c, Division::Floor)) {
        let of_parameters = identifiers_in(&condition).all(|w| param_names.contains(w));
        if of_parameters && expr::parse(&condition).is_ok() && !restrictions.contains(&condition) {
            restrictions.push(condition);
        }
    }
    // A `#define` whose comment works out its value from other macros (`BLOCK_ROW_WARPS 2 //
    // BLOCK_COLS / WARP_COLS`) keeps to it.
    let macro_value = |name: &str| host.as_ref().and_then(|h| h.literal_macro(name)).map(|(value, _, _)| value);
    for condition in derivations::restrictions(original, &macro_value, &|word| param_names.contains(word)).iter().map(|c| spec_expression(c, Division::Floor)) {
        if known(&condition) && expr::parse(&condition).is_ok() && !restrictions.contains(&condition) {
            restrictions.push(condition);
        }
    }
    if !choices.is_empty() || !block_params.is_empty() {
        let moves_the_block = |text: &str| identifiers_in(text).any(|w| choices.iter().any(|c| c.name == w) || block_params.iter().any(|p| p.name == w));
        let host_asserts = host.as_ref().map(|h| h.assertions()).unwrap_or_default();
        let kernel_asserts = body.map(|b| block_assertions(templated.text(), b, &block)).unwrap_or_default();
        for condition in host_asserts.into_iter().chain(kernel_asserts).map(|c| spec_expression(&c, Division::Floor)) {
            if moves_the_block(&condition) && known(&condition) && expr::parse(&condition).is_ok() && !restrictions.contains(&condition) {
                restrictions.push(condition);
            }
        }
    }

    // The case of a dispatch above the launcher that picked this instantiation holds on the
    // shapes too: another head dimension is another kernel's.
    let dispatched = host.as_ref().map(|h| h.dispatched_cases()).unwrap_or_default();
    for condition in holding_at_defaults(dispatched.iter().map(|c| spec_expression(c, Division::Floor)).filter(|c| known(c)).collect(), &params, &shapes) {
        if !restrictions.contains(&condition) {
            restrictions.push(condition);
        }
    }

    // A restriction that holds a parameter at its value (`kMmaTileSeqLenK == 1`, of the kernel's
    // `static_assert`) leaves it that value only: the search need not draw the others.
    // No shapes: a conjunct that names a size narrows nothing here (the tune narrows on its shapes).
    crate::space::narrow_to_restricted_values(&mut params, &restrictions, &[]);

    // Float atomics add in an order that varies from run to run: PyTorch's helpers as CUDA's own.
    let adds_atomically = body.is_some_and(|b| crate::slice::atomic_adds().any(|add| contains_call(templated.text(), b, add)));
    let deterministic = !(adds_atomically && args.iter().any(|a| a.is_buffer() && a.dtype().is_float()));
    // The kernel exists (templatize checked), so slicing cannot fail on it.
    let source = device_slice(original, kernel, &slice_options.clone().with_template_args(&template_args)).map(|s| s.source).unwrap_or_else(|_| original.text().to_string());
    let launch_found = site.map(|(doc, l)| LaunchFound {
        other_file: hosts.iter().find(|h| std::ptr::eq(&h.document, doc)).map(|h| h.path.clone()),
        line: user_line(l),
        choices,
        held,
        documented_run: host.as_ref().and_then(HostContext::documented_run),
        twin_call: host.as_ref().and_then(HostContext::twin_call).map(|t| {
            let place = place_in(t.text, t.at, own, hosts, origins);
            format!("nothing calls `{}`: the sizes are those `{}` passes to `{}` ({place}), which takes the same parameters", t.launcher, t.caller, t.twin)
        }),
    });
    let spec = KernelSpec {
        name: kernel.to_string(),
        template_args,
        grid,
        block,
        shared_bytes,
        cooperative: synchronises_grid(&source),
        compiler_options: Vec::new(),
        shapes: without_derived(shapes, &derived),
        derived,
        unknown,
        chosen: unlaunched.as_ref().map(|u| u.chosen.clone()).unwrap_or_default(),
        args,
        params,
        restrictions,
        verify: VerifySpec { tolerances: Vec::new(), deterministic, contiguous: None },
        sol: SolSpec::default(),
        captures: Vec::new(),
        baseline: Baseline { sha256: sha256_hex(&source), source },
    };
    Inferred { spec, launch: launch_found, unlaunched: unlaunched.map(|u| u.said) }
}

/// The elements a kernel no program launches is tuned on: 2^24, so that its buffers (64 MiB of
/// floats each) outgrow the L2 cache and the tune measures memory, as a program's sizes would.
const CHOSEN_ELEMENTS: i64 = 1 << 24;

/// The block a launch of a kernel no program launches starts from: the commonest choice.
const CHOSEN_BLOCK: i64 = 256;

/// The launch a kernel no program launches gets from its flat index: the block a parameter, the
/// grid covering the count, and the count's sizes (scalar arguments) chosen.
struct UnlaunchedLaunch {
    /// The block parameter, where the kernel has none of its own.
    choice: Option<ParamSpec>,
    /// Each size chosen, with why.
    chosen: BTreeMap<String, String>,
    /// The launch as the templatize report says it.
    said: String,
}

/// For a kernel that no launch in the workspace reaches, whose threads each take their own flat
/// index (or a literal multiple of it, a `float4` per thread) below a count of its scalar
/// arguments: `grid`, `block` and the scalars' values the launch that index asks for. Threads
/// that share nothing with their block get a block parameter of their own; a block the kernel
/// takes as a template parameter (`blockIdx.x * NUM_THREADS + threadIdx.x`, its shared arrays
/// sized by it) is that parameter. `None` for any other kernel, whose launch stays `?`.
fn launch_from_own_index(kernel: &str, text: &str, body: Node, params: &[ParamSpec], args: &mut [ArgSpec], grid: &mut Vec<String>, block: &mut Vec<String>) -> Option<UnlaunchedLaunch> {
    let (count, step, template_block) = match super::elements::flat_threads(text, body) {
        Some(FlatThreads::Guarded) => {
            let (count, step) = super::elements::guarded_elements(text, body)?;
            (count, step, None)
        }
        _ => {
            let (name, count, step) = template_block_index(text, body, params)?;
            (count, step, Some(name))
        }
    };
    let counted: BTreeSet<&str> = identifiers_in(&count).collect();
    let scalar = |a: &ArgSpec| !a.is_buffer() && a.fields.is_empty() && a.value.as_deref() == Some(UNKNOWN);
    if counted.is_empty() || !counted.iter().all(|w| args.iter().any(|a| a.name == *w && scalar(a))) {
        return None;
    }
    // Another count the program would give (the rows a thread's loop walks) leaves the sizes to
    // the user: one chosen beside it would make buffers of no size anyone runs.
    let other_count = |a: &ArgSpec| scalar(a) && !a.dtype().is_float() && !counted.contains(a.name.as_str());
    if args.iter().any(other_count) {
        return None;
    }
    let name = template_block.clone().unwrap_or_else(|| format!("{}_BLOCK_SIZE", super::param_prefix(kernel)));
    let threads = if step == 1 { name.clone() } else { format!("{step} * {name}") };
    *grid = vec![format!("ceil_div({count}, {threads})")];
    *block = vec![name.clone()];
    let why = format!("no program launches `{kernel}`");
    let mut chosen = BTreeMap::new();
    for arg in args.iter_mut().filter(|a| counted.contains(a.name.as_str())) {
        arg.value = Some(arg.name.clone());
        chosen.insert(arg.name.clone(), why.clone());
    }
    let sizes = chosen.keys().map(|s| format!("`{s}` = {CHOSEN_ELEMENTS}")).collect::<Vec<_>>().join(", ");
    let launch = format!("`ceil_div({count}, {threads})` blocks");
    let (choice, said) = match template_block {
        Some(_) => (None, format!("{why}: its index asks for {launch} of its template parameter `{name}` threads; the sizes are templatize's choice ({sizes}): write those your program runs in the spec's shapes")),
        None => {
            let origin = format!("{why}: each thread takes its own flat index below `{count}` and shares nothing with its block, so a launch of any block covers it in {launch}");
            let values = block_values(block, &name, CHOSEN_BLOCK);
            let said = format!("{why}: its flat index asks for {launch} of `{name}` = {CHOSEN_BLOCK} threads; the sizes are templatize's choice ({sizes}): write those your program runs in the spec's shapes");
            (Some(ParamSpec { name, kind: ParamKind::Launch, default: CHOSEN_BLOCK, values, origin }), said)
        }
    };
    Some(UnlaunchedLaunch { choice, chosen, said })
}

/// The block a kernel takes as a template parameter the spec tunes, from the index one of its
/// locals holds (`idx = blockIdx.x * NUM_THREADS + tid`, with `tid = threadIdx.x`, or that times
/// a literal), with the count the kernel compares it with (`idx < N`) and the literal: `None`
/// where the index is made otherwise or compared with several counts.
fn template_block_index(text: &str, body: Node, params: &[ParamSpec]) -> Option<(String, String, i64)> {
    let said = |n: Node| text[n.byte_range()].split_whitespace().collect::<String>();
    let locals: Vec<(&str, Node)> = super::lanes::statements_of(body)
        .into_iter()
        .filter(|s| s.kind() == "declaration")
        .filter_map(|s| {
            let declarator = s.child_by_field_name("declarator").filter(|d| d.kind() == "init_declarator")?;
            let name = declarator.child_by_field_name("declarator").filter(|n| n.kind() == "identifier")?;
            Some((&text[name.byte_range()], super::bounds::without_parentheses(declarator.child_by_field_name("value")?)))
        })
        .collect();
    let is_thread = |n: Node| said(n) == "threadIdx.x" || locals.iter().any(|(name, value)| said(n) == *name && said(*value) == "threadIdx.x");
    let template_block = |n: Node| params.iter().find(|p| p.kind == ParamKind::Template && said(n) == p.name).map(|p| p.name.clone());
    let block_of = |n: Node| -> Option<String> {
        let (a, b) = operands_of(text, n, "+")?;
        let (start, thread) = if is_thread(b) { (a, b) } else { (b, a) };
        let (x, y) = operands_of(text, start, "*").filter(|_| is_thread(thread))?;
        match (said(x).as_str(), said(y).as_str()) {
            ("blockIdx.x", _) => template_block(y),
            (_, "blockIdx.x") => template_block(x),
            _ => None,
        }
    };
    let (holder, name, step) = locals.iter().find_map(|(holder, value)| {
        if let Some(name) = block_of(*value) {
            return Some((*holder, name, 1));
        }
        let (a, b) = operands_of(text, *value, "*")?;
        let (index, literal) = if crate::syntax::parse_int_literal(&said(b)).is_some() { (a, b) } else { (b, a) };
        Some((*holder, block_of(index)?, crate::syntax::parse_int_literal(&said(literal)).filter(|s| *s > 0)?))
    })?;
    let counts: BTreeSet<String> = descendants(body)
        .filter_map(|n| {
            let (left, right) = operands_of(text, n, "<").or_else(|| operands_of(text, n, ">").map(|(l, r)| (r, l)))?;
            (said(left) == holder && right.kind() == "identifier").then(|| said(right))
        })
        .collect();
    match counts.into_iter().collect::<Vec<_>>().as_slice() {
        [count] => Some((name, count.clone(), step)),
        _ => None,
    }
}

/// The two sides of `node` when it is a binary `operator` expression, without their parentheses.
fn operands_of<'t>(text: &str, node: Node<'t>, operator: &str) -> Option<(Node<'t>, Node<'t>)> {
    node.child_by_field_name("operator").filter(|o| node.kind() == "binary_expression" && &text[o.byte_range()] == operator)?;
    Some((super::bounds::without_parentheses(node.child_by_field_name("left")?), super::bounds::without_parentheses(node.child_by_field_name("right")?)))
}

/// Of `sizes`, those a caller works out from the others (`worked_out`, in the spec's names:
/// `input_size_1 // 2` for `pairs`), each with its expression, where the expression names only
/// sizes no other is worked out from and gives the size's value on every shape. Verification
/// then moves them together: a shape it makes with another `input_size_1` has its own `pairs`.
fn derived_sizes(sizes: &BTreeSet<&String>, shapes: &[Shape], worked_out: &dyn Fn(&String) -> Vec<String>) -> BTreeMap<String, String> {
    let given = |name: &str| shapes.iter().all(|shape| shape.contains_key(name));
    // Of other sizes: one worked out from numbers alone is the program's, which checks vary.
    let other_size = |size: &String, w: &str| w != size.as_str() && sizes.iter().any(|s| s.as_str() == w) && given(w);
    let of_other_sizes = |size: &String, text: &str| identifiers_in(text).any(|w| other_size(size, w)) && identifiers_in(text).all(|w| other_size(size, w) || expr::Function::from_name(w).is_some());
    let gives_every_value = |size: &String, text: &str| {
        let Ok(parsed) = expr::parse(text) else { return false };
        shapes.iter().all(|shape| parsed.eval_integer(&|n| shape.get(n).map(|v| expr::Value::Int(*v))).ok() == shape.get(size.as_str()).copied())
    };
    // A size others are worked out from stays a size of the shapes, and one derived size of
    // another would need an order: each is derived from sizes the shapes keep.
    let mut derived: BTreeMap<String, String> = BTreeMap::new();
    // A size named for a tensor's read (`weight_size_0`) is worked out before a name the
    // program gives a size (`channels`), which the shapes then keep.
    let mut in_order: Vec<&&String> = sizes.iter().filter(|size| given(size)).collect();
    in_order.sort_by_key(|size| super::tensors::named_read(size).is_none());
    for size in in_order {
        let said = worked_out(size).into_iter().map(|text| super::callee::readable(super::host::strip_outer_parens(&spec_expression(&text, Division::Floor))));
        let of_kept = |text: &String| identifiers_in(text).all(|w| !derived.contains_key(w)) && !derived.values().any(|d| identifiers_in(d).any(|w| w == size.as_str()));
        if let Some(text) = said.into_iter().find(|text| of_other_sizes(size, text) && gives_every_value(size, text) && of_kept(text)) {
            derived.insert(size.to_string(), text);
        }
    }
    derived
}

/// What an assertion of the program says `size` equals (`kernel_size * kernel_size *
/// group_size` of `assert masks.size(1) == kernel_size * kernel_size * group_size`, read as
/// `masks_size_1 == …`).
fn equal_to(assertion: &str, size: &str) -> Option<String> {
    let (left, right) = assertion.split_once("==")?;
    let plain = |side: &str| !side.contains(['=', '<', '>', '!', '&', '|', '?']);
    if !plain(left) || !plain(right) {
        return None;
    }
    let (left, right) = (super::host::strip_outer_parens(left.trim()), super::host::strip_outer_parens(right.trim()));
    match (left == size, right == size) {
        (true, false) => Some(right.to_string()),
        (false, true) => Some(left.to_string()),
        _ => None,
    }
}

/// `shapes` without the sizes the spec works out from the others, each shape once.
fn without_derived(shapes: Vec<Shape>, derived: &BTreeMap<String, String>) -> Vec<Shape> {
    let mut kept: Vec<Shape> = Vec::new();
    for mut shape in shapes {
        shape.retain(|name, _| !derived.contains_key(name));
        if !kept.contains(&shape) {
            kept.push(shape);
        }
    }
    kept
}

/// A grid that divides by the block's number (`(N + 256 - 1) / 256` for `<<<grid, 256>>>`)
/// covers the elements with blocks of that size: with the block the parameter `name`, it divides
/// by that. A grid that is one number counts blocks, whatever their size.
fn grid_following_block(grid: &str, block: i64, name: &str) -> String {
    if super::lift::is_int_literal(grid) {
        return grid.to_string();
    }
    let mut text = grid.to_string();
    for (range, literal) in super::lift::block_literals(grid, 0, block).into_iter().rev() {
        text.replace_range(range, &literal.replacement(name, || format!("({name} - 1)")));
    }
    text
}

/// The thread-count bounds of a block computed from template parameters (`(BM * BN) // TM`),
/// at 32 (fewer when the default block has fewer) to 1,024 threads. None for a block that is
/// one parameter (`THREADS`), whose values are already in range, or that no parameter makes.
fn template_block_bounds(params: &[ParamSpec], block: &[String], keeps_threads: bool) -> Vec<String> {
    let is_template = |w: &str| params.iter().any(|p| p.kind == ParamKind::Template && p.name == w);
    let made_by_template = block.iter().any(|b| identifiers_in(b).any(is_template));
    let arithmetic = block.iter().any(|b| !params.iter().any(|p| p.name == b.trim()) && b.trim().parse::<i64>().is_err());
    if !(made_by_template && arithmetic) {
        return Vec::new();
    }
    let defaults: std::collections::HashMap<&str, i64> = params.iter().map(|p| (p.name.as_str(), p.default)).collect();
    let threads = block.iter().map(|b| expr::parse(b).ok()?.eval_integer(&|n| defaults.get(n).map(|v| expr::Value::Int(*v))).ok()).collect::<Option<Vec<i64>>>();
    let Some(threads) = threads.map(|t| t.iter().product::<i64>()) else { return Vec::new() };
    // Threads mapped onto a tile with numbers (`tid / 2` for a row of 128): as many as there are.
    if keeps_threads {
        return vec![format!("{} == {threads}", threads_of(block))];
    }
    threads_bounds(block, &[threads])
}

/// An integer a launch in another file gives a template parameter, and where.
#[derive(Clone, Debug, PartialEq)]
pub struct HostValue {
    pub value: i64,
    /// `runner.cu:189 (`BM = 64` in `runSgemm1DBlocktiling`)`.
    pub origin: String,
    /// Every value the launches of that file write for the parameter (`k<1><<<…>>>` and
    /// `k<0><<<…>>>` in the two branches of an `if`), sorted.
    pub written: Vec<i64>,
}

/// Per template parameter of `kernel`, the integer the launch the program takes instantiates
/// it with, when the host code settles it (`sgemm<BM, BN><<<...>>>` after `const uint BM = 64;`).
/// A literal of a launch in the kernel's own file is the template-params transform's to read;
/// this says which of its launches the program takes.
pub fn host_template_values(own: KernelFile, kernel: &str, hosts: &[HostDocument]) -> Vec<Option<HostValue>> {
    let Some((launch_doc, launch, Some(context))) = find_launch(own, hosts, kernel) else { return Vec::new() };
    let host = hosts.iter().find(|h| std::ptr::eq(&h.document, launch_doc));
    let at = match host {
        Some(host) => format!("{}:{}", file_name(&host.path), launch.span.start.line + 1),
        None => format!("line {}", launch.span.start.line + 1),
    };
    let launches: Vec<_> = launches_in(launch_doc, kernel).collect();
    // Of launches that instantiate other values, the one the program takes only where the host
    // code says it is taken (the `case` of the shape's thread count), not merely the first.
    let settled = context.launch_taken() == Some(true);
    let written = |index: usize| -> Vec<i64> {
        let mut values: Vec<i64> = launches.iter().filter_map(|l| l.template_args.get(index)?.value).collect();
        values.sort_unstable();
        values.dedup();
        values
    };
    launch
        .template_args
        .iter()
        .enumerate()
        .map(|(index, arg)| {
            if let Some(value) = arg.value {
                let written = written(index);
                return (settled || written.len() <= 1).then(|| HostValue { value, origin: at.clone(), written });
            }
            // A host template's parameter that the program instantiates (`launch_gemm<3, 1024>`,
            // handed to a harness) gives a parameter the kernel declares a default for its
            // value: the default is not what the program runs.
            let text = context.template_argument(&arg.text);
            let has_default = own.text.model().kernel(kernel).and_then(|k| k.template_params.get(index)).is_some_and(|tp| tp.default.is_some());
            if let Some(value) = crate::syntax::eval_constant(&text, &|_| None).filter(|_| has_default && text.trim() != arg.text.trim()) {
                return Some(HostValue { value, origin: format!("{at} (`{}`, as the program instantiates the launcher)", arg.text.trim()), written: written(index) });
            }
            // In the kernel's own file a launch choice stays the transforms' (a block passed
            // as both the template argument and the block).
            host?;
            let choice = context.launch_choice(text.trim())?;
            Some(HostValue { value: choice.default, origin: format!("{at} ({})", choice.origin), written: written(index) })
        })
        .collect()
}

/// The extents of `grid` and `block`, the shared memory, and the arguments' values and lengths,
/// that a spec expression cannot say (a host function's result, a cast, a bitwise operator, a
/// C++ class's member `Kernel::kSmemSize`), made `?`, with where each is made: the program's
/// text, or, for the extents, no launch at all. One entry per `grid`, `block`, `shared_bytes`
/// and argument, for `[kernels.unknown]`.
fn unsayable_expressions(kernel: &str, launched: bool, grid: &mut [String], block: &mut [String], shared_bytes: &mut String, args: &mut [ArgSpec]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let mut say = |key: &str, text: &mut String, none_made: Option<String>| {
        let made = match expr::parse(text) {
            _ if *text == UNKNOWN => match none_made {
                Some(made) => made,
                None => return,
            },
            Ok(_) => return,
            // The parse error's own advice (`write its value`) is the check's to give.
            Err(e) => format!("the program makes it as `{}`, which a spec expression cannot say: {}", shortened(text), e.message.split(": write").next().unwrap_or(&e.message)),
        };
        *text = UNKNOWN.to_string();
        if !out.iter().any(|(k, _)| k == key) {
            out.push((key.to_string(), made));
        }
    };
    let no_launch = (!launched).then(|| format!("no launch of `{kernel}` was found in the workspace"));
    for (key, extents) in [("grid", grid), ("block", block)] {
        for extent in extents.iter_mut() {
            say(key, extent, no_launch.clone());
        }
    }
    say("shared_bytes", shared_bytes, None);
    for arg in args.iter_mut() {
        for text in arg.value.iter_mut().chain(arg.length.iter_mut()) {
            say(&arg.name, text, None);
        }
        for field in arg.fields.iter_mut() {
            let key = format!("{}.{}", arg.name, field.name);
            for text in field.value.iter_mut().chain(field.length.iter_mut()) {
                say(&key, text, None);
            }
        }
    }
    out
}

/// `text`, cut to a length a person reads in a message, with `…` where it was cut.
fn shortened(text: &str) -> String {
    const MAX_CHARS: usize = 160;
    match text.char_indices().nth(MAX_CHARS) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// The kernel's file and the host files, each with its path.
fn host_files<'a>(own: KernelFile<'a>, hosts: &'a [HostDocument]) -> Vec<HostFile<'a>> {
    let own = HostFile { document: own.host_code(), path: own.path };
    std::iter::once(own).chain(hosts.iter().map(|h| HostFile { document: &h.document, path: Some(&h.path) })).collect()
}

/// The launch of `kernel` the spec follows: in its own file, else in the host files; directly,
/// through a function pointer (`kernel = &transposeNaive; ... kernel<<<grid, threads>>>(...)`),
/// or through the driver API (`cuLaunchKernel` of the function `cuModuleGetFunction` named
/// `"kernel"`). Of several in one file, the first that the program's run does not branch
/// around (`if (descending) k<1><<<…>>> else k<0><<<…>>>`, called with `descending` 0). With
/// the host code around it, when its function is found.
fn find_launch<'a>(own: KernelFile<'a>, hosts: &'a [HostDocument], kernel: &'a str) -> Option<(&'a Document, Cow<'a, LaunchSite>, Option<HostContext<'a>>)> {
    // The hosts come nearest first, so the launch of the kernel's own program wins over a
    // namesake's elsewhere in the workspace, whatever its syntax.
    let others = hosts.iter().filter(|host| may_launch_ours(host, kernel)).map(|h| &h.document);
    // The kernel's file as host code: a launch in a block a dispatch macro is given is read
    // where the macro is expanded, each `case` declaring the constants it instantiates with.
    let docs = || std::iter::once(own.host_code()).chain(others.clone());
    let read_in_full = docs().find(|doc| launches_in(doc, kernel).any(|l| !in_lambda(doc, &l)));
    let doc = read_in_full.or_else(|| docs().find(|doc| launches_in(doc, kernel).next().is_some()))?;
    let files = host_files(own, hosts);
    let mut launches = launches_in(doc, kernel).map(|l| {
        let host = HostContext::new(&files, doc, &l);
        (l, host)
    });
    let (first, first_host) = launches.next()?;
    let taken = |host: &Option<HostContext>| host.as_ref().and_then(HostContext::launch_taken) != Some(false);
    if taken(&first_host) {
        return Some((doc, first, first_host));
    }
    // None taken that the host code tells: the first written, as before.
    Some(launches.find(|(_, host)| taken(host)).map_or((doc, first, first_host), |(l, host)| (doc, l, host)))
}

/// Whether `launch` sits in statements passed as an argument: a lambda a function calls later
/// (`AT_DISPATCH_FLOATING_TYPES(t, "k", [&] { k<scalar_t><<<…>>>(…); })`, a macro of a library),
/// which declares what the launch instantiates with where the workspace cannot see.
fn in_lambda(doc: &Document, launch: &LaunchSite) -> bool {
    let Some(tree) = doc.tree() else { return false };
    let text = doc.text();
    let at = tree.root_node().descendant_for_byte_range(launch.span.start_byte, launch.span.start_byte);
    let mut around = std::iter::successors(at, |n| n.parent()).take_while(|n| n.kind() != "function_definition");
    around.any(|n| n.kind() == "argument_list" && text[n.byte_range()].contains(';'))
}

/// Every launch of `kernel` in `doc`: the direct ones first, then those through a function
/// pointer, then those through the driver API. Lazily: the pointers and the driver calls are
/// looked for (each a walk of the tree) only when the launches before them do not suffice.
fn launches_in<'a>(doc: &'a Document, kernel: &'a str) -> impl Iterator<Item = Cow<'a, LaunchSite>> + 'a {
    // Every way of launching names the kernel: a file that never does (most host files) is
    // not walked.
    let named = doc.text().contains(kernel);
    let model = doc.model();
    let direct = model.launches.iter().filter(move |l| l.kernel == kernel).map(Cow::Borrowed);
    // `kernel<<<…>>>` and `cudaLaunchKernelEx(&config, kernel, …)` through `auto kernel = k<4, T>;`.
    let through_pointer = std::iter::once_with(move || {
        if !named {
            return Vec::new();
        }
        let aliases = pointer_aliases(doc, kernel);
        let names: BTreeSet<&str> = aliases.iter().map(|a| a.name.as_str()).collect();
        let launches = model.launches.iter().map(Cow::Borrowed).chain(names.into_iter().flat_map(|name| driver_launches(doc, name)).map(Cow::Owned));
        launches.filter_map(|l| through_alias(&aliases, doc, l)).collect::<Vec<_>>()
    })
    .flatten();
    let through_driver = std::iter::once_with(move || if named { driver_launches(doc, kernel) } else { Vec::new() }).flatten().map(Cow::Owned);
    direct.chain(through_pointer).chain(through_driver)
}

/// `launch` when it calls through one of `aliases`: the variable the declaration in scope at
/// the launch gives the kernel, else the one its function assigns under the name it launches,
/// else the file's, else (a parameter the pointer is passed in, `run(kernel,
/// …)`) one any function declares; with the instantiation the pointer was taken with
/// (`auto kernel = &k<Traits, false>;`) where the launch names none.
fn through_alias<'a>(aliases: &[PointerAlias], doc: &Document, launch: Cow<'a, LaunchSite>) -> Option<Cow<'a, LaunchSite>> {
    let function = doc.tree().and_then(|tree| super::strategy::enclosing_function(tree.root_node(), &launch));
    let at = function.map(|f| f.start_byte());
    let named = || aliases.iter().filter(|alias| alias.name == launch.kernel);
    // The declaration in scope at the launch decides which kernel a name holds: two lambdas
    // of one function may each declare `auto kernel = …` for a kernel of their own.
    let reaching = doc.tree().and_then(|tree| initialised_declaration_in_scope(tree.root_node(), doc.text(), launch.span.start_byte, &launch.kernel));
    if let Some(declaration) = reaching {
        let taken = named().find(|alias| alias.declaration == Some(declaration))?;
        return Some(with_pointer_args(taken, launch));
    }
    // A function's own `auto kernel = other<T>;` holds another kernel.
    let declares_own = function.and_then(|f| f.child_by_field_name("body")).is_some_and(|body| local_types(doc.text(), body).iter().any(|(name, _)| *name == launch.kernel));
    let passed = || named().next().filter(|_| !declares_own);
    let taken = named().find(|alias| alias.function.is_some() && alias.function == at).or_else(|| named().find(|alias| alias.function.is_none())).or_else(passed)?;
    Some(with_pointer_args(taken, launch))
}

/// `launch` with the instantiation `alias` was taken with, where the launch names none.
fn with_pointer_args<'a>(alias: &PointerAlias, launch: Cow<'a, LaunchSite>) -> Cow<'a, LaunchSite> {
    match (&alias.template_args, launch.template_args.is_empty()) {
        (Some(args), true) => Cow::Owned(LaunchSite { template_args: args.clone(), ..launch.into_owned() }),
        _ => launch,
    }
}

/// The start byte of the declaration with a value (`auto kernel = &k<T>;`) that `name` at
/// byte `at` refers to: the last one before `at` in the innermost block around it that has
/// one. None where `name` is declared without a value there (`void (*kernel)(float *);`,
/// assigned later) or not in a block at all.
fn initialised_declaration_in_scope(root: Node, text: &str, at: usize, name: &str) -> Option<usize> {
    let blocks = std::iter::successors(root.descendant_for_byte_range(at, at), |n| n.parent()).filter(|n| n.kind() == "compound_statement");
    for block in blocks {
        let mut cursor = block.walk();
        let declared = block.named_children(&mut cursor).take_while(|statement| statement.end_byte() <= at).filter(|statement| statement.kind() == "declaration").flat_map(|declaration| {
            let mut cursor = declaration.walk();
            declaration.children_by_field_name("declarator", &mut cursor).collect::<Vec<_>>()
        });
        let last = declared.filter(|declarator| crate::syntax::host::declared_name(*declarator).is_some_and(|n| &text[n.byte_range()] == name)).last();
        if let Some(declarator) = last {
            return (declarator.kind() == "init_declarator").then(|| declarator.start_byte());
        }
    }
    None
}

/// `file:line` of byte `at` of `text`: the kernel's own file (`own`, whose lines templatize's
/// rewrites moved) or one of the host files.
fn place_in(text: &str, at: usize, own: KernelFile, hosts: &[HostDocument], origins: &LineOrigins) -> String {
    let line = |doc: &Document| doc.position(crate::syntax::Encoding::Utf8, at).line;
    let (file, line) = match (own.document_of(text), hosts.iter().find(|h| std::ptr::eq(text, h.document.text()))) {
        (Some(doc), _) => (own.path.map(file_name), origins.original(line(doc)) + 1),
        (None, Some(host)) => (Some(file_name(&host.path)), line(&host.document) + 1),
        (None, None) => (None, text[..at.min(text.len())].matches('\n').count() as u32 + 1),
    };
    file.map_or_else(|| format!("line {line}"), |file| format!("{file}:{line}"))
}

/// A path's last part (`bench.cu`), as places are said.
fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(|| path.display().to_string(), |f| f.to_string_lossy().into_owned())
}

/// The launches of `kernel` that a rewrite of the launch sites in its own file (`own`, whose
/// direct launches it edits) does not reach, each said as a place: those through a function
/// pointer or the driver API in `own` (`line 40`); those a macro of `own` writes, which its
/// expansion holds (`line 198`, the invocation); and those in the other files (`bench.cu:12`)
/// but a file that defines a kernel of that name itself (another program of a samples
/// repository: its launches are of its own kernel).
pub fn unreached_launches(own: KernelFile, kernel: &str, hosts: &[HostDocument]) -> Vec<String> {
    let line = |doc: &Document, launch: &LaunchSite| doc.position(crate::syntax::Encoding::Utf8, launch.span.start_byte).line + 1;
    let edited: Vec<Span> = own.text.model().launches_of(kernel).map(|l| l.span).collect();
    let written: Vec<u32> = launches_in(own.text, kernel).map(|l| line(own.text, &l)).collect();
    let own_indirect = launches_in(own.text, kernel).filter(|l| !edited.contains(&l.span)).map(|l| line(own.text, &l));
    let macro_written = own.expanded.into_iter().flat_map(|doc| launches_in(doc, kernel).map(|l| line(doc, &l)).filter(|at| !written.contains(at)));
    let elsewhere = hosts.iter().filter(|host| may_launch_ours(host, kernel)).flat_map(|host| launches_in(&host.document, kernel).map(|l| format!("{}:{}", file_name(&host.path), line(&host.document, &l))));
    // A dispatch writes a launch per `case`, all on the line that invokes it: one place.
    let mut places: Vec<String> = Vec::new();
    for place in own_indirect.chain(macro_written).map(|at| format!("line {at}")).chain(elsewhere) {
        if !places.contains(&place) {
            places.push(place);
        }
    }
    places
}

/// Whether a launch of `kernel` in `host`, another file than the kernel's, may be one of the
/// kernel: not when the file defines a kernel of that name (another program's
/// `transformKernel`, launched beside its own definition, is that one), other than a
/// specialization of ours (`template <> __global__ void k<at::Half>(…)`).
fn may_launch_ours(host: &HostDocument, kernel: &str) -> bool {
    !host.document.model().kernels.iter().any(|k| k.name == kernel && k.is_definition && !k.is_explicit_specialization())
}

/// The variables `doc` assigns `kernel`'s address to (`fn = &kernel`, `auto fn = kernel`), each
/// with the template arguments of the instantiation taken (`&kernel<Traits, false>`), the first
/// where a conditional takes several.
fn pointer_aliases(doc: &Document, kernel: &str) -> Vec<PointerAlias> {
    let Some(tree) = doc.tree() else { return Vec::new() };
    let text = doc.text();
    let mut out: Vec<PointerAlias> = Vec::new();
    for node in descendants(tree.root_node()) {
        let (target, value) = match node.kind() {
            "init_declarator" => (node.child_by_field_name("declarator").and_then(declared_name), node.child_by_field_name("value")),
            "assignment_expression" => (node.child_by_field_name("left"), node.child_by_field_name("right")),
            _ => continue,
        };
        let (Some(target), Some(value)) = (target, value) else { continue };
        let taken = |value: &Node| {
            let written = text[value.byte_range()].trim().trim_start_matches('&').trim();
            let (name, args) = written.split_once('<').map_or((written, None), |(name, args)| (name.trim(), Some(args)));
            let args = args.and_then(|a| a.trim_end().strip_suffix('>')).map(|a| split_template_args(a).into_iter().map(|text| crate::syntax::Expr { value: crate::syntax::parse_int_literal(&text), text, span: Span::of(*value) }).collect());
            (name == kernel).then_some(args)
        };
        let name = &text[target.byte_range()];
        let function = std::iter::successors(node.parent(), |n| n.parent()).find(|n| n.kind() == "function_definition").map(|f| f.start_byte());
        let declaration = (node.kind() == "init_declarator").then(|| node.start_byte());
        if target.kind() == "identifier" && !out.iter().any(|alias| alias.name == name && alias.function == function && alias.declaration == declaration) {
            if let Some(template_args) = alternatives(value).iter().find_map(taken) {
                out.push(PointerAlias { name: name.to_string(), template_args, function, declaration });
            }
        }
    }
    out
}

/// A variable holding a kernel's address, the template arguments it was taken with, the
/// function that declares it (its start byte; none at file scope): another function's
/// `auto kernel = …` is another variable, and the declaration that gives it the address (its
/// start byte; none where an assignment does).
struct PointerAlias {
    name: String,
    template_args: Option<Vec<crate::syntax::Expr>>,
    function: Option<usize>,
    declaration: Option<usize>,
}

/// The values a conditional may take (`k == 0 ? &copy : &transpose` gives both), or the value.
fn alternatives(value: Node) -> Vec<Node> {
    let value = if value.kind() == "parenthesized_expression" { value.named_child(0).unwrap_or(value) } else { value };
    match (value.kind(), value.child_by_field_name("consequence"), value.child_by_field_name("alternative")) {
        ("conditional_expression", Some(a), Some(b)) => alternatives(a).into_iter().chain(alternatives(b)).collect(),
        _ => vec![value],
    }
}

/// The macros and file-scope constants a kernel's code uses, and for a `#define NAME <integer>`
/// or a `const int NAME = <integer>;` its value and where it is (`common.h:34`).
struct BodyMacros<'a> {
    names: &'a BTreeSet<&'a str>,
    definition: &'a dyn Fn(&str) -> Option<BuildValue>,
}

/// The value of a name a build of the kernel sets, where it is, and how it is written there
/// (`#define TILE 32`, `const int TILE_DIM = 32`).
struct BuildValue {
    value: i64,
    place: String,
    written: String,
}

/// An integer constant declared at the file's top level (`const int TILE_DIM = 32;`), which
/// kernel and host code both read: `at` is its byte offset.
struct FileConstant {
    name: String,
    value: i64,
    at: usize,
    written: String,
}

/// The integer constants `doc` declares at file scope whose values are numbers, in order (one
/// may be made of those before it: `const int SHMEM = TILE * TILE;`).
fn file_scope_constants(doc: &Document) -> Vec<FileConstant> {
    let Some(tree) = doc.tree() else { return Vec::new() };
    let text = doc.text();
    let mut constants: Vec<FileConstant> = Vec::new();
    for declaration in super::host::file_scope_declarations(tree.root_node()) {
        let written = &text[declaration.byte_range()];
        let Some((name, value)) = crate::syntax::integer_constant_line(written) else { continue };
        let known = |n: &str| constants.iter().find(|c| c.name == n).map(|c| c.value);
        let Some(value) = crate::syntax::eval_constant(&written[value], &known) else { continue };
        let written = written.trim_end_matches(';').trim().to_string();
        constants.push(FileConstant { name: name.to_string(), value, at: declaration.start_byte(), written });
    }
    constants
}

/// The block's names that the host program chooses at run time, as launch parameters: a name
/// in the block that no buffer's length uses (that would make it a size of the problem, or
/// the count of per-block results, which another block partitions differently) and whose
/// value, followed up the call path, is a constant or a swept array's element, or, for an
/// extent that is the name alone, the program's captured launch.
fn launch_choices(host: &HostContext, args: &[ArgSpec], params: &[ParamSpec], block: &[String], in_body: &BodyMacros, captured_block: Option<[u32; 3]>, partitioned: Option<&str>) -> (Vec<ParamSpec>, Vec<String>, Vec<String>) {
    let mut names: Vec<&str> = Vec::new();
    // Macros the kernel's code uses too (to size its shared tiles): a value of theirs is a
    // build of the kernel, the block with it, set with `-D`.
    let mut macros: Vec<(&str, BuildValue)> = Vec::new();
    let mut held: Vec<String> = Vec::new();
    // Sizes a buffer rounds up to whole blocks of a name (see `without_round_ups`), with the
    // name and the buffer: the block varies alone where it divides them.
    let mut rounded: Vec<(String, &str, &ArgSpec)> = Vec::new();
    for name in block.iter().flat_map(|b| identifiers_in(b)) {
        let known = params.iter().any(|p| p.name == name) || is_keyword(name) || expr::Function::from_name(name).is_some();
        if known || names.contains(&name) || macros.iter().any(|(m, _)| *m == name) || held.iter().any(|h| h.starts_with(&format!("`{name}` "))) {
            continue;
        }
        // A buffer of one element per thread of whole blocks (`ceil_div(n, threads) * threads`)
        // has the same length for every block that divides `n`.
        let (lengths, dividends): (Vec<String>, Vec<Vec<String>>) = args.iter().map(|a| without_round_ups(a.length.as_deref().unwrap_or_default(), name)).unzip();
        if let Some(arg) = args.iter().zip(&lengths).find(|(_, l)| identifiers_in(l).any(|w| host.made_from(w, name))).map(|(a, _)| a) {
            held.push(also_sizes(name, arg));
        } else if in_body.names.contains(name) {
            let literal = (in_body.definition)(name).filter(|_| !super::lift::FIXED_NAMES.contains(&name));
            match literal.map(|build| (host.macro_written_out(name, build.value), build)) {
                Some((None, build)) => macros.push((name, build)),
                Some((Some((other, derived)), BuildValue { value, .. })) => held.push(format!("`{name}` is a macro the kernel's code uses too, and `{other}` writes out a value of it ({derived} for {value}), which another value would leave behind, so the block is that code's")),
                None => held.push(format!("`{name}` is a macro the kernel's code uses too (a shared array's size), so the block is that code's")),
            }
        } else {
            rounded.extend(args.iter().zip(dividends).flat_map(|(arg, dividends)| dividends.into_iter().map(move |d| (d, name, arg))));
            names.push(name);
        }
    }
    let captured = |name: &str| {
        let axis = block.iter().position(|b| b.trim() == name)?;
        let value = captured_block?[axis];
        Some(LaunchChoice { default: value as i64, sweep: Vec::new(), origin: format!("`{name}` is {value} in the program's captured launch") })
    };
    let mut found: Vec<(&str, LaunchChoice)> = Vec::new();
    // A program whose own block does not divide a size its buffer rounds up: its problem is
    // that block's.
    let divides_program_sizes = |name: &str, default: i64| {
        rounded.iter().filter(|(_, n, _)| *n == name).all(|(dividend, _, _)| host.size_values(dividend).into_iter().flatten().all(|v| v % default == 0))
    };
    for name in names {
        if let Some(choice) = host.launch_choice(name) {
            match rounded.iter().find(|(_, n, _)| *n == name).filter(|_| !divides_program_sizes(name, choice.default)) {
                Some((_, _, arg)) => held.push(also_sizes(name, arg)),
                None => found.push((name, choice)),
            }
        } else if let Some(choice) = captured(name) {
            // The program's choice, known only from its run: another block must leave the
            // outputs comparable.
            match partitioned {
                Some(output) => held.push(format!("`{name}` is {} in the captured launch, but `{output}` holds one result per block beside others (`{output}[blockIdx.x]`): another block would partition them differently", choice.default)),
                None => found.push((name, choice)),
            }
        }
    }
    let swept = found.iter().any(|(_, choice)| !choice.sweep.is_empty());
    let launches = found.into_iter().map(|(name, choice)| (name, ParamKind::Launch, choice));
    let builds = macros.into_iter().map(|(name, build)| {
        let origin = format!("`{}` at {}, which the kernel's code uses too: each value is a build of the kernel", build.written, build.place);
        (name, ParamKind::Define, LaunchChoice { default: build.value, sweep: Vec::new(), origin })
    });
    let mut choices: Vec<ParamSpec> = launches
        .chain(builds)
        .map(|(name, kind, choice)| {
            let values = if choice.sweep.is_empty() { block_values(block, name, choice.default) } else { choice.sweep };
            ParamSpec { name: name.to_string(), kind, default: choice.default, values, origin: choice.origin }
        })
        .collect();
    let mut whole_blocks: Vec<String> = Vec::new();
    for (dividend, name, _) in rounded.iter().filter(|(_, name, _)| choices.iter().any(|c| c.name == *name)) {
        let restriction = format!("{} % {name} == 0", super::layout::operand(dividend));
        if !whole_blocks.contains(&restriction) {
            whole_blocks.push(restriction);
        }
    }
    // Two or more extents (`dim3 threads(TILE_X, TILE_Y)`): each over the powers of two, the
    // block's threads bounded together. A program's own sweep stays as it is.
    if choices.len() < 2 || swept {
        return (choices, whole_blocks, held);
    }
    for choice in &mut choices {
        choice.values = powers_of_two_with(choice.default);
    }
    let defaults: Vec<i64> = choices.iter().map(|c| c.default).collect();
    (choices, whole_blocks.into_iter().chain(threads_bounds(block, &defaults)).collect(), held)
}

/// Why the block's `name` stays as the program has it: it sizes `arg` too.
fn also_sizes(name: &str, arg: &ArgSpec) -> String {
    format!("`{name}` also sizes `{}` ({}), so another block would change the problem, not only the launch", arg.name, arg.length.as_deref().unwrap_or_default())
}

/// `length` with each `ceil_div(n, name) * name` (`n` rounded up to whole blocks of `name`)
/// read as `n`, and the `n`s.
fn without_round_ups(length: &str, name: &str) -> (String, Vec<String>) {
    let (mut out, mut dividends, mut copied) = (String::new(), Vec::new(), 0);
    for (call, inner) in super::host::calls_named(length, "ceil_div") {
        let [dividend, divisor] = crate::spec::split_top_level(&length[inner], ',')[..] else { continue };
        let rest = &length[call.end..];
        let times = rest.trim_start().strip_prefix('*').map(str::trim_start).and_then(|r| r.strip_prefix(name)).filter(|r| !r.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_'));
        let (Some(after), true) = (times, divisor.trim() == name && call.start >= copied) else { continue };
        out.push_str(&length[copied..call.start]);
        out.push_str(&format!("({})", dividend.trim()));
        dividends.push(dividend.trim().to_string());
        copied = length.len() - after.len();
    }
    out.push_str(&length[copied..]);
    (out, dividends)
}

/// The block's thread count as an expression: `(BN // TN) * (BM // TM)`.
fn threads_of(block: &[String]) -> String {
    match block {
        [only] => only.clone(),
        _ => block.iter().map(|b| super::layout::factor(b)).collect::<Vec<_>>().join(" * "),
    }
}

/// 1 to 1,024 by powers of two, and `default` when it is none of them.
fn powers_of_two_with(default: i64) -> Vec<i64> {
    let mut values: Vec<i64> = (0..=10).map(|p| 1i64 << p).collect();
    if !values.contains(&default) {
        values.push(default);
        values.sort_unstable();
    }
    values
}

/// A block's threads between a warp (or the program's own block when smaller: the default stays
/// in the space) and 1,024, for a block of several varied extents whose defaults are `defaults`.
fn threads_bounds(block: &[String], defaults: &[i64]) -> Vec<String> {
    let threads = threads_of(block);
    let fewest = defaults.iter().product::<i64>().min(32);
    vec![format!("{threads} >= {fewest}"), format!("{threads} <= 1024")]
}

/// Powers of two for `name` that give a block of 32 to 1,024 threads, with the other names of
/// the block at the value that makes it `default` (unknown names make it 1-D: `name` alone).
fn block_values(block: &[String], name: &str, default: i64) -> Vec<i64> {
    let threads = |value: i64| -> Option<i64> {
        block.iter().try_fold(1i64, |acc, b| {
            let e = expr::parse(b).ok()?;
            let v = e.eval_integer(&|n| (n == name).then_some(expr::Value::Int(value))).ok()?;
            Some(acc * v)
        })
    };
    let mut values: Vec<i64> = (0..=10).map(|p| 1i64 << p).filter(|&v| threads(v).map_or(v >= 32, |t| (32..=1024).contains(&t))).collect();
    if !values.contains(&default) {
        values.push(default);
        values.sort_unstable();
    }
    values
}

/// The 1-D block of a kernel whose threads are independent, made of the problem's sizes (`K //
/// 4`), as a launch parameter at its value for the first shape, the grid launching as many
/// threads as the program's (`ceil_div(S * (K // 4), NAME)`); with the restriction under which
/// it launches exactly as many (`(S * (K // 4)) % NAME == 0`). None when the block is no size
/// there is a first value of, or several axes.
fn flat_block_choice(kernel: &str, line: u32, grid: &mut [String], block: &mut [String], first: &Shape, sizes: &BTreeSet<String>) -> Option<(ParamSpec, String)> {
    let ([grid_x, grid_rest @ ..], [block_x, block_rest @ ..]) = (grid, block) else { return None };
    if !grid_rest.iter().chain(block_rest.iter()).all(|e| e.trim() == "1") || !identifiers_in(block_x).all(|w| sizes.contains(w) || expr::Function::from_name(w).is_some()) {
        return None;
    }
    let value_of = |name: &str| first.get(name).map(|v| expr::Value::Int(*v));
    let default = expr::parse(block_x).ok()?.eval_integer(&value_of).ok().filter(|v| (1..=1024).contains(v))?;
    let name = format!("{}_BLOCK_SIZE", super::param_prefix(kernel));
    if sizes.contains(&name) {
        return None;
    }
    let threads = format!("{} * {}", super::layout::factor(grid_x), super::layout::factor(block_x));
    let origin = format!("the block `{block_x}` of the launch on line {line} at the first shape; each thread takes its own flat index, so the grid follows the block: `ceil_div({threads}, {name})`");
    *grid_x = format!("ceil_div({threads}, {name})");
    *block_x = name.clone();
    let values = block_values(std::slice::from_ref(block_x), &name, default);
    let covered = format!("({threads}) % {name} == 0");
    Some((ParamSpec { name, kind: ParamKind::Launch, default, values, origin }, covered))
}

/// The captured 1-D block of a kernel whose threads each take their own flat index below
/// `count` (a count of its scalar arguments, `n` of `if (i < n)`) and share nothing with the
/// rest of their block: the launch parameter `name` starting from the program's block, the
/// grid as many blocks as the count needs (`ceil_div(n, name)`). Any block does the same work
/// then: the threads past the count do nothing. None when the count names anything but scalar
/// arguments.
/// Puts `choices` before the compiler options: the search enumerates the parameters in order.
fn insert_before_compiler_options(params: &mut Vec<ParamSpec>, choices: impl IntoIterator<Item = ParamSpec>) {
    let at = params.iter().position(|p| matches!(p.kind, ParamKind::FastMath | ParamKind::MaxRegisters)).unwrap_or(params.len());
    params.splice(at..at, choices);
}

fn captured_flat_block_choice(name: &str, count: &str, captured: [u32; 3], args: &[ArgSpec], grid: &mut Vec<String>, block: &mut Vec<String>) -> Option<ParamSpec> {
    let [threads, 1, 1] = captured else { return None };
    let scalar = |word: &str| args.iter().find(|a| a.name == word && !a.is_buffer() && a.fields.is_empty());
    if !identifiers_in(count).all(|w| scalar(w).is_some()) {
        return None;
    }
    // The scalar's own size where the spec has one (`n`), else the argument's name.
    let plain = |value: &str| is_identifier(value) || value.parse::<i64>().is_ok();
    let count = crate::syntax::rename_identifiers_in(count, |w| scalar(w)?.value.clone().filter(|v| plain(v)));
    let default = i64::from(threads);
    let origin = format!("the block of the captured launch, {default}; each thread takes its own flat index below `{count}` and shares nothing with its block, so the grid follows the block: `ceil_div({count}, {name})`");
    *grid = vec![format!("ceil_div({count}, {name})")];
    *block = vec![name.to_string()];
    let values = block_values(block, name, default);
    Some(ParamSpec { name: name.to_string(), kind: ParamKind::Launch, default, values, origin })
}

/// `K % 4 == 0` for a block `K // 4` where every shape's `K` divides so: the threads the program
/// launches then cover its elements, which other sizes' would not.
fn divided_evenly(extent: &str, shapes: &[Shape]) -> Option<String> {
    let (size, divisor) = extent.split_once("//").map(|(n, d)| (n.trim(), d.trim().parse::<i64>().ok()))?;
    let divisor = divisor.filter(|d| *d > 1)?;
    shapes.iter().all(|shape| shape.get(size).is_some_and(|n| n % divisor == 0)).then(|| format!("{size} % {divisor} == 0"))
}

/// Whether the launch's `block`, as written, names a class's member (`Traits::kThreads`) that
/// the kernel's `body` reads as well.
fn block_is_kernels_member(block: &str, body: &str) -> bool {
    block.match_indices("::").any(|(at, _)| {
        let member: String = block[at + 2..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
        !member.is_empty() && body.match_indices("::").any(|(b, _)| body[b + 2..].starts_with(&member) && !body[b + 2 + member.len()..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_'))
    })
}

/// The literal extents of a block (`k<<<blocks, 256>>>` in `runner.cu`, `dim3 block(16, 16)`)
/// as launch parameters, each tied into the grid's extent on its axis where that divides by it;
/// with the bounds on a block's threads when there are two or more.
fn literal_block_choices(kernel: &str, line: u32, grid: &mut [String], block: &mut [String]) -> (Vec<ParamSpec>, Vec<String>) {
    let prefix = super::param_prefix(kernel);
    // A 1-D block computed around one literal (`min(256, n)`, from a helper's argument): the
    // literal is the choice.
    if let [only] = block {
        let block_sized = |v: &i64| (32..=1024).contains(v) && (*v as u64).is_power_of_two();
        let literals: Vec<i64> = only.split(|c: char| !c.is_ascii_alphanumeric() && c != '_').filter_map(|t| t.parse().ok()).filter(block_sized).collect();
        let compared = literals.iter().any(|v| compares_integer(only, *v));
        if let ([value], Err(_), false) = (literals.as_slice(), only.trim().parse::<i64>(), compared) {
            let name = format!("{prefix}_BLOCK_SIZE");
            let origin = format!("{value} in the block extent `{only}` of the launch on line {line}");
            *only = replace_integer(only, *value, &name);
            grid.iter_mut().for_each(|g| *g = replace_integer(g, *value, &name));
            let values = block_values(block, &name, *value);
            return (vec![ParamSpec { name, kind: ParamKind::Launch, default: *value, values, origin }], Vec::new());
        }
    }
    let literal: Vec<(usize, i64)> = block.iter().enumerate().filter_map(|(axis, b)| Some((axis, b.trim().parse::<i64>().ok().filter(|v| *v > 1)?))).collect();
    if literal.is_empty() || block.iter().any(|b| b.trim().parse::<i64>().is_err()) {
        return (Vec::new(), Vec::new());
    }
    let mut choices = Vec::new();
    for &(axis, value) in &literal {
        let name = match literal.len() {
            1 => format!("{prefix}_BLOCK_SIZE"),
            _ => format!("{prefix}_BLOCK_{}", ["X", "Y", "Z"][axis]),
        };
        block[axis] = name.clone();
        match literal.len() {
            1 => grid.iter_mut().for_each(|g| *g = tied_to_block(g, value, &name)),
            _ => {
                if let Some(g) = grid.get_mut(axis) {
                    *g = tied_to_block(g, value, &name);
                }
            }
        }
        let origin = format!("block extent {value} at the launch on line {line}");
        choices.push(ParamSpec { name, kind: ParamKind::Launch, default: value, values: Vec::new(), origin });
    }
    if let [only] = choices.as_mut_slice() {
        only.values = block_values(block, &only.name, only.default);
        return (choices, Vec::new());
    }
    for choice in &mut choices {
        choice.values = powers_of_two_with(choice.default);
    }
    let defaults: Vec<i64> = literal.iter().map(|(_, v)| *v).collect();
    (choices, threads_bounds(block, &defaults))
}

/// A grid extent with the block's literal `value` replaced by its parameter `name`, including
/// the `value - 1` of a rounding-up division: `(n + 127) // 128` → `ceil_div(n, NAME)`.
/// A grid of one literal (`<<<32, 32>>>`) counts blocks, whatever their size: it stays.
fn tied_to_block(grid: &str, value: i64, name: &str) -> String {
    if grid.trim().parse::<i64>().is_ok() {
        return grid.to_string();
    }
    let tied = replace_integer(grid, value, name);
    if tied == grid || value < 2 {
        return tied;
    }
    // `(d + 255) // 256` was a rounding up: `ceil_div(d, NAME)`.
    super::callee::readable(&replace_integer(&tied, value - 1, &format!("({name} - 1)")))
}

/// Whether `value` stands in `text` as an operand of a comparison (`kHeadDim < 128 ? 8 : 4`):
/// a threshold the block's size is chosen by, not the size.
fn compares_integer(text: &str, value: i64) -> bool {
    // `<`, `<=`, `==`, … but not the shifts `<<` and `>>`.
    let compares = |op: &str| {
        let op: String = op.chars().take_while(|c| "<>=!".contains(*c)).collect();
        matches!(op.as_str(), "<" | ">" | "<=" | ">=" | "==" | "!=")
    };
    crate::syntax::words_at(text).filter(|(word, _)| word.parse::<i64>().ok() == Some(value)).any(|(word, start)| {
        let before = text[..start].trim_end();
        let operator_before = &before[before.trim_end_matches(|c: char| "<>=!".contains(c)).len()..];
        compares(operator_before) || compares(text[start + word.len()..].trim_start())
    })
}

/// `text` with every integer token equal to `value` replaced by `name`.
fn replace_integer(text: &str, value: i64, name: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut token = String::new();
    for c in text.chars().chain(std::iter::once(' ')) {
        if c.is_ascii_alphanumeric() || c == '_' {
            token.push(c);
            continue;
        }
        let is_value = token.parse::<i64>().ok() == Some(value);
        out.push_str(if is_value { name } else { &token });
        token.clear();
        out.push(c);
    }
    out.pop();
    out
}

/// The kernel's own assertions about its block (`assert(blockDim.x == 32)`), with the block's
/// extents from the spec in place of `blockDim`.
fn block_assertions(text: &str, body: Node, block: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for node in descendants(body).filter(|n| n.kind() == "call_expression") {
        if node.child_by_field_name("function").is_none_or(|f| &text[f.byte_range()] != "assert") {
            continue;
        }
        let Some(condition) = node.child_by_field_name("arguments").map(|a| crate::syntax::host::call_args(text, a)).and_then(|a| a.into_iter().next()) else { continue };
        if !condition.contains("blockDim") {
            continue;
        }
        out.push(with_block_extents(&condition, block));
    }
    out
}

/// The conditions of the kernel's `static_assert`s (`static_assert(kPad % 8 == 0, "…")`).
fn static_assertions(text: &str, body: Node) -> Vec<String> {
    let conditions = descendants(body).filter(|n| n.kind() == "static_assert_declaration").filter_map(|n| n.child_by_field_name("condition"));
    conditions.map(|c| text[c.byte_range()].split_whitespace().collect::<Vec<_>>().join(" ")).collect()
}

/// Conditions that the kernel's loops stepped by a uniform amount end: `load += stride` needs
/// `stride >= 1`, the stride written out through the kernel's constants (`const uint stride =
/// threads / BN`, `threads = BM * BN / (TM * TN)`) and `blockDim` as the spec's block. Where the
/// step names a thread's own index the condition names it too, and the caller drops it; a
/// step that cannot be 0 gives none.
fn positive_loop_steps(text: &str, body: Node, terms: &KernelTerms) -> Vec<String> {
    let mut out = Vec::new();
    for node in descendants(body).filter(|n| n.kind() == "for_statement") {
        let Some(update) = node.child_by_field_name("update").filter(|u| u.kind() == "assignment_expression") else { continue };
        let (Some(operator), Some(step)) = (update.child_by_field_name("operator"), update.child_by_field_name("right")) else { continue };
        if &text[operator.byte_range()] != "+=" || crate::syntax::eval_constant(&text[step.byte_range()], &|_| None).is_some() {
            continue;
        }
        let step = terms.written_out(&text[step.byte_range()]);
        // Products and sums of parameters (`blockDim.x * VEC`) are never 0; a quotient, a
        // difference or a shift may be.
        let may_be_zero = ['/', '-', '%', '>'].iter().any(|c| step.contains(*c));
        let condition = format!("{} >= 1", super::host::strip_outer_parens(step.trim()));
        if may_be_zero && !out.contains(&condition) {
            out.push(condition);
        }
    }
    out
}

/// `A % B == 0` for each loop `for (j = 0; j < A; j += B)` whose step is the block's extent
/// along an axis whose thread index the loop's body reads (`tile[threadIdx.y + j]`, or through a
/// constant, `y + j` with `y = blockIdx.y * TILE + threadIdx.y`): the threads cover the rows
/// `0` to `A` in strides of `B`, and a last partial stride would index past them.
fn block_strided_tiles(text: &str, body: Node, terms: &KernelTerms) -> Vec<String> {
    let mut out = Vec::new();
    for node in descendants(body).filter(|n| n.kind() == "for_statement") {
        let Some((index, end, step)) = counted_loop(text, node) else { continue };
        let step = terms.written_out(step);
        let Some(axis) = terms.block.iter().position(|extent| super::host::strip_outer_parens(&step) == super::host::strip_outer_parens(extent)) else { continue };
        let Some(loop_body) = node.child_by_field_name("body") else { continue };
        let reads = terms.written_out(&text[loop_body.byte_range()]);
        let thread = format!("threadIdx.{}", ["x", "y", "z"][axis]);
        let end = terms.written_out(end);
        let end = super::host::strip_outer_parens(&end);
        let step = super::host::strip_outer_parens(&step);
        // `TILE * TILE` strided by `TILE` always holds whole strides.
        let whole = end.split('*').any(|factor| factor.trim() == step);
        if reads.contains(&thread) && identifiers_in(&reads).any(|w| w == index) && !whole {
            let divisor = if step.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') { step.to_string() } else { format!("({step})") };
            let condition = format!("{} % {divisor} == 0", super::layout::factor(end));
            if !out.contains(&condition) {
                out.push(condition);
            }
        }
    }
    out
}

/// The index, end and step of a loop `for (int j = 0; j < end; j += step)`.
fn counted_loop<'t>(text: &'t str, node: Node) -> Option<(&'t str, &'t str, &'t str)> {
    let init = node.child_by_field_name("initializer")?;
    let declarator = match init.kind() {
        "declaration" => init.child_by_field_name("declarator")?,
        _ => init,
    };
    let (name, start) = match declarator.kind() {
        "init_declarator" => (declarator.child_by_field_name("declarator")?, declarator.child_by_field_name("value")?),
        "assignment_expression" => (declarator.child_by_field_name("left")?, declarator.child_by_field_name("right")?),
        _ => return None,
    };
    let index = &text[name.byte_range()];
    let condition = node.child_by_field_name("condition")?;
    let update = node.child_by_field_name("update").filter(|u| u.kind() == "assignment_expression")?;
    let compares = condition.kind() == "binary_expression" && condition.child_by_field_name("operator").is_some_and(|o| &text[o.byte_range()] == "<");
    let counts_up = update.child_by_field_name("operator").is_some_and(|o| &text[o.byte_range()] == "+=");
    let same_index = |n: Option<Node>| n.is_some_and(|n| &text[n.byte_range()] == index);
    let valid = &text[start.byte_range()] == "0" && compares && counts_up && same_index(condition.child_by_field_name("left")) && same_index(update.child_by_field_name("left"));
    valid.then(|| (index, &text[condition.child_by_field_name("right").map_or(0..0, |r| r.byte_range())], &text[update.child_by_field_name("right").map_or(0..0, |r| r.byte_range())]))
}

/// What the kernel's expressions are in the spec's terms: its constants and the spec's block.
struct KernelTerms<'b> {
    constants: std::collections::HashMap<String, String>,
    block: &'b [String],
}

impl<'b> KernelTerms<'b> {
    fn of(text: &str, body: Node, block: &'b [String]) -> KernelTerms<'b> {
        KernelTerms { constants: kernel_constants(text, body), block }
    }

    /// `text` with the kernel's constants written out (`stride` as `(threads / BN)`, `threads`
    /// as `(BM * BN / (TM * TN))`) and `blockDim` as the spec's block.
    fn written_out(&self, text: &str) -> String {
        with_block_extents(&super::renamed_until_settled(text, |word| self.constants.get(word).map(|value| format!("({value})"))), self.block)
    }
}

/// `text` with `blockDim.x`, `.y`, `.z` as the spec's block extents.
fn with_block_extents(text: &str, block: &[String]) -> String {
    let mut replaced = text.to_string();
    for (axis, extent) in ["x", "y", "z"].iter().zip(block.iter().map(String::as_str).chain(std::iter::repeat("1"))) {
        replaced = replaced.replace(&format!("blockDim.{axis}"), &format!("({extent})"));
    }
    replaced
}

/// The kernel's locals given one value where they are declared and never set again, by name.
pub(super) fn kernel_constants(text: &str, body: Node) -> std::collections::HashMap<String, String> {
    let set_again: BTreeSet<&str> = descendants(body)
        .filter_map(|n| match n.kind() {
            "assignment_expression" => n.child_by_field_name("left"),
            "update_expression" => n.child_by_field_name("argument"),
            _ => None,
        })
        .map(|target| text[target.byte_range()].trim())
        .collect();
    let mut out = std::collections::HashMap::new();
    let mut twice = BTreeSet::new();
    for declarator in descendants(body).filter(|n| n.kind() == "init_declarator") {
        let (Some(name), Some(value)) = (declarator.child_by_field_name("declarator").and_then(crate::syntax::host::declared_name), declarator.child_by_field_name("value")) else { continue };
        let name = &text[name.byte_range()];
        if !set_again.contains(name) && value.kind() != "initializer_list" && out.insert(name.to_string(), text[value.byte_range()].to_string()).is_some() {
            twice.insert(name);
        }
    }
    // Declared in two scopes: neither value is the name's.
    out.retain(|name, _| !twice.contains(name.as_str()));
    out
}

/// `text` with each `#define` of `doc` whose value is an expression over `lifted` parameters
/// (directly or through other such defines) written out in parentheses.
fn with_defines_of_parameters(text: &str, doc: &Document, lifted: &BTreeSet<&str>) -> String {
    let defines = &doc.model().defines;
    let value_of = |name: &str| defines.iter().find(|d| d.name == name && d.value_text.trim().parse::<i64>().is_err()).map(|d| d.value_text.trim());
    let over_parameters = |name: &str| {
        let mut seen = BTreeSet::new();
        let mut pending = vec![name.to_string()];
        while let Some(next) = pending.pop() {
            let Some(value) = value_of(&next).filter(|_| seen.insert(next.clone())) else { continue };
            for word in identifiers_in(value) {
                if lifted.contains(word) {
                    return true;
                }
                pending.push(word.to_string());
            }
        }
        false
    };
    super::renamed_until_settled(text, |word| value_of(word).filter(|_| over_parameters(word)).map(|value| format!("({})", super::host::strip_outer_parens(value))))
}

/// The kernel's template arguments: a lifted parameter's name, else what the launch gives,
/// resolved along the host's call path. Where the source leaves one open (`?`, or a host
/// template's own parameter `T` that no call instantiates), `instantiation` (the program's
/// launch, captured) gives it.
fn template_args(k: &Kernel, launch: Option<&LaunchSite>, params: &[ParamSpec], host: Option<&HostContext>, instantiation: &[String]) -> Vec<String> {
    let open = |arg: &str| arg == UNKNOWN || k.template_params.iter().any(|tp| tp.name == arg);
    let mut args: Vec<String> = Vec::with_capacity(k.template_params.len());
    for (i, tp) in k.template_params.iter().enumerate() {
        let arg = match &tp.kind {
            TemplateParamKind::Value { .. } if params.iter().any(|p| p.name == tp.name) => tp.name.clone(),
            // As C++ does: what the launch writes, else what its arguments deduce, else the
            // default, which may name the parameters before it (`typename V = T`).
            _ => launch
                .and_then(|l| l.template_args.get(i))
                .map(|a| host.map_or_else(|| a.text.trim().to_string(), |h| launched_type(h, &a.text, &open)))
                .filter(|arg| !open(arg))
                .or_else(|| deduced_type(k, &tp.name, launch?, host?).filter(|arg| !open(arg)))
                .or_else(|| deduced_from_tag(k, &tp.name, launch?))
                .or_else(|| tp.default.as_deref().map(|default| default_of_earlier(default, &k.template_params[..i], &args)))
                .filter(|arg| !open(arg))
                .or_else(|| instantiation.get(i).cloned())
                .or_else(|| first_instantiated_type(k, &tp.name, launch?, host?))
                .unwrap_or_else(|| UNKNOWN.to_string()),
        };
        args.push(written_as_declared(&tp.kind, arg));
    }
    args
}

/// A `bool` parameter's argument worked out as a number (`1`) written as C++ writes a truth.
fn written_as_declared(kind: &TemplateParamKind, arg: String) -> String {
    match (kind, arg.as_str()) {
        (TemplateParamKind::Value { ty, .. }, "0" | "1") if ty == "bool" => (arg == "1").to_string(),
        _ => arg,
    }
}

/// A template parameter's default with the parameters before it (`V = T`) given their
/// arguments.
fn default_of_earlier(default: &str, earlier: &[crate::syntax::TemplateParam], args: &[String]) -> String {
    crate::syntax::rename_identifiers_in(default, |word| earlier.iter().position(|tp| tp.name == word).and_then(|at| args.get(at)).filter(|arg| arg.as_str() != UNKNOWN).cloned())
}

/// The template argument `text` of the launch, as the host names it; a program's alias of the
/// kernel's own parameter name (`typedef TYPE T;` for `k<T>` of `template <class T>`) is its type.
fn launched_type(host: &HostContext, text: &str, open: &dyn Fn(&str) -> bool) -> String {
    let arg = host.template_argument(text);
    match open(&arg) {
        true => host.resolve_type(&arg),
        false => arg,
    }
}

/// `sizeof(T)` → `4` where the launch passes the name `T` as a template argument that became
/// `int`.
fn sizes_of_passed_types(text: &str, launch: &LaunchSite, template_args: &[String]) -> String {
    super::host::replace_calls(text, "sizeof", |inner| {
        let at = launch.template_args.iter().position(|a| a.text.trim() == inner.trim())?;
        crate::syntax::size_of_type(template_args.get(at)?).map(|bytes| bytes.to_string())
    })
}

/// A grid that rounds down (`dim3 grid(dimsB.x / threads.x)`) launches whole blocks only: the
/// program runs sizes that are multiples of the block, and on any other size the elements past
/// the last whole block are left to whichever block size the configuration has, so the original
/// and a candidate would differ there by construction. `n % B == 0` for each such extent whose
/// divisor moves with the parameters, when every shape of the program meets it.
fn whole_blocks(grid: &[String], sizes: &BTreeSet<String>, params: &[ParamSpec], shapes: &[Shape]) -> Vec<String> {
    let default = |name: &str| params.iter().find(|p| p.name == name).map(|p| expr::Value::Int(p.default));
    grid.iter()
        .filter_map(|extent| {
            let (size, divisor) = extent.split_once("//").map(|(n, d)| (n.trim(), d.trim()))?;
            let divisor_expr = expr::parse(divisor).ok()?;
            let names = divisor_expr.names();
            // A divisor of parameters alone (not a literal): it moves with the configuration.
            if !sizes.contains(size) || names.is_empty() || names.iter().any(|(name, _)| default(name).is_none()) {
                return None;
            }
            let block = divisor_expr.eval_integer(&|name| default(name)).ok().filter(|b| *b > 0)?;
            shapes.iter().all(|shape| shape.get(size).is_some_and(|n| n % block == 0)).then(|| format!("{size} % {} == 0", super::layout::operand(divisor)))
        })
        .collect()
}

/// Sizes the kernel never checks anything against, which its grid or its loops cover in whole
/// tiles: `ceil_div(N, BN)` blocks with no comparison of `N` in the kernel, `for (k = 0; k < K;
/// k += BK)` that every thread starts alike, `K` compared nowhere else, read past the data at
/// any size that is no multiple of the tile (the verification's edge cases try `K = 1`). Each
/// gives `N % BN == 0`; the caller keeps those the program's shapes hold.
fn whole_tiles_unchecked(text: &str, body: Node, grid: &[String], terms: &KernelTerms, args: &[ArgSpec]) -> Vec<String> {
    // The kernel's scalar parameter that a size is passed as (`int K` given `K`).
    let scalar_of = |size: &str| args.iter().find(|a| a.length.is_none() && a.value.as_deref() == Some(size)).map(|a| a.name.as_str());
    let mut tile_loops = Vec::new();
    let mut compared = BTreeSet::new();
    for node in descendants(body) {
        match node.kind() {
            "for_statement" => {
                let condition = node.child_by_field_name("condition").filter(|c| c.kind() == "binary_expression");
                let bound = condition.filter(|c| c.child_by_field_name("operator").is_some_and(|o| &text[o.byte_range()] == "<")).and_then(|c| c.child_by_field_name("right")).filter(|r| r.kind() == "identifier");
                let update = node.child_by_field_name("update").filter(|u| u.kind() == "assignment_expression" && u.child_by_field_name("operator").is_some_and(|o| &text[o.byte_range()] == "+="));
                // A loop every thread starts at the same place (`k = 0`) bounds the tile's start
                // only; one that starts at the thread's own index (`i = threadIdx.x`) bounds each
                // element it touches.
                let start = node.child_by_field_name("initializer").map(|i| terms.written_out(&text[i.byte_range()]));
                let uniform = start.is_some_and(|start| !start.contains("threadIdx") && !start.contains("laneid"));
                if let (Some(condition), Some(bound), Some(step), true) = (condition, bound, update.and_then(|u| u.child_by_field_name("right")), uniform) {
                    tile_loops.push((condition.id(), &text[bound.byte_range()], &text[step.byte_range()]));
                }
            }
            "binary_expression" if node.child_by_field_name("operator").is_some_and(|o| matches!(&text[o.byte_range()], "<" | "<=" | ">" | ">=" | "==" | "!=")) => {
                if !tile_loops.iter().any(|(id, _, _)| *id == node.id()) {
                    compared.extend(identifiers_in(&text[node.byte_range()]));
                }
            }
            // `min(N - col, TILE)`, `col < N ? … : …`: a tail handled another way.
            "call_expression" if node.child_by_field_name("function").is_some_and(|f| matches!(&text[f.byte_range()], "min" | "max" | "fminf" | "fmaxf")) => compared.extend(identifiers_in(&text[node.byte_range()])),
            "conditional_expression" => compared.extend(node.child_by_field_name("condition").map(|c| identifiers_in(&text[c.byte_range()])).into_iter().flatten()),
            _ => {}
        }
    }
    let in_spec_names = |step: &str| super::layout::operand(super::host::strip_outer_parens(&spec_expression(&terms.written_out(step), Division::Floor)));
    let mut out = Vec::new();
    for (_, bound, step) in &tile_loops {
        let size = args.iter().find(|a| a.name == *bound).and_then(|a| a.value.as_deref()).filter(|v| is_identifier(v));
        if let Some(size) = size.filter(|_| !compared.contains(bound)) {
            out.push(format!("{size} % {} == 0", in_spec_names(step)));
        }
    }
    for extent in grid {
        let Some(inner) = extent.trim().strip_prefix("ceil_div(").and_then(|e| e.strip_suffix(')')) else { continue };
        let [size, tile] = &super::host::split_args(inner)[..] else { continue };
        let unchecked = scalar_of(size.trim()).is_some_and(|scalar| !compared.contains(scalar) && !tile_loops.iter().any(|(_, b, _)| b == &scalar));
        if unchecked {
            out.push(format!("{} % {} == 0", size.trim(), super::layout::operand(tile.trim())));
        }
    }
    out
}

/// The restrictions that hold at the parameters' defaults for every shape of the program: a
/// tile the program's own sizes are no multiple of is handled somehow, so it restricts nothing.
fn holding_at_defaults(restrictions: Vec<String>, params: &[ParamSpec], shapes: &[Shape]) -> Vec<String> {
    restrictions
        .into_iter()
        .filter(|restriction| {
            let Ok(parsed) = expr::parse(restriction) else { return false };
            shapes.iter().all(|shape| {
                let value = |name: &str| params.iter().find(|p| p.name == name).map(|p| p.default).or_else(|| shape.get(name).copied()).map(expr::Value::Int);
                parsed.eval_integer(&value).is_ok_and(|holds| holds != 0)
            })
        })
        .collect()
}

/// `case 256: reduce<T, 256><<<grid, threads>>>` with `threads` a launch choice of 256 there:
/// the template parameter is the block size the kernel was written for, so the two move
/// together (`blockSize == threads`); apart, the kernel reduces over threads that do not exist.
fn template_block_ties(k: &Kernel, launch: &LaunchSite, params: &[ParamSpec], choices: &[ParamSpec], block: &[String]) -> Vec<String> {
    // `(block_size, block_size)` is one choice too, as is a block a thread tile divides
    // (`block_size // TN`): the tile's threads stand for the template's block.
    let undivided: BTreeSet<&str> = block.iter().map(|b| b.split("//").next().unwrap_or(b).trim()).collect();
    let [block] = undivided.into_iter().collect::<Vec<_>>()[..] else { return Vec::new() };
    let Some(choice) = choices.iter().find(|c| c.name == block) else { return Vec::new() };
    k.template_params
        .iter()
        .zip(&launch.template_args)
        .filter(|(tp, arg)| arg.value == Some(choice.default) && params.iter().any(|p| p.name == tp.name && p.kind == ParamKind::Template))
        .map(|(tp, _)| format!("{} == {}", tp.name, choice.name))
        .collect()
}

/// A type parameter the launch leaves to deduction (`k<<<g, b>>>(x)` for `template <typename T>
/// __global__ void k(T* x)`): the type of the argument passed where the kernel takes a `T`.
fn deduced_type(k: &Kernel, name: &str, launch: &LaunchSite, host: &HostContext) -> Option<String> {
    let index = k.params.iter().position(|p| p.base_type == name)?;
    host.argument_type(launch.args.get(index)?)
}

/// The type parameter `name` where the host leaves it to a template no call instantiates: the
/// first instantiation the code makes of it (a captured launch says what a program runs, and
/// comes first).
fn first_instantiated_type(k: &Kernel, name: &str, launch: &LaunchSite, host: &HostContext) -> Option<String> {
    let index = k.params.iter().position(|p| p.base_type == name)?;
    host.first_instantiated_type(launch.args.get(index)?)
}

/// The template parameter `name` that a tag parameter carries (`std::bool_constant<Atomic>`),
/// from the tag the launch makes (`std::bool_constant<false>{}`): `false`.
fn deduced_from_tag(k: &Kernel, name: &str, launch: &LaunchSite) -> Option<String> {
    k.params.iter().zip(&launch.args).find_map(|(p, arg)| {
        let (template, params) = p.ty.trim().split_once('<')?;
        let params = split_template_args(params.strip_suffix('>')?.trim());
        let at = params.iter().position(|param| param == name)?;
        let made = arg.trim().strip_suffix("{}").or_else(|| arg.trim().strip_suffix("()"))?.trim();
        let values = split_template_args(made.strip_prefix(template.trim())?.trim().strip_prefix('<')?.strip_suffix('>')?);
        values.get(at).cloned()
    })
}

/// Whether the kernel parameter `p` is a tag that carries the template parameter `name`
/// (`std::bool_constant<Atomic>` carries `Atomic`): the launch's tag picks its value.
pub(super) fn tag_carries(p: &Param, name: &str) -> bool {
    is_tag_type(&p.ty) && p.ty.split_once('<').is_some_and(|(_, params)| split_template_args(params.trim_end_matches('>')).iter().any(|param| param == name))
}

/// A type whose value is its type alone (`std::bool_constant<A>`, `std::true_type`): an empty
/// struct, one byte of nothing the kernel reads, passed only to pick an instantiation.
fn is_tag_type(ty: &str) -> bool {
    let ty = ty.trim().trim_start_matches("const ").trim();
    let ty = ty.strip_prefix("cuda::").unwrap_or(ty);
    let ty = ty.strip_prefix("std::").unwrap_or(ty);
    let template = ty.split('<').next().unwrap_or(ty).trim();
    matches!(template, "integral_constant" | "bool_constant" | "true_type" | "false_type")
}

/// The host's name of the spec's size `size`, which [`rename_shadowed_sizes`] may have renamed.
fn host_name_of(renamed_sizes: &[(String, String)], size: &str) -> String {
    renamed_sizes.iter().find(|(_, renamed)| renamed == size).map_or(size.to_string(), |(name, _)| name.clone())
}

/// A scalar the kernel only stores (`ptr[i] = val`) does the same work whatever its value: where
/// the program makes it at run time (`atoi(argv[1])`, `?`) with names nothing else in the spec
/// needs, it is given 1 rather than left for the user to fill in.
fn give_stored_values_any_number(text: &str, body: Node, args: &mut [ArgSpec], grid: &[String], block: &[String], shared_bytes: &str, no_number: &dyn Fn(&str) -> bool) {
    let elsewhere = |arg: usize, name: &str| {
        let lengths = args.iter().enumerate().filter(|(i, _)| *i != arg).flat_map(|(_, a)| crate::spec::leaves(std::slice::from_ref(a)).flat_map(|l| l.length.iter().chain(&l.value)).collect::<Vec<_>>());
        grid.iter().chain(block).map(String::as_str).chain([shared_bytes]).chain(lengths.into_iter().map(String::as_str)).any(|e| identifiers_in(e).any(|w| w == name))
    };
    let unknowable: Vec<usize> = (0..args.len())
        .filter(|&i| {
            let a = &args[i];
            let Some(value) = a.value.as_deref().filter(|_| a.length.is_none() && a.fields.is_empty() && a.texture.is_none()) else { return false };
            let unknown = value == UNKNOWN || identifiers_in(value).any(|w| no_number(w) && !elsewhere(i, w));
            unknown && value.parse::<f64>().is_err() && crate::syntax::only_stored(text, body, &a.name)
        })
        .collect();
    for i in unknowable {
        args[i].value = Some("1".to_string());
    }
}

/// The spec of the kernel parameter `p`, whose element type is `element` (its type, with the
/// instantiation's type for a template parameter). A buffer's length comes from its allocation
/// in the host code, else from the bounds the kernel checks its index against, which may name
/// the kernel's `scalars`. Returns the spec and whether its length is in the host's names (from
/// an allocation) rather than the kernel's (from its own bounds).
fn arg_spec(doc: &Document, body: Option<Node>, p: &Param, element: &str, at_launch: Option<&str>, host: Option<&HostContext>, scalars: &[&str], launch: Option<&LaunchExtents>) -> (ArgSpec, bool) {
    let base_type = host.map_or_else(|| element.to_string(), |h| h.resolve_type(element));
    let number = dtype_of(&base_type);
    // An array of structs is a buffer of their bytes, when the files show their size.
    let struct_bytes = || u32::try_from(host?.size_of(&base_type)?).ok().filter(|_| p.pointer_depth > 0);
    let (dtype, lanes) = number.or_else(|| Some((Dtype::U8, struct_bytes()?))).unwrap_or((Dtype::U8, 0));
    if p.pointer_depth == 0 && texture::is_texture_type(&base_type) {
        return (texture::texture_arg(doc, body, &p.name, at_launch, host), false);
    }
    if p.pointer_depth == 0 && is_tag_type(&p.ty) {
        return (ArgSpec { name: p.name.clone(), element: Some(Dtype::U8), value: Some("0".to_string()), ..ArgSpec::default() }, false);
    }
    if p.pointer_depth == 0 && number.is_none() {
        if let Some(spec) = struct_arg_spec(doc, body, p, &base_type, at_launch, host, scalars) {
            return (spec, false);
        }
    }
    if p.pointer_depth == 0 {
        // A surface object, a struct no file defines: no number stands for it, and the worker
        // makes none; what the program passes can only be captured from it running.
        let value = at_launch.filter(|_| number.is_some()).map_or(UNKNOWN.to_string(), |text| match dtype.is_float() {
            true => host.and_then(|h| h.float_value(text)).unwrap_or_else(|| UNKNOWN.to_string()),
            false => host.map_or_else(|| text.to_string(), |h| h.in_spec_names(text)),
        });
        return (ArgSpec { name: p.name.clone(), element: Some(dtype), value: Some(value), ..ArgSpec::default() }, false);
    }
    // The program passes no buffer (`fused_classifier<<<...>>>(..., NULL, ...)`): a null
    // pointer is 8 zero bytes, which a u64 scalar of 0 passes just the same.
    if at_launch.is_some_and(is_null_pointer) {
        return (ArgSpec { name: p.name.clone(), element: Some(Dtype::U64), value: Some("0".to_string()), ..ArgSpec::default() }, false);
    }
    let allocated = at_launch.and_then(|a| host.and_then(|h| h.buffer_length(a, &base_type)));
    let guarded = |launch| guarded_length(doc.text(), body?, &p.name, &|name| scalars.contains(&name), launch);
    let of_own_sizes = || at_launch.and_then(|a| host?.tensor_length_of_own_sizes(a, &base_type));
    let known = allocated.map(|l| (l, true)).or_else(|| guarded(None).map(|l| (l, false))).or_else(|| of_own_sizes().map(|l| (l, true)));
    let (length, from_host) = match known.or_else(|| launch.and_then(|launch| guarded(Some(launch))).map(|l| (l, false))) {
        Some((length, from_host)) => (Some(length), from_host),
        None => (None, false),
    };
    let length = match (lanes, length) {
        (0, _) | (_, None) => UNKNOWN.to_string(),
        (1, Some(len)) => len,
        (lanes, Some(len)) if len.trim() == "1" => lanes.to_string(),
        (lanes, Some(len)) => format!("({len}) * {lanes}"),
    };
    let (role, mut init) = buffer_role(doc.text(), body, p, dtype);
    // Counts the program fills with a size (`torch.full((n,), P1)`, each cloud's length): any
    // count up to it, as ragged inputs have, and none past what the kernel may read.
    let filled = at_launch.and_then(|a| host?.tensor_fill_in_spec(a)).filter(|_| role == Role::Input && !dtype.is_float());
    let indexes = filled.filter(|fill| fill.parse::<f64>().is_err()).map(|fill| format!("{} + 1", super::callee::readable(&fill)));
    if indexes.is_some() {
        init = None;
    }
    (ArgSpec { name: p.name.clone(), element: Some(dtype), length: Some(length), role: Some(role), init, indexes, ..ArgSpec::default() }, from_host)
}

/// What the kernel does with the buffer `p` gives it (read only when `p` is `const`), and how
/// an input is filled: floats uniform in [-1, 1], integers up to 128.
fn buffer_role(text: &str, body: Option<Node>, p: &Param, dtype: Dtype) -> (Role, Option<Init>) {
    let role = if p.is_const { Role::Input } else { body.map_or(Role::InOut, |b| role_for(access_of(text, b, &p.name))) };
    let init = match role {
        Role::Output => None,
        _ if dtype.is_float() => Some(Init::Uniform { low: -1.0, high: 1.0 }),
        _ => Some(Init::Integers { low: 0, high: 128 }),
    };
    (role, init)
}

/// A PyTorch packed accessor passed by value (`at::PackedTensorAccessor64<float, 4,
/// at::RestrictPtrTraits> result`, of `result.packed_accessor64<…>()` at the launch): a struct
/// of the tensor's data, a buffer, then each dimension's size and stride, contiguous as the
/// host code made the tensor. Its type names the instantiation's element (`float` for
/// `scalar_t`), since the layout is compiled outside the kernel. Sizes the host code does not
/// give stay `?`.
fn accessor_arg_spec(text: &str, body: Option<Node>, p: &Param, accessor: &tensors::AccessorType, element: &str, at_launch: Option<&str>, host: Option<&HostContext>) -> ArgSpec {
    let dims = at_launch.and_then(tensors::accessor_of).and_then(|tensor| host?.tensor_dims_in_spec(tensor)).filter(|dims| dims.len() == accessor.rank);
    let product = |from: usize| match &dims {
        Some(dims) if from < dims.len() => dims[from..].join(" * "),
        Some(_) => "1".to_string(),
        None => UNKNOWN.to_string(),
    };
    let dim = |k: usize| dims.as_ref().map_or_else(|| UNKNOWN.to_string(), |dims| dims[k].clone());
    let dtype = dtype_of(element).map_or(Dtype::U8, |(dtype, _)| dtype);
    let index = dtype_of(accessor.index).map_or(Dtype::I64, |(dtype, _)| dtype);
    let (role, init) = buffer_role(text, body, p, dtype);
    let mut fields = vec![ArgSpec { name: "data_".to_string(), element: Some(dtype), length: Some(product(0)), role: Some(role), init, ..ArgSpec::default() }];
    fields.extend((0..accessor.rank).map(|k| ArgSpec { name: format!("sizes_[{k}]"), element: Some(index), value: Some(dim(k)), ..ArgSpec::default() }));
    fields.extend((0..accessor.rank).map(|k| ArgSpec { name: format!("strides_[{k}]"), element: Some(index), value: Some(product(k + 1)), ..ArgSpec::default() }));
    let written = p.ty.trim().trim_start_matches("const ").trim();
    let (template, args) = written.split_once('<').unwrap_or((written, ""));
    let mut args = split_template_args(args.trim_end().trim_end_matches('>'));
    if let Some(first) = args.first_mut() {
        *first = element.to_string();
    }
    ArgSpec { name: p.name.clone(), struct_type: Some(format!("{}<{}>", template.trim(), args.join(", "))), fields, ..ArgSpec::default() }
}

/// Integer inputs of indices are drawn from `[0, extent)`, the extent in the spec's names: one
/// the kernel holds their values below (`assert(kn < N0)` on `kn = knn_idx[…]`), else what they
/// address in another buffer (`grad_input_offset + argmax[i]`, the offset a multiple of
/// `height * width`). Random integers up to 128 overrun small problems.
fn mark_index_extents(text: &str, body: Node, args: &mut [ArgSpec]) {
    let known = |expression: &Option<String>| expression.clone().filter(|v| !v.contains(UNKNOWN));
    let values: BTreeMap<String, String> = args.iter().filter_map(|a| Some((a.name.clone(), known(&a.value)?))).collect();
    let lengths: BTreeMap<String, String> = args.iter().filter_map(|a| Some((a.name.clone(), known(&a.length)?))).collect();
    for arg in args.iter_mut().filter(|a| a.length.is_some() && a.role == Some(Role::Input) && !a.dtype().is_float()) {
        let compared = || index_values::compared_extent(text, body, &arg.name, &|name| values.contains_key(name)).and_then(|name| values.get(name).cloned());
        let addressed = || {
            let addressed = index_values::addressed_extent(text, body, &arg.name, &|name| values.contains_key(name), &|name| lengths.contains_key(name))?;
            addressed_extent_expression(&addressed, &values, &lengths)
        };
        if let Some(extent) = compared().or_else(addressed) {
            arg.indexes = Some(extent);
            arg.init = None;
        }
    }
}

/// An extent the kernel's indices address, in the spec's names: a plane's factors multiplied,
/// or a buffer's length with the stride's factors taken out of its product (`50257 * C` over
/// `C` is `50257`). `None` where the length has no such factor.
fn addressed_extent_expression(addressed: &index_values::Addressed, values: &BTreeMap<String, String>, lengths: &BTreeMap<String, String>) -> Option<String> {
    let value = |factor: &str| if factor.chars().all(|c| c.is_ascii_digit()) { Some(factor.to_string()) } else { values.get(factor).cloned() };
    let product = |factors: Vec<String>| if factors.is_empty() { "1".to_string() } else { factors.join(" * ") };
    match addressed {
        index_values::Addressed::Plane(factors) => Some(product(factors.iter().map(|f| value(f).map(|v| super::layout::factor(&v))).collect::<Option<_>>()?)),
        index_values::Addressed::Rows { buffer, stride } => {
            let mut left: Vec<String> = crate::spec::split_top_level(lengths.get(*buffer)?, '*').into_iter().map(|f| f.trim().to_string()).collect();
            for factor in stride {
                let factor = value(factor)?;
                let at = left.iter().position(|f| *f == factor || *f == format!("({factor})"))?;
                left.remove(at);
            }
            Some(product(left))
        }
    }
}

/// A struct passed by value (`ScaleParams params`): each member the kernel reads is a field, a
/// pointer a buffer and a number a scalar, from what the host code assigns the struct it passes
/// (`params.cols = cols;`). A small array read at run-time indices (`params.scale[i]`) is one
/// field per element. `None` when no file the kernel or its host code is in defines the struct.
fn struct_arg_spec(doc: &Document, body: Option<Node>, p: &Param, struct_type: &str, at_launch: Option<&str>, host: Option<&HostContext>, scalars: &[&str]) -> Option<ArgSpec> {
    let mut documents = vec![doc];
    documents.extend(host.map_or(&[][..], |h| h.documents()).iter().copied().filter(|d| !std::ptr::eq(*d, doc)));
    let members = structs::members_of(&documents, struct_type)?;
    let body = body?;
    // The struct the launch passes, named in the launcher (`params`, or `*params` of a pointer;
    // not `&params` or a call), as its members are reached: `params.` or `params->`.
    let passed = at_launch.map(|a| super::host::strip_outer_parens(a.trim())).and_then(|a| match a.strip_prefix('*').map(str::trim) {
        Some(pointer) => is_identifier(pointer).then(|| format!("{pointer}->")),
        None => is_identifier(a).then(|| format!("{a}.")),
    });
    let mut fields = Vec::new();
    for read in structs::paths_read(doc.text(), body, &p.name) {
        let Some(member) = structs::member_at(&documents, &members, &read) else { continue };
        // A struct member read whole is read member by member somewhere else.
        if member.pointer_depth == 0 && structs::members_of(&documents, &member.base_type).is_some() {
            continue;
        }
        let paths = match member.elements {
            Some(n) if n <= MOST_ARRAY_FIELDS => (0..n).map(|i| format!("{read}[{i}]")).collect(),
            Some(_) => continue,
            None => vec![read],
        };
        for path in paths {
            if fields.iter().any(|f: &ArgSpec| f.name == path) {
                continue;
            }
            let member_path = format!("{}.{path}", p.name);
            let element = match member.pointer_depth {
                0 => member.base_type.clone(),
                _ => structs::cast_type(doc.text(), body, &p.name, &path).filter(|_| dtype_of(&member.base_type).is_none()).unwrap_or_else(|| member.base_type.clone()),
            };
            let field = Param { name: member_path, ty: member.base_type.clone(), base_type: member.base_type.clone(), pointer_depth: member.pointer_depth, is_const: member.is_const, is_restrict: false, span: p.span };
            let assigned = passed.as_ref().map(|a| format!("{a}{path}"));
            let (mut spec, _) = arg_spec(doc, Some(body), &field, &element, assigned.as_deref(), host, scalars, None);
            spec.name = path;
            spec.value = spec.value.map(|v| c_boolean(&v));
            fields.push(spec);
        }
    }
    // In the order the struct declares them, as a reader compares them with it.
    let declared = |field: &ArgSpec| {
        let member = members.iter().position(|m| field.name.split(['.', '[']).next() == Some(m.name.as_str()));
        let element = field.name.split_once('[').and_then(|(_, i)| i.split(']').next()?.parse::<u64>().ok());
        (member, element)
    };
    fields.sort_by_key(declared);
    Some(ArgSpec { name: p.name.clone(), struct_type: Some(struct_type.to_string()), fields, ..ArgSpec::default() })
}

/// Elements of an array member that become fields of their own; a larger array is left zero.
const MOST_ARRAY_FIELDS: u64 = 16;

/// `text` with the block's extents it kept as names (`threads.y` of the launcher) written as
/// the spec's block says them: a launch parameter where the block became one.
fn with_kept_block_extents(text: &str, block: &[String]) -> String {
    let extent = |axis: usize| block.get(axis).map_or_else(|| "1".to_string(), |b| if is_identifier(b) || b.parse::<i64>().is_ok() { b.clone() } else { format!("({b})") });
    let written = crate::syntax::rename_identifiers_in(text, |word| super::host::BLOCK_EXTENT_NAMES.iter().position(|name| *name == word).map(extent));
    match written == text {
        true => written,
        false => super::callee::readable(&written),
    }
}

/// `1` for C's `true`, `0` for `false`: a spec's expressions have no booleans.
fn c_boolean(value: &str) -> String {
    match value.trim() {
        "true" => "1".to_string(),
        "false" => "0".to_string(),
        other => other.to_string(),
    }
}

/// Outputs of one partial result per block, where each block's share of the input follows the
/// block size or the grid: compared by their sum, which no partition changes. One block per row
/// (`out[blockIdx.x]` of `in[blockIdx.x * hidden + i]`) stays compared element by element.
fn mark_partial_results(text: &str, body: Node, k: &Kernel, args: &mut [ArgSpec]) {
    let code: String = text[body.byte_range()].chars().filter(|c| !c.is_whitespace()).collect();
    let block_sizes: Vec<&str> = std::iter::once("blockDim.x").chain(k.template_params.iter().map(|tp| tp.name.as_str())).collect();
    let partitioned = code.contains("gridDim")
        || block_sizes.iter().any(|b| [format!("blockIdx.x*{b}"), format!("blockIdx.x*({b}"), format!("{b}*blockIdx.x")].iter().any(|p| code.contains(p.as_str())));
    if !partitioned {
        return;
    }
    for arg in args.iter_mut().filter(|a| matches!(a.role, Some(Role::Output | Role::InOut))) {
        if !writes_only_per_block(text, body, &arg.name) {
            continue;
        }
        // Read only after the whole grid has synchronised (the first block's pass over the
        // partials of a cooperative reduction): nothing it was given is read, an output.
        if arg.role == Some(Role::InOut) {
            if !read_only_after_grid_sync(text, body, &arg.name) {
                continue;
            }
            arg.role = Some(Role::Output);
            arg.init = None;
        }
        arg.compare = Some(Compare::Sum);
    }
}

/// Whether every read of `name` comes after the kernel's first grid-wide barrier.
fn read_only_after_grid_sync(text: &str, body: Node, name: &str) -> bool {
    let Some(barrier) = grid_barriers(text, body).next().map(|n| n.start_byte()) else { return false };
    // `partials[b] = …` only: `+=` reads what was there.
    let is_write = |n: &Node| {
        n.parent().is_some_and(|p| {
            p.kind() == "assignment_expression" && p.child_by_field_name("operator").is_some_and(|o| &text[o.byte_range()] == "=") && p.child_by_field_name("left").is_some_and(|l| l.id() == n.id())
        })
    };
    descendants(body)
        .filter(|n| n.kind() == "subscript_expression" && n.child_by_field_name("argument").is_some_and(|a| &text[a.byte_range()] == name))
        .filter(|n| !is_write(n))
        .all(|n| n.start_byte() > barrier)
}

/// Whether every write to `name` is `name[blockIdx.x] = …`: one partial result per block, as
/// the first pass of a reduction leaves them.
fn writes_only_per_block(text: &str, body: Node, name: &str) -> bool {
    let mut writes = descendants(body)
        .filter(|n| n.kind() == "assignment_expression")
        .filter_map(|a| a.child_by_field_name("left"))
        .filter(|left| left.kind() == "subscript_expression" && left.child_by_field_name("argument").is_some_and(|arg| &text[arg.byte_range()] == name))
        .peekable();
    writes.peek().is_some() && writes.all(|left| indexed_by_block(text, left))
}

/// Whether a subscript `p[…]` is `p[blockIdx.x]`.
fn indexed_by_block(text: &str, subscript: Node) -> bool {
    subscript.child_by_field_name("indices").or_else(|| subscript.child_by_field_name("index")).is_some_and(|i| text[i.byte_range()].trim_matches(['[', ']', ' ']) == "blockIdx.x")
}

/// An output holding one result per block beside others (`out[blockIdx.x]`, written or passed
/// on as `&out[blockIdx.x]`, and `out[0]`, as a single-pass reduction leaves them), which no
/// comparison of the outputs can check under another block size: its name.
fn mixed_per_block_output<'a>(text: &str, body: Node, args: &'a [ArgSpec]) -> Option<&'a str> {
    let per_block = |name: &str| {
        descendants(body).any(|n| {
            n.kind() == "subscript_expression"
                && n.child_by_field_name("argument").is_some_and(|a| &text[a.byte_range()] == name)
                && indexed_by_block(text, n)
        })
    };
    args.iter().filter(|a| matches!(a.role, Some(Role::Output | Role::InOut)) && a.compare != Some(Compare::Sum)).find(|a| per_block(&a.name)).map(|a| a.name.as_str())
}

/// A kernel parameter named like one of the host's sizes but passed something else (`N` given
/// `N * C`, `arrayLength` given `arrayLength / (4 * THREADBLOCK_SIZE)`): the host's size takes its
/// launcher's name (`residual_forward_N`), so that the spec can tell the two apart. Expressions
/// in the host's names change (grid, block, shared bytes, scalar values, lengths of host
/// allocations); lengths read from the kernel's own bounds mean the parameter, and stay.
/// Returns each (host name, new name).
fn rename_shadowed_sizes(launcher: &str, grid: &mut [String], block: &mut [String], shared_bytes: &mut String, args: &mut [ArgSpec], host_lengths: &[bool]) -> Vec<(String, String)> {
    let mut renamed_sizes = Vec::new();
    let shadowing: Vec<String> = args.iter().filter(|a| a.value.as_deref().is_some_and(|v| v.trim() != a.name && v.trim() != UNKNOWN)).map(|a| a.name.clone()).collect();
    for name in shadowing {
        let in_host_names = grid.iter().chain(block.iter()).chain(std::iter::once(&*shared_bytes)).chain(args.iter().filter_map(|a| a.value.as_ref()));
        let host_length_names = args.iter().zip(host_lengths).filter(|(_, &from_host)| from_host).filter_map(|(a, _)| a.length.as_ref());
        if !in_host_names.chain(host_length_names).any(|text| identifiers_in(text).any(|w| w == name)) {
            continue;
        }
        let renamed = format!("{launcher}_{name}");
        let rename = |text: &str| crate::syntax::rename_identifiers_in(text, |w| (w == name).then(|| renamed.clone()));
        grid.iter_mut().chain(block.iter_mut()).for_each(|e| *e = rename(e));
        *shared_bytes = rename(shared_bytes);
        for (arg, &from_host) in args.iter_mut().zip(host_lengths) {
            arg.value = arg.value.as_deref().map(rename);
            if from_host {
                arg.length = arg.length.as_deref().map(rename);
            }
        }
        renamed_sizes.push((name, renamed));
    }
    renamed_sizes
}

/// `NULL`, `nullptr` or `0`, cast or not (`(float*)NULL`).
fn is_null_pointer(argument: &str) -> bool {
    let bare = argument.rsplit(')').next().unwrap_or(argument).trim();
    matches!(bare, "NULL" | "nullptr" | "0")
}

/// The spec dtype of a C type and how many of it one element holds (`half2` is 2 halves);
/// `None` for types that are not numbers.
fn dtype_of(ty: &str) -> Option<(Dtype, u32)> {
    // CUDA's vector types (`uchar4`, `float3`): lanes of their scalar.
    if let Some((scalar, lanes)) = crate::syntax::vector_type(ty) {
        let (dtype, one) = dtype_of(scalar)?;
        return Some((dtype, one * lanes as u32));
    }
    if let Some(definition) = crate::syntax::host_type_definition(ty) {
        return dtype_of(definition);
    }
    Some(match ty {
        "half" | "__half" => (Dtype::F16, 1),
        "half2" | "__half2" => (Dtype::F16, 2),
        "__nv_bfloat16" | "nv_bfloat16" => (Dtype::Bf16, 1),
        "__nv_bfloat162" | "nv_bfloat162" => (Dtype::Bf16, 2),
        "float" => (Dtype::F32, 1),
        "double" => (Dtype::F64, 1),
        // cuFFT's and cuComplex's real and complex numbers: a float or double, or two of them.
        "cufftReal" => (Dtype::F32, 1),
        "cufftComplex" | "cuComplex" | "cuFloatComplex" => (Dtype::F32, 2),
        "cufftDoubleReal" => (Dtype::F64, 1),
        "cufftDoubleComplex" | "cuDoubleComplex" => (Dtype::F64, 2),
        "__nv_fp8_e4m3" => (Dtype::Fp8e4m3, 1),
        "__nv_fp8_e5m2" => (Dtype::Fp8e5m2, 1),
        "char" | "signed char" | "int8_t" => (Dtype::I8, 1),
        "unsigned char" | "uint8_t" | "bool" => (Dtype::U8, 1),
        "short" | "int16_t" => (Dtype::I16, 1),
        "unsigned short" | "uint16_t" => (Dtype::U16, 1),
        "int" | "int32_t" => (Dtype::I32, 1),
        "unsigned" | "unsigned int" | "uint32_t" => (Dtype::U32, 1),
        // `clock_t` and `ptrdiff_t` are `long` on Linux.
        "long long" | "int64_t" | "long" | "clock_t" | "ptrdiff_t" | "intptr_t" => (Dtype::I64, 1),
        "unsigned long long" | "uint64_t" | "size_t" | "unsigned long" | "uintptr_t" => (Dtype::U64, 1),
        // cuRAND's generator states, as words (their sizes: `size_of_type`).
        "curandState" | "curandState_t" | "curandStateXORWOW" | "curandStateXORWOW_t" => (Dtype::U32, 12),
        "curandStatePhilox4_32_10" | "curandStatePhilox4_32_10_t" => (Dtype::U32, 16),
        "curandStateMRG32k3a" | "curandStateMRG32k3a_t" => (Dtype::U32, 12),
        "curandStateSobol32" | "curandStateSobol32_t" | "curandStateScrambledSobol32" | "curandStateScrambledSobol32_t" => (Dtype::U32, 35),
        "curandStateSobol64" | "curandStateSobol64_t" | "curandStateScrambledSobol64" | "curandStateScrambledSobol64_t" => (Dtype::U64, 67),
        "curandDirectionVectors32_t" => (Dtype::U32, 32),
        "curandDirectionVectors64_t" => (Dtype::U64, 64),
        _ => return None,
    })
}

/// The spec's role for what the kernel does with a buffer.
fn role_for(access: Access) -> Role {
    match access {
        Access::Reads | Access::Untouched => Role::Input,
        Access::Writes => Role::Output,
        Access::ReadsAndWrites => Role::InOut,
    }
}

fn contains_call(text: &str, body: Node, function: &str) -> bool {
    descendants(body).any(|node| node.kind() == "call_expression" && node.child_by_field_name("function").is_some_and(|f| &text[f.byte_range()] == function))
}

fn is_keyword(word: &str) -> bool {
    matches!(word, "sizeof" | "dim3" | "int" | "unsigned" | "size_t" | "long" | "static_cast" | "min" | "max")
}

/// Whether the kernel's slice synchronises its whole grid (`grid.sync()` or `cg::sync(grid)` on
/// a group from `this_grid()`, or `this_grid().sync()`): it must then be launched cooperatively,
/// with all its blocks resident at once. A grid group used only for its sizes needs no such
/// launch (and a grid too large for one would then fail).
fn synchronises_grid(source: &str) -> bool {
    let tree = crate::syntax::parse_source(source);
    let synchronised = grid_barriers(source, tree.root_node()).next().is_some();
    synchronised
}

/// The calls under `root` that synchronise the whole grid: `grid.sync()` of a group made by
/// `this_grid()`, `this_grid().sync()`, `cg::sync(grid)`.
fn grid_barriers<'t>(text: &'t str, root: Node<'t>) -> impl Iterator<Item = Node<'t>> + 't {
    let from_this_grid = move |n: Node| text[n.byte_range()].contains("this_grid");
    let groups: Vec<&str> = descendants(root)
        .filter(|n| n.kind() == "init_declarator" && n.child_by_field_name("value").is_some_and(from_this_grid))
        .filter_map(|d| d.child_by_field_name("declarator").map(|n| &text[n.byte_range()]))
        .collect();
    let is_group = move |n: Node| from_this_grid(n) || groups.contains(&text[n.byte_range()].trim());
    descendants(root).filter(|n| n.kind() == "call_expression").filter(move |call| {
        let Some(function) = call.child_by_field_name("function") else { return false };
        match function.kind() {
            // `grid.sync()`, `this_grid().sync()`
            "field_expression" => function.child_by_field_name("field").is_some_and(|f| &text[f.byte_range()] == "sync") && function.child_by_field_name("argument").is_some_and(&is_group),
            // `cg::sync(grid)`, `sync(grid)`
            _ => text[function.byte_range()].rsplit("::").next() == Some("sync") && call.child_by_field_name("arguments").and_then(|a| a.named_child(0)).is_some_and(&is_group),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_the_kernel_reads_from_its_class_is_its_own() {
        let body = "for (int i = threadIdx.x; i < T::kRows; i += T::kThreads) {}";
        assert!(block_is_kernels_member("Traits::kThreads", body));
        assert!(!block_is_kernels_member("Traits::kThread", body));
        assert!(!block_is_kernels_member("256", body));
    }

    #[test]
    fn a_literal_the_block_is_compared_with_is_no_block_size() {
        let choices = |block: &str| {
            let (mut grid, mut block) = (vec!["n".to_string()], vec![block.to_string()]);
            let (found, _) = literal_block_choices("k", 9, &mut grid, &mut block);
            (found.into_iter().map(|p| (p.name, p.default)).collect::<Vec<_>>(), block[0].clone())
        };
        assert_eq!(choices("min(256, n)"), (vec![("K_BLOCK_SIZE".to_string(), 256)], "min(K_BLOCK_SIZE, n)".to_string()));
        assert_eq!(choices("WARP_SIZE * (d < 128 ? 8 : 4)").0, vec![], "LeetCUDA's flash attention picks its warps by the head dimension");
        assert_eq!(choices("WARP_SIZE * (128 >= d ? 8 : 4)").0, vec![]);
        assert_eq!(choices("n << 128 | 0").0.len(), 1, "a shift is no comparison");
    }

    #[test]
    fn a_kernel_that_synchronises_its_grid_is_launched_cooperatively() {
        let kernel = |body: &str| format!("namespace cg = cooperative_groups;\n__global__ void k(float *x) {{\n  {body}\n}}\n");
        assert!(synchronises_grid(&kernel("cg::grid_group grid = cg::this_grid();\n  x[0] = 1.f;\n  cg::sync(grid);")));
        assert!(synchronises_grid(&kernel("auto g = cg::this_grid();\n  g.sync();")));
        assert!(synchronises_grid(&kernel("cg::this_grid().sync();")));
        // A grid group for its sizes, a block's barrier: no cooperative launch needed.
        assert!(!synchronises_grid(&kernel("cg::grid_group grid = cg::this_grid();\n  x[grid.thread_rank()] = grid.size();")));
        assert!(!synchronises_grid(&kernel("cg::thread_block block = cg::this_thread_block();\n  block.sync();\n  cg::sync(block);")));
    }

    #[test]
    fn partials_read_only_after_the_grid_barrier_hold_nothing_they_were_given() {
        let kernel = |body: &str| format!("__global__ void k(float *p, float *t) {{\n  cg::grid_group grid = cg::this_grid();\n  {body}\n}}\n");
        let read_after = |source: &str| {
            let tree = crate::syntax::parse_source(source);
            let body = descendants(tree.root_node()).find(|n| n.kind() == "compound_statement").unwrap();
            read_only_after_grid_sync(source, body, "p")
        };
        assert!(read_after(&kernel("p[blockIdx.x] = 1.f;\n  grid.sync();\n  if (blockIdx.x == 0) t[0] = p[0] + p[1];")));
        assert!(read_after(&kernel("p[blockIdx.x] = 1.f;\n  cg::sync(grid);\n  t[0] = p[1];")));
        assert!(!read_after(&kernel("p[blockIdx.x] += 1.f;\n  grid.sync();\n  t[0] = p[1];")), "`+=` reads what it was given");
        assert!(!read_after(&kernel("t[0] = p[blockIdx.x];\n  grid.sync();")));
        assert!(!read_after(&kernel("p[blockIdx.x] = 1.f;\n  __syncthreads();\n  t[0] = p[1];")), "a block's barrier is not the grid's");
    }

    #[test]
    fn unchecked_sizes_covered_in_whole_tiles_are_multiples_of_the_tile() {
        let scalar = |name: &str, size: &str| ArgSpec { name: name.into(), element: Some(Dtype::I32), value: Some(size.into()), ..ArgSpec::default() };
        let args = [scalar("K", "K"), scalar("N", "N")];
        let restrictions = |kernel_body: &str, grid: &[&str]| {
            let source = format!("__global__ void k(int K, int N, float *a) {{\n{kernel_body}\n}}\n");
            let tree = crate::syntax::parse_source(&source);
            let body = descendants(tree.root_node()).find(|n| n.kind() == "compound_statement").unwrap();
            let grid: Vec<String> = grid.iter().map(|g| g.to_string()).collect();
            let block = ["BLOCK".to_string()];
            whole_tiles_unchecked(&source, body, &grid, &KernelTerms::of(&source, body, &block), &args)
        };
        let tiles = "  const int step = BM / 2;\n  for (int k0 = 0; k0 < K; k0 += step) a[blockIdx.x * N + k0 + threadIdx.x] = 0.f;";
        assert_eq!(restrictions(tiles, &["ceil_div(N, BLOCK)"]), ["K % (BM // 2) == 0", "N % BLOCK == 0"]);
        // Each element checked: by the loop that starts at the thread's index, by an `if`, a `min`.
        assert!(restrictions("  for (int i = threadIdx.x; i < K; i += blockDim.x) a[i] = 0.f;", &[]).is_empty());
        assert!(restrictions("  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < N) a[i] = 0.f;", &["ceil_div(N, BLOCK)"]).is_empty());
        assert_eq!(restrictions("  for (int k0 = 0; k0 < K; k0 += 8) a[min(k0 + threadIdx.x, K - 1)] = 0.f;", &[]), Vec::<String>::new());
    }

    #[test]
    fn a_loop_whose_step_a_configuration_makes_zero_must_step_at_least_one() {
        let steps = |kernel_body: &str| {
            let source = format!("__global__ void k(float *a) {{\n{kernel_body}\n}}\n");
            let tree = crate::syntax::parse_source(&source);
            let body = descendants(tree.root_node()).find(|n| n.kind() == "compound_statement").unwrap();
            let block = ["THREADS".to_string()];
            positive_loop_steps(&source, body, &KernelTerms::of(&source, body, &block))
        };
        assert_eq!(steps("  const uint stride = blockDim.x / BN;\n  for (uint r = 0; r < BM; r += stride) a[r] = 0.f;"), ["(THREADS) / BN >= 1"]);
        assert!(steps("  for (int i = threadIdx.x; i < 64; i += blockDim.x * VEC) a[i] = 0.f;").is_empty(), "a product is never 0");
    }

    #[test]
    fn a_kernel_no_program_launches_gets_the_launch_its_flat_index_asks_for() {
        let scalar = |name: &str| ArgSpec { name: name.into(), element: Some(Dtype::I32), value: Some(UNKNOWN.into()), ..ArgSpec::default() };
        let buffer = ArgSpec { name: "x".into(), element: Some(Dtype::F32), length: Some("n".into()), ..ArgSpec::default() };
        let launch = |body: &str| {
            let source = format!("__global__ void scale_all(float *x, int n) {{\n{body}\n}}\n");
            let tree = crate::syntax::parse_source(&source);
            let body = descendants(tree.root_node()).find(|n| n.kind() == "compound_statement").unwrap();
            let mut args = [buffer.clone(), scalar("n")];
            let (mut grid, mut block) = (vec![UNKNOWN.to_string()], vec![UNKNOWN.to_string()]);
            let found = launch_from_own_index("scale_all", &source, body, &[], &mut args, &mut grid, &mut block);
            found.map(|f| (grid, block, args[1].value.clone(), f.choice.map(|c| c.default), f.chosen.into_keys().collect::<Vec<_>>()))
        };
        let (grid, block, n, default, chosen) = launch("  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) x[i] *= 2.0f;").unwrap();
        assert_eq!((grid, block), (vec!["ceil_div(n, SCALE_ALL_BLOCK_SIZE)".to_string()], vec!["SCALE_ALL_BLOCK_SIZE".to_string()]));
        // The count is a size the shapes give, at templatize's choice.
        assert_eq!((n.as_deref(), default, chosen), (Some("n"), Some(CHOSEN_BLOCK), vec!["n".to_string()]));
        // A float4 per thread: a quarter of the threads.
        let (grid, ..) = launch("  int i = 4 * (blockIdx.x * blockDim.x + threadIdx.x);\n  if (i < n) x[i] = 0.0f;").unwrap();
        assert_eq!(grid, ["ceil_div(n, 4 * SCALE_ALL_BLOCK_SIZE)"]);
        // Another count the program would give (rows a thread's loop walks): no sizes are chosen.
        let rows = |body: &str| {
            let source = format!("__global__ void k(float *x, int n, int rows) {{\n{body}\n}}\n");
            let tree = crate::syntax::parse_source(&source);
            let body = descendants(tree.root_node()).find(|n| n.kind() == "compound_statement").unwrap();
            let mut args = [buffer.clone(), scalar("n"), scalar("rows")];
            launch_from_own_index("k", &source, body, &[], &mut args, &mut vec![UNKNOWN.to_string()], &mut vec![UNKNOWN.to_string()]).is_none()
        };
        assert!(rows("  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) {\n    for (int r = 0; r < rows; ++r) x[r * n + i] = 0.0f;\n  }"));
        // A block the kernel takes as its template parameter, its tile sized by it: that parameter.
        let template = |body: &str| {
            let source = format!("template <int NUM_THREADS = 128>\n__global__ void sum_all(float *x, float *total, int n) {{\n{body}\n}}\n");
            let tree = crate::syntax::parse_source(&source);
            let body = descendants(tree.root_node()).find(|n| n.kind() == "compound_statement").unwrap();
            let num_threads = ParamSpec { name: "NUM_THREADS".into(), kind: ParamKind::Template, default: 128, values: vec![32, 128], origin: String::new() };
            let mut args = [buffer.clone(), ArgSpec { name: "total".into(), ..buffer.clone() }, scalar("n")];
            let (mut grid, mut block) = (vec![UNKNOWN.to_string()], vec![UNKNOWN.to_string()]);
            let found = launch_from_own_index("sum_all", &source, body, &[num_threads], &mut args, &mut grid, &mut block)?;
            Some((grid, block, found.choice.is_none(), found.chosen.into_keys().collect::<Vec<_>>()))
        };
        let reduce = "  int tid = threadIdx.x;\n  int idx = blockIdx.x * NUM_THREADS + tid;\n  __shared__ float part[NUM_THREADS];\n  part[tid] = (idx < n) ? x[idx] : 0.0f;\n  __syncthreads();\n  if (tid == 0) atomicAdd(total, part[0]);";
        let expected = (vec!["ceil_div(n, NUM_THREADS)".to_string()], vec!["NUM_THREADS".to_string()], true, vec!["n".to_string()]);
        assert_eq!(template(reduce), Some(expected));
        let quads = reduce.replace("int idx = blockIdx.x * NUM_THREADS + tid;", "int idx = (blockIdx.x * NUM_THREADS + tid) * 4;");
        assert_eq!(template(&quads).map(|t| t.0), Some(vec!["ceil_div(n, 4 * NUM_THREADS)".to_string()]));
        // The block's own extent in the index, a block of any size sharing a tile: no guess.
        assert_eq!(template(&reduce.replace("blockIdx.x * NUM_THREADS", "blockIdx.x * blockDim.x")), None);
        // Threads that read before the check, or meet at a barrier, are not free to regroup.
        assert!(launch("  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  x[i] = 0.0f;").is_none());
        assert!(launch("  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) {\n    __syncthreads();\n    x[i] = 0.0f;\n  }").is_none());
    }

    #[test]
    fn a_length_rounded_up_to_whole_blocks_is_read_as_what_it_rounds() {
        let (length, dividends) = without_round_ups("ceil_div(m_samples, threads) * threads * 8 + ceil_div(k, threads_x) * threads_x", "threads");
        assert_eq!((length.as_str(), dividends), ("(m_samples) * 8 + ceil_div(k, threads_x) * threads_x", vec!["m_samples".to_string()]));
        // Divided by the block but not multiplied back: a count of blocks, which another block changes.
        assert_eq!(without_round_ups("ceil_div(n, threads) * 4", "threads").1, Vec::<String>::new());
    }

    #[test]
    fn a_grid_dividing_by_the_template_block_divides_by_its_parameter() {
        assert_eq!(grid_following_block("((N + 256 - 1) / 256) / (4)", 256, "THREADS"), "((N + THREADS - 1) / THREADS) / (4)");
        assert_eq!(grid_following_block("(n + 127) / 128", 128, "T"), "(n + (T - 1)) / T");
        // A grid of one number counts blocks; other numbers are the problem's.
        assert_eq!(grid_following_block("256", 256, "THREADS"), "256");
        assert_eq!(grid_following_block("rows * 8", 256, "THREADS"), "rows * 8");
        // The block as a floating-point divisor, rounded up: the parameter keeps that type.
        assert_eq!(grid_following_block("ceil(n / 256.0) + ceil(m / 256.f) + x.y256", 256, "T"), "ceil(n / (double)T) + ceil(m / (float)T) + x.y256");
        assert_eq!(grid_following_block("ceil(n / 256.5)", 256, "T"), "ceil(n / 256.5)");
        // A block of 2: its `- 1` is no `block - 1` term to rewrite.
        assert_eq!(grid_following_block("(n + 2 - 1) / 2", 2, "T"), "(n + T - 1) / T");
    }

    #[test]
    fn launches_a_rewrite_of_the_launch_sites_cannot_reach_are_named_by_place() {
        let text = "__global__ void k(float* x, int n) { x[blockIdx.x] = n; }\n\
             void direct(float* x, int n) { k<<<n, 32>>>(x, n); }\n\
             void through_pointer(float* x, int n) {\n  auto launch = &k;\n  launch<<<n, 64>>>(x, n);\n}\n";
        let own = Document::new(format!("{text}WRITE_LAUNCHER(written)\n"));
        let bench = HostDocument { path: PathBuf::from("/p/bench.cu"), document: Document::new("int main() {\n  k<<<8, 32>>>(0, 8);\n}\n".to_string()) };
        let other = HostDocument { path: PathBuf::from("/p/other.cu"), document: Document::new("int main() { other<<<8, 32>>>(0, 8); }\n".to_string()) };
        // Another program's kernel of the same name, launched in its own file.
        let namesake = HostDocument { path: PathBuf::from("/q/namesake.cu"), document: Document::new("__global__ void k(float* x, int n) {}\nint main() { k<<<8, 32>>>(0, 8); }\n".to_string()) };
        let file = |expanded| KernelFile { text: &own, expanded, path: Some(Path::new("/p/own.cu")) };
        assert_eq!(unreached_launches(file(None), "k", &[bench.clone(), other.clone(), namesake.clone()]), ["line 5", "bench.cu:2"]);
        // The launch a macro of the file writes is only in its expansion; those the file
        // writes itself are there too, and said once.
        let expanded = Document::new(format!("{text}void written(float* x) {{ k<<<1, 32>>>(x, 1); }}\n"));
        assert_eq!(unreached_launches(file(Some(&expanded)), "k", &[bench, other, namesake]), ["line 5", "line 7", "bench.cu:2"]);
        assert_eq!(unreached_launches(file(None), "k", &[]), ["line 5"]);
    }

    #[test]
    fn the_kernels_static_asserts_on_its_parameters_are_restrictions() {
        let text = "template <int TILE, int PAD, int WIDE>\n__global__ void stage(float* out, const float* in) {\n  static_assert(PAD % 4 == 0 &&\n                TILE <= 64, \"padding in float4s\");\n  static_assert(WIDE == 1 && PAD <= 8);\n  static_assert(sizeof(float) == 4);\n  __shared__ float tile[TILE][TILE + PAD];\n  tile[threadIdx.y][threadIdx.x] = in[threadIdx.y * TILE + threadIdx.x];\n  __syncthreads();\n  out[threadIdx.y * TILE + threadIdx.x] = tile[threadIdx.x][threadIdx.y];\n}\n\
                    int main() {\n  float *out, *in;\n  cudaMalloc(&out, 1024 * sizeof(float));\n  cudaMalloc(&in, 1024 * sizeof(float));\n  stage<32, 4, 1><<<1, dim3(32, 32)>>>(out, in);\n}\n";
        let spec = crate::template::templatize(text, "stage", &SliceOptions::default()).unwrap().spec;
        assert!(spec.params.iter().any(|p| p.name == "PAD"), "{:?}", spec.params);
        // On one line. The one about a type names no parameter: it holds for every configuration.
        assert!(spec.restrictions.contains(&"PAD % 4 == 0 && TILE <= 64".to_string()), "{:?}", spec.restrictions);
        assert!(spec.restrictions.contains(&"WIDE == 1 && PAD <= 8".to_string()), "{:?}", spec.restrictions);
        // Held at 1, the search draws no other `WIDE`, nor a `PAD` the assertions refuse.
        let values = |name: &str| spec.params.iter().find(|p| p.name == name).map(|p| p.values.clone()).unwrap();
        assert_eq!(values("WIDE"), [1]);
        assert!(values("PAD").len() > 1 && values("PAD").iter().all(|pad| pad % 4 == 0 && *pad <= 8), "{:?}", spec.params);
        assert!(!spec.restrictions.iter().any(|r| r.contains("sizeof")), "{:?}", spec.restrictions);
    }

    #[test]
    fn a_type_the_launcher_names_is_the_template_argument_and_one_it_works_out_is_unknown() {
        let program = |alias: &str| {
            format!(
                "template <typename Copy>\n__global__ void copy(float* x) {{ x[threadIdx.x] = 0.f; }}\n\
                 void run(float* x, int n) {{\n  using Copy = {alias};\n  copy<Copy><<<1, 32>>>(x);\n}}\n\
                 int main() {{\n  float* x;\n  cudaMalloc(&x, 32 * sizeof(float));\n  run(x, 32);\n}}\n"
            )
        };
        let template_args = |alias: &str| crate::template::templatize(&program(alias), "copy", &SliceOptions::default()).unwrap().spec.template_args;
        assert_eq!(template_args("float"), ["float"]);
        // LeetCUDA's `using TiledCopy = decltype(make_tiled_copy(…))` of the launcher's locals.
        assert_eq!(template_args("decltype(make_copy(n))"), [UNKNOWN]);
    }

    #[test]
    fn a_buffer_that_is_one_of_two_is_as_long_as_the_shorter() {
        let text = "__global__ void copy(float* out, const float* in, int n) {\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) out[i] = in[i];\n}\n\
                    void step(float* a, float* b, int n, int pass) {\n  float* out = (pass & 1) ? a : b;\n  copy<<<n / 256, 256>>>(out, a, n);\n}\n\
                    int main() {\n  const int n = 1 << 20;\n  float *a, *b;\n  cudaMalloc(&a, n * sizeof(float));\n  cudaMalloc(&b, 2 * n * sizeof(float));\n  step(a, b, n, 1);\n}\n";
        let spec = crate::template::templatize(text, "copy", &SliceOptions::default()).unwrap().spec;
        let lengths: Vec<Option<&str>> = spec.args.iter().map(|a| a.length.as_deref()).collect();
        assert_eq!(lengths, [Some("min(n, 2 * n)"), Some("n"), None]);
    }

    #[test]
    fn of_launches_in_two_branches_the_spec_follows_the_one_the_program_takes() {
        let program = |flag: &str| {
            format!(
                "template <int UP>\n__global__ void shift(float* x) {{ x[threadIdx.x] += UP ? 1.f : -1.f; }}\n\
                 void run(float* x, int up) {{\n  if (up)\n    shift<1><<<1, 32>>>(x);\n  else\n    shift<0><<<1, 64>>>(x);\n}}\n\
                 int main() {{\n  float* x;\n  cudaMalloc(&x, 64 * sizeof(float));\n  run(x, {flag});\n}}\n"
            )
        };
        let spec = |flag: &str| crate::template::templatize(&program(flag), "shift", &SliceOptions::default()).unwrap().spec;
        for (flag, up, block) in [("0", 0, 64), ("1", 1, 32)] {
            let spec = spec(flag);
            let default = |name: &str| spec.params.iter().find(|p| p.name == name).map(|p| (p.default, p.values.clone()));
            assert_eq!(default("UP"), Some((up, vec![up])), "run(x, {flag})");
            assert_eq!(spec.block, ["SHIFT_BLOCK_SIZE"]);
            assert_eq!(default("SHIFT_BLOCK_SIZE").map(|(d, _)| d), Some(block), "run(x, {flag})");
        }
    }

    #[test]
    fn a_launcher_nobody_calls_is_called_as_its_one_twin_is() {
        let program = |others: &str| {
            format!(
                "__global__ void scale(float* y, const float* x, int n) {{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 2.f * x[i]; }}\n\
                 void by_scale(float* y, float* x, int n) {{ scale<<<(n + 255) / 256, 256>>>(y, x, n); }}\n\
                 void by_copy(float* y, float* x, int n) {{ cudaMemcpy(y, x, n * sizeof(float), cudaMemcpyDeviceToDevice); }}\n\
                 void by_half(double* y, double* x, long n) {{ }}\n{others}\
                 int main() {{\n  float *x, *y;\n  cudaMalloc(&x, 5000 * sizeof(float));\n  cudaMalloc(&y, 5000 * sizeof(float));\n  by_copy(y, x, 5000);\n  by_half(0, 0, 7);\n{}}}\n",
                if others.is_empty() { "" } else { "  by_zero(y, x, 9);\n" }
            )
        };
        let sizes = |others: &str| {
            let spec = crate::template::templatize(&program(others), "scale", &SliceOptions::default()).unwrap().spec;
            spec.shapes.first().and_then(|s| s.get("n").copied())
        };
        // `by_half` takes parameters of the same names but another size's type: no twin.
        assert_eq!(sizes(""), Some(5000));
        // Two twins the program calls: which one stands in is anyone's guess.
        assert_eq!(sizes("void by_zero(float* y, float* x, int n) { cudaMemset(y, 0, n * sizeof(float)); }\n"), None);
    }

    #[test]
    fn a_header_macro_the_block_and_the_kernels_code_share_is_a_build_unless_another_writes_it_out() {
        let templatized = |header: &str, condition: &str| {
            let dir = tempfile::tempdir().unwrap();
            std::fs::create_dir(dir.path().join(".git")).unwrap();
            std::fs::write(dir.path().join("config.h"), header).unwrap();
            let text = format!(
                "#include \"config.h\"\n__global__ void reverse(float* x, int n) {{\n  __shared__ float run[RUN];\n  x += blockIdx.x * RUN;\n  run[threadIdx.x] = x[threadIdx.x];\n  __syncthreads();\n  x[threadIdx.x] = run[RUN - 1 - threadIdx.x] + n;\n}}\n\
                 void launch(float* x, int count, int n) {{\n  int threads = RUN;\n  int blocks = count / RUN;\n  {condition}\n    reverse<<<blocks, threads>>>(x, n);\n}}\n\
                 int main() {{\n  float* x;\n  cudaMalloc(&x, (1 << 20) * sizeof(float));\n  launch(x, 1 << 20, 100);\n}}\n"
            );
            let file = dir.path().join("reverse.cu");
            std::fs::write(&file, &text).unwrap();
            let hosts = crate::workspace::host_documents_near(&file, "reverse");
            crate::template::templatize_in_workspace(&text, "reverse", &file, &SliceOptions::for_file(&file), &hosts, dir.path()).unwrap()
        };
        let shared = templatized("#define RUN 256\n", "if (n < RUN)");
        let run = shared.spec.params.iter().find(|p| p.name == "RUN").expect("RUN is a parameter");
        assert_eq!((run.kind, run.default, run.values.clone()), (ParamKind::Define, 256, vec![32, 64, 128, 256, 512, 1024]));
        assert_eq!(run.origin, "`#define RUN 256` at config.h:1, which the kernel's code uses too: each value is a build of the kernel");
        assert_eq!(shared.spec.block, ["RUN"]);
        // The `if` the launch is under holds whenever it runs; an `else` holds the opposite.
        assert!(shared.spec.restrictions.contains(&"n < RUN".to_string()), "{:?}", shared.spec.restrictions);
        let otherwise = templatized("#define RUN 256\n", "if (n >= RUN)\n    return;\n  else");
        assert!(otherwise.spec.restrictions.contains(&"n < RUN".to_string()), "{:?}", otherwise.spec.restrictions);
        // An equality picks what to launch (`if (block == 16) k<16> else k<32>`): no restriction.
        let picked = templatized("#define RUN 256\n", "if (n != RUN)");
        assert!(picked.spec.restrictions.iter().all(|r| !r.contains("n ")), "{:?}", picked.spec.restrictions);
        // A condition on a loop's variable holds on some passes only: no restriction.
        let looped = templatized("#define RUN 256\n", "for (int pass = 0; pass < 4; pass++)\n    if (pass < RUN)");
        assert!(looped.spec.params.iter().any(|p| p.name == "RUN"));
        assert!(looped.spec.restrictions.iter().all(|r| !r.contains("pass") && !r.contains("0 < RUN")), "{:?}", looped.spec.restrictions);
        // `RUN_LOG2` writes out log2(RUN): the code is written for that one value.
        let fixed = templatized("#define RUN 256\n#define RUN_LOG2 8\n", "if (n < RUN)");
        assert!(fixed.spec.params.iter().all(|p| p.name != "RUN"), "{:?}", fixed.spec.params);
        let report = fixed.reports.iter().find(|r| r.transform == "launch-choices").unwrap();
        assert!(report.message.contains("`RUN` is a macro the kernel's code uses too, and `RUN_LOG2` writes out a value of it (8 for 256)"), "{}", report.message);
    }

    #[test]
    fn a_grid_that_rounds_down_keeps_sizes_whole_blocks() {
        let program = |grid: &str, n: &str| {
            format!(
                "#define THREADS 128\n__global__ void twice(float* x) {{ x[blockIdx.x * blockDim.x + threadIdx.x] *= 2.f; }}\n\
                 int main() {{\n  const int n = {n};\n  float* x;\n  cudaMalloc(&x, n * sizeof(float));\n  twice<<<{grid}, THREADS>>>(x);\n}}\n"
            )
        };
        let restrictions = |text: String| crate::template::templatize(&text, "twice", &SliceOptions::default()).unwrap().spec.restrictions;
        assert_eq!(restrictions(program("n / THREADS", "1 << 20")), ["n % THREADS == 0"]);
        // Rounding up covers every element; a program that runs a partial block itself, or a
        // divisor that no parameter moves, says nothing about the sizes.
        assert!(restrictions(program("(n + THREADS - 1) / THREADS", "1 << 20")).is_empty());
        assert!(restrictions(program("n / THREADS", "1000")).is_empty());
        assert!(restrictions(program("n / 128", "1 << 20")).is_empty());
    }

    #[test]
    fn vector_types_count_their_lanes() {
        assert_eq!(dtype_of("float4"), Some((Dtype::F32, 4)));
        assert_eq!(dtype_of("__half"), Some((Dtype::F16, 1)));
        assert_eq!(dtype_of("MyStruct"), None);
        assert_eq!(dtype_of("cufftComplex"), Some((Dtype::F32, 2)));
    }

    #[test]
    fn clock_ticks_are_the_64_bit_integers_linux_makes_them() {
        assert_eq!(dtype_of("clock_t"), Some((Dtype::I64, 1)));
        assert_eq!(dtype_of("uintptr_t"), Some((Dtype::U64, 1)));
    }

    #[test]
    fn glibcs_short_unsigned_names_are_their_types() {
        assert_eq!(dtype_of("uint"), Some((Dtype::U32, 1)));
        assert_eq!(dtype_of("ushort"), Some((Dtype::U16, 1)));
        assert_eq!(crate::syntax::size_of_type("uint"), Some(4));
        assert_eq!(crate::syntax::size_of_type("const ulong"), Some(8));
    }
}
