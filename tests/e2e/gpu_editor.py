"""GPU suite: the editor loop of test_tuning.py with the real CUDA worker, driven by the same
client. Not collected by `pytest tests/e2e` (its name does not start with `test_`); run it on the
lent GPU machine with tests/gpu/editor_suite.sh, which names it explicitly. It fails without a
GPU rather than pass.

- RMSNorm 8192×8192 fp16 (the Kernel Tuner side-by-side space, 24 configurations): `cutune.tune`
  by position, `$/progress` to the end, the inlay hint with the measured speedup on this GPU, the
  hover's table, `cutune.applyBest` on the templatized file;
- the rmsnorm example with its own, larger spec (model-based search, budget 40): stopped after
  its first evaluations, keeping them in the results database;
- `cutune.verify` on a file whose defaults were set to a tuned configuration: the five stages,
  with progress, ending with the stages passed;
- a tune of the fault fixtures (tests/fixtures/faults): every misbehaviour stored with its label,
  the winner verified, and the server answering hovers while the worker faults, hangs and restarts."""

from __future__ import annotations

import asyncio
import json
import os
import re
import sqlite3
import subprocess
import time
from pathlib import Path

from lsprotocol import types

from editor import CUTUNE_BIN, REPO, TIMEOUT_S, eventually, open_document
from test_templatize import apply
from test_tuning import KERNEL, command, configure, ended, inlay_hints, line_of, write_spec

SPEC = REPO / "bench" / "kernel_tuner" / "rmsnorm_8192.cutune.toml"
# Figures for docs/benchmarks.md, written where the suite collects them.
REPORT = Path(os.environ.get("EDITOR_REPORT", "editor_gpu.json"))


def record(name: str, value) -> None:
    report = json.loads(REPORT.read_text()) if REPORT.exists() else {}
    report[name] = value
    REPORT.write_text(json.dumps(report, indent=1))


def templatized_project(tmp_path: Path, spec: Path) -> Path:
    source = tmp_path / "rmsnorm.cu"
    text = subprocess.run([str(CUTUNE_BIN), "templatize", str(REPO / "examples" / "rmsnorm.cu"), "--kernel", KERNEL], capture_output=True, text=True, check=True).stdout
    source.write_text(text)
    write_spec(tmp_path, spec)
    return source


async def test_tuning_on_the_gpu_shows_the_measured_speedup_and_applies_it(client, tmp_path):
    assert os.path.exists("/dev/nvidia0"), "this suite needs a GPU"
    source = templatized_project(tmp_path, SPEC)
    await configure(client, resultsLocation=str(tmp_path), budget=200)
    uri = source.as_uri()
    text = source.read_text()
    await open_document(client, uri, text)

    started = time.perf_counter()
    line = line_of(text, "float sum = 0.f;")
    assert await command(client, "cutune.tune", {"uri": uri, "position": {"line": line, "character": 4}}) == {"started": KERNEL}
    values = await eventually(client, lambda: ended(client, f"Tuning {KERNEL}"), "the tuning progress to end")
    wall = time.perf_counter() - started
    reports = [v.message for v in values if isinstance(v, types.WorkDoneProgressReport)]
    assert reports[-1].startswith("24/24 · best "), reports
    end = values[-1].message
    assert "REPLAY" not in end and ("stopped: space exhausted" in end or "stopped: within 95% of the speed of light" in end), end
    assert "verified: passed 5 stages" in end, end

    [hint] = [h for h in await inlay_hints(client, uri) if "×" in h.label]
    assert re.fullmatch(r"\d+\.\d\d× ✓ H[12]00 · \d+% SOL", hint.label), hint.label
    name_line = line_of(text, f"__global__ void {KERNEL}")
    hover = await asyncio.wait_for(
        client.text_document_hover_async(types.HoverParams(types.TextDocumentIdentifier(uri), types.Position(name_line, text.split("\n")[name_line].index(KERNEL) + 2))),
        TIMEOUT_S,
    )
    assert "**Tuning results**" in hover.contents.value and "configurations tried" in hover.contents.value, hover.contents.value
    assert "Verification of " in hover.contents.value and "passed 5 stages" in hover.contents.value, hover.contents.value
    assert "memory-bound: " in hover.contents.value and "measured copy" in hover.contents.value, hover.contents.value
    applied = await command(client, "cutune.applyBest", {"uri": uri, "kernel": KERNEL})
    [change] = client.applied_edits[-1].document_changes
    rewritten = apply(text, change.edits, client.profile.encoding)
    for name, value in re.findall(r"(\w+)=(\d+)", applied["applied"]):
        assert f"#define {name} {value}\n" in rewritten, (name, value)
    record(f"{client.profile.name}: rmsnorm 8192", {"hint": hint.label, "end": end, "wall_seconds": wall, "applied": applied})


