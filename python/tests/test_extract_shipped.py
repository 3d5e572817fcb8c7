"""tools/scripts/extract_shipped.py on a fake wheel built here (never a real one): the
module-level import closure, the shims' substitution, the provenance's sha256s, a shim
refused for a module under test; and samplecheck_subject.shipped's check of what ran."""

import hashlib
import importlib.util
import io
import json
import os
import subprocess
import sys
import zipfile

import pytest

from conftest import PACKAGE_ROOT
from samplecheck_subject import shipped

SCRIPT = os.path.join(os.path.dirname(PACKAGE_ROOT), "tools", "scripts", "extract_shipped.py")
_spec = importlib.util.spec_from_file_location("extract_shipped", SCRIPT)
assert _spec is not None and _spec.loader is not None
extract_shipped = importlib.util.module_from_spec(_spec)
sys.modules["extract_shipped"] = extract_shipped  # dataclasses look their module up
_spec.loader.exec_module(extract_shipped)

# fakepkg: rule (under test) imports helpers, a namespace package's module, and plumbing,
# which imports heavy; the package __init__ imports a frontend. The shims stand in for the
# __init__ and plumbing, so heavy and frontend stay out; typing_only (under TYPE_CHECKING),
# lazy (inside a function) and unused are never imported at module level.
UPSTREAM = {
    "fakepkg/__init__.py": "from fakepkg import frontend  # noqa\n",
    "fakepkg/frontend.py": "FRONTEND = 1\n",
    "fakepkg/rule.py": (
        "from typing import TYPE_CHECKING\n"
        "from fakepkg import helpers\n"
        "from .plumbing import log\n"
        "from fakepkg.sub.util import twice\n"
        "import numpy\n"
        "if TYPE_CHECKING:\n"
        "    from fakepkg import typing_only\n"
        "def rule(x):\n"
        "    log('rule')\n"
        "    return twice(x) + helpers.CONST\n"
        "def other_path():\n"
        "    import fakepkg.lazy\n"
    ),
    "fakepkg/helpers.py": "from . import consts\nCONST = consts.VALUE\n",
    "fakepkg/consts.py": "VALUE = 7\n",
    "fakepkg/sub/util.py": "def twice(x):\n    return 2 * x\n",
    "fakepkg/plumbing.py": "import fakepkg.heavy\ndef log(message):\n    fakepkg.heavy.send(message)\n",
    "fakepkg/heavy.py": "raise ImportError('the distributed runtime')\n",
    "fakepkg/typing_only.py": "raise ImportError('never at run time')\n",
    "fakepkg/lazy.py": "LAZY = 1\n",
    "fakepkg/unused.py": "UNUSED = 1\n",
}
SHIMS = {
    "fakepkg/__init__.py": "# our shim: no frontend\n",
    "fakepkg/plumbing.py": "# our shim: a logger that logs nothing\ndef log(message):\n    pass\n",
}
EXTRACTED = {"fakepkg/rule.py", "fakepkg/helpers.py", "fakepkg/consts.py", "fakepkg/sub/util.py"}


def write_wheel(path, files):
    with zipfile.ZipFile(path, "w") as wheel:
        for name, text in files.items():
            wheel.writestr(name, text)
        wheel.writestr("fakepkg-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: fakepkg\nVersion: 1.0\n")
        wheel.writestr("fakepkg-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\n")
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def write_manifest(
    path, wheel_sha256, under_test=("fakepkg.rule",), shim_for=("fakepkg", "fakepkg.plumbing"), run_time_imports=()
):
    lines = [
        'package = "fakepkg"',
        'version = "1.0"',
        f'wheel_sha256 = "{wheel_sha256}"',
        'root = "fakepkg"',
        'shims = "shims"',
        f"under_test = {json.dumps(list(under_test))}",
        f"run_time_imports = {json.dumps(list(run_time_imports))}",
        "[shim_for]",
    ]
    lines += [f'"{m}" = "plumbing"' for m in shim_for]
    path.write_text("\n".join(lines) + "\n")


@pytest.fixture
def fake(tmp_path):
    """(wheel, manifest, wheel sha256) with the shims beside the manifest."""
    wheel = tmp_path / "fakepkg-1.0-py3-none-any.whl"
    digest = write_wheel(wheel, UPSTREAM)
    for relpath, text in SHIMS.items():
        (tmp_path / "shims" / relpath).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "shims" / relpath).write_text(text)
    manifest = tmp_path / "fakepkg.toml"
    write_manifest(manifest, digest)
    return wheel, manifest, digest


