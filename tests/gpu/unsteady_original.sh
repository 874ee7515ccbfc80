#!/usr/bin/env bash
# GPU check that a tune whose every configuration gives wrong output says why when the original
# is not its own equal: the workspace fixture tests/fixtures/workspace/ping_pong's `merge_runs`
# merges runs it assumes sorted, and the spec's random input is not, so threads race for the
# same slots of `dst` and two runs of the original differ. Templatized as a user would, then
# tuned with a small budget; the report must name the original's second run, not only the
# configurations' wrong outputs.
#   CUTUNE=target/release/cutune bash tests/gpu/unsteady_original.sh
source "$(dirname "${BASH_SOURCE[0]}")/fixture.sh"
cd "$(fixture_copy unsteady workspace/ping_pong)"
"$cutune" templatize merge_steps.cuh --kernel merge_runs --write > /dev/null 2>&1 || { echo "FAIL: templatize merge_runs"; exit 1; }
"$cutune" tune merge_steps.cuh --kernel merge_runs --budget 6 --json > "$out/unsteady_merge_runs.json" 2> "$out/unsteady_merge_runs.err" || { echo "FAIL: tune merge_runs"; tail -3 "$out/unsteady_merge_runs.err"; exit 1; }
python3 - "$out/unsteady_merge_runs.json" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
why = report.get("unsteady_original") or ""
ok = report.get("best") is None and why.startswith("the original gives another output on a second run of the same input (`dst`[")
print(("PASS" if ok else "FAIL") + f": merge_runs: failures {report.get('failures')}, unsteady_original: {why!r}")
sys.exit(0 if ok else 1)
PY
