"""What a subject is: the sampler, matmul and collective descriptors of the protocol's hello
(docs/subject-protocol.md section 3; the fields of sc_sampler / sc_matmul / sc_collective, ABI 1.6),
checked here by the same rules the host applies, so a mistake is named before any batch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Union, get_args

# The closed sets of the descriptors, typed (a checker names a misspelt value before any run);
# each tuple below holds the same values, for the checks at run time and their messages.
SubjectKind = Literal["sampler", "matmul", "collective"]
InputKind = Literal["probs", "logits"]
Dtype = Literal["f32", "bf16", "f16"]
Filter = Literal["top_k", "top_p", "min_p", "temperature"]
FilterOrder = Literal["top_k_first", "joint"]
TiePolicy = Literal["keep_ties", "lowest_index"]
MemorySpace = Literal["host", "cuda"]
INPUT_KINDS: tuple[str, ...] = get_args(InputKind)
DTYPES: tuple[str, ...] = get_args(Dtype)
FILTERS: tuple[str, ...] = get_args(Filter)
FILTER_ORDERS: tuple[str, ...] = get_args(FilterOrder)
TIE_POLICIES: tuple[str, ...] = get_args(TiePolicy)
MEMORY_SPACES: tuple[str, ...] = get_args(MemorySpace)
# Declared contracts (section 6).
RngPolicy = Literal["per_request", "batch_slot", "subject_generator", "request_keyed"]
ParameterIndexing = Literal["input_row", "output_row"]
DegenerateRows = Literal["valid_flag", "error", "undefined", "treat_as_zero"]
ProbsNormalisation = Literal["renormalise", "assume_sum_one"]
UniformRule = Literal["undeclared", "inverse_cdf_u53"]
Inputs = Literal["preserved", "mutated"]
RNG_POLICIES: tuple[str, ...] = get_args(RngPolicy)
PARAMETER_INDEXINGS: tuple[str, ...] = get_args(ParameterIndexing)
DEGENERATE_ROWS: tuple[str, ...] = get_args(DegenerateRows)
PROBS_NORMALISATIONS: tuple[str, ...] = get_args(ProbsNormalisation)
UNIFORM_RULES: tuple[str, ...] = get_args(UniformRule)
INPUTS: tuple[str, ...] = get_args(Inputs)
# A collective's promises (SC_INVARIANT_*) and the dtypes the ABI gives collectives.
Invariant = Literal["size", "run", "tree"]
CollectiveDtype = Literal["f32", "bf16"]
INVARIANTS: tuple[str, ...] = get_args(Invariant)
COLLECTIVE_DTYPES: tuple[str, ...] = get_args(CollectiveDtype)

# Route ids travel as one byte a row; a table this long already names every fallback of a kernel.
MAX_ROUTES = 16
MAX_ROUTE_NAME_BYTES = 64


@dataclass(frozen=True)
class Route:
    """One route of a sampler whose tie rule changes with the call (sc_route, ABI 1.5): FlashInfer's
    cake sampler falls back to an older kernel for k > 1024 and 16-bit inputs. The callable
    reports per output row the index of the route it took; the ties check judges each row by
    its route's tie_policy."""

    name: str
    tie_policy: TiePolicy


class DescriptorError(ValueError):
    """A descriptor that breaks the ABI's rules, naming the subject and the field."""


def _one_of(name: str, fieldname: str, value: object, allowed: Sequence[str]) -> None:
    if value not in allowed:
        raise DescriptorError(f"{name}: {fieldname} = {value!r} is not one of {', '.join(allowed)}")


