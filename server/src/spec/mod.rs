//! The tuning spec: a TOML file beside the `.cu` file (see `docs/spec.md`).

mod model;

pub use model::*;
