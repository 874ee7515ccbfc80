"""`cutune mcp` driven by a real MCP client (the Python SDK's stdio client, from pip), as a
coding agent drives it: the tools and their schemas, listing kernels, templatizing with and
without writing, the results of a tune (a replay, no GPU), and clear errors."""

from __future__ import annotations

import asyncio
import json
import shutil
import sqlite3
import subprocess
from contextlib import asynccontextmanager
from pathlib import Path

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError

from editor import CUTUNE_BIN, REPO
from test_profile_cli import torch_trace

RMSNORM = REPO / "examples" / "rmsnorm.cu"
SPEC = REPO / "bench" / "kernel_tuner" / "rmsnorm_8192.cutune.toml"
RECORDING = REPO / "tests" / "fixtures" / "replay" / "rmsnorm_8192_h100.t4.json"


@asynccontextmanager
async def session(cwd: Path = REPO, env: dict[str, str] | None = None):
    params = StdioServerParameters(command=str(CUTUNE_BIN), args=["mcp"], cwd=str(cwd), env={"VIRTUAL_ENV": str(REPO / ".venv"), **(env or {})})
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as client:
            await client.initialize()
            yield client


async def call(client: ClientSession, tool: str, **arguments) -> dict:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    return result.structured_content


async def error_of(client: ClientSession, tool: str, **arguments) -> str:
    result = await client.call_tool(tool, arguments)
    assert result.is_error, result.structured_content
    return result.content[0].text


async def test_the_tools_have_schemas_and_list_a_files_kernels():
    async with session() as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert sorted(tools) == ["check", "compare", "list_kernels", "profile", "results", "speed_of_light", "templatize", "tune", "verify"]
        assert tools["templatize"].input_schema["required"] == ["file", "kernel"]
        assert "write" in tools["templatize"].input_schema["properties"]
        assert tools["results"].output_schema is not None
        listed = await call(client, "list_kernels", file="examples/rmsnorm.cu")
        [kernel] = listed["kernels"]
        assert kernel["name"] == "rmsnorm_kernel" and kernel["line"] == 25 and kernel["launches"] == [54]


async def test_templatize_shows_the_diff_and_writes_only_when_asked(tmp_path: Path):
    source = tmp_path / "rmsnorm.cu"
    shutil.copy(RMSNORM, source)
    (tmp_path / ".cutune").write_text("")
    async with session(tmp_path) as client:
        dry = await call(client, "templatize", file="rmsnorm.cu", kernel="rmsnorm_kernel")
        assert source.read_text() == RMSNORM.read_text() and not (tmp_path / "rmsnorm.cutune.toml").exists()
        assert dry["written"] == [] and "+#ifndef RMSNORM_VEC" in dry["diff"]
        names = [p["name"] for p in dry["parameters"]]
        assert names == ["BLOCK_SIZE", "RMSNORM_UNROLL", "RMSNORM_VEC", "RMSNORM_ROW_REGS", "RMSNORM_WARP_SHUFFLE", "fast_math", "max_registers"]
        assert dry["spec_problems"] == []
        assert any("applied: vectorize" in line for line in dry["report"])

        wrote = await call(client, "templatize", file="rmsnorm.cu", kernel="rmsnorm_kernel", write=True)
        assert wrote["written"] == ["rmsnorm.cu", "rmsnorm.cutune.toml"]
        assert "#ifndef RMSNORM_VEC" in source.read_text()
        assert 'name = "rmsnorm_kernel"' in (tmp_path / "rmsnorm.cutune.toml").read_text()


async def test_results_say_what_a_tune_found_and_when_there_is_none(tmp_path: Path):
    source = tmp_path / "rmsnorm.cu"
    shutil.copy(RMSNORM, source)
    async with session() as client:
        untuned = await call(client, "results", file=str(source), kernel="rmsnorm_kernel")
        assert untuned["tuned"] is False and untuned["best"] is None
        tune = [str(CUTUNE_BIN), "tune", str(source), "--kernel", "rmsnorm_kernel", "--spec", str(SPEC), "--replay", str(RECORDING)]
        subprocess.run(tune, capture_output=True, text=True, check=True, timeout=300)
        tuned = await call(client, "results", file=str(source), kernel="rmsnorm_kernel")
        assert tuned["tuned"] is True and tuned["measured_on"] == "replay" and tuned["stale"] is False
        assert dict(tuned["best"]["values"]) == {"BLOCK_SIZE": 512, "RMSNORM_VEC": 8}
        assert round(tuned["best"]["time_us"], 2) == 97.06 and round(tuned["best"]["speedup"], 2) == 1.95
        assert tuned["bound_us"] is not None and "97.06" in tuned["summary"]


