/** Stator's version, as `stator.version` in the status document and `stator_version` in /metrics. */
export const STATOR_VERSION = '0.1.0';
