#!/usr/bin/env bash
# GPU check of kernels whose shapes the host code keeps where session 25 learned to read them
# (docs/templatize.md, the host-code table), each templatized as a user would and tuned with a
# small budget on the lent GPU:
# - tests/fixtures/workspace/host_values/probe.cu, sized by what the device reports: `spin` runs
#   `ms * clockRate` cycles (the worker reads the GPU's own clock: the original takes about
#   `ms`, 2 ms), `sweep_cache` a buffer of the L2's size over `maxGridSize[1]` blocks,
#   `count_positive` a `dim3` of numbers with a `__shared__` counter;
# - tests/fixtures/workspace/class_state: `scale_paths`, its sizes kept in an object's members
#   that a constructor sets from the fields main gives a runner;
# - tests/fixtures/workspace/sweep_dispatch: `merge_across_tiles`, which the first pass of the
#   program's sweep does not reach (its shape is the first pass that does, 2048).
# - tests/fixtures/workspace/torch_op and torch_library: PyTorch extensions' kernels, their
#   sizes the tensors a Python script or a pytest test makes (session 26).
# - tests/fixtures/workspace/macro_launchers: `row_sum_kernel`, whose launcher and binding only
#   the file's macros write, sized by a Python script's comprehension loop (session 27);
#   `row_max_kernel`, whose block is the `case` its macro's `switch` takes for the shape (256,
#   where the declaration says 128).
# - tests/fixtures/workspace/flat_elements: `shift_values` and `shift_values4`, launched a row per
#   block, their block a launch parameter the grid follows (session 28); `shift_values4_unchecked`,
#   which loads before its bound, its block one that divides the program's threads (session 43).
# - tests/fixtures/workspace/sliced_tensors: `tile_mm_kernel`, its tensors sliced by a Python
#   script from larger ones, and `mapped_mm_kernel`, whose tiles the threads are mapped onto
#   with numbers (its tile sizes stay, its block keeps 256 threads; session 28).
# - tests/fixtures/workspace/counted_elements: `scale_all`, its count made dimension by dimension
#   in a loop (the tensor's numel, session 29), and `sum_squares`, whose macro launcher's grid
#   divides by the template's block: at other blocks than 256 it must still be correct, which
#   it is only if the grid follows the block (session 30).
# - tests/fixtures/workspace/dim3_arguments: `paint`, its grid and block `dim3` arguments of its
#   launcher, its frame buffer a file-scope pointer an init function allocates (session 30).
# - tests/fixtures/workspace/documented_run: `smooth`, sized by the command line of the `run`
#   script beside its program, its element type a `#define` of the header main.cu includes
#   before the kernel's file (session 31).
# - tests/fixtures/workspace/options_run: `divide_rows` and `count_neighbours`, sized by options
#   their programs read with getopt and with a loop over argv (session 32).
# - tests/fixtures/workspace/cooperative_launch: `fill_resident` and `sum_resident` (cooperative),
#   their grids the blocks an SM holds times the SMs, `blocks_per_sm` worked out for each
#   compiled configuration: other blocks must run (a cooperative grid larger than fits at once
#   does not launch) and verify (session 32).
# - tests/fixtures/workspace/random_states: `seed_sobol` and `seed_mrg`, buffers of cuRAND's
#   Sobol and MRG32k3a states counted in their states' words; word_operators: `fill_tiles`,
#   its tile the branch `M >= 128 and N >= 128` takes; benchmark_harness: `block_sums`, its
#   launcher passed down as a function pointer; object_arrays: `add_halves`, a method called on
#   an element of an array of workers; pointer_outputs: `darken`, its sizes set through pointers
#   by another file's function (session 33).
# - tests/fixtures/workspace/multi_pass: `sum_pass`, a reduction in passes (`while (count > 1)`)
#   tuned at its first pass; namesake_defines: `transform`, launched through the driver API by
#   a handle another function returns; buffer_class: `widen_pairs`, its buffers sized and
#   allocated by a buffer class's methods; image_sized: `shrink_levels`, its sizes
#   `(int)(cols * 0.5f)`; element_args: `double_values`, launched by `cudaLaunchKernel` with its
#   argument array filled element by element (session 34).
# - tests/fixtures/workspace/macro_launchers: `transpose_kernel`, its binding after a launcher
#   macro that does not build and its input made by `torch.arange(0, R * N).reshape(R, N)`;
#   head_dispatch: `head_scale_kernel`, its template arguments worked out by a host template
#   for its first instantiation and its grid by a helper of a header elsewhere (session 35).
# - tests/fixtures/workspace/attention_bench: `value_mix_kernel`, its instantiation the `case`
#   of the dispatch that the script's tensors take, its tensors made by a helper that returns
#   them; gemm_sweep: `hgemm_naive_kernel`, its sizes a sweep a helper returns, walked by `zip`;
#   warp_tiles: `stage_rows`, its warp tiling kept where the threads load its tile with numbers
#   of their own, its padding tuned (session 36).
# - tests/fixtures/workspace/constant_tiles: `flip_tiles`, its tile and rows file-scope `const
#   int`s that the kernel and the launch share, each value a build (the shared tile grows with
#   it); flag_runner: `halve_values` and `block_partial_sums`, launchers a harness method times
#   through an include folder, sized by gflags' defaults, the latter's shared memory a helper's
#   returned local; fft_types: `weight_bins`, its buffers in cuFFT's number types, which the slice
#   defines for NVRTC (session 37).
# - tests/fixtures/workspace/matrix_harness: `tiled_half_gemm`, its operands matrices a harness's
#   constructor makes as shared members, each allocating in its own constructor and handing its
#   pointer out by a getter; image_on_load: `edge_strength` and `invert_quads` (the image's bytes
#   as `uchar4`), sized by an image a function loads from the path its caller finds;
#   debug_macros: `transpose_naive`, after an empty macro written with a trailing blank;
#   managed_helper: `increment`, its buffer allocated by a helper through a reference (session 38).
# - tests/fixtures/workspace/autograd_chain: `shift_add_kernel`, sized by a package's tests
#   through its wrapper, an autograd function and a module's wrapper of the binding (two shapes,
#   one per test); counted_elements: `row_means`, its rows the dimensions before a constant
#   `dim`, multiplied in a loop (session 45).
# - tests/fixtures/workspace/registered_ops: `scale_rows_kernel`, reached from a package's test
#   through an autograd function exported as `scale_rows = ScaleRowsFunction.apply` and a device
#   registry's dispatch, its grid a capped helper of its block (session 46).
# - tests/fixtures/workspace/namespaced_ops: `row_softmax_kernel` and `causal_softmax_kernel`,
#   two extensions whose launchers and bindings share names in two namespaces, each sized by its
#   own test; the row kernel's types deduced through a project's dispatch (half in, float out),
#   its lanes PyTorch's `log2_ceil` of the columns (session 48); the causal kernel's block set by
#   a helper of its own namespace through `&threads`, beside a namesake in another (session 49).
# - tests/fixtures/workspace/autograd_backward: `patch_max_backward_kernel`, reached only
#   through autograd: run after its forward with a gradient shaped like the forward's output and
#   what the forward kept on its context (session 49). `patch_max_forward_kernel`, its output's
#   sizes derived from the input's as the function makes them (`height // patch`), so that
#   verification's shapes never give the original an output it reads past (session 51).
# - tests/fixtures/workspace/deduced_launchers: `chunked_scale_kernel`, whose launcher is a host
#   template deducing the element type from the tensors' data PyTorch's dtype dispatch passes;
#   the weight's length is a size of its own (`weight_size_0`), worked out from `channels` as
#   the test asserts (session 51; session 50 swept them together as well as alone).
#   tests/fixtures/workspace/typed_bindings: `bias_relu`, its bias likewise (`bias_size_0`).
#   `pair_rotate_kernel` (same fixture, its types from the calling file's own dispatch), its
#   `pairs` derived as `input_size_1 // 2`, as the caller works it out (session 51).
#   `row_square_sums` and `divide_by_deviation` (same fixture): each held in a `kernel` of its
#   own `BOOL_SWITCH` lambda, the launcher's types deduced from the dispatch's arguments, the
#   first one's shared memory `threads.x * threads.y * sizeof(U)` following the `dim3(32, 4)`
#   block the tuner varies: every block it times must verify (session 52).
#   tests/fixtures/workspace/registered_ops: `grid_pool_kernel`, sized by tuples of sizes the
#   op pairs (`_pair(output_size)`) and valued by string modes (`modes[mode]`, `1 if activation
#   == 'relu' else 0`), one shape from a module in an assertion (session 53).
# - tests/fixtures/workspace/index_inputs: `gather_rows`, whose ids the kernel asserts below
#   `rows`: drawn from [0, rows) on every shape verification makes (session 53). `scatter_pooled`,
#   `embed_tokens`, `gather_points` (scatter.cu), whose unchecked indices address a plane of
#   `height * width`, the rows of a table, a batch's run of points: drawn within them, the
#   original never writes past its gradient (session 54).
#   tests/fixtures/workspace/registered_ops: `pair_distances_kernel`, whose op is named like its
#   binding, its skipped keywords its defaults, its output `rows * cols` or `rows` by `if aligned:`
#   (session 54).
# - tests/fixtures/workspace/torch_op: `blend_neighbours_kernel`, its neighbours (batch, targets, 3)
#   tensors whose 3 the kernel is never given: verification's shapes keep it, and move the
#   tensors' other sizes with the sizes the kernel is given (session 55).
# - tests/fixtures/workspace/autograd_backward: `gather_columns_backward_kernel`, run by autograd
#   with the tuple its forward kept on the context, adding with PyTorch's `gpuAtomicAdd`;
#   `column_pool_forward_kernel`, whose bins come from a `Tuple`-annotated parameter (session 56).
# Each but `spin` must reach a winner verified in five stages with other configurations timed.
#   CUTUNE=target/release/cutune bash tests/gpu/host_shapes.sh
# - tests/fixtures/workspace/packed_accessors: `BlendPointsKernel` and `ScaleChannelsKernel`, whose
#   tensors are PyTorch packed accessors passed by value (a struct of the data, sizes and
#   strides the tuner fills in, 64- and 32-bit, one of rank 1), and `NearestPointsKernel`, its
#   lengths made under `if lengths1 is None:` and its clouds a test's `product(*factors)`
#   (session 57).
# CASES=REGEX runs only the kernels whose name matches it.
source "$(dirname "${BASH_SOURCE[0]}")/fixture.sh"
status=0