async def test_bad_input_gets_an_error_that_names_the_problem(tmp_path: Path):
    broken = tmp_path / "rmsnorm.cu"
    shutil.copy(RMSNORM, broken)
    (tmp_path / "rmsnorm.cutune.toml").write_text("version = [\n")
    async with session() as client:
        assert await error_of(client, "list_kernels", file="missing.cu") == "missing.cu: no such file"
        unknown = await error_of(client, "templatize", file="examples/rmsnorm.cu", kernel="nope")
        assert "examples/rmsnorm.cu" in unknown and "nope" in unknown, unknown
        assert await error_of(client, "results", file="examples/rmsnorm.cu", kernel="nope") == "examples/rmsnorm.cu: no kernel named `nope`"
        spec_error = await error_of(client, "templatize", file=str(broken), kernel="rmsnorm_kernel")
        assert "rmsnorm.cutune.toml:" in spec_error and "the existing spec does not parse" in spec_error, spec_error
        other = await error_of(client, "compare", file="examples/rmsnorm.cu", kernel="rmsnorm_kernel", candidate_file="tests/fixtures/compare/rmsnorm_other_signature.cu")
        assert "its `rmsnorm_kernel` does not take what `rmsnorm_kernel` of examples/rmsnorm.cu takes" in other, other
        assert "const float* __restrict__ weight" in other
        bogus = await error_of(client, "verify", file="examples/rmsnorm.cu", kernel="rmsnorm_kernel", stages=["smoke", "bogus"])
        assert bogus == "unknown stage `bogus`: the stages are smoke, shapes, numerics, determinism, edges"
        not_a_parameter = await error_of(client, "verify", file="examples/rmsnorm.cu", kernel="rmsnorm_kernel", config="BLOCK=64")
        assert "`BLOCK` is not a parameter of this kernel (its parameters: BLOCK_SIZE, RMSNORM_UNROLL, RMSNORM_VEC, RMSNORM_ROW_REGS, RMSNORM_WARP_SHUFFLE" in not_a_parameter, not_a_parameter
        # The server is still there after each error.
        assert (await call(client, "list_kernels", file="examples/rmsnorm.cu"))["kernels"]


def replay_project(tmp_path: Path) -> Path:
    """rmsnorm.cu with the spec of the recorded space beside it; the file itself not rewritten,
    so each tune templatizes it in memory first."""
    source = tmp_path / "rmsnorm.cu"
    shutil.copy(RMSNORM, source)
    shutil.copy(SPEC, tmp_path / "rmsnorm.cutune.toml")
    return source


async def test_tune_sends_progress_and_returns_the_verified_best_of_a_replay(tmp_path: Path):
    source = replay_project(tmp_path)
    seen: list[tuple[float, float | None, str | None]] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        seen.append((done, total, message))

    async with session() as client:
        result = await client.call_tool("tune", {"file": str(source), "kernel": "rmsnorm_kernel", "budget": 30, "replay": str(RECORDING)}, progress_callback=progress)
        assert not result.is_error, result.content
        outcome = result.structured_content
        assert outcome["measured_on"].startswith("replay of ") and outcome["measured_on"].endswith("rmsnorm_8192_h100.t4.json")
        assert outcome["stop_reason"] == "space exhausted" and outcome["evaluated"] == 24
        assert dict(outcome["best"]["values"]) == {"BLOCK_SIZE": 512, "RMSNORM_VEC": 8}
        assert round(outcome["best"]["time_us"], 2) == 97.06
        # One notification per evaluation, out of the budget.
        assert [done for done, _, _ in seen] == list(range(1, 25)), seen
        assert all(total == 30 for _, total, _ in seen)
        assert "best 97.06 µs (1.95×)" in seen[-1][2]
        # What the tune stored is what `results` reads.
        stored = await call(client, "results", file=str(source), kernel="rmsnorm_kernel")
        assert stored["stop_reason"] == "space exhausted" and dict(stored["best"]["values"]) == {"BLOCK_SIZE": 512, "RMSNORM_VEC": 8}


