//! `#define`s whose trailing comment says how they follow from other macros (`#define
//! BLOCK_ROW_WARPS 2  // BLOCK_COLS / WARP_COLS`). The author wrote the number and kept the
//! derivation beside it; a configuration that changes one side alone is a kernel the author
//! never meant (cuda_hgemm's tiles: 31 of 40 candidates failed to compile and 5 faulted with the
//! defines varied apart). Each such derivation is a restriction of the spec.

use crate::syntax::{eval_constant, identifiers_in, size_of_type, Document};

/// A `#define NAME VALUE  // EXPRESSION` whose expression, over the file's other macros, gives
/// VALUE.
#[derive(Clone, Debug, PartialEq)]
struct Derivation {
    name: String,
    value: i64,
    /// The comment's expression, C's, its `sizeof`s made numbers.
    expression: String,
}

/// The restrictions the derivations of `doc` give the `lifted` parameters, C's: each lifted
/// side is its name, each other macro its number (`BLOCK_ROW_WARPS == BLOCK_COLS / 64`,
/// `4 == BLOCK_ROWS / 64`), a side of numbers alone worked out (`WARP_ROW_TILES == 8`).
pub(super) fn restrictions(doc: &Document, macro_value: &dyn Fn(&str) -> Option<i64>, lifted: &dyn Fn(&str) -> bool) -> Vec<String> {
    let value_of = |name: &str| value_in(doc, name).or_else(|| macro_value(name));
    documented(doc, macro_value)
        .into_iter()
        .filter(|derivation| lifted(&derivation.name) || identifiers_in(&derivation.expression).any(lifted))
        .map(|derivation| {
            let side = if lifted(&derivation.name) { derivation.name.clone() } else { derivation.value.to_string() };
            let other_side = super::renamed_until_settled(&derivation.expression, |word| (!lifted(word)).then(|| value_of(word)).flatten().map(|v| v.to_string()));
            let other_side = eval_constant(&other_side, &|_| None).map_or(other_side, |number| number.to_string());
            format!("{side} == {other_side}")
        })
        .collect()
}

/// The value of the `#define` of `doc` named `name`, when it is a number.
fn value_in(doc: &Document, name: &str) -> Option<i64> {
    doc.model().defines.iter().find(|d| d.name == name).and_then(|d| d.value)
}

/// The derivations the `#define`s of `doc` write in their comments; `macro_value` gives the
/// value of a macro defined elsewhere (an included header's).
fn documented(doc: &Document, macro_value: &dyn Fn(&str) -> Option<i64>) -> Vec<Derivation> {
    let value_of = |name: &str| value_in(doc, name).or_else(|| macro_value(name));
    doc.model()
        .defines
        .iter()
        .filter_map(|define| {
            let value = define.value?;
            let line = doc.text()[define.span.start_byte..].lines().next()?;
            let (_, comment) = line.split_once("//")?;
            let expression = with_type_sizes(comment.trim())?;
            let is_expression = expression.chars().all(|c| c.is_ascii_alphanumeric() || " _+-*/%()".contains(c)) && identifiers_in(&expression).any(|w| w != define.name);
            (is_expression && eval_constant(&expression, &value_of) == Some(value)).then(|| Derivation { name: define.name.clone(), value, expression })
        })
        .collect()
}

/// `text` with each `sizeof(type)` its size in bytes; `None` when a type's size is not known.
fn with_type_sizes(text: &str) -> Option<String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("sizeof") {
        out.push_str(&rest[..at]);
        let after = rest[at + "sizeof".len()..].trim_start().strip_prefix('(')?;
        let (ty, tail) = after.split_once(')')?;
        out.push_str(&size_of_type(ty.trim())?.to_string());
        rest = tail;
    }
    out.push_str(rest);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_define_whose_comment_works_out_its_value_is_a_derivation() {
        let text = "#define WARP_COLS 64\n#define BLOCK_COLS 128\n#define BLOCK_ROW_WARPS 2  // BLOCK_COLS / WARP_COLS\n#define CHUNK_K 2\n#define CHUNK_LINE_BYTES 64  // CHUNK_K * 16 * sizeof(half)\n#define STALE 3  // BLOCK_COLS / WARP_COLS\n#define NOTE 8  // eight rows, see the paper\n#define PADDED 136  // BLOCK_COLS + PADDING\n";
        let doc = Document::new(text.to_string());
        let elsewhere = |name: &str| (name == "PADDING").then_some(8);
        let found: Vec<(String, i64, String)> = documented(&doc, &elsewhere).into_iter().map(|d| (d.name, d.value, d.expression)).collect();
        assert_eq!(
            found,
            [
                ("BLOCK_ROW_WARPS".to_string(), 2, "BLOCK_COLS / WARP_COLS".to_string()),
                ("CHUNK_LINE_BYTES".to_string(), 64, "CHUNK_K * 16 * 2".to_string()),
                ("PADDED".to_string(), 136, "BLOCK_COLS + PADDING".to_string()),
            ]
        );
        // With `BLOCK_COLS` and `CHUNK_K` lifted: the others are their numbers.
        let lifted = |name: &str| name == "BLOCK_COLS" || name == "CHUNK_K";
        assert_eq!(restrictions(&doc, &elsewhere, &lifted), ["2 == BLOCK_COLS / 64", "64 == CHUNK_K * 16 * 2", "136 == BLOCK_COLS + 8"]);
    }
}
