#!/usr/bin/env bash
# GPU suite of the row in registers: the fixture tests/fixtures/template/keep_row.cu (a residual
# added in place, then two more passes over the sum) templatized by the cutune binary, built with
# nvcc at vector widths, kept vectors and block sizes where the kept part covers none, some and
# all of a row, and run by a driver of this script against a CPU reference in double: on row
# widths that are not multiples of the width and buffers offset by one element (rows whose
# vectors start mid-row, where the loops' alignment guards must agree). One line per build:
#   keep_row  NAME=VALUE ...  PASS|FAIL  (worst relative difference)
# Exits non-zero if a build or a check fails.
#   CUTUNE=target/release/cutune bash tests/gpu/check_keep_row.sh
set -u
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cutune="${CUTUNE:-$repo/target/release/cutune}"
nvcc="${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}"
work="$(mktemp -d -t cutune-keep-row.XXXXXX)"
failed=0

"$cutune" templatize "$repo/tests/fixtures/template/keep_row.cu" --kernel residual_rms_scale > "$work/keep_row.cu" 2> "$work/keep_row.log" || { cat "$work/keep_row.log"; exit 1; }
grep -q "RESIDUAL_RMS_SCALE_ROW_REGS" "$work/keep_row.cu" || { echo "keep_row: no kept row in the templatized file"; cat "$work/keep_row.log"; exit 1; }

cat > "$work/main.cu" <<'CU'
#include <cmath>
#include <cstdio>
#include <vector>
#include "keep_row.cu"
int main() {
  double worst = 0;
  for (int width : {1, 5, 8, 1000, 4099, 8192}) {
    for (int offset : {0, 1, 3}) {
      const int rows = 19, n = rows * width;
      std::vector<float> h(n), r(n), y(n), h_out(n);
      for (int i = 0; i < n; ++i) { h[i] = (i % 23) * 0.125f - 1.25f; r[i] = (i % 11) * 0.25f - 1.0f; }
      float *dh, *dr, *dy;
      cudaMalloc(&dh, (n + 3) * sizeof(float)); cudaMalloc(&dr, (n + 3) * sizeof(float)); cudaMalloc(&dy, (n + 3) * sizeof(float));
      cudaMemcpy(dh + offset, h.data(), n * sizeof(float), cudaMemcpyHostToDevice);
      cudaMemcpy(dr + offset, r.data(), n * sizeof(float), cudaMemcpyHostToDevice);
      cudaMemset(dy, 0xff, (n + 3) * sizeof(float));
      run(dy + offset, dh + offset, dr + offset, rows, width);
      cudaMemcpy(y.data(), dy + offset, n * sizeof(float), cudaMemcpyDeviceToHost);
      cudaMemcpy(h_out.data(), dh + offset, n * sizeof(float), cudaMemcpyDeviceToHost);
      for (int row = 0; row < rows; ++row) {
        double squares = 0;
        for (int c = 0; c < width; ++c) { double s = (double)h[row * width + c] + r[row * width + c]; squares += s * s; }
        const double inv = 1.0 / std::sqrt(squares / width + 1e-5);
        for (int c = 0; c < width; ++c) {
          const int i = row * width + c;
          const double sum = (double)h[i] + r[i];
          const double d_sum = std::fabs(h_out[i] - sum) / (std::fabs(sum) + 1e-3);
          const double d_out = std::fabs(y[i] - sum * inv) / (std::fabs(sum * inv) + 1e-3);
          worst = std::fmax(worst, std::fmax(d_sum, d_out));
          if (!(d_sum <= 1e-5 && d_out <= 1e-4)) worst = INFINITY;  // NaN too
        }
      }
      cudaFree(dh); cudaFree(dr); cudaFree(dy);
    }
  }
  printf("%.2e %s", worst, cudaGetErrorString(cudaGetLastError()));
  return worst <= 1e-4 ? 0 : 1;
}
CU

# VEC ROW_REGS THREADS: none kept, a few vectors of long rows, every vector of a row (4 × 128 × 4
# covers 2048 floats), the widest kept part on the narrowest block.
for set in "1 0 128" "4 0 128" "2 1 128" "4 2 128" "4 4 128" "4 8 128" "2 8 32" "4 8 1024"; do
  read -r vec kept threads <<<"$set"
  label="VEC=$vec ROW_REGS=$kept THREADS=$threads"
  exe="$work/keep_row_${vec}_${kept}_${threads}"
  if ! "$nvcc" -O3 -arch="${ARCH:-sm_90}" -DRESIDUAL_RMS_SCALE_VEC="$vec" -DRESIDUAL_RMS_SCALE_ROW_REGS="$kept" -DTHREADS="$threads" -I"$work" -o "$exe" "$work/main.cu" > "$exe.log" 2>&1; then
    printf '%-10s %-36s FAIL (compile)\n' keep_row "$label"; head -15 "$exe.log"; failed=1; continue
  fi
  if result=$("$exe" 2>&1); then status=PASS; else status=FAIL; failed=1; fi
  printf '%-10s %-36s %s  (%s)\n' keep_row "$label" "$status" "$result"
done
exit $failed
