//! Thread tiles for GEMM-like kernels: a 2-D block whose threads each compute one output from
//! `__shared__` tiles (`acc += As[ty][k] * Bs[k][tx]` between barriers) becomes a block of
//! `TM × TN` times fewer threads, each doing the work of the `TM × TN` adjacent threads of the
//! original block it stands for (`threadIdx.y * TM + tm`, `threadIdx.x * TN + tn`: its outputs
//! are a block of the tile, whose `Bs[k][…]` the compiler may load as one vector; spreading
//! them over the block, `threadIdx.x + tn * blockDim.x`, measured 6% slower on the sgemm
//! example, docs/benchmarks.md). The per-thread values that
//! live across barriers become `[TM][TN]` arrays in registers, and a loop with a thread-independent
//! header (the `k` loop) takes the tile's loops inside it, so each step loads `TM` values of one
//! tile and `TN` of the other for `TM × TN` products. The launches' block is divided by the tile
//! and the grid stays. The original body stays under `#if TM == 1 && TN == 1`, the default.

use std::collections::BTreeSet;

use tree_sitter::Node;

use super::layout::{indent_step, leading_whitespace, pragmas_at_margin};
use super::strategy::{enclosing_function, is_assigned, names_in};
use super::{line_start, Note, Outcome, Rewrite, TextEdit, Transform, Unit};
use crate::spec::{ParamKind, ParamSpec};
use crate::syntax::{descendants, identifiers_in, LaunchSite};
use crate::syntax::host::declared_names;

pub struct ThreadTiles;

/// Calls that exchange or combine values between threads (a warp's lanes, or the block's in
/// `__syncthreads_count`), or synchronise less than the block: they depend on which threads
/// run together, which the tile changes.
const LANE_WORDS: [&str; 11] = ["__shfl", "__ballot", "__activemask", "__any", "__all", "__match", "__syncwarp", "__syncthreads_", "asm", "__asm__", "cooperative_groups"];

/// The tile sizes offered along each axis.
const TILE_VALUES: [i64; 4] = [1, 2, 4, 8];

impl Transform for ThreadTiles {
    fn name(&self) -> &'static str {
        "thread-tiles"
    }

    fn apply(&self, unit: &Unit) -> Outcome {
        let Some(body) = unit.body() else { return Outcome::NotApplicable("the kernel has no body".into()) };
        let text = unit.text();
        if tiled_already(unit, body) {
            return Outcome::NotApplicable("the kernel's threads compute tiles already".into());
        }
        if !gemm_like(unit, body) {
            return Outcome::NotApplicable("no 2-D block whose threads accumulate products of `__shared__` tiles between barriers".into());
        }
        let line = unit.line_of(body.start_byte());
        let refuse = |message: String| Outcome::Refused(Note { line: Some(line), message: format!("{message}: no thread tiles") });
        if let Err(why) = refusal(unit, body) {
            return refuse(why);
        }
        let launches: Vec<&LaunchSite> = unit.model.launches_of(&unit.kernel.name).collect();
        if launches.is_empty() {
            return refuse("no launch in this file to give a smaller block".into());
        }
        let (rows, cols) = (unit.fresh_name("TM"), unit.fresh_name("TN"));
        let (block_edits, restrictions) = match divided_blocks(unit, &launches, &rows, &cols) {
            Ok(found) => found,
            Err(why) => return refuse(why),
        };
        let tiled = match Tiling::new(unit, body, &rows, &cols).and_then(|t| t.body_text()) {
            Ok(tiled) => tiled,
            Err(why) => return refuse(why),
        };
        let mut rewrite = Rewrite { restrictions, ..Rewrite::default() };
        let first_launch = launches.iter().map(|l| l.span.start_byte).min().expect("checked non-empty");
        for name in [&rows, &cols] {
            rewrite.edits.push(if first_launch < unit.kernel.span.start_byte { unit.define_block_at(first_launch, name, "1") } else { unit.define_block(name, "1") });
        }
        let inner = body.start_byte() + 1..body.end_byte() - 1;
        let lines = |block: &str| format!("{}{}{}", if block.starts_with('\n') { "" } else { "\n" }, block, if block.ends_with('\n') { "" } else { "\n" });
        let new_text = format!("\n#if {rows} == 1 && {cols} == 1{}#else{}#endif\n", lines(&text[inner.clone()]), lines(&tiled));
        rewrite.edits.push(TextEdit { range: inner, new_text });
        rewrite.edits.extend(block_edits);
        for (name, axis) in [(&rows, "rows (y)"), (&cols, "columns (x)")] {
            let origin = format!("{axis} of the block's outputs each thread computes, from line {line}; the block is divided by it; 1 is the original one output per thread");
            rewrite.params.push(ParamSpec { name: name.clone(), kind: ParamKind::Define, default: 1, values: TILE_VALUES.to_vec(), origin });
        }
        rewrite.summary = format!("each thread computes `{rows}` × `{cols}` outputs of the block's tile (line {line}), the block divided by them");
        Outcome::Applied(rewrite)
    }
}

