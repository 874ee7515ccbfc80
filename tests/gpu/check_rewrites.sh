#!/usr/bin/env bash
# GPU suite: templatize every example with the cutune binary, build the result with nvcc for
# each value of its parameters (one parameter at a time, plus the strategy parameters together
# with other block sizes), and run it against the example's own CPU reference on several
# shapes, non-power-of-two ones included. One line per build:
#   EXAMPLE  NAME=VALUE ...  PASS|FAIL  then the example's result lines.
# Exits non-zero if any build or check fails. Needs a GPU and nvcc; run it on the lent machine:
#   CUTUNE=target/release/cutune bash tests/gpu/check_rewrites.sh
set -u

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cutune="${CUTUNE:-$repo/target/release/cutune}"
nvcc="${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}"
arch="${ARCH:-sm_90}"
work="${WORK_DIR:-$(mktemp -d -t cutune-rewrites.XXXXXX)}"
mkdir -p "$work"

# example kernel "NAME=VALUE ..." builds; an empty set is the templatized file at its defaults.
cases=(
  "rmsnorm rmsnorm_kernel|;RMSNORM_VEC=2;RMSNORM_VEC=4;RMSNORM_VEC=8;RMSNORM_VEC=8 BLOCK_SIZE=128;RMSNORM_VEC=4 BLOCK_SIZE=1024;RMSNORM_WARP_SHUFFLE=1;RMSNORM_WARP_SHUFFLE=1 BLOCK_SIZE=32;RMSNORM_WARP_SHUFFLE=1 BLOCK_SIZE=1024 RMSNORM_VEC=8;RMSNORM_VEC=8 RMSNORM_ROW_REGS=1;RMSNORM_VEC=8 RMSNORM_ROW_REGS=4 BLOCK_SIZE=128;RMSNORM_VEC=2 RMSNORM_ROW_REGS=8 BLOCK_SIZE=32"
  "fused_add_rmsnorm fused_add_rmsnorm_kernel|;FUSED_ADD_RMSNORM_VEC=2;FUSED_ADD_RMSNORM_VEC=4;FUSED_ADD_RMSNORM_VEC=8;FUSED_ADD_RMSNORM_VEC=8 FUSED_ADD_RMSNORM_BLOCK_SIZE=256;FUSED_ADD_RMSNORM_VEC=8 FUSED_ADD_RMSNORM_ROW_REGS=1;FUSED_ADD_RMSNORM_VEC=8 FUSED_ADD_RMSNORM_ROW_REGS=8 FUSED_ADD_RMSNORM_BLOCK_SIZE=128;FUSED_ADD_RMSNORM_VEC=4 FUSED_ADD_RMSNORM_ROW_REGS=2 FUSED_ADD_RMSNORM_BLOCK_SIZE=256"
  "layernorm layernorm_kernel|;LAYERNORM_VEC=2;LAYERNORM_VEC=4;LAYERNORM_VEC=8;LAYERNORM_VEC=8 LAYERNORM_BLOCK_SIZE=128;LAYERNORM_VEC=8 LAYERNORM_ROW_REGS=2;LAYERNORM_VEC=8 LAYERNORM_ROW_REGS=4 LAYERNORM_BLOCK_SIZE=128;LAYERNORM_VEC=2 LAYERNORM_ROW_REGS=8 LAYERNORM_BLOCK_SIZE=64"
  "softmax softmax_kernel|;SOFTMAX_VEC=2;SOFTMAX_VEC=4;SOFTMAX_VEC=8;SOFTMAX_VEC=4 SOFTMAX_BLOCK_SIZE=256;SOFTMAX_ONLINE=1;SOFTMAX_ONLINE=1 SOFTMAX_VEC=8;SOFTMAX_ONLINE=1 SOFTMAX_VEC=2 SOFTMAX_BLOCK_SIZE=256;SOFTMAX_ONLINE=1 SOFTMAX_BLOCK_SIZE=32;SOFTMAX_VEC=8 SOFTMAX_ROW_REGS=8;SOFTMAX_VEC=4 SOFTMAX_ROW_REGS=2 SOFTMAX_BLOCK_SIZE=256;SOFTMAX_ONLINE=1 SOFTMAX_VEC=8 SOFTMAX_ROW_REGS=8;SOFTMAX_ONLINE=1 SOFTMAX_VEC=2 SOFTMAX_ROW_REGS=4 SOFTMAX_BLOCK_SIZE=256;SOFTMAX_ONLINE=2;SOFTMAX_ONLINE=2 SOFTMAX_VEC=8;SOFTMAX_ONLINE=2 SOFTMAX_VEC=8 SOFTMAX_ROW_REGS=7;SOFTMAX_ONLINE=2 SOFTMAX_VEC=8 SOFTMAX_ROW_REGS=4 SOFTMAX_BLOCK_SIZE=512;SOFTMAX_ONLINE=2 SOFTMAX_VEC=2 SOFTMAX_BLOCK_SIZE=32"
  "silu_and_mul silu_and_mul_kernel|;SILU_AND_MUL_ITEMS_PER_THREAD=2;SILU_AND_MUL_ITEMS_PER_THREAD=4;SILU_AND_MUL_ITEMS_PER_THREAD=16;SILU_AND_MUL_ITEMS_PER_THREAD=8 SILU_AND_MUL_BLOCK_SIZE=1024;SILU_AND_MUL_VEC=2;SILU_AND_MUL_VEC=4;SILU_AND_MUL_VEC=8;SILU_AND_MUL_VEC=8 SILU_AND_MUL_ITEMS_PER_THREAD=4 SILU_AND_MUL_BLOCK_SIZE=128"
  "block_reduce block_reduce_sum_kernel|;BLOCK_REDUCE_SUM_ITEMS_PER_THREAD=2;BLOCK_REDUCE_SUM_ITEMS_PER_THREAD=8;BLOCK_REDUCE_SUM_ITEMS_PER_THREAD=16 BLOCK=512;BLOCK_REDUCE_SUM_WARP_SHUFFLE=1;BLOCK_REDUCE_SUM_WARP_SHUFFLE=1 BLOCK=32;BLOCK_REDUCE_SUM_WARP_SHUFFLE=1 BLOCK=1024 BLOCK_REDUCE_SUM_ITEMS_PER_THREAD=8;BLOCK_REDUCE_SUM_VEC=4;BLOCK_REDUCE_SUM_VEC=2 BLOCK_REDUCE_SUM_ITEMS_PER_THREAD=4 BLOCK_REDUCE_SUM_WARP_SHUFFLE=1"
  "transpose transpose_kernel|;TRANSPOSE_PAD_TILE=1;TILE_DIM=16 BLOCK_ROWS=4;TILE_DIM=64 BLOCK_ROWS=16 TRANSPOSE_PAD_TILE=1"
  "sgemm sgemm_kernel|;SGEMM_PAD_AS=1 SGEMM_PAD_BS=1;TILE=32;SGEMM_UNROLL=4;SGEMM_TM=2;SGEMM_TN=4;SGEMM_TM=4 SGEMM_TN=4;TILE=64 SGEMM_TM=8 SGEMM_TN=8 SGEMM_PAD_AS=1;TILE=64 SGEMM_TM=4 SGEMM_TN=8;TILE=32 SGEMM_TM=8 SGEMM_TN=2 SGEMM_UNROLL=4;TILE=8 SGEMM_TM=8 SGEMM_TN=8"
  "merge_attn_states merge_attn_states_kernel|;MERGE_ATTN_STATES_BLOCK_SIZE=256;MERGE_ATTN_STATES_VEC=2;MERGE_ATTN_STATES_VEC=4;MERGE_ATTN_STATES_VEC=8;MERGE_ATTN_STATES_VEC=8 MERGE_ATTN_STATES_BLOCK_SIZE=1024"
)

