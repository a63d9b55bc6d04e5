import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { ETCD_BINARY } from './lib/etcd';
import { LocalCluster } from './lib/local-cluster';
import { pythonInterpreter } from '../src/postgresql/process/fence-program';

/**
 * `npm run demo`: etcd plus N Stator agents with real PostgreSQL on loopback. Prints each node's
 * API and a connection string; Ctrl-C stops everything and leaves no process behind.
 */
const USAGE = `usage: npm run demo -- [--nodes N] [--api-port P] [--pg-port P] [--ttl S] [--loop-wait S]
                       [--retry-timeout S] [--data-dir DIR] [--pg-password PW]`;

interface DemoOptions {
  nodes: number;
  apiPort?: number;
  pgPort?: number;
  ttl: number;
  loopWait: number;
  retryTimeout: number;
  dataDir?: string;
  pgPassword: string;
}

export function parseDemoArgs(argv: string[]): DemoOptions {
  const options: DemoOptions = { nodes: 3, ttl: 10, loopWait: 2, retryTimeout: 4, pgPassword: 'postgres' };
  const integer = (flag: string, value: string | undefined, min: number): number => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < min) throw new Error(`${flag}: must be an integer >= ${min}, got "${value ?? ''}"`);
    return n;
  };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const value = argv[i + 1];
    switch (flag) {
      case '--nodes':
        options.nodes = integer(flag, value, 1);
        break;
      case '--api-port':
        options.apiPort = integer(flag, value, 1);
        break;
      case '--pg-port':
        options.pgPort = integer(flag, value, 1);
        break;
      case '--ttl':
        options.ttl = integer(flag, value, 5);
        break;
      case '--loop-wait':
        options.loopWait = integer(flag, value, 1);
        break;
      case '--retry-timeout':
        options.retryTimeout = integer(flag, value, 1);
        break;
      case '--data-dir':
        if (!value) throw new Error('--data-dir: needs a directory');
        options.dataDir = resolve(value);
        break;
      case '--pg-password':
        if (!value) throw new Error('--pg-password: needs a value');
        options.pgPassword = value;
        break;
      case '--help':
      case '-h':
        process.stdout.write(`${USAGE}\n`);
        process.exit(0);
        break;
      default:
        throw new Error(`unknown option ${flag}\n${USAGE}`);
    }
    i++;
  }
  return options;
}

/** etcd (Debian's etcd-server) and Python 3 for the fence: as root we can install them, otherwise we say what to install. */
function ensurePackages(): void {
  const missing = [
    ...(existsSync(ETCD_BINARY) ? [] : ['etcd-server']),
    ...(existsSync(pythonInterpreter()) ? [] : ['python3']),
  ];
  if (missing.length === 0) return;
  if (process.getuid?.() === 0) {
    process.stdout.write(`installing Debian packages ${missing.join(' ')}...\n`);
    execFileSync('apt-get', ['update', '-qq'], { stdio: 'inherit' });
    execFileSync('apt-get', ['install', '-y', '-qq', ...missing], {
      stdio: 'inherit',
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    });
    return;
  }
  throw new Error(`missing: ${missing.join(', ')}. Install with: sudo apt-get install -y ${missing.join(' ')}`);
}

interface KeptPorts {
  etcd: { client: number; peer: number };
  nodes: { api: number; pg: number }[];
}

const PORTS_FILE = 'demo-ports.json';

function readKeptPorts(dir: string): KeptPorts | null {
  const path = join(dir, PORTS_FILE);
  return existsSync(path) ? (JSON.parse(readFileSync(path, 'utf8')) as KeptPorts) : null;
}

function writeKeptPorts(dir: string, cluster: LocalCluster): void {
  const ports: KeptPorts = {
    etcd: { client: cluster.etcd.clientPort, peer: cluster.etcd.peerPort },
    nodes: cluster.nodes.map((node) => ({ api: node.apiPort, pg: node.pgPort })),
  };
  writeFileSync(join(dir, PORTS_FILE), JSON.stringify(ports, null, 2) + '\n');
}

async function main(): Promise<void> {
  const options = parseDemoArgs(process.argv.slice(2));
  ensurePackages();
  if (process.getuid?.() === 0)
    execFileSync('bash', [join(__dirname, '..', '..', 'scripts', 'ensure-pg-user.sh')], { stdio: 'inherit' });
  const baseDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'stator-demo-'));
  // With --data-dir, etcd's data and every port are kept there too: running the demo again restarts the same cluster.
  const kept = options.dataDir ? readKeptPorts(baseDir) : null;
  const started = Date.now();
  const cluster = await LocalCluster.start({
    etcd: options.dataDir
      ? { keepIn: join(baseDir, 'etcd'), clientPort: kept?.etcd.client, peerPort: kept?.etcd.peer }
      : undefined,
    nodePorts: kept?.nodes,
    nodes: options.nodes,
    baseDir,
    scope: 'demo',
    apiPort: options.apiPort,
    pgPort: options.pgPort,
    ttl: options.ttl,
    loopWait: options.loopWait,
    retryTimeout: options.retryTimeout,
    pgPassword: options.pgPassword,
  });

  if (options.dataDir) writeKeptPorts(baseDir, cluster);

  let stopping = false;
  const stop = async (code: number) => {
    if (stopping) return;
    stopping = true;
    process.stdout.write('\nstopping the demo cluster...\n');
    await cluster.stop();
    if (!options.dataDir) rmSync(baseDir, { recursive: true, force: true });
    process.stdout.write('stopped; no process left behind.\n');
    process.exit(code);
  };
  process.on('SIGINT', () => void stop(0));
  process.on('SIGTERM', () => void stop(0));

  process.stdout.write(
    `etcd: http://${cluster.etcd.endpoint} (pid ${cluster.etcd.pid})\nnode directories: ${baseDir}\n\n`,
  );
  for (const node of cluster.nodes) {
    process.stdout.write(
      `${node.name}: API ${node.apiUrl}/stator   PostgreSQL ${node.connectionString()}   log ${node.logPath}\n`,
    );
  }
  try {
    const leader = await cluster.waitForLeader(60_000);
    const replicas = cluster.nodes.filter((n) => n !== leader).map((n) => n.name);
    await cluster.waitForStreaming(replicas, 60_000);
    process.stdout.write(
      `\ncluster ready in ${((Date.now() - started) / 1000).toFixed(1)} s: leader ${leader.name}, streaming replicas ${replicas.join(', ') || 'none'}\n` +
        `patronictl: patronictl -d etcd3://${cluster.etcd.endpoint} list demo   (namespace /service)\n` +
        'Ctrl-C stops everything.\n',
    );
  } catch (error) {
    process.stderr.write(`the cluster did not come up: ${(error as Error).message}\nsee the node logs above\n`);
    await stop(1);
  }
}

if (require.main === module) {
  main().catch((error) => {
    process.stderr.write(`${(error as Error).message}\n`);
    process.exit(1);
  });
}
