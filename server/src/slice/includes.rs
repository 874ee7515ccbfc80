//! Which `#include`s NVRTC can resolve, and which namespaces a header is known to declare.
//!
//! Checked against NVRTC 12.9 (pip `nvidia-cuda-nvrtc-cu12`): it declares the runtime's device
//! built-ins itself (vector types, `make_float4`, atomics, math functions, `printf`), so
//! `cuda_runtime.h` adds nothing; the C++ standard library headers (`<cstdint>`,
//! `<type_traits>`, `<cmath>`, ...) cannot be opened; the device headers of the toolkit
//! (`cuda_fp16.h`, ...) compile with `-I<cuda>/include`, which cutune's NVRTC step passes.

use std::path::{Path, PathBuf};

/// What to do with one `#include`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Verdict {
    /// A device header of the CUDA toolkit or of its device libraries (libcu++, CUB, cuRAND's
    /// device API): found through the include paths cutune's NVRTC step passes.
    ToolkitDevice,
    /// Found as a file, relative to the source file or in an include directory.
    Local(PathBuf),
    Dropped(String),
    /// Not found next to the file nor in the include dirs: perhaps a header the workspace ships
    /// in a folder only the build names.
    Missing(String),
}

/// Device headers shipped in the CUDA toolkit's `include/` folder.
const TOOLKIT_DEVICE_HEADERS: &[&str] = &[
    "cuda_fp16.h", "cuda_bf16.h", "cuda_fp8.h", "cuda_fp6.h", "cuda_fp4.h", "mma.h",
    "cooperative_groups.h", "cuda_pipeline.h", "cuda_pipeline_primitives.h", "cuda_awbarrier.h",
    "cuda_awbarrier_primitives.h", "math_constants.h", "device_functions.h", "sm_20_intrinsics.h",
    "sm_30_intrinsics.h", "sm_32_intrinsics.h", "sm_35_intrinsics.h", "sm_61_intrinsics.h",
    "sm_60_atomic_functions.h", "curand_kernel.h",
];

/// Host-side CUDA headers: the runtime and driver APIs, and the libraries called from the host.
const CUDA_HOST_HEADERS: &[&str] = &[
    "cuda.h", "cuda_runtime.h", "cuda_runtime_api.h", "device_launch_parameters.h", "driver_types.h",
    "cuda_profiler_api.h", "nvrtc.h", "nvToolsExt.h", "cuda_occupancy.h", "curand.h",
    "cuda_gl_interop.h", "cuda_egl_interop.h",
];

/// Prefixes of host-library headers, with the namespaces those libraries declare.
const HOST_LIBRARIES: &[(&str, &str, &[&str])] = &[
    ("torch/", "PyTorch host header", &["torch", "at", "c10", "pybind11"]),
    ("ATen/", "PyTorch host header", &["at", "c10"]),
    ("c10/", "PyTorch host header", &["c10"]),
    ("pybind11/", "pybind11 host header", &["pybind11"]),
    ("Python.h", "Python C API host header", &[]),
    ("cublas", "cuBLAS host API header", &[]),
    ("cudnn", "cuDNN host API header", &[]),
    ("nccl", "NCCL host API header", &[]),
    ("thrust/", "Thrust header (host algorithms; NVRTC cannot compile it)", &["thrust"]),
    ("boost/", "Boost header (a host library; NVRTC cannot compile it)", &["boost"]),
    ("GL/", "OpenGL host header", &[]),
    ("GLUT/", "OpenGL host header", &[]),
    ("GLFW/", "OpenGL host header", &[]),
];

/// CUDA C++ Core Libraries: device code NVRTC can compile, found only through a CCCL include dir.
const CCCL_PREFIXES: &[(&str, &str)] = &[("cuda/", "cuda"), ("cub/", "cub"), ("nv/", "nv")];

