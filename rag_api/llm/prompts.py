"""Everything the hub says in a collection's language: prompts, fixed answers, injected headers."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol


class Cited(Protocol):
    source: str
    text: str


@dataclass(frozen=True)
class LanguagePack:
    system: str
    no_evidence: str
    extractive: str
    extractive_fallback: str
    context_header: str
    sources_label: str
    # warnings, `{reason}` the upstream's error: a configured LLM failed before / during the answer
    answered_extractively: str
    answer_incomplete: str
    # the collection's reranker failed: the passages keep their retrieval order
    not_reranked: str


PACKS = {
    "en": LanguagePack(
        system=(
            "You answer questions using only the passages below, retrieved from the knowledge "
            "base. Cite the passages you rely on as [1], [2], ... If the passages do not contain "
            "the answer, say that you do not know. Answer in English, briefly."
        ),
        no_evidence="No relevant information was found to answer this question.",
        extractive="From the knowledge base:",
        extractive_fallback=(
            "The language model is unavailable, so here are the most relevant passages "
            "from the knowledge base:"
        ),
        context_header="Relevant passages retrieved from the knowledge base:",
        sources_label="Sources",
        answered_extractively="{reason}; answered extractively from the retrieved passages",
        answer_incomplete="{reason}; the answer is incomplete",
        not_reranked="{reason}: passages are in retrieval order, not reranked",
    ),
    "es": LanguagePack(
        system=(
            "Respondes preguntas usando solo los fragmentos siguientes, recuperados de la base de "
            "conocimientos. Cita los fragmentos que uses como [1], [2], ... Si los fragmentos no "
            "contienen la respuesta, di que no lo sabes. Responde en español, brevemente."
        ),
        no_evidence="No se encontró información relevante para responder a esta pregunta.",
        extractive="Según la base de conocimientos:",
        extractive_fallback=(
            "El modelo de lenguaje no está disponible; estos son los fragmentos más relevantes "
            "de la base de conocimientos:"
        ),
        context_header="Fragmentos relevantes recuperados de la base de conocimientos:",
        sources_label="Fuentes",
        answered_extractively=(
            "El modelo de lenguaje falló ({reason}); la respuesta cita los fragmentos recuperados"
        ),
        answer_incomplete="El modelo de lenguaje falló ({reason}); la respuesta está incompleta",
        not_reranked=(
            "El reordenador falló ({reason}); los fragmentos siguen el orden de recuperación, "
            "sin reordenar"
        ),
    ),
    "it": LanguagePack(
        system=(
            "Rispondi alle domande usando solo i passaggi seguenti, recuperati dalla base di "
            "conoscenza. Cita i passaggi che usi come [1], [2], ... Se i passaggi non contengono "
            "la risposta, di' che non lo sai. Rispondi in italiano, brevemente."
        ),
        no_evidence="Non sono state trovate informazioni pertinenti per rispondere a questa domanda.",
        extractive="Dalla base di conoscenza:",
        extractive_fallback=(
            "Il modello linguistico non è disponibile; ecco i passaggi più pertinenti "
            "della base di conoscenza:"
        ),
        context_header="Frammenti rilevanti recuperati dalla base di conoscenza:",
        sources_label="Fonti",
        answered_extractively=(
            "Il modello linguistico non ha risposto ({reason}); la risposta cita i passaggi "
            "recuperati"
        ),
        answer_incomplete="Il modello linguistico non ha risposto ({reason}); la risposta è incompleta",
        not_reranked=(
            "Il reranker non ha risposto ({reason}); i passaggi restano nell'ordine di recupero, "
            "senza riordino"
        ),
    ),
}


def pack(language: str) -> LanguagePack:
    return PACKS.get(language, PACKS["en"])


def numbered_passages(passages: Sequence[Cited]) -> str:
    """The passages as the LLM sees them: [n] (source: …) then the text."""
    return "\n\n".join(f"[{n}] (source: {p.source})\n{p.text}" for n, p in enumerate(passages, 1))


def system_prompt(
    language: str, passages: Sequence[Cited], client_system: str | None = None
) -> str:
    """Instructions plus the retrieved passages; a client's own system prompt comes first."""
    parts = [client_system.strip()] if client_system and client_system.strip() else []
    parts.append(pack(language).system)
    parts.append(numbered_passages(passages))
    return "\n\n".join(parts)
