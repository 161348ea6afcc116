"""The validated-knowledge cache: a warm cache gives the same records; entries of other versions are kept up
to a few per file (two installed versions must not rebuild each other's), older ones evicted."""

from __future__ import annotations

from importlib import resources

import pytest

from advisor.catalog.loader import Knowledge, load_knowledge_from
from advisor.question.records import dump


def test_warm_cache_gives_equal_records_and_evicts_stale_entries(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GPU_ADVISOR_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("GPU_ADVISOR_NO_CACHE", raising=False)
    folder = tmp_path / "gpu-advisor"
    folder.mkdir()
    import os

    others = [folder / f"gpus.toml.records.{n:04d}.json" for n in range(5)]
    for age, path in enumerate(others):
        path.write_text("{}")
        os.utime(path, (1_000_000 - age, 1_000_000 - age))  # 0000 the newest, 0004 the oldest
    legacy = folder / "gpus.toml.0123456789abcdef0123.json"
    legacy.write_text("{}")
    cold = load_knowledge_from(resources.files("knowledge"))
    assert not legacy.exists()
    # This version's entry and the three most recently used others are kept.
    assert [p.exists() for p in others] == [True, True, True, False, False]
    assert len(list(folder.glob("gpus.toml.records.*.json"))) == 4
    warm = load_knowledge_from(resources.files("knowledge"))
    assert warm.gpus == cold.gpus and warm.models == cold.models and warm.offers == cold.offers
    assert (
        warm.checklist == cold.checklist and warm.rules == cold.rules and warm.assumptions == cold.assumptions
    )
    assert dump(warm.gpu("h100"), mode="json") == dump(cold.gpu("h100"), mode="json")
    assert warm.gpu("h100").release_date == cold.gpu("h100").release_date is not None


def test_a_check_against_another_file_is_redone_when_that_file_changes(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """gpus.toml's fabrics are checked against assumptions.toml when its entry is built, not on every read:
    the entry is keyed by both files, so an edited assumptions.toml checks the GPUs again."""
    import shutil

    from advisor.question.errors import KnowledgeError

    monkeypatch.setenv("GPU_ADVISOR_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("GPU_ADVISOR_NO_CACHE", raising=False)
    root = tmp_path / "knowledge"
    shutil.copytree(str(resources.files("knowledge")), root)
    fabric = load_knowledge_from(root).gpu("h100").fabric
    warm = Knowledge(root)  # each file read on first use
    warm.gpus  # noqa: B018  (read from the cache: the assumptions are not read)
    assert "assumptions" not in warm.__dict__
    text = (root / "assumptions.toml").read_text(encoding="utf-8")
    (root / "assumptions.toml").write_text(text.replace(f"[fabric.{fabric}]", "[fabric.renamed-fabric]"))
    with pytest.raises(KnowledgeError, match=f"fabric {fabric!r} is not one of"):
        Knowledge(root).gpus  # noqa: B018
