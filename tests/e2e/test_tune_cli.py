"""`cutune tune` and `cutune bench-search` as a user runs them, on a machine without a GPU: the
plain refusal without a driver, replays of recorded measurements (labelled as replays),
resuming from the results database, and the search strategies' efficiency report."""

import json
import os
import sqlite3
import subprocess

from editor import CUTUNE_BIN, REPO

SPEC = REPO / "bench" / "kernel_tuner" / "rmsnorm_8192.cutune.toml"
RECORDING = REPO / "tests" / "fixtures" / "replay" / "rmsnorm_8192_h100.t4.json"


def tune(*args: str, workspace, env=None) -> subprocess.CompletedProcess:
    command = [str(CUTUNE_BIN), "tune", "examples/rmsnorm.cu", "--kernel", "rmsnorm_kernel", "--workspace", str(workspace), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=REPO, env=env)


def test_without_a_gpu_tune_says_so_and_points_to_replays(tmp_path):
    if os.path.exists("/dev/nvidia0"):
        return  # a GPU machine: the live path is the GPU suite's (tests/gpu/tune_suite.sh)
    result = tune(workspace=tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "no CUDA driver found" in result.stderr, result.stderr
    assert "--replay FILE" in result.stderr, result.stderr
    assert "panicked" not in result.stderr


def test_a_replay_finds_the_recorded_best_and_says_it_is_a_replay(tmp_path):
    result = tune("--spec", str(SPEC), "--replay", str(RECORDING), workspace=tmp_path)
    assert result.returncode == 0, result.stderr
    first = result.stdout.splitlines()[0]
    assert "REPLAY of recorded measurements from" in first and "rmsnorm_8192_h100.t4.json" in first, first
    assert "best: BLOCK_SIZE=512 RMSNORM_VEC=8 at 97.06 µs, 1.95× the original" in result.stdout, result.stdout
    assert "24 evaluated (0 from earlier runs) with brute-force" in result.stdout
    assert "stopped: space exhausted" in result.stdout
    assert "not verified: recorded measurements carry no outputs" in result.stdout
    assert "speed of light: memory-bound: 83% of the 80.1 µs bound (3350 GB/s datasheet memory bandwidth of the H100 SXM)" in result.stdout, result.stdout

    report = json.loads(tune("--spec", str(SPEC), "--replay", str(RECORDING), "--json", workspace=tmp_path).stdout)
    assert report["source"]["kind"] == "replay" and report["source"]["from"].endswith("rmsnorm_8192_h100.t4.json")
    assert report["resumed"] == 24, "a second run must reuse every stored evaluation"
    assert all(row["resumed"] for row in report["rows"])

    with sqlite3.connect(tmp_path / ".cutune" / "results.db") as db:
        (count,) = db.execute("select count(*) from evaluations").fetchone()
        (runs,) = db.execute("select count(*) from runs").fetchone()
    assert (count, runs) == (24, 2)


def test_when_no_configuration_beats_the_original_the_original_stays(tmp_path):
    # The recording with the original's configuration (BLOCK_SIZE=256, RMSNORM_VEC=1) made the fastest.
    recording = json.loads(RECORDING.read_text())
    fastest = min(r["times"]["runtimes"][0] for r in recording["results"] if r["invalidity"] == "correct")
    original = [r for r in recording["results"] if r["configuration"] == {"BLOCK_SIZE": 256, "RMSNORM_VEC": 1}]
    assert len(original) == 1
    original[0]["times"]["runtimes"] = [fastest / 2]
    original[0]["measurements"][0]["value"] = fastest / 2
    slower = tmp_path / "original_fastest.t4.json"
    slower.write_text(json.dumps(recording))

    result = tune("--spec", str(SPEC), "--replay", str(slower), workspace=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "best: the original: no configuration is faster" in result.stdout, result.stdout
    assert "1.95×" not in result.stdout and "best: BLOCK_SIZE=512" not in result.stdout, result.stdout
    report = json.loads(tune("--spec", str(SPEC), "--replay", str(slower), "--json", workspace=tmp_path / "json").stdout)
    assert report["original_fastest"] is True
    assert report["best"]["config"] == [["BLOCK_SIZE", 256], ["RMSNORM_VEC", 1]], report["best"]

    faster = json.loads(tune("--spec", str(SPEC), "--replay", str(RECORDING), "--json", workspace=tmp_path / "faster").stdout)
    assert faster["original_fastest"] is False


def test_budgets_and_strategies_are_honoured_and_seeded(tmp_path):
    def run(seed, workspace):
        result = tune("--spec", str(SPEC), "--replay", str(RECORDING), "--strategy", "random", "--budget", "6", "--seed", str(seed), "--json", workspace=workspace)
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)

    a, b = run(3, tmp_path / "a"), run(3, tmp_path / "b")
    assert len(a["rows"]) == 6 and a["stop_reason"] == "budget of 6 evaluations used"
    assert [r["config"] for r in a["rows"]] == [r["config"] for r in b["rows"]], "the same seed must make the same choices"
    assert [r["config"] for r in run(4, tmp_path / "c")["rows"]] != [r["config"] for r in a["rows"]]


def test_a_missing_recording_is_named(tmp_path):
    result = tune("--spec", str(SPEC), "--replay", str(tmp_path / "nothing.t4.json"), workspace=tmp_path)
    assert result.returncode == 1
    assert "nothing.t4.json" in result.stderr, result.stderr
    assert "panicked" not in result.stderr


def test_bench_search_reports_every_strategy_on_a_recorded_space(tmp_path):
    dedispersion = REPO / "tests" / "fixtures" / "replay" / "dedispersion_milo_A100_T4.json.gz"
    result = subprocess.run(
        [str(CUTUNE_BIN), "bench-search", "--t4", str(dedispersion), "--seeds", "3", "--budget", "20", "--json"],
        capture_output=True, text=True, timeout=300, cwd=REPO,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    text = json.dumps(report)
    for strategy in ["brute-force", "random", "annealing", "genetic", "model"]:
        assert strategy in text, strategy


def test_a_cutune_file_marking_the_root_is_said_to_be_made_a_folder_and_kept(tmp_path):
    (tmp_path / ".cutune").write_text("")
    result = tune("--spec", str(SPEC), "--replay", str(RECORDING), workspace=tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"cannot write the results database at {tmp_path / '.cutune'}: .cutune is a file there" in result.stderr, result.stderr
    assert "remove the file and make the folder (`mkdir .cutune`)" in result.stderr
    assert (tmp_path / ".cutune").is_file()
