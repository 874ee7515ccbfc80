//! Lifts: make what is already an execution choice a named parameter whose default is the
//! original value. None of them changes the code the compiler sees at the defaults.

use std::collections::BTreeSet;

use tree_sitter::Node;

use super::{define_guard, Note, Outcome, Rewrite, TextEdit, Transform, Unit};
use crate::spec::{ParamKind, ParamSpec};
use crate::syntax::{descendants, is_pragma_macro, parse_int_literal, Span, TemplateParamKind, TunableKind};

/// Every transform, in the order they run.
pub fn transforms() -> Vec<Box<dyn Transform>> {
    vec![
        Box::new(TemplateParams),
        Box::new(Defines),
        Box::new(BlockSize),
        Box::new(MinBlocksPerSm),
        Box::new(PragmaUnroll),
        Box::new(SharedPadding),
        Box::new(super::strategy::GridStrideItems),
        Box::new(super::online_softmax::OnlineSoftmax),
        Box::new(super::strategy::VectorizeRowLoops),
        Box::new(super::elements::VectorizeElements),
        Box::new(super::warp_reduce::WarpShuffleReduce),
        Box::new(super::rows_per_block::RowsPerBlock),
        Box::new(super::thread_tile::ThreadTiles),
        Box::new(CompilerOptions),
    ]
}

/// Names that are facts of the hardware or of the maths, never choices.
pub(super) const FIXED_NAMES: [&str; 6] = ["WARP_SIZE", "WARPSIZE", "FULL_MASK", "WARP_MASK", "LANE_MASK", "NUM_BANKS"];

/// Name fragments that mark a `#define` as an execution choice.
const CHOICE_WORDS: [&str; 17] = [
    "BLOCK", "THREAD", "TILE", "UNROLL", "VEC", "ITEMS", "PER_THREAD", "WARPS", "STAGES", "PAD", "SHUFFLE", "BM", "BN", "BK", "TM", "TN", "ROW_REGS",
];

fn param(name: &str, kind: ParamKind, default: i64, values: impl IntoIterator<Item = i64>, origin: String) -> ParamSpec {
    let mut values: BTreeSet<i64> = values.into_iter().collect();
    values.insert(default);
    ParamSpec { name: name.to_string(), kind, default, values: values.into_iter().collect(), origin }
}

/// Block sizes worth trying: the warp multiples that are powers of two, up to the hardware's
/// 1024 threads per block.
fn block_values() -> Vec<i64> {
    vec![32, 64, 128, 256, 512, 1024]
}

/// Powers of two from a quarter to four times the default; off and on for a default of 0.
fn factor_values(default: i64) -> Vec<i64> {
    // A switch, or a padding of nothing: off or on.
    if default == 0 {
        return vec![0, 1];
    }
    let low = (default / 4).max(1);
    std::iter::successors(Some(1i64), |v| v.checked_mul(2))
        .skip_while(|&v| v < low)
        .take_while(|&v| v <= default.saturating_mul(4))
        .collect()
}

/// `BLOCK`, `BLOCK_SIZE`, `NUM_THREADS`...: a name for the whole block's thread count (not
/// `BLOCK_ROWS` or `BLOCKS_PER_SM`).
fn looks_like_block_size(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    // `WARPS_PER_BLOCK`, `ITEMS_PER_BLOCK`: a count of something else in a block.
    if upper.ends_with("_PER_BLOCK") && !upper.ends_with("THREADS_PER_BLOCK") {
        return false;
    }
    ["BLOCK", "BLOCK_SIZE", "BLOCKSIZE", "BLOCK_THREADS", "THREADS", "NUM_THREADS", "THREADS_PER_BLOCK"]
        .iter()
        .any(|suffix| upper == *suffix || upper.ends_with(&format!("_{suffix}")) || upper.ends_with(suffix) && suffix.len() > 5)
}

/// The value of `text` when it is exactly an integer literal (not a name or an expression).
fn int_literal(text: &str) -> Option<i64> {
    let text = text.trim();
    text.starts_with(|c: char| c.is_ascii_digit()).then(|| parse_int_literal(text)).flatten()
}

pub(super) fn is_int_literal(text: &str) -> bool {
    int_literal(text).is_some()
}

/// Integer template parameters: already parameters, given values from the launches.
struct TemplateParams;

impl Transform for TemplateParams {
    fn name(&self) -> &'static str {
        "template-params"
    }

    fn apply(&self, unit: &Unit) -> Outcome {
        let mut rewrite = Rewrite::default();
        let mut tagged = Vec::new();
        let hand_mapped = tiles_mapped_with_numbers(unit);
        let instruction_shape = tensor_core_shape(unit, unit.kernel.template_params.iter().map(|tp| tp.name.as_str()));
        for (index, tp) in unit.kernel.template_params.iter().enumerate() {
            if !matches!(tp.kind, TemplateParamKind::Value { integer: true, .. }) {
                continue;
            }
            // Carried by a tag the launch makes (`std::bool_constant<true>{}`): the program
            // picks the instantiation with it, as with a switch; the spec keeps that value.
            if unit.kernel.params.iter().any(|p| super::scaffold::tag_carries(p, &tp.name)) {
                tagged.push(format!("`{}`", tp.name));
                continue;
            }
            let at_launches: Vec<(i64, u32)> = unit
                .model
                .launches_of(&unit.kernel.name)
                .filter_map(|l| Some((l.template_args.get(index)?.value?, unit.line_at(l.span))))
                .collect();
            let from_default = tp.default.as_deref().and_then(|d| parse_int_literal(d.trim()));
            let from_host = unit.host_instantiation.get(index).and_then(|v| v.as_ref());
            // Of the launches in the file, the one the program takes, when the host code says.
            let taken = from_host.map(|h| h.value).filter(|value| at_launches.iter().any(|&(v, _)| v == *value));
            // What the program instantiates comes before the declaration's default, which a
            // launch that names its arguments (`k<(1024)><<<…>>>`, in a host file or a macro)
            // does not use.
            let default = match (taken.or(at_launches.first().map(|&(v, _)| v)), from_default, from_host) {
                (Some(value), _, _) => value,
                (None, Some(value), None) => value,
                (None, _, Some(host)) => {
                    rewrite.notes.push(Note { line: Some(unit.line_at(tp.span)), message: format!("template parameter `{}` is {} at the launch in {}", tp.name, host.value, host.origin) });
                    host.value
                }
                (None, None, None) => {
                    rewrite.notes.push(Note {
                        line: Some(unit.line_at(tp.span)),
                        message: format!("template parameter `{}` is not tuned: no launch in this file gives it a number (the spec keeps the argument the host code works out, else `?` to fill in)", tp.name),
                    });
                    continue;
                }
            };
            // The values the code instantiates (a `switch` over block sizes) are the ones the
            // kernel is known to work with; a value it never instantiates may break an
            // assumption (a shared-memory tree written for at most 512 threads).
            let mut instantiated: Vec<i64> = at_launches.iter().map(|&(v, _)| v).collect();
            instantiated.sort_unstable();
            instantiated.dedup();
            let written_by_host = from_host.filter(|_| at_launches.is_empty()).map_or(&[][..], |h| &h.written[..]);
            if instantiated.len() > 1 {
                let seen: Vec<String> = at_launches.iter().map(|(v, line)| format!("{v} (line {line})")).collect();
                rewrite.notes.push(Note {
                    line: Some(unit.line_at(tp.span)),
                    message: format!("launches instantiate `{}` differently: {}; the spec tries those values and starts from {default}", tp.name, seen.join(", ")),
                });
            }
            // Launches of 0 and 1 only are a switch the program flips by its own run-time values
            // (`if (sortDir) k<1U><<<…>>> else k<0U><<<…>>>`): the problem decides it, not
            // speed, and the other value computes something else.
            if instantiated == [0, 1] || written_by_host == [0, 1] {
                rewrite.notes.push(Note {
                    line: Some(unit.line_at(tp.span)),
                    message: format!("`{}` is a switch the program sets (0 or 1 at its launches), not a tuning choice: kept at {default}", tp.name),
                });
                let origin = format!("template parameter `{}` of `{}`, a switch of the program", tp.name, unit.kernel.name);
                rewrite.params.push(param(&tp.name, ParamKind::Template, default, vec![default], origin));
                continue;
            }
            if let Some(why) = instruction_shape.iter().find(|(name, _)| *name == tp.name).map(|(_, why)| why) {
                rewrite.notes.push(Note { line: Some(unit.line_at(tp.span)), message: format!("{why}: kept at {default}") });
                let origin = format!("template parameter `{}` of `{}`, the tensor cores' shape", tp.name, unit.kernel.name);
                rewrite.params.push(param(&tp.name, ParamKind::Template, default, vec![default], origin));
                continue;
            }
            if let Some(why) = hand_mapped.iter().find(|(name, _)| *name == tp.name).map(|(_, why)| why) {
                rewrite.notes.push(Note { line: Some(unit.line_at(tp.span)), message: format!("{why}: kept at {default}") });
                let origin = format!("template parameter `{}` of `{}`, a tile the threads are mapped onto with numbers", tp.name, unit.kernel.name);
                rewrite.params.push(param(&tp.name, ParamKind::Template, default, vec![default], origin));
                rewrite.keeps_block_threads = true;
                continue;
            }
            let values = match instantiated.len() {
                0 | 1 if looks_like_block_size(&tp.name) => block_values(),
                0 | 1 => factor_values(default),
                _ => instantiated,
            };
            let origin = format!("template parameter `{}` of `{}`", tp.name, unit.kernel.name);
            rewrite.params.push(param(&tp.name, ParamKind::Template, default, values, origin));
        }
        if rewrite.params.is_empty() && rewrite.notes.is_empty() {
            return Outcome::NotApplicable(match tagged.is_empty() {
                true => "the kernel has no integer template parameters".into(),
                false => format!("{} is carried by a tag the launch makes: the program's instantiation", tagged.join(", ")),
            });
        }
        let (tuned, kept): (Vec<&ParamSpec>, Vec<&ParamSpec>) = rewrite.params.iter().partition(|p| p.values.len() > 1);
        let names = |params: &[&ParamSpec]| params.iter().map(|p| p.name.as_str()).collect::<Vec<_>>().join(", ");
        rewrite.summary = match (tuned.is_empty(), kept.is_empty()) {
            (true, true) => "no template parameter has a value in this file".to_string(),
            (false, true) => format!("template parameters {} are tuning parameters", names(&tuned)),
            (true, false) => format!("template parameters {} keep the program's values", names(&kept)),
            _ => format!("template parameters {} are tuning parameters; {} keep the program's values", names(&tuned), names(&kept)),
        };
        Outcome::Applied(rewrite)
    }
}

