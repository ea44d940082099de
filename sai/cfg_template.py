"""The commented sai-cfg.yml that `sai init` writes (the same text as the repo's sai-cfg.yml)."""

TEMPLATE = """\
# sai-cfg.yml — configuration of SAI (semantic code search). Every key is optional: the values
# below are the defaults. Precedence: command-line flag > environment > this file > default.
# Reference: docs/configuration.md

backend: duckdb            # duckdb (a file in the project) or qdrant (a server or local directory: qdrant:)
embedder: ollama           # ollama (an Ollama server) or local (bundled all-MiniLM-L6-v2, offline)
# model: nomic-embed-text  # default: nomic-embed-text (ollama), all-MiniLM-L6-v2 (local)
# vector_dim: 768          # default: detected from the first embedding; if set, must match
collection: source_code    # table name: ^[A-Za-z_][A-Za-z0-9_]*$
root: .                    # directory to index, relative to this file
# ext: [py, js, ts]        # default: every language SAI knows (py js jsx ts tsx go rs java c h cpp cs rb php kt ...)
chunker: ast               # ast (tree-sitter units, line fallback) or lines (60-line windows)
max_chunk_chars: 2000      # byte budget of one chunk
prefix_style: auto         # auto, nomic, e5, qwen or none (query/passage prefixes)
exclude_dirs: []           # added to the always-pruned .git node_modules dist build target .next
                           # coverage .turbo __pycache__ .venv venv .index
include: []                # globs on the root-relative path; non-empty = allow-list
exclude: []                # globs on the root-relative path; exclude wins over include
respect_gitignore: true    # honour .gitignore files (nested) and .git/info/exclude
max_file_bytes: 1048576    # larger files are skipped (too-large)
skip_generated_marker: true   # skip files whose first 600 bytes say "do not edit", "@generated", ...
strip_comments: false      # blank C-style comments before chunking (line numbers kept)
honor_noindex_marker: true    # drop chunks containing sai-noindexing
honor_noduplicate_marker: true  # chunks containing sai-noduplicate never join duplicate clusters

duckdb:
  path: .index/code.duckdb   # relative to the project root
  lock_timeout_s: 30         # how long to wait for another process holding the index file

# used by backend: qdrant (docs/team-index.md)
qdrant:
  # url: http://localhost:6333   # a server or cluster; default: $QDRANT_URL
  # api_key: team-read-key       # default: $QDRANT_API_KEY; never printed
  # path: .index/qdrant          # local mode: no server, one process; wins over url
  timeout_s: 10              # per request to the server
  prefer_grpc: false         # talk gRPC (port 6334) instead of HTTP

ollama:
  # url: http://localhost:11434   # default: $OLLAMA_HOST or http://localhost:11434
  # model: nomic-embed-text       # accepted for compatibility; must not contradict `model`
  timeout_s: 60              # per request; transient failures are retried with backoff
  batch_size: 32
  parallel: 4                # requests in flight (Ollama's OLLAMA_NUM_PARALLEL is 4 or 1 by memory)

similarity:
  # find_similar_min_score: 0.85   # default depends on the model (0.70 for all-MiniLM-L6-v2)
  # duplicate_min_score: 0.80      # cosine and token shape; depends on the model (0.75 for all-MiniLM-L6-v2)
  duplicate_min_cluster_size: 2
  duplicate_metric: duplicate    # duplicate (cosine and token shape) or cosine (the original's plain cosine)
  top_k: 10
"""
