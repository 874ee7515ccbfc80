"""Fixtures: `cutune lsp` processes initialized as VS Code or as Neovim.

The debug server takes about half a second to start (it compiles its tree-sitter queries), so
the tests of one module share a session per editor profile (`client`), each test on documents
of its own (`uri`); only the lifecycle tests get a process of their own (`fresh_client`).
"""

from __future__ import annotations

import os
import re

import pytest
import pytest_lsp

from editor import CUTUNE_BIN, PROFILES, SERVER, CutuneClient, end_session, start_session

pytest_plugins = ["pytester"]


def pytest_configure(config: pytest.Config) -> None:
    # Fail the whole run, loudly, rather than skip: a missing binary is a broken setup.
    if not CUTUNE_BIN.is_file() or not os.access(CUTUNE_BIN, os.X_OK):
        raise pytest.UsageError(
            f"cutune server binary not found (or not executable) at {CUTUNE_BIN}.\n"
            "Build it with `cargo build` in the repository root, or set CUTUNE_BIN to the "
            "binary's absolute path."
        )


PROFILE_IDS = [p.name for p in PROFILES]


@pytest_lsp.fixture(config=SERVER, params=PROFILES, ids=PROFILE_IDS, scope="module")
async def client(lsp_client: CutuneClient, request: pytest.FixtureRequest):
    """An initialized session shared by the module's tests; each runs once per editor profile."""
    await start_session(lsp_client, request.param)
    yield
    await end_session(lsp_client)


@pytest_lsp.fixture(config=SERVER, params=PROFILES, ids=PROFILE_IDS)
async def fresh_client(lsp_client: CutuneClient, request: pytest.FixtureRequest):
    """An initialized session in a process of its own, for tests that end it."""
    await start_session(lsp_client, request.param)
    yield
    await end_session(lsp_client)


@pytest_lsp.fixture(config=SERVER)
async def bare_client(lsp_client: CutuneClient):
    """A started server that has not been initialized: for the lifecycle tests."""
    yield
    await end_session(lsp_client)


@pytest.fixture
def uri(request: pytest.FixtureRequest) -> str:
    """A document URI that no other test uses, so tests can share a session."""
    return "file:///work/" + re.sub(r"[^A-Za-z0-9_-]+", "_", request.node.name) + ".cu"
