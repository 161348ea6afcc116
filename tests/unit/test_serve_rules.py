"""The doors of `gpu-advisor serve` without a server: which Host and Origin are answered, which websocket
messages reach a session, and that a bad --host, a busy port or a bad flag is one line and exit 2."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from advisor.cli.main import main
from tui.serve_rules import (
    MAX_COLUMNS,
    MAX_ROWS,
    Doors,
    origin_of,
    origin_problem,
    parse_message,
    size_from_query,
    valid_host,
)

LOOP = Doors("127.0.0.1", 8000, "secret-token")


@pytest.mark.parametrize("host", ["127.0.0.1:8000", "localhost:8000", "[::1]:8000", "LOCALHOST:8000"])
def test_loopback_answers_under_each_of_its_names(host: str) -> None:
    assert LOOP.host_ok(host)
    assert LOOP.origin_ok(f"http://{host}", host)


@pytest.mark.parametrize(
    "host",
    [
        "evil.example:8000",
        "127.0.0.1:8001",
        "127.0.0.1",
        "",
        None,
        "127.0.0.1:8000\r\nX: y",
        "a b:8000",
        "[::1",
    ],
)
def test_another_host_is_refused(host: str | None) -> None:
    assert not LOOP.host_ok(host)


@pytest.mark.parametrize(
    "origin",
    [
        "http://evil.example",
        "http://evil.example:8000",
        "https://127.0.0.1:8000",
        "http://127.0.0.1:8001",
        "http://127.0.0.1",
        "null",
        "",
        None,
        "file://",
    ],
)
def test_a_websocket_from_another_origin_is_refused(origin: str | None) -> None:
    assert not LOOP.origin_ok(origin, "127.0.0.1:8000")


def test_the_origin_must_match_the_host_the_page_was_asked_under() -> None:
    # A page from localhost:8000 opening its websocket on 127.0.0.1:8000 is another origin for a browser too.
    assert not LOOP.origin_ok("http://localhost:8000", "127.0.0.1:8000")


def test_every_interface_answers_any_name_on_its_port_and_still_checks_the_origin() -> None:
    doors = Doors("0.0.0.0", 8000, "t")
    assert doors.host_ok("gpu-box.lan:8000") and doors.host_ok("10.1.2.3:8000")
    assert not doors.host_ok("gpu-box.lan:9000")
    assert doors.origin_ok("http://gpu-box.lan:8000", "gpu-box.lan:8000")
    assert not doors.origin_ok("http://evil.example", "gpu-box.lan:8000")


def test_allow_origin_adds_a_name_and_its_scheme() -> None:
    doors = Doors("127.0.0.1", 8000, "t", frozenset({origin_of("https://GPU.example.com/")}))
    assert doors.host_ok("gpu.example.com") and doors.scheme_for("gpu.example.com") == "https"
    assert doors.origin_ok("https://gpu.example.com", "gpu.example.com")
    assert doors.origin_ok("https://gpu.example.com:443", "127.0.0.1:8000")
    assert not doors.origin_ok("http://gpu.example.com", "gpu.example.com")
    assert doors.scheme_for("127.0.0.1:8000") == "http"


def test_each_port_has_its_own_cookie() -> None:
    assert LOOP.cookie != Doors("127.0.0.1", 8001, "other").cookie


def test_the_token_is_compared_whole() -> None:
    assert LOOP.token_ok("secret-token")
    assert not any(LOOP.token_ok(t) for t in ("", None, "secret", "secret-token ", "SECRET-TOKEN"))


@pytest.mark.parametrize(
    "text,accepted",
    [
        ("https://gpu.example.com", True),
        ("http://10.0.0.5:8000/", True),
        ("gpu.example.com", False),
        ("ftp://gpu.example.com", False),
        ("https://gpu.example.com/path", False),
        ("https://user@gpu.example.com", False),
        ("https://gpu.example.com:99999", False),
        ("https://", False),
    ],
)
def test_allow_origin_values(text: str, accepted: bool) -> None:
    assert (origin_problem(text) is None) is accepted


@pytest.mark.parametrize("host", ["127.0.0.1", "::1", "[::1]", "0.0.0.0", "gpu-box.lan", "localhost"])
def test_valid_hosts(host: str) -> None:
    assert valid_host(host)


@pytest.mark.parametrize("host", ["a b", "http://x", "x" * 300, "host/path", "-", "é.example", "a..b"])
def test_invalid_hosts(host: str) -> None:
    assert not valid_host(host)


@pytest.mark.parametrize(
    "text,expected",
    [
        ('["stdin", "q"]', ("stdin", "q")),
        ('["resize", {"width": 120, "height": 40}]', ("resize", (120, 40))),
        ('["resize", {"width": 1000000000, "height": -5}]', ("resize", (MAX_COLUMNS, 5))),
        ('["ping", "1733000000000"]', ("ping", "1733000000000")),
        ('["blur"]', ("blur", None)),
        ('["focus"]', ("focus", None)),
    ],
)
def test_the_pages_messages_pass(text: str, expected: tuple[str, object]) -> None:
    assert parse_message(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "not json",
        "",
        "{}",
        "[]",
        "[1]",
        '["stdin", 5]',
        '["resize", {"width": 1e9, "height": 5}]',
        '["resize", {"width": true, "height": 5}]',
        '["resize", {"width": 80}]',
        '["ping", "' + "x" * 100 + '"]',
        '["unknown"]',
        "[" * 100_000,
        '["stdin", "' + "x" * 100_000 + '"]',
    ],
)
def test_garbage_is_a_reason_not_an_exception(text: str) -> None:
    reason = parse_message(text)
    assert isinstance(reason, str) and "\n" not in reason and len(reason) < 100


def test_the_first_size_comes_from_the_query_within_bounds() -> None:
    assert size_from_query("100", "30") == (100, 30)
    assert size_from_query("99999999999", "x") == (80, 24)
    assert size_from_query("5000", "5000") == (MAX_COLUMNS, MAX_ROWS)
    assert size_from_query(None, None) == (80, 24)


def test_the_session_folder_variable_is_the_same_on_both_sides() -> None:
    from tui.serve_web import SESSION_ENV as SERVER_SIDE
    from tui.served import SESSION_ENV as UI_SIDE

    assert SERVER_SIDE == UI_SIDE


def _serve(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["serve", *args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    "args,says",
    [
        (["--host", "no.such.host.invalid"], "--host: 'no.such.host.invalid' cannot be resolved"),
        (["--host", "192.0.2.1"], "is not an address of this machine"),
        (["--host", "a b"], "is not an address or a host name"),
        (["--port", "0"], "--port: 0 is not a port"),
        (["--port", "70000"], "--port: 70000 is not a port"),
        (["--max-sessions", "0"], "--max-sessions: 0 is out of range"),
        (["--allow-origin", "evil"], "--allow-origin: 'evil' must start with http://"),
    ],
)
def test_a_bad_flag_is_one_line_and_exit_2_before_anything_is_printed(
    capsys: pytest.CaptureFixture[str], args: list[str], says: str
) -> None:
    code, out, err = _serve(capsys, *args)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("gpu-advisor serve: error: ") and says in err, err


def test_a_busy_port_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        code, out, err = _serve(capsys, "--port", str(port))
    assert code == 2 and out == "" and err.count("\n") == 1
    assert f"--port: {port} is already in use on 127.0.0.1" in err, err


def test_a_data_directory_that_cannot_hold_sessions_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("GPU_ADVISOR_DATA_DIR", str(blocker))
    code, out, err = _serve(capsys, "--port", "8000")
    assert code == 2 and out == "" and err.count("\n") == 1 and "data directory" in err, err
