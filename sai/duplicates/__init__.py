"""Near-duplicate code: find_duplicates (clusters.py), its candidate edges (pairs.py) and units.

The edges' records and union-find (edges.py), the duplicate score and which cosine pass runs
(score.py), the exact tiled pass (exact.py) and the bucketed one (buckets.py)."""
