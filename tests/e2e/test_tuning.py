"""The editor loop on a machine without a GPU, through a replay of recorded measurements: the
client's settings, `cutune.tune` with `$/progress` and `cutune/status`, the best verified speedup
as an inlay hint at the kernel's name and the results table in its hover, `cutune.stopTuning`
cancelling a run and keeping what it measured, and the plain warning without a GPU."""

from __future__ import annotations

import ast
import asyncio
import os
import sqlite3
import subprocess

import pytest
from pathlib import Path

from lsprotocol import types

from editor import CUTUNE_BIN, REPO, TIMEOUT_S, change_document, edit, eventually, logged, open_document, published

from test_templatize import apply

RECORDING = REPO / "tests" / "fixtures" / "replay" / "rmsnorm_8192_h100.t4.json"
SPEC = REPO / "bench" / "kernel_tuner" / "rmsnorm_8192.cutune.toml"
KERNEL = "rmsnorm_kernel"


def project(tmp_path: Path) -> Path:
    """examples/rmsnorm.cu with the spec of the recorded space beside it."""
    source = tmp_path / "rmsnorm.cu"
    source.write_text((REPO / "examples" / "rmsnorm.cu").read_text())
    write_spec(tmp_path)
    return source


def write_spec(folder: Path, spec: Path = SPEC) -> None:
    """`spec` as the spec of `folder/rmsnorm.cu`."""
    (folder / "rmsnorm.cutune.toml").write_text(spec.read_text().replace('source = "../../examples/rmsnorm.cu"', 'source = "rmsnorm.cu"'))


async def open_replay_project(client, tmp_path: Path) -> tuple[str, str]:
    """The project open in the editor, set up to replay the recording; its URI and text."""
    source = project(tmp_path)
    await configure(client, replay=str(RECORDING), resultsLocation=str(tmp_path), budget=200)
    text = source.read_text()
    await open_document(client, source.as_uri(), text)
    return source.as_uri(), text


async def configure(client, **settings) -> None:
    """Sets the `cutune` section and tells the server, which reads it back; waits until it has."""
    client.set_configuration(settings, section="cutune")
    seen = len(client.log_messages)
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    expected = f"budget {settings.get('budget', 200)}"
    await eventually(client, lambda: any("cutune: settings:" in m.message and expected in m.message for m in client.log_messages[seen:]), "the settings applied")


async def command(client, name: str, argument: dict | None = None):
    params = types.ExecuteCommandParams(command=name, arguments=[argument] if argument is not None else [])
    return await asyncio.wait_for(client.workspace_execute_command_async(params), TIMEOUT_S)


def ended(client, title: str):
    """The progress whose begin has `title`, once it has ended: its list of values."""
    for values in client.progress_reports.values():
        if values and getattr(values[0], "title", None) == title and isinstance(values[-1], types.WorkDoneProgressEnd):
            return values
    return None


async def inlay_hints(client, uri: str) -> list[types.InlayHint]:
    params = types.InlayHintParams(text_document=types.TextDocumentIdentifier(uri), range=types.Range(types.Position(0, 0), types.Position(10_000, 0)))
    return await asyncio.wait_for(client.text_document_inlay_hint_async(params), TIMEOUT_S) or []


def command_of(action) -> tuple[str, list]:
    """The command and arguments a code action runs. lsprotocol's client reads a CodeAction that
    carries a command as a `Command` whose `command` is the text of that object (its union
    structuring tries `Command` first and turns the object into a string); undo that."""
    if isinstance(action, types.CodeAction):
        return action.command.command, action.command.arguments
    raw = ast.literal_eval(action.command)
    return raw["command"], raw["arguments"]


def line_of(text: str, needle: str) -> int:
    return next(i for i, l in enumerate(text.split("\n")) if needle in l)