/// The template parameters that are the shape of the tensor-core operation the kernel issues,
/// which the hardware fixes (`m16n8k16`, or `16×16×8` for TF32): those in its `wmma::fragment`
/// types ([`fragment_shape_names`]), and, in a kernel that issues `mma.sync` in assembly (itself
/// or through a macro or function it calls whose name says `mma`, defined in the file or in a
/// header of the project: `HMMA16816` in `utils.h`), those named for its `M`, `N` or `K`
/// (`MMA_M`, `kMmaAtomK`). Each with why, for the note.
fn tensor_core_shape<'n>(unit: &Unit, names: impl Iterator<Item = &'n str>) -> Vec<(String, String)> {
    let Some(body) = unit.body() else { return Vec::new() };
    let (text, fragment_shapes) = (unit.text(), fragment_shape_names(unit));
    let body_text = &text[body.byte_range()];
    let calls_mma = || crate::syntax::host::names_called_in(body_text).iter().any(|w| w.to_ascii_lowercase().contains("mma"));
    let issues_mma = body_text.contains("mma.sync") || calls_mma();
    let named_for_mma = |name: &str| {
        let upper: String = name.chars().filter(char::is_ascii_alphanumeric).collect::<String>().to_ascii_uppercase();
        ["MMAM", "MMAN", "MMAK", "MMAATOMM", "MMAATOMN", "MMAATOMK"].iter().any(|suffix| upper.ends_with(suffix))
    };
    let mut out = Vec::new();
    for name in names {
        if fragment_shapes.contains(name) {
            out.push((name.to_string(), format!("`{name}` is a dimension of the kernel's `wmma::fragment`, a shape of the tensor cores")));
        } else if issues_mma && named_for_mma(name) {
            out.push((name.to_string(), format!("`{name}` is the shape of the `mma` instruction the kernel issues, which the hardware fixes")));
        }
    }
    out
}

/// The template parameters that size a dimension of a `__shared__` tile whose index there the
/// threads compute by dividing by numbers of their own, not the parameters (`s_a[tid / 2][tid % 2 * 4]`
/// of a `s_a[BM][BK]` loaded by 256 threads), themselves or through the kernel's constants
/// (`BM = MMA_M * MMA_TILE_M * WARP_TILE_M`): another value would leave part of the tile
/// unloaded or load past it. Each with why, for the note.
fn tiles_mapped_with_numbers(unit: &Unit) -> Vec<(String, String)> {
    let Some(body) = unit.body() else { return Vec::new() };
    let text = unit.text();
    let params: BTreeSet<&str> = unit.kernel.template_params.iter().map(|tp| tp.name.as_str()).collect();
    let words = |code: &str| crate::syntax::identifiers_in(code).map(str::to_string).collect::<BTreeSet<String>>();
    // Locals the thread's index makes, and of those, the ones made with numbers (`tid / 2`).
    let mut from_thread: BTreeSet<String> = BTreeSet::from(["threadIdx".to_string()]);
    let mut with_numbers: Vec<(String, String, usize)> = Vec::new();
    for declarator in descendants(body).filter(|n| n.kind() == "init_declarator") {
        let (Some(name), Some(value)) = (declarator.child_by_field_name("declarator").filter(|d| d.kind() == "identifier"), declarator.child_by_field_name("value")) else { continue };
        let value_text = &text[value.byte_range()];
        let read = words(value_text);
        if !read.iter().any(|w| from_thread.contains(w)) {
            continue;
        }
        let name = text[name.byte_range()].to_string();
        from_thread.insert(name.clone());
        // Divided or wrapped by a number (`tid / 2`, `tid % 32`): a scaled index (`tx * 4`) is a
        // vector's, whose tile a bound check (`if (t4x < BLOCK)`) may still follow.
        let numbered = descendants(value).any(|n| {
            let by_number = n.child_by_field_name("right").is_some_and(|r| r.kind() == "number_literal" && parse_int_literal(&text[r.byte_range()]).is_some_and(|v| v >= 2));
            let operator = n.child_by_field_name("operator").map(|o| &text[o.byte_range()]);
            n.kind() == "binary_expression" && matches!(operator, Some("/" | "%" | ">>" | "&")) && by_number
        });
        if numbered && !read.iter().any(|w| params.contains(w.as_str())) {
            with_numbers.push((name, value_text.split_whitespace().collect::<Vec<_>>().join(" "), value.start_byte()));
        }
    }
    // A tile sized by the kernel's constants (`constexpr int BM = MMA_M * MMA_TILE_M *
    // WARP_TILE_M;`) is sized by the parameters they are made of.
    let constants = super::scaffold::kernel_constants(text, body);
    let sizing = |dim: &str| words(&super::renamed_until_settled(dim, |word| constants.get(word).map(|value| format!("({value})"))));
    let mut pinned: Vec<(String, String)> = Vec::new();
    for tile in unit.kernel.shared.iter().filter(|s| !s.dims.is_empty()) {
        for access in descendants(body).filter(|n| n.kind() == "subscript_expression" && n.parent().is_none_or(|p| p.kind() != "subscript_expression" || p.child_by_field_name("argument") != Some(*n))) {
            // `s_a[i][j]`: the indices outermost first, down to the array.
            let mut indices = Vec::new();
            let mut current = access;
            while current.kind() == "subscript_expression" {
                indices.push(current.child_by_field_name("indices").or_else(|| current.child_by_field_name("index")));
                let Some(argument) = current.child_by_field_name("argument") else { break };
                current = argument;
            }
            if text[current.byte_range()].trim() != tile.name || indices.len() != tile.dims.len() {
                continue;
            }
            indices.reverse();
            for (dim, index) in tile.dims.iter().zip(indices) {
                let index_text = index.map(|i| text[i.byte_range()].trim_matches(|c| c == '[' || c == ']').trim()).unwrap_or_default();
                let read = words(index_text);
                if read.iter().any(|w| params.contains(w.as_str())) {
                    continue;
                }
                let Some((local, made, at)) = with_numbers.iter().find(|(name, ..)| read.contains(name)) else { continue };
                // Padding added to the dimension (`BK + A_PAD`) is room the threads do not index.
                let indexed = dim.text.split('+').next().filter(|_| !dim.text.contains('(')).unwrap_or(&dim.text);
                for sized_by in sizing(indexed).into_iter().filter(|w| params.contains(w.as_str())) {
                    if !pinned.iter().any(|(name, _)| *name == sized_by) {
                        let why = format!("`{sized_by}` sizes `{}`, which the threads index as `{local} = {made}` (line {}), with numbers of their own", tile.name, unit.line_of(*at));
                        pinned.push((sized_by, why));
                    }
                }
            }
        }
    }
    pinned
}

/// `#define`s the kernel's execution choices use: wrapped in `#ifndef` so that `-D` sets them.
struct Defines;

