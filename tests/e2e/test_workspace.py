"""Real-project shapes through the real binary: launches in other files, run-time block sizes,
function pointers, host templates and typedefs in headers (`tests/fixtures/workspace/`, one
small project per folder), with `cutune survey`, `cutune templatize` and the code action."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

from lsprotocol import types

from editor import CUTUNE_BIN, REPO, logged, open_document
from test_templatize import code_actions, line_of, resolved

WORKSPACE = REPO / "tests" / "fixtures" / "workspace"


def cutune(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    # The copies live outside the repository: point NVRTC discovery at its .venv.
    env = {**os.environ, "VIRTUAL_ENV": str(REPO / ".venv")}
    return subprocess.run([str(CUTUNE_BIN), *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=300)


def project(tmp_path: Path, name: str) -> Path:
    target = tmp_path / name
    shutil.copytree(WORKSPACE / name, target)
    return target


def spec_of(text: str) -> dict:
    return tomllib.loads(text)["kernels"][0]


async def code_action_spec(client, source: Path, anchor: str, kernel: str) -> dict:
    """The spec entry that the *Templatize kernel* code action at `anchor` in `source` writes."""
    text = source.read_text()
    await open_document(client, source.as_uri(), text)
    actions = await code_actions(client, source.as_uri(), line_of(text, anchor), 8)
    action = await resolved(client, next(a for a in actions if kernel in a.title))
    spec_name = source.with_suffix(".cutune.toml").name
    spec_text = next(c.edits[0].new_text for c in action.edit.document_changes if isinstance(c, types.TextDocumentEdit) and c.text_document.uri.endswith(spec_name))
    return spec_of(spec_text)


def test_survey_reports_every_kernel_with_its_stage_and_writes_nothing(tmp_path: Path):
    root = tmp_path / "workspace"
    shutil.copytree(WORKSPACE, root)
    (root / ".git").mkdir()
    before = sorted(p.name for p in root.rglob("*"))
    run = cutune("survey", str(root), "--json")
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    by_kernel = {k["kernel"]: k for k in report["kernels"]}
    kernels = [(k["file"].split("/workspace/")[1], k["kernel"]) for k in report["kernels"]]
    assert len(kernels) == len(set(kernels)) == 218
    by_kernel = {kernel: k for (file, kernel), k in zip(kernels, report["kernels"]) if file != "textures/image_kernels.cuh"}
    assert set(by_kernel) == {"tile_gemm", "scale_rows", "axpy", "copy_plain", "copy_twice", "relu", "scale_vec", "row_stats", "add_bias", "saxpy_kernel", "blur_rows", "scale", "row_sum", "scale_partials", "integrate", "row_total", "row_stats_online", "scale_packed", "brighten", "fill_rows", "column_sums", "sample_frame", "sum_tiles", "combine_rows", "dump_rows", "residual_add", "block_sum", "partial_sums", "partial_sums_unrolled", "smooth_rows", "scale_pitched", "blur", "seed_states", "count_inside", "block_prefix", "warp_any", "row_sum_kernel", "row_max_kernel", "shift_values", "shift_values4", "shift_values4_unchecked", "tile_mm_kernel", "mapped_mm_kernel", "grid_sum", "tiled_product", "fade_rows", "butterfly", "warp_sums", "wmma_gemm", "scale_small", "scale_large", "copy_tiles", "transpose_tiles", "square", "halve_small", "scale_mode", "double_all", "scale_by_row_max", "add_offset", "softclamp_kernel", "row_center_kernel", "sort_tiles", "merge_runs", "halve", "sort_runs", "stage_pixels", "pad_rows", "spin", "sweep_cache", "sort_in_tile", "merge_across_tiles", "count_positive", "fill_paths", "scale_paths", "rms_norm_kernel", "scale_all", "fill_ramp", "sum_squares", "fill_resident", "paint", "smooth", "divide_rows", "count_neighbours", "sum_resident", "seed_sobol", "seed_mrg", "fill_tiles", "block_sums", "warp_partials", "add_halves", "darken", "lighten", "scale_row_chunks", "transform", "transform_back", "shear", "sum_pass", "invert_levels", "widen_pairs", "reset_progress", "shrink_levels", "double_values", "add_rows", "transpose_kernel", "transpose_tiles_kernel", "head_scale_kernel", "mma_tile", "value_mix_kernel", "hgemm_naive_kernel", "stage_rows", "scale_values", "flip_tiles", "halve_values", "block_partial_sums", "widen_signal", "weight_bins", "tiled_half_gemm", "edge_strength", "invert_quads", "transpose_naive", "increment", "row_block_sums", "scale_tiles", "clamp_values", "sum_pairs", "fused_bias_gelu", "bias_relu", "wide_pass", "row_pass", "reverse_rows", "halve_strided", "scale_row_params", "mix_params", "shift_values", "scale_rows_vec", "negate_rows", "blend", "column_sum_kernel", "shift_rows", "write_ramp", "thread_stacks", "shift_add_kernel", "row_means", "scale_rows_kernel", "box_pool_kernel", "row_softmax_kernel", "causal_softmax_kernel", "clamp_values", "patch_max_forward_kernel", "patch_max_backward_kernel", "chunked_scale_kernel", "pair_rotate_kernel", "row_square_sums", "divide_by_deviation", "row_sums", "divide_by_sums", "grid_pool_kernel", "gather_rows", "scatter_pooled", "embed_tokens", "gather_points", "pair_distances_kernel", "blend_neighbours_kernel", "gather_columns_forward_kernel", "gather_columns_backward_kernel", "column_pool_forward_kernel", "column_pool_backward_kernel", "BlendPointsKernel", "ScaleChannelsKernel", "NearestPointsKernel", "fill_bytes", "scale_signal", "fill_from", "shade_pixels", "fill_pixels", "swap_sort_kernel", "rank_sort_kernel", "pair_sort_kernel", "tint_frame", "clear_bytes", "shift_ids", "mark_first_edges", "clear_flags", "pair_products", "slice_view", "warp_image", "advance_kernel", "sgd_kernel", "gemmNaiveKernel", "gemmTiledKernel", "gemmWideKernel", "gemm_naive_kernel", "gemm_tiled_kernel", "swizzled_gemm_kernel", "scale_states_kernel", "mma_rows", "scale_packed_rows", "count_mismatches", "integrate_table", "darken_image", "drift", "mark_cells", "widen", "narrow", "add_one", "subtract_one", "scale_solver_rows", "add_quads", "tile_sums", "sum_all"}
    for ready in ["tile_gemm", "scale_rows", "axpy", "copy_plain", "relu", "scale_vec", "row_stats", "add_bias", "saxpy_kernel", "blur_rows", "scale", "row_sum", "scale_partials", "integrate", "row_total", "row_stats_online", "scale_packed", "brighten", "fill_rows", "column_sums", "sum_tiles", "combine_rows", "residual_add", "partial_sums", "partial_sums_unrolled", "smooth_rows", "scale_pitched", "blur", "tiled_product", "fade_rows", "butterfly", "warp_sums", "wmma_gemm", "scale_small", "scale_large", "copy_tiles", "transpose_tiles", "square", "halve_small", "scale_mode", "double_all", "scale_by_row_max", "add_offset", "sort_tiles", "merge_runs", "sort_runs", "stage_pixels", "pad_rows", "spin", "sweep_cache", "sort_in_tile", "merge_across_tiles", "count_positive", "fill_paths", "scale_paths", "softclamp_kernel", "row_center_kernel", "rms_norm_kernel", "row_max_kernel", "shift_values", "shift_values4", "tile_mm_kernel", "mapped_mm_kernel", "scale_all", "sum_squares", "paint", "smooth", "divide_rows", "count_neighbours", "fill_resident", "sum_resident", "seed_sobol", "seed_mrg", "fill_tiles", "block_sums", "warp_partials", "add_halves", "darken", "scale_row_chunks", "transform", "transform_back", "sum_pass", "invert_levels", "widen_pairs", "reset_progress", "shrink_levels", "double_values", "add_rows", "value_mix_kernel", "hgemm_naive_kernel", "stage_rows", "scale_values", "flip_tiles", "halve_values", "block_partial_sums", "widen_signal", "weight_bins", "tiled_half_gemm", "edge_strength", "invert_quads", "transpose_naive", "increment", "row_block_sums", "scale_tiles", "clamp_values", "sum_pairs", "fused_bias_gelu", "wide_pass", "reverse_rows", "scale_row_params", "mix_params", "shift_values", "scale_rows_vec", "negate_rows", "blend", "column_sum_kernel", "shift_values4_unchecked", "shift_rows", "write_ramp", "thread_stacks", "shift_add_kernel", "row_means", "scale_rows_kernel", "box_pool_kernel", "bias_relu", "chunked_scale_kernel", "pair_rotate_kernel", "row_square_sums", "divide_by_deviation", "row_sums", "divide_by_sums", "grid_pool_kernel", "gather_rows", "scatter_pooled", "embed_tokens", "gather_points", "pair_distances_kernel", "blend_neighbours_kernel", "gather_columns_forward_kernel", "gather_columns_backward_kernel", "column_pool_forward_kernel", "column_pool_backward_kernel", "fill_bytes", "scale_signal", "shade_pixels", "swap_sort_kernel", "rank_sort_kernel", "tint_frame", "clear_bytes", "slice_view", "warp_image", "advance_kernel", "sgd_kernel", "gemmNaiveKernel", "gemmTiledKernel", "gemmWideKernel", "transpose_tiles_kernel", "gemm_naive_kernel", "gemm_tiled_kernel", "swizzled_gemm_kernel", "scale_states_kernel", "mma_rows", "scale_packed_rows", "count_mismatches", "integrate_table", "darken_image", "drift", "mark_cells", "widen", "narrow", "add_one", "subtract_one", "scale_solver_rows", "add_quads", "sum_all"]:
        assert by_kernel[ready]["stage"] == "ready", by_kernel[ready]
        assert by_kernel[ready]["compile"]["status"] == "compiled", by_kernel[ready]
    textures = [k for (file, _), k in zip(kernels, report["kernels"]) if file == "textures/image_kernels.cuh"]
    assert [(k["kernel"], k["stage"]) for k in textures] == [("blur_rows", "ready"), ("shade", "ready"), ("resample", "ready")]
    # A texture object the program never makes (it passes 0): its extent is left to the user.
    assert by_kernel["sample_frame"]["stage"] == "spec"
    assert by_kernel["sample_frame"]["spec_problems"] == ["extent x of texture `frame` is unknown: write an expression over the sizes and parameters, e.g. `h`"]
    # Left out by the preprocessor: the survey says which condition, not "undefined".
    assert by_kernel["dump_rows"]["stage"] == "compile"
    assert by_kernel["dump_rows"]["why"].startswith("the kernel is under `#ifdef WITH_DEBUG_KERNELS`, which this build's macros leave out")
    # Launches from the device: the survey says what the compile would need, and NVRTC's words.
    assert by_kernel["halve"]["stage"] == "compile"
    assert by_kernel["halve"]["why"].startswith("the kernel launches kernels itself (dynamic parallelism), which needs relocatable device code linked with the device runtime"), by_kernel["halve"]
    assert by_kernel["halve"]["why"].endswith('(identifier "cudaStreamCreateWithFlags" is undefined)'), by_kernel["halve"]
    # Never launched (nothing assigns it to the pointer): its launch stays unknown.
    assert by_kernel["copy_twice"]["stage"] == "spec"
    assert any("grid extent x is unknown" in p for p in by_kernel["copy_twice"]["spec_problems"])
    # A library kernel whose type and sizes only a running program says (tests/e2e/test_profile_cli.py
    # fills them from a capture).
    assert by_kernel["block_sum"]["stage"] == "spec"
    assert "capture a launch (`cutune profile --kernel block_sum -- CMD`)" in by_kernel["block_sum"]["spec_problems"][0]
    # Launched with class members a constructor sets: only the running program says them
    # (tests/e2e/test_profile_cli.py fills them from captures).
    for kernel in ("seed_states", "count_inside"):
        assert by_kernel[kernel]["stage"] == "spec", by_kernel[kernel]
        assert any(p.startswith("block extent x: `m_block_size` is a size no shape gives (it is the member `m_block_size` of `Estimator`, read in `Estimator::run` (estimator.cu:") for p in by_kernel[kernel]["spec_problems"]), by_kernel[kernel]
    # One block whose threads are the data's elements: the block may not vary, so its loop's
    # unroll factor is the choice; a warp's vote with no loop has nothing to vary but compiler
    # options, and the survey says why.
    assert by_kernel["block_prefix"]["stage"] == "ready"
    assert by_kernel["block_prefix"]["params"] == ["fast_math=0", "max_registers=0", "BLOCK_PREFIX_UNROLL_STEP=0"]
    assert by_kernel["warp_any"]["stage"] == "parameters"
    assert by_kernel["warp_any"]["why"] == (
        "no execution parameter was found, only compiler options (launch-choices: the launch at line 18 makes no run-time choice"
        " that may vary alone: `lanes` also sizes `flags` (lanes), so another block would change the problem, not only the launch)"
    )
    # A cooperative launch whose block the occupancy calculator picks: that name stays for a
    # capture to fill (tests/e2e/test_profile_cli.py), not the `0` it was declared with.
    assert by_kernel["grid_sum"]["stage"] == "spec"
    assert by_kernel["grid_sum"]["why"].startswith("block extent x: `threads` is a size no shape gives (the program sets it with `cudaOccupancyMaxPotentialBlockSize` in `main` (grid_sum.cu:"), by_kernel["grid_sum"]
    # A count stepped in a loop as many times as the caller says: no number, not its first.
    assert by_kernel["fill_ramp"]["stage"] == "spec"
    assert by_kernel["fill_ramp"]["why"].startswith("value of scalar argument `n`: `n` is a size no shape gives (the program steps `n` in a loop in `ramp` (scale.cu:35)"), by_kernel["fill_ramp"]
    # Rows shortened and the batch grown by a loop's header before the last launch: what the
    # loop leaves has no number, not the first row length's quarter (262,144 threads a block).
    assert by_kernel["row_pass"]["stage"] == "spec"
    assert by_kernel["row_pass"]["why"].startswith("grid extent x: `batch` is a size no shape gives (the program steps `batch` in a loop in `transform` (transform.cu:37)"), by_kernel["row_pass"]
    assert by_kernel["wide_pass"]["stage"] == "ready"
    # Launched by no program: ready on sizes of templatize's choosing, which the survey names.
    unlaunched = [k for (file, _), k in zip(kernels, report["kernels"]) if file.startswith("unlaunched_kernels/")]
    assert [(k["kernel"], k["stage"], k["chosen_sizes"]) for k in unlaunched] == [("scale_values", "ready", ["count"]), ("add_quads", "ready", ["length"]), ("tile_sums", "spec", []), ("sum_all", "ready", ["count"])]
    assert report["totals"] == {"kernels": 218, "ready": 197, "spec": 18, "compile": 2, "parameters": 1}
    assert sorted(p.name for p in root.rglob("*")) == before

    text = cutune("survey", str(root))
    assert "218 kernels under" in text.stdout and "197 ready to tune (90%), 3 of them on sizes templatize chose;" in text.stdout


def test_a_run_time_block_size_swept_by_main_becomes_a_launch_parameter(tmp_path: Path):
    root = project(tmp_path, "runtime_block")
    spec, report = templatized_spec_and_report(root, "scale.cu", "scale_rows")
    assert "launch-choices: launch parameters from the launch at line" in report
    block = next(p for p in spec["params"] if p["name"] == "block_size")
    # The sweep's values, the commented-out one left out; the first is the default.
    assert block == {**block, "kind": "launch", "default": 64, "values": [64, 128, 256, 512]}
    assert spec["block"] == ["block_size"] and spec["grid"] == ["rows"]
    assert spec["shared_bytes"] == "block_size * 4"
    assert "block_size % 32 == 0" in spec["restrictions"]
    assert spec["shapes"] == [{"rows": 4096, "cols": 1000}]


def test_a_kernel_in_a_header_gets_its_launch_type_and_sizes_from_other_files(tmp_path: Path):
    root = project(tmp_path, "split_files")
    spec, report = templatized_spec_and_report(root, "kernels.cuh", "axpy")
    assert "launch.cuh:7" in report
    assert spec["template_args"] == ["float"]
    assert spec["block"] == ["AXPY_BLOCK_SIZE"]
    assert spec["grid"] == ["ceil_div(n, AXPY_BLOCK_SIZE)"]
    block = next(p for p in spec["params"] if p["name"] == "AXPY_BLOCK_SIZE")
    assert block["kind"] == "launch" and block["default"] == 256
    assert [a["dtype"] for a in spec["args"]] == ["f32", "f32", "f32", "i32"]
    assert [a.get("length") for a in spec["args"][:2]] == ["n", "n"]
    assert spec["shapes"][0] == {"n": 4194304}
    # Nothing in the header needed a rewrite, and the other files are untouched.
    assert (root / "kernels.cuh").read_text() == (WORKSPACE / "split_files" / "kernels.cuh").read_text()
    check = cutune("check", "kernels.cuh", "--kernel", "axpy", "--sample", "4", "--json", cwd=root)
    assert check.returncode == 0, check.stdout + check.stderr
    assert json.loads(check.stdout)["failed"] == 0


def test_a_project_checked_out_in_a_folder_the_outer_repository_ignores_is_read_as_its_own(tmp_path: Path):
    # `vendor/` is ignored by the outer repository, whose index leaves it out: the vendored
    # project is a workspace of its own, where its launches are.
    outer = tmp_path / "outer"
    (outer / ".git").mkdir(parents=True)
    (outer / ".gitignore").write_text("/vendor/\n")
    root = outer / "vendor" / "split_files"
    shutil.copytree(WORKSPACE / "split_files", root, ignore=shutil.ignore_patterns("compile_commands.json"))
    spec, report = templatized_spec_and_report(root, "kernels.cuh", "axpy")
    assert "launch.cuh:7" in report
    assert spec["shapes"][0] == {"n": 4194304}
    survey = cutune("survey", str(outer / "vendor"), "--json")
    assert survey.returncode == 0, survey.stderr
    assert json.loads(survey.stdout)["root"] == str((outer / "vendor").resolve())


def test_a_kernel_launched_through_a_function_pointer_and_a_typedef_from_a_header(tmp_path: Path):
    root = project(tmp_path, "function_pointer")
    run = cutune("templatize", "copy.cu", "--kernel", "copy_plain", "--write", cwd=root)
    assert run.returncode == 0, run.stderr
    spec = spec_of((root / "copy.cutune.toml").read_text())
    threads = next(p for p in spec["params"] if p["name"] == "threads")
    assert threads["kind"] == "launch" and threads["default"] == 128

    root = project(tmp_path, "typedef_header")
    run = cutune("templatize", "relu.cu", "--kernel", "relu", "--write", cwd=root)
    assert run.returncode == 0, run.stderr
    spec = spec_of((root / "relu.cutune.toml").read_text())
    # `real` is `half` because relu.cu defines USE_HALF before including common.h.
    assert [a["dtype"] for a in spec["args"]] == ["f16", "f16", "i32"]
    assert "#include" not in spec["baseline"]["source"].split("__global__")[0].replace("#include <cuda_fp16.h>", "")


async def test_the_code_action_templatizes_a_header_kernel_with_its_launch_elsewhere(client, tmp_path: Path):
    root = project(tmp_path, "split_files")
    spec = await code_action_spec(client, root / "kernels.cuh", "y[i] = a * x[i]", "axpy")
    assert spec["template_args"] == ["float"]
    assert next(p for p in spec["params"] if p["name"] == "AXPY_BLOCK_SIZE")["kind"] == "launch"


async def test_the_server_indexes_the_workspace_in_the_background_and_refreshes_it_on_save(client, tmp_path: Path):
    root = tmp_path / "project"
    root.mkdir()
    (root / ".git").mkdir()
    kernel = root / "scale.cu"
    kernel.write_text("__global__ void scale(float *x, int n)\n{\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) x[i] *= 2.0f;\n}\n")
    text = kernel.read_text()
    await open_document(client, kernel.as_uri(), text)
    await logged(client, types.MessageType.Info, "workspace index of", str(root), "1 files")

    # A launcher written after the index was built, then saved from the editor.
    runner = root / "runner.cu"
    runner.write_text("void run(float *x, int n)\n{\n    scale<<<(n + 63) / 64, 64>>>(x, n);\n}\n")
    await open_document(client, runner.as_uri(), runner.read_text())
    client.text_document_did_save(types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=runner.as_uri())))
    await logged(client, types.MessageType.Info, "workspace index of", "2 files, 1 read")

    actions = await code_actions(client, kernel.as_uri(), line_of(text, "x[i] *= 2.0f"), 8)
    action = await resolved(client, next(a for a in actions if "scale" in a.title))
    spec_text = next(c.edits[0].new_text for c in action.edit.document_changes if isinstance(c, types.TextDocumentEdit) and c.text_document.uri.endswith("scale.cutune.toml"))
    spec = spec_of(spec_text)
    # The launch in the saved file, through the refreshed index: its literal block is a
    # launch parameter tied into the grid.
    assert spec["block"] == ["SCALE_BLOCK_SIZE"]
    assert spec["grid"] == ["ceil_div(n, SCALE_BLOCK_SIZE)"]
    assert not any("still being built" in m.message for m in client.log_messages)


def templatized_spec_and_report(root: Path, file: str, kernel: str) -> tuple[dict, str]:
    """`cutune templatize --write` of `kernel`, its spec checked: the kernel's spec entry and
    the transforms' report."""
    run = cutune("templatize", file, "--kernel", kernel, "--write", cwd=root)
    assert run.returncode == 0, run.stderr
    check = cutune("spec", "check", str(Path(file).with_suffix(".cutune.toml")), cwd=root)
    assert check.returncode == 0, check.stdout + check.stderr
    specs = tomllib.loads((root / Path(file).with_suffix(".cutune.toml")).read_text())["kernels"]
    return next(k for k in specs if k["name"] == kernel), run.stderr


def templatized_spec(root: Path, file: str, kernel: str) -> dict:
    return templatized_spec_and_report(root, file, kernel)[0]


def test_a_buffer_of_structs_is_the_bytes_the_structs_definition_lays_out(tmp_path: Path):
    root = project(tmp_path, "struct_buffers")
    # `struct Particle` is a float3, a float alias, an int and a double: 32 bytes with the
    # double aligned to 8; `Cell` adds three bytes to that base, rounded up to 40. The program
    # allocates `count * sizeof(struct Particle)` and `cell_count * sizeof(Cell)`.
    drift = templatized_spec(root, "particles.cu", "drift")
    particles = next(a for a in drift["args"] if a["name"] == "particles")
    assert (particles["dtype"], particles["length"], drift["shapes"]) == ("u8", "count * 32", [{"count": 65536}]), drift
    cells = templatized_spec(root, "particles.cu", "mark_cells")
    assert next(a for a in cells["args"] if a["name"] == "cells")["length"] == "cell_count * 40", cells
    survey = json.loads(cutune("survey", str(root), "--json").stdout)
    assert {k["kernel"]: k["stage"] for k in survey["kernels"]} == {"drift": "ready", "mark_cells": "ready"}, survey["kernels"]


def test_a_struct_an_init_function_fills_through_a_pointer_is_read_member_by_member(tmp_path: Path):
    root = project(tmp_path, "filled_state")
    # `typedef struct { … } SolverState;` filled by `init_state(&state, ROWS, COLS)` (members
    # from its parameters and from a local worked out with a macro), launched as `*state`
    # from a function that takes the state's address.
    spec = templatized_spec(root, "state.cu", "scale_solver_rows")
    assert spec["shapes"] == [{"COLS": 300, "ROWS": 512, "state_cols": 300, "state_padded_cols": 320, "state_rows": 512}], spec["shapes"]
    assert spec["grid"] == ["ceil_div(state_cols, SCALE_SOLVER_ROWS_BLOCK_SIZE)", "state_rows"], spec
    state = next(a for a in spec["args"] if a["name"] == "state")
    fields = {f["name"]: f.get("value", f.get("length")) for f in state["fields"]}
    assert (state["struct"], fields) == ("SolverState", {"rows": "state_rows", "cols": "state_cols", "padded_cols": "state_padded_cols", "factors": "ROWS"}), state
    assert next(a for a in spec["args"] if a["name"] == "matrix")["length"] == "ROWS * (ceil_div(COLS, 32) * 32)", spec["args"]


def test_kernels_inside_namespaces_compile_by_the_name_the_spec_gives(tmp_path: Path):
    root = project(tmp_path, "namespaced_kernels")
    # `precision::kernels::widen` and `narrow` of an anonymous namespace inside `precision`:
    # the slice names each at file scope, where NVRTC is asked for it.
    survey = json.loads(cutune("survey", str(root), "--json").stdout)
    stages = {k["kernel"]: (k["stage"], k["compile"]["status"]) for k in survey["kernels"]}
    assert stages == {"widen": ("ready", "compiled"), "narrow": ("ready", "compiled")}, survey["kernels"]
    sliced = cutune("slice", "convert.cu", "--kernel", "widen", cwd=root)
    assert sliced.returncode == 0 and sliced.stdout.endswith("using precision::kernels::widen;\n"), sliced.stdout
    widen = templatized_spec(root, "convert.cu", "widen")
    # The launcher in the namespace gives the grid (each thread then widens WIDEN_VEC halves).
    assert (widen["grid"], widen["block"], widen["shapes"]) == (["ceil_div(ceil_div(n, WIDEN_THREADS), WIDEN_VEC)"], ["WIDEN_THREADS"], [{"n": 1048576}]), widen


def test_a_grid_rounded_up_with_ceil_follows_the_block_and_a_ceil_of_integers_is_read_as_c_rounds_it(tmp_path: Path):
    root = project(tmp_path, "rounded_grids")
    # `ceil(n / 128.0f)`: the block written as a float divisor becomes the parameter, cast to
    # keep the division in floating point, and the grid rounds up with it.
    add, report = templatized_spec_and_report(root, "blocks.cu", "add_one")
    block = add["block"][0]
    assert add["grid"][0].startswith(f"ceil_div(ceil_div(n, {block})"), add
    assert f"add_one<<<((ceil(n / (float){block}))" in (root / "blocks.cu").read_text()
    # `ceil(n / 128)` divides integers first: the program launches n / 128 blocks, rounded down,
    # and the spec says so (with a note on the elements left without a thread).
    subtract, report = templatized_spec_and_report(root, "blocks.cu", "subtract_one")
    block = subtract["block"][0]
    assert subtract["grid"][0].startswith(f"ceil_div(n // {block}"), subtract
    assert "note: `ceil(n / 128)` divides integers, which C rounds down before `ceil` sees them" in report, report


def test_a_kernel_no_program_launches_is_launched_as_its_flat_index_asks_on_sizes_it_names_as_chosen(tmp_path: Path):
    root = project(tmp_path, "unlaunched_kernels")
    (root / ".git").mkdir()
    scale, report = templatized_spec_and_report(root, "kernels.cu", "scale_values")
    assert (scale["grid"], scale["block"]) == (["ceil_div(count, SCALE_VALUES_BLOCK_SIZE)"], ["SCALE_VALUES_BLOCK_SIZE"])
    assert (scale["shapes"], scale["chosen"]) == ([{"count": 16777216}], {"count": "no program launches `scale_values`"})
    block = next(p for p in scale["params"] if p["name"] == "SCALE_VALUES_BLOCK_SIZE")
    assert (block["kind"], block["default"], block["values"]) == ("launch", 256, [32, 64, 128, 256, 512, 1024])
    assert "launch-choices: no program launches `scale_values`: its flat index asks for `ceil_div(count, SCALE_VALUES_BLOCK_SIZE)` blocks" in report, report
    # A float4 per thread: the grid covers a quarter as many threads.
    quads = templatized_spec(root, "kernels.cu", "add_quads")
    assert quads["grid"] == ["ceil_div(length, 4 * ADD_QUADS_BLOCK_SIZE)"]
    # The check says the sizes are not the program's until the user writes theirs.
    check = cutune("spec", "check", "kernels.cutune.toml", cwd=root)
    assert "warning: size `count` = 16777216 is templatize's choice (no program launches `scale_values`)" in check.stdout, check.stdout
    # A block the kernel takes as a template parameter, its tile sized by it: the launch's block
    # is that parameter, and one atomic total is one element.
    sums = templatized_spec(root, "kernels.cu", "sum_all")
    assert (sums["grid"], sums["block"], sums["chosen"]) == (["ceil_div(count, THREADS)"], ["THREADS"], {"count": "no program launches `sum_all`"})
    assert next(a for a in sums["args"] if a["name"] == "total")["length"] == "1"
    # Threads that sum a tile together: no launch is guessed, the `?` stays for the user.
    run = cutune("templatize", "kernels.cu", "--kernel", "tile_sums", "--diff", cwd=root)
    assert "no launch of the kernel in this file or the workspace: grid, block and sizes are left as `?`" in run.stderr, run.stderr
    assert 'grid = ["?"]' in run.stdout


def test_a_double_given_a_size_written_as_a_shift_is_its_value(tmp_path: Path):
    root = project(tmp_path, "shifted_sizes")
    spec = templatized_spec(root, "compare.cu", "count_mismatches")
    assert spec["shapes"] == [{"n": 1048576}]
    args = {a["name"]: a for a in spec["args"]}
    # `check_results(n, n, …)` with `int n = 1 << 20;`: the double compared with is the size.
    assert args["expected"]["dtype"] == "f64" and args["expected"]["value"] == "1048576"
    # `cudaMalloc(&mismatches, (1u << 4) * sizeof(int))`: integer sizes keep the power.
    assert args["mismatches"]["length"] == "2 ** 4"
    assert "unknown" not in spec


def test_sizes_kept_in_a_cuda_extent_or_vector_are_read_member_by_member(tmp_path: Path):
    root = project(tmp_path, "extent_values")
    # `cudaExtent extent = {TABLE_STEPS, 0, 0};` then `divide_up(extent.width, block.x)`.
    table = templatized_spec(root, "steps.cu", "integrate_table")
    assert table["grid"] == ["ceil_div(TABLE_STEPS, INTEGRATE_TABLE_BLOCK_SIZE)"]
    # `int2 size = make_int2(IMAGE_W, IMAGE_H);` then `divide_up(size.x, block.x)`, `size.y`.
    image = templatized_spec(root, "steps.cu", "darken_image")
    assert image["grid"] == ["ceil_div(IMAGE_W, DARKEN_IMAGE_BLOCK_X)", "ceil_div(IMAGE_H, DARKEN_IMAGE_BLOCK_Y)"]
    assert image["shapes"] == [{"IMAGE_H": 480, "IMAGE_W": 640}]


