"""`cutune spec check | import-t1 | export-t1`, run as a user runs them: the real binary, its
output, its exit code, on good files and on bad ones."""

import hashlib
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from editor import CUTUNE_BIN, REPO

T1_DIR = REPO / "tests" / "fixtures" / "t1"
HUB_FILES = ["convolution_milo.json", "dedispersion_milo.json", "gemm_milo.json", "hotspot_milo.json"]

BASELINE = "__global__ void scale(float* x, int n) { }\n"

VALID_SPEC = f"""version = 1
source = "scale.cu"

[[kernels]]
name = "scale"
grid = ["ceil_div(n, BLOCK)"]
block = ["BLOCK"]
restrictions = ["32 <= BLOCK <= 1024 and BLOCK % 32 == 0"]

[[kernels.shapes]]
n = 1000000

[[kernels.args]]
name = "x"
dtype = "f32"
length = "n"
role = "inout"
init = {{ dist = "normal", mean = 0.0, std = 1.0 }}

[[kernels.args]]
name = "n"
dtype = "i32"
value = "n"

[[kernels.params]]
name = "BLOCK"
kind = "define"
default = 256
values = [128, 256, 512]

[kernels.baseline]
sha256 = "{hashlib.sha256(BASELINE.encode()).hexdigest()}"
source = '''
{BASELINE}'''
"""


