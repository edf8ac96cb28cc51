"""`rag-hub eval`: how well a collection retrieves on its user's own questions, and which
retrieval settings (those that need no re-index) would do better.

questions  the question file (JSONL or CSV) and what counts as a right passage
judge      one question's ranking and outcome from what retrieval returned
run        a question set through `retrieval.search` (the path `/query` takes) with given settings
tune       the settings search, its cross-validation and the noise guard
generate   draft questions from a collection's own chunks (no LLM)
request    the one entry point shared by the CLI, the HTTP route and `rag-hub check`
history    the last nightly result, and the finding when nDCG drops
"""
