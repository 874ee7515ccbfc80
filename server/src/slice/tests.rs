//! Properties of the slice that the fixture snapshots (`server/tests/slice_snapshots.rs`) do not
//! show: determinism across templatize, errors, and documents without a tree.

use super::*;

fn slice(text: &str, kernel: &str) -> DeviceSlice {
    device_slice(&Document::new(text.to_string()), kernel, &SliceOptions::default()).expect("the kernel slices")
}

const ORIGINAL: &str = "\
#include <cuda_fp16.h>
#include <vector>

__global__ void __launch_bounds__(256) scale(half* x, int n) {
  for (int i = threadIdx.x; i < n; i += 256) x[i] = __hmul(x[i], __float2half(2.f));
}

void launch(std::vector<half>& v) { scale<<<1, 256>>>(v.data(), v.size()); }
";

/// What `cutune templatize` makes of `ORIGINAL`: a parameter group, and its name for the literal.
const TEMPLATIZED: &str = "\
#include <cuda_fp16.h>
#include <vector>

#ifndef BLOCK_SIZE
#define BLOCK_SIZE 256
#endif

__global__ void __launch_bounds__(BLOCK_SIZE) scale(half* x, int n) {
  for (int i = threadIdx.x; i < n; i += BLOCK_SIZE) x[i] = __hmul(x[i], __float2half(2.f));
}

void launch(std::vector<half>& v) { scale<<<1, BLOCK_SIZE>>>(v.data(), v.size()); }
";

#[test]
fn a_templatized_file_slices_like_the_original_but_for_its_parameters() {
    let original = slice(ORIGINAL, "scale").source;
    let templatized = slice(TEMPLATIZED, "scale").source;
    assert!(templatized.contains("#ifndef BLOCK_SIZE\n#define BLOCK_SIZE 256\n#endif\n"), "{templatized}");
    let without_group = templatized.replace("#ifndef BLOCK_SIZE\n#define BLOCK_SIZE 256\n#endif\n\n", "");
    assert_eq!(without_group.replace("BLOCK_SIZE", "256"), original);
    // And slicing is a function of the text: the same input gives the same bytes.
    assert_eq!(slice(TEMPLATIZED, "scale"), slice(TEMPLATIZED, "scale"));
}

#[test]
fn an_unknown_kernel_names_the_kernels_there_are() {
    let err = device_slice(&Document::new(ORIGINAL.into()), "nope", &SliceOptions::default()).unwrap_err();
    assert_eq!(err, SliceError::KernelNotFound { name: "nope".into(), known: vec!["scale".into()] });
    assert_eq!(err.to_string(), "no kernel `nope`; the file's kernels are scale");
}

#[test]
fn a_kernel_only_declared_is_an_error() {
    let doc = Document::new("__global__ void k(float* x);\nvoid h(float* x) { k<<<1, 1>>>(x); }\n".into());
    let err = device_slice(&doc, "k", &SliceOptions::default()).unwrap_err();
    assert_eq!(err, SliceError::KernelNotDefined { name: "k".into(), line: 1 });
}

#[test]
fn a_document_without_its_tree_slices_the_same() {
    let doc = Document::new(TEMPLATIZED.into());
    let light = doc.without_tree();
    assert!(!light.has_tree());
    let opts = SliceOptions::default();
    assert_eq!(device_slice(&light, "scale", &opts), device_slice(&doc, "scale", &opts));
}

#[test]
fn a_qualified_kernel_name_finds_the_kernel() {
    let text = "namespace ops {\n__global__ void k(float* x) { x[0] = 1.f; }\n}\n";
    assert_eq!(slice(text, "ops::k").source, format!("{text}using ops::k;\n"));
}

