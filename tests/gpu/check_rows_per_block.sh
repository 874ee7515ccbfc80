#!/usr/bin/env bash
# GPU suite of the rows-per-block rewrite (issue 16), in two parts:
# 1. Correctness at its edges: tests/fixtures/template/rows_per_block.cu templatized by the
#    cutune binary, built with nvcc for rows per block 1 to 16 with other parameters, and run by
#    a driver of this script against a CPU reference on row counts that rows per block does not
#    divide (the rows past the end return) and row lengths that are not whole warps or vectors.
#    One line per build:  NAME=VALUE ...  PASS|FAIL  (worst relative difference)
# 2. What it is worth: the fixture with a `main` of 65,536 short rows (128 and 512 halves)
#    templatized and tuned as a user would (`templatize --write`, `spec check`, `tune`), once
#    with rows per block held at 1 and once free, each winner verified in five stages.
#    One line per tune (tests/gpu/tune_line.py).
# Exits non-zero if a build, a check or a tune fails. SKIP_TUNE=1 runs the first part only.
#   CUTUNE=target/release/cutune BUDGET=60 bash tests/gpu/check_rows_per_block.sh
set -u
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cutune="${CUTUNE:-$repo/target/release/cutune}"
nvcc="${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}"
budget="${BUDGET:-60}"
out="${OUT:-$(mktemp -d -t cutune-rows-out.XXXXXX)}"
work="$(mktemp -d -t cutune-rows.XXXXXX)"
failed=0

fixture="$repo/tests/fixtures/template/rows_per_block.cu"
"$cutune" templatize "$fixture" --kernel rms_rows > "$work/rms_rows.cu" 2> "$work/templatize.log" || { cat "$work/templatize.log"; exit 1; }
grep -q RMS_ROWS_ROWS_PER_BLOCK "$work/rms_rows.cu" || { echo "rows-per-block was not applied"; cat "$work/templatize.log"; exit 1; }

cat > "$work/main.cu" <<'CU'
#include <cuda_fp16.h>
#include <cmath>
#include <cstdio>
#include <vector>
#include "rms_rows.cu"
int main() {
  double worst = 0;
  int bad = 0;
  for (int rows : {1, 3, 37, 1001}) {
    for (int hidden : {1, 100, 128, 4099}) {
      const size_t n = (size_t)rows * hidden;
      std::vector<__half> x(n), w(hidden), y(n);
      for (size_t i = 0; i < n; ++i) x[i] = __float2half((float)((i * 7919) % 61) / 30.f - 1.f);
      for (int c = 0; c < hidden; ++c) w[c] = __float2half(0.5f + (c % 5) * 0.25f);
      __half *dx, *dw, *dy;
      // One row more than asked, poisoned: a row past the end that ran would write there.
      cudaMalloc(&dx, (n + hidden) * sizeof(__half)); cudaMalloc(&dw, hidden * sizeof(__half)); cudaMalloc(&dy, (n + hidden) * sizeof(__half));
      cudaMemset(dx, 0, (n + hidden) * sizeof(__half));
      cudaMemset(dy, 0xff, (n + hidden) * sizeof(__half));
      cudaMemcpy(dx, x.data(), n * sizeof(__half), cudaMemcpyHostToDevice);
      cudaMemcpy(dw, w.data(), hidden * sizeof(__half), cudaMemcpyHostToDevice);
      run(dy, dx, dw, rows, hidden, 1e-6f);
      std::vector<__half> tail(hidden);
      cudaMemcpy(y.data(), dy, n * sizeof(__half), cudaMemcpyDeviceToHost);
      cudaMemcpy(tail.data(), dy + n, hidden * sizeof(__half), cudaMemcpyDeviceToHost);
      for (int c = 0; c < hidden; ++c) if (*reinterpret_cast<unsigned short*>(&tail[c]) != 0xffff) { ++bad; break; }
      for (int r = 0; r < rows; ++r) {
        double sum = 0;
        for (int c = 0; c < hidden; ++c) { double v = __half2float(x[(size_t)r * hidden + c]); sum += v * v; }
        const double inv = 1.0 / std::sqrt(sum / hidden + 1e-6);
        for (int c = 0; c < hidden; ++c) {
          const double want = __half2float(x[(size_t)r * hidden + c]) * inv * __half2float(w[c]);
          const double got = __half2float(y[(size_t)r * hidden + c]);
          const double err = std::fabs(got - want) / (std::fabs(want) + 1e-2);
          if (!(err < 1e-2)) ++bad;
          if (err > worst) worst = err;
        }
      }
      cudaFree(dx); cudaFree(dw); cudaFree(dy);
    }
  }
  printf("mismatches %d, worst relative difference %.2e, %s\n", bad, worst, cudaGetErrorString(cudaGetLastError()));
  return bad || cudaGetLastError() != cudaSuccess ? 1 : 0;
}
CU

