#!/usr/bin/env bash
# GPU suite of real projects: kernels of public projects that nobody here wrote, taken as a new
# user would take them — `cutune templatize --write` on a copy of the project, `cutune spec
# check`, then `cutune tune` (which verifies its winner in five stages) — with no hand edit to
# the file or the spec. The projects are not in the repository: fetch them into .corpus/ (see
# docs/templatize.md, "Real projects") and carry them to the GPU machine.
#   CUTUNE=target/release/cutune CORPUS=.corpus BUDGET=40 bash tests/gpu/corpus_suite.sh
# CASES=REGEX runs only the kernels whose name matches it.
# Reports: $OUT/corpus_<kernel>.json (the tune report) and $OUT/corpus_summary.txt.
set -u
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo"
cutune="${CUTUNE:-$repo/target/release/cutune}"
corpus="${CORPUS:-$repo/.corpus}"
budget="${BUDGET:-40}"
out="${OUT:-$repo/gpu-out}"
mkdir -p "$out"
work="$(mktemp -d -t cutune-corpus.XXXXXX)"
status=0

# project folder (under $corpus), file (under the project), kernel
cases=(
  "llm.c dev/cuda/layernorm_forward.cu layernorm_forward_kernel3"
  "llm.c dev/cuda/layernorm_forward.cu layernorm_forward_kernel4"
  "llm.c dev/cuda/softmax_forward.cu softmax_forward_online_kernel8"
  "llm.c dev/cuda/gelu_forward.cu gelu_forward_kernel2"
  "llm.c dev/cuda/matmul_forward.cu matmul_forward_kernel1"
  "llm.c dev/cuda/global_norm.cu norm_kernel1"
  "cuda-samples Samples/2_Concepts_and_Techniques/convolutionSeparable/convolutionSeparable.cu convolutionRowsKernel"
  "cuda-samples Samples/0_Introduction/vectorAdd/vectorAdd.cu vectorAdd"
  "cuda-samples Samples/0_Introduction/vectorAddDrv/vectorAdd_kernel.cu VecAdd_kernel"
  "cuda-samples Samples/0_Introduction/matrixMul/matrixMul.cu MatrixMulCUDA"
  "cuda-samples Samples/0_Introduction/asyncAPI/asyncAPI.cu increment_kernel"
  "cuda-samples Samples/2_Concepts_and_Techniques/shfl_scan/shfl_integral_image.cuh shfl_vertical_shfl"
  "llm.c dev/cuda/attention_backward.cu softmax_autoregressive_backward_kernel1"
  "llm.c dev/cuda/softmax_forward.cu softmax_forward_online_kernel2"
  "llm.c dev/cuda/softmax_forward.cu softmax_forward_kernel1"
  "llm.c dev/cuda/classifier_fused.cu fused_classifier_kernel3"
  "cuda-samples Samples/0_Introduction/simpleZeroCopy/simpleZeroCopy.cu vectorAddGPU"
  "cuda-samples Samples/0_Introduction/simpleStreams/simpleStreams.cu init_array"
  "cuda-samples Samples/0_Introduction/simpleP2P/simpleP2P.cu SimpleKernel"
  "cuda-samples Samples/2_Concepts_and_Techniques/shfl_scan/shfl_scan.cu shfl_scan_test"
  "llm.c dev/cuda/fused_residual_forward.cu residual_forward_kernel1"
  "llm.c dev/cuda/trimat_forward.cu trimul_global"
  "cuda-samples Samples/2_Concepts_and_Techniques/scan/scan.cu scanExclusiveShared"
  "cuda-samples Samples/0_Introduction/fp16ScalarProduct/fp16ScalarProduct.cu scalarProductKernel_native"
  "SGEMM_CUDA src/kernels/3_kernel_shared_mem_blocking.cuh sgemm_shared_mem_block"
  "SGEMM_CUDA src/kernels/4_kernel_1D_blocktiling.cuh sgemm1DBlocktiling"
  "SGEMM_CUDA src/kernels/5_kernel_2D_blocktiling.cuh sgemm2DBlocktiling"
  "SGEMM_CUDA src/kernels/6_kernel_vectorize.cuh sgemmVectorize"
  "cuda-samples Samples/2_Concepts_and_Techniques/reduction/reduction_kernel.cu reduce0"
  "cuda-samples Samples/2_Concepts_and_Techniques/reduction/reduction_kernel.cu reduce6"
  "cuda-samples Samples/2_Concepts_and_Techniques/reduction/reduction_kernel.cu reduce7"
  "cuda-samples Samples/2_Concepts_and_Techniques/threadFenceReduction/threadFenceReduction_kernel.cuh reduceMultiPass"
  "cuda-samples Samples/2_Concepts_and_Techniques/imageDenoising/imageDenoising_knn_kernel.cuh KNN"
  "cuda-samples Samples/2_Concepts_and_Techniques/dct8x8/dct8x8_kernel1.cuh CUDAkernel1DCT"
  "cuda-samples Samples/0_Introduction/simpleTexture/simpleTexture.cu transformKernel"
  "cuda-samples Samples/2_Concepts_and_Techniques/boxFilter/boxFilter_kernel.cu d_boxfilter_rgba_x"
  "cuda-samples Samples/2_Concepts_and_Techniques/boxFilter/boxFilter_kernel.cu d_boxfilter_rgba_y"
  "llm.c dev/cuda/attention_forward.cu permute_kernel"
  "llm.c dev/cuda/crossentropy_forward.cu crossentropy_forward_kernel1"
  "cuda-samples Samples/3_CUDA_Features/graphMemoryNodes/graphMemoryNodes.cu squareArray"
  "cuda-samples Samples/3_CUDA_Features/graphMemoryNodes/graphMemoryNodes.cu negateArray"
  "llm.c dev/cuda/gelu_forward.cu gelu_forward_kernel1"
  "llm.c dev/cuda/gelu_backward.cu gelu_backward1"
  "cuda-samples Samples/2_Concepts_and_Techniques/inlinePTX/inlinePTX.cu sequence_gpu"
  "cuda-samples Samples/3_CUDA_Features/cudaTensorCoreGemm/cudaTensorCoreGemm.cu compute_gemm"
  "cuda-samples Samples/3_CUDA_Features/cudaTensorCoreGemm/cudaTensorCoreGemm.cu simple_wmma_gemm"
  "cuda-samples Samples/3_CUDA_Features/tf32TensorCoreGemm/tf32TensorCoreGemm.cu compute_tf32gemm"
  "cuda-samples Samples/5_Domain_Specific/fastWalshTransform/fastWalshTransform_kernel.cuh fwtBatch2Kernel"
  "cuda-samples Samples/0_Introduction/mergeSort/mergeSort.cu generateSampleRanksKernel"
  "cuda-samples Samples/0_Introduction/mergeSort/mergeSort.cu mergeElementaryIntervalsKernel"
  "cuda-samples Samples/0_Introduction/mergeSort/mergeSort.cu mergeSortSharedKernel"
  "cuda-samples Samples/2_Concepts_and_Techniques/sortingNetworks/bitonicSort.cu bitonicSortShared"
  "cuda-samples Samples/2_Concepts_and_Techniques/imageDenoising/imageDenoising_nlm2_kernel.cuh NLM2"
  "llm.c dev/cuda/attention_forward.cu attention_forward_kernel2"
  "llm.c dev/cuda/matmul_backward_bias.cu matmul_backward_bias_kernel9"
  "cuda-samples Samples/2_Concepts_and_Techniques/sortingNetworks/bitonicSort.cu bitonicSortShared1"
  "cuda-samples Samples/2_Concepts_and_Techniques/sortingNetworks/bitonicSort.cu bitonicMergeShared"
  "cuda-samples Samples/0_Introduction/simpleAttributes/simpleAttributes.cu kernCacheSegmentTest"
  "flash-attention-minimal flash.cu forward_kernel"
  "cuda-samples Samples/0_Introduction/clock/clock.cu timedReduction"
  "cuda-samples Samples/2_Concepts_and_Techniques/MC_EstimatePiP/src/piestimator.cu computeValue"
  "leetcuda kernels/sgemv/sgemv.cu sgemv_k32_f32_kernel"
  "leetcuda kernels/rope/rope.cu rope_f32_kernel"
  "leetcuda kernels/elementwise/elementwise.cu elementwise_add_f32x4_kernel"
  "leetcuda kernels/elementwise/elementwise.cu elementwise_add_f16x8_kernel"
  "leetcuda kernels/gelu/gelu.cu gelu_f16x8_kernel"
  "leetcuda kernels/relu/relu.cu relu_f16x8_pack_kernel"
  "leetcuda kernels/sigmoid/sigmoid.cu sigmoid_f16x8_kernel"
  "leetcuda kernels/sgemm/sgemm.cu sgemm_t_8x8_sliced_k_f32x4_kernel"
  "leetcuda kernels/reduce/block_all_reduce.cu block_all_reduce_sum_f32_f32_kernel"
  "cuda_hgemm src/mma/mma_async.cu mmaAsyncKernel"
  "cuda_hgemm src/wmma/wmma_async.cu wmmaAsyncKernel"
  "cuda-samples Samples/5_Domain_Specific/SobelFilter/SobelFilter_kernels.cu SobelShared"
  "cuda-samples Samples/2_Concepts_and_Techniques/FunctionPointers/FunctionPointers_kernels.cu SobelCopyImage"
  "cuda-training-series exercises/hw8/task3/task3_solution.cu smem_cuda_transpose"
  "cuda-training-series exercises/hw6/array_inc_solution.cu inc"
)
if [ -n "${CASES:-}" ]; then
  selected=()
  for case in "${cases[@]}"; do
    [[ "${case##* }" =~ $CASES ]] && selected+=("$case")
  done
  cases=("${selected[@]}")
