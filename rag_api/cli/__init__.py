"""The `rag-hub` command: the top-level group (cli.main) and one module per group of commands;
may import every package."""
