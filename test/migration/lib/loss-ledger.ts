import { appendFileSync } from 'node:fs';
import { query } from '../../../bench/lib/sql';
import { waitFor } from '../../../scripts/lib/wait-for';
import { Ack, AckedWriter } from './acked-writer';
import { MixedCluster } from './mixed-cluster';
import { MixedNode } from './mixed-node';

/**
 * Asynchronous replication may lose what the leader acknowledged just before it crashed and had not yet sent (Patroni's
 * contract too, bounded by maximum_lag_on_failover): only such writes may be missing. A switchover, a swap of agents or
 * any later step must lose nothing.
 */
export const ASYNC_CRASH_WINDOW_MS = 2000;

/** A kill -9 of a leader: from the test's decision to the moment agent and postmaster were gone, on the writer's clock. */
export interface Crash {
  port: number;
  from: number;
  to: number;
}

export interface Loss extends Ack {
  /** The step after which the loss was first seen, and the leader it was read on. */
  seenAfter: string;
  readOn: string;
  crash: Crash | null;
}

/**
 * The kill -9 that explains a missing write: one of the very node that acknowledged it, within ASYNC_CRASH_WINDOW_MS
 * before the kill ended. The end, not the start: agent, postmaster and backends die some tens of ms (hundreds under
 * load) after the test decides to kill them, and a commit acknowledged meanwhile may not have been sent either.
 */
export function crashExplaining(crashes: readonly Crash[], ack: Pick<Ack, 'port' | 'at'>): Crash | null {
  return (
    crashes.find(
      (crash) => crash.port === ack.port && crash.from - ASYNC_CRASH_WINDOW_MS <= ack.at && ack.at <= crash.to,
    ) ?? null
  );
}

export function lsnText(lsn: bigint): string {
  return `${(lsn >> 32n).toString(16).toUpperCase()}/${(lsn & 0xffffffffn).toString(16).toUpperCase()}`;
}

export function parseLsn(text: string): bigint {
  const [hi, lo] = text.split('/');
  return (BigInt(`0x${hi}`) << 32n) + BigInt(`0x${lo}`);
}

/**
 * Where every acknowledged write went and whether it survived: the leader is read after every step (not only
 * at the end), each leader's kill -9 is timed, and each handover logs the new timeline's switch point against
 * the last write acknowledged on the old primary. A missing write is explained only by a kill of the very
 * node that acknowledged it, within ASYNC_CRASH_WINDOW_MS before that kill ended.
 */
export class LossLedger {
  readonly crashes: Crash[] = [];
  readonly losses: Loss[] = [];
  readonly lines: string[] = [];

  constructor(
    private readonly writer: AckedWriter,
    private readonly cluster: MixedCluster,
    private readonly logFile: string,
  ) {}

  log(line: string): void {
    const stamped = `[${(performance.now() / 1000).toFixed(2)} s] ${line}`;
    this.lines.push(stamped);
    appendFileSync(this.logFile, `${stamped}\n`);
  }

  async kill(node: MixedNode): Promise<void> {
    const from = performance.now();
    await node.killAgentAndPostmaster();
    const crash = { port: node.pgPort, from, to: performance.now() };
    this.crashes.push(crash);
    const last = this.writer.acked.filter((ack) => ack.port === node.pgPort).at(-1);
    this.log(
      `kill -9 of ${node.name} (${node.agent ?? 'stopped'}, port ${node.pgPort}) took ${(crash.to - from).toFixed(0)} ms; last ack there: ${last ? `id ${last.id} at ${lsnText(last.lsn)}, ${(crash.to - last.at).toFixed(0)} ms before the kill ended` : 'none'}`,
    );
  }

  crashExplaining(ack: Ack): Crash | null {
    return crashExplaining(this.crashes, ack);
  }

  /** After a promotion: the new timeline's switch point (where the candidate's recovery ended) against the old primary's last acknowledged write. */
  async handover(label: string, oldPrimary: MixedNode, newPrimary: MixedNode): Promise<void> {
    try {
      const [row] = await query<{ timeline: string }>(
        newPrimary.pgPort,
        'SELECT substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8) AS timeline',
        5000,
      );
      const [history] = await query<{ text: string }>(
        newPrimary.pgPort,
        `SELECT pg_read_file('pg_wal/${row.timeline}.history') AS text`,
        5000,
      );
      const lastLine = history.text.trim().split('\n').at(-1) ?? '';
      const switchPoint = parseLsn(lastLine.split('\t')[1]);
      const onOld = this.writer.acked.filter((ack) => ack.port === oldPrimary.pgPort);
      const beyond = onOld.filter((ack) => ack.lsn >= switchPoint);
      const last = onOld.at(-1);
      this.log(
        `${label}: ${oldPrimary.name} -> ${newPrimary.name}, timeline ${parseInt(row.timeline, 16)} from ${lsnText(switchPoint)}; last ack on ${oldPrimary.name}: ` +
          `${last ? `id ${last.id} at ${lsnText(last.lsn)}` : 'none'}; acks on ${oldPrimary.name} at or past the switch point: ${beyond.map((ack) => ack.id).join(', ') || 'none'}`,
      );
    } catch (error) {
      this.log(`${label}: the switch point could not be read (${(error as Error).message})`);
    }
  }

  /**
   * Reads the table on the current leader and records every acknowledged write missing there that was not missing
   * before. False (logged) when no leader's table could be read.
   */
  async afterStep(step: string): Promise<boolean> {
    let leader: MixedNode | null;
    try {
      leader = await this.cluster.waitForHealthy(30_000, `a leader to read the table on after: ${step}`);
    } catch {
      const name = await this.cluster.leaderName();
      leader = name ? this.cluster.node(name) : null;
    }
    if (!leader) {
      this.log(`after "${step}": no leader to read the table on`);
      return false;
    }
    let missing: Ack[];
    try {
      const port = leader.pgPort;
      missing = (
        await waitFor(async () => ({ missing: await this.writer.lostOn(port) }), {
          timeoutMs: 10_000,
          description: `the table read on ${leader.name}`,
        })
      ).missing;
    } catch (error) {
      this.log(`after "${step}": reading the table on ${leader.name} failed (${(error as Error).message})`);
      return false;
    }
    const known = new Set(this.losses.map((loss) => loss.id));
    const fresh = missing.filter((ack) => !known.has(ack.id));
    for (const ack of fresh)
      this.losses.push({ ...ack, seenAfter: step, readOn: leader.name, crash: this.crashExplaining(ack) });
    const acked = this.writer.acked.length;
    this.log(
      `after "${step}": leader ${leader.name} (${leader.agent}, port ${leader.pgPort}), ${acked} acks, ${missing.length} missing` +
        (fresh.length ? `; new: ${fresh.map((ack) => this.describe(ack)).join('; ')}` : ''),
    );
    return true;
  }

  describe(ack: Ack): string {
    const crash = this.crashExplaining(ack);
    const name = this.cluster.nodes.find((node) => node.pgPort === ack.port)?.name ?? `port ${ack.port}`;
    return `id ${ack.id} on ${name} at ${lsnText(ack.lsn)} during "${ack.step}"${crash ? ` ${(crash.to - ack.at).toFixed(0)} ms before the end of its kill -9` : ', no crash explains it'}`;
  }

  unexplained(): Loss[] {
    return this.losses.filter((loss) => !loss.crash);
  }
}
