"""`python -m rag_api` is the `rag-hub` command."""

from rag_api.cli.main import main

main()