fi

echo "== device"; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$out/device.csv"
"$cutune" ceilings > "$out/ceilings.txt" 2>&1 || status=1

for case in "${cases[@]}"; do
  read -r project file kernel <<< "$case"
  [ -f "$corpus/$project/$file" ] || { echo "-- $kernel: $corpus/$project/$file is missing"; status=1; continue; }
  # A fresh copy per kernel: templatize writes into it. The project's root is found by `.git`.
  copy="$work/$kernel/$project"
  mkdir -p "$copy" && cp -r "$corpus/$project/." "$copy/" && (cd "$copy" && git init -q 2>/dev/null || mkdir -p .git)
  spec="${file%.*}.cutune.toml"
  echo "== $kernel ($project/$file)"
  (cd "$copy" && "$cutune" templatize "$file" --kernel "$kernel" --write) > "$out/corpus_${kernel}_templatize.txt" 2>&1 || { echo "templatize failed"; status=1; continue; }
  (cd "$copy" && "$cutune" spec check "$spec") >> "$out/corpus_${kernel}_templatize.txt" 2>&1 || { echo "spec check failed"; tail -5 "$out/corpus_${kernel}_templatize.txt"; status=1; continue; }
  (cd "$copy" && "$cutune" tune "$file" --kernel "$kernel" --budget "$budget" --json) > "$out/corpus_${kernel}.json" 2> "$out/corpus_${kernel}.err" || { echo "tune failed"; tail -5 "$out/corpus_${kernel}.err"; status=1; }
  cp "$copy/$spec" "$out/corpus_${kernel}.cutune.toml"
