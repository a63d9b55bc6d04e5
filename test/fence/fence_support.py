"""What the fence's unit tests share: the fence's modules on the path, a scratch state directory, a stand-in
`postgres`, and a fence run on its own loop until it exits."""
from __future__ import annotations

import json
import os
import signal
import socket
import stat
import sys
import tempfile
import time
import unittest
from collections.abc import Callable
from pathlib import Path

FENCE_DIR = Path(__file__).resolve().parents[2] / 'src' / 'postgresql' / 'fence'
sys.path.insert(0, str(FENCE_DIR))

from fence_loop import Loop  # noqa: E402
from fence_postmaster import Fence  # noqa: E402

TYPE_CHECKING = False
if TYPE_CHECKING:
    from fence_protocol import LaunchOptions

# Far beyond any test's own wait: a fence that never ends fails the test instead of hanging it.
RUN_LIMIT_MS = 15000


class ScratchTestCase(unittest.TestCase):
    """A fresh state directory per test; the fence's signal handlers undone after it."""

    def setUp(self) -> None:
        self._scratch = tempfile.TemporaryDirectory(prefix='fence-test-')
        self.state_dir = Path(self._scratch.name)
        self.log_lines: list[str] = []

    def tearDown(self) -> None:
        signal.set_wakeup_fd(-1)
        for signum in (signal.SIGCHLD, signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(signum, signal.SIG_DFL)
        self._scratch.cleanup()

    def log(self, message: str) -> None:
        self.log_lines.append(message)

    def assert_logged(self, fragment: str) -> None:
        if not any(fragment in line for line in self.log_lines):
            self.fail('no log line contains %r; the fence logged:\n%s' % (fragment, '\n'.join(self.log_lines)))


def fake_postgres(directory: Path) -> str:
    """A `postgres` that runs until a signal ends it, as a postmaster would (default signal dispositions)."""
    program = directory / 'fake-postgres'
    program.write_text('#!/bin/sh\nexec sleep 60\n')
    program.chmod(program.stat().st_mode | stat.S_IXUSR)
    return str(program)


def launch_options(state_dir: Path, **extra: object) -> LaunchOptions:
    options: dict[str, object] = {
        'dataDir': str(state_dir), 'binDir': str(state_dir), 'postgres': fake_postgres(state_dir),
        'stateDir': str(state_dir),
    }
    options.update(extra)
    return options  # type: ignore[return-value]


class FenceRun:
    """One fence on its own loop, with an agent connected to it over the real unix socket."""

    def __init__(self, test: ScratchTestCase, **extra_options: object) -> None:
        self.loop = Loop(test.log)
        self.exit_codes: list[int] = []
        self.state_dir = test.state_dir
        self.fence = Fence(self.loop, launch_options(test.state_dir, **extra_options), test.log, self._done)
        self.fence.start()
        self.agent: socket.socket | None = None
        self._received = b''
        self._messages: list[dict[str, object]] = []

    def _done(self, code: int) -> None:
        self.exit_codes.append(code)
        self.loop.stop()

    def connect(self) -> socket.socket:
        agent = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        agent.connect(str(self.state_dir / 'fence.sock'))
        agent.setblocking(False)
        self.agent = agent
        return agent

    def send(self, *requests: object, raw: bytes = b'') -> None:
        assert self.agent is not None
        self.agent.sendall(raw + b''.join(json.dumps(request).encode() + b'\n' for request in requests))

    def run_for(self, ms: float) -> None:
        """Runs the loop for `ms` (or until the fence exits)."""
        if self.exit_codes:
            return
        self.loop._stopped = False
        self.loop.call_later(ms, self.loop.stop)
        self.loop.run()

    def run_until(self, condition: Callable[[], bool], what: str, limit_ms: float = RUN_LIMIT_MS) -> float:
        """Runs the loop in short turns until `condition` holds; returns the ms it took."""
        started = time.monotonic()
        while not condition():
            if (time.monotonic() - started) * 1000 > limit_ms:
                raise AssertionError('not within %d ms: %s' % (limit_ms, what))
            self.run_for(20)
        return (time.monotonic() - started) * 1000

    def run_to_exit(self) -> int:
        """Runs until the fence exits; the agent hangs up once it has read the exit event, as the agent does."""
        def exited() -> bool:
            if self.agent is not None and any(message['event'] == 'exit' for message in self.received()):
                self.agent.close()
                self.agent = None
            return bool(self.exit_codes)

        self.run_until(exited, 'the fence exits')
        return self.exit_codes[0]

    def exit_code_if_any(self) -> int | None:
        return self.exit_codes[0] if self.exit_codes else None

    def received(self) -> list[dict[str, object]]:
        """Every message the agent got so far."""
        while self.agent is not None:
            try:
                chunk = self.agent.recv(65536)
            except BlockingIOError:
                break
            if not chunk:
                break
            self._received += chunk
        *lines, self._received = self._received.split(b'\n')
        self._messages += [json.loads(line) for line in lines if line.strip()]
        return self._messages

    def exit_record(self) -> dict[str, object]:
        """postmaster-exit.json, as the agent reads it."""
        record: dict[str, object] = json.loads((self.state_dir / 'postmaster-exit.json').read_text())
        return record

    def journal(self) -> list[dict[str, object]]:
        path = self.state_dir / 'fence-journal.jsonl'
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines()]

    def postmaster_runs(self) -> bool:
        pid = self.fence._postmaster_pid
        try:
            os.kill(pid, 0)
        except OSError:
            return False
        with open('/proc/%d/stat' % pid) as stat_file:
            return stat_file.read().rsplit(')', 1)[1].split()[0] != 'Z'

    def close(self) -> None:
        """Ends what the test left running: the postmaster, and the sockets a fence that exits leaves to the OS."""
        if self.agent is not None:
            self.agent.close()
        if self.fence.runs_postmaster:
            os.kill(self.fence._postmaster_pid, signal.SIGKILL)
            os.waitpid(self.fence._postmaster_pid, 0)
        for channel in list(self.fence._clients):
            channel.close()
        if self.fence._server is not None:
            self.fence._server.close()
        self.loop.selector.close()
        signal.set_wakeup_fd(-1)
        os.close(self.loop._wakeup_read)
        os.close(self.loop._wakeup_write)
