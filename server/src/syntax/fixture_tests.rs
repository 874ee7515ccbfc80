//! Properties of the model over the fixtures in `tests/fixtures/model/` that snapshots do not
//! show: the byte offsets behind every span, incremental re-parsing, and where findings fire.
//! The model itself is pinned by the snapshots in `server/tests/model_snapshots.rs`.

use std::path::PathBuf;

use super::*;

fn fixture_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/model")
}

fn fixture(name: &str) -> String {
    std::fs::read_to_string(fixture_dir().join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Every fixture as (file name, text), in name order.
fn fixtures() -> Vec<(String, String)> {
    let mut names: Vec<String> = std::fs::read_dir(fixture_dir())
        .expect("the fixture folder exists")
        .map(|entry| entry.expect("fixture folder is readable").file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".cu") || name.ends_with(".cuh"))
        .collect();
    names.sort();
    assert!(names.len() >= 8, "expected the model fixtures, found {names:?}");
    names.into_iter().map(|name| (name.clone(), fixture(&name))).collect()
}

/// Every span in the model and its findings.
fn all_spans(model: &KernelModel, findings: &[Finding]) -> Vec<Span> {
    let mut spans = Vec::new();
    let expr = |spans: &mut Vec<Span>, e: &Expr| spans.push(e.span);
    for k in &model.kernels {
        spans.extend([k.span, k.name_span]);
        spans.extend(k.template_params.iter().map(|p| p.span));
        spans.extend(k.params.iter().map(|p| p.span));
        if let Some(lb) = &k.launch_bounds {
            spans.push(lb.span);
            expr(&mut spans, &lb.max_threads);
            lb.min_blocks.iter().for_each(|m| expr(&mut spans, m));
        }
        for s in &k.shared {
            spans.push(s.span);
            s.dims.iter().for_each(|d| expr(&mut spans, d));
        }
    }
    for f in &model.device_functions {
        spans.extend([f.span, f.name_span]);
    }
    for l in &model.launches {
        spans.extend([l.span, l.callee_span, l.grid.span, l.block.span]);
        l.template_args.iter().for_each(|a| expr(&mut spans, a));
        l.shared_bytes.iter().chain(&l.stream).for_each(|e| expr(&mut spans, e));
    }
    for d in &model.defines {
        spans.push(d.span);
        spans.extend(d.value_span);
    }
    spans.extend(model.tunables.iter().map(|t| t.span));
    spans.extend(model.syntax_errors.iter().map(|e| e.span));
    spans.extend(findings.iter().map(|f| f.span));
    spans
}

/// The 0-based line and byte column of a byte offset.
fn point_of(text: &str, offset: usize) -> Point {
    let before = &text[..offset];
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    Point { line: before.matches('\n').count() as u32, column: (offset - line_start) as u32 }
}

#[test]
fn every_span_has_byte_offsets_that_agree_with_its_points() {
    for (name, text) in fixtures() {
        let model = analyze(&text);
        let findings = check(&model);
        for span in all_spans(&model, &findings) {
            assert!(span.start_byte <= span.end_byte && span.end_byte <= text.len(), "{name}: {span:?}");
            assert_eq!(point_of(&text, span.start_byte), span.start, "{name}: start of {span:?}");
            assert_eq!(point_of(&text, span.end_byte), span.end, "{name}: end of {span:?}");
        }
    }
}

/// xorshift64: reproducible edits without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    /// A character boundary of `text`.
    fn boundary(&mut self, text: &str) -> usize {
        let mut offset = self.below(text.len() + 1);
        while !text.is_char_boundary(offset) {
            offset -= 1;
        }
        offset
    }
}

