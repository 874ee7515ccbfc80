// Sum of a large fp32 array: each block reduces its slice with a shared-memory tree, then
// adds its partial sum to the result with atomicAdd.
// NOTE: the result is NON-DETERMINISTIC in its last bits: float atomics from different blocks
// land in an arbitrary order, and float addition is not associative.
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

#define BLOCK 256

__global__ void block_reduce_sum_kernel(float* __restrict__ out, const float* __restrict__ in,
                                        int n) {
  __shared__ float sdata[BLOCK];

  float sum = 0.f;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
    sum += in[i];
  }
  sdata[threadIdx.x] = sum;
  __syncthreads();

  for (int s = BLOCK / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) sdata[threadIdx.x] += sdata[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(out, sdata[0]);  // non-deterministic order across blocks
}

// out must be a device pointer to one float; it is zeroed first.
void block_reduce_sum(float* out, const float* in, int n, cudaStream_t stream) {
  CUDA_CHECK(cudaMemsetAsync(out, 0, sizeof(float), stream));
  int blocks = (n + BLOCK - 1) / BLOCK;
  block_reduce_sum_kernel<<<blocks, BLOCK, 0, stream>>>(out, in, n);
}

// ---------------------------------------------------------------------------------------------
// Test driver.

static uint32_t g_rng = 0xDEADBEEFu;
// Uniform in (-1, 1), never exactly zero.
static float rand_uniform() {
  g_rng = g_rng * 1664525u + 1013904223u;
  return ((float)(g_rng >> 8) + 0.5f) / 16777216.0f * 2.0f - 1.0f;
}

static bool run_case(int n) {
  std::vector<float> h_in(n);
  // Mixed signs with a small positive bias, so that the sum is neither ~0 nor huge.
  for (int i = 0; i < n; ++i) h_in[i] = rand_uniform() + 0.01f;

  float *d_in, *d_out;
  CUDA_CHECK(cudaMalloc(&d_in, (size_t)n * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d_out, sizeof(float)));
  CUDA_CHECK(cudaMemcpy(d_in, h_in.data(), (size_t)n * sizeof(float), cudaMemcpyHostToDevice));

  block_reduce_sum(d_out, d_in, n, 0);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());
  float got;
  CUDA_CHECK(cudaMemcpy(&got, d_out, sizeof(float), cudaMemcpyDeviceToHost));

  double ref = 0.0, abs_sum = 0.0;
  for (int i = 0; i < n; ++i) {
    ref += h_in[i];
    abs_sum += std::fabs(h_in[i]);
  }
  // fp32 partials and atomics: allow an error relative to sum |x|, not to the sum itself.
  double err = std::fabs((double)got - ref);
  bool ok = err <= 1e-5 * abs_sum;
  printf("block_reduce n=%d sum=%.6e ref=%.6e max_abs_err=%.3e %s\n", n, got, ref, err,
         ok ? "PASS" : "FAIL");
  CUDA_CHECK(cudaFree(d_in));
  CUDA_CHECK(cudaFree(d_out));
  return ok;
}

int main() {
  bool ok = true;
  ok &= run_case((1 << 26) + 12345);  // 64 Mi elements plus a ragged tail
  ok &= run_case(1000);               // fewer elements than 4 blocks, last block partial
  return ok ? 0 : 1;
}
