"""HTML pages (placeholder; the playground page is built on top of this router)."""

from __future__ import annotations

from fastapi import APIRouter, Request

from .render import page_or_block

router = APIRouter(include_in_schema=False)


@router.get("/")
def playground(request: Request):
    return page_or_block(request, "playground.html", "result", {})
