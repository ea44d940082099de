"""The vocabulary of failures SAI reports. Each message is one sentence with the fix."""


class SaiError(Exception):
    """A problem the user can act on; front ends print it as one line."""


class ConfigError(SaiError):
    """The configuration file, an environment variable or a flag is invalid."""


class UsageError(SaiError):
    """A call's arguments are wrong or missing (CLI exit 2, MCP -32602)."""


class OutsideRootError(SaiError):
    """A path points outside the project root."""


class NotFoundError(SaiError):
    """The requested chunk or location is not in the index."""


class EmbedderError(SaiError):
    """The embedding model could not be reached, loaded or run."""


class StoreError(SaiError):
    """The index file could not be opened, read or written."""


class StoreLockedError(StoreError):
    """Another process held the index file for longer than the wait allows."""


class StoreCorruptError(StoreError):
    """The index file is damaged; only rebuilding it helps."""


class IndexMismatchError(StoreError):
    """The index was built with another model, dimension, chunker or schema."""


class ReadOnlyError(UsageError):
    """A write was asked of a read-only server."""


class GlobError(UsageError):
    """A glob (`path_glob`, `include`, `exclude`) cannot be read; `reason` says why."""

    def __init__(self, pattern: str, reason: str) -> None:
        super().__init__(f"invalid path_glob: {pattern}: {reason}")
        self.pattern = pattern
        self.reason = reason
