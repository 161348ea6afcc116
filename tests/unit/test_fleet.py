"""Tests of the fleet planner: the simulator against closed forms, its policies on scripted scenarios, the
portfolio's one-line errors, and the CLI's plan, export, re-run and validate."""

from __future__ import annotations

import json
import math
import tomllib
from pathlib import Path

import pytest

from advisor.catalog.power_curve import load_power_curve
from advisor.cli.main import main
from advisor.fleet.cluster import Pool
from advisor.fleet.portfolio import parse_portfolio
from advisor.fleet.power import NightCap
from advisor.fleet.queueing import erlang_c, mmc_wait, priority_mm1_sojourn, simulate_mmc, simulate_priority
from advisor.fleet.sim import JobSpec, Simulation
from advisor.fleet.trace import load_trace, replay
from advisor.question.errors import InputError

ROOT = Path(__file__).resolve().parents[2]
SYNTHETIC_TRACE = ROOT / "tests" / "data" / "fleet-trace-synthetic"

TINY = """
name = "tiny"
[sizing]
gpus = ["h100-sxm"]
weeks = 2
replications = 2
mix = false

[[workload]]
name = "ft"
owner = "team-a"
priority = "regular"
model = "llama-3.2-1b"
kind = "lora"
tokens = 1e7
per_week = 10

[[workload]]
name = "chat"
owner = "team-b"
priority = "serving"
model = "llama-3.2-1b"
requests_per_s = 1
"""


# Closed forms ------------------------------------------------------------------------------------


def test_erlang_c_matches_known_values() -> None:
    assert erlang_c(1, 0.5, 1.0) == pytest.approx(0.5)  # M/M/1: P(wait) = rho
    assert erlang_c(2, 1.0, 1.0) == pytest.approx(1 / 3)
    assert mmc_wait(1, 0.5, 1.0) == pytest.approx(1.0)  # rho / (mu - lam)
    # Pre-emptive priority M/M/1: the top class sees an M/M/1 queue of its own.
    top, low = priority_mm1_sojourn((0.2, 0.3), 1.0)
    assert top == pytest.approx(1 / (1 - 0.2))
    assert low > top


def test_simulated_mmc_wait_matches_erlang_c() -> None:
    check = simulate_mmc(4, 2.0, 1.0, hours=20_000, seed=1)
    assert check.jobs > 35_000
    # A test-sized run (seeded, so the figure is fixed): its error is ~5%; `fleet validate` runs 280,000 jobs
    # at 70% load and is within 2%.
    assert check.error < 0.10


def test_simulated_priority_queue_matches_each_class() -> None:
    checks = simulate_priority((0.2, 0.3), 1.0, hours=60_000, seed=1)
    assert [c.error < 0.05 for c in checks] == [True, True]


# Policies ------------------------------------------------------------------------------------------


def _spec(name: str, cls: int, gpus: int, hours: float, **kw) -> JobSpec:
    return JobSpec(name, "owner", cls, "p", gpus, hours, **kw)


def _run(pool: Pool, arrivals, hours: float = 100.0, **kw):
    sim = Simulation([pool], [], seed=0, hours=hours, cap=NightCap(), arrivals=arrivals, **kw)
    return sim, sim.run()


def test_urgent_preempts_and_the_victim_pays_its_checkpoint_loss() -> None:
    batch = _spec("regular", 1, 8, 10.0, interval_h=4.0, restart_h=0.5)
    urgent = _spec("urgent", 0, 8, 2.0)
    _, tally = _run(Pool("p", "g", 8, 1), [(0.0, batch, 10.0), (5.0, urgent, 2.0)])
    assert tally.preemptions == 1
    assert tally.waits[0] == [0.0]  # the urgent job starts at once
    # The regular job lost the hour since its checkpoint at 4 h, waited 2 h and paid a 0.5 h restart:
    # it ends at 7 + 0.5 + (10 - 4) = 13.5 h, having arrived at 0.
    assert tally.sojourns[1] == [pytest.approx(13.5)]


