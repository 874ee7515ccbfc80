// Merge two partial attention results computed over disjoint key ranges (e.g. a cached prefix
// and a new suffix, or two split-KV chunks), each with its log-sum-exp:
//   m   = max(lse_a, lse_b)
//   w_a = exp(lse_a - m),  w_b = exp(lse_b - m)
//   out = (out_a * w_a + out_b * w_b) / (w_a + w_b)
//   lse = m + log(w_a + w_b)
// Shapes: out_* are [tokens, heads, head_dim] fp16, lse_* are [tokens, heads] fp32.
// An empty part has lse = -inf and contributes nothing; if both parts are empty the output
// is 0 and lse stays -inf.
// First draft: one thread per output element; the weights are recomputed by every thread.
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

constexpr int kThreads = 128;

__global__ void merge_attn_states_kernel(half* __restrict__ out, float* __restrict__ out_lse,
                                         const half* __restrict__ out_a,
                                         const float* __restrict__ lse_a,
                                         const half* __restrict__ out_b,
                                         const float* __restrict__ lse_b, int n, int head_dim) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int th = i / head_dim;  // token * heads + head
  int d = i - th * head_dim;

  float la = lse_a[th];
  float lb = lse_b[th];
  float m = fmaxf(la, lb);
  if (m == -INFINITY) {  // both parts empty: avoid (-inf) - (-inf) = NaN
    out[i] = __float2half(0.f);
    if (d == 0) out_lse[th] = -INFINITY;
    return;
  }
  float wa = expf(la - m);
  float wb = expf(lb - m);
  float s = wa + wb;
  float v = (__half2float(out_a[i]) * wa + __half2float(out_b[i]) * wb) / s;
  out[i] = __float2half(v);
  if (d == 0) out_lse[th] = m + logf(s);
}

void merge_attn_states(half* out, float* out_lse, const half* out_a, const float* lse_a,
                       const half* out_b, const float* lse_b, int tokens, int heads,
                       int head_dim, cudaStream_t stream) {
  int n = tokens * heads * head_dim;
  int blocks = (n + kThreads - 1) / kThreads;
  merge_attn_states_kernel<<<blocks, kThreads, 0, stream>>>(out, out_lse, out_a, lse_a, out_b,
                                                            lse_b, n, head_dim);
}

// ---------------------------------------------------------------------------------------------
// Test driver.

static uint32_t g_rng = 0x7F4A7C15u;
// Uniform in (-1, 1), never exactly zero.
static float rand_uniform() {
  g_rng = g_rng * 1664525u + 1013904223u;
  return ((float)(g_rng >> 8) + 0.5f) / 16777216.0f * 2.0f - 1.0f;
}

int main() {
  const int tokens = 8191, heads = 32, head_dim = 128;
  const size_t n = (size_t)tokens * heads * head_dim, nl = (size_t)tokens * heads;

  std::vector<half> h_a(n), h_b(n), h_out(n);
  std::vector<float> h_la(nl), h_lb(nl), h_lse(nl);
  for (size_t i = 0; i < n; ++i) h_a[i] = __float2half(rand_uniform());
  for (size_t i = 0; i < n; ++i) h_b[i] = __float2half(rand_uniform());
  for (size_t i = 0; i < nl; ++i) {
    // Log-sum-exps of real attention rows: moderate and positive, sometimes far apart.
    h_la[i] = 5.0f + 10.0f * rand_uniform();
    h_lb[i] = 5.0f + 10.0f * rand_uniform();
    // Empty parts: every 17th (token, head) has an empty a, every 23rd an empty b, so some
    // (multiples of 391) have both empty.
    if (i % 17 == 0) h_la[i] = -INFINITY;
    if (i % 23 == 0) h_lb[i] = -INFINITY;
  }

  half *d_a, *d_b, *d_out;
  float *d_la, *d_lb, *d_lse;
  CUDA_CHECK(cudaMalloc(&d_a, n * sizeof(half)));
  CUDA_CHECK(cudaMalloc(&d_b, n * sizeof(half)));
  CUDA_CHECK(cudaMalloc(&d_out, n * sizeof(half)));
  CUDA_CHECK(cudaMalloc(&d_la, nl * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d_lb, nl * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d_lse, nl * sizeof(float)));
  CUDA_CHECK(cudaMemcpy(d_a, h_a.data(), n * sizeof(half), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(d_b, h_b.data(), n * sizeof(half), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(d_la, h_la.data(), nl * sizeof(float), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(d_lb, h_lb.data(), nl * sizeof(float), cudaMemcpyHostToDevice));

  merge_attn_states(d_out, d_lse, d_a, d_la, d_b, d_lb, tokens, heads, head_dim, 0);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());
  CUDA_CHECK(cudaMemcpy(h_out.data(), d_out, n * sizeof(half), cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(h_lse.data(), d_lse, nl * sizeof(float), cudaMemcpyDeviceToHost));

  // CPU reference over every element, in double.
  double max_err = 0.0;
  bool ok = true;
  for (size_t th = 0; th < nl; ++th) {
    double la = h_la[th], lb = h_lb[th];
    double m = std::fmax(la, lb);
    double wa = 0.0, wb = 0.0, ref_lse = -INFINITY;
    if (m != -INFINITY) {
      wa = std::exp(la - m);
      wb = std::exp(lb - m);
      ref_lse = m + std::log(wa + wb);
    }
    if (ref_lse == -INFINITY) {
      if (h_lse[th] != -INFINITY) ok = false;
    } else {
      double err = std::fabs((double)h_lse[th] - ref_lse);
      if (!(err <= 1e-5 + 1e-5 * std::fabs(ref_lse))) ok = false;
      if (err > max_err || err != err) max_err = err;
    }
    for (int d = 0; d < head_dim; ++d) {
      size_t i = th * head_dim + d;
      double ref = m == -INFINITY
                       ? 0.0
                       : (__half2float(h_a[i]) * wa + __half2float(h_b[i]) * wb) / (wa + wb);
      double err = std::fabs((double)__half2float(h_out[i]) - ref);
      if (!(err <= 2e-3)) ok = false;  // |out| <= 1: fp16 rounding is below 5e-4
      if (err > max_err || err != err) max_err = err;
    }
  }
  printf("merge_attn_states tokens=%d heads=%d head_dim=%d max_abs_err=%.3e %s\n", tokens, heads,
         head_dim, max_err, ok ? "PASS" : "FAIL");

  CUDA_CHECK(cudaFree(d_a));
  CUDA_CHECK(cudaFree(d_b));
  CUDA_CHECK(cudaFree(d_out));
  CUDA_CHECK(cudaFree(d_la));
  CUDA_CHECK(cudaFree(d_lb));
  CUDA_CHECK(cudaFree(d_lse));
  return ok ? 0 : 1;
}
