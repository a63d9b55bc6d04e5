/**
 * The V8 flags every agent runs with: `bin/stator.js`'s first line, the Dockerfile's entry point,
 * `npm start` and the launchers of the local cluster, the benchmark and the tests carry them
 * (test/unit/deploy.spec.ts checks the files).
 *
 * None today. `--max-semi-space-size=2` (then 4) was set while the API's connection guard listened
 * for every socket's `data`, which made Node hand each chunk of every request to JavaScript as a
 * Buffer: with V8's default young generation those piled up as freed but resident malloc memory.
 * Since the guard reads `bytesRead` instead (src/api/connection-guard.ts), the default holds the
 * same RSS under `wrk -c16` on /primary (85 MiB after 20 s, against 87 with 4 MiB and 83 with 2)
 * and 2 MiB cost a fifth to a quarter of the throughput (docs/benchmarks.md, `npm run bench:health`).
 */
export const AGENT_NODE_FLAGS: readonly string[] = [];

/**
 * The environment every agent starts with, for glibc's malloc, which reads it once before any
 * JavaScript runs (so the agent cannot set it itself): the same places carry it as the flags, and
 * the Dockerfile as an `ENV`. At most 2 malloc arenas instead of 8 per core: V8's and libuv's
 * threads otherwise each take an arena of their own, whose freed memory stays resident. 3-node
 * cluster, RSS per agent: 1 to 2 MiB less idle and after the health-check load, at the same
 * requests/s and idle CPU.
 */
export const AGENT_ENVIRONMENT: Readonly<Record<string, string>> = { MALLOC_ARENA_MAX: '2' };

/** `node [flags...]` as a command line reads it (no trailing space without flags). */
export function nodeWithFlags(node = 'node'): string {
  return [node, ...AGENT_NODE_FLAGS].join(' ');
}

/** `NAME=value ...` as a shell or `env -S` reads it. */
export function agentEnvironmentAssignments(): string {
  return Object.entries(AGENT_ENVIRONMENT)
    .map(([name, value]) => `${name}=${value}`)
    .join(' ');
}
