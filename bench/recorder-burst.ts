/**
 * Health answers while the event recorder takes a burst of transitions: one process, as in the agent,
 * with an HTTP server answering from memory and the recorder writing its durable queue to a real disk.
 * Prints the health answers' p50 / p99 / max with and without the burst, and how long record() held
 * the event loop. Run: `npm run build && node dist/bench/recorder-burst.js [events-per-burst] [seconds]`.
 */
import { request, createServer, Agent } from 'node:http';
import { AddressInfo } from 'node:net';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { systemClock } from '../src/common/clock';
import { EventRecorder } from '../src/events/event-recorder';
import { MemoryEventStore } from '../src/events/memory-event-store';
import { removeDir, tmpDir } from '../scripts/lib/tmp';

const BURST = Number(process.argv[2] ?? 50);
const SECONDS = Number(process.argv[3] ?? 5);
const CONCURRENCY = 4;

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

async function measure(withBurst: boolean): Promise<string> {
  const dir = tmpDir('stator-recorder-burst-');
  const recorder = new EventRecorder({
    store: new MemoryEventStore(),
    queueDir: dir,
    node: 'node1',
    clock: systemClock,
    logger: { warn: () => undefined, log: () => undefined },
  });
  await recorder.start();
  const body = JSON.stringify({ state: 'running', role: 'primary' });
  const server = createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(body));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  const latencies: number[] = [];
  const recordTimes: number[] = [];
  const loop = monitorEventLoopDelay({ resolution: 1 });
  const until = Date.now() + SECONDS * 1000;
  let seq = 0;
  const burster = withBurst
    ? setInterval(() => {
        const started = process.hrtime.bigint();
        for (let i = 0; i < BURST; i++) {
          recorder.record({
            stream: 'node/node1/postgres',
            type: 'postgres.transition',
            at: new Date().toISOString(),
            node: 'node1',
            from: 'a',
            to: `s${seq++}`,
            cause: 'bench',
          });
        }
        recordTimes.push(Number(process.hrtime.bigint() - started) / 1e6);
      }, 100)
    : null;
  loop.enable();
  const client = async () => {
    while (Date.now() < until) {
      const started = process.hrtime.bigint();
      await new Promise<void>((resolve, reject) => {
        const req = request({ host: '127.0.0.1', port, path: '/primary', agent }, (res) => {
          res.resume();
          res.on('end', resolve);
        });
        req.on('error', reject);
        req.end();
      });
      latencies.push(Number(process.hrtime.bigint() - started) / 1e6);
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, client));
  loop.disable();
  if (burster) clearInterval(burster);
  await recorder.whenFlushed();
  await recorder.stop();
  agent.destroy();
  server.close();
  removeDir(dir);
  latencies.sort((a, b) => a - b);
  recordTimes.sort((a, b) => a - b);
  const ms = (value: number) => value.toFixed(2);
  return (
    `| ${withBurst ? `burst of ${BURST} events every 100 ms (${seq} in all)` : 'no transitions'} | ${latencies.length} | ${ms(percentile(latencies, 50))} | ${ms(percentile(latencies, 99))} | ${ms(latencies.at(-1) ?? 0)} | ` +
    `${withBurst ? `${ms(percentile(recordTimes, 50))} / ${ms(recordTimes.at(-1) ?? 0)}` : '—'} | ${ms(loop.percentile(99) / 1e6)} |`
  );
}

async function main(): Promise<void> {
  const rows = [await measure(false), await measure(true)];
  process.stdout.write(
    [
      '| load | health answers | p50 ms | p99 ms | max ms | one burst of record() calls: median / max ms | event loop delay p99 ms |',
      '|---|---|---|---|---|---|---|',
      ...rows,
      '',
    ].join('\n'),
  );
}

void main();
