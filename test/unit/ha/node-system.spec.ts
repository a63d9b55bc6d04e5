import { replayedMachineAt } from '../../../src/audit/transition-replay';
import { NewEvent, RecordedEvent } from '../../../src/events/event';
import { HaMemory } from '../../../src/ha/ha-memory.machine';
import { NODE_SYSTEM_IDS } from '../../../src/ha/node-system';
import { SimulatedCluster } from './simulated-cluster';

/** The log as the store would number it: a seq per stream. */
function numbered(log: NewEvent[]): RecordedEvent[] {
  const seqs = new Map<string, number>();
  return log.map((event) => {
    const seq = (seqs.get(event.stream) ?? 0) + 1;
    seqs.set(event.stream, seq);
    return { ...event, seq } as RecordedEvent;
  });
}

/** One node's actor system (node-system.ts), run by the HA cycle over the in-memory adapters on simulated time. */
describe("a node's actor system", () => {
  let cluster: SimulatedCluster;

  beforeEach(async () => {
    cluster = await SimulatedCluster.start(2);
    await cluster.runUntil(() => cluster.healthy() !== null, 60_000, 'a bootstrapped cluster');
  });
  afterEach(() => cluster.stop());

  it('registers every actor by its systemId while the agent runs; the sampler and the scheduler stop with the cycle', async () => {
    const replica = cluster.nodes.find((node) => node.name !== cluster.healthy())!;
    const system = replica.ha.actorSystem;
    expect(NODE_SYSTEM_IDS.filter((id) => system.get(id) === undefined)).toEqual([]);
    expect(system.get('sampler')!.getSnapshot().status).toBe('active');
    await cluster.killAgent(replica.name);
    // The memory (served by the API until the process ends) and the recorder (events after the stop) stay.
    expect(NODE_SYSTEM_IDS.filter((id) => system.get(id) !== undefined)).toEqual(['recorder', 'memory']);
  });

  it('keeps a scheduled restart in the recorded memory: a replay of the log rebuilds it, and its end', async () => {
    const replica = cluster.nodes.find((node) => node.name !== cluster.healthy())!;
    const at = cluster.clock.now() + 20_000;
    const restart = { at, schedule: new Date(at).toISOString(), postmasterStartTime: null };
    expect(replica.ha.scheduleRestart(restart)).toBe(true);
    const scheduledAt = new Date(cluster.clock.now()).toISOString();
    const memoryAt = (instant: string) =>
      (replayedMachineAt(numbered(replica.events), `node/${replica.name}/memory`, instant)?.context as HaMemory)
        .scheduledRestart;
    expect(replica.ha.view().memory?.scheduledRestart).toEqual(restart);
    expect(memoryAt(scheduledAt)).toEqual(restart);

    const pidBefore = replica.server.pid;
    await cluster.runUntil(() => replica.server.pid !== pidBefore, 30_000, 'the scheduled restart');
    const now = new Date(cluster.clock.now()).toISOString();
    expect(replica.ha.view().memory?.scheduledRestart).toBeNull();
    expect(memoryAt(now)).toBeNull();
    const memoryEvents = replica.events
      .filter((event) => event.type === 'memory.transition')
      .map((event) => event.cause)
      .filter((cause) => cause.startsWith('RESTART_'));
    expect(memoryEvents).toEqual(['RESTART_SCHEDULED', 'RESTART_UNSCHEDULED']);
  });
});
