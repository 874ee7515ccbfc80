// Out-of-place transpose of a row-major fp32 matrix through a shared-memory tile:
//   out[x][y] = in[y][x],  in is [height, width], out is [width, height]
// First draft: a 32x32 tile, 32x8 threads, each thread moves 4 elements. The tile is not
// padded yet, so the column-wise reads from shared memory hit bank conflicts.
#include <cuda_runtime.h>

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

#define TILE_DIM 32
#define BLOCK_ROWS 8

__global__ void transpose_kernel(float* __restrict__ out, const float* __restrict__ in,
                                 int width, int height) {
  __shared__ float tile[32][32];

  int x = blockIdx.x * TILE_DIM + threadIdx.x;
  int y = blockIdx.y * TILE_DIM + threadIdx.y;
#pragma unroll
  for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
    if (x < width && y + j < height) {
      tile[threadIdx.y + j][threadIdx.x] = in[(size_t)(y + j) * width + x];
    }
  }
  __syncthreads();

  x = blockIdx.y * TILE_DIM + threadIdx.x;
  y = blockIdx.x * TILE_DIM + threadIdx.y;
#pragma unroll
  for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
    if (x < height && y + j < width) {
      out[(size_t)(y + j) * height + x] = tile[threadIdx.x][threadIdx.y + j];
    }
  }
}

void transpose(float* out, const float* in, int width, int height, cudaStream_t stream) {
  dim3 block(TILE_DIM, BLOCK_ROWS);
  dim3 grid((width + TILE_DIM - 1) / TILE_DIM, (height + TILE_DIM - 1) / TILE_DIM);
  transpose_kernel<<<grid, block, 0, stream>>>(out, in, width, height);
}

// ---------------------------------------------------------------------------------------------
// Test driver.

static uint32_t g_rng = 0x0BADF00Du;
// Uniform in (-1, 1), never exactly zero.
static float rand_uniform() {
  g_rng = g_rng * 1664525u + 1013904223u;
  return ((float)(g_rng >> 8) + 0.5f) / 16777216.0f * 2.0f - 1.0f;
}

static bool run_case(int height, int width) {
  const size_t n = (size_t)height * width;
  std::vector<float> h_in(n), h_out(n);
  for (size_t i = 0; i < n; ++i) h_in[i] = rand_uniform();

  float *d_in, *d_out;
  CUDA_CHECK(cudaMalloc(&d_in, n * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d_out, n * sizeof(float)));
  CUDA_CHECK(cudaMemcpy(d_in, h_in.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemset(d_out, 0, n * sizeof(float)));

  transpose(d_out, d_in, width, height, 0);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());
  CUDA_CHECK(cudaMemcpy(h_out.data(), d_out, n * sizeof(float), cudaMemcpyDeviceToHost));

  // A transpose moves bits: every element must match exactly.
  double max_err = 0.0;
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      double err = (double)h_out[(size_t)x * height + y] - (double)h_in[(size_t)y * width + x];
      if (err < 0) err = -err;
      if (err > max_err || err != err) max_err = err;
    }
  }
  bool ok = max_err == 0.0;
  printf("transpose height=%d width=%d max_abs_err=%.3e %s\n", height, width, max_err,
         ok ? "PASS" : "FAIL");
  CUDA_CHECK(cudaFree(d_in));
  CUDA_CHECK(cudaFree(d_out));
  return ok;
}

int main() {
  bool ok = true;
  ok &= run_case(8192, 8192);
  ok &= run_case(4095, 1000);  // non-square, neither side a multiple of the tile
  return ok ? 0 : 1;
}
