import { RestApiConfig } from './config.types';
import { BOOLEAN_RULE, describeValue, isMapping, parsePatroniBoolean } from './config-values';
import { childPath, Findings, isAbsent, Mapping, readIntegerInRange, readOneOf, readString } from './config-readers';

/** The `restapi` keys beyond address, access checks and certificates: TLS details, headers, backlog. */
export const RESTAPI_OPTION_KEYS = [
  'keyfile_password',
  'ciphers',
  'allowlist_include_members',
  'http_extra_headers',
  'https_extra_headers',
  'request_queue_size',
  'server_tokens',
] as const;

/** An HTTP header name (RFC 9110 token). */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,256}$/;
/** Visible characters, spaces and tabs: no line breaks that would end the header block early. */
const HEADER_VALUE = /^[\t\x20-\x7e\x80-\uffff]{0,8192}$/;
/**
 * Headers Stator writes itself: a second Content-Length or Transfer-Encoding would break the answer's framing, a
 * Connection header its keep-alive handling, and Server is `server_tokens`' job.
 */
const MANAGED_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'content-length': 'each answer sets it',
  'transfer-encoding': 'each answer sets it',
  'content-type': 'each answer sets it',
  connection: 'the server manages keep-alive',
  'keep-alive': 'the server manages keep-alive',
  upgrade: 'the server manages the connection',
  te: 'the server manages the connection',
  trailer: 'the server manages the connection',
  server: 'use restapi.server_tokens',
});

/** Far above what any listen backlog needs; Linux caps it at net.core.somaxconn anyway. */
const MAX_REQUEST_QUEUE_SIZE = 65_535;

/** Reads RESTAPI_OPTION_KEYS from `section` into `restapi`. */
export function readRestApiOptions(findings: Findings, section: Mapping, path: string, restapi: RestApiConfig): void {
  const password = readString(findings, section, 'keyfile_password', path, { secret: true });
  if (password !== undefined) restapi.keyfile_password = password;
  const ciphers = readString(findings, section, 'ciphers', path);
  if (ciphers !== undefined && ciphers.trim() !== '') restapi.ciphers = ciphers.trim();

  if (!isAbsent(section.allowlist_include_members)) {
    const flag = parsePatroniBoolean(section.allowlist_include_members);
    if (flag === undefined)
      findings.invalid(childPath(path, 'allowlist_include_members'), BOOLEAN_RULE, section.allowlist_include_members);
    else restapi.allowlist_include_members = flag;
  }
  for (const key of ['http_extra_headers', 'https_extra_headers'] as const) {
    const headers = readHeaders(findings, section, key, path);
    if (headers) restapi[key] = headers;
  }
  const queueSize = readIntegerInRange(findings, section, 'request_queue_size', path, 1, MAX_REQUEST_QUEUE_SIZE);
  if (queueSize !== undefined) restapi.request_queue_size = queueSize;
  if (!isAbsent(section.server_tokens)) {
    restapi.server_tokens = readOneOf(
      findings,
      section,
      'server_tokens',
      path,
      ['original', 'productonly', 'minimal'] as const,
      'original',
    );
  }

  // Without certfile there is no TLS server for these to change; Patroni ignores them silently, Stator says so.
  for (const key of ['keyfile_password', 'ciphers', 'https_extra_headers'] as const) {
    if (restapi[key] !== undefined && !section.certfile)
      findings.warnings.push(`${path}.${key} has no effect without ${path}.certfile (the API serves plain HTTP)`);
  }
}

function readHeaders(
  findings: Findings,
  section: Mapping,
  key: string,
  path: string,
): Record<string, string> | undefined {
  const value = section[key];
  const headersPath = childPath(path, key);
  if (isAbsent(value)) return undefined;
  if (!isMapping(value)) {
    findings.invalid(headersPath, 'must be a mapping of header names to values', value);
    return undefined;
  }
  const headers: Record<string, string> = {};
  for (const [name, raw] of Object.entries(value)) {
    const headerPath = `${headersPath}.${name}`;
    const managed = Object.hasOwn(MANAGED_HEADERS, name.toLowerCase())
      ? MANAGED_HEADERS[name.toLowerCase()]
      : undefined;
    if (!HEADER_NAME.test(name))
      findings.problem(headersPath, `${describeValue(name)} is not a valid HTTP header name`);
    else if (managed) findings.problem(headerPath, `Stator sets this header itself (${managed})`);
    else if (typeof raw !== 'string' && typeof raw !== 'number' && typeof raw !== 'boolean')
      findings.invalid(headerPath, 'must be a string', raw);
    else if (!HEADER_VALUE.test(String(raw)))
      findings.invalid(headerPath, 'must be one line of at most 8192 characters', raw);
    else headers[name] = String(raw);
  }
  return headers;
}
