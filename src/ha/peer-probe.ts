import { PeerReading } from './cluster-snapshot';

/** How long a peer may take to answer during the leader race (reference: 2 s, no retry). */
export const PEER_PROBE_TIMEOUT_MS = 2_000;

export type PeerProbe = (name: string, apiUrl: string) => Promise<PeerReading>;

/** Reads a peer's status document (`GET <api_url>`); any failure means unreachable. */
export const probePeerOverHttp: PeerProbe = async (name, apiUrl) => {
  try {
    const response = await fetch(apiUrl, { signal: AbortSignal.timeout(PEER_PROBE_TIMEOUT_MS) });
    const status = (await response.json()) as {
      role?: string;
      timeline?: number;
      tags?: Record<string, unknown>;
      xlog?: { location?: number; received_location?: number; replayed_location?: number };
    };
    if (!status.xlog) return { name, reachable: false };
    const isPrimary = status.xlog.location !== undefined || status.role === 'primary' || status.role === 'master';
    const walPosition = isPrimary
      ? (status.xlog.location ?? 0)
      : Math.max(status.xlog.received_location ?? 0, status.xlog.replayed_location ?? 0);
    return { name, reachable: true, role: status.role, isPrimary, walPosition, timeline: status.timeline, tags: status.tags };
  } catch {
    return { name, reachable: false };
  }
};
