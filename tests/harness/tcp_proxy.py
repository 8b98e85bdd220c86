"""A TCP proxy on 127.0.0.1 in front of a real server, for faults the server will not make on
demand: an outage (the listener goes away and every connection drops, then it listens again on the
same port) and slowness (every chunk a client sends is held for a while first, so each request of
a keep-alive HTTP connection is answered that much later)."""

from __future__ import annotations

import socket
import threading
import time


class TcpProxy:
    """Forwards 127.0.0.1:port to ``target`` (host, port); ``delay`` seconds before each chunk a
    client sends is passed on (read at each chunk: set it to change open connections too)."""

    def __init__(self, target: tuple[str, int], delay: float = 0.0) -> None:
        self.target = target
        self.delay = delay
        probe = socket.socket()
        probe.bind(("127.0.0.1", 0))
        self.port = probe.getsockname()[1]
        probe.close()
        self._up = threading.Event()
        self._stop = threading.Event()
        self._connections: list[socket.socket] = []
        self._lock = threading.Lock()
        self._listener: socket.socket | None = None
        self._listen()
        threading.Thread(target=self._accept_loop, daemon=True, name="tcp-proxy").start()

    def _listen(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        listener.settimeout(0.2)
        self._listener = listener
        self._up.set()

    def _accept_loop(self) -> None:
        while not self._stop.is_set():
            if not self._up.is_set():
                time.sleep(0.1)
                continue
            try:
                client, _ = self._listener.accept()
            except (socket.timeout, OSError):
                continue
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            with self._lock:
                self._connections += [client, upstream]
            for source, sink, delayed in ((client, upstream, True), (upstream, client, False)):
                threading.Thread(target=self._pipe, args=(source, sink, delayed),
                                 daemon=True).start()

    def _pipe(self, source: socket.socket, sink: socket.socket, delayed: bool) -> None:
        try:
            while data := source.recv(65536):
                if delayed and self.delay:
                    time.sleep(self.delay)
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for s in (source, sink):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def outage(self, seconds: float) -> None:
        """Refuses and drops every connection for ``seconds``, then listens again."""
        self._up.clear()
        self._listener.close()
        with self._lock:
            for connection in self._connections:
                try:
                    connection.close()
                except OSError:
                    pass
            self._connections.clear()
        time.sleep(seconds)
        self._listen()

    def close(self) -> None:
        self._stop.set()
        self._up.clear()
        if self._listener is not None:
            self._listener.close()
