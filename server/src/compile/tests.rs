//! Compiles real kernels with real NVRTC (pip's, installed by `scripts/test`), and checks the
//! log parsers against what that NVRTC prints.

use std::sync::OnceLock;

use super::*;

/// NVRTC for these tests. Missing NVRTC is a failure, not a skip: CI must compile for real.
fn nvrtc() -> &'static Nvrtc {
    static NVRTC: OnceLock<Nvrtc> = OnceLock::new();
    NVRTC.get_or_init(|| {
        Nvrtc::locate(None).unwrap_or_else(|not_found| {
            panic!(
                "the compile tests need NVRTC: run `scripts/test` (it installs pip's NVRTC into ./.venv), \
                 or set CUTUNE_NVRTC to a libnvrtc.so.\n{not_found}"
            )
        })
    })
}

fn compile(request: &CompileRequest) -> CompileOutput {
    nvrtc().compile(request).unwrap_or_else(|failure| panic!("compile of {} failed: {failure}", request.file_name))
}

const SAXPY: &str = r#"#include <cuda_fp16.h>
__global__ void saxpy(float a, const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + __half2float(__float2half(y[i]));
}
"#;

const TILED: &str = r#"template <int BLOCK, int VEC>
__global__ void reverse_tile(float* out, const float* in, int n) {
    __shared__ float tile[BLOCK * VEC];
    int base = blockIdx.x * BLOCK * VEC;
    #pragma unroll
    for (int v = 0; v < VEC; ++v) {
        int i = base + v * BLOCK + threadIdx.x;
        tile[v * BLOCK + threadIdx.x] = i < n ? in[i] : 0.0f;
    }
    __syncthreads();
    #pragma unroll
    for (int v = 0; v < VEC; ++v) {
        int i = base + v * BLOCK + threadIdx.x;
        if (i < n) out[i] = tile[BLOCK * VEC - 1 - (v * BLOCK + threadIdx.x)];
    }
}
"#;

/// A per-thread array indexed at run time cannot live in registers: it goes to the stack.
const LOCAL_ARRAY: &str = r#"__global__ void local_array(float* data, int k) {
    float a[256];
    for (int i = 0; i < 256; i++) a[i] = data[i * k];
    float sum = 0.0f;
    for (int i = 0; i < 256; i++) sum += a[(i * 7 + k) & 255];
    data[0] = sum;
}
"#;

#[test]
fn architectures_are_validated() {
    for good in ["sm_80", "sm_90", "sm_90a", "sm_100f", "sm_120"] {
        assert_eq!(validate_arch(good, true), Ok(()), "{good}");
    }
    assert_eq!(validate_arch("compute_90", false), Ok(()));
    assert!(validate_arch("compute_90", true).unwrap_err().contains("needs a real architecture (sm_90)"));
    for bad in ["90", "sm90", "sm_9", "sm_9000", "sm_90b", "sm_", "--gpu-architecture=sm_90"] {
        assert!(validate_arch(bad, false).is_err(), "{bad}");
    }
}

#[test]
fn locates_a_library_with_headers() {
    let nvrtc = nvrtc();
    assert!(nvrtc.library_path().is_file(), "{}", nvrtc.library_path().display());
    assert!(nvrtc.version().0 >= 12, "{:?}", nvrtc.version());
    let include = nvrtc.include_dir().expect("CUDA headers (pip's nvidia-cuda-runtime-cu12) next to NVRTC");
    assert!(include.join("cuda_bf16.h").is_file());
}

#[test]
fn a_missing_explicit_library_is_reported_with_the_install_hint() {
    let not_found = Nvrtc::locate(Some(Path::new("/nonexistent/libnvrtc.so.12"))).unwrap_err();
    let message = not_found.to_string();
    assert!(message.contains("explicit path: /nonexistent/libnvrtc.so.12: no such file"), "{message}");
    assert!(message.contains("pip install nvidia-cuda-nvrtc-cu12 nvidia-cuda-runtime-cu12"), "{message}");
}

#[test]
fn the_located_library_can_be_given_explicitly_as_file_or_directory() {
    let library = nvrtc().library_path();
    assert_eq!(Nvrtc::locate(Some(library)).unwrap().library_path(), library);
    assert_eq!(Nvrtc::locate(library.parent()).unwrap().library_path(), library);
}

