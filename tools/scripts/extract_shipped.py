#!/usr/bin/env python3
"""Extracts from a downloaded wheel the modules that hold a sampling rule and their
module-level import closure within the package, for adapters that import them unmodified.

    tools/scripts/extract_shipped.py WHEEL MANIFEST OUT_DIR

WHEEL comes from `pip download PKG==VER --no-deps` (nothing is installed). MANIFEST is a
TOML file of this tree (tools/scripts/shipped/<package>.toml):

    package = "sglang"                 # the distribution, as the wheel's METADATA names it
    version = "0.5.10.post1"
    wheel_sha256 = "..."               # the wheel judged; another one is refused
    root = "sglang"                    # the import package whose imports are followed
    shims = "sglang"                   # folder beside the manifest, laid out as module paths
    under_test = ["sglang.srt.layers.sampler", ...]   # extracted, never shimmed
    run_time_imports = ["sglang.x"]    # optional: imported inside a function under test

    [shim_for]                         # module = why it is plumbing, not the rule
    "sglang.srt.server_args" = "the server's argument registry"

The closure is an AST walk over the statements that run at import (not function or class
bodies, not `if TYPE_CHECKING:` blocks): every module of `root` that they import, and every
parent package's __init__. A module named in [shim_for] is replaced by our file of the same
path, whose own imports are walked the same way. A shim for a module under test, a shim no
import reaches, and an import of `root` that neither the wheel nor a shim holds are errors.
Imports made inside functions, and through importlib, are not followed: the adapters call
only the functions under test, and an import they make at run time that is missing fails
loudly there; one that a function under test needs is named in run_time_imports and walked
from as the modules under test are.

OUT_DIR/site is the tree to put on sys.path; OUT_DIR/provenance.json records the package,
version, the wheel's sha256 and the sha256 of every upstream file and shim written there.
samplecheck_subject.shipped checks the files against it at import and reports the ones that
ran. Outside the shipped Python package; no upstream file enters the repository.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import sys
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from email.parser import HeaderParser
from pathlib import Path, PurePosixPath

import tomllib  # Python 3.11; ruff's py39 target takes it for a third-party module

# A statement's fields that hold statements which run when the statement does.
_NESTED = ("body", "orelse", "finalbody", "handlers")


class ExtractError(Exception):
    """The wheel, the manifest or the closure is not what the extraction can vouch for."""


@dataclass(frozen=True)
class Manifest:
    package: str
    version: str
    wheel_sha256: str
    root: str
    shims_dir: Path
    under_test: tuple[str, ...]
    shim_for: dict[str, str]
    run_time_imports: tuple[str, ...] = ()


@dataclass(frozen=True)
class Source:
    """Where a module's code comes from: a path in the wheel, or a shim of ours."""

    module: str
    relpath: str  # in the output tree, as in the wheel ("pkg/sub/__init__.py")
    text: bytes
    shim: bool
    replaced_sha256: str | None = None  # a shim's: the upstream file it stands in for, if any

    @property
    def is_package(self) -> bool:
        return self.relpath.endswith("/__init__.py")


@dataclass
class Closure:
    sources: dict[str, Source] = field(default_factory=dict)
    imported_by: dict[str, str] = field(default_factory=dict)  # module -> first importer
    namespaces: set[str] = field(default_factory=set)  # folders without __init__.py


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read_manifest(path: Path) -> Manifest:
    with path.open("rb") as f:
        m = tomllib.load(f)
    missing = [k for k in ("package", "version", "wheel_sha256", "root", "under_test") if k not in m]
    if missing:
        raise ExtractError(f"{path}: missing {', '.join(missing)}")
    manifest = Manifest(
        package=m["package"],
        version=m["version"],
        wheel_sha256=m["wheel_sha256"].lower(),
        root=m["root"],
        shims_dir=path.parent / m.get("shims", m["package"]),
        under_test=tuple(m["under_test"]),
        shim_for=dict(m.get("shim_for", {})),
        run_time_imports=tuple(m.get("run_time_imports", ())),
    )
    refused = sorted(set(manifest.shim_for) & set(manifest.under_test))
    if refused:
        raise ExtractError(f"{path}: a shim may not stand in for a module under test: {', '.join(refused)}")
    return manifest


def wheel_name_version(wheel: zipfile.ZipFile) -> tuple[str, str]:
    """The Name and Version of the wheel's dist-info METADATA."""
    metadata = [n for n in wheel.namelist() if n.count("/") == 1 and n.endswith(".dist-info/METADATA")]
    if len(metadata) != 1:
        raise ExtractError(f"the wheel has {len(metadata)} dist-info METADATA files, not one")
    headers = HeaderParser().parsestr(wheel.read(metadata[0]).decode("utf-8"))
    return str(headers["Name"]), str(headers["Version"])


def check_wheel(path: Path, data: bytes, manifest: Manifest, wheel: zipfile.ZipFile) -> None:
    name, version = wheel_name_version(wheel)
    if _normalise(name) != _normalise(manifest.package) or version != manifest.version:
        raise ExtractError(
            f"{path.name} is {name} {version}; the manifest is for {manifest.package} {manifest.version}"
        )
    if sha256(data) != manifest.wheel_sha256:
        raise ExtractError(f"{path.name}: sha256 {sha256(data)}, the manifest's is {manifest.wheel_sha256}")