async def test_cancelling_a_tune_stops_it_and_keeps_what_it_measured(tmp_path: Path):
    source = replay_project(tmp_path)
    async with session() as client:
        # The run spends its first tens of milliseconds templatizing the file in memory, so the
        # cancellation arrives before the search, as the editor's stop does.
        call = asyncio.create_task(client.call_tool("tune", {"file": str(source), "kernel": "rmsnorm_kernel", "replay": str(RECORDING)}))
        await asyncio.sleep(0.005)
        call.cancel()
        for _ in range(100):
            stored = await call_results(client, source)
            if stored["stop_reason"]:
                break
            await asyncio.sleep(0.05)
        assert stored["stop_reason"] == "cancelled", stored
    with sqlite3.connect(tmp_path / ".cutune" / "results.db") as db:
        (evaluations,) = db.execute("select count(*) from evaluations").fetchone()
    assert evaluations < 24


async def call_results(client: ClientSession, source: Path) -> dict:
    return await call(client, "results", file=str(source), kernel="rmsnorm_kernel")


async def test_the_speed_of_light_is_the_bytes_over_the_bandwidth_and_says_where_its_ceilings_come_from(tmp_path: Path):
    # An empty cache: nothing measured on this machine.
    async with session(env={"XDG_CACHE_HOME": str(tmp_path)}) as client:
        bound = await call(client, "speed_of_light", file="examples/rmsnorm.cu", kernel="rmsnorm_kernel", device="NVIDIA H100 80GB HBM3")
        assert "datasheet" in bound["ceilings"] and "H100 SXM" in bound["ceilings"], bound["ceilings"]
        [shape] = bound["shapes"]
        assert shape["shape"] == "hidden=4096 rows=4095" and shape["limit"] == "memory"
        # `in` read and `out` written (4095 × 4096 halves each), `weight` read (4096 halves).
        assert shape["bytes"] == 2 * 4095 * 4096 * 2 + 4096 * 2
        assert abs(bound["bound_us"] - shape["bytes"] / 3350e3) < 0.01, bound
        nothing_measured = await error_of(client, "speed_of_light", file="examples/rmsnorm.cu", kernel="rmsnorm_kernel")
        assert "no ceilings have been measured on this machine: run `cutune ceilings` on the GPU" in nothing_measured
        unknown = await error_of(client, "speed_of_light", file="examples/rmsnorm.cu", kernel="rmsnorm_kernel", device="Voodoo2")
        assert unknown == "cutune has no datasheet figures for `Voodoo2`"


async def test_check_compiles_a_sample_of_the_space_without_a_gpu():
    async with session() as client:
        checked = await call(client, "check", file="examples/rmsnorm.cu", kernel="rmsnorm_kernel", sample=4)
        assert checked["arch"] == "sm_90" and checked["checked"] == 4 and checked["failed"] == 0, checked
        assert checked["compiled"] + checked["infeasible"] == 4
        [default] = [r for r in checked["results"] if r["is_default"]]
        assert default["status"] == "compiled" and default["registers"] > 0 and dict(default["values"])["BLOCK_SIZE"] == 256, default
        # The whole space, for another architecture.
        whole = await call(client, "check", file="examples/rmsnorm.cu", kernel="rmsnorm_kernel", sample=0, arch="sm_80")
        assert whole["checked"] == whole["space_size"] and whole["arch"] == "sm_80"


