"""What the API measures of an image or a PDF, read from its bytes: an image's size in pixels from its
PNG, JPEG, GIF or WebP header, a PDF's number of pages.

No imaging library: the headers are a few bytes at known places (a JPEG's size is in its first
start-of-frame segment, after any EXIF data), and a PDF's pages are counted from its page objects.
``ctxkit doctor`` reads these against the limits of :mod:`ctxkit.api_rules`.
"""
from __future__ import annotations

import base64
import binascii
import re
import struct


def decode_base64(data: str) -> bytes | None:
    """The bytes of a base64 string, or None when it is not base64."""
    try:
        return base64.b64decode(data, validate=False)
    except (binascii.Error, ValueError):
        return None


def image_size(raw: bytes) -> tuple[int, int] | None:
    """(width, height) in pixels of a PNG, JPEG, GIF or WebP image; None for another format or a
    header too short to tell."""
    if raw[:8] == b"\x89PNG\r\n\x1a\n" and len(raw) >= 24 and raw[12:16] == b"IHDR":
        return struct.unpack(">II", raw[16:24])
    if raw[:6] in (b"GIF87a", b"GIF89a") and len(raw) >= 10:
        return struct.unpack("<HH", raw[6:10])
    if raw[:4] == b"RIFF" and raw[8:12] == b"WEBP" and len(raw) >= 30:
        return _webp_size(raw)
    if raw[:2] == b"\xff\xd8":
        return _jpeg_size(raw)
    return None


def _webp_size(raw: bytes) -> tuple[int, int] | None:
    chunk = raw[12:16]
    if chunk == b"VP8X":  # extended: 24-bit width-1, height-1
        w = int.from_bytes(raw[24:27], "little") + 1
        h = int.from_bytes(raw[27:30], "little") + 1
        return w, h
    if chunk == b"VP8 " and raw[23:26] == b"\x9d\x01\x2a":  # lossy: 14-bit sizes after the start code
        w, h = struct.unpack("<HH", raw[26:30])
        return w & 0x3FFF, h & 0x3FFF
    if chunk == b"VP8L" and raw[20:21] == b"\x2f":  # lossless: 14-bit width-1, height-1 packed
        bits = int.from_bytes(raw[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    return None


#: JPEG start-of-frame markers (baseline, progressive, lossless...; not DHT C4, JPG C8, DAC CC)
_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}


def _jpeg_size(raw: bytes) -> tuple[int, int] | None:
    i, n = 2, len(raw)
    while i + 4 <= n:
        if raw[i] != 0xFF:
            return None
        marker = raw[i + 1]
        if marker == 0xFF:  # fill byte
            i += 1
            continue
        if marker in (0x01, *range(0xD0, 0xD8)):  # markers without a length
            i += 2
            continue
        length = int.from_bytes(raw[i + 2:i + 4], "big")
        if marker in _SOF and i + 9 <= n:
            h, w = struct.unpack(">HH", raw[i + 5:i + 9])
            return w, h
        if marker == 0xDA:  # start of scan before any frame header: not a JPEG we can read
            return None
        i += 2 + length
    return None


_PAGE = re.compile(rb"/Type\s*/Page(?![A-Za-z])")
_PAGES_COUNT = re.compile(rb"/Type\s*/Pages\b[^>]*?/Count\s+(\d+)|/Count\s+(\d+)[^>]*?/Type\s*/Pages\b")


def pdf_pages(raw: bytes) -> int | None:
    """The number of pages of a PDF: the largest ``/Count`` of its page tree, or (for a file whose page
    tree is in compressed object streams) its page objects counted; None when it is not a PDF."""
    if not raw.startswith(b"%PDF"):
        return None
    counts = [int(a or b) for a, b in _PAGES_COUNT.findall(raw)]
    return max(counts) if counts else len(_PAGE.findall(raw))
