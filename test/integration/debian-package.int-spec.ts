import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { stringify } from 'yaml';
import { CONFIG_DIR, LIB_DIR, STATE_DIR, UNIT_PATH } from '../../scripts/lib/debian-package';
import { LocalCluster } from '../../scripts/lib/local-cluster';
import { removeDir, tmpDir } from '../../scripts/lib/tmp';
import { STATOR_VERSION } from '../../src/version';

/**
 * The Debian package as an operator meets it (`npm run package`, then dpkg): installed on this machine,
 * its /usr/bin commands answer, its unit passes systemd-analyze, a 3-node cluster runs from the
 * installed files alone and switches over with the installed statorctl, and a purge leaves nothing.
 * Needs root (dpkg) and a machine without a stator package of its own.
 */
jest.setTimeout(300_000);

const ROOT = resolve(__dirname, '..', '..');
let baseDir: string;
let clusterDir: string | undefined;
let cluster: LocalCluster | undefined;
/** Every path dpkg installed, read before the purge. */
let installed: string[] = [];
/** This test installed the package (there was none before): what it leaves behind on a failure is its own to remove. */
let installedHere = false;

const run = (command: string, args: string[]) =>
  spawnSync(command, args, { encoding: 'utf8', timeout: 60_000, env: { PATH: process.env.PATH ?? '', TZ: 'UTC' } });
const isInstalled = () => /^Status: install ok installed$/m.test(run('dpkg', ['-s', 'stator']).stdout);

beforeAll(() => {
  if (process.getuid?.() !== 0) throw new Error('debian-package.int-spec.ts installs a package: run it as root');
  if (isInstalled())
    throw new Error('a stator package is already installed on this machine: this test would replace it');
  installedHere = true;
  baseDir = tmpDir('stator-package-');
  execFileSync(process.execPath, [join(ROOT, 'dist', 'scripts', 'package.js'), '--out', baseDir], {
    stdio: ['ignore', 'ignore', 'inherit'],
    timeout: 240_000,
  });
  execFileSync('dpkg', ['-i', join(baseDir, `stator_${STATOR_VERSION}_all.deb`)], {
    stdio: ['ignore', 'ignore', 'inherit'],
    timeout: 120_000,
  });
  installed = run('dpkg', ['-L', 'stator']).stdout.trim().split('\n');
});

afterAll(async () => {
  await cluster?.stop();
  if (installedHere && isInstalled()) run('dpkg', ['--purge', 'stator']);
  if (installedHere) removeDir(STATE_DIR);
  if (process.env.STATOR_KEEP_TEST_DIRS) return;
  for (const dir of [baseDir, clusterDir]) if (dir) removeDir(dir);
});