def test_texture_objects_become_textures_with_the_programs_extent_format_and_sampling(tmp_path: Path):
    root = project(tmp_path, "textures")
    # Made in main, passed down by a launcher: a float array, filtered linearly.
    blur = templatized_spec(root, "image_kernels.cuh", "blur_rows")
    src = next(a for a in blur["args"] if a["name"] == "src")
    assert src == {"name": "src", "dtype": "f32", "init": {"dist": "uniform", "low": -1.0, "high": 1.0}, "texture": {"extent": ["width", "height"], "filter": "linear"}}
    assert blur["shapes"][0] == {"width": 1280, "height": 720}

    # Made at file scope by an upload function main calls: bytes read back as floats.
    shade = templatized_spec(root, "image_kernels.cuh", "shade")
    pixels = next(a for a in shade["args"] if a["name"] == "pixels")
    assert pixels["dtype"] == "u8" and pixels["init"] == {"dist": "integers", "low": 0, "high": 128}
    assert pixels["texture"] == {"extent": ["width", "height"], "channels": 4, "read": "normalized_float"}

    # Returned by a helper that takes the sizes: a 3D array sampled at normalized coordinates.
    resample = templatized_spec(root, "image_kernels.cuh", "resample")
    volume = next(a for a in resample["args"] if a["name"] == "volume")
    assert volume["texture"] == {"extent": ["nx", "ny", "nz"], "filter": "linear", "address": "wrap", "normalized_coords": True}

    checked = cutune("check", "image_kernels.cuh", "--kernel", "shade", "--sample", "2", "--json", cwd=root)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert json.loads(checked.stdout)["failed"] == 0


def test_textures_an_init_function_or_the_driver_api_makes_have_the_arrays_extent_and_sampling(tmp_path: Path):
    root = project(tmp_path, "textures")
    # A file-scope texture object, made by `init_volume(voxels, volume_extent)`: the extent is the
    # viewer's `make_cudaExtent(48, 40, 24)`, handed to the init function as a parameter.
    view = templatized_spec(root, "slices.cu", "slice_view")
    volume = next(a for a in view["args"] if a["name"] == "volume")
    assert volume["dtype"] == "u8"
    assert volume["texture"] == {"extent": ["48", "40", "24"], "filter": "linear", "normalized_coords": True, "read": "normalized_float"}
    assert view["shapes"] == [{"width": 320, "height": 240}]
    # `cuArrayCreate` with a `CUDA_ARRAY_DESCRIPTOR`, `cuTexObjectCreate` with the driver's
    # sampling flags, launched with `cuLaunchKernel`.
    warp = templatized_spec(root, "warp_kernel.cu", "warp_image")
    image = next(a for a in warp["args"] if a["name"] == "image")
    assert image["dtype"] == "f32"
    assert image["texture"] == {"extent": ["width", "height"], "filter": "linear", "address": "mirror", "normalized_coords": True}
    assert warp["shapes"] == [{"width": 640, "height": 480}]
    # `CUtexObject` of the `<cuda.h>` NVRTC cannot open reaches the compile as its typedef.
    checked = cutune("check", "warp_kernel.cu", "--kernel", "warp_image", "--sample", "2", "--json", cwd=root)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert json.loads(checked.stdout)["failed"] == 0


def test_an_object_made_with_new_in_an_init_function_gives_its_methods_launches_their_sizes(tmp_path: Path):
    root = project(tmp_path, "heap_objects")
    (root / ".git").mkdir()
    spec, report = templatized_spec_and_report(root, "swarm_cuda.cu", "advance_kernel")
    # `swarm->step(0.01f)` on the file-scope `Swarm *swarm`, in the `display` callback `main`
    # hands to the windowing library after `initSwarm(bodies)` made it: `swarm = new
    # Swarm(count, 0.5f)` sets `m_count` from `bodies = 1 << 14`.
    assert spec["shapes"] == [{"count": 16384}]
    assert spec["grid"] == ["ceil_div(count, threads)"] and spec["block"] == ["threads"]
    # Buffers the constructor allocates through a helper, by the member it set.
    assert [(a["name"], a.get("length"), a.get("value")) for a in spec["args"]] == [("positions", "count * 4", None), ("velocities", "count * 4", None), ("dt", None, "0.01"), ("count", None, "count")]
    # `<GL/freeglut.h>` and `<cuda_gl_interop.h>` are host headers the slice leaves out.
    checked = cutune("check", "swarm_cuda.cu", "--kernel", "advance_kernel", "--sample", "2", "--json", cwd=root)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert json.loads(checked.stdout)["failed"] == 0


async def test_the_code_action_reads_an_object_made_with_new_in_an_init_function(client, tmp_path: Path):
    root = project(tmp_path, "heap_objects")
    (root / ".git").mkdir()
    spec = await code_action_spec(client, root / "swarm_cuda.cu", "float4 v = velocities[i]", "advance_kernel")
    assert spec["shapes"] == [{"count": 16384}]


def test_template_parameters_a_launcher_elsewhere_instantiates_from_its_constants_are_tuned(tmp_path: Path):
    root = project(tmp_path, "tiled_gemm")
    (root / ".git").mkdir()
    spec, report = templatized_spec_and_report(root, "src/kernels/tile_gemm.cuh", "tile_gemm")
    assert "template parameter `TILE_M` is 64 at the launch in runner.cu:11" in report
    assert spec["template_args"] == ["TILE_M", "TILE_N", "TILE_K", "ROWS_PER_THREAD"]
    params = {p["name"]: p for p in spec["params"]}
    assert [(params[n]["kind"], params[n]["default"]) for n in spec["template_args"]] == [("template", 64), ("template", 64), ("template", 8), ("template", 8)]
    # The launcher's arithmetic and the function-like macro it uses, in the kernel's names.
    assert spec["block"] == ["TILE_M * TILE_N // ROWS_PER_THREAD"]
    assert spec["grid"] == ["ceil_div(N, TILE_N)", "ceil_div(M, TILE_M)"]
    # The kernel's own assumptions about its block, and the hardware's.
    assert spec["restrictions"] == [
        "TILE_M * TILE_N // ROWS_PER_THREAD >= 32",
        "TILE_M * TILE_N // ROWS_PER_THREAD <= 1024",
        "TILE_M * TILE_K == (TILE_M * TILE_N // ROWS_PER_THREAD)",
        "TILE_N * TILE_K == (TILE_M * TILE_N // ROWS_PER_THREAD)",
    ]
    # `for (int size : sizes) { m = n = k = size; ... }`: the largest of the sweep; buffers of
    # `sizes[sizes.size() - 1]` elements squared.
    assert spec["shapes"] == [{"M": 2048, "N": 2048, "K": 2048}]
    assert [a.get("length") for a in spec["args"][3:]] == ["2048 * 2048"] * 3
    # `uint` and `LANES` (declared by the header that kernels.cuh, one folder up, includes first)
    # reach NVRTC through the slice.
    checked = cutune("check", "src/kernels/tile_gemm.cuh", "--kernel", "tile_gemm", "--json", cwd=root)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert json.loads(checked.stdout)["results"][0]["status"] == "compiled"


async def test_the_code_action_tunes_the_template_parameters_a_launcher_elsewhere_instantiates(client, tmp_path: Path):
    root = project(tmp_path, "tiled_gemm")
    # A project's root (its `.git`) spans src/ and src/kernels/, where the launch and the kernel are.
    (root / ".git").mkdir()
    spec = await code_action_spec(client, root / "src" / "kernels" / "tile_gemm.cuh", "float b = b_tile", "tile_gemm")
    assert spec["template_args"] == ["TILE_M", "TILE_N", "TILE_K", "ROWS_PER_THREAD"]
    assert next(p for p in spec["params"] if p["name"] == "ROWS_PER_THREAD")["default"] == 8


def test_a_helper_that_sets_the_launch_through_reference_parameters_gives_grid_block_and_type(tmp_path: Path):
    root = project(tmp_path, "launch_helper")
    (root / ".git").mkdir()
    # `case 1:` of the variant settles the helper's conditions: two elements per thread, at most
    # `max_blocks` blocks; the unrolled kernel's template block moves with the launch's.
    unrolled, report = templatized_spec_and_report(root, "partial_sums.cu", "partial_sums_unrolled")
    assert unrolled["template_args"] == ["int", "THREADS"]
    assert unrolled["grid"] == ["min(128, ceil_div(n, threads * 2))"]
    assert unrolled["block"] == ["threads"]
    assert "THREADS == threads" in unrolled["restrictions"]
    # One partial sum per block: the buffer the program sizes by the helper's grid.
    assert [a.get("length") for a in unrolled["args"][:2]] == ["n", "min(128, ceil_div(n, threads * 2))"]
    # The program's own run (not the `--sweep` from one element up), and its main's first type,
    # not the `run<double>` of the other program beside it.
    assert unrolled["shapes"] == [{"n": 4194304}]
    threads = next(p for p in unrolled["params"] if p["name"] == "threads")
    assert threads == {**threads, "kind": "launch", "default": 256}

    # `case 0:`: one element per thread; the helper's thread count, a conditional over a
    # function the spec cannot call, evaluated where the size settles it.
    plain, report = templatized_spec_and_report(root, "partial_sums.cu", "partial_sums")
    assert plain["grid"] == ["ceil_div(n, threads)"]
    threads = next(p for p in plain["params"] if p["name"] == "threads")
    assert threads == {**threads, "kind": "launch", "default": 256, "origin": "`threads` as `launch_shape` sets it in `run`"}
    assert "`threads` = 256 (`threads` as `launch_shape` sets it in `run`)" in report
    checked = cutune("check", "partial_sums.cu", "--kernel", "partial_sums_unrolled", "--sample", "6", "--json", cwd=root)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    results = json.loads(checked.stdout)
    assert results["failed"] == 0 and results["compiled"] > 0, results


async def test_the_code_action_reads_a_launch_helper_with_reference_parameters(client, tmp_path: Path):
    root = project(tmp_path, "launch_helper")
    (root / ".git").mkdir()
    spec = await code_action_spec(client, root / "partial_sums.cu", "sum += in[i + THREADS]", "partial_sums_unrolled")
    assert spec["grid"] == ["min(128, ceil_div(n, threads * 2))"]
    assert spec["template_args"] == ["int", "THREADS"]


async def test_the_code_action_reads_sizes_an_object_keeps_and_the_device_reports(client, tmp_path: Path):
    root = project(tmp_path, "class_state")
    (root / ".git").mkdir()
    spec = await code_action_spec(client, root / "simulation.cu", "values[i] *= factor", "scale_paths")
    assert spec["template_args"] == ["float"] and spec["shapes"] == [{"m_paths": 2**20}]
    probe = project(tmp_path, "host_values")
    (probe / ".git").mkdir()
    spin = await code_action_spec(client, probe / "probe.cu", "elapsed[0] = clock64() - start", "spin")
    assert next(a for a in spin["args"] if a["name"] == "cycles")["value"] == "ms * clock_khz"


async def test_the_code_action_takes_the_first_pass_of_a_sweep_that_reaches_the_launch(client, tmp_path: Path):
    root = project(tmp_path, "sweep_dispatch")
    (root / ".git").mkdir()
    spec = await code_action_spec(client, root / "sort.cu", "unsigned partner = i ^ stride", "merge_across_tiles")
    assert spec["shapes"] == [{"length": 2048, "runs": 512}]


def test_a_texture_the_spec_cannot_make_is_refused_with_the_reason(tmp_path: Path):
    root = project(tmp_path, "textures")
    assert cutune("templatize", "image_kernels.cuh", "--kernel", "shade", "--write", cwd=root).returncode == 0
    spec_path = root / "image_kernels.cutune.toml"
    text = spec_path.read_text()
    # Linear filtering of integers read as integers, and a cube map of 5 faces.
    broken = text.replace('channels = 4, read = "normalized_float"', 'channels = 4, filter = "linear"').replace('extent = ["width", "height"]', 'extent = ["width", "width", "5"], layout = "cubemap"')
    spec_path.write_text(broken)
    check = cutune("spec", "check", spec_path.name, cwd=root)
    assert check.returncode == 1
    assert "texture `pixels` is a cube map, which has 6 faces: its extent is [w, w, 6]" in check.stdout + check.stderr
    assert 'texture `pixels` filters linearly, which needs float texels or read = "normalized_float"' in check.stdout + check.stderr


async def test_the_code_action_makes_a_texture_argument_of_a_header_kernel(client, tmp_path: Path):
    root = project(tmp_path, "textures")
    spec = await code_action_spec(client, root / "image_kernels.cuh", "sum += tex2D<float>", "blur_rows")
    src = next(a for a in spec["args"] if a["name"] == "src")
    assert src["texture"] == {"extent": ["width", "height"], "filter": "linear"}


def test_host_values_come_from_static_members_default_arguments_and_helper_functions(tmp_path: Path):
    root = project(tmp_path, "host_values")
    spec = templatized_spec(root, "train.cu", "scale_vec")
    # `vec_t::lanes` is `sizeof(int4) / sizeof(real)` with `real` a bf16 under `USE_BF16`: 8;
    # `div_up` is the header's one-line helper, inlined.
    assert spec["grid"] == ["ceil_div(n, block_size * 8)"]
    block = next(p for p in spec["params"] if p["name"] == "block_size")
    assert (block["kind"], block["default"], block["values"]) == ("launch", 128, [128, 256, 512])
    # `1.0f / sqrtf(temperature)` with the launcher's default argument `temperature = 2.0f`.
    factor = next(a for a in spec["args"] if a["name"] == "factor")
    assert abs(float(factor["value"]) - 2 ** -0.5) < 1e-12
    assert [a["length"] for a in spec["args"] if a["name"] in ("out", "in")] == ["n", "n"]
    assert spec["shapes"][0] == {"n": 4 * 256 * 384}


def test_device_properties_become_device_sizes_and_odd_allocations_keep_their_true_length(tmp_path: Path):
    root = project(tmp_path, "host_values")
    stats = templatized_spec(root, "train.cu", "row_stats")
    # `num_sms` is read from `prop.multiProcessorCount`: the spec's `sm_count`, the H100's count
    # until tuning sets the GPU's own.
    assert "sm_count * 2" in stats["grid"][0]
    assert stats["shapes"][0] == {"rows": 1024, "cols": 384, "sm_count": 132}
    # bf16 statistics allocated with `sizeof(float)` bytes each: twice as many elements.
    assert next(a for a in stats["args"] if a["name"] == "mean")["length"] == "rows * 2"

    bias = templatized_spec(root, "train.cu", "add_bias")
    # `k = d_qkv + B * T * C` of a `3 * B * T * C` allocation, passed on as `n = B * T * C`.
    y = next(a for a in bias["args"] if a["name"] == "y")
    assert y["length"] == "3 * n - n"


def test_device_limits_are_numbers_and_the_clock_and_cache_are_device_sizes(tmp_path: Path):
    root = project(tmp_path, "host_values")
    spin = templatized_spec(root, "probe.cu", "spin")
    # `cycles = (long long)(ms * clock_rate)` with `cudaDevAttrClockRate`: the GPU's own clock
    # when tuning, the H100's until then.
    assert next(a for a in spin["args"] if a["name"] == "cycles")["value"] == "ms * clock_khz"
    # `&d_elapsed[2 * s]`, `s` at its first pass: the buffer from that element on.
    assert next(a for a in spin["args"] if a["name"] == "elapsed")["length"] == "2 * streams - 2 * s"
    assert spin["shapes"] == [{"clock_khz": 1980000, "ms": 2, "s": 0, "streams": 8}]
    # `<<<1, 1>>>`: the block is lifted, the one block of the grid stays one.
    assert spin["grid"] == ["1"] and spin["block"] == ["SPIN_BLOCK_SIZE"]

    sweep = templatized_spec(root, "probe.cu", "sweep_cache")
    # `prop.maxGridSize[1]` is 65,535 on every GPU CUDA 13 supports; `prop.l2CacheSize` differs.
    assert sweep["grid"] == ["ceil_div(65535, SWEEP_CACHE_ITEMS_PER_THREAD)"]
    assert next(a for a in sweep["args"] if a["name"] == "n")["value"] == "l2_bytes // 4"
    assert sweep["shapes"] == [{"l2_bytes": 50 * 2**20}]

    count = templatized_spec(root, "probe.cu", "count_positive")
    # `dim3 threads(32, 8)` of a kernel whose only `__shared__` is a counter: both extents vary;
    # the grid of 32 blocks is no encoding of the block's 32.
    assert count["block"] == ["COUNT_POSITIVE_BLOCK_X", "COUNT_POSITIVE_BLOCK_Y"]
    assert count["grid"] == ["32"]


def test_a_launch_the_first_pass_of_a_sweep_does_not_reach_takes_the_first_pass_that_does(tmp_path: Path):
    root = project(tmp_path, "sweep_dispatch")
    # `for (length = 64; length <= N; length *= 2) sort_runs(d_keys, N / length, length)`, and
    # `sort_runs` merges across tiles only `if` not `length <= TILE`: from 2048 on, where the
    # inner loop's first pass (`stride = length / 2`) launches it.
    merge = templatized_spec(root, "sort.cu", "merge_across_tiles")
    assert merge["shapes"] == [{"length": 2048, "runs": 512}]
    assert next(a for a in merge["args"] if a["name"] == "stride")["value"] == "length // 2"
    # The tile sort runs on the first pass, as before.
    tile = templatized_spec(root, "sort.cu", "sort_in_tile")
    assert tile["shapes"] == [{"length": 64, "runs": 16384}]


def test_sizes_kept_in_an_objects_members_come_from_where_the_program_makes_the_object(tmp_path: Path):
    root = project(tmp_path, "class_state")
    # `sim.step(d_values)` in `Runner<Real>::operator()`, called as `runner()` in main; the
    # members from the constructor's initializer list and `Simulation<Real> sim(paths,
    # block_size)`, those from the runner's fields main sets (not the command line's).
    scale = templatized_spec(root, "simulation.cu", "scale_paths")
    assert scale["template_args"] == ["float"]
    assert scale["grid"] == ["ceil_div(m_paths, m_block_size)"]
    # The buffer `Runner` allocates `paths` long is `m_paths` long: the object is made from it.
    assert scale["shapes"] == [{"m_paths": 2**20}]
    assert next(a for a in scale["args"] if a["name"] == "values")["length"] == "m_paths"
    block = next(p for p in scale["params"] if p["name"] == "m_block_size")
    assert (block["kind"], block["default"]) == ("launch", 128)
    # `Real(0.5)`: a cast to the type the class is instantiated with.
    assert next(a for a in scale["args"] if a["name"] == "factor")["value"] == "0.5"
    # A method defined in the class template's body, in the header: the class's `Real`.
    fill = templatized_spec(root, "simulation.cuh", "fill_paths")
    assert fill["template_args"] == ["float"] and fill["shapes"] == [{"m_paths": 2**20}]
    assert next(a for a in fill["args"] if a["name"] == "values")["length"] == "m_paths"


def test_bench_index_reports_the_size_and_build_time_of_the_workspace_index(tmp_path: Path):
    root = project(tmp_path, "host_values")
    (root / ".git").mkdir()
    (root / "notes.txt").write_text("not a source file")
    run = cutune("bench", "--index", str(root), "--repeats", "2", "--json")
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    assert report["root"] == str(root)
    # train.cu, probe.cu and util.h; not the text file, not compile_commands.json.
    assert (report["files"], report["skipped"]) == (3, 0)
    sources = sum((root / name).stat().st_size for name in ("train.cu", "probe.cu", "util.h"))
    assert abs(report["source_mib"] * 2**20 - sources) < 1
    assert report["build"]["samples"] == 2 and report["build"]["median_us"] > 0


def test_a_kernel_launched_through_the_driver_api_gets_its_launch_and_arguments_from_the_array(tmp_path: Path):
    root = project(tmp_path, "samples_style")
    spec = templatized_spec(root, "saxpy_kernel.cu", "saxpy_kernel")
    # `cuLaunchKernel(saxpy, blocks, 1, 1, threads, 1, 1, ...)` of the function named
    # "saxpy_kernel", with `void *args[] = {(void *)&d_x, reinterpret_cast<void *>(&d_y), &a, &n}`.
    assert spec["grid"] == ["ceil_div(n, threads)", "1", "1"]
    assert spec["block"] == ["threads", "1", "1"]
    threads = next(p for p in spec["params"] if p["name"] == "threads")
    assert (threads["kind"], threads["default"]) == ("launch", 128)
    # `cuMemAlloc(&d_x, bytes)` with `bytes = n * sizeof(float)`.
    assert [(a["name"], a.get("length"), a.get("value")) for a in spec["args"]] == [("x", "n", None), ("y", "n", None), ("a", None, "2"), ("n", None, "n")]
    assert spec["shapes"] == [{"n": 3 << 20}]


def test_sizes_in_dim3_references_assigned_grids_and_literal_2d_blocks(tmp_path: Path):
    root = project(tmp_path, "samples_style")
    blur = templatized_spec(root, "image.cu", "blur_rows")
    # `image.x` of `const dim3 &image`, made by `main` as `dim3 image(1920, 1080, 1)`; the
    # command-line override under `if (argc > 1)` is not the program's default.
    assert blur["shapes"] == [{"image_x": 1920, "image_y": 1080}]
    assert blur["grid"] == ["ceil_div(image_x, BLUR_ROWS_BLOCK_X)", "ceil_div(image_y, BLUR_ROWS_BLOCK_Y)"]
    assert blur["block"] == ["BLUR_ROWS_BLOCK_X", "BLUR_ROWS_BLOCK_Y"]
    assert blur["restrictions"] == ["BLUR_ROWS_BLOCK_X * BLUR_ROWS_BLOCK_Y >= 32", "BLUR_ROWS_BLOCK_X * BLUR_ROWS_BLOCK_Y <= 1024"]
    defaults = {p["name"]: p["default"] for p in blur["params"] if p["kind"] == "launch"}
    assert defaults == {"BLUR_ROWS_BLOCK_X": 16, "BLUR_ROWS_BLOCK_Y": 8}
    # `cudaMalloc(reinterpret_cast<void **>(&d_in), pixels * sizeof(float))`, `pixels` a local.
    assert [a["length"] for a in blur["args"] if "length" in a] == ["image_x * image_y", "image_x * image_y"]

    scale = templatized_spec(root, "image.cu", "scale")
    # File-scope `dim3 block_1d(256); dim3 grid_1d;` with `grid_1d.x` assigned before the launch,
    # and `count` assigned after its declaration.
    assert scale["grid"] == ["ceil_div(image_x * image_y, SCALE_BLOCK_SIZE)"]
    assert scale["block"] == ["SCALE_BLOCK_SIZE"]
    assert next(a for a in scale["args"] if a["name"] == "count")["value"] == "image_x * image_y"

    fade = templatized_spec(root, "image.cu", "fade_rows")
    # `dim3 fade_grid((image.x * rows + 127) / 128)` before `rows = image.y / 2`: the grid is of
    # the first `rows`, the argument of the second.
    assert fade["grid"] == ["ceil_div(ceil_div(image_x * image_y, FADE_ROWS_BLOCK_SIZE), FADE_ROWS_VEC)"]
    assert next(a for a in fade["args"] if a["name"] == "rows")["value"] == "image_y // 2"


def test_host_arithmetic_as_c_writes_it_is_said_the_specs_way(tmp_path: Path):
    root = project(tmp_path, "host_arithmetic")
    # `const int N = 1 << log2N;` and `half = N >> 1`: shifts are powers of two.
    butterfly = templatized_spec(root, "transform.cu", "butterfly")
    assert butterfly["shapes"] == [{"log2N": 20}]
    assert butterfly["grid"] == ["ceil_div(2 ** log2N // 2, BUTTERFLY_BLOCK_SIZE)"]
    assert next(a for a in butterfly["args"] if a["name"] == "half")["value"] == "2 ** log2N // 2 ** 1"
    # `(N + 255u) / 256u` and `0.5f`: literals without their suffixes.
    scale = templatized_spec(root, "transform.cu", "scale")
    assert scale["grid"] == ["ceil_div(ceil_div(2 ** log2N, SCALE_BLOCK_SIZE), SCALE_VEC)"]
    assert next(a for a in scale["args"] if a["name"] == "factor")["value"] == "0.5"
    # `std::max<size_t>(threads / warpSize * sizeof(float), 32)`: the spec's `max`, the warp's 32.
    sums = templatized_spec(root, "transform.cu", "warp_sums")
    assert sums["block"] == ["threads"]
    assert sums["shared_bytes"] == "max(threads // 32 * 4, 32)"


def test_sizes_a_helper_reads_from_flags_are_the_ones_the_program_runs_without_arguments(tmp_path: Path):
    root = project(tmp_path, "command_line_sizes")
    for kernel in ["copy_tiles", "transpose_tiles"]:
        # Launched through `kernel = k == 0 ? &copy_tiles : &transpose_tiles`; the sizes are
        # `checkCmdLineFlag(…) ? getCmdLineArgumentInt(…) : fallback`, set by reference.
        spec = templatized_spec(root, "tiles.cu", kernel)
        assert spec["shapes"] == [{"fallback": 2048}]
        assert spec["grid"] == ["fallback // TILE", "fallback // TILE"]
        # `static_cast<size_t>(sizeof(float) * size_x * size_y)`, the kernel checking no bound.
        assert [a.get("length") for a in spec["args"]] == ["fallback * fallback", "fallback * fallback", None]
    # `count *= …` under a flag the program's run does not give, and `blocks++` when
    # `count % THREADS != 0`: C's rounded-up division, not the quotient alone.
    square = templatized_spec(root, "counts.cu", "square")
    assert square["shapes"] == [{"count": 1000000}]
    assert square["grid"] == ["ceil_div(ceil_div(count, THREADS), SQUARE_VEC)"]
    # `threads = 256; if (n < 256) threads = n;`: the smaller of the two, lifted.
    small = templatized_spec(root, "small_problem.cu", "halve_small")
    assert small["block"] == ["min(n, HALVE_SMALL_BLOCK_SIZE)"]
    # `if (n > 64) blocks = …; else if (n > 0) blocks = 1;` after `blocks = 0`: each branch under
    # all the conditions that lead to it.
    assert small["grid"] == ["ceil_div(n > 0 && !(n > 64) ? 1 : n > 64 ? ceil_div(n, min(n, HALVE_SMALL_BLOCK_SIZE)) : 0, HALVE_SMALL_VEC)"]
    assert next(p for p in small["params"] if p["name"] == "HALVE_SMALL_BLOCK_SIZE")["default"] == 256
    # `switch (mode)` with `const int mode = 1`: the values of `case 1:` (an empty `case 1:` above
    # `case 2:`), not the last assignment in the text (`default: threads = 512;`).
    modes = templatized_spec(root, "modes.cu", "scale_mode")
    assert modes["shapes"] == [{"n": 1048576}]
    threads = next(p for p in modes["params"] if p["name"] == "threads")
    assert (threads["kind"], threads["default"]) == ("launch", 256)
    survey = cutune("survey", ".", "--json", cwd=root)
    assert survey.returncode == 0, survey.stderr
    assert json.loads(survey.stdout)["totals"]["ready"] == 5


def test_sizes_kept_in_a_struct_an_init_function_fills_are_read_through_its_fields(tmp_path: Path):
    root = project(tmp_path, "struct_fields")
    # `arrays->blocks = blocks;` in `prepare`, after `blocks = arrays->count / THREADS; if (…)
    # blocks++;` and `arrays->count = COUNT;`, read at the launch as `arrays->blocks`: the field's
    # value in the program's macros, so that the grid follows the block.
    spec = templatized_spec(root, "arrays.cu", "double_all")
    assert spec["grid"] == ["ceil_div(ceil_div(COUNT, THREADS), DOUBLE_ALL_VEC)"]
    assert spec["shapes"] == [{"COUNT": 1000000}]
    assert [a.get("value") for a in spec["args"]] == [None, "COUNT"]
    # `cudaMalloc(&arrays->data, arrays->bytes)` with `arrays->bytes = arrays->count * sizeof(float)`.
    assert spec["args"][0]["length"] == "COUNT"
    survey = cutune("survey", ".", "--json", cwd=root)
    assert survey.returncode == 0, survey.stderr
    assert json.loads(survey.stdout)["totals"]["ready"] == 1


def test_a_reduction_in_passes_is_tuned_at_its_first_pass(tmp_path: Path):
    root = project(tmp_path, "multi_pass")
    (root / ".git").mkdir()
    # `while (count > 1) { blocks = …; sum_pass<<<blocks, threads, …>>>(d_sums, pass_input,
    # count); pass_input = d_sums; count = blocks; }`: the values given after the launch are
    # the later passes'; the first pass reads the whole input, `count` as `sum_all` was called.
    spec = templatized_spec(root, "sum_passes.cu", "sum_pass")
    assert spec["shapes"] == [{"count": 4194304}], spec["shapes"]
    assert spec["grid"] == ["ceil_div(count, threads)"], spec["grid"]
    assert [(a["name"], a.get("length"), a.get("role")) for a in spec["args"]][:2] == [("partial", "count", "output"), ("values", "count", "input")]
    assert {p["name"]: p["default"] for p in spec["params"]}["threads"] == 512


def test_what_a_loop_header_steps_before_the_launch_is_left_unknown(tmp_path: Path):
    root = project(tmp_path, "loop_steps")
    (root / ".git").mkdir()
    # `for (; log2n > LAST_LOG2; log2n -= 2, n >>= 2, batch <<= 2)` ends before `row_pass`'s
    # launch: its block, grid and scalar are what the loop leaves, which only a run says.
    # Inside the loop the launch reads the first pass's values.
    wide = templatized_spec(root, "transform.cu", "wide_pass")
    assert wide["shapes"] == [{"log2n": 20}] and wide["grid"] == ["2 ** log2n // 2 // WIDE_PASS_BLOCK_SIZE"], wide
    run = cutune("templatize", "transform.cu", "--kernel", "row_pass", "--write", cwd=root)
    assert run.returncode == 0, run.stderr
    specs = tomllib.loads((root / "transform.cutune.toml").read_text())["kernels"]
    spec = next(k for k in specs if k["name"] == "row_pass")
    for name in ("batch", "log2n", "n"):
        # (wide_pass's template moved the loop down four lines.)
        assert spec["unknown"][name] == f"the program steps `{name}` in a loop in `transform` (transform.cu:41), as many times as the loop runs"
    assert spec["block"] == ["n // 4"] and spec["shapes"] == [{}], spec
    # The buffer is main's, allocated before the loop: its length is main's `log2n`.
    assert [(a["name"], a.get("length")) for a in spec["args"]][0] == ("data", "2 ** 20")


async def test_the_code_action_leaves_what_a_loop_header_steps_unknown(client, tmp_path: Path):
    root = project(tmp_path, "loop_steps")
    (root / ".git").mkdir()
    spec = await code_action_spec(client, root / "transform.cu", "row[i] = base[i]", "row_pass")
    assert set(spec["unknown"]) == {"batch", "log2n", "n"} and spec["block"] == ["n // 4"], spec


def test_pytorchs_device_properties_are_the_device_sizes(tmp_path: Path):
    root = project(tmp_path, "counted_elements")
    (root / ".git").mkdir()
    # `at::cuda::getCurrentDeviceProperties()->multiProcessorCount * 4` blocks: the GPU's own SMs.
    run = cutune("templatize", "scale.cu", "--kernel", "halve_strided", "--write", cwd=root)
    assert run.returncode == 0, run.stderr
    specs = tomllib.loads((root / "scale.cutune.toml").read_text())["kernels"]
    spec = next(k for k in specs if k["name"] == "halve_strided")
    assert spec["grid"] == ["ceil_div(sm_count * 4, HALVE_STRIDED_ITEMS_PER_THREAD)"], spec["grid"]
    assert spec["shapes"] == [{"sm_count": 132}], spec["shapes"]


