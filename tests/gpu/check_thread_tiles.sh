#!/usr/bin/env bash
# GPU suite of the thread tiles: the fixtures tests/fixtures/template/thread_tiles.cu (C = A * B^T
# from shared tiles, a pointer per thread, a loop with a `#pragma unroll`) and
# thread_tiles_aliases.cu (the thread's index in locals, the grid worked out from the block, a
# template tile) templatized by the cutune binary, built with nvcc at several tile sizes and
# thread tiles, and run by drivers of this script against a CPU reference in double: on shapes
# that are not multiples of the tile (one element, odd sizes, a tall and a wide one), and for
# the second, which needs whole tiles, on 16, 48 and 256. One line per build:
#   thread_tiles  NAME=VALUE ...  PASS|FAIL  (worst relative difference)
# Exits non-zero if a build or a check fails.
#   CUTUNE=target/release/cutune bash tests/gpu/check_thread_tiles.sh
set -u
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cutune="${CUTUNE:-$repo/target/release/cutune}"
nvcc="${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}"
work="$(mktemp -d -t cutune-thread-tiles.XXXXXX)"
failed=0

"$cutune" templatize "$repo/tests/fixtures/template/thread_tiles.cu" --kernel matmul_bt > "$work/matmul_bt.cu" 2> "$work/matmul_bt.log" || { cat "$work/matmul_bt.log"; exit 1; }
"$cutune" templatize "$repo/tests/fixtures/template/thread_tiles_aliases.cu" --kernel square_mm > "$work/square_mm.cu" 2> "$work/square_mm.log" || { cat "$work/square_mm.log"; exit 1; }
grep -q "MATMUL_BT_TM" "$work/matmul_bt.cu" && grep -q "SQUARE_MM_TM" "$work/square_mm.cu" || { echo "thread_tiles: no thread tiles in a templatized file"; cat "$work"/*.log; exit 1; }

cat > "$work/main.cu" <<'CU'
#include <cmath>
#include <cstdio>
#include <vector>
#include "matmul_bt.cu"
int main() {
  const int shapes[][3] = {{1, 1, 1}, {33, 17, 45}, {128, 200, 64}, {257, 31, 300}, {5, 300, 129}};
  double worst = 0;
  for (auto& s : shapes) {
    int M = s[0], N = s[1], K = s[2];
    std::vector<float> a((size_t)M * K), b((size_t)N * K), c((size_t)M * N);
    for (size_t i = 0; i < a.size(); ++i) a[i] = (float)((i * 37) % 101) / 50.f - 1.f;
    for (size_t i = 0; i < b.size(); ++i) b[i] = (float)((i * 53) % 97) / 48.f - 1.f;
    float *da, *db, *dc;
    cudaMalloc(&da, a.size() * 4); cudaMalloc(&db, b.size() * 4); cudaMalloc(&dc, c.size() * 4);
    cudaMemcpy(da, a.data(), a.size() * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(db, b.data(), b.size() * 4, cudaMemcpyHostToDevice);
    cudaMemset(dc, 0xff, c.size() * 4);
    matmul_bt_launch(da, db, dc, M, N, K);
    if (cudaDeviceSynchronize() != cudaSuccess) { printf("launch failed: %s\n", cudaGetErrorString(cudaGetLastError())); return 1; }
    cudaMemcpy(c.data(), dc, c.size() * 4, cudaMemcpyDeviceToHost);
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) {
        double ref = 0, mag = 0;
        for (int k = 0; k < K; ++k) { double p = (double)a[(size_t)i * K + k] * b[(size_t)j * K + k]; ref += p; mag += std::fabs(p); }
        double err = std::fabs(c[(size_t)i * N + j] - ref) / (mag + 1e-6);
        if (!(err <= worst)) worst = err;  // NaN (an output not written) counts as worst
      }
    cudaFree(da); cudaFree(db); cudaFree(dc);
  }
  printf("%s (worst relative difference %.2e)\n", worst < 1e-5 ? "PASS" : "FAIL", worst);
  return worst < 1e-5 ? 0 : 1;
}
CU

cat > "$work/square_main.cu" <<'CU'
#include <cmath>
#include <cstdio>
#include <vector>
#include "square_mm.cu"
int main() {
  double worst = 0;
  for (int n : {16, 48, 256}) {
    std::vector<float> a((size_t)n * n), b((size_t)n * n), c((size_t)n * n);
    for (size_t i = 0; i < a.size(); ++i) { a[i] = (float)((i * 37) % 101) / 50.f - 1.f; b[i] = (float)((i * 53) % 97) / 48.f - 1.f; }
    float *da, *db, *dc;
    cudaMalloc(&da, a.size() * 4); cudaMalloc(&db, b.size() * 4); cudaMalloc(&dc, c.size() * 4);
    cudaMemcpy(da, a.data(), a.size() * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(db, b.data(), b.size() * 4, cudaMemcpyHostToDevice);
    cudaMemset(dc, 0xff, c.size() * 4);
    square_mm_launch(dc, da, db, n);
    if (cudaDeviceSynchronize() != cudaSuccess) { printf("launch failed: %s\n", cudaGetErrorString(cudaGetLastError())); return 1; }
    cudaMemcpy(c.data(), dc, c.size() * 4, cudaMemcpyDeviceToHost);
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) {
        double ref = 0, mag = 0;
        for (int k = 0; k < n; ++k) { double p = (double)a[(size_t)i * n + k] * b[(size_t)k * n + j]; ref += p; mag += std::fabs(p); }
        double err = std::fabs(c[(size_t)i * n + j] - ref) / (mag + 1e-6);
        if (!(err <= worst)) worst = err;
      }
    cudaFree(da); cudaFree(db); cudaFree(dc);
  }
  printf("%s (worst relative difference %.2e)\n", worst < 1e-5 ? "PASS" : "FAIL", worst);
  return worst < 1e-5 ? 0 : 1;
}
CU

# build_and_run LABEL DRIVER "NAME=VALUE ...": one line, and `failed` set when it fails.
build_and_run() {
  local label="$1" driver="$2" set="$3" defines=() kv
  for kv in $set; do defines+=("-D$kv"); done
  local exe="$work/${label}_$(echo "${set:-defaults}" | tr ' =' '__')"
  if ! "$nvcc" -O3 -arch=sm_90 "${defines[@]}" -o "$exe" "$work/$driver" > "$exe.log" 2>&1; then
    printf '%-21s %-56s FAIL (compile)\n' "$label" "${set:-defaults}"; head -20 "$exe.log"; failed=1; return
  fi
  local result
  result="$("$exe" 2>&1)" || failed=1
  printf '%-21s %-56s %s\n' "$label" "${set:-defaults}" "$result"
}

for set in "" "SQUARE_MM_TM=2" "SQUARE_MM_TN=4" "SQUARE_MM_TM=4 SQUARE_MM_TN=4" "SQUARE_MM_TM=8 SQUARE_MM_TN=8 SQUARE_MM_PAD_A=1"; do
  build_and_run thread_tiles_aliases square_main.cu "$set"
done
for set in "" "MATMUL_BT_TM=2" "MATMUL_BT_TN=4" "MATMUL_BT_TM=4 MATMUL_BT_TN=4" "TILE=32 MATMUL_BT_TM=8 MATMUL_BT_TN=4" \
           "TILE=64 MATMUL_BT_TM=8 MATMUL_BT_TN=8 MATMUL_BT_PAD_A_TILE=1" "TILE=8 MATMUL_BT_TM=8 MATMUL_BT_TN=1 MATMUL_BT_UNROLL=2"; do
  build_and_run thread_tiles main.cu "$set"
done
exit $failed
