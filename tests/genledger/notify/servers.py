"""Local test servers, each run as its own process: an HTTP receiver and an SMTP sink.

    python servers.py http PORT RECORD.jsonl [PLAN.json]   # PLAN: {"/path": [500, 500]}
    python servers.py smtp PORT RECORD.jsonl

A plan's entry is a status, or a fault: "slow" sends the status line one byte every 3 s,
"silent" accepts the request and never answers, 301/302/307/308 answer with a Location on the
same server (`/moved`). Every request (method and status answered included) or mail is appended
to RECORD as one JSON line, before the answer starts.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

_lock = threading.Lock()


def _record(path: Path, entry: dict) -> None:
    with _lock, path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(entry) + "\n")


SLOW_BYTE_S = 3.0


def serve_http(port: int, record: Path, plan: dict[str, list[int | str]]) -> None:
    """Answer requests with the planned statuses or faults first, then 200; record everything."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            with _lock:
                queue = plan.get(self.path, [])
                status = queue.pop(0) if queue else 200
            entry = {"method": self.command, "path": self.path, "status": status}
            _record(record, {**entry, "body": body.decode()})
            if status == "silent":
                time.sleep(3600)
            if status == "slow":
                for byte in b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok":
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                    time.sleep(SLOW_BYTE_S)
                return
            assert isinstance(status, int)
            self.send_response(status)
            if 300 <= status < 400:
                self.send_header("Location", f"http://127.0.0.1:{port}/moved")
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        do_GET = do_POST

        def log_message(self, *args: object) -> None:
            pass

    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()


def serve_smtp(port: int, record: Path) -> None:
    """An aiosmtpd sink that records every message."""
    import time

    from aiosmtpd.controller import Controller

    class Handler:
        async def handle_DATA(self, server, session, envelope):  # type: ignore[no-untyped-def]
            content = envelope.content
            text = content.decode() if isinstance(content, bytes) else str(content)
            _record(record, {"from": envelope.mail_from, "to": envelope.rcpt_tos, "data": text})
            return "250 OK"

    controller = Controller(Handler(), hostname="127.0.0.1", port=port)
    controller.start()
    while True:
        time.sleep(3600)


def free_port() -> int:
    """A port nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Server:
    """A running test server and the JSONL file it records to."""

    port: int
    record: Path
    process: subprocess.Popen[bytes]

    def url(self, path: str = "/") -> str:
        """An http URL on this server."""
        return f"http://127.0.0.1:{self.port}{path}"

    def received(self) -> list[dict[str, Any]]:
        """Everything recorded so far."""
        if not self.record.exists():
            return []
        return [json.loads(line) for line in self.record.read_text().splitlines() if line]

    def accepted(self, path: str) -> list[dict[str, Any]]:
        """JSON bodies of the requests to `path` answered with 200."""
        return [
            json.loads(r["body"])
            for r in self.received()
            if r["path"] == path and r["status"] == 200 and r.get("method", "POST") == "POST"
        ]


def start(kind: str, tmp: Path, plan: dict[str, list[int | str]] | None) -> Server:
    port = free_port()
    record = tmp / f"{kind}-{port}.jsonl"
    args = [sys.executable, str(Path(__file__)), kind, str(port), str(record)]
    if plan is not None:
        plan_file = tmp / f"plan-{port}.json"
        plan_file.write_text(json.dumps(plan))
        args.append(str(plan_file))
    process = subprocess.Popen(args, start_new_session=True)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return Server(port, record, process)
        except OSError:
            time.sleep(0.05)
    os.killpg(process.pid, signal.SIGKILL)
    raise RuntimeError(f"{kind} test server did not start")


def stop(server: Server) -> None:
    """Stop the server's process group by its pid."""
    os.killpg(server.process.pid, signal.SIGTERM)
    server.process.wait(timeout=10)


if __name__ == "__main__":
    kind, port_text, record_path = sys.argv[1:4]
    plan = json.loads(Path(sys.argv[4]).read_text()) if len(sys.argv) > 4 else {}
    if kind == "http":
        serve_http(int(port_text), Path(record_path), plan)
    else:
        serve_smtp(int(port_text), Path(record_path))
