"""samplecheck repro-script (samplecheck_subject.repro_script): records of failed numpy
checks become standalone scripts that reproduce them with numpy alone, a correct subject's
does not, and records the generator cannot script are refused with exit 2 naming the file
and the field (docs/repro-format.md, "Standalone scripts")."""

import copy
import functools
import glob
import json
import os
import runpy
import shutil
import subprocess
import sys

import pytest

from conftest import qualify, subject_command

# The script runs with Debian's Python and nothing on its path: numpy is all it may need.
SCRIPT_PYTHON = "/usr/bin/python3"
NUMPY = "samplecheck_subject.numpy_samplers:subjects"
CONTRACTS = "samplecheck_subject.numpy_samplers:contract_subjects"


def failing_record(run_qualify, tmp_path_factory, planted, check):
    folder = tmp_path_factory.mktemp(f"repro-{planted}")
    status, table = run_qualify(
        subject_command(NUMPY, "--subject", f"numpy.sort_filter:{planted}"),
        "--budget",
        "quick",
        "--checks",
        check,
        "--repro-dir",
        str(folder),
    )
    assert status == 1, table
    records = sorted(glob.glob(str(folder / f"*.{check}.f32.json")))
    assert records, table
    with open(records[0]) as f:
        return records[0], json.load(f)


def planted_record(planted, check):
    """A module fixture named after the planted defect: (path, record) of its failed `check`."""

    @pytest.fixture(scope="module", name=planted.lower())
    def record(samplecheck_bin, tmp_path_factory):
        return failing_record(functools.partial(qualify, samplecheck_bin), tmp_path_factory, planted, check)

    return record


# S07 (top-p drops the token that crosses p) fails goodness_of_fit: a Pearson verdict.
s07 = planted_record("S07", "goodness_of_fit")
# S06 (keeps every tie at the k-th while declaring lowest_index) draws OUT tokens in ties.
s06 = planted_record("S06", "ties")


@pytest.fixture(scope="module")
def nan_largest(samplecheck_bin, tmp_path_factory):
    """treat_as_zero declared, a NaN read as the row's largest: degenerate_rows draws its token."""
    folder = tmp_path_factory.mktemp("repro-nan_largest")
    status, table = qualify(
        samplecheck_bin,
        subject_command(CONTRACTS, "--subject", "numpy.sort_filter.zero:nan_largest"),
        "--budget",
        "quick",
        "--checks",
        "degenerate_rows",
        "--repro-dir",
        str(folder),
    )
    assert status == 1, table
    records = sorted(glob.glob(str(folder / "*.degenerate_rows.f32.json")))
    assert records, table
    with open(records[0]) as f:
        return records[0], json.load(f)


def generate(record_path, out, via=None):
    """The generator through the command (via = samplecheck's path) or the module."""
    command = (
        [via, "repro-script", str(record_path), "-o", str(out)]
        if via
        else [sys.executable, "-m", "samplecheck_subject.repro_script", str(record_path), "-o", str(out)]
    )
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


