"""initialize (capabilities, position-encoding negotiation), shutdown and exit."""

from __future__ import annotations

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidRequest
from pytest_lsp import client_capabilities

from editor import NEOVIM, PROFILES, VSCODE, exit_code, hover, logged, server_process, start_session


@pytest.mark.parametrize("profile", PROFILES, ids=[p.name for p in PROFILES])
async def test_initialize_announces_sync_hover_symbols_and_the_negotiated_encoding(bare_client, profile):
    result = await start_session(bare_client, profile)

    caps = result.capabilities
    assert caps.position_encoding == profile.encoding
    assert caps.text_document_sync == types.TextDocumentSyncOptions(
        open_close=True, change=types.TextDocumentSyncKind.Incremental, save=True
    )
    assert caps.hover_provider is True
    assert caps.document_symbol_provider is True
    assert result.server_info is not None and result.server_info.name == "cutune"
    units = {VSCODE.encoding: "UTF-16", NEOVIM.encoding: "UTF-8"}[profile.encoding]
    await logged(bare_client, types.MessageType.Info, "ready; positions in " + units)


def test_the_profiles_differ_in_what_they_offer():
    # The negotiation tests rely on this: VS Code 1.65 offers no position encodings (so the
    # protocol's UTF-16 applies), Neovim offers UTF-8 first.
    assert client_capabilities(VSCODE.capabilities).general.position_encodings is None
    assert client_capabilities(NEOVIM.capabilities).general.position_encodings[0] == "utf-8"


@pytest.mark.parametrize(
    ("offered", "chosen"),
    [
        (["utf-16"], types.PositionEncodingKind.Utf16),
        (["utf-32", "utf-16"], types.PositionEncodingKind.Utf16),
        (["utf-32", "utf-8"], types.PositionEncodingKind.Utf8),
    ],
)
async def test_utf8_is_chosen_whenever_offered_and_utf16_otherwise(bare_client, offered, chosen):
    capabilities = client_capabilities(VSCODE.capabilities)
    capabilities.general.position_encodings = offered
    bare_client.profile = VSCODE
    result = await bare_client.initialize_session(types.InitializeParams(capabilities=capabilities))
    assert result.capabilities.position_encoding == chosen


async def test_shutdown_then_exit_ends_with_code_0(fresh_client):
    await fresh_client.shutdown_async(None)
    fresh_client.exit(None)
    assert await exit_code(fresh_client) == 0


async def test_exit_without_shutdown_ends_with_code_1(fresh_client):
    fresh_client.exit(None)
    assert await exit_code(fresh_client) == 1


async def test_closing_stdin_ends_the_server(fresh_client):
    server_process(fresh_client).stdin.close()
    assert await exit_code(fresh_client) == 1


async def test_closing_stdin_after_shutdown_ends_with_code_0(fresh_client):
    await fresh_client.shutdown_async(None)
    server_process(fresh_client).stdin.close()
    assert await exit_code(fresh_client) == 0


async def test_requests_after_shutdown_are_invalid(fresh_client):
    await fresh_client.shutdown_async(None)
    with pytest.raises(JsonRpcInvalidRequest):
        await hover(fresh_client, "file:///w/any.cu", 0, 0)
    fresh_client.exit(None)
    assert await exit_code(fresh_client) == 0
