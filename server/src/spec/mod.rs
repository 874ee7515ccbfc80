//! The tuning spec: a TOML file beside the `.cu` file (see `docs/spec.md`).
//!
//! - `model`: the data, through serde.
//! - [`expr`]: the expression language of grid, block, lengths, restrictions and SOL.
//! - [`parse_spec`] (in `validate`) / [`render_spec`] (in `render`): text to model with
//!   positioned diagnostics, and back.
//! - [`t1`]: import from and export to the T1 tuning-problem format (Kernel Tuner, KTT).

pub mod expr;
mod model;
mod render;
pub mod t1;
mod validate;

pub use model::*;
pub use render::render_spec;
pub use validate::{default_environment, line_column, parse_spec, sha256_hex, Severity, SpecDiagnostic};

#[cfg(test)]
mod tests;
