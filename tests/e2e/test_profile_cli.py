"""`cutune profile` through the real binary, without a GPU: imported profiles ranked and mapped
to the workspace's kernels, the errors a user can meet, and captures read back into specs."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import struct
import subprocess
import tomllib
from pathlib import Path

from captures import Buffer, floats, write_capture
from editor import CUTUNE_BIN, REPO

# The custom kernel of the GPU suite's PyTorch program: its sizes come from tensors.
EXTENSION = REPO / "tests" / "gpu" / "profile" / "inline_scale.cu"
SCALE_ROWS = "_Z10scale_rowsPfPKfS1_ii"


def cutune(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    # The workspaces lie outside the repository, whose .venv holds pip's NVRTC.
    env = {**os.environ, "VIRTUAL_ENV": str(REPO / ".venv")}
    return subprocess.run([str(CUTUNE_BIN), *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=300)


def workspace(tmp_path: Path) -> Path:
    (tmp_path / ".git").mkdir()
    shutil.copy(EXTENSION, tmp_path / "scale.cu")
    return tmp_path


def torch_trace(path: Path) -> Path:
    events = [
        {"ph": "X", "cat": "kernel", "name": "scale_rows(float*, float const*, float const*, int, int)", "dur": 30.0},
        {"ph": "X", "cat": "kernel", "name": "scale_rows(float*, float const*, float const*, int, int)", "dur": 30.0},
        {"ph": "X", "cat": "kernel", "name": "void at::native::vectorized_elementwise_kernel<4>(int)", "dur": 20.0},
        {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD", "dur": 20.0},
        {"ph": "X", "cat": "cpu_op", "name": "aten::softmax", "dur": 500.0},
    ]
    path.write_text(json.dumps({"traceEvents": events}))
    return path


def test_an_imported_torch_trace_is_ranked_and_mapped_to_the_workspace(tmp_path: Path):
    root = workspace(tmp_path)
    trace = torch_trace(root / "trace.json")

    result = cutune("profile", "--import", str(trace), cwd=root)

    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "100.0 µs of GPU time, 80.0 µs in 2 kernels" in lines[0], result.stdout
    scale = next(line for line in lines if "scale_rows" in line)
    assert scale.split()[:2] == ["60.0%", "60.0"] and scale.rstrip().endswith("scale.cu:5"), scale
    other = next(line for line in lines if "at::native::vectorized_elementwise" in line)
    assert "20.0%" in other and other.rstrip().endswith("not in the workspace"), other

    as_json = json.loads(cutune("profile", "--import", str(trace), "--json", cwd=root).stdout)
    [first, second] = as_json["ranking"]["kernels"]
    assert (first["kernel"]["base"], first["launches"], round(first["share"], 3)) == ("scale_rows", 2, 0.6)
    assert first["source"]["file"].endswith("scale.cu") and second["source"] is None
    assert (root / ".cutune").is_dir(), "the profile is kept in the workspace's store"


def test_an_nsys_sqlite_export_is_ranked(tmp_path: Path):
    root = workspace(tmp_path)
    export = root / "run.sqlite"
    with sqlite3.connect(export) as db:
        db.executescript(
            """CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
               CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, demangledName INTEGER, shortName INTEGER);
               INSERT INTO StringIds VALUES (1, 'scale_rows(float*, float const*, float const*, int, int)'), (2, 'gemm_kernel');
               INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (0, 3000, 1, 1), (5000, 6000, 2, 2);"""
        )

    result = cutune("profile", "--import", str(export), "--json", cwd=root)

    assert result.returncode == 0, result.stderr
    kernels = json.loads(result.stdout)["ranking"]["kernels"]
    assert [(k["kernel"]["base"], round(k["share"], 2)) for k in kernels] == [("scale_rows", 0.75), ("gemm_kernel", 0.25)]


def test_what_cannot_be_profiled_is_said_with_the_programs_own_status(tmp_path: Path):
    root = workspace(tmp_path)

    no_command = cutune("profile", cwd=root)
    assert no_command.returncode != 0 and "no command to profile: give it after `--`" in no_command.stderr

    failing = cutune("profile", "--", "sh", "-c", "echo own output; exit 3", cwd=root)
    assert failing.returncode != 0
    assert "own output" in failing.stdout + failing.stderr, "the program's output is passed through"
    assert "failed (exit status: 3); its profile was not kept" in failing.stderr, failing.stderr

    no_cuda = cutune("profile", "--", "true", cwd=root)
    assert no_cuda.returncode != 0 and "never initialised CUDA" in no_cuda.stderr, no_cuda.stderr

    missing = cutune("profile", "--import", "nowhere.json", cwd=root)
    assert missing.returncode != 0 and "nowhere.json" in missing.stderr

    both = cutune("profile", "--import", str(torch_trace(root / "t.json")), "--capture", "1", cwd=root)
    assert both.returncode != 0 and "cannot be used with" in both.stderr
    assert not (root / ".cutune" / "captures").exists()


def capture_scale_rows(root: Path, rows: int, cols: int, name: str = "scale_rows-0.cutcap") -> Path:
    path = root / ".cutune" / "captures" / name
    before_out, after_out = floats(rows * cols, 0.0), floats(rows * cols, 0.5)
    data_in, weight = floats(rows * cols, 1.0), floats(cols, 0.5)
    args = [Buffer(before_out, after_out), Buffer(data_in, data_in), Buffer(weight, weight), struct.pack("<i", rows), struct.pack("<i", cols)]
    write_capture(path, SCALE_ROWS, (rows, 1, 1), (256, 1, 1), args)
    return path


def test_templatize_fills_the_spec_from_a_captured_launch_and_it_compiles(tmp_path: Path):
    root = workspace(tmp_path)
    capture_scale_rows(root, rows=96, cols=160)

    result = cutune("templatize", "scale.cu", "--kernel", "scale_rows", "--write", cwd=root)

    assert result.returncode == 0, result.stderr
    assert "applied: capture: from the launch captured in .cutune/captures/scale_rows-0.cutcap" in result.stderr, result.stderr
    [kernel] = tomllib.loads((root / "scale.cutune.toml").read_text())["kernels"]
    assert kernel["shapes"] == [{"cols": 160, "rows": 96}]
    # `rows = in.size(0)` is a size of the source's too, so rows per block is a choice.
    assert kernel["grid"] == ["ceil_div(rows, SCALE_ROWS_ROWS_PER_BLOCK)"]
    args = {a["name"]: a for a in kernel["args"]}
    assert (args["out"]["length"], args["in"]["length"], args["weight"]["length"]) == ("rows * cols", "rows * cols", "cols")
    assert (args["rows"]["value"], args["cols"]["value"]) == ("rows", "cols")
    assert "compare" not in args["out"], "an element per thread is compared element by element"
    assert kernel["captures"] == [{"file": ".cutune/captures/scale_rows-0.cutcap", "shape": {"cols": 160, "rows": 96}}]
    checked = cutune("spec", "check", "scale.cutune.toml", cwd=root)
    assert checked.returncode == 0 and "0 errors" in checked.stdout, checked.stdout
    compiled = cutune("check", "scale.cu", "--kernel", "scale_rows", "--sample", "4", "--json", cwd=root)
    assert compiled.returncode == 0, compiled.stderr


def test_a_broken_capture_is_named_and_the_spec_left_to_the_source(tmp_path: Path):
    root = workspace(tmp_path)
    path = capture_scale_rows(root, rows=8, cols=8)
    path.write_bytes(path.read_bytes()[:-12])

    result = cutune("templatize", "scale.cu", "--kernel", "scale_rows", "--diff", cwd=root)

    assert result.returncode == 0, result.stderr
    assert "refused: capture: not used:" in result.stderr and "scale_rows-0.cutcap" in result.stderr, result.stderr
    assert "captures" not in result.stdout


def test_a_tuned_kernel_shows_what_it_saves_the_program(tmp_path: Path):
    (tmp_path / ".git").mkdir()
    shutil.copy(REPO / "examples" / "rmsnorm.cu", tmp_path / "rmsnorm.cu")
    spec = REPO / "bench" / "kernel_tuner" / "rmsnorm_8192.cutune.toml"
    recording = REPO / "tests" / "fixtures" / "replay" / "rmsnorm_8192_h100.t4.json"
    tuned = cutune("tune", "rmsnorm.cu", "--kernel", "rmsnorm_kernel", "--spec", str(spec), "--replay", str(recording), cwd=tmp_path)
    assert tuned.returncode == 0 and "1.95× the original" in tuned.stdout, tuned.stdout + tuned.stderr
    events = [
        {"ph": "X", "cat": "kernel", "name": "rmsnorm_kernel(__half*, __half const*, __half const*, int, float)", "dur": 50.0},
        {"ph": "X", "cat": "kernel", "name": "gemm", "dur": 50.0},
    ]
    (tmp_path / "trace.json").write_text(json.dumps({"traceEvents": events}))

    result = cutune("profile", "--import", "trace.json", cwd=tmp_path)

    assert result.returncode == 0, result.stderr
    line = next(line for line in result.stdout.splitlines() if "rmsnorm_kernel" in line)
    # Amdahl: half the GPU time, 1.946× faster, saves 0.5 × (1 − 1/1.946) of it.
    assert line.rstrip().endswith("· tuned 1.95×: saves 24.3% of the GPU time"), line
    kernels = json.loads(cutune("profile", "--import", "trace.json", "--json", cwd=tmp_path).stdout)["ranking"]["kernels"]
    ranked = next(k for k in kernels if k["kernel"]["base"] == "rmsnorm_kernel")
    assert "tuned" not in next(k for k in kernels if k["kernel"]["base"] == "gemm")
    assert abs(ranked["tuned"]["gain"] - 0.5 * (1 - 1 / ranked["tuned"]["speedup"])) < 1e-9


def test_a_capture_gives_a_library_kernel_its_type_block_size_and_sizes(tmp_path: Path):
    # The library instantiates the reduction for several types (`float` first, its default from
    # source) and dispatches the block size by a switch; nothing in the workspace says which the
    # program runs.
    (tmp_path / ".git").mkdir()
    shutil.copy(REPO / "tests" / "fixtures" / "workspace" / "dispatched_reduction" / "block_sum.cu", tmp_path / "block_sum.cu")
    static = cutune("templatize", "block_sum.cu", "--kernel", "block_sum", "--diff", cwd=tmp_path)
    assert 'template_args = ["float", "blockSize"]' in static.stdout and '"blockSize == threads"' in static.stdout, static.stdout
    n, blocks = 1 << 16, 64
    ones = struct.pack(f"<{n}i", *([1] * n))
    sums = struct.pack(f"<{blocks}i", *([n // blocks] * blocks))
    args = [Buffer(ones, ones), Buffer(bytes(4 * blocks), sums), struct.pack("<I", n)]
    # block_sum<int, 128u>(int const*, int*, unsigned int), launched with 128 threads.
    write_capture(tmp_path / ".cutune" / "captures" / "block_sum-0.cutcap", "_Z9block_sumIiLj128EEvPKT_PS0_j", (blocks, 1, 1), (128, 1, 1), args)
    # The program's final pass: block_sum<int, 64u> over the 64 partial sums, another kernel.
    final = [Buffer(sums, sums), Buffer(bytes(4), struct.pack("<i", n)), struct.pack("<I", blocks)]
    write_capture(tmp_path / ".cutune" / "captures" / "block_sum-1.cutcap", "_Z9block_sumIiLj64EEvPKT_PS0_j", (1, 1, 1), (64, 1, 1), final)

    result = cutune("templatize", "block_sum.cu", "--kernel", "block_sum", "--write", cwd=tmp_path)

    assert result.returncode == 0, result.stderr
    assert "`blockSize` starts from 128, the program's value (the source suggested 256)" in result.stderr, result.stderr
    assert "block_sum-1.cutcap launched another instantiation, `block_sum<int, (unsigned int)64>`" in result.stderr, result.stderr
    [kernel] = tomllib.loads((tmp_path / "block_sum.cutune.toml").read_text())["kernels"]
    assert kernel["template_args"] == ["int", "blockSize"]
    assert kernel["shared_bytes"] == "threads * 4", "sizeof(T) of the captured type"
    assert kernel["restrictions"] == ["blockSize == threads"]
    defaults = {p["name"]: p["default"] for p in kernel["params"]}
    assert (defaults["blockSize"], defaults["threads"]) == (128, 128)
    # The block sizes the switch instantiates, and no other: the kernel is known to work there.
    assert next(p for p in kernel["params"] if p["name"] == "blockSize")["values"] == [64, 128, 256]
    args = {a["name"]: a for a in kernel["args"]}
    assert (args["in"]["dtype"], args["in"]["length"], args["out"]["length"], args["n"]["value"]) == ("i32", "n", "64", "size")
    # One partial sum per block: another block size partitions the sum differently.
    assert args["out"]["compare"] == "sum" and "compare" not in args["in"]
    assert kernel["shapes"] == [{"size": n}]
    checked = cutune("spec", "check", "block_sum.cutune.toml", cwd=tmp_path)
    assert checked.returncode == 0 and "0 errors, 0 warnings" in checked.stdout, checked.stdout
    compiled = cutune("check", "block_sum.cu", "--kernel", "block_sum", "--json", cwd=tmp_path)
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr


def test_a_launch_set_from_class_members_gets_its_block_size_sizes_and_types_from_captures(tmp_path: Path):
    # The estimator's block size and sample count are members its constructor sets. Run once
    # under `cutune profile`, the program says what they are, and the block size becomes a
    # parameter the grid follows. (The state type, a local alias of the launching function, the
    # source says itself: the capture agrees.)
    (tmp_path / ".git").mkdir()
    shutil.copy(REPO / "tests" / "fixtures" / "workspace" / "class_member_launch" / "estimator.cu", tmp_path / "estimator.cu")
    samples, block, grid = 4096, 128, 32
    captures = tmp_path / ".cutune" / "captures"
    states = bytes(8 * samples)
    # seed_states<CounterState>(CounterState*, unsigned int)
    write_capture(captures / "seed_states-0.cutcap", "_Z11seed_statesI12CounterStateEvPT_j", (grid, 1, 1), (block, 1, 1), [Buffer(states, bytes(range(256)) * (len(states) // 256)), struct.pack("<I", 1234)])
    counts, points = struct.pack(f"<{grid}I", *([100] * grid)), floats(2 * samples, 0.5)
    # count_inside(unsigned int*, float const*, unsigned int), with a count per thread in shared memory.
    write_capture(captures / "count_inside-0.cutcap", "_Z12count_insidePjPKfj", (grid, 1, 1), (block, 1, 1), [Buffer(bytes(4 * grid), counts), Buffer(points, points), struct.pack("<I", samples)], shared_bytes=4 * block)

    seeded = cutune("templatize", "estimator.cu", "--kernel", "seed_states", "--write", cwd=tmp_path)
    assert seeded.returncode == 0, seeded.stderr
    assert "(the source wrote `state_t`)" not in seeded.stderr, seeded.stderr
    assert "`m_block_size` = 128 (`m_block_size` is 128 in the program's captured launch)" in seeded.stderr, seeded.stderr
    counted = cutune("templatize", "estimator.cu", "--kernel", "count_inside", "--write", cwd=tmp_path)
    assert counted.returncode == 0, counted.stderr
    kernels = {k["name"]: k for k in tomllib.loads((tmp_path / "estimator.cutune.toml").read_text())["kernels"]}
    seed, count = kernels["seed_states"], kernels["count_inside"]
    assert seed["template_args"] == ["CounterState"]
    param = next(p for p in seed["params"] if p["name"] == "m_block_size")
    assert (param["kind"], param["default"], param["values"]) == ("launch", 128, [32, 64, 128, 256, 512, 1024])
    assert seed["block"] == ["m_block_size"]
    assert seed["grid"] == ["ceil_div(m_samples, m_block_size)"], "the grid follows the block"
    assert seed["shapes"] == [{"m_samples": samples}], "the work of the captured grid's whole blocks"
    states_spec = next(a for a in seed["args"] if a["name"] == "states")
    # A struct of 8 bytes per thread of whole blocks, as the program allocates it: every block
    # that divides the samples gives the same length, and the restriction says so.
    assert (states_spec["dtype"], states_spec["length"]) == ("u8", "ceil_div(m_samples, m_block_size) * m_block_size * 8"), states_spec
    assert "m_samples % m_block_size == 0" in seed["restrictions"], seed
    # One count per block: another block size would partition the counts differently, so the
    # program's launch is kept, with the values the source could not give.
    assert not any(p["kind"] == "launch" for p in count["params"]), count["params"]
    assert (count["grid"], count["block"], count["shared_bytes"]) == (["32"], ["128"], "512")
    assert count["shapes"] == [{"m_samples": samples}]
    args = {a["name"]: a for a in count["args"]}
    assert args["points"]["length"] == "2 * m_samples" and args["samples"]["value"] == "m_samples"
    checked = cutune("spec", "check", "estimator.cutune.toml", cwd=tmp_path)
    assert checked.returncode == 0 and "0 errors" in checked.stdout, checked.stdout
    # The macro-made specialisation of the shared array and `uint32_t` reach NVRTC.
    for kernel in ("seed_states", "count_inside"):
        compiled = cutune("check", "estimator.cu", "--kernel", kernel, "--sample", "3", "--json", cwd=tmp_path)
        assert compiled.returncode == 0, compiled.stdout + compiled.stderr


def test_a_cooperative_launch_with_occupancy_sizes_gets_its_block_from_a_capture(tmp_path: Path):
    # Launched through cudaLaunchCooperativeKernel with a block size the occupancy calculator
    # picks (`cudaOccupancyMaxPotentialBlockSize`) and as many blocks as it says fit: the source
    # says the grid, the capture the block, and the spec says the launch is cooperative.
    (tmp_path / ".git").mkdir()
    shutil.copy(REPO / "tests" / "fixtures" / "workspace" / "cooperative_launch" / "grid_sum.cu", tmp_path / "grid_sum.cu")
    before = cutune("templatize", "grid_sum.cu", "--kernel", "grid_sum", "--diff", cwd=tmp_path)
    assert before.returncode == 0, before.stderr
    # From the source alone: the blocks an SM holds, as tuning works them out for each
    # configuration, and the block's name, not the `0` it was declared with.
    assert '+grid = ["blocks_per_sm * sm_count"]\n+block = ["threads"]\n+shared_bytes = "threads * 4"\n+cooperative = true\n' in before.stdout, before.stdout
    count, grid, block = 4096, 264, 512
    values = floats(count, 0.25)
    partials_after = struct.pack(f"<{grid}f", *([1.0] * grid))
    # grid_sum(float const*, float*, float*, int)
    write_capture(tmp_path / ".cutune" / "captures" / "grid_sum-0.cutcap", "_Z8grid_sumPKfPfS1_i", (grid, 1, 1), (block, 1, 1), [Buffer(values, values), Buffer(bytes(4 * grid), partials_after), Buffer(bytes(4), struct.pack("<f", 1024.0)), struct.pack("<i", count)], shared_bytes=4 * block)

    result = cutune("templatize", "grid_sum.cu", "--kernel", "grid_sum", "--write", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    [kernel] = tomllib.loads((tmp_path / "grid_sum.cutune.toml").read_text())["kernels"]
    assert kernel["cooperative"] is True
    assert (kernel["grid"], kernel["block"], kernel["shared_bytes"]) == (["blocks_per_sm * sm_count"], ["threads"], "threads * 4")
    assert kernel["shapes"][0]["count"] == count
    # 264 blocks of 512 threads is 2 an SM, fewer than the 4 the block allows: what the
    # compiled kernel fits, which tuning works out for each configuration.
    assert "grid extent 0 `blocks_per_sm * sm_count` is 264 in the program's launch: the blocks the compiled kernel fits on an SM" in result.stderr, result.stderr
    # The partials, one a block, are read only after the grid's barrier: compared by their sum,
    # another block size may be tried, from the program's.
    partials = next(a for a in kernel["args"] if a["name"] == "partials")
    assert (partials["role"], partials["compare"], partials["length"]) == ("output", "sum", "blocks_per_sm * sm_count"), partials
    threads = next(p for p in kernel["params"] if p["name"] == "threads")
    assert (threads["kind"], threads["default"]) == ("launch", block), threads
    checked = cutune("spec", "check", "grid_sum.cutune.toml", cwd=tmp_path)
    assert checked.returncode == 0 and "0 errors" in checked.stdout, checked.stdout
    compiled = cutune("check", "grid_sum.cu", "--kernel", "grid_sum", "--sample", "2", "--json", cwd=tmp_path)
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr


def test_threads_of_their_own_index_follow_any_block_a_capture_gives(tmp_path: Path):
    # A graph's kernels, one thread per edge or vertex checked against its count, launched with
    # the block and grid a helper of the class hands back through references: the helper's
    # constant (`static const uint kMostThreads = 256;` of the class) is the block's choice.
    # Where the count is worked out on the host in a way no spec can say (`std::count`), the
    # source says neither grid nor block; a captured launch gives the block, and since each
    # thread takes its own index below the count, the grid follows whichever block is tried.
    (tmp_path / ".git").mkdir()
    for name in ("graph.cu", "graph_kernels.cuh"):
        shutil.copy(REPO / "tests" / "fixtures" / "workspace" / "distributed_threads" / name, tmp_path / name)
    shifted = cutune("templatize", "graph_kernels.cuh", "--kernel", "shift_ids", "--diff", cwd=tmp_path)
    assert shifted.returncode == 0, shifted.stderr
    assert "`kMostThreads` = 256 (`kMostThreads` is 256 in class `Graph`)" in shifted.stderr, shifted.stderr
    assert '+block = ["min(m_edges, kMostThreads)"]' in shifted.stdout, shifted.stdout
    before = cutune("templatize", "graph_kernels.cuh", "--kernel", "clear_flags", "--diff", cwd=tmp_path)
    assert before.returncode == 0, before.stderr
    assert '+grid = ["?"]\n+block = ["?"]' in before.stdout and "`std::count` is a member of a C++ type or namespace" in before.stdout, before.stdout

    count, block = 5000, 256
    flags = struct.pack(f"<{count}I", *([1] * count))
    # clear_flags(unsigned int*, unsigned int)
    write_capture(tmp_path / ".cutune" / "captures" / "clear_flags-0.cutcap", "_Z11clear_flagsPjj", ((count + block - 1) // block, 1, 1), (block, 1, 1), [Buffer(flags, bytes(4 * count)), struct.pack("<I", count)])
    result = cutune("templatize", "graph_kernels.cuh", "--kernel", "clear_flags", "--write", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "each thread takes its own flat index below `count` and shares nothing with its block" in result.stderr, result.stderr
    [kernel] = tomllib.loads((tmp_path / "graph_kernels.cutune.toml").read_text())["kernels"]
    assert (kernel["grid"], kernel["block"]) == (["ceil_div(count, kMostThreads)"], ["kMostThreads"]), (kernel["grid"], kernel["block"])
    param = next(p for p in kernel["params"] if p["name"] == "kMostThreads")
    assert (param["kind"], param["default"], param["values"]) == ("launch", block, [32, 64, 128, 256, 512, 1024])
    assert "grid" not in kernel.get("unknown", {}) and "block" not in kernel.get("unknown", {}), kernel.get("unknown")
    checked = cutune("spec", "check", "graph_kernels.cutune.toml", cwd=tmp_path)
    assert checked.returncode == 0 and "0 errors" in checked.stdout, checked.stdout
    compiled = cutune("check", "graph_kernels.cuh", "--kernel", "clear_flags", "--sample", "2", "--json", cwd=tmp_path)
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr
