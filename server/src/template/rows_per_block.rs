//! Several rows per block: a kernel whose block works on one row (`blockIdx.x` picks the row and
//! is no part of a global thread index) gets a block of `(BLOCK, ROWS)` threads, each
//! `threadIdx.y` doing what one block did before, and a grid `ROWS` times smaller. Short rows
//! then fill the machine with fewer, fuller blocks (2.09× on 65,536 rows of 128 halves,
//! docs/benchmarks.md).
//!
//! Each row keeps what a block had alone: its block index (a local `blockIdx` shadows the
//! built-in), its own copy of every `__shared__` variable (one array of `ROWS`, the old name a
//! reference to this row's element) and its own barrier in place of `__syncthreads()`
//! (`__syncwarp()` for a row of one warp, else named barrier `threadIdx.y` over `blockDim.x`
//! threads). The last block may hold rows past the end, which must not run: only a launch that
//! passes the kernel its grid's block count (`k<<<rows, …>>>(…, rows, …)`) lets the rewrite tell
//! them, and they return at once, which their own barrier allows. The original stays under
//! `#if ROWS == 1`, the default.

use tree_sitter::Node;

use super::layout::{assignment, comment, indent_step, leading_whitespace};
use super::host::is_integer_type;
use super::strategy::{dim3_variable, divided_grids, is_assigned, names_in};
use super::warp_reduce::squeezed;
use super::{contains_identifier, line_start, Note, Outcome, Rewrite, TextEdit, Transform, Unit};
use crate::spec::{ParamKind, ParamSpec};
use crate::syntax::{descendants, is_identifier, parse_int_literal, LaunchSite};

pub struct RowsPerBlock;

/// The threads of a warp: a row of whole warps keeps every warp inside one row.
const WARP: i64 = 32;

/// Rows one block may hold: up to 16 where each row needs a named barrier of its own (the
/// hardware has 16 per block), 32 where a row is one warp, whose barrier is `__syncwarp()`.
const ROWS_VALUES: [i64; 6] = [1, 2, 4, 8, 16, 32];

/// Named barriers per block.
const NAMED_BARRIERS: i64 = 16;

/// Code that works across the whole block, which a row of it cannot stand in for.
const BLOCK_WIDE: [&str; 6] = ["gridDim", "__syncthreads_count", "__syncthreads_and", "__syncthreads_or", "this_thread_block", "cooperative_groups"];

