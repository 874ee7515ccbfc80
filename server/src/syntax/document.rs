//! A source file with its syntax tree and model, edited incrementally.
//!
//! A `Document` is immutable: an edit returns a new one, so readers keep a consistent snapshot
//! (`Arc<Document>`) while the next edit is applied.

use std::cell::RefCell;
use std::sync::Arc;

use line_index::{LineCol, LineIndex, TextSize, WideEncoding, WideLineCol};
use tree_sitter::{InputEdit, Parser, Tree};

use super::incremental::{analyze, ItemCache};
use super::list_conditionals::{settled_in_lists, Defines};
use super::model::KernelModel;

/// Files larger than this are kept in sync but not parsed: tree-sitter would take seconds on
/// them, and generated files that large hold no kernels worth tuning by hand.
pub const MAX_ANALYZED_BYTES: usize = 8 * 1024 * 1024;

/// How columns are counted in positions that come from outside (an editor).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    Utf8,
    Utf16,
}

/// A 0-based line and a column in the units of an [`Encoding`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TextPosition {
    pub line: u32,
    pub column: u32,
}

#[derive(Clone, Debug)]
pub enum Change {
    /// Replace the text between two positions.
    Range { start: TextPosition, end: TextPosition, text: String },
    /// Replace the whole text.
    Full(String),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EditError {
    /// A position that is not in the document (past the end of a line, or of the file).
    InvalidPosition { position: TextPosition, lines: u32 },
    /// A range whose end comes before its start.
    ReversedRange { start: TextPosition, end: TextPosition },
}

impl std::fmt::Display for EditError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EditError::InvalidPosition { position, lines } => write!(
                f,
                "position {}:{} is outside the document ({} lines)",
                position.line, position.column, lines
            ),
            EditError::ReversedRange { start, end } => write!(
                f,
                "range ends ({}:{}) before it starts ({}:{})",
                end.line, end.column, start.line, start.column
            ),
        }
    }
}

/// Whether the model reflects the text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Analysis {
    Complete,
    /// The file is over [`MAX_ANALYZED_BYTES`]; the model is empty.
    SkippedTooLarge { bytes: usize },
    /// Not CUDA source (a tuning spec, say): kept as text only, never parsed.
    TextOnly,
}

#[derive(Clone, Debug)]
pub struct Document {
    text: String,
    line_index: Arc<LineIndex>,
    tree: Option<Tree>,
    model: Arc<KernelModel>,
    /// The analyses of the top-level items, so that an edit re-analyses only the items it
    /// touched. Kept, like the tree, only while the document is being edited.
    items: Option<Arc<ItemCache>>,
    analysis: Analysis,
    /// Whether the tree was parsed from a view with conditionals settled, which an edit can
    /// change far from where it lands: the next parse cannot reuse that tree.
    parsed_settled: bool,
    /// The macros of the project headers the file includes, which settle conditionals inside
    /// its lists (see [`settled_in_lists`]).
    included: Arc<Defines>,
}

thread_local! {
    // A parser is cheap to keep and costly to set up; one per thread, since it is not `Sync`.
    static PARSER: RefCell<Parser> = RefCell::new({
        let mut parser = Parser::new();
        parser.set_language(&super::language()).expect("tree-sitter-cuda matches the tree-sitter ABI");
        parser
    });
}

/// Parses what the grammar can read of `text` (see [`settled_in_lists`] and
/// [`grammar_view`](super::grammar_view)); the tree's ranges index `text`.
fn parse(view: &str, old: Option<&Tree>) -> Option<Tree> {
    parse_readable(&super::grammar_view::readable(view), old)
}

/// Parses text already made readable by the grammar view.
fn parse_readable(readable: &str, old: Option<&Tree>) -> Option<Tree> {
    PARSER.with(|p| p.borrow_mut().parse(readable, old))
}

/// A fresh tree of `text`, parsed as documents are (conditionals inside lists and macros read as
/// the grammar needs).
pub fn parse_source(text: &str) -> Tree {
    parse(&settled_in_lists(text, &Defines::new()), None).expect("parsing without a timeout or cancellation always yields a tree")
}

/// [`parse_source`]'s tree of `text`, with the macros the parse did not see (see
/// [`hidden_macros`](super::grammar_view::hidden_macros)).
pub fn parse_source_and_hidden_macros(text: &str) -> (Tree, Vec<(usize, String)>) {
    let settled = settled_in_lists(text, &Defines::new());
    let view = super::grammar_view::readable(&settled);
    let tree = parse_readable(&view, None).expect("parsing without a timeout or cancellation always yields a tree");
    (tree, super::grammar_view::hidden_macros(&settled, &view))
}

impl Document {
    pub fn new(text: String) -> Document {
        Document::build(text, None, None, Arc::default())
    }

