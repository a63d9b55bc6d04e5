/** WAL segment size of the Debian builds (16 MB), which the reference assumes too. */
const WAL_SEGMENT_MB = 16;

type Parameters = Record<string, string | number | boolean>;

/**
 * Parameters renamed between PostgreSQL versions, translated as the reference does so that one
 * configuration serves every version: `wal_keep_segments` (before 13) is `wal_keep_size` from 13
 * on, one segment being 16 MB. A value given under the version's own name wins.
 */
export function withVersionNames(parameters: Parameters, majorVersion: number): Parameters {
  const result = { ...parameters };
  if (majorVersion >= 13 && result.wal_keep_segments !== undefined) {
    const segments = Number(result.wal_keep_segments);
    delete result.wal_keep_segments;
    if (result.wal_keep_size === undefined && Number.isFinite(segments))
      result.wal_keep_size = `${segments * WAL_SEGMENT_MB}MB`;
  } else if (majorVersion < 13 && result.wal_keep_size !== undefined) {
    const megabytes = sizeInMegabytes(result.wal_keep_size);
    delete result.wal_keep_size;
    if (result.wal_keep_segments === undefined && megabytes !== null)
      result.wal_keep_segments = Math.ceil(megabytes / WAL_SEGMENT_MB);
  }
  return result;
}

/** `1600MB`, `2GB`, `1600` (MB, wal_keep_size's unit) in megabytes; null for anything else. */
function sizeInMegabytes(value: string | number | boolean): number | null {
  if (typeof value === 'number') return value;
  const match = /^\s*(\d+)\s*(MB|GB|TB)?\s*$/.exec(String(value));
  if (!match) return null;
  return Number(match[1]) * { MB: 1, GB: 1024, TB: 1024 * 1024 }[match[2] ?? 'MB']!;
}
