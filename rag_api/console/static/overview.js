/* Collections overview: one card per collection from GET /v1/overview. */
"use strict";

function watcherText(watcher) {
  if (!watcher.running) return "not watching in this process";
  if (watcher.watching === undefined) return "running (collection not watched)";
  const parts = [watcher.watching ? "watching" : "not watching"];
  if (watcher.busy) parts.push("indexing");
  if (watcher.queue) parts.push(`${watcher.queue} queued`);
  if (watcher.held) parts.push("mass deletion held");
  if (watcher.last_error) parts.push("last error: " + watcher.last_error.message);
  return parts.join(", ");
}

function checkText(check) {
  if (!check) return "never run";
  const found = check.status === "healthy" ? "healthy" : `${check.problems} problem(s)`;
  const repaired = check.repaired ? `, ${check.repaired} repaired` : "";
  return `${found}${repaired} (${when(check.started_at)})`;
}

function migrationText(migration) {
  if (migration.running) return "in progress";
  if (migration.pending) return `unfinished: ${migration.pending} beside the live collection`;
  return "none";
}

function rerankText(rerank) {
  if (!rerank) return "off";
  const where = rerank.device ? `${rerank.device} ${rerank.precision}` : `server ${rerank.circuit.state}`;
  return `${rerank.model} (${where})`;
}

function card(c) {
  const rows = [
    ["Language", c.language],
    ["Model", `${c.embedder} (${c.dim} d)`],
    ["Device", `${c.device}${c.precision ? " " + c.precision : ""}`],
    ["Rerank", rerankText(c.rerank)],
    ["Files", c.files === null ? (c.kb_problem || "no kb folder (API-fed)") : c.files],
    ["Chunks", c.points],
    ["Last sync", when(c.watcher.last_sync)],
    ["Watcher", watcherText(c.watcher)],
    ["Last check", checkText(c.last_check)],
    ["Migration", migrationText(c.migration)],
    ["Last backup", c.last_backup ? when(c.last_backup.taken_at) : "none"],
  ];
  const state = c.error ? "error" : c.last_check && c.last_check.status !== "healthy" ? "warn" : "ok";
  return el("article", { class: "card " + state, dataset: { collection: c.name } },
    el("h2", {}, el("a", { href: "/console/collections/" + encodeURIComponent(c.name) }, c.name),
      c.enabled ? null : el("span", { class: "badge" }, "disabled")),
    el("p", { class: "description" }, c.description || ""),
    c.error ? el("p", { class: "error-text" }, `${c.error.code}: ${c.error.message}`) : null,
    el("dl", {}, rows.map(([term, value]) => [
      el("dt", {}, term), el("dd", { dataset: { field: term.toLowerCase().replace(" ", "-") } }, value),
    ])),
    el("p", { class: "actions" },
      el("a", { href: "/console/collections/" + encodeURIComponent(c.name) }, "Files and chunks"),
      " · ",
      el("a", { href: "/console/ask?collection=" + encodeURIComponent(c.name) }, "Ask")));
}

const REFRESH_MS = 3000; // the cards follow indexing as it happens

async function loadOverview() {
  const status = document.getElementById("overview-status");
  try {
    const overview = await Hub.api("GET", "/v1/overview");
    const access = overview.keys
      ? (overview.access === "admin" ? "admin key: you can change the knowledge base" : "reader key: read only")
      : "no keys set on this hub";
    status.textContent = `${overview.collections.length} collection(s) · ${access}`;
    document.getElementById("collections").replaceChildren(...overview.collections.map(card));
    setTimeout(loadOverview, REFRESH_MS);
  } catch (error) {
    status.textContent = "";
    Hub.fail(error, "read"); // no retry: a refusal stays a refusal until a key is entered
  }
}

document.addEventListener("DOMContentLoaded", loadOverview);
