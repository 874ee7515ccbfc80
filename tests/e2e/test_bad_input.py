"""Bad input: each gets an error in the client's log or a protocol error, and the server goes on
answering (every test ends with a request that must still succeed)."""

from __future__ import annotations

import asyncio
import json
import random
import time

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams, JsonRpcMethodNotFound

from editor import (
    TIMEOUT_S,
    change_document,
    character,
    edit,
    hover,
    logged,
    open_document,
    published,
    raw_request,
    send_raw,
    span,
    symbols,
)

ERROR_LOG = types.MessageType.Error
WARNING_LOG = types.MessageType.Warning
PROBE = "__global__ void probe() {}\nvoid h() { probe<<<1, 2000>>>(); }\n"


async def still_answering(client, uri: str) -> None:
    """The server still opens, analyses and answers: a fresh document gets its diagnostic and symbol."""
    probe_uri = uri.removesuffix(".cu") + "_probe.cu"
    params = await open_document(client, probe_uri, PROBE)
    assert [(d.range, d.code) for d in params.diagnostics] == [(span(1, 22, 1, 26), "block-too-large")]
    assert [s.name for s in await symbols(client, probe_uri)] == ["probe"]


def random_bytes(seed: int, n: int) -> bytes:
    return random.Random(seed).randbytes(n)


@pytest.mark.parametrize(
    "decode",
    [
        pytest.param(lambda b: b.decode("latin-1"), id="latin-1"),  # every byte a character: NULs, C0/C1 controls
        pytest.param(lambda b: b.decode("utf-8", "replace"), id="utf-8-replace"),  # U+FFFD among controls
    ],
)
async def test_binary_garbage_is_flagged_in_the_log_and_only_gets_syntax_information(client, uri, decode):
    garbage = decode(random_bytes(7, 4096)) + "\x00\x01\x1b[31m\x7f"

    params = await open_document(client, uri, garbage)

    await logged(client, WARNING_LOG, uri, "contains NUL characters", "looks like a binary file")
    assert params.diagnostics, "garbage must not parse cleanly"
    assert {(d.severity, d.code) for d in params.diagnostics} == {(types.DiagnosticSeverity.Information, "syntax")}
    assert await symbols(client, uri) == []
    await still_answering(client, uri)


async def test_garbage_with_unpaired_surrogates_is_repaired_and_kept_in_sync(client, uri):
    # Random bytes decoded with surrogateescape hold lone surrogates; JSON carries them as
    # `\udcXX` escapes, which a JavaScript client can send too. The server replaces each with
    # U+FFFD (one UTF-16 unit, like the surrogate) and keeps the document.
    garbage = "".join(
        c
        for c in random_bytes(11, 512).decode("utf-8", "surrogateescape")
        if "\udc80" <= c <= "\udcff" or (c.isprintable() and c not in "\\*/")
    )
    assert sum("\udc80" <= c <= "\udcff" for c in garbage) > 100
    line = f"/* {garbage} */ void h() {{ probe<<<1, 2000>>>(); }}"
    text = "__global__ void probe() {}\n" + line + "\n"

    params = await open_document(client, uri, text)

    await logged(client, WARNING_LOG, "unpaired UTF-16 surrogate(s)", "U+FFFD")
    repaired = "".join("\ufffd" if "\udc80" <= c <= "\udcff" else c for c in line)
    start = character(repaired, repaired.index("2000"), client.profile.encoding)
    assert [(d.range, d.code) for d in params.diagnostics] == [(span(1, start, 1, start + 4), "block-too-large")]
    if client.profile.encoding == types.PositionEncodingKind.Utf16:
        assert start == line.index("2000"), "a lone surrogate is one UTF-16 unit, and so is U+FFFD"
    assert [s.name for s in await symbols(client, uri)] == ["probe"]


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(b"{not json", id="not-json"),
        pytest.param(b"[1, 2]", id="not-a-message"),
        pytest.param(b"\xff\xfe\x00garbage", id="not-utf-8"),
    ],
)
async def test_a_malformed_message_is_logged_and_skipped(client, uri, body):
    send_raw(client, body)

    await logged(client, ERROR_LOG, "ignoring a message from the client that is not valid JSON-RPC")
    await still_answering(client, uri)


