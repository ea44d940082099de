"""The one qdrant-client object a QdrantStore holds, and the translation of its errors.

Every call goes through `Client.call`, which turns what the client raises (a server that is down
or slow, a refused API key, an answer that is not Qdrant's JSON, a local directory held by
another process) into a one-line StoreError naming the server's URL and the fix. What a server
says is quoted redacted (sai/errors.py `redact`): never the key, even when the server echoes it.

The client is made on first use, so a command that never touches the index never connects.
Local mode (qdrant-client's own storage, `path`) is not thread-safe: its calls are serialised.
"""

from __future__ import annotations

import contextlib
import json
import math
import threading
import warnings
from pathlib import Path
from typing import Any

import grpc
import httpx
from qdrant_client import QdrantClient, models
from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

from sai.errors import StoreError, StoreLockedError, redact

_FIX_URL = "start the server or fix qdrant.url (QDRANT_URL)"
_FIX_KEY = "set qdrant.api_key (QDRANT_API_KEY) to a key the server accepts"
_FIX_PORT = "check that qdrant.url (QDRANT_URL) is the Qdrant server's HTTP port (6333), not a proxy or another service"


class Client:
    """A lazily made QdrantClient: a server (`url`) or local mode (`path`)."""

    def __init__(
        self, *, url: str | None, api_key: str | None, path: Path | None, timeout_s: float, prefer_grpc: bool
    ) -> None:
        self.url, self.path = url, path
        self._secrets = (api_key,)  # hidden from every message (redact)
        self.where = url if url is not None else str(path)
        self.api_key, self.timeout, self.prefer_grpc = api_key, max(1, math.ceil(timeout_s)), prefer_grpc
        self._client: QdrantClient | None = None
        self._lock = threading.RLock()

    @property
    def local(self) -> bool:
        return self.path is not None

    def _make(self) -> QdrantClient:
        if self.path is not None:
            try:
                return QdrantClient(path=str(self.path), force_disable_check_same_thread=True)
            except RuntimeError as exc:  # another process holds the directory's lock
                raise StoreLockedError(
                    f"the local Qdrant index {self.path} is open in another process, and local mode is "
                    "single-process; stop that process or use a Qdrant server (qdrant.url)"
                ) from exc
        with warnings.catch_warnings():
            # "Api key is used with an insecure connection": said once in docs/team-index.md instead
            warnings.simplefilter("ignore", UserWarning)
            try:
                return QdrantClient(url=self.url, api_key=self.api_key, timeout=self.timeout,
                                    prefer_grpc=self.prefer_grpc, check_compatibility=False)
            except ValueError as exc:  # an unknown scheme, a bad port (urllib3's LocationParseError)
                raise StoreError(f"qdrant.url {self.url} is not a URL of a Qdrant server ({self._quoted(str(exc))}); "
                                 "give one such as http://localhost:6333") from None

    def call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """`client.<method>(*args, **kwargs)`, its errors as one-line StoreErrors."""
        with self._lock if self.local else contextlib.nullcontext():
            try:
                if self._client is None:
                    self._client = self._make()
                return getattr(self._client, method)(*args, **kwargs)
            except (ResponseHandlingException, httpx.HTTPError) as exc:
                raise self._unreachable(exc) from None
            except UnexpectedResponse as exc:
                raise self._refused(exc.status_code, exc.content) from None
            except grpc.RpcError as exc:
                raise self._grpc_error(exc) from None
            except (ValueError, RuntimeError, AssertionError) as exc:  # local: a bad request; a server: not JSON
                if not self.local:  # the client asserts what the JSON holds, too
                    raise self._not_qdrant("not JSON" if isinstance(exc, ValueError) else "JSON of another shape"
                                           ) from None
                if isinstance(exc, AssertionError):
                    raise
                raise StoreError(f"the local Qdrant index {self.path} failed: {self._quoted(str(exc))}; "
                                 "rebuild it with `sai --recreate` if it keeps failing") from exc

    def _quoted(self, content: bytes | str) -> str:
        """The first line of what the server or client said, without any secret."""
        return redact(_first_line(content), self._secrets)

    def _not_qdrant(self, what: str) -> StoreError:
        return StoreError(f"the server at {self.url} answered with something that is not Qdrant's API "
                          f"({what}); {_FIX_PORT}")

    def _unreachable(self, exc: Exception) -> StoreError:
        source = getattr(exc, "source", exc)
        if isinstance(source, ValueError):  # pydantic's ValidationError
            return self._not_qdrant("JSON of another shape")
        if isinstance(source, httpx.TimeoutException):
            return StoreError(f"the Qdrant server at {self.url} did not answer within {self.timeout}s; "
                              f"check it is healthy or raise qdrant.timeout_s")
        return StoreError(f"cannot reach the Qdrant server at {self.url} ({type(source).__name__}); {_FIX_URL}")

    def _refused(self, status: int | None, content: bytes) -> StoreError:
        if status in (401, 403):
            return StoreError(f"the Qdrant server at {self.url} refused the API key (HTTP {status}); {_FIX_KEY}")
        if not _is_json(content):  # an error page of something else at that address
            return self._not_qdrant(f"HTTP {status}: {self._quoted(content)}")
        return StoreError(f"the Qdrant server at {self.url} answered HTTP {status}: {self._quoted(content)}; "
                          "check the server's version and logs")

    def _grpc_error(self, exc: grpc.RpcError) -> StoreError:
        code = exc.code() if hasattr(exc, "code") else None
        if code in (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED):
            return StoreError(f"the Qdrant server at {self.url} refused the API key ({code.name}); {_FIX_KEY}")
        if code == grpc.StatusCode.DEADLINE_EXCEEDED:
            return StoreError(f"the Qdrant server at {self.url} did not answer in time; raise qdrant.timeout_s")
        name = code.name if code is not None else "gRPC error"
        return StoreError(f"cannot use the Qdrant server at {self.url} over gRPC ({name}); {_FIX_URL}")

    def exact_params(self) -> models.SearchParams | None:
        """Exact search on a server; local mode always scans exactly (and warns about params)."""
        return None if self.local else models.SearchParams(exact=True)

    def index_field(self, collection: str, field: str) -> None:
        """A keyword payload index (a server's; local mode has none and warns about them)."""
        if not self.local:
            self.call("create_payload_index", collection, field_name=field,
                      field_schema=models.PayloadSchemaType.KEYWORD)

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                client, self._client = self._client, None
                client.close()


def _is_json(content: bytes) -> bool:
    try:
        json.loads(content)
    except ValueError:  # UnicodeDecodeError included
        return False
    return True


def _first_line(content: bytes | str) -> str:
    text = content.decode("utf-8", "replace") if isinstance(content, bytes) else content
    return text.strip().splitlines()[0][:200] if text.strip() else "no detail"
