#!/usr/bin/env bash
# GPU suite: kernels that read texture objects, tuned with no hand edit. For each case:
# `cutune templatize --write` (the texture's extent, format and sampling read off the host
# code), `cutune spec check`, `cutune tune --budget B` (the worker makes the CUDA array and the
# texture object; the winner is verified in five stages). Our own fixture always; with CORPUS
# (the folder holding NVIDIA/cuda-samples' `Samples`, see docs/templatize.md) four samples too.
# A summary line per case goes to $OUT/summary.txt.
#   CUTUNE=target/gpu/cutune [CORPUS=.corpus/cuda-samples] bash tests/gpu/texture_suite.sh
set -u
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cutune="$(realpath "${CUTUNE:-$repo/target/release/cutune}")"
out="$(realpath -m "${OUT:-$repo/gpu-out}")"
budget="${BUDGET:-30}"
mkdir -p "$out"
work="$(mktemp -d -t cutune-textures.XXXXXX)"
status=0

# name | folder | file | kernel
CASES="blur_rows|$repo/tests/fixtures/workspace/textures|image_kernels.cuh|blur_rows
shade|$repo/tests/fixtures/workspace/textures|image_kernels.cuh|shade
resample|$repo/tests/fixtures/workspace/textures|image_kernels.cuh|resample"
if [ -n "${CORPUS:-}" ]; then
  samples="$(realpath "$CORPUS")/Samples"
  CASES="$CASES
convolutionRowsKernel|$samples/2_Concepts_and_Techniques/convolutionTexture|convolutionTexture.cu|convolutionRowsKernel
convolutionColumnsKernel|$samples/2_Concepts_and_Techniques/convolutionTexture|convolutionTexture.cu|convolutionColumnsKernel
layeredTransform|$samples/0_Introduction/simpleLayeredTexture|simpleLayeredTexture.cu|transformKernel
cubemapTransform|$samples/0_Introduction/simpleCubemapTexture|simpleCubemapTexture.cu|transformKernel"
fi

while IFS='|' read -r name folder file kernel; do
  echo "== $name"
  ws="$work/$name"
  cp -r "$folder" "$ws" && mkdir -p "$ws/.git"
  log="$out/$name"
  (cd "$ws" && "$cutune" templatize "$file" --kernel "$kernel" --write 2> "$log.templatize.err" && cp "${file%.*}.cutune.toml" "$log.cutune.toml")
  (cd "$ws" && "$cutune" spec check "${file%.*}.cutune.toml" > "$log.spec_check.txt" 2>&1) || status=1
  (cd "$ws" && timeout 240 "$cutune" tune "$file" --kernel "$kernel" --budget "$budget" --json > "$log.tune.json" 2> "$log.tune.err")
  python3 - "$name" "$log" <<'PY' | tee -a "$out/summary.txt" || status=1
import json, sys
name, log = sys.argv[1:3]
spec = open(log + ".spec_check.txt").read().strip().splitlines()[-1]
try:
    tune = json.load(open(log + ".tune.json"))
except (OSError, ValueError):
    print(f"{name}: {spec}; tune did not finish: {open(log + '.tune.err').read().strip()[-400:]}")
    sys.exit(1)
best, verification = tune["best"], tune["verification"]
failed = [c for c in verification["cases"] if c["status"] == "fail"] if verification else None
verified = "no verification" if verification is None else (f"{len(verification['cases'])} cases pass" if not failed else f"verification failed: {failed[0]['label']}: {failed[0].get('detail', '')}")
sol = f"{best['sol_percent']:.0f}% SOL" if best and best.get("sol_percent") else "-"
print(f"{name}: {spec}; baseline {tune['baseline_us']:.2f} µs over {len(tune['baseline'])} problems, "
      f"best {best['time_us']:.2f} µs ({best['speedup']:.2f}×, {sol}) {dict(best['config'])}; {verified}; {len(tune['rows'])} evaluated, failures {tune['failures']}"
      if best else f"{name}: {spec}; no correct configuration; failures {tune['failures']}")
sys.exit(0 if best and verification and not failed else 1)
PY
done <<< "$CASES"
echo "== status $status"
exit $status