def test_regular_does_not_preempt_regular_and_keeps_first_come_first_served() -> None:
    a = _spec("a", 1, 8, 10.0)
    b = _spec("b", 1, 4, 1.0)
    c = _spec("c", 1, 4, 1.0)
    _, tally = _run(Pool("p", "g", 8, 1), [(0.0, a, 10.0), (1.0, b, 1.0), (2.0, c, 1.0)])
    assert tally.preemptions == 0
    assert sorted(tally.waits[1]) == [0.0, 8.0, 9.0]  # b and c wait for a, in their order


def test_gang_job_waits_for_whole_free_servers() -> None:
    small = _spec("small", 2, 1, 5.0)
    gang = _spec("gang", 1, 16, 1.0)
    _, tally = _run(Pool("p", "g", 8, 2), [(0.0, small, 5.0), (0.5, gang, 1.0)])
    # 15 GPUs are free, but the 16-GPU job needs both servers whole; regular pre-empts batch work.
    assert tally.preemptions == 1
    assert tally.waits[1] == [0.0]


def test_development_is_capped() -> None:
    dev = _spec("dev", 3, 1, 10.0)
    _, tally = _run(Pool("p", "g", 8, 1), [(0.0, dev, 10.0)] * 4, dev_cap_fraction=0.25)
    assert sorted(tally.waits[3]) == [0.0, 0.0, 10.0, 10.0]  # two at a time on 8 GPUs


def test_night_cap_slows_work_by_the_curve_and_inverts() -> None:
    cap = NightCap(0.9, 22.0, 8.0)
    assert cap.work(0.0, 24.0) == pytest.approx(14 + 10 * 0.9)
    for t0, w in ((0.0, 5.0), (21.5, 3.0), (30.0, 100.0), (7.9, 0.05)):
        assert cap.work(t0, cap.finish(t0, w)) == pytest.approx(w)
    assert NightCap().finish(3.0, 2.0) == 5.0
    speed, power = load_power_curve().at(0.9)
    assert 0.95 < speed < 1.0 and 0.9 < power < 1.0  # measured: a 10% cap costs ~1% of speed
    assert load_power_curve().at(1.0) == (1.0, 1.0)


def test_failures_happen_at_the_sourced_rate() -> None:
    pool = Pool("p", "g", 8, 4)
    sim = Simulation(
        [pool], [], seed=3, hours=8760.0 * 20, cap=NightCap(), failures_per_gpu_hour=0.00757 / 730
    )
    tally = sim.run()
    expected = 32 * 8760 * 20 * 0.00757 / 730  # 58 failures: a Poisson count, within ~2.3 standard deviations
    assert tally.failures == pytest.approx(expected, rel=0.3)


# Portfolio errors -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "change,words",
    [
        ({"model": "llama-9-1b"}, ["workload 'ft'", "model", "llama-9-1b", "catalogue"]),
        ({"per_week": -3}, ["workload 'ft'", "per_week", "-3"]),
        ({"priority": None}, ["workload 'ft'", "priority", "missing", "urgent, regular"]),
        ({"priority": "asap"}, ["workload 'ft'", "priority", "asap"]),
        ({"colour": "red"}, ["workload 'ft'", "colour", "not a portfolio field"]),
    ],
)
def test_bad_portfolio_entries_name_the_entry_and_field(knowledge, change, words) -> None:
    data = tomllib.loads(TINY)
    entry = {**data["workload"][0], **change}
    data["workload"][0] = {k: v for k, v in entry.items() if v is not None}
    with pytest.raises(InputError) as info:
        parse_portfolio(data, knowledge)
    message = str(info.value)
    assert "\n" not in message
    for word in words:
        assert word in message


def test_serving_needs_a_rate(knowledge) -> None:
    data = tomllib.loads(TINY)
    del data["workload"][1]["requests_per_s"]
    with pytest.raises(InputError, match="workload 'chat': requests_per_s is missing"):
        parse_portfolio(data, knowledge)


