"""The statistics of samplecheck repro-script's scripts on records built here (no
samplecheck binary): a goodness_of_fit row the check failed through its cut test alone is
reproduced through the cut test, a tail record through its tail count, a ties record
through its group's split, each with the correct subject exiting 0; the script's binomial
tails against exact sums; SGLang's seeded functions keyed as the adapter keys them
(docs/repro-format.md, "Standalone scripts")."""

import base64
import copy
import hashlib
import json
import math
import os
import runpy
import shutil
import struct
import subprocess
import sys

import numpy as np
import pytest

from conftest import qualify, subject_command

SCRIPT_PYTHON = "/usr/bin/python3"
V = 32000
HEAVY = 60  # tokens sharing 1 - TAIL of the mass
TAIL = 0.002  # the rest, spread over V - HEAVY tokens: about 33 of 16,384 draws
DRAWS = 16384
LEVEL = 1e-7


def b64(a):
    return base64.b64encode(np.ascontiguousarray(a).tobytes()).decode("ascii")


def row_data(values, q, draws, status=None, label="peaked unfiltered"):
    status = status or "".join("I" if x > 0 else "O" for x in q)
    return {
        "index": 1,
        "draws": draws,
        "label": label,
        "values_f32": b64(np.asarray(values, dtype="<f4")),
        "status": status,
        "q_f64": b64(np.asarray(q, dtype="<f8")),
        "boundary_mass": [0.0, 0.0],
    }


def record(check, values, q, draws=DRAWS, subject="numpy.sort_filter", **evidence):
    return {
        "format": "samplecheck-repro",
        "version": 1,
        "subject": subject,
        "kind": "sampler",
        "exec": "python3 -m samplecheck_subject.run samplecheck_subject.numpy_samplers:subjects",
        "check": check,
        "dtype": "f32",
        "budget": "standard",
        "vocab_size": len(values),
        "seed": 20261130,
        "alpha": 1e-6,
        "decision_level": LEVEL,
        "p_value": 1e-14,
        "samples": draws,
        "verdict": "FAIL",
        "evidence": {
            "check_seed": 11144103698245801346,
            "seed": 11144103698245801346,
            "params": {"top_k": 0, "top_p": 1.0, "min_p": 0.0, "temperature": 1.0},
            "row": "peaked unfiltered",
            "draws_per_row": [5000, draws, 7000],
            "row_data": row_data(values, q, draws),
            **evidence,
        },
    }


def peaked():
    """q: HEAVY tokens of equal mass (1 - TAIL) / HEAVY, the rest TAIL spread evenly."""
    q = np.full(V, TAIL / (V - HEAVY))
    q[:HEAVY] = (1 - TAIL) / HEAVY
    return q


