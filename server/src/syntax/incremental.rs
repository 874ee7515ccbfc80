//! Phase 2 of the analysis: the whole file's [`KernelModel`] from its top-level items' analyses
//! (phase 1, `extract.rs`), re-running the tree-sitter queries only over items that changed.
//!
//! An item's analysis is cached by its text, with spans relative to the item's start, and reused
//! while the item's text, the meaning of every `#define` and constant (the [`Environment`]) and
//! the resolution of every kernel it launches are unchanged. What crosses items is computed here,
//! for the whole file, on every version: the environment, `max_threads` of each launch (it reads
//! the launched kernel) and the define sites (each is recorded once per kernel, by whichever use
//! comes first in the file).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use tree_sitter::{Node, Tree};

use super::environment::{ConstantSource, Environment, Locals, Meaning};
use super::extract::{analyze_item, collect_items, identifiers_in, Declarations, ItemAnalysis, ItemNodes, TunableEvent};
use super::model::*;

/// The analyses of a file's items, for the analysis of its next version.
#[derive(Debug, Default)]
pub(super) struct ItemCache {
    /// The environment every entry was analysed under.
    meanings: Vec<Meaning>,
    /// By the item's text. Items with syntax errors are left out: error recovery depends on more
    /// than the item's own text.
    items: HashMap<Arc<str>, Arc<CachedItem>>,
}

#[derive(Debug)]
struct CachedItem {
    text: Arc<str>,
    kind: u16,
    /// Spans relative to the item's start (see [`Placement::ORIGIN`]).
    declarations: Declarations,
    analysis: ItemAnalysis,
}

/// Analyses the file `text` parsed as `tree`, reusing what `previous` (the cache of an earlier
/// version) holds. Gives the same model as an analysis without a cache.
pub(super) fn analyze(text: &str, tree: &Tree, previous: Option<&ItemCache>) -> (KernelModel, ItemCache) {
    let root = tree.root_node();
    // When error recovery gives up on the whole file, the root is the error: one item.
    let items: Vec<Node> = if root.is_error() { vec![root] } else { root.children(&mut root.walk()).collect() };
    let mut cached: Vec<Option<Arc<CachedItem>>> = items
        .iter()
        .map(|item| {
            let entry = previous?.items.get(&text[item.byte_range()])?;
            (entry.kind == item.kind_id() && !item.has_error()).then(|| entry.clone())
        })
        .collect();
    let mut nodes: Vec<Option<ItemNodes>> = items.iter().map(|_| None).collect();
    let uncached: Vec<usize> = (0..items.len()).filter(|&i| cached[i].is_none()).collect();
    for (i, found) in uncached.iter().zip(collect_items(root, &items, &uncached, text)) {
        nodes[*i] = Some(found);
    }

    let env = environment(&items, &cached, &nodes);
    let kernel_names: HashSet<String> = (0..items.len())
        .flat_map(|i| declarations(&cached[i], &nodes[i]).kernel_names.iter().cloned())
        .collect();
    let same_environment = previous.is_some_and(|p| p.meanings == env.meanings());
    let stale: Vec<usize> = (0..items.len())
        .filter(|&i| {
            cached[i].as_ref().is_some_and(|entry| {
                !same_environment
                    || entry.analysis.resolutions.iter().any(|(name, resolved)| kernel_names.contains(name) != *resolved)
            })
        })
        .collect();
    for (i, found) in stale.iter().zip(collect_items(root, &items, &stale, text)) {
        cached[*i] = None;
        nodes[*i] = Some(found);
    }

    let entries: Vec<Arc<CachedItem>> = items
        .iter()
        .enumerate()
        .map(|(i, item)| match cached[i].take() {
            Some(entry) => entry,
            None => {
                let mut found = nodes[i].take().expect("every uncached item's nodes were collected");
                let mut declarations = std::mem::take(&mut found.declarations);
                let mut analysis = analyze_item(text, *item, found, &env, &kernel_names);
                let to_origin = Shift { from: Placement::of(*item), to: Placement::ORIGIN };
                declarations.relocate(&to_origin);
                analysis.relocate(&to_origin);
                Arc::new(CachedItem { text: text[item.byte_range()].into(), kind: item.kind_id(), declarations, analysis })
            }
        })
        .collect();

    let model = assemble(&items, &entries, &env);
    let cache = ItemCache {
        meanings: env.meanings().to_vec(),
        items: items
            .iter()
            .zip(&entries)
            .filter(|(item, _)| !item.has_error())
            .map(|(_, entry)| (entry.text.clone(), entry.clone()))
            .collect(),
    };
    (model, cache)
}

/// An item's declarations: relative to the item's start when they come from the cache,
/// absolute when just collected.
fn declarations<'a>(cached: &'a Option<Arc<CachedItem>>, nodes: &'a Option<ItemNodes>) -> &'a Declarations {
    match (cached, nodes) {
        (Some(entry), _) => &entry.declarations,
        (None, Some(found)) => &found.declarations,
        (None, None) => unreachable!("an item is either cached or has its nodes collected"),
    }
}