impl Transform for Defines {
    fn name(&self) -> &'static str {
        "defines"
    }

    fn apply(&self, unit: &Unit) -> Outcome {
        let choice_sites: Vec<&str> = unit
            .model
            .tunables
            .iter()
            .filter(|t| t.kernel.as_deref() == Some(unit.kernel.name.as_str()) && t.kind != TunableKind::Define)
            .map(|t| t.text.as_str())
            .chain(unit.model.launches_of(&unit.kernel.name).flat_map(|l| [l.grid.text.as_str(), l.block.text.as_str()]))
            .collect();
        let block_names: BTreeSet<&str> = unit.model.launches_of(&unit.kernel.name).map(|l| l.block.text.trim()).collect();
        let instruction_shape = tensor_core_shape(unit, unit.model.tunables_of(&unit.kernel.name).filter(|t| t.kind == TunableKind::Define).map(|t| t.text.as_str()));
        let allocation_sizes = names_sizing_allocations(unit);
        let mut seen = BTreeSet::new();
        let mut rewrite = Rewrite::default();
        let mut lifted = Vec::new();
        for site in unit.model.tunables_of(&unit.kernel.name).filter(|t| t.kind == TunableKind::Define) {
            let name = site.text.as_str();
            if !seen.insert(name) {
                continue;
            }
            let Some(define) = unit.model.defines.iter().find(|d| d.name == name) else { continue };
            let line = Some(unit.line_at(define.span));
            if FIXED_NAMES.contains(&name) {
                continue;
            }
            if let Some((_, why)) = instruction_shape.iter().find(|(shape, _)| shape == name) {
                rewrite.notes.push(Note { line, message: format!("{why}: it is not lifted") });
                continue;
            }
            if let Some((bytes, _)) = allocation_sizes.iter().find(|(_, expanded)| super::contains_identifier(expanded, name)) {
                rewrite.notes.push(Note { line, message: format!("`{name}` is not lifted: the host allocates `{bytes}` bytes with it, so it sizes the problem, not how the kernel runs") });
                continue;
            }
            let used_as_choice = choice_sites.iter().any(|text| super::contains_identifier(text, name));
            let named_as_choice = CHOICE_WORDS.iter().any(|w| name.to_ascii_uppercase().contains(w));
            if !used_as_choice && !named_as_choice {
                rewrite.notes.push(Note { line, message: format!("`{name}` is not lifted: it looks like a problem size or a constant, not an execution choice") });
                continue;
            }
            let Some(default) = define.value.filter(|_| is_int_literal(&define.value_text)) else { continue };
            let values = if block_names.contains(name) || looks_like_block_size(name) {
                block_values()
            } else if default == 0 && name.to_ascii_uppercase().contains("PAD") {
                // A tile's padding (a second templatize finds its own `PAD_TILE` as a define):
                // the widths a padding takes, which a tile read as wider values narrows.
                PADDING_VALUES.to_vec()
            } else {
                factor_values(default)
            };
            let origin = format!("`#define {name}` at line {}", unit.line_at(define.span));
            rewrite.params.push(param(name, ParamKind::Define, default, values, origin));
            lifted.push(name.to_string());
            if !is_overridable(unit, name, define.span) {
                rewrite.edits.push(wrap_in_ifndef(unit, name, define.span));
            }
        }
        tie_tiles_to_defines(unit, &mut rewrite);
        if lifted.is_empty() {
            return match rewrite.notes.first() {
                Some(_) => Outcome::Applied(Rewrite { summary: "no `#define` is an execution choice".into(), ..rewrite }),
                None => Outcome::NotApplicable("the kernel's execution choices use no `#define`".into()),
            };
        }
        rewrite.summary = format!("`#define`s {} are tuning parameters", lifted.join(", "));
        Outcome::Applied(rewrite)
    }
}

/// The byte counts the file's host code allocates (`cudaMalloc(&a, sizeof(half) * M_GLOBAL *
/// K_GLOBAL)`), as written and with the `#define`s they name written out (`M_GLOBAL` is
/// `(M * M_TILES)`), so that a define the problem's size is made of is found in them. A buffer
/// only other kernels' launches pass is left out: another kernel's scratch buffer (`d_Buf`,
/// one sum per block of a second pass) sizes that kernel's problem.
fn names_sizing_allocations(unit: &Unit) -> Vec<(String, String)> {
    let Some(tree) = unit.doc.tree() else { return Vec::new() };
    let expression_defines = |name: &str| unit.model.defines.iter().find(|d| d.name == name && !is_int_literal(&d.value_text)).map(|d| format!("({})", d.value_text));
    let passed_by = |own: bool| -> BTreeSet<&str> {
        let launches = unit.model.launches.iter().filter(|l| (l.kernel == unit.kernel.name) == own);
        launches.flat_map(|l| l.args.iter().flat_map(|a| crate::syntax::identifiers_in(a))).collect()
    };
    let (own, others) = (passed_by(true), passed_by(false));
    let only_others = |pointer: &String| others.contains(pointer.as_str()) && !own.contains(pointer.as_str());
    super::host::allocations(unit.text(), tree.root_node()).filter(|a| !only_others(&a.pointer)).map(|a| {
        let expanded = super::renamed_until_settled(&a.bytes, expression_defines);
        (a.bytes, expanded)
    })
    .collect()
}

/// The names in the kernel's tensor-core fragment types (`wmma::fragment<matrix_a, M, N, K,
/// half, row_major>`): shapes the hardware offers a few of, not choices of the code's.
fn fragment_shape_names<'u>(unit: &'u Unit) -> BTreeSet<&'u str> {
    let Some(body) = unit.body() else { return BTreeSet::new() };
    let text = unit.text();
    descendants(body)
        .filter(|n| n.kind() == "template_type" && n.child_by_field_name("name").is_some_and(|name| text[name.byte_range()].ends_with("fragment")))
        .filter_map(|n| n.child_by_field_name("arguments"))
        .flat_map(|arguments| crate::syntax::identifiers_in(&text[arguments.byte_range()]))
        .collect()
}

/// A literal shared-array dimension equal to a lifted tile or block `#define` (and to no other)
/// is that define written out: `tile[32][32]` beside `#define TILE_DIM 32`. It is tied to the
/// define, so that changing the define cannot overflow the array.
fn tie_tiles_to_defines(unit: &Unit, rewrite: &mut Rewrite) {
    let tile_like = |p: &&ParamSpec| {
        let upper = p.name.to_ascii_uppercase();
        upper.contains("TILE") || upper.contains("BLOCK")
    };
    for site in unit.model.tunables_of(&unit.kernel.name).filter(|t| t.kind == TunableKind::SharedArrayDim) {
        let Some(value) = site.value.filter(|_| is_int_literal(&site.text)) else { continue };
        let matching: Vec<&ParamSpec> = rewrite.params.iter().filter(tile_like).filter(|p| p.default == value).collect();
        let [define] = matching.as_slice() else { continue };
        rewrite.edits.push(TextEdit { range: site.span.start_byte..site.span.end_byte, new_text: define.name.clone() });
        rewrite.notes.push(Note {
            line: Some(unit.line_at(site.span)),
            message: format!("shared array dimension {value} is now `{}`, which has that value, so the array follows it", define.name),
        });
    }
}

/// The parameter of an integer `#define` already guarded by an earlier templatize.
fn define_param(unit: &Unit, name: &str, used_at: &str) -> Option<ParamSpec> {
    let d = unit.model.defines.iter().find(|d| d.name == name)?;
    let default = d.value.filter(|_| is_int_literal(&d.value_text))?;
    let values = if default == 0 { vec![1, 2, 4, 8] } else { factor_values(default) };
    Some(param(name, ParamKind::Define, default, values, format!("`#define {name}` at line {}, used by {used_at}", unit.line_at(d.span))))
}

/// Whether the define already sits in an `#ifndef NAME` guard of its own name.
fn is_overridable(unit: &Unit, name: &str, define: Span) -> bool {
    let Some(tree) = unit.doc.tree() else { return false };
    let Some(node) = tree.root_node().descendant_for_byte_range(define.start_byte, define.end_byte) else { return false };
    let Some(def) = std::iter::successors(Some(node), |n| n.parent()).find(|n| n.kind() == "preproc_def") else {
        return false;
    };
    def.parent().is_some_and(|guard| {
        guard.kind() == "preproc_ifdef"
            && unit.text()[guard.byte_range()].starts_with("#ifndef")
            && guard.child_by_field_name("name").is_some_and(|n| &unit.text()[n.byte_range()] == name)
    })
}

