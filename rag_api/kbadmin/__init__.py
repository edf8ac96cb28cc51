"""The logic of the /v1/rag/* knowledge-base admin API that the voice pipeline calls every turn
(endpoints: rag_api/http/endpoints/admin.py; design decisions: docs/voice-admin.md); may import
answering and what lies below it."""
