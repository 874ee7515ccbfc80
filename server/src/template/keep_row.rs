//! The row in registers: when a thread walks one row in two or more vector loops (rmsnorm's sum
//! of squares and its scaling, layernorm's mean, variance and output), the first loop keeps the
//! vectors it loads or stores in registers and the later loops read them from there instead of
//! from memory. A parameter says how many vectors a thread keeps; those past it are read again,
//! so any row length stays correct and the row length bounds nothing.

use tree_sitter::Node;

use super::strategy::{is_assigned, names_in, normalized, plain_element, walks_row, Access, SimpleLoop};
use super::{Note, Unit};
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
}

pub(super) struct KeptPointer {
    pub(super) pointer: String,
    pub(super) element: String,
    /// The loop that fills the registers: the first that touches the pointer.
    pub(super) filled_by: usize,
}

impl KeptRow {
    pub(super) fn walks(&self, l: &SimpleLoop) -> bool {
        self.loops.contains(&l.node.start_byte())
    }

    /// Whether loop `l` takes `pointer`'s vectors from the registers (an earlier loop filled
    /// them), rather than from memory.
    pub(super) fn reads_kept(&self, l: &SimpleLoop, pointer: &str) -> bool {
        self.pointers.iter().any(|p| p.pointer == pointer && p.filled_by < l.node.start_byte())
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

/// The first set of sibling loops that walk one row the same way and read a pointer again, or
/// `None` when no loop reads what an earlier one read or wrote; a note when one does but the
/// vectors cannot be kept with certainty.
pub(super) fn plan(unit: &Unit, loops: &[WalkedRow]) -> Result<Option<KeptRow>, Note> {
    let text = unit.text();
    let walks_alike = |a: &SimpleLoop, b: &SimpleLoop| {
        a.node.parent().map(|p| p.id()) == b.node.parent().map(|p| p.id())
            && [(&a.var_type, &b.var_type), (&a.start, &b.start), (&a.end, &b.end), (&a.step, &b.step)].iter().all(|(x, y)| normalized(x) == normalized(y))
    };
    let row_loops: Vec<&WalkedRow> = loops.iter().filter(|r| walks_row(unit, r.walk)).collect();
    for (at, first) in row_loops.iter().enumerate() {
        let group: Vec<&WalkedRow> = row_loops[at..].iter().copied().filter(|r| walks_alike(first.walk, r.walk)).collect();
        if group.len() < 2 || row_loops[..at].iter().any(|r| walks_alike(first.walk, r.walk)) {
            continue;
        }
        let pointers = read_again(&group);
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
        let filled_by = |pointer: &str| group.iter().find(|r| r.accesses.iter().any(|a| a.pointer == pointer)).expect("a kept pointer is in a loop").walk.node.start_byte();
        let pointers = pointers.into_iter().map(|(pointer, element)| KeptPointer { filled_by: filled_by(&pointer), pointer, element: plain_element(&element) }).collect();
        return Ok(Some(KeptRow { loops: group.iter().map(|r| r.walk.node.start_byte()).collect(), pointers }));
    }
    Ok(None)
}

/// The pointers that a loop of `group` reads after an earlier loop of it read or wrote them,
/// with their element types.
fn read_again(group: &[&WalkedRow]) -> Vec<(String, String)> {
    let mut seen: Vec<&str> = Vec::new();
    let mut again: Vec<(String, String)> = Vec::new();
    for row in group {
        for a in row.accesses {
            if a.read && seen.contains(&a.pointer.as_str()) && !again.iter().any(|(p, _)| *p == a.pointer) {
                again.push((a.pointer.clone(), a.element.clone()));
            }
        }
        seen.extend(row.accesses.iter().map(|a| a.pointer.as_str()));
    }
    again
}
