import { Client } from 'pg';
import { setTimeout as sleep } from 'node:timers/promises';
import { pgClient } from '../../../bench/lib/sql';
import { MixedCluster } from './mixed-cluster';

const INTERVAL_MS = 200;

/**
 * Watches, every 200 ms, the leader key (etcd's JSON gateway) and which servers take writes
 * (pg_is_in_recovery() on a kept connection per node), and logs every change: a leader that changes
 * outside a switchover or kill, or two servers writable at once, shows here.
 */
export class RoleWatch {
  private stopped = false;
  private loop: Promise<void> | null = null;
  private readonly clients = new Map<number, Client>();
  private lastLine = '';

  constructor(
    private readonly cluster: MixedCluster,
    private readonly log: (line: string) => void,
  ) {}

  start(): void {
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop;
    for (const client of this.clients.values()) await client.end().catch(() => undefined);
  }

  private async leaderKey(): Promise<string> {
    try {
      const key = Buffer.from(`/service/${this.cluster.scope}/leader`).toString('base64');
      const response = await fetch(`http://${this.cluster.etcd.endpoint}/v3/kv/range`, {
        method: 'POST',
        body: JSON.stringify({ key }),
        signal: AbortSignal.timeout(1000),
      });
      const body = (await response.json()) as { kvs?: { value: string }[] };
      const value = body.kvs?.[0]?.value;
      return value ? Buffer.from(value, 'base64').toString() : '-';
    } catch {
      return '?';
    }
  }

  /** 'w' writable, 'r' in recovery, '-' no answer. */
  private async roleOf(port: number): Promise<string> {
    let client = this.clients.get(port);
    try {
      if (!client) {
        client = pgClient(port, 1000);
        this.clients.set(port, client);
        await client.connect();
      }
      const rows = (await client.query('SELECT pg_is_in_recovery() AS r')).rows as { r: boolean }[];
      return rows[0]?.r ? 'r' : 'w';
    } catch {
      this.clients.delete(port);
      void client?.end().catch(() => undefined);
      return '-';
    }
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      const due = performance.now() + INTERVAL_MS;
      const [leader, ...roles] = await Promise.all([
        this.leaderKey(),
        ...this.cluster.nodes.map((node) => this.roleOf(node.pgPort)),
      ]);
      const line = `leader key ${leader}; ${this.cluster.nodes.map((node, i) => `${node.name} ${roles[i]}`).join(' ')}`;
      if (line !== this.lastLine) {
        const writable = roles.filter((role) => role === 'w').length;
        this.log(`watch: ${line}${writable > 1 ? ' (TWO WRITABLE)' : ''}`);
        this.lastLine = line;
      }
      const wait = due - performance.now();
      if (wait > 0) await sleep(wait);
    }
  }
}
