//! Code actions: `Templatize kernel NAME`, and in a spec the quick fixes that write a value
//! for a `?`.
//!
//! The action is offered cheaply (a lookup in the model) and its edit computed on
//! `codeAction/resolve`, because templatize re-parses the file once per transform and editors
//! ask for code actions on every cursor move. Clients that cannot resolve get the edit at once.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use tower_lsp_server::ls_types::*;

use super::convert;
use crate::slice::SliceOptions;
use crate::spec::{self, SpecFile};
use crate::syntax::{Document, Encoding};
use crate::template::{self, Templatized};
use crate::workspace::Workspace;

pub const TEMPLATIZE_TITLE: &str = "Templatize kernel";

/// What `codeAction/resolve` needs to compute the edit.
#[derive(Serialize, Deserialize)]
pub struct TemplatizeData {
    pub uri: Uri,
    pub kernel: String,
}

/// The kernels whose definition holds the range: the ones to offer templatize for.
pub fn kernels_at(doc: &Document, start: usize, end: usize) -> Vec<String> {
    let mut names: Vec<String> = doc
        .model()
        .kernels
        .iter()
        .filter(|k| k.is_definition && k.span.start_byte <= start && end <= k.span.end_byte)
        .map(|k| k.name.clone())
        .collect();
    names.dedup();
    names
}

/// The quick fixes of a spec (`foo.cutune.toml`) within `start..end`: each `?` whose
/// diagnostic suggests a value the spec's names make sense of gets `Write VALUE`.
pub fn spec_quick_fixes(uri: &Uri, doc: &Document, encoding: Encoding, start: usize, end: usize) -> Vec<CodeAction> {
    let (_, diagnostics) = spec::parse_spec(doc.text());
    diagnostics
        .iter()
        .filter(|d| d.range.start <= end && start <= d.range.end)
        .filter_map(|d| {
            let value = d.suggestion.as_ref()?;
            let diagnostic = convert::spec_diagnostic(doc, encoding, d);
            let edit = TextEdit { range: diagnostic.range, new_text: format!("\"{value}\"") };
            Some(CodeAction {
                title: format!("Write `{value}` for the `?`"),
                kind: Some(CodeActionKind::QUICKFIX),
                diagnostics: Some(vec![diagnostic]),
                edit: Some(WorkspaceEdit { changes: Some(HashMap::from([(uri.clone(), vec![edit])])), ..WorkspaceEdit::default() }),
                ..CodeAction::default()
            })
        })
        .collect()
}

/// The hover on a spec's `?`: what is unknown, what to write, and the value the quick fix
/// would write.
pub fn spec_unknown_hover(doc: &Document, encoding: Encoding, offset: usize) -> Option<Hover> {
    let (_, diagnostics) = spec::parse_spec(doc.text());
    let unknown = diagnostics.iter().find(|d| d.range.contains(&offset) && doc.text()[d.range.clone()].trim_matches('"') == spec::UNKNOWN)?;
    let mut markdown = format!("**`?`**: {}", unknown.message);
    if let Some(value) = &unknown.suggestion {
        markdown.push_str(&format!("\n\nQuick fix: write `{value}`."));
    }
    Some(Hover {
        contents: HoverContents::Markup(MarkupContent { kind: MarkupKind::Markdown, value: markdown }),
        range: Some(convert::spec_diagnostic(doc, encoding, unknown).range),
    })
}

pub fn unresolved_action(uri: &Uri, kernel: &str) -> CodeAction {
    CodeAction {
        title: format!("{TEMPLATIZE_TITLE} {kernel}"),
        kind: Some(CodeActionKind::REFACTOR_REWRITE),
        data: Some(serde_json::to_value(TemplatizeData { uri: uri.clone(), kernel: kernel.to_string() }).expect("plain data serialises")),
        ..CodeAction::default()
    }
}

/// The spec file's current text: the editor's copy when open, else the file on disk.
pub type OpenText<'a> = &'a dyn Fn(&Uri) -> Option<String>;

/// The change annotation of a templatize edit: clients that support annotations ask the user to
/// confirm, showing the preview, before applying it.
const ANNOTATION: &str = "cutune-templatize";