/// What people type into CUDA files, broken pieces included.
const INSERTIONS: &[&str] = &[
    "", "1", "256", " ", "\n", "}", "{", ";", "(", "<<<", ">>>", "<<<1, 32>>>", "#pragma unroll 4\n",
    "#define BLOCK 128\n", "__shared__ float s[64];", "__global__ void k(float* x) {}\n", "blockDim.x",
    "for (int i = 0; i < n; i += 32)", "template <int B>\n", "dim3 b(B, 2);", "// comment\n", "µs",
    // Edits whose effect crosses items: a define or constant that kernels and launches elsewhere
    // read, a character typed into a name (a launch elsewhere stops resolving), a macro body.
    "#define BLOCK_SIZE_X 64\n", "#define TILE_DIM 16\n", "const int kBlock = 64;\n", "_2", "x", "\\\n",
];

/// One random edit as the editor would send it, in `encoding`'s columns.
fn random_change(rng: &mut Rng, doc: &Document, encoding: Encoding) -> Change {
    let text = doc.text();
    let start = rng.boundary(text);
    // Mostly short deletions, sometimes long ones that take out whole items.
    let max_len = if rng.below(8) == 0 { 400 } else { 12 };
    let mut end = (start + rng.below(max_len)).min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let inserted = INSERTIONS[rng.below(INSERTIONS.len())].to_string();
    Change::Range { start: doc.position(encoding, start), end: doc.position(encoding, end), text: inserted }
}

#[test]
fn edited_documents_match_a_fresh_parse_of_their_text() {
    let mut rng = Rng(0x5eed_cafe_f00d_d00d);
    for (name, text) in fixtures() {
        let mut doc = Document::new(text);
        for step in 0..24 {
            let encoding = if step % 2 == 0 { Encoding::Utf16 } else { Encoding::Utf8 };
            // Editors batch several changes into one notification now and then; each change's
            // positions are in the text the previous one left.
            let count = if rng.below(4) == 0 { 3 } else { 1 };
            let mut changes = Vec::new();
            let mut preview = doc.clone();
            for i in 0..count {
                let change = random_change(&mut rng, &preview, encoding);
                if i + 1 < count {
                    preview = preview.apply(encoding, std::slice::from_ref(&change)).expect("a valid edit applies");
                }
                changes.push(change);
            }
            doc = doc.apply(encoding, &changes).expect("a valid batch applies");
            let fresh = Document::new(doc.text().to_string());
            assert_eq!(
                format!("{:?}", doc.model()),
                format!("{:?}", fresh.model()),
                "{name}, step {step}: the incremental model differs from a fresh parse of:\n{}",
                doc.text()
            );
        }
    }
}

/// Applies one replacement of `old` by `new` as an editor would, and checks the incremental model
/// against a fresh analysis of the new text.
fn edit_and_compare(doc: &Document, old: &str, new: &str) -> Document {
    let start = doc.text().find(old).unwrap_or_else(|| panic!("`{old}` is in the text"));
    let change = Change::Range {
        start: doc.position(Encoding::Utf8, start),
        end: doc.position(Encoding::Utf8, start + old.len()),
        text: new.to_string(),
    };
    let edited = doc.apply(Encoding::Utf8, &[change]).expect("a valid edit applies");
    assert_eq!(format!("{:?}", edited.model()), format!("{:?}", analyze(edited.text())), "after `{old}` → `{new}`");
    edited
}

