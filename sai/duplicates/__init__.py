"""Near-duplicate code: find_duplicates (clusters.py), its candidate edges (pairs.py, edges.py) and units."""