#[test]
fn a_file_with_syntax_errors_still_slices_its_kernel() {
    let text = "\
#define N 4
__device__ float helper(float x) { return x * N; }
__global__ void k(float* x) { x[0] = helper(x[1]); }
void host( { broken
";
    let sliced = slice(text, "k");
    assert!(sliced.source.contains("__device__ float helper"), "{}", sliced.source);
    assert!(sliced.source.contains("#define N 4"), "{}", sliced.source);
    assert!(!sliced.source.contains("broken"), "{}", sliced.source);
}

#[test]
fn command_line_defines_the_slice_reads_are_written_at_the_top() {
    let text = "#ifndef TILE\n#define TILE 8\n#endif\n__global__ void k(float* x) { x[TILE] = 0.f; }\n";
    let opts = SliceOptions {
        defines: vec![
            ("TILE".into(), Some("16".into())),
            ("TORCH_EXTENSION_NAME".into(), Some("ext".into())),
            ("__CUDA_NO_HALF_OPERATORS__".into(), None),
        ],
        ..SliceOptions::default()
    };
    let sliced = device_slice(&Document::new(text.into()), "k", &opts).unwrap();
    assert!(sliced.source.starts_with("#define TILE 16\n#define __CUDA_NO_HALF_OPERATORS__ 1\n#ifndef TILE\n"), "{}", sliced.source);
}

#[test]
fn a_local_variable_does_not_pull_in_a_host_global_of_the_same_name() {
    let text = "int n = 3;\n__global__ void k(float* x, int n) { float scale = n; x[0] = scale; }\n";
    let sliced = slice(text, "k");
    assert!(sliced.unresolved.is_empty(), "{:?}", sliced.unresolved);
    assert!(!sliced.source.contains("int n = 3"));
}

#[test]
fn a_constant_read_in_an_array_size_or_an_initial_value_is_kept() {
    // The classic transpose and tiled-matmul tutorials: `const int` tile sizes at file scope.
    let text = "const int TILE = 32;\nconst int LIMIT = 7;\nconst int UNUSED = 1;\n__global__ void k(int* a) {\n  __shared__ int tile[TILE][TILE + 1];\n  int x = LIMIT;\n  tile[0][0] = x; a[0] = tile[0][0];\n}\n";
    let sliced = slice(text, "k");
    assert!(sliced.source.starts_with("const int TILE = 32;\nconst int LIMIT = 7;\n"), "{}", sliced.source);
    assert!(!sliced.source.contains("UNUSED"), "{}", sliced.source);
}

#[test]
fn macros_of_dropped_c_headers_get_device_definitions_when_used() {
    let text = "#include <cmath>\n#include <cfloat>\n__global__ void k(float* x) { x[0] = -INFINITY; x[1] = FLT_MAX; }\n";
    let slice = device_slice(&Document::new(text.to_string()), "k", &SliceOptions::default()).unwrap();
    assert!(slice.source.starts_with("#define INFINITY __int_as_float(0x7f800000)\n#define FLT_MAX 3.402823466e+38F\n"), "{}", slice.source);
    assert!(!slice.source.contains("NAN"));
    // A kernel that times itself in host time units (apex's `AddDelay_kernel`).
    let timed = "#include <ctime>\n__global__ void k(int* n) { clock_t start = clock(); n[0] = (clock() - start) * 1000 / CLOCKS_PER_SEC; }\n";
    let slice = device_slice(&Document::new(timed.to_string()), "k", &SliceOptions::default()).unwrap();
    assert!(slice.source.starts_with("#define CLOCKS_PER_SEC ((clock_t) 1000000)\n"), "{}", slice.source);
    // Without the header, the name is the file's own business.
    let own = "__global__ void k(float* x) { x[0] = INFINITY; }\n";
    let slice = device_slice(&Document::new(own.to_string()), "k", &SliceOptions::default()).unwrap();
    assert!(!slice.source.contains("#define INFINITY"));
}

#[test]
fn pytorchs_packed_accessors_get_definitions_when_its_header_is_dropped() {
    // pytorch3d's compositing kernels: accessors by value, indexed a dimension at a time.
    let text = "#include <ATen/ATen.h>\n__global__ void k(at::PackedTensorAccessor64<float, 2, at::RestrictPtrTraits> out, const torch::PackedTensorAccessor32<float, 1, torch::RestrictPtrTraits> x) {\n  out[blockIdx.x][threadIdx.x] = x[threadIdx.x] * out.size(1);\n}\n";
    let slice = device_slice(&Document::new(text.to_string()), "k", &SliceOptions::default()).unwrap();
    assert!(slice.source.contains("namespace at {\ntemplate <typename T> struct DefaultPtrTraits"), "{}", slice.source);
    assert!(slice.source.contains("using at::PackedTensorAccessor32;"), "{}", slice.source);
    assert_eq!(slice.kept.iter().filter(|k| k.kind == SliceItemKind::HeaderDefinition).count(), 1, "{:?}", slice.kept);
    // The namespace is the slice's now: no note that the dropped header would have given it.
    assert!(slice.unresolved.is_empty(), "{:?}", slice.unresolved);
    // A project that defines its own accessor keeps it.
    let own = "#include <ATen/ATen.h>\ntemplate <typename T, int N> struct PackedTensorAccessor64 { T* data_; };\n__global__ void k(PackedTensorAccessor64<float, 1> out) { out.data_[0] = 1.0f; }\n";
    let slice = device_slice(&Document::new(own.to_string()), "k", &SliceOptions::default()).unwrap();
    assert!(!slice.source.contains("namespace at {"), "{}", slice.source);
}

#[test]
fn pytorchs_atomic_helpers_get_definitions_when_its_header_is_dropped() {
    // apex's `index_mul_2d`: `gpuAtomicAdd` of `ATen/cuda/Atomic.cuh`, a float added to a float.
    let text = "#include <ATen/cuda/Atomic.cuh>\n__global__ void k(float* g, const float* x, int n) { gpuAtomicAdd(g + n, x[n]); }\n";
    let slice = device_slice(&Document::new(text.to_string()), "k", &SliceOptions::default()).unwrap();
    assert!(slice.source.starts_with("template <typename T, typename V> __device__ __forceinline__ T gpuAtomicAdd(T *address, V value)"), "{}", slice.source);
    assert!(slice.kept.iter().any(|k| k.kind == SliceItemKind::HeaderDefinition && k.name == "gpuAtomicAdd"), "{:?}", slice.kept);
    assert!(!slice.source.contains("fastAtomicAdd"), "{}", slice.source);
    // A project's own helper of the name is its own.
    let own = "#include <torch/extension.h>\n__device__ void gpuAtomicAdd(float* a, float v) { atomicAdd(a, v); }\n__global__ void k(float* g) { gpuAtomicAdd(g, 1.0f); }\n";
    let slice = device_slice(&Document::new(own.to_string()), "k", &SliceOptions::default()).unwrap();
    assert!(!slice.source.contains("template <typename T, typename V>"), "{}", slice.source);
}

#[test]
fn cufft_number_types_are_defined_when_its_header_is_dropped() {
    let text = "#include <cufft.h>\n__global__ void k(const cufftReal* in, cufftComplex* out) { out[0].x = in[0]; }\n";
    let slice = device_slice(&Document::new(text.to_string()), "k", &SliceOptions::default()).unwrap();
    assert!(slice.source.starts_with("typedef float cufftReal;\ntypedef float2 cufftComplex;\n"), "{}", slice.source);
    assert!(!slice.source.contains("cufftDoubleComplex"), "{}", slice.source);
    // Without the header, the names are the file's own business.
    let own = "__global__ void k(cufftReal* x) { x[0] = 0; }\n";
    let slice = device_slice(&Document::new(own.to_string()), "k", &SliceOptions::default()).unwrap();
    assert!(!slice.source.contains("typedef float cufftReal"), "{}", slice.source);
}

#[test]
fn driver_handles_are_defined_when_cuda_h_is_dropped() {
    let text = "#include <cuda.h>\nextern \"C\" __global__ void k(float* out, CUtexObject tex) { out[0] = tex2D<float>(tex, 0.5f, 0.5f); }\n";
    let slice = device_slice(&Document::new(text.to_string()), "k", &SliceOptions::default()).unwrap();
    assert!(slice.source.starts_with("typedef unsigned long long CUtexObject;\n"), "{}", slice.source);
    assert!(!slice.source.contains("CUsurfObject"), "{}", slice.source);
}

#[test]
fn math_constants_of_a_pytorch_extension_are_defined() {
    // `<torch/extension.h>` brings `<cmath>`, whose `M_*` constants a GELU uses with nothing else included.
    let text = "#include <torch/extension.h>\n__global__ void gelu(float* x) { x[0] *= 0.5f * M_2_SQRTPI * M_SQRT1_2; }\n";
    let slice = device_slice(&Document::new(text.to_string()), "gelu", &SliceOptions::default()).unwrap();
    assert!(slice.source.starts_with("#define M_2_SQRTPI 1.12837916709551257390\n#define M_SQRT1_2 0.70710678118654752440\n"), "{}", slice.source);
    assert!(!slice.source.contains("M_PI"));
}

#[test]
fn forward_declared_templates_are_kept_with_their_specialisations() {
    let text = "template <int B> struct bits;\ntemplate <> struct bits<4> { typedef unsigned int type; };\nstruct unused;\n__global__ void k(float* x) { typename bits<4>::type v = 0; x[0] = v; }\n";
    let slice = device_slice(&Document::new(text.to_string()), "k", &SliceOptions::default()).unwrap();
    assert!(slice.source.starts_with("template <int B> struct bits;\ntemplate <> struct bits<4>"), "{}", slice.source);
    assert!(!slice.source.contains("struct unused"), "{}", slice.source);
}
#[test]
fn an_aligned_struct_is_a_type_the_slice_keeps() {
    let text = "struct __align__(sizeof(float2)) SumMax\n{\n    float maxval;\n    float sum;\n};\n\n__global__ void k(SumMax *out) { SumMax s; s.sum = 0.0f; out[0] = s; }\n";
    let doc = crate::syntax::Document::new(text.to_string());
    assert!(!doc.tree().unwrap().root_node().has_error());
    let slice = device_slice(&doc, "k", &SliceOptions::default()).unwrap();
    assert!(slice.source.contains("struct __align__(sizeof(float2)) SumMax"), "{}", slice.source);
}

#[test]
fn an_includer_prelude_is_the_branch_that_includes_the_header() {
    let prelude = "#define A 1\n#if VERSION >= 2\n#define B 2\n#ifdef OLD\nint old;\n#else\nint fresh;\n";
    assert_eq!(super::in_including_branch(prelude), "#define A 1\n#define B 2\nint fresh;\n");
    let balanced = "#ifdef X\nint x;\n#endif\nint y;\n";
    assert_eq!(super::in_including_branch(balanced), balanced);
}

#[test]
fn a_header_in_an_include_dir_is_inlined_with_its_operators_which_nothing_names() {
    let dir = std::env::temp_dir().join(format!("cutune-slice-angle-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("inc")).unwrap();
    std::fs::write(
        dir.join("inc/ops.h"),
        "#pragma once\ninline __device__ float2 operator+(float2 a, float2 b) { return make_float2(a.x + b.x, a.y + b.y); }\ninline __device__ float unused_helper(float x) { return x; }\n",
    )
    .unwrap();
    let text = "#include <ops.h>\n__global__ void add(float2* out, const float2* a, const float2* b) { out[0] = a[0] + b[0]; }\n";
    let opts = SliceOptions { file: Some(dir.join("k.cu")), include_dirs: vec![dir.join("inc")], ..SliceOptions::default() };
    let slice = device_slice(&Document::new(text.to_string()), "add", &opts).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    // NVRTC gets the slice's text alone: the header is in it, not included.
    assert!(!slice.source.contains("#include <ops.h>"), "{}", slice.source);
    assert!(slice.source.contains("float2 operator+(float2 a, float2 b)"), "{}", slice.source);
    assert!(!slice.source.contains("unused_helper"), "what the kernel does not use stays out: {}", slice.source);
}


#[test]
fn specialisations_a_macro_defines_at_file_scope_are_kept_with_the_macro() {
    let text = "\
template <typename T> struct Shared { virtual __device__ T &at(int i) = 0; };
#define SHARED_OF(t, n) template <> struct Shared<t> { __device__ t &at(int i) { extern __shared__ t n[]; return n[i]; } }
SHARED_OF(int, s_int);
SHARED_OF(float, s_float);
#define UNUSED_OF(t) template <> struct Unused<t> {}
__global__ void k(float *x) { Shared<float> s; s.at(threadIdx.x) = x[threadIdx.x]; }
";
    let sliced = slice(text, "k");
    assert!(sliced.source.contains("#define SHARED_OF(t, n)"), "{}", sliced.source);
    assert!(sliced.source.contains("SHARED_OF(int, s_int);\nSHARED_OF(float, s_float);\n"), "each call with its `;`: {}", sliced.source);
    assert!(!sliced.source.contains("UNUSED_OF"), "{}", sliced.source);
    assert!(sliced.unresolved.is_empty(), "{:?}", sliced.unresolved);
}

#[test]
fn fixed_width_integers_come_from_libcu_plus_plus_when_the_c_library_is_dropped() {
    let text = "#include <stdint.h>\n__global__ void k(int *x) { uint32_t r = threadIdx.x; r ^= r << 13; x[0] = r; }\n";
    let sliced = slice(text, "k");
    assert!(sliced.source.starts_with("#include <cuda/std/cstdint>\n"), "{}", sliced.source);
    assert!(!slice("__global__ void k(int *x) { x[0] = 1; }\n", "k").source.contains("cstdint"));
}

#[test]
fn the_hosts_standard_names_come_from_libcu_plus_plus_each_header_once() {
    let text = "__global__ void k(float *x) { x[0] = std::isinf(x[1]) ? std::numeric_limits<float>::max() : std::isnan(x[2]); }\n";
    let sliced = slice(text, "k");
    assert!(sliced.source.starts_with("#include <cuda/std/limits>\n#include <cuda/std/cmath>\n"), "{}", sliced.source);
    assert_eq!(sliced.source.matches("namespace std { using namespace cuda::std; }").count(), 1, "{}", sliced.source);
    let libcuxx_already = "#include <cuda/std/cmath>\n__global__ void k(float *x) { x[0] = cuda::std::isinf(x[1]); }\n";
    assert!(!slice(libcuxx_already, "k").source.contains("namespace std"), "`cuda::std::` is not the host's");
}

#[test]
fn opengl_headers_and_the_graphics_interop_api_are_dropped() {
    let text = "#include <GL/freeglut.h>\n#include <GLUT/glut.h>\n#include <cuda_gl_interop.h>\n__global__ void k(float *x) { x[0] = 1.0f; }\n";
    let sliced = slice(text, "k");
    let dropped: Vec<&str> = sliced.dropped_includes.iter().map(|d| d.path.as_str()).collect();
    assert_eq!(dropped, ["<GL/freeglut.h>", "<GLUT/glut.h>", "<cuda_gl_interop.h>"]);
    assert!(!sliced.source.contains("#include"), "{}", sliced.source);
}

#[test]
fn curand_and_cccl_device_headers_are_kept_and_boost_and_curand_host_api_dropped() {
    let text = "\
#include <curand.h>
#include <curand_kernel.h>
#include <cuda/barrier>
#include <boost/numeric/interval.hpp>
__global__ void k(curandState *s, float *x) { x[0] = curand_uniform(&s[0]); }
";
    let sliced = slice(text, "k");
    assert!(sliced.source.contains("#include <curand_kernel.h>\n#include <cuda/barrier>\n"), "{}", sliced.source);
    let dropped: Vec<&str> = sliced.dropped_includes.iter().map(|d| d.path.as_str()).collect();
    assert_eq!(dropped, ["<curand.h>", "<boost/numeric/interval.hpp>"]);
}


#[test]
fn a_quoted_header_beside_the_file_is_the_projects_whatever_its_name() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("limits.h"), "#define LIMIT 4\n").unwrap();
    let file = dir.path().join("k.cu");
    let text = "#include \"limits.h\"\n#include <climits>\n__global__ void k(int *x) { x[0] = LIMIT; }\n";
    std::fs::write(&file, text).unwrap();
    let sliced = device_slice(&Document::new(text.to_string()), "k", &SliceOptions::for_file(&file)).unwrap();
    assert!(sliced.source.contains("#define LIMIT 4\n"), "{}", sliced.source);
    let dropped: Vec<&str> = sliced.dropped_includes.iter().map(|d| d.path.as_str()).collect();
    assert_eq!(dropped, ["<climits>"]);
}

#[test]
fn a_define_parameter_a_header_defines_is_guarded_in_the_slice_so_that_d_sets_it() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("config.h"), "#define TILE 16\n#define ROWS(n) ((n) * TILE)\n#ifndef DEPTH\n#define DEPTH 2\n#endif\n").unwrap();
    let file = dir.path().join("k.cu");
    let text = "#include \"config.h\"\n__global__ void k(float *x) { __shared__ float t[TILE]; t[0] = x[ROWS(DEPTH)]; x[0] = t[0]; }\n";
    std::fs::write(&file, text).unwrap();
    let mut options = SliceOptions::for_file(&file);
    let plain = device_slice(&Document::new(text.to_string()), "k", &options).unwrap();
    assert!(plain.source.contains("#define TILE 16\n") && !plain.source.contains("#ifndef TILE"), "{}", plain.source);
    options.define_params = vec!["TILE".into(), "DEPTH".into()];
    let sliced = device_slice(&Document::new(text.to_string()), "k", &options).unwrap();
    assert!(sliced.source.contains("#ifndef TILE\n#define TILE 16\n#endif\n"), "{}", sliced.source);
    // Guarded already: left as it is; a function-like macro is no parameter.
    assert_eq!(sliced.source.matches("#ifndef DEPTH").count(), 1, "{}", sliced.source);
    assert!(sliced.source.contains("#define ROWS(n) ((n) * TILE)\n") && !sliced.source.contains("#ifndef ROWS"), "{}", sliced.source);
}