/// Whether an earlier templatize tiled the kernel: its body is `#if A == 1 && B == 1`, the
/// original, `#else`, the tile, of two parameters of the file.
fn tiled_already(unit: &Unit, body: Node) -> bool {
    let text = unit.text();
    let Some(first) = body.named_child(0).filter(|n| n.kind() == "preproc_if") else { return false };
    let condition = first.child_by_field_name("condition").map(|c| &text[c.byte_range()]).unwrap_or("");
    let is_define = |name: &str| unit.model.defines.iter().any(|d| d.name == name.trim());
    let switches: Vec<Option<&str>> = condition.split("&&").map(|part| part.split_once("==").filter(|(_, v)| v.trim() == "1").map(|(n, _)| n)).collect();
    switches.len() == 2 && switches.iter().all(|s| s.is_some_and(is_define))
}

/// Whether the kernel is the shape thread tiles are for: both thread axes, a barrier, and a loop
/// accumulating a product that reads a `__shared__` array.
fn gemm_like(unit: &Unit, body: Node) -> bool {
    let text = unit.text();
    let here = &text[body.byte_range()];
    let uses = |axis: &str| here.contains(&format!("threadIdx.{axis}"));
    let shared: Vec<&str> = unit.kernel.shared.iter().map(|a| a.name.as_str()).collect();
    let accumulates = descendants(body).filter(|n| n.kind() == "assignment_expression").any(|a| {
        let op = a.child_by_field_name("operator").map(|o| &text[o.byte_range()]);
        let right = a.child_by_field_name("right").map(|r| &text[r.byte_range()]).unwrap_or("");
        let in_loop = std::iter::successors(a.parent(), |n| n.parent()).any(|n| n.kind() == "for_statement");
        in_loop && op == Some("+=") && right.contains('*') && identifiers_in(right).any(|w| shared.contains(&w))
    });
    uses("x") && uses("y") && contains_barrier(text, body) && accumulates
}

/// Why the kernel's threads cannot be tiled, if they cannot.
fn refusal(unit: &Unit, body: Node) -> Result<(), String> {
    let text = unit.text();
    let here = &text[body.byte_range()];
    if here.contains("threadIdx.z") || here.contains("blockDim.z") {
        return Err("the block's third axis is used".into());
    }
    if let Some(word) = identifiers_in(here).find(|w| LANE_WORDS.iter().any(|p| w.starts_with(p)) || *w == "volatile") {
        return Err(format!("`{word}` depends on which threads run together"));
    }
    if here.contains("extern __shared__") || unit.kernel.shared.iter().any(|a| a.dims.is_empty()) {
        return Err("a dynamic `__shared__` array is sized by the host for the original block".into());
    }
    if let Some(jump) = descendants(body).find(|n| matches!(n.kind(), "return_statement" | "goto_statement")) {
        return Err(format!("`{}` at line {} leaves the kernel for one thread, not for the tile", &text[jump.byte_range()], unit.line_of(jump.start_byte())));
    }
    if let Some(name) = thread_dependent_callee(unit, body) {
        return Err(format!("`{name}` reads the thread index or the block size itself"));
    }
    Ok(())
}

/// A function of the file the kernel calls that reads `threadIdx` or `blockDim` or waits at a
/// barrier: the tile cannot rename what it reads.
fn thread_dependent_callee(unit: &Unit, body: Node) -> Option<String> {
    let text = unit.text();
    let root = unit.doc.tree()?.root_node();
    let called: BTreeSet<&str> = descendants(body).filter(|n| n.kind() == "call_expression").filter_map(|c| c.child_by_field_name("function")).map(|f| &text[f.byte_range()]).collect();
    descendants(root).filter(|n| n.kind() == "function_definition").find_map(|f| {
        let name = crate::syntax::host::function_name(text, f)?;
        let reads = identifiers_in(&text[f.byte_range()]).any(|w| matches!(w, "threadIdx" | "blockDim" | "__syncthreads"));
        (called.contains(name) && name != unit.kernel.name && reads).then(|| name.to_string())
    })
}

fn contains_barrier(text: &str, node: Node) -> bool {
    identifiers_in(&text[node.byte_range()]).any(|w| w == "__syncthreads")
}

