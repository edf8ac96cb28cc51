"""One writer per deployment (docs/scaling.md): the writer holds a lease in Qdrant's system
collection, renewed every RENEW_S; a second writer that finds it held and fresh is refused at
start. A writer that dies leaves a lease that lapses after LEASE_S; one closed cleanly gives it
back at once."""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable

from rag_api.errors import AnotherWriter, RagError
from rag_api.store.system import SystemDocs

log = logging.getLogger("rag_api.replicas.lease")
KIND, KEY = "lease", "writer"
LEASE_S = 10.0
RENEW_S = 3.0
SETTLE_S = 0.2  # two writers starting together: the later put wins, the other sees it and stops


class WriterLease:
    def __init__(self, docs: SystemDocs, clock: Callable[[], float] = time.time) -> None:
        self.docs = docs
        self.clock = clock
        self.holder = {
            "id": uuid.uuid4().hex,
            "host": socket.gethostname(),
            "pid": os.getpid(),
        }
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.lapsed = False  # taken from a writer that died holding it (not given back)

    def take(self) -> WriterLease:
        """Hold the lease, or raise AnotherWriter naming who holds it. With Qdrant unreachable
        now, the lease is taken when it answers (a hub whose store is down writes nothing)."""
        try:
            self.lapsed = self._refuse_if_held()
            self._renew()
            time.sleep(SETTLE_S)
            self._refuse_if_held()
        except AnotherWriter:
            raise
        except RagError as exc:
            log.warning("the writer's lease is taken when Qdrant answers: %s", exc.message)
        self._thread = threading.Thread(target=self._keep, name="rag-writer-lease", daemon=True)
        self._thread.start()
        return self

    def _refuse_if_held(self) -> bool:
        """Raise AnotherWriter while another holds it; True when another held it and lapsed."""
        held = self.docs.get(KIND, KEY)
        if held is None or held.get("id") == self.holder["id"]:
            return False
        age = self.clock() - float(held.get("renewed", 0))
        if age < LEASE_S:
            raise AnotherWriter(
                f"another writer holds this deployment ({held.get('host')}, pid {held.get('pid')}, "
                f"renewed {age:.0f} s ago): one writer per deployment. Stop it, or start this hub "
                f"as RAG_ROLE=reader; a writer that died lets go after {LEASE_S:.0f} s"
            )
        return True

    def _renew(self) -> None:
        self.docs.put(KIND, KEY, self.holder | {"renewed": self.clock()})

    def _keep(self) -> None:
        while not self._stop.wait(RENEW_S):
            try:
                self._refuse_if_held()
                self._renew()
            except AnotherWriter as exc:  # never taken back from a live holder
                log.error("two writers on this deployment; stop one: %s", exc.message)
            except RagError as exc:
                log.warning("the writer's lease was not renewed: %s", exc.message)

    def release(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        try:
            held = self.docs.get(KIND, KEY)
            if held is not None and held.get("id") == self.holder["id"]:
                self.docs.delete(KIND, KEY)
        except RagError as exc:
            log.warning("the writer's lease was not given back (it lapses): %s", exc.message)
