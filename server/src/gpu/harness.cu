// The cutune worker's verification kernels: seeded input data, and the comparison of a
// candidate's outputs with the baseline's. They run on the device, so checking a candidate
// moves no data to the host (docs/worker.md). The tuner compiles this file with NVRTC for the
// device's architecture, cached with the kernels' cubins, and sends the cubin with `Prepare`.
// The codes and the summary layout below are mirrored in gpu/worker/harness.rs.
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cuda_fp8.h>

typedef unsigned long long u64;
typedef long long i64;

// Element types, as numbered by gpu/worker/harness.rs.
enum : int {
  DT_F16, DT_BF16, DT_F32, DT_F64, DT_FP8_E4M3, DT_FP8_E5M2,
  DT_I8, DT_I16, DT_I32, DT_I64, DT_U8, DT_U16, DT_U32, DT_U64
};
// Distributions of `cutune_fill`.
enum : int { DIST_UNIFORM, DIST_NORMAL, DIST_INTEGERS, DIST_MIXED };

// SplitMix64's output function: 64 well-mixed bits from a counter.
__device__ u64 mix(u64 z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// Random bits number `draw` (0 or 1) of element `i`: a function of the seed and the index
// alone, so the data does not depend on the launch shape.
__device__ u64 random_bits(u64 seed, u64 i, u64 draw) {
  return mix(seed + (2 * i + draw + 1) * 0x9E3779B97F4A7C15ULL);
}

// Uniform in [0, 1), from the top 53 bits.
__device__ double unit(u64 bits) { return (double)(bits >> 11) * (1.0 / 9007199254740992.0); }

__device__ bool is_integer(int dtype) { return dtype >= DT_I8; }
__device__ bool is_signed_integer(int dtype) { return dtype >= DT_I8 && dtype <= DT_I64; }

// Stores an integer, saturated to the range of the element type.
__device__ void store_integer(void* out, u64 i, int dtype, i64 v) {
  switch (dtype) {
    case DT_I8: ((signed char*)out)[i] = (signed char)max(-128LL, min(127LL, v)); break;
    case DT_I16: ((short*)out)[i] = (short)max(-32768LL, min(32767LL, v)); break;
    case DT_I32: ((int*)out)[i] = (int)max(-2147483648LL, min(2147483647LL, v)); break;
    case DT_I64: ((i64*)out)[i] = v; break;
    case DT_U8: ((unsigned char*)out)[i] = (unsigned char)max(0LL, min(255LL, v)); break;
    case DT_U16: ((unsigned short*)out)[i] = (unsigned short)max(0LL, min(65535LL, v)); break;
    case DT_U32: ((unsigned*)out)[i] = (unsigned)max(0LL, min(4294967295LL, v)); break;
    case DT_U64: ((u64*)out)[i] = v < 0 ? 0ULL : (u64)v; break;
    default: break;
  }
}

// Stores a real number: floats round to nearest (fp8 saturates at its largest finite value),
// integers round half away from zero and saturate; NaN becomes integer 0.
__device__ void store_real(void* out, u64 i, int dtype, double v) {
  switch (dtype) {
    case DT_F16: ((__half*)out)[i] = __double2half(v); return;
    case DT_BF16: ((__nv_bfloat16*)out)[i] = __double2bfloat16(v); return;
    case DT_F32: ((float*)out)[i] = (float)v; return;
    case DT_F64: ((double*)out)[i] = v; return;
    case DT_FP8_E4M3: ((__nv_fp8_storage_t*)out)[i] = __nv_cvt_double_to_fp8(v, __NV_SATFINITE, __NV_E4M3); return;
    case DT_FP8_E5M2: ((__nv_fp8_storage_t*)out)[i] = __nv_cvt_double_to_fp8(v, __NV_SATFINITE, __NV_E5M2); return;
    default: break;
  }
  double r = isnan(v) ? 0.0 : round(v);
  if (dtype == DT_U64) {
    ((u64*)out)[i] = r <= 0.0 ? 0ULL : r >= 18446744073709551616.0 ? ~0ULL : (u64)r;
    return;
  }
  i64 whole = r >= 9223372036854775808.0 ? 9223372036854775807LL : r < -9223372036854775808.0 ? (-9223372036854775807LL - 1) : (i64)r;
  store_integer(out, i, dtype, whole);
}

// Fills `n` elements from a distribution: uniform in [a, b), normal with mean a and standard
// deviation b, integers in [low, low + span), or mixed scales: uniform in [-1, 1) times a for
// a random half of the elements and times b for the other half.
extern "C" __global__ void cutune_fill(void* out, u64 n, int dtype, int dist, double a, double b, i64 low, u64 span, u64 seed) {
  for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
    u64 bits = random_bits(seed, i, 0);
    if (dist == DIST_INTEGERS) {
      i64 v = (i64)((u64)low + __umul64hi(bits, span));
      if (is_integer(dtype)) {
        store_integer(out, i, dtype, v);
      } else {
        store_real(out, i, dtype, (double)v);
      }
    } else if (dist == DIST_UNIFORM) {
      store_real(out, i, dtype, a + (b - a) * unit(bits));
    } else if (dist == DIST_MIXED) {
      double scale = (random_bits(seed, i, 1) & 1) ? a : b;
      store_real(out, i, dtype, scale * (2.0 * unit(bits) - 1.0));
    } else {
      // Box-Muller; 1 - u lies in (0, 1], so the logarithm is finite.
      double radius = sqrt(-2.0 * log(1.0 - unit(bits)));
      store_real(out, i, dtype, a + b * radius * cospi(2.0 * unit(random_bits(seed, i, 1))));
    }
  }
}

