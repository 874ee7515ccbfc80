//! cutune: find, templatize and tune CUDA kernels from the editor.
//!
//! One module per stage of the data flow (see `DESIGN.md`); only [`lsp`] knows the protocol.

pub mod cli;
pub mod compile;
pub mod gpu;
pub mod lsp;
pub mod mcp;
pub mod profile;
pub mod report;
pub mod search;
pub mod slice;
pub mod sol;
pub mod space;
pub mod spec;
pub mod store;
pub mod syntax;
pub mod template;
pub mod tune;
pub mod verify;
pub mod workspace;
