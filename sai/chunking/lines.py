"""Line windows: the `lines` chunker, and the splitter every chunker uses for big pieces."""

from __future__ import annotations

from sai.chunking.base import split_lines
from sai.models import Chunk

MAX_LINES = 60
OVERLAP = 8

Numbered = list[tuple[int, str]]  # (1-based line number, line text)


def windows(
    lines: Numbered, *, max_bytes: int, max_lines: int = MAX_LINES, overlap: int = OVERLAP
) -> list[Numbered]:
    """Cut numbered lines into windows of <= max_lines lines and <= max_bytes UTF-8 bytes.

    Consecutive windows share `overlap` lines; whitespace-only windows are dropped. A single line
    longer than the budget is first cut into pieces of at most max_bytes bytes, each keeping the
    line's number and making a window of its own (a minified file is one long line).
    """
    split = [_line_pieces(line, max_bytes) for line in lines]
    alone = {i for i, is_piece in enumerate(_positions(split)) if is_piece}
    lines = [piece for pieces in split for piece in pieces]
    out: list[Numbered] = []
    start = 0
    while start < len(lines):
        end, size = start, 0
        while end < len(lines) and end - start < max_lines:
            cost = len(lines[end][1].encode("utf-8")) + 1
            if end > start and (size + cost > max_bytes or end in alone or end - 1 in alone):
                break
            size += cost
            end += 1
        window = lines[start:end]
        if any(text.strip() for _, text in window):
            out.append(window)
        if end >= len(lines):
            break
        start = max(end - overlap, start + 1)
    return out


def _positions(split: list[Numbered]) -> list[bool]:
    """For each line after splitting: whether it is a piece of a longer line."""
    return [len(pieces) > 1 for pieces in split for _ in pieces]


def _line_pieces(line: tuple[int, str], max_bytes: int) -> Numbered:
    """The line itself, or pieces of at most max_bytes UTF-8 bytes cut between characters."""
    number, text = line
    data = text.encode("utf-8")
    if len(data) <= max_bytes:
        return [line]
    pieces: Numbered = []
    start = 0
    while start < len(data):
        end = min(start + max_bytes, len(data))
        while start < end < len(data) and data[end] & 0xC0 == 0x80:  # inside a character
            end -= 1
        if end == start:  # a budget smaller than one character: take the character whole
            end = start + 1
            while end < len(data) and data[end] & 0xC0 == 0x80:
                end += 1
        pieces.append((number, data[start:end].decode("utf-8")))
        start = end
    return pieces


def window_chunks(
    key: str,
    lines: Numbered,
    *,
    max_bytes: int,
    symbol: str | None = None,
    language: str | None = None,
) -> list[Chunk]:
    """Chunks for numbered lines, trimmed of blank edge lines, split by `windows`."""
    while lines and not lines[0][1].strip():
        lines = lines[1:]
    while lines and not lines[-1][1].strip():
        lines = lines[:-1]
    return [
        Chunk(
            path=key,
            start_line=w[0][0],
            end_line=w[-1][0],
            text="\n".join(text for _, text in w),
            symbol=symbol,
            language=language,
        )
        for w in windows(lines, max_bytes=max_bytes)
    ]


class LineChunker:
    name = "lines"

    def __init__(self, *, max_chunk_chars: int = 2000) -> None:
        self.max_chunk_chars = max_chunk_chars

    def chunk(self, key: str, text: str, language: str | None) -> list[Chunk]:
        numbered = list(enumerate(split_lines(text), start=1))
        return window_chunks(key, numbered, max_bytes=self.max_chunk_chars, language=language)
