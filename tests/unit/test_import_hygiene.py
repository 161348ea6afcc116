"""The domain core never imports the UI, and predictions never import scikit-learn or numpy."""

from __future__ import annotations

import subprocess
import sys

CORE_MODULES = [
    "advisor.catalog", "advisor.recommend", "advisor.predict", "advisor.export", "advisor.checklist",
    "advisor.efficiency.select", "advisor.efficiency.learned", "advisor.cli.commands", "advisor.ops.tco",
]


def _loaded_after(code: str) -> set[str]:
    probe = f"import sys\n{code}\nprint(' '.join(sorted(sys.modules)))"
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return set(result.stdout.split())


def test_core_never_imports_textual_or_tui() -> None:
    loaded = _loaded_after("\n".join(f"import {m}" for m in CORE_MODULES))
    assert not {m for m in loaded if m.split(".")[0] in ("textual", "tui", "rich", "plotext")}


def test_a_recommendation_with_the_learned_model_needs_no_sklearn() -> None:
    code = """
from advisor.catalog import load_knowledge
from advisor.efficiency.select import efficiency_model
from advisor.inputs import Constraints, Workload
from advisor.recommend import recommend
k = load_knowledge()
model = efficiency_model(k)
assert 'learned' in model.name, model.name
recommend(k, Workload(model='resnet50', samples=1e6), Constraints(), model)
"""
    loaded = _loaded_after(code)
    assert "sklearn" not in loaded and "numpy" not in loaded and "scipy" not in loaded