def test_a_traits_class_a_caller_names_gives_the_template_argument_and_the_sizes(tmp_path: Path):
    root = project(tmp_path, "traits_launch")
    (root / ".git").mkdir()
    # `using Traits = RowTraits<128, 4>;` in `main`, passed to `launch_reverse_rows<Traits>`:
    # the class's members (`kRowLength = kThreads * kItems`) size the rows and shared memory.
    spec, report = templatized_spec_and_report(root, "rows.cu", "reverse_rows")
    assert spec["template_args"] == ["RowTraits<128, 4>"]
    assert spec["shared_bytes"] == "512 * 4" and spec["args"][0]["length"] == "count * 512", spec
    # The block is `Traits::kThreads`, the stride of the kernel's loops: it is not varied.
    assert spec["block"] == ["128"] and "launch" not in {p["kind"] for p in spec["params"]}, spec["params"]
    assert "unknown" not in spec, spec["unknown"]


def test_what_the_spec_cannot_say_of_shared_memory_is_left_unknown_with_its_reason(tmp_path: Path):
    root = project(tmp_path, "traits_launch")
    (root / ".git").mkdir()
    # The launcher's callers name no traits (a library's entry point): `Traits::kRowLength` has
    # no value, and the spec says so rather than holding C++ it cannot parse.
    source = root / "rows.cu"
    source.write_text(source.read_text().replace("launch_reverse_rows<Traits>(rows, count, 0.5f);", ""))
    run = cutune("templatize", "rows.cu", "--kernel", "reverse_rows", "--write", cwd=root)
    assert run.returncode == 0, run.stderr
    spec = spec_of((root / "rows.cutune.toml").read_text())
    assert spec["shared_bytes"] == "?", spec
    assert spec["unknown"]["shared_bytes"] == "the program makes it as `Traits::kRowLength * 4`, which a spec expression cannot say: `Traits::kRowLength` is a member of a C++ type or namespace, which the spec cannot read"
    check = cutune("spec", "check", "rows.cutune.toml", cwd=root)
    assert "rows.cutune.toml:11:16: error: shared_bytes is unknown (the program makes it as `Traits::kRowLength * 4`, which a spec expression cannot say: `Traits::kRowLength` is a member of a C++ type or namespace" in check.stdout, check.stdout


async def test_the_code_action_reads_a_traits_class_a_caller_names(client, tmp_path: Path):
    root = project(tmp_path, "traits_launch")
    (root / ".git").mkdir()
    spec = await code_action_spec(client, root / "rows.cu", "row[i] = base[i] * factor", "reverse_rows")
    assert spec["template_args"] == ["RowTraits<128, 4>"] and spec["shared_bytes"] == "512 * 4", spec


async def test_the_code_action_tunes_a_reduction_in_passes_at_its_first_pass(client, tmp_path: Path):
    root = project(tmp_path, "multi_pass")
    (root / ".git").mkdir()
    spec = await code_action_spec(client, root / "sum_passes.cu", "block_values[threadIdx.x] = i < count", "sum_pass")
    assert spec["shapes"] == [{"count": 4194304}], spec


def test_a_buffer_class_sized_and_allocated_by_its_methods_gives_the_lengths(tmp_path: Path):
    root = project(tmp_path, "buffer_class")
    (root / ".git").mkdir()
    # `values.resize(count); values.allocate();` with `count_ = count;` and
    # `cudaMalloc((void **)&device_, count_ * sizeof(T))` in `DeviceBuffer<T>`: `values.device_`
    # holds `count` halves. The kernel reads them as pairs, so its own bounds cannot say.
    spec = templatized_spec(root, "pairs.cu", "widen_pairs")
    assert spec["shapes"] == [{"count": 4194304}], spec["shapes"]
    assert [(a["name"], a.get("length"), a.get("value")) for a in spec["args"]] == [("values", "count", None), ("widened", "count", None), ("pairs", None, "count // 2")]
    assert "unknown" not in spec, spec["unknown"]


async def test_the_code_action_reads_a_buffer_class_allocated_by_its_methods(client, tmp_path: Path):
    root = project(tmp_path, "buffer_class")
    (root / ".git").mkdir()
    spec = await code_action_spec(client, root / "pairs.cu", "widened_pairs[i] = __half22float2", "widen_pairs")
    assert [a.get("length") for a in spec["args"][:2]] == ["count", "count"], spec


def test_a_launch_through_the_api_reads_an_argument_array_filled_element_by_element(tmp_path: Path):
    root = project(tmp_path, "element_args")
    (root / ".git").mkdir()
    # `void *args[3]; args[0] = (void *)&out; …; cudaLaunchKernel((void *)double_values,
    # blocks, threads, args, 0, NULL)`.
    spec = templatized_spec(root, "scale_launch.cu", "double_values")
    assert spec["grid"] == ["ceil_div(n, threads)"] and spec["shapes"] == [{"n": 1048576}], spec
    assert [(a["name"], a.get("length"), a.get("value")) for a in spec["args"]] == [("out", "n", None), ("in", "n", None), ("n", None, "n")]
    # `cudaLaunchKernelEx(&config, add_rows<4>, out, a, b, rows, cols)` with `config.gridDim =
    # dim3(rows)` and `config.blockDim = dim3(128)`: the grid, the block and the template's
    # argument are the launch's.
    rows = templatized_spec(root, "config_launch.cu", "add_rows")
    assert (rows["grid"], rows["block"], rows["shapes"]) == (["rows"], ["ADD_ROWS_BLOCK_SIZE"], [{"cols": 1000, "rows": 4096}]), rows
    assert {p["name"]: p["default"] for p in rows["params"]}["ITEMS"] == 4, rows["params"]


async def test_the_code_action_reads_an_argument_array_filled_element_by_element(client, tmp_path: Path):
    root = project(tmp_path, "element_args")
    (root / ".git").mkdir()
    spec = await code_action_spec(client, root / "scale_launch.cu", "out[i] = 2.0f * in[i]", "double_values")
    assert spec["shapes"] == [{"n": 1048576}], spec
    rows = await code_action_spec(client, root / "config_launch.cu", "int row = blockIdx.x;", "add_rows")
    assert (rows["grid"], rows["shapes"]) == (["rows"], [{"cols": 1000, "rows": 4096}]), rows


def test_each_program_of_a_workspace_keeps_its_own_defines(tmp_path: Path):
    # Two programs define `ROWS` differently and share the names `main` and `run`: each kernel's
    # size is its own file's.
    root = project(tmp_path, "namesake_defines")
    (root / ".git").mkdir()
    assert templatized_spec(root, "small/program.cu", "scale_small")["shapes"] == [{"ROWS": 1024}]
    assert templatized_spec(root, "large/program.cu", "scale_large")["shapes"] == [{"ROWS": 4096}]


def test_a_driver_api_handle_handed_back_by_a_function_is_the_kernels_launch(tmp_path: Path):
    root = project(tmp_path, "namesake_defines")
    (root / ".git").mkdir()
    # `CUfunction kernel = load_transform(module)` (which returns what `cuModuleGetFunction`
    # found) and `load_inverse(module, &inverse)` (which sets `*inverse`): each handle's
    # `cuLaunchKernel` is its kernel's launch, though both loaders call their local `found`.
    transform = templatized_spec(root, "rotate/rotate_kernel.cu", "transform")
    assert transform["block"] == ["TRANSFORM_BLOCK_X", "TRANSFORM_BLOCK_Y", "1"], transform
    assert transform["shapes"] == [{"height": 200, "width": 300}], transform["shapes"]
    inverse = templatized_spec(root, "rotate/rotate_kernel.cu", "transform_back")
    assert {p["name"]: p["default"] for p in inverse["params"]}["TRANSFORM_BACK_BLOCK_X"] == 8, inverse["params"]
    # `shear` is never loaded; `warp/warp.cu` launches a `shear` of its own, with other
    # parameters, beside its definition: that launch is not this kernel's.
    report = json.loads(cutune("survey", str(root), "--json").stdout)
    shear = {k["file"].split("namesake_defines/")[-1]: k for k in report["kernels"] if k["kernel"] == "shear"}
    assert shear["rotate/rotate_kernel.cu"]["stage"] == "spec", shear
    assert "no launch of `shear` was found in the workspace" in shear["rotate/rotate_kernel.cu"]["why"], shear
    assert shear["warp/warp.cu"]["stage"] == "ready", shear
    # `reset_progress` takes no parameters: `cuLaunchKernel(reset, …, NULL, NULL)` passes none.
    reset = next(k for k in report["kernels"] if k["kernel"] == "reset_progress")
    assert reset["stage"] == "ready", reset


async def test_the_code_action_follows_a_driver_api_handle_handed_back(client, tmp_path: Path):
    root = project(tmp_path, "namesake_defines")
    (root / ".git").mkdir()
    spec = await code_action_spec(client, root / "rotate" / "rotate_kernel.cu", "(out[y * width + x] + y) / theta", "transform_back")
    assert spec["grid"] == ["ceil_div(width, TRANSFORM_BACK_BLOCK_X)", "ceil_div(height, TRANSFORM_BACK_BLOCK_Y)", "1"], spec
    assert spec["shapes"] == [{"height": 200, "width": 300}], spec


def test_a_tensor_core_kernel_compiles_with_nvrtc_from_pip_and_keeps_its_fragment_shape(tmp_path: Path):
    root = project(tmp_path, "tensor_cores")
    spec, report = templatized_spec_and_report(root, "wmma_tile.cu", "wmma_gemm")
    # `TILE` is the `wmma::fragment`'s 16 × 16 × 16, which the hardware fixes.
    assert "`TILE` is a dimension of the kernel's `wmma::fragment`, a shape of the tensor cores: it is not lifted" in report
    assert [p["name"] for p in spec["params"]] == ["WMMA_GEMM_BLOCK_X", "WMMA_GEMM_BLOCK_Y", "fast_math", "max_registers"]
    # `<mma.h>` includes `crt/mma.h`, which pip ships with nvcc, not with the runtime.
    checked = cutune("check", "wmma_tile.cu", "--kernel", "wmma_gemm", "--sample", "2", "--json", cwd=root)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert json.loads(checked.stdout)["failed"] == 0


def test_the_shape_of_the_mma_instruction_a_kernel_issues_is_kept(tmp_path: Path):
    root = project(tmp_path, "tensor_cores")
    # `mma_tile<16, 8, 16>` issues `mma.sync.aligned.m16n8k16` through the `HMMA16816` macro
    # of `mma_utils.h`: another `MMA_M` would compute something else (LeetCUDA's HGEMMs faulted
    # or were wrong under every other value).
    spec, report = templatized_spec_and_report(root, "mma_tile.cu", "mma_tile")
    shape = {p["name"]: p["values"] for p in spec["params"] if p["name"] in ("MMA_M", "MMA_N", "MMA_K")}
    assert shape == {"MMA_M": [16], "MMA_N": [8], "MMA_K": [16]}, spec["params"]
    assert "`MMA_K` is the shape of the `mma` instruction the kernel issues, which the hardware fixes: kept at 16" in report
    assert spec["block"] == ["MMA_TILE_BLOCK_SIZE"], spec


def test_defines_of_the_mma_shape_are_kept_and_tiles_tied_in_a_chain_are_pinned_together(tmp_path: Path):
    root = project(tmp_path, "tensor_cores")
    # cuda_hgemm's style: `#define MMA_K 16` beside `HMMA16816`, and tile defines whose comments
    # tie each to the one before. Lifted, `MMA_K` faulted in every candidate; the ties left
    # unnarrowed made a space the search, drawing at random, found nothing feasible in.
    spec, report = templatized_spec_and_report(root, "mma_rows.cu", "mma_rows")
    assert "`MMA_K` is the shape of the `mma` instruction the kernel issues, which the hardware fixes: it is not lifted" in report
    values = {p["name"]: p["values"] for p in spec["params"]}
    assert not {"MMA_M", "MMA_N", "MMA_K"} & set(values), spec["params"]
    assert "64 == BLOCK_ROWS" in spec["restrictions"] and "BLOCK_WARPS == BLOCK_ROWS // 16" in spec["restrictions"], spec["restrictions"]
    assert (values["BLOCK_ROWS"], values["BLOCK_WARPS"], values["THREADS_PER_BLOCK"]) == ([64], [4], [128]), values


def test_elements_read_as_wider_values_keep_their_rows_and_offsets_aligned(tmp_path: Path):
    root = project(tmp_path, "packed_halves")
    (root / ".git").mkdir()
    # `LDST64BITS(tile[row][col + v])` reads four halves as a `float2`: a padding that leaves
    # rows of `WIDTH + PAD` halves a multiple of 2 faulted with a misaligned address (LeetCUDA's
    # HGEMMs, `OFFSET = 2`), as did a thread's array too small for one `float2`.
    spec, _ = templatized_spec_and_report(root, "scale_packed_rows.cu", "scale_packed_rows")
    assert "((WIDTH + PAD) + SCALE_PACKED_ROWS_PAD_TILE) % 4 == 0" in spec["restrictions"], spec["restrictions"]
    assert "4 <= VEC" in spec["restrictions"], spec["restrictions"]
    assert next(p["values"] for p in spec["params"] if p["name"] == "VEC") == [4, 8, 16]


def test_a_launcher_passed_as_a_function_pointer_gets_the_block_size_its_driver_passes(tmp_path: Path):
    root = project(tmp_path, "function_pointer")
    spec = templatized_spec(root, "passed_launcher.cu", "row_sum")
    # `reduce_rows(..., launch_row_sum, block_sizes[j])` calls `launch(..., block_size)`: the
    # launcher's `block_size` is main's sweep.
    block = next(p for p in spec["params"] if p["name"] == "block_size")
    assert (block["kind"], block["default"], block["values"]) == ("launch", 64, [64, 128, 256])
    assert spec["shapes"][0] == {"rows": 4096, "cols": 512}
    assert [a.get("length") for a in spec["args"][:2]] == ["rows", "rows * cols"]


def test_file_scope_constants_and_a_buffer_allocated_by_an_init_function(tmp_path: Path):
    root = project(tmp_path, "helpers_and_globals")
    spec, _ = templatized_spec_and_report(root, "partials.cu", "scale_partials")
    assert spec["shapes"] == [{"BIN_COUNT": 64, "PARTIAL_COUNT": 240}]
    # `d_partials` is allocated in `init_partials`, off the launch's call path.
    assert spec["args"][0]["length"] == "PARTIAL_COUNT * BIN_COUNT"
    # A global the command line may change: the program's own value is the default.
    block = next(p for p in spec["params"] if p["name"] == "threads_per_block")
    assert block["kind"] == "launch" and block["default"] == 128
    assert block["origin"] == "`threads_per_block = 128` at file scope"


def test_a_grid_from_a_helper_through_references_and_lengths_from_the_kernels_own_bound(tmp_path: Path):
    root = project(tmp_path, "helpers_and_globals")
    spec, _ = templatized_spec_and_report(root, "particles.cu", "integrate")
    # `grid_for(count, 256, blocks, threads)` sets both through references; the 256 it was
    # given is the block's choice.
    assert spec["block"] == ["min(INTEGRATE_BLOCK_SIZE, count)"]
    assert spec["grid"] == ["ceil_div(count, min(INTEGRATE_BLOCK_SIZE, count))"]
    assert next(p for p in spec["params"] if p["name"] == "INTEGRATE_BLOCK_SIZE")["default"] == 256
    assert spec["shapes"] == [{"count": 16383}]
    # `pos[i].x += ...` writes `pos`.
    assert [(a["name"], a.get("length"), a.get("role")) for a in spec["args"][:2]] == [("pos", "count * 4", "inout"), ("vel", "count * 4", "input")]


def test_a_block_dispatched_to_a_generic_lambda_is_a_launch_parameter(tmp_path: Path):
    root = project(tmp_path, "helpers_and_globals")
    spec, _ = templatized_spec_and_report(root, "row_sums.cu", "row_total")
    # `block_const.value` is the `block` that `dispatch_block` switched on.
    assert spec["template_args"] == ["block"] and spec["block"] == ["block"]
    block = next(p for p in spec["params"] if p["name"] == "block")
    assert block["kind"] == "launch" and block["default"] == 256 and block["values"] == [256, 128]
    assert [a.get("length") for a in spec["args"][:2]] == ["rows * cols", "rows"]


async def test_the_code_action_reads_a_grid_set_through_references(client, tmp_path: Path):
    root = project(tmp_path, "helpers_and_globals")
    source = root / "particles.cu"
    text = source.read_text()
    await open_document(client, source.as_uri(), text)
    actions = await code_actions(client, source.as_uri(), line_of(text, "pos[i].x += vel[i].x * dt;"), 8)
    action = await resolved(client, next(a for a in actions if "integrate" in a.title))
    spec_text = next(c.edits[0].new_text for c in action.edit.document_changes if isinstance(c, types.TextDocumentEdit) and c.text_document.uri.endswith("particles.cutune.toml"))
    spec = spec_of(spec_text)
    assert spec["block"] == ["min(INTEGRATE_BLOCK_SIZE, count)"] and spec["shapes"] == [{"count": 16383}]


async def test_the_code_action_slices_a_header_with_its_includer_and_lifts_host_macros(client, tmp_path: Path):
    root = project(tmp_path, "included_kernels")
    (root / ".git").mkdir()
    header = root / "filters.cuh"
    text = header.read_text()
    await open_document(client, header.as_uri(), text)
    await logged(client, types.MessageType.Info, "workspace index of", str(root))
    actions = await code_actions(client, header.as_uri(), line_of(text, "dst[y * w + x] = scale_pixel"), 8)
    action = await resolved(client, next(a for a in actions if "brighten" in a.title))
    spec_text = next(c.edits[0].new_text for c in action.edit.document_changes if isinstance(c, types.TextDocumentEdit) and c.text_document.uri.endswith("filters.cutune.toml"))
    spec = spec_of(spec_text)
    assert spec["block"] == ["TILE_X", "TILE_Y"] and spec["grid"][0] == "ceil_div(w, TILE_X)"
    assert "typedef unsigned int Pixel;" in spec["baseline"]["source"]


def test_a_null_optional_buffer_an_aligned_struct_and_a_class_template_member_in_the_grid(tmp_path: Path):
    root = project(tmp_path, "optional_output")
    stats = templatized_spec(root, "stats.cu", "row_stats_online")
    # `NULL` passed for `probs`: a null pointer, not a buffer to allocate.
    probs = next(a for a in stats["args"] if a["name"] == "probs")
    assert (probs["dtype"], probs["value"]) == ("u64", "0") and "length" not in probs
    # The `__align__(8)` struct the kernel keeps its running values in reaches NVRTC.
    assert "struct __align__(8) RunningMax" in stats["baseline"]["source"]
    check = cutune("check", "stats.cu", "--kernel", "row_stats_online", "--sample", "1", cwd=root)
    assert check.returncode == 0, check.stdout + check.stderr
    # A parameter with a default (`float *tile_sums = NULL`) is still one the kernel takes.
    tiles = templatized_spec(root, "stats.cu", "sum_tiles")
    assert [a["name"] for a in tiles["args"]] == ["data", "width", "tile_sums"]
    assert next(a for a in tiles["args"] if a["name"] == "tile_sums")["length"] == "rows * cols // 256"
    # A `__device__` function passed as a template argument reaches the baseline and NVRTC.
    combine = templatized_spec(root, "stats.cu", "combine_rows")
    assert combine["template_args"] == ["add_pair"]
    assert "__device__ float add_pair(float a, float b)" in combine["baseline"]["source"]
    check = cutune("check", "stats.cu", "--kernel", "combine_rows", "--sample", "1", cwd=root)
    assert check.returncode == 0, check.stdout + check.stderr
    # The kernel's `N` is passed the launcher's `N * C`: the launcher's size is renamed.
    residual = templatized_spec(root, "stats.cu", "residual_add")
    assert residual["shapes"] == [{"C": 512, "residual_forward_N": 4096}]
    # One element per thread: `vectorize-elements` divides the grid by its vector width.
    assert residual["grid"] == ["ceil_div(ceil_div(residual_forward_N * C, block_size), RESIDUAL_ADD_VEC)"]
    assert next(a for a in residual["args"] if a["name"] == "N")["value"] == "residual_forward_N * C"
    assert next(a for a in residual["args"] if a["name"] == "out")["length"] == "residual_forward_N * C"
    # `Packed<float>::size` is 16 / sizeof(float).
    packed = templatized_spec(root, "stats.cu", "scale_packed")
    assert packed["grid"] == ["ceil_div(rows * cols, block * 4)"]


def test_a_header_of_kernels_that_relies_on_its_includer_and_host_macros_for_the_block(tmp_path: Path):
    root = project(tmp_path, "included_kernels")
    spec = templatized_spec(root, "filters.cuh", "brighten")
    # `Pixel` and `scale_pixel` come from image.h, which viewer.cu includes before filters.cuh:
    # the baseline takes them from there, and compiles.
    assert "typedef unsigned int Pixel;" in spec["baseline"]["source"]
    assert next(a for a in spec["args"] if a["name"] == "dst")["dtype"] == "u32"
    check = cutune("check", "filters.cuh", "--kernel", "brighten", "--sample", "2", cwd=root)
    assert check.returncode == 0, check.stdout + check.stderr
    # The header's `TILE_X`/`TILE_Y` only set the launch: launch parameters, bounded together;
    # `(unsigned int)ceil(w / (float)threads.x)` is a rounded-up division.
    assert spec["block"] == ["TILE_X", "TILE_Y"]
    assert spec["grid"] == ["ceil_div(w, TILE_X)", "ceil_div(h, TILE_Y)"]
    tile_x = next(p for p in spec["params"] if p["name"] == "TILE_X")
    assert (tile_x["kind"], tile_x["default"]) == ("launch", 16)
    assert "TILE_X * TILE_Y <= 1024" in spec["restrictions"]
    # `gain` starts at 1.5; the key handler only steps it.
    gain = next(a for a in spec["args"] if a["name"] == "gain")
    assert abs(float(gain["value"]) - 1 / 1.5**2) < 1e-12

    # `dim3 threads, blocks;` given their extents by later assignments.
    fill = templatized_spec(root, "filters.cuh", "fill_rows")
    assert fill["block"] == ["FILL_ROWS_BLOCK_SIZE"] and fill["grid"] == ["w * h // FILL_ROWS_BLOCK_SIZE"]

    # The block passed to the kernel as well (`int block_size` strides its loop): still the
    # host's choice, a launch parameter, and the argument follows it.
    sums = templatized_spec(root, "filters.cuh", "column_sums")
    assert sums["block"] == ["block_size"]
    assert next(p for p in sums["params"] if p["name"] == "block_size")["kind"] == "launch"
    assert next(a for a in sums["args"] if a["name"] == "block_size")["value"] == "block_size"


def test_check_compiles_a_spec_whose_sizes_are_still_unknown_and_refuses_an_open_template_argument(tmp_path: Path):
    # Sizes from tensors (`in.size(0)`): the spec has errors, but compiling needs only the
    # parameters and template arguments.
    (tmp_path / ".git").mkdir()
    shutil.copy(REPO / "tests" / "gpu" / "profile" / "inline_scale.cu", tmp_path / "scale.cu")
    assert cutune("templatize", "scale.cu", "--kernel", "scale_rows", "--write", cwd=tmp_path).returncode == 0
    assert cutune("spec", "check", "scale.cutune.toml", cwd=tmp_path).returncode == 1

    checked = cutune("check", "scale.cu", "--kernel", "scale_rows", "--sample", "3", "--json", cwd=tmp_path)

    assert checked.returncode == 0, checked.stderr
    assert "compiling anyway, without the checks that need the launch" in checked.stderr
    report = json.loads(checked.stdout)
    assert report["compiled"] == 3 and all(r["status"] == "compiled" for r in report["results"]), report

    # A library kernel that no call and no instantiation gives an element type: nothing to
    # compile yet.
    (tmp_path / "fill.cu").write_text(
        "template <typename T>\n__global__ void fill(T *x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] = T(1); }\n"
        "template <typename T>\nvoid launch_fill(T *x, int n) { fill<<<(n + 255) / 256, 256>>>(x, n); }\n"
    )
    assert cutune("templatize", "fill.cu", "--kernel", "fill", "--write", cwd=tmp_path).returncode == 0
    refused = cutune("check", "fill.cu", "--kernel", "fill", cwd=tmp_path)
    assert refused.returncode != 0
    assert "template argument 1 of `fill` is unknown (`?`): compiling needs it" in refused.stderr, refused.stderr
    # One the library instantiates (`template void launch_sum<float>(…)` first): that type.
    shutil.copy(WORKSPACE / "dispatched_reduction" / "block_sum.cu", tmp_path / "block_sum.cu")
    assert cutune("templatize", "block_sum.cu", "--kernel", "block_sum", "--write", cwd=tmp_path).returncode == 0
    assert tomllib.loads((tmp_path / "block_sum.cutune.toml").read_text())["kernels"][0]["template_args"] == ["float", "blockSize"]
    compiled = cutune("check", "block_sum.cu", "--kernel", "block_sum", "--json", cwd=tmp_path)
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr
    report = json.loads(compiled.stdout)
    assert report["compiled"] >= 1 and {r["status"] for r in report["results"]} <= {"compiled", "infeasible"}, report


def test_sizes_come_from_the_image_the_program_loads_and_pitched_rows_from_cudaMallocPitch(tmp_path: Path):
    root = project(tmp_path, "image_sized")
    # `load_pgm(path, &pixels, &frame_w, &frame_h)` in main, the path from a helper given a
    # file-scope name (another only when the command line names one): data/frame.pgm is
    # 200 × 120, and `smooth_frame` launches with the globals.
    smooth = templatized_spec(root, "smooth_kernels.cuh", "smooth_rows")
    assert smooth["shapes"] == [{"height": 120, "width": 200}]
    assert [a.get("length") for a in smooth["args"] if "length" in a] == ["200 * 120", "200 * 120"]
    # A pitched copy: the pitch `cudaMallocPitch` gives a row of 200 floats is 1024 bytes, made
    # a pitch in elements by `pitch /= sizeof(float)`; the buffer is that pitch times the rows.
    scale = templatized_spec(root, "smooth_kernels.cuh", "scale_pitched")
    assert scale["shapes"] == [{"height": 120, "width": 200}]
    args = {a["name"]: a for a in scale["args"]}
    assert args["pitch"]["value"] == "ceil_div(width * 4, 512) * 512 // 4"
    assert args["image"]["length"] == "ceil_div(width * 4, 512) * 512 // 4 * height"
    surveyed = json.loads(cutune("survey", ".", "--json", cwd=root).stdout)
    assert surveyed["totals"]["ready"] == 4, surveyed
    # levels/levels.cu's own loader, `read_pgm_size(input_name, &rows, &cols)` defined in
    # levels/pgm_io.cpp as `(char *name, int *irows, int *icols)`: rows first, as its
    # parameters say; the name is a `char` array's `{"frame.pgm"}`, found in ../data.
    levels = templatized_spec(root, "levels/levels.cu", "invert_levels")
    assert levels["shapes"] == [{"cols": 200, "rows": 120}], levels["shapes"]
    # `(int)(cols * scale)` with `float scale = 0.5f`: the truncation stays in the spec, so an
    # odd width gives the program's own sizes.
    shrink = templatized_spec(root, "levels/levels.cu", "shrink_levels")
    args = {a["name"]: a for a in shrink["args"]}
    assert (args["shrunk"]["length"], args["shrunk_cols"]["value"]) == ("int(rows * 0.5) * int(cols * 0.5)", "int(cols * 0.5)"), shrink["args"]

    # Without the image there is nothing to read the size from: the sizes stay unknown, and
    # viewer/viewer.cu's `const int frame_w = 640` is another program's.
    fresh = project(tmp_path / "without_image", "image_sized")
    (fresh / "data" / "frame.pgm").unlink()
    run = cutune("templatize", "smooth_kernels.cuh", "--kernel", "smooth_rows", "--write", cwd=fresh)
    assert run.returncode == 0, run.stderr
    unknown = spec_of((fresh / "smooth_kernels.cutune.toml").read_text())
    assert unknown["shapes"] == [{}], unknown["shapes"]
    assert unknown["unknown"]["width"] == "the launch in `run_smooth` passes it, and the source gives no number for it", unknown["unknown"]
    # The loader reads the header with `fscanf` (in an `if`'s condition): no number, not the
    # zeros `rows` and `cols` were declared with.
    surveyed = json.loads(cutune("survey", ".", "--json", cwd=fresh).stdout)
    levels = next(k for k in surveyed["kernels"] if k["kernel"] == "invert_levels")
    assert "the program sets it with `read_pgm_size` in `main` (levels.cu:23)" in levels["why"], levels


async def test_the_code_action_reads_the_size_of_the_image_the_program_loads(client, tmp_path: Path):
    root = project(tmp_path, "image_sized")
    spec = await code_action_spec(client, root / "smooth_kernels.cuh", "out[y * width + x]", "smooth_rows")
    assert spec["shapes"] == [{"height": 120, "width": 200}]
    levels = await code_action_spec(client, root / "levels" / "levels.cu", "255 - pixels[y * cols + x]", "invert_levels")
    assert levels["shapes"] == [{"cols": 200, "rows": 120}], levels


def test_a_kernel_named_with_a_common_word_finds_its_callers_past_the_files_that_only_mention_it(tmp_path: Path):
    root = tmp_path / "project"
    (root / "app").mkdir(parents=True)
    (root / ".git").mkdir()
    (root / "app" / "copy_kernel.cuh").write_text(
        "__global__ void Copy(float *dst, const float *src, int width, int height)\n"
        "{\n"
        "    int x = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "    int y = blockIdx.y;\n"
        "    if (x < width && y < height) dst[y * width + x] = src[y * width + x];\n"
        "}\n\n"
        "void run_copy(float *dst, const float *src, int width, int height)\n"
        "{\n"
        "    dim3 grid((width + 127) / 128, height);\n"
        "    Copy<<<grid, 128>>>(dst, src, width, height);\n"
        "}\n"
    )
    # The caller declares the launcher rather than including its header (as an `extern "C"` one is).
    (root / "app" / "main.cu").write_text(
        "void run_copy(float *dst, const float *src, int width, int height);\n"
        "int main()\n"
        "{\n"
        "    int width = 640, height = 480;\n"
        "    float *dst, *src;\n"
        "    cudaMalloc(&dst, width * height * sizeof(float));\n"
        "    cudaMalloc(&src, width * height * sizeof(float));\n"
        "    run_copy(dst, src, width, height);\n"
        "}\n"
    )
    # Other programs of the project use the word for something else, more of them than the
    # host files read for one kernel.
    for i in range(24):
        (root / f"tool{i}").mkdir()
        (root / f"tool{i}" / "mode.cpp").write_text(f"enum Mode {{ Copy, Move }};\nint pick{i}() {{ return Copy; }}\n")
    spec = templatized_spec(root, "app/copy_kernel.cuh", "Copy")
    assert spec["shapes"] == [{"height": 480, "width": 640}], spec["shapes"]


