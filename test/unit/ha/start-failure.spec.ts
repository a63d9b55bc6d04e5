import { decide } from '../../../src/ha/decide';
import { PROMOTION_WAIT_RECHECK_MS } from '../../../src/ha/recover';
import {
  classifyStartFailure,
  divergedFromHistory,
  mayRemoveDataAfterFailedRewind,
  START_RETRY_CAP_MS,
  startFailureSummary,
  startRetryDelayMs,
} from '../../../src/ha/start-failure';
import { cluster, leaderKey, member, primarySample, snapshot } from './snapshot-factory';

const NOW = Date.parse('2026-01-01T00:00:00Z');
const NOT_A_CHILD =
  "postmaster exited while starting: 2026-01-01 00:00:00 UTC [9] LOG:  starting PostgreSQL 15 | FATAL:  requested timeline 3 is not a child of this server's history | DETAIL:  Latest checkpoint is at 0/5000060 on timeline 2, but in the history of the requested timeline, the server forked off from that timeline at 0/4000108.";
const PORT_TAKEN =
  'postmaster exited while starting: LOG:  could not bind IPv4 address "127.0.0.1": Address already in use | FATAL:  could not create any TCP/IP sockets';

describe('why PostgreSQL failed to start, read from its log', () => {
  it.each([
    [NOT_A_CHILD, 'diverged'],
    ['FATAL:  requested timeline 2 does not contain minimum recovery point 0/3000000 on timeline 1', 'diverged'],
    ['PANIC:  could not locate a valid checkpoint record', 'wal_missing'],
    ['FATAL:  requested WAL segment 000000010000000000000003 has already been removed', 'wal_missing'],
    [
      'FATAL:  lock file "postmaster.pid" already exists | HINT:  Is another postmaster (PID 42) running in data directory',
      'in_use',
    ],
    ['FATAL:  pre-existing shared memory block (key 5432001, ID 3) is still in use', 'in_use'],
    [PORT_TAKEN, 'port_in_use'],
    [
      'LOG:  could not bind IPv4 address "127.0.0.1": Address already in use | HINT:  Is another postmaster already running on port 5432?',
      'port_in_use',
    ],
    ['FATAL:  invalid value for parameter "max_connections": "many"', 'bad_setting'],
    ['FATAL:  unrecognized configuration parameter "wal_keep_segments"', 'bad_setting'],
    ['PANIC:  could not write to file "pg_wal/xlogtemp.812": No space left on device', 'disk_full'],
    ['FATAL:  could not extend file "base/5/16384": wrote only 4096 of 8192 bytes at block 12', 'disk_full'],
    [
      'postgres (pid 9) did not accept connections within 60000 ms; it keeps running. Log: FATAL:  could not bind',
      'still_starting',
    ],
    ['postmaster exited while starting', 'unknown'],
    [null, 'unknown'],
  ])('%s -> %s', (lastError, kind) => {
    expect(classifyStartFailure(lastError)).toBe(kind);
  });

  it('reads a long log in time linear in its length', () => {
    // CPU time, not wall time: on a loaded machine the wall clock also counts other processes.
    const started = process.cpuUsage();
    classifyStartFailure('x'.repeat(200_000) + ' could not bind');
    const used = process.cpuUsage(started);
    expect((used.user + used.system) / 1000).toBeLessThan(200);
  });
});

describe('a full disk', () => {
  const REWIND_OUT_OF_SPACE =
    'postgres --single failed (exit 1): LOG:  redo done at 0/4FFFF80\nFATAL:  could not write to file "pg_wal/xlogtemp.14456": No space left on device';

  it('is named by the line that says so', () => {
    expect(startFailureSummary(REWIND_OUT_OF_SPACE)).toBe(
      'could not write to file "pg_wal/xlogtemp.14456": No space left on device',
    );
  });

  it('never leads a failed rewind to the removal of the data directory; other failures may', () => {
    expect(mayRemoveDataAfterFailedRewind(REWIND_OUT_OF_SPACE)).toBe(false);
    expect(
      mayRemoveDataAfterFailedRewind(
        "pg_rewind: error: could not find common ancestor of the source and target cluster's timelines",
      ),
    ).toBe(true);
    expect(mayRemoveDataAfterFailedRewind(null)).toBe(true);
  });
});

