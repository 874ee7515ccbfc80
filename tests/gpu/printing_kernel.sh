#!/usr/bin/env bash
# GPU check: a kernel that calls `printf` tunes like any other. The driver writes device
# `printf` to the process's standard output, which for the worker was the pipe its responses
# go through ("the worker wrote something that is not a response: ` Sum of all ranks …`" on
# cuda-samples' simpleCooperativeGroups); the worker now answers on its own handle.
#   CUTUNE=target/release/cutune bash tests/gpu/printing_kernel.sh
set -u
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cutune="$(realpath "${CUTUNE:-$repo/target/release/cutune}")"
out="${OUT:-$repo/gpu-out}"
mkdir -p "$out"
work="$(mktemp -d -t cutune-printing.XXXXXX)"
trap 'rm -rf "$work"' EXIT
cp -r "$repo/tests/fixtures/printing/." "$work/" && mkdir -p "$work/.git"
cd "$work"
"$cutune" templatize printing.cu --kernel scale_and_report --write > /dev/null 2>&1 || { echo "FAIL: templatize"; exit 1; }
"$cutune" tune printing.cu --kernel scale_and_report --budget 6 --json > "$out/printing_tune.json" 2> "$out/printing_tune.err"
python3 - "$out/printing_tune.json" "$out/printing_tune.err" <<'PY'
import json, sys
try:
    report = json.load(open(sys.argv[1]))
except Exception as e:
    print(f"FAIL: no report ({e}); {open(sys.argv[2]).read()[-600:]}"); sys.exit(1)
best, failures = report.get("best"), report.get("failures", {})
print(f"{'PASS' if best and not failures else 'FAIL'}: baseline {report.get('baseline_us')} us, best {best and best['config']}, "
      f"failures {failures}, verification {len((report.get('verification') or {}).get('cases', []))} cases")
sys.exit(0 if best and not failures else 1)
PY