failed=0
jobs_max="${JOBS:-$(nproc)}"
builds=()  # "example|label|exe|src" in order
for case in "${cases[@]}"; do
  head="${case%%|*}"; sets_text="${case#*|}"
  example="${head% *}"; kernel="${head#* }"
  src="$work/$example.cu"
  if ! "$cutune" templatize "$repo/examples/$example.cu" --kernel "$kernel" >"$src" 2>"$work/$example.templatize.log"; then
    echo "$example  templatize FAIL"; sed 's/^/    /' "$work/$example.templatize.log"; failed=1; continue
  fi
  IFS=';' read -r -a sets <<<"$sets_text"
  for set in "${sets[@]}"; do
    label="${set:-defaults}"
    exe="$work/$example-$(echo "$label" | tr ' =' '__')"
    builds+=("$example|$label|$exe|$src")
    defines=()
    for kv in $set; do defines+=("-D$kv"); done
    # Builds run in parallel; the runs below go one at a time, so timings are not disturbed.
    while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do wait -n; done
    ( "$nvcc" -O3 -arch="$arch" "${defines[@]}" -o "$exe" "$src" >"$exe.log" 2>&1 || touch "$exe.failed" ) &
  done
done
wait

for build in "${builds[@]}"; do
  IFS='|' read -r example label exe src <<<"$build"
  if [ -e "$exe.failed" ]; then
    printf '%-18s %-48s FAIL (compile)\n' "$example" "$label"; sed 's/^/    /' "$exe.log" | head -15; failed=1; continue
  fi
  if timeout 120 "$exe" >>"$exe.log" 2>&1; then status=PASS; else status=FAIL; failed=1; fi
  printf '%-18s %-48s %s\n' "$example" "$label" "$status"
  grep -E 'max_abs_err|FAIL|error' "$exe.log" | sed 's/^/    /'
done

# Rows per block has no example whose launch passes the row count: its fixture, at its edges.
echo "rows per block (tests/fixtures/template/rows_per_block.cu):"
CUTUNE="$cutune" NVCC="$nvcc" SKIP_TUNE=1 bash "$repo/tests/gpu/check_rows_per_block.sh" | sed 's/^/  /'
[ "${PIPESTATUS[0]}" = 0 ] || failed=1
exit $failed