async def test_stopping_a_gpu_run_keeps_what_it_measured(client, tmp_path):
    assert os.path.exists("/dev/nvidia0"), "this suite needs a GPU"
    source = templatized_project(tmp_path, REPO / "examples" / "rmsnorm.cutune.toml")
    await configure(client, resultsLocation=str(tmp_path), budget=40)
    uri = source.as_uri()
    await open_document(client, uri, source.read_text())
    seen = len(client.messages)
    earlier = set(client.progress_reports)
    assert await command(client, "cutune.tune", {"uri": uri, "kernel": KERNEL}) == {"started": KERNEL}

    def progressed():
        # This run's progress only: the session's earlier runs reported under other tokens.
        reports = (v for token, values in client.progress_reports.items() if token not in earlier for v in values)
        return next((v for v in reports if isinstance(v, types.WorkDoneProgressReport) and v.message.startswith("1/")), None)

    await eventually(client, progressed, "the first evaluation")
    stopped_at = time.perf_counter()
    assert await command(client, "cutune.stopTuning", {}) == {"stopping": KERNEL}
    message = await eventually(client, lambda: next((m.message for m in client.messages[seen:] if "stopped:" in m.message), None), "the run's end")
    latency = time.perf_counter() - stopped_at
    assert "stopped: cancelled" in message, message
    assert latency < 1.0, f"the run took {latency:.2f} s to stop"
    with sqlite3.connect(tmp_path / ".cutune" / "results.db") as db:
        (stored,) = db.execute("select count(*) from evaluations").fetchone()
    assert 1 <= stored < 40
    record(f"{client.profile.name}: stop", {"message": message, "stop_latency_seconds": latency, "stored": stored})


async def test_verify_kernel_runs_the_five_stages_on_the_gpu(client, tmp_path):
    assert os.path.exists("/dev/nvidia0"), "this suite needs a GPU"
    source = templatized_project(tmp_path, REPO / "examples" / "rmsnorm.cutune.toml")
    text = source.read_text().replace("#define BLOCK_SIZE 256\n", "#define BLOCK_SIZE 512\n").replace("#define RMSNORM_VEC 1\n", "#define RMSNORM_VEC 8\n")
    assert "#define BLOCK_SIZE 512" in text and "#define RMSNORM_VEC 8" in text
    source.write_text(text)
    await configure(client, resultsLocation=str(tmp_path))
    uri = source.as_uri()
    await open_document(client, uri, text)
    started = time.perf_counter()
    assert await command(client, "cutune.verify", {"uri": uri, "kernel": KERNEL}) == {"started": KERNEL}
    values = await eventually(client, lambda: ended(client, f"Verifying {KERNEL}"), "the verification to end")
    wall = time.perf_counter() - started
    end = values[-1].message
    assert "BLOCK_SIZE=512" in end and "RMSNORM_VEC=8" in end and "passed 5 stages" in end, end
    assert any(s.get("state") == "verifying" for s in client.statuses)
    record(f"{client.profile.name}: verify", {"end": end, "wall_seconds": wall})


async def test_misbehaving_kernels_are_labelled_and_the_server_keeps_answering(client, tmp_path):
    assert os.path.exists("/dev/nvidia0"), "this suite needs a GPU"
    faults = REPO / "tests" / "fixtures" / "faults"
    for name in ("faults.cu", "faults.cutune.toml"):
        (tmp_path / name).write_text((faults / name).read_text())
    source = tmp_path / "faults.cu"
    text = source.read_text()
    await configure(client, resultsLocation=str(tmp_path), budget=10)
    uri = source.as_uri()
    await open_document(client, uri, text)
    name_line = line_of(text, "__global__ void faulty")
    at = types.Position(name_line, text.split("\n")[name_line].index("faulty") + 2)
    assert await command(client, "cutune.tune", {"uri": uri, "kernel": "faulty"}) == {"started": "faulty"}
    # While the worker faults, hangs and restarts, the server answers hovers.
    latencies = []
    while not ended(client, "Tuning faulty"):
        asked = time.perf_counter()
        hover = await asyncio.wait_for(client.text_document_hover_async(types.HoverParams(types.TextDocumentIdentifier(uri), at)), TIMEOUT_S)
        latencies.append(time.perf_counter() - asked)
        assert hover is not None and "faulty" in hover.contents.value
        await asyncio.sleep(0.05)
    end = ended(client, "Tuning faulty")[-1].message
    assert "best MODE=0" in end and "verified: passed 5 stages" in end and "10 configurations evaluated" in end, end
    codes = {d.code for d in client.diagnostics.get(uri, []) if d.source == "cutune"}
    assert {"wrong-output", "cannot-run"} <= codes, codes
    with sqlite3.connect(tmp_path / ".cutune" / "results.db") as db:
        rows = db.execute("select json_extract(configuration, '$.MODE'), status, message, registers from evaluations").fetchall()
    statuses = {mode: status for mode, status, _, _ in rows}
    # MODE=8 is ruled out before launch: by ptxas' registers when the compile log has them, else
    # by the driver's thread limit for the loaded code.
    assert statuses == {0: "pass", 1: "out_of_bounds", 2: "timeout", 3: "mismatch", 4: "mismatch", 5: "mismatch", 6: "mismatch", 7: "infeasible", 8: "infeasible", 9: "fault"}, rows
    latencies.sort()
    record(f"{client.profile.name}: faults", {"end": end, "hovers": len(latencies), "hover_p99_ms": 1000 * latencies[int(0.99 * (len(latencies) - 1))], "statuses": statuses})
