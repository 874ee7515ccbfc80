//! The row in registers: when a thread walks one row in two or more vector loops (rmsnorm's sum
//! of squares and its scaling, layernorm's mean, variance and output), the first loop keeps the
//! vectors it loads or stores in registers and the later loops read them from there instead of
//! from memory. A parameter says how many vectors a thread keeps; those past it are read again,
//! so any row length stays correct and the row length bounds nothing.

use tree_sitter::Node;

use super::strategy::{is_assigned, loop_start_with_pragmas, names_in, normalized, plain_element, walks_row, Access, SimpleLoop};
use super::{line_start, Note, Unit};
use crate::syntax::identifiers_in;

/// A row loop that vectorise rewrites, with the pointers it reads and writes at `[i]`.
pub(super) struct WalkedRow<'a, 't> {
    pub(super) walk: &'a SimpleLoop<'t>,
    pub(super) accesses: &'a [Access],
}

/// Loops of one row, walked the same way by each thread, and the pointers whose vectors a
/// thread keeps from the first loop that touches them to the later ones.
pub(super) struct KeptRow {
    /// Start bytes of the loops, in order.
    pub(super) loops: Vec<usize>,
    pub(super) pointers: Vec<KeptPointer>,
    /// The loops (start bytes) that take a pointer's vectors from the registers: in every
    /// preprocessor branch where the loop is compiled, an earlier loop of the row touched it.
    kept_reads: Vec<(usize, String)>,
    /// Where the registers are declared: the start of the line of the first loop, or of the
    /// outermost `#if` around it, so that the loops of every branch see them.
    pub(super) declare_at: usize,
}

pub(super) struct KeptPointer {
    pub(super) pointer: String,
    pub(super) element: String,
}

impl KeptRow {
    pub(super) fn walks(&self, l: &SimpleLoop) -> bool {
        self.loops.contains(&l.node.start_byte())
    }

    /// Whether loop `l` takes `pointer`'s vectors from the registers (an earlier loop filled
    /// them), rather than from memory.
    pub(super) fn reads_kept(&self, l: &SimpleLoop, pointer: &str) -> bool {
        self.kept_reads.iter().any(|(at, p)| *at == l.node.start_byte() && p == pointer)
    }

    /// Whether a loop after `l` takes `pointer`'s vectors from the registers: what `l` loads or
    /// stores of it is worth keeping.
    pub(super) fn read_later(&self, l: &SimpleLoop, pointer: &str) -> bool {
        self.kept_reads.iter().any(|(at, p)| *at > l.node.start_byte() && p == pointer)
    }

    /// Where the loops stand in the user's file: `lines 33 and 47`, or `line 72` for loops an
    /// earlier rewrite wrote in place of one.
    pub(super) fn lines(&self, unit: &Unit) -> String {
        let mut lines: Vec<String> = self.loops.iter().map(|at| unit.line_of(*at).to_string()).collect();
        lines.dedup();
        match lines.split_last() {
            Some((last, [])) => format!("line {last}"),
            Some((last, earlier)) => format!("lines {} and {last}", earlier.join(", ")),
            None => String::new(),
        }
    }

    pub(super) fn kept(&self, pointer: &str) -> Option<&KeptPointer> {
        self.pointers.iter().find(|p| p.pointer == pointer)
    }
}

/// The first set of loops that walk one row the same way, in one block (across the branches of
/// an `#if`, such as online softmax's one pass and its two, before the pass that writes), and
/// read a pointer again; `None` when no loop reads what an earlier one read or wrote; a note
/// when one does but the vectors cannot be kept with certainty.
pub(super) fn plan(unit: &Unit, loops: &[WalkedRow]) -> Result<Option<KeptRow>, Note> {
    let text = unit.text();
    let walks_alike = |a: &SimpleLoop, b: &SimpleLoop| {
        enclosing_block(a.node).map(|p| p.id()) == enclosing_block(b.node).map(|p| p.id())
            && [(&a.var_type, &b.var_type), (&a.start, &b.start), (&a.end, &b.end), (&a.step, &b.step)].iter().all(|(x, y)| normalized(x) == normalized(y))
    };
    let row_loops: Vec<&WalkedRow> = loops.iter().filter(|r| walks_row(unit, r.walk)).collect();
    for (at, first) in row_loops.iter().enumerate() {
        let group: Vec<&WalkedRow> = row_loops[at..].iter().copied().filter(|r| walks_alike(first.walk, r.walk)).collect();
        if group.len() < 2 || row_loops[..at].iter().any(|r| walks_alike(first.walk, r.walk)) {
            continue;
        }
        let Some(kept_reads) = kept_reads(&group) else { continue };
        let mut pointers: Vec<(String, String)> = Vec::new();
        for (_, pointer) in &kept_reads {
            let access = group.iter().flat_map(|r| r.accesses).find(|a| a.pointer == *pointer).expect("a kept pointer is in a loop");
            if !pointers.iter().any(|(p, _)| p == pointer) {
                pointers.push((pointer.clone(), access.element.clone()));
            }
        }
        if pointers.is_empty() {
            continue;
        }
        let span = first.walk.node.start_byte()..group.last().expect("two or more loops").walk.node.end_byte();
        let line = Some(unit.line_of(span.start));
        let inside_group = |n: Node| group.iter().any(|r| r.walk.node.byte_range().contains(&n.start_byte()));
        let body = unit.body().expect("a kernel with loops has a body");
        for name in identifiers_in(&first.walk.end).filter(|n| !n.chars().next().is_some_and(|c| c.is_ascii_digit())) {
            if names_in(text, body, name).iter().any(|n| span.contains(&n.start_byte()) && is_assigned(text, *n)) {
                return Err(Note { line, message: format!("`{name}`, the row's length, changes between the loops that read the row: the row is not kept in registers") });
            }
        }
        for (pointer, _) in &pointers {
            let uses = names_in(text, body, pointer);
            if uses.iter().any(|n| is_assigned(text, *n)) {
                return Err(Note { line, message: format!("`{pointer}` is assigned in the kernel: the row it points to is not kept in registers") });
            }
            if let Some(other) = uses.iter().find(|n| span.contains(&n.start_byte()) && !inside_group(**n)) {
                return Err(Note {
                    line,
                    message: format!("`{pointer}` is used at line {} between the loops that read its row again: the row is not kept in registers", unit.line_of(other.start_byte())),
                });
            }
        }
        let pointers = pointers.into_iter().map(|(pointer, element)| KeptPointer { pointer, element: plain_element(&element) }).collect();
        let anchor = outermost_branch(first.walk.node).map_or_else(|| loop_start_with_pragmas(text, first.walk.node.start_byte()), |b| line_start(text, b.start_byte()));
        return Ok(Some(KeptRow { loops: group.iter().map(|r| r.walk.node.start_byte()).collect(), pointers, kept_reads, declare_at: anchor }));
    }
    Ok(None)
}

