import { writesByRound } from '../../scripts/lib/chaos/per-round';

describe("the chaos report's figures per round", () => {
  it('gives each round what happened from its fault until the next one, and nothing before the first fault', () => {
    const ack = (n: number, at: number, node = 'node1') => ({ n, node, at });
    const acknowledged = [ack(1, 500), ack(2, 1500), ack(3, 2500), ack(4, 2600, 'node2'), ack(5, 9000)];
    const rounds = writesByRound(
      [1000, 2000],
      acknowledged,
      [ack(3, 2500)],
      [{ nodes: ['node1', 'node2'], fromMs: 2500, toMs: 2600 }],
    );
    expect(rounds).toEqual([
      { acknowledged: 1, lost: 0, twoWriters: [] },
      { acknowledged: 3, lost: 1, twoWriters: [{ nodes: ['node1', 'node2'], fromMs: 2500, toMs: 2600 }] },
    ]);
  });
});
