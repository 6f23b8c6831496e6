"""The provider on a real socket (uvicorn), for an engine that runs in its own process."""

from __future__ import annotations

import logging
import socket
from collections.abc import Callable

import uvicorn

from arck.simulator.provider.provider import SimulatedProvider
from arck.simulator.provider.reply import ResponseLost

__all__ = ["KEEP_ALIVE_S", "listen", "serve", "server"]


class _QuietLosses(logging.Filter):
    """uvicorn logs every exception an app raises; a deliberately lost response is none."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and isinstance(record.exc_info[1], ResponseLost))


_QUIET = _QuietLosses()

# How long an idle connection stays open (uvicorn's default is 5 s). Longer than any client
# pool keeps one idle (httpx and the openai/anthropic SDKs 5 s, aiohttp 15 s): a server that
# closes first races the client's next request on that connection, and under load the
# request is lost, an unknown outcome the engine must reconcile that no fault scripted.
KEEP_ALIVE_S = 75


def listen(host: str = "127.0.0.1", port: int = 0) -> socket.socket:
    """A listening socket (port 0: a free one), so clients may connect before uvicorn runs."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # Inherited by accepted connections: without it a kept-alive client's small requests
    # stall ~40 ms each on delayed ACKs.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind((host, port))
    sock.listen(128)
    return sock


def server(provider: SimulatedProvider) -> uvicorn.Server:
    """A uvicorn server for `provider`: run it with `.run(sockets=[listen(...)])`.

    h11 and the asyncio loop are fixed so a lost response breaks the same way everywhere
    and a virtual clock can see when the loop is idle.
    """
    config = uvicorn.Config(
        provider.app, http="h11", loop="asyncio", lifespan="off", log_level="warning",
        timeout_keep_alive=KEEP_ALIVE_S,
    )
    logger = logging.getLogger("uvicorn.error")
    if _QUIET not in logger.filters:
        logger.addFilter(_QUIET)
    return uvicorn.Server(config)


def serve(
    provider: SimulatedProvider, host: str, port: int, announce: Callable[[str], None]
) -> None:
    """Serve until interrupted; `announce` gets the base URL once the socket listens."""
    sock = listen(host, port)
    shown = f"[{host}]" if ":" in host else host
    announce(f"http://{shown}:{sock.getsockname()[1]}/v1")
    server(provider).run(sockets=[sock])
