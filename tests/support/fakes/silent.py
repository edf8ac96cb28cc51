"""SilentServer: a TCP server on loopback that accepts every connection and never answers."""

from __future__ import annotations

import socket
import threading
from contextlib import suppress
from typing import Self


class SilentServer:
    """Accepts, reads whatever comes, never writes a byte; `connections` counts accepts. `stop`
    closes the listener and every connection (clients then see the peer gone)."""

    def __init__(self, port: int = 0) -> None:
        self.port = port
        self.connections = 0
        self._listener: socket.socket | None = None
        self._open: list[socket.socket] = []
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> Self:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(128)
        self.port = listener.getsockname()[1]
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()
        return self

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:  # the listener was closed
                return
            with self._lock:
                self.connections += 1
                self._open.append(conn)
            threading.Thread(target=self._drain, args=(conn,), daemon=True).start()

    @staticmethod
    def _drain(conn: socket.socket) -> None:
        with suppress(OSError):
            while conn.recv(65536):
                pass

    def stop(self) -> None:
        if self._listener is not None:
            with suppress(OSError):
                self._listener.shutdown(socket.SHUT_RDWR)
            self._listener.close()
            self._listener = None
        with self._lock:
            for conn in self._open:
                with suppress(OSError):
                    conn.shutdown(socket.SHUT_RDWR)
                conn.close()
            self._open.clear()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