def cutune(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([str(CUTUNE_BIN), *args], capture_output=True, text=True, timeout=timeout)


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_check_accepts_a_valid_spec(tmp_path):
    spec = write(tmp_path, "scale.cutune.toml", VALID_SPEC)
    result = cutune("spec", "check", str(spec))
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout == f"{spec}: 0 errors, 0 warnings\n"


def test_check_prints_file_line_column_and_exits_1_on_errors(tmp_path):
    text = VALID_SPEC.replace('length = "n"', 'length = "n * m"').replace("default = 256", "default = 16")
    spec = write(tmp_path, "bad.cutune.toml", text)
    result = cutune("spec", "check", str(spec))
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    line_of = next(i for i, l in enumerate(text.splitlines()) if l.startswith('length = "n * m"')) + 1
    column = len('length = "n * ') + 1
    assert f"{spec}:{line_of}:{column}: error: `m` in length of argument `x` is not a size, a parameter or a scalar argument (known: n, BLOCK)" in lines
    assert any(": error: default 16 of `BLOCK` is not one of its values [128, 256, 512]" in l for l in lines)
    assert any(": warning: the default configuration violates restriction 1 (with BLOCK = 16)" in l for l in lines)
    assert lines[-1] == f"{spec}: 2 errors, 1 warning"


def test_check_accepts_a_derived_size_and_names_where_one_names_a_parameter(tmp_path):
    # `n` worked out from the shape's `pairs`, as a caller makes it (`pairs = x.size(1) / 2`).
    derived = VALID_SPEC.replace("n = 1000000", "pairs = 500000\n\n[kernels.derived]\nn = \"pairs * 2\"")
    spec = write(tmp_path, "derived.cutune.toml", derived)
    result = cutune("spec", "check", str(spec))
    assert result.returncode == 0, result.stdout + result.stderr
    text = derived.replace('n = "pairs * 2"', 'n = "pairs * BLOCK"')
    spec = write(tmp_path, "bad_derived.cutune.toml", text)
    result = cutune("spec", "check", str(spec))
    assert result.returncode == 1
    line_of = next(i for i, l in enumerate(text.splitlines()) if l.startswith('n = "pairs * BLOCK"')) + 1
    column = len('n = "pairs * ') + 1
    message = "error: `BLOCK` in derived size `n` is not a size (known: pairs): a derived size is worked out from the shape's sizes alone"
    assert f"{spec}:{line_of}:{column}: {message}" in result.stdout.splitlines(), result.stdout


def test_check_says_what_host_code_left_in_an_expression_is(tmp_path):
    # What a project's launch had and the spec cannot read: a struct's member, through a pointer.
    text = VALID_SPEC.replace('grid = ["ceil_div(n, BLOCK)"]', 'grid = ["plan->blocks * 2"]')
    spec = write(tmp_path, "host.cutune.toml", text)
    result = cutune("spec", "check", str(spec))
    assert result.returncode == 1
    line_of = next(i for i, l in enumerate(text.splitlines()) if l.startswith("grid = ")) + 1
    column = len('grid = ["plan') + 1
    assert (
        f"{spec}:{line_of}:{column}: error: grid extent x: `plan->blocks` is a member of a host variable, which the spec cannot read:"
        " write its value (a number, or an expression over the sizes and parameters), or capture a launch (`cutune profile`)"
    ) in result.stdout.splitlines(), result.stdout


def test_check_reports_an_edited_baseline_as_a_warning(tmp_path):
    spec = write(tmp_path, "edited.cutune.toml", VALID_SPEC.replace("int n) { }", "int n) { /* edited */ }"))
    result = cutune("spec", "check", str(spec))
    assert result.returncode == 0, result.stdout
    assert "warning: the baseline source does not match its sha256" in result.stdout


def test_check_warns_of_an_in_out_buffer_the_original_kernel_only_writes(tmp_path):
    # Specs written before roles were read from the body marked every non-const pointer in-out;
    # the bound counts an in-out buffer twice.
    baseline = "__global__ void scale(float* x, int n) { x[threadIdx.x] = 1.0f; }\n"
    text = VALID_SPEC.replace(BASELINE, baseline).replace(hashlib.sha256(BASELINE.encode()).hexdigest(), hashlib.sha256(baseline.encode()).hexdigest())
    spec = write(tmp_path, "scale.cutune.toml", text)
    result = cutune("spec", "check", str(spec))
    assert result.returncode == 0, result.stdout
    line_of = next(i for i, l in enumerate(text.splitlines()) if l == 'role = "inout"') + 1
    assert f'{spec}:{line_of}:8: warning: `x` is in-out, but the original kernel only writes it: the bound counts an in-out buffer twice; its role is "output"' in result.stdout.splitlines(), result.stdout
    fixed = write(tmp_path, "scale.cutune.toml", text.replace('role = "inout"', 'role = "output"'))
    assert cutune("spec", "check", str(fixed)).stdout == f"{fixed}: 0 errors, 0 warnings\n"


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"version = 1\nsource = \"a.cu\"\nkernels = [\n", ":3:"),
        (b"version = 1\nsource = \"a.cu\"\nkernels = []\nfoo = 3\n", "unknown field `foo`"),
        (b"version = 1\nsource = \"a\xff.cu\"\n", "line 2"),
    ],
    ids=["toml-syntax", "unknown-field", "not-utf8"],
)
def test_check_explains_bad_files_without_panicking(tmp_path, content, expected):
    spec = tmp_path / "broken.cutune.toml"
    spec.write_bytes(content)
    result = cutune("spec", "check", str(spec))
    assert result.returncode == 1
    output = result.stdout + result.stderr
    assert "panicked" not in output
    assert str(spec) in output
    if expected == "line 2":
        assert f"{spec}:2: not UTF-8 text" in result.stderr
    else:
        assert expected in output


def test_check_of_a_cuda_source_checks_the_spec_beside_it(tmp_path):
    source = write(tmp_path, "scale.cu", BASELINE)
    result = cutune("spec", "check", str(source))
    assert result.returncode == 1
    assert result.stderr.strip().endswith(
        f"{source} is a CUDA source, not a spec; its spec would be {tmp_path / 'scale.cutune.toml'} (`cutune templatize` writes it)"
    ), result.stderr
    spec = write(tmp_path, "scale.cutune.toml", VALID_SPEC)
    result = cutune("spec", "check", str(source))
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stderr == f"{source} is a CUDA source: checking the spec beside it, {spec}\n"
    assert result.stdout == f"{spec}: 0 errors, 0 warnings\n"


