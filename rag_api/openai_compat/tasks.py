"""Client task prompts: requests that are not questions to the knowledge base.

Open WebUI sends, after each answer, its own background tasks to the chat's model (unless a "Task
Model" is set): a title, tags, follow-up suggestions and search queries. Each is one user message
made from its default template (backend/open_webui/config.py, DEFAULT_*_PROMPT_TEMPLATE; samples in
tests/data/openwebui_task_prompts.json): it starts with `### Task:`, asks for a JSON object with a
known key (`{ "title": ...`, `{ "tags": ...`, `{ "follow_ups": ...`, `{ "queries": ...`) and quotes
the chat in `<chat_history>` as `USER: ...` / `ASSISTANT: ...` lines. Such a prompt skips
retrieval: the collection's LLM answers it as sent, and without an LLM `minimal_answer` gives the
JSON asked for (the first user message as the title, cut to a whole phrase; empty lists for the
others).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from rag_api.embedding.languages import text_language

TASK_KEYS = ("title", "tags", "follow_ups", "queries")
_HISTORY = re.compile(r"<chat_history>(.*?)</chat_history>", re.DOTALL)
_ASKED_KEY = re.compile(r'\{\s*"(' + "|".join(TASK_KEYS) + r')"\s*:')
_USER_LINE = re.compile(r"^USER:\s*(.+)$", re.MULTILINE)
TITLE_CHARS = 50  # a chat list shows about this much of a title
# how far past TITLE_CHARS a title may run to finish the phrase it would cut, when no whole phrase
# fits: "…protects customer data…?" (51) rather than "…protects customer…?"
TITLE_SLACK = 5
# a whole phrase that keeps less of the room than this says too little of a long question: the
# cut phrase is finished (within TITLE_SLACK) or cut plainly instead
SHORTEST_PHRASE = 1 / 3
_CLOSERS = "?!"
_PAUSES = ",;:.?!"  # a word ending with one ends a phrase
_MARKS = "¿¡?!.,;:()[]{}\"'«»“”‘’-–—…"

# Words a title never ends on: articles, prepositions, conjunctions, pronouns and determiners,
# auxiliaries and question words; a title ending on one stops mid-phrase ("…de un…?"). One set
# per language the hub analyses (rag_api.embedding.bm25.LANGUAGES); another language joins with
# its own. Particles that end a phrasal verb ("sign up", "log out") are left out.
DANGLING = {
    "en": frozenset(
        "a an the this that these those my your our their his her its some any each every no "
        "all both either neither another other such of in on at to for with by from about as "
        "into onto over under between through during before after without within across "
        "against among per via than like upon toward towards around along behind beyond since "
        "until and or but nor so yet if because while whether although though unless then "
        "what which who whom whose when where why how much many i you we they he she it me us "
        "them is are was were be been being am do does did have has had can could will would "
        "shall should may might must not there".split()
    ),
    "es": frozenset(
        "el la los las lo un una unos unas al del a ante bajo con contra de desde durante en "
        "entre hacia hasta mediante para por según sin sobre tras y e o u ni pero sino que si "
        "porque aunque mientras mi mis tu tus su sus nuestro nuestra nuestros nuestras este "
        "esta estos estas ese esa esos esas aquel aquella cada algún alguna ningún ninguna otro "
        "otra otros otras qué cuál cuáles cuánto cuánta cuántos cuántas cómo como dónde donde "
        "cuándo cuando quién quiénes quien cual cuanto me te se nos os le les yo tú él ella es "
        "son está están ser estar hay ha han he has hemos puede pueden puedo debo debe más muy "
        "tan no".split()
    ),
    "it": frozenset(
        "il lo la i gli le un uno una l di a da in con su per tra fra del dello della dei degli "
        "delle al allo alla ai agli alle dal dallo dalla dai dagli dalle nel nello nella nei "
        "negli nelle sul sullo sulla sui sugli sulle col e ed o od ma però che se perché quando "
        "come mentre né anche mio mia miei mie tuo tua suo sua suoi sue nostro nostra nostri "
        "nostre loro questo questa questi queste quello quella quei quegli quelle ogni qualche "
        "ciascun ciascuna chi cosa quale quali quanto quanta quanti quante dove mi ti si ci vi "
        "ne io tu lui lei noi voi è sono era sia ha hanno ho posso può possono devo deve più "
        "molto non".split()
    ),
}


@dataclass(frozen=True)
class TaskPrompt:
    key: str  # the JSON key the prompt asks for: one of TASK_KEYS
    history: str  # the chat it quotes

    def minimal_answer(self) -> str:
        """The JSON the prompt asks for, made without an LLM."""
        if self.key != "title":
            return json.dumps({self.key: []})
        first = _USER_LINE.search(self.history)
        title = short_title(first.group(1) if first else self.history) or "Chat"
        return json.dumps({"title": title}, ensure_ascii=False)


def short_title(question: str, limit: int = TITLE_CHARS) -> str:
    """The question itself as a title; a longer one cut after its last whole phrase within
    `limit` characters (or TITLE_SLACK past it when none fits), never on a DANGLING word, marked
    with "…" and ending with the question's own "?" or "!", so a Spanish "¿…?" pair stays whole."""
    text = " ".join(question.split())
    if len(text) <= limit:
        return text
    closer = text[-1] if text[-1] in _CLOSERS else ""
    room = limit - 1 - len(closer)
    words = text.split(" ")
    dangling = _dangling(text)
    sizes = [len(" ".join(words[: i + 1])) for i in range(len(words))]
    ends = [i for i in range(len(words)) if _ends_phrase(words, i, dangling)]
    fitting = [i for i in ends if sizes[i] <= room]
    if fitting and sizes[fitting[-1]] >= room * SHORTEST_PHRASE:
        keep = fitting[-1]
    else:
        over = next((i for i in ends if sizes[i] > room), None)
        if over is not None and sizes[over] <= room + TITLE_SLACK:
            keep = over
        else:
            keep = _trimmed([i for i in range(len(words)) if sizes[i] <= room], words, dangling)
    if keep is None:  # not one word fits: cut inside the first
        return text[:room] + "…" + closer
    if keep == len(words) - 1:  # finishing the phrase finished the question
        return text
    return " ".join(words[: keep + 1]).rstrip(" ,;:.-–—") + "…" + closer


