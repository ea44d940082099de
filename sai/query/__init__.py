"""Answers: search, similar code, status and look-ups over a store."""