#[test]
fn edits_whose_effect_crosses_items_update_the_other_items() {
    let doc = Document::new(
        "#define BLOCK 256\n\
         template <int B>\n\
         __global__ void __launch_bounds__(B) k(float* x) { __shared__ float s[BLOCK]; }\n\
         void h(float* x) { k<BLOCK><<<1, BLOCK>>>(x); }\n\
         void g(float* x) { k<BLOCK><<<2, BLOCK>>>(x); }\n"
            .to_string(),
    );
    let block_of = |doc: &Document| doc.model().launches.iter().map(|l| l.block.extent.map(|e| e.x)).collect::<Vec<_>>();
    assert_eq!(block_of(&doc), [Some(256), Some(256)]);

    // A define read by the kernel and by launches in two other items.
    let doc = edit_and_compare(&doc, "256", "128");
    assert_eq!(block_of(&doc), [Some(128), Some(128)]);
    assert_eq!(doc.model().launches[1].max_threads, Some(128));
    assert_eq!(doc.model().kernels[0].shared[0].bytes, Some(512));

    // Renaming the kernel unresolves the launches in the other items; renaming back resolves them.
    let doc = edit_and_compare(&doc, " k(", " k2(");
    assert!(doc.model().launches.iter().all(|l| !l.resolved && l.max_threads.is_none()));
    let doc = edit_and_compare(&doc, " k2(", " k(");
    assert!(doc.model().launches.iter().all(|l| l.resolved));

    // Deleting a closing brace merges two functions into one broken item; putting it back splits them.
    let doc = edit_and_compare(&doc, "(x); }\nvoid g", "(x);\nvoid g");
    assert!(!doc.model().syntax_errors.is_empty());
    let doc = edit_and_compare(&doc, "(x);\nvoid g", "(x); }\nvoid g");
    assert!(doc.model().syntax_errors.is_empty());

    // An edit inside a macro body, and a line that moves every later item.
    let doc = edit_and_compare(&doc, "#define BLOCK 128", "#define BLOCK (64 * 2)");
    assert_eq!(block_of(&doc), [Some(128), Some(128)]);
    let doc = edit_and_compare(&doc, "void h", "\n  void h");
    assert_eq!(doc.model().launches[0].span.start.line, 4);
}

#[test]
fn typing_a_file_character_by_character_keeps_the_model_exact() {
    let text = fixture("transpose_tiled.cu");
    let mut doc = Document::new(String::new());
    for (offset, c) in text.char_indices() {
        let at = doc.position(Encoding::Utf16, offset);
        let change = Change::Range { start: at, end: at, text: c.to_string() };
        doc = doc.apply(Encoding::Utf16, &[change]).expect("typing at the end applies");
        if c == '\n' || c == ';' || c == '}' {
            let fresh = analyze(doc.text());
            assert_eq!(format!("{:?}", doc.model()), format!("{fresh:?}"), "after typing up to byte {offset}");
        }
    }
    assert_eq!(doc.text(), text);
    assert_eq!(format!("{:?}", doc.model()), format!("{:?}", analyze(&text)));
}

#[test]
fn findings_fire_on_the_launches_and_kernels_that_break_limits_and_nowhere_else() {
    for (name, text) in fixtures() {
        let findings = check(&analyze(&text));
        let found: Vec<(&str, String)> = findings
            .iter()
            .map(|f| (f.code, format!("{}: {}", f.span.start.line + 1, &text[f.span.start_byte..f.span.end_byte])))
            .collect();
        let expected: &[(&str, &str)] = match name.as_str() {
            "resource_limits.cu" => &[
                ("static-shared-over-48k", "20: big_tile"),
                ("exceeds-launch-bounds", "34: 256"),
                ("exceeds-launch-bounds", "36: 256"),
                ("block-too-large", "38: block"),
                ("block-not-warp-multiple", "40: 100"),
                ("block-too-large", "41: 2048"),
            ],
            "syntax_error.cu" => &[
                ("syntax", "5: "),
                ("syntax", "11: = -(x[i] *"),
                ("syntax", "20: <<<(n + 255) / 256, 256>>(d, n);"),
            ],
            _ => &[],
        };
        let expected: Vec<(&str, String)> = expected.iter().map(|(c, at)| (*c, at.to_string())).collect();
        assert_eq!(found, expected, "{name}");
    }
}

#[test]
fn a_launch_within_its_bounds_and_a_clean_block_raise_nothing() {
    let model = analyze(
        "template <int B> __global__ void __launch_bounds__(B) k(float* x) {}\n\
         void h(float* x) { k<256><<<1, 256>>>(x); k<256><<<1, dim3(32, 8)>>>(x); }\n",
    );
    assert_eq!(model.launches.iter().map(|l| l.max_threads).collect::<Vec<_>>(), [Some(256), Some(256)]);
    assert!(check(&model).is_empty());
}
