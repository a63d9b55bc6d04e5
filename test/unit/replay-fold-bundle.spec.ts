import { runInNewContext } from 'node:vm';
import { bundleReplayFold } from '../../scripts/build-ui';
import { clusterAt } from '../../src/audit/cluster-at';
import { coveredByCheckpoint } from '../../src/events/log-checkpoint';
import { RecordedEvent } from '../../src/events/event';
import { syntheticLog } from './audit-fixture';

/** The browser bundle of the replay fold (what /ui's time travel runs) against the fold `stator audit replay --at` runs. */
describe('the replay fold bundled for /ui', () => {
  it('runs without Node and folds every instant of a log exactly as stator audit replay --at', async () => {
    const script = bundleReplayFold(false);
    // A bare context, as in a page: no require, no process, no Buffer.
    const page: { StatorReplay?: { clusterAt: typeof clusterAt; coveredByCheckpoint: typeof coveredByCheckpoint } } =
      {};
    runInNewContext(`${script}\nthis.StatorReplay = StatorReplay;`, page);
    const log: RecordedEvent[] = await syntheticLog();
    const instants = [...new Set(log.map((event) => Date.parse(event.at)))];
    expect(instants.length).toBeGreaterThan(10);
    for (const instant of [instants[0] - 1, ...instants, instants[instants.length - 1] + 1]) {
      // Compared as JSON: the bundle's objects come from another realm.
      expect(JSON.stringify(page.StatorReplay!.clusterAt(log, instant, null))).toBe(
        JSON.stringify(clusterAt(log, instant, null)),
      );
    }
    const checkpoint = {
      cutAt: log[5].at,
      streams: { [log[0].stream]: { seq: 1, hash: 'h', at: log[0].at } },
      projections: clusterAt(log.slice(0, 1), Date.parse(log[0].at)).projections,
    };
    expect(log.map((event) => page.StatorReplay!.coveredByCheckpoint(checkpoint, event.stream, event.seq))).toEqual(
      log.map((event) => coveredByCheckpoint(checkpoint, event.stream, event.seq)),
    );
  });
});
