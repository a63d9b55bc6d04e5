import type { FleetRun, WindowedFleetRun } from '../../bench/fleet-types';
import { estimateFleetRun } from '../../bench/lib/fleet-estimate';
import { etcdSizeFor, extrapolate, linearFit, renderExtrapolation } from '../../bench/lib/fleet-extrapolation';
import { DEFAULT_FLEET_OPTIONS, parseFleetOptions } from '../../bench/lib/fleet-options';
import { fleetPanels, fleetPlotSvg, niceTicks, pointLabel } from '../../bench/lib/fleet-plot';

/** `npm run fleet-bench`'s 500-cluster extrapolation, its plot and its duration estimate. */

const MiB = 1024 * 1024;

/** A run whose etcd figures grow with N as given per cluster (and a fixed part for etcd itself). */
function run(
  kind: 'stator' | 'patroni',
  clusters: number,
  perCluster: { requests: number; inUseMiB: number; growthMiBh: number },
  newPrimaryMs = 300,
): WindowedFleetRun {
  return {
    kind,
    clusters,
    agents: clusters * 3,
    startMs: 0,
    load: {
      seconds: 60,
      requestsPerSecond: {},
      allRequestsPerSecond: perCluster.requests * clusters,
      watchEventsPerSecond: 0,
      bytesInPerSecond: 100 * clusters,
      bytesOutPerSecond: 300 * clusters,
      proposalsPerSecond: 0.1 * clusters,
      leaderChanges: 0,
      watchers: 2 * 3 * clusters,
      watchStreams: 3 * clusters,
      dbSizeBytes: 0,
      dbInUseBytes: perCluster.inUseMiB * clusters * MiB,
      keys: 100 * clusters,
      dbGrowthBytesPerHour: perCluster.growthMiBh * clusters * MiB,
      dbInUseGrowthBytesPerHour: perCluster.growthMiBh * clusters * MiB,
      walFsyncP99Ms: 2,
      backendCommitP99Ms: 4,
    },
    writesPerMinuteByRole: {},
    usage: {
      agentCpuPerMinute: { min: 0, median: 0, max: 0, n: 0 },
      agentRssMiB: { min: 0, median: 0, max: 0, n: 0 },
      agents: clusters * 3,
      etcdCpuPerMinute: 1 + 0.1 * clusters,
      etcdRssMiB: 100,
    },
    perAgentPerMinute: { requests: 0, bytesIn: 0, bytesOut: 0 },
    failover: { newPrimaryMs } as FleetRun['failover'],
    otherLeadersMoved: 0,
    loadBefore: '',
  };
}

describe('the 500-cluster extrapolation', () => {
  it('fits a least-squares line over the measured fleet sizes', () => {
    const fit = linearFit([
      { n: 1, y: 3 },
      { n: 5, y: 11 },
      { n: 10, y: 21 },
    ])!;
    expect(fit.slope).toBeCloseTo(2, 10);
    expect(fit.intercept).toBeCloseTo(1, 10);
    expect(fit.sizes).toEqual([1, 5, 10]);
  });

  it('takes a figure as proportional to N when one fleet size was measured, and ignores missing figures', () => {
    expect(
      linearFit([
        { n: 4, y: 10 },
        { n: 4, y: 14 },
        { n: 8, y: NaN },
      ]),
    ).toEqual({ intercept: 0, slope: 3, sizes: [4] });
    expect(linearFit([{ n: 4, y: NaN }])).toBeNull();
  });

  it('projects requests to 500 clusters and names the etcd size the docs give for that load', () => {
    const runs = [
      run('stator', 1, { requests: 0.5, inUseMiB: 0.05, growthMiBh: 0.5 }),
      run('stator', 3, { requests: 0.5, inUseMiB: 0.05, growthMiBh: 0.5 }),
    ];
    const projection = extrapolate(runs, 'stator')!;
    expect(projection.byMetric.requests.projected).toBeCloseTo(250, 6);
    expect(etcdSizeFor('requestsPerSecond', 250)).toBe('medium');
    expect(etcdSizeFor('requestsPerSecond', 150)).toBe('small');
    expect(etcdSizeFor('clients', 1500)).toBe('beyond large (xLarge)');
    expect(etcdSizeFor('dataBytes', 600e6)).toBe('large');
  });

  it("bounds Stator's event logs by the append guard's share of the quota at the defaults, Patroni's data by what was measured", () => {
    const runs = [1, 3].flatMap((n) => [
      run('stator', n, { requests: 0.5, inUseMiB: 0.05, growthMiBh: 0.5 }),
      run('patroni', n, { requests: 0.4, inUseMiB: 0.01, growthMiBh: 0.2 }),
    ]);
    const stator = extrapolate(runs, 'stator')!;
    // 500 × 8 MiB is over 0.5 × 2 GiB: the guard holds the logs at 1 GiB.
    expect(stator.guardHoldsBack).toBe(true);
    expect(stator.steadyInUseBytes).toBe(1024 * MiB);
    // 1 GiB less the 25 MiB measured, at 250 MiB/h.
    expect(stator.hoursToRetention).toBeCloseTo((1024 - 25) / 250, 6);
    const patroni = extrapolate(runs, 'patroni')!;
    expect(patroni.steadyInUseBytes).toBeCloseTo(5 * MiB, 0);
    expect(patroni.guardHoldsBack).toBe(false);
  });

  it("writes the report's section with both products, the cited limits and the figures at 500", () => {
    const runs = [1, 3].flatMap((n) => [
      run('stator', n, { requests: 0.5, inUseMiB: 0.05, growthMiBh: 0.5 }),
      run('patroni', n, { requests: 0.4, inUseMiB: 0.01, growthMiBh: 0.2 }),
    ]);
    const text = renderExtrapolation(runs).join('\n');
    expect(text).toContain('## 500 clusters on one etcd, extrapolated');
    expect(text).toContain('https://etcd.io/docs/v3.5/dev-guide/limit/');
    expect(text).toContain('https://etcd.io/docs/v3.5/op-guide/hardware/');
    expect(text).toMatch(/\| requests \(\/s\) \| 0\.0 \+ 0\.500 N \| 250\.0 \| 0\.0 \+ 0\.400 N \| 200\.0 \|/);
    expect(text).toContain('| requests/s | 250: medium | 200: medium |');
    // 2 GiB / (0.2 MiB/h × 500)
    expect(text).toMatch(/\| hours until the db file reaches 2 GiB without compaction \| 8 \| 20 \|/);
  });
});

