"""Credentials never leave the process: a URL is shown without the user:password in it."""

from __future__ import annotations

import re

_USERINFO = re.compile(r"(?P<scheme>\b[a-zA-Z][a-zA-Z0-9+.-]*://)[^\s/@]+@")


def redact(text: str) -> str:
    """`text` with the user:password part of every URL in it replaced by ***."""
    return _USERINFO.sub(r"\g<scheme>***@", text)
