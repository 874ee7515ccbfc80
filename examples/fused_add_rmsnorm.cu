// Fused residual add + RMSNorm, bf16, in place (as in a transformer's pre-norm):
//   residual[r][i] = residual[r][i] + input[r][i]                       (rounded to bf16)
//   input[r][i]    = residual[r][i] * rsqrt(mean_i(residual[r][i]^2) + eps) * weight[i]
// Both buffers are written: residual carries the sum to the next layer, input holds the
// normalised activations. fp32 accumulation. First draft: one block per row.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CUDA_CHECK(call)                                                              \
  do {                                                                                \
    cudaError_t err_ = (call);                                                        \
    if (err_ != cudaSuccess) {                                                        \
      fprintf(stderr, "CUDA error %s at %s:%d: %s\n", #call, __FILE__, __LINE__,      \
              cudaGetErrorString(err_));                                              \
      exit(2);                                                                        \
    }                                                                                 \
  } while (0)

constexpr int kBlockSize = 1024;
constexpr int kWarpSize = 32;

__device__ float warp_reduce_sum(float v) {
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
    v += __shfl_xor_sync(0xffffffff, v, offset);
  }
  return v;
}

__global__ void fused_add_rmsnorm_kernel(__nv_bfloat16* __restrict__ input,
                                         __nv_bfloat16* __restrict__ residual,
                                         const __nv_bfloat16* __restrict__ weight, int hidden,
                                         float eps) {
  __shared__ float warp_sums[kBlockSize / kWarpSize];
  __shared__ float s_scale;
  __nv_bfloat16* in_row = input + (size_t)blockIdx.x * hidden;
  __nv_bfloat16* res_row = residual + (size_t)blockIdx.x * hidden;

  float sum = 0.f;
  for (int i = threadIdx.x; i < hidden; i += blockDim.x) {
    __nv_bfloat16 r = __float2bfloat16(__bfloat162float(in_row[i]) + __bfloat162float(res_row[i]));
    res_row[i] = r;
    float v = __bfloat162float(r);
    sum += v * v;
  }

  sum = warp_reduce_sum(sum);
  int warp = threadIdx.x / kWarpSize;
  int lane = threadIdx.x % kWarpSize;
  if (lane == 0) warp_sums[warp] = sum;
  __syncthreads();
  if (warp == 0) {
    float total = lane < kBlockSize / kWarpSize ? warp_sums[lane] : 0.f;
    total = warp_reduce_sum(total);
    if (lane == 0) s_scale = rsqrtf(total / hidden + eps);
  }
  __syncthreads();
  float scale = s_scale;

  for (int i = threadIdx.x; i < hidden; i += blockDim.x) {
    float v = __bfloat162float(res_row[i]);
    in_row[i] = __float2bfloat16(v * scale * __bfloat162float(weight[i]));
  }
}

void fused_add_rmsnorm(__nv_bfloat16* input, __nv_bfloat16* residual,
                       const __nv_bfloat16* weight, int rows, int hidden, float eps,
                       cudaStream_t stream) {
  fused_add_rmsnorm_kernel<<<rows, kBlockSize, 0, stream>>>(input, residual, weight, hidden, eps);
}

// ---------------------------------------------------------------------------------------------
// Test driver.

static uint32_t g_rng = 0x2545F491u;
// Uniform in (-1, 1), never exactly zero.
static float rand_uniform() {
  g_rng = g_rng * 1664525u + 1013904223u;
  return ((float)(g_rng >> 8) + 0.5f) / 16777216.0f * 2.0f - 1.0f;
}

int main() {
  const int rows = 4095;  // tokens, not a power of two
  const int hidden = 7168;
  const float eps = 1e-6f;
  const size_t n = (size_t)rows * hidden;

  std::vector<__nv_bfloat16> h_in(n), h_res(n), h_w(hidden), h_out(n), h_res_out(n);
  for (size_t i = 0; i < n; ++i) h_in[i] = __float2bfloat16(rand_uniform());
  for (size_t i = 0; i < n; ++i) h_res[i] = __float2bfloat16(2.0f * rand_uniform());
  for (int i = 0; i < hidden; ++i) h_w[i] = __float2bfloat16(1.0f + 0.5f * rand_uniform());

  __nv_bfloat16 *d_in, *d_res, *d_w;
  CUDA_CHECK(cudaMalloc(&d_in, n * sizeof(__nv_bfloat16)));
  CUDA_CHECK(cudaMalloc(&d_res, n * sizeof(__nv_bfloat16)));
  CUDA_CHECK(cudaMalloc(&d_w, hidden * sizeof(__nv_bfloat16)));
  CUDA_CHECK(cudaMemcpy(d_in, h_in.data(), n * sizeof(__nv_bfloat16), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(d_res, h_res.data(), n * sizeof(__nv_bfloat16), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(d_w, h_w.data(), hidden * sizeof(__nv_bfloat16), cudaMemcpyHostToDevice));

  fused_add_rmsnorm(d_in, d_res, d_w, rows, hidden, eps, 0);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());
  CUDA_CHECK(cudaMemcpy(h_out.data(), d_in, n * sizeof(__nv_bfloat16), cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(h_res_out.data(), d_res, n * sizeof(__nv_bfloat16), cudaMemcpyDeviceToHost));

  // CPU reference over every row; the residual sum must match exactly (same bf16 rounding).
  double max_err = 0.0;
  bool ok = true;
  std::vector<float> sum_row(hidden);
  for (int r = 0; r < rows; ++r) {
    size_t base = (size_t)r * hidden;
    double ss = 0.0;
    for (int i = 0; i < hidden; ++i) {
      float s = __bfloat162float(__float2bfloat16(__bfloat162float(h_in[base + i]) +
                                                  __bfloat162float(h_res[base + i])));
      sum_row[i] = s;
      ss += (double)s * s;
      double err = std::fabs((double)__bfloat162float(h_res_out[base + i]) - s);
      if (!(err == 0.0)) ok = false;
      if (err > max_err || err != err) max_err = err;
    }
    double scale = 1.0 / std::sqrt(ss / hidden + eps);
    for (int i = 0; i < hidden; ++i) {
      double ref = sum_row[i] * scale * __bfloat162float(h_w[i]);
      double got = __bfloat162float(h_out[base + i]);
      double err = std::fabs(got - ref);
      if (!(err <= 2e-2 + 1e-2 * std::fabs(ref))) ok = false;  // bf16 has 8 mantissa bits
      if (err > max_err || err != err) max_err = err;
    }
  }
  printf("fused_add_rmsnorm rows=%d hidden=%d max_abs_err=%.3e %s\n", rows, hidden, max_err,
         ok ? "PASS" : "FAIL");

  CUDA_CHECK(cudaFree(d_in));
  CUDA_CHECK(cudaFree(d_res));
  CUDA_CHECK(cudaFree(d_w));
  return ok ? 0 : 1;
}
