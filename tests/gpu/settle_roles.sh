#!/usr/bin/env bash
# GPU check of the roles the worker settles (docs/sol.md, "Roles the worker settles"): the
# fixture tests/fixtures/roles/written_then_read.cu has two kernels whose bodies both read and
# write `out`; `squash` writes each element before reading it back, `accumulate` adds to it.
# Templatized as a user would, each is tuned with a small budget; `squash`'s report must say
# that `out` is written only (and its bound count `out` once), `accumulate`'s must not.
#   CUTUNE=target/release/cutune bash tests/gpu/settle_roles.sh
source "$(dirname "${BASH_SOURCE[0]}")/fixture.sh"
work="$(fixture_copy roles roles/written_then_read.cu)"
status=0
for kernel in squash accumulate; do
  "$cutune" templatize "$work/written_then_read.cu" --kernel "$kernel" --write > /dev/null 2>&1 || { echo "FAIL: templatize $kernel"; status=1; }
done
for kernel in squash accumulate; do
  "$cutune" tune "$work/written_then_read.cu" --kernel "$kernel" --budget 4 --workspace "$work/ws" --json > "$out/roles_$kernel.json" 2> "$out/roles_$kernel.err" \
    || { echo "FAIL: tune $kernel"; tail -5 "$out/roles_$kernel.err"; status=1; }
done
python3 - "$out" <<'PY' || status=1
import json, sys
out = sys.argv[1]
failed = False
for kernel, expected in (("squash", ["out"]), ("accumulate", [])):
    report = json.load(open(f"{out}/roles_{kernel}.json"))
    roles, sol = report.get("roles"), report.get("sol") or {}
    got = roles.get("buffers") if roles and roles.get("settled") == "written_only" else None
    # n = 2^24 floats: `in` read once, `out` written once (squash) or read and written (accumulate).
    n = 1 << 24
    bytes_expected = 4 * n * (2 if expected else 3)
    ok = got == expected and abs(sol.get("bytes", 0) - bytes_expected) < 1
    failed |= not ok
    best = report.get("best") or {}
    print(f"{'PASS' if ok else 'FAIL'}: {kernel}: roles {roles}, bound {sol.get('bound_us', 0):.2f} us over {sol.get('bytes', 0):.0f} bytes "
          f"(expected {bytes_expected}); baseline {report.get('baseline_us') or 0:.2f} us, best {best.get('time_us') or 0:.2f} us at {best.get('sol_percent') or 0:.0f}% SOL")
sys.exit(1 if failed else 0)
PY
exit $status