def test_missing_files_are_named(tmp_path):
    for args in (["check"], ["import-t1"], ["export-t1"]):
        result = cutune("spec", *args, str(tmp_path / "nope.toml"))
        assert result.returncode == 1
        assert f"cannot read {tmp_path / 'nope.toml'}" in result.stderr
        assert "panicked" not in result.stderr


def test_import_t1_rejects_non_json_with_its_position(tmp_path):
    bad = write(tmp_path, "bad.json", '{\n  "KernelSpecification": \n}')
    result = cutune("spec", "import-t1", str(bad))
    assert result.returncode == 1
    assert f"{bad}: not JSON" in result.stderr
    assert "line 3" in result.stderr


@pytest.mark.parametrize("name", HUB_FILES)
def test_t1_import_then_export_keeps_the_tuning_space(tmp_path, name):
    spec = tmp_path / (Path(name).stem + ".cutune.toml")
    result = cutune("spec", "import-t1", str(T1_DIR / name), "-o", str(spec))
    assert result.returncode == 0, result.stderr
    assert "$.General: not mapped" in result.stderr
    assert spec.read_text().startswith("# cutune tuning spec")

    original = json.loads((T1_DIR / name).read_text())
    out = tmp_path / "out.json"
    result = cutune("spec", "export-t1", str(spec), "--kernel", original["KernelSpecification"]["KernelName"], "-o", str(out))
    assert result.returncode == 0, result.stderr
    exported = json.loads(out.read_text())
    params = lambda j: [(p["Name"], p["Values"]) for p in j["ConfigurationSpace"]["TuningParameters"]]
    if name != "hotspot_milo.json":  # hotspot writes its values as comprehensions; export lists them
        assert params(exported) == params(original)
    assert [p["Name"] for p in exported["ConfigurationSpace"]["TuningParameters"]] == [
        p["Name"] for p in original["ConfigurationSpace"]["TuningParameters"]
    ]
    assert len(exported["ConfigurationSpace"]["Conditions"]) == len(original["ConfigurationSpace"]["Conditions"])
    assert exported["KernelSpecification"]["ProblemSize"] == original["KernelSpecification"]["ProblemSize"]
    assert [a["Name"] for a in exported["KernelSpecification"]["Arguments"]] == [
        a["Name"] for a in original["KernelSpecification"]["Arguments"]
    ]


def test_import_t1_takes_the_baseline_from_the_kernel_file_beside_it(tmp_path):
    t1 = tmp_path / "convolution_milo.json"
    shutil.copy(T1_DIR / "convolution_milo.json", t1)
    (tmp_path / "convolution_milo.cu").write_text(BASELINE)
    result = cutune("spec", "import-t1", str(t1))
    assert result.returncode == 0, result.stderr
    assert f'sha256 = "{hashlib.sha256(BASELINE.encode()).hexdigest()}"' in result.stdout
    assert "baseline is unknown" not in result.stderr


def test_export_t1_needs_a_kernel_name_only_when_ambiguous(tmp_path):
    spec = write(tmp_path, "scale.cutune.toml", VALID_SPEC)
    result = cutune("spec", "export-t1", str(spec))
    assert result.returncode == 0, result.stderr
    exported = json.loads(result.stdout)
    assert exported["KernelSpecification"]["GlobalSize"]["X"] == "-(-ProblemSize[0] // BLOCK)"
    assert exported["KernelSpecification"]["GridDivX"] == ["BLOCK"]
    assert exported["ConfigurationSpace"]["Conditions"] == [
        {"Expression": "32 <= BLOCK <= 1024 and BLOCK % 32 == 0", "Parameters": ["BLOCK"]}
    ]
    assert "T1 has no normal fill" in result.stderr

    result = cutune("spec", "export-t1", str(spec), "--kernel", "other")
    assert result.returncode == 1
    assert "no kernel `other` in the spec (it has scale)" in result.stderr
