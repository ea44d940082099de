"""Vendored code: another project's sources kept inside this one (a copied library, a submodule).

SAI indexes it (a definition there is still found by `sai symbol`, a glob still reaches it) and
search ranks it down unless the question names it (sai/query/ranking/signals.py, `vendored`):
a question about the project is rarely about the library it bundles. A directory below the root
is vendored when
- its name is one projects give such code (VENDOR_DIR_NAMES: `vendor`, `third_party`, `deps`, …);
- git keeps it as a submodule (a `path =` line of the root's `.gitmodules`);
- or it holds a licence file of its own (LICENSE, COPYING, …) whose text is not the root's, years
  and spacing aside: a monorepo's packages repeat the root's licence, a copied library brings its
  authors'. Without a licence at the root this rule says nothing.
Only the outermost such directory is named. The walk (source/files.py) finds the candidates as
it lists directories, so recognising costs one read per licence file below the root.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping

from sai.source.languages import DEFAULT_EXTS, ext_of

META_KEY = "vendored"  # the index meta key of the vendored directories the last walk found, one a line
VENDOR_DIR_NAMES = frozenset({
    "vendor", "vendored", "vendors", "third_party", "third-party", "thirdparty", "3rdparty", "third-parties",
    "external", "externals", "extern", "deps", "bower_components",
})
_LICENCE = re.compile(r"^([\w.]*[._-])?(licen[cs]e|copying|unlicen[cs]e)s?([._-][\w.-]*)?$", re.IGNORECASE)
_YEARS = re.compile(r"\b(19|20)\d\d\b(\s*[-–,]\s*((19|20)\d\d|present)\b)*", re.IGNORECASE)
_LICENCE_BYTES = 64 * 1024


def is_licence(name: str) -> bool:
    """Whether a file name is a licence file's (`LICENSE`, `LICENSE-MIT`, `COPYING.LIB`,
    `ICU-license.html`), not a source file that happens to be named so (`license.py`)."""
    lower = name.lower()
    if "licen" not in lower and "copying" not in lower:  # the walk asks this of every file name: cheap first
        return False
    return _LICENCE.match(name) is not None and ext_of(name) not in DEFAULT_EXTS


def licence_key(text: str) -> str:
    """A licence's text as compared: lower case, years and runs of spacing taken out."""
    return " ".join(_YEARS.sub(" ", text.lower()).split())


def vendored_dirs(
    root: str, *, named: Iterable[str], licensed: Mapping[str, list[str]], submodules: Iterable[str] = (),
) -> tuple[str, ...]:
    """The outermost vendored directories (keys), sorted.

    `named`: directory keys whose name is in VENDOR_DIR_NAMES; `licensed`: directory key -> the
    names of its licence files ("" for the root); `submodules`: the paths `.gitmodules` names.
    """
    found = set(named) | {s.strip("/") for s in submodules if s.strip("/")}
    own = _licence_keys(root, "", licensed.get("", []))
    if own:
        for key, names in licensed.items():
            if key and not (_licence_keys(root, key, names) & own):
                found.add(key)
    return tuple(sorted(k for k in found if not any(k.startswith(f"{o}/") for o in found if o != k)))


def submodule_paths(root: str) -> list[str]:
    """The `path = …` entries of the root's `.gitmodules` ([] without one)."""
    text = _read(os.path.join(root, ".gitmodules"))
    return re.findall(r"^\s*path\s*=\s*(.+?)\s*$", text, flags=re.MULTILINE)


def from_meta(meta: Mapping[str, str]) -> tuple[str, ...]:
    """The vendored directories an index recorded (META_KEY)."""
    return tuple(d for d in meta.get(META_KEY, "").split("\n") if d)


def under(key: str, dirs: Iterable[str]) -> str | None:
    """The vendored directory holding `key`, or None."""
    return next((d for d in dirs if key.startswith(f"{d}/")), None)


def _licence_keys(root: str, dir_key: str, names: list[str]) -> set[str]:
    keys = {licence_key(_read(os.path.join(root, dir_key, name))) for name in names}
    return {k for k in keys if k}


def _read(path: str) -> str:
    try:
        with open(path, "rb") as handle:
            return handle.read(_LICENCE_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return ""