def test_a_clamped_global_keeps_its_start_and_a_buffer_is_sized_where_a_command_line_path_allocates_it(tmp_path: Path):
    root = tmp_path / "viewer"
    root.mkdir()
    (root / ".git").mkdir()
    (root / "viewer.cu").write_text(
        "int radius = 4;\n"
        "int sign = 1;\n"
        "int width = 512, height = 256;\n\n"
        "__global__ void box_rows(unsigned int *out, const unsigned int *in, int w, int h, int r)\n"
        "{\n"
        "    int y = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "    if (y < h) for (int x = r; x < w - r; x++) out[y * w + x] = in[y * w + x - r] / 2 + in[y * w + x + r] / 2;\n"
        "}\n\n"
        "void box(unsigned int *out, const unsigned int *in, int w, int h, int r)\n"
        "{\n"
        "    box_rows<<<h / 64, 64>>>(out, in, w, h, r);\n"
        "}\n\n"
        "void step()\n"
        "{\n"
        "    radius += sign;\n"
        "    if (radius > 16) {\n"
        "        radius = 16;\n"
        "        sign = -1;\n"
        "    } else if (radius < 0) {\n"
        "        radius = 0;\n"
        "    }\n"
        "}\n\n"
        "void display(unsigned int *in)\n"
        "{\n"
        "    unsigned int *mapped;\n"
        "    map_window_buffer((void **)&mapped);\n"
        "    box(mapped, in, width, height, radius);\n"
        "}\n\n"
        "void run_test(unsigned int *in)\n"
        "{\n"
        "    unsigned int *result;\n"
        "    cudaMalloc((void **)&result, (width * height * sizeof(unsigned int)));\n"
        "    box(result, in, width, height, radius);\n"
        "}\n\n"
        "int main(int argc, char **argv)\n"
        "{\n"
        "    unsigned int *in;\n"
        "    cudaMalloc((void **)&in, (width * height * sizeof(unsigned int)));\n"
        "    if (checkCmdLineFlag(argc, (const char **)argv, \"test\")) {\n"
        "        run_test(in);\n"
        "    } else {\n"
        "        display(in);\n"
        "    }\n"
        "}\n"
    )
    spec = templatized_spec(root, "viewer.cu", "box_rows")
    # `radius` steps and is clamped by `step`, but starts at 4.
    assert spec["shapes"] == [{"h": 256, "r": 4, "w": 512}], spec["shapes"]
    # The window's buffer is mapped from OpenGL on the default path; the test path allocates it.
    args = {a["name"]: a for a in spec["args"]}
    assert args["out"]["length"] == "w * h" and args["in"]["length"] == "w * h", args


def test_a_header_included_with_angle_brackets_is_found_where_the_project_ships_it(tmp_path: Path):
    # `#include <vec2_ops.h>`, which only the build's `-I ../common` finds; no
    # compile_commands.json says so. The project is a repository (its root has .git).
    root = project(tmp_path, "shipped_header")
    (root / ".git").mkdir()
    source = root / "blur" / "blur.cu"
    sliced = cutune("slice", str(source), "--kernel", "blur")
    assert sliced.returncode == 0, sliced.stderr
    # The header's operators are in the slice though the kernel never names them.
    assert "operator+=(float2& a, float2 b)" in sliced.stdout and "vec2_ops.h" not in sliced.stderr, sliced.stdout + sliced.stderr
    checked = cutune("check", str(source), "--kernel", "blur", "--sample", "2")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    surveyed = json.loads(cutune("survey", ".", "--json", cwd=root).stdout)
    assert [(k["kernel"], k["stage"]) for k in surveyed["kernels"]] == [("blur", "ready")], surveyed

    # A second copy as near to the file as the first: which one the build means is not known.
    other = root / "third_party" / "vec2_ops.h"
    other.parent.mkdir()
    shutil.copy(root / "common" / "vec2_ops.h", other)
    tied = cutune("slice", str(source), "--kernel", "blur")
    assert "dropped #include <vec2_ops.h>: not found in the include dirs" in tied.stderr, tied.stderr
    # A copy nearer the file wins over one elsewhere in the repository.
    near = root / "blur" / "include" / "vec2_ops.h"
    near.parent.mkdir()
    shutil.copy(root / "common" / "vec2_ops.h", near)
    nearest = cutune("slice", str(source), "--kernel", "blur")
    assert "vec2_ops.h" not in nearest.stderr and "operator+=" in nearest.stdout, nearest.stderr


def test_a_template_tile_picked_by_a_branch_on_the_block_moves_with_it_and_thread_tiles_divide_it(tmp_path: Path):
    root = project(tmp_path, "branch_tiles")
    (root / ".git").mkdir()
    # `if (block_size == 16) tiled_product<16><<<grid, threads>>>` with `dim3 threads(block_size,
    # block_size)`: the 2-D block is the launch choice, and the template tile is tied to it.
    spec, report = templatized_spec_and_report(root, "tiles.cu", "tiled_product")
    assert "applied: thread-tiles" in report
    assert spec["block"] == ["block_size // TILED_PRODUCT_TN", "block_size // TILED_PRODUCT_TM"]
    assert spec["grid"] == ["n // block_size", "n // block_size"]
    assert {"TILE == block_size", "block_size % TILED_PRODUCT_TN == 0", "block_size % TILED_PRODUCT_TM == 0"} <= set(spec["restrictions"])
    assert spec["shapes"] == [{"n": 512}]
    # The program's grid still reads the whole block; the launch divides it.
    assert "tiled_product<16><<<grid, dim3(threads.x / TILED_PRODUCT_TN, threads.y / TILED_PRODUCT_TM)>>>" in (root / "tiles.cu").read_text()


def test_a_kernel_another_file_launches_too_keeps_one_row_per_block_and_is_told_of_full_grids(tmp_path: Path):
    root = project(tmp_path, "launched_twice")
    (root / ".git").mkdir()
    # bench.cu launches `scale_by_row_max` itself with one row per block; the rewrite edits only the
    # header's launch, so a tuned block of several rows would skip rows there.
    spec, report = templatized_spec_and_report(root, "rows.cuh", "scale_by_row_max")
    assert "refused: rows-per-block: the kernel is also launched at bench.cu:13, which this rewrite cannot edit" in report, report
    assert not any("ROWS_PER_BLOCK" in p["name"] for p in spec["params"])
    assert "ROWS_PER_BLOCK" not in (root / "rows.cuh").read_text()
    # A grid divided by the elements per thread stays right at bench.cu's full grid: applied,
    # with a note that names the launch left as it was.
    spec, report = templatized_spec_and_report(root, "rows.cuh", "add_offset")
    assert "applied: vectorize-elements" in report, report
    assert "note: the launches at bench.cu:14 keep their grid: right at any `ADD_OFFSET_VEC`" in report, report
    assert "add_offset<<<(rows * cols + 127) / 128, 128>>>" in (root / "bench.cu").read_text()

    # Without bench.cu's launch the header's own launcher is the only one: rows per block applies.
    bench = root / "bench.cu"
    bench.write_text(bench.read_text().replace("    scale_by_row_max<<<rows, ROW_THREADS>>>(x, rows, cols);\n", ""))
    (root / "rows.cuh").write_text((WORKSPACE / "launched_twice" / "rows.cuh").read_text())
    spec, report = templatized_spec_and_report(root, "rows.cuh", "scale_by_row_max")
    assert "applied: rows-per-block" in report, report
    assert "scale_by_row_max<<<(rows + SCALE_BY_ROW_MAX_ROWS_PER_BLOCK - 1) / SCALE_BY_ROW_MAX_ROWS_PER_BLOCK, dim3(ROW_THREADS, SCALE_BY_ROW_MAX_ROWS_PER_BLOCK)>>>" in (root / "rows.cuh").read_text()


def test_sizes_a_pytorch_op_takes_from_its_tensors_are_left_unknown_with_where_they_come_from(tmp_path: Path):
    root = project(tmp_path, "torch_op")
    (root / ".git").mkdir()
    # Without the script that calls the op, only the running program says the sizes.
    shutil.rmtree(root / "scripts")
    for kernel in ("softclamp_kernel", "row_center_kernel"):
        run = cutune("templatize", "csrc/softclamp.cu", "--kernel", kernel, "--write", cwd=root)
        assert run.returncode == 0, run.stderr
    specs = {k["name"]: k for k in tomllib.loads((root / "csrc" / "softclamp.cutune.toml").read_text())["kernels"]}
    softclamp, row_center = specs["softclamp_kernel"], specs["row_center_kernel"]
    # The binding in another file makes the sizes from the tensor: no number, but the place.
    assert softclamp["shapes"] == [{}]
    assert softclamp["unknown"]["numel"] == "the program makes it as `x.numel()` in `softclamp_` (bindings.cpp:9), a size of the PyTorch tensor `x`, known only when the program runs"
    assert softclamp["unknown"]["limit"] == "it is the parameter `limit` of `softclamp_` (bindings.cpp:6), which nothing in the workspace calls"
    assert row_center["unknown"] == {
        "rows": "the program makes it as `x.size(0)` in `row_center_` (bindings.cpp:15), a size of the PyTorch tensor `x`, known only when the program runs",
        "cols": "the program makes it as `x.size(1)` in `row_center_` (bindings.cpp:15), a size of the PyTorch tensor `x`, known only when the program runs",
        "x": "the program makes it as `x.data_ptr<float>()` in `row_center_` (bindings.cpp:15), the data of the PyTorch tensor `x`, whose length only the running program knows",
    }
    # `spec check` says it with the error, and what to do.
    check = cutune("spec", "check", "csrc/softclamp.cutune.toml", cwd=root)
    assert check.returncode == 1
    assert ("value of scalar argument `numel`: `numel` is a size no shape gives (the program makes it as `x.numel()` in `softclamp_` (bindings.cpp:9), "
            "a size of the PyTorch tensor `x`, known only when the program runs): write `numel = …` in each `[[kernels.shapes]]`, "
            "or capture a launch (`cutune profile --kernel softclamp_kernel -- CMD`) and templatize again") in check.stdout + check.stderr
    # Once a shape gives the size, the spec checks (the value of `limit` written too).
    toml = root / "csrc" / "softclamp.cutune.toml"
    text = toml.read_text()
    first = text.index("[[kernels.shapes]]\n") + len("[[kernels.shapes]]\n")
    toml.write_text(text[:first] + "numel = 1048576\n" + text[first:].replace('value = "?"', 'value = "2.0"', 1))
    problems = cutune("spec", "check", "csrc/softclamp.cutune.toml", cwd=root)
    problems = problems.stdout + problems.stderr
    assert "`numel`" not in problems and "`limit`" not in problems, problems
    assert "`rows` is a size no shape gives" in problems, problems
    # The survey's reason is the same.
    survey = json.loads(cutune("survey", str(root), "--json").stdout)
    why = {k["kernel"]: k["why"] for k in survey["kernels"]}
    assert "`rows` is a size no shape gives (the program makes it as `x.size(0)` in `row_center_` (bindings.cpp:15)" in why["row_center_kernel"], why


async def test_the_code_action_writes_where_a_pytorch_ops_sizes_come_from(client, tmp_path: Path):
    root = project(tmp_path, "torch_op")
    (root / ".git").mkdir()
    shutil.rmtree(root / "scripts")
    spec = await code_action_spec(client, root / "csrc" / "softclamp.cu", "x[i] = limit", "softclamp_kernel")
    assert spec["unknown"]["numel"].startswith("the program makes it as `x.numel()` in `softclamp_` (bindings.cpp:9)"), spec


def test_a_python_script_that_calls_the_extension_gives_the_tensors_sizes(tmp_path: Path):
    root = project(tmp_path, "torch_op")
    (root / ".git").mkdir()
    # `scripts/bench.py` calls `ext.softclamp_(x, limit)` with `x = torch.randn(tokens, hidden)`
    # in `main(tokens, hidden, limit=3.0)`, which it calls with the defaults of its `argparse`
    # options (`--tokens 4096`, `--hidden-size 1024`) as keyword arguments; `row_center_` with a
    # tensor of `(2 * tokens, 256)`.
    softclamp = templatized_spec(root, "csrc/softclamp.cu", "softclamp_kernel")
    assert softclamp["shapes"] == [{"numel": 4096 * 1024}]
    assert next(a for a in softclamp["args"] if a["name"] == "limit")["value"] == "3"
    assert next(a for a in softclamp["args"] if a["name"] == "x")["length"] == "numel"
    row_center = templatized_spec(root, "csrc/softclamp.cu", "row_center_kernel")
    assert row_center["shapes"][0] == {"rows": 8192, "cols": 256}
    # `x.data_ptr<float>()` passed down beside `x.size(0)` and `x.size(1)`: rows by columns.
    assert next(a for a in row_center["args"] if a["name"] == "x")["length"] == "rows * cols"
    assert "unknown" not in row_center
    # `blend_neighbours` takes its neighbours as (4, tokens // 4, 3) tensors: the 3 is a size of
    # the tensor's own that the kernel is never given (verification keeps it), the batch and
    # the targets the sizes the launcher passes.
    blend = templatized_spec(root, "csrc/softclamp.cu", "blend_neighbours_kernel")
    assert blend["shapes"][0]["idx_size_2"] == 3 and blend["shapes"][0]["targets"] == blend["shapes"][0]["idx_size_1"] == 1024, blend["shapes"]
    idx = next(a for a in blend["args"] if a["name"] == "idx")
    assert (idx["length"], idx["indexes"]) == ("idx_size_0 * idx_size_1 * idx_size_2", "sources")
    assert blend["grid"] == ["ceil_div(targets, BLEND_NEIGHBOURS_BLOCK_SIZE)", "channels", "batch"]
    survey = json.loads(cutune("survey", str(root), "--json").stdout)
    assert survey["totals"]["ready"] == 3, survey


def test_a_torch_library_op_gets_its_sizes_and_type_from_a_parametrized_test(tmp_path: Path):
    root = project(tmp_path, "torch_library")
    (root / ".git").mkdir()
    # `ops.impl("rms_norm", torch::kCUDA, &rms_norm)`, called as `torch.ops.fixture_ops.rms_norm`
    # by a pytest test whose first parameters are 83 tokens of `HIDDEN_SIZES[0]` (768).
    spec = templatized_spec(root, "csrc/norm.cu", "rms_norm_kernel")
    # The project's `FIXTURE_DISPATCH_FLOATING_TYPES` over PyTorch's: `float`, which every floating
    # dispatch has.
    assert spec["template_args"] == ["float"]
    # `benchmarks/bench_norm.py` passes the op to its timing function, which calls it, inside a
    # `print(…)`, on 2048 tokens of 4096 (its loop's first pass): a second shape.
    assert spec["shapes"] == [{"hidden_size": 768, "out_size_0": 83}, {"hidden_size": 4096, "out_size_0": 2048}]
    lengths = {a["name"]: a.get("length") for a in spec["args"]}
    # `weight` is made with the test's `hidden_size` too: one size, one name.
    assert lengths == {"out": "out_size_0 * hidden_size", "input": "out_size_0 * hidden_size", "weight": "hidden_size", "epsilon": None, "hidden_size": None}
    assert next(a for a in spec["args"] if a["name"] == "epsilon")["value"] == "1e-6"
    check = cutune("spec", "check", "csrc/norm.cutune.toml", cwd=root)
    assert check.returncode == 0, check.stdout + check.stderr


async def test_the_code_action_reads_the_sizes_a_python_script_makes_tensors_with(client, tmp_path: Path):
    root = project(tmp_path, "torch_op")
    (root / ".git").mkdir()
    spec = await code_action_spec(client, root / "csrc" / "softclamp.cu", "x[i] = limit", "softclamp_kernel")
    assert spec["shapes"] == [{"numel": 4096 * 1024}] and "unknown" not in spec, spec


def test_launchers_and_bindings_written_by_macros_are_read_from_their_expansion(tmp_path: Path):
    root = project(tmp_path, "macro_launchers")
    (root / ".git").mkdir()
    # `ROW_SUM_BINDING(f32, float)` writes `row_sum_f32`, whose `DISPATCH_ROW_SUM(n)` launches
    # `row_sum_kernel<256>` for rows of 1,024 or more through `LAUNCH_ROW_SUM(256)`; `BIND`
    # exports it as `m.def(STRINGIFY(row_sum_f32), …)`. `bench.py` calls it on the first of
    # `RNs = [(R, N) for R in Rs for N in Ns]`: 4,096 rows of 2,048.
    templatized = cutune("templatize", "row_sum.cu", "--kernel", "row_sum_kernel", "--write", cwd=root)
    assert templatized.returncode == 0, templatized.stderr
    assert "the launch at line 41 makes no run-time choice" in templatized.stderr
    assert "no `<<<…>>>` launch of `row_sum_kernel` in this file's own code: its block size is decided at line 41" in templatized.stderr
    spec = tomllib.loads((root / "row_sum.cutune.toml").read_text())["kernels"][0]
    assert spec["template_args"] == ["NUM_THREADS"] and spec["grid"] == ["rows"] and spec["block"] == ["NUM_THREADS"]
    assert spec["shapes"][0] == {"rows": 4096, "n": 2048}
    assert [(a["name"], a.get("length")) for a in spec["args"]] == [("x", "rows * n"), ("y", "rows"), ("n", None)]
    assert next(p for p in spec["params"] if p["name"] == "NUM_THREADS")["default"] == 256
    # Nothing was written into the macros: their launches are not the file's to edit.
    assert "LAUNCH_ROW_SUM(256)" in (root / "row_sum.cu").read_text()
    check = cutune("spec", "check", "row_sum.cutune.toml", cwd=root)
    assert check.returncode == 0, check.stdout + check.stderr


def test_the_case_a_switch_takes_for_the_shape_gives_the_template_default(tmp_path: Path):
    root = project(tmp_path, "macro_launchers")
    (root / ".git").mkdir()
    # `DISPATCH_ROW_MAX(n / 8)` switches over 64, 128 and 256 threads; `bench.py`'s first rows
    # are 2,048 long, so the program launches `row_max_kernel<256>`, not the declaration's 128
    # nor the first case.
    templatized = cutune("templatize", "row_max.cu", "--kernel", "row_max_kernel", "--write", cwd=root)
    assert templatized.returncode == 0, templatized.stderr
    assert "template parameter `NUM_THREADS` is 256 at the launch in line 45" in templatized.stderr
    assert "its block size is decided at line 45\n" in templatized.stderr
    spec = tomllib.loads((root / "row_max.cutune.toml").read_text())["kernels"][0]
    assert spec["block"] == ["NUM_THREADS"] and spec["shapes"][0] == {"rows": 4096, "n": 2048}
    assert next(p for p in spec["params"] if p["name"] == "NUM_THREADS")["default"] == 256
    # The source keeps its own default: the spec's is what the program runs.
    assert "template <int NUM_THREADS = 128>" in (root / "row_max.cu").read_text()
    check = cutune("spec", "check", "row_max.cutune.toml", cwd=root)
    assert check.returncode == 0, check.stdout + check.stderr


async def test_the_code_action_reads_a_launch_a_macro_writes(client, tmp_path: Path):
    root = project(tmp_path, "macro_launchers")
    (root / ".git").mkdir()
    spec = await code_action_spec(client, root / "row_sum.cu", "partial[threadIdx.x] = sum", "row_sum_kernel")
    assert spec["shapes"][0] == {"rows": 4096, "n": 2048} and "unknown" not in spec, spec
    spec = await code_action_spec(client, root / "row_max.cu", "partial[threadIdx.x] = best", "row_max_kernel")
    assert next(p for p in spec["params"] if p["name"] == "NUM_THREADS")["default"] == 256, spec


def test_a_launcher_macro_that_does_not_build_leaves_the_bindings_after_it_readable(tmp_path: Path):
    root = project(tmp_path, "macro_launchers")
    (root / ".git").mkdir()
    # `TRANSPOSE_TILES_LAUNCHER`'s launch is spelled `< < <`, so it is no launch-writing macro;
    # left unexpanded, its invocations at file scope swallowed `PYBIND11_MODULE` and with it
    # the binding of `transpose_f32`. `bench.py` makes the input with
    # `torch.arange(0, R * N).reshape(R, N)`, names it again (`x_in = x.contiguous()`) and
    # passes the op to `run`, which calls it as
    # `perf_func(x, out)`: of `run`'s callers, only the one that passes `transpose_f32` gives
    # its `y` (`torch.zeros((N, R))`), not those that pass `row_sum_f32` (`torch.zeros(R)`).
    spec = templatized_spec(root, "transpose.cu", "transpose_kernel")
    assert spec["shapes"][0] == {"rows": 4096, "cols": 2048} and "unknown" not in spec, spec
    assert [(a["name"], a.get("length")) for a in spec["args"]][:2] == [("x", "rows * cols"), ("y", "cols * rows")], spec["args"]
    # `transpose_tiles_f32`, which nothing binds, is called as its twin of the same file is:
    # through `run`'s callers that pass `transpose_f32`, not `row_sum_f32`'s `torch.zeros(R)`
    # (`row_sum_f32` and `row_max_f32` are twins too, called from the same `perf_func(x, out)`).
    for _ in range(3):
        tiles = templatized_spec(root, "transpose.cu", "transpose_tiles_kernel")
        assert tiles["shapes"][0] == {"rows": 4096, "cols": 2048} and "unknown" not in tiles, tiles
        assert [(a["name"], a.get("length")) for a in tiles["args"]][:2] == [("x", "rows * cols"), ("y", "cols * rows")], tiles["args"]


def test_a_host_templates_constants_give_the_kernels_template_arguments_for_the_first_instantiation(tmp_path: Path):
    root = project(tmp_path, "head_dispatch")
    (root / ".git").mkdir()
    # `launch_head_scale<64, 2>` (the case `bench_heads.py`'s head dimension of 64 takes) works
    # out `kWarps = (kHeadDim < 128) ? 4 : 8`, sizes its grid with `div_up` from
    # `common/math_utils.h` (not beside the file that includes it), and its block with
    # `WARP_SIZE * ((kHeadDim < 128) ? 4 : 8)`: 128 there is a threshold, not a block size.
    spec, report = templatized_spec_and_report(root, "attention/head_scale.cu", "head_scale_kernel")
    assert spec["template_args"] == ["64", "kRowsPerWarp", "4", "2"], spec
    assert spec["grid"] == ["ceil_div(seq_len, (kHeadDim < 128 ? 4 : 8) * kRowsPerWarp)", "batch * heads"], spec
    assert spec["block"] == ["WARP_SIZE * (kHeadDim < 128 ? 4 : 8)"], spec
    assert "BLOCK_SIZE" not in report
    # The other instantiations are other kernels: no shape gives `kHeadDim` another value.
    assert "kHeadDim == 64" in spec["restrictions"] and all(shape["kHeadDim"] == 64 for shape in spec["shapes"]), spec
    # `head_scale`'s `switch (d)` took `case 64:` with `d = q.size(3)`: the kernel indexes rows
    # of `kHeadDim`, so the verification may not give `q` another last dimension.
    assert "q_size_3 == 64" in spec["restrictions"], spec["restrictions"]
    assert spec["shapes"][0]["seq_len"] == 1024 and "unknown" not in spec, spec


async def test_the_code_action_instantiates_a_kernel_as_its_host_template_does(client, tmp_path: Path):
    root = project(tmp_path, "head_dispatch")
    (root / ".git").mkdir()
    spec = await code_action_spec(client, root / "attention" / "head_scale.cu", "const int lane", "head_scale_kernel")
    assert spec["template_args"] == ["64", "kRowsPerWarp", "4", "2"] and "unknown" not in spec, spec


def test_a_benchmark_scripts_helpers_and_the_dispatch_its_tensors_take_give_the_instantiation(tmp_path: Path):
    root = project(tmp_path, "attention_bench")
    (root / ".git").mkdir()
    # The binding is in `pybind/bindings.cc` (through a macro); `bench_attention.py` makes its
    # tensors in `make_inputs`, which returns them as a tuple, over a list of head dimensions
    # given as `[64] if not args.D else [args.D]`, and `run` returns early for a tag it skips.
    # `value_mix`'s first case is `case 32:` under `stages > 1`; the script's loop first calls
    # `run(lib.value_mix, v, o, "stages1", stages=1)` with a `v` of 64 columns, so the
    # instantiation is `launch_value_mix<64, 1>`, with its shape.
    spec = templatized_spec(root, "csrc/value_mix.cu", "value_mix_kernel")
    assert spec["template_args"] == ["64", "1"] and "unknown" not in spec, spec
    assert spec["shapes"][0] == {"kHeadDim": 64, "seq_len": 1024, "v_size_0": 2, "v_size_1": 8, "v_size_3": 64}, spec["shapes"]
    assert "v_size_3 == 64" in spec["restrictions"] and "kHeadDim == 64" in spec["restrictions"], spec["restrictions"]
    assert spec["grid"] == ["ceil_div(seq_len, kHeadDim < 128 ? 8 : 4)", "v_size_0 * v_size_1"], spec


async def test_the_code_action_reads_a_benchmark_scripts_helpers(client, tmp_path: Path):
    root = project(tmp_path, "attention_bench")
    (root / ".git").mkdir()
    spec = await code_action_spec(client, root / "csrc" / "value_mix.cu", "const float mixed", "value_mix_kernel")
    assert spec["template_args"][0] == "64" and spec["shapes"][0]["v_size_0"] == 2 and "unknown" not in spec, spec


def test_a_tensor_a_script_transposes_has_its_dimensions_swapped(tmp_path: Path):
    root = project(tmp_path, "attention_bench")
    (root / ".git").mkdir()
    # `make_inputs` returns `vt = v.transpose(-2, -1).contiguous()` of a `v` of [2, 8, 1024, 64]:
    # the kernel's rows are the 64 columns of each head, each 1,024 long.
    spec = templatized_spec(root, "csrc/column_sum.cu", "column_sum_kernel")
    assert spec["shapes"][0] == {"vt_size_0": 2, "vt_size_1": 8, "vt_size_2": 64, "seq_len": 1024, "sums_size_0": 1024}, spec["shapes"]
    assert [(a["name"], a.get("length")) for a in spec["args"]][:2] == [("vt", "vt_size_0 * vt_size_1 * vt_size_2 * seq_len"), ("sums", "sums_size_0")]
    assert "unknown" not in spec, spec
    # The other kernel of the script keeps its instantiation and shape.
    assert templatized_spec(root, "csrc/value_mix.cu", "value_mix_kernel")["shapes"][0]["seq_len"] == 1024


async def test_the_code_action_reads_a_transposed_tensor(client, tmp_path: Path):
    root = project(tmp_path, "attention_bench")
    (root / ".git").mkdir()
    spec = await code_action_spec(client, root / "csrc" / "column_sum.cu", "sum += __half2float", "column_sum_kernel")
    assert spec["shapes"][0]["vt_size_2"] == 64 and spec["shapes"][0]["seq_len"] == 1024 and "unknown" not in spec, spec


def test_a_sweep_a_helper_returns_gives_the_sizes_of_the_slices_a_script_passes(tmp_path: Path):
    root = project(tmp_path, "gemm_sweep")
    (root / ".git").mkdir()
    # `Ms, Ns, Ks = get_mnk()`, each `list(range(sep, args.MMNK + sep, sep))` with `sep` the
    # default of `--SEP`; `for M, N, K in zip(Ms, Ns, Ks)` slices `A`, made at `max(Ms)` rows.
    spec = templatized_spec(root, "hgemm_naive.cu", "hgemm_naive_kernel")
    assert spec["shapes"] == [{"M": 512, "N": 512, "K": 512}], spec["shapes"]
    assert [(a["name"], a.get("length")) for a in spec["args"]][:3] == [("a", "M * K"), ("b", "K * N"), ("c", "M * N")]
    assert "unknown" not in spec, spec


async def test_the_code_action_reads_a_sweep_a_helper_returns(client, tmp_path: Path):
    root = project(tmp_path, "gemm_sweep")
    (root / ".git").mkdir()
    spec = await code_action_spec(client, root / "hgemm_naive.cu", "float sum = 0.0f", "hgemm_naive_kernel")
    assert spec["shapes"] == [{"M": 512, "N": 512, "K": 512}] and "unknown" not in spec, spec


def test_an_element_wise_kernel_launched_a_row_per_block_gets_a_block_the_grid_follows(tmp_path: Path):
    root = project(tmp_path, "flat_elements")
    (root / ".git").mkdir()
    # `shift` launches a row of `cols` per block in its `dims == 2` branch, the one `main` takes;
    # the other branch's `n = 1`, `dim3 block(256)` and `grid` are other variables.
    spec, report = templatized_spec_and_report(root, "shift.cu", "shift_values")
    assert spec["block"] == ["SHIFT_VALUES_BLOCK_SIZE"] and spec["grid"] == ["ceil_div(rows * cols, SHIFT_VALUES_BLOCK_SIZE)"], spec
    assert spec["shapes"][0] == {"rows": 4096, "cols": 512}
    block = next(p for p in spec["params"] if p["name"] == "SHIFT_VALUES_BLOCK_SIZE")
    assert (block["kind"], block["default"], block["values"]) == ("launch", 512, [32, 64, 128, 256, 512, 1024])
    assert "only the launch changes, no recompile" in report
    # Four elements a thread, stored through a macro that stands for the element.
    packed = templatized_spec(root, "shift.cu", "shift_values4")
    assert packed["grid"] == ["ceil_div(rows * (cols // 4), SHIFT_VALUES4_BLOCK_SIZE)"]
    assert next(p for p in packed["params"] if p["name"] == "SHIFT_VALUES4_BLOCK_SIZE")["default"] == 128
    # The program's rows are whole float4s: checks at other sizes keep to them.
    assert packed["restrictions"] == ["cols % 4 == 0"]
    assert [(a["name"], a.get("role")) for a in packed["args"]][:2] == [("x", "input"), ("y", "output")]
    # Loads before the bound: a larger grid's extra threads would read past the end, so the
    # block divides the program's threads exactly, and no tail shape of fewer rows is made.
    unchecked = templatized_spec(root, "shift.cu", "shift_values4_unchecked")
    assert unchecked["grid"] == ["ceil_div(rows * (cols // 4), SHIFT_VALUES4_UNCHECKED_BLOCK_SIZE)"], unchecked
    assert unchecked["restrictions"] == ["cols % 4 == 0", "(rows * (cols // 4)) % SHIFT_VALUES4_UNCHECKED_BLOCK_SIZE == 0"]
    assert unchecked["shapes"] == [{"rows": 4096, "cols": 512}]
    check = cutune("check", "shift.cu", "--kernel", "shift_values4_unchecked", cwd=root)
    assert check.returncode == 0, check.stdout + check.stderr


async def test_the_code_action_lets_the_grid_follow_the_block_of_an_element_wise_kernel(client, tmp_path: Path):
    root = project(tmp_path, "flat_elements")
    (root / ".git").mkdir()
    spec = await code_action_spec(client, root / "shift.cu", "y[i] = unit * x[i] + offset", "shift_values")
    assert spec["grid"] == ["ceil_div(rows * cols, SHIFT_VALUES_BLOCK_SIZE)"] and "unknown" not in spec, spec