describe('backoff between failed starts', () => {
  it('waits loop_wait after the first failure, doubles, and stops growing at the cap', () => {
    expect([0, 1, 2, 3, 4, 5, 6, 7, 50].map((n) => startRetryDelayMs(n, 10))).toEqual([
      0,
      10_000,
      20_000,
      40_000,
      60_000,
      60_000,
      60_000,
      60_000,
      START_RETRY_CAP_MS,
    ]);
    expect(startRetryDelayMs(1, 0)).toBe(1000);
  });
});

describe('a data directory on an abandoned timeline', () => {
  const history: [number, number, string][] = [
    [1, 50_000_000, 'no recovery target specified'],
    [2, 80_000_000, 'no recovery target specified'],
  ];
  it.each([
    ['checkpoint on timeline 1 before its switch point', 1, 49_000_000, false],
    ['checkpoint on timeline 1 after its switch point', 1, 60_000_000, true],
    ['checkpoint on timeline 2 after its switch point', 2, 80_000_000, true],
    ['on the newest timeline', 3, 90_000_000, false],
  ])('%s', (_description, timeline, checkpointLsn, diverged) => {
    expect(divergedFromHistory({ state: 'initialized', standbySignal: true, timeline, checkpointLsn }, history)).toBe(
      diverged,
    );
  });
  it('knows nothing without a history or a checkpoint', () => {
    expect(
      divergedFromHistory({ state: 'initialized', standbySignal: true, timeline: 1, checkpointLsn: 60_000_000 }, null),
    ).toBe(false);
    expect(divergedFromHistory({ state: 'initialized', standbySignal: true }, history)).toBe(false);
  });
});

