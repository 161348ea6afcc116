"""Hypothesis over the CLI in-process: any hostile value on any flag ends in one line and an exit code."""

from __future__ import annotations

import pytest
from fuzz_cases import BASES, FLAGS, HOSTILE, flag_cases, problems, run_in_process
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

SETTINGS = settings(
    max_examples=120,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
values = st.one_of(
    st.sampled_from(HOSTILE),
    st.text(min_size=0, max_size=12),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(min_value=-(10**30), max_value=10**30).map(str),
)


@st.composite
def commands(draw: st.DrawFn) -> list[str]:
    base = draw(st.sampled_from(sorted(FLAGS)))
    flags = draw(st.lists(st.sampled_from(FLAGS[base]), min_size=1, max_size=3, unique=True))
    return BASES[base] + [f"{f}={draw(values)}" for f in flags]


@SETTINGS
@given(commands())
def test_hostile_flag_values_never_crash(argv: list[str]) -> None:
    argv = [a.replace("\x00", "") for a in argv]  # argv cannot carry NUL
    outcome = run_in_process(argv)
    assert not problems(outcome), (argv, outcome)


@pytest.mark.parametrize("argv", flag_cases()[::25], ids=lambda a: " ".join(a)[-40:])
def test_campaign_sample(argv: list[str]) -> None:
    outcome = run_in_process(argv)
    assert not problems(outcome), outcome


@pytest.mark.parametrize(
    "argv,needle",
    [
        (
            ["recommend", "--model", "llama-2-7b", "--deployment", "on-prem", "--years", "11"],
            "--years: '11' must be at most 10",
        ),
        (["recommend", "--model="], "--model: empty value"),
        (["recommend", "--model=", "--workload", "inference"], "--model: empty value"),
        (["recommend", "--params", "1e-300"], "--params: '1e-300' must be at least 1e+06"),
        (
            ["recommend", "--model", "llama-2-7b", "--workload", "inference", "--epochs", "3"],
            "--epochs: 3 is not used by inference; used only by training workloads",
        ),
        (
            ["recommend", "--model", "llama-2-7b", "--workload", "inference", "--tokens", "2T"],
            "--tokens: 2e+12 is not used by inference",
        ),
        (
            ["recommend", "--model", "llama-2-7b", "--workload", "finetune", "--lora-rank", "8"],
            "--lora-rank: 8 is not used by finetune; used only by LoRA and QLoRA",
        ),
        (
            ["recommend", "--model", "llama-2-7b", "--tpot-ms", "20"],
            "--tpot-ms: 20 is not used by training",
        ),
        (
            ["recommend", "--model", "llama-2-7b", "--years", "3"],
            "--years: 3 is not used with cloud deployment; used only with on-prem deployment",
        ),
        (
            ["recommend", "--model", "llama-2-7b", "--provider", "\x1b[31maws"],
            r"'\x1b[31maws' contains control",
        ),
        (
            ["recommend", "--model", "llama-2-7b", "--budget", "1e400"],
            "--budget: '1e400' is not a finite number",
        ),
        (
            ["predict", "--model", "resnet50", "--gpu", "h100", "--count", "1e20"],
            "--count: '1e20' must be at most",
        ),
        (["tco", "--gpu", "h100", "--count", "8", "--years", "nan"], "--years: 'nan' is not"),
    ],
)
def test_named_bad_values_are_one_line_exit_2(argv: list[str], needle: str) -> None:
    outcome = run_in_process(argv)
    assert outcome.code == 2 and not problems(outcome), outcome
    assert needle in outcome.stderr, outcome.stderr