#[test]
fn compiles_to_ptx_and_cubin_for_sm_90_and_sm_80() {
    for arch in ["sm_90", "sm_80"] {
        let output = compile(&CompileRequest::new(SAXPY, "saxpy.cu", arch));
        assert!(output.ptx.contains(&format!(".target {arch}")), "{arch}");
        assert!(output.ptx.contains(".entry _Z5saxpyfPKfPfi"), "{arch}");
        let cubin = output.cubin.expect("a cubin was asked for");
        assert_eq!(&cubin[..4], b"\x7fELF", "{arch}: a cubin is an ELF file");
        assert_eq!(output.kernels.len(), 1, "{arch}: {}", output.log);
        let saxpy = &output.kernels[0];
        assert_eq!(saxpy.name, "_Z5saxpyfPKfPfi");
        assert!(saxpy.registers > 0, "{arch}: {saxpy:?}");
        assert_eq!((saxpy.shared_bytes, saxpy.spill_store_bytes), (0, 0), "{arch}: {saxpy:?}");
    }
}

#[test]
fn the_workers_verification_kernels_compile_cleanly() {
    for arch in ["sm_80", "sm_90"] {
        let mut request = CompileRequest::new(crate::gpu::HARNESS_SOURCE, "cutune_harness.cu", arch);
        request.name_expressions.push(crate::gpu::HARNESS_ENTRY.to_string());
        let output = compile(&request);
        assert!(output.diagnostics.is_empty(), "{arch}: {:?}", output.diagnostics);
        for kernel in ["cutune_fill", "cutune_compare", "cutune_poison_shared"] {
            assert!(output.ptx.contains(&format!(".entry {kernel}(")), "{arch}: no {kernel} in the PTX");
        }
        assert_eq!(output.lowered_names, vec![(crate::gpu::HARNESS_ENTRY.to_string(), "cutune_compare".to_string())]);
    }
}

/// vLLM's style: the host's `<cmath>` and `<limits>` reached the kernel through
/// `<torch/extension.h>`; NVRTC cannot open them, and the slice takes libcu++'s instead.
#[test]
fn a_slice_calling_the_hosts_cmath_and_limits_compiles() {
    let text = "#include <torch/extension.h>\n\
__global__ void clamp_inf(float *lse, int n) {\n\
  int i = blockIdx.x * blockDim.x + threadIdx.x;\n\
  if (i < n) lse[i] = std::isinf(lse[i]) ? -std::numeric_limits<float>::infinity() : std::fmax(lse[i], 0.f);\n\
}\n";
    let sliced = crate::slice::device_slice(&crate::syntax::Document::new(text.to_string()), "clamp_inf", &Default::default()).expect("the kernel slices");
    let output = compile(&CompileRequest::new(&sliced.source, "clamp_inf.cu", "sm_90"));
    assert!(output.diagnostics.is_empty(), "{:?}\n{}", output.diagnostics, sliced.source);
    assert!(output.ptx.contains(".entry _Z9clamp_infPfi"), "{}", output.ptx);
}

#[test]
fn ptx_only_requests_skip_ptxas() {
    let mut request = CompileRequest::new(SAXPY, "saxpy.cu", "compute_90");
    request.cubin = false;
    let output = compile(&request);
    assert!(output.cubin.is_none() && output.kernels.is_empty());
    assert!(output.ptx.contains(".target sm_90"));
}

#[test]
fn template_instantiations_are_named_and_report_static_shared_memory() {
    let mut request = CompileRequest::new(TILED, "tiled.cu", "sm_90");
    request.name_expressions = vec!["reverse_tile<256, 4>".into(), "reverse_tile<128, 2>".into()];
    let output = compile(&request);
    assert_eq!(
        output.lowered_names,
        vec![
            ("reverse_tile<256, 4>".to_string(), "_Z12reverse_tileILi256ELi4EEvPfPKfi".to_string()),
            ("reverse_tile<128, 2>".to_string(), "_Z12reverse_tileILi128ELi2EEvPfPKfi".to_string()),
        ]
    );
    let shared: Vec<(&str, u64, u32)> = output.kernels.iter().map(|k| (k.name.as_str(), k.shared_bytes, k.barriers)).collect();
    assert!(shared.contains(&("_Z12reverse_tileILi256ELi4EEvPfPKfi", 256 * 4 * 4, 1)), "{shared:?}\n{}", output.log);
    assert!(shared.contains(&("_Z12reverse_tileILi128ELi2EEvPfPKfi", 128 * 2 * 4, 1)), "{shared:?}\n{}", output.log);
}

#[test]
fn a_local_array_under_a_register_cap_uses_stack_or_spills() {
    let mut request = CompileRequest::new(LOCAL_ARRAY, "local.cu", "sm_90");
    request.options = vec!["--maxrregcount=16".into()];
    let output = compile(&request);
    let kernel = &output.kernels[0];
    assert!(kernel.stack_bytes >= 1024 || kernel.spill_store_bytes > 0, "{kernel:?}\n{}", output.log);
    assert!(kernel.registers <= 32, "{kernel:?}");
}

