"""`cutune slice`: the device slice on stdout, notes on stderr, flags from compile_commands.json."""

import json
import shutil
import subprocess

from editor import CUTUNE_BIN, REPO

FIXTURES = REPO / "tests" / "fixtures" / "slice"


def cutune(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(CUTUNE_BIN), *args], capture_output=True, text=True, timeout=60)


def test_slice_prints_device_code_and_notes_dropped_host_includes():
    source = FIXTURES / "torch_binding.cu"
    result = cutune("slice", str(source), "--kernel", "rmsnorm_kernel")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "#include <cuda_fp16.h>" in out
    assert "__device__ __forceinline__ float warp_reduce_sum" in out
    assert "#ifndef BLOCK_SIZE\n#define BLOCK_SIZE 256\n#endif" in out
    for host_code in ("torch/extension.h", "PYBIND11_MODULE", "int main", "<<<", "CHECK_CUDA"):
        assert host_code not in out
    assert f"{source}:3: note: dropped #include <torch/extension.h>: PyTorch host header" in result.stderr
    assert f"{source}:7: note: dropped #include <vector>" in result.stderr


def test_slice_reports_host_functions_the_kernel_calls():
    source = FIXTURES / "host_call.cu"
    result = cutune("slice", str(source), "--kernel", "broken")
    assert result.returncode == 0, result.stderr
    assert f"{source}:14: note: unresolved `host_square`" in result.stderr
    assert "is a host function" in result.stderr
    assert "float host_square" not in result.stdout
    assert "__device__ float device_cube" in result.stdout


def test_slice_takes_include_dirs_and_defines_from_compile_commands(tmp_path):
    (tmp_path / "include").mkdir()
    (tmp_path / "include" / "tile.cuh").write_text("#pragma once\n")
    source = tmp_path / "src" / "k.cu"
    source.parent.mkdir()
    source.write_text('#include "tile.cuh"\n__global__ void k(float* x) { x[0] = TILE; }\n')
    build = tmp_path / "build"
    build.mkdir()
    entry = {"directory": str(build), "file": "../src/k.cu", "command": "nvcc -I ../include -DTILE=64 -DUNUSED -c ../src/k.cu"}
    (build / "compile_commands.json").write_text(json.dumps([entry]))
    result = cutune("slice", str(source), "--kernel", "k")
    assert result.returncode == 0, result.stderr
    # The header is found through the include dir and inlined (it holds nothing the kernel uses).
    assert result.stdout.splitlines()[:2] == ["#define TILE 64", "__global__ void k(float* x) { x[0] = TILE; }"]
    assert result.stderr == ""


def test_slice_of_an_unknown_kernel_fails_naming_the_kernels():
    result = cutune("slice", str(FIXTURES / "two_kernels.cu"), "--kernel", "third")
    assert result.returncode == 1
    assert "no kernel `third`; the file's kernels are first, second" in result.stderr


def test_conditionals_on_the_macros_nvrtc_defines_are_decided_so_the_slice_stays_whole(tmp_path):
    # `#ifdef __CUDACC__ / __host__ __device__ / #endif` before functions of a shared header,
    # one of them used and the next not: the slice used to keep an `#endif` without its `#if`.
    folder = tmp_path / "device_branches"
    shutil.copytree(FIXTURES / "device_branches", folder)
    (tmp_path / ".cutune").write_text("")
    source = folder / "saturate.cu"
    result = cutune("slice", str(source), "--kernel", "saturate")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    opened = [line for line in out.splitlines() if line.startswith("#if")]
    closed = [line for line in out.splitlines() if line.startswith("#endif")]
    assert len(opened) == len(closed) == 1, out
    assert "__CUDACC__" not in out and "__CUDA_ARCH__" not in out
    assert "clamp_to(const T &value, const T &low, const T &high)" in out and "magnitude(const float &value)" in out
    assert "#define SATURATION 1.0f" in out and "2.0f" not in out, "the device branch of `#if defined(__CUDA_ARCH__)`"
    assert "<algorithm>" not in result.stderr, "the host-only include is not even a dropped one"
    compiled = cutune("check", str(source), "--kernel", "saturate", "--sample", "2", "--json")
    assert compiled.returncode == 0, compiled.stderr


def test_host_time_units_in_device_code_get_glibcs_value_and_compile(tmp_path):
    # `clock()` scaled by `CLOCKS_PER_SEC` of `<ctime>`, which NVRTC cannot include: glibc's value,
    # as an nvcc build sees it.
    shutil.copy(FIXTURES / "timed_delay.cu", tmp_path / "timed_delay.cu")
    (tmp_path / ".cutune").write_text("")
    source = tmp_path / "timed_delay.cu"
    result = cutune("slice", str(source), "--kernel", "wait_nanoseconds")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("#define CLOCKS_PER_SEC ((clock_t) 1000000)\n"), result.stdout
    compiled = cutune("check", str(source), "--kernel", "wait_nanoseconds", "--sample", "1", "--json")
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr
