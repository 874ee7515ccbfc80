#!/usr/bin/env bash
# GPU check that a tune whose original writes past a buffer on the spec's own problem stops with
# that reason, instead of timing every configuration to report each writing out of bounds (as an
# index input filled at random gives mmcv's `active_rotated_filter_forward_cuda_kernel`): the
# fault suite's correct kernel, its output 64 elements shorter in the spec than it writes.
#   CUTUNE=target/release/cutune bash tests/gpu/original_out_of_bounds.sh
source "$(dirname "${BASH_SOURCE[0]}")/fixture.sh"
cd "$(fixture_copy out_of_bounds faults)"
python3 - <<'PY'
import re
path = "faults.cutune.toml"
text = open(path).read()
text, count = re.subn(r'(name = "out"\ndtype = "f32"\nlength = )"n"', r'\g<1>"n - 64"', text)
assert count == 1, "the output's length was not found"
open(path, "w").write(text)
PY
"$cutune" tune faults.cu --kernel faulty --budget 3 --json > "$out/original_out_of_bounds.json" 2> "$out/original_out_of_bounds.err"
rc=$?
python3 - "$rc" "$out/original_out_of_bounds.err" <<'PY'
import sys
rc, err = int(sys.argv[1]), open(sys.argv[2]).read()
ok = rc != 0 and "the original writes out of bounds on problem `n=1048576`: 256 bytes after the end of `out` changed" in err
print(("PASS" if ok else "FAIL") + f": exit {rc}: {err.strip()[-400:]}")
sys.exit(0 if ok else 1)
PY
