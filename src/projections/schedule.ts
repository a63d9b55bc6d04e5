import { RecordedEvent } from '../common/recorded-event';
import { Projection } from './projection';

export type ScheduleFate = 'scheduled' | 'cancelled' | 'executed' | 'skipped' | 'expired';

/** One scheduled switchover or restart and what became of it. */
export interface ScheduledOperation {
  kind: 'switchover' | 'restart';
  /** When it was asked to run (ISO 8601 with offset, as requested). */
  at: string;
  /** When it was scheduled (the event's time). */
  requested_at: string;
  fate: ScheduleFate;
  /** Restart: the node; switchover: the leader it was scheduled from. */
  node: string;
  /** Switchover: the candidate, when one was named. */
  candidate?: string;
  /** Restart: the filters it must still satisfy when it runs. */
  filters?: Record<string, unknown>;
  /** When its fate was decided, and why (for anything but `scheduled`). */
  ended_at?: string;
  reason?: string;
}

const FATES: Record<string, ScheduleFate> = {
  cancelled: 'cancelled',
  executed: 'executed',
  skipped: 'skipped',
  expired: 'expired',
};

/**
 * The scheduled-operation timeline: `switchover.scheduled` and `restart.scheduled` open an entry;
 * `.cancelled`, `.executed`, `.skipped` and `.expired` close the open one of the same kind (and
 * node, for restarts). At most one of each is open at a time, as the reference allows.
 */
export const scheduleProjection: Projection<ScheduledOperation[]> = {
  initial: () => [],
  evolve(operations, event: RecordedEvent) {
    const [kind, outcome] = event.type.split('.') as [string, string];
    if (kind !== 'switchover' && kind !== 'restart') return operations;
    const data = (event.data ?? {}) as Record<string, string | undefined>;
    if (outcome === 'scheduled') {
      const operation: ScheduledOperation =
        kind === 'switchover'
          ? {
              kind,
              at: data.scheduled_at ?? '',
              requested_at: event.at,
              fate: 'scheduled',
              node: data.leader ?? event.node,
              ...(data.member ? { candidate: data.member } : {}),
            }
          : {
              kind,
              at: data.schedule ?? '',
              requested_at: event.at,
              fate: 'scheduled',
              node: data.node ?? event.node,
              ...(event.data?.filters ? { filters: event.data.filters as Record<string, unknown> } : {}),
            };
      return [...operations, operation];
    }
    const fate = FATES[outcome];
    if (!fate) return operations;
    const index = operations.findIndex(
      (op) =>
        op.kind === kind && op.fate === 'scheduled' && (kind === 'switchover' || op.node === (data.node ?? event.node)),
    );
    if (index < 0) return operations;
    const closed = { ...operations[index], fate, ended_at: event.at, reason: event.cause };
    return [...operations.slice(0, index), closed, ...operations.slice(index + 1)];
  },
};

/** The switchover still waiting for its time, as `/cluster` shows it. */
export function pendingSwitchover(operations: ScheduledOperation[]): { at: string; from: string; to?: string } | null {
  const open = operations.find((op) => op.kind === 'switchover' && op.fate === 'scheduled');
  if (!open) return null;
  return { at: open.at, from: open.node, ...(open.candidate ? { to: open.candidate } : {}) };
}

/** The restart of `node` still waiting for its time. */
export function pendingRestart(operations: ScheduledOperation[], node: string): ScheduledOperation | null {
  return operations.find((op) => op.kind === 'restart' && op.fate === 'scheduled' && op.node === node) ?? null;
}