impl Transform for RowsPerBlock {
    fn name(&self) -> &'static str {
        "rows-per-block"
    }

    fn apply(&self, unit: &Unit) -> Outcome {
        let Some(body) = unit.body() else { return Outcome::NotApplicable("the kernel has no body".into()) };
        let text = unit.text();
        let block_indices: Vec<Node> = descendants(body).filter(|n| n.kind() == "field_expression" && squeezed(&text[n.byte_range()]) == "blockIdx.x").collect();
        if block_indices.is_empty() {
            return Outcome::NotApplicable("the kernel does not use `blockIdx.x`: no block works on a row of its own".into());
        }
        let launches: Vec<&LaunchSite> = unit.model.launches_of(&unit.kernel.name).collect();
        if launches.is_empty() {
            return Outcome::NotApplicable("no launch in this file to give a smaller grid".into());
        }
        if let Some(global) = block_indices.iter().find(|n| is_global_thread_index(unit, **n, &launches)) {
            let product = global.parent().map_or(global.byte_range(), |p| p.byte_range());
            let product = text[product].split_whitespace().collect::<Vec<_>>().join(" ");
            return Outcome::NotApplicable(format!("`{product}` at line {} is part of a thread's global index: a block is not one row", unit.line_of(global.start_byte())));
        }
        let kernel_text = squeezed(&text[body.byte_range()]);
        if let Some(member) = ["blockIdx.y", "blockIdx.z"].into_iter().find(|m| kernel_text.contains(m)) {
            return Outcome::NotApplicable(format!("the kernel uses `{member}`: its blocks are tiles of a grid of several dimensions, not rows"));
        }
        if let Some(rows) = unit.lifted.iter().find(|p| p.name.ends_with("ROWS_PER_BLOCK")) {
            return Outcome::NotApplicable(format!("the block already holds `{}` rows", rows.name));
        }
        if let Some(place) = unit.unreached_launches.first() {
            let message = format!("the kernel is also launched at {place}, which this rewrite cannot edit: a launch of one row per block there would skip rows once a block holds several");
            return Outcome::Refused(Note { line: Some(unit.line_of(unit.kernel.span.start_byte)), message });
        }
        let name = unit.fresh_name("ROWS_PER_BLOCK");
        let plan = whole_block_code(unit, body).and_then(|()| {
            let count = row_count(unit, &launches)?;
            barriers_reached(unit, body)?;
            let groups = shared_groups(unit, body)?;
            let mut launch_edits = block_edits(unit, &launches, &name)?;
            launch_edits.extend(divided_grids(unit, &launches, &name)?);
            Ok((count, groups, launch_edits))
        });
        let (count, groups, launch_edits) = match plan {
            Ok(plan) => plan,
            Err(note) => return Outcome::Refused(note),
        };
        let mut rewrite = Rewrite::default();
        let barrier = unit.fresh_name("ROW_BARRIER").to_ascii_lowercase();
        let barriers: Vec<Node> = descendants(body).filter(|n| n.kind() == "call_expression" && squeezed(&text[n.byte_range()]) == "__syncthreads()").collect();
        let mut head = unit.define_block(&name, "1");
        if !barriers.is_empty() {
            head.new_text.push_str(&row_barrier(unit, &barrier, &name));
        }
        rewrite.edits.push(head);
        rewrite.edits.extend(row_edits(unit, body, &groups, &name, &count));
        rewrite.edits.extend(barriers.iter().map(|n| TextEdit { range: n.byte_range(), new_text: format!("{barrier}()") }));
        rewrite.edits.extend(launch_edits);
        let line = unit.line_of(unit.kernel.span.start_byte);
        let origin = format!("rows per block: each `threadIdx.y` works on the row a block of line {line} worked on, the grid divided by it; 1 is the original one row per block");
        rewrite.params.push(ParamSpec { name: name.clone(), kind: ParamKind::Define, default: 1, values: ROWS_VALUES.to_vec(), origin });
        if !barriers.is_empty() {
            rewrite.restrictions.push(one_barrier_per_row(&launches, &name));
        }
        rewrite.summary = format!("each block works on `{name}` rows, one per `threadIdx.y`, each with its own shared memory and barrier; rows past `{count}` return");
        Outcome::Applied(rewrite)
    }
}

/// Whether `block_index` (a `blockIdx.x`) is multiplied by the block's size, as in a global
/// thread index `blockIdx.x * blockDim.x + threadIdx.x`.
fn is_global_thread_index(unit: &Unit, block_index: Node, launches: &[&LaunchSite]) -> bool {
    let text = unit.text();
    let Some(product) = block_index.parent().filter(|p| p.kind() == "binary_expression" && p.child_by_field_name("operator").is_some_and(|o| o.kind() == "*")) else {
        return false;
    };
    let other = [product.child_by_field_name("left"), product.child_by_field_name("right")].into_iter().flatten().find(|n| *n != block_index);
    let other = other.map(|n| squeezed(&text[n.byte_range()])).unwrap_or_default();
    other == "blockDim.x" || launches.iter().any(|l| squeezed(&l.block.text) == other)
}

