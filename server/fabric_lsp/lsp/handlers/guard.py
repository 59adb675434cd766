"""`guarded`: every handler answers, whatever its params make it do."""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Callable

log = logging.getLogger("fabric_lsp.lsp")


def guarded(default: Any = None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A handler that logs its exceptions (window/logMessage) and answers `default`: the server
    never dies of one bad request."""

    def decorate(function: Callable[..., Any]) -> Callable[..., Any]:
        if asyncio.iscoroutinefunction(function):

            async def wrapper(*args: Any) -> Any:
                try:
                    return await function(*args)
                except Exception:
                    log.exception("%s failed", function.__name__)
                    return default

        else:

            def wrapper(*args: Any) -> Any:  # type: ignore[misc]
                try:
                    return function(*args)
                except Exception:
                    log.exception("%s failed", function.__name__)
                    return default

        wrapper.__name__ = function.__name__
        wrapper.__doc__ = function.__doc__
        # pygls reads the signature (through __wrapped__) to pass the server as the first argument `ls`.
        wrapper.__wrapped__ = function  # type: ignore[attr-defined]
        return wrapper

    return decorate
