"""The `Templatize kernel NAME` code action: offered inside a kernel, resolved into one
workspace edit of the `.cu` file (the same text as `cutune templatize`) and of its spec."""

from __future__ import annotations

import asyncio
import os
import subprocess
import tomllib
from pathlib import Path

from lsprotocol import types

from editor import CUTUNE_BIN, REPO, TIMEOUT_S, character, hover, open_document

RMSNORM = REPO / "examples" / "rmsnorm.cu"


async def code_actions(client, uri: str, line: int, col: int) -> list[types.CodeAction]:
    params = types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri),
        range=types.Range(types.Position(line, col), types.Position(line, col)),
        context=types.CodeActionContext(diagnostics=[]),
    )
    result = await asyncio.wait_for(client.text_document_code_action_async(params), TIMEOUT_S)
    return [a for a in result or [] if isinstance(a, types.CodeAction)]


async def resolved(client, action: types.CodeAction) -> types.CodeAction:
    if action.edit is not None:
        return action
    return await asyncio.wait_for(client.code_action_resolve_async(action), TIMEOUT_S)


def offset(text: str, position: types.Position, encoding: types.PositionEncodingKind) -> int:
    lines = text.split("\n")
    before = sum(len(l) + 1 for l in lines[: position.line])
    line = lines[position.line] if position.line < len(lines) else ""
    index = next((i for i in range(len(line) + 1) if character(line, i, encoding) >= position.character), len(line))
    return before + index


def apply(text: str, edits: list[types.TextEdit], encoding: types.PositionEncodingKind) -> str:
    spans = sorted(((offset(text, e.range.start, encoding), offset(text, e.range.end, encoding), e.new_text) for e in edits), reverse=True)
    for start, end, new in spans:
        text = text[:start] + new + text[end:]
    return text


def line_of(text: str, needle: str) -> int:
    return next(i for i, l in enumerate(text.split("\n")) if needle in l)


async def test_templatize_is_offered_inside_a_kernel_and_nowhere_else(client, tmp_path: Path):
    uri = (tmp_path / "rmsnorm.cu").as_uri()
    text = RMSNORM.read_text()
    await open_document(client, uri, text)

    inside = await code_actions(client, uri, line_of(text, "float sum = 0.f;"), 4)
    in_main = await code_actions(client, uri, line_of(text, "int main()"), 2)

    assert [(a.title, a.kind) for a in inside] == [("Templatize kernel rmsnorm_kernel", types.CodeActionKind.RefactorRewrite)]
    assert in_main == []


async def test_the_edit_rewrites_the_file_as_the_cli_does_and_creates_the_spec(client, tmp_path: Path):
    source = tmp_path / "rmsnorm.cu"
    source.write_text(RMSNORM.read_text())
    uri = source.as_uri()
    text = source.read_text()
    await open_document(client, uri, text)

    [action] = await code_actions(client, uri, line_of(text, "float sum = 0.f;"), 4)
    edit = (await resolved(client, action)).edit

    changes = edit.document_changes
    [source_edit] = [c for c in changes if isinstance(c, types.TextDocumentEdit) and c.text_document.uri == uri]
    [create] = [c for c in changes if isinstance(c, types.CreateFile)]
    spec_uri = (tmp_path / "rmsnorm.cutune.toml").as_uri()
    assert create.uri == spec_uri
    [spec_edit] = [c for c in changes if isinstance(c, types.TextDocumentEdit) and c.text_document.uri == spec_uri]
    assert source_edit.text_document.version == 1
    # VS Code shows change annotations (its undo and refactor preview name the change); none
    # needs confirmation, as VS Code's preview leaves those unticked, so its Apply would apply
    # nothing. Neovim 0.11 does not announce support, so it gets plain edits.
    if client.profile.name == "vscode":
        [annotation] = edit.change_annotations.values()
        assert annotation.label == "Templatize kernel rmsnorm_kernel" and annotation.needs_confirmation is False
        assert {e.annotation_id for e in source_edit.edits + spec_edit.edits} == {"cutune-templatize"}
        assert create.annotation_id == "cutune-templatize"
    else:
        assert edit.change_annotations is None
        assert all(not hasattr(e, "annotation_id") for e in source_edit.edits)

    encoding = client.profile.encoding
    new_text = apply(text, source_edit.edits, encoding)
    cli = subprocess.run([str(CUTUNE_BIN), "templatize", str(source), "--kernel", "rmsnorm_kernel"], capture_output=True, text=True, check=True)
    assert new_text == cli.stdout
    assert "#ifndef RMSNORM_VEC" in new_text

    spec = tomllib.loads(apply("", spec_edit.edits, encoding))
    [kernel] = spec["kernels"]
    assert spec["source"] == "rmsnorm.cu"
    assert kernel["name"] == "rmsnorm_kernel"
    assert {p["name"] for p in kernel["params"]} >= {"BLOCK_SIZE", "RMSNORM_UNROLL", "RMSNORM_VEC"}
    assert kernel["shapes"] == [{"hidden": 4096, "rows": 4095}]
    # The source file itself is untouched until the editor applies the edit.
    assert source.read_text() == text


