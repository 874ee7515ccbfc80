"""Writes capture files in the format of docs/profile.md, as `cutune profile` leaves them under
`.cutune/captures/`, so that the CLI's reading of captures is tested without a GPU."""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from pathlib import Path

MAGIC = b"cutune capture\n\0"
VERSION = 1


@dataclass
class Buffer:
    before: bytes
    after: bytes


def write_capture(path: Path, kernel: str, grid: tuple[int, int, int], block: tuple[int, int, int], args: list[bytes | Buffer], shared_bytes: int = 0) -> None:
    """`args` in the kernel's order: a scalar's bytes, or a buffer's bytes before and after."""
    blobs = bytearray()
    params = []
    offset = 0
    for index, arg in enumerate(args):
        if isinstance(arg, Buffer):
            base = 0x7F00_0000_0000 + (index << 32)
            ranges = []
            for data in (arg.before, arg.after):
                ranges.append({"offset": len(blobs), "len": len(data)})
                blobs += data
            buffer = {"allocation_base": base, "allocation_bytes": len(arg.before), "bytes": len(arg.before), "before": ranges[0], "after": ranges[1]}
            value = struct.pack("<Q", base)
        else:
            buffer, value = None, arg
        offset = (offset + len(value) - 1) // len(value) * len(value)
        params.append({"offset": offset, "size": len(value), "value": value.hex(), "buffer": buffer})
        offset += len(value)
    header = json.dumps({"kernel": kernel, "grid": list(grid), "block": list(block), "shared_bytes": shared_bytes, "params": params, "buffers_omitted": None, "seconds": 0.01}).encode()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(MAGIC + struct.pack("<I", VERSION) + bytes(blobs) + header + struct.pack("<Q", len(header)))


def floats(count: int, value: float) -> bytes:
    return struct.pack(f"<{count}f", *([value] * count))
