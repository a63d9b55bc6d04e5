"""One agent's connection to the fence: newline-delimited JSON both ways, never blocking the fence.

A frozen agent stops reading; its messages then wait in this channel's buffer, not in a blocked send.
"""
from __future__ import annotations

import json
import selectors
import socket
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from fence_loop import Loop

# An agent's messages are a few hundred bytes: a line longer than this is not an agent's.
MAX_LINE_BYTES = 1 << 20


def encode(message: Mapping[str, object]) -> bytes:
    return (json.dumps(message, separators=(',', ':')) + '\n').encode()


class Channel:
    def __init__(
        self,
        loop: Loop,
        sock: socket.socket,
        on_message: Callable[[object], None],
        on_bad_line: Callable[[str], None],
        on_close: Callable[[Channel], None],
    ) -> None:
        self._loop = loop
        self._sock = sock
        self._on_message = on_message
        self._on_bad_line = on_bad_line
        self._on_close = on_close
        self._received = b''
        self._outgoing = bytearray()
        self._ending = False
        self._write_shut = False
        self._watching = selectors.EVENT_READ
        self.closed = False
        sock.setblocking(False)
        loop.selector.register(sock, self._watching, self._ready)

    def send(self, message: Mapping[str, object]) -> None:
        if self.closed or self._ending:
            return
        self._outgoing += encode(message)
        self._flush()

    def end(self, message: Mapping[str, object]) -> None:
        """Sends a last message, then closes this side for writing; the agent closes its side once it has read it."""
        if self.closed or self._ending:
            return
        self._outgoing += encode(message)
        self._ending = True
        self._flush()

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self._loop.selector.unregister(self._sock)
        self._sock.close()
        self._on_close(self)

    def _ready(self, mask: int) -> None:
        if mask & selectors.EVENT_WRITE:
            self._flush()
        if mask & selectors.EVENT_READ and not self.closed:
            self._read()

    def _read(self) -> None:
        try:
            data = self._sock.recv(65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self.close()
            return
        if not data:
            self.close()
            return
        self._received += data
        while not self.closed:
            newline = self._received.find(b'\n')
            if newline < 0:
                break
            line = self._received[:newline].strip()
            self._received = self._received[newline + 1:]
            if line:
                self._deliver(line)
        if len(self._received) > MAX_LINE_BYTES:
            self._on_bad_line('%d bytes without a newline: disconnected' % len(self._received))
            self.close()

    def _deliver(self, line: bytes) -> None:
        text = line.decode('utf-8', 'replace')
        try:
            message: object = json.loads(text)
        except ValueError:
            self._on_bad_line(text[:200])
            return
        self._on_message(message)

    def _flush(self) -> None:
        if self.closed:
            return
        if self._outgoing:
            try:
                sent = self._sock.send(self._outgoing)
                del self._outgoing[:sent]
            except (BlockingIOError, InterruptedError):
                pass
            except OSError:
                self.close()
                return
        if self._ending and not self._outgoing and not self._write_shut:
            self._write_shut = True
            try:
                self._sock.shutdown(socket.SHUT_WR)
            except OSError:
                pass
        wanted = selectors.EVENT_READ | (selectors.EVENT_WRITE if self._outgoing else 0)
        if wanted != self._watching:
            self._watching = wanted
            self._loop.selector.modify(self._sock, wanted, self._ready)


def another_fence_answers(socket_path: str) -> bool:
    """True when a live fence greets us on the socket (one that is already exiting hangs up without a hello)."""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(1.0)
    try:
        probe.connect(socket_path)
        received = b''
        until = time.monotonic() + 1.0
        while b'\n' not in received and time.monotonic() < until:
            chunk = probe.recv(4096)
            if not chunk:
                return False
            received += chunk
        hello: object = json.loads(received.split(b'\n', 1)[0])
        return isinstance(hello, dict) and hello.get('event') == 'hello'
    except (OSError, ValueError):
        return False
    finally:
        probe.close()
