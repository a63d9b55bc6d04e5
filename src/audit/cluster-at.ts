import { RecordedEvent } from '../events/event';
import { initialProjections, rebuildProjections, ServedProjections } from '../projections/served-projections';
import { LogCheckpoint } from '../events/log-checkpoint';
import { ScheduledOperation } from '../projections/schedule';
import { withinRange } from './export';

/** The cluster as its log tells it at one instant. */
export interface ClusterAt {
  /** The instant, ISO 8601 (UTC). */
  at: string;
  /** How many events happened at or before it. */
  events: number;
  projections: ServedProjections;
}

/** Folds every event with `at` ≤ `instant` (epoch ms), in source order, into the projections. */
export function clusterAt(
  events: RecordedEvent[],
  instant: number,
  checkpoint: LogCheckpoint | null = null,
): ClusterAt {
  const past = events.filter((event) => withinRange(Date.parse(event.at), { to: instant }));
  const from = checkpoint ? { ...initialProjections(), ...checkpoint.projections } : undefined;
  return { at: new Date(instant).toISOString(), events: past.length, projections: rebuildProjections(past, from) };
}

/** The newest instant retention removed events from: the cluster can only be told after it. */
export function removedUpTo(checkpoint: LogCheckpoint | null): number | null {
  const instants = Object.values(checkpoint?.streams ?? {}).map((stream) => Date.parse(stream.at));
  return instants.length > 0 ? Math.max(...instants) : null;
}

/** `--json`: the cluster projection, the scheduled operations and the history, as one document. */
export function clusterAtJson(state: ClusterAt): string {
  const { cluster, schedule, history } = state.projections;
  return `${JSON.stringify({ at: state.at, events: state.events, ...cluster, schedule, history }, null, 2)}\n`;
}

/** For a person: leader, timeline, pause, one line per member, one per scheduled operation. */
export function formatClusterAt(state: ClusterAt): string {
  const { cluster, schedule } = state.projections;
  const lines = [
    `cluster at ${state.at} (${state.events} events up to then)`,
    `leader:   ${cluster.leader ?? 'none'}`,
    `timeline: ${cluster.timeline}`,
    `paused:   ${cluster.paused ? 'yes' : 'no'}`,
  ];
  const members = Object.entries(cluster.members).sort(([a], [b]) => a.localeCompare(b));
  lines.push(members.length === 0 ? 'members:  none yet' : 'members:');
  const width = Math.max(0, ...members.map(([name]) => name.length));
  for (const [name, member] of members) {
    const fields = [
      `state ${member.state ?? '?'}`,
      `role ${member.role ?? '?'}`,
      `leadership ${member.leadership ?? '?'}`,
      ...(member.timeline ? [`timeline ${member.timeline}`] : []),
    ];
    lines.push(`  ${name.padEnd(width)}  ${fields.join(', ')}`);
    // The full state of each machine: what the page at /ui highlights at this instant.
    const machines = Object.entries(member.machines ?? {}).sort(([a], [b]) => a.localeCompare(b));
    if (machines.length > 0)
      lines.push(
        `  ${''.padEnd(width)}  machines: ${machines.map(([machine, state]) => `${machine} ${state}`).join(', ')}`,
      );
  }
  lines.push(schedule.length === 0 ? 'scheduled operations: none' : 'scheduled operations:');
  for (const operation of schedule) lines.push(`  ${describeOperation(operation)}`);
  return `${lines.join('\n')}\n`;
}

function describeOperation(op: ScheduledOperation): string {
  const what =
    op.kind === 'switchover'
      ? `switchover from ${op.node}${op.candidate ? ` to ${op.candidate}` : ''}`
      : `restart of ${op.node}`;
  const fate =
    op.fate === 'scheduled' ? 'still scheduled' : `${op.fate} at ${op.ended_at}${op.reason ? ` (${op.reason})` : ''}`;
  return `${what} for ${op.at}, requested ${op.requested_at}: ${fate}`;
}