@dataclass
class SamplerDescriptor:
    """A token sampler. `memory_space="cuda"` hands the callable torch tensors on the device.

    The contract fields say which promise the battery checks: rng_policy "per_request" (output
    r draws from curand_init(seed[r], subsequence[r], offset[r])), "batch_slot" (the stream is
    keyed by the output row, as FlashInfer documents), "subject_generator" (the subject owns
    its generator: same seeds and batch give the same tokens), "request_keyed" (ABI 1.5: the
    noise is a hash of (seed[r], offset[r]), offset[r] the request's position, as vLLM's and
    SGLang's seeded samplers; samplecheck folds the planned subsequence into the seed it sends);
    parameter_indexing "input_row" or "output_row"; degenerate_rows "valid_flag", "error",
    "undefined" or "treat_as_zero" (ABI 1.5, probs only: NaN and negative entries count as 0,
    a row with +Inf entries draws among them, an all-zero row comes back valid 0); probs_normalisation
    "renormalise" (a probs row is sampled in proportion to its values, whatever they sum to)
    or "assume_sum_one" (rows must sum to 1: only float32 rows that do are sent, so it takes
    input_kind "probs" and input_dtypes ("f32",)); uniform_rule "undeclared" or
    "inverse_cdf_u53" (u from the first two outputs of the stream as a 53-bit double, the token
    the first whose running sum exceeds u * the row's sum: check stream_agreement compares
    tokens with it on the reference Philox stream; needs input_kind "probs"); inputs
    "preserved" (the callable only reads its input rows, parameters and streams: samplecheck
    compares them with what it sent after every call, and a change fails the check) or
    "mutated" (it may write them, e.g. divides its logits in place: they are sent again
    before each call and not compared).
    """

    name: str
    input_kind: InputKind
    input_dtypes: Sequence[Dtype]
    filters: Sequence[Filter] = ()
    philox_outputs_per_call: int = 1
    filter_order: FilterOrder | None = None
    tie_policy: TiePolicy | None = None
    description: str = ""
    memory_space: MemorySpace = "host"
    rng_policy: RngPolicy = "per_request"
    parameter_indexing: ParameterIndexing = "input_row"
    degenerate_rows: DegenerateRows = "valid_flag"
    probs_normalisation: ProbsNormalisation = "renormalise"
    uniform_rule: UniformRule = "undeclared"
    inputs: Inputs = "preserved"
    routes: Sequence[Route] = ()
    kind: Literal["sampler"] = field(default="sampler", init=False)

    def validate(self) -> SamplerDescriptor:
        n = self.name or "<unnamed sampler>"
        if not isinstance(self.name, str) or not self.name:
            raise DescriptorError(f"{n}: name must be a non-empty string")
        _one_of(n, "input_kind", self.input_kind, INPUT_KINDS)
        _one_of(n, "memory_space", self.memory_space, MEMORY_SPACES)
        if not self.input_dtypes:
            raise DescriptorError(f"{n}: input_dtypes must name at least one of {', '.join(DTYPES)}")
        for d in self.input_dtypes:
            _one_of(n, "input_dtypes", d, DTYPES)
        for f in self.filters:
            _one_of(n, "filters", f, FILTERS)
        if "temperature" in self.filters and self.input_kind != "logits":
            raise DescriptorError(f"{n}: filters: temperature is a logits filter, input_kind is probs")
        if ("top_k" in self.filters and "top_p" in self.filters) or self.filter_order is not None:
            _one_of(n, "filter_order", self.filter_order, FILTER_ORDERS)
        if "top_k" in self.filters or self.tie_policy is not None:
            _one_of(n, "tie_policy", self.tie_policy, TIE_POLICIES)
        if not isinstance(self.philox_outputs_per_call, int) or self.philox_outputs_per_call < 1:
            raise DescriptorError(f"{n}: philox_outputs_per_call = {self.philox_outputs_per_call!r} must be >= 1")
        _one_of(n, "rng_policy", self.rng_policy, RNG_POLICIES)
        _one_of(n, "parameter_indexing", self.parameter_indexing, PARAMETER_INDEXINGS)
        _one_of(n, "degenerate_rows", self.degenerate_rows, DEGENERATE_ROWS)
        _one_of(n, "probs_normalisation", self.probs_normalisation, PROBS_NORMALISATIONS)
        if self.probs_normalisation == "assume_sum_one" and (
            self.input_kind != "probs" or tuple(self.input_dtypes) != ("f32",)
        ):
            raise DescriptorError(
                f"{n}: probs_normalisation = 'assume_sum_one' needs input_kind 'probs' and "
                "input_dtypes ('f32',) (a row rounded to bf16 / fp16 does not sum to 1)"
            )
        _one_of(n, "uniform_rule", self.uniform_rule, UNIFORM_RULES)
        if self.uniform_rule == "inverse_cdf_u53" and self.input_kind != "probs":
            raise DescriptorError(
                f"{n}: uniform_rule = 'inverse_cdf_u53' needs input_kind 'probs' (the rule "
                "inverts the running sum of the row as given)"
            )
        _one_of(n, "inputs", self.inputs, INPUTS)
        if self.rng_policy == "request_keyed" and self.uniform_rule != "undeclared":
            raise DescriptorError(
                f"{n}: uniform_rule = {self.uniform_rule!r} is stated on the Philox stream; "
                "rng_policy 'request_keyed' draws no Philox stream"
            )
        if self.degenerate_rows == "treat_as_zero" and self.input_kind != "probs":
            raise DescriptorError(
                f"{n}: degenerate_rows = 'treat_as_zero' needs input_kind 'probs' (it says "
                "which probabilities count as zero)"
            )
        self._validate_routes(n)
        return self

    def _validate_routes(self, n: str) -> None:
        if not self.routes:
            return
        if "top_k" not in self.filters:
            raise DescriptorError(
                f"{n}: routes state tie policies, which only top_k's boundary uses: declare filter top_k"
            )
        if len(self.routes) > MAX_ROUTES:
            raise DescriptorError(f"{n}: routes holds {len(self.routes)} routes, more than {MAX_ROUTES}")
        seen: set[str] = set()
        for i, r in enumerate(self.routes):
            if not isinstance(r, Route):
                raise DescriptorError(f"{n}: routes[{i}] = {r!r} is not a Route")
            if not r.name or len(r.name.encode()) > MAX_ROUTE_NAME_BYTES or r.name in seen:
                raise DescriptorError(
                    f"{n}: routes[{i}].name = {r.name!r} must be non-empty, at most "
                    f"{MAX_ROUTE_NAME_BYTES} bytes and unique"
                )
            seen.add(r.name)
            _one_of(n, f"routes[{i}].tie_policy", r.tie_policy, TIE_POLICIES)

    def to_json(self) -> dict[str, Any]:
        self.validate()
        out: dict[str, Any] = {
            "kind": "sampler",
            "name": self.name,
            "description": self.description,
            "memory_space": self.memory_space,
            "input_kind": self.input_kind,
            "input_dtypes": list(self.input_dtypes),
            "filters": list(self.filters),
            "philox_outputs_per_call": self.philox_outputs_per_call,
            "rng_policy": self.rng_policy,
            "parameter_indexing": self.parameter_indexing,
            "degenerate_rows": self.degenerate_rows,
            "probs_normalisation": self.probs_normalisation,
            "uniform_rule": self.uniform_rule,
            "inputs": self.inputs,
        }
        if self.filter_order is not None:
            out["filter_order"] = self.filter_order
        if self.tie_policy is not None:
            out["tie_policy"] = self.tie_policy
        if self.routes:
            out["routes"] = [{"name": r.name, "tie_policy": r.tie_policy} for r in self.routes]
        return out