#[test]
fn defines_reach_the_source() {
    let source = "__global__ void fill(float* out) { __shared__ float s[TILE]; s[threadIdx.x] = 1; __syncthreads(); out[threadIdx.x] = s[TILE - 1 - threadIdx.x]; }";
    let mut request = CompileRequest::new(source, "fill.cu", "sm_90");
    request.defines = vec![("TILE".into(), "64".into())];
    assert_eq!(compile(&request).kernels[0].shared_bytes, 64 * 4);
    request.defines = vec![("TILE SIZE".into(), "64".into())];
    let failure = nvrtc().compile(&request).unwrap_err();
    assert!(failure.message.contains("define name `TILE SIZE` is not an identifier"), "{}", failure.message);
}

#[test]
fn compile_errors_become_diagnostics_with_lines_and_columns() {
    let source = "__global__ void broken(float* out) {\n  int unused;\n    out[0] = missing;\n}\n";
    let failure = nvrtc().compile(&CompileRequest::new(source, "broken.cu", "sm_90")).unwrap_err();
    assert!(failure.message.starts_with("broken.cu: 1 error (nvrtcCompileProgram failed"), "{}", failure.message);
    let error = CompileDiagnostic {
        file: "broken.cu".into(),
        line: Some(3),
        column: Some(14),
        severity: Severity::Error,
        message: "identifier \"missing\" is undefined".into(),
    };
    let warning = CompileDiagnostic {
        file: "broken.cu".into(),
        line: Some(2),
        column: Some(7),
        severity: Severity::Warning,
        message: "#177-D: variable \"unused\" was declared but never referenced".into(),
    };
    assert_eq!(failure.diagnostics, vec![error, warning], "{}", failure.log);
}

#[test]
fn bad_options_are_command_line_diagnostics() {
    let mut request = CompileRequest::new(SAXPY, "saxpy.cu", "sm_90");
    request.options = vec!["--no-such-option".into()];
    let failure = nvrtc().compile(&request).unwrap_err();
    assert!(failure.message.contains("NVRTC_ERROR_INVALID_OPTION"), "{}", failure.message);
    assert_eq!(failure.diagnostics.len(), 1);
    assert_eq!((failure.diagnostics[0].line, failure.diagnostics[0].severity), (None, Severity::Error));
    assert!(failure.diagnostics[0].message.contains("--no-such-option"), "{:?}", failure.diagnostics);
}

#[test]
fn ptx_is_identical_across_compiles_and_file_names() {
    let first = compile(&CompileRequest::new(TILED.to_string() + SAXPY, "a.cu", "sm_90"));
    let second = compile(&CompileRequest::new(TILED.to_string() + SAXPY, "a.cu", "sm_90"));
    let renamed = compile(&CompileRequest::new(TILED.to_string() + SAXPY, "elsewhere/b.cu", "sm_90"));
    assert_eq!(first.ptx, second.ptx);
    assert_eq!(first.cubin, second.cubin);
    assert_eq!(first.ptx, renamed.ptx, "the file name must not reach the PTX without -lineinfo");
}

