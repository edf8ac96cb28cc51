/* Keys: keep one key for this tab and say what it may do (GET /v1/overview tells). */
"use strict";

async function describeKey() {
  const result = document.getElementById("key-result");
  try {
    const overview = await Hub.api("GET", "/v1/overview");
    if (!overview.keys) result.textContent = "This hub has no keys: everything is open.";
    else if (overview.access === "admin") result.textContent = "Admin key: this tab can read and change the knowledge base.";
    else result.textContent = "Reader key: this tab can read; uploads, deletes and edits will be refused.";
    result.className = "result ok";
  } catch (error) {
    result.textContent = Hub.explain(error, "read");
    result.className = "result error";
  }
}

document.addEventListener("DOMContentLoaded", () => {
  document.getElementById("key-form").addEventListener("submit", (event) => {
    event.preventDefault();
    Hub.setKey(document.getElementById("key-input").value.trim());
    document.getElementById("key-input").value = "";
    describeKey();
  });
  document.getElementById("key-forget").addEventListener("click", () => {
    Hub.setKey("");
    describeKey();
  });
  describeKey();
});
