//! Conversions between analysis types and protocol types (`to_proto` / `from_proto`).

use tower_lsp_server::ls_types::{
    self as lsp, Diagnostic, DiagnosticSeverity, DocumentSymbol, NumberOrString, PositionEncodingKind,
    SymbolKind,
};

use crate::spec;
use crate::syntax::{Change, Document, Encoding, Finding, KernelModel, Severity, Span, TextPosition};

pub fn encoding_kind(encoding: Encoding) -> PositionEncodingKind {
    match encoding {
        Encoding::Utf8 => PositionEncodingKind::UTF8,
        Encoding::Utf16 => PositionEncodingKind::UTF16,
    }
}

/// UTF-8 when the client offers it (no conversion needed), otherwise the protocol's UTF-16.
pub fn negotiate_encoding(offered: Option<&[PositionEncodingKind]>) -> Encoding {
    match offered {
        Some(kinds) if kinds.contains(&PositionEncodingKind::UTF8) => Encoding::Utf8,
        _ => Encoding::Utf16,
    }
}

pub fn text_position(position: lsp::Position) -> TextPosition {
    TextPosition { line: position.line, column: position.character }
}

pub fn change(event: lsp::TextDocumentContentChangeEvent) -> Change {
    match event.range {
        Some(range) => Change::Range {
            start: text_position(range.start),
            end: text_position(range.end),
            text: event.text,
        },
        None => Change::Full(event.text),
    }
}

pub fn position(doc: &Document, encoding: Encoding, offset: usize) -> lsp::Position {
    let p = doc.position(encoding, offset);
    lsp::Position { line: p.line, character: p.column }
}

pub fn range(doc: &Document, encoding: Encoding, span: Span) -> lsp::Range {
    lsp::Range { start: position(doc, encoding, span.start_byte), end: position(doc, encoding, span.end_byte) }
}

pub fn diagnostic(doc: &Document, encoding: Encoding, finding: &Finding) -> Diagnostic {
    Diagnostic {
        range: range(doc, encoding, finding.span),
        severity: Some(match finding.severity {
            Severity::Error => DiagnosticSeverity::ERROR,
            Severity::Warning => DiagnosticSeverity::WARNING,
            Severity::Information => DiagnosticSeverity::INFORMATION,
            Severity::Hint => DiagnosticSeverity::HINT,
        }),
        code: Some(NumberOrString::String(finding.code.to_string())),
        source: Some("cutune".to_string()),
        message: finding.message.clone(),
        ..Diagnostic::default()
    }
}

/// Whether a document is a tuning spec (`foo.cutune.toml`), whatever its language id.
pub fn is_spec(uri: &lsp::Uri) -> bool {
    uri.as_str().ends_with(".cutune.toml")
}

pub fn spec_diagnostic(doc: &Document, encoding: Encoding, d: &spec::SpecDiagnostic) -> Diagnostic {
    let span = Span { start_byte: d.range.start, end_byte: d.range.end.max(d.range.start), ..Span::default() };
    Diagnostic {
        range: range(doc, encoding, span),
        severity: Some(match d.severity {
            spec::Severity::Error => DiagnosticSeverity::ERROR,
            spec::Severity::Warning => DiagnosticSeverity::WARNING,
            spec::Severity::Information => DiagnosticSeverity::INFORMATION,
        }),
        code: Some(NumberOrString::String("spec".to_string())),
        source: Some("cutune".to_string()),
        message: d.message.clone(),
        ..Diagnostic::default()
    }
}

/// Kernels and `__device__` functions, in source order.
pub fn document_symbols(doc: &Document, encoding: Encoding, model: &KernelModel) -> Vec<DocumentSymbol> {
    let kernels = model.kernels.iter().map(|k| (k.span, k.name_span, &k.name, if k.is_definition { "__global__" } else { "__global__ (prototype)" }));
    let device = model.device_functions.iter().map(|f| (f.span, f.name_span, &f.name, if f.is_definition { "__device__" } else { "__device__ (prototype)" }));
    let mut symbols: Vec<_> = kernels.chain(device).collect();
    symbols.sort_by_key(|(span, ..)| span.start_byte);
    symbols
        .into_iter()
        .map(|(span, name_span, name, detail)| {
            #[allow(deprecated)] // `deprecated` is a required field of the struct.
            DocumentSymbol {
                name: name.clone(),
                detail: Some(detail.to_string()),
                kind: SymbolKind::FUNCTION,
                tags: None,
                deprecated: None,
                range: range(doc, encoding, span),
                selection_range: range(doc, encoding, name_span),
                children: None,
            }
        })
        .collect()
}