/// Decides for `written`, the include as written (`<cuda_fp16.h>` or `"common.cuh"`).
pub(super) fn classify(written: &str, file_dir: Option<&Path>, include_dirs: &[PathBuf]) -> Verdict {
    let quoted = written.starts_with('"');
    let name = written.trim_matches(|c| matches!(c, '"' | '<' | '>'));
    // A quoted include beside the file is the project's, whatever its name (`"limits.h"`): the
    // compiler looks there first.
    if let Some(beside) = file_dir.filter(|_| quoted).map(|dir| dir.join(name)).filter(|p| p.is_file()) {
        return Verdict::Local(beside);
    }
    if let Some((_, what, _)) = HOST_LIBRARIES.iter().find(|(prefix, _, _)| name.starts_with(prefix)) {
        return Verdict::Dropped(format!("{what}; NVRTC compiles device code only"));
    }
    if is_standard_library(name) {
        return Verdict::Dropped("C++ standard library header; NVRTC has no host standard library".into());
    }
    if CUDA_HOST_HEADERS.contains(&name) {
        return Verdict::Dropped("CUDA host API header; NVRTC declares the device built-ins itself".into());
    }
    // A quoted include is looked up next to the including file first, as the compiler does.
    let search = quoted.then_some(file_dir).flatten().into_iter().chain(include_dirs.iter().map(PathBuf::as_path));
    let found = search.map(|dir| dir.join(name)).find(|candidate| candidate.is_file());
    // cuRAND's device API is `curand_kernel.h` and the `curand_*.h` it includes.
    if TOOLKIT_DEVICE_HEADERS.contains(&name) || name.starts_with("cooperative_groups/") || name.starts_with("curand_") {
        return Verdict::ToolkitDevice;
    }
    if let Some(path) = found {
        return Verdict::Local(path);
    }
    if CCCL_PREFIXES.iter().any(|(prefix, _)| name.starts_with(prefix)) {
        return Verdict::ToolkitDevice;
    }
    let places = if quoted { "next to the file or in the include dirs" } else { "in the include dirs" };
    Verdict::Missing(format!("not found {places}"))
}

/// The namespaces a header is known to declare, for explaining names that come from it.
pub(super) fn known_namespaces(written: &str) -> &'static [&'static str] {
    let name = written.trim_matches(|c| matches!(c, '"' | '<' | '>'));
    if is_standard_library(name) {
        return &["std"];
    }
    if name == "mma.h" || name.starts_with("cuda_pipeline") {
        return &["nvcuda"];
    }
    if name.starts_with("cooperative_groups") {
        return &["cooperative_groups"];
    }
    if let Some((_, namespace)) = CCCL_PREFIXES.iter().find(|(prefix, _)| name.starts_with(prefix)) {
        return std::slice::from_ref(namespace);
    }
    HOST_LIBRARIES.iter().find(|(prefix, _, _)| name.starts_with(prefix)).map_or(&[], |(_, _, namespaces)| namespaces)
}

/// `<vector>`, `<cstdio>`, `<stdio.h>`: the C and C++ standard headers, which no CUDA header
/// shares a name with.
fn is_standard_library(name: &str) -> bool {
    const CXX: &[&str] = &[
        "algorithm", "array", "atomic", "bitset", "chrono", "complex", "condition_variable", "deque",
        "exception", "filesystem", "fstream", "functional", "future", "initializer_list", "iomanip",
        "ios", "iosfwd", "iostream", "istream", "iterator", "limits", "list", "map", "memory", "mutex",
        "new", "numeric", "optional", "ostream", "queue", "random", "ratio", "regex", "set", "span",
        "sstream", "stack", "stdexcept", "string", "string_view", "thread", "tuple", "type_traits",
        "typeinfo", "unordered_map", "unordered_set", "utility", "valarray", "variant", "vector",
        "bit", "concepts", "numbers", "format", "execution",
    ];
    const C: &[&str] = &[
        "assert", "ctype", "errno", "float", "inttypes", "limits", "math", "signal", "stdarg",
        "stddef", "stdint", "stdio", "stdlib", "string", "time", "wchar", "stdbool", "fenv",
    ];
    CXX.contains(&name)
        || name.strip_suffix(".h").is_some_and(|stem| C.contains(&stem))
        || name.strip_prefix('c').is_some_and(|stem| C.contains(&stem))
}

/// Macros of the C headers NVRTC cannot include, with definitions that mean the same in device
/// code. Only those the kept code uses are written.
pub(super) const STANDARD_MACROS: [(&str, &str); 26] = [
    ("INFINITY", "__int_as_float(0x7f800000)"),
    ("NAN", "__int_as_float(0x7fffffff)"),
    ("HUGE_VALF", "__int_as_float(0x7f800000)"),
    ("FLT_MAX", "3.402823466e+38F"),
    ("FLT_MIN", "1.175494351e-38F"),
    ("FLT_EPSILON", "1.192092896e-07F"),
    ("DBL_MAX", "1.7976931348623158e+308"),
    ("DBL_MIN", "2.2250738585072014e-308"),
    ("DBL_EPSILON", "2.2204460492503131e-16"),
    ("INT_MAX", "2147483647"),
    ("INT_MIN", "(-2147483647 - 1)"),
    ("UINT_MAX", "4294967295U"),
    // glibc's `<time.h>`: device code that times itself with `clock()` (apex's `AddDelay_kernel`).
    ("CLOCKS_PER_SEC", "((clock_t) 1000000)"),
    // glibc's `<math.h>` constants, which every nvcc compile sees through the runtime's headers.
    ("M_E", "2.7182818284590452354"),
    ("M_LOG2E", "1.4426950408889634074"),
    ("M_LOG10E", "0.43429448190325182765"),
    ("M_LN2", "0.69314718055994530942"),
    ("M_LN10", "2.30258509299404568402"),
    ("M_PI", "3.14159265358979323846"),
    ("M_PI_2", "1.57079632679489661923"),
    ("M_PI_4", "0.78539816339744830962"),
    ("M_1_PI", "0.31830988618379067154"),
    ("M_2_PI", "0.63661977236758134308"),
    ("M_2_SQRTPI", "1.12837916709551257390"),
    ("M_SQRT2", "1.41421356237309504880"),
    ("M_SQRT1_2", "0.70710678118654752440"),
];

