"""`cutune lsp` with its progress reports slowed down, for the test that photographs VS Code.

Runs the server named by the first argument and passes every message through unchanged, both
ways, but holds each `$/progress` report back PACE_S seconds: a replay's run takes a fraction of
a second, too short for its progress notification to show before it ends. Nothing else about the
session changes."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

PACE_S = 0.25


def forward_input(server: subprocess.Popen) -> None:
    while chunk := sys.stdin.buffer.read1(65536):
        server.stdin.write(chunk)
        server.stdin.flush()
    server.stdin.close()


def read_message(stream) -> bytes | None:
    """One message, headers included, as it came."""
    headers = b""
    while not headers.endswith(b"\r\n\r\n"):
        byte = stream.read(1)
        if not byte:
            return None
        headers += byte
    length = next(int(line.split(b":")[1]) for line in headers.split(b"\r\n") if line.lower().startswith(b"content-length:"))
    return headers + stream.read(length)


def main() -> int:
    server = subprocess.Popen([sys.argv[1], *sys.argv[2:]], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    threading.Thread(target=forward_input, args=(server,), daemon=True).start()
    while (message := read_message(server.stdout)) is not None:
        if b'"$/progress"' in message and b'"kind":"report"' in message:
            time.sleep(PACE_S)
        sys.stdout.buffer.write(message)
        sys.stdout.buffer.flush()
    return server.wait()


if __name__ == "__main__":
    sys.exit(main())