@dataclass
class MatmulDescriptor:
    """A bf16 matmul: out[m, n] = bf16(sum_k a[m, k] * weight[n, k] (+ bias[n])), fp32 inside."""

    name: str
    description: str = ""
    memory_space: MemorySpace = "host"
    launch_configs: list[str] = field(default_factory=list)
    batch_thresholds: list[int] = field(default_factory=list)
    kind: Literal["matmul"] = field(default="matmul", init=False)

    def validate(self) -> MatmulDescriptor:
        n = self.name or "<unnamed matmul>"
        if not isinstance(self.name, str) or not self.name:
            raise DescriptorError(f"{n}: name must be a non-empty string")
        _one_of(n, "memory_space", self.memory_space, MEMORY_SPACES)
        if any(not isinstance(c, str) for c in self.launch_configs):
            raise DescriptorError(f"{n}: launch_configs must be strings")
        t = list(self.batch_thresholds)
        if any(not isinstance(x, int) or x < 2 for x in t) or t != sorted(set(t)):
            raise DescriptorError(f"{n}: batch_thresholds = {t} must be ascending integers >= 2")
        return self

    def to_json(self) -> dict[str, Any]:
        self.validate()
        return {
            "kind": "matmul",
            "name": self.name,
            "description": self.description,
            "memory_space": self.memory_space,
            "launch_configs": list(self.launch_configs),
            "batch_thresholds": list(self.batch_thresholds),
        }


