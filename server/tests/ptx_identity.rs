//! The proof that templatize changes nothing: for every kernel in `examples/`, the default
//! instantiation of the templatized file compiles to the same PTX as the original kernel
//! (NVRTC, same options, compared as text), each cut to its device slice as the tuner compiles
//! it. Needs NVRTC: `scripts/test` installs it from pip; without it this test fails, it does
//! not skip.

use std::path::Path;

use cutune::compile::{CompileRequest, Nvrtc};
use cutune::slice::{device_slice, SliceOptions};
use cutune::syntax::{analyze, Document};
use cutune::template::templatize;

fn ptx(nvrtc: &Nvrtc, source: &str, kernel: &str) -> String {
    compiled_ptx(nvrtc, source, kernel).unwrap_or_else(|why| panic!("{kernel}: {why}\n--- source ---\n{source}"))
}

fn compiled_ptx(nvrtc: &Nvrtc, source: &str, kernel: &str) -> Result<String, String> {
    let mut request = CompileRequest::new(source, format!("{kernel}.cu"), "compute_90");
    request.cubin = false;
    request.options = vec!["--std=c++17".into()];
    request.name_expressions = vec![format!("&{kernel}")];
    nvrtc.compile(&request).map(|output| output.ptx).map_err(|failure| format!("{failure}\n{}", failure.log))
}

fn first_difference(a: &str, b: &str) -> String {
    let line = a.lines().zip(b.lines()).position(|(x, y)| x != y).unwrap_or(a.lines().count().min(b.lines().count()));
    format!("PTX line {}: {:?} vs {:?}", line + 1, a.lines().nth(line), b.lines().nth(line))
}

#[test]
fn the_default_instantiation_compiles_to_the_original_ptx() {
    let nvrtc = Nvrtc::locate(None).unwrap_or_else(|e| panic!("this test needs NVRTC: run `scripts/test` (it installs it from pip) or set CUTUNE_NVRTC.\n{e}"));
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let mut compared = Vec::new();
    let mut device_changes = 0;
    for entry in std::fs::read_dir(&examples).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "cu") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let options = SliceOptions::for_file(&path);
        for kernel in analyze(&text).kernels.iter().filter(|k| k.is_definition) {
            let name = &kernel.name;
            let original = device_slice(&Document::new(text.clone()), name, &options).unwrap();
            let templatized = templatize(&text, name, &options).unwrap();
            let rewritten = device_slice(&Document::new(templatized.text.clone()), name, &options).unwrap();
            // Kernels whose parameters are all host-side (launch geometry) slice the same.
            if original.source != rewritten.source {
                device_changes += 1;
            }
            let (a, b) = (ptx(&nvrtc, &original.source, name), ptx(&nvrtc, &rewritten.source, name));
            assert!(a == b, "{}: `{name}`: {}", path.display(), first_difference(&a, &b));
            // The spec's baseline is the original slice: what verification compiles as the reference.
            assert_eq!(templatized.spec.baseline.source, original.source, "{name}: the baseline is not the original slice");
            // Each example keeps its spec beside it, valid, with that same baseline.
            let spec_path = cutune::spec::spec_path_for(&path);
            let (spec, diagnostics) = cutune::spec::parse_spec(&std::fs::read_to_string(&spec_path).unwrap());
            assert!(diagnostics.is_empty(), "{}: {diagnostics:?}", spec_path.display());
            let kept = spec.unwrap().kernels.into_iter().find(|k| &k.name == name).expect("the example's spec has its kernel");
            assert_eq!(kept.baseline, templatized.spec.baseline, "{}: the baseline is stale", spec_path.display());
            assert!(kept.params.len() >= 2, "{name}: fewer than two parameters");
            compared.push(name.clone());
        }
    }
    compared.sort();
    assert_eq!(compared.len(), 9, "{compared:?}");
    assert!(device_changes >= 7, "only {device_changes} kernels have parameters in device code");
}

/// The same proof for the rewrite fixtures (`tests/fixtures/template/`), each the kernel its
/// first line names: the patterns found in public projects, which the examples do not all have.
/// A fixture whose original does not compile alone (a template kernel, which only its launch
/// instantiates, or one that includes another project's headers) has nothing to compare; most
/// do, and the count is checked.
#[test]
fn the_default_instantiation_of_every_fixture_compiles_to_the_original_ptx() {
    let nvrtc = Nvrtc::locate(None).unwrap_or_else(|e| panic!("this test needs NVRTC: run `scripts/test` (it installs it from pip) or set CUTUNE_NVRTC.\n{e}"));
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/template");
    let mut compared = Vec::new();
    let mut alone = Vec::new();
    for entry in std::fs::read_dir(&fixtures).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "cu") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let Some(name) = text.lines().next().and_then(|l| l.strip_prefix("// templatize: ")).map(str::trim) else { continue };
        let options = SliceOptions::for_file(&path);
        let original = device_slice(&Document::new(text.clone()), name, &options).unwrap();
        let Ok(a) = compiled_ptx(&nvrtc, &original.source, name) else {
            alone.push(path.file_name().unwrap().to_string_lossy().to_string());
            continue;
        };
        let templatized = templatize(&text, name, &options).unwrap();
        let rewritten = device_slice(&Document::new(templatized.text.clone()), name, &options).unwrap();
        let b = ptx(&nvrtc, &rewritten.source, name);
        assert!(a == b, "{}: `{name}`: {}", path.display(), first_difference(&a, &b));
        compared.push(name.to_string());
    }
    eprintln!("not compiled alone: {alone:?}");
    assert!(compared.iter().any(|k| k == "rms_rows"), "the rows-per-block fixture was not compared: {compared:?}");
    assert!(compared.len() >= 35, "only {} fixtures compared: {compared:?}; not compiled alone: {alone:?}", compared.len());
}

/// A loop's unroll factor that `loop-unroll` lifts is a real choice: a factor compiles to other
/// code than the default, and the default (0, no pragma at all) compiles without the warning a
/// `#pragma unroll 0` would give.
#[test]
fn a_lifted_loop_unroll_factor_changes_the_code_and_its_default_warns_nothing() {
    let nvrtc = Nvrtc::locate(None).unwrap_or_else(|e| panic!("this test needs NVRTC: run `scripts/test` (it installs it from pip) or set CUTUNE_NVRTC.\n{e}"));
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/template/loop_unroll.cu");
    let text = std::fs::read_to_string(&path).unwrap();
    let options = SliceOptions::for_file(&path);
    let templatized = templatize(&text, "block_min", &options).unwrap();
    assert!(templatized.params().iter().any(|p| p.name == "BLOCK_MIN_UNROLL_R"), "{:?}", templatized.params());
    let slice = device_slice(&Document::new(templatized.text.clone()), "block_min", &options).unwrap();
    let compile = |defines: &[(&str, &str)]| {
        let mut request = CompileRequest::new(&slice.source, "block_min.cu", "compute_90");
        request.cubin = false;
        request.options = vec!["--std=c++17".into()];
        request.name_expressions = vec!["&block_min".into()];
        request.defines = defines.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect();
        nvrtc.compile(&request).unwrap_or_else(|failure| panic!("{failure}\n{}", failure.log))
    };
    let default = compile(&[]);
    assert!(default.diagnostics.is_empty(), "{:?}", default.diagnostics);
    let unrolled = compile(&[("BLOCK_MIN_UNROLL_R", "4")]);
    assert!(unrolled.diagnostics.is_empty(), "{:?}", unrolled.diagnostics);
    assert_ne!(default.ptx, unrolled.ptx, "unrolling the loop by 4 left the PTX as it was");
}
