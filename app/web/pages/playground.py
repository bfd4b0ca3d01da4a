"""The playground (``/``): a text area whose tokens are coloured live, and the fragments its htmx forms ask for.

- ``GET /?tokenizer=&text=&special=1&ws=1&pre=1&norm=1&offset=&explain=`` the page, showing the result for the
  query, so a copied link reproduces the view (``offset``: the first token of the coloured window of a long text;
  ``pre``: the pre-tokens layer; ``norm``: the normalizer layer, what the normalizer changed; ``explain``: the
  index of the token whose explanation is open).
- ``POST /render`` the live update on every keystroke: block ``result`` (counts, coloured tokens, ids) with an
  ``HX-Replace-Url`` header carrying the tokenizer, the flags and the text when it is short enough for a URL.
  Without JavaScript (the form's submit button) the whole page.
- ``POST /decode`` block ``decoded``: ids pasted as ``1, 2 3`` or ``[1, 2, 3]`` back to text.
- ``POST /ids`` every id of the text as plain text, for the "copy all ids" button of very long inputs.
- ``POST /tokens.json``, ``/tokens.csv`` (the playground's fields) and ``GET`` with them in the query: the tokens as
  a file to save (:func:`app.services.tokenize.download`: the JSON of ``POST /api/tokenize``, or one CSV row a
  token). The page's buttons submit the playground's form there (``formaction``: so without JavaScript too);
  ``static/app.js`` posts it with ``fetch`` and saves the answer, so htmx never swaps a file into the page.
- ``POST /explain`` block ``explain``: why token ``explain`` of the text is what it is (:mod:`app.features.explain`),
  asked for when a token is clicked (or focused and Enter pressed); the same block is part of ``result``, so the
  explanation follows the text while typing and survives a reload (the URL keeps ``explain``).

A keystroke's path: :func:`render` reads the form, then in the CPU lane :func:`_result` tokenizes
(:func:`app.services.tokenize.tokenize`), :func:`~app.web.rendering.tokenview.token_window` builds the coloured
window and :func:`~app.web.render.page_or_block` renders the ``result`` block, whose spans come from the memoised
``token_span`` macro. The picker is built only for a whole page. Errors of an htmx request become the error
fragment (:mod:`app.web.errors`); a whole page shows the message where the result would be, and the text area
keeps the user's text either way.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import asdict, dataclass

from fastapi import APIRouter, Request
from fastapi.responses import PlainTextResponse

from app.engines.errors import TokenplayError
from app.features.explain import Explainer
from app.features.explain.normalization import merged
from app.services import model_counts
from app.services.catalog import Tokenizers
from app.services.errors import check_text_size
from app.services.explain import explained
from app.services.tokenize import decode as decode_ids
from app.services.tokenize import download as download_tokens
from app.services.tokenize import encode, parse_ids, tokenize
from app.settings import Settings

from ..deps import SettingsDep, TokenizersDep, checked, read_form, run_cpu, text_area_value
from ..errors import status_for
from ..render import download, is_htmx, page_or_block
from ..rendering.links import playground_url
from ..rendering.pickers import picker_groups
from ..rendering.tokenview import TokenWindow, token_window, with_marks

router = APIRouter(include_in_schema=False)

SAMPLE_TEXT = (
    "Tokenplay shows how a language model cuts text into tokens.\n"
    "Type here: every token gets a colour, and hovering one shows its id and bytes.\n"
    "日本語も一文字ずつ見えます。Emoji too: 🙂👍🏽"
)


def _offset(raw: object) -> int:
    try:
        return max(0, int(raw)) if isinstance(raw, str) else 0
    except ValueError:
        return 0


def _index(raw: object) -> int | None:
    """A token index from a form or URL field, or None (empty, not a number, negative)."""
    return _offset(raw) if isinstance(raw, str) and raw.strip().isdigit() else None


@dataclass(slots=True)
class Choice:
    """What the playground shows: the form's fields, as the page, the URL and the fragments all read them."""

    tokenizer: str
    text: str
    special: bool = False
    ws: bool = False
    offset: int = 0
    pre: bool = False  # the pre-tokens layer
    explain: int | None = None  # the token whose explanation is open
    norm: bool = False  # the normalizer layer
    model: str = ""  # the model name asked for when it is not the tokenizer's own (gpt-4o for o200k_base)

    @classmethod
    def from_fields(cls, fields, default_tokenizer: str) -> Choice:
        return cls(
            fields.get("tokenizer") or default_tokenizer,
            text_area_value(fields.get("text") or ""),
            checked(fields.get("special")),
            checked(fields.get("ws")),
            _offset(fields.get("offset")),
            checked(fields.get("pre")),
            _index(fields.get("explain")),
            checked(fields.get("norm")),
            (fields.get("model") or "").strip(),
        )

    def url(self, url_text_limit: int) -> str:
        return playground_url(
            self.model or self.tokenizer, self.text, url_text_limit=url_text_limit, special=self.special, ws=self.ws,
            pre=self.pre, norm=self.norm, explain=self.explain,
        )