/// Device functions of PyTorch's headers (`ATen/cuda/Atomic.cuh`) that extensions' kernels call,
/// with definitions NVRTC compiles that do the same for the types kernels are tuned with.
/// Only those the kept code uses are written.
pub(super) const PYTORCH_DEVICE_FUNCTIONS: [(&str, &str); 2] = [
    ("gpuAtomicAdd", "template <typename T, typename V> __device__ __forceinline__ T gpuAtomicAdd(T *address, V value) { return atomicAdd(address, static_cast<T>(value)); }"),
    // The index and the count serve PyTorch's packed half-precision path; the add is the same.
    ("fastAtomicAdd", "template <typename T, typename I, typename V> __device__ __forceinline__ void fastAtomicAdd(T *tensor, I index, I, V value, bool) { atomicAdd(tensor + index, static_cast<T>(value)); }"),
];

/// The names PyTorch's packed tensor accessors go by in a kernel's signature and body.
pub(super) const TENSOR_ACCESSOR_NAMES: [&str; 7] =
    ["PackedTensorAccessor32", "PackedTensorAccessor64", "GenericPackedTensorAccessor", "PackedTensorAccessor", "TensorAccessor", "RestrictPtrTraits", "DefaultPtrTraits"];

/// PyTorch's packed tensor accessors for NVRTC, which cannot open `<ATen/core/TensorAccessor.h>`:
/// the data pointer, then each dimension's size and stride (what the tuner fills in, member by
/// member), indexed one dimension at a time down to an element. Members are public so that the
/// tuner can lay the struct out.
pub(super) const TENSOR_ACCESSORS: &str = r#"namespace at {
template <typename T> struct DefaultPtrTraits { typedef T *PtrType; };
template <typename T> struct RestrictPtrTraits { typedef T *__restrict__ PtrType; };
// A view of the dimensions after the first: sizes and strides are the packed accessor's.
template <typename T, size_t N, template <typename U> class PtrTraits = DefaultPtrTraits, typename index_t = int64_t>
struct TensorAccessor {
  typedef typename PtrTraits<T>::PtrType PtrType;
  typedef TensorAccessor<T, N - 1, PtrTraits, index_t> Row;
  __host__ __device__ TensorAccessor(PtrType data, const index_t *sizes, const index_t *strides) : data_(data), sizes_(sizes), strides_(strides) {}
  __host__ __device__ Row operator[](index_t i) { return Row(data_ + strides_[0] * i, sizes_ + 1, strides_ + 1); }
  __host__ __device__ const Row operator[](index_t i) const { return Row(data_ + strides_[0] * i, sizes_ + 1, strides_ + 1); }
  __host__ __device__ index_t size(index_t d) const { return sizes_[d]; }
  __host__ __device__ index_t stride(index_t d) const { return strides_[d]; }
  __host__ __device__ PtrType data() const { return data_; }
  PtrType data_;
  const index_t *sizes_;
  const index_t *strides_;
};
template <typename T, template <typename U> class PtrTraits, typename index_t>
struct TensorAccessor<T, 1, PtrTraits, index_t> {
  typedef typename PtrTraits<T>::PtrType PtrType;
  __host__ __device__ TensorAccessor(PtrType data, const index_t *sizes, const index_t *strides) : data_(data), sizes_(sizes), strides_(strides) {}
  __host__ __device__ T &operator[](index_t i) { return data_[strides_[0] * i]; }
  __host__ __device__ const T &operator[](index_t i) const { return data_[strides_[0] * i]; }
  __host__ __device__ index_t size(index_t d) const { return sizes_[d]; }
  __host__ __device__ index_t stride(index_t d) const { return strides_[d]; }
  __host__ __device__ PtrType data() const { return data_; }
  PtrType data_;
  const index_t *sizes_;
  const index_t *strides_;
};
template <typename T, size_t N, template <typename U> class PtrTraits = DefaultPtrTraits, typename index_t = int64_t>
struct GenericPackedTensorAccessor {
  typedef typename PtrTraits<T>::PtrType PtrType;
  typedef TensorAccessor<T, N - 1, PtrTraits, index_t> Row;
  __host__ __device__ Row operator[](index_t i) { return Row(data_ + strides_[0] * i, sizes_ + 1, strides_ + 1); }
  __host__ __device__ const Row operator[](index_t i) const { return Row(data_ + strides_[0] * i, sizes_ + 1, strides_ + 1); }
  __host__ __device__ index_t size(index_t d) const { return sizes_[d]; }
  __host__ __device__ index_t stride(index_t d) const { return strides_[d]; }
  __host__ __device__ PtrType data() const { return data_; }
  PtrType data_;
  index_t sizes_[N];
  index_t strides_[N];
};
template <typename T, template <typename U> class PtrTraits, typename index_t>
struct GenericPackedTensorAccessor<T, 1, PtrTraits, index_t> {
  typedef typename PtrTraits<T>::PtrType PtrType;
  __host__ __device__ T &operator[](index_t i) { return data_[strides_[0] * i]; }
  __host__ __device__ const T &operator[](index_t i) const { return data_[strides_[0] * i]; }
  __host__ __device__ index_t size(index_t d) const { return sizes_[d]; }
  __host__ __device__ index_t stride(index_t d) const { return strides_[d]; }
  __host__ __device__ PtrType data() const { return data_; }
  PtrType data_;
  index_t sizes_[1];
  index_t strides_[1];
};
template <typename T, size_t N, template <typename U> class PtrTraits = DefaultPtrTraits, typename index_t = int64_t>
using PackedTensorAccessor = GenericPackedTensorAccessor<T, N, PtrTraits, index_t>;
template <typename T, size_t N, template <typename U> class PtrTraits = DefaultPtrTraits>
using PackedTensorAccessor32 = GenericPackedTensorAccessor<T, N, PtrTraits, int32_t>;
template <typename T, size_t N, template <typename U> class PtrTraits = DefaultPtrTraits>
using PackedTensorAccessor64 = GenericPackedTensorAccessor<T, N, PtrTraits, int64_t>;
}  // namespace at
namespace torch {
using at::DefaultPtrTraits;
using at::GenericPackedTensorAccessor;
using at::PackedTensorAccessor;
using at::PackedTensorAccessor32;
using at::PackedTensorAccessor64;
using at::RestrictPtrTraits;
using at::TensorAccessor;
}  // namespace torch"#;

