/**
 * The V8 flags every agent runs with: `bin/stator.js`'s first line, the Dockerfile's entry point,
 * `npm start` and the launchers of the local cluster, the benchmark and the tests carry them
 * (test/unit/deploy.spec.ts checks the files).
 *
 * At most 4 MiB per semi-space of the young generation instead of V8's 16: the socket buffers of
 * health checks are malloc'ed and freed only when the scavenger collects their Buffer objects, so
 * a large young generation lets glibc's heap fill with freed but resident memory. After 20 s of
 * `wrk -c16` on /primary the leader held 235 MiB RSS with V8's default, 110 MiB with 4 MiB at the
 * same 20k requests/s; 1 MiB held 103 MiB but cost a quarter of the throughput.
 */
export const AGENT_NODE_FLAGS = ['--max-semi-space-size=4'];
