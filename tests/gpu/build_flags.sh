#!/usr/bin/env bash
# GPU check of a kernel whose parameter list and launch arguments change with the build
# (docs/templatize.md, the host-code table): the workspace fixture tests/fixtures/workspace/build_flags
# has `pad_rows`, with `#ifndef FIXED_ROWS` and `#if ADD_BIAS` inside both lists, `ADD_BIAS`
# defined in the kernel's header. Templatized as a user would, it is tuned with a small budget:
# the worker must pass the arguments the build compiles (a bias among them), so the original
# runs, a winner is verified in five stages, and other block sizes were timed.
#   CUTUNE=target/release/cutune bash tests/gpu/build_flags.sh
source "$(dirname "${BASH_SOURCE[0]}")/fixture.sh"
work="$(fixture_copy build_flags workspace/build_flags)"
cd "$work"
status=0
"$cutune" templatize pad_rows.cuh --kernel pad_rows --write > /dev/null 2>&1 || { echo "FAIL: templatize pad_rows"; exit 1; }
"$cutune" tune pad_rows.cuh --kernel pad_rows --budget 10 --json > "$out/build_flags.json" 2> "$out/build_flags.err" || { echo "FAIL: tune pad_rows"; tail -3 "$out/build_flags.err"; status=1; }
python3 - "$out/build_flags.json" <<'PY' || status=1
import json, sys
report = json.load(open(sys.argv[1]))
best, verification = report.get("best"), report.get("verification") or {"cases": []}
statuses = [c["status"] for c in verification["cases"]]
other_blocks = [r for r in report["rows"] if r.get("time_us") is not None and dict(r["config"]).get("PAD_ROWS_BLOCK_SIZE") != 256]
ok = best is not None and statuses and all(s == "pass" for s in statuses) and other_blocks
said = f"best {dict(best['config']) if best else None} {best['speedup'] if best else '-'}x, {len(other_blocks)} other blocks timed, verification {statuses}"
print(("PASS" if ok else "FAIL") + f": pad_rows: {said}; rows {sorted(set(r['status'] for r in report['rows']))}")
sys.exit(0 if ok else 1)
PY
exit $status
