"""Who may write a Qdrant index: one writer at a time, and a dead writer never blocks the next.

Local mode (`qdrant.path`): the writer is on this machine, so it holds an OS lock (flock,
exclusive) on `<path>/sai-writer.lock` for as long as it writes, and writes its host, pid and
start time into the file. The lock dies with its process: a killed writer frees the index at once,
and a lock that is held means a live writer, which a waiting run names.

A server (`qdrant.url`): writers on other machines cannot share an OS lock, so a writer holds the
lock point (point 1 of `<collection>__meta`) as a lease of LEASE_S seconds, taken by a conditional
upsert (only when free, expired or already its own) and read back. A heartbeat thread renews it
every RENEW_S while the session lasts, so a long write never loses it and a killed writer blocks
the next one for at most LEASE_S. The point names its holder (host, pid), so a waiting run says
who holds it and until when. A writer that stalled past its lease (and may have been overtaken)
stops at its next change instead of interleaving with the new holder.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

from qdrant_client import models

from sai.errors import StoreError, StoreLockedError
from sai.store.locks import EXCLUSIVE, FileLock
from sai.store.qdrant import points as qp
from sai.store.qdrant.client import Client

log = logging.getLogger(__name__)
LOCK_ID = 1  # the lock point's id in <collection>__meta (point 0 is the metadata)
LEASE_S = 20.0  # a server writer's lease: how long a killed writer can block the next one
RENEW_S = 5.0  # how often the heartbeat renews it (a few renewals may fail before it runs out)
POLL_S = 0.1  # how often a waiting writer tries again
WRITER_FILE = "sai-writer.lock"

# What a waiting writer raises: (who holds the index, as a phrase) -> the error
Locked = Callable[[str], StoreLockedError]


def this_process() -> str:
    return f"{socket.gethostname()} pid {os.getpid()}"


class LocalLock:
    """The flock on `<path>/sai-writer.lock`: held by a live writer only."""

    def __init__(self, path: Path, *, timeout_s: float, locked: Locked) -> None:
        self.file = path / WRITER_FILE
        self.timeout_s = timeout_s
        self.locked = locked

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        try:
            held = FileLock(self.file, writes=True).take(EXCLUSIVE, timeout_s=self.timeout_s, poll_s=POLL_S)
        except OSError as exc:
            raise StoreError(f"cannot open the writer lock {self.file}: {exc.strerror}; "
                             "check the permissions of qdrant.path") from exc
        if held is None:
            raise self.locked(self._holder())
        try:
            started = datetime.now(UTC).strftime("%H:%M:%S UTC")
            os.ftruncate(held.fd, 0)
            os.pwrite(held.fd, json.dumps({"holder": this_process(), "since": started}).encode(), 0)
            yield
        finally:
            held.release()

    def _holder(self) -> str:
        try:
            held = json.loads(self.file.read_text(encoding="utf-8"))
            return f"{held['holder']} (writing since {held['since']})"
        except (OSError, ValueError, KeyError, TypeError):
            return "another process"


class ServerLease:
    """The lock point of `meta_name` on a server, held as a lease a heartbeat renews."""

    def __init__(
        self, client: Client, meta_name: str, *, timeout_s: float, locked: Locked,
        lease_s: float = LEASE_S, renew_s: float = RENEW_S,
    ) -> None:
        self.client, self.meta_name = client, meta_name
        self.timeout_s, self.locked = timeout_s, locked
        self.lease_s, self.renew_s = lease_s, renew_s
        self.owner = uuid.uuid4().hex
        self.valid_until = 0.0  # monotonic: the lease this writer last renewed runs out then
        self._stop = threading.Event()

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        if not self.client.call("collection_exists", self.meta_name):
            self.client.call("create_collection", self.meta_name, vectors_config={})
        self.client.call("upsert", self.meta_name, [_lock_point("", 0.0)], update_mode=models.UpdateMode.INSERT_ONLY)
        self._take()
        heartbeat = threading.Thread(target=self._renew_until_stopped, name="sai-qdrant-lease", daemon=True)
        heartbeat.start()
        try:
            yield
        finally:
            self._stop.set()
            heartbeat.join()
            self._release()

    def _take(self) -> None:
        deadline = time.monotonic() + self.timeout_s
        while True:
            holder = self.renew()
            if holder is None:
                return
            if time.monotonic() >= deadline:
                raise self.locked(_described(holder))
            time.sleep(POLL_S * 2)

    def renew(self) -> dict | None:
        """Take or renew the lease; None when this writer holds it, else the holder's payload."""
        asked, now = time.monotonic(), time.time()
        free = models.Filter(should=[qp.match("owner", self.owner), qp.match("owner", ""),
                                     models.FieldCondition(key="expires", range=models.Range(lt=now))])
        point = _lock_point(self.owner, now + self.lease_s, holder=this_process())
        self.client.call("upsert", self.meta_name, [point], update_filter=free)
        found = self.client.call("retrieve", self.meta_name, [LOCK_ID], with_payload=True)
        payload = dict(found[0].payload) if found else {}
        if payload.get("owner") != self.owner:
            return payload
        self.valid_until = asked + self.lease_s
        return None

    def check(self) -> None:
        """Before a change: refuse to write once the lease may have passed to another writer."""
        if time.monotonic() < self.valid_until - self.renew_s / 2:
            return
        holder = self.renew()
        if holder is not None:
            raise StoreLockedError(f"this run lost the writer lease of {self.meta_name} to {_described(holder)} "
                                   "after a stall longer than the lease; run it again")

    def _renew_until_stopped(self) -> None:
        while not self._stop.wait(self.renew_s):
            try:
                if self.renew() is not None:
                    return  # overtaken: check() refuses the next change
            except StoreError as exc:  # a blip: the lease outlives a few failed renewals
                log.debug("renewing the writer lease failed: %s", exc)

    def _release(self) -> None:
        with contextlib.suppress(StoreError):  # an unreleased lease runs out by itself
            if self.client.call("collection_exists", self.meta_name):
                self.client.call("upsert", self.meta_name, [_lock_point("", 0.0)],
                                 update_filter=models.Filter(must=[qp.match("owner", self.owner)]))


def _lock_point(owner: str, expires: float, *, holder: str = "") -> models.PointStruct:
    return models.PointStruct(id=LOCK_ID, vector={}, payload={"owner": owner, "expires": expires, "holder": holder})


def _described(payload: dict) -> str:
    """Who holds a lease and until when, for the message of a waiting writer."""
    holder = payload.get("holder") or "another process"
    try:
        until = datetime.fromtimestamp(float(payload["expires"]), UTC).strftime("%H:%M:%S UTC")
    except (KeyError, TypeError, ValueError):
        return holder
    return f"{holder} (its lease runs until {until} unless renewed)"