def test_a_count_of_elements_made_dimension_by_dimension_is_the_tensors_and_a_loop_step_is_unknown(tmp_path: Path):
    root = project(tmp_path, "counted_elements")
    (root / ".git").mkdir()
    # `int n = 1; for (int d = 0; d < rank; ++d) n *= x.size(d);` with `rank = x.dim()`: every
    # element of the script's 64 × 128 × 32 tensor, not the 1 `n` starts at.
    spec = templatized_spec(root, "scale.cu", "scale_all")
    assert spec["shapes"][0] == {"x_size_0": 64, "x_size_1": 128, "x_size_2": 32}, spec["shapes"]
    n = next(a for a in spec["args"] if a["name"] == "n")
    assert n["value"] == "x_size_0 * x_size_1 * x_size_2", n
    # `n *= 2` once per round of the caller's: no number, and the spec says why.
    step_line = (root / "scale.cu").read_text().splitlines().index("    n *= 2;") + 1
    run = cutune("templatize", "scale.cu", "--kernel", "fill_ramp", "--write", cwd=root)
    assert run.returncode == 0, run.stderr
    ramp = next(k for k in tomllib.loads((root / "scale.cutune.toml").read_text())["kernels"] if k["name"] == "fill_ramp")
    assert ramp["unknown"]["n"] == f"the program steps `n` in a loop in `ramp` (scale.cu:{step_line}), as many times as the loop runs", ramp
    assert all("n" not in shape for shape in ramp["shapes"]), ramp["shapes"]


def test_rows_counted_over_the_dimensions_before_a_constant_one_are_those_dimensions(tmp_path: Path):
    root = project(tmp_path, "counted_elements")
    (root / ".git").mkdir()
    # `const int64_t dim = 1; int64_t outer_size = 1; for (i = 0; i < dim; ++i) outer_size *=
    # x.size(i);`: the leading dimension of the script's 512 × 1000 tensor, not a loop's unknown.
    spec = templatized_spec(root, "scale.cu", "row_means")
    assert spec["grid"] == ["outer_size"] and spec["shapes"][0] == {"outer_size": 512, "x_size_1": 1000}, spec
    assert {a["name"]: a.get("length") for a in spec["args"]} == {"x": "outer_size * x_size_1", "means": "outer_size", "cols": None}, spec["args"]


def test_a_grid_dividing_by_the_template_block_of_a_macro_launcher_follows_it(tmp_path: Path):
    root = project(tmp_path, "counted_elements")
    (root / ".git").mkdir()
    # `dim3 block(256); dim3 grid((n + 256 - 1) / 256); sum_squares<256><<<grid, block>>>` in a
    # macro: the block is `THREADS`, and so is what the grid divides by; with 256 left there, a
    # block of 128 would sum half the elements.
    spec = templatized_spec(root, "scale.cu", "sum_squares")
    assert spec["block"] == ["THREADS"], spec
    assert spec["grid"] == ["ceil_div(x_size_0 * x_size_1 * x_size_2, THREADS)"], spec
    threads = next(p for p in spec["params"] if p["name"] == "THREADS")
    assert threads["default"] == 256 and len(threads["values"]) > 1, threads


async def test_the_code_action_counts_the_elements_of_a_tensor_of_any_rank(client, tmp_path: Path):
    root = project(tmp_path, "counted_elements")
    (root / ".git").mkdir()
    spec = await code_action_spec(client, root / "scale.cu", "y[i] = factor * x[i]", "scale_all")
    assert spec["shapes"][0] == {"x_size_0": 64, "x_size_1": 128, "x_size_2": 32}, spec
    spec = await code_action_spec(client, root / "scale.cu", "partial[threadIdx.x] = i < n", "sum_squares")
    assert spec["grid"] == ["ceil_div(x_size_0 * x_size_1 * x_size_2, THREADS)"], spec


def test_a_grid_and_block_passed_to_the_launcher_as_dim3_arguments_come_from_the_caller(tmp_path: Path):
    root = project(tmp_path, "dim3_arguments")
    (root / ".git").mkdir()
    # `launch_paint(dim3 grid, dim3 block, …)` launches `paint<<<grid, block>>>`; `draw` in
    # main.cpp makes `dim3 block(16, 16, 1)` and `dim3 grid(image_width / block.x, …)`
    # and passes `image_width` as `width`.
    spec = templatized_spec(root, "paint.cu", "paint")
    assert spec["block"] == ["PAINT_BLOCK_X", "PAINT_BLOCK_Y"], spec
    # `image_width` is the launcher's `width`, which the kernel takes too: one size, not two.
    assert spec["grid"] == ["width // PAINT_BLOCK_X", "image_height // PAINT_BLOCK_Y"], spec
    assert spec["shapes"][0] == {"width": 512, "image_height": 384}, spec["shapes"]
    assert {p["name"]: p["default"] for p in spec["params"]}["PAINT_BLOCK_Y"] == 16
    # The frame buffer is a file-scope pointer an init function allocates from its own local
    # (`unsigned int count = image_width * image_height;`): its length is that local's value.
    pixels = next(a for a in spec["args"] if a["name"] == "pixels")
    assert pixels["length"] == "width * image_height", pixels
    assert "unknown" not in spec


def test_sizes_read_from_the_command_line_are_those_of_the_run_the_project_documents(tmp_path: Path):
    root = project(tmp_path, "documented_run")
    (root / ".git").mkdir()
    # Rodinia's shape: `main` reads `rows = atoi(argv[1])` and the rest under `if (argc != 5)
    # … else` (`weight` with `sscanf(argv[4], "%f", &weight)`), an init function sets the
    # file-scope `cols` the same way, and `run` beside it
    # says `./smooth 600 500 10 0.25 > result.txt`. The kernel is in a file main.cu includes
    # after define.h, whose `#define real float` is its element type.
    spec, report = templatized_spec_and_report(root, "smooth_kernel.cu", "smooth")
    assert "command-line: sizes the program reads from its command line are those of its documented run `./smooth 600 500 10 0.25` (run:3)" in report, report
    assert spec["shapes"] == [{"rows": 600, "cols": 500}], spec["shapes"]
    # `blocks = count / BLOCK; if (count % BLOCK != 0) blocks = blocks + 1;`: rounded up.
    assert spec["grid"] == ["ceil_div(rows * cols, BLOCK)"], spec["grid"]
    args = {a["name"]: a for a in spec["args"]}
    assert (args["in"]["dtype"], args["in"]["length"]) == ("f32", "rows * cols"), args["in"]
    assert (args["weight"]["dtype"], args["weight"]["value"]) == ("f32", "0.25"), args["weight"]
    assert "unknown" not in spec
    # `BLOCK` is 256 in the `#else` of `#ifdef SMOOTH_BLOCK`: the build's default, a parameter.
    block = next(p for p in spec["params"] if p["name"] == "BLOCK")
    assert (block["kind"], block["default"]) == ("define", 256), block
    assert block["origin"].startswith("`#define BLOCK 256` at define.h:7"), block

    # Without the script, each size says where the program reads it and what is missing.
    root = project(tmp_path / "without_run", "documented_run")
    (root / ".git").mkdir()
    (root / "run").unlink()
    run = cutune("templatize", "smooth_kernel.cu", "--kernel", "smooth", "--write", cwd=root)
    assert run.returncode == 0, run.stderr
    spec = spec_of((root / "smooth_kernel.cutune.toml").read_text())
    assert spec["unknown"]["rows"] == "the program reads it from the command line as `atoi(argv[1])` in `main` (main.cu:31), and no script beside it (`run`, `*.sh`) runs it with arguments", spec["unknown"]
    # A file-scope variable an init function sets: read there.
    assert spec["unknown"]["cols"].startswith("the program reads it from the command line as `atoi(argv[2])` in `read_width` (main.cu:16)"), spec["unknown"]
    check = cutune("spec", "check", "smooth_kernel.cutune.toml", cwd=root)
    assert check.returncode != 0
    assert "`rows` is a size no shape gives (the program reads it from the command line as `atoi(argv[1])`" in check.stdout, check.stdout


def test_options_read_with_getopt_or_a_loop_over_argv_are_those_of_the_documented_run(tmp_path: Path):
    root = project(tmp_path, "options_run")
    (root / ".git").mkdir()
    # `factor.cu` reads `-s` with getopt_long (`case 's': matrix_dim = atoi(optarg);`) and `run`
    # says `./factor -v -s 384`; `matrix_dim` is a launcher's parameter, not a tensor's rank.
    spec, report = templatized_spec_and_report(root, "factor.cu", "divide_rows")
    assert "documented run `./factor -v -s 384` (run:3)" in report, report
    assert spec["shapes"] == [{"i": 0, "matrix_dim": 384}], spec["shapes"]
    assert spec["grid"] == ["ceil_div(matrix_dim - i, TILE)"], spec["grid"]
    assert next(a for a in spec["args"] if a["name"] == "m")["length"] == "matrix_dim * matrix_dim"
    assert "unknown" not in spec
    # `boxes.cu` reads `-boxes 6` and `-cutoff 0.5` in `for (args.at = 1; args.at < argc;
    # args.at++)` with `strcmp(argv[args.at], "-boxes") == 0` and `!strcmp(…)`, the values
    # at `argv[args.at + 1]` and `argv[++args.at]`, into members of a struct.
    spec = templatized_spec(root, "boxes.cu", "count_neighbours")
    assert spec["grid"] == ["6 * 6 * 6"], spec["grid"]
    args = {a["name"]: a for a in spec["args"]}
    assert args["counts"]["length"] == "6 * 6 * 6", args["counts"]
    assert args["cutoff"]["value"] == "0.5", args["cutoff"]
    assert "unknown" not in spec
    # `PER_BOX` sizes the positions and is compiled into the kernel: no shape may change it (the
    # verification's edge cases would otherwise read past what the kernel was built for).
    assert spec["shapes"] == [{"PER_BOX": 64}] and "PER_BOX == 64" in spec["restrictions"], spec

    # A run that leaves an option out leaves the program's default: getopt never reaches its case.
    (root / "run").write_text("./factor -v\n./boxes -cutoff 2\n")
    for made in root.glob("*.cutune.toml"):
        made.unlink()
    assert templatized_spec(root, "factor.cu", "divide_rows")["shapes"] == [{"i": 0, "matrix_dim": 32}]
    assert templatized_spec(root, "boxes.cu", "count_neighbours")["grid"] == ["4 * 4 * 4"]
    # getopt_long's table gives the long name: `--size=200` is `-s 200`.
    (root / "run").write_text("./factor --verify --size=200\n")
    (root / "factor.cutune.toml").unlink()
    assert templatized_spec(root, "factor.cu", "divide_rows")["shapes"] == [{"i": 0, "matrix_dim": 200}]


def test_grids_of_the_blocks_an_sm_holds_follow_each_configuration(tmp_path: Path):
    root = project(tmp_path, "cooperative_launch")
    (root / ".git").mkdir()
    # `fill_resident`: `cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, fill_resident,
    # threads, 0)`, then `blocks *= prop.multiProcessorCount`: the grid is the spec's
    # `blocks_per_sm`, which tuning works out for each configuration, times the GPU's SMs.
    spec = templatized_spec(root, "fill_resident.cu", "fill_resident")
    assert spec["grid"] == ["ceil_div(blocks_per_sm * sm_count, FILL_RESIDENT_ITEMS_PER_THREAD)"], spec["grid"]
    assert spec["shapes"] == [{"count": 1 << 20, "sm_count": 132}], spec["shapes"]
    assert next(p for p in spec["params"] if p["name"] == "threads")["kind"] == "launch"
    # `sum_resident`: the problem's blocks, capped at those that fit at once (`if (blocks >
    # per_sm * prop.multiProcessorCount) blocks = …`), for a cooperative launch through a
    # launcher; the partials, one a block and read only after `grid.sync()`, follow it and are
    # compared by their sum.
    spec = templatized_spec(root, "sum_resident.cu", "sum_resident")
    resident = "min(ceil_div(n, threads), blocks_per_sm * sm_count)"
    assert (spec["grid"], spec["block"], spec["cooperative"]) == ([resident], ["threads"], True), spec
    partials = next(a for a in spec["args"] if a["name"] == "partials")
    assert (partials["length"], partials["role"], partials["compare"]) == (resident, "output", "sum"), partials
    assert "unknown" not in spec
    # Compiled without a GPU: each configuration's launch evaluates, the blocks an SM holds
    # from what it compiles to.
    compiled = cutune("check", "sum_resident.cu", "--kernel", "sum_resident", "--sample", "3", "--json", cwd=root)
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr
    report = json.loads(compiled.stdout)
    assert (report["checked"], report["compiled"], report["infeasible"], report["failed"]) == (3, 3, 0, 0), report


def test_what_a_spec_expression_cannot_say_stays_unknown_with_the_programs_text(tmp_path: Path):
    root = tmp_path / "project"
    root.mkdir()
    (root / ".git").mkdir()
    # Rodinia's nn: the count is what a host function reads from a file, and the grid is made
    # of it; a second kernel is never launched.
    (root / "nearest.cu").write_text(
        "#include <cstdio>\n\n"
        "__global__ void distance(const float *points, float *out, int n)\n{\n"
        "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "    if (i < n) out[i] = points[2 * i] * points[2 * i] + points[2 * i + 1] * points[2 * i + 1];\n}\n\n"
        "__global__ void unused(float *x, int n)\n{\n"
        "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "    if (i < n) x[i] = 0.0f;\n}\n\n"
        "int load_points(const char *path, float *points)\n{\n"
        "    FILE *f = fopen(path, \"r\");\n    int n = 0;\n"
        "    while (fscanf(f, \"%f %f\", &points[2 * n], &points[2 * n + 1]) == 2) n++;\n"
        "    fclose(f);\n    return n;\n}\n\n"
        "int main()\n{\n"
        "    static float points[2 * 65536];\n"
        "    float *d_points, *d_out;\n"
        "    cudaMalloc(&d_points, sizeof(points));\n"
        "    cudaMalloc(&d_out, 65536 * sizeof(float));\n"
        "    distance<<<(load_points(\"points.txt\", points) + 255) / 256, 256>>>(d_points, d_out, load_points(\"points.txt\", points));\n"
        "    return 0;\n}\n"
    )
    run = cutune("templatize", "nearest.cu", "--kernel", "distance", "--write", cwd=root)
    assert run.returncode == 0, run.stderr
    spec = spec_of((root / "nearest.cutune.toml").read_text())
    assert spec["grid"] == ["?"], spec["grid"]
    # The grid and the count, each with the program's text and why the spec cannot say it.
    grid = spec["unknown"]["grid"]
    assert grid.startswith("the program makes it as `(((load_points(\"points.txt\", points) + DISTANCE_BLOCK_SIZE - 1)"), grid
    assert grid.endswith("which a spec expression cannot say: a string is host code, which the spec cannot read"), grid
    assert spec["unknown"]["n"] == "the program makes it as `load_points(\"points.txt\", points)`, which a spec expression cannot say: a string is host code, which the spec cannot read", spec["unknown"]
    assert "load_points" not in spec["unknown"], "a host function is no size"
    survey = json.loads(cutune("survey", "--json", str(root)).stdout)
    why = {k["kernel"]: k["why"] for k in survey["kernels"]}
    assert why["distance"].startswith("grid extent x is unknown (the program makes it as `"), why
    # Launched by nothing: the launch its flat index asks for, on a count templatize chose.
    unused = next(k for k in survey["kernels"] if k["kernel"] == "unused")
    assert (unused["stage"], unused["chosen_sizes"]) == ("ready", ["n"]), unused


def test_ping_pong_buffers_in_an_array_and_a_grid_worked_out_from_the_block_through_locals(tmp_path: Path):
    root = tmp_path / "project"
    root.mkdir()
    (root / ".git").mkdir()
    # Rodinia's pathfinder: `int *buffers[2]`, each element allocated alike and passed as
    # `buffers[t % 2]`; the caller works the grid out from the block through its locals
    # (`inner = BLOCK - border * 2; tiles = cols / inner + …`).
    (root / "steps.cu").write_text(
        "#define BLOCK 256\n#define HALO 1\n\n"
        "__global__ void step(const int *wall, const int *src, int *dst, int cols, int border)\n{\n"
        "    __shared__ int row[BLOCK];\n"
        "    int i = blockIdx.x * (BLOCK - 2 * border) + threadIdx.x - border;\n"
        "    row[threadIdx.x] = (i >= 0 && i < cols) ? src[i] : 0;\n"
        "    __syncthreads();\n"
        "    if (i >= 0 && i < cols && threadIdx.x >= border && threadIdx.x < BLOCK - border) dst[i] = row[threadIdx.x] + wall[i];\n}\n\n"
        "void run_steps(int *wall, int *buffers[2], int cols, int border, int tiles)\n{\n"
        "    for (int t = 0; t < 4; t++) {\n"
        "        step<<<tiles, BLOCK>>>(wall, buffers[t % 2], buffers[(t + 1) % 2], cols, border);\n"
        "    }\n}\n\n"
        "int main()\n{\n"
        "    int cols = 100000, height = 20;\n"
        "    int border = height * HALO;\n"
        "    int inner = BLOCK - border * 2;\n"
        "    int tiles = cols / inner + ((cols % inner == 0) ? 0 : 1);\n"
        "    int *wall, *buffers[2];\n"
        "    cudaMalloc((void **)&wall, sizeof(int) * cols);\n"
        "    cudaMalloc((void **)&buffers[0], sizeof(int) * cols);\n"
        "    cudaMalloc((void **)&buffers[1], sizeof(int) * cols);\n"
        "    run_steps(wall, buffers, cols, border, tiles);\n"
        "    return 0;\n}\n"
    )
    spec = templatized_spec(root, "steps.cu", "step")
    lengths = {a["name"]: a.get("length") for a in spec["args"]}
    assert (lengths["src"], lengths["dst"]) == ("cols", "cols"), spec["args"]
    # The grid moves with `BLOCK`, which the kernel's code uses too (a `define` parameter).
    assert any(p["name"] == "BLOCK" and p["kind"] == "define" for p in spec["params"]), spec["params"]
    assert spec["grid"] == ["cols // (BLOCK - border * 2) + (cols % (BLOCK - border * 2) == 0 ? 0 : 1)"], spec["grid"]
    assert spec["shapes"][0]["cols"] == 100000 and "tiles" not in spec["shapes"][0], spec["shapes"]


def test_a_dim3_argument_whose_extents_a_condition_changes_stays_unknown(tmp_path: Path):
    root = project(tmp_path, "dim3_arguments")
    (root / ".git").mkdir()
    # marchingCubes' shape: a grid too wide for one axis is folded into two, under a condition
    # on the sizes the spec cannot say; reading `grid.x = 32768` unconditionally would lie.
    main = (root / "main.cpp").read_text()
    folded = main.replace(
        "    launch_paint(grid, block, out, image_width);",
        "    if (grid.x > 65535) {\n        grid.y = grid.x / 32768;\n        grid.x = 32768;\n    }\n    launch_paint(grid, block, out, image_width);",
    )
    assert folded != main
    (root / "main.cpp").write_text(folded)
    run = cutune("templatize", "paint.cu", "--kernel", "paint", "--write", cwd=root)
    assert run.returncode == 0, run.stderr
    spec = spec_of((root / "paint.cutune.toml").read_text())
    assert spec["grid"] == ["grid"], spec["grid"]
    assert spec["unknown"]["grid"].startswith("the program makes it as `image_width / block.x, image_height / block.y, 1` in `draw`"), spec["unknown"]


def test_a_dim3_member_assigned_after_the_launch_in_its_loop_is_not_the_launchs(tmp_path: Path):
    root = tmp_path / "project"
    root.mkdir()
    (root / ".git").mkdir()
    # jacobiCudaGraphs' shape: `nblocks` is constructed for `relax`; later in the loop the
    # program sets `nblocks.x` for another kernel. The first pass launches `relax` with the
    # constructed extent.
    (root / "relax.cu").write_text(
        "#define N_ROWS 4096\n#define ROWS_PER_BLOCK 8\n\n"
        "__global__ void relax(const float *a, float *x, int n)\n{\n"
        "    int row = blockIdx.x * ROWS_PER_BLOCK + threadIdx.x / 32;\n"
        "    if (row < n && threadIdx.x % 32 == 0) x[row] = 0.5f * (x[row] + a[row]);\n}\n\n"
        "__global__ void residual(const float *x, float *sum, int n)\n{\n"
        "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "    if (i < n) atomicAdd(sum, x[i]);\n}\n\n"
        "int main()\n{\n"
        "    float *a, *x, *sum;\n"
        "    cudaMalloc(&a, N_ROWS * sizeof(float));\n"
        "    cudaMalloc(&x, N_ROWS * sizeof(float));\n"
        "    cudaMalloc(&sum, sizeof(float));\n"
        "    dim3 nthreads(256, 1, 1);\n"
        "    dim3 nblocks(N_ROWS / ROWS_PER_BLOCK, 1, 1);\n"
        "    for (int k = 0; k < 10; k++) {\n"
        "        relax<<<nblocks, nthreads>>>(a, x, N_ROWS);\n"
        "        nblocks.x = N_ROWS / nthreads.x;\n"
        "        residual<<<nblocks, nthreads>>>(x, sum, N_ROWS);\n"
        "    }\n"
        "    return 0;\n}\n"
    )
    run = cutune("templatize", "relax.cu", "--kernel", "relax", "--diff", cwd=root)
    assert run.returncode == 0, run.stderr
    assert 'grid = ["N_ROWS // ROWS_PER_BLOCK"]' in run.stdout, run.stdout
    run = cutune("templatize", "relax.cu", "--kernel", "residual", "--diff", cwd=root)
    assert 'grid = ["N_ROWS // RESIDUAL_BLOCK_SIZE"]' in run.stdout, run.stdout


async def test_the_code_action_reads_sizes_from_the_documented_run(client, tmp_path: Path):
    root = project(tmp_path, "documented_run")
    (root / ".git").mkdir()
    spec = await code_action_spec(client, root / "smooth_kernel.cu", "weight * (in[i - 1]", "smooth")
    assert spec["shapes"] == [{"rows": 600, "cols": 500}], spec
    assert spec["grid"] == ["ceil_div(rows * cols, BLOCK)"], spec


async def test_the_code_action_reads_options_from_the_documented_run(client, tmp_path: Path):
    root = project(tmp_path, "options_run")
    (root / ".git").mkdir()
    spec = await code_action_spec(client, root / "factor.cu", "float diagonal", "divide_rows")
    assert spec["shapes"] == [{"i": 0, "matrix_dim": 384}], spec


async def test_the_code_action_writes_a_grid_of_the_blocks_an_sm_holds(client, tmp_path: Path):
    root = project(tmp_path, "cooperative_launch")
    (root / ".git").mkdir()
    spec = await code_action_spec(client, root / "sum_resident.cu", "lane[threadIdx.x] = sum", "sum_resident")
    assert spec["grid"] == ["min(ceil_div(n, threads), blocks_per_sm * sm_count)"], spec


def test_buffers_of_curand_states_are_counted_in_their_states_words(tmp_path: Path):
    root = project(tmp_path, "random_states")
    (root / ".git").mkdir()
    # `cudaStatus = cudaMalloc((void **)&d_sobol, count * sizeof(sobol_state))`, the pointer
    # declared `= 0`: a Sobol state is 35 words (three and its 32 direction vectors).
    sobol = templatized_spec(root, "generators.cu", "seed_sobol")
    args = {a["name"]: a for a in sobol["args"]}
    assert (args["states"]["dtype"], args["states"]["length"]) == ("u32", "count * 35"), args["states"]
    assert (args["directions"]["dtype"], args["directions"]["length"]) == ("u32", "32"), args["directions"]
    mrg = templatized_spec(root, "generators.cu", "seed_mrg")
    states = next(a for a in mrg["args"] if a["name"] == "states")
    assert (states["dtype"], states["length"]) == ("u32", "count * 12"), states

    # A struct of the program's own: the reason names the allocation and the type, not the `= 0`.
    text = (root / "generators.cu").read_text()
    (root / "generators.cu").write_text(text.replace("#include <curand_kernel.h>\n", "#include <curand_kernel.h>\n\nstruct tagged_state {\n    int tag;\n    curandStateMRG32k3a_t state;\n};\n").replace("curandStateMRG32k3a_t *d_mrg", "tagged_state *d_mrg").replace("sizeof(curandStateMRG32k3a_t)", "sizeof(tagged_state)").replace("seed_mrg(curandStateMRG32k3a_t *states", "seed_mrg(tagged_state *states").replace("&states[i]);\n    }\n}\n\nint main", "&states[i].state);\n    }\n}\n\nint main"))
    report = json.loads(cutune("survey", str(root), "--json").stdout)
    mrg = next(k for k in report["kernels"] if k["kernel"] == "seed_mrg")
    assert mrg["stage"] == "spec", mrg
    line = next(i for i, l in enumerate((root / "generators.cu").read_text().splitlines(), 1) if "sizeof(tagged_state)" in l)
    assert f"the program allocates `count * sizeof(tagged_state)` bytes for it in `main` (generators.cu:{line}), and templatize does not know the size of `tagged_state`" in mrg["why"], mrg["why"]


def test_a_branch_written_with_operator_words_gives_its_tile(tmp_path: Path):
    root = project(tmp_path, "word_operators")
    (root / ".git").mkdir()
    # `if (M >= 128 and N >= 128 and not (M > 65536))` holds for main's 1024 x 768.
    spec = templatized_spec(root, "tiles.cuh", "fill_tiles")
    defaults = {p["name"]: p["default"] for p in spec["params"] if p["kind"] == "template"}
    assert defaults == {"BM": 128, "BN": 64, "TM": 4, "TN": 4}, spec["params"]
    assert spec["grid"] == ["ceil_div(N, BN)", "ceil_div(M, BM)"] and spec["block"] == ["BM * BN // (TM * TN)"], spec
    assert spec["shapes"] == [{"M": 1024, "N": 768}], spec["shapes"]
    # `r += rows_per_pass`, `rows_per_pass = threads / BN`: a tile whose threads are fewer than
    # its columns would loop forever, so such tiles are out of the space.
    assert "((BM * BN) // (TM * TN)) // BN >= 1" in spec["restrictions"], spec["restrictions"]
    # It checks `row < M && col < N`: its sizes may be any, tiles or not.
    assert not any("%" in r for r in spec["restrictions"]), spec["restrictions"]
    # `scale_row_chunks` checks nothing: `for (k0 = 0; k0 < K; k0 += TILE) row[k0 + threadIdx.x]`
    # with `K` given `N` reads past a row at any `N` no multiple of the tile.
    chunks = templatized_spec(root, "tiles.cuh", "scale_row_chunks")
    assert chunks["restrictions"] == ["N % TILE == 0"], chunks["restrictions"]


async def test_the_code_action_follows_a_branch_written_with_operator_words(client, tmp_path: Path):
    root = project(tmp_path, "word_operators")
    (root / ".git").mkdir()
    spec = await code_action_spec(client, root / "tiles.cuh", "C[row * N + col] = value", "fill_tiles")
    assert {p["name"]: p["default"] for p in spec["params"] if p["kind"] == "template"} == {"BM": 128, "BN": 64, "TM": 4, "TN": 4}, spec


def test_a_launcher_passed_down_as_a_function_pointer_is_followed_to_main(tmp_path: Path):
    root = project(tmp_path, "benchmark_harness")
    (root / ".git").mkdir()
    # `main` passes `reduction` to `run_benchmark(int (*reduce)(…), …)`, which passes `reduce` on
    # to `run_reduction`, which calls it with `num_threads = 256`; two files of the folder each
    # define a `reduction` (two programs of one harness), each followed to its own kernel.
    for file, kernel in [("block_sums.cu", "block_sums"), ("warp_partials.cu", "warp_partials")]:
        spec = templatized_spec(root, file, kernel)
        assert spec["shapes"] == [{"size": 4194304}], (kernel, spec["shapes"])
        assert spec["grid"] == ["ceil_div(size, n_threads)"] and spec["block"] == ["n_threads"], spec
        block = next(p for p in spec["params"] if p["name"] == "n_threads")
        assert (block["kind"], block["default"], block["origin"]) == ("launch", 256, "`num_threads = 256` in `run_benchmark`"), block
        assert "unknown" not in spec


def test_a_variant_commented_out_of_a_harness_is_run_as_its_twins_are_with_the_harness_buffers(tmp_path: Path):
    root = project(tmp_path, "commented_variants")
    (root / ".git").mkdir()
    # `main` hands `gemmTiled` and `gemmWide` to `harness.evaluate(gemm, name)`, which calls
    # `gemm(m_A, m_B, m_C, m_M, m_N, m_K)`; `// harness.evaluate(gemmNaive, "naive");` is a
    # comment, so `gemmNaive` is called as its twins of the folder are. The buffers are members
    # the harness's constructor allocates from its own parameters (`rows * depth`).
    for file, kernel in [("gemm/naive.cu", "gemmNaiveKernel"), ("gemm/tiled.cu", "gemmTiledKernel"), ("gemm/wide.cu", "gemmWideKernel")]:
        spec = templatized_spec(root, file, kernel)
        assert spec["shapes"] == [{"K": 128, "M": 256, "N": 512}], (kernel, spec["shapes"])
        lengths = {a["name"]: a.get("length") for a in spec["args"] if a["name"] in "ABC"}
        assert lengths == {"A": "M * K", "B": "K * N", "C": "M * N"}, (kernel, spec["args"])
        assert "unknown" not in spec, (kernel, spec)


async def test_the_code_action_runs_a_commented_out_variant_as_its_twins(client, tmp_path: Path):
    root = project(tmp_path, "commented_variants")
    (root / ".git").mkdir()
    spec = await code_action_spec(client, root / "gemm" / "naive.cu", "C[row * N + col] = sum;", "gemmNaiveKernel")
    assert spec["shapes"] == [{"K": 128, "M": 256, "N": 512}], spec


def test_a_script_calls_its_own_run_benchmark_and_not_another_scripts_namesake(tmp_path: Path):
    root = project(tmp_path, "benchmark_scripts")
    (root / ".git").mkdir()
    # `run_gemm.py` hands `lib.gemm_tiled` to its own `run_benchmark(perf_func, a, b, tag, out)`,
    # with `c = C[:M, :N].contiguous()` as `out`; `bench/prof.py`, which comes first, defines
    # another `run_benchmark` whose calls are commented out. The sizes are `run_gemm.py`'s first
    # problem, and the launcher is called (through `perf_func`), not a twin's stand-in.
    spec, report = templatized_spec_and_report(root, "gemm.cu", "gemm_tiled_kernel")
    assert spec["shapes"] == [{"K": 128, "M": 128, "N": 128}], spec["shapes"]
    lengths = {a["name"]: a.get("length") for a in spec["args"] if a["name"] in "abc"}
    assert lengths == {"a": "M * K", "b": "K * N", "c": "M * N"}, spec["args"]
    assert "unknown" not in spec, spec
    assert "nothing calls" not in report, report
    # `gemm_naive`, which no script runs, is run as `gemm_tiled` is: the report names the twin,
    # not the parameter it is called through.
    spec, report = templatized_spec_and_report(root, "gemm.cu", "gemm_naive_kernel")
    assert spec["shapes"] == [{"K": 128, "M": 128, "N": 128}] and "unknown" not in spec, spec
    assert "nothing calls `gemm_naive`: the sizes are those `run_benchmark` passes to `gemm_tiled` (run_gemm.py:13)" in report, report


async def test_the_code_action_follows_a_script_to_its_own_run_benchmark(client, tmp_path: Path):
    root = project(tmp_path, "benchmark_scripts")
    (root / ".git").mkdir()
    spec = await code_action_spec(client, root / "gemm.cu", "sum += a_tile[threadIdx.y][k]", "gemm_tiled_kernel")
    assert spec["shapes"] == [{"K": 128, "M": 128, "N": 128}] and "unknown" not in spec, spec