done

python3 - "$out" "${cases[@]}" <<'PY' | tee "$out/corpus_summary.txt"
import json, sys
out, cases = sys.argv[1], sys.argv[2:]
print(f"{'kernel':32} {'evaluated':>9} {'baseline us':>12} {'best us':>9} {'speedup':>8} {'%SOL':>5}  five-stage verification        best configuration")
for case in cases:
    project, file, kernel = case.split()
    try:
        r = json.load(open(f"{out}/corpus_{kernel}.json"))
    except Exception as e:
        print(f"{kernel:32} no report ({type(e).__name__})"); continue
    b = r.get("best") or {}
    sol = b.get("sol_percent")
    sol = f"{sol:.0f}%" if isinstance(sol, (int, float)) else "-"
    v = r.get("verification")
    if v:
        statuses = [c.get("status") for c in v["cases"]]
        # `baseline_failed`: the original kernel itself fails the case (an unstated assumption
        # such as N a multiple of 8), so there is nothing to compare with.
        verdict = f"{statuses.count('pass')} pass, {statuses.count('fail')} fail, {statuses.count('baseline_failed')} original fails"
    else:
        verdict = "not run"
    if not b:
        verdict = f"no verified winner; {len(r.get('rejected', []))} rejected"
    best = f"{b['time_us']:>9.2f} {b['speedup']:>7.2f}x" if b else f"{'-':>9} {'-':>8}"
    print(f"{kernel:32} {len(r.get('rows', [])):>9} {r.get('baseline_us') or 0:>12.2f} {best} {sol:>5}  {verdict:30} {b.get('config', '')}")
    roles = r.get("roles")
    if roles:
        settled = f"written only: {', '.join(roles['buffers']) or 'none'}" if roles["settled"] == "written_only" else f"undecided: {roles['why']}"
        print(f"{'':32} roles settled by running the original: {settled}")
PY
exit $status
