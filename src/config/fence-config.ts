import { Findings, ignoreUnsupported, isAbsent, Mapping, readSection } from './config-readers';
import { parsePatroniBoolean } from './config-values';

/** Stator's own `fence` section: how the fence beside the postmaster ends a dead leader's term. */
export interface FenceSettings {
  /**
   * Seconds a leader's fence waits, once its agent is gone, for an agent to connect again before it
   * stops PostgreSQL and revokes the lease: long enough for a supervisor to restart the agent.
   */
  agent_grace: number;
  /** Whether the fence revokes the lease itself (false: the lease expires after `ttl`, as in the reference). */
  release_lease: boolean;
  /** The Python 3 interpreter that runs the fence; absent: `/usr/bin/python3`, else `python3` on PATH. */
  python?: string;
}

/** A supervisor (systemd, a container runtime) restarts an agent and it reconnects in about a second here. */
export const DEFAULT_AGENT_GRACE_SECONDS = 3;
const MAX_AGENT_GRACE_SECONDS = 600;
/** Linux's PATH_MAX. */
const MAX_PATH_LENGTH = 4096;

export function readFence(findings: Findings, doc: Mapping): FenceSettings {
  const section = readSection(findings, doc, 'fence', '');
  ignoreUnsupported(findings, section, 'fence', ['agent_grace', 'release_lease', 'python']);
  const settings: FenceSettings = { agent_grace: DEFAULT_AGENT_GRACE_SECONDS, release_lease: true };
  if (!isAbsent(section.agent_grace)) {
    const grace = typeof section.agent_grace === 'string' ? Number(section.agent_grace) : section.agent_grace;
    if (typeof grace === 'number' && Number.isFinite(grace) && grace >= 0 && grace <= MAX_AGENT_GRACE_SECONDS)
      settings.agent_grace = grace;
    else
      findings.invalid(
        'fence.agent_grace',
        `must be a number of seconds from 0 to ${MAX_AGENT_GRACE_SECONDS}`,
        section.agent_grace,
      );
  }
  if (!isAbsent(section.release_lease)) {
    const release = parsePatroniBoolean(section.release_lease);
    if (release === undefined) findings.invalid('fence.release_lease', 'must be true or false', section.release_lease);
    else settings.release_lease = release;
  }
  if (!isAbsent(section.python)) {
    if (
      typeof section.python === 'string' &&
      section.python.trim() &&
      section.python.length <= MAX_PATH_LENGTH &&
      !section.python.includes('\0')
    )
      settings.python = section.python;
    else
      findings.invalid(
        'fence.python',
        `must be the path of a Python 3 interpreter (at most ${MAX_PATH_LENGTH} characters)`,
        section.python,
      );
  }
  return settings;
}