def _dangling(text: str) -> frozenset[str]:
    """The DANGLING words of the text's language, of every language when it cannot be told."""
    language = text_language(text, DANGLING)
    return DANGLING[language] if language else frozenset().union(*DANGLING.values())


def _bare(word: str) -> str:
    return word.strip(_MARKS).lower()


def _ends_phrase(words: list[str], i: int, dangling: frozenset[str]) -> bool:
    """Whether a title may end after word `i`: a word that is not DANGLING, before a pause, a
    DANGLING word (the next phrase starts) or the end."""
    bare = _bare(words[i])
    if not bare or bare in dangling:
        return False
    return i == len(words) - 1 or words[i][-1] in _PAUSES or _bare(words[i + 1]) in dangling


def _trimmed(fitting: list[int], words: list[str], dangling: frozenset[str]) -> int | None:
    """The last of the `fitting` word positions that is not DANGLING (the last one, if all are)."""
    kept = [i for i in fitting if _bare(words[i]) not in dangling]
    return kept[-1] if kept else (fitting[-1] if fitting else None)


def task_prompt(text: str) -> TaskPrompt | None:
    """The task `text` asks for, if it is one of the recognised client task prompts."""
    if not text.lstrip().startswith("### Task:"):
        return None
    history = _HISTORY.search(text)
    if history is None:
        return None
    asked = _ASKED_KEY.search(text, 0, history.start())  # the chat itself may hold any JSON
    return TaskPrompt(asked.group(1), history.group(1).strip()) if asked else None
