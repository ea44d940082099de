"""Index runs: read, chunk, embed and write files; refresh, sync and watch."""