describe("the fleet bench's plot", () => {
  it('has the four panels the issue asks for, one line per product, and the agent-alone failover dashed', () => {
    const runs = [
      run('stator', 1, { requests: 0.5, inUseMiB: 0, growthMiBh: 0.5 }, 286),
      run('patroni', 1, { requests: 0.4, inUseMiB: 0, growthMiBh: 0 }, 28_242),
    ];
    const panels = fleetPanels(runs);
    expect(panels.map((p) => p.title)).toEqual([
      'etcd requests per second',
      'etcd CPU, three members together',
      'etcd database growth (file)',
      'failover: new primary after kill -9',
    ]);
    expect(panels[3].series.map((s) => [s.label, Boolean(s.dashed)])).toEqual([
      ['stator', false],
      ['patroni', false],
      ['stator (agent alone)', true],
      ['patroni (agent alone)', true],
    ]);
    const svg = fleetPlotSvg(panels, 'A fleet <test>');
    expect(svg).toContain('A fleet &lt;test&gt;');
    // The failover values are written beside their points: 0.286 s next to 28.2 s is still read.
    expect(svg).toContain('>0.286</text>');
    expect(svg).toContain('>28.2</text>');
    // Runs without the agent-alone scenario draw no dashed line and no legend for it.
    expect(svg).not.toContain('failover: the agent alone killed');
  });

  it('chooses round axis steps that reach the largest value', () => {
    expect(niceTicks(28.2)).toEqual([0, 10, 20, 30]);
    expect(niceTicks(1.5)).toEqual([0, 0.5, 1, 1.5]);
    expect(niceTicks(0)).toEqual([0, 1]);
    expect(pointLabel(0.28612)).toBe('0.286');
    expect(pointLabel(1234.5)).toBe('1235');
  });
});

describe("the fleet bench's duration estimate", () => {
  it('is printed for the long run, with the fleet sizes and the largest number of agents', () => {
    const long = estimateFleetRun(parseFleetOptions(['--n', '5,10,20', '--window', '300']));
    expect(long.text).toMatch(
      /^estimated duration: \d+ min for 6 fleets \(5, 10, 20 clusters × stator and patroni; up to 60 agents and 60 PostgreSQL servers at once\)/,
    );
    const small = estimateFleetRun(parseFleetOptions(['--n', '1,2', '--window', '20', '--settle', '10']));
    expect(long.seconds).toBeGreaterThan(small.seconds + 6 * (300 + 60) - 4 * 30);
    expect(estimateFleetRun(DEFAULT_FLEET_OPTIONS).seconds).toBeGreaterThan(long.seconds);
  });
});
