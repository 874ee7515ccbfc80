#!/usr/bin/env bash
# GPU suite of the lane rewrites' edges: the fixtures of one element per thread
# (tests/fixtures/template/elements*.cu) templatized by the cutune binary, built with nvcc at
# each vector width, and run by a driver of this script against a CPU reference on sizes that
# are not multiples of the width, rows whose length is not either (the divisor guard), and
# buffers offset by one element (the loads and stores that are not aligned). One line per build:
#   FIXTURE  NAME=VALUE ...  PASS|FAIL  (worst difference)
# Exits non-zero if a build or a check fails.
#   CUTUNE=target/release/cutune bash tests/gpu/check_elements.sh
set -u
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cutune="${CUTUNE:-$repo/target/release/cutune}"
nvcc="${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}"
work="$(mktemp -d -t cutune-elements.XXXXXX)"
failed=0

"$cutune" templatize "$repo/tests/fixtures/template/elements_return.cu" --kernel residual_relu > "$work/residual_relu.cu" 2> "$work/residual_relu.log" || { cat "$work/residual_relu.log"; exit 1; }
"$cutune" templatize "$repo/tests/fixtures/template/elements.cu" --kernel scale_add_bias > "$work/scale_add_bias.cu" 2> "$work/scale_add_bias.log" || { cat "$work/scale_add_bias.log"; exit 1; }
"$cutune" templatize "$repo/tests/fixtures/template/elements_uniform_if.cu" --kernel blend_rows > "$work/blend_rows.cu" 2> "$work/blend_rows.log" || { cat "$work/blend_rows.log"; exit 1; }
"$cutune" templatize "$repo/tests/fixtures/template/elements_hoist.cu" --kernel scale_valid_rows > "$work/scale_valid_rows.cu" 2> "$work/scale_valid_rows.log" || { cat "$work/scale_valid_rows.log"; exit 1; }
"$cutune" templatize "$repo/tests/fixtures/template/elements_uniform_if_in_lanes.cu" --kernel scale_seen_rows > "$work/scale_seen_rows.cu" 2> "$work/scale_seen_rows.log" || { cat "$work/scale_seen_rows.log"; exit 1; }
"$cutune" templatize "$repo/tests/fixtures/template/elements_uniform_return.cu" --kernel scale_live_rows > "$work/scale_live_rows.cu" 2> "$work/scale_live_rows.log" || { cat "$work/scale_live_rows.log"; exit 1; }

