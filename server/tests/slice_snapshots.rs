//! The device slice of every fixture in `tests/fixtures/slice/`, as snapshots.
//!
//! Each fixture names the kernel to slice on its first line (`// slice: NAME`). The snapshot
//! holds the slice's source, what it kept, the includes it dropped and the names it could not
//! resolve. Every slice must parse without syntax errors. A new fixture gets its snapshot on the
//! first `INSTA_UPDATE=always cargo test --test slice_snapshots`.

use std::fmt::Write;
use std::path::Path;

use cutune::slice::{device_slice, DeviceSlice, SliceOptions};
use cutune::syntax::Document;

fn kernel_named_in(text: &str, path: &Path) -> String {
    text.lines()
        .next()
        .and_then(|line| line.strip_prefix("// slice: "))
        .unwrap_or_else(|| panic!("{} must start with `// slice: KERNEL`", path.display()))
        .trim()
        .to_string()
}

fn render(slice: &DeviceSlice) -> String {
    let mut out = slice.source.clone();
    out.push_str("\n----- kept -----\n");
    for item in &slice.kept {
        let _ = writeln!(out, "{}: {:?} {}", item.line, item.kind, item.name);
    }
    out.push_str("----- dropped includes -----\n");
    for dropped in &slice.dropped_includes {
        let _ = writeln!(out, "{}: {}: {}", dropped.line, dropped.path, dropped.reason);
    }
    out.push_str("----- unresolved -----\n");
    for unresolved in &slice.unresolved {
        let _ = writeln!(out, "{}:{}: {}: {}", unresolved.line, unresolved.column, unresolved.symbol, unresolved.why);
    }
    out
}

fn assert_parses_cleanly(source: &str, path: &Path) {
    let mut parser = tree_sitter::Parser::new();
    parser.set_language(&cutune::syntax::language()).unwrap();
    let tree = parser.parse(source, None).unwrap();
    assert!(!tree.root_node().has_error(), "the slice of {} does not parse:\n{source}\n{}", path.display(), tree.root_node().to_sexp());
}

#[test]
fn device_slice_of_every_fixture() {
    insta::glob!("../../tests/fixtures/slice", "*.cu", |path| {
        let text = std::fs::read_to_string(path).expect("fixture is readable UTF-8");
        let kernel = kernel_named_in(&text, path);
        let opts = SliceOptions { file: Some(path.to_path_buf()), ..SliceOptions::default() };
        let slice = device_slice(&Document::new(text), &kernel, &opts).expect("the fixture's kernel slices");
        assert_parses_cleanly(&slice.source, path);
        insta::assert_snapshot!(render(&slice));
    });
}
