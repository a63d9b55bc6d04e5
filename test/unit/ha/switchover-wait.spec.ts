import { NEVER } from 'rxjs';
import { ManualClock } from '../../../src/common/clock';
import { ClusterView, Dcs, MemberData } from '../../../src/dcs/dcs.port';
import { MemoryDcs, MemoryDcsBackend } from '../../../src/dcs/memory-dcs';
import { HaNode } from '../../../src/ha/ha-node';
import { NodeOperations } from '../../../src/ha/node-operations';
import { OperationAnswer } from '../../../src/ha/operation-types';

const member = (name: string): MemberData => ({
  conn_url: `postgres://127.0.0.1:5432/postgres`,
  api_url: `http://127.0.0.1:8008/${name}`,
  state: 'running',
  role: name === 'node1' ? 'primary' : 'replica',
  version: '3.0.2',
});

/**
 * POST /switchover's wait for its outcome (reference 1.7: up to 2·max(10, loop_wait) rounds of "sleep
 * 1 s, read the DCS"), on a manual clock: node1 leads, node2 is the candidate and takes the lock when
 * the test says. `readMs`: how long each DCS read takes; `watch`: whether DCS changes wake the wait.
 */
async function setup({ readMs, watch }: { readMs: number; watch: boolean }) {
  const clock = new ManualClock();
  const backend = new MemoryDcsBackend(clock);
  const options = { namespace: '/service', scope: 'demo', ttlSeconds: 30 };
  const node1 = new MemoryDcs(backend, { ...options, name: 'node1' });
  const node2 = new MemoryDcs(backend, { ...options, name: 'node2' });
  await node1.touchMember(member('node1'));
  await node2.touchMember(member('node2'));
  await node1.acquireLeader();
  const slowDcs: Dcs = Object.create(node1) as Dcs;
  slowDcs.read = async (): Promise<ClusterView> => {
    await new Promise<void>((resolve) => clock.setTimer(resolve, readMs));
    return node1.read();
  };
  if (!watch) slowDcs.changes = () => NEVER;
  const node = {
    view: () => ({ config: { pause: false, loop_wait: 10, synchronous_mode: false } }),
    refreshClusterView: () => node1.read(),
    probePeer: async () => ({ reachable: true, tags: {} }),
    recordCluster: () => undefined,
    wake: () => undefined,
  } as unknown as HaNode;
  const operations = new NodeOperations(node, slowDcs, clock);
  /** node2 takes the lock `atMs` from now (node1 released it). */
  const handOverAt = (atMs: number) =>
    clock.setTimer(() => void node1.releaseLeader().then(() => node2.acquireLeader()), atMs);
  /** Runs the manual clock in 100 ms steps until the answer comes; resolves with it and when it came (ms). */
  const answerOf = async (answer: Promise<OperationAnswer>): Promise<{ answer: OperationAnswer; atMs: number }> => {
    let settled: OperationAnswer | null = null;
    void answer.then((value) => (settled = value));
    const started = clock.monotonic();
    for (let step = 0; settled === null && step < 2000; step++) {
      await new Promise((resolve) => setImmediate(resolve));
      if (settled === null) clock.advance(100);
    }
    return { answer: settled!, atMs: clock.monotonic() - started };
  };
  return { operations, handOverAt, answerOf };
}

describe('POST /switchover waits for the new leader', () => {
  it('counts rounds, not seconds: with reads of 2 s, a lock taken after 30 s is still a success', async () => {
    const { operations, handOverAt, answerOf } = await setup({ readMs: 2000, watch: false });
    handOverAt(30_000);
    const { answer, atMs } = await answerOf(
      operations.switchover({ kind: 'switchover', candidate: 'node2' }, 'switchover'),
    );
    expect(answer).toEqual({ status: 200, text: 'Successfully switched over to "node2"' });
    expect(atMs).toBeGreaterThanOrEqual(30_000);
  });

  it('answers "status unknown" after 2·max(10, loop_wait) rounds without an outcome, however long they took', async () => {
    const { operations, answerOf } = await setup({ readMs: 2000, watch: false });
    const { answer, atMs } = await answerOf(
      operations.switchover({ kind: 'switchover', candidate: 'node2' }, 'switchover'),
    );
    expect(answer).toEqual({
      status: 503,
      text: 'Switchover status unknown after 20 seconds; operation may still be in progress',
    });
    // 20 rounds of a 1 s wait and a 2 s read (and the read before the request).
    expect(atMs).toBeGreaterThanOrEqual(60_000);
    expect(atMs).toBeLessThan(64_000);
  });

  it('answers as soon as the watch shows the new leader, before the first round ends', async () => {
    const { operations, handOverAt, answerOf } = await setup({ readMs: 0, watch: true });
    handOverAt(300);
    const { answer, atMs } = await answerOf(
      operations.switchover({ kind: 'switchover', candidate: 'node2' }, 'switchover'),
    );
    expect(answer).toEqual({ status: 200, text: 'Successfully switched over to "node2"' });
    expect(atMs).toBeLessThan(1000);
  });
});
