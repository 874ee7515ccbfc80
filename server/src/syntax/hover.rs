//! Hover text for kernels and launch sites, as Markdown.

use std::fmt::Write;

use super::checks::format_bytes;
use super::model::{Kernel, KernelModel, LaunchSite, Span};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HoverInfo {
    /// The text the hover is about, for the editor to highlight.
    pub span: Span,
    pub markdown: String,
}

/// Hover for the byte `offset`: a launch site (its callee or `<<<...>>>`) or a kernel's
/// declaration up to its body.
pub fn hover(model: &KernelModel, offset: usize) -> Option<HoverInfo> {
    if let Some(launch) = model.launches.iter().find(|l| on_launch(l, offset)) {
        let mut md = String::new();
        write_launch(&mut md, launch);
        if let Some(kernel) = model.kernel(&launch.kernel) {
            md.push_str("\n---\n\n");
            write_kernel(&mut md, model, kernel);
        } else {
            let _ = writeln!(md, "\n`{}` is not declared in this file.", launch.kernel);
        }
        return Some(HoverInfo { span: launch.callee_span, markdown: md });
    }
    let kernel = model.kernels.iter().find(|k| {
        let header_end = k.name_span.end_byte.max(k.params.last().map_or(0, |p| p.span.end_byte));
        k.span.start_byte <= offset && offset <= header_end + 1
    })?;
    let mut md = String::new();
    write_kernel(&mut md, model, kernel);
    Some(HoverInfo { span: kernel.name_span, markdown: md })
}

fn on_launch(launch: &LaunchSite, offset: usize) -> bool {
    let config_end = launch.block.span.end_byte.max(launch.stream.as_ref().map_or(0, |s| s.span.end_byte));
    launch.callee_span.start_byte <= offset && offset <= config_end + 3
}

fn write_launch(md: &mut String, launch: &LaunchSite) {
    let _ = writeln!(md, "**Launch of `{}`**\n", launch.kernel);
    let _ = writeln!(md, "- grid: `{}`{}", launch.grid.text, extent_note(launch.grid.extent));
    let threads = launch.block.extent.map(|d| format!(" — {} threads per block", d.total())).unwrap_or_default();
    let _ = writeln!(md, "- block: `{}`{threads}", launch.block.text);
    if let Some(smem) = &launch.shared_bytes {
        let _ = writeln!(md, "- dynamic shared memory: `{}`", smem.text);
    }
    if let Some(stream) = &launch.stream {
        let _ = writeln!(md, "- stream: `{}`", stream.text);
    }
}

fn extent_note(extent: Option<super::model::Dim3>) -> String {
    extent.map(|d| format!(" = {d}")).unwrap_or_default()
}

fn write_kernel(md: &mut String, model: &KernelModel, kernel: &Kernel) {
    let _ = writeln!(md, "```cuda\n{}\n```\n", kernel.signature);
    if let Some(lb) = &kernel.launch_bounds {
        let min = lb.min_blocks.as_ref().map(|m| format!(", at least {} blocks per SM", m.text)).unwrap_or_default();
        let _ = writeln!(md, "**Launch bounds:** at most {} threads per block{min}\n", lb.max_threads.text);
    }
    if !kernel.shared.is_empty() {
        let total = match kernel.static_shared_bytes() {
            Some(bytes) => format_bytes(bytes),
            None => "not constant".to_string(),
        };
        let _ = writeln!(md, "**Static shared memory:** {total}\n");
        for s in &kernel.shared {
            let size = match (s.is_extern, s.bytes) {
                (true, _) => "dynamic (`extern`)".to_string(),
                (false, Some(b)) => format_bytes(b),
                (false, None) => "size not constant".to_string(),
            };
            let dims: String = s.dims.iter().map(|d| format!("[{}]", d.text)).collect();
            let _ = writeln!(md, "- `{} {}{}`: {size}", s.element_type, s.name, dims);
        }
        md.push('\n');
    }
    let launches: Vec<&LaunchSite> = model.launches_of(&kernel.name).collect();
    if launches.is_empty() {
        let _ = writeln!(md, "**Launches:** none in this file\n");
    } else {
        let _ = writeln!(md, "**Launches in this file:**\n");
        for l in launches {
            let threads = l.block.extent.map(|d| format!(" — {} threads", d.total())).unwrap_or_default();
            let _ = writeln!(md, "- line {}: `<<<{}, {}>>>`{threads}", l.span.start.line + 1, l.grid.text, l.block.text);
        }
        md.push('\n');
    }
    let tunables: Vec<_> = model.tunables_of(&kernel.name).collect();
    if !tunables.is_empty() {
        let _ = writeln!(md, "**Tunable sites:**\n");
        for t in tunables {
            let value = t.value.map(|v| format!(" = {v}")).unwrap_or_default();
            let _ = writeln!(md, "- line {}: {} `{}`{value}", t.span.start.line + 1, t.kind.describe(), t.text);
        }
    }
}
