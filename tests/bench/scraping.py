"""Reading an exporter's /metrics the way Prometheus asks for it, and the samples in it.

``scrape`` reads a whole answer (gzip accepted), as a Prometheus scrape does.
``exposition_blocks`` reads one as it arrives, so a reader can stop once it knows enough: the
freshness probe asks every 50 ms, and reading a 400 MB exposition whole that often would
measure the bench, not the exporter.
"""

from __future__ import annotations

import contextlib
import gzip
import http.client
import re
import time
import urllib.request
import zlib
from collections.abc import Iterator

_SAMPLE = re.compile(rb'^(\w+)\{([^}]*)\} (\S+)$', re.MULTILINE)
_LABEL = re.compile(rb'(\w+)="((?:[^"\\]|\\.)*)"')


def scrape(port: int) -> tuple[float, bytes, int]:
    """One /metrics answer as Prometheus asks for it: (seconds, plain text, bytes sent)."""
    request = urllib.request.Request(f"http://127.0.0.1:{port}/metrics",
                                     headers={"Accept-Encoding": "gzip"})
    started = time.perf_counter()
    with urllib.request.urlopen(request, timeout=600) as answer:
        body = answer.read()
        elapsed = time.perf_counter() - started
        sent = len(body)
        if answer.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
    return elapsed, body, sent


@contextlib.contextmanager
def exposition_blocks(port: int, timeout: float = 60.0) -> Iterator[Iterator[bytes]]:
    """One /metrics answer (gzip accepted) as blocks of whole lines, inflated as they arrive.

    Leaving the context closes the connection: what was not read is never sent in full.
    """
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        connection.request("GET", "/metrics", headers={"Accept-Encoding": "gzip"})
        answer = connection.getresponse()
        inflate = (zlib.decompressobj(16 + zlib.MAX_WBITS)
                   if answer.getheader("Content-Encoding") == "gzip" else None)

        def blocks() -> Iterator[bytes]:
            # Each block starts with a newline, so every line in it is found as b"\n" + name.
            # The first read is small: a reader that wants only the first lines must not
            # inflate 30 MB of text (1 MB of gzip) to get them.
            tail = b"\n"
            size = 16 << 10
            while chunk := answer.read1(size):
                size = 1 << 20
                text = tail + (inflate.decompress(chunk) if inflate else chunk)
                cut = text.rfind(b"\n")
                tail = text[cut:]
                yield text[:cut + 1]
            if len(tail) > 1:
                yield tail + b"\n"

        yield blocks()
    finally:
        connection.close()


def values_in(block: bytes, names: list[str], found: dict[str, float]) -> None:
    """Adds to ``found`` the first value of each of ``names`` (labelled or not) in a block
    from ``exposition_blocks``; a plain find per name, quick enough for 400 MB of text."""
    for name in names:
        if name in found:
            continue
        for start in (block.find(b"\n" + name.encode() + b" "),
                      block.find(b"\n" + name.encode() + b"{")):
            if start >= 0:
                line = block[start + 1:block.index(b"\n", start + 1)]
                found[name] = float(line.rsplit(b" ", 1)[1])
                break


def samples(body: bytes, name: str) -> list[tuple[dict[str, str], float]]:
    """Every sample of ``name`` in an exposition, with its labels."""
    found = []
    for match in _SAMPLE.finditer(body):
        if match.group(1).decode() != name:
            continue
        labels = {k.decode(): v.decode() for k, v in _LABEL.findall(match.group(2))}
        found.append((labels, float(match.group(3))))
    return found


def first_value(body: bytes, name: str) -> float | None:
    match = re.search(rb"^" + name.encode() + rb"(?:\{[^}]*\})? (\S+)$", body, re.MULTILINE)
    return float(match.group(1)) if match else None


def series_count(body: bytes) -> int:
    return sum(1 for line in body.split(b"\n") if line and not line.startswith(b"#"))