cat > "$work/residual_relu_main.cu" <<'CU'
#include <cstdio>
#include <vector>
#include "residual_relu.cu"
int main() {
  int bad = 0;
  for (int total : {1, 7, 4096, 1000003}) {
    for (int offset : {0, 1}) {
      std::vector<float> a(total), b(total), y(total);
      for (int i = 0; i < total; ++i) { a[i] = (i % 13) - 6.5f; b[i] = (i % 7) * 0.25f - 0.6f; }
      float *da, *db, *dy;
      cudaMalloc(&da, (total + 1) * sizeof(float)); cudaMalloc(&db, (total + 1) * sizeof(float)); cudaMalloc(&dy, (total + 1) * sizeof(float));
      cudaMemcpy(da + offset, a.data(), total * sizeof(float), cudaMemcpyHostToDevice);
      cudaMemcpy(db + offset, b.data(), total * sizeof(float), cudaMemcpyHostToDevice);
      cudaMemset(dy, 0xff, (total + 1) * sizeof(float));
      run(dy + offset, da + offset, db + offset, total);
      cudaMemcpy(y.data(), dy + offset, total * sizeof(float), cudaMemcpyDeviceToHost);
      for (int i = 0; i < total; ++i) { float s = a[i] + b[i]; if (y[i] != (s > 0.f ? s : 0.f)) { ++bad; break; } }
      cudaFree(da); cudaFree(db); cudaFree(dy);
    }
  }
  printf("residual_relu mismatching cases %d, %s\n", bad, cudaGetErrorString(cudaGetLastError()));
  return bad ? 1 : 0;
}
CU
cat > "$work/scale_add_bias_main.cu" <<'CU'
#include <cuda_fp16.h>
#include <cmath>
#include <cstdio>
#include <vector>
#include "scale_add_bias.cu"
int main() {
  double worst = 0;
  for (int cols : {8, 12, 4096, 4099}) {
    for (int offset : {0, 1}) {
      const int rows = 37, n = rows * cols;
      std::vector<__half> x(n), bias(cols), out(n);
      for (int i = 0; i < n; ++i) x[i] = __float2half((i % 29) * 0.125f - 1.5f);
      for (int c = 0; c < cols; ++c) bias[c] = __float2half((c % 5) * 0.5f);
      const float scale = 0.75f;
      __half *dx, *db, *dout; float* dscale;
      cudaMalloc(&dx, (n + 1) * sizeof(__half)); cudaMalloc(&db, (cols + 1) * sizeof(__half)); cudaMalloc(&dout, (n + 1) * sizeof(__half)); cudaMalloc(&dscale, sizeof(float));
      cudaMemcpy(dx + offset, x.data(), n * sizeof(__half), cudaMemcpyHostToDevice);
      cudaMemcpy(db + offset, bias.data(), cols * sizeof(__half), cudaMemcpyHostToDevice);
      cudaMemcpy(dscale, &scale, sizeof(float), cudaMemcpyHostToDevice);
      scale_add_bias_rows(dout + offset, dx + offset, db + offset, dscale, rows, cols);
      cudaMemcpy(out.data(), dout + offset, n * sizeof(__half), cudaMemcpyDeviceToHost);
      for (int i = 0; i < n; ++i) {
        double want = __half2float(x[i]) * scale + __half2float(bias[i % cols]);
        worst = std::fmax(worst, std::fabs(__half2float(out[i]) - want) / (std::fabs(want) + 1e-3));
      }
      cudaFree(dx); cudaFree(db); cudaFree(dout); cudaFree(dscale);
    }
  }
  printf("scale_add_bias worst relative difference %.3g, %s\n", worst, cudaGetErrorString(cudaGetLastError()));
  return worst < 2e-3 ? 0 : 1;
}
CU