#[test]
fn a_macro_is_found_where_the_file_sees_it_first_through_its_includes() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("common")).unwrap();
    std::fs::write(dir.path().join("common/limits.h"), "// limits\n#define LIMIT 512U // keys per block\n").unwrap();
    std::fs::write(dir.path().join("config.h"), "#pragma once\n#include \"common/limits.h\"\n#define TILE 16\n").unwrap();
    std::fs::write(dir.path().join("main.cu"), "#define WIDTH 8\n#include \"config.h\"\n#include \"kernels.cuh\"\n").unwrap();
    let file = dir.path().join("kernels.cuh");
    let text = "#define ROWS 4\n__global__ void k(float *x) { x[0] = LIMIT + TILE + WIDTH + ROWS; }\n";
    std::fs::write(&file, text).unwrap();
    let options = SliceOptions::for_file(&file);
    let found = |name: &str| where_defined(text, name, &options).map(|(path, line, value)| (path.file_name().unwrap().to_string_lossy().into_owned(), line, value));
    // The includer's text before the include comes first, with the headers it includes.
    assert_eq!(found("WIDTH"), Some(("main.cu".into(), 1, "8".into())));
    assert_eq!(found("LIMIT"), Some(("limits.h".into(), 2, "512U".into())));
    assert_eq!(found("TILE"), Some(("config.h".into(), 3, "16".into())));
    assert_eq!(found("ROWS"), Some(("kernels.cuh".into(), 1, "4".into())));
    assert_eq!(found("DEPTH"), None);
}

