#!/usr/bin/env bash
# Build every example with nvcc and run it; one line per example:
#   NAME  PASS|FAIL  build=SECONDSs  run=SECONDSs
# Exits non-zero if any example fails to build, fails its check, or times out.
#
# Environment: NVCC (default: nvcc, else /usr/local/cuda/bin/nvcc), ARCH (default: sm_90), BUILD_DIR (default: a temp dir),
# TIMEOUT (seconds per run, default: 120). Arguments: example names to run (default: all).
set -u

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
nvcc="${NVCC:-nvcc}"
# The GPU machine's toolkit may not be on PATH.
if [ -z "${NVCC:-}" ] && ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  nvcc=/usr/local/cuda/bin/nvcc
fi
arch="${ARCH:-sm_90}"
timeout_s="${TIMEOUT:-120}"
build_dir="${BUILD_DIR:-$(mktemp -d -t cutune-examples.XXXXXX)}"
mkdir -p "$build_dir"

if ! command -v "$nvcc" >/dev/null 2>&1; then
  echo "run_all.sh: $nvcc not found (set NVCC=/path/to/nvcc)" >&2
  exit 2
fi

if [ "$#" -gt 0 ]; then
  names=("$@")
else
  names=()
  for f in "$here"/*.cu; do names+=("$(basename "$f" .cu)"); done
fi

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }

failed=0
for name in "${names[@]}"; do
  src="$here/$name.cu"
  exe="$build_dir/$name"
  log="$build_dir/$name.log"
  t0=$(now)
  if ! "$nvcc" -O3 -arch="$arch" -o "$exe" "$src" >"$log" 2>&1; then
    t1=$(now)
    printf '%-20s FAIL  build=%ss  (compile error, see %s)\n' "$name" "$(elapsed "$t0" "$t1")" "$log"
    sed 's/^/    /' "$log" | head -20
    failed=1
    continue
  fi
  t1=$(now)
  timeout "$timeout_s" "$exe" >>"$log" 2>&1
  rc=$?
  t2=$(now)
  if [ "$rc" -eq 0 ]; then status=PASS; else status=FAIL; failed=1; fi
  note=""
  [ "$rc" -eq 124 ] && note="  (timed out after ${timeout_s}s)"
  [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && note="  (exit $rc, see $log)"
  printf '%-20s %s  build=%ss  run=%ss%s\n' "$name" "$status" "$(elapsed "$t0" "$t1")" \
    "$(elapsed "$t1" "$t2")" "$note"
  # The example's own result lines (max_abs_err=... PASS|FAIL), indented.
  grep -E 'PASS|FAIL|error' "$log" | sed 's/^/    /'
done

exit "$failed"
