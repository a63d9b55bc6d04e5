import { ConfigError } from '../../src/config/load-config';

/** The problems of the ConfigError `action` throws, one line each; fails the test if it throws none. */
export function problemsOf(action: () => unknown): string[] {
  try {
    action();
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

/** The problems of the ConfigError `action` throws, or none when it loads. */
export function problemsIfAny(action: () => unknown): string[] {
  try {
    action();
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  return [];
}
