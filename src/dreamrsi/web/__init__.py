"""The web dashboard (``dreamrsi serve``): a FastAPI app over a store, read-only against it.

:func:`dreamrsi.web.app.create_app` builds it; its JSON API lives in ``routes/`` (one router
per module, listed in ``routes.ROUTERS``), its pages are the static files under ``static/``
(no CDN, no build step), and ``events.py`` tells the pages when the store changed. See
docs/dashboard.md.
"""
