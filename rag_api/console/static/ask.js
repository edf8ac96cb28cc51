/* Ask: POST /query/{collection} with stream: true; sources first (with why each was chosen),
   then the answer as it is generated. */
"use strict";

const ALL_TYPES = ["prose", "list", "table", "code", "qa", "heading", "boilerplate"]; // docs/labels.md

function metadataFilter(text) {
  const metadata = {};
  for (const line of text.split("\n")) {
    if (!line.trim()) continue;
    const at = line.indexOf("=");
    if (at < 1) throw new Error(`filter "${line}": write key=value`);
    const key = line.slice(0, at).trim();
    const raw = line.slice(at + 1).trim();
    const number = Number(raw);
    metadata[key] = raw === "true" ? true : raw === "false" ? false : raw !== "" && !isNaN(number) ? number : raw;
  }
  return metadata;
}

function requestBody() {
  const body = { query: document.getElementById("question").value, stream: true };
  const mode = document.getElementById("ask-mode").value;
  if (mode) body.mode = mode;
  const topK = document.getElementById("ask-top-k").value;
  if (topK) body.top_k = Number(topK);
  const prefix = document.getElementById("ask-source-prefix").value.trim();
  const metadata = metadataFilter(document.getElementById("ask-metadata").value);
  const everything = document.getElementById("ask-all-labels").checked;
  if (prefix || Object.keys(metadata).length || everything) {
    body.filters = { metadata };
    if (prefix) body.filters.source_prefix = prefix;
    if (everything) Object.assign(body.filters, { types: ALL_TYPES, min_quality: 0 });
  }
  return body;
}

function side(label, value, rank) {
  return el("span", { class: "score" }, `${label} ${score(value)}`, rank ? ` (#${rank})` : "");
}

function sourceItem(source, position) {
  const meta = Object.entries(source.metadata || {}).filter(([k]) => !["ocr", "ocr_confidence"].includes(k)).map(([k, v]) => el("span", { class: "badge" }, `${k}: ${v}`));
  return el("li", { class: "source", dataset: { source: source.source } },
    el("div", { class: "source-head" },
      el("strong", {}, `[${position}] ${source.source}`), ` · chunk ${source.chunk_index}`),
    el("div", { class: "scores" },
      el("span", { class: "score fused" }, `fused ${score(source.score)}`),
      side("dense", source.dense_score, source.dense_rank),
      side("sparse", source.sparse_score, source.sparse_rank),
      source.rerank_score === null || source.rerank_score === undefined ? null : side("rerank", source.rerank_score)),
    el("div", { class: "meta" }, labelBadges(source), meta),
    source.url ? el("a", { class: "original", href: source.url, target: "_blank", rel: "noopener" }, source.url) : null,
    el("pre", { class: "text" }, source.text));
}

/* An answer's markdown as DOM nodes, made of text nodes and elements only (never parsed as
   HTML, so nothing in it can run): bold, italics, code, links (their text), headings, bullets. */
const INLINE = /(\*\*|__)(?=\S)(.+?)(?<=\S)\1|\*(?=[^\s*])(.+?)(?<=[^\s*])\*|`([^`]+)`|\[([^\]]+)\]\([^)]*\)/g;

function inline(text) {
  const nodes = [];
  let last = 0;
  for (const match of text.matchAll(INLINE)) {
    const [whole, , bold, italic, code, link] = match;
    nodes.push(text.slice(last, match.index));
    if (bold !== undefined) nodes.push(el("strong", {}, inline(bold)));
    else if (italic !== undefined) nodes.push(el("em", {}, inline(italic)));
    else if (code !== undefined) nodes.push(el("code", {}, code));
    else nodes.push(link);
    last = match.index + whole.length;
  }
  nodes.push(text.slice(last));
  return nodes;
}

function markdown(text) {
  return text.split("\n").flatMap((line, i) => {
    const heading = line.match(/^\s*#{1,6}\s+(.*)$/);
    const bullet = line.match(/^(\s*)[-*+]\s+(.*)$/);
    const body = heading ? [el("strong", {}, inline(heading[1]))]
      : bullet ? [bullet[1] + "• ", ...inline(bullet[2])] : inline(line);
    return i ? ["\n", ...body] : body;
  });
}

/* Server-sent events from a fetch body: calls on(event, data) for each complete event. */
async function readEvents(response, on) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let event = "message";
      const data = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("event: ")) event = line.slice(7);
        else if (line.startsWith("data: ")) data.push(line.slice(6));
      }
      if (data.length) on(event, JSON.parse(data.join("\n")));
    }
  }
}

async function ask(event) {
  event.preventDefault();
  Hub.notify("");
  const collection = document.getElementById("ask-collection").value;
  const button = document.getElementById("ask-button");
  const answer = document.getElementById("answer");
  const meta = document.getElementById("answer-meta");
  const sources = document.getElementById("sources");
  const noEvidence = document.getElementById("no-evidence");
  let body;
  try {
    body = requestBody();
  } catch (error) {
    Hub.notify(error.message);
    return;
  }
  button.disabled = true;
  let text = "";
  answer.textContent = "";
  meta.textContent = "Searching…";
  sources.replaceChildren();
  noEvidence.hidden = true;
  document.getElementById("answer-section").hidden = false;
  try {
    const response = await fetch("/query/" + encodeURIComponent(collection), {
      method: "POST",
      headers: Hub.headers({ "Content-Type": "application/json" }),
      body: JSON.stringify(body),
    });
    if (!response.ok) throw await Hub.errorOf(response);
    await readEvents(response, (kind, data) => {
      if (kind === "sources") {
        sources.replaceChildren(...data.sources.map((s, i) => sourceItem(s, i + 1)));
        noEvidence.hidden = data.generator !== "none";
        answer.classList.toggle("none", data.generator === "none");
        meta.textContent = `${data.mode} search · ${data.sources.length} source(s) · answering…`;
      } else if (kind === "delta") {
        text += data.text;
        answer.replaceChildren(...markdown(text));
      } else if (kind === "done") {
        const who = data.generator === "none" ? "no answer generated" : data.model ? `${data.generator}: ${data.model}` : data.generator;
        meta.textContent = `${who} · ${Math.round(data.timings_ms.total)} ms` + (data.warning ? ` · warning: ${data.warning}` : "");
        meta.dataset.done = "true";
      } else if (kind === "error") {
        Hub.notify(`${data.code}: ${data.message}`);
      }
    });
  } catch (error) {
    meta.textContent = "";
    Hub.fail(error, "read");
  } finally {
    button.disabled = false;
  }
}

async function loadCollections() {
  const select = document.getElementById("ask-collection");
  const wanted = new URLSearchParams(location.search).get("collection");
  try {
    const collections = (await Hub.collections()).filter((c) => c.enabled);
    select.replaceChildren(...collections.map((c) => el("option", { value: c.name, selected: c.name === wanted }, c.name)));
    // Ask waits for the list: a question sent before it came had no collection (POST /query/)
    document.getElementById("ask-button").disabled = select.options.length === 0;
  } catch (error) {
    Hub.fail(error, "read");
  }
}

document.addEventListener("DOMContentLoaded", () => {
  document.getElementById("ask-form").addEventListener("submit", ask);
  loadCollections();
});