# fixture folder | file | kernel | budget
cases="workspace/host_values|probe.cu|spin|3
workspace/host_values|probe.cu|sweep_cache|10
workspace/host_values|probe.cu|count_positive|10
workspace/class_state|simulation.cu|scale_paths|10
workspace/sweep_dispatch|sort.cu|merge_across_tiles|10
workspace/torch_op|csrc/softclamp.cu|softclamp_kernel|10
workspace/torch_op|csrc/softclamp.cu|row_center_kernel|10
workspace/torch_library|csrc/norm.cu|rms_norm_kernel|10
workspace/macro_launchers|row_sum.cu|row_sum_kernel|10
workspace/macro_launchers|row_max.cu|row_max_kernel|10
workspace/flat_elements|shift.cu|shift_values|10
workspace/flat_elements|shift.cu|shift_values4|10
workspace/flat_elements|shift.cu|shift_values4_unchecked|10
workspace/sliced_tensors|tile_mm.cu|tile_mm_kernel|20
workspace/sliced_tensors|tile_mm.cu|mapped_mm_kernel|20
workspace/counted_elements|scale.cu|scale_all|10
workspace/counted_elements|scale.cu|sum_squares|10
workspace/dim3_arguments|paint.cu|paint|10
workspace/documented_run|smooth_kernel.cu|smooth|10
workspace/options_run|factor.cu|divide_rows|10
workspace/options_run|boxes.cu|count_neighbours|10
workspace/cooperative_launch|fill_resident.cu|fill_resident|12
workspace/cooperative_launch|sum_resident.cu|sum_resident|12
workspace/random_states|generators.cu|seed_sobol|10
workspace/random_states|generators.cu|seed_mrg|10
workspace/word_operators|tiles.cuh|fill_tiles|16
workspace/benchmark_harness|block_sums.cu|block_sums|10
workspace/object_arrays|workers.cu|add_halves|10
workspace/pointer_outputs|frames.cu|darken|10
workspace/multi_pass|sum_passes.cu|sum_pass|10
workspace/namesake_defines|rotate/rotate_kernel.cu|transform|10
workspace/buffer_class|pairs.cu|widen_pairs|10
workspace/image_sized|levels/levels.cu|shrink_levels|10
workspace/element_args|scale_launch.cu|double_values|10
workspace/macro_launchers|transpose.cu|transpose_kernel|10
workspace/head_dispatch|attention/head_scale.cu|head_scale_kernel|10
workspace/attention_bench|csrc/value_mix.cu|value_mix_kernel|10
workspace/gemm_sweep|hgemm_naive.cu|hgemm_naive_kernel|10
workspace/warp_tiles|stage_rows.cu|stage_rows|10
workspace/constant_tiles|flip.cu|flip_tiles|12
workspace/flag_runner|src/ops/halve.cu|halve_values|10
workspace/flag_runner|src/ops/block_sums.cu|block_partial_sums|10
workspace/fft_types|spectrum.cu|weight_bins|10
workspace/matrix_harness|src/kernels/tiled_gemm.cu|tiled_half_gemm|12
workspace/image_on_load|edges.cu|edge_strength|10
workspace/image_on_load|edges.cu|invert_quads|10
workspace/debug_macros|transpose.cu|transpose_naive|10
workspace/managed_helper|increment.cu|increment|10
workspace/autograd_chain|csrc/shift_add.cu|shift_add_kernel|10
workspace/counted_elements|scale.cu|row_means|10
workspace/registered_ops|ops/csrc/common/cuda/scale_rows_kernel.cuh|scale_rows_kernel|10
workspace/namespaced_ops|csrc/row_softmax_cuda.cu|row_softmax_kernel|10
workspace/namespaced_ops|csrc/causal_softmax_cuda.cu|causal_softmax_kernel|10
workspace/deduced_launchers|csrc/chunked_scale_kernel.cuh|chunked_scale_kernel|10
workspace/typed_bindings|csrc/bias_relu.cu|bias_relu|10
workspace/autograd_backward|csrc/patch_max_cuda.cu|patch_max_backward_kernel|10
workspace/autograd_backward|csrc/patch_max_cuda.cu|patch_max_forward_kernel|10
workspace/deduced_launchers|csrc/pair_rotate.h|pair_rotate_kernel|10
workspace/deduced_launchers|csrc/row_norm_cuda.cu|row_square_sums|10
workspace/deduced_launchers|csrc/row_norm_cuda.cu|divide_by_deviation|10
workspace/registered_ops|ops/csrc/common/cuda/grid_pool_kernel.cuh|grid_pool_kernel|10
workspace/index_inputs|gather.cu|gather_rows|10
workspace/index_inputs|scatter.cu|scatter_pooled|10
workspace/index_inputs|scatter.cu|embed_tokens|10
workspace/index_inputs|scatter.cu|gather_points|10
workspace/registered_ops|ops/csrc/common/cuda/pair_distances_kernel.cuh|pair_distances_kernel|10
workspace/torch_op|csrc/softclamp.cu|blend_neighbours_kernel|10
workspace/autograd_backward|csrc/columns_cuda.cu|gather_columns_backward_kernel|10
workspace/autograd_backward|csrc/columns_cuda.cu|column_pool_forward_kernel|10
workspace/packed_accessors|csrc/blend/blend.cu|BlendPointsKernel|10
workspace/packed_accessors|csrc/blend/blend.cu|ScaleChannelsKernel|10
workspace/packed_accessors|csrc/nearest/nearest.cu|NearestPointsKernel|10"
if [ -n "${CASES:-}" ]; then
    cases="$(while IFS='|' read -r fixture file kernel budget; do [[ "$kernel" =~ $CASES ]] && echo "$fixture|$file|$kernel|$budget"; done <<< "$cases")"