fn environment(items: &[Node], cached: &[Option<Arc<CachedItem>>], nodes: &[Option<ItemNodes>]) -> Environment {
    let mut defines = Vec::new();
    let mut constants = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let found = declarations(&cached[i], &nodes[i]);
        match &cached[i] {
            Some(_) => {
                let to_item = Shift { from: Placement::ORIGIN, to: Placement::of(*item) };
                defines.extend(found.defines.iter().map(|d| d.relocated(&to_item)));
            }
            None => defines.extend(found.defines.iter().cloned()),
        }
        constants.extend(found.constants.iter().map(|(name, value)| (name.as_str(), value.as_str())));
    }
    Environment::new(defines, constants)
}

/// The file's model from its items' analyses, placed where the items now are.
fn assemble(items: &[Node], entries: &[Arc<CachedItem>], env: &Environment) -> KernelModel {
    let shifts: Vec<Shift> = items.iter().map(|item| Shift { from: Placement::ORIGIN, to: Placement::of(*item) }).collect();
    let placed = || entries.iter().zip(&shifts).map(|(entry, shift)| (&entry.analysis, shift));
    let mut model = KernelModel::default();
    for (analysis, shift) in placed() {
        model.kernels.extend(analysis.kernels.iter().map(|k| k.relocated(shift)));
        model.device_functions.extend(analysis.device_functions.iter().map(|f| f.relocated(shift)));
        model.launches.extend(analysis.launches.iter().map(|l| l.relocated(shift)));
        model.syntax_errors.extend(analysis.syntax_errors.iter().map(|e| e.relocated(shift)));
    }
    let kernels = KernelIndex::new(&model.kernels);
    for launch in &mut model.launches {
        launch.max_threads = kernels.max_threads_at(env, &launch.kernel, &launch.template_args);
    }
    // Every kernel's tunable sites before any launch's, as the tie order of the sort below.
    let mut define_sites = DefineSites { env, recorded: HashSet::new() };
    let events = placed()
        .flat_map(|(analysis, shift)| analysis.kernel_tunables.iter().map(move |e| (e, shift)))
        .chain(placed().flat_map(|(analysis, shift)| analysis.launch_tunables.iter().map(move |e| (e, shift))));
    for (event, shift) in events {
        match event {
            TunableEvent::Site(site) => model.tunables.push(site.relocated(shift)),
            TunableEvent::DefineUse { kernel, name, locals } => define_sites.note(kernel, name, locals, &mut model.tunables),
        }
    }
    model.tunables.sort_by_key(|s| (s.span.start_byte, s.kind));
    model.tunables.dedup_by(|a, b| a.span == b.span && a.kind == b.kind && a.kernel == b.kernel);
    model.defines = env.defines.clone();
    model
}

/// The kernel [`KernelModel::kernel`] finds for each name, without a scan per launch.
struct KernelIndex<'m> {
    by_name: HashMap<&'m str, &'m Kernel>,
}

impl<'m> KernelIndex<'m> {
    fn new(kernels: &'m [Kernel]) -> KernelIndex<'m> {
        let mut by_name: HashMap<&str, &Kernel> = HashMap::new();
        for kernel in kernels {
            // The first definition, else the first prototype.
            let found = by_name.entry(&kernel.name).or_insert(kernel);
            if kernel.is_definition && !found.is_definition {
                *found = kernel;
            }
        }
        KernelIndex { by_name }
    }

    /// The `__launch_bounds__` thread limit of `kernel` at a launch with `template_args`: they
    /// (or the parameters' defaults) stand for the kernel's template parameters.
    fn max_threads_at(&self, env: &Environment, kernel: &str, template_args: &[Expr]) -> Option<i64> {
        let kernel = self.by_name.get(kernel)?;
        let max_threads = &kernel.launch_bounds.as_ref()?.max_threads;
        if max_threads.value.is_some() {
            return max_threads.value;
        }
        let mut bound = Locals::default();
        for (i, param) in kernel.template_params.iter().enumerate() {
            let value = match template_args.get(i) {
                Some(arg) => arg.value,
                None => param.default.as_deref().and_then(|d| env.eval(d, &bound)),
            };
            bound.scalars.insert(param.name.clone(), value);
        }
        env.eval(&max_threads.text, &bound)
    }
}

/// The `#define` tunable sites, each recorded once per kernel.
struct DefineSites<'e> {
    env: &'e Environment,
    /// (kernel, define) pairs already recorded.
    recorded: HashSet<(String, String)>,
}

