import { ChildProcess, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { haproxyConfig, HaproxyBackend } from '../../scripts/lib/haproxy-config';
import { freePort } from '../../scripts/lib/ports';
import { BenchCluster } from './cluster';
import { trackChild } from './cleanup';

export const HAPROXY_BINARY = process.env.HAPROXY_BINARY ?? '/usr/sbin/haproxy';

/** Which HAProxy configuration fronts a cluster. */
export type HaproxyFlavour = 'stator' | 'patroni-documented';

/**
 * Patroni's documented HAProxy configuration (its `haproxy.cfg` example and documentation): checks
 * with `OPTIONS`, every 3 s, a server down after 3 failed checks and up after 2 good ones.
 */
export function patroniDocumentedConfig(
  backends: HaproxyBackend[],
  listen: { primary: string; replicas: string; stats: string },
): string {
  const servers = backends
    .map((b) => `    server ${b.name} ${b.host}:${b.pgPort} maxconn 100 check port ${b.apiPort}`)
    .join('\n');
  const checked = (path: string) =>
    [
      `    option httpchk OPTIONS ${path}`,
      '    http-check expect status 200',
      '    default-server inter 3s fall 3 rise 2 on-marked-down shutdown-sessions',
      servers,
    ].join('\n');
  return `# Patroni's documented configuration (haproxy.cfg in its repository), for the benchmark.
global
    maxconn 1000

defaults
    mode tcp
    retries 2
    timeout client 30m
    timeout connect 4s
    timeout server 30m
    timeout check 5s

listen stats
    mode http
    bind ${listen.stats}
    stats enable
    stats uri /

listen primary
    bind ${listen.primary}
${checked('/primary')}

listen replicas
    bind ${listen.replicas}
    balance roundrobin
${checked('/replica')}
`;
}

/** Debian's HAProxy in the foreground, in front of one cluster, stopped by PID. */
export class BenchHaproxy {
  private constructor(
    private readonly child: ChildProcess,
    readonly flavour: HaproxyFlavour,
    readonly primaryPort: number,
    readonly replicaPort: number,
    readonly configPath: string,
  ) {}

  static async start(cluster: BenchCluster, flavour: HaproxyFlavour, dir: string): Promise<BenchHaproxy> {
    const backends = cluster.nodes.map((n) => ({
      name: n.name,
      host: '127.0.0.1',
      pgPort: n.pgPort,
      apiPort: Number(new URL(n.apiUrl).port),
    }));
    const primary = await freePort();
    const replicas = await freePort();
    const listen = {
      primary: `127.0.0.1:${primary}`,
      replicas: `127.0.0.1:${replicas}`,
      stats: `127.0.0.1:${await freePort()}`,
    };
    const text = flavour === 'stator' ? haproxyConfig(backends, listen) : patroniDocumentedConfig(backends, listen);
    const configPath = join(dir, `haproxy-${cluster.kind}-${flavour}.cfg`);
    writeFileSync(configPath, text);
    const child = spawn(HAPROXY_BINARY, ['-db', '-f', configPath], { stdio: 'ignore' });
    trackChild(child);
    return new BenchHaproxy(child, flavour, primary, replicas, configPath);
  }

  stop(): void {
    if (this.child.pid && this.child.exitCode === null) this.child.kill('SIGKILL');
  }
}
