#!/usr/bin/env bash
# GPU check of kernels the program sizes by what the device reports (docs/templatize.md, the
# host-code table): tests/fixtures/workspace/host_values/probe.cu spins for `ms * clockRate`
# cycles, sweeps a buffer of the L2's size over `maxGridSize[1]` blocks, and counts in a
# `__shared__` scalar with a `dim3` block of numbers. Templatized as a user would, each is tuned
# with a small budget on the lent GPU, whose own clock and L2 the worker reads: the spin's
# original takes about `ms` (2 ms at the GPU's clock), and the two others reach a winner
# verified in five stages, with other blocks timed.
#   CUTUNE=target/release/cutune bash tests/gpu/device_properties.sh
source "$(dirname "${BASH_SOURCE[0]}")/fixture.sh"
work="$(fixture_copy device_properties workspace/host_values)"
cd "$work"
status=0
for kernel in spin sweep_cache count_positive; do
    "$cutune" templatize probe.cu --kernel "$kernel" --write > /dev/null 2>&1 || { echo "FAIL: templatize $kernel"; exit 1; }
done
for kernel in spin sweep_cache count_positive; do
    budget=10
    [ "$kernel" = spin ] && budget=3
    "$cutune" tune probe.cu --kernel "$kernel" --budget "$budget" --json > "$out/device_properties_$kernel.json" 2> "$out/device_properties_$kernel.err" || { echo "FAIL: tune $kernel"; tail -3 "$out/device_properties_$kernel.err"; status=1; continue; }
    python3 - "$out/device_properties_$kernel.json" "$kernel" <<'PY' || status=1
import json, sys
report, kernel = json.load(open(sys.argv[1])), sys.argv[2]
best, verification = report.get("best"), report.get("verification") or {"cases": []}
statuses = [c["status"] for c in verification["cases"]]
timed = [r for r in report["rows"] if r.get("time_us") is not None]
baseline = report.get("baseline_us") or 0
if kernel == "spin":
    ok = 1000 <= baseline <= 10000
    said = f"the original spins {baseline:.0f} us for `ms * clock_khz` cycles (ms = 2) on {report['device']}"
else:
    ok = best is not None and statuses and all(s == "pass" for s in statuses) and len(timed) > 1
    said = f"best {dict(best['config']) if best else None} {best['speedup'] if best else '-'}x of {baseline:.1f} us, {len(timed)} configurations timed, verification {statuses}"
print(("PASS" if ok else "FAIL") + f": {kernel}: {said}")
sys.exit(0 if ok else 1)
PY
done
exit $status
