/**
 * What the page at /ui runs of the audit, bundled for the browser by scripts/build-ui.ts: the fold
 * of `stator audit replay --at`, and the test of which events a retention checkpoint already holds
 * (the agent's cache may still serve them; the fold must not count them twice).
 */
export { clusterAt } from './cluster-at';
export { coveredByCheckpoint } from '../events/log-checkpoint';