def test_a_launcher_handed_over_as_an_instantiation_takes_its_template_arguments_from_there(tmp_path: Path):
    root = project(tmp_path, "instantiated_launchers")
    (root / ".git").mkdir()
    # `time_gemm<half>(launch_gemm<3, 1024>, M, N, K, 10)`: the harness calls the launcher it is
    # handed as `gemm(d_a, d_b, d_c, M, N, K)`, so `STAGES` and `STRIDE` are that instantiation's,
    # not the defaults (2, 2048); `M_list[j]` is the element the fill loop gives (`(i + 1) * 512`,
    # at j = 0). The launch macro is defined again under the `#else` of the PyTorch build, with
    # tensors' data: the launcher's invocation expands the definition before it.
    spec, report = templatized_spec_and_report(root, "mma/swizzled_gemm.cu", "swizzled_gemm_kernel")
    assert spec["shapes"] == [{"K": 128, "M": 512, "N": 512, "STRIDE": 1024}], spec["shapes"]
    assert spec["grid"] == ["ceil_div(ceil_div(N, TILE), ceil_div(N, STRIDE))", "ceil_div(M, TILE)", "ceil_div(N, STRIDE)"], spec["grid"]
    lengths = {a["name"]: a.get("length") for a in spec["args"] if a["name"] in "abc"}
    assert lengths == {"a": "M * K", "b": "K * N", "c": "M * N"}, spec["args"]
    stages = next(p for p in spec["params"] if p["name"] == "STAGES")
    assert stages["default"] == 3, stages
    assert "template parameter `STAGES` is 3 at the launch in line 42" in report, report
    assert "unknown" not in spec, spec


async def test_the_code_action_takes_a_handed_over_instantiations_template_arguments(client, tmp_path: Path):
    root = project(tmp_path, "instantiated_launchers")
    (root / ".git").mkdir()
    spec = await code_action_spec(client, root / "mma" / "swizzled_gemm.cu", "int stage = (k0 / TILE) % STAGES;", "swizzled_gemm_kernel")
    assert spec["shapes"] == [{"K": 128, "M": 512, "N": 512, "STRIDE": 1024}] and "unknown" not in spec, spec
    assert next(p for p in spec["params"] if p["name"] == "STAGES")["default"] == 3, spec["params"]


def test_a_dispatch_handed_the_macro_it_applies_reaches_the_launcher_template(tmp_path: Path):
    root = project(tmp_path, "macro_applied_dispatch")
    (root / ".git").mkdir()
    # `DISPATCH_BY_DTYPE(out.scalar_type(), CALL_SCALE_STATES)` invokes `fn(half)`: the call
    # `scale_states_launcher<half>(out, applied, in, scales)` is only in the expansion, and the
    # sizes are `bench_states.py`'s half tensors. `applied` is a `std::optional<torch::Tensor>`
    # the script gives: its data where `applied.has_value()`.
    spec = templatized_spec(root, "scale_states.cu", "scale_states_kernel")
    assert spec["template_args"] == ["half", "NUM_THREADS"], spec["template_args"]
    # `scales` and `applied`, indexed alike (`[i / width]`), are of one length.
    assert spec["shapes"] == [{"applied_size_0": 4096, "rows": 4096, "width": 512}], spec["shapes"]
    lengths = {a["name"]: (a["dtype"], a.get("length")) for a in spec["args"] if a["name"] in ("out", "applied", "in", "scales")}
    assert lengths == {"out": ("f16", "rows * width"), "applied": ("f32", "applied_size_0"), "in": ("f16", "rows * width"), "scales": ("f32", "applied_size_0")}, spec["args"]
    assert "unknown" not in spec, spec


async def test_the_code_action_expands_a_dispatch_handed_a_macro(client, tmp_path: Path):
    root = project(tmp_path, "macro_applied_dispatch")
    (root / ".git").mkdir()
    spec = await code_action_spec(client, root / "scale_states.cu", "out[i] = static_cast<scalar_t>", "scale_states_kernel")
    assert spec["template_args"] == ["half", "NUM_THREADS"] and "unknown" not in spec, spec


async def test_the_code_action_follows_a_launcher_passed_as_a_function_pointer(client, tmp_path: Path):
    root = project(tmp_path, "benchmark_harness")
    (root / ".git").mkdir()
    spec = await code_action_spec(client, root / "block_sums.cu", "out[blockIdx.x] = partial[0]", "block_sums")
    assert spec["shapes"] == [{"size": 4194304}], spec


def test_a_method_called_on_an_element_of_an_array_of_objects_is_followed(tmp_path: Path):
    root = project(tmp_path, "object_arrays")
    (root / ".git").mkdir()
    # `Worker *pool = new Worker[workers]; pool[w].run(d_out + offset, d_in + offset, total / workers)`.
    spec = templatized_spec(root, "workers.cu", "add_halves")
    assert spec["shapes"] == [{"count": 1048576, "total": 4194304, "w": 0, "workers": 4}], spec["shapes"]
    assert "unknown" not in spec and all("length" in a or "value" in a for a in spec["args"]), spec["args"]


async def test_the_code_action_follows_a_method_of_an_array_of_objects(client, tmp_path: Path):
    root = project(tmp_path, "object_arrays")
    (root / ".git").mkdir()
    spec = await code_action_spec(client, root / "workers.cu", "out[i] += 0.5f * in[i]", "add_halves")
    assert spec["shapes"][0]["count"] == 1048576, spec


def test_sizes_set_through_pointers_by_another_files_function(tmp_path: Path):
    root = project(tmp_path, "pointer_outputs")
    (root / ".git").mkdir()
    # `int width = 0, height = 0; frame_size(&width, &height);`, `sizes.cpp` setting
    # `*width = 640; *height = 480;`: the sizes are what it sets, not the zeros; the
    # `if (override_path)` that would read them from a file is not taken (`override_path = NULL`).
    spec = templatized_spec(root, "frames.cu", "darken")
    assert spec["shapes"] == [{"height": 480, "width": 640}], spec["shapes"]
    # `image_size` reads them from the file with `fscanf`: no number, and the reason says where.
    report = json.loads(cutune("survey", str(root), "--json").stdout)
    lighten = next(k for k in report["kernels"] if k["kernel"] == "lighten")
    assert lighten["stage"] == "spec", lighten
    assert lighten["why"].startswith("grid extent x: `photo_width` is a size no shape gives (the program sets it with `image_size` in `main` (frames.cu:38)"), lighten["why"]


async def test_the_code_action_reads_sizes_set_through_pointers(client, tmp_path: Path):
    root = project(tmp_path, "pointer_outputs")
    (root / ".git").mkdir()
    spec = await code_action_spec(client, root / "frames.cu", "pixels[y * width + x] /= 2", "darken")
    assert spec["shapes"] == [{"height": 480, "width": 640}], spec


async def test_the_code_action_reads_a_grid_passed_as_a_dim3_argument(client, tmp_path: Path):
    root = project(tmp_path, "dim3_arguments")
    (root / ".git").mkdir()
    spec = await code_action_spec(client, root / "paint.cu", "pixels[y * width + x]", "paint")
    assert spec["grid"] == ["width // PAINT_BLOCK_X", "image_height // PAINT_BLOCK_Y"], spec


def test_tensors_a_script_slices_from_larger_ones_have_the_slices_sizes(tmp_path: Path):
    root = project(tmp_path, "sliced_tensors")
    (root / ".git").mkdir()
    # `bench.py` allocates `A`, `B`, `C` at the largest sizes and passes `A[:M, :K].contiguous()`
    # and the like, M, N, K the first of its comprehension.
    spec = templatized_spec(root, "tile_mm.cu", "tile_mm_kernel")
    assert spec["shapes"][0] == {"M": 1024, "N": 512, "K": 256}, spec["shapes"]
    assert [(a["name"], a.get("length")) for a in spec["args"]][:3] == [("a", "M * K"), ("b", "K * N"), ("c", "M * N")]
    assert "unknown" not in spec


def test_tile_sizes_the_threads_are_mapped_onto_with_numbers_keep_their_values(tmp_path: Path):
    root = project(tmp_path, "sliced_tensors")
    (root / ".git").mkdir()
    # `a_row = tid / 4` loads the 64 rows of `a_tile[BM][BK]` with 256 threads: `BM`, `BN` and `BK`
    # stay, and the block keeps its 256 threads while `TM` and `TN` trade places.
    spec, report = templatized_spec_and_report(root, "tile_mm.cu", "mapped_mm_kernel")
    values = {p["name"]: p["values"] for p in spec["params"]}
    assert (values["BM"], values["BN"], values["BK"]) == ([64], [64], [8])
    assert len(values["TM"]) > 1 and len(values["TN"]) > 1
    assert "(BN // TN) * (BM // TM) == 256" in spec["restrictions"]
    # The kernel's own `static_assert`: a configuration that breaks it does not compile.
    assert "TM * TN <= 64" in spec["restrictions"], spec["restrictions"]
    assert "`BM` sizes `a_tile`, which the threads index as `a_row = tid / 4` (line 42)" in report


def test_tile_sizes_made_of_the_warp_tiling_keep_their_values_where_the_threads_are_mapped_with_numbers(tmp_path: Path):
    root = project(tmp_path, "warp_tiles")
    # `tile[BM][16 + PAD]` with `constexpr int BM = 16 * TILE_M * WARP_TILE_M;`, loaded as
    # `row = tid / 2`: `TILE_M` and `WARP_TILE_M` stay (LeetCUDA's HGEMMs faulted or wrote past
    # `C` under every other warp tiling); the padding the threads do not index is tuned.
    spec, report = templatized_spec_and_report(root, "stage_rows.cu", "stage_rows")
    values = {p["name"]: p["values"] for p in spec["params"]}
    assert (values["TILE_M"], values["WARP_TILE_M"]) == ([2], [4]), values
    assert len(values["PAD"]) > 1, values
    assert "`WARP_TILE_M` sizes `tile`, which the threads index as `row = tid / 2` (line 11), with numbers of their own: kept at 4" in report


async def test_the_code_action_keeps_a_warp_tiling_the_threads_are_mapped_onto_with_numbers(client, tmp_path: Path):
    root = project(tmp_path, "warp_tiles")
    spec = await code_action_spec(client, root / "stage_rows.cu", "const int row = tid / 2", "stage_rows")
    values = {p["name"]: p["values"] for p in spec["params"]}
    assert (values["TILE_M"], values["WARP_TILE_M"]) == ([2], [4]) and len(values["PAD"]) > 1, values


def test_a_call_in_a_file_that_defines_its_own_namesake_is_no_launchers_caller(tmp_path: Path):
    root = project(tmp_path, "gold_namesake")
    (root / ".git").mkdir()
    # `main` runs the CPU reference first: `gold.cpp`'s `scale(x, 17, 0.5f)` calls its own
    # `scale`, not the launcher of `scale_kernel.cuh`, which `main` calls with `1 << 20`.
    spec = templatized_spec(root, "scale_kernel.cuh", "scale_values")
    assert spec["shapes"] == [{"n": 1048576}], spec["shapes"]


async def test_the_code_action_leaves_a_namesakes_calls_to_it(client, tmp_path: Path):
    root = project(tmp_path, "gold_namesake")
    (root / ".git").mkdir()
    spec = await code_action_spec(client, root / "scale_kernel.cuh", "x[i] *= factor", "scale_values")
    assert spec["shapes"] == [{"n": 1048576}], spec["shapes"]


async def test_the_code_action_reads_the_sizes_of_sliced_tensors(client, tmp_path: Path):
    root = project(tmp_path, "sliced_tensors")
    (root / ".git").mkdir()
    spec = await code_action_spec(client, root / "tile_mm.cu", "float sum = 0.0f", "tile_mm_kernel")
    assert spec["shapes"][0] == {"M": 1024, "N": 512, "K": 256} and "unknown" not in spec, spec


def test_ping_pong_buffers_and_buffers_an_init_function_allocates_get_their_lengths(tmp_path: Path):
    root = project(tmp_path, "ping_pong")
    (root / ".git").mkdir()
    # `merge(out, in, …)` where `in` and `out` are `dst` or `buffer` by the passes' parity, both
    # `keys.…` buffers that `allocate(keys, n)` gives `count * sizeof(uint)` bytes.
    merge = templatized_spec(root, "merge_steps.cuh", "merge_runs")
    assert [(a["name"], a.get("length")) for a in merge["args"]] == [("dst", "n"), ("src", "n"), ("width", None), ("n", None)]
    assert merge["shapes"] == [{"n": 1048576, "width": 256}]
    # `if (descending) merge_runs<1> … else merge_runs<0>`, called with `descending` 0: the
    # direction is the problem's, not a choice to tune, and the spec's is the program's.
    descending = next(p for p in merge["params"] if p["name"] == "DESCENDING")
    assert (descending["default"], descending["values"]) == (0, [0])
    # `sort_each_tile(in, src, n / TILE)`: the grid and the count follow the tile the spec varies,
    # over the caller's `n`, which the launcher does not have (it is named for its launcher, as
    # the kernel's own `n` is another value).
    tiles = templatized_spec(root, "merge_steps.cuh", "sort_tiles")
    assert tiles["grid"] == ["sort_each_tile_n // TILE"]
    assert tiles["shapes"] == [{"sort_each_tile_n": 1048576}]
    assert [(a["name"], a.get("length"), a.get("value")) for a in tiles["args"]] == [("out", "sort_each_tile_n", None), ("in", "sort_each_tile_n", None), ("n", None, "sort_each_tile_n // TILE * TILE")]
    survey = json.loads(cutune("survey", str(root), "--json").stdout)
    assert {k["kernel"]: k["stage"] for k in survey["kernels"]} == {"sort_tiles": "ready", "merge_runs": "ready"}, survey


def test_macros_of_a_header_that_the_block_and_the_kernel_share_are_tuned_as_builds(tmp_path: Path):
    root = project(tmp_path, "header_macros")
    (root / ".git").mkdir()
    header = (root / "config.h").read_text()
    # `threads = SORT_LIMIT / 2` with `__shared__ unsigned block_keys[SORT_LIMIT]`: each value of
    # the header's macro is a build, set with `-D`; the header is left as it is.
    spec, report = templatized_spec_and_report(root, "sort_runs.cu", "sort_runs")
    limit = next(p for p in spec["params"] if p["name"] == "SORT_LIMIT")
    assert limit == {"name": "SORT_LIMIT", "kind": "define", "default": 1024, "values": [64, 128, 256, 512, 1024], "origin": "`#define SORT_LIMIT 1024` at config.h:8, which the kernel's code uses too: each value is a build of the kernel"}
    assert spec["block"] == ["SORT_LIMIT // 2"] and spec["grid"] == ["count // SORT_LIMIT"]
    # The `if (length <= SORT_LIMIT)` the launch is under bounds the builds.
    assert spec["restrictions"] == ["count % SORT_LIMIT == 0", "length <= SORT_LIMIT"]
    assert "the block of the launch at line 38 is made of names the kernel's code uses too: `SORT_LIMIT` = 1024" in report
    # A kernel header that reads its includer's macros: both extents of its `dim3` block.
    stage = templatized_spec(root, "stage.cuh", "stage_pixels")
    assert [(p["name"], p["kind"], p["default"]) for p in stage["params"] if p["name"].startswith("TILE")] == [("TILE_X", "define", 16), ("TILE_Y", "define", 8)]
    assert stage["block"] == ["TILE_X", "TILE_Y"] and "TILE_X * TILE_Y <= 1024" in stage["restrictions"]
    assert (root / "config.h").read_text() == header
    # NVRTC compiles every build: the slice guards the header's macros, so `-D` sets them.
    # The runs are 256 keys long: smaller builds are left out by the restriction.
    check = cutune("check", "sort_runs.cu", "--kernel", "sort_runs", "--all", cwd=root)
    assert check.returncode == 0, check.stdout + check.stderr
    rows = [line.split() for line in check.stdout.splitlines() if line.startswith("SORT_LIMIT=") and "fast_math=0 max_registers=0" in line]
    shared = {int(row[0].split("=")[1]): row[5] if row[7] == "ok" else row[7] for row in rows}
    assert shared == {64: "infeasible:", 128: "infeasible:", 256: "1024", 512: "2048", 1024: "4096"}, check.stdout
    def surveyed_with_runs_of(length: int) -> dict:
        source = root / "sort_runs.cu"
        source.write_text(re.sub(r"sort_each_run\(keys, count, \d+\)", f"sort_each_run(keys, count, {length})", source.read_text()))
        return {k["kernel"]: k for k in json.loads(cutune("survey", str(root), "--json").stdout)["kernels"]}

    # Runs as long as the largest build: the restriction leaves one value, and the survey says
    # that only compiler options vary.
    survey = surveyed_with_runs_of(1024)
    assert (survey["sort_runs"]["stage"], survey["sort_runs"]["why"]) == ("parameters", (
        "no execution parameter varies on the program's shape, only compiler options: the restrictions"
        " (`count % SORT_LIMIT == 0`, `length <= SORT_LIMIT`) and the block's limits leave `SORT_LIMIT` = 1024"
    ))
    assert survey["stage_pixels"]["stage"] == "ready"
    # Runs longer than the program's build: its shape is not one the launch runs with.
    survey = surveyed_with_runs_of(2048)
    assert (survey["sort_runs"]["stage"], survey["sort_runs"]["why"]) == ("spec", (
        "the spec's first shape (count = 1048576, length = 2048) is not one the launch runs with: no configuration meets"
        " the restrictions there (at the program's own: restriction `length <= SORT_LIMIT` is false); write a shape it runs with"
    ))


def test_a_kernel_whose_parameters_and_launch_arguments_change_with_the_build_is_read_as_the_build_has_them(tmp_path: Path):
    root = project(tmp_path, "build_flags")
    (root / ".git").mkdir()
    kernel_file = (root / "pad_rows.cuh").read_text()
    # `#ifndef FIXED_ROWS` and `#if ADD_BIAS` inside the parameter list and inside the launch's
    # arguments: the kernel parses, each argument meets its parameter, and `ADD_BIAS`, which the
    # launch's file sees through its include, keeps the bias the launch passes.
    spec, report = templatized_spec_and_report(root, "pad_rows.cuh", "pad_rows")
    assert "does not parse" not in report, report
    assert [(a["name"], a.get("length"), a.get("value")) for a in spec["args"]] == [
        ("dst", "rows * padded_width", None), ("src", "rows * width", None), ("width", None, "width"),
        ("padded_width", None, "padded_width"), ("rows", None, "rows"), ("bias", None, "0.5"),
    ], spec["args"]
    assert spec["shapes"][0] == {"padded_width": 1024, "rows": 512, "width": 1000}
    assert (root / "pad_rows.cuh").read_text() == kernel_file
    # NVRTC gets the file with its conditionals, and compiles what the spec says it takes.
    check = cutune("check", "pad_rows.cuh", "--kernel", "pad_rows", cwd=root)
    assert check.returncode == 0 and " 0 failed" in check.stdout, check.stdout + check.stderr
    hover = cutune("kernels", "pad_rows.cuh", cwd=root)
    assert "__global__ void pad_rows(float *dst, const float *src, int width, int padded_width, int rows , float bias )" in hover.stdout, hover.stdout


async def test_the_code_action_reads_a_kernel_whose_parameter_list_has_conditionals(client, tmp_path: Path):
    root = project(tmp_path, "build_flags")
    (root / ".git").mkdir()
    spec = await code_action_spec(client, root / "pad_rows.cuh", "dst[y * padded_width + x] = value", "pad_rows")
    assert [a["name"] for a in spec["args"]] == ["dst", "src", "width", "padded_width", "rows", "bias"], spec
    assert next(a for a in spec["args"] if a["name"] == "bias")["value"] == "0.5", spec


async def test_the_code_action_lifts_a_header_macro_the_block_and_the_kernel_share(client, tmp_path: Path):
    root = project(tmp_path, "header_macros")
    (root / ".git").mkdir()
    spec = await code_action_spec(client, root / "sort_runs.cu", "block_keys[threadIdx.x] = keys", "sort_runs")
    assert [(p["name"], p["kind"], p["default"]) for p in spec["params"]][0] == ("SORT_LIMIT", "define", 1024), spec
    assert "length <= SORT_LIMIT" in spec["restrictions"], spec


async def test_the_code_action_follows_ping_pong_buffers_to_their_allocation(client, tmp_path: Path):
    root = project(tmp_path, "ping_pong")
    (root / ".git").mkdir()
    spec = await code_action_spec(client, root / "merge_steps.cuh", "uint key = src[i]", "merge_runs")
    assert [(a["name"], a.get("length")) for a in spec["args"]] == [("dst", "n"), ("src", "n"), ("width", None), ("n", None)], spec


def test_file_scope_constants_the_block_and_the_kernel_share_are_tuned_as_builds(tmp_path: Path):
    root = project(tmp_path, "constant_tiles")
    (root / ".git").mkdir()
    source = (root / "flip.cu").read_text()
    # `const int SIDE = 32;` sizes the kernel's `__shared__` tile and the host's `dim3`: another
    # value is another build of the kernel, set with `-D`, not a launch alone.
    spec, report = templatized_spec_and_report(root, "flip.cu", "flip_tiles")
    side, rows = (next(p for p in spec["params"] if p["name"] == name) for name in ("SIDE", "ROWS_PER_PASS"))
    assert (side["kind"], side["default"], side["origin"]) == ("define", 32, "`const int SIDE = 32` at flip.cu:7, which the kernel's code uses too: each value is a build of the kernel")
    assert (rows["kind"], rows["default"]) == ("define", 8)
    assert spec["block"] == ["SIDE", "ROWS_PER_PASS"] and spec["grid"] == ["width // SIDE", "height // SIDE"]
    # The rows walk the tile in strides of the block's rows: a whole number of strides.
    assert "SIDE % ROWS_PER_PASS == 0" in spec["restrictions"], spec["restrictions"]
    assert "made of names the kernel's code uses too: `SIDE` = 32" in report
    # The constants stay as the user wrote them; only the padding the tile gets is new.
    templated = (root / "flip.cu").read_text()
    assert "const int SIDE = 32;\nconst int ROWS_PER_PASS = 8;\nconst int SAMPLES = 2;\n" in templated
    assert templated.replace("[SIDE + 1 + FLIP_TILES_PAD_STAGED]", "[SIDE + 1]").count("FLIP_TILES_PAD_STAGED") == 3, templated
    assert source.count("SIDE") == templated.count("SIDE")
    # NVRTC compiles each build: the slice guards the constants (and keeps `SAMPLES`, read in an
    # initial value), so the tile grows with `SIDE`.
    check = cutune("check", "flip.cu", "--kernel", "flip_tiles", "--all", cwd=root)
    assert check.returncode == 0, check.stdout + check.stderr
    rows_of = [line.split() for line in check.stdout.splitlines() if line.startswith("FLIP_TILES_PAD_STAGED=0 ") and " ROWS_PER_PASS=4 fast_math=0 max_registers=0 " in line]
    shared = {int(row[1].split("=")[1]): row[7] if row[9] == "ok" else row[9] for row in rows_of}
    assert {side: shared[side] for side in (8, 16, 32, 64, 128)} == {8: "288", 16: "1088", 32: "4224", 64: "16640", 128: "infeasible:"}, check.stdout
    survey = json.loads(cutune("survey", str(root), "--json").stdout)
    assert {k["kernel"]: k["stage"] for k in survey["kernels"]} == {"flip_tiles": "ready"}, survey


async def test_the_code_action_tunes_file_scope_constants_as_builds(client, tmp_path: Path):
    root = project(tmp_path, "constant_tiles")
    (root / ".git").mkdir()
    spec = await code_action_spec(client, root / "flip.cu", "staged[threadIdx.y + step][threadIdx.x]", "flip_tiles")
    assert [(p["name"], p["kind"], p["default"]) for p in spec["params"] if p["name"] in ("SIDE", "ROWS_PER_PASS")] == [("SIDE", "define", 32), ("ROWS_PER_PASS", "define", 8)], spec
    assert "SIDE % ROWS_PER_PASS == 0" in spec["restrictions"], spec


def test_an_op_a_harness_method_times_gets_its_sizes_from_flags_through_an_include_folder(tmp_path: Path):
    root = project(tmp_path, "flag_runner")
    (root / ".git").mkdir()
    survey = json.loads(cutune("survey", str(root), "--json").stdout)
    assert {k["kernel"]: k["stage"] for k in survey["kernels"]} == {"halve_values": "ready", "block_partial_sums": "ready"}, survey
    # `bench.time(halve, …)` in `src/main.cu` passes the launcher to a method template of a
    # class in `src/common/bench.h`, which `main.cu` includes by name alone (an include folder
    # of the build); the method calls it with the object's members, made from gflags' `FLAGS_count`.
    spec = templatized_spec(root, "src/ops/halve.cu", "halve_values")
    assert spec["shapes"] == [{"count": 1048576}], spec
    assert [(a["name"], a.get("length"), a.get("value")) for a in spec["args"]] == [("values", "count", None), ("count", None, "count")]
    assert "unknown" not in spec
    # `static size_t shared_bytes = prepare_block_sums();`, a helper that sets the kernel up and
    # returns a local: the shared memory is that local's value, which moves with the block. The
    # load `i < count ? values[i] : 0.0f` bounds the buffer.
    sums = templatized_spec(root, "src/ops/block_sums.cu", "block_partial_sums")
    assert (sums["block"], sums["shared_bytes"]) == (["SUM_THREADS"], "SUM_THREADS * 4"), sums
    assert [(a["name"], a.get("length")) for a in sums["args"]] == [("values", "count"), ("count", None)]


async def test_the_code_action_reads_sizes_from_flags_through_a_harness_method(client, tmp_path: Path):
    root = project(tmp_path, "flag_runner")
    (root / ".git").mkdir()
    spec = await code_action_spec(client, root / "src" / "ops" / "halve.cu", "values[i] *= 0.5f", "halve_values")
    assert spec["shapes"] == [{"count": 1048576}], spec


def test_matrices_a_harness_makes_in_its_constructor_give_the_lengths(tmp_path: Path):
    root = project(tmp_path, "matrix_harness")
    (root / ".git").mkdir()
    # `harness.time(tiledGemm)` calls the launcher with `m_a->device()`: a getter of a `Matrix`
    # the harness's constructor makes with `std::make_shared<Matrix>(m_m, m_k)`, whose own
    # constructor allocates `m_elems = m_rows * m_cols` halves.
    spec = templatized_spec(root, "src/kernels/tiled_gemm.cu", "tiled_half_gemm")
    assert [(a["name"], a.get("length")) for a in spec["args"] if "length" in a] == [("a", "m * k"), ("b", "k * n"), ("c", "m * n")], spec
    assert spec["shapes"] == [{"m": 256, "n": 512, "k": 128}], spec
    assert "unknown" not in spec
    survey = json.loads(cutune("survey", str(root), "--json").stdout)
    assert {k["kernel"]: k["stage"] for k in survey["kernels"]} == {"tiled_half_gemm": "ready"}, survey


async def test_the_code_action_reads_matrices_a_harness_makes(client, tmp_path: Path):
    root = project(tmp_path, "matrix_harness")
    (root / ".git").mkdir()
    spec = await code_action_spec(client, root / "src" / "kernels" / "tiled_gemm.cu", "float sum = 0.0f;", "tiled_half_gemm")
    assert [(a["name"], a.get("length")) for a in spec["args"] if "length" in a] == [("a", "m * k"), ("b", "k * n"), ("c", "m * n")], spec


def test_an_image_a_function_loads_from_the_path_its_caller_finds_sizes_the_launch(tmp_path: Path):
    root = project(tmp_path, "image_on_load")
    (root / ".git").mkdir()
    # `loadImage(path)` loads the PGM into locals and sets file-scope sizes from them
    # (`imageWidth = (int)w`); the path is its caller's `findFilePath("portrait.pgm", …)`.
    edges = templatized_spec(root, "edges.cu", "edge_strength")
    assert edges["shapes"] == [{"width": 40, "height": 24}], edges
    assert "unknown" not in edges
    # The same bytes viewed as `uchar4` by the launch: a quarter as many elements of four lanes.
    quads = templatized_spec(root, "edges.cu", "invert_quads")
    assert [(a["name"], a["dtype"], a.get("length")) for a in quads["args"] if "length" in a] == [("quads", "u8", "width * height // 4 * 4")], quads
    survey = json.loads(cutune("survey", str(root), "--json").stdout)
    assert {k["kernel"]: k["stage"] for k in survey["kernels"]} == {"edge_strength": "ready", "invert_quads": "ready"}, survey


async def test_the_code_action_reads_an_image_loaded_through_a_path_parameter(client, tmp_path: Path):
    root = project(tmp_path, "image_on_load")
    (root / ".git").mkdir()
    spec = await code_action_spec(client, root / "edges.cu", "int left = in[", "edge_strength")
    assert spec["shapes"] == [{"width": 40, "height": 24}], spec


def test_an_empty_macro_with_a_trailing_blank_keeps_its_conditional_in_the_slice(tmp_path: Path):
    root = project(tmp_path, "debug_macros")
    (root / ".git").mkdir()
    # `#define CUDA_CHECK() ` (a blank after the parentheses) in an `#else`: the kernel stays
    # outside the conditional, which the slice leaves out whole (it kept `#ifdef DEBUG` and
    # `#else` without their `#endif`), and the kernel compiles.
    sliced = cutune("slice", "transpose.cu", "--kernel", "transpose_naive", cwd=root)
    assert sliced.returncode == 0, sliced.stderr
    assert "__global__ void transpose_naive" in sliced.stdout and "#ifdef DEBUG" not in sliced.stdout and "#else" not in sliced.stdout, sliced.stdout
    survey = json.loads(cutune("survey", str(root), "--json").stdout)
    assert [(k["kernel"], k["stage"], k["compile"]["status"]) for k in survey["kernels"]] == [("transpose_naive", "ready", "compiled")], survey


async def test_the_code_action_templatizes_a_kernel_after_an_empty_macro_with_a_trailing_blank(client, tmp_path: Path):
    root = project(tmp_path, "debug_macros")
    (root / ".git").mkdir()
    spec = await code_action_spec(client, root / "transpose.cu", "c[AT(row, col, m)]", "transpose_naive")
    assert (spec["shapes"], spec["block"]) == ([{"SIZE": 2048}], ["TILE", "TILE"]), spec


def test_a_buffer_a_helper_allocates_through_a_reference_has_the_helpers_bytes(tmp_path: Path):
    root = project(tmp_path, "managed_helper")
    (root / ".git").mkdir()
    # `alloc_bytes(values, count * sizeof(values[0]))` of `void alloc_bytes(T &ptr, size_t
    # num_bytes) { cudaMallocManaged(&ptr, num_bytes); }`.
    spec = templatized_spec(root, "increment.cu", "increment")
    assert [(a["name"], a.get("length")) for a in spec["args"]] == [("values", "count"), ("n", None)], spec
    assert "unknown" not in spec


async def test_the_code_action_reads_a_buffer_a_helper_allocates(client, tmp_path: Path):
    root = project(tmp_path, "managed_helper")
    (root / ".git").mkdir()
    spec = await code_action_spec(client, root / "increment.cu", "values[i]++;", "increment")
    assert [(a["name"], a.get("length")) for a in spec["args"]] == [("values", "count"), ("n", None)], spec


