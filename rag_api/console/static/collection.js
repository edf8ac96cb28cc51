/* One collection: its files (GET /v1/collections/{c}/files), uploads with per-file progress
   (one XHR per file, then its job followed in the collection's jobs, GET /v1/jobs?collection=c,
   jobs.js), deletes, and chunks from /v1/rag/*. */
"use strict";

const COLLECTION = JSON.parse(document.getElementById("page-data").textContent).collection;
const FILES = "/v1/collections/" + encodeURIComponent(COLLECTION) + "/files";
const POSITION_KEYS = ["page", "sheet", "rows", "slide"]; // where in the document a chunk is
const LABEL_KEYS = ["ocr", "ocr_confidence"]; // metadata shown among the labels (labelBadges)
const ORIGINS = { file: "from the kb file", api: "fed through the API", source: "synced from its source" };
const queue = [];
const watched = new Map(); // upload job id -> its row, until the job ends
let uploading = false;

function filePath(path) {
  return FILES + "/" + path.split("/").map(encodeURIComponent).join("/");
}

/* --- summary, files, API-fed sources ------------------------------------------------------ */

async function loadSummary() {
  const summary = document.getElementById("collection-summary");
  const found = (await Hub.collections()).find((c) => c.name === COLLECTION);
  if (!found) {
    summary.textContent = "No collection of this name.";
    return;
  }
  const files = found.files === null ? "no kb folder" : `${found.files} file(s)`;
  const backup = found.last_backup ? `last backup ${when(found.last_backup.taken_at)}` : "no backup";
  summary.textContent = `${found.description || ""} ${found.language} · ${found.embedder} (${found.dim} d, ${found.device}${found.precision ? " " + found.precision : ""}) · ${files} · ${found.points} chunks · ${backup}`.trim();
}

function fileRow(file) {
  const state = el("span", { class: "state " + file.state }, file.state);
  const remove = el("button", { type: "button", class: "small danger" }, "Delete");
  remove.addEventListener("click", () => deleteFile(file.path, remove));
  return el("tr", { dataset: { path: file.path, state: file.state } },
    el("td", {}, el("button", { type: "button", class: "link", onclick: () => showChunks(file.path) }, file.path)),
    el("td", {}, state, file.reason ? el("div", { class: "reason" }, file.reason) : null, qualitySummary(file.quality)),
    el("td", { class: "num", dataset: { field: "chunks" } }, file.chunks ?? "—"),
    el("td", { class: "num" }, bytes(file.size)),
    el("td", {}, when(file.modified)),
    el("td", { class: "actions" },
      el("button", { type: "button", class: "small secondary", onclick: () => download(file.path) }, "Download"), " ", remove));
}

/* A file's chunks by quality label: "3 of 12 chunks low quality (too_short)"; nothing unlabelled. */
function qualitySummary(quality) {
  if (!quality || !quality.labelled_chunks) return null;
  const reasons = quality.quality_reasons.length ? ` (${quality.quality_reasons.join(", ")})` : "";
  const text = quality.mostly_low_quality
    ? `${quality.low_quality_chunks} of ${quality.labelled_chunks} chunks below quality ${quality.min_quality}${reasons}: extracted as garbage?`
    : `${quality.low_quality_chunks} of ${quality.labelled_chunks} chunks low quality${reasons}`;
  return el("div", { class: "quality-summary" + (quality.mostly_low_quality ? " low" : ""), dataset: { field: "quality" } }, text);
}

async function loadFiles() {
  const status = document.getElementById("files-status");
  try {
    const listing = await Hub.api("GET", FILES);
    document.querySelector("#files tbody").replaceChildren(...listing.files.map(fileRow));
    status.textContent = listing.files.length ? "" : "No files yet: drop some above.";
  } catch (error) {
    status.textContent = Hub.explain(error, "read");
  }
  loadApiSources();
}

async function loadApiSources() {
  try {
    const listing = await Hub.api("GET", "/v1/rag/sources?collection=" + encodeURIComponent(COLLECTION));
    const fed = listing.items.filter((item) => item.has_dynamic);
    document.getElementById("api-sources-section").hidden = !fed.length;
    document.querySelector("#api-sources tbody").replaceChildren(...fed.map((item) => {
      const remove = el("button", { type: "button", class: "small danger" }, "Remove");
      remove.addEventListener("click", () => removeSource(item.source, remove));
      return el("tr", { dataset: { source: item.source } },
        el("td", {}, el("button", { type: "button", class: "link", onclick: () => showChunks(item.source) }, item.source)),
        el("td", { class: "num" }, item.chunk_count),
        el("td", { class: "actions" }, remove));
    }));
  } catch (error) {
    Hub.fail(error, "read");
  }
}

