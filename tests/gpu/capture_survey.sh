#!/usr/bin/env bash
# GPU suite: how far one run of each program takes the survey. The cuda-samples programs whose
# kernels stop at the spec when read from source alone (sizes from files, class members, the
# driver API, run-time block sizes) are built with nvcc and run once under
# `cutune profile --capture N`, as a user would run them; then `cutune survey` runs over the
# same folders before and after, with nothing else changed. Each program's profile goes to its
# own folder's `.cutune/`, which makes that folder the kernel's workspace root, as it is for a
# user who opens the sample.
#
# Needs the corpus (not part of this repository; see docs/templatize.md): CORPUS is the folder
# holding NVIDIA/cuda-samples' `Common` and `Samples`.
#   CUTUNE=target/gpu/cutune CORPUS=.corpus/cuda-samples bash tests/gpu/capture_survey.sh
# Then each kernel of TUNE is taken on to `cutune templatize --write`, `cutune spec check` and
# `cutune tune --budget $BUDGET` (the winner verified in five stages), with no hand edit.
# ONLY=REGEX builds, profiles and tunes only the samples whose path matches it.
# Reports: $OUT/survey_before_<folder>.json, $OUT/survey_after_<folder>.json, $OUT/programs.txt
# (one line per program: built, profiled, captures), $OUT/tuned.txt (one line per tuned kernel)
# and $OUT/captures.tgz (the captures without their buffers, and each program's logs, to read
# the survey again elsewhere).
set -u
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cutune="$(realpath "${CUTUNE:-$repo/target/release/cutune}")"
corpus="$(realpath "${CORPUS:?CORPUS names the cuda-samples folder}")"
out="$(realpath -m "${OUT:-$repo/gpu-out}")"
captures="${CAPTURES:-20}"
budget="${BUDGET:-20}"
mkdir -p "$out"
work="$(mktemp -d -t cutune-capture-survey.XXXXXX)"
cp -r "$corpus/Common" "$corpus/Samples" "$work/" && touch "$work/.cutune"
folders="0_Introduction 2_Concepts_and_Techniques"
nvcc_flags="-O3 -arch=sm_90 -std=c++17 -I$work/Common -Wno-deprecated-gpu-targets"

# sample (under Samples) | file | kernel: taken on to a tuned and verified kernel
TUNE="2_Concepts_and_Techniques/MC_SingleAsianOptionP|src/pricingengine.cu|computeValue
0_Introduction/simpleHyperQ|simpleHyperQ.cu|kernel_A
2_Concepts_and_Techniques/MC_SingleAsianOptionP|src/pricingengine.cu|generatePaths
2_Concepts_and_Techniques/MC_EstimatePiInlineP|src/piestimator.cu|initRNG
0_Introduction/mergeSort|mergeSort.cu|mergeSortSharedKernel
0_Introduction/simpleHyperQ|simpleHyperQ.cu|sum
0_Introduction/cudaOpenMP|cudaOpenMP.cu|kernelAddConstant
2_Concepts_and_Techniques/shfl_scan|shfl_integral_image.cuh|shfl_intimage_rows
2_Concepts_and_Techniques/shfl_scan|shfl_scan.cu|shfl_scan_test
2_Concepts_and_Techniques/segmentationTreeThrust|kernels.cuh|addScalar
2_Concepts_and_Techniques/segmentationTreeThrust|kernels.cuh|markSegments
2_Concepts_and_Techniques/segmentationTreeThrust|kernels.cuh|getRepresentatives
2_Concepts_and_Techniques/segmentationTreeThrust|kernels.cuh|calculateEdgesInfo
0_Introduction/simpleTexture3D|simpleTexture3D_kernel.cu|d_render
0_Introduction/simpleTextureDrv|simpleTexture_kernel.cu|transformKernel"