/// Templatizes `kernel` and builds the edit of the `.cu` file and of its spec. With `annotate`
/// (the client supports change annotations) every change carries one that needs confirmation.
/// Errors are messages for the user.
/// `workspace` is the background index of the file's root, when it is built.
#[allow(clippy::too_many_arguments)]
pub fn templatize_edit(uri: &Uri, doc: &Document, version: i32, kernel: &str, encoding: Encoding, annotate: bool, open_text: OpenText, workspace: Option<&Workspace>) -> Result<(WorkspaceEdit, Templatized), String> {
    let source_path = uri.to_file_path().map(|p| p.into_owned()).ok_or_else(|| format!("{} is not a file; templatize writes a spec beside the file", uri.as_str()))?;
    // The launch and the host code may be in other files of the workspace.
    let hosts = match workspace {
        Some(workspace) => workspace.host_documents(&source_path, kernel),
        None => crate::workspace::host_documents_near(&source_path, kernel),
    };
    let root = workspace.map_or_else(|| crate::workspace::find_root(&source_path), |w| w.root().to_path_buf());
    let mut result = template::templatize_in_workspace(doc.text(), kernel, &source_path, &SliceOptions::for_file(&source_path), &hosts, &root).map_err(|e| e.to_string())?;
    template::format_changes(&mut result, doc.text(), &source_path, &template::ClangFormat);
    let spec_path = spec::spec_path_for(&source_path);
    let spec_uri = Uri::from_file_path(&spec_path).ok_or_else(|| format!("cannot name the spec file {}", spec_path.display()))?;
    let old_spec_text = open_text(&spec_uri).or_else(|| std::fs::read_to_string(&spec_path).ok());
    let new_spec_text = merged_spec(&source_path, old_spec_text.as_deref(), &result)?;

    let annotated = |edit: TextEdit| match annotate {
        true => OneOf::Right(AnnotatedTextEdit { text_edit: edit, annotation_id: ANNOTATION.to_string() }),
        false => OneOf::Left(edit),
    };
    let source_edits: Vec<OneOf<TextEdit, AnnotatedTextEdit>> = result
        .edits
        .iter()
        .map(|e| {
            let span = crate::syntax::Span { start_byte: e.range.start, end_byte: e.range.end, ..Default::default() };
            annotated(TextEdit { range: convert::range(doc, encoding, span), new_text: e.new_text.clone() })
        })
        .collect();
    let old_spec_doc = Document::text_only(old_spec_text.clone().unwrap_or_default());
    let whole = crate::syntax::Span { start_byte: 0, end_byte: old_spec_doc.text().len(), ..Default::default() };
    let spec_edit = TextEdit { range: convert::range(&old_spec_doc, encoding, whole), new_text: new_spec_text };
    let mut operations = vec![DocumentChangeOperation::Edit(TextDocumentEdit {
        text_document: OptionalVersionedTextDocumentIdentifier { uri: uri.clone(), version: Some(version) },
        edits: source_edits,
    })];
    if old_spec_text.is_none() {
        operations.push(DocumentChangeOperation::Op(ResourceOp::Create(CreateFile {
            uri: spec_uri.clone(),
            options: Some(CreateFileOptions { overwrite: Some(false), ignore_if_exists: Some(true) }),
            annotation_id: annotate.then(|| ANNOTATION.to_string()),
        })));
    }
    operations.push(DocumentChangeOperation::Edit(TextDocumentEdit {
        text_document: OptionalVersionedTextDocumentIdentifier { uri: spec_uri, version: None },
        edits: vec![annotated(spec_edit)],
    }));
    let applied: Vec<&str> = result.reports.iter().filter(|r| r.status == template::Status::Applied).map(|r| r.transform).collect();
    let annotation = ChangeAnnotation {
        label: format!("Templatize kernel {kernel}"),
        // VS Code leaves edits that need confirmation unticked in its refactor preview, so
        // *Apply* there would apply none of them; the label still names the change (undo, preview).
        needs_confirmation: Some(false),
        description: Some(format!("{} parameters ({}); spec {}", result.spec.params.len(), applied.join(", "), spec_path.display())),
    };
    let change_annotations = annotate.then(|| HashMap::from([(ANNOTATION.to_string(), annotation)]));
    let edit = WorkspaceEdit { changes: None, document_changes: Some(DocumentChanges::Operations(operations)), change_annotations };
    Ok((edit, result))
}

/// The spec file with this kernel's new spec, keeping the other kernels of an existing spec.
fn merged_spec(source: &Path, old: Option<&str>, result: &Templatized) -> Result<String, String> {
    let source_name = source.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let base = match old {
        Some(text) if !text.trim().is_empty() => match spec::parse_spec(text) {
            (Some(file), _) => file,
            (None, diagnostics) => {
                let first = diagnostics.first().map(|d| format!(" (line {}: {})", d.line + 1, d.message)).unwrap_or_default();
                return Err(format!("the spec beside the file does not parse{first}; fix or move it before templatizing again"));
            }
        },
        _ => SpecFile { version: 1, source: source_name, kernels: Vec::new() },
    };
    Ok(spec::render_spec(&spec::with_kernel(base, result.spec.clone())))
}

/// Whether the client can resolve the `edit` property of a code action later.
pub fn client_resolves_edits(capabilities: &ClientCapabilities) -> bool {
    capabilities
        .text_document
        .as_ref()
        .and_then(|t| t.code_action.as_ref())
        .and_then(|c| c.resolve_support.as_ref())
        .is_some_and(|r| r.properties.iter().any(|p| p == "edit"))
}

/// Whether the client shows change annotations (and asks to confirm those that need it).
pub fn client_supports_annotations(capabilities: &ClientCapabilities) -> bool {
    capabilities.workspace.as_ref().and_then(|w| w.workspace_edit.as_ref()).is_some_and(|e| e.change_annotation_support.is_some())
}

pub fn path_of(uri: &Uri) -> PathBuf {
    uri.to_file_path().map(|p| p.into_owned()).unwrap_or_else(|| PathBuf::from(uri.as_str()))
}
