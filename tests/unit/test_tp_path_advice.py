"""A stated tensor parallel group's advice names the path its collectives take: PCIe inside one server for
boards without NVLink, the servers' network only when the group spans servers (knowledge/rules.toml)."""

from __future__ import annotations

import contextlib
import io

import pytest

from advisor.cli.main import main


def _predict(*args: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        base = ["predict", "--model", "llama-3.1-8b", "--workload", "pretrain", "--precision", "bf16"]
        code = main([*base, *args])
    assert code == 0
    return out.getvalue()


@pytest.mark.parametrize(
    "args,said,not_said",
    [
        (("--gpu", "l40s", "--count", "4", "--tp", "4"), "over PCIe inside the server", "servers' network"),
        (("--gpu", "h100-sxm", "--count", "16", "--tp", "16"), "spans more than one h100-sxm", "over PCIe"),
        (("--gpu", "h100-sxm", "--count", "8", "--tp", "8"), None, "tensor parallel 8 (as stated)"),
    ],
)
def test_the_tp_advice_names_the_path(args: tuple[str, ...], said: str | None, not_said: str) -> None:
    text = " ".join(_predict(*args).split())
    if said:
        assert said in text
    assert not_said not in text
