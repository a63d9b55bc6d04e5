"""The fence ending a leader's term when no agent can: the grace period, the stop, the lease revoked through a
stand-in for etcd's JSON gateway. Asserted: the journal the next agent records, what etcd was asked."""
from __future__ import annotations

import json
import os
import socket
import sys
import threading
import time
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from fence_support import FenceRun, ScratchTestCase

import fence_revoke
import fence_term


class FakeEtcdGateway:
    """Answers /v3/lease/revoke like etcd's gateway; remembers the lease ids it was asked to revoke."""

    def __init__(self, lease_known: bool = True) -> None:
        revoked: list[str] = []
        self.revoked = revoked

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the name http.server calls
                body = json.loads(self.rfile.read(int(self.headers['content-length'])))
                revoked.append(str(body['ID']))
                status, answer = (200, b'{}') if lease_known else (404, b'{"error":"requested lease not found"}')
                self.send_response(status)
                self.send_header('content-length', str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *_: object) -> None:
                pass

        self._server = ThreadingHTTPServer(('127.0.0.1', 0), Handler)
        self.endpoint = 'http://127.0.0.1:%d' % self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def term(endpoints: list[str], grace_ms: int = 300) -> dict[str, object]:
    return {'agentPid': 1, 'graceMs': grace_ms, 'release': {'endpoints': endpoints, 'leaseId': '7587'}}


class GracePeriod(ScratchTestCase):
    def test_no_agent_within_the_grace_stops_postgres_then_revokes_the_lease(self) -> None:
        etcd = FakeEtcdGateway()
        run = FenceRun(self)
        try:
            run.connect()
            run.send({'op': 'arm', 'deadline': time.time() * 1000 + 60000, 'term': term([etcd.endpoint])})
            run.run_for(100)
            assert run.agent is not None
            run.agent.close()
            run.agent = None
            lost_at = time.monotonic()
            run.run_to_exit()
            self.assertGreaterEqual((time.monotonic() - lost_at) * 1000, 300)
            self.assertEqual([entry['step'] for entry in run.journal()],
                             ['agent_lost', 'stopping_postgres', 'postgres_stopped', 'lease_revoked'])
            self.assertEqual(run.journal()[0]['detail'],
                             'agent 1 disconnected; PostgreSQL stops in 300 ms unless an agent connects')
            self.assertEqual(etcd.revoked, ['7587'])
            # Fast first: the WAL senders hand the replicas every commit.
            self.assertEqual((run.exit_record()['signal'], run.exit_record()['fenced']), ('SIGINT', False))
        finally:
            run.close()
            etcd.close()

    def test_an_agent_back_within_the_grace_keeps_postgres_running(self) -> None:
        run = FenceRun(self)
        try:
            run.connect()
            run.send({'op': 'arm', 'deadline': time.time() * 1000 + 60000, 'term': term(['http://127.0.0.1:9'])})
            run.run_for(100)
            assert run.agent is not None
            run.agent.close()
            run.run_for(100)
            run.connect()
            run.run_for(500)
            self.assertTrue(run.postmaster_runs())
            self.assertEqual([entry['step'] for entry in run.journal()], ['agent_lost', 'agent_back'])
        finally:
            run.close()

    def test_without_a_term_a_lost_agent_changes_nothing(self) -> None:
        run = FenceRun(self)
        try:
            run.connect()
            run.send({'op': 'arm', 'deadline': time.time() * 1000 + 60000})
            run.run_for(100)
            assert run.agent is not None
            run.agent.close()
            run.agent = None
            run.run_for(500)
            self.assertTrue(run.postmaster_runs())
            self.assertEqual(run.journal(), [])
        finally:
            run.close()

    def test_a_lease_already_gone_counts_as_revoked(self) -> None:
        etcd = FakeEtcdGateway(lease_known=False)
        run = FenceRun(self)
        try:
            run.connect()
            run.send({'op': 'arm', 'deadline': time.time() * 1000 + 200, 'term': term([etcd.endpoint], 60000)})
            run.run_to_exit()
            self.assertTrue(run.exit_record()['fenced'])
            steps = run.journal()
            self.assertEqual([entry['step'] for entry in steps], ['postgres_stopped', 'lease_revoked'])
            self.assertIn('(at the fence deadline)', str(steps[0]['detail']))
            self.assertEqual(steps[1]['detail'], 'lease 7587 was already gone (%s)' % etcd.endpoint)
        finally:
            run.close()
            etcd.close()

    def test_an_unreachable_etcd_is_journaled_once_the_budget_is_spent(self) -> None:
        budget = fence_term.REVOKE_BUDGET_MS
        fence_term.REVOKE_BUDGET_MS = 300
        run = FenceRun(self)
        try:
            run.connect()
            run.send({'op': 'arm', 'deadline': time.time() * 1000 + 100, 'term': term(['http://127.0.0.1:9'])})
            run.run_to_exit()
            last = run.journal()[-1]
            self.assertEqual(last['step'], 'lease_revoke_failed')
            self.assertIn('lease 7587 not revoked within 300 ms: http://127.0.0.1:9:', str(last['detail']))
        finally:
            fence_term.REVOKE_BUDGET_MS = budget
            run.close()


