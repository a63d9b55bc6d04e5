/** PostgreSQL LSNs travel as `X/X` text in SQL and as integers in Patroni's JSON. */
export function parseLsn(text: string): number {
  const match = /^([0-9A-Fa-f]{1,8})\/([0-9A-Fa-f]{1,8})$/.exec(text.trim());
  if (!match) throw new Error(`not an LSN: ${text}`);
  return parseInt(match[1], 16) * 0x1_0000_0000 + parseInt(match[2], 16);
}

export function formatLsn(position: number): string {
  const high = Math.floor(position / 0x1_0000_0000);
  const low = position % 0x1_0000_0000;
  return `${high.toString(16).toUpperCase()}/${low.toString(16).toUpperCase()}`;
}
