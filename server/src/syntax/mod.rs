//! Stage 1 of the data flow: parse a CUDA file with tree-sitter and build its [`KernelModel`].
//!
//! Parsing never fails: a broken file still yields a model, plus its syntax errors.

mod access;
mod checks;
mod consteval;
mod document;
mod environment;
mod extract;
mod float_eval;
mod grammar_view;
#[cfg(test)]
mod fixture_tests;
mod hover;
pub mod host;
pub mod python;
pub mod macros;
pub mod preprocess;
mod incremental;
mod list_conditionals;
mod model;

pub use access::{access_of, only_stored, Access};
pub use consteval::{eval as eval_constant, integer_constant_line, parse_int_literal, host_type_definition, size_of_type, vector_type, HOST_TYPES};
pub use float_eval::eval_float;
pub use grammar_view::is_pragma_macro;
pub use checks::{check, format_bytes, Finding, Severity};
pub use document::{parse_source, parse_source_and_hidden_macros, Analysis, Change, Document, EditError, Encoding, TextPosition, MAX_ANALYZED_BYTES};
pub use extract::{balancing_position, compile_queries, descendants, function_definitions_in, identifiers_in, is_identifier, matching_paren, rename_identifiers_in, words_at};
pub use hover::{hover, HoverInfo};
pub use list_conditionals::{defines_in, has_conditional_in_list, Defines};
pub use model::*;

pub fn language() -> tree_sitter::Language {
    tree_sitter_cuda::LANGUAGE.into()
}

/// Parses and analyses `text` in one go: what `cutune kernels` and the tests use.
pub fn analyze(text: &str) -> KernelModel {
    Document::new(text.to_string()).model().as_ref().clone()
}