/// The kernel parameter every launch passes its grid's block count in: the argument written as
/// the grid is (`k<<<rows, …>>>(…, rows, …)`), or as the first extent of the `dim3` it names.
/// Rows past the end of the last block are told apart by it.
fn row_count(unit: &Unit, launches: &[&LaunchSite]) -> Result<String, Note> {
    let text = unit.text();
    let mut found: Option<usize> = None;
    for launch in launches {
        let grid = launch.grid.text.trim();
        let blocks = match dim3_variable(unit, launch, grid) {
            Some(Ok(first_extent)) => squeezed(&text[first_extent.byte_range()]),
            _ => squeezed(grid),
        };
        let refuse = |why: String| Err(Note { line: Some(unit.line_at(launch.span)), message: why });
        let Some(at) = launch.args.iter().position(|a| squeezed(a) == blocks) else {
            let line = unit.line_at(launch.span);
            return refuse(format!("the launch at line {line} does not pass the kernel its grid's block count `{blocks}`, which the rows past the end of the last block need to know they are past it"));
        };
        if found.is_some_and(|f| f != at) {
            return refuse("the launches pass the grid's block count in different arguments".into());
        }
        found = Some(at);
    }
    let at = found.expect("a kernel with launches has a count's position");
    let Some(param) = unit.kernel.params.get(at) else {
        return Err(Note { line: Some(unit.line_of(unit.kernel.span.start_byte)), message: format!("the kernel has no parameter {} for the block count", at + 1) });
    };
    if param.pointer_depth != 0 || !is_integer_type(&param.base_type) {
        return Err(Note { line: Some(unit.line_of(param.span.start_byte)), message: format!("`{}`, the block count, is not an integer", param.name) });
    }
    let body = unit.body().expect("a kernel with block indices has a body");
    if let Some(write) = names_in(text, body, &param.name).into_iter().find(|n| is_assigned(text, *n)) {
        return Err(Note { line: Some(unit.line_of(write.start_byte())), message: format!("`{}`, the block count, is assigned in the kernel", param.name) });
    }
    Ok(param.name.clone())
}

/// Why the kernel's code needs the whole block: a thread limit, the grid's size, a barrier that
/// counts or votes, cooperative groups, or a second block dimension already; or a function it
/// calls that uses the block's index, shared memory or its barrier.
fn whole_block_code(unit: &Unit, body: Node) -> Result<(), Note> {
    let text = unit.text();
    let kernel_text = &text[unit.kernel.span.start_byte..unit.kernel.span.end_byte];
    let at_line = |word: &str| unit.line_of(unit.kernel.span.start_byte + kernel_text.find(word).unwrap_or(0));
    if contains_identifier(kernel_text, "__launch_bounds__") {
        return Err(Note { line: Some(at_line("__launch_bounds__")), message: "the kernel's `__launch_bounds__` caps its block's threads, which a block of several rows would pass".into() });
    }
    if let Some(word) = BLOCK_WIDE.iter().find(|w| contains_identifier(kernel_text, w)) {
        return Err(Note { line: Some(at_line(word)), message: format!("the kernel uses `{word}`, which works across the whole block: its rows cannot share one") });
    }
    for member in ["threadIdx.y", "threadIdx.z", "blockDim.y", "blockDim.z"] {
        if squeezed(kernel_text).contains(member) {
            return Err(Note { line: Some(at_line(member.split('.').next().unwrap_or(member))), message: format!("the kernel uses `{member}`: its block has more than one dimension already") });
        }
    }
    for call in descendants(body).filter(|n| n.kind() == "call_expression") {
        let Some(mut function) = call.child_by_field_name("function") else { continue };
        if function.kind() == "template_function" {
            function = function.child_by_field_name("name").unwrap_or(function);
        }
        let callee = squeezed(&text[function.byte_range()]);
        let line = Some(unit.line_of(call.start_byte()));
        if !is_identifier(&callee) {
            if callee.contains("::") || function.kind() == "field_expression" {
                return Err(Note { line, message: format!("the kernel calls `{callee}`, which may work across the whole block") });
            }
            continue;
        }
        let Some(definition) = unit.model.device_functions.iter().find(|f| f.name == callee && f.is_definition) else { continue };
        let definition = &text[definition.span.start_byte..definition.span.end_byte];
        if let Some(word) = ["blockIdx", "gridDim", "__syncthreads", "__shared__", "threadIdx.y", "blockDim.y"].iter().find(|w| definition.contains(**w)) {
            return Err(Note { line, message: format!("the kernel calls `{callee}`, which uses `{word}` for the whole block") });
        }
    }
    Ok(())
}

