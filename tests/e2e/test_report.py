"""`cutune report`: a kernel's tuning run as a self-contained HTML page, written from the results
of a tune (a replay, no GPU), then opened in headless Chromium with the network cut off."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from browser import chromium, screenshot
from editor import CUTUNE_BIN, REPO

RMSNORM = REPO / "examples" / "rmsnorm.cu"
SPEC = REPO / "bench" / "kernel_tuner" / "rmsnorm_8192.cutune.toml"
RECORDING = REPO / "tests" / "fixtures" / "replay" / "rmsnorm_8192_h100.t4.json"


def cutune(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(CUTUNE_BIN), *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def tuned_project(tmp_path: Path) -> Path:
    source = tmp_path / "rmsnorm.cu"
    shutil.copy(RMSNORM, source)
    shutil.copy(SPEC, tmp_path / "rmsnorm.cutune.toml")
    tune = cutune("tune", "rmsnorm.cu", "--kernel", "rmsnorm_kernel", "--replay", str(RECORDING), cwd=tmp_path)
    assert tune.returncode == 0, tune.stderr
    return source


def test_the_report_of_a_tune_is_written_beside_the_results_and_names_its_path(tmp_path: Path):
    tuned_project(tmp_path)
    report = cutune("report", "rmsnorm.cu", "--kernel", "rmsnorm_kernel", cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    path = Path(report.stdout.strip())
    assert path == Path(".cutune/reports/rmsnorm.rmsnorm_kernel.html"), report.stdout
    assert "24 evaluations of `rmsnorm_kernel` drawn" in report.stderr
    page = (tmp_path / path).read_text()
    assert "BLOCK_SIZE=512 RMSNORM_VEC=8" in page, "the best configuration is named"
    assert page.count("<tr><td><code>") == 24, "a row per configuration that ran"
    assert "The kernel changed since this run" not in page
    # -o writes elsewhere, making its folder.
    elsewhere = cutune("report", "rmsnorm.cu", "--kernel", "rmsnorm_kernel", "-o", "out/page.html", cwd=tmp_path)
    assert elsewhere.returncode == 0 and (tmp_path / "out" / "page.html").read_text() == page


def test_a_kernel_edited_since_its_tune_gets_a_report_that_says_so(tmp_path: Path):
    source = tuned_project(tmp_path)
    source.write_text(source.read_text().replace("float sum = 0.f;", "float sum = 0.0f;"))
    report = cutune("report", "rmsnorm.cu", "--kernel", "rmsnorm_kernel", cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    assert "The kernel changed since this run" in (tmp_path / report.stdout.strip()).read_text()


def test_a_kernel_without_results_is_an_error_naming_the_file_and_how_to_tune(tmp_path: Path):
    shutil.copy(RMSNORM, tmp_path / "rmsnorm.cu")
    report = cutune("report", "rmsnorm.cu", "--kernel", "rmsnorm_kernel", cwd=tmp_path)
    assert report.returncode == 1
    assert "rmsnorm.cu: `rmsnorm_kernel` has no tuning results in" in report.stderr, report.stderr
    assert "cutune tune rmsnorm.cu --kernel rmsnorm_kernel" in report.stderr
    assert not (tmp_path / ".cutune").exists()


def test_the_page_draws_its_charts_in_chromium_with_the_network_cut_off(tmp_path: Path):
    tuned_project(tmp_path)
    report = cutune("report", "rmsnorm.cu", "--kernel", "rmsnorm_kernel", cwd=tmp_path)
    path = tmp_path / report.stdout.strip()
    fetched: list[str] = []
    errors: list[str] = []
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.on("pageerror", lambda e: errors.append(str(e)))

        def only_the_file(route):
            if route.request.url.startswith("file:"):
                route.continue_()
            else:
                fetched.append(route.request.url)
                route.abort()

        page.route("**/*", only_the_file)
        page.goto(path.as_uri())
        page.wait_for_selector("body[data-drawn=true]", timeout=20_000)
        assert errors == [], errors
        assert fetched == [], f"the page asked the network for {fetched}"
        # The progress chart: a point per correct evaluation, the best-so-far line, the two lines.
        points = page.locator("#progress .scatterlayer .trace").first.locator("path.point")
        assert points.count() == 24
        assert page.locator("#progress .shapelayer path").count() == 2, "the original's and the speed-of-light lines"
        chart = page.locator("#progress").inner_text()
        assert "original 189.04 µs" in chart and "speed of light 80.1" in chart, chart
        # Parallel coordinates: an axis per parameter and one for time.
        axes = page.locator("#parameters .y-axis")
        assert axes.count() == 3
        labels = page.locator("#parameters text.axis-title").all_text_contents()
        assert labels == ["BLOCK_SIZE", "RMSNORM_VEC", "time (µs)"], labels
        screenshot(page, "report.png")
