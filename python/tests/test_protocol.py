"""The package's side of the protocol, driven by a Python host (protocol_host.py): no
samplecheck binary needed. What samplecheck judges is tested in test_battery.py."""

import mmap
import os
import struct

import numpy as np
import pytest

from protocol_host import Host, python_subject
from samplecheck_subject import DescriptorError, SamplerDescriptor, numpy_samplers
from samplecheck_subject.numeric import bf16_to_f32, f32_to_bf16
from samplecheck_subject.philox import philox4x32_10, stream_outputs
from samplecheck_subject.protocol import SharedRegion

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROWS = np.array([[0.5, 0.25, 0.25, 0.0], [0.1, 0.2, 0.3, 0.4]], np.float32)


@pytest.fixture
def host():
    h = Host(python_subject("samplecheck_subject.numpy_samplers:subjects"))
    yield h
    assert h.close() == 0, h.stderr


def test_philox_known_answers():
    with open(os.path.join(ROOT, "fixtures", "philox4x32_10_kat.txt")) as f:
        rows = [line.split() for line in f if not line.startswith("#")]
    assert rows
    for fields in rows:
        v = [int(x, 16) for x in fields[2:]]
        assert [int(w) for w in philox4x32_10(*v[:6])] == v[6:]


def test_stream_offsets_count_outputs():
    # Output j of a stream is word j % 4 of block j / 4: offset 3 starts at the 4th word.
    whole = stream_outputs([7], [2], [0], 12)[0]
    assert (stream_outputs([7], [2], [3], 5)[0] == whole[3:8]).all()


def test_hello_names_every_subject_with_its_contract(host):
    names = [s["name"] for s in host.hello["subjects"]]
    assert names[0] == "numpy.sort_filter" and len(names) == 1 + len(numpy_samplers.PLANTED)
    first = host.hello["subjects"][0]
    assert host.hello["protocol"] == 1
    assert (first["rng_policy"], first["parameter_indexing"], first["degenerate_rows"]) == (
        "per_request",
        "input_row",
        "valid_flag",
    )


def test_parallel_samples_follow_the_row(host):
    n = 20000
    reply, tokens, valid = host.sample(
        "numpy.sort_filter",
        ROWS,
        seed=np.arange(n),
        offset=np.zeros(n),
        row_index=np.ones(n, np.int32),
        top_k=np.array([2, 2], np.int32),
    )
    assert reply == {"type": "result", "id": 1, "status": 0, "message": ""}
    assert valid.all() and set(np.unique(tokens)) == {2, 3}  # top-2 of row 1
    assert abs((tokens == 3).mean() - 0.4 / 0.7) < 0.02


def test_refusals_name_the_row_and_field(host):
    cases = [
        ({"top_k": np.array([0, -1], np.int32)}, 1, "input row 1: top_k = -1 is negative"),
        ({"top_p": np.array([1.5, 1.0], np.float32)}, 1, "input row 0: top_p = 1.5 is outside (0, 1]"),
        (
            {"temperature": np.array([1, 2], np.float32)},
            2,
            "input row 1: temperature = 2 asks for a filter this subject does not implement",
        ),
        ({"row_index": np.array([0, 2], np.int32)}, 1, "output row 1: row_index = 2 is outside [0, 2)"),
    ]
    for kwargs, status, text in cases:
        reply, tokens, _ = host.sample("numpy.sort_filter", ROWS, seed=[1, 2], offset=[0, 0], **kwargs)
        assert reply["status"] == status and reply["message"] == f"numpy.sort_filter: {text}"
        assert (tokens == -7).all()  # a refused call writes nothing


def test_degenerate_rows_get_valid_zero_and_s08_lies(host):
    rows = np.array([[np.nan, 1, 0, 0], [0, 0, 0, 0], [0, 0, 1, 0]], np.float32)
    _, tokens, valid = host.sample("numpy.sort_filter", rows, seed=[1, 2, 3], offset=[0, 0, 0])
    assert valid.tolist() == [0, 0, 1] and tokens[2] == 2
    _, tokens, valid = host.sample("numpy.sort_filter:S08", rows, seed=[1, 2, 3], offset=[0, 0, 0])
    assert valid.tolist() == [1, 1, 1] and tokens[:2].tolist() == [0, 0]


def test_bf16_rows_and_a_grown_region(host):
    halfway = np.array([0x3F808000, 0x3F818000], np.uint32).view(np.float32)  # ties go to even
    assert f32_to_bf16(np.float32([0.1, 1.0, -2.5])).tolist() == [0x3DCD, 0x3F80, 0xC020]
    assert f32_to_bf16(halfway).tolist() == [0x3F80, 0x3F82]
    bits = f32_to_bf16(np.tile(ROWS[1], (3000, 1)))
    host.grow(8 << 20)  # the request states a larger shm_size: the subject re-maps
    reply, tokens, valid = host.sample(
        "numpy.sort_filter", bits, seed=np.arange(3000), offset=np.zeros(3000), input_dtype="bf16"
    )
    assert reply["status"] == 0 and valid.all() and tokens.min() >= 0 and tokens.max() <= 3


def test_views_are_the_mapping_not_copies():
    fd = os.memfd_create("view-test")
    os.ftruncate(fd, 4096)
    region = SharedRegion(fd)
    region.ensure(4096)
    view = region.view({"at": 64, "count": 4}, np.uint32, "seed")
    writer = mmap.mmap(fd, 4096)
    writer[64:68] = struct.pack("<I", 123456)
    assert view[0] == 123456  # the host's write is visible through the view: no copy
    del view
    os.close(fd)


