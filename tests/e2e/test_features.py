"""documentSymbol, hover and publishDiagnostics on open CUDA files."""

from __future__ import annotations

import pytest
from lsprotocol import types

from editor import fixture_text, hover, open_document, span, symbols

ERROR = types.DiagnosticSeverity.Error
WARNING = types.DiagnosticSeverity.Warning
INFORMATION = types.DiagnosticSeverity.Information


def findings(params: types.PublishDiagnosticsParams) -> list[tuple[types.Range, types.DiagnosticSeverity, str]]:
    for d in params.diagnostics:
        assert d.source == "cutune", d
    return [(d.range, d.severity, d.code) for d in params.diagnostics]


async def test_document_symbols_are_the_kernels_and_device_functions_in_source_order(client, uri):
    await open_document(client, uri, fixture_text("kernels.cu"))

    result = await symbols(client, uri)

    assert [(s.name, s.detail, s.kind, s.range, s.selection_range) for s in result] == [
        ("square", "__device__", types.SymbolKind.Function, span(2, 0, 2, 50), span(2, 17, 2, 23)),
        ("scale", "__global__", types.SymbolKind.Function, span(4, 0, 8, 1), span(4, 39, 4, 44)),
        ("huge_shared", "__global__", types.SymbolKind.Function, span(10, 0, 13, 1), span(10, 16, 10, 27)),
    ]


async def test_prototypes_are_symbols_too(client, uri):
    text = "__global__ void later(int n);\n__device__ int helper(int);\n"
    await open_document(client, uri, text)

    result = await symbols(client, uri)

    assert [(s.name, s.detail, s.range) for s in result] == [
        ("later", "__global__ (prototype)", span(0, 0, 0, 29)),
        ("helper", "__device__ (prototype)", span(1, 0, 1, 27)),
    ]


async def test_diagnostics_flag_the_hardware_limits_each_at_its_exact_range(client, uri):
    params = await open_document(client, uri, fixture_text("kernels.cu"))

    assert findings(params) == [
        (span(10, 16, 10, 27), ERROR, "static-shared-over-48k"),  # `huge_shared`, 64 KiB of __shared__
        (span(17, 13, 17, 16), ERROR, "exceeds-launch-bounds"),  # 512 > __launch_bounds__(256)
        (span(18, 19, 18, 23), ERROR, "block-too-large"),  # 2048 > 1024
        (span(19, 19, 19, 22), WARNING, "block-not-warp-multiple"),  # 100 % 32 != 0
    ]
    messages = [d.message for d in params.diagnostics]
    assert "declares 64.0 KiB of static shared memory" in messages[0]
    assert "limited to 48 KiB per block" in messages[0]
    assert "uses 512 threads per block" in messages[1] and "`__launch_bounds__(256)` allows at most 256" in messages[1]
    assert "asks for 2048 threads per block" in messages[2] and "at most 1024" in messages[2]
    assert "block of 100 threads" in messages[3] and "28 lanes of the last warp idle" in messages[3]


async def test_block_sizes_within_limits_get_no_diagnostics(client, uri):
    text = (
        "__global__ void __launch_bounds__(512) k(float* x) { x[threadIdx.x] = 0; }\n"
        "void h(float* x) { k<<<8, 512>>>(x); k<<<8, dim3(32, 16)>>>(x); k<<<1, 1024>>>(x); }\n"
    )
    params = await open_document(client, uri, text)

    # Only the 1024-thread launch breaks a rule: the kernel's own bound of 512.
    assert findings(params) == [(span(1, 71, 1, 75), ERROR, "exceeds-launch-bounds")]


async def test_dim3_blocks_count_every_dimension(client, uri):
    text = "__global__ void k() {}\nvoid h() { k<<<1, dim3(64, 32)>>>(); k<<<1, dim3(3, 3, 3)>>>(); }\n"
    params = await open_document(client, uri, text)

    assert findings(params) == [
        (span(1, 18, 1, 30), ERROR, "block-too-large"),
        (span(1, 44, 1, 57), WARNING, "block-not-warp-multiple"),
    ]
    assert "2048 threads per block (64×32)" in params.diagnostics[0].message
    assert "block of 27 threads (3×3×3)" in params.diagnostics[1].message


async def test_syntax_errors_are_information_at_the_error_and_missing_nodes(client, uri):
    text = (
        "void h() { f(1, 2; }\n"  # MISSING `)`
        "__global__ void j() { @@@ }\n"  # ERROR: `@@@`
    )
    params = await open_document(client, uri, text)

    assert [(d.range, d.severity, d.code, d.message) for d in params.diagnostics] == [
        (span(0, 17, 0, 17), INFORMATION, "syntax", "syntax: missing `)`"),
        (span(1, 22, 1, 25), INFORMATION, "syntax", "syntax: unexpected `@@@`"),
    ]


