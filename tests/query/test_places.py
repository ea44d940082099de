"""One place per hit in hybrid search: a container and its member, a unit's windows and
near-identical copies in other files fold into the best-ranked of them; declarations rank for
questions about types. On the Ollama stand-in (hashed bag-of-words vectors: identical texts
score 1.0)."""

from __future__ import annotations

import json

from fixtures_tree import index_held, index_tree, run_cli

from sai.query import search

ACCESSOR = '''def read_timeout_setting(settings):
    value = settings.get("read_timeout")
    if value is None:
        return DEFAULT_READ_TIMEOUT
    return float(value)
'''
CLASS = '''class TimeoutSettings:
    """Timeout settings of a client."""

    def read_timeout_setting(self, settings):
        value = settings.get("read_timeout")
        if value is None:
            return self.default_read_timeout
        return float(value)

    def connect_timeout(self):
        return self.connect
'''
OTHER = '''def parse_timeout_header(header):
    seconds, _, unit = header.partition(" ")
    return float(seconds) * (60 if unit == "min" else 1), unit
'''
TYPES = '''export interface TimeoutOptions {
  read: number;
  connect: number;
}
'''
IMPL = '''export function applyTimeoutOptions(client, options) {
  client.read = options.read;
  client.connect = options.connect;
  return client;
}
'''


def test_copies_in_sibling_modules_fold_into_one_hit_and_free_its_slots(tmp_path, ollama_server, capsys):
    tree = {"a/settings.py": ACCESSOR, "b/settings.py": ACCESSOR, "c/settings.py": ACCESSOR, "d/headers.py": OTHER}
    project = index_tree(tmp_path, ollama_server.url, tree)
    try:
        hits = search.search(project, "read timeout setting value", limit=2)
    finally:
        project.close()
    assert [h.path for h in hits] == ["a/settings.py", "d/headers.py"]
    assert hits[0].copies is not None and [c.path for c in hits[0].copies] == ["b/settings.py", "c/settings.py"]
    assert hits[1].copies is None
    code, out, _ = run_cli(capsys, "--root", str(tmp_path), "--query", "read timeout setting value", "--query-only",
                           "--limit", "2", "--json")
    assert code == 0
    first = json.loads(out)["hits"][0]
    assert [c["path"] for c in first["copies"]] == ["b/settings.py", "c/settings.py"]
    code, out, _ = run_cli(capsys, "--root", str(tmp_path), "--query", "read timeout setting value", "--query-only",
                           "--limit", "2")
    assert "      copies: b/settings.py:1-5, c/settings.py:1-5" in out


def test_a_class_head_and_its_method_are_one_place_and_a_sibling_method_another(tmp_path, ollama_server):
    project = index_held(tmp_path, ollama_server.url, {"client/timeouts.py": CLASS, "d/headers.py": OTHER})
    try:
        every = search.search(project, "timeout settings read timeout setting connect", limit=5, mode="lexical",
                              group_by="chunk")
        folded = search.search(project, "timeout settings read timeout setting connect", limit=5, group_by="chunk")
        by_file = search.search(project, "timeout settings read timeout setting connect", limit=5)
    finally:
        project.close()
    symbols = {h.symbol for h in every}  # unfolded: the class head (lines 1-2) and both methods
    assert {"TimeoutSettings", "TimeoutSettings.read_timeout_setting", "TimeoutSettings.connect_timeout"} <= symbols
    ours = [h for h in folded if h.path == "client/timeouts.py"]
    assert len(ours) == 2  # the class with the member folded into it, and the sibling method
    lead = ours[0]
    assert lead.chunks is not None and len(lead.chunks) == 1  # the one folded in; the hit's own lines are its own
    assert (lead.chunks[0].start_line, lead.chunks[0].end_line) != (lead.start_line, lead.end_line)
    assert "TimeoutSettings" in {lead.symbol, lead.chunks[0].symbol}
    assert {lead.symbol, lead.chunks[0].symbol, ours[1].symbol} == {
        "TimeoutSettings", "TimeoutSettings.read_timeout_setting", "TimeoutSettings.connect_timeout"}
    # by file (the default), the file is one hit: its best chunk, the other two listed with it
    ours = [h for h in by_file if h.path == "client/timeouts.py"]
    assert len(ours) == 1 and ours[0].chunks is not None and len(ours[0].chunks) == 2
    assert {ours[0].symbol, *(c.symbol for c in ours[0].chunks)} == {
        "TimeoutSettings", "TimeoutSettings.read_timeout_setting", "TimeoutSettings.connect_timeout"}


def test_a_question_about_types_ranks_the_declaration_first(tmp_path, ollama_server):
    tree = {"src/types.d.ts": TYPES, "src/apply.js": IMPL}
    project = index_held(tmp_path, ollama_server.url, tree, ext=["ts", "js"])
    try:
        about_types = search.search(project, "timeout options type for read and connect", limit=2, explain=True)
        about_code = search.search(project, "apply timeout options read connect to the client", limit=2)
    finally:
        project.close()
    assert about_types[0].path == "src/types.d.ts"
    assert about_types[0].explain is not None and about_types[0].explain.signals is not None
    assert about_types[0].explain.signals.declares > 0
    assert about_code[0].path == "src/apply.js"