describe('the stator package', () => {
  it('puts stator and statorctl in /usr/bin, answering --version', () => {
    expect(run('/usr/bin/stator', ['--version'])).toMatchObject({ status: 0, stdout: `stator ${STATOR_VERSION}\n` });
    expect(run('/usr/bin/statorctl', ['--version'])).toMatchObject({
      status: 0,
      stdout: `statorctl ${STATOR_VERSION}\n`,
    });
  });

  it('ships the code with its production dependencies only, and a postgres-owned state directory', () => {
    expect(existsSync(join(LIB_DIR, 'node_modules', '@nestjs', 'core'))).toBe(true);
    expect(
      ['jest', 'typescript', '@swc/core', 'playwright-core'].filter((name) =>
        existsSync(join(LIB_DIR, 'node_modules', name)),
      ),
    ).toEqual([]);
    const state = statSync(STATE_DIR);
    expect({
      owner: execFileSync('stat', ['-c', '%U:%G', STATE_DIR], { encoding: 'utf8' }).trim(),
      mode: (state.mode & 0o777).toString(8),
    }).toEqual({
      owner: 'postgres:postgres',
      mode: '700',
    });
  });

  it('installs /etc/stator/stator.yml as a conffile, and the example passes --validate-config', () => {
    expect(run('dpkg-query', ['-W', '-f=${Conffiles}', 'stator']).stdout).toContain(`${CONFIG_DIR}/stator.yml`);
    const validated = run('/usr/bin/stator', ['--validate-config', `${CONFIG_DIR}/stator.yml`]);
    expect({ status: validated.status, stderr: validated.stderr }).toEqual({ status: 0, stderr: '' });
  });

  it('installs a unit that systemd-analyze verify accepts without a warning', () => {
    const verify = run('systemd-analyze', ['verify', UNIT_PATH]);
    expect({ status: verify.status, output: `${verify.stdout}${verify.stderr}` }).toEqual({ status: 0, output: '' });
    expect(readFileSync(UNIT_PATH, 'utf8')).toMatch(/^ExecStart=\/usr\/bin\/stator \/etc\/stator\/stator\.yml$/m);
    // Not enabled by the install: the operator enables it once the configuration is right.
    expect(existsSync('/etc/systemd/system/multi-user.target.wants/stator.service')).toBe(false);
  });

  it('runs a 3-node cluster from the installed files, switched over by the installed statorctl', async () => {
    clusterDir = tmpDir('stator-package-cluster-');
    cluster = await LocalCluster.start({
      nodes: 3,
      baseDir: clusterDir,
      ttl: 10,
      loopWait: 2,
      retryTimeout: 4,
      agentProgram: '/usr/bin/stator',
    });
    const leader = await cluster.waitForLeader(60_000);
    const replicas = cluster.nodes.filter((node) => node !== leader);
    await cluster.waitForStreaming(
      replicas.map((node) => node.name),
      60_000,
    );
    // Each agent is the installed code: its command line names /usr/lib/stator, not this checkout.
    for (const node of cluster.nodes)
      expect(readFileSync(`/proc/${node.pid}/cmdline`, 'utf8').split('\0')).toContain(`${LIB_DIR}/bin/stator.js`);
    const ctlFile = join(baseDir, 'ctl.yml');
    writeFileSync(
      ctlFile,
      stringify({ scope: cluster.scope, namespace: '/service', etcd3: { hosts: [cluster.nodes[0].etcdEndpoint] } }),
    );
    const switchover = spawnSync(
      '/usr/bin/statorctl',
      ['switchover', '--leader', leader.name, '--candidate', replicas[0].name, '--force'],
      {
        encoding: 'utf8',
        timeout: 90_000,
        env: { PATH: process.env.PATH ?? '', TZ: 'UTC', STATORCTL_CONFIG: ctlFile },
      },
    );
    expect({ status: switchover.status, stderr: switchover.stderr }).toEqual({ status: 0, stderr: '' });
    expect((await cluster.waitForLeader(60_000, [leader.name])).name).toBe(replicas[0].name);
    await cluster.stop();
    cluster = undefined;
  });

  it('is purged without leaving a file behind but what the node wrote in its state directory', () => {
    // What an agent leaves in state_dir (the fence's journal, say) is the node's, not the package's.
    const nodeFile = join(STATE_DIR, 'fence-journal');
    writeFileSync(nodeFile, 'kept\n');
    execFileSync('dpkg', ['--purge', 'stator'], { stdio: ['ignore', 'ignore', 'inherit'], timeout: 120_000 });
    expect(isInstalled()).toBe(false);
    // Directories dpkg shares with other packages (/usr, /etc, /lib/systemd/system...) stay, as they must.
    const left = installed.filter((path) => existsSync(path) && !statSync(path).isDirectory());
    expect(left).toEqual([]);
    expect([LIB_DIR, CONFIG_DIR, '/usr/share/doc/stator'].filter((path) => existsSync(path))).toEqual([]);
    expect(readFileSync(nodeFile, 'utf8')).toBe('kept\n');
    removeDir(STATE_DIR);
  });
});
