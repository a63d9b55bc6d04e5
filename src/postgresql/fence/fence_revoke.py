"""Revokes a leader's lease through etcd's JSON gateway, on the standard library alone.

Imported only when the fence ends a term: the HTTP and TLS modules would cost every fence memory for a
moment that rarely comes. Revoking deletes the leader key and the member key attached to it, so every
replica's watch fires at once. A lease that is already gone counts as revoked: the term ended either way.
"""
from __future__ import annotations

import http.client
import json
import ssl
import time
from urllib.parse import urlsplit

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

    from fence_protocol import TermRelease, TermReleaseAuth, TermReleaseTls

# One request's deadline; the fence tries each endpoint in turn within its overall budget.
REQUEST_TIMEOUT_S = 1.0


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
    url = urlsplit(endpoint)
    host = url.hostname or ''
    connection: http.client.HTTPConnection
    if url.scheme == 'https':
        tls_context = _tls_context(release.get('tls') or {})
        connection = http.client.HTTPSConnection(host, url.port or 443, timeout=REQUEST_TIMEOUT_S, context=tls_context)
    else:
        connection = http.client.HTTPConnection(host, url.port or 80, timeout=REQUEST_TIMEOUT_S)
    headers = {'content-type': 'application/json'}
    if token:
        headers['authorization'] = token
    try:
        connection.request('POST', url.path.rstrip('/') + path, json.dumps(body), headers)
        response = connection.getresponse()
        return response.status, response.read(4096).decode('utf-8', 'replace')
    finally:
        connection.close()


def _tls_context(tls: TermReleaseTls) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=tls.get('cacert'))
    cert = tls.get('cert')
    if cert:
        context.load_cert_chain(cert, tls.get('key'))
    return context
