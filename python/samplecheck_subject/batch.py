"""What the callable receives: one sample batch, matmul problem or collective problem, as views
of the shared region (numpy), or as torch tensors on the device for a "cuda" subject.

The argument rules are kernels/batch_rules.h's, worded alike, so a Python subject refuses
the calls a C subject refuses, with the same status and message.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from . import numeric
from .descriptor import DTYPES, CollectiveDescriptor, Dtype, MatmulDescriptor, SamplerDescriptor
from .protocol import SC_ERR_INVALID_ARGUMENT, SC_ERR_UNSUPPORTED, ProtocolError, SharedRegion

# An array the callable receives: a numpy view of the shared region, or (a "cuda" subject)
# a torch tensor on the device; torch is optional, so its type is not named here.
Array = Any
# The views of one request by name (None: a null array).
Views = dict[str, Optional[np.ndarray]]
# (sc_status, message) of a refused call.
Refusal = tuple[int, str]

FLT_MAX = float(np.finfo(np.float32).max)


class SubjectError(Exception):
    """Raise from the callable to refuse a call with an sc_status (1 invalid, 2 unsupported,
    3 device, 4 internal). Any other exception is status 4 with its text."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class SampleBatch:
    """One sampling call.

    input        [num_input_rows, vocab_size]: float32 for f32, uint16 bits for bf16 / f16
                 (rows() decodes them to float32; a cuda subject gets the true torch dtype)
    row_index    [num_output_rows] int32 (output r samples input row row_index[r])
    top_k, top_p, min_p, temperature
                 per input row (per output row when the descriptor declares
                 parameter_indexing "output_row"), or None (filter off)
    seed, subsequence, offset
                 [num_output_rows] uint64 (int64 bit patterns on a cuda subject); Philox
                 stream of output r: curand_init(seed[r], subsequence[r], offset[r])
    out_token, out_valid
                 [num_output_rows] int32 / uint8 views of the reply; the callable returns
                 (tokens, valid) or writes these and returns None
    out_route    [num_output_rows] uint8, only when the descriptor declares routes (ABI 1.5):
                 the index of the route each output row took; the callable returns (tokens,
                 valid, routes) or writes it
    """

    descriptor: SamplerDescriptor
    vocab_size: int
    num_input_rows: int
    num_output_rows: int
    input_dtype: Dtype
    input: Array
    row_index_given: bool
    row_index: Array | None
    top_k: Array | None
    top_p: Array | None
    min_p: Array | None
    temperature: Array | None
    seed: Array
    subsequence: Array | None
    offset: Array
    out_token: np.ndarray
    out_valid: np.ndarray
    out_route: np.ndarray | None
    # A "cuda" subject's batch: the numpy views its tensors were copied from (device.to_device).
    host: dict[str, np.ndarray | None]

    def __init__(self, descriptor: SamplerDescriptor, request: dict[str, Any], arrays: Views) -> None:
        self.descriptor = descriptor
        self.vocab_size = request["vocab_size"]
        self.num_input_rows = request["num_input_rows"]
        self.num_output_rows = request["num_output_rows"]
        self.input_dtype = request["input_dtype"]
        self.input = arrays["input"]
        self.row_index_given = arrays["row_index"] is not None
        self.row_index = arrays["row_index"]
        self.top_k = arrays["top_k"]
        self.top_p = arrays["top_p"]
        self.min_p = arrays["min_p"]
        self.temperature = arrays["temperature"]
        self.seed = arrays["seed"]
        self.subsequence = arrays["subsequence"]
        self.offset = arrays["offset"]
        self.out_token = arrays["out_token"]
        self.out_valid = arrays["out_valid"]
        self.out_route = arrays.get("out_route")

    def rows(self) -> np.ndarray:
        """The input rows as float32 numpy (host subjects)."""
        return numeric.decode(self.input, self.input_dtype)

    def filter_on(self, name: str) -> bool:
        return getattr(self, name) is not None


def sample_views(region: SharedRegion, request: dict[str, Any]) -> Views:
    """The arrays of a sample request as views of the shared region; shape checks only."""
    for key in ("vocab_size", "num_input_rows", "num_output_rows"):
        if not isinstance(request.get(key), int):
            raise ProtocolError(f"sample request: {key} is missing or not an integer")
    dtype = request.get("input_dtype")
    if dtype not in DTYPES:
        raise ProtocolError(f"sample request: input_dtype = {dtype!r} is not f32, bf16 or f16")
    arrays = request.get("arrays")
    if not isinstance(arrays, dict):
        raise ProtocolError("sample request: arrays is missing")
    v, ni, no = request["vocab_size"], request["num_input_rows"], request["num_output_rows"]
    element = np.float32 if dtype == "f32" else np.uint16
    kinds = {
        "input": element,
        "row_index": np.int32,
        "top_k": np.int32,
        "top_p": np.float32,
        "min_p": np.float32,
        "temperature": np.float32,
        "seed": np.uint64,
        "subsequence": np.uint64,
        "offset": np.uint64,
        "out_token": np.int32,
        "out_valid": np.uint8,
        "out_route": np.uint8,  # ABI 1.5: only for a subject that declares routes
    }
    out: Views = {}
    for name, t in kinds.items():
        out[name] = region.view(arrays.get(name), t, name)
    if out["input"] is not None and v > 0 and ni >= 0:
        if out["input"].size != v * ni:
            raise ProtocolError(f"arrays.input.count = {out['input'].size}, expected {ni} * {v}")
        out["input"] = out["input"].reshape(ni, v)
    for name in ("seed", "offset", "out_token", "out_valid", "out_route", "row_index", "subsequence"):
        if out[name] is not None and out[name].size != no:
            raise ProtocolError(f"arrays.{name}.count = {out[name].size}, expected num_output_rows = {no}")
    return out


