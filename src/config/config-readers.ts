import { accessSync, constants as fsConstants } from 'node:fs';
import { describeValue, isMapping } from './config-values';

/**
 * The configuration loader's building blocks: where problems and warnings are collected, and
 * readers that each report their own problems and return a usable fallback.
 */

export type Mapping = Record<string, unknown>;

export class Findings {
  readonly problems: string[] = [];
  readonly warnings: string[] = [];
  /** Key path -> the environment variable whose value is there, so that messages point at the right place. */
  readonly setBy = new Map<string, string>();

  /** `variableByPath`: key path -> the PATRONI_ variable that can set it, for "required (or ...)" hints. */
  constructor(private readonly variableByPath: ReadonlyMap<string, string> = new Map()) {}

  problem(path: string, message: string): void {
    const variable = this.setBy.get(path.replace(/\[\d+\]$/, ''));
    this.problems.push(`${path}: ${message}${variable ? ` (from ${variable})` : ''}`);
  }

  invalid(path: string, rule: string, value: unknown, options: { secret?: boolean } = {}): void {
    this.problem(path, options.secret ? rule : `${rule}, got ${describeValue(value)}`);
  }

  required(path: string): void {
    const variable = this.variableByPath.get(path);
    this.problems.push(`${path}: required${variable ? ` (or ${variable})` : ''}`);
  }

  unsupported(path: string, reason?: string): void {
    this.warnings.push(`unsupported key ${path} ignored${reason ? ` (${reason})` : ''}`);
  }
}

export function childPath(parent: string, key: string): string {
  return parent ? `${parent}.${key}` : key;
}

export function isAbsent(value: unknown): value is undefined | null {
  return value === undefined || value === null;
}

export function readSection(findings: Findings, parent: Mapping, key: string, parentPath: string): Mapping {
  const value = parent[key];
  if (isAbsent(value)) return {};
  if (isMapping(value)) return value;
  findings.invalid(childPath(parentPath, key), 'must be a mapping', value);
  return {};
}

export function ignoreUnsupported(
  findings: Findings,
  section: Mapping,
  path: string,
  supported: readonly string[],
): void {
  for (const key of Object.keys(section)) {
    if (!supported.includes(key)) findings.unsupported(childPath(path, key));
  }
}

export function readString(
  findings: Findings,
  section: Mapping,
  key: string,
  path: string,
  options: { secret?: boolean } = {},
): string | undefined {
  const value = section[key];
  if (isAbsent(value)) return undefined;
  if (typeof value === 'string') return value;
  // YAML reads `password: 1234` or `scope: 2024` as numbers; Patroni uses them as text.
  if (typeof value === 'number') return String(value);
  findings.invalid(childPath(path, key), 'must be a string', value, options);
  return undefined;
}

export function readRequiredString(
  findings: Findings,
  section: Mapping,
  key: string,
  path: string,
  options: { secret?: boolean } = {},
): string {
  const value = section[key];
  if (isAbsent(value) || value === '') {
    findings.required(childPath(path, key));
    return '';
  }
  return readString(findings, section, key, path, options) ?? '';
}

export function readOneOf<T extends string>(
  findings: Findings,
  section: Mapping,
  key: string,
  path: string,
  allowed: readonly T[],
  fallback: T,
): T {
  const value = readString(findings, section, key, path);
  if (value === undefined) return fallback;
  const normalized = value.trim().toLowerCase();
  if ((allowed as readonly string[]).includes(normalized)) return normalized as T;
  findings.invalid(childPath(path, key), `must be one of ${allowed.join(', ')}`, value);
  return fallback;
}

export function readStringList(findings: Findings, section: Mapping, key: string, path: string): string[] | undefined {
  const value = section[key];
  const listPath = childPath(path, key);
  if (isAbsent(value)) return undefined;
  if (!Array.isArray(value)) {
    findings.invalid(listPath, 'must be a list of strings', value);
    return undefined;
  }
  const items: string[] = [];
  value.forEach((item, index) => {
    if (typeof item === 'string' || typeof item === 'number') items.push(String(item));
    else findings.invalid(`${listPath}[${index}]`, 'must be a string', item);
  });
  return items;
}

/** An integer from `min` to `max`, or its digits as text (as a PATRONI_ variable gives it). */
export function readIntegerInRange(
  findings: Findings,
  section: Mapping,
  key: string,
  path: string,
  min: number,
  max: number,
): number | undefined {
  const value = section[key];
  if (isAbsent(value)) return undefined;
  const number = typeof value === 'string' && /^\s*\d+\s*$/.test(value) ? Number(value) : value;
  if (typeof number === 'number' && Number.isInteger(number) && number >= min && number <= max) return number;
  findings.invalid(childPath(path, key), `must be an integer from ${min} to ${max}`, value);
  return undefined;
}

export function splitHostPort(value: string): { host: string; port: number } | undefined {
  const match = /^(.*):(\d{1,5})$/.exec(value.trim());
  if (!match) return undefined;
  const port = Number(match[2]);
  return port >= 1 && port <= 65535 ? { host: match[1], port } : undefined;
}

/** A file this process can read now (certificates are read when the agent connects). */
export function isReadableFile(path: string): boolean {
  try {
    accessSync(path, fsConstants.R_OK);
    return true;
  } catch {
    return false;
  }
}
