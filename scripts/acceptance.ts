import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { AGENT_ENVIRONMENT, AGENT_NODE_FLAGS } from '../src/cli/agent-node-flags';

/**
 * `npm run acceptance -- <patroni tree> [--features a,b] [--keep]`: Patroni's own behave features,
 * unchanged, with Stator in the place of Patroni. In a copy of the extracted patroni/patroni tree,
 * `patroni.py` becomes a shim that execs `stator` on the same configuration file in compatibility
 * mode; everything else (the harness, its steps, patronictl, the features) is the tree's own.
 * Fetches nothing. Runs behave (Debian's python3-behave) as an unprivileged user, one feature at a
 * time with a deadline each, and prints `N passed, N failed, N skipped` per feature.
 */
const CORE_FEATURES = ['patroni_api', 'basic_replication', 'priority_failover', 'recovery'];
/** A feature that takes longer than this is stopped and counted as failed. */
const FEATURE_DEADLINE_MS = 20 * 60_000;
const PYTHON = '/usr/bin/python3';
const PG_BIN = process.env.STATOR_PG_BIN ?? '/usr/lib/postgresql/15/bin';

interface FeatureResult {
  feature: string;
  passed: number;
  failed: number;
  skipped: number;
  seconds: number;
  failures: string[];
}

function usage(): never {
  process.stderr.write(
    'usage: npm run acceptance -- <path of an extracted patroni/patroni tree> [--features patroni_api,recovery] [--keep]\n',
  );
  process.exit(2);
}

function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const tree = argv.find((arg, index) => !arg.startsWith('--') && argv[index - 1] !== '--features');
  if (!tree || !existsSync(join(tree, 'features', 'environment.py')) || !existsSync(join(tree, 'patroni.py'))) usage();
  const featuresAt = argv.indexOf('--features');
  const features = featuresAt >= 0 ? (argv[featuresAt + 1] ?? '').split(',').filter(Boolean) : CORE_FEATURES;
  if (features.length === 0) usage();
  const keep = argv.includes('--keep');
  return run(resolve(tree), features, keep);
}

async function run(tree: string, features: string[], keep: boolean): Promise<void> {
  const user = runAs();
  const work = join(tmpdir(), `stator-acceptance-${process.pid}`);
  cpSync(tree, work, { recursive: true });
  writeShim(work);
  if (user) execFileSync('chown', ['-R', `${user}:${user}`, work]);
  process.stdout.write(`Patroni's features from ${tree}, run in ${work}${user ? ` as ${user}` : ''}\n`);
  const results: FeatureResult[] = [];
  for (const feature of features) {
    const result = await runFeature(work, feature, user);
    killLeftovers(work);
    results.push(result);
    process.stdout.write(
      `${feature}: ${result.passed} passed, ${result.failed} failed, ${result.skipped} skipped (${result.seconds} s)\n`,
    );
    for (const failure of result.failures) process.stdout.write(`  ✘ ${failure}\n`);
  }
  const total = (key: 'passed' | 'failed' | 'skipped') => results.reduce((sum, r) => sum + r[key], 0);
  const seconds = results.reduce((sum, r) => sum + r.seconds, 0);
  process.stdout.write(
    `\nscenarios: ${total('passed')} passed, ${total('failed')} failed, ${total('skipped')} skipped in ${seconds} s\n`,
  );
  process.stdout.write(keep ? `logs kept in ${work}/acceptance-logs\n` : '');
  if (!keep) execFileSync('rm', ['-rf', work]);
  process.exit(total('failed') > 0 ? 1 : 0);
}

/**
 * A feature that fails half-way can leave a paused cluster's PostgreSQL running (an agent stopped
 * in pause leaves it up, as the reference's does), holding the ports the next feature needs: every
 * process started from the work directory goes before the next feature, as on behave's fresh CI machine.
 */
function killLeftovers(work: string): void {
  let pids: number[];
  try {
    pids = execFileSync('pgrep', ['-f', work], { encoding: 'utf8' }).split('\n').filter(Boolean).map(Number);
  } catch {
    return; // none
  }
  for (const pid of pids.filter((pid) => pid !== process.pid)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone already
    }
  }
}

