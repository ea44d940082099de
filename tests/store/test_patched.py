"""Rows read whole plus a patch (store/patched.py), as the row table (duckdb/chunkrows.py) and the
shape signatures (store/shapes.py) use it: a patch never copies the rows read whole, and a
look-up answers as the rows read whole at the patch's token would."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from sai.store.duckdb.chunkrows import Rows, RowTable
from sai.store.shapes import ShapeTable, Signatures
from sai.text import shape


def _rows(ids: list[int], tag: str) -> Rows:
    return Rows.of(pa.table({"id": pa.array(ids, pa.int64()), "symbol": [f"{tag}{i}" for i in ids]}))


def _symbols(table: RowTable, ids: list[int]) -> list[str]:
    return table.rows(ids, lambda t: t.column("symbol").to_pylist())  # type: ignore[arg-type, return-value]


def test_patches_drop_removed_rows_and_answer_rewritten_ids_from_the_latest_write() -> None:
    whole = RowTable(token="t1", base=_rows([1, 2, 3, 4, 5], "a"))
    once = whole.patched("t2", np.array([2, 4]), _rows([4, 7], "b"))  # 2 removed, 4 written again, 7 new
    twice = once.patched("t3", np.array([7, 3]), _rows([7], "c"))  # 3 removed, 7 written again
    assert _symbols(whole, [5, 2, 4]) == ["a5", "a2", "a4"]
    assert _symbols(once, [7, 2, 4, 1]) == ["b7", "b4", "a1"]
    assert _symbols(twice, [7, 3, 4, 5, 1]) == ["c7", "b4", "a5", "a1"]
    assert (len(whole), len(once), len(twice)) == (5, 5, 4)
    assert twice.patch_rows == 3 + 2  # 2, 3 and 4 of the rows read whole, 4 and 7 written since
    assert twice.base is whole.base and twice.token == "t3"  # the rows read whole are never copied


def _by_id(ids: np.ndarray, sims: np.ndarray) -> dict[int, float]:
    return dict(zip(ids.tolist(), sims.tolist(), strict=True))


def _code(k: int) -> str:
    body = "".join(f"    if x > {i}:\n        y = y * {i} + x\n" for i in range(k + 2))
    return f"def f(x):\n    y = 0\n{body}    return y\n"


def test_shape_signatures_patched_answer_as_signatures_read_whole() -> None:
    blobs: list[bytes | None] = [shape.signature(_code(k), "python") for k in range(6)]
    whole = ShapeTable.of_blobs("t1", np.arange(1, 7), blobs)
    later: list[bytes | None] = [shape.signature(_code(9), "python")]
    patched = whole.patched("t2", np.array([2, 3]), Signatures.of_blobs(np.array([3]), later))
    read_whole = ShapeTable.of_blobs("t2", np.array([1, 3, 4, 5, 6]), [blobs[0], later[0], *blobs[3:]])
    wanted = np.arange(0, 8)
    for got, expected in zip(patched.of(wanted), read_whole.of(wanted), strict=True):
        assert np.array_equal(got, expected)
    sig = read_whole.of(np.array([3]))[0][0]
    assert _by_id(*patched.alike(sig, 0.5)) == _by_id(*read_whole.alike(sig, 0.5))
    assert len(patched) == len(read_whole) == 5
