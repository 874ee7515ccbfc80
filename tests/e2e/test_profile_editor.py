"""A profiled program in the editor: a kernel's share of the program's GPU time as a hint and
in its hover, what its tuning saves the program once tuned, and `cutune.showProfile` listing the
profile's kernels by share."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from editor import CUTUNE_BIN, eventually, hover, open_document
from test_tuning import KERNEL, RECORDING, command, configure, ended, inlay_hints, line_of, project


def profile(root: Path) -> None:
    """A PyTorch trace in which the kernel takes 40% of the GPU time, imported into the store."""
    events = [
        {"ph": "X", "cat": "kernel", "name": f"{KERNEL}(__half*, __half const*, __half const*, int, float)", "dur": 40.0},
        {"ph": "X", "cat": "kernel", "name": "ampere_sgemm_128x64_nn", "dur": 60.0},
    ]
    (root / "trace.json").write_text(json.dumps({"traceEvents": events}))
    imported = subprocess.run([str(CUTUNE_BIN), "profile", "--import", "trace.json"], capture_output=True, text=True, cwd=root, timeout=60)
    assert imported.returncode == 0, imported.stderr


async def test_a_profiled_kernel_shows_its_share_and_then_what_tuning_saves(client, tmp_path):
    (tmp_path / ".git").mkdir()
    source = project(tmp_path)
    profile(tmp_path)
    await configure(client, replay=str(RECORDING), resultsLocation=str(tmp_path), budget=200)
    uri, text = source.as_uri(), source.read_text()
    await open_document(client, uri, text)
    name_line = line_of(text, f"__global__ void {KERNEL}")

    [share_hint] = [h for h in await inlay_hints(client, uri) if h.position.line == name_line]
    assert share_hint.label == "40% of GPU time · trace.json"
    shown = await hover(client, uri, name_line, text.split("\n")[name_line].index(KERNEL) + 2)
    assert "**40% of the GPU time** of `trace.json (PyTorch profiler trace)` (1 launch, 40.0 µs), in its latest profile" in shown.contents.value, shown.contents.value

    listed = await command(client, "cutune.showProfile", {"uri": uri})
    assert listed["origin"] == "trace.json (PyTorch profiler trace)" and listed["gpu_ns"] == 100_000
    assert [(k["display"], round(k["share"], 2), k["line"]) for k in listed["kernels"]] == [("ampere_sgemm_128x64_nn", 0.6, None), (KERNEL, 0.4, name_line + 1)]
    assert Path(listed["kernels"][1]["file"]) == source.resolve()

    assert await command(client, "cutune.tune", {"uri": uri, "kernel": KERNEL}) == {"started": KERNEL}
    await eventually(client, lambda: ended(client, f"Tuning {KERNEL}"), "the tuning progress to end")
    [tuned_hint] = [h for h in await inlay_hints(client, uri) if h.position.line == name_line]
    # Amdahl: 40% of the GPU time made 1.95× faster saves 0.4 × (1 − 1/1.95) ≈ 19% of it.
    assert tuned_hint.label == "1.95× ✓ replay · 83% SOL · saves ≈19% of trace.json's GPU time"
    shown = await hover(client, uri, name_line, text.split("\n")[name_line].index(KERNEL) + 2)
    assert "tuned 1.95× faster, it saves ≈19% of the program's GPU time" in shown.contents.value, shown.contents.value


async def test_show_profile_without_a_profile_is_null(client, tmp_path):
    (tmp_path / ".git").mkdir()
    source = project(tmp_path)
    await open_document(client, source.as_uri(), source.read_text())
    assert await command(client, "cutune.showProfile", {"uri": source.as_uri()}) is None