// The element's bits, zero-extended: bitwise-equal elements match under any tolerance.
__device__ u64 load_bits(const void* p, u64 i, int dtype) {
  switch (dtype) {
    case DT_FP8_E4M3: case DT_FP8_E5M2: case DT_I8: case DT_U8: return ((const unsigned char*)p)[i];
    case DT_F16: case DT_BF16: case DT_I16: case DT_U16: return ((const unsigned short*)p)[i];
    case DT_F32: case DT_I32: case DT_U32: return ((const unsigned*)p)[i];
    default: return ((const u64*)p)[i];
  }
}

__device__ double load_real(const void* p, u64 i, int dtype) {
  switch (dtype) {
    case DT_F16: return __half2float(((const __half*)p)[i]);
    case DT_BF16: return __bfloat162float(((const __nv_bfloat16*)p)[i]);
    case DT_F32: return ((const float*)p)[i];
    case DT_F64: return ((const double*)p)[i];
    case DT_FP8_E4M3: return __half2float(__half(__nv_cvt_fp8_to_halfraw(((const __nv_fp8_storage_t*)p)[i], __NV_E4M3)));
    default: return __half2float(__half(__nv_cvt_fp8_to_halfraw(((const __nv_fp8_storage_t*)p)[i], __NV_E5M2)));
  }
}

// The largest finite value of a float type (fp8 e4m3 has no infinity: 448 saturates).
__device__ double max_finite(int dtype) {
  switch (dtype) {
    case DT_F16: return 65504.0;
    case DT_BF16: return 3.3895313892515355e38;
    case DT_F32: return 3.4028234663852886e38;
    case DT_FP8_E4M3: return 448.0;
    case DT_FP8_E5M2: return 57344.0;
    default: return 1.7976931348623157e308;
  }
}

__device__ i64 load_signed(const void* p, u64 i, int dtype) {
  switch (dtype) {
    case DT_I8: return ((const signed char*)p)[i];
    case DT_I16: return ((const short*)p)[i];
    case DT_I32: return ((const int*)p)[i];
    default: return ((const i64*)p)[i];
  }
}

// One comparison, read back by the worker. Errors are the bits of non-negative doubles, which
// order as their values do, so atomicMax on the bits takes the larger error.
struct Summary {
  u64 mismatches;
  u64 first_index;  // ~0 when nothing mismatches
  u64 max_abs_error;
  u64 max_rel_error;
  u64 unwritten;    // mismatches that still hold the poison (all bits set): never written
  u64 not_finite;   // other mismatches that are NaN or infinite where expected is finite
};

// All bits of one element set: the poison outputs are filled with before a run.
__device__ bool is_poison(u64 bits, int dtype) {
  switch (dtype) {
    case DT_FP8_E4M3: case DT_FP8_E5M2: case DT_I8: case DT_U8: return bits == 0xFFULL;
    case DT_F16: case DT_BF16: case DT_I16: case DT_U16: return bits == 0xFFFFULL;
    case DT_F32: case DT_I32: case DT_U32: return bits == 0xFFFFFFFFULL;
    default: return bits == ~0ULL;
  }
}

