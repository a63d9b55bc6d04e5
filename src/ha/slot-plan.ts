import { EffectiveDynamicConfig } from '../config/config.types';
import { PermanentSlot } from '../config/slots-config';
import { ClusterView, Member } from '../dcs/dcs.port';
import { failoverPriority, isTruthyTag } from './cluster-snapshot';

/** Slot names as Patroni derives them from member names. */
export function slotNameOf(memberName: string): string {
  return memberName.toLowerCase().replace(/[^a-z0-9_]/g, '_');
}

/** A physical slot a node keeps, and where it should stand at least when nothing streams from it. */
export interface PlannedPhysicalSlot {
  name: string;
  /** Advance an inactive copy to here (the leader's published position, or a cascading member's own). */
  position?: number;
  /** Whether a standby should be streaming from it here; a slot not expected active that holds an xmin is reset. */
  expectedActive: boolean;
}

/** The slots one node keeps: everything else (not covered by `ignore_slots`) is dropped. */
export interface SlotPlan {
  physical: PlannedPhysicalSlot[];
  logical: PermanentSlot[];
  /** Permanent logical slots skipped because a member's slot has their name. */
  conflicts: string[];
}

export interface SlotPlanInput {
  self: { name: string; tags: Record<string, unknown> };
  /** The primary or the standby leader (holds the leader key). */
  isLeader: boolean;
  cluster: ClusterView;
  dynamic: Pick<EffectiveDynamicConfig, 'use_slots' | 'member_slots_ttl' | 'slots' | 'standby_cluster'>;
  /** Members this node saw within `member_slots_ttl` that left the DCS (the leader's own memory). */
  departed?: string[];
}

const EMPTY: SlotPlan = { physical: [], logical: [], conflicts: [] };

/** The member a node's `replicatefrom` tag names, or null. */
export const replicatefromOf = (tags: Record<string, unknown> | undefined): string | null =>
  typeof tags?.replicatefrom === 'string' && tags.replicatefrom !== '' ? tags.replicatefrom : null;

const positionOf = (value: unknown): number =>
  typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : 0;

/**
 * The slot a node's WAL leaves the primary by, following `replicatefrom` up the cascade; null for a
 * `nostream` node or one below it (its WAL comes from the archive, so the primary holds nothing for it).
 */
export function slotOnPrimary(cluster: ClusterView, name: string, tags: Record<string, unknown>): string | null {
  const seen = new Set<string>();
  for (;;) {
    seen.add(name);
    if (isTruthyTag(tags.nostream)) return null;
    const from = replicatefromOf(tags);
    const upstream = from && from !== name ? cluster.members.find((member) => member.name === from) : undefined;
    if (!upstream) return slotNameOf(name);
    if (seen.has(upstream.name)) return null;
    name = upstream.name;
    tags = upstream.data.tags ?? {};
  }
}

/**
 * Patroni 4.1's slot plan (`Cluster.get_replication_slots`), for the leader and for each replica alike:
 *
 * - A slot per other member that streams (not `nostream`), so that any node that becomes the leader
 *   already holds its replicas' WAL; with `member_slots_ttl` 0 only for the members streaming from
 *   this node. A `nofailover` node keeps only those of the members that cascade from it.
 * - A slot per name in `/status`'s `retain_slots` and per member that left less than
 *   `member_slots_ttl` ago (not on a `nofailover` node).
 * - The permanent slots, except on a `nofailover` node; a node whose WAL does not come by streaming
 *   from the primary (`nostream`, or cascading from such a node) keeps only the physical ones, its
 *   copy of a logical slot could not be trusted. Never a physical slot of this node's own name.
 *
 * Positions: a member's slot stands where the leader published it, or where the member itself
 * reports its WAL when it cascades from another member (the leader's copy is idle then).
 */
