"""What an editor does to the `cutune lsp` server, through pytest-lsp's client: start a session
with VS Code's or Neovim's recorded capabilities, open and edit documents, ask for hovers and
symbols, and wait (with a deadline, never forever) for what the server sends back."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import os
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from lsprotocol import types
from pygls.protocol import default_converter
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, register_lsp_features

REPO = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
CUTUNE_BIN = Path(os.environ.get("CUTUNE_BIN", REPO / "target" / "debug" / "cutune"))

# The longest any single wait on the server may take before the test fails (instead of hanging).
TIMEOUT_S = 10.0


@dataclass(frozen=True)
class Profile:
    """An editor as the server sees it: its recorded capabilities and its CUDA language id."""

    name: str
    capabilities: str
    language_id: str
    encoding: types.PositionEncodingKind


# VS Code 1.65 offers no position encodings, so it gets the protocol's UTF-16;
# Neovim 0.11 offers UTF-8 first.
VSCODE = Profile("vscode", "visual-studio-code", "cuda-cpp", types.PositionEncodingKind.Utf16)
NEOVIM = Profile("neovim", "neovim", "cuda", types.PositionEncodingKind.Utf8)
PROFILES = [VSCODE, NEOVIM]


class CutuneClient(LanguageClient):
    """pytest-lsp's client that also keeps every publishDiagnostics with its document version
    (the stock client keeps only the latest diagnostics of each document, without the version)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.published: list[types.PublishDiagnosticsParams] = []
        self.profile: Profile | None = None
        self.statuses: list[dict] = []
        self.hint_refreshes = 0
        self.applied_edits: list[types.WorkspaceEdit] = []
        self.shown_documents: list[types.ShowDocumentParams] = []


def _record_diagnostics(client: CutuneClient, params: types.PublishDiagnosticsParams) -> None:
    client.diagnostics[params.uri] = params.diagnostics
    client.published.append(params)


def _record_status(client: CutuneClient, params) -> None:
    # pygls hands a custom notification's params over as a namedtuple.
    client.statuses.append(params._asdict() if hasattr(params, "_asdict") else dict(params))


def _count_hint_refresh(client: CutuneClient, params) -> None:
    client.hint_refreshes += 1


def _apply_edit(client: CutuneClient, params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
    # The test applies recorded edits itself, to the text it holds.
    client.applied_edits.append(params.edit)
    return types.ApplyWorkspaceEditResult(applied=True)


def _show_document(client: CutuneClient, params: types.ShowDocumentParams) -> types.ShowDocumentResult:
    client.shown_documents.append(params)
    return types.ShowDocumentResult(success=True)


def _make_client() -> CutuneClient:
    client = CutuneClient(converter_factory=default_converter)
    register_lsp_features(
        client,
        {
            **DEFAULT_CLIENT_FEATURES,
            types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS: _record_diagnostics,
            "cutune/status": _record_status,
            types.WORKSPACE_INLAY_HINT_REFRESH: _count_hint_refresh,
            types.WORKSPACE_APPLY_EDIT: _apply_edit,
            types.WINDOW_SHOW_DOCUMENT: _show_document,
        },
    )
    return client


SERVER = ClientServerConfig(
    server_command=[str(CUTUNE_BIN), "lsp"],
    client_factory=_make_client,
    server_env={**os.environ, "RUST_BACKTRACE": "1"},
)


async def start_session(client: CutuneClient, profile: Profile) -> types.InitializeResult:
    client.profile = profile
    return await asyncio.wait_for(
        client.initialize_session(types.InitializeParams(capabilities=client_capabilities(profile.capabilities))),
        TIMEOUT_S,
    )


def server_process(client: LanguageClient) -> asyncio.subprocess.Process:
    # pytest-lsp offers no public handle on the server process; tests need its exit code, and
    # its stdin to send bytes that the typed client cannot.
    assert client._server is not None, "server not started"
    return client._server


async def exit_code(client: LanguageClient) -> int:
    return await asyncio.wait_for(server_process(client).wait(), TIMEOUT_S)


async def end_session(client: LanguageClient) -> None:
    """Shuts the server down cleanly if it still runs; kills it rather than let teardown hang."""
    process = server_process(client)
    if process.returncode is None and client.error is None:
        try:
            await asyncio.wait_for(client.shutdown_session(), TIMEOUT_S)
        except (asyncio.TimeoutError, RuntimeError):
            pass
    if process.returncode is None:
        process.kill()
        await process.wait()


async def eventually(client: LanguageClient, condition: Callable[[], object], what: str):
    """Waits until `condition()` is truthy and returns its value. Fails the test as soon as the
    server has exited, or after TIMEOUT_S."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + TIMEOUT_S
    while not (value := condition()):
        if (code := server_process(client).returncode) is not None:
            pytest.fail(f"the server exited with code {code} while the test waited for {what}")
        if loop.time() > deadline:
            pytest.fail(f"timed out after {TIMEOUT_S} s waiting for {what}")
        await asyncio.sleep(0.005)
    return value


async def published(
    client: CutuneClient, uri: str, version: int | None, after: int = 0
) -> types.PublishDiagnosticsParams:
    """The first publishDiagnostics for `uri` at `version` (None: without one) among those
    received since index `after` of `client.published`."""

    def find():
        return next((p for p in client.published[after:] if p.uri == uri and p.version == version), None)

    return await eventually(client, find, f"diagnostics for {uri} version {version}")


async def logged(client: LanguageClient, kind: types.MessageType, *parts: str) -> types.LogMessageParams:
    """The first window/logMessage of `kind` whose text contains each of `parts`."""

    def find():
        return next(
            (m for m in client.log_messages if m.type == kind and all(p in m.message for p in parts)), None
        )

    return await eventually(client, find, f"a {kind.name} log message containing {parts!r}")


async def open_document(
    client: CutuneClient, uri: str, text: str, version: int = 1, language_id: str | None = None
) -> types.PublishDiagnosticsParams:
    """Opens a document with the editor's language id and returns the diagnostics it gets."""
    assert client.profile is not None, "session not started"
    after = len(client.published)
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            types.TextDocumentItem(
                uri=uri, language_id=language_id or client.profile.language_id, version=version, text=text
            )
        )
    )
    return await published(client, uri, version, after)


