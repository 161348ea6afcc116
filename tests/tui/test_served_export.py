"""The UI as `gpu-advisor serve` runs it: an export is a plain file name, written only in the session's folder
and handed to the browser as a download; a path anywhere else is refused."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from pilot_flows import open_results, settle
from textual.widgets import Button, Input, Static

from advisor.catalog import Knowledge
from tui import served
from tui.app import GpuAdvisorApp
from tui.screens.export import ExportDialog

REFUSED = [
    "../x.toml",
    "../../x.toml",
    "/tmp/x.toml",
    "~/.bashrc",
    ".bashrc",
    "sub/x.toml",
    "..",
    "x\\..\\y.toml",
    "a..b.toml",
    "x.toml\x00",
    " ",
]


@pytest.mark.parametrize("text", REFUSED)
def test_a_path_is_refused_in_serve_mode(text: str, tmp_path: Path) -> None:
    assert served.name_problem(text) is not None
    with pytest.raises(ValueError, match=r"file name|leaves"):
        served.export_path(tmp_path, text)


@pytest.mark.parametrize(
    "text,name", [("gpu-plan-llama-2-70b.toml", "gpu-plan-llama-2-70b.toml"), ("plan", "plan.toml")]
)
def test_a_plain_name_lands_in_the_session_folder(text: str, name: str, tmp_path: Path) -> None:
    assert served.name_problem(text) is None
    assert served.export_path(tmp_path, text) == tmp_path / name


def test_the_session_folder_is_taken_only_when_it_is_an_existing_absolute_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(served.SESSION_ENV, raising=False)
    assert served.session_dir() is None
    for value in ("relative/folder", str(tmp_path / "missing")):
        monkeypatch.setenv(served.SESSION_ENV, value)
        assert served.session_dir() is None
    monkeypatch.setenv(served.SESSION_ENV, str(tmp_path))
    assert served.session_dir() == tmp_path


async def test_served_export_refuses_paths_and_delivers_a_download(
    fixture_knowledge: Knowledge, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session, home, cwd = tmp_path / "session", tmp_path / "home", tmp_path / "cwd"
    for folder in (session, home, cwd):
        folder.mkdir()
    (home / ".bashrc").write_text("# mine\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(cwd)
    app = GpuAdvisorApp(
        load_knowledge=lambda: fixture_knowledge,
        efficiency="prior",
        user_data_dir=session,
        served_dir=session,
    )
    delivered: list[tuple[Path, str]] = []
    monkeypatch.setattr(app, "deliver_text", lambda path, **kw: delivered.append((path, kw["save_filename"])))
    async with app.run_test(size=(100, 32)) as pilot:
        await open_results(pilot, "inspection")
        await pilot.press("e")
        await pilot.pause()
        dialog = app.screen
        assert isinstance(dialog, ExportDialog) and dialog.label == served.LABEL
        path_input = dialog.query_one("#export-path", Input)
        for text in ("../x.toml", str(tmp_path / "abs.toml"), "~/.bashrc"):
            path_input.value = text
            await pilot.pause()
            assert dialog.query_one("#save", Button).disabled
            assert "file name only" in str(dialog.query_one("#export-message", Static).render())
            await pilot.press("enter")  # Enter on a refused name does nothing
            await settle(pilot)
            assert app.screen is dialog and not delivered
        path_input.value = "plan"
        await pilot.pause()
        await pilot.press("enter")
        await settle(pilot)
        await pilot.pause()
    assert delivered == [(session / "plan.toml", "plan.toml")]
    assert tomllib.loads((session / "plan.toml").read_text())["inputs"]["workload"]["model"] == "resnet50"
    assert (home / ".bashrc").read_text() == "# mine\n"
    assert not (tmp_path / "x.toml").exists() and not (tmp_path / "abs.toml").exists()
    assert not any(cwd.iterdir())