export function planSlots({ self, isLeader, cluster, dynamic, departed = [] }: SlotPlanInput): SlotPlan {
  if (!dynamic.use_slots) return EMPTY;
  const ownSlot = slotNameOf(self.name);
  const nofailover = failoverPriority(self.tags) === 0;
  const published = cluster.status?.value.slots ?? {};
  const running = (name: string) =>
    cluster.members.some((member) => member.name === name && member.data.state === 'running');
  // Where a member streams from, as cascade.ts arranges it: from the leader when its upstream is not running.
  const expectedActive = (member: Member): boolean => {
    const from = replicatefromOf(member.data.tags);
    if (isLeader) return from === null || from === self.name || !running(from);
    return from === self.name && member.name !== cluster.leader?.value;
  };
  const retainMembers = dynamic.member_slots_ttl > 0;
  const members = cluster.members
    .filter((member) => member.name !== self.name && !isTruthyTag(member.data.tags?.nostream))
    .filter((member) =>
      retainMembers ? !nofailover || replicatefromOf(member.data.tags) === self.name : expectedActive(member),
    );

  const physical = new Map<string, PlannedPhysicalSlot>();
  for (const member of members) {
    const name = slotNameOf(member.name);
    let position = positionOf(published[name]);
    if (replicatefromOf(member.data.tags)) position = Math.max(positionOf(member.data.xlog_location), position);
    physical.set(name, { name, ...(position > 0 ? { position } : {}), expectedActive: expectedActive(member) });
  }
  if (!nofailover) {
    const retained = [
      ...(Array.isArray(cluster.status?.value.retain_slots) ? cluster.status!.value.retain_slots : []),
      ...departed.map(slotNameOf),
    ];
    for (const name of retained) {
      if (typeof name === 'string' && name !== ownSlot && !physical.has(name))
        physical.set(name, { name, expectedActive: false });
    }
  }

  const permanent = nofailover ? [] : dynamic.slots;
  const streamsFromPrimary = dynamic.standby_cluster === null && slotOnPrimary(cluster, self.name, self.tags) !== null;
  const cascading = new Map(
    cluster.members
      .filter((member) => replicatefromOf(member.data.tags))
      .map((member) => [slotNameOf(member.name), member]),
  );
  const logical: PermanentSlot[] = [];
  const conflicts: string[] = [];
  for (const slot of permanent) {
    if (slot.type === 'physical') {
      if (slot.name === ownSlot || physical.has(slot.name)) continue;
      // A permanent slot named after a cascading member: that member's own report is its freshest position.
      const position = Math.max(
        positionOf(published[slot.name]),
        positionOf(cascading.get(slot.name)?.data.xlog_location),
      );
      physical.set(slot.name, {
        name: slot.name,
        ...(position > 0 ? { position } : {}),
        expectedActive: isLeader && !cascading.has(slot.name),
      });
    } else if (streamsFromPrimary) {
      if (physical.has(slot.name)) conflicts.push(slot.name);
      else logical.push(slot);
    }
  }
  return { physical: [...physical.values()], logical, conflicts };
}

/**
 * `/status`'s `retain_slots`, as the leader writes it: the slots of the members (this one included)
 * that stream, and of those that left less than `member_slots_ttl` ago, but not the permanent
 * physical slots (kept anyway). Every node keeps these slots, so a member that comes back after a
 * failover finds its WAL. Absent (null) with `member_slots_ttl` 0.
 */
export function retainedSlots(
  cluster: ClusterView,
  selfName: string,
  dynamic: Pick<EffectiveDynamicConfig, 'use_slots' | 'member_slots_ttl' | 'slots'>,
  departed: string[],
): string[] | null {
  if (!dynamic.use_slots || dynamic.member_slots_ttl <= 0) return null;
  const permanent = new Set(dynamic.slots.filter((slot) => slot.type === 'physical').map((slot) => slot.name));
  const streaming = cluster.members
    .filter((member) => !isTruthyTag(member.data.tags?.nostream))
    .map((member) => member.name);
  const names = new Set([...streaming, selfName, ...departed].map(slotNameOf));
  const retained = [...names].filter((name) => !permanent.has(name)).sort();
  return retained.length > 0 ? retained : null;
}
