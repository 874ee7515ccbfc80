#!/usr/bin/env bash
# GPU suite: kernels launched through dispatch macros of a header (one found in a folder the
# build adds with `-I`; two lambdas of one launcher each holding its own `auto kernel`), or with
# the constants of a guarded header, or from inside a library's namespace (NVRTC asked for the
# kernel the slice names at file scope), tuned with no hand edit. For each case: `cutune templatize
# --write` (the `case` the program takes gives the template arguments; `cudaLaunchKernelEx`
# through a kernel variable gives the grid and block), `cutune spec check`, `cutune tune
# --budget B` (the winner verified in five stages).
# A summary line per case goes to $OUT/summary.txt.
#   CUTUNE=target/release/cutune bash tests/gpu/dispatch_suite.sh
suite=dispatch
source "$(dirname "${BASH_SOURCE[0]}")/tune_case.sh"

# name | folder | file | kernel
CASES="scale_rows_vec|$repo/tests/fixtures/workspace/dispatch_blocks|rows.cuh|scale_rows_vec
negate_rows|$repo/tests/fixtures/workspace/dispatch_blocks|rows.cuh|negate_rows
blend|$repo/tests/fixtures/workspace/dispatch_blocks|blend.cu|blend
shift_rows|$repo/tests/fixtures/workspace/dispatch_blocks|contrib/shift.cu|shift_rows
row_sums|$repo/tests/fixtures/workspace/dispatch_blocks|rows.cuh|row_sums
divide_by_sums|$repo/tests/fixtures/workspace/dispatch_blocks|rows.cuh|divide_by_sums
write_ramp|$repo/tests/fixtures/workspace/guarded_constants|kernels.cuh|write_ramp
thread_stacks|$repo/tests/fixtures/workspace/guarded_constants|kernels.cuh|thread_stacks
widen|$repo/tests/fixtures/workspace/namespaced_kernels|convert.cu|widen
narrow|$repo/tests/fixtures/workspace/namespaced_kernels|convert.cu|narrow"

tune_cases "$CASES"
echo "== status $status"
exit $status
