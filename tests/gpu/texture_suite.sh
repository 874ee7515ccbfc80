#!/usr/bin/env bash
# GPU suite: kernels that read texture objects, tuned with no hand edit. For each case:
# `cutune templatize --write` (the texture's extent, format and sampling read off the host
# code), `cutune spec check`, `cutune tune --budget B` (the worker makes the CUDA array and the
# texture object; the winner is verified in five stages). Our own fixture always; with CORPUS
# (the folder holding NVIDIA/cuda-samples' `Samples`, see docs/templatize.md) four samples too.
# A summary line per case goes to $OUT/summary.txt.
#   CUTUNE=target/gpu/cutune [CORPUS=.corpus/cuda-samples] bash tests/gpu/texture_suite.sh
suite=textures
source "$(dirname "${BASH_SOURCE[0]}")/tune_case.sh"

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

tune_cases "$CASES"
echo "== status $status"
exit $status
