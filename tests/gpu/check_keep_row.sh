#!/usr/bin/env bash
# GPU suite of the row in registers: the fixtures tests/fixtures/template/keep_row.cu (a residual
# added in place, then two more passes over the sum), warp_rows.cu (a warp of a
# cooperative-groups tile per row), keep_row_branches.cu (two passes under `#ifdef CENTRED`,
# built with and without it, before the pass that writes) and online_softmax_masked.cu (softmax
# whose masked logits are -INFINITY, with each `ONLINE` choice: rows half masked, so that whole
# threads' shares are, and a row masked whole, whose outputs are NaN as the original's are)
# templatized by the cutune binary, built with nvcc at vector
# widths, kept vectors and block sizes where the kept part covers none, some and all of a row,
# and run by drivers of this script against a CPU reference in double: on row widths that are
# not multiples of the width and buffers offset by one element (rows whose vectors start
# mid-row, where the loops' alignment guards must agree). One line per build:
#   FIXTURE  NAME=VALUE ...  PASS|FAIL  (worst relative difference)
# Exits non-zero if a build or a check fails.
#   CUTUNE=target/release/cutune bash tests/gpu/check_keep_row.sh
set -u
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cutune="${CUTUNE:-$repo/target/release/cutune}"
nvcc="${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}"
work="$(mktemp -d -t cutune-keep-row.XXXXXX)"
failed=0