async def test_valid_cuda_gets_an_empty_diagnostics_list(client, uri):
    params = await open_document(client, uri, fixture_text("reduce.cu"))

    assert list(params.diagnostics) == []


async def test_hover_on_a_kernel_name_shows_signature_bounds_shared_memory_launches_and_tunables(client, uri):
    await open_document(client, uri, fixture_text("kernels.cu"))

    result = await hover(client, uri, 4, 42)  # inside `scale`

    assert result.range == span(4, 39, 4, 44)
    assert result.contents.kind == types.MarkupKind.Markdown
    md = result.contents.value
    assert md.startswith(
        "```cuda\n__global__ void __launch_bounds__(256) scale(float* out, const float* in, int n)\n```\n"
    )
    assert "**Launch bounds:** at most 256 threads per block" in md
    assert "**Static shared memory:** 4.1 KiB" in md
    assert "- `float tile[TILE][TILE + 1]`: 4.1 KiB" in md
    assert "- line 17: `<<<(n + 255) / 256, 256>>>` — 256 threads" in md
    assert "- line 18: `<<<1, 512>>>` — 512 threads" in md
    assert "**Tunable sites:**" in md
    for site in (
        "- line 1: `#define` constant `TILE` = 32",
        "- line 5: `__launch_bounds__` max threads `256` = 256",
        "- line 6: shared array dimension `TILE + 1` = 33",
        "- line 7: `blockDim` use `blockDim.x`",
        "- line 17: grid follows block size `255` = 255",
        "- line 18: block size at launch `512` = 512",
    ):
        assert site in md


async def test_hover_on_a_launch_site_shows_its_configuration_then_the_kernel(client, uri):
    await open_document(client, uri, fixture_text("reduce.cu"))

    result = await hover(client, uri, 11, 4)  # `reduce` in `reduce<8><<<grid, BLOCK, ...>>>`

    assert result.range.start == types.Position(11, 2)
    md = result.contents.value
    launch, kernel = md.split("\n---\n")
    assert launch.splitlines() == [
        "**Launch of `reduce`**",
        "",
        "- grid: `grid` = 64×2",
        "- block: `BLOCK` — 128 threads per block",
        "- dynamic shared memory: `BLOCK * sizeof(float)`",
        "- stream: `stream`",
    ]
    assert "template <int ITEMS> __global__ void __launch_bounds__(BLOCK, 4) reduce(" in kernel
    assert "**Launch bounds:** at most BLOCK threads per block, at least 4 blocks per SM" in kernel
    assert "- `float partial`: dynamic (`extern`)" in kernel
    assert "- line 7: loop stride `BLOCK` = 128" in kernel
    assert "- line 6: `#pragma unroll` `#pragma unroll 4` = 4" in kernel
    assert "- line 12: template argument at launch `8` = 8" in kernel


async def test_hover_on_the_launch_configuration_is_the_launch_too(client, uri):
    await open_document(client, uri, fixture_text("kernels.cu"))

    on_callee = await hover(client, uri, 17, 3)
    on_block = await hover(client, uri, 17, 14)  # the `512` in `scale<<<1, 512>>>`

    assert on_block.range == on_callee.range == span(17, 2, 17, 7)
    assert on_block.contents.value.startswith("**Launch of `scale`**\n\n- grid: `1` = 1\n- block: `512` — 512 threads per block\n")


async def test_hover_of_a_launched_kernel_from_another_file_says_so(client, uri):
    await open_document(client, uri, "void h(float* x) { elsewhere<<<4, 128>>>(x); }\n")

    result = await hover(client, uri, 0, 20)

    assert result.range == span(0, 19, 0, 28)
    assert "**Launch of `elsewhere`**" in result.contents.value
    assert "`elsewhere` is not declared in this file." in result.contents.value


async def test_hover_away_from_kernels_and_launches_is_empty(client, uri):
    await open_document(client, uri, fixture_text("kernels.cu"))

    assert await hover(client, uri, 0, 3) is None  # `#define`
    assert await hover(client, uri, 6, 10) is None  # a statement in a kernel body


@pytest.mark.parametrize("language_id", ["cuda-cpp", "cuda"])
async def test_both_editors_language_ids_are_analysed_whatever_the_file_name(client, uri, language_id):
    doc = uri.removesuffix(".cu") + ".txt"
    params = await open_document(client, doc, "__global__ void k() {}\nvoid h() { k<<<1, 2000>>>(); }\n", language_id=language_id)

    assert findings(params) == [(span(1, 18, 1, 22), ERROR, "block-too-large")]


async def test_cu_files_are_analysed_whatever_their_language_id(client, uri):
    params = await open_document(client, uri, "__global__ void k() {}\nvoid h() { k<<<1, 2000>>>(); }\n", language_id="cpp")

    assert findings(params) == [(span(1, 18, 1, 22), ERROR, "block-too-large")]
