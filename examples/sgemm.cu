// Single-precision GEMM, row-major:  C = alpha * A * B + beta * C
//   A is [M, K], B is [K, N], C is [M, N]
// First draft: the classic shared-memory tiled kernel, TILE x TILE threads per block, one
// output element per thread; edges handled by loading zeros.
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

#define TILE 16

__global__ void sgemm_kernel(int M, int N, int K, float alpha, const float* __restrict__ A,
                             const float* __restrict__ B, float beta, float* __restrict__ C) {
  __shared__ float As[TILE][TILE];
  __shared__ float Bs[TILE][TILE];

  int row = blockIdx.y * TILE + threadIdx.y;
  int col = blockIdx.x * TILE + threadIdx.x;
  float acc = 0.f;

  for (int k0 = 0; k0 < K; k0 += TILE) {
    int a_col = k0 + threadIdx.x;
    int b_row = k0 + threadIdx.y;
    As[threadIdx.y][threadIdx.x] = (row < M && a_col < K) ? A[(size_t)row * K + a_col] : 0.f;
    Bs[threadIdx.y][threadIdx.x] = (b_row < K && col < N) ? B[(size_t)b_row * N + col] : 0.f;
    __syncthreads();

#pragma unroll
    for (int k = 0; k < TILE; ++k) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
    __syncthreads();
  }

  if (row < M && col < N) {
    size_t idx = (size_t)row * N + col;
    C[idx] = alpha * acc + beta * C[idx];
  }
}

void sgemm(int M, int N, int K, float alpha, const float* A, const float* B, float beta, float* C,
           cudaStream_t stream) {
  dim3 block(TILE, TILE);
  dim3 grid((N + TILE - 1) / TILE, (M + TILE - 1) / TILE);
  sgemm_kernel<<<grid, block, 0, stream>>>(M, N, K, alpha, A, B, beta, C);
}

// ---------------------------------------------------------------------------------------------
// Test driver.

static uint32_t g_rng = 0x13579BDFu;
// Uniform in (-1, 1), never exactly zero.
static float rand_uniform() {
  g_rng = g_rng * 1664525u + 1013904223u;
  return ((float)(g_rng >> 8) + 0.5f) / 16777216.0f * 2.0f - 1.0f;
}

static bool run_case(int M, int N, int K, int samples) {
  const float alpha = 1.5f, beta = 0.5f;
  std::vector<float> h_a((size_t)M * K), h_b((size_t)K * N), h_c((size_t)M * N), h_out((size_t)M * N);
  for (auto& v : h_a) v = rand_uniform();
  for (auto& v : h_b) v = rand_uniform();
  for (auto& v : h_c) v = rand_uniform();

  float *d_a, *d_b, *d_c;
  CUDA_CHECK(cudaMalloc(&d_a, h_a.size() * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d_b, h_b.size() * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d_c, h_c.size() * sizeof(float)));
  CUDA_CHECK(cudaMemcpy(d_a, h_a.data(), h_a.size() * sizeof(float), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(d_b, h_b.data(), h_b.size() * sizeof(float), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(d_c, h_c.data(), h_c.size() * sizeof(float), cudaMemcpyHostToDevice));

  sgemm(M, N, K, alpha, d_a, d_b, beta, d_c, 0);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());
  CUDA_CHECK(cudaMemcpy(h_out.data(), d_c, h_out.size() * sizeof(float), cudaMemcpyDeviceToHost));

  // CPU reference on a sample of entries (the four corners, then pseudo-random ones), in
  // double; the tolerance scales with sum_k |a_ik * b_kj|, the size of the fp32 rounding.
  double max_err = 0.0;
  bool ok = true;
  uint32_t pick = 0x2468ACEu;
  for (int s = 0; s < samples; ++s) {
    int i, j;
    if (s < 4) {
      i = (s & 1) ? M - 1 : 0;
      j = (s & 2) ? N - 1 : 0;
    } else {
      pick = pick * 1664525u + 1013904223u;
      i = (int)((pick >> 8) % (uint32_t)M);
      pick = pick * 1664525u + 1013904223u;
      j = (int)((pick >> 8) % (uint32_t)N);
    }
    double dot = 0.0, mag = 0.0;
    for (int k = 0; k < K; ++k) {
      double p = (double)h_a[(size_t)i * K + k] * h_b[(size_t)k * N + j];
      dot += p;
      mag += std::fabs(p);
    }
    double c0 = h_c[(size_t)i * N + j];
    double ref = alpha * dot + beta * c0;
    double err = std::fabs((double)h_out[(size_t)i * N + j] - ref);
    if (!(err <= 1e-5 * (std::fabs(alpha) * mag + std::fabs(beta * c0)) + 1e-6)) ok = false;
    if (err > max_err || err != err) max_err = err;
  }
  printf("sgemm M=%d N=%d K=%d samples=%d max_abs_err=%.3e %s\n", M, N, K, samples, max_err,
         ok ? "PASS" : "FAIL");
  CUDA_CHECK(cudaFree(d_a));
  CUDA_CHECK(cudaFree(d_b));
  CUDA_CHECK(cudaFree(d_c));
  return ok;
}

int main() {
  bool ok = true;
  ok &= run_case(8192, 8192, 8192, 256);
  ok &= run_case(1000, 1000, 1000, 4096);  // not a multiple of TILE: exercises the edges
  return ok ? 0 : 1;
}
