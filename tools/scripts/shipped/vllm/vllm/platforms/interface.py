"""samplecheck's shim for vllm.platforms.interface (tools/scripts/shipped/vllm.toml).

Upstream's is the Platform base class, which imports the attention backend registry; the
judged modules take from it only these two types, spelled as upstream spells them.
"""

import enum
from typing import Any, NamedTuple


class CpuArchEnum(enum.Enum):
    X86 = enum.auto()
    ARM = enum.auto()
    POWERPC = enum.auto()
    S390X = enum.auto()
    RISCV = enum.auto()
    OTHER = enum.auto()
    UNKNOWN = enum.auto()


class DeviceCapability(NamedTuple):
    major: int
    minor: int

    def __lt__(self, other: Any) -> bool:
        return (self.major, self.minor) < (other.major, other.minor)

    def __ge__(self, other: Any) -> bool:
        return (self.major, self.minor) >= (other.major, other.minor)

    def as_version_str(self) -> str:
        return f"{self.major}.{self.minor}"

    def to_int(self) -> int:
        assert 0 <= self.minor < 10
        return self.major * 10 + self.minor
