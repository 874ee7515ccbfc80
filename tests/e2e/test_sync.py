"""didOpen, incremental and full didChange, didClose: the server's text follows the editor's."""

from __future__ import annotations

from lsprotocol import types

from editor import change_document, edit, fixture_text, hover, open_document, published, span, symbols

ERROR = types.DiagnosticSeverity.Error
WARNING = types.DiagnosticSeverity.Warning


def findings(params: types.PublishDiagnosticsParams) -> list[tuple[types.Range, str]]:
    return [(d.range, d.code) for d in params.diagnostics]


async def test_several_incremental_edits_sent_at_once_all_apply_in_order(client, uri):
    await open_document(client, uri, fixture_text("kernels.cu"))
    after = len(client.published)

    # As an editor sends keystrokes: each change is relative to the text the previous one left.
    change_document(client, uri, 2, edit((17, 13), (17, 16), "256"))  # scale<<<1, 512>>> -> 256
    change_document(client, uri, 3, edit((0, 0), (0, 0), "#include <cuda_runtime.h>\n"))  # every line moves down
    change_document(client, uri, 4, edit((12, 23), (12, 28), "1024"))  # big[16384] -> big[1024]
    change_document(
        client,
        uri,
        5,
        edit((15, 0), (15, 0), "__device__ int twice(int x) { return 2 * x; }\n"),  # a new device function
        edit((20, 19), (20, 23), "1024"),  # then, in the same batch, huge_shared<<<1, 2048>>> -> 1024
    )
    params = await published(client, uri, 5, after)

    assert findings(params) == [(span(21, 19, 21, 22), "block-not-warp-multiple")]
    assert [(s.name, s.selection_range) for s in await symbols(client, uri)] == [
        ("square", span(3, 17, 3, 23)),
        ("scale", span(5, 39, 5, 44)),
        ("huge_shared", span(11, 16, 11, 27)),
        ("twice", span(15, 15, 15, 20)),
    ]
    scale = await hover(client, uri, 5, 40)
    assert "- line 20: `<<<1, 256>>>` — 256 threads" in scale.contents.value


async def test_incremental_edits_give_what_a_fresh_open_of_the_same_text_gives(client, uri):
    text = fixture_text("kernels.cu")
    await open_document(client, uri, text)
    after = len(client.published)

    # Delete the whole `square` function across lines, then retype the launch bounds.
    change_document(client, uri, 2, edit((2, 0), (4, 0), ""))
    change_document(client, uri, 3, edit((2, 34), (2, 37), "1024"))
    edited = await published(client, uri, 3, after)

    lines = text.splitlines(keepends=True)
    expected = "".join(lines[:2] + lines[4:]).replace("__launch_bounds__(256)", "__launch_bounds__(1024)")
    fresh_uri = uri.removesuffix(".cu") + "_fresh.cu"
    fresh = await open_document(client, fresh_uri, expected)
    assert edited.diagnostics == fresh.diagnostics
    assert await symbols(client, uri) == await symbols(client, fresh_uri)
    assert findings(edited) == [
        (span(8, 16, 8, 27), "static-shared-over-48k"),
        (span(16, 19, 16, 23), "block-too-large"),
        (span(17, 19, 17, 22), "block-not-warp-multiple"),
    ]


async def test_a_full_text_change_replaces_the_document(client, uri):
    await open_document(client, uri, fixture_text("kernels.cu"))
    after = len(client.published)

    change_document(
        client, uri, 2, types.TextDocumentContentChangeWholeDocument(text="__global__ void only() {}\n")
    )
    params = await published(client, uri, 2, after)

    assert list(params.diagnostics) == []
    assert [s.name for s in await symbols(client, uri)] == ["only"]


async def test_edits_that_fix_everything_publish_an_empty_list(client, uri):
    text = "__global__ void k() {}\nvoid h() { k<<<1, 2000>>>(); }\n"
    opened = await open_document(client, uri, text)
    assert findings(opened) == [(span(1, 18, 1, 22), "block-too-large")]
    after = len(client.published)

    change_document(client, uri, 2, edit((1, 18), (1, 22), "128"))
    params = await published(client, uri, 2, after)

    assert list(params.diagnostics) == []


async def test_closing_a_document_clears_its_diagnostics_and_forgets_it(client, uri):
    opened = await open_document(client, uri, "__global__ void k() {}\nvoid h() { k<<<1, 2000>>>(); }\n")
    assert len(opened.diagnostics) == 1
    after = len(client.published)

    client.text_document_did_close(types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri)))
    cleared = await published(client, uri, None, after)

    assert list(cleared.diagnostics) == []
    # Reopened with other text, it is analysed afresh.
    reopened = await open_document(client, uri, "__global__ void k() {}\n", version=7)
    assert list(reopened.diagnostics) == []


async def test_a_request_sent_right_after_edits_sees_all_of_them(client, uri):
    await open_document(client, uri, "__global__ void k() {}\nvoid h() { k<<<1, 2000>>>(); }\n")
    after = len(client.published)

    # Typing: delete the block size, then enter a new one a keystroke at a time, and hover at
    # once, without waiting for any diagnostics.
    change_document(client, uri, 2, edit((1, 18), (1, 22), ""))
    for version, (column, key) in enumerate([(18, "5"), (19, "1"), (20, "2")], start=3):
        change_document(client, uri, version, edit((1, column), (1, column), key))
    launch = await hover(client, uri, 1, 12)

    assert "- block: `512` — 512 threads per block" in launch.contents.value
    params = await published(client, uri, 5, after)
    assert list(params.diagnostics) == []
