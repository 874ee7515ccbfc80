//! The CUDA model and its findings for every fixture in `tests/fixtures/model/`, as snapshots.
//!
//! Each snapshot is the whole model, field by field in declaration order, with every span
//! followed by the source text it covers, so a reviewer checks a span by reading it. A new
//! fixture gets its snapshot on the first `INSTA_UPDATE=always cargo test --test model_snapshots`;
//! a changed model fails the test until its snapshot is reviewed and accepted.

use std::fmt::Write;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

#[test]
fn model_and_findings_of_every_fixture() {
    insta::glob!("../../tests/fixtures/model", "*.{cu,cuh}", |path| {
        let text = std::fs::read_to_string(path).expect("fixture is readable UTF-8");
        let model = cutune::syntax::analyze(&text);
        let findings = cutune::syntax::check(&model);
        let tree = Tree::Map(vec![("model".into(), Tree::of(&model)), ("findings".into(), Tree::of(&findings))]);
        let mut out = String::new();
        Renderer { source: &text, lines: line_starts(&text) }.map_entries(&mut out, &tree, 0, false);
        insta::assert_snapshot!(out);
    });
}

/// A serialised value that keeps fields in declaration order (`serde_json::Value` sorts them).
enum Tree {
    Null,
    Bool(bool),
    Number(String),
    String(String),
    Seq(Vec<Tree>),
    Map(Vec<(String, Tree)>),
}

impl Tree {
    fn of(value: &impl serde::Serialize) -> Tree {
        let json = serde_json::to_string(value).expect("the model serialises");
        serde_json::from_str(&json).expect("serde_json reads back what it wrote")
    }

    fn is_scalar(&self) -> bool {
        !matches!(self, Tree::Seq(_) | Tree::Map(_))
    }
}

impl<'de> Deserialize<'de> for Tree {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Tree, D::Error> {
        deserializer.deserialize_any(TreeVisitor)
    }
}

struct TreeVisitor;

impl<'de> Visitor<'de> for TreeVisitor {
    type Value = Tree;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_unit<E>(self) -> Result<Tree, E> {
        Ok(Tree::Null)
    }

    fn visit_bool<E>(self, v: bool) -> Result<Tree, E> {
        Ok(Tree::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Tree, E> {
        Ok(Tree::Number(v.to_string()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Tree, E> {
        Ok(Tree::Number(v.to_string()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Tree, E> {
        Ok(Tree::Number(v.to_string()))
    }

    fn visit_str<E>(self, v: &str) -> Result<Tree, E> {
        Ok(Tree::String(v.to_string()))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Tree, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Tree::Seq(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Tree, A::Error> {
        let mut entries = Vec::new();
        while let Some(entry) = map.next_entry()? {
            entries.push(entry);
        }
        Ok(Tree::Map(entries))
    }
}

/// Writes a [`Tree`] as YAML-like text, annotating spans with the source they cover.
struct Renderer<'a> {
    source: &'a str,
    lines: Vec<usize>,
}

impl Renderer<'_> {
    /// Writes `key: value` lines; with `after_dash` the first goes on the line a `- ` began.
    fn map_entries(&self, out: &mut String, tree: &Tree, indent: usize, after_dash: bool) {
        let Tree::Map(entries) = tree else { unreachable!("called on maps only") };
        for (i, (key, value)) in entries.iter().enumerate() {
            let pad = if after_dash && i == 0 { 0 } else { indent };
            let _ = write!(out, "{:pad$}{key}:", "");
            self.value(out, value, indent);
        }
    }

    /// Writes `value` after a `key:` or `-` already on the line.
    fn value(&self, out: &mut String, value: &Tree, indent: usize) {
        match value {
            Tree::Seq(items) if items.is_empty() => out.push_str(" []\n"),
            Tree::Map(entries) if entries.is_empty() => out.push_str(" {}\n"),
            Tree::Seq(items) => {
                out.push('\n');
                for item in items {
                    let _ = write!(out, "{:indent$}  -", "");
                    if matches!(item, Tree::Map(entries) if !entries.is_empty()) && !self.fits_on_a_line(item) {
                        out.push(' ');
                        self.map_entries(out, item, indent + 4, true);
                    } else {
                        self.value(out, item, indent + 4);
                    }
                }
            }
            Tree::Map(entries) if self.fits_on_a_line(value) => {
                let fields: Vec<String> = entries.iter().map(|(k, v)| format!("{k}: {}", self.scalar(v))).collect();
                let _ = writeln!(out, " {{{}}}", fields.join(", "));
            }
            Tree::Map(_) => {
                out.push('\n');
                self.map_entries(out, value, indent + 2, false);
            }
            scalar => {
                let _ = writeln!(out, " {}", self.scalar(scalar));
            }
        }
    }

    /// Small all-scalar maps (a `Dim3`, an `Expr`, a template parameter's kind) go on one line.
    fn fits_on_a_line(&self, value: &Tree) -> bool {
        matches!(value, Tree::Map(entries) if entries.len() <= 3 && entries.iter().all(|(_, v)| v.is_scalar()))
    }

    fn scalar(&self, value: &Tree) -> String {
        match value {
            Tree::Null => "~".into(),
            Tree::Bool(b) => b.to_string(),
            Tree::Number(n) => n.clone(),
            Tree::String(s) => match self.span_text(s) {
                Some(covered) => format!("{s} {covered}"),
                None => format!("{s:?}"),
            },
            Tree::Seq(_) | Tree::Map(_) => unreachable!("not a scalar"),
        }
    }

    /// The source a `"L:C-L:C"` span covers: all of it on one line, else its first and last lines.
    fn span_text(&self, span: &str) -> Option<String> {
        let (start, end) = span.split_once('-')?;
        let start = self.offset(start)?;
        let end = self.offset(end)?;
        let Some(covered) = self.source.get(start..end) else {
            return Some(format!("<span {start}..{end} is not in the source>"));
        };
        Some(match (covered.lines().next(), covered.lines().last()) {
            (Some(first), Some(last)) if covered.contains('\n') => format!("`{}` … `{}`", first.trim_end(), last.trim_start()),
            _ => format!("`{covered}`"),
        })
    }

    /// The byte offset of a 1-based `line:column` with the column counted in bytes.
    fn offset(&self, point: &str) -> Option<usize> {
        let (line, column) = point.split_once(':')?;
        let (line, column): (usize, usize) = (line.parse().ok()?, column.parse().ok()?);
        Some(self.lines.get(line.checked_sub(1)?)? + column.checked_sub(1)?)
    }
}

fn line_starts(text: &str) -> Vec<usize> {
    std::iter::once(0).chain(text.match_indices('\n').map(|(i, _)| i + 1)).collect()
}
