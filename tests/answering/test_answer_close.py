"""AnswerStream.close() stops the upstream generation even after reading has started."""

from rag_api.answering.answer import answer
from rag_api.search.passage import Passage
from tests.conftest import hash_collection, write_config

LONG_REPLY = " ".join(f"word{i}" for i in range(200))


def test_close_mid_read_stops_the_upstream(tmp_path, make_settings, open_hub, fake_ollama):
    llm = {"provider": "ollama", "model": "llama3.2"}
    config = write_config(tmp_path / "collections.yaml", {"docs": hash_collection(llm=llm)})
    hub = open_hub(make_settings(config, ollama_url=fake_ollama.url))
    fake_ollama.reply, fake_ollama.token_delay = LONG_REPLY, 0.01
    passage = Passage("id", "a.md", 0, 1.0, "Some evidence.", {})
    stream = answer(hub.generators, hub.collection("docs"), "question?", [passage])
    pieces = iter(stream)
    assert [next(pieces), next(pieces)] == ["word0 ", "word1 "]
    stream.close()
    assert fake_ollama.disconnected.wait(5)
    assert fake_ollama.pieces_sent < 20 < fake_ollama.pieces_total
