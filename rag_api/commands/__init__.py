"""The `rag-hub` commands, one module per group (serving, indexing, reads, collections.yaml);
`rag_api.cli` assembles them with `rag_api.ops.cli`'s check and migrate."""
