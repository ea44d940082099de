"""The project root and the paths below it: made absolute, symlinks resolved, one error per way
a root cannot serve."""

from __future__ import annotations

import errno
import os
from pathlib import Path

from sai.errors import ConfigError


def project_root(base: Path, root: str, where: str) -> Path:
    """`root` resolved against `base`: an existing directory this process can list."""
    try:
        resolved = resolve_path(base / root)
    except ValueError:  # an embedded NUL byte
        raise ConfigError(f"project root {root!r} contains a NUL byte; fix `root` ({where})") from None
    except OSError as exc:
        raise ConfigError(f"project root {root} cannot be resolved ({_reason(exc)}); "
                          f"fix `root` ({where})") from None
    if not resolved.is_dir():
        raise ConfigError(f"project root {resolved} is not a directory; fix `root` ({where})")
    try:
        os.scandir(resolved).close()
    except OSError as exc:
        raise ConfigError(f"project root {resolved} cannot be read ({exc.strerror}); "
                          f"fix its permissions or `root` ({where})") from None
    return resolved


def _reason(exc: OSError) -> str:
    return "a symlink loop" if exc.errno == errno.ELOOP else str(exc.strerror or exc)


def resolve_path(path: Path) -> Path:
    """`path` made absolute with its symlinks resolved, as Path.resolve() does, except that a
    symlink loop raises OSError(ELOOP) on every Python (Python 3.13's resolve() hands a looping
    path back unresolved, older ones raise RuntimeError); a NUL byte raises ValueError."""
    try:
        return path.resolve(strict=True)
    except FileNotFoundError:
        return path.resolve()  # a path that does not exist (yet) is fine
    except RuntimeError as exc:
        raise OSError(errno.ELOOP, "symlink loop", str(path)) from exc
