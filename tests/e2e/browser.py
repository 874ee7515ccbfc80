"""Headless Chromium (Debian's, at CHROMIUM or /usr/bin/chromium) driven by Playwright, for the
tests that look at what people see: the tuning report, VS Code in a browser.

Playwright's own browser download is not used: the machines reach package registries only. A
missing Chromium fails the test with how to install it, rather than skipping it."""

from __future__ import annotations

import os
import shutil
from contextlib import contextmanager
from pathlib import Path

import pytest
from playwright.sync_api import Browser, sync_playwright

REPO = Path(__file__).resolve().parents[2]
# Where screenshots go when asked for (`scripts/screenshots` sets it to docs/img).
SCREENSHOTS = os.environ.get("CUTUNE_SCREENSHOTS")

# What the lent machines need: no sandbox as root, and none of Chromium's own network traffic,
# which the closed network refuses connection by connection.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]


def chromium_path() -> str:
    path = os.environ.get("CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    if not os.access(path, os.X_OK):
        pytest.fail(f"no Chromium at {path}: install Debian's `chromium` (scripts/test does) or set CHROMIUM")
    return path


@contextmanager
def chromium() -> Browser:
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def screenshot(page, name: str) -> None:
    """Saves a screenshot under CUTUNE_SCREENSHOTS, when set."""
    if SCREENSHOTS:
        Path(SCREENSHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SCREENSHOTS) / name), full_page=True)