def _normalise(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def module_level(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements that run at import: not function or class bodies, nor the body of an
    `if TYPE_CHECKING:` (it never runs; its else branch does)."""
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        yield node
        for name in _NESTED:
            if name == "body" and isinstance(node, ast.If) and _is_type_checking(node.test):
                continue
            sub = getattr(node, name, None)
            if isinstance(sub, list):
                yield from module_level(sub)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imported(source: Source, root: str) -> Iterator[tuple[str, tuple[str, ...]]]:
    """(module, names imported from it) for each import of `root` run at import of `source`."""
    tree = ast.parse(source.text, filename=source.relpath)
    package = source.module if source.is_package else source.module.rpartition(".")[0]
    for node in module_level(tree.body):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = parts[: len(parts) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] == root:
                yield target, tuple(a.name for a in node.names)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == root:
                    yield alias.name, ()


class Finder:
    """A module's source: our shim where the manifest names one, else the wheel's file."""

    def __init__(self, wheel: zipfile.ZipFile, manifest: Manifest) -> None:
        self.wheel, self.manifest = wheel, manifest
        self.names = set(wheel.namelist())

    def find(self, module: str) -> Source | None:
        base = module.replace(".", "/")
        candidates = (f"{base}/__init__.py", f"{base}.py")
        if module in self.manifest.shim_for:
            for relpath in candidates:
                shim = self.manifest.shims_dir / relpath
                if shim.is_file():
                    upstream = self._upstream(module)
                    return Source(
                        module,
                        relpath,
                        shim.read_bytes(),
                        shim=True,
                        replaced_sha256=None if upstream is None else sha256(upstream.text),
                    )
            raise ExtractError(
                f"the manifest names a shim for {module}, but {self.manifest.shims_dir} has "
                f"neither {candidates[0]} nor {candidates[1]}"
            )
        return self._upstream(module)

    def _upstream(self, module: str) -> Source | None:
        base = module.replace(".", "/")
        for relpath in (f"{base}/__init__.py", f"{base}.py"):
            if relpath in self.names:
                return Source(module, relpath, self.wheel.read(relpath), shim=False)
        return None

    def is_namespace(self, module: str) -> bool:
        """A folder of the wheel without __init__.py: an implicit namespace package (no code)."""
        prefix = module.replace(".", "/") + "/"
        return module not in self.manifest.shim_for and any(n.startswith(prefix) for n in self.names)


def closure(finder: Finder, manifest: Manifest) -> Closure:
    """The modules that importing each module under test runs, with their sources."""
    found = Closure()
    todo = [(m, "the manifest's under_test") for m in manifest.under_test]
    todo += [(m, "the manifest's run_time_imports") for m in manifest.run_time_imports]
    while todo:
        module, importer = todo.pop()
        if module in found.sources or module in found.namespaces:
            continue
        source = finder.find(module)
        if source is None and finder.is_namespace(module):
            found.namespaces.add(module)
            continue
        if source is None:
            raise ExtractError(f"{module} (imported by {importer}) is neither in the wheel nor a shim")
        found.sources[module], found.imported_by[module] = source, importer
        parts = module.split(".")
        todo += [(".".join(parts[:i]), module) for i in range(1, len(parts))]  # parent packages
        for target, names in imported(source, manifest.root):
            todo.append((target, module))
            # `from pkg import name` imports the submodule pkg.name where there is one.
            todo += [(f"{target}.{n}", module) for n in names if n != "*" and finder.find(f"{target}.{n}")]
    unused = sorted(set(manifest.shim_for) - set(found.sources))
    if unused:
        raise ExtractError(f"no import reaches the shims for {', '.join(unused)}: remove them from the manifest")
    return found


def provenance(manifest: Manifest, wheel_path: Path, wheel_sha256: str, found: Closure) -> dict[str, object]:
    upstream = {s.relpath: sha256(s.text) for s in found.sources.values() if not s.shim}
    shims = {
        s.relpath: {
            "sha256": sha256(s.text),
            "stands_in_for": s.module,
            "why": manifest.shim_for[s.module],
            "upstream_sha256": s.replaced_sha256,
        }
        for s in found.sources.values()
        if s.shim
    }
    return {
        "package": manifest.package,
        "version": manifest.version,
        "wheel": wheel_path.name,
        "wheel_sha256": wheel_sha256,
        "root": manifest.root,
        "under_test": list(manifest.under_test),
        "upstream": dict(sorted(upstream.items())),
        "shims": dict(sorted(shims.items())),
    }


def extract(wheel_path: Path, manifest_path: Path, out: Path) -> dict[str, object]:
    """Writes out/site and out/provenance.json; returns the provenance."""
    if out.exists() and any(out.iterdir()):
        raise ExtractError(f"{out} exists and is not empty")
    manifest = read_manifest(manifest_path)
    data = wheel_path.read_bytes()
    with zipfile.ZipFile(wheel_path) as wheel:
        check_wheel(wheel_path, data, manifest, wheel)
        found = closure(Finder(wheel, manifest), manifest)
    for source in found.sources.values():
        target = out / "site" / PurePosixPath(source.relpath)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(source.text)
    record = provenance(manifest, wheel_path, sha256(data), found)
    (out / "provenance.json").write_text(json.dumps(record, indent=1) + "\n")
    return record


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("wheel", type=Path)
    parser.add_argument("manifest", type=Path)
    parser.add_argument("out", type=Path)
    args = parser.parse_args(argv)
    try:
        record = extract(args.wheel, args.manifest, args.out)
    except ExtractError as e:
        print(f"extract_shipped: {e}", file=sys.stderr)
        return 2
    upstream, shims = record["upstream"], record["shims"]
    assert isinstance(upstream, dict) and isinstance(shims, dict)
    print(
        f"{record['package']} {record['version']}: {len(upstream)} upstream files, {len(shims)} shims "
        f"in {args.out / 'site'}"
    )
    for relpath in upstream:
        print(f"  upstream {relpath}")
    for relpath, shim in shims.items():
        print(f"  shim     {relpath} ({shim['why']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
