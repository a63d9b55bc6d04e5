import { ManualClock } from '../../../src/common/clock';
import { Logger } from '../../../src/common/logger';
import { BUSY_SAMPLE_INTERVAL_MS, IDLE_SAMPLE_INTERVAL_MS, Sampler } from '../../../src/ha/sampler';
import { PostgresQuery, PostgresSample } from '../../../src/postgresql/postgres.port';

const quiet = {
  debug: () => undefined,
  info: () => undefined,
  warning: () => undefined,
  error: () => undefined,
} as unknown as Logger;

function sampleAt(walPosition: number): PostgresSample {
  return {
    inRecovery: false,
    serverVersion: 150000,
    postmasterStartTime: '2026-11-25 00:00:00+00:00',
    timeline: 1,
    walPosition,
    receivedLsn: null,
    replayedLsn: null,
    replayedTimestamp: null,
    replayPaused: false,
    replicationState: null,
    latestEndLsn: null,
    replication: [],
    synchronousStandbyNames: '',
    synchronousCommit: 'on',
    systemIdentifier: '1',
    pendingRestart: {},
  };
}

/** A server whose WAL position the test moves; every reading is counted with the time it was asked. */
function server(clock: ManualClock) {
  const readings: number[] = [];
  let position = 100;
  const query = {
    sample: async () => {
      readings.push(clock.now());
      return sampleAt(position);
    },
  } as unknown as PostgresQuery;
  return { query, readings, write: () => (position += 10) };
}

async function pass(clock: ManualClock, ms: number): Promise<void> {
  for (let t = 0; t < ms; t += 100) {
    clock.advance(100);
    await Promise.resolve();
    await Promise.resolve();
  }
}

describe('the sampler reads less often while nothing changes', () => {
  it('backs off 1, 2, 4 s on an idle server, and reads every second again as soon as a reading differs', async () => {
    const clock = new ManualClock();
    const pg = server(clock);
    const sampler = new Sampler(
      pg.query,
      clock,
      quiet,
      () => true,
      () => undefined,
    );
    const start = clock.now();
    sampler.start();
    await pass(clock, 20_000);
    const gaps = pg.readings.map((at, i) => at - (i === 0 ? start : pg.readings[i - 1]));
    // The first reading is new (there was none); from then each equal reading doubles the wait, from the
    // next tick on (a tick schedules the next one before its reading ends, so a hung server cannot stop it).
    expect(gaps.slice(0, 6)).toEqual([1000, 1000, 1000, 2000, 4000, 4000]);
    expect(Math.max(...gaps)).toBe(IDLE_SAMPLE_INTERVAL_MS);

    // Writes from now on: the first reading that sees one goes back to a reading a second.
    const writes = () => pg.write();
    let firstChangeSeen = 0;
    for (let t = 0; t < 10_000; t += 500) {
      writes();
      await pass(clock, 500);
      if (!firstChangeSeen && sampler.intervalMs === BUSY_SAMPLE_INTERVAL_MS) firstChangeSeen = pg.readings.length;
    }
    expect(firstChangeSeen).toBeGreaterThan(0);
    const moving = pg.readings.slice(firstChangeSeen);
    expect(moving.slice(1).map((at, i) => at - moving[i])).toEqual(moving.slice(1).map(() => BUSY_SAMPLE_INTERVAL_MS));
    sampler.stop();
  });

  it('a transition (the server restarted) brings the 1 s period back at once, not after the idle wait', async () => {
    const clock = new ManualClock();
    const pg = server(clock);
    const sampler = new Sampler(
      pg.query,
      clock,
      quiet,
      () => true,
      () => undefined,
    );
    sampler.start();
    await pass(clock, 12_000);
    expect(sampler.intervalMs).toBe(IDLE_SAMPLE_INTERVAL_MS);
    const before = pg.readings.length;
    sampler.serverStarted();
    await pass(clock, 1000);
    expect(pg.readings.length).toBe(before + 1);
    sampler.stop();
  });

  it('skips its tick when another reading (the HA cycle) was just taken', async () => {
    const clock = new ManualClock();
    const pg = server(clock);
    const sampler = new Sampler(
      pg.query,
      clock,
      quiet,
      () => true,
      () => undefined,
    );
    sampler.start();
    await pass(clock, 700);
    await sampler.take();
    const afterCycle = pg.readings.length;
    await pass(clock, 300);
    expect(pg.readings.length).toBe(afterCycle);
    sampler.stop();
  });

  it('takes no reading of its own while the HA cycle reads every 2 s, and one a period after the last once the cycle stops reading', async () => {
    const clock = new ManualClock();
    const pg = server(clock);
    const sampler = new Sampler(
      pg.query,
      clock,
      quiet,
      () => true,
      () => undefined,
    );
    sampler.start();
    await pass(clock, 12_000);
    expect(sampler.intervalMs).toBe(IDLE_SAMPLE_INTERVAL_MS);
    const cycleReadings: number[] = [];
    for (let cycle = 0; cycle < 10; cycle++) {
      await sampler.take();
      cycleReadings.push(clock.now());
      await pass(clock, 2000);
    }
    expect(pg.readings.slice(-10)).toEqual(cycleReadings);
    // The cycle stalls (a slow DCS): the sampler reads once the last reading is a period old.
    const last = pg.readings[pg.readings.length - 1];
    await pass(clock, 6000);
    const next = pg.readings[pg.readings.lastIndexOf(last) + 1];
    expect(next - last).toBe(IDLE_SAMPLE_INTERVAL_MS);
    sampler.stop();
  });
});

