import { ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { LocalCluster } from '../../scripts/lib/local-cluster';
import { removeDir, tmpDir } from '../../scripts/lib/tmp';
import { waitFor } from '../../scripts/lib/wait-for';

/**
 * statorctl as a person uses it, on real clusters: in tmux, answering switchover's prompts and
 * reading its progress; list, pause/resume --wait, edit-config with an EDITOR script, events
 * --follow, diagnose of every member; a cluster with basic auth reached
 * through a configuration file (members from etcd), and a Patroni-compatible one through --api.
 */
jest.setTimeout(90_000);

const REPO_ROOT = join(__dirname, '..', '..');
const STATORCTL = join(REPO_ROOT, 'bin', 'statorctl.js');
const ARTIFACTS = join(REPO_ROOT, 'test-artifacts');
const AUTH = { username: 'admin', password: 'op-secret' };

function statorctl(args: string[], env: Record<string, string> = {}, input = '') {
  const result = spawnSync(process.execPath, [STATORCTL, ...args], {
    encoding: 'utf8',
    input,
    env: { PATH: process.env.PATH ?? '', TZ: 'UTC', ...env },
    timeout: 60_000,
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** A tmux session running a shell, driven by keys and read from its pane. */
class Tmux {
  constructor(readonly session: string) {
    execFileSync('tmux', ['new-session', '-d', '-s', session, '-x', '200', '-y', '50', 'bash --noprofile --norc']);
    execFileSync('tmux', ['set-option', '-t', session, 'history-limit', '5000']);
  }

  type(text: string): void {
    execFileSync('tmux', ['send-keys', '-t', this.session, '-l', text]);
    execFileSync('tmux', ['send-keys', '-t', this.session, 'Enter']);
  }

  /** The whole pane with its history, wrapped lines joined. */
  screen(): string {
    return execFileSync('tmux', ['capture-pane', '-p', '-J', '-S', '-', '-t', this.session], { encoding: 'utf8' });
  }

  async waitForText(pattern: RegExp, timeoutMs = 20_000): Promise<RegExpExecArray> {
    return waitFor(() => pattern.exec(this.screen()), {
      timeoutMs,
      description: `${pattern} on the tmux screen:\n${this.screen().trimEnd()}`,
    });
  }

  kill(): void {
    spawnSync('tmux', ['kill-session', '-t', this.session]);
  }
}

/** A 2-node Patroni-compatible cluster; started while the first cluster's tests run, so the two startups overlap. */
async function startCompatCluster(): Promise<{ cluster: LocalCluster; baseDir: string }> {
  const baseDir = tmpDir('statorctl-compat-');
  const cluster = await LocalCluster.start({
    nodes: 2,
    baseDir,
    ttl: 10,
    loopWait: 2,
    retryTimeout: 4,
    compat: 'patroni',
  });
  const leader = await cluster.waitForLeader(60_000);
  await cluster.waitForStreaming(
    cluster.nodes.filter((node) => node !== leader).map((node) => node.name),
    60_000,
  );
  return { cluster, baseDir };
}
let compatCluster: Promise<{ cluster: LocalCluster; baseDir: string }>;

describe('statorctl on a cluster with basic auth, reached through a configuration file', () => {
  let cluster: LocalCluster;
  let baseDir: string;
  let ctlFile: string;
  const startedAt = Date.now();
  const env = () => ({ STATORCTL_CONFIG: ctlFile });

  beforeAll(async () => {
    baseDir = tmpDir('statorctl-');
    // restapi.authentication from the environment the agents start with.
    process.env.PATRONI_RESTAPI_USERNAME = AUTH.username;
    process.env.PATRONI_RESTAPI_PASSWORD = AUTH.password;
    try {
      cluster = await LocalCluster.start({ nodes: 3, baseDir, ttl: 10, loopWait: 2, retryTimeout: 4 });
    } finally {
      delete process.env.PATRONI_RESTAPI_USERNAME;
      delete process.env.PATRONI_RESTAPI_PASSWORD;
    }
    // Its agents start after this cluster's, without the credentials in their environment.
    compatCluster = startCompatCluster();
    compatCluster.catch(() => undefined);
    // What a patronictl user keeps: scope, namespace, etcd and the API credentials; no member address.
    ctlFile = join(baseDir, 'ctl.yml');
    writeFileSync(
      ctlFile,
      stringify({
        scope: cluster.scope,
        namespace: '/service',
        etcd3: { hosts: [cluster.nodes[0].etcdEndpoint] },
        restapi: { authentication: AUTH },
      }),
    );
    const leader = await cluster.waitForLeader(30_000);
    await cluster.waitForStreaming(
      cluster.nodes.filter((node) => node !== leader).map((node) => node.name),
      40_000,
    );
  });

  afterAll(async () => {
    await cluster?.stop();
    if (baseDir && !process.env.STATOR_KEEP_TEST_DIRS) removeDir(baseDir);
  });

  it('lists the members as JSON, with the leader found through etcd', async () => {
    const leader = await cluster.waitForLeader(10_000);
    const result = statorctl(['list', '--format', 'json'], env());
    expect(result.code).toBe(0);
    const rows = JSON.parse(result.stdout) as Array<Record<string, unknown>>;
    expect(rows.map((row) => row.Member)).toEqual(['node1', 'node2', 'node3']);
    expect(rows.find((row) => row.Role === 'Leader')?.Member).toBe(leader.name);
    expect(rows.every((row) => row.Cluster === 'demo')).toBe(true);
    expect(rows.find((row) => row.Role === 'Leader')?.TL).toBe(1);
  });

  it("is refused without the credentials (exit 1, the node's reason) and works with them", () => {
    const api = cluster.nodes[0].apiUrl;
    const refused = statorctl(['--api', api, 'pause']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^Error: pause failed: HTTP 401: no auth header received\n$/);
    const wrong = statorctl(['--api', api, '--auth', 'admin:wrong', 'reload', '--force']);
    expect(wrong.code).toBe(1);
    expect(wrong.stdout).toContain('status code=401, (not authenticated)');
  });

  it('switches over in tmux, answering the prompts, and shows the phases and the outcome', async () => {
    const leader = (await cluster.waitForLeader(10_000)).name;
    const candidate = cluster.nodes.find((node) => node.name !== leader)!.name;
    const tmux = new Tmux(`statorctl-${process.pid}`);
    try {
      tmux.type(`export TZ=UTC STATORCTL_CONFIG=${ctlFile}; PS1='$ '; clear`);
      tmux.type(`node ${STATORCTL} switchover; echo "exit code $?"`);
      await tmux.waitForText(new RegExp(`Primary \\[${leader}\\]: $`, 'm'));
      tmux.type('');
      const [, offered] = await tmux.waitForText(/Candidate \[([^\]]*)\] \[\]: $/m);
      expect(offered.split(', ').sort()).toEqual(
        cluster.nodes.filter((node) => node.name !== leader).map((node) => `'${node.name}'`),
      );
      tmux.type(candidate);
      await tmux.waitForText(/When should the switchover take place \(e\.g\. [\dT:-]+ \)  \[now\]: $/m);
      tmux.type('');
      await tmux.waitForText(
        new RegExp(
          `Are you sure you want to switchover cluster demo, demoting current leader ${leader}\\? \\[y/N\\]: $`,
          'm',
        ),
      );
      tmux.type('y');
      await tmux.waitForText(/^exit code \d+$/m, 60_000);
      const screen = tmux.screen().trimEnd();
      mkdirSync(ARTIFACTS, { recursive: true });
      writeFileSync(join(ARTIFACTS, 'statorctl-switchover.txt'), `${screen}\n`);

      expect(screen).toMatch(/^exit code 0$/m);
      const phases = screen.split('\n').filter((line) => /^\[ *\d+\.\ds\] /.test(line));
      const index = (pattern: RegExp) => phases.findIndex((line) => pattern.test(line));
      // The phases in the order they happen, each with its elapsed time.
      const order = [
        new RegExp(`switchover requested: ${leader} -> ${candidate}`),
        new RegExp(`${leader} leader demoting \\(switchover\\)`),
        new RegExp(`${leader} role primary -> demoted`),
        new RegExp(`${leader} PostgreSQL stopped`),
        new RegExp(`${leader} released the leader lock`),
        new RegExp(`${candidate} acquired the leader lock`),
        new RegExp(`${candidate} role promoted -> primary`),
      ].map(index);
      expect(order.every((position) => position >= 0)).toBe(true);
      expect([...order].sort((a, b) => a - b)).toEqual(order);
      expect(screen).toContain(`node answered: Successfully switched over to "${candidate}"`);
      expect(screen).toMatch(
        new RegExp(
          `^\\[ *\\d+\\.\\ds\\] switchover completed in \\d+\\.\\ds: ${candidate} is the leader, ${leader} follows it as a replica$`,
          'm',
        ),
      );
      // The topology printed at the end agrees with the nodes.
      expect(screen).toMatch(new RegExp(`\\| ${candidate} +\\| [\\d.:]+ +\\| Leader +\\| running +\\| +2 \\|`));
      await waitFor(async () => (await cluster.primaries()).join() === candidate, {
        timeoutMs: 10_000,
        description: `${candidate} the only primary`,
      });
    } finally {
      tmux.kill();
    }
  });

  it('pauses and resumes with --wait, every member reporting it', async () => {
    const paused = statorctl(['pause', '--wait'], env());
    expect(paused.code).toBe(0);
    expect(paused.stdout).toMatch(/'pause' request sent, waiting until it is recognized by all nodes/);
    for (const node of cluster.nodes) expect(paused.stdout).toMatch(new RegExp(`\\] ${node.name} paused$`, 'm'));
    expect(paused.stdout).toMatch(/Success: cluster management is paused\n$/);
    for (const node of cluster.nodes) expect((await node.status())?.pause).toBe(true);
    expect(statorctl(['list'], env()).stdout).toContain(' Maintenance mode: on');
    expect(statorctl(['pause'], env())).toMatchObject({ code: 1, stderr: 'Error: Cluster is already paused\n' });

    const resumed = statorctl(['resume', '--wait'], env());
    expect(resumed.code).toBe(0);
    expect(resumed.stdout).toMatch(/\] cluster resumed$/m);
    expect(resumed.stdout).toMatch(/Success: cluster management is resumed\n$/);
    for (const node of cluster.nodes) expect((await node.status())?.pause).toBeUndefined();
  });

  it('edits the configuration in $EDITOR: diff, validation, confirmation, applied', async () => {
    const editor = join(baseDir, 'editor.sh');
    writeFileSync(
      editor,
      `#!/bin/sh\nsed -i 's/^maximum_lag_on_failover: .*/maximum_lag_on_failover: 2097152/' "$1"\n`,
    );
    chmodSync(editor, 0o755);
    const result = statorctl(['edit-config'], { ...env(), EDITOR: editor }, 'y\n');
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('-maximum_lag_on_failover: 1048576\n+maximum_lag_on_failover: 2097152\n');
    expect(result.stdout).toContain('Apply these changes? [y/N]: ');
    const config = JSON.parse(statorctl(['show-config', '--format', 'json'], env()).stdout) as Record<string, unknown>;
    expect(config.maximum_lag_on_failover).toBe(2097152);

    const invalid = join(baseDir, 'invalid-editor.sh');
    writeFileSync(invalid, `#!/bin/sh\nsed -i 's/^ttl: .*/ttl: 1/' "$1"\n`);
    chmodSync(invalid, 0o755);
    const refused = statorctl(['edit-config', '--force'], { ...env(), EDITOR: invalid });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('ttl: must be an integer from 5 to 86400, got 1');
    expect(JSON.parse(statorctl(['show-config', '--format', 'json'], env()).stdout).ttl).toBe(10);
  });

  it('follows the event stream until Ctrl-C', async () => {
    // --since replays the cluster's facts first: output means the stream is open, so the pause below is on it.
    const since = new Date(startedAt).toISOString();
    const child: ChildProcess = spawn(
      process.execPath,
      [STATORCTL, 'events', '--follow', '--format', 'json', '--stream', 'cluster', '--since', since],
      {
        env: { PATH: process.env.PATH ?? '', ...env() },
      },
    );
    let output = '';
    child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    await waitFor(() => output.includes('"type":"leader.acquired"'), {
      timeoutMs: 10_000,
      description: `the replay in --follow's output: ${output}`,
    });
    expect(statorctl(['pause'], env()).code).toBe(0);
    await waitFor(() => output.includes('"type":"cluster.paused"'), {
      timeoutMs: 10_000,
      description: `cluster.paused in --follow's output: ${output}`,
    });
    child.kill('SIGINT');
    expect(await exited).toBe(0);
    expect(statorctl(['resume'], env()).code).toBe(0);
    for (const line of output.trim().split('\n'))
      expect((JSON.parse(line) as { stream: string }).stream).toBe('cluster');
  });

  it("diagnose shows every member's self-diagnosis, each indicator up", () => {
    const result = statorctl(['doctor'], env());
    expect(result.code).toBe(0);
    for (const node of cluster.nodes) {
      for (const indicator of ['etcd', 'postgres', 'fence', 'events', 'ha_cycle']) {
        expect(result.stdout).toMatch(new RegExp(`\\| ${node.name} +\\| ${indicator} +\\| up +\\|`));
      }
    }
  });

  it('audits the event log read through the API', () => {
    const result = statorctl(['audit', 'verify'], env());
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/✔ hash chains: \d+ events in \d+ streams, every link intact/);
    expect(result.stdout).toMatch(/✔ \/history of http:\/\/127\.0\.0\.1:\d+: \d+ entr/);
  });
});

describe('statorctl on a Patroni-compatible cluster through --api', () => {
  let cluster: LocalCluster;
  let baseDir: string;

  beforeAll(async () => {
    ({ cluster, baseDir } = await compatCluster);
  });

  afterAll(async () => {
    await cluster?.stop();
    if (baseDir && !process.env.STATOR_KEEP_TEST_DIRS) removeDir(baseDir);
  });

  it('switches over with --force and --candidate, showing the progress', async () => {
    const leader = (await cluster.waitForLeader(10_000)).name;
    const candidate = cluster.nodes.find((node) => node.name !== leader)!.name;
    const result = statorctl([
      '--api',
      `${cluster.nodes[0].apiUrl}/patroni`,
      'switchover',
      '--force',
      '--candidate',
      candidate,
    ]);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(new RegExp(`\\] ${leader} released the leader lock`));
    expect(result.stdout).toMatch(new RegExp(`\\] switchover completed in \\d+\\.\\ds: ${candidate} is the leader`));
    await waitFor(async () => (await cluster.primaries()).join() === candidate, {
      timeoutMs: 10_000,
      description: `${candidate} primary`,
    });
  });

  it('restarts and reinitializes the replica, following each to its end', async () => {
    const leader = (await cluster.waitForLeader(10_000)).name;
    const replica = cluster.nodes.find((node) => node.name !== leader)!;
    const api = cluster.nodes[0].apiUrl;
    const before = (await replica.status())?.postmaster_start_time;
    const restarted = statorctl(['--api', api, 'restart', 'demo', replica.name], {}, 'now\ny\n');
    expect(restarted.stderr).toBe('');
    expect(restarted.code).toBe(0);
    expect(restarted.stdout).toContain(`Are you sure you want to restart members ${replica.name}? [y/N]: `);
    expect(restarted.stdout).toMatch(
      new RegExp(`\\] ${replica.name} PostgreSQL restarting\n.*\\] ${replica.name} PostgreSQL running\n`, 's'),
    );
    expect(restarted.stdout).toContain(`Success: restart on member ${replica.name}`);
    expect((await replica.status())?.postmaster_start_time).not.toBe(before);

    const reinitialized = statorctl(['--api', api, 'reinit', replica.name, '--force']);
    expect(reinitialized.code).toBe(0);
    expect(reinitialized.stdout).toMatch(
      new RegExp(`\\] ${replica.name} replica created \\(replica created using basebackup\\)`),
    );
    expect(reinitialized.stdout).toMatch(new RegExp(`\\] ${replica.name} reinitialized in \\d+\\.\\ds\n`));
    await cluster.waitForStreaming([replica.name], 30_000);
    const refused = statorctl(['--api', api, 'reinit', leader, '--force']);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toContain(
      `Failed: reinitialize for member ${leader}, status code=503, (I am the leader, can not reinitialize)`,
    );
  });

  it('shows the history of the switchover', () => {
    const history = JSON.parse(
      statorctl(['--api', cluster.nodes[0].apiUrl, 'history', '--format', 'json']).stdout,
    ) as Array<Record<string, unknown>>;
    expect(history).toHaveLength(1);
    expect(history[0]).toMatchObject({ TL: 1, Reason: 'no recovery target specified' });
  });

  it('schedules a switchover and a restart, shows them in list, and flushes them', async () => {
    const api = cluster.nodes[0].apiUrl;
    const leader = (await cluster.waitForLeader(10_000)).name;
    const replica = cluster.nodes.find((node) => node.name !== leader)!.name;
    const at = new Date(Date.now() + 3600_000).toISOString().slice(0, 16);
    const switchover = statorctl([
      '--api',
      api,
      'switchover',
      '--force',
      '--candidate',
      replica,
      '--scheduled',
      `${at}Z`,
    ]);
    expect(switchover.code).toBe(0);
    expect(switchover.stdout).toMatch(/ Switchover scheduled\n$/);
    const restart = statorctl(['--api', api, 'restart', replica, '--force', '--scheduled', `${at}Z`]);
    expect(restart.stdout).toContain(`Success: restart scheduled on member ${replica}`);
    const listed = await waitFor(
      () => {
        const text = statorctl(['--api', api, 'list']).stdout;
        return text.includes('Switchover scheduled at') && text.includes(`Restart of ${replica} scheduled`)
          ? text
          : null;
      },
      { timeoutMs: 10_000, description: 'both scheduled operations in list' },
    );
    expect(listed).toContain(`to: ${replica}`);
    expect(statorctl(['--api', api, 'flush', 'switchover']).stdout).toBe('Success: scheduled switchover deleted\n');
    expect(statorctl(['--api', api, 'flush', 'restart', '--force']).stdout).toBe(
      `Success: flush scheduled restart for member ${replica}\n`,
    );
    await waitFor(() => !statorctl(['--api', api, 'list']).stdout.includes('scheduled'), {
      timeoutMs: 10_000,
      description: 'nothing scheduled in list',
    });
  });

  it('diagnose asks /patroni/diagnostics', () => {
    const result = statorctl(['--api', cluster.nodes[1].apiUrl, 'diagnose', '--format', 'json']);
    expect(result.code).toBe(0);
    const members = JSON.parse(result.stdout) as Array<{
      member: string;
      status: string;
      details: Record<string, { status: string }>;
    }>;
    expect(members.map((entry) => [entry.member, entry.status])).toEqual(
      cluster.nodes.map((node) => [node.name, 'ok']),
    );
    for (const entry of members)
      expect(Object.keys(entry.details).sort()).toEqual(['etcd', 'events', 'fence', 'ha_cycle', 'postgres']);
  });
});
