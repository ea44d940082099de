"""Near-duplicate code: token shapes, edges between chunks and clusters."""