/** PostgreSQL refuses to run as root: as root, the features run as the `postgres` OS user. */
function runAs(): string | null {
  if (process.getuid?.() !== 0) return null;
  execFileSync('bash', [join(__dirname, '..', '..', 'scripts', 'ensure-pg-user.sh')], { stdio: 'inherit' });
  return 'postgres';
}

/** `patroni.py` that runs Stator instead, on the arguments the harness gives (the configuration file). */
function writeShim(work: string): void {
  const stator = join(__dirname, '..', '..', 'bin', 'stator.js');
  const shim = join(work, 'patroni.py');
  writeFileSync(
    shim,
    [
      "# Written by Stator's `npm run acceptance`: Stator in the place of Patroni, in compatibility mode.",
      'import os',
      'import sys',
      "os.environ['STATOR_COMPAT'] = 'patroni'",
      ...Object.entries(AGENT_ENVIRONMENT).map(
        ([name, value]) => `os.environ[${JSON.stringify(name)}] = ${JSON.stringify(value)}`,
      ),
      `os.execv(${JSON.stringify(process.execPath)}, [${[process.execPath, ...AGENT_NODE_FLAGS, stator].map((arg) => JSON.stringify(arg)).join(', ')}] + sys.argv[1:])`,
      '',
    ].join('\n'),
  );
  chmodSync(shim, 0o755);
}

function runFeature(work: string, feature: string, user: string | null): Promise<FeatureResult> {
  const started = Date.now();
  const env = {
    ...process.env,
    DCS: 'etcd3',
    PATH: `${PG_BIN}:/usr/bin:/bin:/usr/sbin:/sbin`,
    HOME: work,
    LANG: 'C.UTF-8',
  };
  const behave = [PYTHON, '-m', 'behave', '--no-capture', '--no-color', `features/${feature}.feature`];
  const [command, ...args] = user ? ['runuser', '-u', user, '--', ...behave] : behave;
  // The harness empties features/output when it starts: behave's own output and a copy of the
  // feature's logs go to acceptance-logs/ beside it.
  const logs = join(work, 'acceptance-logs');
  mkdirSync(logs, { recursive: true });
  const logPath = join(logs, `behave-${feature}.log`);
  return new Promise((resolveResult) => {
    const child = spawn(command, args, { cwd: work, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    const chunks: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => chunks.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => chunks.push(chunk));
    const deadline = setTimeout(() => {
      chunks.push(Buffer.from(`\nstopped after ${FEATURE_DEADLINE_MS / 60_000} minutes\n`));
      process.kill(-child.pid!, 'SIGKILL');
    }, FEATURE_DEADLINE_MS);
    child.on('close', () => {
      clearTimeout(deadline);
      const output = Buffer.concat(chunks).toString('utf8');
      writeFileSync(logPath, output);
      const featureOutput = join(work, 'features', 'output');
      if (existsSync(featureOutput)) cpSync(featureOutput, join(logs, feature), { recursive: true });
      resolveResult({
        feature,
        ...scenarioCounts(output),
        seconds: Math.round((Date.now() - started) / 1000),
        failures: failedScenarios(output),
      });
    });
  });
}

/** behave's summary line: `7 scenarios passed, 0 failed, 0 skipped`. */
function scenarioCounts(output: string): { passed: number; failed: number; skipped: number } {
  const summary = /(\d+) scenarios? passed, (\d+) failed, (?:(\d+) error, )?(\d+) skipped/.exec(output);
  if (!summary) return { passed: 0, failed: 1, skipped: 0 };
  return {
    passed: Number(summary[1]),
    failed: Number(summary[2]) + Number(summary[3] ?? 0),
    skipped: Number(summary[4]),
  };
}

/** `Failing scenarios:` lists each failed scenario with its line. */
function failedScenarios(output: string): string[] {
  const at = output.indexOf('Failing scenarios:');
  if (at < 0) return [];
  return output
    .slice(at)
    .split('\n')
    .slice(1)
    .map((line) => line.trim())
    .filter((line) => line.startsWith('features/'));
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(2);
});
