// Three kernels of different costs, for tests/gpu/profile_suite.sh: `heavy` does about ten
// times the work of `light` per launch, `medium` about three times, and each runs a few times.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__global__ void heavy(float *x, int n, int rounds) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i];
    for (int r = 0; r < rounds * 10; r++) v = v * 0.999f + 0.001f;
    x[i] = v;
}

__global__ void medium(float *x, const float *y, int n, int rounds) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i];
    for (int r = 0; r < rounds * 3; r++) v = v * 0.999f + y[i];
    x[i] = v;
}

__global__ void light(float *x, int n, int rounds) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i];
    for (int r = 0; r < rounds; r++) v = v * 0.5f + 1.0f;
    x[i] = v;
}

// Usage: three_kernels [N], N floats per buffer (default 4 Mi).
int main(int argc, char **argv) {
    const int n = argc > 1 ? atoi(argv[1]) : 1 << 22;
    const int rounds = 400;
    float *x, *y;
    cudaMalloc(&x, n * sizeof(float));
    cudaMalloc(&y, n * sizeof(float));
    cudaMemset(x, 0, n * sizeof(float));
    cudaMemset(y, 0, n * sizeof(float));
    int block = 256;
    int grid = (n + block - 1) / block;
    // The loop's time, so that the profiler's overhead on GPU time can be read off.
    cudaEvent_t start, stop;
    cudaEventCreate(&start);
    cudaEventCreate(&stop);
    cudaEventRecord(start);
    for (int step = 0; step < 5; step++) {
        heavy<<<grid, block>>>(x, n, rounds);
        medium<<<grid, block>>>(x, y, n, rounds);
        light<<<grid, block>>>(x, n, rounds);
    }
    cudaEventRecord(stop);
    cudaError_t status = cudaDeviceSynchronize();
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    printf("three_kernels: %s, loop %.3f ms\n", cudaGetErrorString(status), ms);
    cudaFree(x);
    cudaFree(y);
    return status == cudaSuccess ? 0 : 1;
}