def test_defines_whose_comments_derive_them_keep_to_their_derivations(tmp_path: Path):
    root = project(tmp_path, "derived_defines")
    (root / ".git").mkdir()
    # `#define WARPS 4  // TILE_ROWS / ROWS_PER_WARP` and `#define THREADS 128  // WARPS * 32`:
    # a tile of other rows than 64 would leave rows to no warp, another block other warps.
    spec = templatized_spec(root, "row_sums.cu", "row_block_sums")
    assert "4 == TILE_ROWS // 16" in spec["restrictions"] and "THREADS == 128" in spec["restrictions"], spec["restrictions"]
    values = {p["name"]: p["values"] for p in spec["params"]}
    assert (values["TILE_ROWS"], values["THREADS"]) == ([64], [128]), values
    # `dim3 grid(TILE_STRIDE)`, a count of blocks the program picks that no buffer's length
    # names: one shape, no odd tail of it (`TILE_STRIDE = 15`) as for a problem size.
    assert spec["shapes"] == [{"TILE_STRIDE": 16, "cols": 1024, "rows": 4096}], spec["shapes"]


async def test_the_code_action_keeps_defines_to_the_derivations_in_their_comments(client, tmp_path: Path):
    root = project(tmp_path, "derived_defines")
    (root / ".git").mkdir()
    spec = await code_action_spec(client, root / "row_sums.cu", "sum += in[row * cols + c];", "row_block_sums")
    assert "4 == TILE_ROWS // 16" in spec["restrictions"], spec["restrictions"]


def test_cufft_number_types_give_lengths_and_compile(tmp_path: Path):
    root = project(tmp_path, "fft_types")
    (root / ".git").mkdir()
    # `cufftComplex` is two floats, `cufftReal` one: the byte counts are elements, and the slice
    # defines the types for NVRTC, which cannot include `<cufft.h>`.
    survey = json.loads(cutune("survey", str(root), "--json").stdout)
    assert {k["kernel"]: (k["stage"], k["compile"]["status"]) for k in survey["kernels"]} == {"widen_signal": ("ready", "compiled"), "weight_bins": ("ready", "compiled")}, survey
    spec = templatized_spec(root, "spectrum.cu", "weight_bins")
    assert [(a["name"], a["dtype"], a.get("length")) for a in spec["args"] if a.get("length")] == [("spectrum", "f32", "BINS * BATCH * 2"), ("weights", "f32", "BINS")], spec
    sliced = cutune("slice", "spectrum.cu", "--kernel", "weight_bins", cwd=root)
    assert sliced.stdout.startswith("typedef float cufftReal;\ntypedef float2 cufftComplex;\n"), sliced.stdout


async def test_the_code_action_reads_cufft_number_types(client, tmp_path: Path):
    root = project(tmp_path, "fft_types")
    (root / ".git").mkdir()
    spec = await code_action_spec(client, root / "spectrum.cu", "spectrum[i].x *= w", "weight_bins")
    assert [(a["name"], a.get("length")) for a in spec["args"] if a.get("length")] == [("spectrum", "BINS * BATCH * 2"), ("weights", "BINS")], spec


def test_kernels_written_with_loop_pragma_and_attribute_macros_parse_slice_and_compile(tmp_path: Path):
    root = project(tmp_path, "macro_idioms")
    (root / ".git").mkdir()
    # `GRID_STRIDE_LOOP(i, n)` before a block, `PRAGMA_UNROLL` alone on its line, `#pragma unroll`
    # as a loop's body, `and`/`or` in an `#if`, `GRID_CONSTANT const int n` and
    # `typename Traits::Loader(in).load(…)`: each kernel did not parse; the slice keeps the
    # macros the parser's view hides, and each compiles.
    survey = json.loads(cutune("survey", str(root), "--json").stdout)
    assert {k["kernel"]: (k["stage"], k["compile"]["status"]) for k in survey["kernels"]} == {name: ("ready", "compiled") for name in ["add_bias", "scale_tiles", "clamp_values", "sum_pairs"]}, survey
    sliced = cutune("slice", "idioms.cuh", "--kernel", "sum_pairs", cwd=root)
    assert "#define PRAGMA_UNROLL" in sliced.stdout and "#define GRID_STRIDE_LOOP" not in sliced.stdout, sliced.stdout
    spec = templatized_spec(root, "idioms.cuh", "add_bias")
    assert spec["shapes"] == [{"rows": 512, "width": 1024}] and [(a["name"], a.get("length")) for a in spec["args"]][:2] == [("out", "rows * width"), ("bias", "width")], spec


async def test_the_code_action_templatizes_a_kernel_whose_loop_is_a_macro(client, tmp_path: Path):
    root = project(tmp_path, "macro_idioms")
    (root / ".git").mkdir()
    spec = await code_action_spec(client, root / "idioms.cuh", "out[i] += bias[i % width];", "add_bias")
    assert (spec["shapes"], spec["block"]) == ([{"rows": 512, "width": 1024}], ["ADD_BIAS_BLOCK_SIZE"]), spec


def test_a_launcher_is_called_only_by_calls_that_fit_its_parameters(tmp_path: Path):
    root = project(tmp_path, "namesake_launchers")
    (root / ".git").mkdir()
    # Two modules each define `launch_bias_gelu`, of six and of five parameters; the five-argument
    # call is the other module's, and would pass the stream as `rows`.
    spec = templatized_spec(root, "training/gelu.cu", "fused_bias_gelu")
    assert spec["shapes"] == [{"rows": 2048, "width": 3072}] and spec["grid"] == ["rows"], spec
    serving = templatized_spec(root, "inference/gelu.cu", "fused_bias_gelu")
    assert serving["shapes"][0] == {"rows": 16, "width": 4096}, serving


async def test_the_code_action_reads_the_launcher_call_that_fits(client, tmp_path: Path):
    root = project(tmp_path, "namesake_launchers")
    (root / ".git").mkdir()
    spec = await code_action_spec(client, root / "training" / "gelu.cu", "int row = blockIdx.x;", "fused_bias_gelu")
    assert spec["shapes"] == [{"rows": 2048, "width": 3072}], spec


def test_a_binding_that_instantiates_its_template_gives_the_kernels_type(tmp_path: Path):
    root = project(tmp_path, "typed_bindings")
    (root / ".git").mkdir()
    # `m.def("bias_relu_fp32", &bias_relu_<float>)` calls `launch_bias_relu((T *)input.data_ptr(),
    # …)`, whose `T` the kernel's is: `float`, and the pytest test's tensor gives the sizes. The
    # bias's length, which the C++ never reads, is a size of its own named for the binding's
    # tensor, whose value the test's `torch.randn(1024)` gives.
    survey = json.loads(cutune("survey", str(root), "--json").stdout)
    [kernel] = survey["kernels"]
    assert (kernel["stage"], kernel["compile"]["status"]) == ("ready", "compiled"), kernel
    spec = templatized_spec(root, "csrc/bias_relu.cu", "bias_relu")
    assert spec["template_args"] == ["float"] and spec["shapes"][0] == {"rows": 1024, "width": 1024, "bias_size_0": 1024}, spec
    assert next(a for a in spec["args"] if a["name"] == "bias")["length"] == "bias_size_0", spec["args"]


async def test_the_code_action_instantiates_a_kernel_as_its_binding_does(client, tmp_path: Path):
    root = project(tmp_path, "typed_bindings")
    (root / ".git").mkdir()
    spec = await code_action_spec(client, root / "csrc" / "bias_relu.cu", "int i = blockIdx.x * blockDim.x + threadIdx.x;", "bias_relu")
    assert spec["template_args"] == ["float"], spec


def test_namesakes_in_namespaces_are_told_apart_and_each_extension_is_sized_by_its_own_test(tmp_path: Path):
    root = project(tmp_path, "namespaced_ops")
    (root / ".git").mkdir()
    # Two extensions of `setup.py`, each exporting `forward` and launching from a `fwd_cuda` of one
    # parameter, in the namespaces `fused::row_softmax` and `fused::causal_softmax`: the row
    # binding calls `fused::row_softmax::fwd_cuda(input)` by its qualified name, the causal one is
    # `&fused::causal_softmax::fwd`, which calls its namespace's `fwd_cuda`. The test calls
    # `row_softmax_cuda.forward` on a 4096 × 512 half matrix and `causal_softmax_cuda.forward` on
    # a 256 × 384 one: each kernel runs the sizes of its own extension's call only.
    survey = json.loads(cutune("survey", str(root), "--json").stdout)
    stages = {k["kernel"]: (k["stage"], k["compile"]["status"]) for k in survey["kernels"]}
    assert stages == {"row_softmax_kernel": ("ready", "compiled"), "causal_softmax_kernel": ("ready", "compiled")}, survey["kernels"]
    causal = templatized_spec(root, "csrc/causal_softmax_cuda.cu", "causal_softmax_kernel")
    assert causal["shapes"] == [{"rows": 256, "cols": 384}], causal["shapes"]
    # `fwd_cuda` takes its launch from `launch_shape(rows, &blocks, &threads)`, which its own
    # namespace defines; `fused::reference` defines a namesake earlier in the file (a warp per
    # block) that this call does not reach.
    assert causal["block"] == ["threads"] and causal["grid"] == ["ceil_div(rows, threads)"], causal
    threads = next(p for p in causal["params"] if p["name"] == "threads")
    assert threads["default"] == 128 and threads["origin"] == "`threads` as `launch_shape` sets it in `fwd_cuda`", threads
    # The launch deduces the kernel's `V` from the float output it passes, which comes before
    # the default `V = T` (half): `host_apply<in_t, acc_t, out_t>` is called in a case of the
    # project's `DISPATCH_INOUT_TYPES` that declares `using in_t = __half;` and
    # `using out_t = float;`. The lanes per row are PyTorch's `log2_ceil` counted up to the
    # columns and capped at `C10_WARP_SIZE`; the rows of blocks at the device's grid limit.
    row = templatized_spec(root, "csrc/row_softmax_cuda.cu", "row_softmax_kernel")
    assert row["template_args"] == ["__half", "float", "float"], row
    assert row["block"] == ["min(2 ** ceil(log2(max(cols, 1))), 32)", "4"] and row["grid"] == ["1", "min((rows + 3) // 4, 65535)"], row
    assert row["shapes"] == [{"rows": 4096, "cols": 512}], row["shapes"]


def test_a_backward_kernel_runs_after_its_forward_with_what_the_forward_kept(tmp_path: Path):
    root = project(tmp_path, "autograd_backward")
    (root / ".git").mkdir()
    # `PatchMaxFunction.backward` calls the backward binding; no script calls it: autograd runs
    # it after the forward, with a gradient shaped like the forward's output (4 × 32 × 128 × 96
    # pooled by the test's `PatchMax(patch=4)`), the input's shape kept as `ctx.input_shape`,
    # the patch as `ctx.patch` and the argmax saved with `ctx.save_for_backward`.
    survey = json.loads(cutune("survey", str(root), "--json").stdout)
    stages = {k["kernel"]: (k["stage"], k["compile"]["status"]) for k in survey["kernels"]}
    assert set(stages.values()) == {("ready", "compiled")} and {"patch_max_forward_kernel", "patch_max_backward_kernel"} < set(stages), survey["kernels"]
    backward = templatized_spec(root, "csrc/patch_max_cuda.cu", "patch_max_backward_kernel")
    assert backward["shapes"] == [{"grad_input_size_0": 4, "grad_input_size_1": 32, "height": 128, "width": 96, "patch": 4, "grad_output_size_0": 4, "grad_output_size_1": 32, "grad_output_size_2": 32, "grad_output_size_3": 24}], backward["shapes"]
    args = {a["name"]: a for a in backward["args"]}
    assert args["argmax"]["length"] == args["grad_output"]["length"] == "grad_output_size_0 * grad_output_size_1 * grad_output_size_2 * grad_output_size_3", args
    assert args["patch"]["value"] == "patch", args
    # The forward's output is the tuple the function made first (`out_shape`).
    # Its sizes are worked out from the input's as the function makes it (`x.size(2) // patch`,
    # `x` passed as the launcher's `input`, whose `height = input.size(2)`).
    forward = templatized_spec(root, "csrc/patch_max_cuda.cu", "patch_max_forward_kernel")
    assert forward["shapes"] == [{"input_size_0": 4, "input_size_1": 32, "height": 128, "width": 96, "patch": 4}], forward["shapes"]
    assert forward["derived"] == {"output_size_0": "input_size_0", "output_size_1": "input_size_1", "output_size_2": "height // patch", "output_size_3": "width // patch"}, forward


def test_a_backward_reads_the_tuple_its_forward_kept_after_the_branch_the_call_takes(tmp_path: Path):
    root = project(tmp_path, "autograd_backward")
    (root / ".git").mkdir()
    # `GatherColumns.forward` keeps `(idx, channels, n)` as one tuple on its context in the branch
    # the test takes (no `counts`), `(batch, n, idx, counts)` in the other; the backward, run
    # after the `if`, unpacks it and passes `grad_out.data.contiguous()` and `grad_features.data`.
    # The test case's `setUp` draws the columns with `random.randint(1, 256)`: the largest, 256.
    # The kernel adds with PyTorch's `gpuAtomicAdd`, which the compile defines (survey: compiled).
    backward = templatized_spec(root, "csrc/columns_cuda.cu", "gather_columns_backward_kernel")
    assert {k: backward["shapes"][0][k] for k in ("batch", "channels", "n", "columns")} == {"batch": 2, "channels": 64, "n": 1024, "columns": 256}, backward["shapes"]
    args = {a["name"]: a for a in backward["args"]}
    assert (args["idx"]["length"], args["idx"]["indexes"]) == ("batch * columns", "n"), args
    assert backward["grid"] == ["ceil_div(columns, COLUMN_THREADS)", "channels", "batch"], backward
    # Float atomics add in varying order: runs agree within tolerance, not bitwise.
    assert backward["verify"]["deterministic"] is False, backward.get("verify")
    # `ColumnPool.forward(ctx, features, output_size: Tuple)` reads `int(output_size[0])` of the
    # `(16,)` the test passes; its backward makes the gradient as `new_zeros(*features.shape)`
    # of the saved features.
    pool = templatized_spec(root, "csrc/columns_cuda.cu", "column_pool_forward_kernel")
    assert pool["shapes"] == [{"bins": 16, "features_size_0": 4, "features_size_1": 32, "n": 512}], pool["shapes"]
    pool_backward = templatized_spec(root, "csrc/columns_cuda.cu", "column_pool_backward_kernel")
    assert {k: pool_backward["shapes"][0][k] for k in ("bins", "n")} == {"bins": 16, "n": 512}, pool_backward["shapes"]
    assert "unknown" not in backward and "unknown" not in pool_backward, (backward, pool_backward)


def test_packed_accessors_are_structs_of_the_tensors_data_sizes_and_strides(tmp_path: Path):
    root = project(tmp_path, "packed_accessors")
    (root / ".git").mkdir()
    # pytorch3d's style: bindings in `ext.cpp` call inline dispatchers of headers (the CUDA path
    # under `#ifdef WITH_CUDA`), the kernels take PyTorch's packed accessors by value, which
    # the compile defines (NVRTC cannot open ATen's headers).
    survey = json.loads(cutune("survey", str(root), "--json").stdout)
    stages = {k["kernel"]: (k["stage"], k["compile"]["status"]) for k in survey["kernels"]}
    assert stages == {k: ("ready", "compiled") for k in ("BlendPointsKernel", "ScaleChannelsKernel", "NearestPointsKernel")}, survey["kernels"]
    blend = templatized_spec(root, "csrc/blend/blend.cu", "BlendPointsKernel")
    assert blend["shapes"] == [{"C": 16, "H": 64, "W": 96, "batch_size": 2, "blocks": 1024, "features_size_1": 8, "weights_size_1": 8}], blend["shapes"]
    result = next(a for a in blend["args"] if a["name"] == "result")
    assert result["struct"] == "at::PackedTensorAccessor64<float, 4, at::RestrictPtrTraits>", result
    fields = {f["name"]: f for f in result["fields"]}
    # Written dimension by dimension (`result[b][c][y][x] = sum`) and sized by `.size(k)`:
    # an output, contiguous as `at::zeros({batch_size, C, H, W})` made it.
    assert (fields["data_"]["length"], fields["data_"]["role"]) == ("batch_size * C * H * W", "output"), fields["data_"]
    assert [fields[f"sizes_[{k}]"]["value"] for k in range(4)] == ["batch_size", "C", "H", "W"], fields
    assert [fields[f"strides_[{k}]"]["value"] for k in range(4)] == ["C * H * W", "H * W", "W", "1"], fields
    assert {f["dtype"] for f in result["fields"][1:]} == {"i64"}, result["fields"]
    # A 32-bit accessor of the dispatch's `scalar_t`: its type names the instantiation.
    scale = templatized_spec(root, "csrc/blend/blend.cu", "ScaleChannelsKernel")
    accessor = next(a for a in scale["args"] if a["name"] == "scale")
    assert accessor["struct"] == "torch::PackedTensorAccessor32<float, 1, torch::RestrictPtrTraits>", accessor
    assert [(f["name"], f.get("length", f.get("value")), f["dtype"]) for f in accessor["fields"]] == [("data_", "scale_size_0", "f32"), ("sizes_[0]", "scale_size_0", "i32"), ("strides_[0]", "1", "i32")], accessor
    assert scale["shapes"] == [{"channels": 300, "input_size_2": 24, "rows": 32, "scale_size_0": 300}], scale["shapes"]
    # `lengths1` is made only when the caller leaves it out (`if lengths1 is None:`), the clouds
    # by a test looping over `product(*factors)` (first items: 2 clouds of 64 and 96 points of
    # 3), passed as `p1.contiguous().data_ptr<scalar_t>()`.
    nearest = templatized_spec(root, "csrc/nearest/nearest.cu", "NearestPointsKernel")
    assert nearest["shapes"][0] == {"N": 2, "P1": 64, "P2": 96, "D": 3, "blocks": 256}, nearest["shapes"]
    lengths = {a["name"]: a.get("length") for a in nearest["args"]}
    assert (lengths["points1"], lengths["points2"], lengths["lengths1"]) == ("N * P1 * D", "N * P2 * D", "lengths1_size_0"), lengths
    assert nearest["derived"] == {"lengths1_size_0": "N"}, nearest
    # Each cloud's length is filled with its points (`torch.full((N,), P1)`): drawn up to that,
    # never past the points the kernel may read.
    indexes = {a["name"]: (a.get("indexes"), a.get("init")) for a in nearest["args"] if a["name"].startswith("lengths")}
    assert indexes == {"lengths1": ("P1 + 1", None), "lengths2": ("P2 + 1", None)}, nearest["args"]


def test_a_value_the_kernel_only_stores_takes_any_number(tmp_path: Path):
    root = project(tmp_path, "stored_values")
    (root / ".git").mkdir()
    # Read from the command line (`atoi(argv[1])`), with no script that runs the program: a
    # value only stored (`ptr[i] = value`, `out[i] = in[i] * (gain + 1)`) does the same work
    # whatever it is, so the spec gives 1; one that moves the writes keeps its question.
    survey = json.loads(cutune("survey", str(root), "--json").stdout)
    stages = {k["kernel"]: k["stage"] for k in survey["kernels"]}
    assert stages == {"fill_bytes": "ready", "scale_signal": "ready", "fill_from": "spec"}, survey["kernels"]
    fill_from = next(k for k in survey["kernels"] if k["kernel"] == "fill_from")
    assert fill_from["why"].startswith("value of scalar argument `start`: `rank` is a size no shape gives (the program reads it from the command line as `atoi(argv[1])`"), fill_from
    values = {a["name"]: a.get("value") for a in templatized_spec(root, "fill.cu", "fill_bytes")["args"]}
    assert values == {"ptr": None, "n": "n", "value": "1"}, values
    signal = {a["name"]: (a["dtype"], a.get("value")) for a in templatized_spec(root, "fill.cu", "scale_signal")["args"]}
    assert signal["gain"] == ("f32", "1"), signal


def test_a_render_kernel_is_sized_by_its_programs_window_not_by_another_programs(tmp_path: Path):
    root = project(tmp_path, "render_pbo")
    (root / ".git").mkdir()
    # cuda-samples' render style: the pixels are an OpenGL buffer (no allocation says how many),
    # written through `__umul24(y, imageW) + x` under `x < imageW && y < imageH`; the window is
    # the viewer's `const uint width = 640, height = 480`. Another program of the repository
    # sets its own `width` as its window is resized, and calls its own `render_image`: that
    # does not make this program's size unknown.
    spec = templatized_spec(root, "volume/render_kernel.cu", "shade_pixels")
    assert spec["shapes"] == [{"imageH": 480, "imageW": 640}], spec["shapes"]
    out = next(a for a in spec["args"] if a["name"] == "out")
    assert (out["length"], out["role"]) == ("imageH * imageW", "output"), out
    assert spec["grid"] == ["imageW // SHADE_PIXELS_BLOCK_X", "imageH // SHADE_PIXELS_BLOCK_Y"], spec["grid"]


async def test_the_code_action_writes_a_packed_accessor_as_a_struct(client, tmp_path: Path):
    root = project(tmp_path, "packed_accessors")
    (root / ".git").mkdir()
    spec = await code_action_spec(client, root / "csrc" / "blend" / "blend.cu", "const int64_t pixels", "BlendPointsKernel")
    weights = next(a for a in spec["args"] if a["name"] == "weights")
    assert weights["struct"] == "at::PackedTensorAccessor64<float, 4, at::RestrictPtrTraits>", weights
    assert [f["name"] for f in weights["fields"]] == ["data_"] + [f"sizes_[{k}]" for k in range(4)] + [f"strides_[{k}]" for k in range(4)], weights
    assert weights["fields"][0]["length"] == "batch_size * weights_size_1 * H * W", weights


async def test_the_code_action_reads_a_backward_through_its_autograd_function(client, tmp_path: Path):
    root = project(tmp_path, "autograd_backward")
    (root / ".git").mkdir()
    spec = await code_action_spec(client, root / "csrc" / "patch_max_cuda.cu", "const int out_index = (plane * out_h", "patch_max_backward_kernel")
    assert {k: spec["shapes"][0][k] for k in ("grad_output_size_2", "grad_output_size_3", "patch")} == {"grad_output_size_2": 32, "grad_output_size_3": 24, "patch": 4}, spec["shapes"]


def test_a_launcher_template_takes_its_types_from_the_data_a_dispatch_passes_it(tmp_path: Path):
    root = project(tmp_path, "deduced_launchers")
    (root / ".git").mkdir()
    # `chunked_scale_cuda(stream, value.data_ptr<scalar_t>() + n * per_chunk, …)` in PyTorch's
    # `AT_DISPATCH_FLOATING_TYPES_AND_HALF`: the launcher's `scalar_t`, and so the kernel's, is
    # deduced from a pointer into the tensor's data, `float` first. `launch_pair_rotate(…,
    # input.data_ptr<value_t_0>(), cos_table.data_ptr<angle_t_0>(), …)` is called in the
    # project's `DISPATCH_ROTATE_TYPES`, defined in the calling file (which launches nothing
    # itself), whose case declares both types.
    survey = json.loads(cutune("survey", str(root), "--json").stdout)
    stages = {k["kernel"]: (k["stage"], k["compile"]["status"]) for k in survey["kernels"]}
    assert set(stages.values()) == {("ready", "compiled")} and len(stages) == 4, survey["kernels"]
    chunked = templatized_spec(root, "csrc/chunked_scale_kernel.cuh", "chunked_scale_kernel")
    assert chunked["template_args"] == ["float"], chunked
    # The weight's length, which the C++ never reads, is its own size, from the test's tensor,
    # worked out from the channels as the test asserts (`weight.shape[0] == value.size(1)`).
    assert chunked["shapes"][0] == {"rows": 16, "channels": 96}, chunked["shapes"]
    assert chunked["derived"] == {"weight_size_0": "channels"}, chunked
    assert {a["name"]: a.get("length") for a in chunked["args"]}["weight"] == "weight_size_0", chunked["args"]
    rotate = templatized_spec(root, "csrc/pair_rotate.h", "pair_rotate_kernel")
    assert rotate["template_args"] == ["float", "float"], rotate
    # The tables are read as far as the kernel bounds them (`pairs`); the output, made
    # `empty_like(input)`, has the input's sizes.
    lengths = {a["name"]: a.get("length") for a in rotate["args"]}
    assert lengths == {"src": "rows * input_size_1", "cos_table": "pairs", "sin_table": "pairs", "pairs": None, "dst": "rows * input_size_1"}, rotate["args"]
    # `pairs = input.size(1) / 2` in the caller is worked out from the input's size on every
    # shape, so that verification never makes one where the two disagree.
    assert rotate["shapes"][0] == {"rows": 512, "input_size_1": 128}, rotate["shapes"]
    assert rotate["derived"] == {"pairs": "input_size_1 // 2"}, rotate


def test_a_launcher_deduces_each_type_from_the_argument_that_says_it(tmp_path: Path):
    root = project(tmp_path, "deduced_launchers")
    (root / ".git").mkdir()
    # `row_norm_cuda(x.data_ptr<scalar_t>(), mean.data_ptr<acc_t>(), sums, …)` in
    # `AT_DISPATCH_FLOATING_TYPES` with `using acc_t = at::acc_type<scalar_t, true>;`: each kernel
    # is `auto kernel = &k<T, U, kCentered>;` in the lambda of a `BOOL_SWITCH`, the launcher's `T`
    # and `U` deduced from what the dispatch passes for them. The test calls
    # `normalize_rows(x)`, whose `if mean is not None: … else: …` takes the `else`, which passes
    # `False` and zeros made `x.new_zeros(x.size(0))`.
    sums = templatized_spec(root, "csrc/row_norm_cuda.cu", "row_square_sums")
    assert sums["template_args"] == ["float", "float", "false"], sums
    # The block is `dim3 threads(32, 4)`, and the shared memory `threads.x * threads.y *
    # sizeof(U)` follows the block the tuner varies.
    assert sums["block"] == ["ROW_SQUARE_SUMS_BLOCK_X", "ROW_SQUARE_SUMS_BLOCK_Y"], sums
    assert sums["shared_bytes"] == "ROW_SQUARE_SUMS_BLOCK_X * ROW_SQUARE_SUMS_BLOCK_Y * 4", sums
    # `sums.data_ptr<U>()` of a tensor the forward makes `at::empty({rows}, …)`.
    lengths = {a["name"]: a.get("length") for a in sums["args"]}
    assert lengths == {"x": "rows * cols", "mean": "mean_size_0", "sums": "rows", "cols": None}, sums["args"]
    assert sums["shapes"][0] == {"cols": 1024, "mean_size_0": 256, "rows": 256}, sums["shapes"]
    # The second lambda's `kernel` is its own: the launch with a grid of columns and rows.
    divide = templatized_spec(root, "csrc/row_norm_cuda.cu", "divide_by_deviation")
    assert divide["grid"] == ["ceil_div(cols, DIVIDE_BY_DEVIATION_BLOCK_SIZE)", "rows"] and divide["block"] == ["DIVIDE_BY_DEVIATION_BLOCK_SIZE"], divide
    assert divide["shared_bytes"] == "0", divide


def test_a_kernels_call_of_a_device_function_named_like_its_launcher_is_no_call_of_the_launcher(tmp_path: Path):
    root = project(tmp_path, "device_namesake")
    (root / ".git").mkdir()
    # `sgd_kernel` calls the `__device__ sgd_update`; the host `sgd_update` of the same header
    # launches it and `main` calls that one: the types are deduced from `main`'s `floatX*`
    # (`typedef half floatX;`) and the size from its `cudaMalloc`, not from the kernel's own
    # arguments.
    spec = templatized_spec(root, "optimizer.cuh", "sgd_kernel")
    assert spec["template_args"] == ["half", "half"], spec
    assert spec["grid"] == ["ceil_div(n, block_size)"] and spec["block"] == ["block_size"], spec
    assert spec["shapes"] == [{"n": 1048576}], spec
    assert [(a["name"], a["dtype"], a.get("length")) for a in spec["args"]][:2] == [("params", "f16", "n"), ("grads", "f16", "n")], spec["args"]


async def test_the_code_action_skips_a_device_namesake_of_the_launcher(client, tmp_path: Path):
    root = project(tmp_path, "device_namesake")
    (root / ".git").mkdir()
    spec = await code_action_spec(client, root / "optimizer.cuh", "size_t i = blockIdx.x", "sgd_kernel")
    assert spec["template_args"] == ["half", "half"] and spec["shapes"] == [{"n": 1048576}], spec


async def test_the_code_action_deduces_a_launcher_templates_types_from_a_dispatch(client, tmp_path: Path):
    root = project(tmp_path, "deduced_launchers")
    (root / ".git").mkdir()
    spec = await code_action_spec(client, root / "csrc" / "pair_rotate.h", "const int row = blockIdx.x;", "pair_rotate_kernel")
    assert spec["template_args"] == ["float", "float"] and spec["shapes"][0]["rows"] == 512, spec


def test_an_explicit_specialization_is_one_instantiation_of_the_kernel_template(tmp_path: Path):
    root = project(tmp_path, "specialized_kernel")
    (root / ".git").mkdir()
    # `clamp_values<T>` is defined in a header; main.cu writes out `template <> __global__ void
    # clamp_values<double>(…)` and launches `clamp_values<float>`: one kernel, the template, whose
    # launch is main's (main.cu defines no kernel of its own by that name).
    survey = json.loads(cutune("survey", str(root), "--json").stdout)
    assert [(Path(k["file"]).name, k["kernel"], k["stage"]) for k in survey["kernels"]] == [("clamp_kernel.cuh", "clamp_values", "ready")], survey["kernels"]
    spec = templatized_spec(root, "clamp_kernel.cuh", "clamp_values")
    assert spec["template_args"] == ["float"] and spec["shapes"] == [{"n": 1048576}], spec


async def test_the_code_action_reads_the_launch_beside_an_explicit_specialization(client, tmp_path: Path):
    root = project(tmp_path, "specialized_kernel")
    (root / ".git").mkdir()
    spec = await code_action_spec(client, root / "clamp_kernel.cuh", "int i = blockIdx.x * blockDim.x + threadIdx.x;", "clamp_values")
    assert spec["template_args"] == ["float"] and spec["shapes"] == [{"n": 1048576}], spec


async def test_the_code_action_reads_the_namespace_a_launcher_is_called_in(client, tmp_path: Path):
    root = project(tmp_path, "namespaced_ops")
    (root / ".git").mkdir()
    spec = await code_action_spec(client, root / "csrc" / "causal_softmax_cuda.cu", "int row = blockIdx.x * blockDim.x + threadIdx.x;", "causal_softmax_kernel")
    assert spec["shapes"] == [{"rows": 256, "cols": 384}], spec["shapes"]


