"""Which tokenizers a page offers and accepts, including the ones a user trained in the lab.

Lab tokenizers (``lab-<run id>``) belong to the browser that put them in the playground (cookie ``tp_lab``):
the pickers list the shipped tokenizers, this browser's lab tokenizers and whatever is already chosen (a shared
URL). A lab tokenizer trained through another worker process is loaded from the shared run store on first use,
so any worker can serve it.
"""

from __future__ import annotations

from fastapi import Request

from app.engines import registry
from app.engines.base import Tokenizer
from app.engines.registry import TokenizerSpec
from app.lab.tokenizers import COOKIE, PREFIX, is_lab_name, register_run, user_tokenizers


def _lab(request: Request, start: bool):
    """The app's lab, started only when ``start`` (it owns a worker pool: pages that merely list never start it)."""
    lab = getattr(request.app.state, "lab", None)
    if lab is None and start:
        from .lab import get_lab

        lab = get_lab(request)
    return lab


def picker_specs(request: Request, chosen: list[str] | tuple[str, ...] = ()) -> list[TokenizerSpec]:
    """The shipped tokenizers, this browser's lab tokenizers, and any registered tokenizer already chosen."""
    cookie = request.cookies.get(COOKIE)
    mine = user_tokenizers(cookie, _lab(request, start=bool(cookie)))
    wanted = set(chosen)
    specs = [s for s in registry.specs() if not is_lab_name(s.name) or s.name in wanted]
    listed = {s.name for s in specs}
    return specs + [s for s in mine if s.name not in listed]


def get_tokenizer(request: Request, name: str) -> Tokenizer:
    """``registry.get(name)``, loading a lab run from the store when this worker has not registered it yet."""
    if is_lab_name(name) and name not in registry.names():
        lab = _lab(request, start=True)
        run = lab.get(name[len(PREFIX) :]) if lab is not None else None
        if run is not None and run.status == "done":
            register_run(run, request.app.state.settings.lab_max_runs)
    return registry.get(name)