fn is_barrier(text: &str, node: Node) -> bool {
    node.kind() == "expression_statement" && text[node.byte_range()].split_whitespace().collect::<String>() == "__syncthreads();"
}

/// A comment, or preprocessor lines that only hold `#pragma`s: they belong to the statement
/// after them.
fn is_attached(text: &str, node: Node) -> bool {
    let pragmas_only = || text[node.byte_range()].lines().map(str::trim).filter(|l| !l.is_empty()).all(|l| l.starts_with("#if") || l.starts_with("#else") || l.starts_with("#endif") || l.starts_with("#pragma"));
    node.kind() == "comment" || node.kind().starts_with("preproc") && pragmas_only()
}

/// The kernel body taken apart for the tile: which locals differ between threads, and the
/// names and sizes of the tile.
struct Tiling<'u, 't> {
    unit: &'u Unit<'t>,
    body: Node<'t>,
    rows: &'u str,
    cols: &'u str,
    /// Locals whose value differs between the threads of the original block.
    per_thread: BTreeSet<String>,
    /// The per-thread locals that become `[TM][TN]` arrays.
    promoted: BTreeSet<String>,
    /// Locals that name the thread's index (`int tx = threadIdx.x;`): each tile loop declares
    /// them for the output it computes.
    aliases: Vec<IndexAlias<'t>>,
    step: String,
    /// Whether the file writes `#pragma` at the start of the line, as the preprocessor's
    /// lines often are, rather than indented like the code.
    pragmas_at_margin: bool,
    names: TileNames,
}

/// `int tx = threadIdx.x;` at the kernel's top, never assigned again.
struct IndexAlias<'t> {
    declaration: Node<'t>,
    name: String,
    axis: &'static str,
    type_text: String,
}

/// The names the tile's loops use, free in the kernel.
struct TileNames {
    row: String,
    col: String,
    thread_y: String,
    thread_x: String,
}

impl<'u, 't> Tiling<'u, 't> {
    fn new(unit: &'u Unit<'t>, body: Node<'t>, rows: &'u str, cols: &'u str) -> Result<Self, String> {
        let text = unit.text();
        let names = TileNames { row: unit.local_name("tm"), col: unit.local_name("tn"), thread_y: unit.local_name("thread_y"), thread_x: unit.local_name("thread_x") };
        let per_thread = per_thread_locals(unit, body);
        let aliases = index_aliases(text, body);
        let mut tiling = Tiling { unit, body, rows, cols, per_thread, promoted: BTreeSet::new(), aliases, step: indent_step(text), pragmas_at_margin: pragmas_at_margin(text), names };
        let mut declared: BTreeSet<&str> = BTreeSet::new();
        for declaration in descendants(body).filter(|n| n.kind() == "declaration") {
            for name in declared_names(text, declaration) {
                if !declared.insert(name) && tiling.per_thread.contains(name) {
                    return Err(format!("`{name}` is declared twice in the kernel"));
                }
            }
        }
        tiling.promoted = tiling.values_read_after_their_run(body);
        for alias in &tiling.aliases {
            tiling.promoted.remove(&alias.name);
        }
        Ok(tiling)
    }

    /// The per-thread locals declared in a run of per-thread statements and read after it
    /// (`acc`, summed in the `k` loop and stored at the end): they live across the tile's loops,
    /// one for each output.
    fn values_read_after_their_run(&self, body: Node<'t>) -> BTreeSet<String> {
        let text = self.text();
        let mut promoted = BTreeSet::new();
        for declaration in descendants(body).filter(|n| n.kind() == "declaration" && self.runs_per_thread(*n)) {
            let Some(parent) = declaration.parent().filter(|p| p.kind() == "compound_statement") else { continue };
            let siblings: Vec<Node> = parent.named_children(&mut parent.walk()).collect();
            let at = siblings.iter().position(|n| *n == declaration).expect("a child of its parent");
            let run_end = siblings[at..].iter().take_while(|n| is_attached(text, **n) || self.runs_per_thread(**n)).last().map_or(declaration.end_byte(), |n| n.end_byte());
            for name in declared_names(text, declaration) {
                if names_in(text, body, name).iter().any(|n| n.start_byte() >= run_end) {
                    promoted.insert(name.to_string());
                }
            }
        }
        promoted
    }

