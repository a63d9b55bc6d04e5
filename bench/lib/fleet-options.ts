import { Kind, Timing } from './cluster';

/** `npm run fleet-bench -- [options]`: what to measure. */
export interface FleetOptions {
  /** Fleet sizes, in clusters of 3 nodes. */
  counts: number[];
  /** The settled window the load is measured over, and the wait before it once every cluster is healthy. */
  windowSeconds: number;
  settleSeconds: number;
  products: Kind[];
  timing: { name: 'patroni' | 'fast'; values: Timing };
  /** Clusters started at once. */
  startBatch: number;
  /** What is measured on each fleet, in this order (all of them by default). */
  scenarios: FleetScenario[];
  /** Keep the nodes' directories (agents' logs, event logs, PostgreSQL logs) even when the run succeeded. */
  keep: boolean;
  /** Failovers measured per fleet, each on another cluster (fleet-1, fleet-2...; the same one again when N is smaller), settled between. */
  failoverSamples: number;
  /** The etcd members' niceness (null: the machine's default, as every other process): see `--etcd-priority`. */
  etcdNiceness: number | null;
}

/** The parts of a fleet's run, in the order they run: the settled window, then the faults and the storm. */
export const FLEET_SCENARIOS = ['window', 'failover', 'agent-failover', 'storm', 'etcd-leader-kill'] as const;
export type FleetScenario = (typeof FLEET_SCENARIOS)[number];

/** Patroni's defaults (what a fleet runs), and the bench's fast timing (`npm run bench`'s first series). */
export const FLEET_TIMINGS: Record<'patroni' | 'fast', Timing> = {
  patroni: { ttl: 30, loopWait: 10, retryTimeout: 10 },
  fast: { ttl: 10, loopWait: 2, retryTimeout: 3 },
};

export const DEFAULT_FLEET_OPTIONS: FleetOptions = {
  counts: [1, 5, 10, 20],
  windowSeconds: 300,
  settleSeconds: 60,
  products: ['stator', 'patroni'],
  timing: { name: 'patroni', values: FLEET_TIMINGS.patroni },
  startBatch: 4,
  scenarios: [...FLEET_SCENARIOS],
  keep: false,
  failoverSamples: 1,
  etcdNiceness: null,
};

export const FLEET_USAGE = `usage: npm run fleet-bench -- [--n 1,5,10,20] [--window 300] [--settle 60] [--products stator,patroni] [--timing patroni|fast] [--start-batch 4] [--scenarios window,failover,agent-failover,storm,etcd-leader-kill] [--failover-samples 1] [--etcd-priority -10] [--keep]
  --n            fleet sizes to measure, in clusters of 3 nodes (1 to 100 each)
  --window       seconds of settled load measured for each fleet (10 to 3600)
  --settle       seconds waited once every cluster is healthy, before the window (0 to 3600)
  --products     stator, patroni or both
  --timing       patroni: ttl 30 / loop_wait 10 / retry_timeout 10 (Patroni's defaults); fast: ttl 10 / loop_wait 2 / retry_timeout 3
  --start-batch  clusters started at once (1 to 20)
  --scenarios    what each fleet runs (default all): window (the settled load window), failover (agent and postmaster
                 of fleet-1 killed), agent-failover (fleet-2's agent alone), storm (every cluster switched over at once),
                 etcd-leader-kill
  --failover-samples  failovers measured per fleet (1 to 20), each on another cluster, healthy again between them;
                 the report gives their median and range
  --etcd-priority  the etcd members' niceness (-20 to 19, root for below 0; default: as every other process): an etcd
                 that stands in for one on its own hosts, which a fleet sharing the machine's cores cannot starve
  --keep         keep the nodes' directories and logs (printed at the end) even when nothing failed`;

export class FleetOptionError extends Error {}

