"""pytest-lsp's spec checks really fail a test under this suite's configuration (pytest.ini turns
LspSpecificationWarning into an error), proven on a server that breaks the spec on purpose."""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent

INNER_TEST = f"""
import sys

import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

SERVER = ClientServerConfig([sys.executable, {str(HERE / "fixtures" / "spec_violating_server.py")!r}])


@pytest_lsp.fixture(config=SERVER)
async def client(lsp_client: LanguageClient):
    params = types.InitializeParams(capabilities=client_capabilities("visual-studio-code"))
    await lsp_client.initialize_session(params)
    yield
    await lsp_client.shutdown_session()


async def test_hover(client):
    position = types.HoverParams(types.TextDocumentIdentifier("file:///a.cu"), types.Position(0, 0))
    assert await client.text_document_hover_async(position) is None
"""


@pytest.fixture
def inner(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeini((HERE / "pytest.ini").read_text())
    pytester.makepyfile(test_inner=INNER_TEST)
    return pytester


def test_a_spec_violation_fails_the_test(inner: pytest.Pytester):
    result = inner.runpytest_subprocess("-p", "no:cacheprovider")

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*LspSpecificationWarning: Unknown progress token: 'never-created'*"])


def test_without_this_suites_filter_the_same_violation_is_only_a_warning(inner: pytest.Pytester):
    # The control: the command line's filter overrides pytest.ini's.
    result = inner.runpytest_subprocess("-p", "no:cacheprovider", "-W", "default::pytest_lsp.LspSpecificationWarning")

    result.assert_outcomes(passed=1, warnings=1)