def _result(tokenizers: Tokenizers, settings: Settings, choice: Choice) -> dict:
    """The ``result`` block's context: exact ids and counts for the whole text, spans for one window."""
    asked = choice.model or choice.tokenizer
    cut = tokenize(tokenizers, choice.tokenizer, choice.text, settings, allow_special=choice.special)
    choice.tokenizer = cut.tokenizer.name
    # a model name asked for (gpt-4o, a repository id) is kept while the tokenizer is still the one it names
    choice.model = asked if asked != choice.tokenizer and _names(tokenizers, asked, choice.tokenizer) else ""
    window = token_window(cut.result, choice.offset, settings.render_tokens)
    # SentencePiece models spell characters outside their vocabulary as <0xNN> pieces: counted over the whole text.
    context = {"window": window, "byte_fallback": cut.byte_fallback}
    context["seen"] = model_counts.page_view(cut.tokenizer, cut.result.count, settings, choice.model)
    if choice.pre or choice.norm or choice.explain is not None:
        context |= _explained(cut.tokenizer, choice, cut.result)
        explainer = context["explainer"]
        if explainer is not None and (choice.pre or choice.norm):
            context["window"], context["norm_changes"] = layer_marks(window, explainer, choice.pre, choice.norm)
            context["norm_summary"] = explainer.normalization.summary(context["norm_changes"]) if choice.norm else ""
    return context


def _names(tokenizers: Tokenizers, model: str, tokenizer: str) -> bool:
    """Whether ``model`` (a model name or alias) stands for the tokenizer ``tokenizer``."""
    try:
        return tokenizers.resolve(model) == tokenizer
    except TokenplayError:
        return False


def _explained(tok, choice: Choice, result=None) -> dict:
    """The ``explain`` block's context: the explanation of token ``choice.explain`` (none when it is out of range,
    the text having shrunk), or why this tokenizer cannot be explained."""
    return explained(tok, choice.text, choice.explain, allow_special=choice.special, result=result).as_context()


def layer_marks(window: TokenWindow, explainer: Explainer, pre: bool, norm: bool) -> tuple[TokenWindow, list]:
    """The window with class ``pt`` on every span that starts a pre-token (the pre-tokens layer) and ``nz`` on every
    span whose characters the normalizer changed (the normalizer layer), and the changes in the window, joined
    for showing. Pre-tokens are cut only as far as the window reaches."""
    starts = {u.start for u in explainer.through(window.token_stop)} if pre else set()
    changes = []
    if norm and window.spans:
        changes = explainer.normalization.changes(window.spans[0].start, max(window.spans[-1].end, window.spans[0].start + 1))
    ends = [c.end for c in changes]

    def touched(span) -> bool:
        k = bisect_right(ends, span.start)  # the first change that ends after the span starts
        return k < len(changes) and changes[k].start < max(span.end, span.start + 1)

    marks = ((" ".join(c for c in ("pt" if s.start in starts else "", "nz" if changes and touched(s) else "") if c), ())
             for s in window.spans)
    return with_marks(window, marks), merged(changes)


def _page(request: Request, tokenizers: Tokenizers, settings: Settings, choice: Choice, **extra):
    """The whole page (or, for htmx, its ``result`` block), with an engine error shown in place of the result."""
    context = asdict(choice) | {"window": None, "byte_fallback": None, "error": None, "decoded": None} | extra
    context |= {"explanation": None, "explain_error": None, "norm_changes": [], "norm_summary": ""}
    status = 200
    try:
        context |= _result(tokenizers, settings, choice)
    except TokenplayError as exc:
        if is_htmx(request):
            raise  # the error table answers with the error fragment and the right status
        context["error"], status = str(exc), status_for(exc)
    context["tokenizer"], context["model"] = choice.tokenizer, choice.model
    if not is_htmx(request):
        context["tokenizers"] = picker_groups(tokenizers.listed(), [choice.tokenizer])
    headers = {"HX-Replace-Url": choice.url(settings.url_text_limit)} if status == 200 else {}
    return page_or_block(request, "playground.html", "result", context, status_code=status, headers=headers)


