"""Shared fixtures: the shipped knowledge base, and isolation of the user's data directory."""

from __future__ import annotations

import gc
import os
import shutil
import tempfile

import pytest

from advisor.catalog import Knowledge, load_knowledge


def pytest_configure(config: pytest.Config) -> None:
    """One knowledge cache per test process, not the user's: tests never read or evict a developer's entries,
    and every process a test starts (subprocesses inherit it) finds its worker's warm entries. Under xdist
    each worker (and the controller) runs this in its own process, so each gets its own folder: a worker's
    cleanup never removes a folder another worker is still using."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    folder = tempfile.mkdtemp(prefix=f"gpu-advisor-test-cache-{worker}-")
    config.add_cleanup(lambda: shutil.rmtree(folder, ignore_errors=True))
    os.environ["GPU_ADVISOR_CACHE_DIR"] = folder
    # One OpenMP thread per test process (scikit-learn's tree fitting, here and in the processes tests
    # start): `make test` already runs one worker per core, and on a busy machine OpenMP threads spin at
    # their barriers waiting for a displaced sibling (one `calibrate` took 18-20 s of CPU with two threads
    # beside a busy core, 4.5-6 s with one). The trees are the same either way (the shipped-trees test
    # passes with one thread). A developer's own setting wins; the runtime reads it once, at first use.
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    # The cyclic garbage collector less often in the test process (not in the processes tests start): every
    # Pilot test leaves a whole widget tree behind, and with the default thresholds (700, 10, 10) a worker ran
    # a full collection every few seconds, each scanning the hundreds of thousands of objects the imports
    # hold: 23% of the CPU of the UI tests (17.6 of 76 s on four UI test files; 5 s with these thresholds,
    # for about 60 MB more memory a worker). Garbage is still collected, in fewer and larger batches.
    gc.set_threshold(50_000, 20, 20)


def pytest_collection_finish(session: pytest.Session) -> None:
    """What collection imported (the core, Textual, scikit-learn, the test modules) lives until the end:
    frozen, full collections skip it."""
    gc.freeze()


# The heaviest tests (each 10-30 s of CPU on the 2-core machine, by a per-test CPU clock) start first.
# Under xdist a worker takes the next test as it frees up, in collection order: one of these taken last would
# run alone on a core while the other workers have finished (a tail of up to a minute). Names only move a test
# earlier; one renamed here just runs in its usual place.
HEAVY_FIRST = (
    "tests/tui/test_monkey.py::",
    "tests/fuzz/test_concurrency.py::test_parallel_calibrate_keeps_every_run",
    "tests/tui/test_wizard.py::test_each_preset_reaches_a_recommendation",
    "tests/unit/test_properties.py::test_larger_budget_never_yields_a_slower_best_plan",
    "tests/tui/test_serve.py::",
    "tests/unit/test_calibrate.py::test_calibration_refits_reports_and_resets",
    "tests/tui/test_wizard_registry.py::test_no_flag_names_anywhere_on_the_results_screen",
    "tests/fuzz/test_doors.py::test_parallel_prices_updates_keep_every_cloud",
    "tests/tui/test_wizard_fixes.py::test_a_preset_starts_from_a_clean_form",
    "tests/tui/test_results.py::test_export_parses_back_to_the_same_plan",
    "tests/unit/test_properties.py::test_no_plan_exceeds_memory_budget_or_deadline",
)


def _heaviness(item: pytest.Item) -> int:
    """The test's place in HEAVY_FIRST; every other test after them."""
    return next((i for i, name in enumerate(HEAVY_FIRST) if item.nodeid.startswith(name)), len(HEAVY_FIRST))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The heaviest tests first (a stable sort: the rest keep their order). Every worker collects the same
    order, as xdist requires."""
    items.sort(key=_heaviness)


@pytest.fixture(scope="session")
def knowledge() -> Knowledge:
    """The knowledge base shipped in the package."""
    return load_knowledge()


@pytest.fixture(autouse=True)
def isolated_user_data(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep the developer's own calibration and checklist ticks out of every test."""
    monkeypatch.setenv("GPU_ADVISOR_DATA_DIR", str(tmp_path_factory.mktemp("user-data")))
    monkeypatch.setenv("GPU_ADVISOR_TODAY", "2026-11-30")  # price staleness is judged against a fixed day