async def test_a_kernel_that_does_not_parse_is_offered_disabled_with_the_reason(client, tmp_path: Path):
    uri = (tmp_path / "broken.cu").as_uri()
    text = "__global__ void broken(float* x) {\n  x[0] = (1 + ;\n}\n"
    await open_document(client, uri, text)

    [action] = await code_actions(client, uri, 1, 2)

    assert action.title == "Templatize kernel broken"
    assert action.edit is None and action.data is None
    assert action.disabled.reason == "kernel `broken` does not parse (line 2): fix it before templatizing"


async def test_the_spec_from_the_action_gets_diagnostics_where_values_are_still_unknown(client, tmp_path: Path):
    # No launch in this file: grid, block and a scalar are left for the user. The lengths come
    # from the bound of the kernel's own loop, `i < n`.
    source = tmp_path / "gelu.cu"
    source.write_text((REPO / "tests" / "fixtures" / "template" / "no_launch.cu").read_text())
    uri, text = source.as_uri(), source.read_text()
    await open_document(client, uri, text)
    [action] = await code_actions(client, uri, line_of(text, "float v = x[i];"), 4)
    edit = (await resolved(client, action)).edit
    spec_uri = (tmp_path / "gelu.cutune.toml").as_uri()
    [spec_edit] = [c for c in edit.document_changes if isinstance(c, types.TextDocumentEdit) and c.text_document.uri == spec_uri]
    spec_text = apply("", spec_edit.edits, client.profile.encoding)

    published = await open_document(client, spec_uri, spec_text, language_id="toml")

    errors = [(d.range.start.line, d.message.split(":")[0]) for d in published.diagnostics if d.severity == types.DiagnosticSeverity.Error]
    assert errors == [
        # Said with why: the kernel's own file was looked at, and no other launches it.
        (line_of(spec_text, 'grid = ["?"]'), "grid extent x is unknown (no launch of `gelu` was found in the workspace)"),
        (line_of(spec_text, 'block = ["?"]'), "block extent x is unknown (no launch of `gelu` was found in the workspace)"),
        (line_of(spec_text, 'name = "n"') + 2, "value of scalar argument `n` is unknown (no launch of `gelu` was found in the workspace)"),
    ]
    for buffer in ("y", "x"):
        assert spec_text.split("\n")[line_of(spec_text, f'name = "{buffer}"') + 2] == 'length = "n"'
    for d in published.diagnostics:
        assert d.source == "cutune"
        line = spec_text.split("\n")[d.range.start.line]
        assert '"?"' in line[d.range.start.character - 1 :], (line, d.range)


