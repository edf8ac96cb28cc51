"""The OpenAI-compatible surface: request schemas, conversations, routing, replies, SSE, error shape."""