def test_cli_bad_portfolio_is_one_line_exit_2(tmp_path, capsys) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(TINY.replace('priority = "regular"\n', ""), encoding="utf-8")
    assert main(["fleet", "plan", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "workload 'ft'" in err and "priority" in err


# Plan, export, re-run, validate ---------------------------------------------------------------------


def test_fleet_plan_json_then_toml_export_reruns(tmp_path, capsys) -> None:
    path = tmp_path / "tiny.toml"
    path.write_text(TINY, encoding="utf-8")
    assert main(["fleet", "plan", str(path), "--format", "json", "--prior"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["chosen"].startswith("h100-sxm x")
    kpis = {k["name"]: k for k in plan["kpis"]}
    assert kpis["GPU utilisation"]["target"] == ">= 75%"
    assert kpis["GPU utilisation"]["verdict"] in ("green", "red")
    assert set(plan["cost_by_owner"]) >= {"team-a", "team-b"}
    rows = plan["attribution"]
    for r in rows:  # the guide's maintenance is 15% of the hardware column, row by row
        assert r["maintenance_usd"] == pytest.approx(0.15 * r["hardware_usd"], abs=0.02)
    out = tmp_path / "plan.toml"
    assert main(["fleet", "plan", str(path), "--format", "toml", "-o", str(out), "--prior"]) == 0
    exported = tomllib.loads(out.read_text(encoding="utf-8"))
    assert exported["result"]["chosen"] == plan["chosen"]
    assert main(["fleet", "plan", "--from", str(out), "--format", "json", "--prior"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["chosen"] == plan["chosen"] and again["tco_usd"] == pytest.approx(plan["tco_usd"])


def test_fleet_plan_table_shows_kpis_against_targets(tmp_path, capsys) -> None:
    path = tmp_path / "tiny.toml"
    path.write_text(TINY, encoding="utf-8")
    assert main(["fleet", "plan", str(path), "--prior"]) == 0
    text = capsys.readouterr().out
    for words in ("GPU utilisation", ">= 75%", "< 5 min", "Cost per owner", "team-a", "Staged purchase"):
        assert words in text
    # The designs' TCO is the screening run's; the headline's, the full simulation's: each says which.
    assert "TCO in screening" in text and "simulated" in text.splitlines()[0]


def test_replay_of_the_synthetic_trace() -> None:
    result = replay(load_trace(SYNTHETIC_TRACE))
    assert result.nodes == 3 and result.gpus == 18 and result.never_scheduled == 1
    assert result.recorded.pods == result.simulated.pods == 6
    # The third 8-GPU pod must wait for one of the first two to end (at 7,200 s): 7,080 s after it came.
    assert result.simulated.p99_s == pytest.approx(7080, rel=0.05)
    assert 0 < result.simulated.allocation < 1


def test_validate_prints_closed_form_errors_and_the_recorded_replay(capsys) -> None:
    assert main(["fleet", "validate", "--hours", "3000", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [c["name"].split()[0] for c in out["checks"]] == ["M/M/4", "priority", "priority"]
    assert all(math.isfinite(c["error"]) for c in out["checks"])
    assert "recorded result" in out["trace_source"] and "alibaba/clusterdata@" in out["trace_source"]
    assert out["trace"]["recorded"]["pods"] > 6000


def test_validate_replays_a_trace_folder(capsys) -> None:
    assert main(["fleet", "validate", "--hours", "2000", "--trace", str(SYNTHETIC_TRACE)]) == 0
    text = capsys.readouterr().out
    assert "replayed now from" in text and "zero_delay_share" in text


def test_a_failed_job_restarts_from_its_checkpoint_and_still_ends() -> None:
    pool = Pool("p", "g", 8, 1)
    spec = _spec("long", 1, 8, 100.0, interval_h=1.0, checkpoint_h=0.01, restart_h=0.25)
    sim = Simulation([pool], [], seed=5, hours=2000.0, cap=NightCap(), failures_per_gpu_hour=0.01,
                     arrivals=[(0.0, spec, 100.0)])  # fmt: skip
    tally = sim.run()
    assert tally.failures > 10 and tally.completed == 1
    (sojourn,) = tally.sojourns[1]
    # Each failure that hit the job cost at most an interval of work and a restart; the GPU-hours held
    # are the sojourn's, whole.
    assert 100 * spec.speed**-1 < sojourn < 100 / spec.speed + tally.failures * (1.0 + 0.25) + 1e-6
    assert tally.gpu_hours[("owner", 1)] == pytest.approx(sojourn * 8)
