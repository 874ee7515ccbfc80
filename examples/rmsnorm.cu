// RMSNorm over the rows of a [tokens, hidden] fp16 matrix, fp32 accumulation.
// Written as a kernel author first writes it: one block per row, a fixed block size.
#include <cuda_fp16.h>

#define BLOCK_SIZE 256
#define WARP_SIZE 32

__device__ __forceinline__ float warp_reduce_sum(float x) {
#pragma unroll
  for (int offset = WARP_SIZE / 2; offset > 0; offset /= 2) {
    x += __shfl_xor_sync(0xffffffff, x, offset);
  }
  return x;
}

__global__ void __launch_bounds__(BLOCK_SIZE) rmsnorm_kernel(half* __restrict__ out,
                                                             const half* __restrict__ in,
                                                             const half* __restrict__ weight,
                                                             int hidden, float eps) {
  __shared__ float warp_sums[BLOCK_SIZE / WARP_SIZE];
  const half* row = in + (size_t)blockIdx.x * hidden;
  half* out_row = out + (size_t)blockIdx.x * hidden;

  float sum = 0.f;
  for (int i = threadIdx.x; i < hidden; i += BLOCK_SIZE) {
    float v = __half2float(row[i]);
    sum += v * v;
  }
  sum = warp_reduce_sum(sum);
  if (threadIdx.x % WARP_SIZE == 0) warp_sums[threadIdx.x / WARP_SIZE] = sum;
  __syncthreads();
  if (threadIdx.x < WARP_SIZE) {
    float total = threadIdx.x < BLOCK_SIZE / WARP_SIZE ? warp_sums[threadIdx.x] : 0.f;
    total = warp_reduce_sum(total);
    if (threadIdx.x == 0) warp_sums[0] = rsqrtf(total / hidden + eps);
  }
  __syncthreads();
  float scale = warp_sums[0];
  for (int i = threadIdx.x; i < hidden; i += BLOCK_SIZE) {
    out_row[i] = __float2half(__half2float(row[i]) * scale * __half2float(weight[i]));
  }
}

void rmsnorm(half* out, const half* in, const half* weight, int tokens, int hidden,
             cudaStream_t stream) {
  rmsnorm_kernel<<<tokens, BLOCK_SIZE, 0, stream>>>(out, in, weight, hidden, 1e-6f);
}