"$cutune" templatize "$repo/tests/fixtures/template/keep_row.cu" --kernel residual_rms_scale > "$work/keep_row.cu" 2> "$work/keep_row.log" || { cat "$work/keep_row.log"; exit 1; }
"$cutune" templatize "$repo/tests/fixtures/template/warp_rows.cu" --kernel warp_row_rms > "$work/warp_rows.cu" 2> "$work/warp_rows.log" || { cat "$work/warp_rows.log"; exit 1; }
"$cutune" templatize "$repo/tests/fixtures/template/keep_row_branches.cu" --kernel scale_row > "$work/keep_row_branches.cu" 2> "$work/keep_row_branches.log" || { cat "$work/keep_row_branches.log"; exit 1; }
"$cutune" templatize "$repo/tests/fixtures/template/online_softmax_masked.cu" --kernel masked_softmax > "$work/online_softmax_masked.cu" 2> "$work/online_softmax_masked.log" || { cat "$work/online_softmax_masked.log"; exit 1; }
grep -q "RESIDUAL_RMS_SCALE_ROW_REGS" "$work/keep_row.cu" && grep -q "WARP_ROW_RMS_ROW_REGS" "$work/warp_rows.cu" && grep -q "SCALE_ROW_ROW_REGS" "$work/keep_row_branches.cu" \
  && grep -q "MASKED_SOFTMAX_ROW_REGS" "$work/online_softmax_masked.cu" || { echo "keep_row: no kept row in a templatized file"; cat "$work"/*.log; exit 1; }

cat > "$work/keep_row_main.cu" <<'CU'
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

cat > "$work/warp_rows_main.cu" <<'CU'
#include <cmath>
#include <cstdio>
#include <vector>
#include "warp_rows.cu"
int main() {
  double worst = 0;
  for (int width : {1, 5, 32, 1000, 4099}) {
    for (int offset : {0, 1, 3}) {
      const int rows = 37, n = rows * width;
      std::vector<float> x(n), y(n);
      for (int i = 0; i < n; ++i) x[i] = (i % 19) * 0.25f - 2.0f;
      float *dx, *dy;
      cudaMalloc(&dx, (n + 3) * sizeof(float)); cudaMalloc(&dy, (n + 3) * sizeof(float));
      cudaMemcpy(dx + offset, x.data(), n * sizeof(float), cudaMemcpyHostToDevice);
      cudaMemset(dy, 0xff, (n + 3) * sizeof(float));
      run(dy + offset, dx + offset, rows, width);
      cudaMemcpy(y.data(), dy + offset, n * sizeof(float), cudaMemcpyDeviceToHost);
      for (int row = 0; row < rows; ++row) {
        double squares = 0;
        for (int c = 0; c < width; ++c) squares += (double)x[row * width + c] * x[row * width + c];
        const double scale = 1.0 / std::sqrt(squares / width + 1e-6);
        for (int c = 0; c < width; ++c) {
          const double want = x[row * width + c] * scale, d = std::fabs(y[row * width + c] - want) / (std::fabs(want) + 1e-3);
          worst = d <= 1e-4 ? std::fmax(worst, d) : INFINITY;  // NaN too
        }
      }
      cudaFree(dx); cudaFree(dy);
    }
  }
  printf("%.2e %s", worst, cudaGetErrorString(cudaGetLastError()));
  return worst <= 1e-4 ? 0 : 1;
}
CU

cat > "$work/keep_row_branches_main.cu" <<'CU'
#include <cmath>
#include <cstdio>
#include <vector>
#include "keep_row_branches.cu"
int main() {
  double worst = 0;
  const float gain = 1.5f;
  for (int width : {1, 5, 8, 1000, 4099}) {
    for (int offset : {0, 1, 3}) {
      const int rows = 23, n = rows * width;
      std::vector<float> x(n), y(n);
      for (int i = 0; i < n; ++i) x[i] = (i % 17) * 0.25f - 1.5f;
      float *dx, *dy;
      cudaMalloc(&dx, (n + 3) * sizeof(float)); cudaMalloc(&dy, (n + 3) * sizeof(float));
      cudaMemcpy(dx + offset, x.data(), n * sizeof(float), cudaMemcpyHostToDevice);
      cudaMemset(dy, 0xff, (n + 3) * sizeof(float));
      run(dy + offset, dx + offset, gain, rows, width);
      cudaMemcpy(y.data(), dy + offset, n * sizeof(float), cudaMemcpyDeviceToHost);
      for (int row = 0; row < rows; ++row) {
        const float* r = &x[row * width];
        double mean = 0, scale = gain;
#ifdef CENTRED
        for (int c = 0; c < width; ++c) mean += r[c];
        mean /= width;
        double squares = 0;
        for (int c = 0; c < width; ++c) squares += (r[c] - mean) * (r[c] - mean);
        scale = gain / std::sqrt(squares / width + 1e-6);
#endif
        for (int c = 0; c < width; ++c) {
          const double want = (r[c] - mean) * scale, d = std::fabs(y[row * width + c] - want) / (std::fabs(want) + 1e-2);
          worst = d <= 1e-3 ? std::fmax(worst, d) : INFINITY;  // NaN too
        }
      }
      cudaFree(dx); cudaFree(dy);
    }
  }
  printf("%.2e %s", worst, cudaGetErrorString(cudaGetLastError()));
  return worst <= 1e-3 ? 0 : 1;
}
CU

cat > "$work/online_softmax_masked_main.cu" <<'CU'
#include <cmath>
#include <cstdio>
#include <vector>
#include "online_softmax_masked.cu"
int main() {
  double worst = 0;
  for (int width : {1, 5, 8, 1000, 4099}) {
    for (int offset : {0, 1, 3}) {
      const int rows = 23, n = rows * width;
      std::vector<float> x(n), y(n);
      for (int row = 0; row < rows; ++row) {
        for (int c = 0; c < width; ++c) {
          // Every third row masked in its first half, row 5 masked whole.
          const bool masked = row == 5 || (row % 3 == 0 && c < (width + 1) / 2);
          x[row * width + c] = masked ? -INFINITY : ((row * width + c) % 17) * 0.5f - 4.0f;
        }
      }
      float *dx, *dy;
      cudaMalloc(&dx, (n + 3) * sizeof(float)); cudaMalloc(&dy, (n + 3) * sizeof(float));
      cudaMemcpy(dx + offset, x.data(), n * sizeof(float), cudaMemcpyHostToDevice);
      cudaMemset(dy, 0, (n + 3) * sizeof(float));
      run(dy + offset, dx + offset, rows, width);
      cudaMemcpy(y.data(), dy + offset, n * sizeof(float), cudaMemcpyDeviceToHost);
      for (int row = 0; row < rows; ++row) {
        const float* r = &x[row * width];
        double m = -INFINITY, s = 0;
        for (int c = 0; c < width; ++c) m = std::fmax(m, (double)r[c]);
        for (int c = 0; c < width; ++c) s += std::exp(r[c] - m);
        for (int c = 0; c < width; ++c) {
          const float got = y[row * width + c];
          // A row masked whole (row 5; a half of one or two logits is the whole row) has no
          // maximum to subtract: NaN, as the original gives.
          if (m == -INFINITY) {
            if (!std::isnan(got)) worst = INFINITY;
            continue;
          }
          const double want = std::exp(r[c] - m) / s, d = std::fabs(got - want) / (want + 1e-6);
          worst = d <= 1e-4 ? std::fmax(worst, d) : INFINITY;  // NaN too
        }
      }
      cudaFree(dx); cudaFree(dy);
    }
  }
  printf("%.2e %s", worst, cudaGetErrorString(cudaGetLastError()));
  return worst <= 1e-4 ? 0 : 1;
}
CU

# FIXTURE PREFIX VEC ROW_REGS THREADS: none kept, a few vectors of long rows, every vector of a
# row (4 × 128 × 4 covers 2048 floats), the widest kept part on the narrowest block; a warp's
# row kept whole (4 × 32 × 8 covers 1024 floats) and in part.
for set in "keep_row RESIDUAL_RMS_SCALE 1 0 128" "keep_row RESIDUAL_RMS_SCALE 4 0 128" "keep_row RESIDUAL_RMS_SCALE 2 1 128" \
           "keep_row RESIDUAL_RMS_SCALE 4 2 128" "keep_row RESIDUAL_RMS_SCALE 4 4 128" "keep_row RESIDUAL_RMS_SCALE 4 8 128" \
           "keep_row RESIDUAL_RMS_SCALE 2 8 32" "keep_row RESIDUAL_RMS_SCALE 4 8 1024" \
           "warp_rows WARP_ROW_RMS 1 0 -" "warp_rows WARP_ROW_RMS 4 0 -" "warp_rows WARP_ROW_RMS 2 2 -" "warp_rows WARP_ROW_RMS 4 8 -" \
           "keep_row_branches SCALE_ROW 4 0 256 CENTRED" "keep_row_branches SCALE_ROW 4 2 256 CENTRED" "keep_row_branches SCALE_ROW 2 8 64 CENTRED" \
           "keep_row_branches SCALE_ROW 4 2 256" "keep_row_branches SCALE_ROW 2 8 64" \
           "online_softmax_masked MASKED_SOFTMAX 1 0 256 MASKED_SOFTMAX_ONLINE=2" "online_softmax_masked MASKED_SOFTMAX 4 0 256 MASKED_SOFTMAX_ONLINE=2" \
           "online_softmax_masked MASKED_SOFTMAX 4 2 256 MASKED_SOFTMAX_ONLINE=2" "online_softmax_masked MASKED_SOFTMAX 4 8 128 MASKED_SOFTMAX_ONLINE=2" \
           "online_softmax_masked MASKED_SOFTMAX 2 8 1024 MASKED_SOFTMAX_ONLINE=2" "online_softmax_masked MASKED_SOFTMAX 4 2 256 MASKED_SOFTMAX_ONLINE=1" \
           "online_softmax_masked MASKED_SOFTMAX 4 2 256 MASKED_SOFTMAX_ONLINE=0" "online_softmax_masked MASKED_SOFTMAX 1 0 32"; do
  read -r fixture prefix vec kept threads macro <<<"$set"
  label="VEC=$vec ROW_REGS=$kept"
  defines=(-D"${prefix}_VEC=$vec" -D"${prefix}_ROW_REGS=$kept")
  if [ "$threads" != - ]; then label="$label THREADS=$threads"; defines+=(-DTHREADS="$threads" -D"${prefix}_BLOCK_SIZE=$threads"); fi
  if [ -n "$macro" ]; then label="$label $macro"; defines+=(-D"$macro"); fi
  exe="$work/${fixture}_${vec}_${kept}_${threads}_${macro//=/_}"
  if ! "$nvcc" -O3 -arch="${ARCH:-sm_90}" "${defines[@]}" -I"$work" -o "$exe" "$work/${fixture}_main.cu" > "$exe.log" 2>&1; then
    printf '%-10s %-36s FAIL (compile)\n' "$fixture" "$label"; head -15 "$exe.log"; failed=1; continue
  fi
  if result=$("$exe" 2>&1); then status=PASS; else status=FAIL; failed=1; fi
  printf '%-10s %-36s %s  (%s)\n' "$fixture" "$label" "$status" "$result"
done
exit $failed