/** Reads the command line; a bad option is refused with the option's name and its rule. */
export function parseFleetOptions(argv: string[]): FleetOptions {
  const options: FleetOptions = { ...DEFAULT_FLEET_OPTIONS };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const [flag, inline] = arg.includes('=')
      ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)]
      : [arg, undefined];
    const value = () => {
      const given = inline ?? argv[++i];
      if (given === undefined || given === '') throw new FleetOptionError(`${flag}: a value is required`);
      return given;
    };
    switch (flag) {
      case '--n':
        options.counts = integerList(flag, value(), 1, 100);
        break;
      case '--window':
        options.windowSeconds = integer(flag, value(), 10, 3600);
        break;
      case '--settle':
        options.settleSeconds = integer(flag, value(), 0, 3600);
        break;
      case '--products': {
        const products = value().split(',');
        const unknown = products.filter((p) => p !== 'stator' && p !== 'patroni');
        if (unknown.length) throw new FleetOptionError(`--products: ${unknown.join(', ')} is not stator or patroni`);
        options.products = [...new Set(products)] as Kind[];
        break;
      }
      case '--timing': {
        const name = value();
        if (name !== 'patroni' && name !== 'fast')
          throw new FleetOptionError(`--timing: ${name} is not patroni or fast`);
        options.timing = { name, values: FLEET_TIMINGS[name] };
        break;
      }
      case '--start-batch':
        options.startBatch = integer(flag, value(), 1, 20);
        break;
      case '--scenarios': {
        const named = value()
          .split(',')
          .map((name) => name.trim());
        const unknown = named.filter((name) => !(FLEET_SCENARIOS as readonly string[]).includes(name));
        if (unknown.length)
          throw new FleetOptionError(`--scenarios: ${unknown.join(', ')} is not one of ${FLEET_SCENARIOS.join(', ')}`);
        options.scenarios = FLEET_SCENARIOS.filter((name) => named.includes(name));
        break;
      }
      case '--failover-samples':
        options.failoverSamples = integer(flag, value(), 1, 20);
        break;
      case '--etcd-priority': {
        const text = value();
        const niceness = Number(text);
        if (!/^-?\d+$/.test(text) || niceness < -20 || niceness > 19)
          throw new FleetOptionError(`--etcd-priority: ${text} is not a whole number from -20 to 19`);
        options.etcdNiceness = niceness;
        break;
      }
      case '--keep':
        if (inline !== undefined) throw new FleetOptionError('--keep: takes no value');
        options.keep = true;
        break;
      default:
        throw new FleetOptionError(`${arg}: not an option`);
    }
  }
  return options;
}

function integer(flag: string, text: string, min: number, max: number): number {
  const n = Number(text);
  if (!/^\d+$/.test(text) || n < min || n > max)
    throw new FleetOptionError(`${flag}: ${text} is not a whole number from ${min} to ${max}`);
  return n;
}

function integerList(flag: string, text: string, min: number, max: number): number[] {
  return [...new Set(text.split(',').map((part) => integer(flag, part.trim(), min, max)))];
}

/** Whether the run measures what `npm run fleet-bench` measures without options (its results are the reference ones). */
export function isDefaultRun(options: FleetOptions): boolean {
  const d = DEFAULT_FLEET_OPTIONS;
  return (
    options.counts.join() === d.counts.join() &&
    options.windowSeconds === d.windowSeconds &&
    options.settleSeconds === d.settleSeconds &&
    options.products.join() === d.products.join() &&
    options.timing.name === d.timing.name &&
    options.scenarios.join() === d.scenarios.join() &&
    options.failoverSamples === d.failoverSamples &&
    options.etcdNiceness === d.etcdNiceness
  );
}

/** The results' file name (without extension): `fleet-<date>` for the default run, the sizes, window and scenarios otherwise. */
export function fleetResultName(date: string, options: FleetOptions): string {
  if (isDefaultRun(options)) return `fleet-${date}`;
  const measuresWindow = options.scenarios.includes('window');
  const scenarios = options.scenarios.join() === FLEET_SCENARIOS.join() ? '' : `-${options.scenarios.join('-')}`;
  const samples = options.failoverSamples > 1 ? `-f${options.failoverSamples}` : '';
  const etcdPriority = options.etcdNiceness === null ? '' : `-etcd-nice${options.etcdNiceness}`;
  return `fleet-${date}-n${options.counts.join('-')}${measuresWindow ? `-w${options.windowSeconds}` : ''}${scenarios}${samples}${etcdPriority}`;
}
