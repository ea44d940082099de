"""What SAI reads from text: code-aware terms for BM25 (lexical), token shapes and keywords for
near-duplicate search (shape, keywords). Pure functions, used when indexing and when asking."""
