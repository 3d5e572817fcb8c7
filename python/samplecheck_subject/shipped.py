"""Modules a package ships, imported unmodified from the tree that
tools/scripts/extract_shipped.py extracted from its published wheel, with what ran recorded.

load(tree, modules) puts TREE/site first on sys.path, imports the modules and checks every
file of the tree that Python executed against TREE/provenance.json: an upstream file or shim
whose sha256 differs, or a file the provenance does not list, is refused (ShippedError), so
the judged code is byte for byte the wheel's. The hello's environment (serve.environment)
then carries the package's wheel sha256 and the sha256 of each file that ran, which
samplecheck records in report.json and shows in report.html (docs/shipped/sglang.md).
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

# The hello's environment holds at most 64 packages of at most 128 bytes a name or value
# (docs/subject-protocol.md); this leaves room for the reported package versions.
MAX_RECORDED = 48
# FlashInfer modules built ahead of time named one by one (shipped.flashinfer_aot); more get one entry.
MAX_AOT_NAMED = 8

_recorded: dict[str, str] = {}


class ShippedError(Exception):
    """The tree is missing, or what ran is not what the extraction recorded."""


def read_provenance(tree: Path) -> dict[str, Any]:
    path = tree / "provenance.json"
    if not path.is_file():
        raise ShippedError(f"{path} does not exist: run tools/scripts/extract_shipped.py (docs/shipped/sglang.md)")
    provenance: dict[str, Any] = json.loads(path.read_text())
    return provenance


def load(tree: Path, modules: list[str]) -> list[ModuleType]:
    """Imports `modules` from tree/site, checks what ran and records it for the hello."""
    provenance = read_provenance(tree)
    site = (tree / "site").resolve()
    if str(site) not in sys.path:
        sys.path.insert(0, str(site))
    imported = [importlib.import_module(name) for name in modules]
    record(provenance, executed(site, provenance))
    return imported


def executed(site: Path, provenance: dict[str, Any]) -> dict[str, str]:
    """{relpath: sha256} of each file under `site` that an imported module ran, checked
    against the provenance; a module that ran from the package's name elsewhere is refused."""
    expected = {**provenance["upstream"], **{p: s["sha256"] for p, s in provenance["shims"].items()}}
    root = provenance["root"]
    ran: dict[str, str] = {}
    for name, module in list(sys.modules.items()):
        if name.split(".")[0] != root:
            continue
        file = getattr(module, "__file__", None)
        if file is None:
            continue  # a namespace package: no code ran
        path = Path(file).resolve()
        if site not in path.parents:
            raise ShippedError(f"{name} ran from {file}, outside the extracted tree {site}")
        relpath = path.relative_to(site).as_posix()
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        if relpath not in expected:
            raise ShippedError(f"{relpath} ran but the provenance does not list it")
        if digest != expected[relpath]:
            raise ShippedError(f"{relpath}: sha256 {digest}, the provenance's is {expected[relpath]} (modified?)")
        ran[relpath] = digest
    return dict(sorted(ran.items()))


def record(provenance: dict[str, Any], ran: dict[str, str]) -> None:
    """The entries the hello's environment.packages gets: the wheel and each file that ran."""
    package = provenance["package"]
    entries = {f"{package} wheel": f"{provenance['version']} sha256:{provenance['wheel_sha256']}"}
    for relpath, digest in ran.items():
        kind = "shim" if relpath in provenance["shims"] else "upstream"
        entries[f"{package} {kind} {relpath}"] = f"sha256:{digest}"
    if len(_recorded) + len(entries) > MAX_RECORDED:
        raise ShippedError(f"{len(entries)} files ran: more than the hello's environment holds ({MAX_RECORDED})")
    _recorded.update(entries)


def installed(distribution: str, files: tuple[str, ...]) -> dict[str, str]:
    """For a package installed from its published wheel (pip): its version, and the sha256 of
    each of `files` (paths as the wheel's RECORD spells them), checked against the sha256 the
    RECORD states: a file that differs, or one the RECORD does not list, is refused."""
    import base64
    from importlib import metadata

    try:
        dist = metadata.distribution(distribution)
    except metadata.PackageNotFoundError as e:
        raise ShippedError(f"{distribution} is not installed as a distribution ({e})") from e
    entries = {f"{distribution} wheel": f"{dist.version} (installed files checked against its RECORD)"}
    listed = {str(f): f for f in dist.files or ()}
    for relpath in files:
        f = listed.get(relpath)
        if f is None or f.hash is None or f.hash.mode != "sha256":
            raise ShippedError(f"{distribution}: {relpath} has no sha256 in the wheel's RECORD")
        data = Path(str(f.locate())).read_bytes()
        digest = hashlib.sha256(data).digest()
        if base64.urlsafe_b64encode(digest).rstrip(b"=").decode() != f.hash.value:
            raise ShippedError(f"{distribution}: {relpath} differs from the wheel's RECORD (modified?)")
        entries[f"{distribution} upstream {relpath}"] = f"sha256:{digest.hex()}"
    return entries


def record_entries(entries: dict[str, str]) -> None:
    """Adds entries (name: value) to what the hello's environment.packages gets."""
    if len(_recorded) + len(entries) > MAX_RECORDED:
        raise ShippedError(f"{len(entries)} entries: more than the hello's environment holds ({MAX_RECORDED})")
    _recorded.update(entries)


def recorded() -> dict[str, str]:
    """What load() recorded, for serve.environment()."""
    return dict(_recorded)


def flashinfer_aot() -> dict[str, str]:
    """FlashInfer modules built ahead of time (tools/scripts/aot_flashinfer.sh), which FlashInfer
    loads from its data/aot instead of JIT-building them: a build of the wheel's own source,
    not a file of the wheel, so recorded apart from the wheel's files, with its sha256.
    Empty where flashinfer is not imported or holds no such module. A tree of more than
    MAX_AOT_NAMED modules (a whole AOT build of FlashInfer) gets one entry, a sha256 over
    every name and digest, so the hello stays within its 64 entries."""
    package = getattr(sys.modules.get("flashinfer"), "__file__", None)
    if package is None:
        return {}
    aot = Path(package).parent / "data" / "aot"
    digests = {so.parent.name: hashlib.sha256(so.read_bytes()).hexdigest() for so in sorted(aot.glob("*/*.so"))}
    if len(digests) <= MAX_AOT_NAMED:
        return {f"flashinfer aot {name}"[:128]: f"sha256:{digest}" for name, digest in digests.items()}
    combined = hashlib.sha256("".join(f"{name}={digest}\n" for name, digest in digests.items()).encode())
    return {"flashinfer aot modules": f"{len(digests)} modules, sha256:{combined.hexdigest()}"}


def tree_from_env(variable: str, default: str) -> Path:
    """The extracted tree: $variable, else `default` relative to the repository root."""
    given = os.environ.get(variable)
    if given:
        return Path(given)
    return Path(__file__).resolve().parents[2] / default
