"""The dashboard served by uvicorn on a free loopback port, in a thread of the test process."""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

from dreamrsi.web.app import create_app
from dreamrsi.web.server import DashboardServer, config_for


class Served:
    """``create_app(store)`` listening on 127.0.0.1 (``url``) until :meth:`stop`."""

    def __init__(self, store: Path, token: str | None = None) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        app = create_app(store, token=token)
        self.server = DashboardServer(app, config_for(app))
        self.thread = threading.Thread(target=self.server.run,
                                       kwargs={"sockets": [self.sock]}, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the dashboard did not start")
            time.sleep(0.02)

    def stop(self) -> None:
        self.server.stop()
        self.thread.join(10)
        self.sock.close()