/* --- sources: web sites, buckets, repositories (GET/POST /v1/collections/{c}/sources) ------ */

const SOURCES = "/v1/collections/" + encodeURIComponent(COLLECTION) + "/sources";

function lastSync(source) {
  const last = source.last;
  if (!last) return "never";
  if (last.status === "failed") return el("span", { class: "error-text" }, `${when(last.at)}: ${last.error.message}` + (source.failures > 1 ? ` (${source.failures} in a row)` : ""));
  const counts = `${last.listed} listed, ${last.indexed} indexed, ${last.removed} removed, ${last.failed} failed`;
  return [when(last.at) + " · " + counts, ...[last.incomplete, last.held].filter(Boolean).map((why) => el("div", { class: "reason" }, why))];
}

function sourceRow(source) {
  const sync = el("button", { type: "button", class: "small", disabled: Boolean(source.job) }, source.job ? "Syncing…" : "Sync now");
  sync.addEventListener("click", () => syncSource(source.name, sync));
  return el("tr", { dataset: { source: source.name } },
    el("td", {}, el("strong", {}, source.name), ` (${source.kind})`),
    el("td", { class: "num", dataset: { field: "documents" } }, source.documents),
    el("td", { class: "num" }, source.chunks),
    el("td", { dataset: { field: "last" } }, lastSync(source)),
    el("td", {}, source.next_at ? when(source.next_at) : "on demand"),
    el("td", { class: "actions" }, sync));
}

async function loadSources() {
  try {
    const listing = await Hub.api("GET", SOURCES);
    document.getElementById("sources-section").hidden = !listing.sources.length;
    document.querySelector("#sources tbody").replaceChildren(...listing.sources.map(sourceRow));
  } catch (error) {
    Hub.fail(error, "read");
  }
}

async function syncSource(name, button) {
  button.disabled = true;
  button.textContent = "Syncing…";
  try {
    await Hub.api("POST", SOURCES + "/" + encodeURIComponent(name) + "/sync", {});
    Hub.notify(`Syncing ${name}: its job shows how far it got.`, "ok");
    JobsView.poll();
  } catch (error) {
    Hub.fail(error, "write");
    button.disabled = false;
    button.textContent = "Sync now";
  }
}

/* A destructive button asks once more in place (no modal dialog): the second click acts. */
function confirmed(button) {
  if (button.dataset.armed) return true;
  const label = button.textContent;
  button.dataset.armed = "true";
  button.textContent = "Really?";
  setTimeout(() => {
    delete button.dataset.armed;
    button.textContent = label;
  }, 4000);
  return false;
}

async function deleteFile(path, button) {
  if (!confirmed(button)) return;
  try {
    await Hub.api("DELETE", filePath(path));
    Hub.notify(`Deleted ${path} and its chunks.`, "ok");
    const shown = document.getElementById("chunks-source").textContent;
    if (shown === path) await showChunks(path);
    await Promise.all([loadFiles(), loadSummary()]);
  } catch (error) {
    Hub.fail(error, "write");
  }
}

async function removeSource(source, button) {
  if (!confirmed(button)) return;
  try {
    await Hub.api("POST", "/v1/rag/remove", { collection: COLLECTION, source_prefix: source, exact: true });
    Hub.notify(`Removed the chunks of ${source}.`, "ok");
    await Promise.all([loadApiSources(), loadSummary()]);
  } catch (error) {
    Hub.fail(error, "write");
  }
}

async function download(path) {
  try {
    const response = await fetch(filePath(path), { headers: Hub.headers() });
    if (!response.ok) throw await Hub.errorOf(response);
    const link = el("a", { href: URL.createObjectURL(await response.blob()), download: path.split("/").pop() });
    document.body.append(link);
    link.click();
    link.remove();
  } catch (error) {
    Hub.fail(error, "read");
  }
}

/* --- chunks ---------------------------------------------------------------------------------- */

/* One label a chunk: its place among its source's chunks (the collection-wide index, which the
   API's chunk routes take, is the tooltip). */
