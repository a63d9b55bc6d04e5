"""A new fence adopting a postmaster whose fence was killed: it checks that the pid is this data directory's
postmaster, journals the adoption, and enforces the deadline on it as on its own child (through a pidfd)."""
from __future__ import annotations

import subprocess
import time

from fence_support import FenceRun, ScratchTestCase


class Adoption(ScratchTestCase):
    def orphan(self) -> subprocess.Popen[bytes]:
        """A stand-in postmaster this fence did not start, named by postmaster.pid as PostgreSQL writes it."""
        process = subprocess.Popen(['sleep', '60'])
        self.addCleanup(process.wait)
        self.addCleanup(process.kill)
        started = int(time.time())
        (self.state_dir / 'postmaster.pid').write_text('%d\n%s\n%d\n5432\n' % (process.pid, self.state_dir, started))
        return process

    def test_adopts_the_postmaster_named_by_postmaster_pid_and_fences_it_at_the_deadline(self) -> None:
        orphan = self.orphan()
        run = FenceRun(self, adoptPid=orphan.pid, deadline=time.time() * 1000 + 300)
        try:
            run.connect()
            run.run_until(lambda: bool(run.received()), 'the hello')
            self.assertEqual(run.received()[0]['pid'], orphan.pid)
            self.assertEqual([entry['step'] for entry in run.journal()], ['postmaster_adopted'])
            self.assertIn('postmaster %d ran without a fence' % orphan.pid, str(run.journal()[0]['detail']))
            run.run_to_exit()
            # SIGQUIT through the pidfd ended it; its exit status belongs to its real parent, not to the fence.
            self.assertEqual(orphan.wait(5), -3)
            record = run.exit_record()
            self.assertEqual((record['pid'], record['code'], record['signal'], record['fenced']),
                             (orphan.pid, None, None, True))
        finally:
            run.close()

    def test_refuses_a_pid_that_postmaster_pid_does_not_name_and_touches_nothing(self) -> None:
        orphan = self.orphan()
        stranger = subprocess.Popen(['sleep', '60'])
        self.addCleanup(stranger.wait)
        self.addCleanup(stranger.kill)
        run = FenceRun(self, adoptPid=stranger.pid, deadline=time.time() * 1000 - 1)
        try:
            self.assertEqual(run.exit_codes, [3])
            self.assert_logged('cannot adopt postmaster %d: postmaster.pid in' % stranger.pid)
            self.assertIsNone(stranger.poll())
            self.assertIsNone(orphan.poll())
            self.assertFalse((self.state_dir / 'fence.sock').exists())
            self.assertFalse((self.state_dir / 'fence.pid').exists())
        finally:
            run.close()