#[test]
fn a_function_a_qualifier_macro_makes_a_device_function_is_kept() {
    // xlite-dev/LeetCUDA: `#define HOST_DEVICE_INLINE __device__ __host__ inline`, then
    // `HOST_DEVICE_INLINE` on the line above `int div_ceil(int a, int b)`.
    let text = "\
#define HOST_DEVICE_INLINE __device__ __host__ inline
#define HOST_ONLY static inline
HOST_DEVICE_INLINE
int div_ceil(int a, int b) { return (a + b - 1) / b; }
HOST_ONLY int tiles(int n) { return n / 4; }
__global__ void count_tiles(int *out, int n) { out[0] = div_ceil(n, 4) + tiles(n); }
";
    let sliced = slice(text, "count_tiles");
    assert!(sliced.source.contains("int div_ceil(int a, int b)") && sliced.source.contains("#define HOST_DEVICE_INLINE"), "{}", sliced.source);
    let unresolved: Vec<&str> = sliced.unresolved.iter().map(|u| u.symbol.as_str()).collect();
    assert_eq!(unresolved, ["tiles"], "a macro of host qualifiers leaves its function the host's");
}

#[test]
fn a_template_argument_that_a_host_item_names_keeps_no_host_code() {
    // `INSTANTIATE(float);` at file scope reads as a host variable `float`: the kernel's template
    // argument `float` names it, and the slice kept host code it cannot emit (a panic).
    let text = "template <typename T>\n__global__ void fill(T *x) { x[0] = T(1); }\n#define INSTANTIATE(T) template void launch<T>(T *);\nINSTANTIATE(float);\n";
    let opts = SliceOptions::default().with_template_args(&["float".to_string()]);
    let sliced = device_slice(&Document::new(text.to_string()), "fill", &opts).unwrap();
    assert!(sliced.source.contains("__global__ void fill") && !sliced.source.contains("INSTANTIATE(float);"), "{}", sliced.source);
}