async def test_profile_ranks_an_imported_trace_and_a_program_cannot_write_into_the_protocol(tmp_path: Path):
    (tmp_path / ".git").mkdir()
    shutil.copy(REPO / "tests" / "gpu" / "profile" / "inline_scale.cu", tmp_path / "scale.cu")
    trace = torch_trace(tmp_path / "trace.json")
    async with session(tmp_path) as client:
        ranked = await call(client, "profile", **{"import": str(trace)})
        assert ranked["origin"].startswith(str(trace)) and ranked["gpu_ns"] == 100_000 and ranked["kernel_ns"] == 80_000
        first, second = ranked["kernels"]
        assert first["name"] == "scale_rows" and first["launches"] == 2 and round(first["share"], 2) == 0.6
        assert first["source"] == f"{tmp_path / 'scale.cu'}:5" and second["source"] is None
        # A program that prints and reads: its output must not reach the protocol's stream,
        # nor may it read the client's requests.
        no_cuda = await error_of(client, "profile", command=["sh", "-c", "echo not a protocol message; cat"])
        assert "never initialised CUDA, so there is nothing to profile" in no_cuda, no_cuda
        assert await error_of(client, "profile") == "give a `command` to run, or a profile to `import`"
        assert (await call(client, "list_kernels", file="scale.cu"))["kernels"]


async def test_the_spec_and_results_are_resources(tmp_path: Path):
    source = replay_project(tmp_path)
    async with session(tmp_path) as client:
        listed = sorted(str(r.uri) for r in (await client.list_resources()).resources)
        assert listed == ["cutune://results/rmsnorm.cu?kernel=rmsnorm_kernel", "cutune://spec/rmsnorm.cu"], listed
        templates = sorted(t.uri_template for t in (await client.list_resource_templates()).resource_templates)
        assert templates == ["cutune://results/{+file}{?kernel}", "cutune://spec/{+file}"]
        spec = (await client.read_resource("cutune://spec/rmsnorm.cu")).contents[0]
        assert spec.mime_type == "application/toml" and spec.text == (tmp_path / "rmsnorm.cutune.toml").read_text()
        await call(client, "tune", file=str(source), kernel="rmsnorm_kernel", budget=30, replay=str(RECORDING))
        results = json.loads((await client.read_resource("cutune://results/rmsnorm.cu?kernel=rmsnorm_kernel")).contents[0].text)
        assert results["tuned"] is True and dict(results["best"]["values"]) == {"BLOCK_SIZE": 512, "RMSNORM_VEC": 8}
        for uri, said in [
            ("cutune://spec/missing.cu", "missing.cutune.toml: No such file"),
            ("cutune://results/rmsnorm.cu", "name the kernel, as cutune://results/FILE?kernel=NAME"),
            ("cutune://results/rmsnorm.cu?kernel=nope", "rmsnorm.cu: no kernel named `nope`"),
            ("file:///etc/passwd", "cutune's resources are cutune://spec/FILE and cutune://results/FILE?kernel=NAME"),
        ]:
            try:
                await client.read_resource(uri)
            except MCPError as error:
                assert said in error.error.message, (uri, error.error.message)
            else:
                raise AssertionError(f"{uri} was read")


async def test_one_gpu_job_at_a_time_the_second_is_refused_with_what_runs(tmp_path: Path):
    source = replay_project(tmp_path)
    async with session() as client:
        tune = client.call_tool("tune", {"file": str(source), "kernel": "rmsnorm_kernel", "replay": str(RECORDING)})
        verify = client.call_tool("verify", {"file": str(source), "kernel": "rmsnorm_kernel"})
        tuned, verified = await asyncio.gather(tune, verify)
        # Whichever reaches the server first holds the GPU; the other is refused, saying what runs.
        refused = [r.content[0].text for r in (tuned, verified) if r.is_error and r.content[0].text.startswith("the GPU is busy")]
        assert refused in (
            ["the GPU is busy tuning `rmsnorm_kernel`: cancel that request or wait for it (one GPU job at a time)"],
            ["the GPU is busy verifying `rmsnorm_kernel`: cancel that request or wait for it (one GPU job at a time)"],
        ), (tuned.content, verified.content)
        # Once both are over, the slot is free again (this machine has no GPU to verify on).
        after = await error_of(client, "verify", file=str(source), kernel="rmsnorm_kernel")
        assert "the GPU is busy" not in after, after