def test_dlpack_outputs_reach_the_region():
    h = Host(python_subject("dlpack_subject:subjects"))
    reply, tokens, valid = h.sample(
        "test.dlpack", ROWS, seed=[1, 2, 3], offset=[0, 0, 0], row_index=np.array([0, 1, 1], np.int32)
    )
    assert reply["status"] == 0 and valid.tolist() == [1, 1, 1] and tokens.max() <= 3
    assert h.close() == 0, h.stderr


def test_garbage_from_the_host_is_an_error_frame_and_exit_1():
    h = Host(python_subject("samplecheck_subject.numpy_samplers:subjects"))
    h.parent.sendall(struct.pack("<I", 5) + b"nope!")
    assert h.receive()["type"] == "error"
    h.proc.wait(timeout=10)
    assert h.proc.returncode == 1
    h.parent.close()


def test_eof_is_shutdown():
    h = Host(python_subject("samplecheck_subject.numpy_samplers:subjects"))
    h.parent.close()
    assert h.proc.wait(timeout=10) == 0


def test_matmul_rows_do_not_depend_on_m():
    h = Host(python_subject("samplecheck_subject.numpy_matmul:subjects"))
    rng = np.random.default_rng(1)
    a = f32_to_bf16(rng.standard_normal((33, 64)).astype(np.float32))
    w = f32_to_bf16(rng.standard_normal((16, 64)).astype(np.float32))
    bias = f32_to_bf16(rng.standard_normal(16).astype(np.float32))
    reply, out = h.matmul("numpy.float64_matmul", a, w, bias)
    assert reply["status"] == 0
    exact = bf16_to_f32(a).astype(np.float64) @ bf16_to_f32(w).astype(np.float64).T + bf16_to_f32(bias)
    assert np.abs(bf16_to_f32(out) - exact).max() <= np.abs(exact).max() * 2**-7
    _, alone = h.matmul("numpy.float64_matmul", a[5:6], w, bias)
    assert (alone == out[5:6]).all()
    reply, _ = h.matmul("numpy.float64_matmul", a, w, launch_config=0)
    assert reply["status"] == 1 and "launch_config = 0" in reply["message"]
    assert h.close() == 0


def test_descriptor_rules_name_the_field():
    with pytest.raises(DescriptorError, match="x: tie_policy = None"):
        SamplerDescriptor(name="x", input_kind="probs", input_dtypes=["f32"], filters=["top_k"]).validate()
    with pytest.raises(DescriptorError, match="temperature is a logits filter"):
        SamplerDescriptor(name="x", input_kind="probs", input_dtypes=["f32"], filters=["temperature"]).validate()
    with pytest.raises(DescriptorError, match="rng_policy = 'global'"):
        SamplerDescriptor(name="x", input_kind="probs", input_dtypes=["f32"], rng_policy="global").validate()
    with pytest.raises(DescriptorError, match="x: probs_normalisation = 'assume_sum_one' needs input_kind"):
        SamplerDescriptor(
            name="x", input_kind="probs", input_dtypes=["f32", "bf16"], probs_normalisation="assume_sum_one"
        ).validate()
    with pytest.raises(DescriptorError, match="x: probs_normalisation = 'exact'"):
        SamplerDescriptor(name="x", input_kind="logits", input_dtypes=["f32"], probs_normalisation="exact").validate()
    not_a_rule = "x: uniform_rule = 'inverse_cdf' is not one of undeclared, inverse_cdf_u53"
    with pytest.raises(DescriptorError, match=not_a_rule):
        SamplerDescriptor(name="x", input_kind="probs", input_dtypes=["f32"], uniform_rule="inverse_cdf").validate()
    with pytest.raises(DescriptorError, match="x: uniform_rule = 'inverse_cdf_u53' needs input_kind 'probs'"):
        SamplerDescriptor(
            name="x", input_kind="logits", input_dtypes=["f32"], uniform_rule="inverse_cdf_u53"
        ).validate()
    ruled = SamplerDescriptor(name="x", input_kind="probs", input_dtypes=["f32"], uniform_rule="inverse_cdf_u53")
    assert ruled.to_json()["uniform_rule"] == "inverse_cdf_u53"
    plain = SamplerDescriptor(name="x", input_kind="probs", input_dtypes=["f32"])
    assert plain.to_json()["uniform_rule"] == "undeclared"
    with pytest.raises(DescriptorError, match="x: inputs = 'copied' is not one of preserved, mutated"):
        SamplerDescriptor(name="x", input_kind="probs", input_dtypes=["f32"], inputs="copied").validate()
    assert SamplerDescriptor(name="x", input_kind="probs", input_dtypes=["f32"]).to_json()["inputs"] == "preserved"
    in_place = SamplerDescriptor(name="x", input_kind="logits", input_dtypes=["f32"], inputs="mutated")
    assert in_place.to_json()["inputs"] == "mutated"


def test_adapters_describe_themselves_without_torch():
    from samplecheck_subject.adapters import flashinfer_samplers, torch_matmul, torch_samplers

    for module in (torch_samplers, flashinfer_samplers, torch_matmul):
        pairs, _ = module.subjects()
        assert [d.to_json()["name"] for _, d in pairs] == list(module.DESCRIPTORS)
    fi = flashinfer_samplers.DESCRIPTORS
    assert all(d.rng_policy == "batch_slot" for _, d in fi.values())
    # The docstrings: "This function expects float32 inputs"; the probs kernels do not renormalise.
    assert all(tuple(d.input_dtypes) == ("f32",) for _, d in fi.values())
    assert all(
        d.probs_normalisation == ("assume_sum_one" if d.input_kind == "probs" else "renormalise")
        for _, d in fi.values()
    )
    assert fi["flashinfer.top_k_top_p_sampling_from_probs.joint"][1].filter_order == "joint"
    assert torch_samplers.DESCRIPTORS["torch.sglang_v0519_multinomial"][1].rng_policy == "subject_generator"
