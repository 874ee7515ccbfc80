//! The resources a client can read: a source file's tuning spec, and a kernel's latest results.
//! Listed are the specs under the server's working folder (the `.gitignore` respected); any
//! other file is reachable through the templates.

use std::path::{Path, PathBuf};

use rmcp::model::{ErrorData, Resource, ResourceContents, ResourceTemplate};

const SPEC: &str = "cutune://spec/";
const RESULTS: &str = "cutune://results/";
/// The most specs listed: a client wanting more reads them through the template.
const MOST_LISTED: usize = 200;

pub fn templates() -> Vec<ResourceTemplate> {
    vec![
        ResourceTemplate::new(format!("{SPEC}{{+file}}"), "spec")
            .with_description("The tuning spec (`FILE.cutune.toml`) of a CUDA source file: its kernels' parameters, shapes, arguments and restrictions.")
            .with_mime_type("application/toml"),
        ResourceTemplate::new(format!("{RESULTS}{{+file}}{{?kernel}}"), "results")
            .with_description("The latest tuning results of a kernel of a CUDA source file, as the `results` tool gives them.")
            .with_mime_type("application/json"),
    ]
}

/// The specs under `folder`, each with the results of its kernels.
pub fn list(folder: &Path) -> Vec<Resource> {
    let mut listed = Vec::new();
    let walk = ignore::WalkBuilder::new(folder).max_depth(Some(12)).build();
    let specs = walk.flatten().filter(|e| e.file_name().to_string_lossy().ends_with(".cutune.toml"));
    for entry in specs {
        let Some((source, kernels)) = read_spec(entry.path()) else { continue };
        let shown = source.strip_prefix(folder).unwrap_or(&source).display().to_string();
        listed.push(Resource::new(format!("{SPEC}{shown}"), format!("spec of {shown}")).with_mime_type("application/toml"));
        for kernel in kernels {
            listed.push(Resource::new(format!("{RESULTS}{shown}?kernel={kernel}"), format!("results of {kernel}")).with_mime_type("application/json"));
        }
        if listed.len() >= MOST_LISTED {
            break;
        }
    }
    listed
}

/// The contents behind `uri`, or an error that says what is wrong with it.
pub fn read(uri: &str) -> Result<ResourceContents, ErrorData> {
    if let Some(file) = uri.strip_prefix(SPEC) {
        let spec = crate::spec::spec_path_for(Path::new(file));
        let text = std::fs::read_to_string(&spec).map_err(|e| ErrorData::resource_not_found(format!("{}: {e} (templatize a kernel of {file} to write it)", spec.display()), None))?;
        return Ok(ResourceContents::text(text, uri).with_mime_type("application/toml"));
    }
    if let Some(rest) = uri.strip_prefix(RESULTS) {
        let Some((file, kernel)) = rest.split_once("?kernel=") else {
            return Err(ErrorData::invalid_params(format!("{uri}: name the kernel, as {RESULTS}FILE?kernel=NAME"), None));
        };
        let path = super::tools::path_of(file).map_err(|e| ErrorData::resource_not_found(e, None))?;
        let results = super::tools::results(&path, kernel).map_err(|e| ErrorData::resource_not_found(e, None))?;
        let text = serde_json::to_string_pretty(&results).map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        return Ok(ResourceContents::text(text, uri).with_mime_type("application/json"));
    }
    Err(ErrorData::resource_not_found(format!("{uri}: cutune's resources are {SPEC}FILE and {RESULTS}FILE?kernel=NAME"), None))
}

/// The source file a spec is of (the one beside it of the same stem, as the tuner pairs them,
/// else the one it names), and its kernels; `None` for a spec that does not parse or whose
/// source is gone.
fn read_spec(path: &Path) -> Option<(PathBuf, Vec<String>)> {
    let text = std::fs::read_to_string(path).ok()?;
    let spec = crate::spec::parse_spec(&text).0?;
    let stem = path.file_name()?.to_str()?.strip_suffix(".cutune.toml")?;
    let beside = ["cu", "cuh"].map(|ext| path.with_file_name(format!("{stem}.{ext}")));
    let source = beside.into_iter().chain([path.parent()?.join(&spec.source)]).find(|p| p.is_file())?;
    Some((source, spec.kernels.into_iter().map(|k| k.name).collect()))
}