@router.get("/")
def playground(request: Request, settings: SettingsDep, tokenizers: TokenizersDep):
    params = request.query_params
    choice = Choice.from_fields(params, settings.default_tokenizer)
    if "text" not in params and not params:
        choice.text = SAMPLE_TEXT
    return _page(request, tokenizers, settings, choice)


@router.post("/explain")
async def explain_token(request: Request, settings: SettingsDep, tokenizers: TokenizersDep):
    """Fields: the playground's (``text``, ``tokenizer``, ``special``...) and ``explain``, the token's index (empty:
    close the explanation). Block ``explain``, with ``HX-Replace-Url`` keeping the index in the address."""
    choice = Choice.from_fields(await read_form(request, settings.max_chars), settings.default_tokenizer)
    check_text_size(choice.text, settings)
    if not is_htmx(request):  # a form sent without htmx: the whole page, its explanation open
        return await run_cpu(request, _page, request, tokenizers, settings, choice)

    def work():
        tok = tokenizers.get(choice.tokenizer)
        choice.tokenizer = tok.name
        context = {"explanation": None, "explain_error": None}
        if choice.explain is not None:
            context = _explained(tok, choice)
        headers = {"HX-Replace-Url": choice.url(settings.url_text_limit)}
        return page_or_block(request, "playground.html", "explain", asdict(choice) | context, headers=headers)

    return await run_cpu(request, work)


@router.post("/render")
async def render(request: Request, settings: SettingsDep, tokenizers: TokenizersDep):
    """Fields: ``text``, ``tokenizer``, ``special``, ``ws`` (checkboxes), ``offset`` (first token of the window)."""
    choice = Choice.from_fields(await read_form(request, settings.max_chars), settings.default_tokenizer)
    return await run_cpu(request, _page, request, tokenizers, settings, choice)


#: A paste of ids longer than this (characters) is decoded in the heavy lane (:mod:`app.web.lanes`).
HEAVY_PASTE = 200_000


@router.post("/decode")
async def decode(request: Request, settings: SettingsDep, tokenizers: TokenizersDep):
    """Fields: ``ids`` (as typed or pasted) and ``tokenizer``."""
    fields = await read_form(request, settings.max_chars)
    raw = fields.get("ids") or ""
    choice = Choice.from_fields({"tokenizer": fields.get("tokenizer")}, settings.default_tokenizer)

    def parse_and_decode() -> tuple[list[int], str]:
        ids = parse_ids(raw, settings.max_ids)  # past the limit it stops reading: a 413
        return ids, decode_ids(tokenizers, choice.tokenizer, ids, settings)

    # a paste of a million ids takes a second to read: never on the event loop, nor in the common lane
    ids, decoded = await run_cpu(request, parse_and_decode, heavy=len(raw) > HEAVY_PASTE)
    decoded = decoded if ids else None
    if is_htmx(request):
        context = {"decoded": decoded, "decoded_count": len(ids)}
        return page_or_block(request, "playground.html", "decoded", context)
    return _page(request, tokenizers, settings, choice, ids_input=raw, decoded=decoded, decoded_count=len(ids))


@router.post("/ids")
async def all_ids(request: Request, settings: SettingsDep, tokenizers: TokenizersDep):
    """Every token id of the text, comma-separated, as plain text (the page shows only a window of them)."""
    choice = Choice.from_fields(await read_form(request, settings.max_chars), settings.default_tokenizer)
    ids = await run_cpu(request, encode, tokenizers, choice.tokenizer, choice.text, settings, allow_special=choice.special)
    return PlainTextResponse(", ".join(map(str, ids)))


@router.api_route("/tokens.{fmt}", methods=["GET", "POST"])
async def tokens_file(request: Request, fmt: str, settings: SettingsDep, tokenizers: TokenizersDep):
    """The tokens of the playground's text as a file (``json`` or ``csv``): fields as the playground's form, in the
    query (GET, the page's links) or the body (POST, what the page's script sends for any text)."""
    fields = await read_form(request, settings.max_chars) if request.method == "POST" else request.query_params
    choice = Choice.from_fields(fields, settings.default_tokenizer)
    body, media, filename = await run_cpu(request, download_tokens, tokenizers, choice.model or choice.tokenizer,
                                          choice.text, settings, fmt, allow_special=choice.special)
    return download(body, media, filename)