describe('decide() after PostgreSQL failed to start', () => {
  const failed = (failedStarts: number, lastError: string, startedAgoMs: number) =>
    ({ pgState: 'start_failed', sample: null, failedStarts, lastError, lastStartAt: NOW - startedAgoMs }) as const;

  it('rewinds a replica whose WAL forked off the leader timeline instead of starting it again', () => {
    const decision = decide(
      snapshot({ now: NOW, cluster: cluster({ leader: leaderKey('n2') }), local: failed(1, NOT_A_CHILD, 100) }),
    );
    expect(decision).toMatchObject({
      verdict: expect.stringContaining('running pg_rewind from n2'),
      actions: [{ type: 'rejoin', useRewind: true, upstream: { name: 'n2' } }],
    });
    expect('verdict' in decision && decision.verdict).toContain(
      "(diverged): requested timeline 3 is not a child of this server's history; running pg_rewind from n2",
    );
  });

  it('waits instead while the leader holds the lock but its key does not say it promoted yet', () => {
    const notYetPromoted = cluster({ leader: leaderKey('n2'), members: [member('n1'), member('n2'), member('n3')] });
    const decision = decide(snapshot({ now: NOW, cluster: notYetPromoted, local: failed(1, NOT_A_CHILD, 100) }));
    // It looks again soon, not a loop_wait later: the wait lasts a drain, a promotion and a checkpoint.
    expect(decision).toEqual({
      verdict: 'waiting for n2 to finish its promotion before pg_rewind',
      actions: [{ type: 'wakeAt', at: NOW + PROMOTION_WAIT_RECHECK_MS }],
    });
  });

  it('reclones instead when use_pg_rewind is off', () => {
    const decision = decide(
      snapshot({
        now: NOW,
        config: { use_pg_rewind: false },
        cluster: cluster({ leader: leaderKey('n2') }),
        local: failed(1, NOT_A_CHILD, 100),
      }),
    );
    expect(decision).toMatchObject({ actions: [{ type: 'rejoin', useRewind: false }] });
  });

  it('rewinds before the first start when the cluster history ends its timeline before its checkpoint', () => {
    const history = {
      value: [[1, 50_000_000, 'no recovery target specified']] as [number, number, string][],
      modRevision: '3',
    };
    const decision = decide(
      snapshot({
        cluster: cluster({ leader: leaderKey('n2'), history }),
        local: {
          pgState: 'stopped',
          sample: null,
          dataDir: { state: 'initialized', standbySignal: false, timeline: 1, checkpointLsn: 60_000_000 },
        },
      }),
    );
    expect(decision).toMatchObject({
      verdict: expect.stringContaining('my timeline 1 goes on past'),
      actions: [{ type: 'rejoin' }],
    });
  });

  it('waits out the backoff before starting again, and says why and how long', () => {
    const decision = decide(
      snapshot({
        now: NOW,
        config: { loop_wait: 10 },
        cluster: cluster({ leader: leaderKey('n2') }),
        local: failed(3, PORT_TAKEN, 1000),
      }),
    );
    expect(decision).toEqual({
      verdict:
        'waiting 39 s before starting PostgreSQL again: 3 failed start(s) (port_in_use): could not create any TCP/IP sockets',
      actions: [{ type: 'wakeAt', at: NOW - 1000 + 40_000 }],
    });
  });

  it('starts again once the backoff has passed', () => {
    const decision = decide(
      snapshot({
        now: NOW,
        config: { loop_wait: 10 },
        cluster: cluster({ leader: leaderKey('n2') }),
        local: failed(3, PORT_TAKEN, 40_000),
      }),
    );
    expect(decision).toMatchObject({ verdict: 'starting as a secondary', actions: [{ type: 'startReplica' }] });
  });

  const primaryDir = { state: 'initialized', standbySignal: false } as const;
  const crashedPrimary = {
    pgState: 'crashed',
    sample: null,
    failedStarts: 0,
    lastError: null,
    lastStartAt: null,
    role: 'primary',
    dataDir: primaryDir,
  } as const;

  it('the lock holder starts its crashed primary again, and gives the lock up, demoted, when that start fails (reference post_recover)', () => {
    const mine = cluster({ leader: leaderKey('n1') });
    const crashed = decide(snapshot({ now: NOW, lockResult: 'refreshed', cluster: mine, local: crashedPrimary }));
    expect(crashed).toMatchObject({ verdict: 'starting primary after failure' });
    const failedOnce = decide(
      snapshot({
        now: NOW,
        lockResult: 'refreshed',
        cluster: mine,
        local: { ...failed(1, PORT_TAKEN, 100), role: 'primary', dataDir: primaryDir },
      }),
    );
    expect(failedOnce).toEqual({
      verdict:
        'removed leader key after trying and failing to start postgres (port_in_use): could not create any TCP/IP sockets',
      actions: [{ type: 'releaseLock', demote: 'failed_start' }],
    });
  });

  it('with primary_start_timeout 0 the lock holder fails over at once after a crash when another member runs, and waits for none otherwise', () => {
    const withReplica = cluster({
      leader: leaderKey('n1'),
      members: [member('n1', { state: 'crashed' }), member('n2', { state: 'running', role: 'replica' })],
    });
    expect(
      decide(
        snapshot({
          now: NOW,
          lockResult: 'refreshed',
          config: { primary_start_timeout: 0 },
          cluster: withReplica,
          local: crashedPrimary,
        }),
      ),
    ).toEqual({
      verdict: 'stopped PostgreSQL to fail over after a crash',
      actions: [{ type: 'releaseLock', demote: 'crashed' }],
    });
    const alone = cluster({ leader: leaderKey('n1'), members: [member('n1', { state: 'crashed' })] });
    expect(
      decide(
        snapshot({
          now: NOW,
          lockResult: 'refreshed',
          config: { primary_start_timeout: 0 },
          cluster: alone,
          local: crashedPrimary,
        }),
      ),
    ).toMatchObject({
      verdict: 'starting as readonly because i had the session lock',
    });
  });
});