fn wrap_in_ifndef(unit: &Unit, name: &str, define: Span) -> TextEdit {
    let text = unit.text();
    let start = text[..define.start_byte].rfind('\n').map_or(0, |i| i + 1);
    let end = text[define.end_byte..].find('\n').map_or(text.len(), |i| define.end_byte + i + 1);
    let line = text[start..end].trim_end_matches('\n');
    TextEdit { range: start..end, new_text: format!("#ifndef {name}\n{line}\n#endif\n") }
}

/// A literal block size at the launches becomes a parameter, with everything in the kernel
/// and at the launches that follows it.
struct BlockSize;

impl Transform for BlockSize {
    fn name(&self) -> &'static str {
        "block-size"
    }

    fn apply(&self, unit: &Unit) -> Outcome {
        let launches: Vec<_> = unit.model.launches_of(&unit.kernel.name).collect();
        let Some(first) = launches.first() else {
            let why = match unit.unreached_launches {
                [] => format!("no launch of `{}` in this file: its block size is decided elsewhere", unit.kernel.name),
                places => format!("no `<<<…>>>` launch of `{}` in this file's own code: its block size is decided at {}", unit.kernel.name, places.join(", ")),
            };
            return Outcome::NotApplicable(why);
        };
        if launches.iter().all(|l| unit.lifted.iter().any(|p| p.name == l.block.text.trim())) {
            return Outcome::NotApplicable(format!("the block size is already the parameter `{}`", first.block.text.trim()));
        }
        if let Some(param) = block_template_param(unit) {
            return Outcome::NotApplicable(format!("the block size is the template parameter `{param}` at every launch"));
        }
        let mut block = None;
        for launch in &launches {
            let line = unit.line_at(launch.block.span);
            let text = launch.block.text.trim();
            let value = match block_source(unit, launch, text) {
                BlockSource::Literal(value) => value,
                BlockSource::Lifted(parts) => {
                    return Outcome::NotApplicable(format!("the block size `{text}` is made of parameters already ({parts})"))
                }
                BlockSource::Constant { value, literal } => return lift_constant(unit, text, value, literal),
                BlockSource::ConstantOfDefine(define) => return lift_define_behind_constant(unit, text, &define),
                BlockSource::Other(why) => return Outcome::Refused(Note { line: Some(line), message: why }),
                BlockSource::RunTime(why) => return Outcome::NotApplicable(why),
            };
            match block {
                None => block = Some(value),
                Some(b) if b != value => {
                    return Outcome::Refused(Note {
                        line: Some(line),
                        message: format!("launches use different block sizes ({b} and {value} at line {line}): lift it by hand"),
                    })
                }
                Some(_) => {}
            }
        }
        let b = block.expect("at least one launch");
        let name = unit.fresh_name("BLOCK_SIZE");
        let mut rewrite = Rewrite { edits: vec![unit.define_block(&name, &b.to_string())], ..Rewrite::default() };
        for launch in &launches {
            rewrite.edits.push(TextEdit { range: launch.block.span.start_byte..launch.block.span.end_byte, new_text: name.clone() });
        }
        let mut grid_spans: Vec<Span> = launches.iter().map(|l| l.grid.span).collect();
        for launch in &launches {
            match grid_local(unit, launch) {
                Some(GridLocal::Own(init)) => grid_spans.push(init),
                Some(GridLocal::Shared(local, init)) if int_literals(unit.slice(init), init.start_byte).iter().any(|(_, v)| *v == b) => {
                    // Its grid keeps dividing by the original block size: smaller blocks would
                    // leave elements without a thread.
                    rewrite.restrictions.push(format!("{name} >= {b}"));
                    rewrite.notes.push(Note {
                        line: Some(unit.line_at(launch.span)),
                        message: format!("the grid `{local}` is shared with other code, so it keeps dividing by {b}: `{name}` is at least {b}"),
                    });
                }
                Some(GridLocal::Shared(..)) | None => {}
            }
        }
        for launch in &launches {
            for ceil in super::host::ceils_of_integer_divisions(&launch.grid.text) {
                rewrite.notes.push(Note {
                    line: Some(unit.line_at(launch.grid.span)),
                    message: format!("`{ceil}` divides integers, which C rounds down before `ceil` sees them: elements past the last whole block of {b} get no thread (a float divisor, or adding {} before dividing, rounds up); the spec launches the grid as the program does", b - 1),
                });
            }
        }
        // Literals of the block size, and of one less (the ceil-division), in the grid's
        // arithmetic. A grid that is one literal (`<<<1, 1>>>`) counts blocks, whatever their size.
        for grid in grid_spans.iter().filter(|g| !is_int_literal(unit.slice(**g))) {
            for (range, literal) in block_literals(unit.slice(*grid), grid.start_byte, b) {
                let new_text = literal.replacement(&name, || ceil_div_term(unit, range.start, &name));
                rewrite.edits.push(TextEdit { range, new_text });
            }
        }
        let mut rewritten_in_kernel = Vec::new();
        let mut sites: Vec<Span> = Vec::new();
        for site in unit.model.tunables_of(&unit.kernel.name) {
            match site.kind {
                TunableKind::LaunchBoundsMaxThreads | TunableKind::LoopStride | TunableKind::SharedArrayDim => {}
                _ => continue,
            }
            sites.push(site.span);
            if site.kind == TunableKind::SharedArrayDim && !is_int_literal(unit.slice(site.span)) {
                // The same expression elsewhere in the kernel counts the array's elements
                // (`for (w = 0; w < 256 / 32; ++w)`): it follows the array. A bare literal
                // could mean anything, so it only gets a note below.
                sites.extend(occurrences_in_body(unit, unit.slice(site.span)).into_iter().filter(|o| o.start_byte != site.span.start_byte));
            }
        }
        for site in sites {
            let is_bound = unit.kernel.launch_bounds.as_ref().is_some_and(|lb| lb.max_threads.span == site);
            for (range, value) in int_literals(unit.slice(site), site.start_byte) {
                if value == b {
                    rewritten_in_kernel.push(range.start);
                    rewrite.edits.push(TextEdit { range, new_text: name.clone() });
                } else if is_bound && is_int_literal(unit.slice(site)) {
                    rewrite.restrictions.push(format!("{name} <= {value}"));
                }
            }
        }
        // Other literals equal to the block size, or to half of it, may encode it: say where.
        if let Some(body) = unit.body() {
            let body_span = Span::of(body);
            for (range, value) in int_literals(unit.slice(body_span), body_span.start_byte) {
                if (value == b || value * 2 == b) && !rewritten_in_kernel.contains(&range.start) {
                    rewrite.notes.push(Note {
                        line: Some(unit.line_of(range.start)),
                        message: format!("literal {value} left as it is: if it depends on the block size, verification will fail for other values of {name}"),
                    });
                }
            }
        }
        rewrite.edits.sort_by_key(|e| e.range.start);
        rewrite.edits.dedup();
        rewrite.notes.dedup();
        let lines: Vec<String> = launches.iter().map(|l| unit.line_at(l.span).to_string()).collect();
        let origin = format!("block size {b} of the launches at line {}", lines.join(", "));
        rewrite.params.push(param(&name, ParamKind::Define, b, block_values(), origin));
        rewrite.summary = format!("block size {b} is `{name}` at {} launch(es) and {} place(s) in the kernel", launches.len(), rewritten_in_kernel.len());
        Outcome::Applied(rewrite)
    }
}

/// The lifted template parameter whose value every launch also uses as its literal block size
/// (`k<half, 256><<<rows, 256>>>`).
fn block_template_param(unit: &Unit) -> Option<String> {
    let lifted_templates: Vec<(usize, &str)> = unit
        .kernel
        .template_params
        .iter()
        .enumerate()
        .filter(|(_, tp)| unit.lifted.iter().any(|p| p.name == tp.name && p.kind == ParamKind::Template))
        .map(|(i, tp)| (i, tp.name.as_str()))
        .collect();
    lifted_templates.into_iter().find_map(|(index, name)| {
        let mut launches = unit.model.launches_of(&unit.kernel.name).peekable();
        launches.peek()?;
        launches
            .all(|l| {
                let block = int_literal(&l.block.text);
                block.is_some() && l.template_args.get(index).and_then(|a| a.value) == block
            })
            .then(|| name.to_string())
    })
}

enum BlockSource {
    Literal(i64),
    /// A `dim3` or name whose parts are all lifted parameters (or 1).
    Lifted(String),
    /// A file-scope `constexpr`/`const` integer, with the span of its literal initial value.
    Constant { value: i64, literal: Span },
    /// A file-scope constant whose value is a `#define` (what an earlier templatize leaves).
    ConstantOfDefine(String),
    /// A value of the host program (a variable, a parameter): the spec scaffold lifts it as a
    /// launch parameter when it can follow it.
    RunTime(String),
    Other(String),
}

