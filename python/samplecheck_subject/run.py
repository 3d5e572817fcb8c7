"""python -m samplecheck_subject.run TARGET [--descriptor JSON] [--subject NAME]...

The command `samplecheck qualify --exec` starts for a callable named by reference:
TARGET is "module:attribute" or "path/to/file.py:attribute".
 - with --descriptor (a descriptor's JSON), the attribute is the callable;
 - without, it is a factory (or a list) giving [(fn, descriptor), ...], or
   ([(fn, descriptor), ...], unavailable_reason) when this machine cannot run them.
--subject keeps only the named subjects (repeatable).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import sys
from typing import Any

from .descriptor import from_json
from .serve import device_unavailable, serve_subjects


def resolve(target: str) -> Any:
    module_name, sep, attribute = target.partition(":")
    if not sep or not attribute:
        raise SystemExit(f"samplecheck_subject.run: {target!r} is not MODULE:ATTRIBUTE")
    if module_name.endswith(".py") or os.sep in module_name:
        spec = importlib.util.spec_from_file_location("_samplecheck_target", module_name)
        if spec is None:
            raise SystemExit(f"samplecheck_subject.run: cannot load {module_name}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        assert spec.loader is not None  # a file location always has one
        spec.loader.exec_module(module)
    else:
        module = importlib.import_module(module_name)
    obj: Any = module
    for part in attribute.split("."):
        obj = getattr(obj, part)
    return obj


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m samplecheck_subject.run")
    parser.add_argument("target")
    parser.add_argument("--descriptor", help="the descriptor as JSON (target is then the callable)")
    parser.add_argument("--subject", action="append", default=[], help="serve only this subject")
    args = parser.parse_args(argv)
    obj = resolve(args.target)
    unavailable = None
    if args.descriptor is not None:
        pairs = [(obj, from_json(json.loads(args.descriptor)))]
        unavailable = device_unavailable(d for _, d in pairs)
    else:
        made = obj() if callable(obj) else obj
        if isinstance(made, tuple) and len(made) == 2 and isinstance(made[0], list):
            made, unavailable = made
        pairs = list(made)
    if args.subject:
        names = {d.name for _, d in pairs}
        unknown = [s for s in args.subject if s not in names]
        if unknown:
            raise SystemExit(
                f"samplecheck_subject.run: no subject {', '.join(unknown)} in {args.target}; "
                f"it has {', '.join(sorted(names))}"
            )
        pairs = [(f, d) for f, d in pairs if d.name in args.subject]
    return serve_subjects(pairs, unavailable=unavailable)


if __name__ == "__main__":
    sys.exit(main())
