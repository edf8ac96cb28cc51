"""The console: a few server-rendered pages at `/` (Jinja2 templates, plain JS and CSS of our own,
no CDN, no build step) over the hub's own HTTP API.

The pages are shells: they hold no collection data. Their scripts fetch everything from the API
with the key the person typed (kept in the tab's sessionStorage), so the API's keys stay the single
gate — a page served without a key shows nothing a request without a key could not read.
"""
