"""Provides the rules `gpu-advisor serve` applies to each request: who may connect and which websocket
messages reach a session."""

from __future__ import annotations

import hmac
import ipaddress
import json
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
WILDCARD_HOSTS = frozenset({"0.0.0.0", "::", ""})
# A browser terminal is never wider or taller than this; a bigger resize would make the app allocate
# screens of that size (a 1e9-wide resize is an attack, not a window).
MAX_COLUMNS, MAX_ROWS = 1000, 400
MAX_STDIN_CHARS = 64 << 10  # one paste; the browser sends keys and pastes as they come
MAX_PING_CHARS = 64


def bracketed(host: str) -> str:
    """An IPv6 address as it appears in a URL or a Host header ([::1]); names and IPv4 as they are."""
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


@dataclass(frozen=True, slots=True)
class Doors:
    """Which Host headers and Origins this server answers, and its token.

    extra_origins are --allow-origin values, normalised by origin_of: the server also answers under each
    of their names (a proxy that passes the Host header on), and a page from each may open a session.
    """

    host: str
    port: int
    token: str
    extra_origins: frozenset[str] = frozenset()

    @property
    def wildcard(self) -> bool:
        """Bound to every interface: its names are not known, so any Host with its port is answered."""
        return self.host in WILDCARD_HOSTS

    def hosts(self) -> frozenset[str]:
        """The Host header values answered, each as name:port (loopback under each of its names)."""
        names = {bracketed(self.host).lower()}
        if self.host.lower() in {"127.0.0.1", "localhost", "::1", "[::1]"}:
            names.update(LOOPBACK_NAMES)
        return frozenset(f"{name}:{self.port}" for name in names)

    def scheme_for(self, host_header: str | None) -> str:
        """https when the page was asked for under an https --allow-origin's name (a TLS proxy), else http."""
        return "https" if f"https://{_with_port(host_header or '', 443)}" in self.extra_origins else "http"

    def host_ok(self, host_header: str | None) -> bool:
        """Whether a request's Host names this server: a page asked for under another name (DNS rebinding:
        evil.example resolving to 127.0.0.1) is refused."""
        if not host_header or not HOST_HEADER.fullmatch(host_header):
            return False
        if any(
            origin.split("://", 1)[1] == _with_port(host_header, _default_port(origin))
            for origin in self.extra_origins
        ):
            return True
        named = _with_port(host_header, 80)
        return named in self.hosts() or (self.wildcard and named.rsplit(":", 1)[1] == str(self.port))

    def origin_ok(self, origin: str | None, host_header: str | None) -> bool:
        """Whether a websocket's Origin is this server's own page (or one given with --allow-origin)."""
        if not origin or not self.host_ok(host_header) or host_header is None:
            return False
        origin = origin_of(origin)
        if origin in self.extra_origins:
            return True
        scheme = self.scheme_for(host_header)
        return origin == origin_of(f"{scheme}://{host_header}")

    @property
    def cookie(self) -> str:
        """The token cookie's name: a browser keeps cookies per host, not per port, so each port has its own
        (two servers on one machine must not overwrite each other's)."""
        return f"gpu_advisor_token_{self.port}"

    def token_ok(self, given: str | None) -> bool:
        """A constant-time comparison with the server's token."""
        return bool(given) and hmac.compare_digest(str(given).encode(), self.token.encode())


HOST_HEADER = re.compile(r"(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+)(:[0-9]{1,5})?")


def _default_port(origin: str) -> int:
    return 443 if origin.startswith("https://") else 80


def _with_port(host_header: str, default: int) -> str:
    """A Host header as lower-case name:port, the scheme's default port written out when it was left off."""
    host_header = host_header.lower()
    return host_header if HAS_PORT.search(host_header) else f"{host_header}:{default}"


HAS_PORT = re.compile(r":[0-9]+$")


def origin_of(text: str) -> str:
    """An origin as scheme://name:port in lower case, the default port written out (the form compared)."""
    text = text.strip().rstrip("/").lower()
    scheme, sep, rest = text.partition("://")
    if not sep:
        return text
    return f"{scheme}://{_with_port(rest, 443 if scheme == 'https' else 80)}"


def origin_problem(text: str) -> str | None:
    """Why an --allow-origin value is not an origin (scheme://host[:port], nothing after it)."""
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 - raises ValueError for a port out of range
    except ValueError:
        return "is not a URL"
    if parts.scheme not in ("http", "https"):
        return "must start with http:// or https://"
    if not parts.hostname or parts.path not in ("", "/") or parts.query or parts.fragment or parts.username:
        return "must be scheme://host[:port] with no path, query or login"
    return None


def valid_host(text: str) -> bool:
    """An address or a DNS name (resolving it is the bind's job)."""
    try:
        ipaddress.ip_address(text.strip("[]"))
        return True
    except ValueError:
        pass
    labels = text.rstrip(".").split(".")
    return 0 < len(text) <= 253 and all(
        0 < len(label) <= 63 and label.isascii() and label.replace("-", "").isalnum() for label in labels
    )


def clamp_size(width: object, height: object) -> tuple[int, int] | None:
    """A terminal size within what a browser shows, or None when either is not a whole number."""
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (width, height)):
        return None
    assert isinstance(width, int) and isinstance(height, int)
    return min(max(width, 10), MAX_COLUMNS), min(max(height, 5), MAX_ROWS)


def size_from_query(width: str | None, height: str | None) -> tuple[int, int]:
    """The first size, from the websocket URL's query (80x24 when either is not a small whole number)."""
    numbers = [int(v) if v and v.isascii() and v.isdigit() and len(v) < 6 else None for v in (width, height)]
    return clamp_size(*numbers) or (80, 24)


def parse_message(text: str) -> tuple[str, Any] | str:
    """A browser message as (type, value), or why it is refused (one phrase, for one log line).

    The browser sends ["stdin", text], ["resize", {"width": w, "height": h}], ["ping", text], ["blur"]
    and ["focus"]; anything else is garbage from something that is not the page.
    """
    if len(text) > MAX_STDIN_CHARS + 64:
        return f"a message of {len(text):,} characters"
    try:
        envelope = json.loads(text)
    except (ValueError, RecursionError):
        return "a message that is not JSON"
    if not isinstance(envelope, list) or not envelope or not isinstance(envelope[0], str):
        return "a message that is not a [type, value] list"
    kind, value = envelope[0], envelope[1] if len(envelope) > 1 else None
    if kind in ("blur", "focus"):
        return kind, None
    if kind == "stdin" and isinstance(value, str):
        return kind, value
    if kind == "ping" and isinstance(value, str) and len(value) <= MAX_PING_CHARS:
        return kind, value
    if kind == "resize" and isinstance(value, dict):
        size = clamp_size(value.get("width"), value.get("height"))
        return (kind, size) if size else "a resize without whole-number width and height"
    return (
        f"a {kind[:20]!r} message of the wrong shape"
        if kind in ("stdin", "ping", "resize")
        else (f"a message of unknown type {kind[:20]!r}")
    )
