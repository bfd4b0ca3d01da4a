"""The web layer: FastAPI app, JSON API and HTMX pages over ``app.engines``."""