async def test_a_20_mb_file_is_kept_but_not_analysed_and_the_server_stays_quick(client, uri):
    line = "// " + "x" * 96 + "\n"
    big = "__global__ void k() {}\nvoid h() { k<<<1, 2000>>>(); }\n" + line * (20 * 1024 * 1024 // len(line))
    assert len(big.encode()) > 20 * 1024 * 1024 - 100

    params = await open_document(client, uri, big)

    [too_large] = params.diagnostics
    assert too_large.range == span(0, 0, 0, 0)
    assert too_large.severity == types.DiagnosticSeverity.Information
    assert too_large.code == "file-too-large"
    assert too_large.message == "cutune does not analyse this file: 20.0 MiB is over its 8 MiB limit"
    await logged(client, WARNING_LOG, uri, f"is {len(big)} bytes; not analysed")

    started = time.monotonic()
    assert await symbols(client, uri) == []
    assert await hover(client, uri, 1, 12) is None
    await still_answering(client, uri)
    assert time.monotonic() - started < 2.0, "requests must not wait on the big file"

    # The text is kept in sync: cut it back below the limit and it is analysed.
    after = len(client.published)
    change_document(client, uri, 2, edit((2, 0), (len(big.splitlines()), 0), ""))
    params = await published(client, uri, 2, after)
    assert [(d.range, d.code) for d in params.diagnostics] == [(span(1, 18, 1, 22), "block-too-large")]


@pytest.mark.parametrize(
    ("bad", "problem"),
    [
        pytest.param(((0, 23), (0, 23)), "position 0:23 is outside the document (3 lines)", id="past-end-of-line"),
        pytest.param(((5, 0), (5, 0)), "position 5:0 is outside the document (3 lines)", id="past-end-of-file"),
        pytest.param(((0, 0), (40, 2)), "position 40:2 is outside the document (3 lines)", id="end-past-end-of-file"),
        pytest.param(((1, 5), (0, 2)), "range ends (0:2) before it starts (1:5)", id="reversed"),
    ],
)
async def test_a_change_at_an_invalid_position_is_refused_and_the_document_keeps_its_version(
    client, uri, bad, problem
):
    text = "__global__ void k() {}\nvoid h() { k<<<1, 2000>>>(); }\n"  # line 0 is 22 characters long
    await open_document(client, uri, text)
    after = len(client.published)

    change_document(client, uri, 2, edit(*bad, "oops"))

    await logged(client, ERROR_LOG, uri, "(version 2) not applied", problem, "the server keeps version 1")
    republished = await published(client, uri, 1, after)  # diagnostics of the kept version
    assert [(d.range, d.code) for d in republished.diagnostics] == [(span(1, 18, 1, 22), "block-too-large")]
    assert "- block: `2000`" in (await hover(client, uri, 1, 12)).contents.value
    # The next valid change applies to the kept text.
    change_document(client, uri, 3, edit((1, 18), (1, 22), "100"))
    params = await published(client, uri, 3, after)
    assert [(d.range, d.code) for d in params.diagnostics] == [(span(1, 18, 1, 21), "block-not-warp-multiple")]


async def test_a_batch_with_one_invalid_change_applies_none_of_it(client, uri):
    text = "__global__ void k() {}\nvoid h() { k<<<1, 2000>>>(); }\n"
    await open_document(client, uri, text)

    change_document(client, uri, 2, edit((1, 18), (1, 22), "64"), edit((9, 0), (9, 0), "x"))

    await logged(client, ERROR_LOG, uri, "(version 2) not applied", "the server keeps version 1")
    assert "- block: `2000`" in (await hover(client, uri, 1, 12)).contents.value


async def test_changing_or_closing_a_document_that_was_never_opened_is_logged(client, uri):
    change_document(client, uri, 2, edit((0, 0), (0, 0), "x"))
    client.text_document_did_close(types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri)))

    await logged(client, ERROR_LOG, f"didChange for {uri} which is not open; change ignored")
    await logged(client, ERROR_LOG, f"didClose for {uri} which is not open")
    with pytest.raises(JsonRpcInvalidParams, match="document not open"):
        await hover(client, uri, 0, 0)
    await still_answering(client, uri)


async def test_a_notification_with_invalid_params_is_logged(client, uri):
    send_raw(client, json.dumps({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {"uri": uri}}}).encode())

    await logged(client, ERROR_LOG, "ignoring textDocument/didOpen with invalid params", "missing field")
    await still_answering(client, uri)


async def test_an_unknown_request_is_method_not_found(client, uri):
    with pytest.raises(JsonRpcMethodNotFound):
        await asyncio.wait_for(client.protocol.send_request_async("cutune/noSuchMethod", {"x": 1}), TIMEOUT_S)
    client.protocol.notify("cutune/noSuchNotification", {"x": 1})
    await still_answering(client, uri)


async def test_a_request_with_invalid_params_is_invalid_params(client, uri):
    with pytest.raises(JsonRpcInvalidParams, match="expected struct TextDocumentIdentifier"):
        await raw_request(client, types.TEXT_DOCUMENT_HOVER, {"textDocument": 5, "position": {"line": 0, "character": 0}})
    await still_answering(client, uri)


@pytest.mark.parametrize(
    ("line", "character", "message"),
    [
        pytest.param(1, 99, "position 1:99 is outside the document (3 lines)", id="past-end-of-line"),
        pytest.param(3, 0, "position 3:0 is outside the document (3 lines)", id="past-end-of-file"),
        pytest.param(2**31 - 1, 2**31 - 1, "is outside the document", id="huge"),
    ],
)
async def test_hover_at_an_invalid_position_is_invalid_params(client, uri, line, character, message):
    await open_document(client, uri, "__global__ void k() {}\nvoid h() { k<<<1, 2000>>>(); }\n")

    with pytest.raises(JsonRpcInvalidParams, match=message.replace("(", r"\(").replace(")", r"\)")):
        await hover(client, uri, line, character)
    await still_answering(client, uri)


async def test_requests_for_a_document_that_is_not_open_are_invalid_params(client, uri):
    with pytest.raises(JsonRpcInvalidParams, match=f"document not open: {uri}"):
        await hover(client, uri, 0, 0)
    with pytest.raises(JsonRpcInvalidParams, match=f"document not open: {uri}"):
        await symbols(client, uri)
    await still_answering(client, uri)
