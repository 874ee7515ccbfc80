#!/usr/bin/env bash
# GPU suite of `cutune compare`: other implementations of examples/rmsnorm.cu's kernel
# (tests/fixtures/compare/) against the original, each timed in the same run and verified:
#   rmsnorm_fast           hand-written, faster: verified, speedup above 1;
#   rmsnorm_wrong          drops the weight of each row's last element: not verified, the
#                          failure names the element (`out`[4095]) and its values;
#   rmsnorm_out_of_bounds  writes one element past the output: caught by the guard bytes.
# One line per case with its JSON; exits non-zero if a case does not come out as expected.
#   CUTUNE=target/release/cutune OUT=$OUT bash tests/gpu/compare_suite.sh
set -u
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo"
cutune="${CUTUNE:-$repo/target/release/cutune}"
out="${OUT:-$repo/gpu-out}"
mkdir -p "$out"
work="$(mktemp -d -t cutune-compare.XXXXXX)"
cp examples/rmsnorm.cu examples/rmsnorm.cutune.toml "$work/"

status=0
for case in "rmsnorm_fast:rmsnorm_fast" "rmsnorm_wrong:rmsnorm_kernel" "rmsnorm_out_of_bounds:rmsnorm_kernel"; do
  name="${case%%:*}"; kernel="${case#*:}"
  "$cutune" compare "$work/rmsnorm.cu" --kernel rmsnorm_kernel --candidate "tests/fixtures/compare/$name.cu:$kernel" --json \
    > "$out/compare_$name.json" 2> "$out/compare_$name.err"
  python3 - "$name" "$out/compare_$name.json" "$out/compare_$name.err" <<'PY' || status=1
import json, re, sys
name, path, err = sys.argv[1:]
try:
    c = json.load(open(path))
except ValueError:
    print(f"{name}: no result: {open(err).read()[-600:]}")
    sys.exit(1)
print(f"{name}: {json.dumps(c)}")
failure = (c["failure"] or "").lower()
expected = {
    "rmsnorm_fast": c["verified"] and c["speedup"] and c["speedup"] > 1.0,
    "rmsnorm_wrong": not c["verified"] and re.search(r"`out`\[\d+\]", failure) is not None,
    "rmsnorm_out_of_bounds": not c["verified"] and ("out of bounds" in failure or "guard" in failure or "past" in failure),
}[name]
sys.exit(0 if expected else 1)
PY
done
exit $status