/// A thread of a row that returns before a barrier leaves its row's barrier short, where
/// `__syncthreads()` let the hardware count it out: no `return` before the last barrier but one
/// that the whole row takes (`if (blockIdx.x >= rows) return;`).
fn barriers_reached(unit: &Unit, body: Node) -> Result<(), Note> {
    let text = unit.text();
    let Some(last) = descendants(body).filter(|n| n.kind() == "call_expression" && squeezed(&text[n.byte_range()]) == "__syncthreads()").map(|n| n.start_byte()).max() else {
        return Ok(());
    };
    match descendants(body).find(|n| n.kind() == "return_statement" && n.start_byte() < last && !taken_by_whole_row(unit, body, *n)) {
        Some(early) => {
            let line = unit.line_of(early.start_byte());
            Err(Note { line: Some(line), message: format!("a thread may return at line {line}, before a later `__syncthreads()`, which a row's own barrier would wait for") })
        }
        None => Ok(()),
    }
}

/// Whether `return_statement` is the whole body of an `if` of the kernel's body whose condition
/// reads only `blockIdx.x`, the kernel's scalar parameters and parameters lifted before: every
/// thread of a row takes it or none does.
fn taken_by_whole_row(unit: &Unit, body: Node, return_statement: Node) -> bool {
    let text = unit.text();
    let mut holder = return_statement.parent();
    if holder.is_some_and(|h| h.kind() == "compound_statement" && h.named_child_count() == 1) {
        holder = holder.and_then(|h| h.parent());
    }
    let Some(guard) = holder.filter(|h| h.kind() == "if_statement" && h.parent() == Some(body)) else { return false };
    let Some(condition) = guard.child_by_field_name("condition") else { return false };
    let uniform = |word: &str| {
        matches!(word, "blockIdx" | "x") || unit.kernel.params.iter().any(|p| p.name == word && p.pointer_depth == 0) || unit.lifted.iter().any(|p| p.name == word)
    };
    crate::syntax::identifiers_in(&text[condition.byte_range()]).all(uniform)
}

/// The kernel's `__shared__` declarations, in runs of adjacent ones; each must be a statement of
/// the kernel's body itself (a row's copy is declared where the original is) and not `extern`
/// (dynamic shared memory is sized for one block by the launch).
fn shared_groups<'t>(unit: &Unit<'t>, body: Node<'t>) -> Result<Vec<Vec<Node<'t>>>, Note> {
    let text = unit.text();
    let declarations: Vec<Node> = descendants(body).filter(|n| n.kind() == "declaration" && contains_identifier(&text[n.byte_range()], "__shared__")).collect();
    let mut groups: Vec<Vec<Node>> = Vec::new();
    for declaration in declarations {
        let line = Some(unit.line_of(declaration.start_byte()));
        if contains_identifier(&text[declaration.byte_range()], "extern") {
            return Err(Note { line, message: "the kernel's `extern __shared__` memory is sized for one block by the launch: not split into rows".into() });
        }
        if declaration.parent() != Some(body) {
            return Err(Note { line, message: "a `__shared__` variable is declared inside a nested block or `#if`: its rows' copies are not written".into() });
        }
        let declarators: Vec<Node> = declaration.children_by_field_name("declarator", &mut declaration.walk()).collect();
        if declarators.len() != 1 {
            return Err(Note { line, message: "a `__shared__` declaration declares several variables: not split into rows".into() });
        }
        if !matches!(declarators[0].kind(), "identifier" | "array_declarator") {
            return Err(Note { line, message: format!("the `__shared__` variable `{}` is not a plain variable or array: not split into rows", &text[declarators[0].byte_range()]) });
        }
        match groups.last_mut() {
            Some(group) if text[group.last().expect("groups are not empty").end_byte()..declaration.start_byte()].trim().is_empty() => group.push(declaration),
            _ => groups.push(vec![declaration]),
        }
    }
    Ok(groups)
}