sets=(
  ""
  "RMS_ROWS_ROWS_PER_BLOCK=2"
  "RMS_ROWS_ROWS_PER_BLOCK=4 THREADS=32"
  "RMS_ROWS_ROWS_PER_BLOCK=8 THREADS=64 RMS_ROWS_WARP_SHUFFLE=1"
  "RMS_ROWS_ROWS_PER_BLOCK=16 THREADS=32 RMS_ROWS_VEC=8"
  "RMS_ROWS_ROWS_PER_BLOCK=4 THREADS=256 RMS_ROWS_VEC=4 RMS_ROWS_WARP_SHUFFLE=1"
  "RMS_ROWS_ROWS_PER_BLOCK=8 THREADS=128 RMS_ROWS_VEC=2"
  "RMS_ROWS_ROWS_PER_BLOCK=32 THREADS=32 RMS_ROWS_WARP_SHUFFLE=1 RMS_ROWS_VEC=4"
  "RMS_ROWS_ROWS_PER_BLOCK=32 THREADS=32"
)
for set in "${sets[@]}"; do
  label="${set:-defaults}"
  exe="$work/rows-$(echo "$label" | tr ' =' '__')"
  defines=()
  for kv in $set; do defines+=("-D$kv"); done
  if ! "$nvcc" -O3 -arch=sm_90 "${defines[@]}" -I"$work" -o "$exe" "$work/main.cu" > "$exe.log" 2>&1; then
    printf '%-72s FAIL (compile)\n' "$label"; sed 's/^/    /' "$exe.log" | head -15; failed=1; continue
  fi
  if timeout 120 "$exe" >> "$exe.log" 2>&1; then status=PASS; else status=FAIL; failed=1; fi
  printf '%-72s %s  (%s)\n' "$label" "$status" "$(tail -1 "$exe.log")"
done

[ "${SKIP_TUNE:-0}" = 1 ] && exit $failed
# The worth of it, tuned as a user would.
for hidden in 128 512; do
  copy="$work/tune_$hidden"
  mkdir -p "$copy"
  { cat "$fixture"; cat <<CU

int main() {
    const int rows = 65536, hidden = $hidden;
    half *out, *in, *weight;
    cudaMalloc(&out, (size_t)rows * hidden * sizeof(half));
    cudaMalloc(&in, (size_t)rows * hidden * sizeof(half));
    cudaMalloc(&weight, hidden * sizeof(half));
    run(out, in, weight, rows, hidden, 1e-6f);
    cudaDeviceSynchronize();
    return 0;
}
CU
  } > "$copy/rms_rows.cu"
  (cd "$copy" && "$cutune" templatize rms_rows.cu --kernel rms_rows --write > /dev/null 2> templatize.log) || { echo "templatize failed"; cat "$copy/templatize.log"; failed=1; continue; }
  for rows_values in one free; do
    case="$copy/$rows_values"
    mkdir -p "$case" && cp "$copy/rms_rows.cu" "$copy/rms_rows.cutune.toml" "$case/"
    if [ "$rows_values" = one ]; then
      # Rows per block held at its default: the best the other parameters reach alone.
      python3 - "$case/rms_rows.cutune.toml" <<'PY'
import re, sys
path = sys.argv[1]
text = open(path).read()
text = re.sub(r'(name = "RMS_ROWS_ROWS_PER_BLOCK"\nkind = "define"\ndefault = 1\nvalues = )\[[^\]]*\]', r'\1[1]', text)
open(path, "w").write(text)
PY
    fi
    log="$out/rows_${hidden}_${rows_values}"
    (cd "$case" && "$cutune" spec check rms_rows.cu) > "$log.spec_check.txt" 2>&1
    (cd "$case" && "$cutune" tune rms_rows.cu --kernel rms_rows --budget "$budget" --json) > "$log.tune.json" 2> "$log.tune.err"
    python3 "$repo/tests/gpu/tune_line.py" "65536x$hidden rows per block $rows_values" "$log" || failed=1
  done
done
exit $failed