    fn text(&self) -> &'t str {
        self.unit.text()
    }

    /// The tiled body: the text between the braces, edited.
    fn body_text(&self) -> Result<String, String> {
        let mut edits = Vec::new();
        self.level(self.body, &mut edits)?;
        let inner = self.body.start_byte() + 1..self.body.end_byte() - 1;
        let mut out = self.text()[inner.clone()].to_string();
        edits.sort_by_key(|e: &TextEdit| std::cmp::Reverse(e.range.start));
        for edit in edits {
            out.replace_range(edit.range.start - inner.start..edit.range.end - inner.start, &edit.new_text);
        }
        Ok(out)
    }

    /// Edits for the statements of a block that every thread runs alike (the kernel's body, the
    /// body of a loop with barriers): runs of per-thread statements become the tile's loops,
    /// barriers and thread-independent declarations stay once, statements holding barriers
    /// are followed inside.
    fn level(&self, block: Node<'t>, edits: &mut Vec<TextEdit>) -> Result<(), String> {
        let text = self.text();
        let statements: Vec<Node> = if block.kind() == "compound_statement" { block.named_children(&mut block.walk()).collect() } else { vec![block] };
        let mut run: Vec<Node> = Vec::new();
        let mut attached: Vec<Node> = Vec::new();
        for statement in statements {
            if is_attached(text, statement) {
                attached.push(statement);
                continue;
            }
            if self.runs_per_thread(statement) {
                run.append(&mut attached);
                run.push(statement);
                continue;
            }
            self.close_run(&mut run, edits)?;
            attached.clear();
            if contains_barrier(text, statement) && !is_barrier(text, statement) {
                self.followed_inside(statement, edits)?;
            } else {
                edits.extend(self.block_size_edits(statement));
            }
        }
        run.append(&mut attached);
        self.close_run(&mut run, edits)
    }

    /// Whether a statement is run once per thread of the original block: anything but a
    /// barrier, a statement holding one, a `__shared__` declaration or a declaration of values
    /// the same in every thread.
    fn runs_per_thread(&self, statement: Node) -> bool {
        let text = self.text();
        if contains_barrier(text, statement) {
            return false;
        }
        if statement.kind() == "declaration" {
            let shared = text[statement.byte_range()].contains("__shared__");
            return !shared && declared_names(text, statement).iter().any(|n| self.per_thread.contains(*n));
        }
        true
    }

    /// A loop, `if` or block holding a barrier: its header must be the same in every thread,
    /// and its body is a level of its own.
    fn followed_inside(&self, statement: Node<'t>, edits: &mut Vec<TextEdit>) -> Result<(), String> {
        let text = self.text();
        let line = self.unit.line_of(statement.start_byte());
        let header_parts: Vec<Node> = match statement.kind() {
            "for_statement" => ["initializer", "condition", "update"].iter().filter_map(|f| statement.child_by_field_name(f)).collect(),
            "while_statement" | "do_statement" | "if_statement" => statement.child_by_field_name("condition").into_iter().collect(),
            "compound_statement" => Vec::new(),
            other => return Err(format!("a barrier inside a `{other}` at line {line}")),
        };
        if let Some(part) = header_parts.iter().find(|p| !self.is_uniform(**p)) {
            return Err(format!("a barrier under `{}` at line {line}, which differs between threads", &text[part.byte_range()]));
        }
        for part in header_parts {
            edits.extend(self.block_size_edits(part));
        }
        let mut bodies: Vec<Node> = match statement.kind() {
            "compound_statement" => vec![statement],
            "if_statement" => statement.child_by_field_name("consequence").into_iter().collect(),
            _ => statement.child_by_field_name("body").into_iter().collect(),
        };
        if let Some(alternative) = statement.child_by_field_name("alternative") {
            bodies.extend(alternative.named_children(&mut alternative.walk()).filter(|n| n.kind() != "comment"));
        }
        for body in bodies {
            match body.kind() {
                "compound_statement" => self.level(body, edits)?,
                _ if contains_barrier(text, body) && !is_barrier(text, body) => self.followed_inside(body, edits)?,
                _ if self.runs_per_thread(body) => {
                    let mut run = vec![body];
                    self.close_run(&mut run, edits)?;
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Replaces a run of per-thread statements by the tile's loops around them.
    fn close_run(&self, run: &mut Vec<Node<'t>>, edits: &mut Vec<TextEdit>) -> Result<(), String> {
        let Some(first) = run.iter().find(|n| !n.kind().starts_with("preproc")).or(run.first()).copied() else { return Ok(()) };
        let text = self.text();
        let start = line_start(text, run[0].start_byte());
        let end = run.last().expect("not empty").end_byte();
        let indent = leading_whitespace(&text[line_start(text, first.start_byte())..]).to_string();
        let new_text = self.run_text(run, &indent)?;
        // A run that leaves nothing takes its lines with it, and one of the blank lines around.
        let end = if new_text.is_empty() && text[end..].starts_with('\n') { end + 1 } else { end };
        let start = if new_text.is_empty() && text[..start].ends_with("\n\n") && text[end..].starts_with('\n') { start - 1 } else { start };
        edits.push(TextEdit { range: start..end, new_text: new_text.trim_end_matches('\n').to_string() });
        run.clear();
        Ok(())
    }

    /// The text of a run at `indent`: a loop whose header is the same in every thread holds the
    /// tile's loops (its body a run of its own); anything else sits inside them.
    fn run_text(&self, run: &[Node<'t>], indent: &str) -> Result<String, String> {
        let text = self.text();
        let (attached, rest): (Vec<Node>, Vec<Node>) = run.iter().partition(|n| is_attached(text, **n));
        if let ([lead], true) = (rest.as_slice(), attached.iter().all(|n| n.end_byte() <= rest[0].start_byte())) {
            if let Some(body) = self.interchangeable(*lead) {
                let mut out = String::new();
                for node in &attached {
                    out.push_str(&self.statement_text(*node, indent, indent, true));
                    out.push('\n');
                }
                let header = self.rewritten(*lead, lead.start_byte()..body.start_byte(), true);
                let statements: Vec<Node> = if body.kind() == "compound_statement" { body.named_children(&mut body.walk()).collect() } else { vec![body] };
                let inner_indent = format!("{indent}{}", self.step);
                out.push_str(&format!("{indent}{} {{\n{}\n{indent}}}", header.trim_end(), self.run_text(&statements, &inner_indent)?));
                return Ok(out);
            }
        }
        self.tile_loops(run, indent)
    }

    /// A `for` whose header every thread runs alike and whose body does not jump out of it:
    /// its body, which may run for all of a thread's outputs at each step.
    fn interchangeable(&self, node: Node<'t>) -> Option<Node<'t>> {
        if node.kind() != "for_statement" {
            return None;
        }
        let header_uniform = ["initializer", "condition", "update"].iter().filter_map(|f| node.child_by_field_name(f)).all(|p| self.is_uniform(p));
        let body = node.child_by_field_name("body")?;
        let jumps = descendants(body).any(|n| matches!(n.kind(), "break_statement" | "continue_statement") && innermost_loop(n) == Some(node));
        (header_uniform && !jumps).then_some(body)
    }

    /// The tile's two loops around `run`, after the arrays of the values the run declares and
    /// later statements read.
    fn tile_loops(&self, run: &[Node<'t>], indent: &str) -> Result<String, String> {
        let text = self.text();
        let TileNames { row, col, thread_y, thread_x } = &self.names;
        let (rows, cols, step) = (self.rows, self.cols, &self.step);
        let inner = format!("{indent}{step}{step}");
        let alias_of = |n: &Node| self.aliases.iter().find(|a| a.declaration == *n);
        let statements: Vec<Node> = run.iter().filter(|n| alias_of(n).is_none()).copied().collect();
        if statements.iter().all(|n| is_attached(text, *n)) {
            // Only the thread's index names (`int tx = threadIdx.x;`, under their comment),
            // which each tile loop declares for itself.
            return Ok(String::new());
        }
        let mut out = String::new();
        let promoted = |n: &Node| n.kind() == "declaration" && declared_names(text, *n).iter().any(|name| self.promoted.contains(*name));
        for declaration in statements.iter().filter(|n| promoted(n)) {
            out.push_str(&format!("{indent}{}\n", self.array_declaration(*declaration)?));
        }
        let pragma = |at: &str| format!("{}#pragma unroll\n", if self.pragmas_at_margin { "" } else { at });
        out.push_str(&format!("{}{indent}for (int {row} = 0; {row} < {rows}; ++{row}) {{\n", pragma(indent)));
        out.push_str(&format!("{}{indent}{step}for (int {col} = 0; {col} < {cols}; ++{col}) {{\n", pragma(&format!("{indent}{step}"))));
        let run_text: String = statements.iter().map(|n| &text[n.byte_range()]).collect();
        for (axis, tile, index, name) in [("y", rows, row, thread_y), ("x", cols, col, thread_x)] {
            if run_text.contains(&format!("threadIdx.{axis}")) {
                out.push_str(&format!("{inner}const unsigned int {name} = threadIdx.{axis} * {tile} + {index};\n"));
            }
            for alias in self.aliases.iter().filter(|a| a.axis == axis && identifiers_in(&run_text).any(|w| w == a.name)) {
                out.push_str(&format!("{inner}{} {} = threadIdx.{axis} * {tile} + {index};\n", alias.type_text, alias.name));
            }
        }
        for node in &statements {
            let original_indent = leading_whitespace(&text[line_start(text, node.start_byte())..]);
            let statement = if promoted(node) { self.assignment(*node, &inner)? } else { self.statement_text(*node, original_indent, &inner, false) };
            if !statement.trim().is_empty() {
                out.push_str(&statement);
                out.push('\n');
            }
        }
        out.push_str(&format!("{indent}{step}}}\n{indent}}}"));
        Ok(out)
    }

    /// `T name[TM][TN];` for a per-thread declaration `T name = value;` (`T *p[TM][TN];` for a
    /// pointer).
    fn array_declaration(&self, declaration: Node) -> Result<String, String> {
        let text = self.text();
        let line = self.unit.line_of(declaration.start_byte());
        let declarators: Vec<Node> = declaration.children_by_field_name("declarator", &mut declaration.walk()).collect();
        let [declarator] = declarators.as_slice() else { return Err(format!("the declaration at line {line} declares several names")) };
        let target = declarator.child_by_field_name("declarator").filter(|_| declarator.kind() == "init_declarator").unwrap_or(*declarator);
        let mut name = target;
        while name.kind() == "pointer_declarator" {
            name = name.child_by_field_name("declarator").unwrap_or(name);
            if name == target {
                break;
            }
        }
        if name.kind() != "identifier" {
            return Err(format!("`{}` at line {line} is not a plain variable or pointer", &text[target.byte_range()]));
        }
        let pointer = text[target.start_byte()..name.start_byte()].trim();
        if pointer.contains("const") {
            return Err(format!("`{}` at line {line} is a constant pointer, which the tile's loops would assign", &text[target.byte_range()]));
        }
        // `const int row = …` is assigned in the loops; `const float* a_row` stays a pointer to
        // constants.
        let type_text = text[declaration.start_byte()..declarator.start_byte()].split_whitespace().filter(|w| !pointer.is_empty() || *w != "const").collect::<Vec<_>>().join(" ");
        Ok(format!("{type_text}{pointer} {}[{}][{}];", &text[name.byte_range()], self.rows, self.cols))
    }

    /// A per-thread declaration `T name = value;` inside the tile's loops: `name[tm][tn] = value;`,
    /// or nothing when it has no value.
    fn assignment(&self, declaration: Node, inner: &str) -> Result<String, String> {
        let text = self.text();
        let Some(declarator) = declaration.child_by_field_name("declarator").filter(|d| d.kind() == "init_declarator") else { return Ok(String::new()) };
        let (Some(&name), Some(value)) = (declared_names(text, declarator).first(), declarator.child_by_field_name("value")) else { return Ok(String::new()) };
        let value = self.rewritten(value, value.byte_range(), false);
        Ok(format!("{inner}{name}[{}][{}] = {value};", self.names.row, self.names.col))
    }

    /// A statement's text moved from `from` to `to` indentation, its thread indices and
    /// per-thread values renamed for one output of the tile (or, `uniform`, its block sizes only).
    fn statement_text(&self, node: Node, from: &str, to: &str, uniform: bool) -> String {
        if node.kind().starts_with("preproc") {
            return self.text()[line_start(self.text(), node.start_byte())..node.end_byte()].trim_end().to_string();
        }
        let rewritten = self.rewritten(node, node.byte_range(), uniform);
        let mut lines = rewritten.split('\n');
        let mut out = format!("{to}{}", lines.next().unwrap_or_default());
        for line in lines {
            out.push('\n');
            match line.strip_prefix(from) {
                Some(rest) if !line.starts_with('#') => out.push_str(&format!("{to}{rest}")),
                _ => out.push_str(line),
            }
        }
        out
    }

    /// The text of `range` (inside `node`) with `blockDim` the original block's, and unless
    /// `uniform`, `threadIdx` the tile output's and per-thread locals indexed by it.
    fn rewritten(&self, node: Node, range: std::ops::Range<usize>, uniform: bool) -> String {
        let text = self.text();
        let mut edits: Vec<TextEdit> = self.block_size_edits(node).into_iter().filter(|e| range.contains(&e.range.start)).collect();
        if !uniform {
            for n in descendants(node).filter(|n| range.contains(&n.start_byte())) {
                let here = &text[n.byte_range()];
                let replacement = match n.kind() {
                    "field_expression" if here == "threadIdx.y" => self.names.thread_y.clone(),
                    "field_expression" if here == "threadIdx.x" => self.names.thread_x.clone(),
                    "identifier" if self.promoted.contains(here) => format!("{here}[{}][{}]", self.names.row, self.names.col),
                    _ => continue,
                };
                edits.push(TextEdit { range: n.byte_range(), new_text: replacement });
            }
        }
        edits.sort_by_key(|e| std::cmp::Reverse(e.range.start));
        let mut out = text[range.clone()].to_string();
        for edit in edits {
            out.replace_range(edit.range.start - range.start..edit.range.end - range.start, &edit.new_text);
        }
        out
    }

    /// `blockDim.x` → `(blockDim.x * TN)`: the block the original code was written for.
    fn block_size_edits(&self, node: Node) -> Vec<TextEdit> {
        let text = self.text();
        descendants(node)
            .filter(|n| n.kind() == "field_expression")
            .filter_map(|n| {
                let tile = match &text[n.byte_range()] {
                    "blockDim.x" => self.cols,
                    "blockDim.y" => self.rows,
                    _ => return None,
                };
                Some(TextEdit { range: n.byte_range(), new_text: format!("({} * {tile})", &text[n.byte_range()]) })
            })
            .collect()
    }

    /// Whether an expression is the same in every thread: no thread index, no per-thread local.
    fn is_uniform(&self, node: Node) -> bool {
        let text = self.text();
        !identifiers_in(&text[node.byte_range()]).any(|w| w == "threadIdx" || self.per_thread.contains(w) || w.starts_with("atomic"))
    }
}

/// The kernel's top-level locals that only name the thread's index: `int tx = threadIdx.x;`,
/// never assigned.
fn index_aliases<'t>(text: &str, body: Node<'t>) -> Vec<IndexAlias<'t>> {
    body.named_children(&mut body.walk())
        .filter(|n| n.kind() == "declaration")
        .filter_map(|declaration| {
            let declarators: Vec<Node> = declaration.children_by_field_name("declarator", &mut declaration.walk()).collect();
            let [declarator] = declarators.as_slice() else { return None };
            let name = declarator.child_by_field_name("declarator").filter(|n| n.kind() == "identifier")?;
            let value = declarator.child_by_field_name("value")?;
            let axis = match text[value.byte_range()].split_whitespace().collect::<String>().as_str() {
                "threadIdx.x" => "x",
                "threadIdx.y" => "y",
                _ => return None,
            };
            let name = &text[name.byte_range()];
            if names_in(text, body, name).into_iter().any(|n| is_assigned(text, n)) {
                return None;
            }
            let type_text = text[declaration.start_byte()..declarator.start_byte()].trim().to_string();
            Some(IndexAlias { declaration, name: name.to_string(), axis, type_text })
        })
        .collect()
}

/// The loop a `break` or `continue` belongs to.
fn innermost_loop(node: Node) -> Option<Node> {
    std::iter::successors(node.parent(), |n| n.parent()).find(|n| matches!(n.kind(), "for_statement" | "while_statement" | "do_statement" | "switch_statement"))
}

/// The kernel's locals whose value differs between threads: set from `threadIdx` or such a
/// local, from an atomic, or assigned anywhere but in the header of the loop that declares them.
fn per_thread_locals(unit: &Unit, body: Node) -> BTreeSet<String> {
    let text = unit.text();
    let declarations: Vec<Node> = descendants(body).filter(|n| n.kind() == "declaration" && !text[n.byte_range()].contains("__shared__")).collect();
    let mut per_thread: BTreeSet<String> = BTreeSet::new();
    loop {
        let before = per_thread.len();
        for declaration in &declarations {
            for declarator in declaration.children_by_field_name("declarator", &mut declaration.walk()) {
                let Some(&name) = declared_names(text, declarator).first() else { continue };
                let value = declarator.child_by_field_name("value").map(|v| &text[v.byte_range()]).unwrap_or("");
                let from_thread = identifiers_in(value).any(|w| w == "threadIdx" || w.starts_with("atomic") || per_thread.contains(w));
                let loop_header = declaration.parent().filter(|p| p.kind() == "for_statement" && p.child_by_field_name("initializer") == Some(*declaration));
                let assigned_elsewhere = names_in(text, body, name).into_iter().filter(|n| is_assigned(text, *n)).any(|n| {
                    let in_header = loop_header.is_some_and(|l| l.child_by_field_name("update").is_some_and(|u| u.byte_range().contains(&n.start_byte())));
                    !in_header
                });
                if from_thread || assigned_elsewhere {
                    per_thread.insert(name.to_string());
                }
            }
        }
        if per_thread.len() == before {
            return per_thread;
        }
    }
}

/// The edits that divide every launch's block by the tile (`dim3 block(TILE / TN, TILE / TM)`),
/// and the restrictions that keep the division exact. A `dim3` that other code reads too (a
/// grid worked out from `threads.x`) keeps its extents, and the launch divides them instead:
/// `<<<grid, dim3(threads.x / TN, threads.y / TM)>>>`.
fn divided_blocks(unit: &Unit, launches: &[&LaunchSite], rows: &str, cols: &str) -> Result<(Vec<TextEdit>, Vec<String>), String> {
    let text = unit.text();
    let root = unit.doc.tree().ok_or("the file does not parse")?.root_node();
    let blocks: Vec<std::ops::Range<usize>> = launches.iter().map(|l| l.block.span.start_byte..l.block.span.end_byte).collect();
    let mut edits = Vec::new();
    let mut restrictions = Vec::new();
    let divided = |extent: &str, tile: &str| format!("{} / {tile}", super::layout::operand(extent));
    for launch in launches {
        let block = launch.block.text.trim();
        let line = unit.line_at(launch.span);
        let BlockExtents { extents, read_elsewhere } = block_extents(unit, root, launch, &blocks).map_err(|why| format!("the block `{block}` of the launch at line {line} {why}"))?;
        let tiles = extents.iter().map(|e| text[e.byte_range()].trim()).zip([cols, rows]);
        for (written, tile) in tiles.clone() {
            let restriction = format!("{} % {tile} == 0", super::layout::operand(written));
            if crate::spec::expr::parse(&restriction).is_ok() && !restrictions.contains(&restriction) {
                restrictions.push(restriction);
            }
        }
        let launch_edits: Vec<TextEdit> = if read_elsewhere {
            let new_text = format!("dim3({block}.x / {cols}, {block}.y / {rows})");
            vec![TextEdit { range: launch.block.span.start_byte..launch.block.span.end_byte, new_text }]
        } else {
            extents.iter().zip(tiles).map(|(extent, (written, tile))| TextEdit { range: extent.byte_range(), new_text: divided(written, tile) }).collect()
        };
        for edit in launch_edits {
            if !edits.contains(&edit) {
                edits.push(edit);
            }
        }
    }
    Ok((edits, restrictions))
}

/// A launch's block: its x and y extents as written, and whether other code reads the `dim3`
/// they are written in.
struct BlockExtents<'t> {
    extents: [Node<'t>; 2],
    read_elsewhere: bool,
}

/// The x and y extents of a launch's block: a `dim3(x, y)` at the launch, or the `dim3` variable
/// it names, declared with them in the launch's function.
fn block_extents<'t>(unit: &Unit<'t>, root: Node<'t>, launch: &LaunchSite, blocks: &[std::ops::Range<usize>]) -> Result<BlockExtents<'t>, String> {
    let text = unit.text();
    let at = root.descendant_for_byte_range(launch.block.span.start_byte, launch.block.span.end_byte).ok_or("is not in the file's tree")?;
    // `dim3 block(TILE, TILE)` parses as a function's declaration when the extents are names.
    let arguments = |value: Node<'t>| match value.kind() {
        "argument_list" | "parameter_list" => Some(value),
        "call_expression" => value.child_by_field_name("arguments"),
        "init_declarator" => value.child_by_field_name("value").filter(|v| v.kind() == "argument_list"),
        "function_declarator" => value.child_by_field_name("parameters"),
        _ => None,
    };
    let (list, read_elsewhere) = if at.kind() == "identifier" {
        let name = &text[at.byte_range()];
        let function = enclosing_function(root, launch).ok_or("is outside a function")?;
        let declarator = descendants(function)
            .filter(|n| n.kind() == "declaration" && n.start_byte() < launch.span.start_byte)
            .filter(|d| d.child_by_field_name("type").is_some_and(|t| text[t.byte_range()].trim() == "dim3"))
            .filter_map(|d| d.child_by_field_name("declarator"))
            .filter(|d| d.child_by_field_name("declarator").is_some_and(|n| &text[n.byte_range()] == name))
            .last()
            .ok_or("is not a `dim3` the launch's function declares")?;
        let names: Vec<Node> = names_in(text, function, name).into_iter().filter(|n| !declarator.byte_range().contains(&n.start_byte()) && !blocks.iter().any(|b| b.contains(&n.start_byte()))).collect();
        // Assigned after its declaration (`threads.x = 128`), its written extents are not the launch's.
        if names.iter().any(|n| n.parent().is_some_and(|p| p.kind() == "field_expression" && p.parent().is_some_and(|a| a.kind() == "assignment_expression" && a.child_by_field_name("left") == Some(p)))) {
            return Err("is assigned after its declaration".into());
        }
        (arguments(declarator), !names.is_empty())
    } else {
        (arguments(at), false)
    };
    let extents: Vec<Node> = list.map(|l| l.named_children(&mut l.walk()).filter(|n| n.kind() != "comment").collect()).unwrap_or_default();
    match extents.as_slice() {
        [x, y] | [x, y, _] => Ok(BlockExtents { extents: [*x, *y], read_elsewhere }),
        _ => Err("does not have its x and y extents written".into()),
    }
}