async def test_tuning_a_replay_reports_progress_then_shows_the_speedup_in_place(client, tmp_path):
    uri, text = await open_replay_project(client, tmp_path)
    # Before any run: only the launch's hint, the values it runs with (the file's own defines).
    [launch_hint] = await inlay_hints(client, uri)
    assert launch_hint.label == "BLOCK_SIZE=256 RMSNORM_VEC=1"
    assert launch_hint.position.line == line_of(text, f"{KERNEL}<<<")
    refreshes = client.hint_refreshes

    started = await command(client, "cutune.tune", {"uri": uri, "kernel": KERNEL})
    assert started == {"started": KERNEL}
    # Both editors' recorded capabilities show server-initiated progress.
    values = await eventually(client, lambda: ended(client, f"Tuning {KERNEL}"), "the tuning progress to end")
    reports = [v.message for v in values if isinstance(v, types.WorkDoneProgressReport)]
    assert reports[-1] == "24/24 · best 1.95×", reports
    assert values[0].cancellable is True
    assert "REPLAY of" in values[-1].message and "1.95× the original" in values[-1].message, values[-1].message
    await eventually(client, lambda: any(s.get("state") == "idle" and KERNEL in s.get("message", "") for s in client.statuses), "the idle status after the run")
    tuning = [s for s in client.statuses if s.get("state") == "replay"]
    assert tuning and tuning[-1]["device"].startswith("replay of") and tuning[-1]["message"].startswith(f"tuning {KERNEL} 24/24"), client.statuses

    # The hint at the kernel's name, from the results database.
    [hint] = [h for h in await inlay_hints(client, uri) if h.label != launch_hint.label]
    assert hint.label == "1.95× ✓ replay · 83% SOL"
    name_line = line_of(text, f"__global__ void {KERNEL}")
    assert hint.position.line == name_line
    if client.profile.name == "neovim":
        assert client.hint_refreshes > refreshes, "Neovim asks for hints again on refresh"

    hover = await asyncio.wait_for(
        client.text_document_hover_async(types.HoverParams(types.TextDocumentIdentifier(uri), types.Position(name_line, text.split("\n")[name_line].index(KERNEL) + 2))),
        TIMEOUT_S,
    )
    value = hover.contents.value
    assert value.startswith("**Tuning results** — **replay** of recorded measurements from"), "what was measured comes first: " + value
    assert "| BLOCK_SIZE=512 RMSNORM_VEC=8 | 97.06 µs | 1.95× | 83% |" in value, value
    # A replay has no device to measure: the bound uses the datasheet's figures, and says so.
    assert "Speed of light of BLOCK_SIZE=512 RMSNORM_VEC=8: memory-bound: 83% of the 80.1 µs bound (3350 GB/s datasheet memory bandwidth of the H100 SXM)" in value, value
    assert "24 configurations tried, 24 correct" in value and "brute-force" in value, value

    # The run's end republishes the file's diagnostics: a replay has nothing to complain about.
    assert not any(d.source == "cutune" and d.code in ("wrong-output", "cannot-run", "stale-results") for d in client.diagnostics.get(uri, []))
    # Editing the kernel makes its results stale: a hint diagnostic, and the inlay hint says so.
    body = line_of(text, "float sum = 0.f;")
    after = len(client.published)
    change_document(client, uri, 2, edit((body, 0), (body, 0), "  // changed\n"))
    diagnostics = (await published(client, uri, 2, after)).diagnostics
    [stale] = [d for d in diagnostics if d.code == "stale-results"]
    assert stale.severity == types.DiagnosticSeverity.Hint and stale.range.start.line == name_line
    assert f"the tuning results of `{KERNEL}` were measured on an earlier version of it" in stale.message
    [hint] = [h for h in await inlay_hints(client, uri) if h.label != launch_hint.label]
    assert hint.label == "1.95× ✓ replay · 83% SOL (stale)"


