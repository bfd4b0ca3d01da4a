"""Which tokenizers a request may use and which its pickers list, including the ones a user trained in the lab.

Every route that takes a tokenizer name resolves it through :class:`Tokenizers` (the ``TokenizersDep``
dependency), so the playground, compare, chat and the API accept exactly the same names. Lab tokenizers
(``lab-<run id>``) belong to the browser that put them in the playground (cookie ``tp_lab``, set by "use in
playground"): only that browser sees them listed (``GET /api/tokenizers`` included) and may use them; to anyone
else the name is unknown. A lab tokenizer trained through another worker process is loaded from the shared run
store on first use, so any worker can serve it. Uploaded tokenizers (cookie ``tp_tok``, :mod:`app.web.uploads`)
are the same, by the name their browser chose, and never enter the process-wide registry.
"""

from __future__ import annotations

from collections.abc import Iterable

from app.engines import registry
from app.engines.base import Tokenizer
from app.engines.errors import UnknownTokenizerError
from app.engines.registry import TokenizerSpec
from app.lab.service import Lab
from app.lab.tokenizers import PREFIX, cookie_ids, is_lab_name, register_run, user_tokenizers

from .uploads import Upload, Uploads


class Tokenizers:
    """The tokenizers one request may use (``get``, ``resolve``) and list (``listed``)."""

    def __init__(self, lab: Lab, cookie: str | None, max_registered: int, uploads: Uploads, upload_cookie: str | None):
        self.lab = lab
        self.cookie = cookie
        self.max_registered = max_registered
        self.mine = {PREFIX + run_id for run_id in cookie_ids(cookie)}  # this browser's lab tokenizers
        self.uploads = uploads
        self.upload_cookie = upload_cookie
        self._uploaded: dict[str, Upload] | None = None

    @property
    def uploaded(self) -> dict[str, Upload]:
        """This browser's uploaded tokenizers by name (read from the store when first asked)."""
        if self._uploaded is None:
            self._uploaded = {u.name: u for u in self.uploads.mine(self.upload_cookie)}
        return self._uploaded

    def resolve(self, name: str) -> str:
        """The registered name for ``name`` or an alias of it; a lab run registered by another worker process is
        loaded from the run store first. Raises :class:`UnknownTokenizerError` (which lists the valid names)."""
        if self.upload_cookie and name in self.uploaded:
            return name
        if is_lab_name(name):
            if name not in self.mine:
                raise UnknownTokenizerError(name, [s.name for s in self.listed()])
            if name not in registry.names():
                run = self.lab.get(name[len(PREFIX) :])
                if run is not None and run.status == "done":
                    register_run(run, self.max_registered)
        try:
            return registry.resolve(name)
        except UnknownTokenizerError:
            raise UnknownTokenizerError(name, [s.name for s in self.listed()]) from None

    def get(self, name: str) -> Tokenizer:
        name = self.resolve(name)
        upload = self.uploaded.get(name) if self.upload_cookie else None
        return self.uploads.tokenizer(upload) if upload is not None else registry.get(name)

    def listed(self) -> list[TokenizerSpec]:
        """The shipped tokenizers and this browser's lab tokenizers, in registry order."""
        shipped = [s for s in registry.specs() if not is_lab_name(s.name)]
        uploaded = [u.spec() for u in self.uploaded.values()] if self.upload_cookie else []
        return shipped + user_tokenizers(self.cookie, self.lab) + uploaded

    def known(self, names: Iterable[str]) -> list[str]:
        """The canonical names of those of ``names`` that resolve (unknown names in a shared URL are dropped)."""
        out = []
        for name in names:
            try:
                out.append(self.resolve(name))
            except LookupError:
                continue
        return out