def test_a_struct_passed_by_value_becomes_fields_with_what_the_launcher_assigns(tmp_path: Path):
    root = project(tmp_path, "struct_params")
    (root / ".git").mkdir()
    # `ScaleParams params` filled member by member in `scale_all`, from `main`'s buffers: each
    # member the kernel reads is a field, in the order the struct (and its base) declares them.
    spec, _ = templatized_spec_and_report(root, "rows.cu", "scale_row_params")
    params = spec["args"][0]
    assert (params["name"], params["struct"], "dtype" in params) == ("params", "ScaleParams", False), params
    fields = [(f["name"], f["dtype"], f.get("length"), f.get("role"), f.get("value")) for f in params["fields"]]
    assert fields == [
        ("cols", "i32", None, None, "cols"),
        ("row_stride", "u32", None, None, "cols"),
        ("in", "f32", "rows * cols", "input", None),
        # `void *` cast to `float *` where the kernel writes through it.
        ("out_ptr", "f32", "rows * cols", "output", None),
        ("scale", "f32", None, None, "0.5"),
        ("relu", "u8", None, None, "1"),
    ], fields
    assert spec["shapes"][0] == {"rows": 4096, "cols": 1024} and "unknown" not in spec, spec
    # An array read at run-time indices is one field per element, each with its value.
    spec, _ = templatized_spec_and_report(root, "rows.cu", "mix_params")
    fields = {f["name"]: f.get("value", f.get("length")) for f in spec["args"][0]["fields"]}
    assert fields == {"a": "rows * cols", "b": "rows * cols", "out": "rows * cols", "weights[0]": "0.25", "weights[1]": "0.75", "n": "rows * cols"}, fields


def test_a_struct_field_the_launcher_leaves_unset_is_unknown_with_its_reason(tmp_path: Path):
    root = project(tmp_path, "struct_params")
    (root / ".git").mkdir()
    source = root / "rows.cu"
    source.write_text(source.read_text().replace("    params.scale = 0.5f;\n", ""))
    run = cutune("templatize", "rows.cu", "--kernel", "scale_row_params", "--write", cwd=root)
    assert run.returncode == 0, run.stderr
    spec = spec_of((root / "rows.cutune.toml").read_text())
    scale = next(f for f in spec["args"][0]["fields"] if f["name"] == "scale")
    assert scale["value"] == "?", scale
    check = cutune("spec", "check", "rows.cutune.toml", cwd=root)
    assert check.returncode != 0 and "value of field `scale` of `params` is unknown" in check.stdout, check.stdout


def test_a_kernel_instantiated_through_a_function_pointer_gets_the_pointers_template_arguments(tmp_path: Path):
    root = project(tmp_path, "struct_params")
    (root / ".git").mkdir()
    # `auto kernel = clamp ? &shift_values<4, true> : &shift_values<4, false>; kernel<<<…>>>(params)`:
    # the launch is the pointer's, and so is the instantiation (the first the conditional takes).
    spec, _ = templatized_spec_and_report(root, "rows.cu", "shift_values")
    assert spec["template_args"] == ["kItems", "true"], spec["template_args"]
    assert next(p for p in spec["params"] if p["name"] == "kItems")["default"] == 4
    # The struct is filled by `set_shift_params(params, x, n)` through a reference, then passed
    # to the launcher by reference: its members are what the helper assigns.
    # One size has one name: the grid's `params.n` is the `n` its caller assigns, as `x`'s length is.
    fields = [(f["name"], f.get("value", f.get("length")), f.get("role")) for f in spec["args"][0]["fields"]]
    assert fields == [("x", "n", "inout"), ("n", "n", None), ("shift", "0.125", None)], fields
    assert spec["grid"] == ["ceil_div(n, 4 * SHIFT_VALUES_BLOCK_SIZE)"] and spec["shapes"][0] == {"n": 4194304}, spec
    assert "unknown" not in spec, spec["unknown"]


async def test_the_code_action_writes_a_structs_fields(client, tmp_path: Path):
    root = project(tmp_path, "struct_params")
    (root / ".git").mkdir()
    spec = await code_action_spec(client, root / "rows.cu", "p.out[i] = p.weights[0]", "mix_params")
    assert spec["args"][0]["struct"] == "MixParams", spec["args"]
    assert [f["name"] for f in spec["args"][0]["fields"]] == ["a", "b", "out", "weights[0]", "weights[1]", "n"]


def test_a_launch_in_a_dispatch_macro_of_a_header_takes_its_cases_instantiation(tmp_path: Path):
    root = project(tmp_path, "dispatch_blocks")
    (root / ".git").mkdir()
    # `DISPATCH_VEC_SIZE(vec_size, VEC_SIZE, { auto kernel = scale_rows_vec<VEC_SIZE, T>;
    # cudaLaunchKernelEx(&config, kernel, …); })`, the macro in `dispatch.h`: the `case` the
    # program takes for `float` (4) declares `VEC_SIZE`; the grid and block are the config's.
    spec = templatized_spec(root, "rows.cuh", "scale_rows_vec")
    assert spec["template_args"] == ["4", "float"], spec["template_args"]
    assert spec["grid"] == ["rows"] and spec["block"] == ["min(d // min(16 // 4, 4), SCALE_ROWS_VEC_BLOCK_SIZE)"], (spec["grid"], spec["block"])
    assert spec["shapes"][0] == {"d": 2048, "rows": 256}, spec["shapes"]
    assert [(a["name"], a.get("length", a.get("value"))) for a in spec["args"]] == [("in", "rows * d"), ("out", "rows * d"), ("d", "d"), ("factor", "0.5")]
    # Another launcher's `auto kernel` holds another kernel: `negate_rows`' launch is its own.
    spec = templatized_spec(root, "rows.cuh", "negate_rows")
    assert spec["template_args"] == ["float"] and spec["block"] == ["NEGATE_ROWS_BLOCK_SIZE"], spec
    assert next(p for p in spec["params"] if p["name"] == "NEGATE_ROWS_BLOCK_SIZE")["default"] == 256
    # Two lambdas of one launcher each declare `auto kernel = …` for a kernel of their own; the
    # `BOOL_SWITCH` makes `kSquare` the `constexpr static bool` of the branch `main` takes (`true`).
    spec = templatized_spec(root, "rows.cuh", "row_sums")
    assert spec["template_args"] == ["true", "float"] and spec["grid"] == ["rows"], spec
    assert next(p for p in spec["params"] if p["name"] == "ROW_SUMS_BLOCK_SIZE")["default"] == 128
    spec = templatized_spec(root, "rows.cuh", "divide_by_sums")
    assert spec["template_args"] == ["true", "float"] and spec["grid"] == ["ceil_div(d, DIVIDE_BY_SUMS_BLOCK_SIZE)", "rows"], spec
    # A type dispatch around a `<<<…>>>` launch in the kernel's own file: `using real_0 = float;`
    # of the `case` taken, the block lifted once, the weight cast to that type.
    spec = templatized_spec(root, "blend.cu", "blend")
    assert spec["template_args"] == ["float"] and spec["shapes"][0] == {"n": 1048576}, spec
    assert [p["name"] for p in spec["params"]].count("BLEND_BLOCK_SIZE") == 1, spec["params"]
    assert {a["name"]: a.get("length", a.get("value")) for a in spec["args"]} == {"a": "n", "b": "n", "out": "n", "weight": "0.25", "n": "n"}


async def test_the_code_action_reads_a_launch_through_a_dispatch_macro(client, tmp_path: Path):
    root = project(tmp_path, "dispatch_blocks")
    (root / ".git").mkdir()
    spec = await code_action_spec(client, root / "rows.cuh", "const uint32_t row = blockIdx.x;", "scale_rows_vec")
    assert spec["template_args"] == ["4", "float"] and spec["grid"] == ["rows"], spec


def test_a_dispatch_header_in_an_include_folder_and_a_width_from_the_dispatched_type(tmp_path: Path):
    root = project(tmp_path, "dispatch_blocks")
    (root / ".git").mkdir()
    # `contrib/shift.cu` includes "dispatch.h" of the folder above (a `-I` of the build), and
    # launches in its `DISPATCH_PRECISION` with `const int ILP = sizeof(float4) / sizeof(real_0);`:
    # the `case` taken for `float` gives 4, the program's width, kept.
    run = cutune("templatize", str(root / "contrib" / "shift.cu"), "--kernel", "shift_rows", "--write")
    assert run.returncode == 0, run.stderr
    spec = spec_of((root / "contrib" / "shift.cutune.toml").read_text())
    assert spec["template_args"] == ["4", "float"] and spec["grid"] == ["rows"], spec
    assert spec["shapes"][0] == {"cols": 1000, "rows": 512}, spec["shapes"]
    assert {p["name"] for p in spec["params"]} >= {"SHIFT_ROWS_BLOCK_SIZE", "SHIFT_ROWS_UNROLL"}, spec["params"]
    checked = cutune("spec", "check", str(root / "contrib" / "shift.cutune.toml"))
    assert checked.returncode == 0, checked.stdout + checked.stderr


async def test_the_code_action_reads_a_dispatch_header_of_an_include_folder(client, tmp_path: Path):
    root = project(tmp_path, "dispatch_blocks")
    (root / ".git").mkdir()
    spec = await code_action_spec(client, root / "contrib" / "shift.cu", "const real_t *row_in", "shift_rows")
    assert spec["template_args"] == ["4", "float"] and spec["grid"] == ["rows"], spec


def test_constants_of_a_guarded_header_give_the_launch_and_a_length_made_from_the_block_holds_it(tmp_path: Path):
    root = project(tmp_path, "guarded_constants")
    (root / ".git").mkdir()
    # `int const BLOCK_SIZE = 64;` and `THREADS = GRID_SIZE * BLOCK_SIZE` inside `#ifndef CONFIG_H`.
    spec = templatized_spec(root, "kernels.cuh", "write_ramp")
    assert spec["template_args"] == ["float"] and spec["block"] == ["WRITE_RAMP_BLOCK_SIZE"], spec
    assert spec["grid"] == ["ceil_div(GRID_SIZE * BLOCK_SIZE, WRITE_RAMP_BLOCK_SIZE)"], spec["grid"]
    # THREADS is compiled into the kernel (its bound), and made of GRID_SIZE and BLOCK_SIZE: one
    # shape, no tail of another GRID_SIZE that the compiled bound would disagree with.
    assert spec["shapes"] == [{"BLOCK_SIZE": 64, "GRID_SIZE": 1024, "THREADS": 65536}], spec["shapes"]
    assert set(spec["restrictions"]) >= {"THREADS == 65536", "GRID_SIZE == 1024"}, spec["restrictions"]
    assert "unknown" not in spec, spec["unknown"]
    # The kernel places its results by the header's BLOCK_SIZE, and the buffers' length THREADS
    # is made from it: the block stays the program's, the loop's unroll factor is the choice.
    run = cutune("templatize", str(root / "kernels.cuh"), "--kernel", "thread_stacks", "--write")
    assert run.returncode == 0, run.stderr
    assert "`BLOCK_SIZE` also sizes `stacks` (THREADS * DEPTH), so another block would change the problem, not only the launch" in run.stderr, run.stderr
    spec = next(k for k in tomllib.loads((root / "kernels.cutune.toml").read_text())["kernels"] if k["name"] == "thread_stacks")
    assert spec["block"] == ["BLOCK_SIZE"] and [p["name"] for p in spec["params"]] == ["fast_math", "max_registers", "THREAD_STACKS_UNROLL_K"], spec
    checked = cutune("spec", "check", str(root / "kernels.cutune.toml"))
    assert checked.returncode == 0, checked.stdout + checked.stderr


async def test_the_code_action_reads_the_constants_of_a_guarded_header(client, tmp_path: Path):
    root = project(tmp_path, "guarded_constants")
    (root / ".git").mkdir()
    spec = await code_action_spec(client, root / "kernels.cuh", "out[i] = step * i;", "write_ramp")
    assert spec["grid"] == ["ceil_div(GRID_SIZE * BLOCK_SIZE, WRITE_RAMP_BLOCK_SIZE)"] and spec["shapes"][0]["THREADS"] == 65536, spec


def test_a_pytorch_packages_tests_reach_the_kernel_through_its_wrappers_and_autograd_function(tmp_path: Path):
    root = project(tmp_path, "autograd_chain")
    (root / ".git").mkdir()
    # tests/ call `shift_add` (shift_add/interface.py), which applies `ShiftAddFn`, whose
    # `forward` calls `shift_add_function` (shift_add/ops.py), which makes `out` like `x` and
    # calls the binding by keywords; the binding reads the sizes through `sizes = x.sizes()`.
    survey = json.loads(cutune("survey", str(root), "--json").stdout)
    [kernel] = survey["kernels"]
    assert (kernel["stage"], kernel["compile"]["status"]) == ("ready", "compiled"), kernel
    spec = templatized_spec(root, "csrc/shift_add.cu", "shift_add_kernel")
    # The pytest test's first parameters, then the test case's helper (`self.make_inputs(2,
    # 1024, 8192)`) through `interface.ShiftAddFn.apply`: one shape per call site.
    assert spec["shapes"] == [{"batch": 4, "dim": 768, "seqlen": 2048}, {"batch": 2, "dim": 1024, "seqlen": 8192}], spec["shapes"]
    args = {a["name"]: a.get("length", a.get("value")) for a in spec["args"]}
    assert args == {"x": "batch * dim * seqlen", "out": "batch * dim * seqlen", "seqlen": "seqlen", "alpha": "0.5"}, args
    assert spec["grid"] == ["batch", "dim"] and "unknown" not in spec, spec


def test_an_op_registered_for_its_device_reaches_the_kernel_from_the_packages_test(tmp_path: Path):
    root = project(tmp_path, "registered_ops")
    (root / ".git").mkdir()
    # tests/ call `scale_rows` (`= ScaleRowsFunction.apply` in ops/scale_rows.py), whose
    # `forward` makes the output with `input.new_zeros(input.size())` and calls the binding
    # `scale_rows_forward`, which calls `scale_rows_impl`, which dispatches to the
    # implementation `REGISTER_DEVICE_IMPL` names in cudabind.cpp; the launcher's grid is a
    # helper of a header in another folder (`blocks_for(total)`, capped, its block a default
    # argument), found through the build's include path, as the kernel's header is.
    survey = json.loads(cutune("survey", str(root), "--json").stdout)
    [kernel] = [k for k in survey["kernels"] if k["kernel"] == "scale_rows_kernel"]
    assert (kernel["stage"], kernel["compile"]["status"]) == ("ready", "compiled"), kernel
    spec = templatized_spec(root, "ops/csrc/common/cuda/scale_rows_kernel.cuh", "scale_rows_kernel")
    assert spec["grid"] == ["min(ceil_div(input_size_0 * cols, THREADS), 4096)"] and spec["block"] == ["THREADS"], spec
    assert spec["shapes"] == [{"cols": 1024, "input_size_0": 2048, "scale_size_0": 2048}], spec["shapes"]
    args = {a["name"]: a.get("length", a.get("value")) for a in spec["args"]}
    assert args == {"total": "input_size_0 * cols", "input": "input_size_0 * cols", "scale": "scale_size_0", "cols": "cols", "output": "input_size_0 * cols"}, args
    # The other framework's build (ops/csrc/other/, the same function names, called from a
    # function of its own that nothing calls) is not the path the shapes come from; its
    # helpers, which include the launch helper too, are not what the slice takes it from.
    sliced = cutune("slice", "ops/csrc/common/cuda/scale_rows_kernel.cuh", "--kernel", "scale_rows_kernel", cwd=root).stdout
    assert sliced.index("#else") < sliced.index("#define GRID_STRIDE_LOOP") and '#include "other_helper.hpp"' in sliced, sliced


def test_an_op_behind_a_module_object_is_sized_by_tests_that_build_inputs_with_numpy(tmp_path: Path):
    root = project(tmp_path, "registered_ops")
    (root / ".git").mkdir()
    # tests/test_box_pool.py makes `box_pool = BoxPool(points_per_box=4).cuda()` (the name the
    # package gives `BoxPoolFunction.apply`, which the module's `forward` calls) and calls
    # `box_pool(pts, bxs)` for each case of a module-level list of (points, boxes) written as
    # nested lists, turned into tensors through `np.array` and `torch.from_numpy(…).unsqueeze(0)`;
    # a second test calls `gradcheck(BoxPool(8), (pts, bxs))` on NumPy's random points.
    # `BoxPool.forward` passes `self.points_per_box` (its `__init__`'s) to an autograd
    # function that views the boxes as `boxes.view(batch, -1, 7)`.
    survey = json.loads(cutune("survey", str(root), "--json").stdout)
    [kernel] = [k for k in survey["kernels"] if k["kernel"] == "box_pool_kernel"]
    assert (kernel["stage"], kernel["compile"]["status"]) == ("ready", "compiled"), kernel
    spec = templatized_spec(root, "ops/csrc/common/cuda/box_pool_kernel.cuh", "box_pool_kernel")
    assert spec["grid"] == ["min(ceil_div(boxes_num, THREADS), 4096)", "batch"], spec
    shapes = [{k: shape[k] for k in ("batch", "pts_num", "boxes_num", "sampled")} for shape in spec["shapes"]]
    assert shapes == [{"batch": 1, "pts_num": 5, "boxes_num": 2, "sampled": 4}, {"batch": 2, "pts_num": 64, "boxes_num": 3, "sampled": 8}], spec["shapes"]
    # Each tensor's leading dimension is the batch the binding passes down, not a size of its own.
    lengths = {a["name"]: a["length"] for a in spec["args"] if "length" in a}
    assert lengths["pts"] == "batch * pts_num * pts_size_2" and lengths["boxes"] == "batch * boxes_num * boxes_size_2", lengths


def test_an_op_given_tuples_of_sizes_and_string_modes_is_sized_and_valued_from_its_tests(tmp_path: Path):
    root = project(tmp_path, "registered_ops")
    (root / ".git").mkdir()
    # ops/grid_pool.py keeps `ctx.output_size = _pair(output_size)` and unpacks and indexes it;
    # it passes `mode=modes[mode]` of a dictionary and `relu=1 if activation == 'relu' else 0`;
    # the launcher casts the scale with `static_cast<scalar_t>(scale)`. tests/ call
    # `grid_pool(x, (3, 6), 0.5, 'max', 'relu')` and, in an assertion, a `GridPool(4)` module
    # (a number the op pairs, the default mode and no activation).
    survey = json.loads(cutune("survey", str(root), "--json").stdout)
    [kernel] = [k for k in survey["kernels"] if k["kernel"] == "grid_pool_kernel"]
    assert (kernel["stage"], kernel["compile"]["status"]) == ("ready", "compiled"), kernel
    spec = templatized_spec(root, "ops/csrc/common/cuda/grid_pool_kernel.cuh", "grid_pool_kernel")
    shapes = [{k: shape[k] for k in ("out_h", "out_w", "mode", "relu", "height", "width")} for shape in spec["shapes"]]
    assert shapes == [{"out_h": 4, "out_w": 4, "mode": 1, "relu": 0, "height": 32, "width": 32}, {"out_h": 3, "out_w": 6, "mode": 0, "relu": 1, "height": 12, "width": 18}], spec["shapes"]
    args = {a["name"]: a.get("length", a.get("value")) for a in spec["args"]}
    assert args["scale"] == "1" and args["out_h"] == "out_h" and args["mode"] == "mode", args
    assert "unknown" not in spec, spec


async def test_the_code_action_sizes_an_op_given_a_pair_and_a_mode_string(client, tmp_path: Path):
    root = project(tmp_path, "registered_ops")
    (root / ".git").mkdir()
    spec = await code_action_spec(client, root / "ops" / "csrc" / "common" / "cuda" / "grid_pool_kernel.cuh", "const int ow = index % out_w;", "grid_pool_kernel")
    assert [(s["out_h"], s["out_w"], s["mode"], s["relu"]) for s in spec["shapes"]] == [(4, 4, 1, 0), (3, 6, 0, 1)], spec["shapes"]


def test_ids_the_kernel_asserts_below_an_extent_are_drawn_below_it(tmp_path: Path):
    root = project(tmp_path, "index_inputs")
    (root / ".git").mkdir()
    # `gather_rows` reads `row = ids[i / cols]` and asserts `row < rows`: random integers up
    # to 128 would pass the table of a smaller shape and fault on the kernel's own assertion.
    spec = templatized_spec(root, "gather.cu", "gather_rows")
    [ids] = [a for a in spec["args"] if a["name"] == "ids"]
    assert ids == {"name": "ids", "dtype": "i32", "length": "count", "role": "input", "indexes": "rows"}, ids
    assert spec["shapes"] == [{"cols": 256, "count": 4096, "rows": 1000}], spec["shapes"]
    check = cutune("spec", "check", "gather.cutune.toml", cwd=root)
    assert check.returncode == 0 and "0 errors" in check.stdout, check.stdout + check.stderr
    # Both ways of filling the ids is one too many.
    toml = root / "gather.cutune.toml"
    toml.write_text(toml.read_text().replace('indexes = "rows"', 'indexes = "rows"\ninit = { dist = "integers", low = 0, high = 4 }'))
    check = cutune("spec", "check", "gather.cutune.toml", cwd=root)
    assert check.returncode != 0 and "buffer `ids` has both an init and an index extent" in check.stdout, check.stdout


async def test_the_code_action_draws_asserted_ids_below_their_extent(client, tmp_path: Path):
    root = project(tmp_path, "index_inputs")
    (root / ".git").mkdir()
    spec = await code_action_spec(client, root / "gather.cu", "const int row = ids[i / cols];", "gather_rows")
    assert [a.get("indexes") for a in spec["args"] if a["name"] == "ids"] == ["rows"], spec["args"]


def test_ids_that_address_another_buffer_are_drawn_within_what_they_address(tmp_path: Path):
    root = project(tmp_path, "index_inputs")
    (root / ".git").mkdir()
    # Nothing checks these indices: each must land inside the plane or the table it offsets,
    # whose size is the program's, not a fixed 128.
    extents = {}
    for kernel, ids in [("scatter_pooled", "argmax"), ("embed_tokens", "tokens"), ("gather_points", "idx")]:
        spec = templatized_spec(root, "scatter.cu", kernel)
        [arg] = [a for a in spec["args"] if a["name"] == ids]
        assert "init" not in arg, arg
        extents[kernel] = arg["indexes"]
    # A channel plane of the gradient; the table's rows (`vocab * dim` over the row of `dim`);
    # one batch's and channel's run of points.
    assert extents == {"scatter_pooled": "height * width", "embed_tokens": "vocab", "gather_points": "points"}, extents
    check = cutune("spec", "check", "scatter.cutune.toml", cwd=root)
    assert check.returncode == 0 and "0 errors" in check.stdout, check.stdout + check.stderr


async def test_the_code_action_draws_scattered_ids_within_their_plane(client, tmp_path: Path):
    root = project(tmp_path, "index_inputs")
    (root / ".git").mkdir()
    spec = await code_action_spec(client, root / "scatter.cu", "const int at = argmax[(n * channels + c) * pooled + i];", "scatter_pooled")
    assert [a.get("indexes") for a in spec["args"] if a["name"] == "argmax"] == ["height * width"], spec["args"]


def test_an_op_named_like_its_binding_is_followed_with_its_defaults_and_branches(tmp_path: Path):
    root = project(tmp_path, "registered_ops")
    (root / ".git").mkdir()
    # `pair_distances` of the package wraps `ext_module.pair_distances`: the tests call the
    # wrapper, whose skipped keywords take its defaults and whose `if aligned:` makes the
    # output of one shape or the other.
    spec = templatized_spec(root, "ops/csrc/common/cuda/pair_distances_kernel.cuh", "pair_distances_kernel")
    shapes = [(s["rows"], s["cols"], s["dims"], s["aligned"], s["squared"]) for s in spec["shapes"]]
    assert shapes == [(300, 200, 3, 0, 1), (1024, 1024, 3, 1, 0)], spec["shapes"]
    assert spec["grid"] == ["min(ceil_div(rows * cols, THREADS), 4096)"], spec["grid"]
    [out] = [a for a in spec["args"] if a["name"] == "out"]
    assert out["length"] == "rows * cols", out


async def test_the_code_action_follows_an_op_named_like_its_binding(client, tmp_path: Path):
    root = project(tmp_path, "registered_ops")
    (root / ".git").mkdir()
    spec = await code_action_spec(client, root / "ops" / "csrc" / "common" / "cuda" / "pair_distances_kernel.cuh", "const int i = aligned ? index : index / cols;", "pair_distances_kernel")
    assert [(s["aligned"], s["squared"]) for s in spec["shapes"]] == [(0, 1), (1, 0)], spec["shapes"]


def test_a_registered_op_without_its_registration_names_where_the_chain_stops(tmp_path: Path):
    root = project(tmp_path, "registered_ops")
    (root / ".git").mkdir()
    bind = root / "ops" / "csrc" / "torch" / "cuda" / "cudabind.cpp"
    bind.write_text(bind.read_text().replace("REGISTER_DEVICE_IMPL(scale_rows_impl, CUDA, scale_rows_cuda);", ""))
    run = cutune("templatize", "ops/csrc/common/cuda/scale_rows_kernel.cuh", "--kernel", "scale_rows_kernel", "--write", cwd=root)
    assert run.returncode == 0, run.stderr
    spec = spec_of((root / "ops" / "csrc" / "common" / "cuda" / "scale_rows_kernel.cutune.toml").read_text())
    assert spec["unknown"]["cols"].startswith("the program makes it as `input.size(1)` in `ScaleRowsCUDAKernelLauncher`"), spec["unknown"]


async def test_the_code_action_follows_a_registered_op_to_its_test(client, tmp_path: Path):
    root = project(tmp_path, "registered_ops")
    (root / ".git").mkdir()
    spec = await code_action_spec(client, root / "ops" / "csrc" / "common" / "cuda" / "scale_rows_kernel.cuh", "output[index] = input[index] * scale[index / cols];", "scale_rows_kernel")
    assert spec["shapes"] == [{"cols": 1024, "input_size_0": 2048, "scale_size_0": 2048}] and spec["grid"] == ["min(ceil_div(input_size_0 * cols, THREADS), 4096)"], spec


async def test_the_code_action_sizes_an_op_from_numpy_built_tests_through_a_module_object(client, tmp_path: Path):
    root = project(tmp_path, "registered_ops")
    (root / ".git").mkdir()
    spec = await code_action_spec(client, root / "ops" / "csrc" / "common" / "cuda" / "box_pool_kernel.cuh", "int box = blockIdx.x * blockDim.x + threadIdx.x;", "box_pool_kernel")
    assert [(s["batch"], s["boxes_num"], s["sampled"]) for s in spec["shapes"]] == [(1, 2, 4), (2, 3, 8)], spec["shapes"]
    assert spec["grid"] == ["min(ceil_div(boxes_num, THREADS), 4096)", "batch"], spec


def test_a_package_function_no_test_calls_names_where_the_chain_stops(tmp_path: Path):
    root = project(tmp_path, "autograd_chain")
    (root / ".git").mkdir()
    shutil.rmtree(root / "tests")
    run = cutune("templatize", "csrc/shift_add.cu", "--kernel", "shift_add_kernel", "--write", cwd=root)
    assert run.returncode == 0, run.stderr
    spec = spec_of((root / "csrc" / "shift_add.cutune.toml").read_text())
    assert spec["unknown"]["batch"].startswith("the program makes it as `x.sizes()[0]` in `shift_add_fwd`"), spec["unknown"]
    # `alpha` is the parameter of `shift_add` (interface.py:20), which nothing calls once the
    # tests are gone; the kernel only stores it (`out_row[t] = row[t] + alpha * previous`), so
    # any value does the same work and the spec gives 1 rather than asking.
    assert "alpha" not in spec["unknown"], spec["unknown"]
    assert next(a for a in spec["args"] if a["name"] == "alpha")["value"] == "1", spec["args"]


async def test_the_code_action_follows_a_pytorch_packages_tests_to_the_kernel(client, tmp_path: Path):
    root = project(tmp_path, "autograd_chain")
    (root / ".git").mkdir()
    spec = await code_action_spec(client, root / "csrc" / "shift_add.cu", "for (int t = threadIdx.x; t < seqlen; t += blockDim.x) {", "shift_add_kernel")
    assert spec["shapes"][0] == {"batch": 4, "dim": 768, "seqlen": 2048} and spec["grid"] == ["batch", "dim"], spec


def test_a_launcher_nobody_calls_is_called_as_its_twin_is(tmp_path: Path):
    root = project(tmp_path, "twin_launchers")
    (root / ".git").mkdir()
    # cuda-samples' sortingNetworks style: two sorters of the same parameters declared side by
    # side, of which main calls one. The other's sizes are those main passes to its twin, and
    # the report says so; a launcher of other parameters has no twin and keeps its questions.
    survey = json.loads(cutune("survey", str(root), "--json").stdout)
    stages = {k["kernel"]: k["stage"] for k in survey["kernels"]}
    assert stages == {"swap_sort_kernel": "ready", "rank_sort_kernel": "ready", "pair_sort_kernel": "spec"}, survey["kernels"]
    pairs = next(k for k in survey["kernels"] if k["kernel"] == "pair_sort_kernel")
    assert "it is the parameter `pairs_out` of `sort_pairs` (rank_sort.cu:38), which nothing in the workspace calls" in pairs["why"], pairs
    spec, report = templatized_spec_and_report(root, "rank_sort.cu", "rank_sort_kernel")
    assert spec["shapes"] == [{"batches": 4096, "length": 64}], spec["shapes"]
    lengths = {a["name"]: a.get("length") for a in spec["args"]}
    assert lengths == {"keys_out": "batches * length", "keys_in": "batches * length", "batches": None, "length": None}, lengths
    assert "callers: nothing calls `sort_by_ranks`: the sizes are those `main` passes to `sort_by_swaps` (main.cpp:18), which takes the same parameters" in report, report


def test_a_mapped_buffer_is_as_long_as_the_launch_that_covers_it(tmp_path: Path):
    root = project(tmp_path, "mapped_frames")
    (root / ".git").mkdir()
    # cuda-samples' simpleCUDA2GL and EGLStream style: the buffer is mapped from the graphics
    # side, so no allocation says its length; its threads index it unchecked, so the original
    # launch (its block at the program's value, whatever the tuner tries) bounds what it needs.
    survey = json.loads(cutune("survey", str(root), "--json").stdout)
    assert {k["kernel"]: k["stage"] for k in survey["kernels"]} == {"tint_frame": "ready", "clear_bytes": "ready"}, survey["kernels"]
    tint = templatized_spec(root, "frame_kernels.cu", "tint_frame")
    assert tint["block"] == ["TINT_FRAME_BLOCK_X", "TINT_FRAME_BLOCK_Y"], tint["block"]
    pixels = next(a for a in tint["args"] if a["name"] == "pixels")
    assert (pixels["dtype"], pixels["length"], pixels["role"]) == ("u8", "((height // 16 * 16 - 1) * row_pixels + width // 16 * 16) * 4", "output"), pixels
    clear = templatized_spec(root, "frame_kernels.cu", "clear_bytes")
    assert next(a for a in clear["args"] if a["name"] == "bytes")["length"] == "width * height * 4 // 256 * 256", clear["args"]


def test_buffers_an_init_function_sets_up_in_a_struct_have_its_lengths(tmp_path: Path):
    # `init_input(input, n)` allocates `input.bytes` (which it set to `sizeof(float) * n`) for
    # one buffer and points another one element into it: the kernel is launched with both.
    root = project(tmp_path, "init_functions")
    (root / ".git").mkdir()
    spec = templatized_spec(root, "solver.cu", "pair_products")
    lengths = {a["name"]: a.get("length") for a in spec["args"]}
    assert (lengths["values"], lengths["next"], lengths["products"]) == ("n", "n - 1", "n"), lengths
    assert spec["shapes"][0]["n"] == 4096
