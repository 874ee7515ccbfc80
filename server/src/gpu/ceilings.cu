// The cutune worker's ceiling kernels: what the device can do at best, for the speed-of-light
// bound (docs/sol.md). The tuner compiles this file with NVRTC for the device and sends the
// cubin with `ceilings`; gpu/worker/ceilings.rs launches the kernels and counts their work:
// a copied byte is read once and written once, a float FMA is 2 flops, a half2 FMA 4.
// COPY_DEPTH, CHAINS and UNROLL are mirrored there.
#include <cuda_fp16.h>

typedef unsigned long long u64;

// 16-byte loads each thread issues before its stores, so that enough requests are in flight to
// cover the memory latency even below full occupancy.
#define COPY_DEPTH 4
// Independent FMA chains per thread: an FMA waits only for the previous one of its chain, so
// the pipeline stays full even with few warps per scheduler.
#define CHAINS 8
// FMAs per chain per loop iteration, so that the loop's own instructions cost next to nothing.
#define UNROLL 16

// Copies `n` 16-byte vectors from `in` to `out`, grid-stride. The worker launches enough blocks
// for one pass (n / (blockDim × COPY_DEPTH)): faster than fewer blocks looping, measured on an
// H200.
extern "C" __global__ void cutune_copy(const uint4* __restrict__ in, uint4* __restrict__ out, u64 n) {
  const u64 stride = (u64)gridDim.x * blockDim.x;
  u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x;
  for (; i + (COPY_DEPTH - 1) * stride < n; i += COPY_DEPTH * stride) {
    uint4 v[COPY_DEPTH];
#pragma unroll
    for (int k = 0; k < COPY_DEPTH; ++k) v[k] = in[i + k * stride];
#pragma unroll
    for (int k = 0; k < COPY_DEPTH; ++k) out[i + k * stride] = v[k];
  }
  for (; i < n; i += stride) out[i] = in[i];
}

// `steps` × UNROLL × CHAINS float FMAs per thread. `b` and `c` are arguments so that nothing
// folds at compile time; with |b| < 1 the values settle near c / (1 - b), never denormal or
// infinite. Each thread stores its sum, so that no chain is dead code.
extern "C" __global__ void cutune_fma_f32(float* out, int steps, float b, float c) {
  float a[CHAINS];
#pragma unroll
  for (int k = 0; k < CHAINS; ++k) a[k] = threadIdx.x * 1e-3f + k;
  for (int s = 0; s < steps; ++s) {
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
#pragma unroll
      for (int k = 0; k < CHAINS; ++k) a[k] = fmaf(a[k], b, c);
    }
  }
  float sum = 0.0f;
#pragma unroll
  for (int k = 0; k < CHAINS; ++k) sum += a[k];
  out[blockIdx.x * (u64)blockDim.x + threadIdx.x] = sum;
}

// The same with half2 FMAs: two half FMAs per instruction. The lanes' operands differ: equal
// lanes let the compiler pack b and c into halves of one register, which halves the HFMA2 rate
// (measured on an H200) and would understate the ceiling. Lane 1 settles near 1 too.
extern "C" __global__ void cutune_fma_f16(__half2* out, int steps, float b, float c) {
  const __half2 b2 = __floats2half2_rn(b, b - 0.001f);
  const __half2 c2 = __floats2half2_rn(c, c + 0.001f);
  __half2 a[CHAINS];
#pragma unroll
  for (int k = 0; k < CHAINS; ++k) a[k] = __floats2half2_rn(threadIdx.x * 1e-3f, 0.5f * k);
  for (int s = 0; s < steps; ++s) {
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
#pragma unroll
      for (int k = 0; k < CHAINS; ++k) a[k] = __hfma2(a[k], b2, c2);
    }
  }
  __half2 sum = __float2half2_rn(0.0f);
#pragma unroll
  for (int k = 0; k < CHAINS; ++k) sum = __hadd2(sum, a[k]);
  out[blockIdx.x * (u64)blockDim.x + threadIdx.x] = sum;
}