class RevokeAnswers(unittest.TestCase):
    def test_an_endpoint_that_answers_no_http_is_reported_and_the_next_one_revokes(self) -> None:
        listener = socket.create_server(('127.0.0.1', 0))
        etcd = FakeEtcdGateway()

        def answer_garbage() -> None:
            connection, _ = listener.accept()
            connection.recv(4096)
            connection.sendall(b'SSH-2.0-OpenSSH\r\n')
            connection.close()

        threading.Thread(target=answer_garbage, daemon=True).start()
        garbage = 'http://127.0.0.1:%d' % listener.getsockname()[1]
        try:
            release = {'endpoints': [garbage, etcd.endpoint], 'leaseId': '7587'}
            revoked, detail = fence_revoke.revoke_lease(release, 2000)  # type: ignore[arg-type]
            self.assertTrue(revoked, detail)
            self.assertEqual(detail, 'lease 7587 revoked through %s' % etcd.endpoint)
            self.assertEqual(etcd.revoked, ['7587'])
        finally:
            listener.close()
            etcd.close()

    def test_the_revoke_code_is_loaded_when_a_term_is_armed_not_when_it_ends(self) -> None:
        sys.modules.pop('fence_revoke', None)
        guard = fence_term.LeaderTermGuard(None, os.devnull, lambda _: None, lambda _: None)  # type: ignore[arg-type]
        guard.hold(fence_term.parse_term(term(['http://a:2379'])))
        self.assertIn('fence_revoke', sys.modules)


class ParseTerm(unittest.TestCase):
    def test_a_complete_term_is_taken_as_sent(self) -> None:
        sent = term(['http://a:2379'])
        self.assertEqual(fence_term.parse_term(sent), sent)
        self.assertIsNone(fence_term.parse_term(None))

    def test_each_missing_or_wrong_field_is_refused(self) -> None:
        release = {'endpoints': ['http://a:2379'], 'leaseId': '1'}
        for bad in ('term', [], {'agentPid': 1, 'graceMs': 10}, {'agentPid': -1, 'graceMs': 10, 'release': release},
                    {'agentPid': 1, 'graceMs': float('nan'), 'release': release},
                    {'agentPid': True, 'graceMs': 10, 'release': release},
                    {'agentPid': 1, 'graceMs': 10, 'release': {'endpoints': 'http://a', 'leaseId': '1'}},
                    {'agentPid': 1, 'graceMs': 10, 'release': {'endpoints': [], 'leaseId': 1}}):
            with self.subTest(term=bad):
                with self.assertRaisesRegex(ValueError, 'a term needs agentPid, graceMs, release.endpoints'):
                    fence_term.parse_term(bad)


if __name__ == '__main__':
    unittest.main()