#[test]
fn a_kernel_in_a_named_namespace_is_brought_to_file_scope_by_its_name() {
    let text = "namespace ops {\nnamespace {\n__device__ float twice(float x) { return 2.f * x; }\n}\nnamespace detail {\n__global__ void scale(float* x) { x[threadIdx.x] = twice(x[threadIdx.x]); }\n}\n}\n";
    assert!(slice(text, "scale").source.ends_with("}\nusing ops::detail::scale;\n"), "{}", slice(text, "scale").source);
    // An anonymous namespace adds nothing to the name; file scope needs nothing.
    let anonymous = "namespace ops { namespace {\n__global__ void scale(float* x) { x[threadIdx.x] *= 2.f; }\n} }\n";
    assert!(slice(anonymous, "scale").source.ends_with("using ops::scale;\n"));
    assert!(!slice(ORIGINAL, "scale").source.contains("using"));
    // Namesakes in two namespaces: no one name is the kernel's.
    let namesakes = "namespace a {\n__global__ void scale(float* x) { x[0] = 1.f; }\n}\nnamespace b {\n__global__ void scale(float* x) { x[0] = 2.f; }\n}\n";
    assert!(!slice(namesakes, "scale").source.contains("using"));
}

#[test]
fn an_includer_that_is_itself_included_gives_what_comes_before_it_first() {
    // `main.cu` includes the types, then `solver.cu`, which includes the kernels' file first.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("main.cu"), "#define LINKED\n#include \"types.h\"\n#include \"solver.cu\"\nint main() {}\n").unwrap();
    std::fs::write(dir.path().join("solver.cu"), "#include \"kernels.cu\"\nvoid solve() {}\n").unwrap();
    std::fs::write(dir.path().join("kernels.cu"), "__global__ void k(State s) {}\n").unwrap();
    let (includer, prelude) = includer_prelude(&dir.path().join("kernels.cu")).expect("included");
    assert_eq!((includer, prelude.as_str()), (dir.path().join("solver.cu"), "#define LINKED\n#include \"types.h\"\n"));
}
