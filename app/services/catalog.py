"""The tokenizers one browser may use and list: the shipped ones, the lab runs it put in the playground, and the
files it brought.

Every page and API call that takes a tokenizer name resolves it through :class:`Tokenizers` (the web layer's
``TokenizersDep`` builds one per request), so the playground, compare, chat and the API accept exactly the same
names. Lab tokenizers (``lab-<run id>``) belong to the browser that put them in the playground ("use in
playground" keeps the run's id in a cookie): only that browser sees them listed (``GET /api/tokenizers``
included) and may use them; to anyone else the name is unknown. A lab tokenizer trained through another worker
process is loaded from the shared run store on first use, so any worker can serve it. Uploaded tokenizers
(:mod:`app.services.uploads`) are the same, by the name their browser chose, and never enter the process-wide
registry.

The web layer reads the browser's cookies; this module gets the ids they list, and knows nothing of cookies.
"""

from __future__ import annotations

from collections.abc import Iterable

from app.engines import budget, registry
from app.engines.base import Tokenizer
from app.engines.errors import UnknownTokenizerError
from app.engines.registry import TokenizerSpec
from app.engines.registry.loaders import check_size
from app.lab.run_tokenizers import PREFIX, is_lab_name, register_run, user_tokenizers
from app.lab.service import Lab

from .uploads import Upload, Uploads


class Tokenizers:
    """The tokenizers one browser may use (``get``, ``resolve``) and list (``listed``): ``run_ids`` are the lab runs
    it put in the playground, ``upload_ids`` the files it brought (both in the order it added them)."""

    def __init__(
        self, lab: Lab, run_ids: list[str], max_registered: int, uploads: Uploads, upload_ids: list[str]
    ):
        self.lab = lab
        self.run_ids = run_ids
        self.max_registered = max_registered
        self.mine = {PREFIX + run_id for run_id in run_ids}  # this browser's lab tokenizers
        self.uploads = uploads
        self.upload_ids = upload_ids
        self._uploaded: dict[str, Upload] | None = None
        self._listed: list[TokenizerSpec] | None = None

    @property
    def uploaded(self) -> dict[str, Upload]:
        """This browser's uploaded tokenizers by each name they are used by (a tokenizer.json's ``native-`` engine
        too; read from the store when first asked)."""
        if self._uploaded is None:
            self._uploaded = {name: u for u in self.uploads.mine(self.upload_ids) for name in u.engines}
        return self._uploaded

    def upload_of(self, name: str) -> Upload | None:
        """The upload this browser uses under ``name`` (a canonical name), or None."""
        return self.uploaded.get(name) if self.upload_ids else None

    def resolve(self, name: str) -> str:
        """The registered name for ``name`` or an alias of it; a lab run registered by another worker process is
        loaded from the run store first. Raises :class:`UnknownTokenizerError` (which lists the valid names)."""
        if self.upload_of(name) is not None:
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
            valid = [s.name for s in self.listed()]
            raise UnknownTokenizerError(name, valid, registry.closest_names(name, valid)) from None

    def get(self, name: str) -> Tokenizer:
        name = self.resolve(name)
        upload = self.upload_of(name)
        if upload is None:
            return registry.get(name)
        budget.untrusted()  # a user's file: the request moves to the lane of such work
        return self.uploads.tokenizer(upload, name)

    def chat_config(self, name: str) -> dict | None:
        """The tokenizer_config.json this browser brought with its uploaded tokenizer ``name`` (its chat template
        renders that tokenizer's chats), or None."""
        upload = self.upload_of(name)
        if upload is None or upload.config is None:
            return None
        budget.untrusted()
        return upload.chat_config

    def listed(self) -> list[TokenizerSpec]:
        """The shipped tokenizers and this browser's lab tokenizers, in registry order (worked out once per
        request: a page asks for labels, picker groups and defaults, and each would read the run store again)."""
        if self._listed is None:
            shipped = [s for s in registry.specs() if not is_lab_name(s.name)]
            uploads = {u.id: u for u in self.uploaded.values()} if self.upload_ids else {}
            uploaded = [spec for u in uploads.values() for spec in u.specs()]
            self._listed = shipped + user_tokenizers(self.run_ids, self.lab) + uploaded
        return self._listed

    def label(self, name: str) -> str:
        """The label of the listed tokenizer ``name`` (its name when it is not listed)."""
        return next((s.label for s in self.listed() if s.name == name), name)

    def labels(self) -> dict[str, str]:
        """Every listed tokenizer's label by its name."""
        return {s.name: s.label for s in self.listed()}

    def add_upload(
        self,
        data: bytes,
        *,
        name: str | None = None,
        filename: str = "",
        pattern: str | None = None,
        special_tokens: list[str] = (),
        config: bytes | None = None,
    ) -> Upload:
        """Check a tokenizer file this browser brings by building it and keep it (:meth:`Uploads.add`; the names
        this browser can already use are taken); raises the loader's error when it is refused, and keeps nothing
        then. Slow (it builds the tokenizer): call it off the event loop."""
        check_size(data)
        taken = {s.name for s in self.listed()}
        return self.uploads.add(
            data, name=name, filename=filename, taken=taken, pattern=pattern, special_tokens=special_tokens,
            config=config,
        )

    def known(self, names: Iterable[str]) -> list[str]:
        """The canonical names of those of ``names`` that resolve (unknown names in a shared URL are dropped)."""
        out = []
        for name in names:
            try:
                out.append(self.resolve(name))
            except LookupError:
                continue
        return out

    def first_known(self, name: str | None) -> str | None:
        """``name`` resolved, or None when it is empty or unknown."""
        return next(iter(self.known([name] if name else [])), None)
