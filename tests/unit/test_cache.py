"""The validated-knowledge cache: a warm cache gives the same records, and stale entries are evicted."""

from __future__ import annotations

from importlib import resources

import pytest

from advisor.catalog.loader import load_knowledge_from


def test_warm_cache_gives_equal_records_and_evicts_stale_entries(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GPU_ADVISOR_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("GPU_ADVISOR_NO_CACHE", raising=False)
    folder = tmp_path / "gpu-advisor"
    folder.mkdir()
    stale = [folder / "gpus.toml.records.0000.json", folder / "gpus.toml.0123456789abcdef0123.json"]
    for path in stale:
        path.write_text("{}")
    cold = load_knowledge_from(resources.files("knowledge"))
    assert not any(p.exists() for p in stale)
    assert len(list(folder.glob("gpus.toml.records.*.json"))) == 1
    warm = load_knowledge_from(resources.files("knowledge"))
    assert warm.gpus == cold.gpus and warm.models == cold.models and warm.offers == cold.offers
    assert (
        warm.checklist == cold.checklist and warm.rules == cold.rules and warm.assumptions == cold.assumptions
    )
    assert warm.gpu("h100").model_dump(mode="json") == cold.gpu("h100").model_dump(mode="json")
    assert warm.gpu("h100").release_date == cold.gpu("h100").release_date is not None
