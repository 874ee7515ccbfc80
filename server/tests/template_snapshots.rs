//! Every templatize transform over the fixtures in `tests/fixtures/template/`, as snapshots:
//! the report (what each transform did or why it refused), the edit as a unified diff, and the
//! spec scaffold. The first line of a fixture names the kernel: `// templatize: NAME`.
//!
//! Two properties hold for every fixture and every example: templatizing the result again
//! changes nothing, and the rewrite only adds parameter guards and replaces choices (checked
//! by the PTX comparison in `ptx_identity.rs`).

use std::path::Path;

use cutune::slice::SliceOptions;
use cutune::template::{self, report, templatize};

fn kernel_of(text: &str, path: &Path) -> String {
    let first = text.lines().next().unwrap_or_default();
    first
        .strip_prefix("// templatize: ")
        .unwrap_or_else(|| panic!("{}: first line must be `// templatize: KERNEL`", path.display()))
        .trim()
        .to_string()
}

#[test]
fn transforms_of_every_fixture() {
    insta::glob!("../../tests/fixtures/template", "*.cu", |path| {
        let text = std::fs::read_to_string(path).expect("fixture is readable UTF-8");
        let kernel = kernel_of(&text, path);
        let name = Path::new(path.file_name().unwrap());
        let result = templatize(&text, &kernel, &SliceOptions::for_file(path)).expect("fixture kernels templatize");
        let mut spec = result.spec.clone();
        spec.baseline.source = format!("<{} bytes>", spec.baseline.source.len());
        let diff = similar::TextDiff::from_lines(&text, &result.text).unified_diff().context_radius(1).to_string();
        let spec_text = cutune::spec::render_spec(&cutune::spec::SpecFile { version: 1, source: name.display().to_string(), kernels: vec![spec] });
        insta::assert_snapshot!(format!("{}\n--- diff\n{diff}\n--- spec\n{spec_text}", report(name, &result)));
    });
}

#[test]
fn templatizing_twice_changes_nothing() {
    let fixtures = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/template")).unwrap();
    let examples = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../examples")).unwrap();
    let mut checked = 0;
    for entry in fixtures.chain(examples) {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "cu") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for kernel in cutune::syntax::analyze(&text).kernels.iter().filter(|k| k.is_definition) {
            let once = templatize(&text, &kernel.name, &SliceOptions::default()).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let twice = templatize(&once.text, &kernel.name, &SliceOptions::default()).unwrap();
            assert_eq!(twice.text, once.text, "{}: `{}` changed on a second run", path.display(), kernel.name);
            let names = |t: &template::Templatized| t.params().iter().map(|p| (p.name.clone(), p.default)).collect::<Vec<_>>();
            let mut first = names(&once);
            let mut second = names(&twice);
            first.sort();
            second.sort();
            assert_eq!(first, second, "{}: `{}` lifted different parameters on a second run", path.display(), kernel.name);
            checked += 1;
        }
    }
    assert!(checked >= 15, "only {checked} kernels checked");
}