def change_document(
    client: LanguageClient, uri: str, version: int, *changes: types.TextDocumentContentChangeEvent
) -> None:
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=list(changes),
        )
    )


def edit(start: tuple[int, int], end: tuple[int, int], text: str) -> types.TextDocumentContentChangeEvent:
    """An incremental change: replace the text between two (line, character) positions."""
    return types.TextDocumentContentChangePartial(
        range=types.Range(start=types.Position(*start), end=types.Position(*end)), text=text
    )


async def hover(client: LanguageClient, uri: str, line: int, character: int) -> types.Hover | None:
    return await asyncio.wait_for(
        client.text_document_hover_async(
            types.HoverParams(types.TextDocumentIdentifier(uri), types.Position(line, character))
        ),
        TIMEOUT_S,
    )


async def symbols(client: LanguageClient, uri: str) -> list[types.DocumentSymbol]:
    return await asyncio.wait_for(
        client.text_document_document_symbol_async(types.DocumentSymbolParams(types.TextDocumentIdentifier(uri))),
        TIMEOUT_S,
    )


def span(start_line: int, start_char: int, end_line: int, end_char: int) -> types.Range:
    """A range from 0-based lines and characters, in the session's position encoding."""
    return types.Range(types.Position(start_line, start_char), types.Position(end_line, end_char))


def fixture_text(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def character(line: str, index: int, encoding: types.PositionEncodingKind) -> int:
    """The LSP `character` of the code point at `index` in `line`, counted in `encoding`'s units."""
    codec = {types.PositionEncodingKind.Utf8: "utf-8", types.PositionEncodingKind.Utf16: "utf-16-le"}[encoding]
    unit = 2 if encoding == types.PositionEncodingKind.Utf16 else 1
    return len(line[:index].encode(codec)) // unit


def send_raw(client: LanguageClient, body: bytes) -> None:
    """Writes one framed message to the server as is: for input the typed client cannot produce."""
    server_process(client).stdin.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))


async def raw_request(client: LanguageClient, method: str, params: object) -> object:
    """Sends a request whose params the typed client would refuse to serialise; returns its result
    or raises pygls's exception for the error response."""
    msg_id = f"raw-{uuid.uuid4()}"
    response: concurrent.futures.Future = concurrent.futures.Future()
    # pygls matches responses to the futures it keeps by id; register ours the same way.
    client.protocol._request_futures[msg_id] = response
    send_raw(client, json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}).encode())
    return await asyncio.wait_for(asyncio.wrap_future(response), TIMEOUT_S)
