/* The jobs page: every job the tab's key may see (GET /v1/jobs), filtered by the form, whose
   values live in the address (?kind=&collection=&status=) so a filtered view can be linked. */
"use strict";

document.addEventListener("DOMContentLoaded", () => {
  const form = document.getElementById("job-filters");
  const filters = Object.fromEntries(new URLSearchParams(location.search));
  for (const name of JOB_FILTERS) if (filters[name]) form.elements[name].value = filters[name];
  JobsView.start({
    table: document.getElementById("jobs"),
    status: document.getElementById("jobs-status"),
    filters,
  });
});