async def test_templatize_then_tune_from_the_editor(client, tmp_path):
    source = tmp_path / "rmsnorm.cu"
    text = (REPO / "examples" / "rmsnorm.cu").read_text()
    source.write_text(text)
    uri = source.as_uri()
    await open_document(client, uri, text)
    line = line_of(text, "float sum = 0.f;")
    assert await command(client, "cutune.templatize", {"uri": uri, "position": {"line": line, "character": 4}}) == {"templatized": KERNEL, "applied": True}

    # What the editor does with the edit: the buffer changes and the spec is created.
    changes = client.applied_edits[-1].document_changes
    spec_uri = (tmp_path / "rmsnorm.cutune.toml").as_uri()
    [source_edit] = [c for c in changes if isinstance(c, types.TextDocumentEdit) and c.text_document.uri == uri]
    [spec_edit] = [c for c in changes if isinstance(c, types.TextDocumentEdit) and c.text_document.uri == spec_uri]
    assert any(isinstance(c, types.CreateFile) and c.uri == spec_uri for c in changes)
    templatized = apply(text, source_edit.edits, client.profile.encoding)
    assert "#ifndef RMSNORM_VEC" in templatized and 'name = "RMSNORM_VEC"' in apply("", spec_edit.edits, client.profile.encoding)
    source.write_text(templatized)
    change_document(client, uri, 2, types.TextDocumentContentChangeWholeDocument(text=templatized))
    # The recording covers BLOCK_SIZE × RMSNORM_VEC (the spec of the Kernel Tuner side-by-side);
    # templatize's own spec has more parameters, which no recording holds.
    write_spec(tmp_path)

    await configure(client, replay=str(RECORDING), resultsLocation=str(tmp_path), budget=200)
    seen = len(client.messages)
    assert await command(client, "cutune.tune", {"uri": uri, "position": {"line": line_of(templatized, "float sum = 0.f;"), "character": 4}}) == {"started": KERNEL}
    await eventually(client, lambda: any("stopped: space exhausted" in m.message for m in client.messages[seen:]), "the run to finish")
    hints = [h.label for h in await inlay_hints(client, uri)]
    assert "1.95× ✓ replay · 83% SOL" in hints and "BLOCK_SIZE=256 RMSNORM_VEC=1" in hints, hints


async def test_apply_best_rewrites_the_defaults_of_a_templatized_file(client, tmp_path):
    source = project(tmp_path)
    templatized = subprocess.run([str(CUTUNE_BIN), "templatize", str(source), "--kernel", KERNEL], capture_output=True, text=True, check=True).stdout
    source.write_text(templatized)
    await configure(client, replay=str(RECORDING), resultsLocation=str(tmp_path), budget=200)
    uri = source.as_uri()
    await open_document(client, uri, templatized)

    try:
        await command(client, "cutune.applyBest", {"uri": uri, "kernel": KERNEL})
    except Exception as error:
        assert f"`{KERNEL}` has no tuning results yet: tune it first" in str(error)
    else:
        raise AssertionError("applied without results")

    seen = len(client.messages)
    await command(client, "cutune.tune", {"uri": uri, "kernel": KERNEL})
    await eventually(client, lambda: any("stopped: space exhausted" in m.message for m in client.messages[seen:]), "the run to finish")
    # Offered where they make sense: inside the kernel, with a spec beside the file and results.
    params = types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri),
        range=types.Range(types.Position(line_of(templatized, "float sum = 0.f;"), 4), types.Position(line_of(templatized, "float sum = 0.f;"), 4)),
        context=types.CodeActionContext(diagnostics=[], only=[types.CodeActionKind.Refactor]),
    )
    offered = await asyncio.wait_for(client.text_document_code_action_async(params), TIMEOUT_S)
    assert [(a.title, *command_of(a)) for a in offered if a.title != f"Templatize kernel {KERNEL}"] == [
        (f"Tune kernel {KERNEL} on GPU", "cutune.tune", [{"uri": uri, "kernel": KERNEL}]),
        (f"Verify kernel {KERNEL} against the original (five stages)", "cutune.verify", [{"uri": uri, "kernel": KERNEL}]),
        (f"Apply best configuration BLOCK_SIZE=512 RMSNORM_VEC=8 (1.95× ✓ replay · 83% SOL)", "cutune.applyBest", [{"uri": uri, "kernel": KERNEL}]),
        (f"Show tuning report of {KERNEL}", "cutune.showReport", [{"uri": uri, "kernel": KERNEL, "open": True}]),
    ]
    answer = await command(client, "cutune.applyBest", {"uri": uri, "kernel": KERNEL})
    assert answer == {"applied": "BLOCK_SIZE=512 RMSNORM_VEC=8", "notes": []}
    [edit] = client.applied_edits[-1:]
    [change] = edit.document_changes
    assert change.text_document.uri == uri and change.text_document.version == 1
    rewritten = apply(templatized, change.edits, client.profile.encoding)
    assert "#define BLOCK_SIZE 512\n" in rewritten and "#define RMSNORM_VEC 8\n" in rewritten
    assert rewritten.replace("BLOCK_SIZE 512", "BLOCK_SIZE 256").replace("RMSNORM_VEC 8", "RMSNORM_VEC 1") == templatized
    await eventually(client, lambda: any(f"`{KERNEL}` now defaults to BLOCK_SIZE=512 RMSNORM_VEC=8 (1.95× ✓ replay · 83% SOL)" in m.message for m in client.messages), "the applied message")


