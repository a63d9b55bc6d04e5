"""When the fence stops PostgreSQL, and with which signal: a real fence, a stand-in postmaster, an agent on the
real socket; what is asserted is what the agent sees (its messages, postmaster-exit.json) and the fence's log."""
from __future__ import annotations

import time
import unittest
import unittest.mock

from fence_support import FenceRun, ScratchTestCase


def now_ms() -> float:
    return time.time() * 1000


class StopRequests(ScratchTestCase):
    def stop_and_read_the_exit(self, mode: str) -> tuple[object, object, object]:
        run = FenceRun(self)
        try:
            run.connect()
            run.send({'op': 'stop', 'mode': mode})
            self.assertEqual(run.run_to_exit(), 0)
            self.assertEqual([message['event'] for message in run.received()], ['hello', 'exit'])
            record = run.exit_record()
            return record['signal'], record['requested'], record['fenced']
        finally:
            run.close()

    def test_smart_sends_sigterm(self) -> None:
        self.assertEqual(self.stop_and_read_the_exit('smart'), ('SIGTERM', True, False))

    def test_fast_sends_sigint(self) -> None:
        self.assertEqual(self.stop_and_read_the_exit('fast'), ('SIGINT', True, False))

    def test_immediate_sends_sigquit(self) -> None:
        self.assertEqual(self.stop_and_read_the_exit('immediate'), ('SIGQUIT', True, False))

    def test_the_hello_tells_the_postmaster_and_the_deadline(self) -> None:
        deadline = now_ms() + 60000
        run = FenceRun(self, deadline=deadline)
        try:
            run.connect()
            run.run_until(lambda: bool(run.received()), 'the hello')
            hello = run.received()[0]
            self.assertEqual(hello['event'], 'hello')
            self.assertEqual(hello['pid'], run.fence._postmaster_pid)
            self.assertEqual(hello['deadline'], deadline)
            self.assertEqual(hello['watchdog'], {'running': False, 'timeout': None, 'device': None, 'error': None,
                                                 'required': False})
        finally:
            run.close()


class MalformedRequests(ScratchTestCase):
    def test_bad_requests_are_logged_and_change_nothing(self) -> None:
        run = FenceRun(self)
        try:
            run.connect()
            run.send(
                {'op': 'arm', 'deadline': 'soon'},
                {'op': 'arm', 'deadline': now_ms() - 1000, 'watchdog': {'driver': 'other', 'device': '/dev/w'}},
                {'op': 'arm', 'deadline': now_ms() - 1000, 'term': {'agentPid': 1}},
                {'op': 'stop', 'mode': 'slow'},
                {'op': 'stop', 'mode': ['fast']},
                {'op': 'signal', 'signal': 'SIGKILL'},
                {'op': 'reboot'},
                [1, 2],
                raw=b'{not json\n',
            )
            run.run_for(300)
            for fragment in ('ignored malformed request: {not json', 'ignored arm without a numeric deadline',
                             'ignored arm with a malformed term or watchdog: watchdog must be',
                             'ignored arm with a malformed term or watchdog: a term needs',
                             'ignored stop with unknown mode slow', "ignored stop with unknown mode ['fast']",
                             'ignored unknown request {"op":"reboot"}', 'ignored unknown request [1,2]'):
                self.assert_logged(fragment)
            # None of the arms with a past deadline took: the postmaster still runs, unfenced.
            self.assertTrue(run.postmaster_runs())
            self.assertIsNone(run.fence._deadline)
        finally:
            run.close()


class DeadMansSwitch(ScratchTestCase):
    def test_a_deadline_without_a_new_arm_stops_the_postmaster_immediately(self) -> None:
        run = FenceRun(self)
        try:
            run.connect()
            deadline = now_ms() + 300
            run.send({'op': 'arm', 'deadline': deadline})
            run.run_to_exit()
            record = run.exit_record()
            self.assertEqual((record['signal'], record['fenced'], record['requested']), ('SIGQUIT', True, False))
            # The record's time is whole milliseconds of the wall clock; the deadline ran on the monotonic clock.
            self.assertGreaterEqual(int(str(record['at'])), deadline - 1)
            self.assert_logged('passed without a new arm: immediate shutdown of the postmaster')
        finally:
            run.close()

    def test_each_arm_moves_the_deadline_on(self) -> None:
        run = FenceRun(self)
        try:
            run.connect()
            run.send({'op': 'arm', 'deadline': now_ms() + 300})
            run.run_for(150)
            run.send({'op': 'arm', 'deadline': now_ms() + 1500})
            run.run_for(600)
            self.assertTrue(run.postmaster_runs(), 'the first deadline passed, but a later arm replaced it')
            run.run_to_exit()
            self.assertTrue(run.exit_record()['fenced'])
        finally:
            run.close()

    def test_a_jump_of_the_wall_clock_neither_fires_the_deadline_early_nor_holds_it_back(self) -> None:
        real_time = time.time
        for jump_s in (600.0, -600.0):
            with self.subTest(jump_s=jump_s):
                run = FenceRun(self)
                try:
                    run.connect()
                    armed = time.monotonic()
                    run.send({'op': 'arm', 'deadline': now_ms() + 400})
                    run.run_for(50)
                    # The agent's clock and the fence's are the same wall clock: NTP or an operator moves both.
                    with unittest.mock.patch.object(time, 'time', lambda: real_time() + jump_s):
                        run.run_for(150)
                        self.assertTrue(run.postmaster_runs(), 'the wall clock set %+d s fired it early' % jump_s)
                        run.run_to_exit()
                    self.assertTrue(run.exit_record()['fenced'])
                    self.assertLess(time.monotonic() - armed, 2.0, 'the wall clock set %+d s held it back' % jump_s)
                finally:
                    run.close()

    def test_disarm_leaves_the_postmaster_running_past_the_deadline(self) -> None:
        run = FenceRun(self)
        try:
            run.connect()
            run.send({'op': 'arm', 'deadline': now_ms() + 200}, {'op': 'disarm'})
            run.run_for(600)
            self.assertTrue(run.postmaster_runs())
            run.send({'op': 'stop', 'mode': 'fast'})
            run.run_to_exit()
            self.assertEqual((run.exit_record()['signal'], run.exit_record()['fenced']), ('SIGINT', False))
        finally:
            run.close()

    def test_a_deadline_passed_before_the_start_fences_at_once(self) -> None:
        run = FenceRun(self, deadline=now_ms() - 1)
        try:
            run.run_to_exit()
            self.assertEqual((run.exit_record()['signal'], run.exit_record()['fenced']), ('SIGQUIT', True))
        finally:
            run.close()

    def test_a_disconnected_agent_does_not_disarm(self) -> None:
        run = FenceRun(self)
        try:
            run.connect()
            run.send({'op': 'arm', 'deadline': now_ms() + 300})
            run.run_for(50)
            assert run.agent is not None
            run.agent.close()
            run.agent = None
            run.run_to_exit()
            self.assertTrue(run.exit_record()['fenced'])
        finally:
            run.close()


class Spawn(ScratchTestCase):
    def test_a_postgres_that_cannot_start_is_reported_as_an_exit_with_its_error(self) -> None:
        run = FenceRun(self, postgres=str(self.state_dir / 'no-such-postgres'))
        try:
            self.assertEqual(run.exit_codes, [0])
            record = run.exit_record()
            self.assertEqual(record['pid'], 0)
            self.assertIn('no-such-postgres: No such file or directory', str(record['error']))
            self.assertFalse((self.state_dir / 'fence.sock').exists())
        finally:
            run.close()


if __name__ == '__main__':
    unittest.main()