#[test]
fn compiles_from_several_threads_at_once() {
    let outputs: Vec<CompileOutput> = std::thread::scope(|scope| {
        let handles: Vec<_> = [32, 64, 128, 256]
            .into_iter()
            .map(|block| {
                scope.spawn(move || {
                    let mut request = CompileRequest::new(TILED, "tiled.cu", "sm_90");
                    request.name_expressions = vec![format!("reverse_tile<{block}, 2>")];
                    (block, compile(&request))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                let (block, output) = h.join().expect("compile thread");
                assert_eq!(output.kernels[0].shared_bytes, block * 2 * 4);
                output
            })
            .collect()
    });
    assert_eq!(outputs.len(), 4);
}

#[test]
fn parses_the_ptxas_report_of_a_device_function_and_two_kernels() {
    // Captured from NVRTC 12.9 (pip) with --ptxas-options=-v --maxrregcount=16.
    let log = "\
ptxas warning : For profile sm_90 adjusting per thread register count of 16 to lower bound of 24
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_Z5scaleILi256EEvPfPKfi' for 'sm_90'
ptxas info    : Function properties for _Z5scaleILi256EEvPfPKfi
ptxas         .     32 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 16 registers, used 1 barriers, 32 bytes cumulative stack size, 1024 bytes smem
ptxas info    : Compile time = 13.354 ms
ptxas info    : Function properties for _Z6helperf
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Compiling entry function '_Z3bigPfi' for 'sm_90'
ptxas info    : Function properties for _Z3bigPfi
ptxas         .     1024 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads
ptxas info    : Used 24 registers, used 0 barriers, 1024 bytes cumulative stack size, 380 bytes cmem[0], 8 bytes cmem[3]
";
    let scale = KernelResources {
        name: "_Z5scaleILi256EEvPfPKfi".into(),
        registers: 16,
        barriers: 1,
        stack_bytes: 32,
        shared_bytes: 1024,
        ..Default::default()
    };
    let big = KernelResources {
        name: "_Z3bigPfi".into(),
        registers: 24,
        stack_bytes: 1024,
        spill_store_bytes: 8,
        spill_load_bytes: 12,
        const_bytes: 388,
        ..Default::default()
    };
    assert_eq!(parse_resources(log), vec![scale, big]);
}

const BLOCK_DEFINE: &str = r#"#include <cuda_fp16.h>
#ifndef BLOCK
#define BLOCK 128
#endif
__global__ void fill(half* out, int n) {
    __shared__ float staged[BLOCK];
    staged[threadIdx.x] = threadIdx.x;
    __syncthreads();
    int i = blockIdx.x * BLOCK + threadIdx.x;
    if (i < n) out[i] = __float2half(staged[BLOCK - 1 - threadIdx.x]);
}
"#;

fn block_request(block: u32) -> CompileRequest {
    let mut request = CompileRequest::new(BLOCK_DEFINE, "fill.cu", "sm_90");
    request.defines.push(("BLOCK".into(), block.to_string()));
    request.name_expressions.push("&fill".into());
    request
}

fn scratch_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("cutune-compile-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

#[test]
fn a_batch_gives_each_configuration_its_own_kernel_with_the_resources_of_a_lone_compile() {
    let requests: Vec<CompileRequest> = [64, 128, 256].map(block_request).to_vec();
    let batched = batch::batch(&requests).unwrap();
    let output = compile(&batched);
    let parts = batch::split(&output, &requests);
    for (request, (names, kernels)) in requests.iter().zip(&parts) {
        let alone = compile(request);
        assert_eq!(names.len(), 1);
        assert_eq!(kernels.len(), 1, "{names:?} in {:?}", output.kernels);
        let (lone, batched) = (&alone.kernels[0], &kernels[0]);
        assert_eq!((lone.registers, lone.shared_bytes), (batched.registers, batched.shared_bytes), "{}", request.defines[0].1);
    }
    let shared: Vec<u64> = parts.iter().map(|(_, k)| k[0].shared_bytes).collect();
    assert_eq!(shared, vec![256, 512, 1024]);
}

#[test]
fn the_pool_compiles_every_request_once_then_serves_them_from_the_cache() {
    let dir = scratch_dir("pool");
    let pool = CompilePool::new(nvrtc().clone(), CubinCache::new(&dir), 2, 4);
    let mut broken = block_request(32);
    broken.source.push_str("this is not C++;\n");
    let mut requests: Vec<(usize, CompileRequest)> = [32, 64, 128, 256, 512].into_iter().map(block_request).enumerate().collect();
    requests.push((5, broken));
    pool.submit(requests.clone());
    let mut first: Vec<Built> = (0..6).map(|_| pool.recv().unwrap()).collect();
    first.sort_by_key(|b| b.id);
    for built in &first[..5] {
        let compiled = built.result.as_ref().unwrap_or_else(|f| panic!("{}: {}", built.id, f.message));
        assert!(!compiled.cached && compiled.cubin.is_file() && compiled.resources.is_some());
    }
    // The broken member made its batch fail; the others were compiled one by one.
    assert!(first[5].result.as_ref().unwrap_err().log.contains("error"));

    pool.submit(requests);
    let mut second: Vec<Built> = (0..6).map(|_| pool.recv().unwrap()).collect();
    second.sort_by_key(|b| b.id);
    for (a, b) in first.iter().zip(&second).take(5) {
        let (a, b) = (a.result.as_ref().unwrap(), b.result.as_ref().unwrap());
        assert!(b.cached);
        assert_eq!((&a.cubin, &a.function, &a.resources), (&b.cubin, &b.function, &b.resources));
    }
    assert!(second[5].result.is_err());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_failed_compile_says_why_in_one_line_and_tells_too_much_static_shared_memory_apart() {
    let mut too_big = CompileRequest::new("__global__ void k(float* x) { __shared__ float t[16384]; t[threadIdx.x] = 1; __syncthreads(); x[threadIdx.x] = t[threadIdx.x ^ 1]; }\n", "big.cu", "sm_90");
    too_big.name_expressions.push("&k".into());
    let failure = nvrtc().compile(&too_big).unwrap_err();
    assert_eq!(failure_reason(&failure.message, &failure.log), FailureReason::StaticShared { bytes: 65536 });

    let broken = CompileRequest::new("__global__ void k(float* x) {\n  x[0] = undefined_name;\n}\n", "broken.cu", "sm_90");
    let failure = nvrtc().compile(&broken).unwrap_err();
    let FailureReason::Error(text) = failure_reason(&failure.message, &failure.log) else { panic!("{}", failure.log) };
    assert!(text.starts_with("line 2: ") && text.contains("undefined_name"), "{text}");
}

/// Every configuration of the fault fixture, compiled as the tuner does (4 threads, batches),
/// keeps ptxas' resource report: the pre-launch check needs MODE=8's registers.
#[test]
fn batched_configurations_keep_their_resources() {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/faults/faults.cutune.toml")).unwrap();
    let kernel = crate::spec::parse_spec(&text).0.unwrap().kernels.remove(0);
    let source = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/faults/faults.cu")).unwrap();
    for round in 0..3 {
        let dir = scratch_dir(&format!("faults-{round}"));
        let pool = CompilePool::new(nvrtc().clone(), CubinCache::new(&dir), 4, 8);
        let requests: Vec<(usize, CompileRequest)> = (0..10)
            .map(|mode| (mode, crate::space::compile_request(&kernel, &source, "sm_90", &crate::space::Configuration(vec![("MODE".into(), mode as i64)]))))
            .collect();
        pool.submit(requests);
        for _ in 0..10 {
            let built = pool.recv().unwrap();
            match (built.id, &built.result) {
                (7, result) => assert!(result.is_err(), "MODE=7 has too much static shared memory"),
                (id, Ok(compiled)) => {
                    let resources = compiled.resources.as_ref().unwrap_or_else(|| panic!("round {round}: MODE={id} has no resources"));
                    assert_eq!(resources.registers > 128, id == 8, "MODE={id}: {resources:?}");
                }
                (id, Err(failed)) => panic!("MODE={id}: {}", failed.message),
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

const PARAMS: &str = r#"#include <cuda_fp16.h>
typedef unsigned int index_t;
struct ConvBase {
    bool silu;
    int batch, dim;
    index_t x_stride;
    void *__restrict__ x_ptr;
    float scale[3];
};
struct ConvParams : ConvBase {
    half *out_ptr;
    struct { int rows; double bias; } inner;
};
__global__ void conv(ConvParams params) {
    reinterpret_cast<float *>(params.x_ptr)[0] = params.scale[0] + params.inner.bias;
}
"#;

#[test]
fn a_structs_layout_is_the_compilers_base_classes_nested_members_and_arrays_included() {
    let request = CompileRequest::new(PARAMS, "params.cu", "sm_90");
    let members = ["silu", "batch", "x_stride", "x_ptr", "scale[2]", "out_ptr", "inner.rows", "inner.bias"];
    let layout = struct_layout(nvrtc(), &request, "ConvParams", &members).unwrap_or_else(|why| panic!("{why}"));
    // A bool, two ints, an unsigned int, a pointer, three floats: the base is 40 bytes (36
    // rounded up to the pointer's alignment); then a pointer and the nested struct (an int and
    // a double at the next 8 bytes).
    assert_eq!(layout.bytes, 64);
    assert_eq!(layout.fields, [(0, 1), (4, 4), (12, 4), (16, 8), (32, 4), (40, 8), (48, 4), (56, 8)]);
}

#[test]
fn a_member_the_struct_lacks_and_a_type_the_source_lacks_are_named() {
    let request = CompileRequest::new(PARAMS, "params.cu", "sm_90");
    let why = struct_layout(nvrtc(), &request, "ConvParams", &["batch", "y_ptr"]).unwrap_err();
    assert!(why.starts_with("struct `ConvParams` has no member `y_ptr`"), "{why}");
    let why = struct_layout(nvrtc(), &request, "RowParams", &["batch"]).unwrap_err();
    assert!(why.starts_with("the kernel's source does not name the type `RowParams`"), "{why}");
    let broken = CompileRequest::new(PARAMS.replace("half *out_ptr;", "half *out_ptr"), "params.cu", "sm_90");
    let why = struct_layout(nvrtc(), &broken, "ConvParams", &["batch"]).unwrap_err();
    assert!(why.starts_with("the kernel's source does not compile"), "{why}");
}