/// Where the block size of a launch comes from.
fn block_source(unit: &Unit, launch: &crate::syntax::LaunchSite, text: &str) -> BlockSource {
    if let Some(value) = int_literal(text) {
        return BlockSource::Literal(value);
    }
    let is_param = |part: &str| part == "1" || unit.lifted.iter().any(|p| p.name == part);
    let parts = dim3_parts(unit, launch, text);
    if let Some(parts) = &parts {
        if parts.iter().all(|p| is_param(p)) {
            return BlockSource::Lifted(parts.join(", "));
        }
        if parts.iter().all(|p| is_param(p) || crate::syntax::is_identifier(p)) {
            return BlockSource::RunTime(format!("the block `{text}` is a `dim3` of ({}), names the host code sets: see launch-choices", parts.join(", ")));
        }
        return BlockSource::Other(format!("the block `{text}` is a `dim3` of ({}): only parts that are `#define`s are lifted", parts.join(", ")));
    }
    match file_constant(unit, text) {
        Some(ConstantValue::Literal(value, literal)) => return BlockSource::Constant { value, literal },
        Some(ConstantValue::Name(name)) if is_param(&name) => return BlockSource::Lifted(name),
        Some(ConstantValue::Name(name)) => return BlockSource::ConstantOfDefine(name),
        None => {}
    }
    let line = unit.line_at(launch.block.span);
    BlockSource::RunTime(format!("the block size `{text}` at line {line} is chosen by the host code at run time: see launch-choices"))
}

/// The parts of a `dim3(...)` block, inline or a local of the launching function.
fn dim3_parts(unit: &Unit, launch: &crate::syntax::LaunchSite, text: &str) -> Option<Vec<String>> {
    if let Some(inner) = text.strip_prefix("dim3").map(str::trim).and_then(|t| t.strip_prefix('(')?.strip_suffix(')')) {
        return Some(inner.split(',').map(|p| p.trim().to_string()).collect());
    }
    let tree = unit.doc.tree()?;
    let at = tree.root_node().descendant_for_byte_range(launch.span.start_byte, launch.span.end_byte)?;
    let function = std::iter::successors(Some(at), |n| n.parent()).find(|n| n.kind() == "function_definition")?;
    let body = &unit.text()[function.byte_range()];
    let start = body.find(&format!("dim3 {text}("))? + "dim3 ".len() + text.len() + 1;
    let end = start + body[start..].find(')')?;
    Some(body[start..end].split(',').map(|p| p.trim().to_string()).collect())
}

enum ConstantValue {
    Literal(i64, Span),
    Name(String),
}

/// The value of a file-scope (or namespace-scope) `constexpr`/`const` integer or enumerator: a
/// literal, or a name.
fn file_constant(unit: &Unit, name: &str) -> Option<ConstantValue> {
    let tree = unit.doc.tree()?;
    let value_of = |value: Node| {
        let value_text = &unit.text()[value.byte_range()];
        match value.kind() {
            "number_literal" => Some(ConstantValue::Literal(parse_int_literal(value_text)?, Span::of(value))),
            "identifier" => Some(ConstantValue::Name(value_text.to_string())),
            _ => None,
        }
    };
    let mut stack = vec![tree.root_node()];
    while let Some(node) = stack.pop() {
        match node.kind() {
            "translation_unit" | "namespace_definition" | "declaration_list" => {
                let mut cursor = node.walk();
                stack.extend(node.named_children(&mut cursor));
            }
            "enum_specifier" | "declaration" if enumerators(node).next().is_some() => {
                for enumerator in enumerators(node) {
                    let declared = enumerator.child_by_field_name("name").map(|n| &unit.text()[n.byte_range()]);
                    if declared == Some(name) {
                        return enumerator.child_by_field_name("value").and_then(value_of);
                    }
                }
            }
            "declaration" => {
                let text = &unit.text()[node.byte_range()];
                if !(text.starts_with("constexpr") || text.starts_with("const ") || text.starts_with("static constexpr")) {
                    continue;
                }
                let mut cursor = node.walk();
                for init in node.children_by_field_name("declarator", &mut cursor).filter(|d| d.kind() == "init_declarator") {
                    let declared = init.child_by_field_name("declarator").map(|d| &unit.text()[d.byte_range()]);
                    let (Some(declared), Some(value)) = (declared, init.child_by_field_name("value")) else { continue };
                    if declared != name {
                        continue;
                    }
                    return value_of(value);
                }
            }
            _ => {}
        }
    }
    None
}

/// The enumerators of an `enum { ... }` item (or of a declaration whose type is one).
fn enumerators(node: Node) -> impl Iterator<Item = Node> {
    let specifier = if node.kind() == "enum_specifier" { Some(node) } else { node.child_by_field_name("type").filter(|t| t.kind() == "enum_specifier") };
    let list = specifier.and_then(|s| s.child_by_field_name("body"));
    let mut cursor = list.map(|l| l.walk());
    let children: Vec<Node> = match (list, cursor.as_mut()) {
        (Some(l), Some(c)) => l.named_children(c).filter(|e| e.kind() == "enumerator").collect(),
        _ => Vec::new(),
    };
    children.into_iter()
}

/// A file-scope constant used as the block size takes its value from a parameter; its uses
/// follow.
fn lift_constant(unit: &Unit, constant: &str, value: i64, literal: Span) -> Outcome {
    let name = unit.fresh_name("BLOCK_SIZE");
    let line = unit.line_at(literal);
    Outcome::Applied(Rewrite {
        edits: vec![
            unit.define_block_at(literal.start_byte.min(unit.kernel.span.start_byte), &name, &value.to_string()),
            TextEdit { range: literal.start_byte..literal.end_byte, new_text: name.clone() },
        ],
        params: vec![param(&name, ParamKind::Define, value, block_values(), format!("block size `{constant}` = {value} at line {line}"))],
        summary: format!("block size `{constant}` = {value} takes its value from `{name}`"),
        ..Rewrite::default()
    })
}

/// A file constant set from a `#define` (`constexpr int kBlock = BLOCK_SIZE;`): the define is
/// the block size parameter.
fn lift_define_behind_constant(unit: &Unit, constant: &str, define: &str) -> Outcome {
    let Some(d) = unit.model.defines.iter().find(|d| d.name == define) else {
        return Outcome::Refused(Note { line: None, message: format!("the block size `{constant}` is `{define}`, which this file does not define") });
    };
    let Some(value) = d.value.filter(|_| is_int_literal(&d.value_text)) else {
        return Outcome::Refused(Note { line: Some(unit.line_at(d.span)), message: format!("`{define}` is not an integer literal: not lifted") });
    };
    let edits = if is_overridable(unit, define, d.span) { Vec::new() } else { vec![wrap_in_ifndef(unit, define, d.span)] };
    let origin = format!("block size `{constant}` = `{define}` = {value} at line {}", unit.line_at(d.span));
    Outcome::Applied(Rewrite {
        edits,
        params: vec![param(define, ParamKind::Define, value, block_values(), origin)],
        summary: format!("block size `{constant}` takes its value from `{define}`"),
        ..Rewrite::default()
    })
}

/// Spans of the exact text `needle` in the kernel body, at token boundaries.
fn occurrences_in_body(unit: &Unit, needle: &str) -> Vec<Span> {
    let Some(body) = unit.body() else { return Vec::new() };
    let base = body.start_byte();
    let hay = &unit.text()[body.byte_range()];
    let is_ident = |b: Option<&u8>| b.is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_');
    hay.match_indices(needle)
        .filter(|(i, _)| !is_ident(i.checked_sub(1).and_then(|j| hay.as_bytes().get(j))) && !is_ident(hay.as_bytes().get(i + needle.len())))
        .map(|(i, _)| Span { start_byte: base + i, end_byte: base + i + needle.len(), ..Span::default() })
        .collect()
}

/// The local a launch takes its grid from (`int blocks = (n + 255) / 256;`).
enum GridLocal {
    /// Its initial value, which only this kernel's launches read.
    Own(Span),
    /// Its name and initial value: other code reads it too.
    Shared(String, Span),
}

fn grid_local(unit: &Unit, launch: &crate::syntax::LaunchSite) -> Option<GridLocal> {
    let name = launch.grid.text.trim();
    if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return None;
    }
    let function = super::strategy::enclosing_function(unit.doc.tree()?.root_node(), launch)?;
    // The last assignment before the launch is the one it sees.
    let declarator = descendants(function)
        .filter(|n| n.kind() == "init_declarator" && n.start_byte() < launch.span.start_byte)
        .filter(|n| n.child_by_field_name("declarator").is_some_and(|d| &unit.text()[d.byte_range()] == name))
        .last()?;
    // A grid that other code uses too (another kernel's launch) keeps its value: rewriting it
    // would make that launch follow this kernel's block size.
    let shared = super::strategy::read_by_other_code(unit, function, declarator, name);
    let init = Span::of(declarator.child_by_field_name("value")?);
    Some(if shared { GridLocal::Shared(name.to_string(), init) } else { GridLocal::Own(init) })
}