# Rows whose weight is zero (cleared, left early), negative (a copy) or other (a blend), and
# each row's flag written by its first element: the uniform `if` and its `return`.
cat > "$work/blend_rows_main.cu" <<'CU'
#include <cmath>
#include <cstdio>
#include <vector>
#include "blend_rows.cu"
int main() {
  double worst = 0;
  int bad_flags = 0;
  for (int width : {6, 8, 4096, 4099}) {
    for (int offset : {0, 1}) {
      const int rows = 41, n = rows * width;
      std::vector<float> a(n), b(n), w(rows), out(n);
      std::vector<int> done(rows);
      for (int i = 0; i < n; ++i) { a[i] = (i % 17) * 0.25f - 2.f; b[i] = (i % 11) * 0.5f - 2.5f; }
      for (int r = 0; r < rows; ++r) w[r] = r % 3 == 0 ? 0.f : (r % 3 == 1 ? -0.5f : 0.25f + r * 0.01f);
      float *da, *db, *dw, *dout; int* ddone;
      cudaMalloc(&da, (n + 1) * sizeof(float)); cudaMalloc(&db, (n + 1) * sizeof(float)); cudaMalloc(&dw, (rows + 1) * sizeof(float));
      cudaMalloc(&dout, (n + 1) * sizeof(float)); cudaMalloc(&ddone, rows * sizeof(int));
      cudaMemcpy(da + offset, a.data(), n * sizeof(float), cudaMemcpyHostToDevice);
      cudaMemcpy(db + offset, b.data(), n * sizeof(float), cudaMemcpyHostToDevice);
      cudaMemcpy(dw + offset, w.data(), rows * sizeof(float), cudaMemcpyHostToDevice);
      cudaMemset(dout, 0xff, (n + 1) * sizeof(float)); cudaMemset(ddone, 0xff, rows * sizeof(int));
      run(dout + offset, ddone, da + offset, db + offset, dw + offset, rows, width);
      cudaMemcpy(out.data(), dout + offset, n * sizeof(float), cudaMemcpyDeviceToHost);
      cudaMemcpy(done.data(), ddone, rows * sizeof(int), cudaMemcpyDeviceToHost);
      for (int i = 0; i < n; ++i) {
        const float wr = w[i / width];
        const double want = wr == 0.f ? 0.0 : (wr < 0.f ? a[i] : (double)a[i] * wr + (double)b[i] * (1.0 - wr));
        worst = std::fmax(worst, std::fabs(out[i] - want) / (std::fabs(want) + 1e-3));
      }
      for (int r = 0; r < rows; ++r) bad_flags += done[r] != (w[r] == 0.f ? 0 : 1);
      cudaFree(da); cudaFree(db); cudaFree(dw); cudaFree(dout); cudaFree(ddone);
    }
  }
  printf("blend_rows worst relative difference %.3g, wrong flags %d, %s\n", worst, bad_flags, cudaGetErrorString(cudaGetLastError()));
  return worst < 1e-5 && bad_flags == 0 ? 0 : 1;
}
CU
# Rows past `valid_rows` cleared and left early; the scales of the valid rows only are
# allocated, so a scale read before the test would read past them.
cat > "$work/scale_valid_rows_main.cu" <<'CU'
#include <cmath>
#include <cstdio>
#include <vector>
#include "scale_valid_rows.cu"
int main() {
  double worst = 0;
  for (int width : {6, 8, 4096, 4099}) {
    for (int offset : {0, 1}) {
      const int rows = 37, valid = 29, n = rows * width;
      std::vector<float> in(n), scales(valid), out(n);
      for (int i = 0; i < n; ++i) in[i] = (i % 23) * 0.125f - 1.25f;
      for (int r = 0; r < valid; ++r) scales[r] = 0.5f + r * 0.03125f;
      float *din, *ds, *dout;
      cudaMalloc(&din, (n + 1) * sizeof(float)); cudaMalloc(&ds, (valid + 1) * sizeof(float)); cudaMalloc(&dout, (n + 1) * sizeof(float));
      cudaMemcpy(din + offset, in.data(), n * sizeof(float), cudaMemcpyHostToDevice);
      cudaMemcpy(ds + offset, scales.data(), valid * sizeof(float), cudaMemcpyHostToDevice);
      cudaMemset(dout, 0xff, (n + 1) * sizeof(float));
      run(dout + offset, din + offset, ds + offset, rows, width, valid);
      cudaMemcpy(out.data(), dout + offset, n * sizeof(float), cudaMemcpyDeviceToHost);
      for (int i = 0; i < n; ++i) {
        const int row = i / width, col = i % width;
        const double want = row >= valid ? 0.0 : (double)in[i] * scales[row] + (col < 0.5f * width ? scales[row] * 0.5 : 0.0);
        worst = std::fmax(worst, std::fabs(out[i] - want) / (std::fabs(want) + 1e-3));
      }
      cudaFree(din); cudaFree(ds); cudaFree(dout);
    }
  }
  printf("scale_valid_rows worst relative difference %.3g, %s\n", worst, cudaGetErrorString(cudaGetLastError()));
  return worst < 1e-5 ? 0 : 1;
}
CU

