"""`ctx view`: a session viewer as one self-contained HTML file or a local server.

`model` builds plain JSON-ready dicts from a repository; `page` puts them into the HTML page
(the browser code in `assets/` draws them with textContent only); `server` serves the page and
the same dicts on demand, bound to the loopback interface unless told otherwise.
"""