def sha(text):
    return hashlib.sha256(text.encode()).hexdigest()


def test_closure_is_the_module_level_imports_with_shims_for_plumbing(fake, tmp_path):
    wheel, manifest, _ = fake
    record = extract_shipped.extract(wheel, manifest, tmp_path / "out")
    assert set(record["upstream"]) == EXTRACTED
    assert set(record["shims"]) == set(SHIMS)
    site = tmp_path / "out" / "site"
    written = {p.relative_to(site).as_posix() for p in site.rglob("*.py")}
    assert written == EXTRACTED | set(SHIMS)  # no heavy, frontend, typing_only, lazy, unused


def test_shims_replace_the_upstream_module_and_name_it(fake, tmp_path):
    wheel, manifest, _ = fake
    record = extract_shipped.extract(wheel, manifest, tmp_path / "out")
    site = tmp_path / "out" / "site"
    assert (site / "fakepkg/plumbing.py").read_text() == SHIMS["fakepkg/plumbing.py"]
    shim = record["shims"]["fakepkg/plumbing.py"]
    assert shim["stands_in_for"] == "fakepkg.plumbing"
    assert shim["sha256"] == sha(SHIMS["fakepkg/plumbing.py"])
    assert shim["upstream_sha256"] == sha(UPSTREAM["fakepkg/plumbing.py"])


def test_provenance_holds_the_wheel_and_every_upstream_files_sha256(fake, tmp_path):
    wheel, manifest, digest = fake
    extract_shipped.extract(wheel, manifest, tmp_path / "out")
    record = json.loads((tmp_path / "out" / "provenance.json").read_text())
    assert (record["package"], record["version"], record["wheel_sha256"]) == ("fakepkg", "1.0", digest)
    for relpath, recorded in record["upstream"].items():
        assert recorded == sha(UPSTREAM[relpath])
        assert recorded == hashlib.sha256((tmp_path / "out" / "site" / relpath).read_bytes()).hexdigest()


def test_the_extracted_tree_imports_and_runs_the_rule(fake, tmp_path):
    wheel, manifest, _ = fake
    extract_shipped.extract(wheel, manifest, tmp_path / "out")
    done = subprocess.run(
        [sys.executable, "-c", "import fakepkg.rule; print(fakepkg.rule.rule(3))"],
        env={**os.environ, "PYTHONPATH": str(tmp_path / "out" / "site")},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stdout.strip()) == (0, "13"), done.stderr


