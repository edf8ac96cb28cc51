/* The console's shared helpers: the tab's key, calls to the hub's API, safe DOM building.
   Every piece of data reaches the page through `api()`, with the key as a bearer token. */
"use strict";

const KEY_ITEM = "rag-hub-key";

class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

const Hub = {
  key() {
    return sessionStorage.getItem(KEY_ITEM) || "";
  },

  setKey(value) {
    if (value) sessionStorage.setItem(KEY_ITEM, value);
    else sessionStorage.removeItem(KEY_ITEM);
    Hub.showKeyState();
  },

  headers(extra) {
    const headers = Object.assign({}, extra || {});
    const key = Hub.key();
    if (key) headers.Authorization = "Bearer " + key;
    return headers;
  },

  /* JSON in, JSON out; an error answer becomes an ApiError with the hub's code and message. */
  async api(method, path, body) {
    const options = { method, headers: Hub.headers() };
    if (body !== undefined) {
      options.headers["Content-Type"] = "application/json";
      options.body = JSON.stringify(body);
    }
    const response = await fetch(path, options);
    if (!response.ok) throw await Hub.errorOf(response);
    return response.status === 204 ? null : response.json();
  },

  async errorOf(response) {
    let code = "HTTP_" + response.status;
    let message = response.statusText || "request failed";
    try {
      const error = (await response.json()).error;
      if (error) {
        code = error.code || code;
        message = error.message || message;
      }
    } catch (_) {
      /* not the hub's JSON error shape: keep the status line */
    }
    return new ApiError(response.status, code, message);
  },

  errorFromText(status, text) {
    try {
      const error = JSON.parse(text).error;
      return new ApiError(status, error.code, error.message);
    } catch (_) {
      return new ApiError(status, "HTTP_" + status, text || "request failed");
    }
  },

  /* What a refusal means for a person: no key, a reader key used for a write, or the hub's message. */
  explain(error, action) {
    if (!(error instanceof ApiError)) return String(error && error.message ? error.message : error);
    const what = `HTTP ${error.status} ${error.code}: ${error.message}`;
    if (error.status === 401 || error.status === 403) {
      if (!Hub.key()) return `This hub needs a key. Enter one on the Keys page. (${what})`;
      if (action === "write") return `Refused: changing the knowledge base needs the admin key. (${what})`;
      return `Refused: this key is not accepted. (${what})`;
    }
    return what;
  },

  notify(message, kind) {
    const notice = document.getElementById("notice");
    notice.replaceChildren();
    if (!message) {
      notice.hidden = true;
      return;
    }
    notice.className = "notice " + (kind || "error");
    notice.append(message);
    if (/Keys page/.test(message)) {
      notice.append(" ", el("a", { href: "/console/keys" }, "Enter a key"));
    }
    notice.hidden = false;
  },

  fail(error, action) {
    Hub.notify(Hub.explain(error, action), "error");
  },

  showKeyState() {
    const state = document.getElementById("key-state");
    if (state) state.textContent = Hub.key() ? "key set" : "no key";
  },

  async collections() {
    return (await Hub.api("GET", "/v1/overview")).collections;
  },
};

/* el("a", {href: "/"}, "text", child): a DOM element; strings become text nodes (never HTML). */
function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else if (name === "dataset") Object.assign(node.dataset, value);
    else node.setAttribute(name, value === true ? "" : value);
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

function bytes(n) {
  if (n === null || n === undefined) return "—";
  const units = ["B", "KB", "MB", "GB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i += 1;
  }
  return (i ? n.toFixed(1) : n) + " " + units[i];
}

function when(iso) {
  if (!iso) return "—";
  const date = new Date(typeof iso === "number" ? iso * 1000 : iso);
  return isNaN(date) ? String(iso) : date.toLocaleString();
}

/* A chunk's labels as badges (type, quality and what lowered it, OCR and its confidence), the
   same for a chunk listing item and an answer's source; nothing for an unlabelled chunk. A
   quality with reasons is marked low: the collection's min_quality decides what searches skip. */
function labelBadges(chunk) {
  const badges = [];
  if (chunk.type) badges.push(el("span", { class: "badge label type-" + chunk.type, dataset: { label: "type" } }, chunk.type));
  if (chunk.quality !== null && chunk.quality !== undefined) {
    const reasons = chunk.quality_reasons || [];
    const low = reasons.length ? " low" : "";
    badges.push(el("span", { class: "badge quality" + low, dataset: { label: "quality" }, title: reasons.join(", ") || null },
      `quality ${Number(chunk.quality).toFixed(2)}`, reasons.length ? ` (${reasons.join(", ")})` : ""));
  }
  const metadata = chunk.metadata || {};
  if (metadata.ocr) {
    const confidence = metadata.ocr_confidence;
    badges.push(el("span", { class: "badge ocr", dataset: { label: "ocr" } },
      "OCR", confidence === undefined || confidence === null ? "" : ` ${Number(confidence).toFixed(2)}`));
  }
  return badges;
}

function score(value) {
  return value === null || value === undefined ? "—" : Number(value).toFixed(3);
}

document.addEventListener("DOMContentLoaded", Hub.showKeyState);
