"""Provides the monkey: random keys, pastes, clicks and resizes (fixed seed) through every UI screen."""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field

from textual import events
from textual.pilot import Pilot

from tui.formatting import plan_cost

# Keys a user might press anywhere. q, Ctrl+Q and Ctrl+C are left out: they quit, which ends the run early.
KEYS = (
    *"abcdefghijklmnoprstuvwxyz0123456789.$-/ ",
    "tab",
    "shift+tab",
    "enter",
    "escape",
    "up",
    "down",
    "left",
    "right",
    "home",
    "end",
    "pageup",
    "pagedown",
    "backspace",
    "delete",
    "space",
    "ctrl+n",
    "ctrl+r",
    "ctrl+p",
    "f1",
    "f2",
    "f3",
    "e",
    "c",
    "b",
    "x",
    "a",
    "y",
    "n",
    "slash",
)
# What people paste: numbers with suffixes, ambiguous or absurd values, markup, paths, long text.
PASTES = (
    "20k",
    "1e30",
    "0.5",
    "30m",
    "3d",
    "-5",
    "nan",
    "inf",
    "$1,000",
    "llama",
    "resnet50",
    "70b",
    "[b]bold[/b]",
    "../../etc/",
    "plan.toml",
    "x" * 300,
    "12345678901234567890",
    "\t\n",
    "😀",
    "100M",
    "2T",
)
SIZES = ((40, 12), (250, 80), (80, 24), (120, 36), (60, 20), (100, 32))
JOURNEYS = ("inspection", "lora-70b", "chat-8b", "pretrain-175b")


@dataclass
class MonkeyRun:
    """What a run did: actions by kind, screens (and result tabs) visited, renders checked."""

    actions: Counter[str] = field(default_factory=Counter)
    screens: Counter[str] = field(default_factory=Counter)
    renders: int = 0

    @property
    def keys(self) -> int:
        """Keys sent (including those of the journeys)."""
        return self.actions["key"]


def screen_name(pilot: Pilot) -> str:
    """The current screen's class, and the results' active tab."""
    screen = pilot.app.screen
    name = type(screen).__name__
    tabs = screen.query("#plan-tabs")
    if name == "ResultsScreen" and tabs:
        name += f":{tabs.first().active}"  # type: ignore[attr-defined]
    return name


async def check_renders(pilot: Pilot, run: MonkeyRun) -> None:
    """The app is up, shows at most one results screen, and its screen paints every line (a widget that fails
    to render raises here)."""
    app = pilot.app
    assert app._exception is None, app._exception
    assert app.is_running, "the app stopped"
    stack = [type(s).__name__ for s in app.screen_stack]
    assert stack.count("ResultsScreen") <= 1, stack
    app.screen._compositor.render_update(full=True)  # the same full paint a terminal gets
    run.renders += 1


async def journey(pilot: Pilot, rng: random.Random, run: MonkeyRun) -> None:
    """Back to the wizard's start, a random preset, Next, Find plans: the results get visited too."""
    await pilot.press("ctrl+r")
    await pilot.pause()
    wizard = pilot.app.screen
    presets = wizard.query("#presets")
    if not presets:
        return
    option_list = presets.first()
    option_list.focus()
    option_list.highlighted = rng.randrange(len(JOURNEYS))
    for key in ("enter", "ctrl+n", "ctrl+n"):
        await pilot.press(key)
        run.actions["key"] += 1
        await pilot.pause()


async def find_plans_burst(pilot: Pilot, rng: random.Random, run: MonkeyRun) -> None:
    """Ctrl+N pressed several times faster than screens mount (all queued at once): one results screen."""
    for _ in range(rng.randint(2, 12)):
        pilot.app.post_message(events.Key("ctrl+n", None))
        run.actions["key"] += 1
    await pilot.pause()
    await check_renders(pilot, run)


async def rerank_and_read(pilot: Pilot, rng: random.Random, run: MonkeyRun) -> None:
    """On the results: a new budget, Enter, then every plan's GPU, count and cost read whole off the table."""
    screen = pilot.app.screen
    if type(screen).__name__ != "ResultsScreen":
        return
    budget = screen.query_one("#budget-usd")
    budget.value = rng.choice(("", "20", "150", "5000", "20000", "1e6"))  # type: ignore[attr-defined]
    budget.focus()
    await pilot.press("enter")
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()
    report = getattr(screen, "report", None)
    if pilot.app.screen is not screen or report is None or screen.query_one("#results-loading").display:
        return  # left, or a newer ranking is still on its way
    table = screen.query_one("#plans")
    if table.size.width < table.virtual_size.width:
        return  # a narrow terminal shows part of the row: the columns off screen cannot be read
    inference = report.job.kind == "inference"
    top = round(table.scroll_y)
    for y in range(1, table.size.height):  # line 0 is the header
        if 0 <= top + y - 1 < len(report.plans):
            plan, row = report.plans[top + y - 1], table.render_line(y).text
            assert f" {plan.gpu} " in row and plan_cost(plan, inference) in row, row
    run.actions["table read"] += 1


async def monkey(pilot: Pilot, actions: int, seed: int = 11, check_every: int = 25) -> MonkeyRun:
    """Drive the app with `actions` random actions; assert it stays up and renders throughout."""
    rng = random.Random(seed)
    run = MonkeyRun()
    app = pilot.app
    leave = app.exit

    def stay(*args: object, **kwargs: object) -> None:
        # A quit the user asked for (the palette's Quit, say) is counted, not obeyed: the run goes on.
        # A crash still ends the app, and check_renders reports it.
        if app._exception is not None:
            leave(*args, **kwargs)  # type: ignore[arg-type]
        else:
            run.actions["quit asked"] += 1

    app.exit = stay  # type: ignore[method-assign]
    for i in range(actions):
        # The first action is a journey (0.96 falls in the journey band below; 1.0 fell in rerank's, which
        # does nothing on the wizard): the results are reached early.
        roll = 0.96 if i == 0 else rng.random()
        if roll < 0.78:
            await pilot.press(rng.choice(KEYS))
            run.actions["key"] += 1
        elif roll < 0.86:
            target = app.focused or app.screen
            target.post_message(events.Paste(rng.choice(PASTES)))
            run.actions["paste"] += 1
        elif roll < 0.91:
            size = app.screen.size
            await pilot.click(offset=(rng.randrange(max(size.width, 1)), rng.randrange(max(size.height, 1))))
            run.actions["click"] += 1
        elif roll < 0.95:
            await pilot.resize_terminal(*rng.choice(SIZES))
            run.actions["resize"] += 1
        elif roll < 0.97:
            await journey(pilot, rng, run)
            run.actions["journey"] += 1
        elif roll < 0.985:
            await find_plans_burst(pilot, rng, run)
            run.actions["find plans burst"] += 1
        else:
            await rerank_and_read(pilot, rng, run)
            run.actions["rerank"] += 1
        if rng.random() < 0.3:
            await app.workers.wait_for_complete()  # let rankings finish sometimes, so results are seen
        await pilot.pause()
        run.screens[screen_name(pilot)] += 1
        if i % check_every == 0:
            await check_renders(pilot, run)
    await app.workers.wait_for_complete()
    await pilot.pause()
    await check_renders(pilot, run)
    return run