fi

while IFS='|' read -r fixture file kernel budget; do
    work="$(fixture_copy "$kernel" "$fixture")"
    report="$out/host_shapes_$kernel.json"
    (cd "$work" && "$cutune" templatize "$file" --kernel "$kernel" --write) > "$out/host_shapes_$kernel.txt" 2>&1 || { echo "FAIL: templatize $kernel"; status=1; continue; }
    (cd "$work" && "$cutune" tune "$file" --kernel "$kernel" --budget "$budget" --json) > "$report" 2> "$out/host_shapes_$kernel.err" || { echo "FAIL: tune $kernel"; tail -3 "$out/host_shapes_$kernel.err"; status=1; continue; }
    python3 - "$report" "$kernel" <<'PY' || status=1
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
    if kernel == "sum_squares":
        other_blocks = [r for r in report["rows"] if r["status"] == "ok" and dict(r["config"]).get("THREADS") != 256]
        ok = ok and len(other_blocks) > 0
    if kernel in ("fill_resident", "sum_resident"):
        default = {"fill_resident": 128, "sum_resident": 256}[kernel]
        other_blocks = [r for r in report["rows"] if r["status"] == "ok" and dict(r["config"]).get("threads") != default]
        # The speed-of-light guard may refuse a write-only fill of 4 MiB (see docs/benchmarks.md);
        # a launch refused or an output wrong is what a grid of the wrong size would give.
        failed = [r for r in report["rows"] if r["status"] != "ok" and not r["status"].startswith("faster than the speed of light")]
        ok = ok and len(other_blocks) > 0 and not failed
        print(f"  {kernel}: {len(other_blocks)} other blocks ran, {len(failed)} configurations failed {[r.get('message', r['status']) for r in failed][:3]}")
    said = f"best {dict(best['config']) if best else None} {best['speedup'] if best else '-'}x of {baseline:.1f} us, {len(timed)} configurations timed, verification {statuses}"
print(("PASS" if ok else "FAIL") + f": {kernel}: {said}")
sys.exit(0 if ok else 1)
PY
done <<< "$cases"
exit $status