def test_a_shim_cannot_replace_a_module_under_test(fake, tmp_path):
    wheel, manifest, digest = fake
    write_manifest(manifest, digest, under_test=("fakepkg.rule", "fakepkg.plumbing"))
    with pytest.raises(extract_shipped.ExtractError, match=r"module under test: fakepkg\.plumbing"):
        extract_shipped.extract(wheel, manifest, tmp_path / "out")
    done = subprocess.run(
        [sys.executable, SCRIPT, str(wheel), str(manifest), str(tmp_path / "cli")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "fakepkg.plumbing" in done.stderr
    assert not (tmp_path / "cli").exists()


def test_refuses_another_wheel(fake, tmp_path):
    wheel, manifest, _ = fake
    write_manifest(manifest, "0" * 64)
    with pytest.raises(extract_shipped.ExtractError, match="the manifest's is 0000"):
        extract_shipped.extract(wheel, manifest, tmp_path / "out")


def test_a_run_time_import_is_walked_as_a_module_under_test(fake, tmp_path):
    wheel, manifest, digest = fake
    # fakepkg.lazy is imported inside other_path(): left out unless the manifest names it.
    assert "fakepkg/lazy.py" not in extract_shipped.extract(wheel, manifest, tmp_path / "out")["upstream"]
    write_manifest(manifest, digest, run_time_imports=("fakepkg.lazy",))
    upstream = extract_shipped.extract(wheel, manifest, tmp_path / "out2")["upstream"]
    assert upstream["fakepkg/lazy.py"] == sha(UPSTREAM["fakepkg/lazy.py"])


def test_refuses_a_shim_no_import_reaches(fake, tmp_path):
    wheel, manifest, digest = fake
    write_manifest(manifest, digest, shim_for=("fakepkg", "fakepkg.plumbing", "fakepkg.unused"))
    with pytest.raises(extract_shipped.ExtractError, match=r"no import reaches the shims for fakepkg\.unused"):
        extract_shipped.extract(wheel, manifest, tmp_path / "out")


def test_refuses_an_import_neither_the_wheel_nor_a_shim_holds(fake, tmp_path):
    wheel, manifest, _ = fake
    # Without the plumbing shim, upstream plumbing imports heavy, which this wheel lacks.
    digest = write_wheel(wheel, {k: v for k, v in UPSTREAM.items() if k != "fakepkg/heavy.py"})
    write_manifest(manifest, digest, shim_for=("fakepkg",))
    with pytest.raises(
        extract_shipped.ExtractError,
        match=r"fakepkg\.heavy \(imported by fakepkg\.plumbing\) is neither in the wheel nor a shim",
    ):
        extract_shipped.extract(wheel, manifest, tmp_path / "out")


def test_refuses_a_non_empty_output(fake, tmp_path):
    wheel, manifest, _ = fake
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "kept").write_text("")
    with pytest.raises(extract_shipped.ExtractError, match="not empty"):
        extract_shipped.extract(wheel, manifest, tmp_path / "out")


def test_load_records_what_ran_and_refuses_a_modified_file(fake, tmp_path):
    wheel, manifest, digest = fake
    record = extract_shipped.extract(wheel, manifest, tmp_path / "out")
    script = (
        "import json, sys; from pathlib import Path\n"
        "from samplecheck_subject import shipped\nfrom samplecheck_subject.serve import environment\n"
        "shipped.load(Path(sys.argv[1]), ['fakepkg.rule'])\n"
        "print(json.dumps(environment()['packages']))\n"
    )

    def load() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", script, str(tmp_path / "out")],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    done = load()
    assert done.returncode == 0, done.stderr
    packages = json.loads(done.stdout)
    assert packages["fakepkg wheel"] == f"1.0 sha256:{digest}"
    for relpath in EXTRACTED:
        assert packages[f"fakepkg upstream {relpath}"] == f"sha256:{record['upstream'][relpath]}"
    assert packages["fakepkg shim fakepkg/plumbing.py"] == f"sha256:{sha(SHIMS['fakepkg/plumbing.py'])}"

    (tmp_path / "out" / "site" / "fakepkg" / "consts.py").write_text("VALUE = 8\n")
    done = load()
    assert done.returncode != 0
    assert "fakepkg/consts.py: sha256" in done.stderr


def test_load_without_a_tree_says_how_to_make_one(tmp_path):
    with pytest.raises(shipped.ShippedError, match=r"extract_shipped\.py"):
        shipped.load(tmp_path / "absent", ["fakepkg.rule"])


def test_the_sglang_manifest_names_a_shim_file_for_each_shim_and_none_under_test():
    manifest = extract_shipped.read_manifest(extract_shipped.Path(os.path.dirname(SCRIPT)) / "shipped" / "sglang.toml")
    assert "sglang.srt.layers.sampler" in manifest.under_test
    for module in manifest.shim_for:
        base = manifest.shims_dir / module.replace(".", "/")
        assert (base / "__init__.py").is_file() or base.with_suffix(".py").is_file(), module


# (adapter entry point, a subject of it, the variable naming its extracted tree, or None: the
# package itself is imported, FlashInfer's cake sampler from the trimmed tree on PYTHONPATH)
SHIPPED_ENTRIES = [
    ("sglang_shipped:subjects", "sglang.sampling_from_probs_torch", "SAMPLECHECK_SGLANG_TREE"),
    ("vllm_shipped:subjects", "vllm.forward_native", "SAMPLECHECK_VLLM_TREE"),
    ("vllm_shipped:cuda_subjects", "vllm.apply_top_k_top_p_triton+random_sample", "SAMPLECHECK_VLLM_TREE"),
    ("flashinfer_cake:subjects", "flashinfer.cake.top_k_top_p_sampling_from_probs", None),
    ("flashinfer_cake:subjects", "flashinfer.cake.top_k_top_p_sampling_from_probs.16bit", None),
]


@pytest.mark.parametrize(("entry", "subject", "tree_variable"), SHIPPED_ENTRIES)
def test_a_shipped_adapter_is_skipped_with_its_reason_where_it_cannot_run(run_qualify, entry, subject, tree_variable):
    # No tree here (and, in CI, no torch or no GPU): every check skipped with the reason, never passed.
    command = f"{sys.executable} -m samplecheck_subject.run samplecheck_subject.adapters.{entry}"
    code, out = run_qualify(
        command,
        "--subject",
        subject,
        "--budget",
        "quick",
        "--checks",
        "replay",
        env={tree_variable: "/nonexistent"} if tree_variable else {},
        timeout=120,
    )
    assert code == 77, out
    assert any(
        r in out
        for r in (
            "torch is not installed",
            "no CUDA device",
            "extract_shipped.py",
            "flashinfer.cake_sampling does not import",
        )
    ), out


def test_the_hello_names_flashinfers_modules_built_ahead_of_time(tmp_path):
    # A stand-in flashinfer package: FlashInfer loads data/aot/<name>/<name>.so instead of
    # JIT-building <name> (tools/scripts/aot_flashinfer.sh), so each such file is recorded.
    package = tmp_path / "flashinfer"
    (package / "data").mkdir(parents=True)
    (package / "__init__.py").write_text("__version__ = '0.0.1'\n")
    script = (
        "import json, sys; sys.path.insert(0, sys.argv[1]); import flashinfer\n"
        "from samplecheck_subject.serve import environment\n"
        "print(json.dumps(environment()['packages']))\n"
    )

    def packages() -> dict[str, str]:
        done = subprocess.run(
            [sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, timeout=60, check=False
        )
        assert done.returncode == 0, done.stderr
        recorded: dict[str, str] = json.loads(done.stdout)
        return recorded

    assert not [name for name in packages() if name.startswith("flashinfer aot")]
    built = {"sampling": "ELF sampling", "cake_sampling_5881a0653c4707346c32": "ELF cake"}
    for name, data in built.items():
        (package / "data" / "aot" / name).mkdir(parents=True)
        (package / "data" / "aot" / name / f"{name}.so").write_text(data)
    recorded = packages()
    assert recorded["flashinfer"] == "0.0.1"
    assert {name: value for name, value in recorded.items() if name.startswith("flashinfer aot")} == {
        f"flashinfer aot {name}": f"sha256:{sha(data)}" for name, data in built.items()
    }
    for extra in range(shipped.MAX_AOT_NAMED - len(built) + 1):  # one module past the named ones
        (package / "data" / "aot" / f"m{extra}").mkdir()
        (package / "data" / "aot" / f"m{extra}" / f"m{extra}.so").write_text(f"ELF {extra}")
    aot = {name: value for name, value in packages().items() if name.startswith("flashinfer aot")}
    assert list(aot) == ["flashinfer aot modules"]
    assert aot["flashinfer aot modules"].startswith(f"{shipped.MAX_AOT_NAMED + 1} modules, sha256:")


def test_the_cake_source_unpacks_where_its_folder_says_and_a_bad_call_is_a_usage_error(tmp_path):
    # tools/scripts/unpack_cake_source.py: the one body h200_qualify_python.sh and
    # aot_flashinfer.sh unpack trim_flashinfer.sh's cake_sampling.tar.xz with.
    import tarfile

    source = tmp_path / "cake_sampling" / "kernel.cu"
    source.parent.mkdir()
    source.write_text("// frozen\n")
    archive = tmp_path / "cake_sampling.tar.xz"
    with tarfile.open(archive, "w:xz") as packed:
        packed.add(source.parent, arcname="cake_sampling")
    script = os.path.join(os.path.dirname(SCRIPT), "unpack_cake_source.py")
    folder = str(tmp_path / "csrc")
    done = subprocess.run([sys.executable, script, str(archive), folder], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "csrc" / "cake_sampling" / "kernel.cu").read_text() == "// frozen\n"
    usage = subprocess.run([sys.executable, script, str(archive)], capture_output=True, text=True)
    assert usage.returncode == 2 and "ARCHIVE FOLDER" in usage.stderr
    # A path out of the folder, or a link, refuses the archive whole, whatever the Python.
    for name, kind in (("../escaped.cu", tarfile.REGTYPE), ("cake_sampling/link", tarfile.SYMTYPE)):
        bad = tmp_path / f"bad-{kind!r}.tar"
        with tarfile.open(bad, "w") as packed:
            member = tarfile.TarInfo(name)
            member.type = kind
            member.linkname = "/etc/passwd" if kind == tarfile.SYMTYPE else ""
            packed.addfile(member, io.BytesIO(b"") if kind == tarfile.REGTYPE else None)
        into = tmp_path / f"into-{kind!r}"
        refused = subprocess.run([sys.executable, script, str(bad), str(into)], capture_output=True, text=True)
        assert refused.returncode == 2, refused.stderr
        assert repr(name) in refused.stderr
        assert not into.exists() and not (tmp_path / "escaped.cu").exists()
