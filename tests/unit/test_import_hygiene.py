"""The domain core never imports the UI, and predictions never import scikit-learn or numpy."""

from __future__ import annotations

import subprocess
import sys

CORE_MODULES = [
    "advisor.catalog",
    "advisor.answer.recommend",
    "advisor.answer.predict",
    "advisor.answer.export",
    "advisor.answer.checklist",
    "advisor.learned.efficiency.select",
    "advisor.learned.efficiency.learned",
    "advisor.cli.commands",
    "advisor.ops.tco",
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
from advisor.learned.efficiency.select import efficiency_model
from advisor.job.inputs import Constraints, Workload
from advisor.answer.recommend import recommend
k = load_knowledge()
model = efficiency_model(k)
assert 'learned' in model.name, model.name
recommend(k, Workload(model='resnet50', samples=1e6), Constraints(), model)
"""
    loaded = _loaded_after(code)
    assert "sklearn" not in loaded and "numpy" not in loaded and "scipy" not in loaded


def test_catalogue_commands_import_no_pydantic_or_toml_parser_on_a_warm_cache(tmp_path) -> None:
    # Knowledge is validated (pydantic) and parsed (tomllib) only on a cache miss: the first run fills the
    # cache, the second must read plain records only.
    import os

    env = {**os.environ, "GPU_ADVISOR_CACHE_DIR": str(tmp_path)}
    probe = (
        "import sys\nfrom advisor.cli.main import main\nmain({args!r})\n"
        "print(' '.join(sorted(m for m in ('pydantic', 'tomllib') if m in sys.modules)), file=sys.stderr)"
    )
    for args in (["gpus"], ["checklist", "oom"], ["models"]):
        for _ in range(2):
            run = subprocess.run(
                [sys.executable, "-c", probe.format(args=args)],
                capture_output=True,
                text=True,
                env=env,
                check=True,
            )
        assert run.stderr.strip().splitlines()[-1:] in ([], [""]), (args, run.stderr)
