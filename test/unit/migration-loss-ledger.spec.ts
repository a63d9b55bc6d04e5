import { crashExplaining, Crash, lsnText, parseLsn } from '../migration/lib/loss-ledger';

describe("the rolling migration's account of missing writes", () => {
  // A kill -9 decided at 10,000 ms on the writer's clock whose processes were gone at 10,180 ms.
  const crash: Crash = { port: 5433, from: 10_000, to: 10_180 };

  it.each([
    ['acknowledged 1.5 s before the kill was decided, by the killed node', { port: 5433, at: 8_500 }, true],
    [
      'acknowledged while the kill was under way (the old window, ending at the decision, missed it)',
      { port: 5433, at: 10_120 },
      true,
    ],
    ['acknowledged 2.1 s before the kill', { port: 5433, at: 7_900 }, false],
    ['acknowledged after the kill ended (by a node that was not killed)', { port: 5433, at: 10_300 }, false],
    ['acknowledged in the window by another node', { port: 5434, at: 9_900 }, false],
  ])('a write %s: explained by that kill: %s', (_, ack, explained) => {
    expect(crashExplaining([crash], ack)).toEqual(explained ? crash : null);
  });

  it('reads and prints WAL positions as PostgreSQL does', () => {
    expect(parseLsn('0/502C7A8')).toBe(0x502c7a8n);
    expect(parseLsn('1/0')).toBe(1n << 32n);
    expect(lsnText(parseLsn('A/3000060'))).toBe('A/3000060');
  });
});
