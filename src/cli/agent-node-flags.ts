/**
 * The V8 flags every agent runs with: `bin/stator.js`'s first line, the Dockerfile's entry point,
 * `npm start` and the launchers of the local cluster, the benchmark and the tests carry them
 * (test/unit/deploy.spec.ts checks the files).
 *
 * At most 2 MiB per semi-space of the young generation instead of V8's 16: the socket buffers of
 * health checks are malloc'ed and freed only when the scavenger collects their Buffer objects, so
 * a large young generation lets glibc's heap fill with freed but resident memory. After 20 s of
 * `wrk -c16` on /primary the leader held 235 MiB RSS with V8's default, 110 MiB with 4 MiB at the
 * same 20k requests/s. 2 MiB holds 4–5 MiB less than 4 (3-node cluster, seconds after start and
 * after the health-check load) for up to a tenth of the throughput; 1 MiB cost a quarter of it.
 */
export const AGENT_NODE_FLAGS = ['--max-semi-space-size=2'];

/**
 * The environment every agent starts with, for glibc's malloc, which reads it once before any
 * JavaScript runs (so the agent cannot set it itself): the same places carry it as the flags, and
 * the Dockerfile as an `ENV`. At most 2 malloc arenas instead of 8 per core: V8's and libuv's
 * threads otherwise each take an arena of their own, whose freed memory stays resident. 3-node
 * cluster, RSS per agent: 1 to 2 MiB less idle and after the health-check load, at the same
 * requests/s and idle CPU.
 */
export const AGENT_ENVIRONMENT: Readonly<Record<string, string>> = { MALLOC_ARENA_MAX: '2' };

/** `NAME=value ...` as a shell or `env -S` reads it. */
export function agentEnvironmentAssignments(): string {
  return Object.entries(AGENT_ENVIRONMENT)
    .map(([name, value]) => `${name}=${value}`)
    .join(' ');
}
