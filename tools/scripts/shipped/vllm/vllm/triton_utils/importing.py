"""samplecheck's shim for vllm.triton_utils.importing (tools/scripts/shipped/vllm.toml).

Upstream's says HAS_TRITON where triton imports and exactly one GPU driver of Triton is
active, so on a machine without a GPU the Triton modules get placeholders even where
Triton's interpreter (TRITON_INTERPRET=1) would run their kernels on the CPU. Ours: triton
imports, and a GPU driver is active or the interpreter is on. The placeholders are
upstream's, for a machine without Triton.
"""

import os
import types
from importlib.util import find_spec

from vllm.utils.math_utils import cdiv


def _usable() -> bool:
    if find_spec("triton") is None:
        return False
    if os.environ.get("TRITON_INTERPRET") == "1":
        return True
    from triton.backends import backends

    return sum(1 for n, x in backends.items() if n != "cpu" and x.driver and x.driver.is_active()) == 1


HAS_TRITON = _usable()


class TritonPlaceholder(types.ModuleType):
    def __init__(self) -> None:
        super().__init__("triton")
        self.__version__ = "3.4.0"
        self.jit = self._dummy_decorator("jit")
        self.autotune = self._dummy_decorator("autotune")
        self.heuristics = self._dummy_decorator("heuristics")
        self.Config = self._dummy_decorator("Config")
        self.cdiv = cdiv
        self.language = TritonLanguagePlaceholder()

    def _dummy_decorator(self, name):  # type: ignore[no-untyped-def]
        def decorator(*args, **kwargs):  # type: ignore[no-untyped-def]
            if args and callable(args[0]):
                return args[0]
            return lambda f: f

        return decorator


class TritonLanguagePlaceholder(types.ModuleType):
    def __init__(self) -> None:
        super().__init__("triton.language")
        self.constexpr = lambda value: value
        self.dtype = None
        self.int64 = None
        self.int32 = None
        self.uint8 = None
        self.pointer_type = lambda element_ty: None
        self.tensor = None
        self.exp = None
        self.exp2 = None
        self.log = None
        self.log2 = None