describe('decide() when the start ran out of its deadline and the postmaster still runs (reference handle_starting_instance)', () => {
  const STILL_STARTING =
    'postgres (pid 9) did not accept connections within 60000 ms; it keeps running. Log: LOG:  redo starts at 0/3000028';
  const stillStarting = (dataDir: { state: 'initialized'; standbySignal: boolean }, role: 'primary' | 'demoted') =>
    ({
      pgState: 'start_failed',
      sample: null,
      failedStarts: 2,
      lastError: STILL_STARTING,
      lastStartAt: NOW - 100,
      role,
      dataDir,
    }) as const;
  const asPrimary = { state: 'initialized', standbySignal: false } as const;
  const asStandby = { state: 'initialized', standbySignal: true } as const;
  const withReplica = [member('n1', { state: 'starting' }), member('n2', { state: 'running', role: 'replica' })];
  const alone = [member('n1', { state: 'starting' }), member('n2', { state: 'stopped', role: 'replica' })];
  const stop = { type: 'demote', mode: 'immediate', restart: false, upstream: null };

  it.each([
    [
      'the lock holder, another member able to take over: stopped, not left running after the lock goes',
      'n1',
      withReplica,
      asPrimary,
      'stopped PostgreSQL because of startup timeout',
      [stop],
    ],
    [
      'the lock holder, nobody to take over: waits on for the same postmaster (no backoff)',
      'n1',
      alone,
      asPrimary,
      'primary start has timed out, but continuing to wait because failover is not possible',
      [{ type: 'startPrimary' }],
    ],
    [
      'starting as a primary without the lock: stopped',
      'n2',
      withReplica,
      asPrimary,
      'stopped PostgreSQL while starting up because leader key was lost',
      [stop],
    ],
    [
      'a former primary starting as a replica: waits on, no pg_rewind or clone beside a running postmaster',
      'n2',
      withReplica,
      asStandby,
      'still starting up as a standby',
      [{ type: 'startReplica', upstream: { name: 'n2' } }],
    ],
  ])('%s', (_description, leader, members, dataDir, verdict, actions) => {
    const decision = decide(
      snapshot({
        now: NOW,
        lockResult: leader === 'n1' ? 'refreshed' : undefined,
        cluster: cluster({ leader: leaderKey(leader), members }),
        local: stillStarting(dataDir, leader === 'n1' ? 'primary' : 'demoted'),
      }),
    );
    expect(decision).toMatchObject({ verdict, actions });
  });
});

