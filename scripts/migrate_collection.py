#!/usr/bin/env python3
"""Move a collection to another embedding model: `rag-hub migrate` (same options and output)."""

from __future__ import annotations

import sys

from rag_api.cli.main import cli

if __name__ == "__main__":
    cli(["migrate", *sys.argv[1:]], prog_name="migrate_collection.py")
