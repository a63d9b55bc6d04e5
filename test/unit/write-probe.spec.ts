import { WriteProbe } from '../../bench/lib/write-probe';
import { freePort } from '../../scripts/lib/ports';

/**
 * The benches' write client against a cluster with no server up (every port refuses): how many connections it opens
 * while it waits. Twenty such clients in a switchover storm were the machine's largest load.
 */
describe('the write client reconnecting while no node takes writes', () => {
  jest.setTimeout(10_000);

  async function connectionsOverOneSecond(maxReconnectDelayMs: number): Promise<number> {
    const ports = [await freePort(), await freePort(), await freePort()];
    const probe = new WriteProbe(ports, maxReconnectDelayMs);
    probe.start(1000);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    await probe.stop();
    expect(probe.acks).toEqual([]);
    return probe.opened.connections;
  }

  it('tries all three nodes at every 50 ms tick without a backoff', async () => {
    // 20 rounds of 3 on an idle machine; a crowded one delays the ticks, never adds any.
    expect(await connectionsOverOneSecond(0)).toBeGreaterThanOrEqual(24);
  });

  it('with a backoff of 50 ms doubling to 400 ms, opens a fraction of that', async () => {
    // Rounds at 0, 50, 150, 350, 750 ms: 5 rounds of 3 (6 when a round lands on the second's edge).
    expect(await connectionsOverOneSecond(400)).toBeLessThanOrEqual(18);
  });
});