/// The block at every launch made `dim3(BLOCK, ROWS)`: each must be a single extent of whole
/// warps (a literal, or a parameter whose values all are).
fn block_edits(unit: &Unit, launches: &[&LaunchSite], rows: &str) -> Result<Vec<TextEdit>, Note> {
    let mut edits = Vec::new();
    for launch in launches {
        let block = launch.block.text.trim();
        let line = Some(unit.line_at(launch.span));
        let whole = |v: i64| v > 0 && v % WARP == 0;
        let whole_warps = match parse_int_literal(block) {
            Some(value) => whole(value),
            None => unit.lifted.iter().find(|p| p.name == block).is_some_and(|p| p.values.iter().all(|v| whole(*v))),
        };
        if !whole_warps {
            return Err(Note { line, message: format!("the block `{block}` is not known to be whole warps, which keep each warp inside one row") });
        }
        if dim3_variable(unit, launch, block).is_some() {
            return Err(Note { line, message: format!("the block `{block}` is a `dim3`: not given rows") });
        }
        edits.push(TextEdit { range: launch.block.span.start_byte..launch.block.span.end_byte, new_text: format!("dim3({block}, {rows})") });
    }
    Ok(edits)
}

/// Rows that need named barriers fit the hardware's count of them; rows of one warp need none.
fn one_barrier_per_row(launches: &[&LaunchSite], rows: &str) -> String {
    let blocks: Vec<String> = launches.iter().map(|l| l.block.text.trim().to_string()).collect();
    match blocks.as_slice() {
        [block, rest @ ..] if rest.iter().all(|b| b == block) => format!("{rows} <= {NAMED_BARRIERS} || {block} == {WARP}"),
        _ => format!("{rows} <= {NAMED_BARRIERS}"),
    }
}

/// The device function that stands for `__syncthreads()`: the whole block's barrier when a block
/// holds one row, else `__syncwarp()` for a row of one warp and named barrier `threadIdx.y` over
/// the row's `blockDim.x` threads for a longer one.
fn row_barrier(unit: &Unit, barrier: &str, rows: &str) -> String {
    let step = indent_step(unit.text());
    let why = format!(
        "The barrier of one row of `{}`'s block: `__syncthreads()` when the block holds one row, else `__syncwarp()` for a row of one warp and named barrier `threadIdx.y` over the row's threads for a longer one, so that a row past the end may return.",
        unit.kernel.name
    );
    comment("", &why)
        .into_iter()
        .chain([
        format!("__device__ __forceinline__ void {barrier}() {{"),
        format!("#if {rows} == 1"),
        format!("{step}__syncthreads();"),
        "#else".to_string(),
        format!("{step}if (blockDim.x == {WARP}) {{"),
        format!("{step}{step}__syncwarp();"),
        format!("{step}}} else {{"),
        format!("{step}{step}asm volatile(\"bar.sync %0, %1;\" : : \"r\"(threadIdx.y), \"r\"(blockDim.x) : \"memory\");"),
        format!("{step}}}"),
        "#endif".to_string(),
        "}".to_string(),
        String::new(),
    ])
    .collect::<Vec<_>>()
    .join("\n")
        + "\n"
}