def refusal(descriptor: SamplerDescriptor, request: dict[str, Any], arrays: Views) -> Refusal | None:
    """(status, message) when the call breaks the ABI's rules (kernels/batch_rules.h), else None."""
    name = descriptor.name
    v, ni, no = request["vocab_size"], request["num_input_rows"], request["num_output_rows"]
    if v <= 0:
        return SC_ERR_INVALID_ARGUMENT, f"{name}: vocab_size = {v} must be positive"
    if v > 2**31 - 1:
        return SC_ERR_INVALID_ARGUMENT, f"{name}: vocab_size = {v} does not fit the int32 token ids"
    if ni < 0 or no < 0:
        return SC_ERR_INVALID_ARGUMENT, (
            f"{name}: num_input_rows = {ni} and num_output_rows = {no} must not be negative"
        )
    if request["input_dtype"] not in descriptor.input_dtypes:
        return SC_ERR_UNSUPPORTED, f"{name}: input_dtype = {request['input_dtype']} is not one it declares"
    if no == 0:
        return None
    for required in ("input", "seed", "offset", "out_token", "out_valid"):
        if arrays[required] is None:
            return SC_ERR_INVALID_ARGUMENT, f"{name}: {required} is NULL"
    if arrays["row_index"] is None and no != ni:
        return SC_ERR_INVALID_ARGUMENT, (
            f"{name}: row_index is NULL but num_output_rows = {no} differs from num_input_rows = {ni}"
        )
    if ni == 0:
        return SC_ERR_INVALID_ARGUMENT, f"{name}: output row 0: row_index points into an empty batch"
    ri = arrays["row_index"]
    if ri is not None:
        bad = np.flatnonzero((ri < 0) | (ri >= ni))
        if bad.size:
            r = int(bad[0])
            return SC_ERR_INVALID_ARGUMENT, (f"{name}: output row {r}: row_index = {int(ri[r])} is outside [0, {ni})")
    rows = no if descriptor.parameter_indexing == "output_row" else ni
    where = "output row" if descriptor.parameter_indexing == "output_row" else "input row"
    for p in ("top_k", "top_p", "min_p", "temperature"):
        if arrays[p] is not None and arrays[p].size != rows:
            return SC_ERR_INVALID_ARGUMENT, f"{name}: {p} holds {arrays[p].size} values, expected {rows}"
    return _first_row_refusal(descriptor, arrays, v, rows, where)


def _first_row_refusal(descriptor: SamplerDescriptor, arrays: Views, v: int, rows: int, where: str) -> Refusal | None:
    """batch_rules.h's row_refusal: per row, the first failing field in the enum's order."""
    name, filters = descriptor.name, descriptor.filters
    logits = descriptor.input_kind == "logits"
    k, tp, mp, t = (arrays[p] for p in ("top_k", "top_p", "min_p", "temperature"))
    with np.errstate(invalid="ignore"):
        tests = [
            ("top_k", k, None if k is None else k < 0, "is negative", SC_ERR_INVALID_ARGUMENT),
            (
                "top_p",
                tp,
                None if tp is None else ~((tp > 0) & (tp <= 1)),
                "is outside (0, 1]",
                SC_ERR_INVALID_ARGUMENT,
            ),
            (
                "min_p",
                mp,
                None if mp is None else ~((mp >= 0) & (mp <= 1)),
                "is outside [0, 1]",
                SC_ERR_INVALID_ARGUMENT,
            ),
            (
                "temperature",
                t,
                None if t is None else ~((t >= 0) & (t <= FLT_MAX)),
                "must be finite and >= 0",
                SC_ERR_INVALID_ARGUMENT,
            ),
        ]
        unsupported = "asks for a filter this subject does not implement"
        declared_t = logits and "temperature" in filters
        tests += [
            (
                "top_k",
                k,
                None if k is None or "top_k" in filters else (k > 0) & (k < v),
                unsupported,
                SC_ERR_UNSUPPORTED,
            ),
            ("top_p", tp, None if tp is None or "top_p" in filters else tp < 1, unsupported, SC_ERR_UNSUPPORTED),
            ("min_p", mp, None if mp is None or "min_p" in filters else mp > 0, unsupported, SC_ERR_UNSUPPORTED),
            ("temperature", t, None if t is None or declared_t else t != 1, unsupported, SC_ERR_UNSUPPORTED),
        ]
    first = None
    for order, (field, values, bad, text, status) in enumerate(tests):
        if bad is None:
            continue
        hits = np.flatnonzero(bad)
        if hits.size and (first is None or (int(hits[0]), order) < first[:2]):
            first = (int(hits[0]), order, field, values, text, status)
    if first is None:
        return None
    row, _, field, values, text, status = first
    value = values[row]
    shown = str(int(value)) if field == "top_k" else f"{float(value):g}"
    return status, f"{name}: {where} {row}: {field} = {shown} {text}"


