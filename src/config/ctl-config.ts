import { BOOLEAN_RULE, isMapping, parsePatroniBoolean } from './config-values';
import { Findings, ignoreUnsupported, isAbsent, readString } from './config-readers';

/**
 * The `ctl` section (Patroni's patronictl settings): how a client reaches the members' REST API.
 * statorctl reads it, as patronictl does, and the agent uses its certificate for its own calls to
 * the other members, as Patroni's agent does.
 */
export interface CtlConfig {
  /** Without a client certificate: no server certificate check. With one: the CA is checked, not the host name (as Patroni). */
  insecure?: boolean;
  /** Trusted CAs (PEM); `restapi.cafile` when absent. */
  cacert?: string;
  /** The client certificate (PEM); its key may be in the same file. */
  certfile?: string;
  keyfile?: string;
  /** Decrypts `keyfile`. */
  keyfile_password?: string;
  /** Basic auth; `restapi.authentication` when absent. */
  authentication?: { username: string; password: string };
}

export const CTL_KEYS = ['insecure', 'cacert', 'certfile', 'keyfile', 'keyfile_password', 'authentication'] as const;

/** Reads `ctl`; each bad value is a problem naming its key, unknown keys are warned about. */
export function readCtlSection(findings: Findings, value: unknown): CtlConfig {
  if (isAbsent(value)) return {};
  if (!isMapping(value)) {
    findings.invalid('ctl', 'must be a mapping', value);
    return {};
  }
  ignoreUnsupported(findings, value, 'ctl', CTL_KEYS);
  const ctl: CtlConfig = {};
  if (!isAbsent(value.insecure)) {
    const insecure = parsePatroniBoolean(value.insecure);
    if (insecure === undefined) findings.invalid('ctl.insecure', BOOLEAN_RULE, value.insecure);
    else ctl.insecure = insecure;
  }
  for (const key of ['cacert', 'certfile', 'keyfile'] as const) {
    const path = readString(findings, value, key, 'ctl');
    if (path !== undefined && path !== '') ctl[key] = path;
  }
  const password = readString(findings, value, 'keyfile_password', 'ctl', { secret: true });
  if (password !== undefined) ctl.keyfile_password = password;
  if (ctl.keyfile && !ctl.certfile)
    findings.warnings.push(
      'ctl.keyfile: ignored without ctl.certfile (the certificate the key belongs to), as in Patroni',
    );
  if (!isAbsent(value.authentication)) {
    const auth = value.authentication;
    const username = isMapping(auth) ? readString(findings, auth, 'username', 'ctl.authentication') : undefined;
    const password = isMapping(auth)
      ? readString(findings, auth, 'password', 'ctl.authentication', { secret: true })
      : undefined;
    if (!isMapping(auth)) findings.invalid('ctl.authentication', 'must be a mapping with username and password', auth);
    else if (username === undefined || password === undefined)
      findings.problem('ctl.authentication', 'needs both username and password');
    else ctl.authentication = { username, password };
  }
  return ctl;
}
