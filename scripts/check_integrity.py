#!/usr/bin/env python3
"""Nightly integrity check: `rag-hub check` (same options, output and exit statuses 0/1/2)."""

from __future__ import annotations

import sys

from rag_api.cli.main import cli

if __name__ == "__main__":
    cli(["check", *sys.argv[1:]], prog_name="check_integrity.py")