async def test_a_quick_fix_writes_the_suggested_value_for_a_question_mark(client, tmp_path: Path):
    # The RMSNorm example's spec with two values taken out.
    spec_text = (REPO / "examples" / "rmsnorm.cutune.toml").read_text()
    spec_text = spec_text.replace('length = "hidden"', 'length = "?"', 1).replace('value = "hidden"', 'value = "?"', 1)
    spec_uri = (tmp_path / "rmsnorm.cutune.toml").as_uri()
    published = await open_document(client, spec_uri, spec_text, language_id="toml")
    unknown = [d.message for d in published.diagnostics if "is unknown" in d.message]
    assert len(unknown) == 2, published.diagnostics
    length_line = line_of(spec_text, 'length = "?"')
    [fix] = await code_actions(client, spec_uri, length_line, 10)
    assert fix.kind == types.CodeActionKind.QuickFix
    assert fix.title == "Write `hidden * rows` for the `?`"
    [edit] = fix.edit.changes[spec_uri]
    assert (edit.range.start.line, edit.new_text) == (length_line, '"hidden * rows"')
    line = spec_text.split("\n")[length_line]
    assert line[edit.range.start.character : edit.range.end.character] == '"?"'
    assert fix.diagnostics and "length of argument `weight` is unknown" in fix.diagnostics[0].message
    # The scalar's suggestion is a size the spec has.
    [fix] = await code_actions(client, spec_uri, line_of(spec_text, 'value = "?"'), 9)
    assert fix.edit.changes[spec_uri][0].new_text == '"hidden"'
    # Nowhere near a `?`, nothing to fix.
    assert await code_actions(client, spec_uri, line_of(spec_text, "[[kernels.shapes]]"), 2) == []
    # The hover on the `?` says the same, with the value.
    shown = await hover(client, spec_uri, length_line, 10)
    assert "length of argument `weight` is unknown" in shown.contents.value
    assert "Quick fix: write `hidden * rows`." in shown.contents.value
    assert await hover(client, spec_uri, line_of(spec_text, "[[kernels.shapes]]"), 2) is None


async def test_a_spec_with_a_syntax_error_gets_one_diagnostic_at_it(client, tmp_path: Path):
    spec_uri = (tmp_path / "broken.cutune.toml").as_uri()
    published = await open_document(client, spec_uri, "version = 1\nsource = \"x.cu\"\nkernels = [\n", language_id="toml")
    [d] = published.diagnostics
    assert d.severity == types.DiagnosticSeverity.Error
    assert d.range.start.line in (2, 3)


ROWS_KERNEL = """\
// Adds a bias to every row of a matrix: a line over eighty columns the formatter leaves alone.
__global__ void add_bias(float *out, const float *in, const float *bias, int cols) {
    const float *row = in + (size_t)blockIdx.x * cols;
    float *out_row = out + (size_t)blockIdx.x * cols;
    for (int i = threadIdx.x; i < cols; i += blockDim.x) {
        out_row[i] = row[i] + bias[i];
    }
}

void add_bias_rows(float *out, const float *in, const float *bias, int rows, int cols) {
    add_bias<<<rows, 128>>>(out, in, bias, cols);
}
"""


