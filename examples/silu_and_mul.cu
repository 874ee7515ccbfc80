// SwiGLU activation of an MLP: the input is [tokens, 2*d], gate half then up half:
//   out[t][j] = silu(in[t][j]) * in[t][d + j],   silu(x) = x / (1 + exp(-x))
// fp16 in/out, fp32 math. First draft: one element per thread in a grid-stride loop.
#include <cuda_fp16.h>
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

// n = tokens * d must fit in an int (it does for serving batches: 8191 * 14336 < 2^31).
__global__ void silu_and_mul_kernel(half* __restrict__ out, const half* __restrict__ in,
                                    int n, int d) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
    int t = i / d;
    int j = i - t * d;
    const half* row = in + (size_t)t * 2 * d;
    float x = __half2float(row[j]);
    float y = __half2float(row[d + j]);
    float silu = x / (1.0f + expf(-x));
    out[i] = __float2half(silu * y);
  }
}

void silu_and_mul(half* out, const half* in, int tokens, int d, cudaStream_t stream) {
  int n = tokens * d;
  int blocks = (n + 255) / 256;
  silu_and_mul_kernel<<<blocks, 256, 0, stream>>>(out, in, n, d);
}

// ---------------------------------------------------------------------------------------------
// Test driver.

static uint32_t g_rng = 0x5EED1234u;
// Uniform in (-1, 1), never exactly zero.
static float rand_uniform() {
  g_rng = g_rng * 1664525u + 1013904223u;
  return ((float)(g_rng >> 8) + 0.5f) / 16777216.0f * 2.0f - 1.0f;
}

static bool run_case(int tokens, int d) {
  const size_t n_in = (size_t)tokens * 2 * d, n_out = (size_t)tokens * d;
  std::vector<half> h_in(n_in), h_out(n_out);
  for (size_t i = 0; i < n_in; ++i) h_in[i] = __float2half(4.0f * rand_uniform());

  half *d_in, *d_out;
  CUDA_CHECK(cudaMalloc(&d_in, n_in * sizeof(half)));
  CUDA_CHECK(cudaMalloc(&d_out, n_out * sizeof(half)));
  CUDA_CHECK(cudaMemcpy(d_in, h_in.data(), n_in * sizeof(half), cudaMemcpyHostToDevice));

  silu_and_mul(d_out, d_in, tokens, d, 0);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());
  CUDA_CHECK(cudaMemcpy(h_out.data(), d_out, n_out * sizeof(half), cudaMemcpyDeviceToHost));

  // CPU reference over every element.
  double max_err = 0.0;
  bool ok = true;
  for (int t = 0; t < tokens; ++t) {
    for (int j = 0; j < d; ++j) {
      double x = __half2float(h_in[(size_t)t * 2 * d + j]);
      double y = __half2float(h_in[(size_t)t * 2 * d + d + j]);
      double ref = x / (1.0 + std::exp(-x)) * y;
      double got = __half2float(h_out[(size_t)t * d + j]);
      double err = std::fabs(got - ref);
      if (!(err <= 1e-2 + 2e-3 * std::fabs(ref))) ok = false;
      if (err > max_err || err != err) max_err = err;
    }
  }
  printf("silu_and_mul tokens=%d d=%d max_abs_err=%.3e %s\n", tokens, d, max_err,
         ok ? "PASS" : "FAIL");
  CUDA_CHECK(cudaFree(d_in));
  CUDA_CHECK(cudaFree(d_out));
  return ok;
}

int main() {
  bool ok = true;
  ok &= run_case(2047, 14336);  // Llama-3-8B / Mistral-7B intermediate size
  ok &= run_case(7, 11008);     // Llama-2-7B intermediate size, a decode-sized batch
  return ok ? 0 : 1;
}
