/**
 * Recovery settings (PostgreSQL 12 and later: server parameters) that Stator writes into postgresql.conf itself.
 * The reference's list: a value of one of these in postgresql.auto.conf, which PostgreSQL reads last, would win over
 * Stator's. A restore leaves them there: `pgbackrest restore` writes its `restore_command` into that file.
 */
const RECOVERY_PARAMETERS = new Set([
  'archive_cleanup_command',
  'pause_at_recovery_target',
  'primary_conninfo',
  'primary_slot_name',
  'promote_trigger_file',
  'recovery_end_command',
  'recovery_min_apply_delay',
  'recovery_target',
  'recovery_target_action',
  'recovery_target_inclusive',
  'recovery_target_lsn',
  'recovery_target_name',
  'recovery_target_time',
  'recovery_target_timeline',
  'recovery_target_xid',
  'restore_command',
  'standby_mode',
  'trigger_file',
]);

/** `name = value` or `name value`: the parameter a line of postgresql.auto.conf sets. */
const PARAMETER_LINE = /^\s*([A-Za-z_][A-Za-z0-9_.]*)\s*(?:=|\s)/;

/**
 * postgresql.auto.conf without its recovery settings (comments and other lines kept as they are), and the names
 * removed; null when it sets none, so the file is left untouched. As the reference's `_sanitize_auto_conf`.
 */
export function withoutRecoveryParameters(text: string): { text: string; removed: string[] } | null {
  const kept: string[] = [];
  const removed: string[] = [];
  for (const line of text.split(/(?<=\n)/)) {
    const name = PARAMETER_LINE.exec(line)?.[1]?.toLowerCase();
    if (name && RECOVERY_PARAMETERS.has(name)) removed.push(name);
    else kept.push(line);
  }
  return removed.length ? { text: kept.join(''), removed } : null;
}
