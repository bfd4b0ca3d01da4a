"""Which tokenizers a request may use and which its pickers list, including the ones a user trained in the lab.

Every route that takes a tokenizer name resolves it through :class:`Tokenizers` (the ``TokenizersDep``
dependency), so the playground, compare, chat and the API accept exactly the same names. Lab tokenizers
(``lab-<run id>``) belong to the browser that put them in the playground (cookie ``tp_lab``): pickers list the
shipped tokenizers, this browser's lab tokenizers and whatever is already chosen (a shared URL). A lab
tokenizer trained through another worker process is loaded from the shared run store on first use, so any
worker can serve it.
"""

from __future__ import annotations

from collections.abc import Iterable

from app.engines import registry
from app.engines.base import Tokenizer
from app.engines.registry import TokenizerSpec
from app.lab.service import Lab
from app.lab.tokenizers import PREFIX, is_lab_name, register_run, user_tokenizers


class Tokenizers:
    """The tokenizers one request may use (``get``, ``resolve``) and list (``listed``)."""

    def __init__(self, lab: Lab, cookie: str | None, max_registered: int):
        self.lab = lab
        self.cookie = cookie
        self.max_registered = max_registered

    def resolve(self, name: str) -> str:
        """The registered name for ``name`` or an alias of it; a lab run registered by another worker process is
        loaded from the run store first. Raises :class:`UnknownTokenizerError` (which lists the valid names)."""
        if is_lab_name(name) and name not in registry.names():
            run = self.lab.get(name[len(PREFIX) :])
            if run is not None and run.status == "done":
                register_run(run, self.max_registered)
        return registry.resolve(name)

    def get(self, name: str) -> Tokenizer:
        return registry.get(self.resolve(name))

    def listed(self, chosen: Iterable[str] = ()) -> list[TokenizerSpec]:
        """The shipped tokenizers, this browser's lab tokenizers, and any registered tokenizer already chosen."""
        mine = user_tokenizers(self.cookie, self.lab)
        wanted = set(chosen)
        specs = [s for s in registry.specs() if not is_lab_name(s.name) or s.name in wanted]
        listed = {s.name for s in specs}
        return specs + [s for s in mine if s.name not in listed]

    def known(self, names: Iterable[str]) -> list[str]:
        """The canonical names of those of ``names`` that resolve (unknown names in a shared URL are dropped)."""
        out = []
        for name in names:
            try:
                out.append(self.resolve(name))
            except LookupError:
                continue
        return out
