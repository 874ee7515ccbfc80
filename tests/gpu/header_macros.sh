#!/usr/bin/env bash
# GPU check of macros the block and the kernel's code share (docs/templatize.md, "Macros of a
# header"): the workspace fixture tests/fixtures/workspace/header_macros has `sort_runs`, whose
# block is `SORT_LIMIT / 2` of config.h and whose shared keys are `SORT_LIMIT` long, and
# `stage_pixels`, whose `dim3` block and shared tile are config.h's `TILE_X` x `TILE_Y`.
# Templatized as a user would (config.h is not edited), each is tuned with a small budget: each
# must have a verified winner, and builds other than the program's must have run and passed
# (the slice guards the header's macros, so `-D` sets them).
#   CUTUNE=target/release/cutune bash tests/gpu/header_macros.sh
source "$(dirname "${BASH_SOURCE[0]}")/fixture.sh"
work="$(fixture_copy macros workspace/header_macros)"
cd "$work"
status=0
for case in "sort_runs.cu sort_runs" "stage.cuh stage_pixels"; do
  read -r file kernel <<< "$case"
  "$cutune" templatize "$file" --kernel "$kernel" --write > /dev/null 2>&1 || { echo "FAIL: templatize $kernel"; status=1; continue; }
  "$cutune" tune "$file" --kernel "$kernel" --budget 10 --json > "$out/macros_$kernel.json" 2> "$out/macros_$kernel.err" || { echo "FAIL: tune $kernel"; tail -3 "$out/macros_$kernel.err"; status=1; }
done
cmp -s "$work/config.h" "$repo/tests/fixtures/workspace/header_macros/config.h" || { echo "FAIL: config.h was edited"; status=1; }
python3 - "$out" <<'PY' || status=1
import json, sys
out, failed = sys.argv[1], False
for kernel, macros in (("sort_runs", {"SORT_LIMIT": 1024}), ("stage_pixels", {"TILE_X": 16, "TILE_Y": 8})):
    report = json.load(open(f"{out}/macros_{kernel}.json"))
    best, verification = report.get("best"), report.get("verification") or {"cases": []}
    statuses = [c["status"] for c in verification["cases"]]
    other_builds = [r for r in report["rows"] if r.get("time_us") is not None and any(dict(r["config"]).get(m) != v for m, v in macros.items())]
    ok = best is not None and statuses and all(s == "pass" for s in statuses) and other_builds
    failed |= not ok
    said = f"best {dict(best['config']) if best else None} {best['speedup'] if best else '-'}x, {len(other_builds)} other builds timed, verification {statuses}"
    print(("PASS" if ok else "FAIL") + f": {kernel}: {said}; rows {sorted(set(r['status'] for r in report['rows']))}")
sys.exit(1 if failed else 0)
PY
exit $status
