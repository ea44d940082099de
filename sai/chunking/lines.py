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
    longer than the budget becomes a window of its own (the embedder truncates it).
    """
    out: list[Numbered] = []
    start = 0
    while start < len(lines):
        end, size = start, 0
        while end < len(lines) and end - start < max_lines:
            cost = len(lines[end][1].encode("utf-8")) + 1
            if end > start and size + cost > max_bytes:
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
