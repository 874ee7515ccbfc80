"""Positions after non-ASCII text: UTF-16 units for VS Code, UTF-8 bytes for Neovim.

On each line, `🚀` is 2 UTF-16 units but 4 UTF-8 bytes, and `é` 1 unit but 2 bytes, so every
position after them differs between the two encodings: a server counting in the wrong one puts
ranges in the wrong place and applies edits to the wrong characters.
"""

from __future__ import annotations

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams

from editor import change_document, character, edit, hover, open_document, published, symbols

KERNEL = "/* 🚀 café */ __global__ void rocket(float* x) { x[0] = 1; }"
LAUNCH = "/* 🚀 */ void go(float* x) { rocket<<<1, 2000>>>(x); }"
TEXT = KERNEL + "\n" + LAUNCH + "\n"


def at(client, line_text: str, needle: str, offset: int = 0) -> int:
    """The character, in the session's encoding, of `needle` (plus `offset` code points) in the line."""
    return character(line_text, line_text.index(needle) + offset, client.profile.encoding)


def between(client, line: int, line_text: str, needle: str) -> types.Range:
    start = at(client, line_text, needle)
    end = at(client, line_text, needle, len(needle))
    return types.Range(types.Position(line, start), types.Position(line, end))


async def test_the_encodings_really_differ_on_these_lines(client):
    # Guards the premise of this module: the same code point, two different characters.
    utf8 = character(LAUNCH, LAUNCH.index("2000"), types.PositionEncodingKind.Utf8)
    utf16 = character(LAUNCH, LAUNCH.index("2000"), types.PositionEncodingKind.Utf16)
    assert (utf8, utf16) == (43, 41)


async def test_diagnostic_ranges_count_in_the_negotiated_encoding(client, uri):
    params = await open_document(client, uri, TEXT)

    assert [(d.range, d.code) for d in params.diagnostics] == [(between(client, 1, LAUNCH, "2000"), "block-too-large")]


async def test_symbol_ranges_count_in_the_negotiated_encoding(client, uri):
    await open_document(client, uri, TEXT)

    [rocket] = await symbols(client, uri)

    assert rocket.selection_range == between(client, 0, KERNEL, "rocket")
    assert rocket.range == types.Range(types.Position(0, at(client, KERNEL, "__global__")), types.Position(0, at(client, KERNEL, "}", 1)))


async def test_hover_positions_and_ranges_count_in_the_negotiated_encoding(client, uri):
    await open_document(client, uri, TEXT)

    kernel = await hover(client, uri, 0, at(client, KERNEL, "rocket", 3))
    launch = await hover(client, uri, 1, at(client, LAUNCH, "rocket", 3))

    assert kernel.range == between(client, 0, KERNEL, "rocket")
    assert kernel.contents.value.startswith("```cuda\n__global__ void rocket(float* x)\n```")
    assert launch.range == between(client, 1, LAUNCH, "rocket")
    assert "- block: `2000` — 2000 threads per block" in launch.contents.value


async def test_the_last_character_of_a_line_after_non_ascii_text_is_a_position(client, uri):
    await open_document(client, uri, TEXT)

    # One past `}`: the end of the line, valid in either encoding; nothing to show there.
    assert await hover(client, uri, 0, character(KERNEL, len(KERNEL), client.profile.encoding)) is None
    with pytest.raises(JsonRpcInvalidParams, match="outside the document"):
        await hover(client, uri, 0, character(KERNEL, len(KERNEL), client.profile.encoding) + 1)


async def test_edits_after_non_ascii_text_land_on_the_right_characters(client, uri):
    await open_document(client, uri, TEXT)
    after = len(client.published)

    change_document(client, uri, 2, edit((1, at(client, LAUNCH, "2000")), (1, at(client, LAUNCH, "2000", 4)), "96"))
    params = await published(client, uri, 2, after)

    assert list(params.diagnostics) == []
    launch = await hover(client, uri, 1, at(client, LAUNCH, "rocket"))
    assert "- block: `96` — 96 threads per block" in launch.contents.value


async def test_edits_that_insert_non_ascii_text_shift_later_positions_by_its_units(client, uri):
    await open_document(client, uri, TEXT)
    after = len(client.published)

    change_document(client, uri, 2, edit((1, 3), (1, 3), "🔥é "))  # inside the comment
    shifted = LAUNCH[:3] + "🔥é " + LAUNCH[3:]
    change_document(client, uri, 3, edit((1, at(client, shifted, "2000")), (1, at(client, shifted, "2000", 4)), "100"))
    params = await published(client, uri, 3, after)

    moved = shifted.replace("2000", "100")
    assert [(d.range, d.code) for d in params.diagnostics] == [(between(client, 1, moved, "100"), "block-not-warp-multiple")]


async def test_a_position_inside_a_multi_unit_character_is_invalid(client, uri):
    await open_document(client, uri, TEXT)

    inside_rocket_emoji = at(client, KERNEL, "🚀") + 1  # a surrogate's second half, or a byte inside
    with pytest.raises(JsonRpcInvalidParams, match="position 0:"):
        await hover(client, uri, 0, inside_rocket_emoji)
