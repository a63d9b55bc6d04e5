import { StatorConfig } from './config.types';
import { Findings, ignoreUnsupported, Mapping, readSection, readString } from './config-readers';

const LOG_LEVELS: Record<string, StatorConfig['log']['level']> = {
  debug: 'debug',
  info: 'info',
  warning: 'warning',
  warn: 'warning',
  error: 'error',
  critical: 'error',
};

export function readLogLevel(findings: Findings, doc: Mapping): StatorConfig['log']['level'] {
  const section = readSection(findings, doc, 'log', '');
  ignoreUnsupported(findings, section, 'log', ['level']);
  const level = readString(findings, section, 'level', 'log');
  if (level === undefined) return 'info';
  const mapped = LOG_LEVELS[level.trim().toLowerCase()];
  if (!mapped) findings.invalid('log.level', 'must be one of debug, info, warning, error', level);
  return mapped ?? 'info';
}
