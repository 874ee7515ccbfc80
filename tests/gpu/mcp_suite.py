"""GPU suite of `cutune mcp`, driven by the Python SDK's stdio client as a coding agent drives it,
on the lent GPU machine. Each tool on the GPU:
  profile         a program built from tests/gpu/profile/three_kernels.cu: three kernels ranked
                  and found in the workspace, `medium` captured;
  check           a sample of examples/rmsnorm.cu's space compiled, none failing;
  tune            rmsnorm with progress notifications, its best verified in five stages, faster
                  than the original; a second GPU job meanwhile is refused with what runs;
  verify          the defaults, in five stages;
  speed_of_light  the bound against the device's datasheet;
  compare         tests/fixtures/compare/: the fast variant verified and faster, the wrong one
                  named at its stage and index, the out-of-bounds one caught by the guard bytes;
  results         the tune's best, as a tool and as a resource.
One line per check; a JSON summary to $OUT/mcp_suite.json; exits 1 if any check fails.
  (the mcp package, carried as wheels) python3 tests/gpu/mcp_suite.py CUTUNE THREE_KERNELS_BINARY
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "compare"
results: dict[str, object] = {}
failed: list[str] = []


def expect(name: str, ok: bool, detail: object) -> None:
    results[name] = detail
    print(f"{'PASS' if ok else 'FAIL'} {name}: {json.dumps(detail, default=str)[:900]}", flush=True)
    if not ok:
        failed.append(name)


async def call(client: ClientSession, tool: str, progress=None, **arguments):
    started = time.perf_counter()
    result = await client.call_tool(tool, arguments, progress_callback=progress)
    seconds = time.perf_counter() - started
    if result.is_error:
        return None, result.content[0].text, seconds
    return result.structured_content, None, seconds


async def suite(cutune: str, three_kernels: str) -> None:
    work = Path(tempfile.mkdtemp(prefix="cutune-mcp-"))
    # Its own root: `.cutune/` marks it, and holds its results.
    (work / ".cutune").mkdir()
    for name in ["rmsnorm.cu", "rmsnorm.cutune.toml"]:
        shutil.copy(REPO / "examples" / name, work / name)
    source = str(work / "rmsnorm.cu")
    params = StdioServerParameters(command=cutune, args=["mcp"], cwd=str(work), env=dict(os.environ))
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as client:
            await client.initialize()
            tools = sorted(t.name for t in (await client.list_tools()).tools)
            expect("tools", len(tools) == 9, tools)

            profile_root = REPO / "tests" / "gpu" / "profile"
            ranked, error, seconds = await call(client, "profile", command=[three_kernels], capture=["medium"], root=str(profile_root))
            ok = ranked is not None and len(ranked["kernels"]) == 3 and all(k["source"] for k in ranked["kernels"]) and [c["kernel"] for c in ranked["captures"]] == ["medium"]
            expect("profile", ok, error or {"seconds": round(seconds, 2), "kernels": [(k["name"], round(k["share"], 3), k["source"]) for k in ranked["kernels"]], "captures": ranked["captures"]})

            checked, error, seconds = await call(client, "check", file=source, kernel="rmsnorm_kernel", sample=8)
            ok = checked is not None and checked["failed"] == 0 and checked["compiled"] >= 1
            expect("check", ok, error or {k: checked[k] for k in ["space_size", "checked", "compiled", "infeasible", "failed"]} | {"seconds": round(seconds, 2)})

            seen: list[tuple[float, float | None, str | None]] = []

            async def progress(done: float, total: float | None, message: str | None) -> None:
                seen.append((done, total, message))

            tune = asyncio.create_task(call(client, "tune", progress, file=source, kernel="rmsnorm_kernel", budget=24))
            await asyncio.sleep(0.5)
            _, busy, _ = await call(client, "compare", file=source, kernel="rmsnorm_kernel", candidate_file=str(FIXTURES / "rmsnorm_fast.cu"))
            expect("one GPU job at a time", busy is not None and "the GPU is busy tuning `rmsnorm_kernel`" in busy, busy)
            tuned, error, seconds = await tune
            best = tuned and tuned["best"]
            ok = best is not None and best["verified"] and best["speedup"] > 1.0 and len(seen) == tuned["evaluated"]
            expect("tune", ok, error or {"seconds": round(seconds, 1), "measured_on": tuned["measured_on"], "baseline_us": tuned["baseline_us"], "best": best, "evaluated": tuned["evaluated"], "progress": len(seen), "stop": tuned["stop_reason"]})

            verified, error, seconds = await call(client, "verify", file=source, kernel="rmsnorm_kernel")
            expect("verify", verified is not None and verified["passed"], error or {"summary": verified["summary"], "cases": len(verified["cases"]), "seconds": round(seconds, 1)})
            device = verified["device"] if verified else "NVIDIA H100 80GB HBM3"

            bound, error, _ = await call(client, "speed_of_light", file=source, kernel="rmsnorm_kernel", device=device)
            expect("speed_of_light", bound is not None and bound["bound_us"] > 0, error or bound)

            for name, kernel, want in [
                ("rmsnorm_fast", None, lambda c: c["verified"] and c["speedup"] > 1.0),
                ("rmsnorm_wrong", "rmsnorm_kernel", lambda c: not c["verified"] and re.search(r"`out`\[\d+\]", c["failure"] or "") is not None),
                ("rmsnorm_out_of_bounds", "rmsnorm_kernel", lambda c: not c["verified"] and re.search(r"out of bounds|guard|past", (c["failure"] or "").lower()) is not None),
            ]:
                arguments = {"file": source, "kernel": "rmsnorm_kernel", "candidate_file": str(FIXTURES / f"{name}.cu")} | ({"candidate_kernel": kernel} if kernel else {})
                compared, error, seconds = await call(client, "compare", **arguments)
                expect(f"compare {name}", compared is not None and want(compared), error or compared | {"seconds": round(seconds, 1)})

            stored, error, _ = await call(client, "results", file=source, kernel="rmsnorm_kernel")
            expect("results", stored is not None and stored["tuned"] and stored["best"] is not None, error or {k: stored[k] for k in ["measured_on", "baseline_us", "bound_us", "best"]})
            resource = await client.read_resource("cutune://results/rmsnorm.cu?kernel=rmsnorm_kernel")
            as_resource = json.loads(resource.contents[0].text)
            expect("results resource", stored is not None and stored["best"] is not None and as_resource["best"] == stored["best"], as_resource["best"])


def main() -> int:
    cutune, three_kernels = sys.argv[1:3]
    asyncio.run(suite(cutune, three_kernels))
    out = Path(os.environ.get("OUT", REPO / "gpu-out"))
    out.mkdir(parents=True, exist_ok=True)
    (out / "mcp_suite.json").write_text(json.dumps({"results": results, "failed": failed}, indent=1, default=str))
    print(f"{len(results) - len(failed)} of {len(results)} checks passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