def templatize_rows(folder: Path, style: str | None) -> tuple[str, str]:
    """The file `cutune templatize --write` leaves, and what it said, with clang-format (pip's)
    on the PATH and `style` as the project's .clang-format."""
    folder.mkdir()
    (folder / ".cutune").write_text("")
    if style is not None:
        (folder / ".clang-format").write_text(style)
    source = folder / "rows.cu"
    source.write_text(ROWS_KERNEL)
    env = {**os.environ, "PATH": f"{REPO / '.venv' / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    run = subprocess.run([str(CUTUNE_BIN), "templatize", str(source), "--kernel", "add_bias", "--write"], capture_output=True, text=True, env=env, check=True)
    return source.read_text(), run.stderr


def test_the_lines_templatize_writes_follow_the_files_indentation_and_the_projects_clang_format(tmp_path: Path):
    plain, said = templatize_rows(tmp_path / "plain", None)
    assert "clang-format" not in said
    # Without a style: the file's own four-space step, the moved loop bodies one step deeper.
    assert "\n    {\n        typedef typename cutune_bits<ADD_BIAS_VEC * sizeof(float)>::type float_bits;\n" in plain
    assert "\n            for (int i_lane = 0; i_lane < ADD_BIAS_VEC; ++i_lane) {\n                out_row_v[i_lane] = row_v[i_lane] + bias_v[i_lane];\n            }\n" in plain

    formatted, said = templatize_rows(tmp_path / "styled", "BasedOnStyle: LLVM\nIndentWidth: 4\nColumnLimit: 80\n")
    assert "formatted with clang-format" in said
    original = ROWS_KERNEL.splitlines()
    new = formatted.splitlines()
    # Every line of the user's that templatize did not change is still there, long or not.
    assert original[1] in new and len(original[1]) > 80
    written = [line for line in new if line not in original and "<<<" not in line]
    assert written and all(len(line) <= 80 for line in written), [line for line in written if len(line) > 80]
    assert "        const bool i_aligned =\n            cols >= (ADD_BIAS_VEC - i_phase) % ADD_BIAS_VEC &&\n            (unsigned long long)row / sizeof(float) % ADD_BIAS_VEC == i_phase &&\n" in formatted


def test_the_rewrites_that_change_memory_traffic_are_offered_or_refused_with_the_reason(tmp_path: Path):
    source = tmp_path / "block_reduce.cu"
    source.write_text((REPO / "examples" / "block_reduce.cu").read_text())
    (tmp_path / ".cutune").write_text("")
    run = subprocess.run([str(CUTUNE_BIN), "templatize", str(source), "--kernel", "block_reduce_sum_kernel"], capture_output=True, text=True, check=True)
    assert "applied: vectorize: loop(s) at line 30" in run.stderr
    assert "applied: warp-shuffle-reduce: tree reduction(s) at line 36" in run.stderr
    assert "#if BLOCK_REDUCE_SUM_WARP_SHUFFLE == 0\n  for (int s = BLOCK / 2; s > 0; s >>= 1) {" in run.stdout
    assert "__shfl_xor_sync(0xffffffff, sdata_sum, offset);" in run.stdout

    # A per-thread sum written out per block, and a tree the shuffles cannot take.
    refused = tmp_path / "refused.cu"
    refused.write_text(
        "#define THREADS 256\n"
        "__global__ void first_lane_sums(float* out, const float* x, int n) {\n"
        "  __shared__ float part[THREADS];\n"
        "  float s = 0.f;\n"
        "  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) s += x[i];\n"
        "  part[threadIdx.x] = s;\n"
        "  __syncthreads();\n"
        "  for (int k = blockDim.x / 2; k > 0; k >>= 1) {\n"
        "    if (threadIdx.x < k) part[threadIdx.x] += part[threadIdx.x + k];\n"
        "    __syncthreads();\n"
        "  }\n"
        "  if (threadIdx.x == 0) out[blockIdx.x] = part[0] + s;\n"
        "}\n"
        "void run(float* out, const float* x, int n) { first_lane_sums<<<n / THREADS, THREADS>>>(out, x, n); }\n"
    )
    run = subprocess.run([str(CUTUNE_BIN), "templatize", str(refused), "--kernel", "first_lane_sums"], capture_output=True, text=True, check=True)
    assert "refused: vectorize: `s` gathers each thread's share of the loop and is not combined over the threads after it" in run.stderr, run.stderr
    assert "refused: warp-shuffle-reduce: line 8: the tree's size `blockDim.x` is no literal or parameter whose values are whole warps" in run.stderr, run.stderr


async def test_softmax_max_and_sum_passes_become_one_online_pass_in_the_code_action_and_the_cli(client, tmp_path: Path):
    source = tmp_path / "softmax.cu"
    source.write_text((REPO / "examples" / "softmax.cu").read_text())
    uri = source.as_uri()
    text = source.read_text()
    await open_document(client, uri, text)

    [action] = await code_actions(client, uri, line_of(text, "float m = -INFINITY;"), 4)
    edit = (await resolved(client, action)).edit
    [source_edit] = [c for c in edit.document_changes if isinstance(c, types.TextDocumentEdit) and c.text_document.uri == uri]
    [spec_edit] = [c for c in edit.document_changes if isinstance(c, types.TextDocumentEdit) and c.text_document.uri != uri]
    new_text = apply(text, source_edit.edits, client.profile.encoding)
    # The original two passes stay under the default; the one pass keeps a running maximum.
    original = "  for (int j = threadIdx.x; j < cols; j += blockDim.x) m = fmaxf(m, __half2float(x[j]));\n"
    # Every pass of both branches shares the row's kept vectors: they are declared above the `#if`.
    kept = (
        "#if SOFTMAX_VEC > 1 && SOFTMAX_ROW_REGS > 0\n"
        "  // Each thread's first vectors of the row, kept in registers for the loops at lines 72 and 80.\n"
        "  typename cutune_bits<SOFTMAX_VEC * sizeof(half)>::type x_kept[SOFTMAX_ROW_REGS];\n"
        "#endif\n"
    )
    assert kept + "#if SOFTMAX_ONLINE == 0\n#if SOFTMAX_VEC == 1\n" + original in new_text
    assert (
        "    const float value = __half2float(x[j]);\n"
        "    // A new maximum rescales the sum so far; `m` still -INFINITY means nothing counted yet.\n"
        "    if (value > m) {\n"
        "      s = s * expf(m - value) + 1.f;\n"
        "      m = value;\n"
        "    } else if (m != -INFINITY) {\n"
        "      s += expf(value - m);\n"
        "    }\n"
    ) in new_text
    # One pass: the sum rescaled to the block's maximum.
    assert "  const float m_block = block_max(m, red);\n  s = block_sum(s * expf(m - m_block), red);\n  m = m_block;\n#else\n" in new_text
    # Both passes around each thread's own maximum, then both reductions; a thread that saw only
    # -INFINITY adds nothing.
    third = new_text[new_text.index("  m = m_block;\n#else\n"):]
    assert third.index("m = fmaxf(m, __half2float(x[j]))") < third.index("s += expf(__half2float(x[j]) - m)") < third.index("block_max(m, red)")
    assert "  const float m_block = block_max(m, red);\n  s = block_sum(m == -INFINITY ? 0.f : s * expf(m - m_block), red);\n  m = m_block;\n#endif\n" in third
    spec = tomllib.loads(apply("", spec_edit.edits, client.profile.encoding))
    [online] = [p for p in spec["kernels"][0]["params"] if p["name"] == "SOFTMAX_ONLINE"]
    assert (online["default"], online["values"]) == (0, [0, 1, 2])

    cli = subprocess.run([str(CUTUNE_BIN), "templatize", str(source), "--kernel", "softmax_kernel"], capture_output=True, text=True, check=True)
    assert cli.stdout == new_text
    assert "applied: online-softmax: max and sum passes at lines 72–77 read the row once when `SOFTMAX_ONLINE` is 1" in cli.stderr

    # A weighted sum is not softmax's: refused, with the reason.
    weighted = tmp_path / "weighted.cu"
    weighted.write_text(text.replace("s += expf(__half2float(x[j]) - m);", "s += expf(__half2float(x[j]) - m) * (j % 2);"))
    run = subprocess.run([str(CUTUNE_BIN), "templatize", str(weighted), "--kernel", "softmax_kernel"], capture_output=True, text=True, check=True)
    assert "refused: online-softmax: the maximum `m` is not followed by `s += expf(__half2float(x[j]) - m)` alone in the next loop: the passes are not merged" in run.stderr, run.stderr
    assert "SOFTMAX_ONLINE" not in run.stdout


def test_a_loop_whose_index_is_taken_apart_loads_each_half_of_the_row_as_vectors(tmp_path: Path):
    source = tmp_path / "silu_and_mul.cu"
    source.write_text((REPO / "examples" / "silu_and_mul.cu").read_text())
    (tmp_path / ".cutune").write_text("")
    run = subprocess.run([str(CUTUNE_BIN), "templatize", str(source), "--kernel", "silu_and_mul_kernel"], capture_output=True, text=True, check=True)
    assert "applied: vectorize: loop(s) at line 26 load and store `SILU_AND_MUL_VEC` elements at a time when aligned" in run.stderr, run.stderr
    # The row's two halves and the output, each one access per chunk; the chunks must stay in
    # one row, so `d` must be a multiple of the width.
    # `out[i]` is aligned when `out` is: tested once, with the row's divisor.
    assert (
        "    const bool i_whole = d % SILU_AND_MUL_VEC == 0 &&\n                         (unsigned long long)out % sizeof(half_bits) == 0;\n"
        "    const int i_vec_end = i_whole ? n - n % SILU_AND_MUL_VEC : 0;\n"
    ) in run.stdout
    assert "        if (i_lane == 0) row_v_bits = cutune_load<half_bits>(&row[j]);\n        float x = __half2float(row_v[i_lane]);\n" in run.stdout
    assert "        if (i_lane == 0) row_v2_bits = cutune_load<half_bits>(&row[d + j]);\n" in run.stdout
    assert "      *reinterpret_cast<half_bits*>(out_v_at) = out_v_bits;\n" in run.stdout

    # A transposed store cannot be one vector: the load is, each lane keeps its own store.
    transposed = tmp_path / "transposed.cu"
    transposed.write_text(
        "__global__ void transpose_flat(float* out, const float* in, int n, int rows, int cols) {\n"
        "  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {\n"
        "    int r = i / cols;\n"
        "    int c = i - r * cols;\n"
        "    out[c * rows + r] = in[i];\n"
        "  }\n"
        "}\n"
        "void run(float* out, const float* in, int rows, int cols) { transpose_flat<<<(rows * cols + 255) / 256, 256>>>(out, in, rows * cols, rows, cols); }\n"
    )
    run = subprocess.run([str(CUTUNE_BIN), "templatize", str(transposed), "--kernel", "transpose_flat"], capture_output=True, text=True, check=True)
    assert "applied: vectorize: loop(s) at line 2 load and store `TRANSPOSE_FLAT_VEC` elements at a time when aligned" in run.stderr, run.stderr
    assert "        if (i_lane == 0) in_v_bits = *reinterpret_cast<const float_bits*>(&in[i]);\n        out[c * rows + r] = in_v[i_lane];\n" in run.stdout

    # A buffer stored as a vector and at a lane's own index too: its stores would reorder. Refused.
    both = tmp_path / "both.cu"
    both.write_text(transposed.read_text().replace("out[c * rows + r] = in[i];", "out[i] = in[i];\n    out[c * rows + r] += 1.f;"))
    run = subprocess.run([str(CUTUNE_BIN), "templatize", str(both), "--kernel", "transpose_flat"], capture_output=True, text=True, check=True)
    assert "refused: vectorize: `out` is written and also accessed another way: not vectorised" in run.stderr, run.stderr


def test_a_kernel_of_one_element_per_thread_takes_several_with_a_smaller_grid(tmp_path: Path):
    source = tmp_path / "residual_relu.cu"
    source.write_text((REPO / "tests" / "fixtures" / "template" / "elements_return.cu").read_text())
    (tmp_path / ".cutune").write_text("")
    run = subprocess.run([str(CUTUNE_BIN), "templatize", str(source), "--kernel", "residual_relu", "--write"], capture_output=True, text=True, check=True)
    assert "applied: vectorize-elements: each thread takes `RESIDUAL_RELU_VEC` consecutive elements from line 6, loaded and stored together when aligned; the grid is divided by it" in run.stderr, run.stderr
    text = source.read_text()
    # The original under the default; V elements per thread, the last chunk one at a time; the
    # launch's grid divided by V.
    assert "#if RESIDUAL_RELU_VEC == 1\n\tconst int i = threadIdx.x + blockIdx.x * blockDim.x;\n\tif (i >= total)\n\t\treturn;\n" in text
    assert "\tconst int i_vec = (threadIdx.x + blockIdx.x * blockDim.x) * RESIDUAL_RELU_VEC;\n" in text
    assert "\t\t\tif (i_lane == 0) a_v_bits = *reinterpret_cast<const float_bits*>(&a[i]);\n" in text
    assert "\t\tfor (int i = i_vec; i < total && i < i_vec + RESIDUAL_RELU_VEC; ++i) {\n\t\t\tconst float sum = a[i] + b[i];\n" in text
    assert "+ RESIDUAL_RELU_VEC - 1) / RESIDUAL_RELU_VEC, RESIDUAL_RELU_BLOCK_SIZE>>>(y, a, b, total);" in text
    spec = tomllib.loads((tmp_path / "residual_relu.cutune.toml").read_text())
    [vec] = [p for p in spec["kernels"][0]["params"] if p["name"] == "RESIDUAL_RELU_VEC"]
    assert (vec["default"], vec["values"]) == (1, [1, 2, 4])

    # A kernel that reads its block's number: a smaller grid would change it. Refused.
    refused = tmp_path / "refused.cu"
    refused.write_text((REPO / "tests" / "fixtures" / "template" / "elements_refused.cu").read_text())
    run = subprocess.run([str(CUTUNE_BIN), "templatize", str(refused), "--kernel", "per_block_offsets"], capture_output=True, text=True, check=True)
    assert "refused: vectorize-elements: `blockIdx` is used outside the element index here, so a smaller grid could change the result: not vectorised" in run.stderr


def test_a_branch_the_same_for_every_element_of_a_chunk_keeps_its_vectors_and_its_return(tmp_path: Path):
    source = tmp_path / "merge_attn_states.cu"
    source.write_text((REPO / "examples" / "merge_attn_states.cu").read_text())
    (tmp_path / ".cutune").write_text("")
    run = subprocess.run([str(CUTUNE_BIN), "templatize", str(source), "--kernel", "merge_attn_states_kernel", "--write"], capture_output=True, text=True, check=True)
    assert "applied: vectorize-elements: each thread takes `MERGE_ATTN_STATES_VEC` consecutive elements from line 37" in run.stderr, run.stderr
    text = source.read_text()
    # The row's weights once per chunk, from its first element; the empty-row test, the same
    # for the whole chunk, taken once before the lanes, each branch with lanes and stores of its
    # own; the row's log-sum-exp stays the first element's own store.
    assert "    int th = i_vec / head_dim;\n    float la = lse_a[th];\n    float lb = lse_b[th];\n    float m = fmaxf(la, lb);\n" in text
    # The comment after the brace stays on the `if` taken before the lanes.
    empty_row = text.index("    if (m == -INFINITY) {  // both parts empty: avoid (-inf) - (-inf) = NaN\n")
    other_rows = text.index("    } else {\n", empty_row)
    assert "        out_v[i_lane] = __float2half(0.f);\n        if (d == 0) out_lse[th] = -INFINITY;\n      }\n      *reinterpret_cast<half_bits*>(out_v_at) = out_v_bits;\n" in text[empty_row:other_rows]
    assert "        if (d == 0) out_lse[th] = m + logf(s);\n      }\n      *reinterpret_cast<half_bits*>(out_v2_at) = out_v2_bits;\n    }\n" in text[other_rows:]
    assert "nullptr) cutune_store" not in text
    # The last chunk, one element at a time: the `return` ends one element.
    assert "        if (d == 0) out_lse[th] = -INFINITY;\n        continue;\n      }\n      float wa = expf(la - m);\n" in text
    compiled = subprocess.run([str(CUTUNE_BIN), "check", str(source), "--kernel", "merge_attn_states_kernel", "--sample", "6", "--json"], capture_output=True, text=True)
    assert compiled.returncode == 0, compiled.stderr

    # A test of each element's own value: a chunk's elements would part ways. Refused.
    lane_if = tmp_path / "clamp.cu"
    lane_if.write_text((REPO / "tests" / "fixtures" / "template" / "elements_lane_if.cu").read_text())
    run = subprocess.run([str(CUTUNE_BIN), "templatize", str(lane_if), "--kernel", "clamp_or_skip"], capture_output=True, text=True, check=True)
    assert "refused: vectorize-elements: `return` at line 9 is under a condition that differs between lanes: not vectorised" in run.stderr, run.stderr


def test_streaming_stores_make_a_buffer_an_output_that_the_bound_counts_once(tmp_path: Path):
    source = tmp_path / "streaming_stores.cu"
    source.write_text((REPO / "tests" / "fixtures" / "template" / "streaming_stores.cu").read_text())
    (tmp_path / ".cutune").write_text("")
    subprocess.run([str(CUTUNE_BIN), "templatize", str(source), "--kernel", "row_mean_center", "--write"], capture_output=True, text=True, check=True)
    [kernel] = tomllib.loads((tmp_path / "streaming_stores.cutune.toml").read_text())["kernels"]
    roles = {a["name"]: a.get("role") for a in kernel["args"] if "role" in a}
    # `__stcs(out + …, v)` writes, `__ldcs(x + c)` reads: not every non-const pointer is in-out.
    assert roles == {"out": "output", "mean": "output", "inp": "input"}, roles
    checked = subprocess.run([str(CUTUNE_BIN), "spec", "check", str(tmp_path / "streaming_stores.cutune.toml")], capture_output=True, text=True)
    assert checked.returncode == 0 and "0 errors, 0 warnings" in checked.stdout, checked.stdout + checked.stderr
