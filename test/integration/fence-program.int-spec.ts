import { ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, openSync, closeSync, readFileSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { join } from 'node:path';
import { startEtcd, EtcdHandle } from '../../scripts/lib/etcd';
import { removeDir, tmpDir } from '../../scripts/lib/tmp';
import { waitFor } from '../../scripts/lib/wait-for';
import { FenceConnection } from '../../src/postgresql/fence/fence-client';
import {
  FenceJournalEntry,
  fencePaths,
  FenceTerm,
  PostmasterExitEvent,
} from '../../src/postgresql/fence/fence-protocol';
import { defaultFenceProgram, fenceCommand } from '../../src/postgresql/process/fence-program';
import type { TermRelease } from '../../src/common/term-release';
import { isProcessAlive } from '../../src/postgresql/process/os-process';
import { enableEtcdAuth } from '../helpers/etcd-auth';
import { makeTestCertificates } from '../helpers/test-certificates';

/**
 * The fence program (Python, `src/postgresql/fence/fence_*.py`) on its own, driven through the agent's
 * own client (`FenceConnection`) as the agent drives it. Its postmaster is a stand-in shell script, so
 * that each test can make it obey or ignore a signal; the lease it revokes lives in a real etcd. The
 * same fence runs real PostgreSQL in postgres-process.int-spec.ts and fence-failover.int-spec.ts.
 */
jest.setTimeout(60_000);

/** A postmaster stand-in: logs the signals it gets, ignores those in FAKE_IGNORE, and keeps a child of its own. */
const FAKE_POSTGRES = `#!/bin/sh
echo "started $$ $*"
sleep 600 &
echo $! > "$FAKE_CHILD_PID_FILE"
for signal in TERM INT QUIT; do
  case " $FAKE_IGNORE " in
    *" $signal "*) trap "echo ignored $signal" $signal ;;
    *) trap "echo got $signal; kill $!; exit 0" $signal ;;
  esac
done
while :; do sleep 0.02; done
`;

interface RunningFence {
  process: ChildProcess;
  exited: Promise<number | null>;
  stateDir: string;
  paths: ReturnType<typeof fencePaths>;
  childPidFile: string;
}

let root: string;
let binDir: string;
const started: RunningFence[] = [];

beforeAll(() => {
  root = tmpDir('stator-fence-program-');
  binDir = join(root, 'bin');
  mkdirSync(binDir);
  writeFileSync(join(binDir, 'postgres'), FAKE_POSTGRES);
  chmodSync(join(binDir, 'postgres'), 0o755);
});

afterEach(() => {
  for (const fence of started.splice(0)) {
    if (fence.process.exitCode === null) fence.process.kill('SIGKILL');
    const childPid = readPid(fence.childPidFile);
    for (const pid of [childPid, fence.process.pid]) if (pid && isProcessAlive(pid)) process.kill(pid, 'SIGKILL');
  }
  spawnSync('pkill', ['-KILL', '-f', `${binDir}/postgres`]);
});

afterAll(() => {
  if (!process.env.STATOR_KEEP_TEST_DIRS) removeDir(root);
});

let counter = 0;

function startFence(options: { ignore?: string; deadline?: number; bin?: string } = {}): RunningFence {
  const stateDir = join(root, `node${++counter}`);
  mkdirSync(join(stateDir, 'data'), { recursive: true });
  const childPidFile = join(stateDir, 'fake-child.pid');
  const launch = {
    dataDir: join(stateDir, 'data'),
    binDir: options.bin ?? binDir,
    stateDir,
    ...(options.deadline ? { deadline: options.deadline } : {}),
  };
  const command = fenceCommand(defaultFenceProgram(), JSON.stringify(launch));
  const log = openSync(join(stateDir, 'fence.log'), 'a');
  const child = spawn(command.file, command.args, {
    detached: true,
    stdio: ['ignore', log, log],
    env: { ...process.env, ...command.env, FAKE_IGNORE: options.ignore ?? '', FAKE_CHILD_PID_FILE: childPidFile },
  });
  closeSync(log);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const fence = { process: child, exited, stateDir, paths: fencePaths(stateDir), childPidFile };
  started.push(fence);
  return fence;
}

async function connect(
  fence: RunningFence,
): Promise<{ connection: FenceConnection; exit: Promise<PostmasterExitEvent> }> {
  const connection = await waitFor(() => FenceConnection.connect(fence.paths.socket, 500), {
    description: 'the fence to say hello',
    timeoutMs: 5000,
  });
  const exit = new Promise<PostmasterExitEvent>((resolve) =>
    connection.attach({ onExit: resolve, onLost: () => undefined }),
  );
  return { connection, exit };
}

function readPid(file: string): number | null {
  return existsSync(file) ? Number(readFileSync(file, 'utf8').trim()) || null : null;
}

function journal(fence: RunningFence): FenceJournalEntry[] {
  if (!existsSync(fence.paths.journal)) return [];
  return readFileSync(fence.paths.journal, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as FenceJournalEntry);
}

function postmasterLog(fence: RunningFence): string {
  return existsSync(fence.paths.postmasterLog) ? readFileSync(fence.paths.postmasterLog, 'utf8') : '';
}

describe('the fence program', () => {
  it('greets with its postmaster, stops it when asked, reports the exit to the agent and in its file, and leaves', async () => {
    const fence = startFence();
    const { connection, exit } = await connect(fence);
    expect(connection.hello).toMatchObject({ event: 'hello', fencePid: fence.process.pid, deadline: null });
    expect(isProcessAlive(connection.hello.pid)).toBe(true);
    expect(readFileSync(fence.paths.pidFile, 'utf8')).toBe(`${fence.process.pid}\n`);

    connection.send({ op: 'stop', mode: 'fast' });
    expect(await exit).toEqual({
      event: 'exit',
      pid: connection.hello.pid,
      code: 0,
      signal: null,
      requested: true,
      fenced: false,
    });
    expect(postmasterLog(fence)).toContain('got INT');
    expect(await fence.exited).toBe(0);
    expect(JSON.parse(readFileSync(fence.paths.exitFile, 'utf8'))).toMatchObject({
      pid: connection.hello.pid,
      requested: true,
      at: expect.any(Number),
    });
    expect(existsSync(fence.paths.socket) || existsSync(fence.paths.pidFile)).toBe(false);
  });

  it('fences at the deadline: SIGQUIT, then SIGKILL of a postmaster that ignores it and of every process it started', async () => {
    const fence = startFence({ ignore: 'QUIT' });
    const { connection, exit } = await connect(fence);
    connection.send({ op: 'arm', deadline: Date.now() + 200 });
    const reported = await exit;
    expect(reported).toMatchObject({ fenced: true, requested: false, code: null, signal: 'SIGKILL' });
    expect(postmasterLog(fence)).toContain('ignored QUIT');
    const postmasterChild = readPid(fence.childPidFile)!;
    await waitFor(() => !isProcessAlive(postmasterChild), { description: "the postmaster's own child to be gone" });
  });

  it('starts already armed with the deadline its agent armed last', async () => {
    // Far enough ahead to connect first: a 300 ms deadline fired before a loaded clean-clone CI connected.
    const fence = startFence({ deadline: Date.now() + 3000 });
    const { connection, exit } = await connect(fence);
    expect(connection.hello.deadline).toBeGreaterThan(Date.now() - 1000);
    expect(await exit).toMatchObject({ fenced: true, signal: null, code: 0 });
  });

  it('ignores what is not a request, keeps serving, and refuses a second fence on the same state directory', async () => {
    const fence = startFence();
    const { connection } = await connect(fence);
    connection.send({ op: 'arm', deadline: 'soon' } as never);
    connection.send({ op: 'stop', mode: 'gently' } as never);
    connection.send({ op: 'arm', deadline: Date.now() + 100, term: { agentPid: 'me' } } as never);
    const raw = createConnection(fence.paths.socket);
    raw.resume();
    raw.end('not json\n[1,2]\n');
    await new Promise((resolve) => raw.once('close', resolve));
    const again = await connect(fence);
    expect(again.connection.hello.pid).toBe(connection.hello.pid);
    const log = await waitFor(
      () => {
        const text = readFileSync(join(fence.stateDir, 'fence.log'), 'utf8');
        return text.includes('ignored arm with a malformed term') && text.includes('ignored unknown request')
          ? text
          : null;
      },
      { description: 'the fence to log every request it ignored' },
    );
    expect(log).toContain('ignored arm without a numeric deadline');
    expect(log).toContain('ignored stop with unknown mode gently');
    expect(log).toContain('ignored arm with a malformed term');
    expect(log).toContain('ignored malformed request: not json');
    expect(log).toContain('ignored unknown request [1,2]');

    const secondLaunch = fenceCommand(
      defaultFenceProgram(),
      JSON.stringify({ dataDir: join(fence.stateDir, 'data'), binDir, stateDir: fence.stateDir }),
    );
    const duplicate = spawn(secondLaunch.file, secondLaunch.args, {
      stdio: 'ignore',
      env: { ...process.env, ...secondLaunch.env },
    });
    expect(await new Promise((resolve) => duplicate.once('exit', resolve))).toBe(2);
    expect(isProcessAlive(connection.hello.pid)).toBe(true);
  });

  it('records a postmaster that cannot be started, and exits', async () => {
    const fence = startFence({ bin: join(root, 'no-such-bin') });
    expect(await fence.exited).toBe(0);
    const record = JSON.parse(readFileSync(fence.paths.exitFile, 'utf8'));
    expect(record).toMatchObject({ pid: 0, requested: false, fenced: false });
    expect(record.error).toContain('No such file or directory');
  });

  it('stops its postmaster when it is itself told to stop', async () => {
    const fence = startFence();
    const { exit } = await connect(fence);
    fence.process.kill('SIGTERM');
    expect(await exit).toMatchObject({ code: 0, requested: false, fenced: false });
    expect(await fence.exited).toBe(0);
  });
});

describe("the fence ending a leader's term", () => {
  let etcd: EtcdHandle;
  const etcdctl = (...args: string[]) =>
    execFileSync('etcdctl', [`--endpoints=${etcd.endpoint}`, ...args], {
      env: { ...process.env, ETCDCTL_API: '3' },
    }).toString();

  beforeAll(async () => {
    etcd = await startEtcd();
  });
  afterAll(async () => {
    await etcd?.stop();
  });

  /** A lease with a key on it, as a leader holds its leader key. */
  function leaderLease(key: string): string {
    const granted = /lease ([0-9a-f]+) granted/.exec(etcdctl('lease', 'grant', '60'))![1];
    etcdctl('put', `--lease=${granted}`, key, 'node1');
    return BigInt(`0x${granted}`).toString();
  }

  function term(leaseId: string, graceMs: number): FenceTerm {
    return { agentPid: process.pid, graceMs, release: { endpoints: [`http://${etcd.endpoint}`], leaseId } };
  }

  it('stops PostgreSQL once its agent is gone for the grace period, then, and only then, revokes the lease', async () => {
    const leaseId = leaderLease('/service/demo/leader');
    const fence = startFence();
    const { connection } = await connect(fence);
    connection.send({ op: 'arm', deadline: Date.now() + 60_000, term: term(leaseId, 300) });
    await connection.close();

    expect(await fence.exited).toBe(0);
    const steps = journal(fence);
    expect(steps.map((entry) => entry.step)).toEqual([
      'agent_lost',
      'stopping_postgres',
      'postgres_stopped',
      'lease_revoked',
    ]);
    const exitRecord = JSON.parse(readFileSync(fence.paths.exitFile, 'utf8'));
    expect(exitRecord).toMatchObject({ requested: false, fenced: false, code: 0 });
    expect(steps[3].at).toBeGreaterThanOrEqual(exitRecord.at);
    expect(steps[1].at - steps[0].at).toBeGreaterThanOrEqual(290);
    expect(etcdctl('get', '/service/demo/leader')).toBe('');
  });

  it('keeps PostgreSQL and the lease when an agent connects within the grace period', async () => {
    const leaseId = leaderLease('/service/demo/kept');
    const fence = startFence();
    const first = await connect(fence);
    first.connection.send({ op: 'arm', deadline: Date.now() + 60_000, term: term(leaseId, 500) });
    await first.connection.close();
    await waitFor(() => journal(fence).length === 1, { description: 'agent_lost in the journal' });
    const second = await connect(fence);
    await new Promise((resolve) => setTimeout(resolve, 800));
    expect(journal(fence).map((entry) => entry.step)).toEqual(['agent_lost', 'agent_back']);
    expect(isProcessAlive(second.connection.hello.pid)).toBe(true);
    expect(etcdctl('get', '/service/demo/kept')).toContain('node1');
  });

  it('escalates its own stop to an immediate one when PostgreSQL ignores the fast shutdown, then revokes', async () => {
    const leaseId = leaderLease('/service/demo/stubborn');
    const fence = startFence({ ignore: 'INT' });
    const { connection } = await connect(fence);
    connection.send({ op: 'arm', deadline: Date.now() + 60_000, term: term(leaseId, 100) });
    await connection.close();
    expect(await fence.exited).toBe(0);
    expect(postmasterLog(fence)).toMatch(/ignored INT[\s\S]*got QUIT/);
    expect(journal(fence).map((entry) => entry.step)).toEqual([
      'agent_lost',
      'stopping_postgres',
      'postgres_stopped',
      'lease_revoked',
    ]);
    expect(etcdctl('get', '/service/demo/stubborn')).toBe('');
  });

  it('revokes the lease after a postmaster crash only when its agent is gone too', async () => {
    const leaseId = leaderLease('/service/demo/crashed');
    const goneAgent = spawnSync('true').pid!;
    const fence = startFence();
    const { connection, exit } = await connect(fence);
    const deadline = Date.now() + 60_000;
    connection.send({ op: 'arm', deadline, term: { ...term(leaseId, 60_000), agentPid: goneAgent } });
    // The arm has arrived once a new connection's hello carries its deadline.
    await waitFor(
      async () => {
        const observer = await FenceConnection.connect(fence.paths.socket, 500);
        await observer.close();
        return observer.hello.deadline === deadline;
      },
      { description: 'the fence to hold the arm' },
    );
    process.kill(connection.hello.pid, 'SIGKILL');
    expect(await exit).toMatchObject({ signal: 'SIGKILL', requested: false, fenced: false });
    expect(await fence.exited).toBe(0);
    const steps = journal(fence);
    expect(steps.map((entry) => entry.step)).toEqual(['postgres_stopped', 'lease_revoked']);
    expect(steps[0].detail).toContain('with its agent gone');
    expect(etcdctl('get', '/service/demo/crashed')).toBe('');
  });

  it('revokes the lease after the deadline fired, and journals a revoke it could not do', async () => {
    const fence = startFence();
    const { connection, exit } = await connect(fence);
    const unreachable = {
      agentPid: process.pid,
      graceMs: 60_000,
      release: { endpoints: ['http://127.0.0.1:9'], leaseId: '12345' },
    };
    connection.send({ op: 'arm', deadline: Date.now() + 100, term: unreachable });
    expect(await exit).toMatchObject({ fenced: true });
    const steps = journal(fence);
    expect(steps.map((entry) => entry.step)).toEqual(['postgres_stopped', 'lease_revoke_failed']);
    expect(steps[1].detail).toContain('not revoked within 3000 ms');
  });
});

describe('the fence revoking a lease on a production-style etcd', () => {
  /** Runs the fence's revoke on its own, as the fence does once its postmaster is gone. */
  function revokeWithFenceCode(release: TermRelease): [boolean, string] {
    const program = defaultFenceProgram();
    const fenceDir = join(program.script, '..');
    const code = `import json, sys; sys.path.insert(0, ${JSON.stringify(fenceDir)}); from fence_revoke import revoke_lease; print(json.dumps(revoke_lease(json.loads(sys.argv[1]), 3000)))`;
    return JSON.parse(execFileSync(program.interpreter, ['-c', code, JSON.stringify(release)]).toString());
  }

  function grantWithKey(etcdctl: (...args: string[]) => string): string {
    const granted = /lease ([0-9a-f]+) granted/.exec(etcdctl('lease', 'grant', '60'))![1];
    etcdctl('put', `--lease=${granted}`, '/service/demo/leader', 'node1');
    return BigInt(`0x${granted}`).toString();
  }

  it('over TLS with a client certificate', async () => {
    const dir = tmpDir('stator-fence-tls-');
    const certificates = makeTestCertificates(dir);
    const tls = { ca: certificates.ca, cert: certificates.nodeCert, key: certificates.nodeKey };
    const etcd = await startEtcd({ tls });
    try {
      const etcdctl = (...args: string[]) =>
        execFileSync(
          'etcdctl',
          [
            `--endpoints=https://${etcd.endpoint}`,
            `--cacert=${tls.ca}`,
            `--cert=${tls.cert}`,
            `--key=${tls.key}`,
            ...args,
          ],
          { env: { ...process.env, ETCDCTL_API: '3' } },
        ).toString();
      const leaseId = grantWithKey(etcdctl);
      const [revoked, detail] = revokeWithFenceCode({
        endpoints: [`https://${etcd.endpoint}`],
        leaseId,
        tls: { cacert: certificates.ca, cert: certificates.clientCert, key: certificates.clientKey },
      });
      expect(detail).toContain('revoked through https://');
      expect(revoked).toBe(true);
      expect(etcdctl('get', '/service/demo/leader')).toBe('');
    } finally {
      await etcd.stop();
      if (!process.env.STATOR_KEEP_TEST_DIRS) removeDir(dir);
    }
  });

  it('as an RBAC user limited to the cluster, after a first endpoint that does not answer', async () => {
    const etcd = await startEtcd();
    try {
      const etcdctl = (...args: string[]) =>
        execFileSync('etcdctl', [`--endpoints=${etcd.endpoint}`, ...args], {
          env: { ...process.env, ETCDCTL_API: '3' },
        }).toString();
      const leaseId = grantWithKey(etcdctl);
      const user = { name: 'stator', password: 'pw-1', prefixes: ['/service/'] };
      enableEtcdAuth(etcd, 'root-s3cret', [user]);
      const [revoked, detail] = revokeWithFenceCode({
        endpoints: ['http://127.0.0.1:9', `http://${etcd.endpoint}`],
        leaseId,
        auth: { username: user.name, password: user.password },
      });
      expect(detail).toContain(`revoked through http://${etcd.endpoint}`);
      expect(revoked).toBe(true);
      expect(etcdctl('--user=root:root-s3cret', 'get', '/service/demo/leader')).toBe('');
    } finally {
      await etcd.stop();
    }
  });
});