def script_for(tmp_path, rec, name):
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(rec))
    out = tmp_path / f"{name}.py"
    made = subprocess.run(
        [sys.executable, "-m", "samplecheck_subject.repro_script", str(path), "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert made.returncode == 0, made.stderr
    ruff = shutil.which("ruff")
    if ruff:  # the script is ruff-clean on its own
        linted = subprocess.run([ruff, "check", "--isolated", str(out)], capture_output=True, text=True)
        assert linted.returncode == 0, linted.stdout
    return out


def run(tmp_path, rec, name):
    """The record's script, run alone with Debian's Python; (exit, output)."""
    out = script_for(tmp_path, rec, name)
    environment = {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/tmp")}
    done = subprocess.run(
        [SCRIPT_PYTHON, str(out)], env=environment, cwd="/", capture_output=True, text=True, timeout=300
    )
    print(done.stdout, done.stderr)
    return done.returncode, done.stdout


def test_cut_test_alone_reproduces(tmp_path):
    """The float32 'peaked unfiltered' failures on the H200: a tail of 0.2% never drawn.
    Pearson over the merged cells stays above the level; the cut at mass 1 - 2^-9 does not.
    The subject draws from ROW, the record's reference is q: a ROW without the tail is the
    defect, the ROW that is q the correct subject."""
    q = peaked()
    no_tail = np.where(np.arange(V) < HEAVY, q, 0.0)
    code, out = run(tmp_path, record("goodness_of_fit", no_tail, q), "cut")
    assert code == 1, out
    pearson = float(out.split("Pearson X2")[1].split("p = ")[1].split()[0])
    assert pearson > LEVEL, out  # Pearson alone would not reproduce it (the H200's scripts)
    cut = float(out.split("cuts: ")[1].split("p = ")[1].split()[0])
    assert cut < 1e-12, out
    assert "IN part: Sidak over Pearson and the directed family" in out and "REPRODUCED: p" in out
    code, out = run(tmp_path, record("goodness_of_fit", q, q), "cut_correct")
    assert code == 0 and "NOT REPRODUCED: p" in out, out


def test_tail_count_reproduces(tmp_path):
    """A tail record without an OUT token: the draws on its tail set against the set's mass."""
    q = peaked()
    tail = {"threshold": 1e-5, "expected_mass": TAIL, "set": "".join("-" if t < HEAVY else "T" for t in range(V))}
    no_tail = np.where(np.arange(V) < HEAVY, q, 0.0)
    code, out = run(tmp_path, record("tail", no_tail, q, tail=tail), "tail")
    assert code == 1, out
    assert f"0 of {DRAWS} draws on the {V - HEAVY} tokens below 1e-05" in out and "REPRODUCED: p" in out
    code, out = run(tmp_path, record("tail", q, q, tail=tail), "tail_correct")
    assert code == 0 and "NOT REPRODUCED: p" in out, out


def tied_row(ratio):
    """Four tokens tied at the top (a small group) and a flat rest of V - 4 (a large one);
    the subject's ROW gives the first tied token `ratio` times its share."""
    values = np.full(V, 0.5 / (V - 4), dtype=np.float32)
    values[:4] = 0.125
    q = values.astype(np.float64) / values.astype(np.float64).sum()
    drawn = values.copy()
    drawn[0] *= ratio
    return drawn, values, q


@pytest.mark.parametrize(("first", "size"), [(0, 4), (4, V - 4)], ids=["small", "large"])
def test_tie_group_split(tmp_path, first, size):
    """A ties record of a tied group (Pearson on 4 tokens, or the 7 dyadic splits of V - 4):
    the correct subject's script exits 0, and the script's statistic rejects counts whose
    first token is drawn 1.2 times its share (the large group: its first eighth 1.2 times).
    The group is the tokens holding the record's value, so a ROW with unequal values would
    change the group, not bias it: the biased counts go to the script's own tie_group."""
    drawn, values, q = tied_row(1.2)
    rec = record("ties", values, q, group_size=size, tokens=[], tie_group={"first": first, "size": size})
    code, out = run(tmp_path, rec, f"ties_{size}")
    assert code == 0 and "NOT REPRODUCED: p" in out, out
    assert f"group: {size} IN tokens" in out
    script = runpy.run_path(str(script_for(tmp_path, rec, f"ties_{size}_fn")), run_name="not_main")
    status = np.frombuffer(b"I" * V, dtype=np.uint8)
    counts = np.random.default_rng(5).multinomial(400000, drawn / drawn.sum())
    if size > 4:  # the large group's lower ids drawn more often, as a quantised noise does
        counts[4 : 4 + (V - 4) // 8] = (counts[4 : 4 + (V - 4) // 8] * 1.2).astype(np.int64)
    assert script["tie_group"](counts, values, status) < LEVEL
    even = np.random.default_rng(6).multinomial(400000, q)
    assert script["tie_group"](even, values, status) > 1e-3


def refused(tmp_path, rec, field):
    """The generator refuses the record with exit 2, naming the field, and writes nothing."""
    path = tmp_path / "refused.json"
    path.write_text(json.dumps(rec))
    made = subprocess.run(
        [sys.executable, "-m", "samplecheck_subject.repro_script", str(path), "-o", str(tmp_path / "refused.py")],
        capture_output=True,
        text=True,
    )
    assert made.returncode == 2 and f"field '{field}'" in made.stderr, made.stderr
    assert not (tmp_path / "refused.py").exists()
    return made.stderr


def test_verdict_fields_are_checked(tmp_path):
    """A group the row's values do not hold, an old record without its group or tail set, and
    values a script would read as code or nonsense (NaN, a string) are refused."""
    _, values, q = tied_row(1.0)
    ties = record("ties", values, q, group_size=5, tokens=[], tie_group={"first": 0, "size": 5})
    assert "holds 4 IN tokens, not 5" in refused(tmp_path, ties, "evidence.tie_group")
    del ties["evidence"]["tie_group"]
    assert "missing" in refused(tmp_path, ties, "evidence.tie_group")
    tail = record("tail", q, q, tail={"threshold": float("nan"), "expected_mass": 0.5, "set": "T" * V})
    refused(tmp_path, tail, "evidence.tail.threshold")
    del tail["evidence"]["tail"]
    assert "missing" in refused(tmp_path, tail, "evidence.tail")
    fit = record("goodness_of_fit", q, q)
    fit["evidence"]["row_data"]["boundary_mass"] = ["0.1", "__import__('os')"]
    refused(tmp_path, fit, "evidence.row_data.boundary_mass")


def test_binomial_tails_are_exact(tmp_path):
    """The script's doubled binomial tail (incomplete beta) against sums of the pmf."""
    q = peaked()
    script = runpy.run_path(str(script_for(tmp_path, record("goodness_of_fit", q, q), "math")), run_name="not_main")
    two_sided = script["binomial_two_sided"]
    for k, n, p in [(0, 16384, 0.002), (3, 50, 0.2), (40, 50, 0.5), (700, 1000, 0.65), (1, 1, 0.3), (12, 12, 0.9)]:
        log_c = [math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) for i in range(n + 1)]
        pmf = [math.exp(c + i * math.log(p) + (n - i) * math.log1p(-p)) for i, c in enumerate(log_c)]
        exact = min(1.0, 2 * min(sum(pmf[: k + 1]), sum(pmf[k:])))
        assert two_sided(k, n, p) == pytest.approx(exact, rel=1e-9), (k, n, p)
    assert script["sidak"](1e-12, 74) == pytest.approx(74e-12, rel=1e-6)


@pytest.mark.parametrize(
    ("subject", "call"),
    [
        ("sglang.sampling_from_probs_torch.seeded", "sampler.sampling_from_probs_torch(batch, keys, positions)"),
        ("sglang.top_k_top_p_sampling_from_probs_torch.seeded", 'float(params["min_p"]) > 0, keys, positions)'),
    ],
)
def test_sglang_seeded_calls_are_keyed_as_the_adapter(tmp_path, subject, call):
    """The seeded functions get each draw's (sampling_seed, position) from the check's request
    (seed, first subsequence of the row + i, offset 0) by the adapter's own request_keys."""
    from samplecheck_subject.adapters import sglang_shipped
    from samplecheck_subject.batch import SampleBatch

    q = peaked()
    rec = record("support", q, q, subject=subject, token=7, subsequence=5100)
    rec["exec"] = "python3 -m samplecheck_subject.run samplecheck_subject.adapters.sglang_shipped:subjects"
    out = script_for(tmp_path, rec, "seeded")
    text = out.read_text()
    assert call in text and "STREAM_SEED = 11144103698245801346" in text and "FIRST_SUBSEQUENCE = 5000" in text
    compile(text, str(out), "exec")
    fake_torch = type(sys)("torch")
    fake_torch.int64 = "int64"
    fake_torch.zeros = lambda n, dtype, device: [0] * n
    fake_torch.tensor = lambda keys, dtype, device: list(keys)
    names = {
        "torch": fake_torch,
        "hashlib": hashlib,
        "struct": struct,
        "STREAM_SEED": 11144103698245801346,
        "FIRST_SUBSEQUENCE": 5000,
    }
    exec(text.split("CHUNK_ELEMENTS = ")[1].split("\ndef draw(")[0].split("\n", 1)[1], names)
    keys, _ = names["request_keys"](11144103698245801346, 3, 6, "cpu")
    batch = SampleBatch.__new__(SampleBatch)
    for name, value in [("seed", [11144103698245801346] * 3), ("subsequence", [5003, 5004, 5005]), ("offset", [0] * 3)]:
        object.__setattr__(batch, name, np.array(value, dtype=np.uint64))
    expected, positions = sglang_shipped.request_keys(batch)
    assert keys == list(expected) and list(positions) == [0, 0, 0]
    old = copy.deepcopy(rec)
    del old["evidence"]["draws_per_row"]
    path = tmp_path / "old.json"
    path.write_text(json.dumps(old))
    made = subprocess.run(
        [sys.executable, "-m", "samplecheck_subject.repro_script", str(path)], capture_output=True, text=True
    )
    assert made.returncode == 2 and "field 'evidence.first_subsequence'" in made.stderr, made.stderr


def test_tail_mutant_reproduces(samplecheck_bin, tmp_path):
    """numpy.sort_filter:S11 (its tiny tail renormalised away) fails tail by its count, not by an
    OUT token: the record keeps the worst row and its tail set as the check counted them, the
    script reproduces it, and the correct subject's script on the same record does not."""
    command = subject_command("samplecheck_subject.numpy_samplers:subjects", "--subject", "numpy.sort_filter:S11")
    status, table = qualify(
        samplecheck_bin, command, "--budget", "quick", "--checks", "tail", "--repro-dir", str(tmp_path)
    )
    assert status == 1, table
    rec = json.loads((tmp_path / "numpy.sort_filter_S11.tail.f32.json").read_text())
    evidence = rec["evidence"]
    assert "token" not in evidence, evidence
    (worst,) = (r for r in evidence["tail_rows"] if r["row"] == evidence["row"])
    assert evidence["tail"]["set"].count("T") == worst["tokens"]
    assert evidence["tail"]["expected_mass"] == worst["expected_mass"]
    assert evidence["row_data"]["label"] == evidence["row"] and evidence["row_data"]["draws"] == worst["draws"]
    code, out = run(tmp_path, rec, "s11")
    assert code == 1 and f"0 of {worst['draws']} draws on the {worst['tokens']} tokens below" in out, out
    code, out = run(tmp_path, dict(rec, subject="numpy.sort_filter"), "s11_correct")
    assert code == 0 and "NOT REPRODUCED: p" in out, out
