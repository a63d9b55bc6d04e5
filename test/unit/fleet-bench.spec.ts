import { EtcdScrape, etcdLoad, histogramQuantile, parseMetrics } from '../../bench/lib/etcd-metrics';
import { keyRole, KeySnapshot, writesByRole } from '../../bench/lib/etcd-key-writes';
import {
  DEFAULT_FLEET_OPTIONS,
  fleetResultName,
  FleetOptionError,
  isDefaultRun,
  parseFleetOptions,
} from '../../bench/lib/fleet-options';

/** `npm run fleet-bench`: its command line, and what it reads from etcd's /metrics. */

function member(lines: string[]): string {
  return ['# HELP something', '# TYPE something counter', ...lines].join('\n');
}

const scrape = (at: number, members: string[]): EtcdScrape => ({ at, members: members.map(parseMetrics) });

describe('fleet-bench options', () => {
  it('runs one scenario alone at one size, keeps the logs, and names its results after it', () => {
    const options = parseFleetOptions(['--n', '10', '--scenarios', 'storm', '--products', 'stator', '--keep']);
    expect(options.scenarios).toEqual(['storm']);
    expect(options.keep).toBe(true);
    expect(isDefaultRun(options)).toBe(false);
    expect(fleetResultName('2026-11-28', options)).toBe('fleet-2026-11-28-n10-storm');
    // Given in any order, the scenarios run in the bench's order.
    const two = parseFleetOptions(['--scenarios', 'storm,window', '--window', '20']);
    expect(two.scenarios).toEqual(['window', 'storm']);
    expect(fleetResultName('2026-11-28', two)).toBe('fleet-2026-11-28-n1-5-10-20-w20-window-storm');
    expect(fleetResultName('2026-11-28', DEFAULT_FLEET_OPTIONS)).toBe('fleet-2026-11-28');
    expect(fleetResultName('2026-11-28', parseFleetOptions(['--n', '1,2', '--window', '20']))).toBe(
      'fleet-2026-11-28-n1-2-w20',
    );
  });

  it("defaults to fleets of 1, 5, 10 and 20 clusters, 5-minute windows, both products at Patroni's timing", () => {
    const options = parseFleetOptions([]);
    expect(options).toEqual(DEFAULT_FLEET_OPTIONS);
    expect(options.counts).toEqual([1, 5, 10, 20]);
    expect(options.windowSeconds).toBe(300);
    expect(options.timing.values).toEqual({ ttl: 30, loopWait: 10, retryTimeout: 10 });
    expect(isDefaultRun(options)).toBe(true);
  });

  it('reads every option, as `--flag value` or `--flag=value`', () => {
    const options = parseFleetOptions([
      '--n',
      '1,3',
      '--window=60',
      '--settle',
      '0',
      '--products',
      'stator',
      '--timing',
      'fast',
      '--start-batch=2',
      '--failover-samples',
      '5',
      '--etcd-priority=-10',
    ]);
    expect(options.counts).toEqual([1, 3]);
    expect(options.windowSeconds).toBe(60);
    expect(options.settleSeconds).toBe(0);
    expect(options.products).toEqual(['stator']);
    expect(options.timing.values).toEqual({ ttl: 10, loopWait: 2, retryTimeout: 3 });
    expect(options.startBatch).toBe(2);
    expect(options.failoverSamples).toBe(5);
    expect(options.etcdNiceness).toBe(-10);
    expect(isDefaultRun(options)).toBe(false);
    expect(fleetResultName('2026-11-28', options)).toBe('fleet-2026-11-28-n1-3-w60-f5-etcd-nice-10');
    expect(isDefaultRun({ ...DEFAULT_FLEET_OPTIONS, failoverSamples: 3 })).toBe(false);
  });

  it.each([
    [['--n', '0,5'], '--n: 0 is not a whole number from 1 to 100'],
    [['--n', '5,x'], '--n: x is not a whole number from 1 to 100'],
    [['--window', '5'], '--window: 5 is not a whole number from 10 to 3600'],
    [['--window'], '--window: a value is required'],
    [['--products', 'stator,pgpool'], '--products: pgpool is not stator or patroni'],
    [['--timing', 'slow'], '--timing: slow is not patroni or fast'],
    [['--clusters', '5'], '--clusters: not an option'],
    [
      ['--scenarios', 'storm,chaos'],
      '--scenarios: chaos is not one of window, failover, agent-failover, storm, etcd-leader-kill',
    ],
    [['--keep=yes'], '--keep: takes no value'],
    [['--failover-samples', '0'], '--failover-samples: 0 is not a whole number from 1 to 20'],
    [['--etcd-priority', '-21'], '--etcd-priority: -21 is not a whole number from -20 to 19'],
    [['--etcd-priority', 'high'], '--etcd-priority: high is not a whole number from -20 to 19'],
  ])('refuses %j naming the option and its rule', (argv, message) => {
    expect(() => parseFleetOptions(argv)).toThrow(new FleetOptionError(message));
  });
});

