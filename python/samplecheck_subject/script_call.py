"""How a standalone reproduction script calls a subject: data each adapter declares beside
its subjects (SCRIPT_CALLS, by subject name), read by samplecheck_subject.repro_script.

A script needs nothing of samplecheck, so a call is source text: `imports` (the subject's
upstream package, torch and/or numpy), then `code`, which defines

    def draw(row, params, n, seed, device):  # -> numpy array of n token ids

calling the subject's function as its adapter does: `row` a float32 numpy array (the
values the subject was sent, bit for bit), `params` the row's filter setting (top_k,
top_p, min_p, temperature, as the record holds it), `seed` an int, `device` a string or
None (the subject's default). A keyed call also reads STREAM_SEED and FIRST_SUBSEQUENCE:
draw i of the row was the check's request (STREAM_SEED, FIRST_SUBSEQUENCE + i, offset 0).

A subject whose batch_invariance a script reproduces also declares `batch`, which defines

    def draw_requests(row, params, requests, device):  # -> numpy array, a token per request

calling the subject once on a batch of len(requests) copies of `row` (split into calls as the
adapter splits a batch), request i = (seed, subsequence, offset) keying slot i's noise as the
adapter keys it, so that a request's token is the one the check saw.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ScriptCall:
    what: str  # the call, in words, for the script's header
    imports: str  # import lines of the upstream package, torch and numpy (with what locates them)
    code: str  # defines draw(row, params, n, seed, device)
    packages: tuple[str, ...] = ("numpy",)  # the environment's packages the header names, with versions
    run: str = "python3 {script}"  # how to run it; {script} is the file's name
    stdlib: tuple[str, ...] = ()  # the standard library's modules `imports` and `code` use
    # The subject's noise is keyed by the request (seed, subsequence, offset): `draw` reads the
    # script's STREAM_SEED and FIRST_SUBSEQUENCE, so its draws are the check's draws of the row.
    keyed: bool = False
    batch: str = ""  # defines draw_requests(row, params, requests, device); "": no batch script
