"""`cutune compare` as a user runs it on a machine without a GPU: what it checks before it needs
the GPU (the candidate's file, kernel and parameters), and the plain refusal without one. The
comparisons themselves are the GPU suite's (`tests/gpu/compare_suite.sh`)."""

import os
import subprocess

from editor import CUTUNE_BIN, REPO

CANDIDATES = REPO / "tests" / "fixtures" / "compare"


def compare(candidate: str) -> subprocess.CompletedProcess:
    command = [str(CUTUNE_BIN), "compare", "examples/rmsnorm.cu", "--kernel", "rmsnorm_kernel", "--candidate", candidate]
    return subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=REPO, env={**os.environ, "VIRTUAL_ENV": str(REPO / ".venv")})


def test_a_candidate_with_other_parameters_is_refused_with_both_signatures():
    result = compare(str(CANDIDATES / "rmsnorm_other_signature.cu"))
    assert result.returncode == 1
    assert "rmsnorm_other_signature.cu: its `rmsnorm_kernel` does not take what `rmsnorm_kernel` of examples/rmsnorm.cu takes" in result.stderr, result.stderr
    assert "candidate: __global__ void rmsnorm_kernel(half* __restrict__ out, const half* __restrict__ in, const float* __restrict__ weight" in result.stderr
    assert "original:  __global__ void rmsnorm_kernel(half* __restrict__ out, const half* __restrict__ in, const half* __restrict__ weight" in result.stderr


def test_a_missing_candidate_file_or_kernel_is_named():
    missing = compare("nowhere.cu")
    assert missing.returncode == 1 and "nowhere.cu: no such file" in missing.stderr, missing.stderr
    unknown = compare(f"{CANDIDATES / 'rmsnorm_fast.cu'}:rmsnorm_slow")
    assert unknown.returncode == 1 and "rmsnorm_fast.cu: no kernel `rmsnorm_slow` is defined there" in unknown.stderr, unknown.stderr


def test_without_a_gpu_a_valid_candidate_is_refused_plainly():
    if os.path.exists("/dev/nvidia0"):
        return  # a GPU machine: the comparison itself is the GPU suite's
    result = compare(f"{CANDIDATES / 'rmsnorm_fast.cu'}:rmsnorm_fast")
    assert result.returncode == 1
    assert "no CUDA driver found" in result.stderr and "a comparison runs both kernels: it needs the GPU" in result.stderr, result.stderr
    assert "panicked" not in result.stderr
