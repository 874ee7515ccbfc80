"""`cutune doctor` as a user runs it: from the repository, whose .venv holds pip's NVRTC."""

import os
import subprocess

from editor import CUTUNE_BIN, REPO


def doctor(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(CUTUNE_BIN), "doctor", *args], capture_output=True, text=True, timeout=120, cwd=REPO, env=env
    )


def test_doctor_finds_nvrtc_in_the_project_venv_and_compiles():
    result = doctor()
    assert result.returncode == 0, (
        "cutune doctor found no usable NVRTC; run scripts/test (it installs pip's NVRTC into .venv) "
        f"or set CUTUNE_NVRTC.\n{result.stdout}\n{result.stderr}"
    )
    assert "nvidia/cuda_nvrtc/lib/libnvrtc.so" in result.stdout or "CUTUNE_NVRTC" in os.environ, result.stdout
    assert "  test compile: sm_" in result.stdout, result.stdout
    assert "registers" in result.stdout, result.stdout


def test_doctor_names_a_wrong_cutune_nvrtc_and_exits_non_zero():
    env = dict(os.environ, CUTUNE_NVRTC="/nonexistent/lib")
    result = doctor(env=env)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "CUTUNE_NVRTC: /nonexistent/lib: no such file" in result.stdout, result.stdout
    assert "pip install nvidia-cuda-nvrtc-cu12 nvidia-cuda-runtime-cu12" in result.stdout, result.stdout
    assert "panicked" not in result.stderr, result.stderr
