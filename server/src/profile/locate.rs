//! Which `__global__` function of the workspace a profiled kernel is.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::syntax::{Document, Kernel};
use crate::workspace::Workspace;

use super::{KernelName, RankedKernel};

/// A kernel definition in the workspace's sources.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SourceKernel {
    pub file: PathBuf,
    /// 1-based, the line of the kernel's name.
    pub line: usize,
    pub kernel: String,
}

/// Fills in `source` for each ranked kernel the workspace defines. A name defined in several
/// files is matched by parameter count, then by template parameter count; what stays ambiguous
/// takes the first file in path order.
pub fn locate_kernels(workspace: &Workspace, kernels: &mut [RankedKernel]) {
    let mut parsed: HashMap<PathBuf, Vec<Kernel>> = HashMap::new();
    for ranked in kernels.iter_mut() {
        let base = &ranked.kernel.base;
        if base.is_empty() {
            continue;
        }
        let candidates: Vec<&Path> = workspace.kernel_files_mentioning(base).collect();
        for path in &candidates {
            parsed.entry(path.to_path_buf()).or_insert_with(|| kernels_in(path));
        }
        let definitions: Vec<(&Path, &Kernel)> = candidates
            .iter()
            .flat_map(|&path| parsed[path].iter().filter(|k| k.is_definition && &k.name == base).map(move |k| (path, k)))
            .collect();
        ranked.source = best_match(&ranked.kernel, &definitions).map(|(path, kernel)| SourceKernel {
            file: path.to_path_buf(),
            line: kernel.name_span.start.line as usize + 1,
            kernel: kernel.name.clone(),
        });
    }
}

fn kernels_in(path: &Path) -> Vec<Kernel> {
    match std::fs::read(path) {
        Ok(bytes) => Document::new(String::from_utf8_lossy(&bytes).into_owned()).model().kernels.clone(),
        Err(_) => Vec::new(),
    }
}

fn best_match<'a>(name: &KernelName, definitions: &[(&'a Path, &'a Kernel)]) -> Option<(&'a Path, &'a Kernel)> {
    let score = |kernel: &Kernel| {
        let parameters = name.parameters.as_ref().is_none_or(|p| p.len() == kernel.params.len());
        let templates = name.template_args.len() == kernel.template_params.len();
        (parameters, templates)
    };
    // `max_by_key` keeps the last of equals; the first in path order should win.
    definitions.iter().rev().max_by_key(|(_, kernel)| score(kernel)).copied()
}