def run_script(path):
    """The script alone: Debian's Python, no PYTHONPATH, another working directory."""
    environment = {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/tmp")}
    return subprocess.run(
        [SCRIPT_PYTHON, str(path)],
        env=environment,
        cwd="/",
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=300,
    )


def write_record(tmp_path, record, name="crafted.json"):
    path = tmp_path / name
    path.write_text(json.dumps(record))
    return path


def test_failing_fit_reproduces(s07, samplecheck_bin, tmp_path):
    path, record = s07
    out = tmp_path / "s07.py"
    made = generate(path, out, via=samplecheck_bin)
    assert made.returncode == 0, made.stderr
    text = out.read_text()
    assert "samplecheck_subject" not in text.split('"""', 2)[2].replace("samplecheck_subject.numpy_samplers", "")
    assert "import scipy" not in text and "\nfrom samplecheck" not in text and "\nimport samplecheck" not in text
    assert f"numpy {record['environment']['packages']['numpy']}" in text  # the recorded version
    done = run_script(out)
    print(done.stdout)
    assert done.returncode == 1, done.stdout
    assert "REPRODUCED: p" in done.stdout and "Pearson X2" in done.stdout
    assert "regularized upper incomplete gamma" in done.stdout  # no torch in Debian's Python
    deviating = [t["token"] for t in record["evidence"]["fit"]["tokens"] if t["deviating"]]
    assert deviating
    for token in deviating:  # the cells the check named: a single token's cell each
        assert any(line.startswith(f"token {token} ") for line in done.stdout.splitlines()), done.stdout
    assert f"{record['evidence']['row_data']['draws']} draws" in done.stdout


def test_correct_subject_is_not_reproduced(s07, tmp_path):
    _, record = s07
    passing = copy.deepcopy(record)
    passing["subject"] = "numpy.sort_filter"  # the same row and draws, the correct rule
    out = tmp_path / "correct.py"
    made = generate(write_record(tmp_path, passing), out)
    assert made.returncode == 0, made.stderr
    done = run_script(out)
    print(done.stdout)
    assert done.returncode == 0, done.stdout
    assert "NOT REPRODUCED: p" in done.stdout


def script_as(record, subject, module, tmp_path):
    """The script of `record` as if `subject` (served by adapters.`module`) had failed: its path
    and text, written (which must succeed) and compiled."""
    other = dict(record, subject=subject)
    other["exec"] = f"python3 -m samplecheck_subject.run samplecheck_subject.adapters.{module}:subjects"
    out = tmp_path / f"{module}.py"
    made = generate(write_record(tmp_path, other, f"{module}.json"), out)
    assert made.returncode == 0, made.stderr
    text = out.read_text()
    compile(text, str(out), "exec")
    return out, text


def generated_and_run(record_path, out):
    """The record's script, written (which must succeed) and run alone; its output printed."""
    made = generate(record_path, out)
    assert made.returncode == 0, made.stderr
    done = run_script(out)
    print(done.stdout)
    return done


def test_out_token_reproduces(s06, tmp_path):
    path, record = s06
    assert "token" in record["evidence"], record["evidence"]
    done = generated_and_run(path, tmp_path / "s06.py")
    assert done.returncode == 1, done.stdout
    assert f"token {record['evidence']['token']} (OUT)" in done.stdout
    assert "REPRODUCED: a token outside the reference's support was drawn" in done.stdout


def test_degenerate_row_drawn_token_reproduces(nan_largest, tmp_path):
    """A treat_as_zero breach that drew a token keeps its row: the rule's tokens IN, the rest
    OUT. The mutant's script draws the NaN's token; the correct subject's, on the same row, none."""
    path, record = nan_largest
    row = record["evidence"]["row_data"]
    assert "NaN" in row["label"] and record["evidence"]["token"] == 7, record["evidence"]
    assert row["status"][7] == "O" and "I" in row["status"]
    done = generated_and_run(path, tmp_path / "nan_largest.py")
    assert done.returncode == 1, done.stdout
    assert "token 7 (OUT)" in done.stdout
    correct = dict(record, subject="numpy.sort_filter.zero")
    done = generated_and_run(write_record(tmp_path, correct, "zero.json"), tmp_path / "zero.py")
    assert done.returncode == 0 and "NOT REPRODUCED: no OUT token" in done.stdout, done.stdout


def test_a_row_the_rule_refuses_is_no_verdict(nan_largest, tmp_path):
    """A subject that refuses the row (valid_flag on a NaN row: nothing to draw) gives exit 2,
    never the 1 that says reproduced."""
    _, record = nan_largest
    refusing = dict(record, subject="numpy.sort_filter")
    done = generated_and_run(write_record(tmp_path, refusing, "refusing.json"), tmp_path / "refusing.py")
    assert done.returncode == 2, done.stdout
    assert "nothing to draw" in done.stdout and "neither reproduced nor not" in done.stdout


def h200_loop(folder, samplecheck_bin):
    """tools/scripts/h200_repro_scripts.sh over folder/repro (exit 0); its summary.md."""
    loop = os.path.join(os.path.dirname(__file__), "..", "..", "tools", "scripts", "h200_repro_scripts.sh")
    home = os.environ.get("HOME", "/tmp")
    environment = {"PATH": "/usr/bin:/bin", "HOME": home, "SAMPLECHECK_PYTHON": sys.executable}
    done = subprocess.run(
        ["bash", loop, str(folder), samplecheck_bin], env=environment, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return (folder / "repro_scripts" / "summary.md").read_text()


def test_h200_loop_runs_scripts_and_lists_refusals(nan_largest, samplecheck_bin, tmp_path):
    """tools/scripts/h200_repro_scripts.sh: a script per record, run, its exit and verdict in
    the summary; a record repro-script refuses is listed with its field, and the loop exits 0."""
    path, record = nan_largest
    (tmp_path / "repro").mkdir()
    shutil.copy(path, tmp_path / "repro" / "mutant.json")
    tail = copy.deepcopy(record)
    del tail["evidence"]["row_data"]
    write_record(tmp_path / "repro", tail, "no_row.json")
    summary = h200_loop(tmp_path, samplecheck_bin)
    assert "| mutant | 1 | REPRODUCED: a token outside the reference's support was drawn |" in summary, summary
    assert "| no_row | - | refused: field 'evidence.row_data': missing" in summary, summary
    assert "token 7 (OUT)" in (tmp_path / "repro_scripts" / "mutant.txt").read_text()


def test_record_text_never_becomes_code(s07, tmp_path):
    """A record is data: quotes and newlines in its fields stay text in the script's header."""
    _, record = s07
    tampered = copy.deepcopy(record)
    payload = '"""\nimport sys; sys.exit(7)\n"""'
    tampered["environment"]["packages"]["numpy"] = payload
    tampered["evidence"]["row_data"]["label"] = payload
    tampered["budget"] = "quick\\" + payload
    out = tmp_path / "tampered.py"
    made = generate(write_record(tmp_path, tampered), out)
    assert made.returncode == 0, made.stderr
    text = out.read_text()
    assert "\nimport sys; sys.exit(7)" not in text
    done = run_script(out)
    assert done.returncode == 1, done.stdout  # S07 still reproduces; nothing of the payload ran


def test_chi_square_tail_without_torch(s07, tmp_path):
    """The script's own regularized gamma against known chi-square tails (series and
    continued-fraction branches)."""
    out = tmp_path / "math.py"
    assert generate(s07[0], out).returncode == 0
    script = runpy.run_path(str(out), run_name="not_main")
    tail = script["gammaincc"]
    for x, df, p in [
        (3.841458820694124, 1, 0.05),
        (23.209251158954356, 10, 0.01),
        (2.0, 10, 0.9963401531),
        (128.0, 1, 1.1224297e-29),
        (0.5, 3, 0.9188914117),
    ]:
        assert tail(df / 2, x / 2) == pytest.approx(p, rel=1e-6 if p > 1e-20 else 1e-3)


def test_sglang_script_calls_the_shipped_function(s07, tmp_path):
    """The SGLang adapter's call (CI has no torch, so it runs only to its import): it imports
    SGLang's module, calls the filtered function as the adapter does and names the recorded
    wheel; without the package the script exits 2, not a verdict."""
    _, record = s07
    sglang = copy.deepcopy(record)
    sglang["subject"] = "sglang.top_k_top_p_min_p_sampling_from_probs_torch"
    sglang["exec"] = "python3 -m samplecheck_subject.run samplecheck_subject.adapters.sglang_shipped:subjects"
    sglang["environment"] = {
        "python": "3.11.2",
        "packages": {"sglang wheel": "0.5.10.post1 sha256 abc", "torch": "2.15.0+cu132", "numpy": "2.4.6"},
    }
    out = tmp_path / "sglang.py"
    made = generate(write_record(tmp_path, sglang), out)
    assert made.returncode == 0, made.stderr
    text = out.read_text()
    compile(text, str(out), "exec")
    assert "from sglang.srt.layers import sampler" in text
    assert "sampler.top_k_top_p_min_p_sampling_from_probs_torch(" in text
    assert "sglang wheel 0.5.10.post1 sha256 abc, torch 2.15.0+cu132" in text
    assert "PYTHONPATH=build/shipped/sglang/site" in text
    done = run_script(out)  # Debian's Python has neither torch nor SGLang: no verdict, exit 2
    assert done.returncode == 2 and "cannot import the subject's package" in done.stdout, done.stdout


# The vLLM and cake subjects' scripts (CI has neither torch nor the packages): subject, the
# adapter module, what the script must call, and where it must find the package.
SHIPPED_SCRIPTS = [
    (
        "vllm.apply_top_k_top_p_triton+random_sample",
        "vllm_shipped",
        ["topk_topp_triton.apply_top_k_top_p_triton(x, k, p)", "topk_topp_sampler.random_sample(", "SEEDED = True"],
    ),
    ("vllm.forward_native", "vllm_shipped", ["sampler().forward_native(x, g, k, p)[0]", "use_fp64_gumbel=False"]),
    ("vllm.forward_native.unseeded", "vllm_shipped", ["SEEDED = False", "torch.manual_seed(seed)"]),
    ("vllm.gumbel_sample", "vllm_shipped", ["gumbel.gumbel_sample(", "torch.arange(start, end, dtype=torch.int64"]),
    (
        "flashinfer.cake.top_k_top_p_sampling_from_probs",
        "flashinfer_cake",
        ["import flashinfer.cake_sampling as cake", "philox_seed=chunk_seed(seed, c)", "def chunk_seed("],
    ),
    (
        "flashinfer.cake.top_k_top_p_sampling_from_probs.16bit",
        "flashinfer_cake",
        [".get(DTYPE, torch.float32)", "cake.cake_sampling_route(batch, ks, k)"],
    ),
]


@pytest.mark.parametrize(("subject", "module", "calls"), SHIPPED_SCRIPTS, ids=[s[0] for s in SHIPPED_SCRIPTS])
def test_shipped_scripts_call_the_upstream_function(s07, tmp_path, subject, module, calls):
    """vLLM's sampler subjects and FlashInfer's cake: the script imports the upstream module
    (vLLM's from the extracted tree the adapter loads), calls it as the adapter does, names
    the recorded wheel, needs nothing of samplecheck, is ruff-clean where ruff is here, and
    without torch exits 2, not a verdict."""
    _, record = s07
    shipped = copy.deepcopy(record)
    shipped["subject"] = subject
    shipped["exec"] = f"env A=1 python3 -m samplecheck_subject.run samplecheck_subject.adapters.{module}:subjects"
    wheel = "vllm wheel" if module == "vllm_shipped" else "flashinfer-python wheel"
    shipped["environment"] = {"python": "3.12.3", "packages": {wheel: "9.9 sha256:abc", "torch": "2.11.0"}}
    out = tmp_path / "shipped.py"
    made = generate(write_record(tmp_path, shipped), out)
    assert made.returncode == 0, made.stderr
    text = out.read_text()
    compile(text, str(out), "exec")
    for call in calls:
        assert call in text, call
    assert f"{wheel} 9.9 sha256:abc, torch 2.11.0" in text
    assert "samplecheck_subject" not in text.split('"""', 2)[2]
    if module == "vllm_shipped":
        assert 'os.environ.get("SAMPLECHECK_VLLM_TREE", "build/shipped/vllm"), "site"' in text
        assert "from vllm." in text
    ruff = shutil.which("ruff")
    if ruff:
        linted = subprocess.run([ruff, "check", "--isolated", str(out)], capture_output=True, text=True)
        assert linted.returncode == 0, linted.stdout
    done = run_script(out)
    assert done.returncode == 2 and "cannot import the subject's package" in done.stdout, done.stdout


def test_a_keyed_subjects_ties_out_token_is_scripted_at_its_requests(s06, tmp_path):
    """SGLang's seeded function keys its noise by the request: a ties record of an OUT token
    (the tied rows drawn from subsequence 0, row after row) is scripted at the row's own
    requests, its first_subsequence; a tie group's record without one is refused."""
    _, record = s06
    seeded = copy.deepcopy(record)
    seeded["subject"] = "sglang.top_k_top_p_sampling_from_probs_torch.seeded"
    seeded["exec"] = "python3 -m samplecheck_subject.run samplecheck_subject.adapters.sglang_shipped:subjects"
    evidence = seeded["evidence"]
    assert "token" in evidence  # S06 draws an OUT token in ties
    index, per_row = evidence["row_data"]["index"], evidence["draws_per_row"]
    assert len(per_row) > index > 0  # a row after the first: its requests start past subsequence 0
    assert evidence["first_subsequence"] == sum(per_row[:index])
    out = tmp_path / "seeded.py"
    made = generate(write_record(tmp_path, seeded, "seeded.json"), out)
    assert made.returncode == 0, made.stderr
    text = out.read_text()
    assert f"STREAM_SEED = {evidence['check_seed']!r}" in text
    assert f"FIRST_SUBSEQUENCE = {sum(per_row[:index])!r}" in text
    group = copy.deepcopy(seeded)
    del group["evidence"]["token"], group["evidence"]["first_subsequence"]
    refused(write_record(tmp_path, group, "group.json"), "evidence.first_subsequence", "keys its noise")


def without_row(record):
    """The record as a samplecheck from before records kept the judged row wrote it."""
    old = copy.deepcopy(record)
    del old["evidence"]["row_data"]
    return old


def refused(record_path, field, *words, via=None):
    made = generate(record_path, str(record_path) + ".py", via=via)
    assert made.returncode == 2, (made.stdout, made.stderr)
    assert str(record_path) in made.stderr and f"field '{field}'" in made.stderr, made.stderr
    for w in words:
        assert w in made.stderr, made.stderr
    assert not os.path.exists(str(record_path) + ".py")


def test_bad_records_are_refused(s07, samplecheck_bin, tmp_path):
    _, record = s07
    refused(tmp_path / "missing.json", "file", "cannot be read", via=samplecheck_bin)
    truncated = tmp_path / "truncated.json"
    truncated.write_text(json.dumps(record)[:500])
    refused(truncated, "file", "not JSON", via=samplecheck_bin)
    unknown = dict(record, subject="no.such.sampler")
    refused(write_record(tmp_path, unknown, "unknown.json"), "subject", "unknown subject no.such.sampler")
    no_call = dict(
        record,
        subject="sglang.matmul_persistent",
        exec="python3 -m samplecheck_subject.run samplecheck_subject.adapters.sglang_shipped:subjects",
    )
    refused(
        write_record(tmp_path, no_call, "no_call.json"),
        "subject",
        "sglang.matmul_persistent",
        "declares no script call",
    )
    degenerate = copy.deepcopy(dict(record, subject="flashinfer.cake.top_k_top_p_sampling_from_probs"))
    degenerate["check"] = "degenerate_rows"
    del degenerate["evidence"]["row_data"]  # a refused batch or a valid flag: no row to draw from
    refused(write_record(tmp_path, degenerate, "degenerate.json"), "evidence.row_data", "treat_as_zero")
    in_tree = {k: v for k, v in record.items() if k != "exec"}
    in_tree["subject"] = "cpu.sort_filter"
    refused(write_record(tmp_path, in_tree, "in_tree.json"), "subject", "samplecheck's own C++ subjects")
    stream = dict(record, check="round_advancement")
    refused(write_record(tmp_path, stream, "stream.json"), "check", "round_advancement", "offset_advancement")
    # per_request_seeds failed by its collision test (no request's two tokens), from before
    # collision records kept their requests (test_repro_collision scripts those that do)
    seeds = dict(record, check="per_request_seeds")
    refused(write_record(tmp_path, seeds, "seeds.json"), "evidence.requests_u64", "written before")
    refused(write_record(tmp_path, without_row(record), "old.json"), "evidence.row_data", "missing")
    broken = copy.deepcopy(record)
    broken["evidence"]["row_data"]["values_f32"] = "not base64!"
    refused(write_record(tmp_path, broken, "broken.json"), "evidence.row_data.values_f32", "not base64")
