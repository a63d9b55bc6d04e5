import { ManualClock } from '../../src/common/clock';
import { formatLsn } from '../../src/common/lsn';
import {
  MemoryPostgresNetwork,
  MemoryPostgresProcess,
  MemoryPostgresQuery,
  MemoryPostgresServer,
} from '../../src/postgresql/memory';
import { PostgresCommandError, PostgresSettings, PostmasterExit } from '../../src/postgresql/postgres.port';

const START_TIMEOUT_MS = 10_000;
const HISTORY_SQL = 'SELECT pg_read_file($1) AS content';

interface TestNode {
  server: MemoryPostgresServer;
  pg: MemoryPostgresProcess;
  query: MemoryPostgresQuery;
  exits: PostmasterExit[];
}

describe('in-memory PostgreSQL adapters', () => {
  let clock: ManualClock;
  let network: MemoryPostgresNetwork;
  let node1: TestNode;
  let node2: TestNode;

  const addNode = (name: string): TestNode => {
    const server = network.addServer({ name, host: `10.0.0.${name.slice(-1)}` });
    const pg = new MemoryPostgresProcess(server);
    const exits: PostmasterExit[] = [];
    pg.exits().subscribe((exit) => exits.push(exit));
    return { server, pg, query: new MemoryPostgresQuery(server), exits };
  };
  const primary: PostgresSettings = { role: 'primary', parameters: {} };
  const replicaOf = (upstream: TestNode, slotName: string | null = null): PostgresSettings => ({
    role: 'replica',
    upstream: upstream.server.node,
    slotName,
    parameters: {},
  });
  const bootstrap = async (node: TestNode) => {
    await node.pg.initdb();
    await node.pg.configure(primary);
    await node.pg.start(START_TIMEOUT_MS);
    await node.pg.postBootstrap();
  };
  const cloneAndStart = async (node: TestNode, from: TestNode, slotName: string | null = null) => {
    await node.pg.basebackup(from.server.node);
    await node.pg.configure(replicaOf(from, slotName));
    return node.pg.start(START_TIMEOUT_MS);
  };
  const historyFile = (timeline: number) => `pg_wal/${timeline.toString(16).toUpperCase().padStart(8, '0')}.history`;

  beforeEach(() => {
    clock = new ManualClock();
    network = new MemoryPostgresNetwork(clock);
    node1 = addNode('node1');
    node2 = addNode('node2');
  });

  describe('bootstrap and clone', () => {
    it('initdb creates a cleanly shut down cluster on timeline 1 that starts as a primary', async () => {
      expect(await node1.pg.inspectDataDir()).toEqual({ state: 'missing', standbySignal: false });
      await node1.pg.initdb();
      expect(await node1.pg.inspectDataDir()).toMatchObject({
        state: 'initialized',
        clusterState: 'shut down',
        timeline: 1,
        standbySignal: false,
      });

      const { pid } = await node1.pg.start(START_TIMEOUT_MS);
      expect(node1.pg.postmasterPid()).toBe(pid);
      const sample = await node1.query.sample();
      expect(sample).toMatchObject({ inRecovery: false, timeline: 1, replicationState: null, receivedLsn: null });
      expect(sample.systemIdentifier).toBe((await node1.pg.inspectDataDir()).systemIdentifier);
    });

    it('a replica clone has the leader’s system identifier and timeline, and streams what the leader writes', async () => {
      await bootstrap(node1);
      await cloneAndStart(node2, node1);
      const leaderWal = node1.server.write(4096);

      const replica = await node2.query.sample();
      expect(replica.systemIdentifier).toBe((await node1.query.sample()).systemIdentifier);
      expect(replica).toMatchObject({
        inRecovery: true,
        timeline: 1,
        replicationState: 'streaming',
        walPosition: leaderWal,
        latestEndLsn: leaderWal,
      });
      expect((await node1.query.sample()).replication).toEqual([
        {
          usename: 'replicator',
          application_name: 'node2',
          client_addr: '10.0.0.2',
          state: 'streaming',
          sync_state: 'async',
          sync_priority: 0,
          write_lsn: leaderWal,
          flush_lsn: leaderWal,
          replay_lsn: leaderWal,
        },
      ]);
    });

    it('refuses to clone before post-bootstrap created the replication role, and leaves the directory empty', async () => {
      await node1.pg.initdb();
      await node1.pg.start(START_TIMEOUT_MS);
      await expect(node2.pg.basebackup(node1.server.node)).rejects.toThrow(
        /password authentication failed for user "replicator"/,
      );
      expect((await node2.pg.inspectDataDir()).state).toBe('empty');
    });

    it('a different cluster (own initdb) never streams from the leader', async () => {
      await bootstrap(node1);
      await node2.pg.initdb();
      await node2.pg.configure(replicaOf(node1));
      await node2.pg.start(START_TIMEOUT_MS);
      expect((await node2.query.sample()).replicationState).toBeNull();
    });
  });

  describe('promotion and timelines', () => {
    it('promote bumps the timeline and the history file lists the switch at the replica’s position', async () => {
      await bootstrap(node1);
      await cloneAndStart(node2, node1);
      const switchPoint = node1.server.write(1000);
      await node1.pg.stop('fast', 1000);
      const atStop = node2.server.walPosition!;
      expect(atStop).toBeGreaterThan(switchPoint); // it received the shutdown checkpoint too

      await node2.pg.promote(1000);
      const sample = await node2.query.sample();
      expect(sample).toMatchObject({ inRecovery: false, timeline: 2 });
      const [row] = await node2.query.query<{ content: string }>(HISTORY_SQL, [historyFile(2)]);
      expect(row.content).toBe(`1\t${formatLsn(atStop)}\tno recovery target specified\n`);
      await expect(node2.query.query(HISTORY_SQL, [historyFile(3)])).rejects.toThrow(/No such file or directory/);
    });

    it('pg_control shows the new timeline only after the first checkpoint of the promoted server', async () => {
      await bootstrap(node1);
      await cloneAndStart(node2, node1);
      await node2.pg.promote(1000);
      expect((await node2.pg.inspectDataDir()).timeline).toBe(1);
      await node2.query.checkpoint();
      expect((await node2.pg.inspectDataDir()).timeline).toBe(2);
    });

    it('a replica pointed at the new primary by a reload follows it onto the new timeline', async () => {
      const node3 = addNode('node3');
      await bootstrap(node1);
      await cloneAndStart(node2, node1);
      await cloneAndStart(node3, node1);
      await node1.pg.stop('fast', 1000);
      await node2.pg.promote(1000);

      await node3.pg.configure(replicaOf(node2));
      await node3.pg.reload();
      const position = node2.server.write(500);
      expect(await node3.query.sample()).toMatchObject({
        timeline: 2,
        walPosition: position,
        replicationState: 'streaming',
      });
      const [row] = await node3.query.query<{ content: string }>(HISTORY_SQL, [historyFile(2)]);
      expect(row.content).toMatch(/^1\t/);
    });

    it('a former primary that wrote past the fork fails to start as a replica until pg_rewind makes it follow', async () => {
      await bootstrap(node1);
      await cloneAndStart(node2, node1);
      node2.server.setStreamingPaused(true);
      node1.server.write(8192); // never reaches node2
      await node1.pg.stop('fast', 1000);
      node2.server.setStreamingPaused(false);
      await node2.pg.promote(1000);

      await node1.pg.configure(replicaOf(node2));
      const failure = await node1.pg.start(START_TIMEOUT_MS).catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(PostgresCommandError);
      expect((failure as PostgresCommandError).stderrTail).toMatch(
        /FATAL: {2}requested timeline 2 is not a child of this server's history/,
      );
      expect(node1.server.isRunning).toBe(false);

      expect(await node1.pg.rewind(node2.server.node)).toBe('rewound');
      await node1.pg.configure(replicaOf(node2));
      await node1.pg.start(START_TIMEOUT_MS);
      const position = node2.server.write(100);
      expect(await node1.query.sample()).toMatchObject({
        inRecovery: true,
        timeline: 2,
        walPosition: position,
        replicationState: 'streaming',
      });

      await node1.pg.stop('fast', 1000);
      expect(await node1.pg.rewind(node2.server.node)).toBe('not_needed');
    });

    it('pg_rewind wants a clean shutdown: crash recovery first after a crash', async () => {
      await bootstrap(node1);
      await cloneAndStart(node2, node1);
      node1.server.crash();
      await node2.pg.promote(1000);
      expect((await node1.pg.inspectDataDir()).clusterState).toBe('in production');
      await expect(node1.pg.rewind(node2.server.node)).rejects.toThrow(/target server must be shut down cleanly/);
      await node1.pg.crashRecovery();
      expect((await node1.pg.inspectDataDir()).clusterState).toBe('shut down');
      expect(await node1.pg.rewind(node2.server.node)).toBe('rewound');
    });
  });

  describe('postmaster exits', () => {
    it('a crash emits an exit with the pid, not requested, and pg_control still says the server runs', async () => {
      await bootstrap(node1);
      const pid = node1.pg.postmasterPid();
      node1.server.crash();
      expect(node1.exits).toEqual([{ pid, code: null, signal: 'SIGKILL', requested: false, fenced: false }]);
      expect(node1.pg.postmasterPid()).toBeNull();
      expect((await node1.pg.inspectDataDir()).clusterState).toBe('in production');
      await expect(node1.query.sample()).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    });

    it('an exit with an error code carries the end of the log', async () => {
      await bootstrap(node1);
      node1.server.crash({
        code: 1,
        log: ['PANIC:  could not write to file "pg_wal/xlogtemp.42": No space left on device'],
      });
      expect(node1.exits[0]).toMatchObject({
        code: 1,
        requested: false,
        lastLog: expect.stringContaining('No space left on device'),
      });
    });

    it('a requested stop is reported as requested and leaves a clean shutdown', async () => {
      await bootstrap(node1);
      const pid = node1.pg.postmasterPid();
      await node1.pg.stop('fast', 1000);
      expect(node1.exits).toEqual([{ pid, code: 0, signal: null, requested: true, fenced: false }]);
      expect((await node1.pg.inspectDataDir()).clusterState).toBe('shut down');
    });

    it('a detached handle reports nothing; a new one adopts the running postmaster and reports its exit', async () => {
      await bootstrap(node1);
      const pid = node1.pg.postmasterPid();
      await node1.pg.detach();
      const successor = new MemoryPostgresProcess(node1.server);
      const exits: PostmasterExit[] = [];
      successor.exits().subscribe((exit) => exits.push(exit));
      expect(await successor.adopt()).toEqual({ pid });
      node1.server.crash();
      expect(node1.exits).toEqual([]);
      expect(exits.map((exit) => exit.pid)).toEqual([pid]);
    });
  });

  describe('fence', () => {
    it('an armed fence past its deadline stops the server (immediate shutdown, reported as fenced)', async () => {
      await bootstrap(node1);
      const pid = node1.pg.postmasterPid();
      expect(node1.pg.fenceState()).toEqual({ connected: true, deadline: null });
      node1.pg.armFence(clock.now() + 5000);
      expect(node1.server.fenceDeadline).toBe(clock.now() + 5000);
      expect(node1.pg.fenceState()).toEqual({ connected: true, deadline: clock.now() + 5000 });

      clock.advance(4999);
      node1.server.tick();
      expect(node1.server.isRunning).toBe(true);
      clock.advance(1);
      node1.server.tick();
      expect(node1.exits).toEqual([{ pid, code: 0, signal: null, requested: false, fenced: true }]);
      expect(node1.pg.fenceState()).toEqual({ connected: false, deadline: null });
      expect((await node1.pg.inspectDataDir()).clusterState).toBe('in production');
    });

    it('the deadline is also checked on every adapter call; re-arming moves it and disarming cancels it', async () => {
      await bootstrap(node1);
      node1.pg.armFence(clock.now() + 1000);
      clock.advance(900);
      node1.pg.armFence(clock.now() + 1000);
      clock.advance(900);
      expect((await node1.query.sample()).inRecovery).toBe(false);
      node1.pg.disarmFence();
      clock.advance(60_000);
      expect((await node1.query.sample()).inRecovery).toBe(false);

      node1.pg.armFence(clock.now() + 1000);
      clock.advance(1000);
      await expect(node1.query.sample()).rejects.toThrow(/ECONNREFUSED/);
      expect(node1.exits.map((exit) => exit.fenced)).toEqual([true]);
    });

    it('a postmaster started later runs under the deadline armed last, from its first instant (none after a disarm)', async () => {
      await bootstrap(node1);
      node1.pg.armFence(clock.now() + 5000);
      await node1.pg.stop('fast', START_TIMEOUT_MS);
      await node1.pg.start(START_TIMEOUT_MS);
      expect(node1.server.fenceDeadline).toBe(clock.now() + 5000);
      clock.advance(5000);
      node1.server.tick();
      expect(node1.exits.map((exit) => exit.fenced)).toEqual([false, true]);

      node1.pg.disarmFence();
      await node1.pg.start(START_TIMEOUT_MS);
      expect(node1.server.fenceDeadline).toBeNull();
    });
  });

  describe('start failures', () => {
    it('an injected start failure surfaces as PostgresCommandError with the FATAL text; the next start succeeds', async () => {
      await node1.pg.initdb();
      node1.server.failNext('start', 'FATAL:  invalid value for parameter "max_connections": "many"');
      const failure = await node1.pg.start(START_TIMEOUT_MS).catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(PostgresCommandError);
      expect(failure).toMatchObject({ command: 'postgres', exitCode: 1 });
      expect((failure as PostgresCommandError).message).toContain(
        'FATAL:  invalid value for parameter "max_connections": "many"',
      );
      expect(node1.pg.postmasterPid()).toBeNull();
      expect(node1.exits).toEqual([]);

      await expect(node1.pg.start(START_TIMEOUT_MS)).resolves.toEqual({ pid: expect.any(Number) });
    });

    it('fails while the port is taken, and starts once it is free', async () => {
      await node1.pg.initdb();
      node1.server.takePort();
      await expect(node1.pg.start(START_TIMEOUT_MS)).rejects.toThrow(
        /Address already in use[\s\S]*FATAL: {2}could not create any TCP\/IP sockets/,
      );
      await expect(node1.pg.start(START_TIMEOUT_MS)).rejects.toBeInstanceOf(PostgresCommandError);
      node1.server.releasePort();
      await expect(node1.pg.start(START_TIMEOUT_MS)).resolves.toEqual({ pid: expect.any(Number) });
    });
  });

  describe('hung servers', () => {
    it('a frozen server times out its queries and stops streaming; killProcessTree ends it at once', async () => {
      await bootstrap(node1);
      await cloneAndStart(node2, node1);
      const pid = node1.pg.postmasterPid();
      node1.server.freeze();
      await expect(node1.query.sample()).rejects.toThrow('Query read timeout');
      expect(await node2.pg.upstreamReachable(node1.server.node)).toBe(false);
      expect((await node2.query.sample()).replicationState).toBeNull();

      await node1.pg.killProcessTree();
      expect(node1.exits).toEqual([{ pid, code: null, signal: 'SIGKILL', requested: false, fenced: false }]);
    });

    it('frozen in hang mode, a sample waits until the server is thawed', async () => {
      await bootstrap(node1);
      node1.server.freeze('hang');
      let answered = false;
      const pending = node1.query.sample().then((sample) => ((answered = true), sample));
      await new Promise((resolve) => setImmediate(resolve));
      expect(answered).toBe(false);
      node1.server.thaw();
      expect((await pending).inRecovery).toBe(false);
    });

    it('an injected sample failure rejects once', async () => {
      await bootstrap(node1);
      node1.server.failNext('sample', 'canceling statement due to statement timeout');
      await expect(node1.query.sample()).rejects.toThrow('canceling statement due to statement timeout');
      await expect(node1.query.sample()).resolves.toMatchObject({ inRecovery: false });
    });
  });

  describe('slots, settings and reachability', () => {
    it('a replica with a slot name streams once the slot exists; a slot in use survives a sync that leaves it out', async () => {
      await bootstrap(node1);
      await cloneAndStart(node2, node1, 'node2');
      expect((await node2.query.sample()).replicationState).toBeNull();
      await node1.query.syncPhysicalSlots(['node2', 'node3']);
      expect(node1.server.slots).toEqual(['node2', 'node3']);
      expect((await node2.query.sample()).replicationState).toBe('streaming');

      await node1.query.syncPhysicalSlots([]);
      expect(node1.server.slots).toEqual(['node2']);
      await expect(node1.query.syncPhysicalSlots(['Bad-Name'])).rejects.toThrow(/invalid character/);
    });

    it('a changed restart-only parameter is pending after a reload, and applied by a restart', async () => {
      await node1.pg.initdb();
      await node1.pg.configure({ role: 'primary', parameters: { max_connections: 100, work_mem: '4MB' } });
      await node1.pg.start(START_TIMEOUT_MS);
      await node1.pg.configure({ role: 'primary', parameters: { max_connections: 200, work_mem: '8MB' } });
      await node1.pg.reload();
      expect((await node1.query.sample()).pendingRestart).toEqual({
        max_connections: { old_value: '100', new_value: '200' },
      });
      await node1.pg.stop('fast', 1000);
      await node1.pg.start(START_TIMEOUT_MS);
      expect((await node1.query.sample()).pendingRestart).toEqual({});
    });

    it('an unreachable upstream is reported so, and its replica stops streaming until it is back', async () => {
      await bootstrap(node1);
      await cloneAndStart(node2, node1);
      node1.server.setReachable(false);
      const position = node1.server.write(100);
      expect(await node2.pg.upstreamReachable(node1.server.node)).toBe(false);
      expect((await node2.query.sample()).walPosition).toBeLessThan(position);
      node1.server.setReachable(true);
      expect(await node2.query.sample()).toMatchObject({ walPosition: position, replicationState: 'streaming' });
    });
  });
});
