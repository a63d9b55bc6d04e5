import { spawn } from 'node:child_process';
import { trackChild } from './cleanup';

export const WRK_BINARY = process.env.WRK_BINARY ?? '/usr/bin/wrk';

export interface WrkResult {
  requestsPerSecond: number;
  p50Ms: number;
  p75Ms: number;
  p90Ms: number;
  p99Ms: number;
  maxMs: number;
  requests: number;
  non2xx: number;
  socketErrors: string;
  raw: string;
}

/** `wrk -t2 -c16 -d<seconds>s --latency <url>` (loopback only), killed if it overruns by 20 s. */
export function runWrk(url: string, seconds: number, threads = 2, connections = 16): Promise<WrkResult> {
  if (!/^http:\/\/127\.0\.0\.1:\d+\//.test(url)) throw new Error(`wrk target must be on 127.0.0.1: ${url}`);
  return new Promise((resolve, reject) => {
    const child = spawn(WRK_BINARY, [`-t${threads}`, `-c${connections}`, `-d${seconds}s`, '--latency', url], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    trackChild(child);
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (out += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), (seconds + 20) * 1000);
    child.once('error', reject);
    child.once('exit', (code) => {
      clearTimeout(timer);
      if (code !== 0) return reject(new Error(`wrk exited ${code}: ${out}`));
      try {
        resolve(parseWrk(out));
      } catch (error) {
        reject(error);
      }
    });
  });
}

export function toMs(value: string): number {
  const match = /^([\d.]+)(us|ms|s|m)$/.exec(value.trim());
  if (!match) return NaN;
  const n = Number(match[1]);
  return match[2] === 'us' ? n / 1000 : match[2] === 'ms' ? n : match[2] === 's' ? n * 1000 : n * 60_000;
}

export function parseWrk(out: string): WrkResult {
  const percentile = (p: string) => toMs(new RegExp(`^\\s+${p}%\\s+(\\S+)`, 'm').exec(out)?.[1] ?? '');
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1]);
  if (!Number.isFinite(rps)) throw new Error(`cannot parse wrk output:\n${out}`);
  const latencyLine = /^\s+Latency\s+(\S+)\s+(\S+)\s+(\S+)/m.exec(out);
  return {
    requestsPerSecond: rps,
    p50Ms: percentile('50'),
    p75Ms: percentile('75'),
    p90Ms: percentile('90'),
    p99Ms: percentile('99'),
    maxMs: latencyLine ? toMs(latencyLine[3]) : NaN,
    requests: Number(/(\d+) requests in/.exec(out)?.[1] ?? NaN),
    non2xx: Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(out)?.[1] ?? 0),
    socketErrors: /Socket errors:\s+(.*)/.exec(out)?.[1]?.trim() ?? 'none',
    raw: out,
  };
}