/// The row's block index at the start of the body, and each run of `__shared__` declarations,
/// each as the original under `#if ROWS == 1` and the rows' version under `#else`. The row's
/// index shadows `blockIdx`, so that the body reads it unchanged; a run that opens the body joins
/// the index's `#if`.
fn row_edits(unit: &Unit, body: Node, groups: &[Vec<Node>], rows: &str, count: &str) -> Vec<TextEdit> {
    let text = unit.text();
    let open = body.start_byte() + 1;
    let first_statement = body.named_children(&mut body.walk()).find(|n| n.kind() != "comment");
    let indent = first_statement.map_or_else(|| indent_step(text), |s| leading_whitespace(&text[line_start(text, s.start_byte())..]).to_string());
    let opens_body = |group: &[Node]| text[open..group[0].start_byte()].trim().is_empty();
    let mut original = Vec::new();
    let mut split = comment(&indent, "Rows per block: each `threadIdx.y` works on a row of its own, as a block did, with its own block index, shared memory and barrier; a row past the last returns at once.");
    let row_index = format!("make_uint3(::blockIdx.x * {rows} + threadIdx.y, ::blockIdx.y, ::blockIdx.z)");
    split.push(assignment(&indent, &indent_step(text), "const uint3 blockIdx", &row_index));
    split.push(format!("{indent}if (blockIdx.x >= {count}) return;"));
    let mut edits = Vec::new();
    let mut end = open;
    for group in groups {
        let start = line_start(text, group[0].start_byte());
        let last = group.last().expect("groups are not empty").end_byte();
        if opens_body(group) {
            original.push(text[start..last].to_string());
            split.extend(rows_of(unit, group, rows, &indent));
            end = last;
            continue;
        }
        let own_indent = leading_whitespace(&text[start..]).to_string();
        let branches = [format!("#if {rows} == 1"), text[start..last].to_string(), "#else".to_string(), rows_of(unit, group, rows, &own_indent).join("\n"), "#endif".to_string()];
        edits.push(TextEdit { range: start..last, new_text: branches.join("\n") });
    }
    // After the body's `{`, on lines of their own, in place of the run they took in.
    let head = if original.is_empty() {
        [String::new(), format!("#if {rows} > 1"), split.join("\n"), "#endif".to_string()].join("\n")
    } else {
        [String::new(), format!("#if {rows} == 1"), original.join("\n"), "#else".to_string(), split.join("\n"), "#endif".to_string()].join("\n")
    };
    edits.insert(0, TextEdit { range: open..end, new_text: head });
    edits
}

/// A run of `__shared__` declarations for `ROWS` rows: each an array of `ROWS` copies, then the
/// old name a reference to this row's copy.
fn rows_of(unit: &Unit, group: &[Node], rows: &str, indent: &str) -> Vec<String> {
    let text = unit.text();
    let mut arrays = Vec::new();
    let mut references = Vec::new();
    for declaration in group {
        let declarator = declaration.child_by_field_name("declarator").expect("a declaration has a declarator");
        let name_node = descendants(declarator).find(|n| n.kind() == "identifier").expect("a declarator names a variable");
        let name = &text[name_node.byte_range()];
        let prefix = text[declaration.start_byte()..declarator.start_byte()].trim_end();
        let dims = &text[name_node.end_byte()..declarator.end_byte()];
        let of_rows = unit.local_name(&format!("{name}_of_rows"));
        arrays.push(format!("{indent}{prefix} {of_rows}[{rows}]{dims};"));
        let ty = without_shared_attributes(prefix);
        let reference = if dims.is_empty() { format!("&{name}") } else { format!("(&{name}){dims}") };
        references.push(format!("{indent}{ty} {reference} = {of_rows}[threadIdx.y];"));
    }
    arrays.into_iter().chain(references).collect()
}

/// A shared declaration's type, as the type of a reference to it: without `__shared__`,
/// `static` and `__align__(…)`, which say where and how the storage is laid out.
fn without_shared_attributes(prefix: &str) -> String {
    let mut words = Vec::new();
    let mut rest = prefix;
    while let Some(word) = rest.split_whitespace().next() {
        let at = rest.find(word).expect("the word is in the text");
        rest = &rest[at + word.len()..];
        if word.starts_with("__align__") {
            // Skip through the closing parenthesis of its argument.
            let mut depth = word.matches('(').count() as i64 - word.matches(')').count() as i64;
            while depth > 0 {
                let Some(next) = rest.chars().next() else { break };
                depth += i64::from(next == '(') - i64::from(next == ')');
                rest = &rest[next.len_utf8()..];
            }
            continue;
        }
        if !matches!(word, "__shared__" | "static") {
            words.push(word);
        }
    }
    words.join(" ")
}
