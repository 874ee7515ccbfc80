"""`cutune templatize` and `cutune check` through the real binary, on copies of the examples."""

from __future__ import annotations

import json
import shutil
import subprocess
import tomllib
from pathlib import Path

from editor import CUTUNE_BIN, REPO

EXAMPLES = REPO / "examples"
FIXTURES = REPO / "tests" / "fixtures" / "template"


def cutune(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([str(CUTUNE_BIN), *args], capture_output=True, text=True, cwd=cwd, timeout=300)


def copy(tmp_path: Path, source: Path) -> Path:
    target = tmp_path / source.name
    shutil.copy(source, target)
    return target


def test_write_rewrites_in_place_writes_a_valid_spec_and_a_second_run_changes_nothing(tmp_path: Path):
    source = copy(tmp_path, EXAMPLES / "layernorm.cu")
    original = source.read_text()

    first = cutune("templatize", str(source), "--kernel", "layernorm_kernel", "--write")

    assert first.returncode == 0, first.stderr
    spec_path = tmp_path / "layernorm.cutune.toml"
    rewritten, spec_text = source.read_text(), spec_path.read_text()
    assert rewritten != original and "#ifndef LAYERNORM_BLOCK_SIZE" in rewritten
    assert f"wrote {source} and {spec_path}" in first.stderr
    spec = tomllib.loads(spec_text)
    [kernel] = spec["kernels"]
    assert [p["name"] for p in kernel["params"]] == ["LAYERNORM_BLOCK_SIZE", "LAYERNORM_VEC", "LAYERNORM_ROW_REGS", "fast_math", "max_registers"]
    assert kernel["shapes"] == [{"hidden": 4096, "rows": 8191}]
    checked = cutune("spec", "check", str(spec_path))
    assert checked.returncode == 0 and "0 errors, 0 warnings" in checked.stdout, checked.stdout

    second = cutune("templatize", str(source), "--kernel", "layernorm_kernel", "--write")

    assert second.returncode == 0, second.stderr
    assert source.read_text() == rewritten
    assert spec_path.read_text() == spec_text


def test_write_keeps_the_other_kernels_of_an_existing_spec(tmp_path: Path):
    source = copy(tmp_path, EXAMPLES / "rmsnorm.cu")
    assert cutune("templatize", str(source), "--kernel", "rmsnorm_kernel", "--write").returncode == 0
    spec_path = tmp_path / "rmsnorm.cutune.toml"
    spec = tomllib.loads(spec_path.read_text())
    spec_text = spec_path.read_text().replace('name = "rmsnorm_kernel"', 'name = "other_kernel"', 1)
    spec_path.write_text(spec_text)

    result = cutune("templatize", str(source), "--kernel", "rmsnorm_kernel", "--write")

    assert result.returncode == 0, result.stderr
    names = [k["name"] for k in tomllib.loads(spec_path.read_text())["kernels"]]
    assert names == ["other_kernel", "rmsnorm_kernel"]


def test_diff_shows_both_files_and_touches_neither(tmp_path: Path):
    source = copy(tmp_path, EXAMPLES / "softmax.cu")
    before = source.read_text()

    result = cutune("templatize", str(source), "--kernel", "softmax_kernel", "--diff")

    assert result.returncode == 0, result.stderr
    assert f"+++ b/{source}" in result.stdout
    assert f"+++ b/{tmp_path / 'softmax.cutune.toml'}" in result.stdout
    assert "+#ifndef SOFTMAX_VEC" in result.stdout
    assert source.read_text() == before and not (tmp_path / "softmax.cutune.toml").exists()
    # The report: one line per transform, with what was done or why not.
    assert f"{source}: applied: block-size: block size 1024 is `SOFTMAX_BLOCK_SIZE`" in result.stderr
    assert f"{source}: skipped: shared-padding:" in result.stderr


def test_bad_input_gets_a_clear_error_and_no_changes(tmp_path: Path):
    source = copy(tmp_path, EXAMPLES / "rmsnorm.cu")
    unknown = cutune("templatize", str(source), "--kernel", "nope", "--write")
    assert unknown.returncode == 1
    assert f"{source}: no kernel `nope`; the file has: rmsnorm_kernel" in unknown.stderr

    (tmp_path / "rmsnorm.cutune.toml").write_text("version = 1\nkernels = [\n")
    broken_spec = cutune("templatize", str(source), "--kernel", "rmsnorm_kernel", "--write")
    assert broken_spec.returncode == 1
    assert "rmsnorm.cutune.toml:2:12: unclosed array, expected `]`: the existing spec does not parse" in broken_spec.stderr
    assert source.read_text() == (EXAMPLES / "rmsnorm.cu").read_text()
    assert "panicked" not in unknown.stderr + broken_spec.stderr


def test_check_compiles_the_default_and_reports_infeasible_configurations_with_the_reason(tmp_path: Path):
    source = copy(tmp_path, FIXTURES / "define_block.cu")
    assert cutune("templatize", str(source), "--kernel", "row_sum", "--write").returncode == 0
    spec_path = tmp_path / "define_block.cutune.toml"
    # A block of 2048 threads cannot run anywhere: the check must say so without compiling it.
    spec_path.write_text(spec_path.read_text().replace("values = [32, 64, 128, 256, 512, 1024]", "values = [128, 2048]"))

    result = cutune("check", str(source), "--kernel", "row_sum", "--all", "--json")

    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["space_size"] == 2 * 2 * 5 and report["checked"] == 20
    default = report["results"][0]
    assert default["is_default"] and default["status"] == "compiled"
    assert default["config"] == [["BLOCK", 128], ["fast_math", 0], ["max_registers", 0]]
    assert default["resources"]["registers"] > 0 and default["resources"]["shared_bytes"] == 16
    big = [r for r in report["results"] if r["config"][0] == ["BLOCK", 2048]]
    assert len(big) == 10
    assert {r["status"] for r in big} == {"infeasible"}
    assert {r["reason"] for r in big} == {"block extent x is 2048; it must be 1 to 1024"}
    assert report["compiled"] == 10 and report["failed"] == 0


def test_check_without_a_spec_templatizes_in_memory_and_samples_reproducibly(tmp_path: Path):
    source = copy(tmp_path, EXAMPLES / "sgemm.cu")
    first = cutune("check", str(source), "--kernel", "sgemm_kernel", "--sample", "6", "--seed", "3", "--json")
    second = cutune("check", str(source), "--kernel", "sgemm_kernel", "--sample", "6", "--seed", "3", "--json")

    assert first.returncode == 0, first.stderr
    assert "no spec of `sgemm_kernel` beside the file; using it templatized in memory" in first.stderr
    configs = [r["config"] for r in json.loads(first.stdout)["results"]]
    assert configs == [r["config"] for r in json.loads(second.stdout)["results"]]
    assert len(configs) == 6 and json.loads(first.stdout)["results"][0]["is_default"]
    assert not (tmp_path / "sgemm.cutune.toml").exists()


def test_thread_tiles_divide_the_block_compile_and_are_refused_with_the_line_that_stops_them(tmp_path: Path):
    source = copy(tmp_path, FIXTURES / "thread_tiles.cu")

    result = cutune("templatize", str(source), "--kernel", "matmul_bt", "--write")

    assert result.returncode == 0, result.stderr
    assert "applied: thread-tiles: each thread computes `MATMUL_BT_TM` × `MATMUL_BT_TN` outputs" in result.stderr
    rewritten = source.read_text()
    assert "#if MATMUL_BT_TM == 1 && MATMUL_BT_TN == 1" in rewritten
    assert "matmul_bt<<<grid, dim3(TILE / MATMUL_BT_TN, TILE / MATMUL_BT_TM)>>>" in rewritten
    [kernel] = tomllib.loads((tmp_path / "thread_tiles.cutune.toml").read_text())["kernels"]
    assert kernel["block"] == ["TILE // MATMUL_BT_TN", "TILE // MATMUL_BT_TM"]
    assert {"TILE % MATMUL_BT_TN == 0", "TILE % MATMUL_BT_TM == 0"} <= set(kernel["restrictions"])
    tiles = {p["name"]: (p["default"], p["values"]) for p in kernel["params"] if p["name"] in ("MATMUL_BT_TM", "MATMUL_BT_TN")}
    assert tiles == {"MATMUL_BT_TM": (1, [1, 2, 4, 8]), "MATMUL_BT_TN": (1, [1, 2, 4, 8])}
    # Every sampled tile compiles; a tile wider than the block is out by the restriction.
    checked = json.loads(cutune("check", str(source), "--kernel", "matmul_bt", "--sample", "12", "--json").stdout)
    assert checked["failed"] == 0 and checked["compiled"] >= 8
    assert cutune("templatize", str(source), "--kernel", "matmul_bt", "--write").returncode == 0
    assert source.read_text() == rewritten

    refused = copy(tmp_path, FIXTURES / "thread_tiles_refused.cu")
    result = cutune("templatize", str(refused), "--kernel", "tiled_mm")

    assert result.returncode == 0, result.stderr
    assert "refused: thread-tiles: `return;` at line 11 leaves the kernel for one thread, not for the tile" in result.stderr


def test_thread_tiles_keep_the_programs_grid_and_the_names_of_the_thread_index(tmp_path: Path):
    source = copy(tmp_path, FIXTURES / "thread_tiles_aliases.cu")

    result = cutune("templatize", str(source), "--kernel", "square_mm")

    assert result.returncode == 0, result.stderr
    # The grid reads `threads.x`: the launch divides the block, the `dim3` stays.
    assert "dim3 grid(n / threads.x, n / threads.y);" in result.stdout
    assert "square_mm<16><<<grid, dim3(threads.x / SQUARE_MM_TN, threads.y / SQUARE_MM_TM)>>>" in result.stdout
    assert "int tx = threadIdx.x * SQUARE_MM_TN + tn;" in result.stdout
    assert "tx[" not in result.stdout


def test_a_row_read_in_several_loops_is_kept_in_registers_and_refused_when_written_between(tmp_path: Path):
    source = copy(tmp_path, FIXTURES / "keep_row.cu")

    result = cutune("templatize", str(source), "--kernel", "residual_rms_scale", "--write")

    assert result.returncode == 0, result.stderr
    assert "the loops at lines 22, 24 and 26 keep up to `RESIDUAL_RMS_SCALE_ROW_REGS` vectors of the row in registers" in result.stderr
    rewritten = source.read_text()
    # Only `h` is read again: the residual and the output are touched by one loop each.
    assert "h_kept[RESIDUAL_RMS_SCALE_ROW_REGS];" in rewritten and "r_kept" not in rewritten and "y_kept" not in rewritten
    # The first loop loads its kept vectors before it adds to any, then the later two read them.
    assert rewritten.count("h_kept[c_kept] = *reinterpret_cast<const float_bits*>(h + c_vec);") == 1
    assert rewritten.count("float_bits h_v_bits = h_kept[c_kept];") == 3
    [kernel] = tomllib.loads((tmp_path / "keep_row.cutune.toml").read_text())["kernels"]
    assert "RESIDUAL_RMS_SCALE_ROW_REGS == 0 || RESIDUAL_RMS_SCALE_VEC > 1" in kernel["restrictions"]
    kept = next(p for p in kernel["params"] if p["name"] == "RESIDUAL_RMS_SCALE_ROW_REGS")
    assert (kept["default"], kept["values"]) == (0, [0, 1, 2, 4, 8])
    # The kept vectors stay in registers (no local memory) unless the registers are capped.
    checked = json.loads(cutune("check", str(source), "--kernel", "residual_rms_scale", "--sample", "16", "--json").stdout)
    assert checked["failed"] == 0 and checked["compiled"] >= 8
    kept_rows = [r for r in checked["results"] if dict(r["config"])["RESIDUAL_RMS_SCALE_ROW_REGS"] > 0 and dict(r["config"])["max_registers"] == 0]
    assert kept_rows, checked["results"]
    assert all(r["status"] == "compiled" and r["resources"]["stack_bytes"] == 0 for r in kept_rows), kept_rows

    refused = copy(tmp_path, FIXTURES / "keep_row_refused.cu")
    result = cutune("templatize", str(refused), "--kernel", "centre_row")

    assert result.returncode == 0, result.stderr
    assert "keep_row_refused.cu:10: note: `x` is used at line 15 between the loops that read its row again: the row is not kept in registers" in result.stderr
    assert "ROW_REGS" not in result.stdout


def test_a_row_is_kept_across_preprocessor_branches_and_read_from_memory_where_a_branch_skips_it(tmp_path: Path):
    # Online softmax writes its one pass, the two it replaces and the two around each thread's own
    # maximum in `#if` branches: each fills the registers in its branch, and the pass that writes
    # the output, after them, reads them.
    softmax = copy(tmp_path, EXAMPLES / "softmax.cu")

    result = cutune("templatize", str(softmax), "--kernel", "softmax_kernel")

    assert result.returncode == 0, result.stderr
    out = result.stdout
    declared = out.index("x_kept[SOFTMAX_ROW_REGS];")
    assert declared < out.index("#if SOFTMAX_ONLINE == 0"), "the registers are declared above both branches"
    # Each filling pass loads every kept vector first, then computes from the registers.
    assert out.count("x_kept[j_kept] = *reinterpret_cast<const half_bits*>(x + j_vec);") == 3, "the max passes and the one pass each fill them"
    assert out.count("half_bits x_v_bits = x_kept[j_kept];") == 6, "the max, sum, one and output passes read them"
    assert "the loops at lines 72 and 80 keep up to `SOFTMAX_ROW_REGS`" in result.stderr

    # Without `CENTRED` the last pass is the row's first: it loads the row from memory itself
    # rather than take what the passes under `CENTRED` kept.
    branches = copy(tmp_path, FIXTURES / "keep_row_branches.cu")
    result = cutune("templatize", str(branches), "--kernel", "scale_row")

    assert result.returncode == 0, result.stderr
    out = result.stdout
    last_pass = out[out.rindex("#if SCALE_ROW_VEC == 1"):]
    fill = "x_kept[i_kept] = *reinterpret_cast<const float_bits*>(x + i_vec);"
    assert out.count(fill) == 2 and last_pass.count(fill) == 1, "the first pass and the last load the row"


def test_a_warp_per_row_through_cooperative_groups_is_vectorised_and_keeps_its_row(tmp_path: Path):
    source = copy(tmp_path, FIXTURES / "warp_rows.cu")

    result = cutune("templatize", str(source), "--kernel", "warp_row_rms")

    assert result.returncode == 0, result.stderr
    assert "applied: vectorize: loop(s) at line 16, 18 load and store `WARP_ROW_RMS_VEC` elements" in result.stderr
    assert "the loops at lines 16 and 18 keep up to `WARP_ROW_RMS_ROW_REGS` vectors of the row in registers" in result.stderr
    # Each lane starts where its scalar loop would, times the width, and steps by the tile.
    assert "for (int i_vec = i_head + (warp.thread_rank() + WARP_ROW_RMS_ROW_REGS * warp.size()) * WARP_ROW_RMS_VEC;" in result.stdout
    assert "i_vec += warp.size() * WARP_ROW_RMS_VEC) {" in result.stdout


def test_short_rows_get_several_rows_per_block_where_the_launch_passes_the_row_count(tmp_path: Path):
    source = copy(tmp_path, FIXTURES / "rows_per_block.cu")

    result = cutune("templatize", str(source), "--kernel", "rms_rows", "--write")

    assert result.returncode == 0, result.stderr
    assert "applied: rows-per-block: each block works on `RMS_ROWS_ROWS_PER_BLOCK` rows" in result.stderr
    rewritten = source.read_text()
    # The body reads `blockIdx` unchanged: the row's own index shadows it, and rows past the
    # count return before any barrier.
    assert "const uint3 blockIdx =\n        make_uint3(::blockIdx.x * RMS_ROWS_ROWS_PER_BLOCK + threadIdx.y, ::blockIdx.y, ::blockIdx.z);" in rewritten
    assert "    if (blockIdx.x >= rows) return;" in rewritten
    assert "float (&partial)[THREADS] = partial_of_rows[threadIdx.y];" in rewritten
    kernel_text = rewritten[rewritten.index("__global__"):]
    assert "__syncthreads();" not in kernel_text
    # The three of the original and the three of the shuffles' branch.
    assert kernel_text.count("rms_rows_row_barrier();") == 6
    assert "rms_rows<<<(rows + RMS_ROWS_ROWS_PER_BLOCK - 1) / RMS_ROWS_ROWS_PER_BLOCK, dim3(THREADS, RMS_ROWS_ROWS_PER_BLOCK)>>>" in rewritten
    [kernel] = tomllib.loads((tmp_path / "rows_per_block.cutune.toml").read_text())["kernels"]
    assert kernel["grid"] == ["ceil_div(rows, RMS_ROWS_ROWS_PER_BLOCK)"]
    assert kernel["block"] == ["THREADS", "RMS_ROWS_ROWS_PER_BLOCK"]
    rows = next(p for p in kernel["params"] if p["name"] == "RMS_ROWS_ROWS_PER_BLOCK")
    assert (rows["default"], rows["values"]) == (1, [1, 2, 4, 8, 16, 32])
    # A row of one warp syncs as a warp; longer rows need one of the 16 named barriers each.
    assert "RMS_ROWS_ROWS_PER_BLOCK <= 16 || THREADS == 32" in kernel["restrictions"]
    # Every number of rows compiles, each with its own shared arrays.
    checked = json.loads(cutune("check", str(source), "--kernel", "rms_rows", "--sample", "24", "--json").stdout)
    assert checked["failed"] == 0, checked["results"]
    by_rows = {dict(r["config"])["RMS_ROWS_ROWS_PER_BLOCK"]: r for r in checked["results"] if dict(r["config"])["THREADS"] == 128}
    assert len(by_rows) >= 2, checked["results"]

    for fixture, kernel_name, why in [
        ("rows_per_block_refused.cu", "row_max", "refused: rows-per-block: the launch at line 21 does not pass the kernel its grid's block count `rows`"),
        ("rows_per_block_early_return.cu", "scaled_rows", "refused: rows-per-block: a thread may return at line 10, before a later `__syncthreads()`"),
    ]:
        refused = copy(tmp_path, FIXTURES / fixture)
        result = cutune("templatize", str(refused), "--kernel", kernel_name)
        assert result.returncode == 0, result.stderr
        assert why in result.stderr, result.stderr
        assert "ROWS_PER_BLOCK" not in result.stdout


def test_a_kernel_whose_launch_is_fixed_gets_its_loops_unroll_factors_and_is_ready_to_tune(tmp_path: Path):
    source = copy(tmp_path, FIXTURES / "loop_unroll.cu")

    written = cutune("templatize", str(source), "--kernel", "block_min", "--write")

    assert written.returncode == 0, written.stderr
    assert "loop-unroll: the launch makes no choice that may vary alone" in written.stderr
    text = source.read_text()
    # The loop over `d` (innermost, run-time trip count) and the one over `r`; not the loop that
    # fills the thread's array, nor the one of a constant trip count, nor the outer loop.
    assert "        #if BLOCK_MIN_UNROLL_D > 0\n        #pragma unroll block_min_unroll_d\n        #endif\n        for (int d = blockDim.x;" in text
    assert "    #if BLOCK_MIN_UNROLL_R > 0\n    #pragma unroll block_min_unroll_r\n    #endif\n    for (int r = 0;" in text
    assert text.count("#pragma unroll") == 2
    spec = tomllib.loads((tmp_path / "loop_unroll.cutune.toml").read_text())
    params = {p["name"]: p for p in spec["kernels"][0]["params"]}
    assert params["BLOCK_MIN_UNROLL_D"]["default"] == 0 and params["BLOCK_MIN_UNROLL_D"]["values"] == [0, 1, 2, 4, 8]
    assert set(params) == {"BLOCK_MIN_UNROLL_D", "BLOCK_MIN_UNROLL_R", "fast_math", "max_registers"}

    checked = cutune("check", str(source), "--kernel", "block_min", "--all", "--json")
    assert checked.returncode == 0, checked.stderr
    report = json.loads(checked.stdout)
    assert report["space_size"] == 5 * 5 * 2 * 5 and report["compiled"] == 250 and report["failed"] == 0

    again = cutune("templatize", str(source), "--kernel", "block_min", "--diff")
    assert again.returncode == 0 and again.stdout == "", again.stdout

    fresh = tmp_path / "fresh"
    fresh.mkdir()
    copy(fresh, FIXTURES / "loop_unroll.cu")
    survey = cutune("survey", str(fresh), "--json")
    assert survey.returncode == 0, survey.stderr
    [kernel] = json.loads(survey.stdout)["kernels"]
    assert kernel["stage"] == "ready" and kernel["execution_params"] == 2, kernel
