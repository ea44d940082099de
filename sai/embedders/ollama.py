"""The Ollama embedder: the official client's `/api/embed`, batched, retried, errors translated."""

from __future__ import annotations

import functools
import ipaddress
import logging
import ssl
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import httpx
import numpy as np
import ollama

from sai.embedders.base import PREFIXES, normalize
from sai.errors import EmbedderError
from sai.models import PrefixStyle

# What a call to the client can raise: the client turns refused connections into the builtin
# ConnectionError and HTTP errors into ResponseError; other transport failures (timeouts, dropped
# connections) surface as httpx errors; a 200 that is not an embed response fails validation
# (pydantic's ValidationError and JSONDecodeError are both ValueErrors).
_CLIENT_ERRORS = (ollama.ResponseError, ConnectionError, httpx.TransportError, ValueError)
log = logging.getLogger(__name__)
_wait = time.sleep  # between attempts (a test records the schedule through it)
# Transport failures worth another attempt: Ollama may be starting or still loading the model.
_TRANSIENT = (
    ConnectionError, httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError
)


@functools.cache
def _tls() -> ssl.SSLContext:
    """httpx's verifying TLS context, built once a process: building one reads the CA bundle (60-80 ms),
    and each thread's client would build its own."""
    return httpx.create_ssl_context()


