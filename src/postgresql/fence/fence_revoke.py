"""Revokes a leader's lease through etcd's JSON gateway, on the standard library alone.

Imported once a term is armed (a leader's fence only, fence_term.py), and written on a plain socket:
`http.client` took 40-60 ms to import (its e-mail parser) at the moment a replica waits for the lease to go;
TLS's module is imported only for an https endpoint. Revoking deletes the leader key and the member key
attached to it, so every replica's watch fires at once. A lease that is already gone counts as revoked: the term
ended either way.
"""
from __future__ import annotations

import json
import socket
import time
from urllib.parse import urlsplit

TYPE_CHECKING = False
if TYPE_CHECKING:
    import ssl
    from collections.abc import Mapping

    from fence_protocol import TermRelease, TermReleaseAuth, TermReleaseTls

# One request's deadline; the fence tries each endpoint in turn within its overall budget.
REQUEST_TIMEOUT_S = 1.0
# etcd's answers to a revoke or an authentication are a few hundred bytes.
MAX_RESPONSE_BYTES = 65536


def revoke_lease(release: TermRelease, budget_ms: float) -> tuple[bool, str]:
    """Returns (revoked, detail)."""
    deadline = time.monotonic() + budget_ms / 1000.0
    lease_id = str(release.get('leaseId'))
    failures: list[str] = []
    while time.monotonic() < deadline:
        for endpoint in release.get('endpoints') or []:
            if time.monotonic() >= deadline:
                break
            try:
                auth = release.get('auth')
                token = _authenticate(endpoint, auth, release) if auth else None
                status, body = _post(endpoint, '/v3/lease/revoke', {'ID': lease_id}, release, token)
                if status == 200:
                    return True, 'lease %s revoked through %s' % (lease_id, endpoint)
                if 'requested lease not found' in body:
                    return True, 'lease %s was already gone (%s)' % (lease_id, endpoint)
                failures.append('%s: HTTP %d %s' % (endpoint, status, body[:200]))
            except Exception as error:  # noqa: BLE001 - every failure is reported, then the next endpoint is tried
                failures.append('%s: %s' % (endpoint, error))
        time.sleep(0.1)
    return False, 'lease %s not revoked within %d ms: %s' % (lease_id, budget_ms, '; '.join(failures[-3:]))


def _authenticate(endpoint: str, auth: TermReleaseAuth, release: TermRelease) -> str:
    credentials = {'name': auth.get('username'), 'password': auth.get('password')}
    status, body = _post(endpoint, '/v3/auth/authenticate', credentials, release, None)
    answer: object = json.loads(body) if status == 200 else None
    token = answer.get('token') if isinstance(answer, dict) else None
    if not isinstance(token, str) or not token:
        raise RuntimeError('etcd refused user %s: HTTP %d' % (auth.get('username'), status))
    return token


def _post(
    endpoint: str, path: str, body: Mapping[str, object], release: TermRelease, token: str | None
) -> tuple[int, str]:
    """One HTTP/1.0 POST on a socket of its own: etcd's gateway answers with the whole body and closes."""
    url = urlsplit(endpoint)
    host = url.hostname or ''
    https = url.scheme == 'https'
    payload = json.dumps(body).encode()
    head = ['POST %s HTTP/1.0' % (url.path.rstrip('/') + path), 'Host: %s' % url.netloc,
            'Content-Type: application/json', 'Content-Length: %d' % len(payload)]
    if token:
        head.append('Authorization: %s' % token)
    connection = socket.create_connection((host, url.port or (443 if https else 80)), timeout=REQUEST_TIMEOUT_S)
    try:
        if https:
            connection = _tls_context(release.get('tls') or {}).wrap_socket(connection, server_hostname=host)
        connection.sendall(('\r\n'.join(head) + '\r\n\r\n').encode() + payload)
        return _parse_response(_read_bounded(connection))
    finally:
        connection.close()


def _read_bounded(connection: socket.socket) -> bytes:
    received = b''
    while len(received) < MAX_RESPONSE_BYTES:
        chunk = connection.recv(MAX_RESPONSE_BYTES - len(received))
        if not chunk:
            break
        received += chunk
    return received


def _parse_response(response: bytes) -> tuple[int, str]:
    """(status, body) of a raw HTTP/1.x answer; ValueError when it is not one."""
    head, _, body = response.partition(b'\r\n\r\n')
    status_line = head.split(b'\r\n', 1)[0].split(b' ')
    if len(status_line) < 2 or not status_line[0].startswith(b'HTTP/1.') or not status_line[1].isdigit():
        raise ValueError('not an HTTP answer: %r' % response[:80])
    return int(status_line[1]), body[:4096].decode('utf-8', 'replace')


def _tls_context(tls: TermReleaseTls) -> ssl.SSLContext:
    import ssl  # only a TLS etcd pays for it, and only once a term ends

    context = ssl.create_default_context(cafile=tls.get('cacert'))
    cert = tls.get('cert')
    if cert:
        context.load_cert_chain(cert, tls.get('key'))
    return context