function chunkItem(chunk, rank, total) {
  const label = `Chunk ${rank + 1} of ${total}`;
  const position = POSITION_KEYS.filter((k) => k in chunk.metadata).map((k) => el("span", { class: "badge where" }, `${k} ${chunk.metadata[k]}`));
  const other = Object.entries(chunk.metadata).filter(([k]) => !POSITION_KEYS.includes(k) && !LABEL_KEYS.includes(k)).map(([k, v]) => el("span", { class: "badge" }, `${k}: ${v}`));
  const item = el("li", { class: "chunk", id: `chunk-${chunk.chunk_index}`, dataset: { index: chunk.index ?? "" } },
    el("div", { class: "chunk-head" },
      el("strong", { title: chunk.index === null ? null : `index ${chunk.index} in the collection` }, label), " · ",
      el("span", { class: "badge" + (chunk.is_dynamic ? " api" : "") }, ORIGINS[chunk.origin] || "from the kb file"),
      labelBadges(chunk), position, other),
    chunk.url ? el("a", { class: "original", href: chunk.url, target: "_blank", rel: "noopener" }, chunk.url) : null,
    el("pre", { class: "text" }, chunk.text || ""));
  if (chunk.is_dynamic && chunk.index !== null) item.append(editor(chunk, label));
  return item;
}

function editor(chunk, label) {
  const text = el("textarea", { rows: 4, class: "edit-text" });
  text.value = chunk.text || "";
  const metadata = el("textarea", { rows: 2, class: "edit-metadata" });
  metadata.value = JSON.stringify(chunk.metadata);
  const save = el("button", { type: "button", class: "small" }, "Save");
  const form = el("div", { class: "editor", hidden: true },
    el("label", { class: "wide" }, "Text", text), el("label", { class: "wide" }, "Metadata (JSON)", metadata), save);
  save.addEventListener("click", async () => {
    try {
      const body = { collection: COLLECTION, index: chunk.index, new_text: text.value, new_metadata: JSON.parse(metadata.value || "{}") };
      await Hub.api("POST", "/v1/rag/chunks/update", body);
      Hub.notify(`Saved ${label.toLowerCase()}.`, "ok");
      await showChunks(chunk.source);
    } catch (error) {
      Hub.fail(error, "write");
    }
  });
  const toggle = el("button", { type: "button", class: "small secondary" }, "Edit");
  toggle.addEventListener("click", () => { form.hidden = !form.hidden; });
  return el("div", {}, toggle, form);
}

async function showChunks(source) {
  const section = document.getElementById("chunks-section");
  const status = document.getElementById("chunks-status");
  section.hidden = false;
  document.getElementById("chunks-source").textContent = source;
  const query = new URLSearchParams({ collection: COLLECTION, source_exact: source, include_text: "true", limit: "1000" });
  try {
    const page = await Hub.api("GET", "/v1/rag/chunks?" + query);
    document.getElementById("chunks").replaceChildren(...page.items.map((chunk, i) => chunkItem(chunk, i, page.total)));
    status.textContent = `${page.total} chunk(s)`;
    status.dataset.total = page.total;
  } catch (error) {
    status.textContent = Hub.explain(error, "read");
  }
}

/* --- uploads --------------------------------------------------------------------------------- */

function enqueue(files) {
  const folder = document.getElementById("upload-folder").value.trim();
  const overwrite = document.getElementById("upload-overwrite").checked;
  for (const file of files) {
    const progress = el("progress", { max: 100, value: 0 });
    const status = el("span", { class: "upload-status" }, "waiting");
    const row = el("li", { class: "upload", dataset: { name: file.name } },
      el("strong", {}, file.name), ` (${bytes(file.size)}) `, progress, " ", status);
    document.getElementById("uploads").prepend(row);
    queue.push({ file, folder, overwrite, row, progress, status });
  }
  if (!uploading) drain();
}

async function drain() {
  uploading = true;
  while (queue.length) {
    const item = queue.shift();
    const job = await send(item);
    if (job) {
      watched.set(job.id, item);
      JobsView.poll();
    }
  }
  uploading = false;
}

/* One file, one request: XHR because fetch reports no upload progress. A full queue (429) is
   waited out as Retry-After says. Resolves to the job, or null when refused. */
