#!/usr/bin/env bash
# GPU suite: public programs that stop at the spec when read statically (their sizes, types or
# block sizes are chosen at run time), taken to a tuned and verified kernel through a capture,
# with no hand edit. For each case: build the program with nvcc, `cutune profile --kernel K
# --capture` it, `cutune templatize --write` (which reads the capture), `cutune spec check`,
# `cutune tune --budget B` (verifying the winner in five stages). A summary line per case goes
# to $OUT/summary.txt.
#
# Needs the corpus (not part of this repository; see docs/templatize.md): CORPUS is the folder
# holding NVIDIA/cuda-samples' `Common` and `Samples`.
#   CUTUNE=target/gpu/cutune CORPUS=.corpus/cuda-samples bash tests/gpu/capture_corpus.sh
# A step piped into `tee` fails the suite when the step fails, not only when `tee` does.
set -u -o pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cutune="$(realpath "${CUTUNE:-$repo/target/release/cutune}")"
corpus="$(realpath "${CORPUS:?CORPUS names the cuda-samples folder}")"
out="$(realpath -m "${OUT:-$repo/gpu-out}")"
budget="${BUDGET:-30}"
mkdir -p "$out"
work="$(mktemp -d -t cutune-capture-corpus.XXXXXX)"
concepts="$corpus/Samples/2_Concepts_and_Techniques"
status=0

# name | sample folder | sources to build | program arguments | kernel | file defining it
CASES="reduce6|reduction|reduction.cpp reduction_kernel.cu|--kernel=6|reduce6|reduction_kernel.cu
reduce7|reduction|reduction.cpp reduction_kernel.cu||reduce7|reduction_kernel.cu
reduceSinglePass|threadFenceReduction|threadFenceReduction.cu||reduceSinglePass|threadFenceReduction_kernel.cuh"

while IFS='|' read -r name folder sources arguments kernel file; do
  echo "== $name"
  ws="$work/$name"
  cp -r "$concepts/$folder" "$ws" && mkdir -p "$ws/.git"
  log="$out/$name"
  (cd "$ws" && nvcc -O3 -I"$corpus/Common" -o program $sources) > "$log.build" 2>&1 || { echo "$name: build failed" | tee -a "$out/summary.txt"; status=1; continue; }
  static=$(cd "$ws" && "$cutune" templatize "$file" --kernel "$kernel" --diff 2>/dev/null > "$log.static.diff"; "$cutune" survey . --json 2>/dev/null | python3 -c "
import json, sys
k = [k for k in json.load(sys.stdin)['kernels'] if k['kernel'] == '$kernel'][0]
print(k['stage'], len(k.get('spec_problems') or []))")
  (cd "$ws" && "$cutune" profile --root . --kernel "$kernel" --json -- ./program $arguments > "$log.profile.json" 2> "$log.profile.err") || { echo "$name: profile failed" | tee -a "$out/summary.txt"; status=1; continue; }
  (cd "$ws" && "$cutune" templatize "$file" --kernel "$kernel" --write 2> "$log.templatize.err" && cp "${file%.*}.cutune.toml" "$log.cutune.toml")
  (cd "$ws" && "$cutune" spec check "${file%.*}.cutune.toml" > "$log.spec_check.txt" 2>&1) || status=1
  (cd "$ws" && timeout 240 "$cutune" tune "$file" --kernel "$kernel" --budget "$budget" --json > "$log.tune.json" 2> "$log.tune.err")
  profiled=$(python3 -c "
import json, sys
profile = json.load(open('$log.profile.json'))
ours = [k for k in profile['ranking']['kernels'] if k['source']]
print((f\"{ours[0]['share']:.1%} of GPU time\" if ours else 'not ranked') + f\", {len(profile['captures'])} capture(s)\")")
  python3 "$repo/tests/gpu/tune_line.py" "$name" "$log" "static stage $static" "$profiled" | tee -a "$out/summary.txt" || status=1
done <<< "$CASES"
echo "== status $status"
exit $status