# sample (under Samples) | build command (run in the sample's folder) | program arguments
CASES="0_Introduction/cudaOpenMP|nvcc $nvcc_flags -Xcompiler -fopenmp -o program cudaOpenMP.cu -lgomp|
0_Introduction/matrixMulDrv|nvcc $nvcc_flags -fatbin -o matrixMul_kernel64.fatbin matrixMul_kernel.cu && nvcc $nvcc_flags -o program matrixMulDrv.cpp -lcuda|
0_Introduction/mergeSort|nvcc $nvcc_flags -o program mergeSort.cu bitonic.cu main.cpp mergeSort_host.cpp mergeSort_validate.cpp|
0_Introduction/simpleAWBarrier|nvcc $nvcc_flags -o program simpleAWBarrier.cu|
0_Introduction/simpleAttributes|nvcc $nvcc_flags -o program simpleAttributes.cu|
0_Introduction/simpleHyperQ|nvcc $nvcc_flags -o program simpleHyperQ.cu|
0_Introduction/simpleMultiGPU|nvcc $nvcc_flags -o program simpleMultiGPU.cu|
0_Introduction/simpleStreams|nvcc $nvcc_flags -o program simpleStreams.cu|
0_Introduction/simpleTextureDrv|nvcc $nvcc_flags -fatbin -o simpleTexture_kernel64.fatbin simpleTexture_kernel.cu && nvcc $nvcc_flags -o program simpleTextureDrv.cpp -lcuda|
0_Introduction/simpleIPC|nvcc $nvcc_flags -o program simpleIPC.cu $work/Common/helper_multiprocess.cpp|
2_Concepts_and_Techniques/segmentationTreeThrust|nvcc $nvcc_flags --extended-lambda -o program segmentationTree.cu && cp data/*.ppm .|
2_Concepts_and_Techniques/eigenvalues|nvcc $nvcc_flags -o program bisect_large.cu bisect_small.cu bisect_util.cu gerschgorin.cpp main.cu matlab.cpp|-matrix-size=2048
2_Concepts_and_Techniques/interval|nvcc $nvcc_flags -I. -o program interval.cu|
2_Concepts_and_Techniques/reductionMultiBlockCG|nvcc $nvcc_flags -rdc=true -o program reductionMultiBlockCG.cu|
2_Concepts_and_Techniques/shfl_scan|nvcc $nvcc_flags -o program shfl_scan.cu|
2_Concepts_and_Techniques/threadMigration|nvcc $nvcc_flags -fatbin -o threadMigration_kernel64.fatbin threadMigration_kernel.cu && nvcc $nvcc_flags -o program threadMigration.cpp -lcuda -lpthread|
2_Concepts_and_Techniques/MC_EstimatePiInlineP|nvcc $nvcc_flags -Iinc -o program src/main.cpp src/piestimator.cu src/test.cpp -lcurand|
2_Concepts_and_Techniques/MC_EstimatePiInlineQ|nvcc $nvcc_flags -Iinc -o program src/main.cpp src/piestimator.cu src/test.cpp -lcurand|
2_Concepts_and_Techniques/MC_EstimatePiP|nvcc $nvcc_flags -Iinc -o program src/main.cpp src/piestimator.cu src/test.cpp -lcurand|
2_Concepts_and_Techniques/MC_EstimatePiQ|nvcc $nvcc_flags -Iinc -o program src/main.cpp src/piestimator.cu src/test.cpp -lcurand|
2_Concepts_and_Techniques/MC_SingleAsianOptionP|nvcc $nvcc_flags -Iinc -o program src/main.cpp src/pricingengine.cu src/test.cpp -lcurand|"

survey() {
  for folder in $folders; do
    "$cutune" survey "$work/Samples/$folder" --json > "$out/survey_$1_$folder.json" 2> "$out/survey_$1_$folder.err"
  done
}

if [ -n "${ONLY:-}" ]; then
  CASES="$(grep -E "^[^|]*(${ONLY})[^|]*\|" <<< "$CASES")"
  TUNE="$(grep -E "^[^|]*(${ONLY})[^|]*\|" <<< "$TUNE")"
fi

echo "== survey before (source alone)"
survey before

echo "== build"
build_one() {
  IFS='|' read -r sample command _ <<< "$1"
  (cd "$work/Samples/$sample" && eval "$command") > "$work/Samples/$sample/build.log" 2>&1 && echo "$sample built" || echo "$sample BUILD FAILED"
}
export -f build_one
export work
echo "$CASES" | xargs -d '\n' -P 16 -I{} bash -c 'build_one "$@"' _ {}

echo "== profile"
: > "$out/programs.txt"
while IFS='|' read -r sample command arguments; do
  ws="$work/Samples/$sample"
  [ -x "$ws/program" ] || { echo "$sample: not built ($(tail -1 "$ws/build.log" 2>/dev/null))" >> "$out/programs.txt"; continue; }
  (cd "$ws" && timeout 180 "$cutune" profile --root . --capture "$captures" --json -- ./program $arguments > profile.json 2> profile.err)
  rc=$?
  saved=$(ls "$ws/.cutune/captures" 2>/dev/null | tr '\n' ' ')
  echo "$sample: profile rc $rc; captures: ${saved:-none}" >> "$out/programs.txt"
done <<< "$CASES"
cat "$out/programs.txt"

echo "== survey after (with the captures)"
survey after

echo "== tune"
: > "$out/tuned.txt"
while IFS='|' read -r sample file kernel; do
  ws="$work/Samples/$sample"
  log="$out/tune_$(basename "$sample")_$kernel"
  (cd "$ws" && "$cutune" templatize "$file" --kernel "$kernel" --write 2> "$log.templatize.err")
  (cd "$ws" && "$cutune" spec check "${file%.*}.cutune.toml" > "$log.spec_check.txt" 2>&1)
  (cd "$ws" && timeout 150 "$cutune" tune "$file" --kernel "$kernel" --budget "$budget" --json > "$log.tune.json" 2> "$log.tune.err")
  python3 "$repo/tests/gpu/tune_line.py" "$kernel ($(basename "$sample"))" "$log" >> "$out/tuned.txt"
done <<< "$TUNE"
cat "$out/tuned.txt"
(cd "$out" && tar czf tune_logs.tgz tune_* && rm -f tune_*.json tune_*.err tune_*.txt)

# The captures of a few MiB at most, and the programs' logs, come back.
(cd "$work" && tar czf "$out/captures.tgz" $(find Samples \( -path '*/.cutune/captures/*.cutcap' -size -4M \) -o -name build.log -o -name profile.json -o -name profile.err | sort))
python3 - "$out" $folders <<'EOF'
import json, sys
out, folders = sys.argv[1], sys.argv[2:]
for folder in folders:
    before = json.load(open(f"{out}/survey_before_{folder}.json"))["kernels"]
    after = {(k["file"], k["kernel"]): k for k in json.load(open(f"{out}/survey_after_{folder}.json"))["kernels"]}
    ready = lambda ks: sum(k["stage"] == "ready" for k in ks)
    print(f"{folder}: ready {ready(before)} -> {ready(after.values())} of {len(before)}")
    for k in before:
        now = after.get((k["file"], k["kernel"]))
        if now and now["stage"] != k["stage"]:
            print(f"  {k['kernel']} ({k['file'].split('/Samples/')[-1]}): {k['stage']} -> {now['stage']}")
EOF
(cd "$out" && tar czf surveys.tgz survey_* && rm -f survey_*)
