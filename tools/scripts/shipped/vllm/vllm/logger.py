"""samplecheck's shim for vllm.logger (tools/scripts/shipped/vllm.toml).

Upstream's configures the engine's logging (vllm.logging_utils: uvicorn's formatters, JSON
configs) and adds the *_once methods to its loggers; the judged modules only log. Ours
gives the same names on the standard library's logger.
"""

import logging
from typing import Any

_seen: set[tuple[str, str]] = set()


class _Logger(logging.LoggerAdapter):  # type: ignore[type-arg]
    def _once(self, level: int, msg: str, *args: Any, **kwargs: Any) -> None:
        kwargs.pop("scope", None)
        if (self.logger.name, msg) not in _seen:
            _seen.add((self.logger.name, msg))
            self.log(level, msg, *args, **kwargs)

    def debug_once(self, msg: str, *args: Any, **kwargs: Any) -> None:
        self._once(logging.DEBUG, msg, *args, **kwargs)

    def info_once(self, msg: str, *args: Any, **kwargs: Any) -> None:
        self._once(logging.INFO, msg, *args, **kwargs)

    def warning_once(self, msg: str, *args: Any, **kwargs: Any) -> None:
        self._once(logging.WARNING, msg, *args, **kwargs)


def init_logger(name: str) -> _Logger:
    return _Logger(logging.getLogger(name), {})
