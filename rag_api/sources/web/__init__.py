"""The web source: a site's pages by its sitemap and links (site.py), fetched safely and politely
(fetch.py), as its robots.txt and sitemaps say (listings.py), each page's links, canonical URL
and type read (pages.py)."""
