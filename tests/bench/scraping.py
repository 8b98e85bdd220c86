"""Reading an exporter's /metrics the way Prometheus asks for it, and the samples in it.

``scrape`` reads a whole answer (gzip accepted), as a Prometheus scrape does. ``read_head``
reads only as far as a few named samples, inflating the gzip stream as it arrives and closing
the connection once they are found: the freshness probe asks every 50 ms, and reading a
400 MB exposition whole that often would measure the bench, not the exporter.
"""

from __future__ import annotations

import gzip
import http.client
import re
import time
import urllib.request
import zlib

_SAMPLE = re.compile(rb'^(\w+)\{([^}]*)\} (\S+)$', re.MULTILINE)
_LABEL = re.compile(rb'(\w+)="((?:[^"\\]|\\.)*)"')
# How far read_head reads before it gives up on a name: the health families are rendered
# before the group series, within the first few kilobytes.
HEAD_LIMIT = 4 << 20


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


def read_head(port: int, names: list[str], timeout: float = 10.0) -> dict[str, float]:
    """The first value of each of ``names`` (unlabelled or not), reading no further than needed.

    Names not found within HEAD_LIMIT bytes of text are left out of the answer.
    """
    pattern = re.compile(rb"^(" + b"|".join(re.escape(n.encode()) for n in names) +
                         rb")(?:\{[^}]*\})? (\S+)$", re.MULTILINE)
    found: dict[str, float] = {}
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        connection.request("GET", "/metrics", headers={"Accept-Encoding": "gzip"})
        answer = connection.getresponse()
        inflate = (zlib.decompressobj(16 + zlib.MAX_WBITS)
                   if answer.getheader("Content-Encoding") == "gzip" else None)
        text = b""
        scanned = 0
        while len(found) < len(names) and len(text) < HEAD_LIMIT:
            chunk = answer.read1(65536)
            if not chunk:
                break
            text += inflate.decompress(chunk) if inflate else chunk
            # Only whole lines: a value cut by the chunk's end would read as another number.
            lines_end = text.rfind(b"\n") + 1
            for match in pattern.finditer(text, scanned, lines_end):
                found.setdefault(match.group(1).decode(), float(match.group(2)))
            scanned = max(scanned, lines_end)
    finally:
        connection.close()
    return found


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