/// `block - 1` in a ceil-division, parenthesised unless it is the right operand of a `+`.
fn ceil_div_term(unit: &Unit, literal_start: usize, name: &str) -> String {
    let after_plus = unit.text()[..literal_start].trim_end().ends_with('+');
    if after_plus { format!("{name} - 1") } else { format!("({name} - 1)") }
}

/// A literal of a grid's arithmetic that stands for a block of `block` threads.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum BlockLiteral {
    /// The block's size (`/ 256`).
    Block,
    /// One less, the ceil-division's term (`+ 255`).
    LessOne,
    /// The block's size as a floating-point number, a division made to be rounded up
    /// (`ceil(n / 256.0)`; `single` for `256.f`): the parameter takes its type with a cast.
    Real { single: bool },
}

impl BlockLiteral {
    /// The text that stands for the literal once the block is the parameter `name`; `less_one`
    /// writes one less than it.
    pub(super) fn replacement(self, name: &str, less_one: impl FnOnce() -> String) -> String {
        match self {
            BlockLiteral::Block => name.to_string(),
            BlockLiteral::LessOne => less_one(),
            BlockLiteral::Real { single: true } => format!("(float){name}"),
            BlockLiteral::Real { single: false } => format!("(double){name}"),
        }
    }
}

/// The literals in `text` (a slice starting at `base`) that stand for a block of `block`
/// threads, with their ranges in the file. For a block of 2 a `1` is not taken for one less:
/// it is as often the `- 1` of `(n + 2 - 1) / 2`.
pub(super) fn block_literals(text: &str, base: usize, block: i64) -> Vec<(std::ops::Range<usize>, BlockLiteral)> {
    let integers = int_literals(text, base).into_iter().filter_map(|(range, value)| match value {
        v if v == block => Some((range, BlockLiteral::Block)),
        v if v == block - 1 && block > 2 => Some((range, BlockLiteral::LessOne)),
        _ => None,
    });
    let reals = real_literals(text, base).into_iter().filter(|(_, value, _)| *value == block as f64).map(|(range, _, single)| (range, BlockLiteral::Real { single }));
    let mut literals: Vec<_> = integers.chain(reals).collect();
    literals.sort_by_key(|(range, _)| range.start);
    literals
}

/// Decimal floating-point literals in `text` (`256.0`, `256.`, `256.f`, `1.5F`; a slice
/// starting at `base`), with their ranges in the file, values, and whether each is a `float`.
fn real_literals(text: &str, base: usize) -> Vec<(std::ops::Range<usize>, f64, bool)> {
    let mut out = Vec::new();
    let mut at = 0;
    for word in text.split_inclusive(|c: char| !(c.is_ascii_alphanumeric() || c == '.' || c == '_')) {
        let start = at;
        at += word.len();
        let word = word.trim_end_matches(|c: char| !(c.is_ascii_alphanumeric() || c == '.' || c == '_'));
        if !word.starts_with(|c: char| c.is_ascii_digit()) || !word.contains('.') {
            continue;
        }
        let (digits, single) = match word.strip_suffix(['f', 'F']) {
            Some(digits) => (digits, true),
            None => (word, false),
        };
        if let Ok(value) = digits.parse::<f64>() {
            out.push((base + start..base + start + word.len(), value, single));
        }
    }
    out
}

/// Decimal and hex integer literals in `text` (a slice starting at `base`), with their ranges in
/// the file.
fn int_literals(text: &str, base: usize) -> Vec<(std::ops::Range<usize>, i64)> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let starts_word = i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_' || bytes[i - 1] == b'.');
        if bytes[i].is_ascii_digit() && starts_word {
            let start = i;
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'\'' || bytes[i] == b'.') {
                i += 1;
            }
            if let Some(value) = parse_int_literal(&text[start..i]) {
                out.push((base + start..base + i, value));
            }
        } else {
            i += 1;
        }
    }
    out
}

/// A literal minimum of blocks per SM in `__launch_bounds__`.
struct MinBlocksPerSm;

impl Transform for MinBlocksPerSm {
    fn name(&self) -> &'static str {
        "min-blocks-per-sm"
    }

    fn apply(&self, unit: &Unit) -> Outcome {
        let Some(bounds) = &unit.kernel.launch_bounds else {
            return Outcome::NotApplicable("the kernel has no `__launch_bounds__`".into());
        };
        let Some(min_blocks) = &bounds.min_blocks else {
            return Outcome::NotApplicable(
                "`__launch_bounds__` gives no minimum of blocks per SM; adding one would change the compiled kernel".into(),
            );
        };
        if !is_int_literal(&min_blocks.text) {
            return Outcome::NotApplicable(format!("the minimum of blocks per SM is `{}`, already a name", min_blocks.text));
        }
        let default = min_blocks.value.expect("an integer literal has a value");
        let name = unit.fresh_name("MIN_BLOCKS");
        let origin = format!("`__launch_bounds__` minimum blocks per SM at line {}", unit.line_at(min_blocks.span));
        Outcome::Applied(Rewrite {
            edits: vec![
                unit.define_block(&name, &default.to_string()),
                TextEdit { range: min_blocks.span.start_byte..min_blocks.span.end_byte, new_text: name.clone() },
            ],
            params: vec![param(&name, ParamKind::Define, default, [1, 2, 3, 4, 6, 8], origin)],
            summary: format!("minimum blocks per SM {default} is `{name}`"),
            ..Rewrite::default()
        })
    }
}

/// `#pragma unroll N` takes a parameter; a bare `#pragma unroll` becomes a choice between the
/// compiler's full unroll (0, the default) and a factor.
///
/// nvcc does not expand macros in a `#pragma unroll` argument (NVRTC does), but it accepts a
/// C++ constant there: the pragma names an enumerator set from the parameter's macro. (A
/// namespace-scope `constexpr int` would do for nvcc, but NVRTC emits it into the PTX as a
/// global, and the default instantiation would no longer compile to the original PTX.)
struct PragmaUnroll;

/// The enumerator a pragma reads a parameter through: the parameter's name in lower case.
fn unroll_constant(name: &str) -> String {
    name.to_ascii_lowercase()
}

/// The parameter's guard followed by the constant the pragma reads.
fn unroll_parameter_block(unit: &Unit, name: &str, value: i64) -> TextEdit {
    let mut edit = unit.define_block(name, &value.to_string());
    edit.new_text = format!("{}enum {{ {} = {name} }};\n\n", define_guard(name, &value.to_string()), unroll_constant(name));
    edit
}

impl Transform for PragmaUnroll {
    fn name(&self) -> &'static str {
        "pragma-unroll"
    }

    fn apply(&self, unit: &Unit) -> Outcome {
        let pragmas: Vec<_> = unit.model.tunables_of(&unit.kernel.name).filter(|t| t.kind == TunableKind::PragmaUnroll).collect();
        if pragmas.is_empty() {
            return Outcome::NotApplicable("the kernel has no `#pragma unroll`".into());
        }
        let mut rewrite = Rewrite::default();
        let mut names: Vec<String> = Vec::new();
        let arrays = local_arrays(unit);
        for pragma in pragmas {
            let text = unit.slice(pragma.span);
            let factor = text.trim_start_matches('#').trim_start().trim_start_matches("pragma").trim_start().trim_start_matches("unroll").trim();
            let line = unit.line_of(pragma.span.start_byte);
            let literal = int_literal(factor);
            if !factor.is_empty() && literal.is_none() {
                // A constant set from a parameter (what an earlier templatize wrote) is that
                // parameter; any other name is the author's and stays.
                match file_constant(unit, factor) {
                    Some(ConstantValue::Name(define)) if unit.model.defines.iter().any(|d| d.name == define) => {
                        let known = unit.lifted.iter().chain(&rewrite.params).any(|p| p.name == define);
                        if let Some(p) = define_param(unit, &define, &format!("`#pragma unroll {factor}` at line {line}")).filter(|_| !known) {
                            rewrite.params.push(p);
                        }
                    }
                    _ => rewrite.notes.push(Note { line: Some(line), message: format!("`#pragma unroll {factor}` already uses a name") }),
                }
                continue;
            }
            if factor.is_empty() && (guarded_by_unroll_param(unit, pragma.span.start_byte) || unrolls_parameter_loop(unit, pragma.span.end_byte)) {
                continue;
            }
            if factor.is_empty() && indexes_local_array(unit, &arrays, pragma.span.end_byte) {
                rewrite.notes.push(Note { line: Some(line), message: "`#pragma unroll` stays: its loop indexes an array of the thread's by the loop's variable, which stays in registers only unrolled fully".into() });
                continue;
            }
            let name = next_name(unit, "UNROLL", &names);
            let constant = unroll_constant(&name);
            let indent = &unit.text()[super::line_start(unit.text(), pragma.span.start_byte)..pragma.span.start_byte];
            if let Some(default) = literal {
                let at = pragma.span.end_byte - factor.len();
                rewrite.edits.push(TextEdit { range: at..pragma.span.end_byte, new_text: constant });
                rewrite.edits.push(unroll_parameter_block(unit, &name, default));
                let origin = format!("`#pragma unroll {default}` at line {line}");
                rewrite.params.push(param(&name, ParamKind::Define, default, factor_values(default).into_iter().chain([1]), origin));
            } else {
                let new_text = format!("#if {name} == 0\n{indent}#pragma unroll\n{indent}#else\n{indent}#pragma unroll {constant}\n{indent}#endif");
                rewrite.edits.push(TextEdit { range: pragma.span.start_byte..pragma.span.end_byte, new_text });
                rewrite.edits.push(unroll_parameter_block(unit, &name, 0));
                let origin = format!("`#pragma unroll` at line {line}; 0 lets the compiler unroll fully");
                rewrite.params.push(param(&name, ParamKind::Define, 0, [1, 2, 4, 8], origin));
            }
            names.push(name);
        }
        if names.is_empty() && rewrite.params.is_empty() {
            return Outcome::NotApplicable("every `#pragma unroll` already uses a parameter".into());
        }
        let relifted: Vec<String> = rewrite.params.iter().map(|p| p.name.clone()).filter(|n| !names.contains(n)).collect();
        names.extend(relifted);
        rewrite.summary = format!("unroll factors are {}", names.join(", "));
        Outcome::Applied(rewrite)
    }
}