/// Whether a dropped header (as written: `<ATen/cuda/Atomic.cuh>`) is PyTorch's.
pub(super) fn is_pytorch_header(written: &str) -> bool {
    let name = written.trim_matches(|c| c == '<' || c == '>' || c == '"');
    ["torch/", "ATen/", "c10/"].iter().any(|dir| name.starts_with(dir))
}

/// The number types of cuFFT's and cuComplex's headers (`cufft.h` includes `cuComplex.h`),
/// which NVRTC cannot include, as those headers define them.
pub(super) const LIBRARY_TYPES: [(&str, &str); 7] = [
    ("cufftReal", "float"),
    ("cufftDoubleReal", "double"),
    ("cufftComplex", "float2"),
    ("cufftDoubleComplex", "double2"),
    ("cuFloatComplex", "float2"),
    ("cuDoubleComplex", "double2"),
    ("cuComplex", "float2"),
];

/// Whether a dropped header (as written: `<cufft.h>`) is one of those that define
/// [`LIBRARY_TYPES`].
pub(super) fn declares_library_types(written: &str) -> bool {
    let name = written.trim_matches(|c| c == '<' || c == '>' || c == '"');
    matches!(name, "cufft.h" | "cufftXt.h" | "cufftw.h" | "cuComplex.h")
}

/// The driver API's handles that kernels take (`extern "C" __global__ void k(CUtexObject tex)`),
/// which `cuda.h` declares: 64-bit integers on every platform CUDA 12 supports.
pub(super) const DRIVER_TYPES: [(&str, &str); 3] = [
    ("CUtexObject", "unsigned long long"),
    ("CUsurfObject", "unsigned long long"),
    ("CUdeviceptr", "unsigned long long"),
];

/// Whether a dropped header (as written: `<cuda.h>`) is the driver API's, which declares
/// [`DRIVER_TYPES`].
pub(super) fn declares_driver_types(written: &str) -> bool {
    written.trim_matches(|c| c == '<' || c == '>' || c == '"') == "cuda.h"
}

/// Whether a dropped header (as written: `<cmath>`) is one of those that define
/// [`STANDARD_MACROS`].
pub(super) fn declares_standard_macros(written: &str) -> bool {
    let name = written.trim_matches(|c| c == '<' || c == '>' || c == '"');
    // PyTorch's headers include `<cmath>` and `<cfloat>`: an extension's kernels use their
    // macros with nothing else included.
    is_pytorch_header(name) || matches!(name, "cmath" | "math.h" | "cfloat" | "float.h" | "climits" | "limits.h" | "cstdlib" | "stdlib.h" | "ctime" | "time.h")
}