    /// A document that sees the macros `included` (of the project headers it includes) before
    /// its own, where they settle a conditional inside a parenthesised list.
    pub fn with_included_defines(text: String, included: Defines) -> Document {
        Document::build(text, None, None, Arc::new(included))
    }

    /// A document that is not CUDA source: the text and its line index, no parse, no model.
    pub fn text_only(text: String) -> Document {
        let line_index = Arc::new(LineIndex::new(&text));
        Document { text, line_index, tree: None, model: Arc::default(), items: None, analysis: Analysis::TextOnly, parsed_settled: false, included: Arc::default() }
    }

    fn build(text: String, edited_tree: Option<Tree>, previous_items: Option<&ItemCache>, included: Arc<Defines>) -> Document {
        let line_index = Arc::new(LineIndex::new(&text));
        if text.len() > MAX_ANALYZED_BYTES {
            return Document {
                analysis: Analysis::SkippedTooLarge { bytes: text.len() },
                text,
                line_index,
                tree: None,
                model: Arc::default(),
                items: None,
                parsed_settled: false,
                included,
            };
        }
        // Error recovery in an edited tree can differ from a fresh parse's (and lose kernels a
        // fresh parse finds). A broken file is parsed afresh, so that the editor and
        // `cutune kernels` always see the same model. When the file was already broken before
        // the edit it most likely still is: parse it afresh at once rather than twice.
        let view = settled_in_lists(&text, &included);
        let parsed_settled = matches!(view, std::borrow::Cow::Owned(_));
        let tree = match edited_tree.filter(|_| !parsed_settled) {
            Some(edited) if !edited.root_node().has_error() => {
                parse(&view, Some(&edited)).filter(|t| !t.root_node().has_error()).or_else(|| parse(&view, None))
            }
            _ => parse(&view, None),
        };
        let (model, items) = match &tree {
            Some(tree) => {
                let (model, items) = analyze(&text, tree, previous_items);
                (model, Some(Arc::new(items)))
            }
            None => (KernelModel::default(), None),
        };
        Document { text, line_index, tree, model: Arc::new(model), items, analysis: Analysis::Complete, parsed_settled, included }
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn model(&self) -> &Arc<KernelModel> {
        &self.model
    }

    /// Whether the syntax tree is kept, so that the next edit re-parses incrementally.
    pub fn has_tree(&self) -> bool {
        self.tree.is_some()
    }

    /// The syntax tree, when kept (see [`Document::has_tree`]).
    pub fn tree(&self) -> Option<&Tree> {
        self.tree.as_ref()
    }

    /// The same document without its syntax tree and item analyses. A tree takes about 37 bytes
    /// per byte of source, far more than the text and the model, and the item analyses about as
    /// much as the model; a document nobody edits needs neither. The next edit parses and
    /// analyses from scratch.
    pub fn without_tree(&self) -> Document {
        Document { tree: None, items: None, ..self.clone() }
    }

    pub fn analysis(&self) -> Analysis {
        self.analysis
    }

    pub fn line_count(&self) -> u32 {
        self.line_index.line_col(self.line_index.len()).line + 1
    }

    /// Applies `changes` in order, each against the text the previous one left, and re-parses
    /// once. Either all apply or none do: the document stays as it was on error.
    pub fn apply(&self, encoding: Encoding, changes: &[Change]) -> Result<Document, EditError> {
        let mut text = self.text.clone();
        let mut tree = self.tree.clone().filter(|_| !self.parsed_settled);
        // The index of the text as it stands, rebuilt only when a later change needs it:
        // `build` makes the final one, so a one-change keystroke indexes the file once.
        let mut index = Some(self.line_index.clone());
        for change in changes {
            match change {
                Change::Full(new_text) => {
                    text = new_text.clone();
                    tree = None;
                }
                Change::Range { start, end, text: inserted } => {
                    let current = index.get_or_insert_with(|| Arc::new(LineIndex::new(&text)));
                    let start_byte = offset_in(current, &text, encoding, *start)?;
                    let end_byte = offset_in(current, &text, encoding, *end)?;
                    if end_byte < start_byte {
                        return Err(EditError::ReversedRange { start: *start, end: *end });
                    }
                    if let Some(tree) = tree.as_mut() {
                        tree.edit(&input_edit(current, start_byte, end_byte, inserted));
                    }
                    text.replace_range(start_byte..end_byte, inserted);
                }
            }
            index = None;
        }
        if self.analysis == Analysis::TextOnly {
            return Ok(Document::text_only(text));
        }
        Ok(Document::build(text, tree, self.items.as_deref(), self.included.clone()))
    }

    /// The byte offset of a position, if it lies inside the text.
    pub fn offset(&self, encoding: Encoding, position: TextPosition) -> Result<usize, EditError> {
        offset_in(&self.line_index, &self.text, encoding, position)
    }

    /// The position of a byte offset. Offsets past the end clamp to the end.
    pub fn position(&self, encoding: Encoding, offset: usize) -> TextPosition {
        let offset = TextSize::from(offset.min(self.text.len()) as u32);
        let line_col = self.line_index.try_line_col(offset).unwrap_or_else(|| {
            // Inside a multi-byte character: round down to its start.
            let mut o = u32::from(offset) as usize;
            while !self.text.is_char_boundary(o) {
                o -= 1;
            }
            self.line_index.line_col(TextSize::from(o as u32))
        });
        match encoding {
            Encoding::Utf8 => TextPosition { line: line_col.line, column: line_col.col },
            Encoding::Utf16 => {
                let wide = self
                    .line_index
                    .to_wide(WideEncoding::Utf16, line_col)
                    .expect("a valid line/column converts to UTF-16");
                TextPosition { line: wide.line, column: wide.col }
            }
        }
    }
}

fn offset_in(index: &LineIndex, text: &str, encoding: Encoding, position: TextPosition) -> Result<usize, EditError> {
    let invalid = || EditError::InvalidPosition {
        position,
        lines: index.line_col(index.len()).line + 1,
    };
    let line_col = match encoding {
        Encoding::Utf8 => LineCol { line: position.line, col: position.column },
        Encoding::Utf16 => index
            .to_utf8(WideEncoding::Utf16, WideLineCol { line: position.line, col: position.column })
            .ok_or_else(invalid)?,
    };
    let line_range = index.line(line_col.line).ok_or_else(invalid)?;
    let line_text = &text[line_range];
    let content_len = line_text.trim_end_matches(['\n', '\r']).len() as u32;
    if line_col.col > content_len {
        return Err(invalid());
    }
    let offset = u32::from(line_range.start()) as usize + line_col.col as usize;
    if !text.is_char_boundary(offset) {
        return Err(invalid());
    }
    Ok(offset)
}

fn point_at(index: &LineIndex, offset: usize) -> tree_sitter::Point {
    let lc = index.line_col(TextSize::from(offset as u32));
    tree_sitter::Point { row: lc.line as usize, column: lc.col as usize }
}

fn input_edit(index: &LineIndex, start: usize, old_end: usize, inserted: &str) -> InputEdit {
    let start_position = point_at(index, start);
    let new_end_position = match inserted.rfind('\n') {
        Some(last) => tree_sitter::Point {
            row: start_position.row + inserted.matches('\n').count(),
            column: inserted.len() - last - 1,
        },
        None => tree_sitter::Point { row: start_position.row, column: start_position.column + inserted.len() },
    };
    InputEdit {
        start_byte: start,
        old_end_byte: old_end,
        new_end_byte: start + inserted.len(),
        start_position,
        old_end_position: point_at(index, old_end),
        new_end_position,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pos(line: u32, column: u32) -> TextPosition {
        TextPosition { line, column }
    }

    fn range(start: TextPosition, end: TextPosition, text: &str) -> Change {
        Change::Range { start, end, text: text.to_string() }
    }

    #[test]
    fn an_empty_macro_with_trailing_blanks_keeps_its_conditional() {
        let text = "#ifdef DEBUG\n#define CHECK() report()\n#else\n#define CHECK() \n#define QUIET \t\n#endif\n__global__ void k(float *x) { x[0] = 0.0f; }\n";
        let tree = parse_source(text);
        let root = tree.root_node();
        assert!(!root.has_error(), "{}", root.to_sexp());
        let conditional = root.named_child(0).expect("the conditional");
        assert_eq!((conditional.kind(), conditional.child(conditional.child_count() as u32 - 1).map(|c| c.kind())), ("preproc_ifdef", Some("#endif")));
        assert_eq!(root.named_child(1).map(|n| n.kind()), Some("function_definition"));
    }

    #[test]
    fn incremental_edit_matches_a_fresh_parse() {
        let doc = Document::new("__global__ void k(float* x) {}\nvoid h() { k<<<1, 256>>>(p); }\n".into());
        let edited = doc.apply(Encoding::Utf8, &[range(pos(1, 18), pos(1, 21), "128")]).unwrap();
        let fresh = Document::new(edited.text().to_string());
        assert_eq!(edited.text(), "__global__ void k(float* x) {}\nvoid h() { k<<<1, 128>>>(p); }\n");
        assert_eq!(
            serde_json::to_value(edited.model().as_ref()).unwrap(),
            serde_json::to_value(fresh.model().as_ref()).unwrap()
        );
        assert_eq!(edited.model().launches[0].block.extent.unwrap().x, 128);
    }

    #[test]
    fn an_edit_that_changes_which_branch_of_a_list_conditional_is_taken_matches_a_fresh_parse() {
        let text = "#define WIDE 0\n__global__ void k(float* x,\n#if WIDE\n int w,\n#endif\n int n) {}\n";
        let doc = Document::new(text.into());
        assert_eq!(doc.model().kernels[0].params.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(), ["x", "n"]);
        assert!(doc.model().syntax_errors.is_empty());
        // The edit is on the first line; the branch it takes is four lines below.
        let edited = doc.apply(Encoding::Utf8, &[range(pos(0, 13), pos(0, 14), "1")]).unwrap();
        let fresh = Document::new(edited.text().to_string());
        assert_eq!(edited.model().kernels[0].params.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(), ["x", "w", "n"]);
        assert_eq!(
            serde_json::to_value(edited.model().as_ref()).unwrap(),
            serde_json::to_value(fresh.model().as_ref()).unwrap()
        );
    }

    #[test]
    fn utf16_columns_count_surrogate_pairs_as_two() {
        // "🚀" is 4 bytes in UTF-8 and 2 units in UTF-16.
        let doc = Document::new("// 🚀 x\n".into());
        assert_eq!(doc.offset(Encoding::Utf16, pos(0, 5)).unwrap(), 7);
        assert_eq!(doc.offset(Encoding::Utf8, pos(0, 7)).unwrap(), 7);
        assert_eq!(doc.position(Encoding::Utf16, 7), pos(0, 5));
        // The middle of the surrogate pair is not a position.
        assert!(doc.offset(Encoding::Utf16, pos(0, 4)).is_err());
        assert!(doc.offset(Encoding::Utf8, pos(0, 5)).is_err());
    }

    #[test]
    fn invalid_positions_leave_the_document_unchanged() {
        let doc = Document::new("a\nbc\n".into());
        for bad in [pos(0, 2), pos(5, 0), pos(1, 3)] {
            let err = doc.apply(Encoding::Utf16, &[range(bad, bad, "x")]).unwrap_err();
            assert!(matches!(err, EditError::InvalidPosition { .. }), "{err}");
        }
        let err = doc.apply(Encoding::Utf16, &[range(pos(1, 1), pos(0, 0), "")]).unwrap_err();
        assert!(matches!(err, EditError::ReversedRange { .. }));
        // A batch with one bad change applies none of them.
        let batch = [range(pos(0, 0), pos(0, 0), "ok"), range(pos(9, 0), pos(9, 0), "bad")];
        assert!(doc.apply(Encoding::Utf8, &batch).is_err());
        assert_eq!(doc.text(), "a\nbc\n");
    }

    #[test]
    fn the_end_of_the_last_line_is_a_valid_position() {
        let doc = Document::new("ab".into());
        let edited = doc.apply(Encoding::Utf16, &[range(pos(0, 2), pos(0, 2), "c")]).unwrap();
        assert_eq!(edited.text(), "abc");
    }

    #[test]
    fn a_document_without_its_tree_keeps_its_model_and_still_edits_correctly() {
        let doc = Document::new("__global__ void k(float* x) {}\nvoid h() { k<<<1, 256>>>(p); }\n".into());
        let light = doc.without_tree();
        assert!(doc.has_tree() && !light.has_tree());
        assert_eq!(light.model().kernels.len(), 1);
        let edited = light.apply(Encoding::Utf8, &[range(pos(1, 18), pos(1, 21), "128")]).unwrap();
        assert!(edited.has_tree());
        assert_eq!(edited.model().launches[0].block.extent.unwrap().x, 128);
    }

    #[test]
    fn oversized_files_are_kept_but_not_analysed() {
        let text = format!("__global__ void k() {{}}\n{}", " ".repeat(MAX_ANALYZED_BYTES));
        let doc = Document::new(text);
        assert!(matches!(doc.analysis(), Analysis::SkippedTooLarge { .. }));
        assert!(doc.model().kernels.is_empty());
        let shrunk = doc.apply(Encoding::Utf8, &[Change::Full("__global__ void k() {}".into())]).unwrap();
        assert_eq!(shrunk.analysis(), Analysis::Complete);
        assert_eq!(shrunk.model().kernels.len(), 1);
    }

    #[test]
    fn text_only_documents_stay_unparsed_through_edits() {
        let doc = Document::text_only("version = 1\n".into());
        let edited = doc.apply(Encoding::Utf8, &[Change::Full("__global__ void k() {}".into())]).unwrap();
        assert_eq!(edited.analysis(), Analysis::TextOnly);
        assert!(!edited.has_tree() && edited.model().kernels.is_empty());
        assert_eq!(edited.text(), "__global__ void k() {}");
    }
}
