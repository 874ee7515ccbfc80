#!/usr/bin/env bash
# GPU suite: kernels that take a struct by value, or a buffer of structs (passed as the bytes of
# the size the struct's definition lays out), tuned with no hand edit. For each case:
# `cutune templatize --write` (the members the kernel reads, with what the launcher assigns
# them), `cutune spec check`, `cutune tune --budget B` (the layout asked of NVRTC, the worker
# packs the struct's bytes; the winner is verified in five stages). `check_packing` traps when
# any member arrives at the wrong offset or size, so a packing mistake fails its tune.
# A summary line per case goes to $OUT/summary.txt.
#   CUTUNE=target/release/cutune bash tests/gpu/struct_suite.sh
suite=structs
source "$(dirname "${BASH_SOURCE[0]}")/tune_case.sh"

# name | folder | file | kernel
CASES="check_packing|$repo/tests/fixtures/structs|packing.cu|check_packing
scale_row_params|$repo/tests/fixtures/workspace/struct_params|rows.cu|scale_row_params
mix_params|$repo/tests/fixtures/workspace/struct_params|rows.cu|mix_params
shift_values|$repo/tests/fixtures/workspace/struct_params|rows.cu|shift_values
drift|$repo/tests/fixtures/workspace/struct_buffers|particles.cu|drift
mark_cells|$repo/tests/fixtures/workspace/struct_buffers|particles.cu|mark_cells
scale_solver_rows|$repo/tests/fixtures/workspace/filled_state|state.cu|scale_solver_rows"

tune_cases "$CASES"
# The control: a member given another value than main's traps the original, so the tune
# stops at the baseline. Were it to pass, the kernel's check could not catch a misplaced byte.
echo "== control"
ws="$work/check_packing"
sed -i 's/^value = "-3"$/value = "-4"/' "$ws/packing.cutune.toml"
(cd "$ws" && timeout 240 "$cutune" tune packing.cu --kernel check_packing --budget 2 --json > "$out/control.tune.json" 2> "$out/control.tune.err")
if grep -q "the baseline kernel could not be run: the kernel faulted" "$out/control.tune.err"; then
  echo "control: a wrong member value traps the original and stops the tune: $(grep -o 'the kernel faulted[^:]*' "$out/control.tune.err" | head -1)" | tee -a "$out/summary.txt"
else
  echo "control: a wrong member value did NOT stop the tune: $(tail -c 300 "$out/control.tune.err")" | tee -a "$out/summary.txt"
  status=1
fi
echo "== status $status"
exit $status