describe('decide() on a former primary whose disk is full', () => {
  const OUT_OF_SPACE =
    'PANIC:  could not write to file "pg_wal/xlogtemp.81": No space left on device | LOG:  startup process (PID 9) exited with exit code 1';
  const primaryDir = { state: 'initialized', standbySignal: false } as const;

  it('the lock holder gives the lock up after one failed start and says the disk is full', () => {
    const local = {
      pgState: 'start_failed',
      sample: null,
      failedStarts: 1,
      lastError: OUT_OF_SPACE,
      lastStartAt: NOW - 100,
      role: 'primary',
      dataDir: primaryDir,
    } as const;
    expect(
      decide(snapshot({ now: NOW, lockResult: 'refreshed', cluster: cluster({ leader: leaderKey('n1') }), local })),
    ).toEqual({
      verdict:
        'removed leader key after trying and failing to start postgres (disk_full): could not write to file "pg_wal/xlogtemp.81": No space left on device',
      actions: [{ type: 'releaseLock', demote: 'failed_start' }],
    });
  });

  it('waits a growing backoff between rejoins that failed for want of space, then rewinds again (never a reclone)', () => {
    const rejoinFailed = (failuresInRow: number, endedAgoMs: number) =>
      ({
        pgState: 'stopped',
        sample: null,
        role: 'demoted',
        dataDir: primaryDir,
        failedStarts: 1,
        lastError: OUT_OF_SPACE,
        lastStartAt: NOW - 60_000,
        lastTask: {
          name: 'rejoin',
          error: 'pg_rewind from n2 failed for want of space; keeping the data directory',
          endedAt: NOW - endedAgoMs,
          failuresInRow,
        },
      }) as const;
    const leaderElsewhere = cluster({ leader: leaderKey('n2') });
    expect(
      decide(snapshot({ now: NOW, config: { loop_wait: 2 }, cluster: leaderElsewhere, local: rejoinFailed(3, 1000) })),
    ).toEqual({
      verdict:
        'waiting 7 s before rejoining n2 again: pg_rewind from n2 failed for want of space; keeping the data directory',
      actions: [{ type: 'wakeAt', at: NOW - 1000 + 8000 }],
    });
    expect(
      decide(snapshot({ now: NOW, config: { loop_wait: 2 }, cluster: leaderElsewhere, local: rejoinFailed(3, 8000) })),
    ).toMatchObject({
      verdict: 'running pg_rewind from n2',
      actions: [{ type: 'rejoin', useRewind: true }],
    });
  });

  it('rejoins again after the backoff, not started as a standby, when the node had started as a secondary before the rewind failed', () => {
    // The disk-full chaos round: the old leader started as a secondary, found its WAL past the fork, and pg_rewind
    // ran out of space; its pg_control's checkpoint lies before the fork, so only the failed rejoin tells.
    const rewindFailed = (endedAgoMs: number) =>
      ({
        pgState: 'stopped',
        sample: null,
        role: 'replica',
        dataDir: primaryDir,
        lastTask: {
          name: 'rejoin',
          error: 'pg_rewind from n2 failed for want of space; keeping the data directory',
          endedAt: NOW - endedAgoMs,
          failuresInRow: 1,
        },
      }) as const;
    const leaderElsewhere = cluster({ leader: leaderKey('n2') });
    expect(
      decide(snapshot({ now: NOW, config: { loop_wait: 2 }, cluster: leaderElsewhere, local: rewindFailed(1000) })),
    ).toMatchObject({
      verdict: expect.stringMatching(
        /^waiting \d+ s before rejoining n2 again: pg_rewind from n2 failed for want of space/,
      ),
      actions: [{ type: 'wakeAt' }],
    });
    expect(
      decide(snapshot({ now: NOW, config: { loop_wait: 2 }, cluster: leaderElsewhere, local: rewindFailed(60_000) })),
    ).toMatchObject({ actions: [{ type: 'rejoin', useRewind: true }] });
  });
});

describe('decide() after failed clones', () => {
  const NOW = Date.parse('2026-11-25T12:00:00Z');
  const empty = (failedClones: number, clonedAgoMs: number) =>
    ({
      pgState: 'stopped',
      sample: null,
      dataDir: { state: 'missing', standbySignal: false },
      failedClones,
      lastCloneAt: NOW - clonedAgoMs,
      lastError: 'pg_basebackup failed (exit 1): could not load private key file',
    }) as const;

  it('waits its backoff out before cloning again, and says why', () => {
    const decision = decide(
      snapshot({
        now: NOW,
        config: { loop_wait: 2 },
        cluster: cluster({ leader: leaderKey('n2') }),
        local: empty(2, 1000),
      }),
    );
    expect(decision).toEqual({
      verdict:
        'waiting 3 s before cloning again: 2 failed clone(s): pg_basebackup failed (exit 1): could not load private key file',
      actions: [{ type: 'wakeAt', at: NOW - 1000 + 4000 }],
    });
  });

  it('clones again once the backoff has passed', () => {
    const decision = decide(
      snapshot({
        now: NOW,
        config: { loop_wait: 2 },
        cluster: cluster({ leader: leaderKey('n2') }),
        local: empty(2, 5000),
      }),
    );
    expect(decision).toMatchObject({ verdict: "trying to bootstrap from leader 'n2'", actions: [{ type: 'clone' }] });
  });
});