async def test_the_report_command_writes_the_page_and_answers_its_path_and_opens_it_when_asked(client, tmp_path):
    uri, _ = await open_replay_project(client, tmp_path)
    try:
        await command(client, "cutune.showReport", {"uri": uri, "kernel": KERNEL})
    except Exception as error:
        assert f"`{KERNEL}` has no tuning results in" in str(error) and "tune it first" in str(error), error
    else:
        raise AssertionError("a report without results")
    seen = len(client.messages)
    await command(client, "cutune.tune", {"uri": uri, "kernel": KERNEL})
    await eventually(client, lambda: any("stopped: space exhausted" in m.message for m in client.messages[seen:]), "the run to finish")

    # Other editors than VS Code get the path, to open as they like.
    answer = await command(client, "cutune.showReport", {"uri": uri, "kernel": KERNEL})
    page = tmp_path / ".cutune" / "reports" / f"rmsnorm.{KERNEL}.html"
    assert answer == {"kernel": KERNEL, "path": str(page), "evaluations": 24}
    assert "BLOCK_SIZE=512 RMSNORM_VEC=8" in page.read_text()
    assert client.shown_documents == [], "not opened unless asked"
    # The code action's form asks the editor to open it in a browser.
    await command(client, "cutune.showReport", {"uri": uri, "kernel": KERNEL, "open": True})
    [shown] = client.shown_documents
    assert shown.uri == page.as_uri() and shown.external is True


async def test_stopping_cancels_the_run_and_keeps_what_it_measured(client, tmp_path):
    uri, text = await open_replay_project(client, tmp_path)
    line = line_of(text, "float sum = 0.f;")

    # By position, as the palette commands send it. The run spends its first tens of
    # milliseconds templatizing the file in memory, so the stop arrives before the search.
    assert await command(client, "cutune.tune", {"uri": uri, "position": {"line": line, "character": 4}}) == {"started": KERNEL}
    assert await command(client, "cutune.stopTuning", {}) == {"stopping": KERNEL}
    message = await eventually(client, lambda: next((m.message for m in client.messages if "stopped: cancelled" in m.message and str(tmp_path) not in m.message), None), "the cancelled run's message")
    assert KERNEL in message

    with sqlite3.connect(tmp_path / ".cutune" / "results.db") as db:
        [(stop_reason,)] = db.execute("select stop_reason from runs").fetchall()
        (stored,) = db.execute("select count(*) from evaluations").fetchone()
    assert stop_reason == "cancelled"
    assert stored < 24

    # Nothing runs now; a second stop says so, and a new run finishes.
    assert await command(client, "cutune.stopTuning", {}) == {"stopping": None}
    seen = len(client.messages)
    assert await command(client, "cutune.tune", {"uri": uri, "kernel": KERNEL}) == {"started": KERNEL}
    await eventually(client, lambda: any("stopped: space exhausted" in m.message for m in client.messages[seen:]), "the second run to finish")


async def test_commands_with_bad_arguments_are_refused_in_words(client, tmp_path):
    source = project(tmp_path)
    uri = source.as_uri()
    text = source.read_text()
    await open_document(client, uri, text)
    for argument, words in [
        ({"uri": uri, "kernel": "nope"}, "defines no kernel `nope`"),
        ({"uri": uri, "position": {"line": line_of(text, "int main"), "character": 2}}, "no kernel at"),
        ({"uri": uri}, "name the kernel"),
        (None, "cutune.tune takes {uri, kernel} or {uri, position}"),
    ]:
        try:
            await command(client, "cutune.tune", argument)
        except Exception as error:  # pygls raises the JSON-RPC error
            assert words in str(error), (argument, str(error))
        else:
            raise AssertionError(f"{argument} was accepted")
    try:
        await command(client, "cutune.frobnicate", {"uri": uri})
    except Exception as error:
        assert "cutune has no command `cutune.frobnicate`" in str(error)
    else:
        raise AssertionError("an unknown command was accepted")