# Rows whose weight is zero are cleared and left early, the others scaled; every row is marked
# seen by its first element: the uniform `if` kept in the lanes, after each lane's read.
cat > "$work/scale_seen_rows_main.cu" <<'CU'
#include <cmath>
#include <cstdio>
#include <vector>
#include "scale_seen_rows.cu"
int main() {
  double worst = 0;
  int bad_seen = 0;
  for (int width : {6, 8, 4096, 4099}) {
    for (int offset : {0, 1}) {
      const int rows = 43, n = rows * width;
      std::vector<float> in(n), w(rows), out(n);
      std::vector<int> seen(rows);
      for (int i = 0; i < n; ++i) in[i] = (i % 19) * 0.25f - 2.f;
      for (int r = 0; r < rows; ++r) w[r] = r % 4 == 0 ? 0.f : 0.5f + r * 0.0625f;
      float *din, *dw, *dout; int* dseen;
      cudaMalloc(&din, (n + 1) * sizeof(float)); cudaMalloc(&dw, (rows + 1) * sizeof(float));
      cudaMalloc(&dout, (n + 1) * sizeof(float)); cudaMalloc(&dseen, rows * sizeof(int));
      cudaMemcpy(din + offset, in.data(), n * sizeof(float), cudaMemcpyHostToDevice);
      cudaMemcpy(dw + offset, w.data(), rows * sizeof(float), cudaMemcpyHostToDevice);
      cudaMemset(dout, 0xff, (n + 1) * sizeof(float)); cudaMemset(dseen, 0, rows * sizeof(int));
      run(dout + offset, dseen, din + offset, dw + offset, rows, width);
      cudaMemcpy(out.data(), dout + offset, n * sizeof(float), cudaMemcpyDeviceToHost);
      cudaMemcpy(seen.data(), dseen, rows * sizeof(int), cudaMemcpyDeviceToHost);
      for (int i = 0; i < n; ++i) {
        const double want = (double)in[i] * w[i / width];
        worst = std::fmax(worst, std::fabs(out[i] - want) / (std::fabs(want) + 1e-3));
      }
      for (int r = 0; r < rows; ++r) bad_seen += seen[r] != 1;
      cudaFree(din); cudaFree(dw); cudaFree(dout); cudaFree(dseen);
    }
  }
  printf("scale_seen_rows worst relative difference %.3g, rows not seen %d, %s\n", worst, bad_seen, cudaGetErrorString(cudaGetLastError()));
  return worst < 1e-5 && bad_seen == 0 ? 0 : 1;
}
CU
# Rows whose scale is zero are left as they were (their poison stays), the others scaled: the
# uniform `if` that only returns, taken once before the lanes.
cat > "$work/scale_live_rows_main.cu" <<'CU'
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>
#include "scale_live_rows.cu"
int main() {
  double worst = 0;
  int touched = 0;
  for (int width : {6, 8, 4096, 4099}) {
    for (int offset : {0, 1}) {
      const int rows = 39, n = rows * width;
      std::vector<float> in(n), s(rows), out(n);
      for (int i = 0; i < n; ++i) in[i] = (i % 21) * 0.25f - 2.5f;
      for (int r = 0; r < rows; ++r) s[r] = r % 3 == 0 ? 0.f : 0.75f + r * 0.125f;
      float *din, *ds, *dout;
      cudaMalloc(&din, (n + 1) * sizeof(float)); cudaMalloc(&ds, (rows + 1) * sizeof(float)); cudaMalloc(&dout, (n + 1) * sizeof(float));
      cudaMemcpy(din + offset, in.data(), n * sizeof(float), cudaMemcpyHostToDevice);
      cudaMemcpy(ds + offset, s.data(), rows * sizeof(float), cudaMemcpyHostToDevice);
      cudaMemset(dout, 0xff, (n + 1) * sizeof(float));
      run(dout + offset, din + offset, ds + offset, rows, width);
      cudaMemcpy(out.data(), dout + offset, n * sizeof(float), cudaMemcpyDeviceToHost);
      for (int i = 0; i < n; ++i) {
        const float scale = s[i / width];
        if (scale == 0.f) {
          unsigned bits;
          std::memcpy(&bits, &out[i], sizeof bits);
          touched += bits != 0xffffffffu;
        } else {
          const double want = (double)in[i] * scale;
          worst = std::fmax(worst, std::fabs(out[i] - want) / (std::fabs(want) + 1e-3));
        }
      }
      cudaFree(din); cudaFree(ds); cudaFree(dout);
    }
  }
  printf("scale_live_rows worst relative difference %.3g, skipped rows' elements written %d, %s\n", worst, touched, cudaGetErrorString(cudaGetLastError()));
  return worst < 1e-5 && touched == 0 ? 0 : 1;
}
CU
for fixture in residual_relu scale_add_bias blend_rows scale_valid_rows scale_seen_rows scale_live_rows; do
  param=$(echo "$fixture" | tr a-z A-Z)_VEC
  for vec in 1 2 4 8; do
    [ "$fixture" != scale_add_bias ] && [ "$vec" = 8 ] && continue  # 8 floats are 32 bytes: no such access
    exe="$work/${fixture}_$vec"
    if ! "$nvcc" -O3 -arch="${ARCH:-sm_90}" -D"$param=$vec" -I"$work" -o "$exe" "$work/${fixture}_main.cu" > "$exe.log" 2>&1; then
      printf '%-16s %-26s FAIL (compile)\n' "$fixture" "$param=$vec"; head -15 "$exe.log"; failed=1; continue
    fi
    if result=$("$exe" 2>&1); then status=PASS; else status=FAIL; failed=1; fi
    printf '%-16s %-26s %s  (%s)\n' "$fixture" "$param=$vec" "$status" "$result"
  done
done
exit $failed
