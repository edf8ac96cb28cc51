/* Jobs: uploads, backups, checks and migrations in one table, fed by GET /v1/jobs (with the
   page's filters), polled every second while a job is unfinished, every 5 s otherwise. The
   collection page also hands each poll's jobs to its upload rows (`onJobs`). */
"use strict";

const JOB_FILTERS = ["kind", "collection", "status"];

function jobProgress(job) {
  if (job.files && job.status !== "queued") {
    return job.files.map((file) => `${file.path} ${file.status}` + (file.progress ? ` (${file.progress})` : "")).join("; ");
  }
  const p = job.progress;
  if (!p) return "";
  const d = p.detail;
  if (d) return `${p.done}${p.total ? "/" + p.total : ""} documents: ${d.indexed} indexed, ${d.unchanged} unchanged, ${d.failed} failed · ${bytes(d.bytes)}` + (d.eta_s ? ` · ${Math.ceil(d.eta_s)} s left` : "");
  return `${p.phase} ${p.done}/${p.total}`;
}

function jobOutcome(job) {
  if (job.error) return el("span", { class: "error-text" }, `${job.error.code}: ${job.error.message}`);
  const r = job.result;
  if (!r) return "";
  if (job.kind === "upload") return `${r.chunks} chunk(s), ${r.embedded} embedded, ${r.skipped} reused`;
  if (job.kind === "backup") return r.path;
  if (job.kind === "check") return `${r.status}, ${r.findings.length} finding(s)`;
  if (job.kind === "sync") return `${r.source}: ${r.indexed} indexed, ${r.unchanged} unchanged, ${r.removed} removed, ${r.failed} failed` + (r.held || r.incomplete ? ` — ${r.held || r.incomplete}` : "");
  if (job.kind === "migrate") return r.previous ? `${r.previous} → ${r.live}` : (r.notes || []).join("; ");
  return "";
}

function jobRow(job) {
  return el("tr", { dataset: { id: job.id, kind: job.kind, status: job.status } },
    el("td", {}, job.kind),
    el("td", {}, job.collection || job.collections.join(", ") || "—"),
    el("td", {}, el("span", { class: "state " + job.status }, job.status)),
    el("td", {}, when(job.created_at)),
    el("td", { dataset: { field: "progress" } }, jobProgress(job)),
    el("td", { dataset: { field: "outcome" } }, jobOutcome(job)));
}

const JobsView = {
  /* Poll /v1/jobs with `filters` ({kind, collection, status}) into `table`'s body; `onJobs(jobs)`
     after each poll; `busy()` keeps the fast pace (the collection page's uploads in flight). */
  start({ table, status, filters, onJobs, busy }) {
    const query = new URLSearchParams();
    for (const name of JOB_FILTERS) if (filters[name]) query.set(name, filters[name]);
    const path = "/v1/jobs" + (query.toString() ? "?" + query : "");
    let timer = null;
    let polling = false;
    let again = false;
    const poll = async () => {
      if (polling) {
        again = true; // asked while a poll is in flight: one more as soon as it ends
        return;
      }
      polling = true;
      clearTimeout(timer);
      let pace = 5000;
      try {
        const jobs = (await Hub.api("GET", path)).jobs;
        table.querySelector("tbody").replaceChildren(...jobs.map(jobRow));
        status.textContent = jobs.length ? "" : "No jobs yet.";
        if (onJobs) await onJobs(jobs);
        const running = jobs.some((job) => job.status !== "done" && job.status !== "failed");
        if (running || (busy && busy())) pace = 1000;
      } catch (error) {
        status.textContent = Hub.explain(error, "read");
      }
      polling = false;
      if (again) {
        again = false;
        pace = 0;
      }
      timer = setTimeout(poll, pace);
    };
    JobsView.poll = poll;
    return poll();
  },
};