class MatmulProblem:
    """One matmul call: a [m, k], weight [n, k], bias [n] or None, as bf16 bits (uint16 numpy;
    a_f32() etc. decode them) or bf16 torch tensors on the device for a cuda subject; out
    [m, n] the reply (bf16 bits). The callable returns out or writes it and returns None."""

    descriptor: MatmulDescriptor
    m: int
    n: int
    k: int
    launch_config: int
    operands_generation: int | None
    a: Array
    weight: Array
    bias: Array | None
    out: np.ndarray

    def __init__(self, descriptor: MatmulDescriptor, request: dict[str, Any], arrays: Views) -> None:
        self.descriptor = descriptor
        self.m, self.n, self.k = request["m"], request["n"], request["k"]
        self.launch_config = request.get("launch_config", -1)
        self.operands_generation = request.get("operands_generation")
        self.a = arrays["a"]
        self.weight = arrays["weight"]
        self.bias = arrays["bias"]
        self.out = arrays["out"]


def matmul_views(region: SharedRegion, request: dict[str, Any]) -> Views:
    for key in ("m", "n", "k"):
        if not isinstance(request.get(key), int) or request[key] < 0:
            raise ProtocolError(f"matmul request: {key} is missing or not a non-negative integer")
    arrays = request.get("arrays")
    if not isinstance(arrays, dict):
        raise ProtocolError("matmul request: arrays is missing")
    m, n, k = request["m"], request["n"], request["k"]
    shapes = {"a": (m, k), "weight": (n, k), "bias": (n,), "out": (m, n)}
    out: Views = {}
    for name, shape in shapes.items():
        count = int(np.prod(shape))
        view = region.view(arrays.get(name), np.uint16, name, expected_count=count)
        out[name] = None if view is None else view.reshape(shape)
    for required in ("a", "weight", "out"):
        if out[required] is None:
            raise ProtocolError(f"matmul request: arrays.{required} is null")
    return out


class CollectiveProblem:
    """One all-reduce: `inputs` [world_size, count] float32 (row r is rank r's message, a copy
    of the shared region's, so the callable may not change what samplecheck compares), and
    `outputs`, rank r's output view of count elements each. The callable returns the result,
    either [count] (every rank gets it) or [world_size, count], or writes `outputs` itself and
    returns None."""

    descriptor: CollectiveDescriptor
    world_size: int
    count: int
    dtype: str
    inputs: np.ndarray
    outputs: list[np.ndarray]

    def __init__(self, descriptor: CollectiveDescriptor, request: dict[str, Any], views: CollectiveViews) -> None:
        self.descriptor = descriptor
        self.world_size, self.count, self.dtype = request["world_size"], request["count"], request["dtype"]
        self.inputs = np.stack(views[0]) if views[0] else np.zeros((0, self.count), np.float32)
        self.outputs = views[1]


# (each rank's input view, each rank's output view)
CollectiveViews = tuple[list[np.ndarray], list[np.ndarray]]


def _collective_fields(request: dict[str, Any]) -> None:
    for key in ("world_size", "count"):
        value = request.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ProtocolError(f"collective request: {key} = {value!r} is not an integer >= 1")
    if request.get("dtype") != "f32":
        raise ProtocolError(f"collective request: dtype = {request.get('dtype')!r} is not 'f32'")


def collective_views(region: SharedRegion, request: dict[str, Any]) -> CollectiveViews:
    """The views of a collective request, each field checked (a malformed one names it)."""
    _collective_fields(request)
    arrays = request.get("arrays")
    if not isinstance(arrays, dict):
        raise ProtocolError("collective request: arrays is missing")
    world, count = request["world_size"], request["count"]
    views: CollectiveViews = ([], [])
    for side, name in enumerate(("inputs", "outputs")):
        places = arrays.get(name)
        if not isinstance(places, list) or len(places) != world:
            raise ProtocolError(f"collective request: arrays.{name} is not a list of world_size = {world} arrays")
        for r, place in enumerate(places):
            view = region.view(place, np.float32, f"{name}[{r}]", expected_count=count)
            if view is None:
                raise ProtocolError(f"collective request: arrays.{name}[{r}] is null")
            views[side].append(view)
    return views


def collective_refusal(descriptor: CollectiveDescriptor, request: dict[str, Any]) -> Refusal | None:
    """The ABI's refusal of a problem the collective does not take, naming the field."""
    _collective_fields(request)
    if request["world_size"] > descriptor.max_world_size:
        return SC_ERR_INVALID_ARGUMENT, (
            f"{descriptor.name}: field world_size is {request['world_size']}, must be "
            f"1..{descriptor.max_world_size} (the collective's max_world_size)"
        )
    return None
