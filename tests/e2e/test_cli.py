"""The command-line subcommands, run as a user runs them: the real binary, its output, its exit code."""

import json
import os
import subprocess

from editor import CUTUNE_BIN, REPO



def cutune(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([str(CUTUNE_BIN), *args], capture_output=True, text=True, timeout=timeout)


def example(name: str) -> str:
    return str(REPO / "examples" / name)


def test_version_names_the_program():
    result = cutune("--version")
    assert result.returncode == 0
    assert result.stdout.startswith("cutune 0.")


def test_kernels_lists_the_example_kernel_its_launch_and_tunable_sites():
    result = cutune("kernels", example("rmsnorm.cu"))
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "1 kernel, 0 device functions, 1 launch site" in out.splitlines()[0]
    assert "kernel rmsnorm_kernel at" in out
    assert "param in: const half* __restrict__" in out
    assert "shared: float partial[BLOCK_SIZE] (1.0 KiB)" in out
    assert "launch at 54:3-54:80: <<<rows, BLOCK_SIZE>>> (256 threads per block)" in out
    assert "tunable at 23:20-23:23: `#define` constant `BLOCK_SIZE` = 256" in out
    assert "tunable at 32:1-32:17: `#pragma unroll` `#pragma unroll 4` = 4" in out


def test_kernels_json_is_the_whole_model():
    result = cutune("kernels", "--json", example("transpose.cu"))
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["analysis"] == "complete"
    (kernel,) = report["model"]["kernels"]
    assert kernel["name"] == "transpose_kernel"
    assert [s["bytes"] for s in kernel["shared"]] == [32 * 32 * 4]
    (launch,) = report["model"]["launches"]
    assert launch["block"]["extent"] == {"x": 32, "y": 8, "z": 1}
    assert launch["grid"]["text"] == "grid"
    assert report["findings"] == []


def test_kernels_reports_findings_with_file_line_and_code(tmp_path):
    source = tmp_path / "big.cu"
    source.write_text("__global__ void k(float* x) {}\nvoid h(float* p) { k<<<1, 2048>>>(p); }\n")
    result = cutune("kernels", str(source))
    assert result.returncode == 0, result.stderr
    assert f"{source}:2:27: error[block-too-large]: launch of `k` asks for 2048 threads per block" in result.stdout


def test_kernels_refuses_binary_files_naming_the_file_and_offset(tmp_path):
    source = tmp_path / "blob.cu"
    source.write_bytes(b"__global__\n\xff\xfe")
    result = cutune("kernels", str(source))
    assert result.returncode == 1
    assert result.stdout == ""
    assert f"{source}:2: not UTF-8 text (invalid byte 0xff at offset 11)" in result.stderr


def test_kernels_on_a_missing_file_says_so(tmp_path):
    result = cutune("kernels", str(tmp_path / "nope.cu"))
    assert result.returncode == 1
    assert "cannot read" in result.stderr and "nope.cu" in result.stderr


def test_bench_measures_analysis_latency_and_server_memory():
    result = cutune("bench", "--lines", "300", "--files", "3", "--repeats", "5", "--json", timeout=120)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["file_lines"] >= 300
    assert report["kernels"] == report["launches"] > 0
    for key in ("parse_only", "full_analysis", "reparse_only_after_edit", "one_char_edit", "hover_over_stdio", "symbols_over_stdio"):
        timing = report[key]
        assert timing["samples"] == 5
        assert 0 < timing["median_us"] <= timing["p99_us"] <= timing["max_us"], key
    assert report["files_open"] == 3
    assert report["server_peak_rss_mib"] > 1


def test_ceilings_without_a_gpu_say_so_and_fail(tmp_path):
    if os.path.exists("/dev/nvidia0"):
        return  # a GPU machine: measuring is the GPU suite's
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path))
    for args in ([], ["--json", "--refresh"]):
        result = subprocess.run([str(CUTUNE_BIN), "ceilings", *args], capture_output=True, text=True, timeout=60, env=env)
        assert result.returncode == 1, result.stdout + result.stderr
        assert result.stdout == ""
        assert result.stderr.startswith("error: no CUDA device was found, so there are no ceilings to measure: no CUDA driver found"), result.stderr
        assert "panicked" not in result.stderr
    assert list(tmp_path.iterdir()) == [], "nothing is cached without a measurement"