describe('decide() when the running server answers nothing', () => {
  const hungFor = (ms: number) => ({ unresponsiveMs: ms, sample: primarySample(), role: 'primary' }) as const;

  it('the lock holder kills its hung primary, then releases the lock', () => {
    const decision = decide(
      snapshot({
        config: { postgres_unresponsive_timeout: 5 },
        cluster: cluster({ leader: leaderKey('n1') }),
        local: hungFor(5_500),
      }),
    );
    expect(decision).toEqual({
      verdict:
        'PostgreSQL has not answered for 5 s (postgres_unresponsive_timeout 5 s): killing it and releasing the leader key',
      actions: [{ type: 'killPostgres' }, { type: 'releaseLock' }],
    });
  });

  it('a stall shorter than the timeout changes nothing', () => {
    const decision = decide(
      snapshot({
        lockResult: 'refreshed',
        config: { postgres_unresponsive_timeout: 5 },
        cluster: cluster({ leader: leaderKey('n1') }),
        local: hungFor(4_900),
      }),
    );
    expect(decision).toMatchObject({ verdict: 'no action. I am (n1), the leader with the lock' });
  });

  it('leaves a paused cluster to its operator, and a replica to its health checks', () => {
    const paused = decide(
      snapshot({
        config: { postgres_unresponsive_timeout: 5, pause: true },
        cluster: cluster({ leader: leaderKey('n1') }),
        local: hungFor(9_000),
      }),
    );
    expect(paused).toEqual({
      verdict: 'PostgreSQL has not answered for 9 s (postgres_unresponsive_timeout 5 s)',
      actions: [],
    });
    const replica = decide(
      snapshot({
        config: { postgres_unresponsive_timeout: 5 },
        cluster: cluster({ leader: leaderKey('n2') }),
        local: { unresponsiveMs: 9_000 },
      }),
    );
    expect(replica).toMatchObject({ actions: [] });
  });

  it('kills a hung primary whose lock another node holds now (its agent came back after the key ran out)', () => {
    // Found by the model checker's hang (invariant 16): left alone, the server would take writes again on waking.
    const decision = decide(
      snapshot({
        config: { postgres_unresponsive_timeout: 5 },
        cluster: cluster({ leader: leaderKey('n2') }),
        local: hungFor(9_000),
      }),
    );
    expect(decision).toEqual({
      verdict:
        'PostgreSQL has not answered for 9 s (postgres_unresponsive_timeout 5 s): killing it, a primary without the leader key',
      actions: [{ type: 'killPostgres' }],
    });
    // An agent started beside the hung server has no reading of it: pg_control says it is a primary.
    const restartedAgent = decide(
      snapshot({
        config: { postgres_unresponsive_timeout: 5 },
        cluster: cluster({ leader: leaderKey('n2') }),
        local: {
          unresponsiveMs: 9_000,
          sample: null,
          dataDir: { state: 'initialized', standbySignal: false, clusterState: 'in production' },
        },
      }),
    );
    expect(restartedAgent).toMatchObject({ actions: [{ type: 'killPostgres' }] });
  });

  it('never counts a server as hung with the timeout at 0', () => {
    const decision = decide(
      snapshot({
        lockResult: 'refreshed',
        config: { postgres_unresponsive_timeout: 0 },
        cluster: cluster({ leader: leaderKey('n1') }),
        local: hungFor(600_000),
      }),
    );
    expect(decision).toMatchObject({ verdict: 'no action. I am (n1), the leader with the lock' });
  });
});