async def test_bad_settings_are_named_and_the_defaults_kept(client):
    seen = len(client.messages)
    client.set_configuration({"budget": 0, "strategy": "fastest"}, section="cutune")
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    await eventually(client, lambda: any("cutune.budget must be a whole number" in m.message for m in client.messages[seen:]), "the budget warning")
    await logged(client, types.MessageType.Info, "cutune: settings:", "strategy auto, budget 200")


async def test_without_a_gpu_tuning_warns_plainly(client, tmp_path):
    if os.path.exists("/dev/nvidia0"):
        return  # a GPU machine: the live path is the GPU suite's
    source = project(tmp_path)
    await configure(client, resultsLocation=str(tmp_path), budget=200)
    uri = source.as_uri()
    await open_document(client, uri, source.read_text())
    seen = len(client.messages)
    await command(client, "cutune.tune", {"uri": uri, "kernel": KERNEL})
    warning = await eventually(client, lambda: next((m for m in client.messages[seen:] if "no CUDA device found" in m.message), None), "the no-device warning")
    assert warning.type == types.MessageType.Warning
    assert "cutune.replay" in warning.message
    await eventually(client, lambda: any(s.get("state") == "no-device" for s in client.statuses), "the no-device status")


async def test_without_a_gpu_verifying_says_it_needs_one_even_with_a_replay_set(client, tmp_path):
    if os.path.exists("/dev/nvidia0"):
        return  # a GPU machine: the live path is the GPU suite's
    source = project(tmp_path)
    await configure(client, resultsLocation=str(tmp_path), replay=str(RECORDING))
    uri = source.as_uri()
    await open_document(client, uri, source.read_text())
    seen = len(client.messages)
    assert await command(client, "cutune.verify", {"uri": uri, "kernel": KERNEL}) == {"started": KERNEL}
    warning = await eventually(client, lambda: next((m for m in client.messages[seen:] if "no CUDA device found" in m.message), None), "the no-device warning")
    assert warning.type == types.MessageType.Warning
    assert "Verifying runs the kernel, so it needs a GPU (a replay cannot verify)" in warning.message
    await eventually(client, lambda: any(s.get("state") == "verifying" for s in client.statuses), "the verifying status")
    await eventually(client, lambda: any(s.get("state") == "no-device" for s in client.statuses), "the no-device status")


async def test_compare_runs_another_implementation_and_says_what_keeps_it_from_running(client, tmp_path):
    source = project(tmp_path)
    await configure(client, resultsLocation=str(tmp_path), replay=str(RECORDING))
    uri = source.as_uri()
    await open_document(client, uri, source.read_text())
    candidates = REPO / "tests" / "fixtures" / "compare"

    try:
        await command(client, "cutune.compare", {"uri": uri, "kernel": KERNEL, "candidate": str(tmp_path / "missing.cu")})
    except Exception as error:
        assert f"{tmp_path / 'missing.cu'}: no such file" in str(error)
    else:
        raise AssertionError("compared with a missing file")

    # Another signature is said before any GPU is sought; the file is given as a URI here.
    seen = len(client.messages)
    other = (candidates / "rmsnorm_other_signature.cu").as_uri()
    assert await command(client, "cutune.compare", {"uri": uri, "kernel": KERNEL, "candidate": other}) == {"started": KERNEL}
    error = await eventually(client, lambda: next((m for m in client.messages[seen:] if "comparing" in m.message), None), "the comparison's message")
    assert error.type == types.MessageType.Error
    assert f"its `{KERNEL}` does not take what `{KERNEL}` of {source} takes" in error.message, error.message
    await eventually(client, lambda: any(s.get("state") == "comparing" for s in client.statuses), "the comparing status")

    if os.path.exists("/dev/nvidia0"):
        pytest.skip("a GPU machine: the comparison itself is the GPU suite's (tests/gpu/compare_suite.sh)")
    # The fast variant's kernel has another name: the only kernel of its file is taken. A replay
    # is set, but a comparison runs both kernels.
    seen = len(client.messages)
    await command(client, "cutune.compare", {"uri": uri, "kernel": KERNEL, "candidate": str(candidates / "rmsnorm_fast.cu")})
    warning = await eventually(client, lambda: next((m for m in client.messages[seen:] if "no CUDA device found" in m.message), None), "the no-device warning")
    assert warning.type == types.MessageType.Warning and "Comparing runs both kernels, so it needs a GPU" in warning.message