/// The unroll factor of a loop the code leaves to the compiler, as a parameter whose default
/// 0 leaves it there: `#pragma unroll N` only under `#if NAME > 0` (a pragma of 0 is ignored,
/// but with a warning). Only innermost loops, those with a run-time trip count first, at most
/// [`UNROLLED_LOOPS`] of them; templatize offers it only to a kernel whose launch it found and
/// that has no other execution choice (its block fixed by the algorithm, as cuda-samples'
/// `clock`), so that other kernels' spaces stay small.
pub(super) struct LoopUnroll;

/// How many of a kernel's loops [`LoopUnroll`] makes a choice of: each multiplies the space by five.
const UNROLLED_LOOPS: usize = 2;

impl Transform for LoopUnroll {
    fn name(&self) -> &'static str {
        "loop-unroll"
    }

    fn apply(&self, unit: &Unit) -> Outcome {
        let Some(body) = unit.body() else { return Outcome::NotApplicable("the kernel has no body".into()) };
        let arrays = local_arrays(unit);
        let mut loops: Vec<Node> = descendants(body).filter(|n| is_unrollable_loop(unit, *n, &arrays)).collect();
        if loops.is_empty() {
            return Outcome::NotApplicable("the kernel has no loop whose unrolling is the compiler's choice".into());
        }
        // A loop of a constant trip count the compiler unrolls fully already; one that runs as
        // long as the data says is where a factor is a real choice.
        loops.sort_by_key(|l| has_constant_trip_count(unit, *l));
        loops.truncate(UNROLLED_LOOPS);
        loops.sort_by_key(Node::start_byte);
        let at_margin = super::layout::pragmas_at_margin(unit.text());
        let mut rewrite = Rewrite::default();
        let mut names: Vec<String> = Vec::new();
        let mut said: Vec<String> = Vec::new();
        for for_loop in loops {
            let stem = loop_variable(unit, for_loop).map_or_else(|| "UNROLL".to_string(), |v| format!("UNROLL_{}", v.to_ascii_uppercase()));
            let name = next_name(unit, &stem, &names);
            let line_start = super::line_start(unit.text(), for_loop.start_byte());
            let indent = if at_margin { "" } else { &unit.text()[line_start..for_loop.start_byte()] };
            let guarded = format!("{indent}#if {name} > 0\n{indent}#pragma unroll {}\n{indent}#endif\n", unroll_constant(&name));
            rewrite.edits.push(TextEdit { range: line_start..line_start, new_text: guarded });
            rewrite.edits.push(unroll_parameter_block(unit, &name, 0));
            let line = unit.line_of(for_loop.start_byte());
            let origin = format!("unroll factor of the loop at line {line}; 0 leaves it to the compiler");
            rewrite.params.push(param(&name, ParamKind::Define, 0, [1, 2, 4, 8], origin));
            said.push(format!("{name} (line {line})"));
            names.push(name);
        }
        rewrite.summary = format!("the launch makes no choice that may vary alone, so the loops' unroll factors are parameters: {}", said.join(", "));
        Outcome::Applied(rewrite)
    }
}

/// Whether `node` is a `for` loop [`LoopUnroll`] may put a pragma on: a statement of its own
/// line in a block, holding no other loop, under no `#pragma` (nor a macro that stands for one,
/// `CUTLASS_PRAGMA_UNROLL`) and no `#if` of the kernel's (an
/// earlier rewrite's branches), not counting to a parameter of the file, and indexing none of
/// the thread's arrays (a partial unroll would move them to memory).
fn is_unrollable_loop(unit: &Unit, node: Node, arrays: &BTreeSet<&str>) -> bool {
    let text = unit.text();
    if node.kind() != "for_statement" || node.parent().is_none_or(|p| p.kind() != "compound_statement") {
        return false;
    }
    let line_start = super::line_start(text, node.start_byte());
    let own_line = text[line_start..node.start_byte()].trim().is_empty();
    let previous_line = text[..line_start].trim_end().rsplit('\n').next().unwrap_or("").trim_start();
    let nested_loop = descendants(node).skip(1).any(|n| matches!(n.kind(), "for_statement" | "while_statement" | "do_statement"));
    let body = unit.body().map(|b| b.id());
    let under_directive = std::iter::successors(node.parent(), |n| n.parent()).take_while(|n| Some(n.id()) != body).any(|n| n.kind().starts_with("preproc_"));
    own_line
        && !previous_line.starts_with('#')
        && !is_pragma_macro(previous_line)
        && !nested_loop
        && !under_directive
        && !unrolls_parameter_loop(unit, line_start)
        && !indexes_local_array(unit, arrays, line_start)
}

/// The variable a `for` loop declares or counts with (`d` of `for (int d = …; …)`).
fn loop_variable<'u>(unit: &Unit<'u>, for_loop: Node) -> Option<&'u str> {
    let initializer = for_loop.child_by_field_name("initializer")?;
    let name = descendants(initializer).find(|n| n.kind() == "identifier")?;
    Some(&unit.text()[name.byte_range()])
}

/// Whether the loop's trip count is fixed where it is compiled: it counts from a literal to a
/// literal or a macro (`for (int i = 0; i < 8; ++i)`, `k < BLOCK_SIZE`).
fn has_constant_trip_count(unit: &Unit, for_loop: Node) -> bool {
    let text = unit.text();
    let Some(condition) = for_loop.child_by_field_name("condition") else { return false };
    let Some(bound) = condition.child_by_field_name("right") else { return false };
    let bound = text[bound.byte_range()].trim();
    let starts_at_literal = for_loop.child_by_field_name("initializer").is_some_and(|i| text[i.byte_range()].rsplit('=').next().is_some_and(|v| is_int_literal(v.trim().trim_end_matches(';'))));
    starts_at_literal && (is_int_literal(bound) || unit.model.defines.iter().any(|d| d.name == bound))
}

/// The names of the kernel's own arrays (`float acc[4]`, fragments), not `__shared__` ones.
fn local_arrays<'u>(unit: &'u Unit) -> BTreeSet<&'u str> {
    let Some(body) = unit.body() else { return BTreeSet::new() };
    let text = unit.text();
    descendants(body)
        .filter(|n| n.kind() == "declaration" && !text[n.byte_range()].contains("__shared__"))
        .flat_map(|declaration| descendants(declaration).filter(|n| n.kind() == "array_declarator").collect::<Vec<_>>())
        .filter_map(|array| descendants(array).find(|n| n.kind() == "identifier").map(|n| &text[n.byte_range()]))
        .collect()
}