function send(item) {
  return new Promise((resolve) => {
    const form = new FormData();
    form.append("files", item.file, item.file.name);
    if (item.folder) form.append("folder", item.folder);
    form.append("overwrite", item.overwrite ? "true" : "false");
    const xhr = new XMLHttpRequest();
    xhr.open("POST", FILES);
    const key = Hub.key();
    if (key) xhr.setRequestHeader("Authorization", "Bearer " + key);
    xhr.upload.addEventListener("progress", (event) => {
      if (event.lengthComputable) item.progress.value = Math.round((event.loaded / event.total) * 100);
    });
    item.status.textContent = "uploading";
    xhr.addEventListener("load", () => {
      if (xhr.status === 202) {
        item.progress.value = 100;
        item.status.textContent = "uploaded, queued";
        resolve(JSON.parse(xhr.responseText));
      } else if (xhr.status === 429) {
        const wait = Number(xhr.getResponseHeader("Retry-After") || "2");
        item.status.textContent = `the indexing queue is full: retrying in ${wait} s`;
        setTimeout(() => send(item).then(resolve), wait * 1000);
      } else {
        refuse(item, Hub.errorFromText(xhr.status, xhr.responseText));
        resolve(null);
      }
    });
    xhr.addEventListener("error", () => {
      refuse(item, new Error("the upload failed: the hub could not be reached"));
      resolve(null);
    });
    xhr.send(form);
  });
}

function refuse(item, error) {
  item.row.classList.add("failed");
  item.row.dataset.status = "refused";
  item.status.textContent = Hub.explain(error, "write");
}

function fileResult(file) {
  if (file.status === "failed" || file.error) return `${file.path} failed: ${file.error}`;
  if (file.status !== "done") return `${file.path} ${file.status}` + (file.progress ? ` (${file.progress})` : "");
  return `${file.chunks} chunk(s), ${file.embedded} embedded, ${file.skipped} reused`;
}

/* Each poll of the collection's jobs: the upload rows of this tab follow their jobs. */
async function followUploads(jobs) {
  let ended = false;
  for (const job of jobs) {
    const item = watched.get(job.id);
    if (!item) continue;
    const files = job.files.map(fileResult).join("; ");
    item.status.textContent = `${job.status}` + (files && job.status !== "queued" ? ` — ${files}` : "");
    if (job.status === "done" || job.status === "failed") {
      item.row.dataset.status = job.status;
      item.row.classList.add(job.status);
      watched.delete(job.id);
      ended = true;
    }
  }
  if (ended) await Promise.all([loadFiles(), loadSummary()]);
  const syncing = jobs.some((job) => job.kind === "sync" && (job.status === "queued" || job.status === "running"));
  if (syncing || followUploads.syncing) loadSources();
  followUploads.syncing = syncing;
}

function setUpDropZone() {
  const zone = document.getElementById("drop-zone");
  const input = document.getElementById("file-input");
  input.addEventListener("change", () => {
    enqueue(Array.from(input.files));
    input.value = "";
  });
  for (const name of ["dragenter", "dragover"]) {
    zone.addEventListener(name, (event) => {
      event.preventDefault();
      zone.classList.add("over");
    });
  }
  zone.addEventListener("dragleave", () => zone.classList.remove("over"));
  zone.addEventListener("drop", (event) => {
    event.preventDefault();
    zone.classList.remove("over");
    enqueue(Array.from(event.dataTransfer.files));
  });
}

/* A passage page links here as ?source=<document>#chunk-<n> (n: the chunk's place in its
   document, the #n of its id collection:source#n): that document's chunks,
   the cited one marked and scrolled to. */
async function showLinkedChunk() {
  const source = new URLSearchParams(location.search).get("source");
  if (!source) return;
  await showChunks(source);
  const cited = location.hash.startsWith("#chunk-") && document.getElementById(location.hash.slice(1));
  if (cited) {
    cited.classList.add("cited");
    cited.scrollIntoView({ block: "center" });
  }
}

document.addEventListener("DOMContentLoaded", () => {
  setUpDropZone();
  showLinkedChunk();
  document.getElementById("refresh-files").addEventListener("click", loadFiles);
  document.getElementById("refresh-sources").addEventListener("click", loadSources);
  loadSources();
  loadSummary().catch((error) => Hub.fail(error, "read"));
  loadFiles();
  document.getElementById("all-jobs").href = "/console/jobs?collection=" + encodeURIComponent(COLLECTION);
  JobsView.start({
    table: document.getElementById("jobs"),
    status: document.getElementById("jobs-status"),
    filters: { collection: COLLECTION },
    onJobs: followUploads,
    busy: () => watched.size > 0 || uploading,
  });
});
