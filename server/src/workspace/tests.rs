use std::path::{Path, PathBuf};

use super::*;

/// A fresh folder under the system's temporary directory, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("cutune-workspace-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir.canonicalize().unwrap())
    }

    fn write(&self, path: &str, text: &str) -> PathBuf {
        let path = self.0.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn names(workspace: &Workspace) -> Vec<String> {
    workspace.files().map(|(p, _)| p.strip_prefix(workspace.root()).unwrap().display().to_string()).collect()
}

#[test]
fn the_root_is_the_nearest_folder_with_a_marker() {
    let scratch = Scratch::new("root");
    let file = scratch.write("proj/src/deep/k.cu", "");
    scratch.write("proj/compile_commands.json", "[]");
    assert_eq!(find_root(&file), scratch.0.join("proj"));
    assert_eq!(find_root(&scratch.0.join("proj/src")), scratch.0.join("proj"));
}

#[test]
fn a_folder_the_root_ignores_is_a_root_of_its_own() {
    let scratch = Scratch::new("ignored_root");
    scratch.write("proj/.cutune", "");
    scratch.write("proj/.gitignore", "/vendor/\n*.o\n");
    let vendored = scratch.write("proj/vendor/lib/src/k.cu", "");
    let own = scratch.write("proj/src/k.cu", "");
    assert_eq!(find_root(&vendored), scratch.0.join("proj/vendor"));
    assert_eq!(find_root(&scratch.0.join("proj/vendor/lib")), scratch.0.join("proj/vendor"));
    assert_eq!(find_root(&own), scratch.0.join("proj"));
}

#[test]
fn the_index_reads_sources_respects_gitignore_and_its_limits() {
    let scratch = Scratch::new("walk");
    scratch.write(".gitignore", "build/\n");
    scratch.write("a.cu", "__global__ void k() {}");
    scratch.write("host.cpp", "int main() {}");
    scratch.write("notes.txt", "not a source");
    scratch.write("build/gen.cu", "__global__ void g() {}");
    scratch.write("big.cuh", &"x".repeat(2048));
    let limits = Limits { max_file_bytes: 1024, ..Limits::default() };
    let workspace = Workspace::build(&scratch.0, limits);
    assert_eq!(names(&workspace), vec!["a.cu", "host.cpp"]);
    assert_eq!(workspace.skipped().len(), 1);
    assert_eq!(workspace.skipped()[0].path, scratch.0.join("big.cuh"));
    assert_eq!(workspace.skipped()[0].reason, "2.0 KiB is over the limit of 1.0 KiB per file");
    assert_eq!(workspace.kernel_files().collect::<Vec<_>>(), vec![scratch.0.join("a.cu").as_path()]);
}

#[test]
fn compile_commands_brings_in_files_gitignore_leaves_out() {
    let scratch = Scratch::new("commands");
    scratch.write(".gitignore", "gen/\n");
    let generated = scratch.write("gen/k.cu", "__global__ void k() {}");
    scratch.write("compile_commands.json", &format!(r#"[{{"directory": "{}", "file": "gen/k.cu", "command": "nvcc -c gen/k.cu"}}]"#, scratch.0.display()));
    let workspace = Workspace::build(&scratch.0, Limits::default());
    assert!(workspace.files().any(|(p, _)| p == generated), "{:?}", names(&workspace));
}

#[test]
fn refresh_reads_only_what_changed_and_drops_what_is_gone() {
    let scratch = Scratch::new("refresh");
    scratch.write("a.cu", "__global__ void k() {}");
    let b = scratch.write("b.cu", "void f() {}");
    let mut workspace = Workspace::build(&scratch.0, Limits::default());
    assert_eq!(workspace.refresh(), 0);
    scratch.write("b.cu", "void f() { k<<<1, 1>>>(); }");
    assert_eq!(workspace.refresh(), 1);
    assert!(workspace.files().any(|(p, e)| p == b && e.mentions("k")));
    std::fs::remove_file(&b).unwrap();
    workspace.refresh();
    assert_eq!(names(&workspace), vec!["a.cu"]);
}

#[test]
fn host_documents_follow_the_launch_and_its_callers_across_files() {
    let scratch = Scratch::new("hosts");
    let kernel = scratch.write("kernels.cuh", "__global__ void scale(float* x, int n) {}\n");
    scratch.write("launch.cu", "#include \"kernels.cuh\"\nvoid run_scale(float* x, int n) { scale<<<n / 256, 256>>>(x, n); }\n");
    scratch.write("main.cpp", "void run_scale(float* x, int n);\nint main() { run_scale(0, 1024); }\n");
    scratch.write("unrelated.cu", "__global__ void other() {}\n");
    let workspace = Workspace::build(&scratch.0, Limits::default());
    let hosts = workspace.host_documents(&kernel, "scale");
    let found: Vec<&str> = hosts.iter().map(|h| h.path.file_name().unwrap().to_str().unwrap()).collect();
    assert_eq!(found, vec!["launch.cu", "main.cpp"]);
    assert!(!found.contains(&"kernels.cuh"), "the kernel's own file is the caller's");
    assert!(Path::new(&hosts[0].path).is_absolute());
}

#[test]
fn a_header_the_workspace_ships_is_found_by_its_path_from_the_folder_a_build_would_name() {
    let scratch = Scratch::new("shipped-header");
    std::fs::create_dir_all(scratch.0.join(".git")).unwrap();
    let source = scratch.write("samples/blur/blur.cu", "#include <helper_math.h>\n#include <util/bits.cuh>\n");
    scratch.write("common/helper_math.h", "// operators\n");
    scratch.write("common/inc/util/bits.cuh", "// bits\n");
    assert_eq!(shipped_header_dir(&source, "helper_math.h"), Some(scratch.0.join("common")));
    // A path with folders in it names the folder above them.
    assert_eq!(shipped_header_dir(&source, "util/bits.cuh"), Some(scratch.0.join("common/inc")));
    assert_eq!(shipped_header_dir(&source, "bits.cuh"), Some(scratch.0.join("common/inc/util")));
    assert_eq!(shipped_header_dir(&source, "missing.h"), None);
}

#[test]
fn the_index_knows_which_files_may_define_a_function() {
    let scratch = Scratch::new("defines");
    let sizes = scratch.write("sizes.cpp", "#include <cstdio>\n// 帧的大小 (the frame's size)\nint frame_size(int *w,\n               int *h)\n{\n    return sscanf(\"640\", \"%d\", w);\n}\nstruct Frame { int area() const { return 0; } };\n");
    let main = scratch.write("main.cu", "int main() {\n    int w = 0, h = 0;\n    if (frame_size(&w, &h)) { }\n    for (int i = 0; i < w; ++i) { }\n}\n");
    let workspace = Workspace::build(&scratch.0, Limits::default());
    let entry = |path: &Path| workspace.files().find(|(p, _)| *p == path).map(|(_, e)| e.clone()).unwrap();
    let (sizes, main) = (entry(&sizes), entry(&main));
    assert!(sizes.may_define("frame_size") && sizes.may_define("area"));
    assert!(!sizes.may_define("sscanf") && sizes.mentions("sscanf"));
    assert!(main.may_define("main") && !main.may_define("frame_size") && main.mentions("frame_size"));
    assert!(!main.may_define("if") && !main.may_define("for"));
}

#[test]
fn a_kernel_its_own_file_launches_through_the_api_is_followed_from_that_launcher() {
    // A book's `reduction_kernel` in every chapter: its namesakes would spend the file limit
    // before the file that calls this one's launcher.
    let scratch = Scratch::new("api-launcher");
    for chapter in 0..20 {
        scratch.write(&format!("chapter{chapter:02}/reduction.cu"), "__global__ void reduction_kernel(float *out) {}\nint main() { reduction_kernel<<<1, 32>>>(0); }\n");
    }
    let kernel = scratch.write(
        "zz_grid_sync/reduction_kernel.cu",
        "__global__ void reduction_kernel(float *out, int n) {}\nint reduce(float *out, int n) {\n    void *args[2];\n    args[0] = (void *)&out;\n    args[1] = (void *)&n;\n    cudaLaunchCooperativeKernel((void *)reduction_kernel, 4, 256, args, 0, NULL);\n    return 4;\n}\n",
    );
    scratch.write("zz_grid_sync/main.cpp", "int reduce(float *out, int n);\nint main() { reduce(0, 1 << 20); }\n");
    let workspace = Workspace::build(&scratch.0, Limits::default());
    let hosts = workspace.host_documents(&kernel, "reduction_kernel");
    assert!(hosts.iter().any(|h| h.path.ends_with("zz_grid_sync/main.cpp")), "{:?}", hosts.iter().map(|h| &h.path).collect::<Vec<_>>());
}

#[test]
fn the_block_that_registers_bindings_is_no_caller_to_follow() {
    // Every extension of the project has its `PYBIND11_MODULE`: following the block as a caller
    // of the op would read them all, and spend the file limit before the header that defines
    // the launch's helper.
    let scratch = Scratch::new("binding-blocks");
    let kernel = scratch.write(
        "attn/mix.cu",
        "#include \"utils.h\"\n__global__ void mix_kernel(float *o, int n) {}\nvoid mix(float *o, int n) { mix_kernel<<<div_up(n, 128), 128>>>(o, n); }\n",
    );
    scratch.write("attn/bindings.cc", "void mix(float *o, int n);\nPYBIND11_MODULE(ext, m) { m.def(\"mix\", &mix); }\n");
    for op in 0..20 {
        scratch.write(&format!("op{op:02}/op.cu"), &format!("void op{op}() {{}}\nPYBIND11_MODULE(ext, m) {{ m.def(\"op{op}\", &op{op}); }}\n"));
    }
    scratch.write("utils/utils.h", "inline int div_up(int a, int b) { return (a + b - 1) / b; }\n");
    let workspace = Workspace::build(&scratch.0, Limits::default());
    let found: Vec<String> = workspace.host_documents(&kernel, "mix_kernel").iter().map(|h| h.path.strip_prefix(&scratch.0).unwrap().display().to_string()).collect();
    assert_eq!(found, vec!["attn/bindings.cc", "utils/utils.h"]);
}

#[test]
fn a_files_dispatch_macros_come_from_its_headers_as_they_are_on_disk() {
    let scratch = Scratch::new("header-macros");
    let dispatch = |value: &str| format!("#define DISPATCH_VEC(v, VEC, ...) switch (v) {{ case {value}: {{ constexpr int VEC = {value}; __VA_ARGS__ }} }}\n");
    scratch.write("dispatch.h", &dispatch("4"));
    let launcher = scratch.write("run.cu", "#include \"dispatch.h\"\nvoid run(int v) {\n  DISPATCH_VEC(v, VEC, { k<VEC><<<1, 32>>>(); });\n}\n");
    let text = std::fs::read_to_string(&launcher).unwrap();
    let no_files = FilesByName::default();
    let expanded = as_host_code(&launcher, &text, &no_files).expect("the dispatch is expanded");
    assert!(expanded.text().contains("constexpr int VEC = 4;"), "{}", expanded.text());
    // Every line stays where it was.
    assert_eq!(expanded.text().lines().count(), text.lines().count());
    // The header changed on disk is read again (it is remembered by size and time).
    scratch.write("dispatch.h", &dispatch("16"));
    assert!(as_host_code(&launcher, &text, &no_files).unwrap().text().contains("constexpr int VEC = 16;"));
    // A file that launches nothing is read as it is.
    assert!(as_host_code(&launcher, "#include \"dispatch.h\"\nint main() { return 0; }\n", &no_files).is_none());
}

#[test]
fn a_header_the_build_adds_a_folder_for_is_found_by_name() {
    // `csrc/contrib/norm/norm.cu` includes "dispatch.h" of `csrc/` (`-I csrc` in the build).
    let scratch = Scratch::new("header-elsewhere");
    let header = scratch.write("csrc/dispatch.h", "#define DISPATCH_VEC(v, VEC, ...) switch (v) { case 8: { constexpr int VEC = 8; __VA_ARGS__ } }\n");
    scratch.write("other/dispatch.h", "#define DISPATCH_VEC(v, VEC, ...) switch (v) { case 2: { constexpr int VEC = 2; __VA_ARGS__ } }\n");
    let launcher = scratch.write("csrc/contrib/norm/norm.cu", "#include \"dispatch.h\"\nvoid run(int v) {\n  DISPATCH_VEC(v, VEC, { k<VEC><<<1, 32>>>(); });\n}\n");
    let text = std::fs::read_to_string(&launcher).unwrap();
    assert!(as_host_code(&launcher, &text, &FilesByName::default()).is_none(), "nothing beside it");
    let other = scratch.0.join("other/dispatch.h");
    let files = FilesByName::new([header.as_path(), other.as_path(), launcher.as_path()]);
    let expanded = as_host_code(&launcher, &text, &files).expect("the header nearest the includer is read");
    assert!(expanded.text().contains("constexpr int VEC = 8;"), "{}", expanded.text());
}

#[test]
fn the_scripts_that_name_the_extension_of_a_common_binding_are_its_callers() {
    // Two extensions export `forward`; the build script names the one whose sources hold the
    // binding. Of the scripts that call a `forward`, only the one importing that extension is
    // read, and through it the test that applies its autograd function.
    let scratch = Scratch::new("extension-modules");
    let kernel = scratch.write("csrc/loss/loss_kernel.cu", "__global__ void loss_kernel(float *o, int n) {}\nvoid loss_cuda(float *o, int n) { loss_kernel<<<n, 128>>>(o, n); }\n");
    scratch.write("csrc/loss/interface.cpp", "void loss_cuda(float *o, int n);\nvoid loss_forward(float *o, int n) { loss_cuda(o, n); }\nPYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def(\"forward\", &loss_forward); }\n");
    scratch.write("setup.py", "ext_modules.append(\n    CUDAExtension(\n        name=\"other_cuda\",\n        sources=[\"csrc/other/interface.cpp\"],\n    )\n)\next_modules.append(\n    CUDAExtension(\n        name=\"loss_cuda\",\n        sources=[\n            \"csrc/loss/interface.cpp\",\n            \"csrc/loss/loss_kernel.cu\",\n        ],\n    )\n)\n");
    for model in 0..10 {
        scratch.write(&format!("pkg/model{model}.py"), "import other_cuda\nclass Model:\n    def run(self, x):\n        return other_cuda.forward(x)\n");
    }
    scratch.write("pkg/loss.py", "import loss_cuda\nclass LossFn(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, o, n):\n        return loss_cuda.forward(o, n)\n");
    scratch.write("tests/test_loss.py", "from pkg import loss\ndef test_loss():\n    loss.LossFn.apply(torch.empty(4096), 4096)\n");
    let workspace = Workspace::build(&scratch.0, Limits::default());
    let found: Vec<String> = workspace.host_documents(&kernel, "loss_kernel").iter().map(|h| h.path.strip_prefix(&scratch.0).unwrap().display().to_string()).collect();
    assert_eq!(found, vec!["csrc/loss/interface.cpp", "pkg/loss.py", "tests/test_loss.py"]);
}