class OllamaEmbedder:
    """Vectors from a model served by Ollama, through the official `ollama` client."""

    name = "ollama"
    with_chunks = False
    served = True

    def __init__(
        self,
        *,
        model: str,
        url: str,
        timeout_s: float,
        batch_size: int,
        prefix_style: PrefixStyle,
        parallel: int = 4,
        retries: int = 3,
        backoff_s: float = 0.5,
    ) -> None:
        if batch_size <= 0 or parallel <= 0:
            raise ValueError(f"batch_size and parallel must be positive, got {batch_size}, {parallel}")
        self.model = model
        self.url = url
        self.timeout_s = timeout_s
        self.batch_size = batch_size
        self.parallel = parallel
        self.prefix_style = prefix_style
        self.retries = retries
        self.backoff_s = backoff_s
        self._passage_prefix, self._query_prefix = PREFIXES[prefix_style]
        self._local = threading.local()  # one client (one connection pool) per thread
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        self._dimension: int | None = None
        self._elsewhere: bool | None = None  # runs_elsewhere(), once known

    @property
    def _client(self) -> ollama.Client:
        client = getattr(self._local, "client", None)
        if client is None:
            client = self._local.client = ollama.Client(host=self.url, timeout=self.timeout_s, verify=_tls())
        return client

    @property
    def dimension(self) -> int | None:
        """Vector length, known after the first embedding (None before)."""
        return self._dimension

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors (n, d) for stored chunks or code snippets (passage prefix)."""
        inputs = [self._passage_prefix + text for text in texts]
        if not inputs:
            return np.zeros((0, self._dimension or 0), dtype=np.float32)
        slices = [inputs[start : start + self.batch_size] for start in range(0, len(inputs), self.batch_size)]
        if len(slices) == 1 or self.parallel == 1:
            return np.concatenate([self._embed_batch(batch) for batch in slices])
        # Up to `parallel` requests in flight: the server works on one while this side sends
        # the next and parses the last answer (what Ollama's OLLAMA_NUM_PARALLEL slots serve).
        return np.concatenate(list(self._executor().map(self._embed_batch, slices)))

    def _executor(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=self.parallel, thread_name_prefix="sai-ollama")
            return self._pool

    def embed_query(self, text: str) -> np.ndarray:
        """One vector (d,) for a search query (query prefix)."""
        return self._embed_batch([self._query_prefix + text])[0]

    def _embed_batch(self, inputs: list[str]) -> np.ndarray:
        response = self._request_with_retries(inputs)
        vectors = list(response.embeddings)
        if len(vectors) != len(inputs):
            raise EmbedderError(
                f"Ollama at {self.url} returned {len(vectors)} vectors for {len(inputs)} inputs "
                f"with model '{self.model}'; upgrade Ollama or choose another model"
            )
        dims = {len(vector) for vector in vectors}
        with self._lock:
            if self._dimension is not None:
                dims.add(self._dimension)
            if len(dims) != 1 or 0 in dims:
                raise EmbedderError(
                    f"Ollama model '{self.model}' returned vectors of inconsistent dimensions "
                    f"{sorted(dims)}; check that '{self.model}' is an embedding model"
                )
            self._dimension = dims.pop()
        return normalize(np.asarray(vectors, dtype=np.float32))

    def _request_with_retries(self, inputs: list[str]) -> ollama.EmbedResponse:
        attempt = 0
        while True:
            try:
                return self._embed_call(inputs)
            except _CLIENT_ERRORS as exc:
                if attempt >= self.retries or not _is_transient(exc):
                    raise self._translate(exc, attempts=attempt + 1) from exc
            _wait(self.backoff_s * 2**attempt)
            attempt += 1

    def runs_elsewhere(self) -> bool:
        """A server on another host, or one whose model sits in a GPU's memory (`/api/ps`'s
        `size_vram`, asked once; a model not loaded yet is loaded by one short embedding first).
        False when the server cannot say: its model may share this machine's cores, where embedding
        beside the indexer's first stage made the first answer later (docs/design.md, "Incremental
        indexing"). A server in a container of this machine counts as another host."""
        if self._elsewhere is None:  # two threads asking at once both ask the server: harmless
            self._elsewhere = not _is_loopback(self.url) or self._in_gpu_memory()
        return self._elsewhere

    def _in_gpu_memory(self) -> bool:
        try:
            vram = self._vram()
            if vram is None:  # not loaded: one short embedding loads it
                self._embed_batch([self._passage_prefix + "load"])
                vram = self._vram()
        except (*_CLIENT_ERRORS, EmbedderError) as exc:
            log.debug("Ollama at %s did not say where its model runs: %r", self.url, exc)
            return False
        return (vram or 0) > 0

    def _vram(self) -> int | None:
        """The model's bytes in GPU memory by `/api/ps`; None when it is not loaded."""
        for loaded in self._client.ps().models:
            if _tagged(loaded.model or loaded.name or "") == _tagged(self.model):
                return int(loaded.size_vram or 0)
        return None

    def _embed_call(self, inputs: list[str]) -> ollama.EmbedResponse:
        """`Client.embed`, its answer read by pydantic-core's JSON parser: the client's own
        `json.loads` and model build took 19 s of this process's CPU (and GIL) per 72k vectors of
        768 floats, this 3.5 s (docs/design.md, "Incremental indexing"). The same request through
        the client's own `_request_raw` (its errors as `embed`'s); a client without it gets `embed`."""
        request = getattr(self._client, "_request_raw", None)
        if request is None:
            return self._client.embed(model=self.model, input=inputs, truncate=True)
        response = request("POST", "/api/embed", json={"model": self.model, "input": inputs, "truncate": True})
        return ollama.EmbedResponse.model_validate_json(response.content)

    def _translate(self, exc: Exception, *, attempts: int) -> EmbedderError:
        """One sentence naming what failed and the fix, for an error from the client."""
        if isinstance(exc, ConnectionError | httpx.ConnectError | httpx.ConnectTimeout):
            return EmbedderError(f"cannot reach Ollama at {self.url} — is `ollama serve` running?")
        if isinstance(exc, httpx.TimeoutException):
            return EmbedderError(
                f"Ollama at {self.url} did not answer within {self.timeout_s:g}s "
                f"({attempts} attempts); raise ollama.timeout_s or lower ollama.batch_size"
            )
        if isinstance(exc, httpx.TransportError):
            return EmbedderError(
                f"the connection to Ollama at {self.url} failed ({exc.__class__.__name__}: "
                f"{exc}); check ollama.url and the `ollama serve` log"
            )
        if isinstance(exc, ollama.ResponseError):
            return self._translate_response(exc, attempts=attempts)
        return EmbedderError(
            f"Ollama at {self.url} sent a response that is not an embedding "
            f"({exc.__class__.__name__}); check that ollama.url points at an Ollama server"
        )

    def _translate_response(self, exc: ollama.ResponseError, *, attempts: int) -> EmbedderError:
        status, reason = exc.status_code, str(exc.error).strip()
        # A 404 without the word "model" comes from a server that is not Ollama ("404 page not
        # found"): telling the user to pull the model would send them the wrong way.
        lowered = reason.lower()
        if "model" in lowered and (status == 404 or "not found" in lowered):
            return EmbedderError(
                f"model '{self.model}' is not available in Ollama — run `ollama pull {self.model}`"
            )
        if status == 404:
            return EmbedderError(
                f"{self.url} answered 404 ({reason}) to an embed request; "
                "check that ollama.url points at an Ollama server"
            )
        if status >= 500 or status == 429:
            return EmbedderError(
                f"Ollama at {self.url} failed with status {status} ({reason}) after {attempts} "
                "attempts; check the `ollama serve` log and retry"
            )
        return EmbedderError(
            f"Ollama at {self.url} rejected the embed request for model '{self.model}' with "
            f"status {status} ({reason}); check that '{self.model}' is an embedding model"
        )


def _is_transient(exc: Exception) -> bool:
    if isinstance(exc, ollama.ResponseError):
        return exc.status_code >= 500 or exc.status_code == 429
    return isinstance(exc, _TRANSIENT)


def _is_loopback(url: str) -> bool:
    """Whether the server's address is this machine (a name that is not an address: `localhost` only)."""
    host = (httpx.URL(url if "://" in url else f"http://{url}").host or "localhost").strip("[]")
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host == "localhost"
    return address.is_loopback or address.is_unspecified


def _tagged(model: str) -> str:
    """Ollama's name of a model: `name` is `name:latest`."""
    return model if ":" in model else f"{model}:latest"