@dataclass
class CollectiveDescriptor:
    """A sum all-reduce over world_size ranks (sc_collective, ABI 1.6): every rank's output is
    the element-wise sum of the ranks' inputs, every rank the same bits. `invariants` is what
    it promises about those bits: "size" (an element's result follows its own rank values
    alone, not the message size, its offset or the other elements), "run" (the same call
    gives the same bits), "tree" (summed by the balanced tree over ranks). Served from host
    memory: the callable gets numpy arrays."""

    name: str
    max_world_size: int
    invariants: Sequence[Invariant] = ()
    description: str = ""
    memory_space: Literal["host"] = "host"
    dtypes: Sequence[CollectiveDtype] = ("f32",)
    kind: Literal["collective"] = field(default="collective", init=False)

    def validate(self) -> CollectiveDescriptor:
        n = self.name or "<unnamed collective>"
        if not isinstance(self.name, str) or not self.name:
            raise DescriptorError(f"{n}: name must be a non-empty string")
        if self.memory_space != "host":
            raise DescriptorError(f"{n}: memory_space = {self.memory_space!r}: collectives are served from 'host'")
        if isinstance(self.max_world_size, bool) or not isinstance(self.max_world_size, int) or self.max_world_size < 1:
            raise DescriptorError(f"{n}: max_world_size = {self.max_world_size!r} must be an integer >= 1")
        for i in self.invariants:
            _one_of(n, "invariants", i, INVARIANTS)
        if len(set(self.invariants)) != len(self.invariants):
            raise DescriptorError(f"{n}: invariants = {list(self.invariants)} names one twice")
        if "f32" not in self.dtypes:
            raise DescriptorError(f"{n}: dtypes must hold 'f32' (the battery sends float32 messages)")
        for d in self.dtypes:
            _one_of(n, "dtypes", d, COLLECTIVE_DTYPES)
        return self

    def to_json(self) -> dict[str, Any]:
        self.validate()
        return {
            "kind": "collective",
            "name": self.name,
            "description": self.description,
            "memory_space": self.memory_space,
            "dtypes": list(self.dtypes),
            "reduce_op": "sum",
            "max_world_size": self.max_world_size,
            "invariants": list(self.invariants),
        }


Descriptor = Union[SamplerDescriptor, MatmulDescriptor, CollectiveDescriptor]


def from_json(obj: dict[str, Any]) -> Descriptor:
    """A descriptor from its JSON form (what `python -m samplecheck_subject.run` receives)."""
    obj = dict(obj)
    kind = obj.pop("kind", None)
    if kind == "sampler":
        routes = obj.pop("routes", None) or []
        if not isinstance(routes, list) or not all(isinstance(r, dict) for r in routes):
            raise DescriptorError(f"{obj.get('name')}: routes must be a list of {{name, tie_policy}} objects")
        try:
            parsed = tuple(Route(**r) for r in routes)
        except TypeError as e:  # a key other than name and tie_policy, or one missing
            raise DescriptorError(f"{obj.get('name')}: routes: {e}") from e
        return SamplerDescriptor(**obj, routes=parsed).validate()
    if kind == "matmul":
        return MatmulDescriptor(**obj).validate()
    if kind == "collective":
        if obj.pop("reduce_op", "sum") != "sum":
            raise DescriptorError(f"{obj.get('name')}: reduce_op must be 'sum'")
        return CollectiveDescriptor(**obj).validate()
    raise DescriptorError(f"kind = {kind!r} is not 'sampler', 'matmul' or 'collective'")