/// Whether the loop the pragma ending at `pragma_end` unrolls indexes one of the kernel's local
/// arrays (`acc[i]`, `frag[i][j]`) by its own variable: such an array is kept in registers only
/// when every index is a constant, which a full unroll makes and a partial one does not.
fn indexes_local_array(unit: &Unit, local_arrays: &BTreeSet<&str>, pragma_end: usize) -> bool {
    let Some(body) = unit.body() else { return false };
    let text = unit.text();
    let Some(for_loop) = descendants(body).find(|n| n.kind() == "for_statement" && n.start_byte() >= pragma_end && text[pragma_end..n.start_byte()].trim().is_empty()) else { return false };
    let Some(variable) = loop_variable(unit, for_loop) else { return false };
    descendants(for_loop).filter(|n| n.kind() == "subscript_expression").any(|subscript| {
        let mut base = subscript;
        while let Some(inner) = base.child_by_field_name("argument").filter(|a| a.kind() == "subscript_expression") {
            base = inner;
        }
        let array = base.child_by_field_name("argument").map(|a| &text[a.byte_range()]);
        let index = &text[subscript.byte_range()][array.map_or(0, str::len)..];
        array.is_some_and(|a| local_arrays.contains(a)) && super::contains_identifier(index, variable)
    })
}

/// Whether a bare `#pragma unroll` is the full-unroll branch of an earlier templatize:
/// `#if NAME == 0` on the line above it.
fn guarded_by_unroll_param(unit: &Unit, pragma_start: usize) -> bool {
    let before = &unit.text()[..super::line_start(unit.text(), pragma_start)];
    let previous = before.trim_end().rsplit('\n').next().unwrap_or("").trim();
    previous.strip_prefix("#if ").and_then(|c| c.strip_suffix("== 0")).is_some_and(|name| {
        let name = name.trim();
        unit.lifted.iter().any(|p| p.name == name) || unit.model.defines.iter().any(|d| d.name == name)
    })
}

/// Whether the bare `#pragma unroll` ending at `pragma_end` unrolls a loop that counts to a
/// parameter of the file (an earlier templatize's tile loop `for (int tm = 0; tm < NAME_TM;
/// ++tm)`, or its loop over a row's kept vectors): their arrays stay in registers only when the
/// loop is unrolled fully, so the pragma is no choice.
fn unrolls_parameter_loop(unit: &Unit, pragma_end: usize) -> bool {
    let next = unit.text()[pragma_end..].trim_start();
    let Some(header) = next.strip_prefix("for").and_then(|h| h.trim_start().strip_prefix('(')).and_then(|h| h.split(')').next()) else { return false };
    let bound = header.split(';').nth(1).and_then(|c| c.split('<').nth(1)).map(str::trim).unwrap_or("");
    bound.starts_with(unit.prefix) && unit.model.defines.iter().any(|d| d.name == bound)
}

/// A fresh parameter name that also avoids the names this transform has already chosen.
fn next_name(unit: &Unit, stem: &str, chosen: &[String]) -> String {
    let first = unit.fresh_name(stem);
    if !chosen.contains(&first) {
        return first;
    }
    (2..).map(|i| unit.fresh_name(&format!("{stem}_{i}"))).find(|n| !chosen.contains(n)).expect("unbounded")
}

/// The elements a padding parameter adds to a tile's rows.
const PADDING_VALUES: [i64; 4] = [0, 1, 2, 4];

/// A padding parameter on the inner dimension of 2-D shared tiles, to trade memory for fewer
/// bank conflicts. Only where every use of the tile indexes both dimensions, so the padding
/// cannot change which element any access reaches.
struct SharedPadding;

impl Transform for SharedPadding {
    fn name(&self) -> &'static str {
        "shared-padding"
    }

    fn apply(&self, unit: &Unit) -> Outcome {
        let tiles: Vec<_> = unit.kernel.shared.iter().filter(|s| !s.is_extern && s.dims.len() == 2).collect();
        if tiles.is_empty() {
            return Outcome::NotApplicable("the kernel has no 2-D `__shared__` array".into());
        }
        let Some(body) = unit.body() else { return Outcome::NotApplicable("the kernel has no body".into()) };
        let mut rewrite = Rewrite::default();
        let mut names: Vec<String> = Vec::new();
        let wide = unit.doc.tree().map(|t| crate::syntax::macros::address_taking_macros(unit.text(), t.root_node())).unwrap_or_default();
        for tile in tiles {
            let line = unit.line_at(tile.span);
            let padded_by = unit.model.defines.iter().find(|d| d.name.contains("PAD") && super::contains_identifier(&tile.dims[1].text, &d.name));
            if let Some(pad) = padded_by {
                rewrite.notes.push(Note { line: Some(line), message: format!("`{}` is already padded by `{}`", tile.name, pad.name) });
                continue;
            }
            if let Some(bad) = non_element_use(unit, body, &tile.name) {
                rewrite.notes.push(Note {
                    line: Some(unit.line_of(bad)),
                    message: format!("`{}` is used other than as `{}[i][j]` here: padding it could change what this reads", tile.name, tile.name),
                });
                continue;
            }
            let name = next_name(unit, &format!("PAD_{}", tile.name.to_ascii_uppercase()), &names);
            let inner = &tile.dims[1];
            let inner_text = inner.text.trim();
            let simple = inner_text.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            let new_text = if simple { format!("{inner_text} + {name}") } else { format!("({inner_text}) + {name}") };
            rewrite.edits.push(TextEdit { range: inner.span.start_byte..inner.span.end_byte, new_text });
            rewrite.edits.push(unit.define_block(&name, "0"));
            // A tile read or written as wider values (`FLOAT4(s_a[i][j])`) keeps its rows 16-byte
            // aligned: pads of whole 16-byte groups.
            let values = match vector_accessed(unit, body, &tile.name, &wide) {
                true => {
                    let group = 16 / element_bytes(&tile.element_type);
                    vec![0, group, 2 * group]
                }
                false => PADDING_VALUES.to_vec(),
            };
            let origin = format!("padding of the inner dimension of `__shared__ {}` at line {line}", tile.name);
            rewrite.params.push(param(&name, ParamKind::Define, 0, values, origin));
            names.push(name);
        }
        if names.is_empty() {
            let note = rewrite.notes.remove(0);
            if note.message.contains("already padded") {
                return Outcome::NotApplicable(note.message);
            }
            return Outcome::Refused(note);
        }
        rewrite.summary = format!("shared tiles padded by {}", names.join(", "));
        Outcome::Applied(rewrite)
    }
}

/// Whether an element of `array` is passed to one of the `wide` macros, which take its address.
fn vector_accessed(unit: &Unit, body: Node, array: &str, wide: &std::collections::HashSet<String>) -> bool {
    let text = unit.text();
    descendants(body).filter(|n| n.kind() == "call_expression").any(|call| {
        let callee = call.child_by_field_name("function").map(|f| &text[f.byte_range()]).unwrap_or_default();
        let first = call.child_by_field_name("arguments").and_then(|a| a.named_child(0));
        wide.contains(callee) && first.is_some_and(|arg| crate::syntax::identifiers_in(&text[arg.byte_range()]).next() == Some(array))
    })
}

/// The bytes of a `__shared__` element type: 2 for halves, 8 for doubles, else 4.
fn element_bytes(element_type: &str) -> i64 {
    match element_type.trim() {
        t if t.contains("half") || t.contains("bfloat16") || t.contains("short") => 2,
        t if t.contains("double") || t.contains("long") => 8,
        _ => 4,
    }
}

/// The offset of the first use of `array` in `body` that is not a full `array[i][j]` element
/// access (`sizeof`, a pointer taken from a row, passing the array on).
fn non_element_use(unit: &Unit, body: Node, array: &str) -> Option<usize> {
    let text = unit.text();
    descendants(body)
        .filter(|n| n.kind() == "identifier" && &text[n.byte_range()] == array)
        .find(|node| {
            let is_declaration = node.parent().is_some_and(|p| p.kind() == "array_declarator");
            let inner = node.parent().filter(|p| p.kind() == "subscript_expression" && p.child_by_field_name("argument") == Some(*node));
            let outer = inner.and_then(|i| i.parent()).filter(|o| o.kind() == "subscript_expression" && o.child_by_field_name("argument") == inner);
            // `&tile[0][0]` is a pointer into the layout that padding changes.
            let address_taken = outer.and_then(|o| o.parent()).is_some_and(|p| p.kind() == "pointer_expression" && text[p.byte_range()].starts_with('&'));
            !is_declaration && (outer.is_none() || address_taken)
        })
        .map(|n| n.start_byte())
}

/// Compiler options as parameters of the spec: fast math and a register cap.
struct CompilerOptions;

impl Transform for CompilerOptions {
    fn name(&self) -> &'static str {
        "compiler-options"
    }

    fn apply(&self, _unit: &Unit) -> Outcome {
        Outcome::Applied(Rewrite {
            params: vec![
                param("fast_math", ParamKind::FastMath, 0, [0, 1], "`--use_fast_math` when 1".into()),
                param("max_registers", ParamKind::MaxRegisters, 0, [0, 32, 64, 128, 255], "`--maxrregcount` when above 0".into()),
            ],
            summary: "fast math and a register cap are spec parameters".into(),
            ..Rewrite::default()
        })
    }
}
