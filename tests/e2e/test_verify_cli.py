"""`cutune verify` as a user runs it on a machine without a GPU: bad arguments are named before
anything starts, and the missing driver is said plainly. The live stages run in the GPU suite
(tests/gpu/fault_suite.sh)."""

import os
import subprocess

from editor import CUTUNE_BIN, REPO


def verify(*args: str, workspace) -> subprocess.CompletedProcess:
    command = [str(CUTUNE_BIN), "verify", "examples/rmsnorm.cu", "--kernel", "rmsnorm_kernel", "--workspace", str(workspace), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=REPO)


def test_without_a_gpu_verify_says_so(tmp_path):
    if os.path.exists("/dev/nvidia0"):
        return  # a GPU machine: the live path is the GPU suite's
    result = verify(workspace=tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "no CUDA driver found" in result.stderr, result.stderr
    assert "panicked" not in result.stderr


def test_unknown_stages_and_parameters_are_named(tmp_path):
    result = verify("--stages", "smoke,bogus", workspace=tmp_path)
    assert result.returncode == 1
    assert "unknown stage `bogus`: the stages are smoke, shapes, numerics, determinism, edges" in result.stderr, result.stderr

    result = verify("--config", "BLOCK=512", workspace=tmp_path)
    assert result.returncode == 1
    assert "--config: `BLOCK` is not a parameter of this kernel (its parameters: BLOCK_SIZE, RMSNORM_UNROLL, RMSNORM_VEC, RMSNORM_ROW_REGS, RMSNORM_WARP_SHUFFLE, fast_math, max_registers)" in result.stderr, result.stderr

    result = verify("--config", "BLOCK_SIZE=big", workspace=tmp_path)
    assert result.returncode == 1
    assert "--config: `BLOCK_SIZE=big`: the value must be an integer" in result.stderr, result.stderr

    result = verify("--config", "BLOCK_SIZE", workspace=tmp_path)
    assert result.returncode == 1
    assert "--config: `BLOCK_SIZE` is not NAME=VALUE" in result.stderr, result.stderr
