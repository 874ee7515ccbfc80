#!/usr/bin/env bash
# GPU suite: kernels no program launches (a file being written), tuned with no hand edit on the
# launch their flat index asks for and the sizes templatize chose. For each case: `cutune
# templatize --write` (grid `ceil_div(count, BLOCK)`, the count 2^24), `cutune spec check` (which
# warns that the size is templatize's choice), `cutune tune --budget B` (the winner verified in
# five stages).
# A summary line per case goes to $OUT/summary.txt.
#   CUTUNE=target/release/cutune bash tests/gpu/unlaunched_suite.sh
suite=unlaunched
source "$(dirname "${BASH_SOURCE[0]}")/tune_case.sh"

# name | folder | file | kernel
CASES="scale_values|$repo/tests/fixtures/workspace/unlaunched_kernels|kernels.cu|scale_values
add_quads|$repo/tests/fixtures/workspace/unlaunched_kernels|kernels.cu|add_quads"

tune_cases "$CASES"
echo "== status $status"
exit $status
