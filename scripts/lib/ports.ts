import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/**
 * Ports handed out by this process. A port is only probed, then released for its future owner
 * (PostgreSQL, etcd, an agent), so without this memory two callers in a row could be given the same
 * one: a cluster's second postmaster then exits at start with "Address already in use".
 */
const handedOut = new Set<number>();

/**
 * Ports fetch() refuses to connect to (the WHATWG "bad ports" list, from 10000 up): an etcd or agent
 * given one answers every probe with "fetch failed" (seen once: etcd on 10080, a test's 10 s start timeout).
 */
const FETCH_BLOCKED = new Set([10080]);

/**
 * Candidates come from below the kernel's ephemeral range, where the OS never places the local end
 * of an outgoing connection: the many short connections a test cluster makes to etcd and
 * PostgreSQL cannot take a port between the probe and its owner's bind.
 */
function candidateRange(): { low: number; high: number } {
  return sliceForJestWorker(wholeRange());
}

/** Jest runs integration specs two at a time (one per worker): each worker draws from a quarter of its own. */
const JEST_WORKER_SLICES = 4;

function sliceForJestWorker(range: { low: number; high: number }): { low: number; high: number } {
  const worker = Number(process.env.JEST_WORKER_ID);
  if (!Number.isInteger(worker) || worker < 1) return range;
  const size = Math.floor((range.high - range.low + 1) / JEST_WORKER_SLICES);
  const low = range.low + ((worker - 1) % JEST_WORKER_SLICES) * size;
  return { low, high: low + size - 1 };
}

function wholeRange(): { low: number; high: number } {
  const given = /^(\d{4,5})-(\d{4,5})$/.exec(process.env.STATOR_TEST_PORTS ?? '');
  // Several checkouts testing at once on one machine each take a range of their own.
  if (given && Number(given[1]) < Number(given[2])) return { low: Number(given[1]), high: Number(given[2]) };
  try {
    const [ephemeralLow] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8')
      .trim()
      .split(/\s+/)
      .map(Number);
    if (ephemeralLow > 12_000) return { low: 10_000, high: ephemeralLow - 1 };
  } catch {
    // Not Linux: fall back to the registered range, probed all the same.
  }
  return { low: 20_000, high: 29_999 };
}

function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** A TCP port on 127.0.0.1 that was free a moment ago and that this process has not handed out before. */
export async function freePort(): Promise<number> {
  const { low, high } = candidateRange();
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = low + Math.floor(Math.random() * (high - low + 1));
    if (handedOut.has(port) || FETCH_BLOCKED.has(port) || !(await isFree(port))) continue;
    handedOut.add(port);
    return port;
  }
  throw new Error(`no free port found in ${low}-${high} after 200 tries`);
}