describe('the idle period never outlasts half of postgres_unresponsive_timeout', () => {
  it('stays at 1 s with a 2 s unresponsive timeout, so an idle server is never called hung', async () => {
    const clock = new ManualClock();
    const pg = server(clock);
    const sampler = new Sampler(
      pg.query,
      clock,
      quiet,
      () => true,
      () => undefined,
      () => 1000,
    );
    sampler.start();
    await pass(clock, 10_000);
    expect(sampler.intervalMs).toBe(BUSY_SAMPLE_INTERVAL_MS);
    expect(Math.max(...pg.readings.slice(1).map((at, i) => at - pg.readings[i]))).toBe(1000);
    sampler.stop();
  });
});

describe('a monitoring query cancelled by statement_timeout (Patroni 4.1.4)', () => {
  it('keeps the last reading (the cached role), counts the server as answering, and says so once per episode', async () => {
    const clock = new ManualClock();
    const lines: string[] = [];
    const logger = {
      ...quiet,
      warning: (line: string) => lines.push(`WARNING: ${line}`),
      info: (line: string) => lines.push(`INFO: ${line}`),
    } as unknown as Logger;
    let failing = false;
    const query = {
      sample: async () => {
        if (failing) throw Object.assign(new Error('canceling statement due to statement timeout'), { code: '57014' });
        return sampleAt(100);
      },
    } as unknown as PostgresQuery;
    const sampler = new Sampler(
      query,
      clock,
      logger,
      () => true,
      () => undefined,
    );
    await sampler.take();
    failing = true;
    for (let i = 0; i < 3; i++) {
      clock.advance(1000);
      await sampler.take();
    }
    expect(sampler.sample?.inRecovery).toBe(false);
    expect(sampler.answeredAt).toBe(clock.now());
    expect(lines).toEqual([
      'WARNING: Failed to determine PostgreSQL state from the connection (statement timeout), falling back to cached role: primary',
    ]);
    failing = false;
    clock.advance(1000);
    await sampler.take();
    expect(lines[1]).toBe('INFO: the monitoring query answers again after 3 s of statement timeouts');
  });
});

describe('readings of a slow server do not pile up', () => {
  it('callers during a reading share one more reading after it, so a waiting HA cycle waits for two at most', async () => {
    const clock = new ManualClock();
    let calls = 0;
    const pending: Array<() => void> = [];
    const query = {
      sample: () => {
        calls++;
        return new Promise<PostgresSample>((resolve) => pending.push(() => resolve(sampleAt(100 + calls))));
      },
    } as unknown as PostgresQuery;
    const sampler = new Sampler(
      query,
      clock,
      quiet,
      () => true,
      () => undefined,
    );
    const first = sampler.take();
    const waiting = [sampler.take(), sampler.take(), sampler.take()];
    expect(calls).toBe(1);
    pending.shift()!();
    await first;
    await Promise.resolve();
    await new Promise((resolve) => setImmediate(resolve));
    expect(calls).toBe(2);
    pending.shift()!();
    await Promise.all(waiting);
    expect(calls).toBe(2);
    // The waiting callers got the reading that started after their call.
    expect(sampler.sample?.walPosition).toBe(102);
  });
});

describe('the HA cycle waits a bounded time for a reading of a silent server', () => {
  it('takeWithin answers false at its bound while the reading goes on, and true once a reading is in', async () => {
    const clock = new ManualClock();
    const pending: Array<() => void> = [];
    const query = {
      sample: () => new Promise<PostgresSample>((resolve) => pending.push(() => resolve(sampleAt(200)))),
    } as unknown as PostgresQuery;
    const sampler = new Sampler(
      query,
      clock,
      quiet,
      () => true,
      () => undefined,
    );
    sampler.serverStarted();
    let answer: boolean | null = null;
    void sampler.takeWithin(2_000).then((answered) => (answer = answered));
    await pass(clock, 1_900);
    expect(answer).toBeNull();
    await pass(clock, 200);
    // The cycle goes on with the last reading; the server has been silent past the bound.
    expect(answer).toBe(false);
    expect(sampler.answeredWithin(2_000)).toBe(false);
    pending.shift()!();
    await new Promise((resolve) => setImmediate(resolve));
    expect(sampler.sample?.walPosition).toBe(200);
    expect(sampler.answeredWithin(2_000)).toBe(true);
    const next = sampler.takeWithin(2_000);
    await new Promise((resolve) => setImmediate(resolve));
    pending.shift()!();
    expect(await next).toBe(true);
  });
});