/// The preprocessor's nodes around a statement (`#if`s and their `#elif`/`#else` parts),
/// innermost first, up to the block it is in.
fn preprocessor_ancestors(node: Node) -> impl Iterator<Item = Node> {
    std::iter::successors(node.parent(), |p| p.parent()).take_while(|p| p.kind().starts_with("preproc_"))
}

/// The `#if`s (and `#ifdef`s) around a statement within its block, innermost first.
fn ifs_around(node: Node) -> impl Iterator<Item = Node> {
    preprocessor_ancestors(node).filter(|p| matches!(p.kind(), "preproc_if" | "preproc_ifdef"))
}

/// The block a statement is in, through the preprocessor's branches, which are no scope.
fn enclosing_block(node: Node) -> Option<Node> {
    preprocessor_ancestors(node).last().unwrap_or(node).parent()
}

/// The outermost `#if` (or `#ifdef`) around `node` within its block.
fn outermost_branch(node: Node) -> Option<Node> {
    ifs_around(node).last()
}

/// Most combinations of preprocessor branches a row's loops are read under.
const MAX_CONFIGURATIONS: usize = 64;

/// The (loop, pointer) pairs where the loop may read the pointer's vectors from registers: in
/// every combination of the `#if` branches around the loops where that loop is compiled, an
/// earlier loop of `group` touches the pointer (and so loaded or stored its vectors there).
/// `None` when the branches have too many combinations to read.
fn kept_reads(group: &[&WalkedRow]) -> Option<Vec<(usize, String)>> {
    let around: Vec<Vec<Branching>> = group.iter().map(|row| branchings_around(row.walk.node)).collect();
    let mut branchings: Vec<&Branching> = Vec::new();
    for b in around.iter().flatten() {
        if !branchings.iter().any(|a| a.id == b.id) {
            branchings.push(b);
        }
    }
    let count = branchings.iter().try_fold(1usize, |n, b| n.checked_mul(b.options).filter(|n| *n <= MAX_CONFIGURATIONS))?;
    let mut reads: Vec<(usize, String)> = Vec::new();
    let mut first_touch: Vec<(usize, String)> = Vec::new();
    for configuration in 0..count {
        let mut chosen = Vec::with_capacity(branchings.len());
        let mut rest = configuration;
        for b in &branchings {
            chosen.push((b.id, rest % b.options));
            rest /= b.options;
        }
        let compiled = |index: usize| around[index].iter().all(|b| chosen.contains(&(b.id, b.taken)));
        let mut touched: Vec<&str> = Vec::new();
        for row in group.iter().enumerate().filter(|(index, _)| compiled(*index)).map(|(_, row)| row) {
            let start = row.walk.node.start_byte();
            for a in row.accesses {
                let pair = (start, a.pointer.clone());
                if touched.contains(&a.pointer.as_str()) {
                    if a.read && !reads.contains(&pair) {
                        reads.push(pair);
                    }
                } else if !first_touch.contains(&pair) {
                    first_touch.push(pair);
                }
            }
            touched.extend(row.accesses.iter().map(|a| a.pointer.as_str()));
        }
    }
    // A loop that is the first to touch the pointer in some combination reads it from memory.
    reads.retain(|pair| !first_touch.contains(pair));
    Some(reads)
}

/// One `#if` around a loop: its branches, and the one the loop is in.
struct Branching {
    id: usize,
    /// How many branches: the `#if`, each `#elif` and the `#else`, or an empty one where
    /// there is no `#else`.
    options: usize,
    /// The branch the loop is in.
    taken: usize,
}

/// The `#if`s around `node` within its block, innermost first.
fn branchings_around(node: Node) -> Vec<Branching> {
    ifs_around(node)
        .map(|p| {
            // The chain of parts: the `#if` itself, then each `alternative` in turn.
            let mut parts = vec![p];
            while let Some(next) = parts.last().and_then(|last| last.child_by_field_name("alternative")) {
                parts.push(next);
            }
            let has_else = parts.last().is_some_and(|last| last.kind() == "preproc_else");
            // The parts nest (each `alternative` is inside the part before it): the loop's is
            // the innermost that holds it.
            let taken = parts.iter().rposition(|part| part.byte_range().contains(&node.start_byte())).expect("the loop is in its #if");
            Branching { id: p.id(), options: parts.len() + usize::from(!has_else), taken }
        })
        .collect()
}
