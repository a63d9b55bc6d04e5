import { Acknowledgement } from './writer';

/** A time during which two nodes both acknowledged writes. */
export interface SplitBrainInterval {
  nodes: [string, string];
  fromMs: number;
  toMs: number;
}

/** Acknowledgements closer than this belong to one stretch of a node acknowledging writes. */
const STRETCH_GAP_MS = 1000;

/** Each node's stretches of acknowledging writes: [first, last] ack times with no gap over STRETCH_GAP_MS. */
function stretches(acks: Acknowledgement[]): { node: string; fromMs: number; toMs: number }[] {
  const byNode = new Map<string, number[]>();
  for (const ack of acks) byNode.set(ack.node, [...(byNode.get(ack.node) ?? []), ack.at]);
  const result: { node: string; fromMs: number; toMs: number }[] = [];
  for (const [node, times] of byNode) {
    times.sort((a, b) => a - b);
    let from = times[0];
    let last = times[0];
    for (const at of times.slice(1)) {
      if (at - last > STRETCH_GAP_MS) {
        result.push({ node, fromMs: from, toMs: last });
        from = at;
      }
      last = at;
    }
    result.push({ node, fromMs: from, toMs: last });
  }
  return result;
}

/** Intervals where stretches of two different nodes overlap: two primaries acknowledging writes at once. */
export function splitBrainIntervals(acks: Acknowledgement[]): SplitBrainInterval[] {
  const all = stretches(acks);
  const found: SplitBrainInterval[] = [];
  for (let i = 0; i < all.length; i++) {
    for (let j = i + 1; j < all.length; j++) {
      const [a, b] = [all[i], all[j]];
      if (a.node === b.node) continue;
      const fromMs = Math.max(a.fromMs, b.fromMs);
      const toMs = Math.min(a.toMs, b.toMs);
      if (fromMs <= toMs) found.push({ nodes: [a.node, b.node], fromMs, toMs });
    }
  }
  return found;
}

/** Acknowledged keys missing from what the final leader holds. */
export function lostWrites(acks: Acknowledgement[], stored: Set<number>): Acknowledgement[] {
  return acks.filter((ack) => !stored.has(ack.n));
}