describe("etcd's load between two scrapes of /metrics", () => {
  const before = scrape(0, [
    member([
      'grpc_server_msg_received_total{grpc_method="Range",grpc_service="etcdserverpb.KV",grpc_type="unary"} 100',
      'grpc_server_msg_received_total{grpc_method="LeaseKeepAlive",grpc_service="etcdserverpb.Lease",grpc_type="bidi_stream"} 10',
      'grpc_server_msg_received_total{grpc_method="Watch",grpc_service="grpc.health.v1.Health",grpc_type="server_stream"} 0',
      'etcd_network_client_grpc_received_bytes_total 1000',
      'etcd_debugging_mvcc_watcher_total 4',
      'etcd_mvcc_db_total_size_in_bytes 1048576',
      'etcd_server_proposals_committed_total 50',
    ]),
    member([
      'grpc_server_msg_received_total{grpc_method="Range",grpc_service="etcdserverpb.KV",grpc_type="unary"} 0',
      'etcd_network_client_grpc_received_bytes_total 0',
      'etcd_debugging_mvcc_watcher_total 2',
      'etcd_mvcc_db_total_size_in_bytes 1048576',
      'etcd_server_proposals_committed_total 50',
    ]),
  ]);
  const after = scrape(10_000, [
    member([
      'grpc_server_msg_received_total{grpc_method="Range",grpc_service="etcdserverpb.KV",grpc_type="unary"} 150',
      'grpc_server_msg_received_total{grpc_method="LeaseKeepAlive",grpc_service="etcdserverpb.Lease",grpc_type="bidi_stream"} 30',
      'grpc_server_msg_received_total{grpc_method="Watch",grpc_service="grpc.health.v1.Health",grpc_type="server_stream"} 7',
      'grpc_server_msg_received_total{grpc_method="Status",grpc_service="etcdserverpb.Maintenance",grpc_type="unary"} 5',
      'grpc_server_msg_received_total{grpc_method="MemberList",grpc_service="etcdserverpb.Cluster",grpc_type="unary"} 0',
      'etcd_network_client_grpc_received_bytes_total 6000',
      'etcd_debugging_mvcc_watcher_total 5',
      'etcd_mvcc_db_total_size_in_bytes 2097152',
      'etcd_server_proposals_committed_total 80',
    ]),
    member([
      'grpc_server_msg_received_total{grpc_method="Range",grpc_service="etcdserverpb.KV",grpc_type="unary"} 50',
      'etcd_network_client_grpc_received_bytes_total 4000',
      'etcd_debugging_mvcc_watcher_total 3',
      'etcd_mvcc_db_total_size_in_bytes 2097152',
      'etcd_server_proposals_committed_total 79',
    ]),
  ]);

  it('sums client requests, bytes and watchers over the members, per second of the window', () => {
    const load = etcdLoad(before, after);
    expect(load.seconds).toBe(10);
    expect(load.requestsPerSecond.Range).toBe(10); // (50 + 50) / 10 s
    expect(load.requestsPerSecond.LeaseKeepAlive).toBe(2);
    expect(load.requestsPerSecond.Watch).toBe(0); // the gRPC health service's Watch is not etcd's
    expect(load.requestsPerSecond.Status).toBe(0.5); // a method beyond the usual kinds, called in the window
    expect(load.requestsPerSecond).not.toHaveProperty('MemberList'); // one not called
    expect(load.allRequestsPerSecond).toBe(12.5);
    expect(load.bytesInPerSecond).toBe(900);
    expect(load.watchers).toBe(8);
  });

  it("takes the largest member's database and raft figures, and scales the growth to an hour", () => {
    const load = etcdLoad(before, after);
    expect(load.dbSizeBytes).toBe(2097152);
    expect(load.dbGrowthBytesPerHour).toBe(1048576 * 360);
    expect(load.proposalsPerSecond).toBe(3);
  });

  it('gives a p99 from the buckets observed in the window, every member together', () => {
    const buckets = (counts: number[]) =>
      member(
        ['0.001', '0.002', '0.004', '+Inf'].map(
          (le, i) => `etcd_disk_wal_fsync_duration_seconds_bucket{le="${le}"} ${counts[i]}`,
        ),
      );
    const start = scrape(0, [buckets([5, 5, 5, 5]), buckets([0, 0, 0, 0])]);
    // In the window: 90 observations under 1 ms, 9 under 2 ms, 1 under 4 ms.
    const end = scrape(1000, [buckets([50, 55, 55, 55]), buckets([45, 49, 50, 50])]);
    expect(histogramQuantile(start, end, 'etcd_disk_wal_fsync_duration_seconds', 0.99)).toBe(0.002);
    expect(histogramQuantile(start, end, 'etcd_disk_wal_fsync_duration_seconds', 0.5)).toBe(0.001);
    expect(histogramQuantile(start, start, 'etcd_disk_wal_fsync_duration_seconds', 0.99)).toBeNaN();
  });
});

describe('keys written in the window, by role', () => {
  const snapshot = (keys: Record<string, [createRevision: string, version: number]>): KeySnapshot =>
    new Map(Object.entries(keys).map(([key, [createRevision, version]]) => [key, { createRevision, version }]));

  it("names each key by its role in either product's layout", () => {
    expect(keyRole('/service/fleet-1/members/node2')).toBe('members/*');
    expect(keyRole('/service/fleet-1/leader')).toBe('leader');
    expect(keyRole('/service/fleet-1/status')).toBe('status');
    expect(keyRole('/stator-events/fleet-1/node/node1/ha/000000000012')).toBe('events');
    expect(keyRole('/stator-events/fleet-1/heads/node/node1/ha')).toBe('events (heads)');
  });

  it("counts a key's version growth, a new key's every write, and a key created again as new", () => {
    const before = snapshot({
      '/service/a/members/n1': ['5', 3],
      '/service/a/leader': ['7', 1],
      '/service/a/status': ['8', 10],
    });
    const after = snapshot({
      '/service/a/members/n1': ['5', 6],
      '/service/a/members/n2': ['20', 2],
      '/service/a/leader': ['30', 1],
      '/service/a/status': ['8', 10],
    });
    expect(writesByRole(before, after)).toEqual({ 'members/*': 5, leader: 1 });
  });
});
