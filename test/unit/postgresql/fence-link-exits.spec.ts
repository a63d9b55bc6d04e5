import { FenceLink } from '../../../src/postgresql/process/fence-link';
import { fencePaths } from '../../../src/postgresql/fence/fence-protocol';

/**
 * A start waits for the exit of the postmaster it started, whose pid it learns only from the fence's hello. An exit
 * of the postmaster before it, reported late, is not that one: taken for it, a start failed while its server ran on.
 */
describe('exits recorded for a postmaster whose pid is known later', () => {
  const link = () => new FenceLink(fencePaths('/nonexistent-state-dir'));
  const settled = async <T>(promise: Promise<T>) =>
    Promise.race([promise, new Promise((resolve) => setImmediate(() => resolve('pending')))]);

  it("resolves with that pid's exit only, whether it came before the pid was known or after", async () => {
    const fence = link();
    const exits = fence.recordExits();
    fence.reportExit({ pid: 100, code: null, signal: 'SIGKILL', requested: false, fenced: true });
    fence.reportExit({ pid: 300, code: 1, signal: null, requested: false, fenced: false });
    const started = exits.of(200);
    expect(await settled(started)).toBe('pending');
    fence.reportExit({ pid: 200, code: 1, signal: null, requested: false, fenced: false });
    expect(await settled(started)).toMatchObject({ pid: 200, code: 1 });
    expect(await settled(exits.of(300))).toMatchObject({ pid: 300 });
    exits.cancel();
  });
});