// Compares `n` elements under |actual - expected| <= atol + rtol * |expected|:
// - NaN matches NaN only; equal infinities match; an infinity matches a finite value of the same
//   sign only within the tolerance of the type's largest finite value (overflow rounding);
// - integers are compared exactly, as integers (a non-zero tolerance still applies);
// - the largest errors are over finite errors; the relative one where expected is non-zero.
// - a mismatch is counted as unwritten when it holds the poison and the expected value does
//   not, else as not finite when it is NaN or infinite and the expected value is finite.
// `summary` must start as {0, ~0, 0, 0, 0, 0}.
extern "C" __global__ void cutune_compare(const void* expected, const void* actual, u64 n, int dtype, double atol, double rtol, Summary* summary) {
  u64 mismatches = 0, first = ~0ULL, unwritten = 0, not_finite = 0;
  double max_abs = 0.0, max_rel = 0.0;
  for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
    u64 want_bits = load_bits(expected, i, dtype), got_bits = load_bits(actual, i, dtype);
    if (want_bits == got_bits) continue;
    bool within, finite_want = true, finite_got = true;
    double error, scale;
    if (is_integer(dtype)) {
      u64 difference;
      if (is_signed_integer(dtype)) {
        i64 want = load_signed(expected, i, dtype), got = load_signed(actual, i, dtype);
        difference = want > got ? (u64)want - (u64)got : (u64)got - (u64)want;
        scale = fabs((double)want);
      } else {
        u64 want = load_bits(expected, i, dtype), got = load_bits(actual, i, dtype);
        difference = want > got ? want - got : got - want;
        scale = (double)want;
      }
      error = (double)difference;
      within = error <= atol + rtol * scale;
    } else {
      double want = load_real(expected, i, dtype), got = load_real(actual, i, dtype);
      finite_want = isfinite(want);
      finite_got = isfinite(got);
      scale = fabs(want);
      if (isnan(want) || isnan(got)) {
        within = isnan(want) && isnan(got);
        error = __longlong_as_double(0x7FF8000000000000LL);
      } else if (want == got) {
        within = true;  // equal infinities, or +0 and -0
        error = 0.0;
      } else if (isinf(want) != isinf(got)) {
        // An infinity against a finite value of the same sign that is within the tolerance of
        // the largest finite value: the same result, rounded on either side of the overflow.
        double finite = isinf(want) ? got : want, infinite = isinf(want) ? want : got;
        within = (finite > 0.0) == (infinite > 0.0) && fabs(finite) + atol + rtol * max_finite(dtype) >= max_finite(dtype);
        error = __longlong_as_double(0x7FF0000000000000LL);
      } else {
        error = fabs(got - want);
        // An infinity on either side: `rtol * |want|` must not excuse it.
        within = !isinf(error) && error <= atol + rtol * scale;
      }
    }
    if (isfinite(error)) {
      max_abs = fmax(max_abs, error);
      if (scale > 0.0) max_rel = fmax(max_rel, error / scale);
    }
    if (!within) {
      mismatches += 1;
      if (first == ~0ULL) first = i;  // each thread visits its indices in increasing order
      if (is_poison(got_bits, dtype) && !is_poison(want_bits, dtype)) {
        unwritten += 1;
      } else if (!finite_got && finite_want) {
        not_finite += 1;
      }
    }
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    mismatches += __shfl_down_sync(0xFFFFFFFFu, mismatches, offset);
    first = min(first, __shfl_down_sync(0xFFFFFFFFu, first, offset));
    max_abs = fmax(max_abs, __shfl_down_sync(0xFFFFFFFFu, max_abs, offset));
    max_rel = fmax(max_rel, __shfl_down_sync(0xFFFFFFFFu, max_rel, offset));
    unwritten += __shfl_down_sync(0xFFFFFFFFu, unwritten, offset);
    not_finite += __shfl_down_sync(0xFFFFFFFFu, not_finite, offset);
  }
  if ((threadIdx.x & 31) == 0 && (mismatches != 0 || max_abs != 0.0 || max_rel != 0.0)) {
    atomicAdd(&summary->mismatches, mismatches);
    atomicAdd(&summary->unwritten, unwritten);
    atomicAdd(&summary->not_finite, not_finite);
    atomicMin(&summary->first_index, first);
    atomicMax(&summary->max_abs_error, (u64)__double_as_longlong(max_abs));
    atomicMax(&summary->max_rel_error, (u64)__double_as_longlong(max_rel));
  }
}

// Fills every block's whole dynamic shared memory (`words` 32-bit words) with `pattern`. Shared
// memory keeps its contents between kernels, so launched on every multiprocessor right before
// a kernel, this decides what that kernel reads from shared memory it did not write: with two
// patterns in turn, such a kernel's output changes from run to run (docs/verify.md).
extern "C" __global__ void cutune_poison_shared(unsigned pattern, unsigned words) {
  extern __shared__ unsigned shared_words[];
  // volatile: stores that nothing in this kernel reads must not be optimised away.
  volatile unsigned* target = shared_words;
  for (unsigned i = threadIdx.x; i < words; i += blockDim.x) target[i] = pattern;
}