impl DefineSites<'_> {
    /// Records a `#define` with an integer value as a tunable site of `kernel`, once. A define
    /// computed from other constants (`#define TILE (BLOCK * ITEMS)`) is not a free choice: the
    /// defines it is computed from are recorded instead.
    fn note(&mut self, kernel: &str, name: &str, locals: &Locals, sites: &mut Vec<TunableSite>) {
        let env = self.env;
        if locals.contains_key(name) {
            return;
        }
        let Some(ConstantSource::Define(index)) = env.get(name) else { return };
        let define = &env.defines[*index];
        let (Some(value), Some(value_span)) = (define.value, define.value_span) else { return };
        // Marked before recursing, so that defines naming each other end the recursion.
        if !self.recorded.insert((kernel.to_string(), name.to_string())) {
            return;
        }
        let inputs: Vec<&str> = identifiers_in(&define.value_text).filter(|word| env.contains(word)).collect();
        if inputs.is_empty() {
            let text = define.name.clone();
            sites.push(TunableSite { kind: TunableKind::Define, kernel: Some(kernel.to_string()), span: value_span, text, value: Some(value) });
        }
        for input in inputs {
            self.note(kernel, input, locals, sites);
        }
    }
}

/// Where an item starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Placement {
    byte: usize,
    point: Point,
}

impl Placement {
    /// The start of the file: cached spans are relative to the item's start, as if it stood here.
    const ORIGIN: Placement = Placement { byte: 0, point: Point { line: 0, column: 0 } };

    fn of(item: Node) -> Placement {
        Placement { byte: item.start_byte(), point: item.start_position().into() }
    }
}

/// Moves an item's spans from one placement of the item to another. Only points on the item's
/// first line change column: the others count from the start of their own line.
struct Shift {
    from: Placement,
    to: Placement,
}

impl Shift {
    fn point(&self, p: Point) -> Point {
        let column = if p.line == self.from.point.line { p.column - self.from.point.column + self.to.point.column } else { p.column };
        Point { line: p.line - self.from.point.line + self.to.point.line, column }
    }

    fn span(&self, s: &mut Span) {
        s.start_byte = s.start_byte - self.from.byte + self.to.byte;
        s.end_byte = s.end_byte - self.from.byte + self.to.byte;
        s.start = self.point(s.start);
        s.end = self.point(s.end);
    }
}

/// A value holding spans that can be moved with its item.
trait Relocate: Clone {
    fn relocate(&mut self, shift: &Shift);

    fn relocated(&self, shift: &Shift) -> Self {
        let mut moved = self.clone();
        moved.relocate(shift);
        moved
    }
}

impl<T: Relocate> Relocate for Vec<T> {
    fn relocate(&mut self, shift: &Shift) {
        self.iter_mut().for_each(|v| v.relocate(shift));
    }
}

impl<T: Relocate> Relocate for Option<T> {
    fn relocate(&mut self, shift: &Shift) {
        if let Some(v) = self {
            v.relocate(shift);
        }
    }
}

impl Relocate for Span {
    fn relocate(&mut self, shift: &Shift) {
        shift.span(self);
    }
}

impl Relocate for Expr {
    fn relocate(&mut self, shift: &Shift) {
        self.span.relocate(shift);
    }
}

impl Relocate for Kernel {
    fn relocate(&mut self, shift: &Shift) {
        self.span.relocate(shift);
        self.name_span.relocate(shift);
        self.template_params.iter_mut().for_each(|p| p.span.relocate(shift));
        self.params.iter_mut().for_each(|p| p.span.relocate(shift));
        if let Some(bounds) = &mut self.launch_bounds {
            bounds.span.relocate(shift);
            bounds.max_threads.relocate(shift);
            bounds.min_blocks.relocate(shift);
        }
        for shared in &mut self.shared {
            shared.span.relocate(shift);
            shared.dims.relocate(shift);
        }
    }
}

impl Relocate for DeviceFunction {
    fn relocate(&mut self, shift: &Shift) {
        self.span.relocate(shift);
        self.name_span.relocate(shift);
    }
}

impl Relocate for LaunchSite {
    fn relocate(&mut self, shift: &Shift) {
        self.span.relocate(shift);
        self.callee_span.relocate(shift);
        self.template_args.relocate(shift);
        self.grid.span.relocate(shift);
        self.block.span.relocate(shift);
        self.shared_bytes.relocate(shift);
        self.stream.relocate(shift);
    }
}

impl Relocate for Define {
    fn relocate(&mut self, shift: &Shift) {
        self.span.relocate(shift);
        self.value_span.relocate(shift);
    }
}

impl Relocate for TunableSite {
    fn relocate(&mut self, shift: &Shift) {
        self.span.relocate(shift);
    }
}

impl Relocate for SyntaxError {
    fn relocate(&mut self, shift: &Shift) {
        self.span.relocate(shift);
    }
}

impl Relocate for TunableEvent {
    fn relocate(&mut self, shift: &Shift) {
        if let TunableEvent::Site(site) = self {
            site.relocate(shift);
        }
    }
}

impl Relocate for Declarations {
    fn relocate(&mut self, shift: &Shift) {
        self.defines.relocate(shift);
    }
}

impl Relocate for ItemAnalysis {
    fn relocate(&mut self, shift: &Shift) {
        self.kernels.relocate(shift);
        self.device_functions.relocate(shift);
        self.launches.relocate(shift);
        self.kernel_tunables.relocate(shift);
        self.launch_tunables.relocate(shift);
        self.syntax_errors.relocate(shift);
    }
}
