"""The ASGI app for several worker processes: lab runs in the shared store, trainings in worker processes.

``uvicorn app.serve:app --workers 4`` (runs in ``TOKENPLAY_LAB_RUNS_DIR``, or in Redis when ``REDIS_URL`` is
set). Same app as :mod:`app.main`, with the lab built by :func:`app.lab.workers.make_lab`.
"""

from app.lab.workers import make_lab
from app.web.app import create_app

app = create_app()
app.state.lab = make_lab(app.state.settings)
