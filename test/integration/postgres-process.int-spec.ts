import { spawn } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { firstValueFrom, timeout } from 'rxjs';
import { classifyStartFailure } from '../../src/ha/start-failure';
import { PgQuery } from '../../src/postgresql/pg-query';
import { PostgresCommandError, PostmasterExit } from '../../src/postgresql/postgres.port';
import { defaultFenceProgram } from '../../src/postgresql/process/fence-program';
import { RealPostgresProcess } from '../../src/postgresql/real-postgres-process';
import { freePort } from '../helpers/ports';
import { cleanupPgRoot, makePgTempRoot, PgTestNode, pgTestNode, processAlive } from '../helpers/postgres';

const START_TIMEOUT_MS = 20_000;
/** The build of RealPostgresProcess, for a test agent that runs as a process of its own. */
const COMPILED_PROCESS_MODULE = resolve(__dirname, '../../dist/src/postgresql/real-postgres-process.js');

/** Polls `probe` until it returns a value that is not undefined (errors count as "not yet"). */
async function eventually<T>(
  probe: () => Promise<T | undefined> | T | undefined,
  timeoutMs = 10_000,
  what = 'condition',
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${what}${lastError ? `: ${String(lastError)}` : ''}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The fence's record of the last postmaster exit; written just after the postmaster is reaped. */
function exitRecord(node: PgTestNode): Promise<Record<string, unknown>> {
  const path = join(node.stateDir, 'postmaster-exit.json');
  return eventually(
    () => (existsSync(path) ? JSON.parse(readFileSync(path, 'utf8')) : undefined),
    2000,
    'postmaster-exit.json',
  );
}

function nextExit(pg: RealPostgresProcess, withinMs: number): Promise<PostmasterExit> {
  return firstValueFrom(pg.exits().pipe(timeout(withinMs)));
}

describe('RealPostgresProcess and PgQuery against PostgreSQL 15', () => {
  let root: string;
  const queries: PgQuery[] = [];
  const handles: RealPostgresProcess[] = [];

  function handle(node: PgTestNode): RealPostgresProcess {
    const pg = new RealPostgresProcess({ name: node.name, config: node.config, stateDir: node.stateDir });
    handles.push(pg);
    return pg;
  }

  function sql(node: PgTestNode): PgQuery {
    const query = PgQuery.fromConfig(node.config);
    queries.push(query);
    return query;
  }

  beforeAll(async () => {
    root = await makePgTempRoot();
  });

  afterAll(async () => {
    await Promise.all(queries.map((query) => query.close()));
    await Promise.all(handles.map((pg) => pg.detach()));
    if (root) await cleanupPgRoot(root);
  });

  describe('a single primary under its fence', () => {
    let node: PgTestNode;
    let pg: RealPostgresProcess;
    let query: PgQuery;

    beforeAll(async () => {
      node = pgTestNode(root, 'solo', await freePort());
      pg = handle(node);
      query = sql(node);
    });

    it('initdb, configure and start give a primary on timeline 1', async () => {
      expect(await pg.inspectDataDir()).toEqual({ state: 'missing', standbySignal: false });
      await pg.initdb();
      const initialized = await pg.inspectDataDir();
      expect(initialized).toMatchObject({
        state: 'initialized',
        clusterState: 'shut down',
        timeline: 1,
        standbySignal: false,
      });
      expect(initialized.systemIdentifier).toMatch(/^\d+$/);

      await pg.configure({ role: 'primary', parameters: { work_mem: '8MB', 'stator.note': "it's" } });
      expect(existsSync(join(node.dataDir, 'postgresql.base.conf'))).toBe(true);
      const { pid } = await pg.start(START_TIMEOUT_MS);
      expect(pg.postmasterPid()).toBe(pid);
      await pg.postBootstrap();

      const sample = await query.sample();
      expect(sample).toMatchObject({
        inRecovery: false,
        timeline: 1,
        replicationState: null,
        receivedLsn: null,
        replication: [],
        systemIdentifier: initialized.systemIdentifier,
        pendingRestart: {},
      });
      expect(sample.serverVersion).toBeGreaterThanOrEqual(150000);
      expect(sample.postmasterStartTime).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d{6})?[+-]\d\d:\d\d$/);
      expect(sample.walPosition).toBeGreaterThan(0);
      const [settings] = await query.query<{ work_mem: string; note: string }>(
        "SELECT current_setting('work_mem') AS work_mem, current_setting('stator.note') AS note",
      );
      expect(settings).toEqual({ work_mem: '8MB', note: "it's" });
    }, 30_000);

    it('reports a changed restart-only parameter as a pending restart', async () => {
      await pg.configure({ role: 'primary', parameters: { max_connections: 30 } });
      await pg.reload();
      const sample = await eventually(
        async () => {
          const reading = await query.sample();
          return Object.keys(reading.pendingRestart).length ? reading : undefined;
        },
        5000,
        'pending_restart',
      );
      expect(sample.pendingRestart).toEqual({ max_connections: { old_value: '20', new_value: '30' } });
      await pg.configure({ role: 'primary', parameters: {} });
      await pg.reload();
    }, 10_000);

    it('reports a kill -9 of the postmaster through exits() within 1 s', async () => {
      const pid = pg.postmasterPid()!;
      const exit = nextExit(pg, 1000);
      process.kill(pid, 'SIGKILL');
      expect(await exit).toEqual({ pid, code: null, signal: 'SIGKILL', requested: false, fenced: false });
      expect(pg.postmasterPid()).toBeNull();
      expect(JSON.parse(readFileSync(join(node.stateDir, 'postmaster-exit.json'), 'utf8'))).toMatchObject({
        pid,
        signal: 'SIGKILL',
      });
    }, 10_000);

    it('samples again through the same PgQuery after the server came back', async () => {
      await pg.start(START_TIMEOUT_MS); // crash recovery
      const sample = await eventually(() => query.sample(), 5000, 'a sample after the restart');
      expect(sample).toMatchObject({ inRecovery: false, timeline: 1 });
    }, 30_000);

    it('rejects start promptly when the postmaster cannot start', async () => {
      await pg.stop('fast', 10_000);
      await pg.configure({ role: 'primary', parameters: { shared_buffers: 'lots' } });
      const began = Date.now();
      const failure = await pg.start(START_TIMEOUT_MS).catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(PostgresCommandError);
      expect(String((failure as Error).message)).toMatch(/shared_buffers/);
      expect(Date.now() - began).toBeLessThan(5000);
      await pg.configure({ role: 'primary', parameters: {} });
    }, 30_000);

    it('leaves a start that outlives its deadline running, says so (still starting), and a stop ends it', async () => {
      // A standby with hot_standby off never accepts connections: to the agent, a start longer than any deadline.
      await pg.configure({ role: 'replica', upstream: null, parameters: { hot_standby: 'off' } });
      const failure = await pg.start(2000).catch((error: unknown) => error as Error);
      expect(failure).toBeInstanceOf(Error);
      expect(classifyStartFailure(failure instanceof Error ? failure.message : null)).toBe('still_starting');
      const pid = pg.postmasterPid();
      expect(pid).not.toBeNull();
      expect(processAlive(pid!)).toBe(true);
      // What the postgres machine does with a STOP in start_failed.
      await pg.stop('immediate', 5000);
      expect(processAlive(pid!)).toBe(false);
      expect(pg.postmasterPid()).toBeNull();
      await pg.configure({ role: 'primary', parameters: {} });
    }, 30_000);

    it('says the fence needs Python 3 when its interpreter cannot be run, and starts nothing', async () => {
      const withoutPython = new RealPostgresProcess({
        name: node.name,
        config: node.config,
        stateDir: node.stateDir,
        fence: defaultFenceProgram('/nonexistent/python3'),
      });
      await expect(withoutPython.start(START_TIMEOUT_MS)).rejects.toThrow(
        'the fence runs on Python 3, and /nonexistent/python3 cannot be run (ENOENT): install python3 or set fence.python',
      );
      expect(await withoutPython.adopt()).toBeNull();
    }, 30_000);

    it('fences the postmaster when the armed deadline passes', async () => {
      const { pid } = await pg.start(START_TIMEOUT_MS);
      const deadline = Date.now() + 1000;
      pg.armFence(Date.now() + 60_000);
      pg.armFence(deadline); // the last arm wins, even an earlier one
      const exit = await nextExit(pg, 4000);
      const firedAfter = Date.now() - deadline;
      expect(exit).toMatchObject({ pid, requested: false, fenced: true });
      expect(firedAfter).toBeGreaterThanOrEqual(0);
      expect(firedAfter).toBeLessThan(1500);
      expect(processAlive(pid)).toBe(false);
    }, 30_000);

    it('starts the next postmaster under the deadline armed last: one already past fences it at once', async () => {
      await expect(pg.start(START_TIMEOUT_MS)).rejects.toThrow();
      expect(await exitRecord(node)).toMatchObject({ fenced: true, requested: false });
    }, 30_000);

    it('keeps a disarmed postmaster running past the old deadline', async () => {
      pg.disarmFence();
      const { pid } = await pg.start(START_TIMEOUT_MS);
      pg.armFence(Date.now() + 300);
      pg.disarmFence();
      await new Promise((resolve) => setTimeout(resolve, 600)); // the old deadline must pass
      expect(processAlive(pid)).toBe(true);
      expect(pg.postmasterPid()).toBe(pid);
    }, 30_000);

    it('fences even when the agent is gone (its handle dropped after arming)', async () => {
      const pid = pg.postmasterPid()!;
      pg.armFence(Date.now() + 1000);
      await pg.detach();
      await eventually(() => (processAlive(pid) ? undefined : true), 4000, 'the fenced postmaster to go');
      expect(await exitRecord(node)).toMatchObject({ pid, fenced: true, requested: false });
    }, 30_000);

    it('fences a postmaster whose agent process is frozen (SIGSTOP) with the socket still open', async () => {
      // A real agent process (the compiled module) starts PostgreSQL and arms the fence, then freezes.
      const agentScript = `
        const { RealPostgresProcess } = require(${JSON.stringify(COMPILED_PROCESS_MODULE)});
        const options = JSON.parse(process.argv[1]);
        const pg = new RealPostgresProcess(options);
        pg.start(${START_TIMEOUT_MS}).then(async ({ pid }) => {
          pg.armFence(Date.now() + 1500);
          await new Promise((resolve) => setTimeout(resolve, 100)); // let the arm reach the fence
          process.stdout.write(JSON.stringify({ pid }) + '\\n');
          setInterval(() => undefined, 1000);
        }, (error) => { console.error(error); process.exit(1); });`;
      const agent = spawn(
        process.execPath,
        ['-e', agentScript, JSON.stringify({ name: node.name, config: node.config, stateDir: node.stateDir })],
        {
          stdio: ['ignore', 'pipe', 'inherit'],
        },
      );
      const agentExited = new Promise((resolve) => agent.once('exit', resolve));
      try {
        const line = await new Promise<string>((resolve, reject) => {
          agent.stdout.once('data', (chunk: Buffer) => resolve(chunk.toString()));
          agent.once('exit', (code) => reject(new Error(`agent exited (${code}) before starting postgres`)));
        });
        const { pid } = JSON.parse(line) as { pid: number };
        process.kill(agent.pid!, 'SIGSTOP');
        await eventually(() => (processAlive(pid) ? undefined : true), 5000, 'the fenced postmaster to go');
        expect(await exitRecord(node)).toMatchObject({ pid, fenced: true, requested: false });
      } finally {
        process.kill(agent.pid!, 'SIGKILL');
        await agentExited;
      }
    }, 30_000);

    it('lets a new handle adopt the running postmaster, then stop it', async () => {
      const { pid } = await pg.start(START_TIMEOUT_MS);
      await pg.detach();
      const successor = handle(node);
      expect(await successor.adopt()).toEqual({ pid });
      expect(successor.postmasterPid()).toBe(pid);
      const exit = nextExit(successor, 10_000);
      await successor.stop('fast', 10_000);
      expect(await exit).toMatchObject({ pid, code: 0, requested: true, fenced: false });
      expect(await successor.adopt()).toBeNull();
      expect((await successor.inspectDataDir()).clusterState).toBe('shut down');
    }, 30_000);

    it('puts a postmaster whose fence was killed under a new fence that adopts it, and stops it through that fence', async () => {
      const { pid } = await pg.start(START_TIMEOUT_MS);
      const fencePidFile = join(node.stateDir, 'fence.pid');
      const fencePid = Number(readFileSync(fencePidFile, 'utf8'));
      const exits: PostmasterExit[] = [];
      const subscription = pg.exits().subscribe((exit) => exits.push(exit));
      process.kill(fencePid, 'SIGKILL');
      const newFence = await eventually(
        () => {
          const next = existsSync(fencePidFile) ? Number(readFileSync(fencePidFile, 'utf8')) : 0;
          return next && next !== fencePid && processAlive(next) && pg.fenceState().connected ? next : undefined;
        },
        5000,
        'a new fence adopting the postmaster',
      );
      expect(exits).toEqual([]); // the same postmaster runs on, never restarted
      expect(pg.postmasterPid()).toBe(pid);
      expect(processAlive(pid)).toBe(true);
      expect(pg.takeFenceJournal().map((entry) => entry.detail)).toEqual([
        `postmaster ${pid} ran without a fence (its fence was killed or died); fence ${newFence} adopted it`,
      ]);

      await pg.stop('fast', 10_000);
      expect(processAlive(pid)).toBe(false);
      // Not its parent, the new fence cannot read the exit status; it knows the stop was asked for.
      expect(exits).toHaveLength(1);
      expect(exits[0]).toMatchObject({ pid, code: null, signal: null, requested: true, fenced: false });
      subscription.unsubscribe();
    }, 30_000);

    // Last on this node: a postmaster killed without its fence becomes a zombie of PID 1 and keeps its
    // postmaster.pid, so a restart would wait for PID 1 to reap it (slow in some containers).
    it('reports the exit when the fence is killed together with its postmaster', async () => {
      const { pid } = await pg.start(START_TIMEOUT_MS);
      const fencePid = Number(readFileSync(join(node.stateDir, 'fence.pid'), 'utf8'));
      const exit = nextExit(pg, 2000);
      process.kill(-fencePid, 'SIGKILL'); // the fence's process group: fence and postmaster
      expect(await exit).toMatchObject({ pid, requested: false, fenced: false });
      expect(pg.postmasterPid()).toBeNull();
    }, 30_000);
  });

  // As the reference: the command split as a shell would and run without one, `--scope` and `--datadir` appended.
  const script = (body: string) => ({ command: `sh -c '${body}' bootstrap-script`, options: {} });

  it("runs a custom bootstrap script as the OS user with the reference's arguments, and removes the data directory on request", async () => {
    const node = pgTestNode(root, 'custom', await freePort());
    const pg = handle(node);
    const failure = await pg
      .customBootstrap(script('echo "no backup today" >&2; exit 3'))
      .catch((error: unknown) => error);
    expect(failure).toMatchObject({ name: 'PostgresCommandError', exitCode: 3, stderrTail: 'no backup today' });
    // As the reference: a bootstrap method finds no data directory (a restore tool may refuse one), and none is left.
    expect((await pg.inspectDataDir()).state).toBe('missing');

    // $1 is --scope=..., $2 --datadir=<data_dir>, then the section's own keys.
    const initdb = `test "$1" = --scope= && test "$3" = --label=True && "${node.config.bin_dir}/initdb" -D "\${2#--datadir=}" -U postgres --no-sync > /dev/null && test "$(id -u)" != 0`;
    await pg.customBootstrap({ ...script(initdb), options: { label: true } });
    expect(await pg.inspectDataDir()).toMatchObject({ state: 'initialized', clusterState: 'shut down', timeline: 1 });
    await pg.removeDataDir();
    expect((await pg.inspectDataDir()).state).toBe('missing');
  }, 30_000);

  it('kills a command that outlives its deadline and says so, leaving nothing running', async () => {
    const node = pgTestNode(root, 'stuck', await freePort());
    const pg = new RealPostgresProcess({
      name: node.name,
      config: node.config,
      stateDir: node.stateDir,
      commandDeadlinesMs: { dataCopy: 1000 },
    });
    handles.push(pg);
    const started = performance.now();
    const pidFile = join(tmpdir(), `stator-stuck-${process.pid}-${Date.now()}.pid`);
    const failure = await pg
      .customBootstrap(script(`echo $$ > ${pidFile}; exec sleep 60`))
      .catch((error: unknown) => error);
    expect(performance.now() - started).toBeLessThan(5000);
    expect(failure).toMatchObject({
      name: 'PostgresCommandError',
      stderrTail: expect.stringContaining('did not finish within 1 s: killed'),
    });
    const pid = Number(readFileSync(pidFile, 'utf8'));
    rmSync(pidFile, { force: true });
    expect(pid).toBeGreaterThan(0);
    expect(() => process.kill(pid, 0)).toThrow();
  }, 30_000);

  it('does not lose an exit the fence sends together with its hello', async () => {
    // A stand-in fence whose postmaster died just as we connected: hello and exit arrive in one read.
    const node = pgTestNode(root, 'racy', await freePort());
    await mkdir(node.stateDir, { recursive: true });
    const server = createServer((socket) => {
      const hello = { event: 'hello', pid: 424242, startedAt: Date.now(), fencePid: process.pid, deadline: null };
      const exit = { event: 'exit', pid: 424242, code: 1, signal: null, requested: false, fenced: false };
      socket.end(`${JSON.stringify(hello)}\n${JSON.stringify(exit)}\n`);
    });
    await new Promise<void>((resolveListen) => server.listen(join(node.stateDir, 'fence.sock'), resolveListen));
    try {
      const pg = handle(node);
      const exit = nextExit(pg, 2000);
      expect(await pg.adopt()).toBeNull();
      expect(await exit).toEqual({ pid: 424242, code: 1, signal: null, requested: false, fenced: false });
      expect(pg.postmasterPid()).toBeNull();
    } finally {
      await new Promise((resolveClose) => server.close(resolveClose));
    }
  });

  describe('replication, promotion and pg_rewind', () => {
    let nodeA: PgTestNode;
    let nodeB: PgTestNode;
    let pgA: RealPostgresProcess;
    let pgB: RealPostgresProcess;
    let sqlA: PgQuery;
    let sqlB: PgQuery;
    const upstream = (node: PgTestNode) => ({ name: node.name, host: '127.0.0.1', port: node.port });

    async function rowsOf(query: PgQuery): Promise<string[]> {
      const rows = await query.query<{ note: string }>('SELECT note FROM notes ORDER BY id');
      return rows.map((row) => row.note);
    }

    beforeAll(async () => {
      nodeA = pgTestNode(root, 'a', await freePort());
      nodeB = pgTestNode(root, 'b', await freePort());
      pgA = handle(nodeA);
      pgB = handle(nodeB);
      sqlA = sql(nodeA);
      sqlB = sql(nodeB);
      await pgA.initdb();
      await pgA.configure({ role: 'primary', parameters: {} });
      await pgA.start(START_TIMEOUT_MS);
      await pgA.postBootstrap();
      await sqlA.query('CREATE TABLE notes (id serial PRIMARY KEY, note text NOT NULL)');
      await sqlA.query("INSERT INTO notes (note) VALUES ('before clone')");
    }, 30_000);

    it('clones a replica that streams rows written on the primary', async () => {
      await sqlA.syncPhysicalSlots(['b', 'gone']);
      await sqlA.syncPhysicalSlots(['b']); // drops the slot no longer wanted
      expect(await sqlA.query('SELECT slot_name FROM pg_replication_slots ORDER BY 1')).toEqual([{ slot_name: 'b' }]);

      expect((await pgB.inspectDataDir()).state).toBe('missing');
      await pgB.basebackup(upstream(nodeA));
      await pgB.configure({ role: 'replica', upstream: upstream(nodeA), slotName: 'b', parameters: {} });
      expect((await pgB.inspectDataDir()).standbySignal).toBe(true);
      await pgB.start(START_TIMEOUT_MS);

      const streaming = await eventually(
        async () => {
          const sample = await sqlB.sample();
          return sample.replicationState === 'streaming' ? sample : undefined;
        },
        10_000,
        'b to stream',
      );
      expect(streaming).toMatchObject({ inRecovery: true, timeline: 1, replayPaused: false });
      expect(streaming.receivedLsn).toBeGreaterThan(0);

      const primary = await sqlA.sample();
      expect(primary.replication).toEqual([
        expect.objectContaining({
          usename: 'replicator',
          application_name: 'b',
          client_addr: '127.0.0.1',
          state: 'streaming',
          sync_state: 'async',
          sync_priority: 0,
        }),
      ]);
      // Positions as numbers once the standby has reported them (its first reply may still be on its way).
      const { write_lsn, flush_lsn, replay_lsn } = primary.replication[0];
      for (const position of [write_lsn, flush_lsn, replay_lsn])
        expect(position === null || Number.isInteger(position)).toBe(true);
      expect(primary.systemIdentifier).toBe(streaming.systemIdentifier);

      await sqlA.query("INSERT INTO notes (note) VALUES ('streamed')");
      await eventually(
        async () => ((await rowsOf(sqlB)).includes('streamed') ? true : undefined),
        10_000,
        'the row on b',
      );
      const replica = await sqlB.sample();
      // latest_end_lsn comes with the first message from the primary after streaming began (here, the WAL of that row).
      expect(replica.latestEndLsn).toBeGreaterThan(0);
      expect(replica.replayedTimestamp).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d/);
      expect(replica.walPosition).toBeGreaterThanOrEqual(replica.replayedLsn!);
    }, 40_000);

    it('promotes the replica onto timeline 2', async () => {
      await pgB.promote(15_000);
      const sample = await sqlB.sample();
      expect(sample).toMatchObject({ inRecovery: false, timeline: 2, replicationState: null });
      await sqlB.query("INSERT INTO notes (note) VALUES ('on b after promotion')");
    }, 30_000);

    it('brings the diverged old primary back as a replica of the new one with crash recovery and pg_rewind', async () => {
      // The old primary goes on taking writes on timeline 1 (what the fence exists to cut short)...
      await sqlA.query("INSERT INTO notes (note) VALUES ('lost on a')");
      await sqlA.query('SELECT pg_switch_wal()');
      // ...and crashes.
      const exit = nextExit(pgA, 10_000);
      await pgA.stop('immediate', 10_000);
      expect(await exit).toMatchObject({ requested: true, fenced: false });
      expect((await pgA.inspectDataDir()).clusterState).toBe('in production');

      await pgA.crashRecovery();
      expect((await pgA.inspectDataDir()).clusterState).toBe('shut down');

      await sqlB.checkpoint(); // pg_rewind reads the new timeline from the source's pg_control
      await sqlB.syncPhysicalSlots(['a']);
      expect(await pgA.rewind(upstream(nodeB))).toBe('rewound');
      await pgA.configure({ role: 'replica', upstream: upstream(nodeB), slotName: 'a', parameters: {} });
      await pgA.start(START_TIMEOUT_MS);

      const streaming = await eventually(
        async () => {
          const sample = await sqlA.sample();
          return sample.replicationState === 'streaming' ? sample : undefined;
        },
        15_000,
        'a to stream from b',
      );
      expect(streaming).toMatchObject({ inRecovery: true, timeline: 2 });

      await sqlB.query("INSERT INTO notes (note) VALUES ('streamed to a')");
      const rows = await eventually(
        async () => {
          const notes = await rowsOf(sqlA);
          return notes.includes('streamed to a') ? notes : undefined;
        },
        10_000,
        'the row on a',
      );
      expect(rows).toEqual(['before clone', 'streamed', 'on b after promotion', 'streamed to a']);

      // Rewinding a node that follows the new timeline finds nothing to do.
      await pgA.stop('fast', 10_000);
      expect(await pgA.rewind(upstream(nodeB))).toBe('not_needed');
    }, 60_000);

    afterAll(async () => {
      await Promise.all([pgA?.stop('fast', 10_000), pgB?.stop('fast', 10_000)]);
    }, 30_000);
  });
});
