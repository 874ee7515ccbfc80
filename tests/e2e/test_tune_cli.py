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


def test_a_chain_of_tied_tiles_in_a_space_too_large_to_list_is_searched_as_the_few_it_leaves(tmp_path):
    # Four tile defines of 20 values each beside the recorded 24 configurations: 3,840,000
    # points, of which the restrictions leave the 24 (each tile pinned through the one before).
    tiles = {"TILE_A": 4, "TILE_B": 8, "TILE_C": 16, "TILE_D": 2}
    params = "".join(f'\n[[kernels.params]]\nname = "{name}"\nkind = "define"\ndefault = {value}\nvalues = {list(range(1, 21))}\norigin = "a tile"\n' for name, value in tiles.items())

    def spec_with(restrictions: list[str]) -> str:
        text = SPEC.read_text().replace('shared_bytes = "0"\n', f'shared_bytes = "0"\nrestrictions = {json.dumps(restrictions)}\n', 1)
        path = tmp_path / "tiles.cutune.toml"
        path.write_text(text.replace("\n[kernels.verify]", params + "\n[kernels.verify]", 1))
        return str(path)

    recording = json.loads(RECORDING.read_text())
    for result in recording["results"]:
        result["configuration"].update(tiles)
    replay = tmp_path / "tiles.t4.json"
    replay.write_text(json.dumps(recording))

    chain = spec_with(["TILE_A == 4", "TILE_B == TILE_A * 2", "TILE_C == TILE_B * 2 and TILE_D == TILE_A // 2"])
    report = json.loads(tune("--spec", chain, "--replay", str(replay), "--strategy", "random", "--json", workspace=tmp_path / "chain").stdout)
    assert len(report["rows"]) == 24 and report["stop_reason"] == "space exhausted", report["stop_reason"]
    assert dict(report["best"]["config"]) == {"BLOCK_SIZE": 512, "RMSNORM_VEC": 8, **tiles}

    # A restriction tying all four at once narrows nothing: the draws meet no feasible point,
    # and the run says so rather than that the space is exhausted.
    tied = spec_with(["TILE_A + TILE_B + TILE_C + TILE_D == 80"])
    result = tune("--spec", tied, "--replay", str(replay), "--strategy", "random", workspace=tmp_path / "tied")
    assert result.returncode == 0, result.stderr
    assert "stopped: 10000 random draws met no feasible configuration not tried yet (the space is too large to list; its restrictions leave few)" in result.stdout, result.stdout
