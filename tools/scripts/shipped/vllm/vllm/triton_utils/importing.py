"""samplecheck's shim for vllm.triton_utils.importing (tools/scripts/shipped/vllm.toml).

Upstream's says HAS_TRITON where triton imports and exactly one GPU driver of Triton is
active, so on a machine without a GPU the Triton modules get placeholders even where
Triton's interpreter (TRITON_INTERPRET=1) would run their kernels on the CPU. Ours: triton
imports, and a GPU driver is active or the interpreter is on. Where Triton does not
import, the two placeholders (ours, written for this shim) let the Triton modules load:
its decorators return the function unchanged and its language names are None; no kernel
of theirs can run there, and the adapter says so.
"""

import os
import types
from importlib.util import find_spec
from typing import Any

from vllm.utils.math_utils import cdiv


def _usable() -> bool:
    if find_spec("triton") is None:
        return False
    if os.environ.get("TRITON_INTERPRET") == "1":
        return True
    from triton.backends import backends

    return sum(1 for n, x in backends.items() if n != "cpu" and x.driver and x.driver.is_active()) == 1


HAS_TRITON = _usable()


def _unchanged(*args: Any, **kwargs: Any) -> Any:
    """@jit, @autotune(...), @heuristics(...), Config(...): the function itself, or a
    decorator that returns it."""
    if len(args) == 1 and callable(args[0]) and not kwargs:
        return args[0]
    return lambda f: f


class TritonLanguagePlaceholder(types.ModuleType):
    """triton.language without Triton: constexpr(v) is v, every other name is None."""

    def __init__(self) -> None:
        super().__init__("triton.language")
        self.constexpr = lambda value: value
        self.pointer_type = lambda element_ty: None

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return None


class TritonPlaceholder(types.ModuleType):
    """triton without Triton: decorators leave functions unchanged, cdiv is vLLM's."""

    def __init__(self) -> None:
        super().__init__("triton")
        self.__version__ = "0.0.0"
        self.cdiv = cdiv
        self.language = TritonLanguagePlaceholder()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _unchanged
