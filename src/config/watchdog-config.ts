import { childPath, Findings, ignoreUnsupported, isAbsent, Mapping, readSection } from './config-readers';

/**
 * Patroni's `watchdog` section: a hardware watchdog the leader's fence holds open while the node leads
 * (see `postgresql/fence/fence_watchdog.py`).
 */
export interface WatchdogSettings {
  /** `off`; `automatic` (default): used when it can be; `required`: no usable watchdog, no leader lock. */
  mode: 'off' | 'automatic' | 'required';
  /** Default `/dev/watchdog`. */
  device: string;
  /** Seconds before the lease ends at which the watchdog fires: timeout = ttl - safety_margin; -1 means ttl / 2. */
  safety_margin: number;
  /** `default` (Linux's watchdog API) or `testing` (the FIFO protocol of Patroni's acceptance harness). */
  driver: 'default' | 'testing';
}

export const DEFAULT_WATCHDOG: WatchdogSettings = {
  mode: 'automatic',
  device: '/dev/watchdog',
  safety_margin: 5,
  driver: 'default',
};

/** Patroni's `parse_mode` spellings; YAML 1.1 reads `off`, `no` and `false` as the boolean false. */
const MODE_SPELLINGS: Record<string, WatchdogSettings['mode']> = {
  off: 'off',
  disable: 'off',
  disabled: 'off',
  auto: 'automatic',
  automatic: 'automatic',
  require: 'required',
  required: 'required',
};
/** Linux's PATH_MAX. */
const MAX_PATH_LENGTH = 4096;
/** The kernel's watchdog API takes a timeout below 65535 s. */
const MAX_SAFETY_MARGIN = 65534;

export function readWatchdog(findings: Findings, doc: Mapping): WatchdogSettings {
  const settings = { ...DEFAULT_WATCHDOG };
  // Patroni: `watchdog: off` (false) as a whole turns it off.
  if (doc.watchdog === false) return { ...settings, mode: 'off' };
  const section = readSection(findings, doc, 'watchdog', '');
  ignoreUnsupported(findings, section, 'watchdog', ['mode', 'device', 'safety_margin', 'driver']);
  const path = (key: string) => childPath('watchdog', key);

  if (section.mode === false) settings.mode = 'off';
  else if (!isAbsent(section.mode)) {
    const mode = typeof section.mode === 'string' ? MODE_SPELLINGS[section.mode.trim().toLowerCase()] : undefined;
    // Patroni turns an unknown mode off with a warning: a typo of `required` would silently drop the guarantee.
    if (mode) settings.mode = mode;
    else findings.invalid(path('mode'), 'must be off, automatic or required', section.mode);
  }
  if (!isAbsent(section.device)) {
    const device = section.device;
    if (
      typeof device === 'string' &&
      device.startsWith('/') &&
      device.length <= MAX_PATH_LENGTH &&
      !device.includes('\0')
    )
      settings.device = device;
    else findings.invalid(path('device'), `must be an absolute path (at most ${MAX_PATH_LENGTH} characters)`, device);
  }
  if (!isAbsent(section.safety_margin)) {
    const margin =
      typeof section.safety_margin === 'string' && section.safety_margin.trim()
        ? Number(section.safety_margin)
        : section.safety_margin;
    if (typeof margin === 'number' && Number.isInteger(margin) && margin >= -1 && margin <= MAX_SAFETY_MARGIN)
      settings.safety_margin = margin;
    else
      findings.invalid(
        path('safety_margin'),
        `must be a whole number of seconds from 0 to ${MAX_SAFETY_MARGIN}, or -1 for ttl / 2`,
        section.safety_margin,
      );
  }
  if (!isAbsent(section.driver)) {
    if (section.driver === 'default' || section.driver === 'testing') settings.driver = section.driver;
    else
      findings.invalid(
        path('driver'),
        'must be default (Linux /dev/watchdog) or testing (a FIFO, for acceptance tests)',
        section.driver,
      );
  }
  return settings;
}

/** The watchdog timeout in seconds for a ttl, as the reference computes it. */
export function watchdogTimeoutSeconds(settings: WatchdogSettings, ttlSeconds: number): number {
  return settings.safety_margin === -1 ? Math.floor(ttlSeconds / 2) : ttlSeconds - settings.safety_margin;
}

/**
 * Why this configuration cannot have a safe watchdog for these timings, or null when it can. The reference
 * gives up on a timeout shorter than loop_wait (the device would fire between two keepalives) or under 1 s.
 */
export function watchdogTimingProblem(
  settings: WatchdogSettings,
  ttlSeconds: number,
  loopWaitSeconds: number,
): string | null {
  const timeout = watchdogTimeoutSeconds(settings, ttlSeconds);
  if (timeout < 1)
    return `watchdog timeout ${timeout} s (ttl ${ttlSeconds} - safety_margin ${settings.safety_margin}) is below 1 s`;
  if (timeout < loopWaitSeconds)
    return `Watchdog not supported because leader TTL ${ttlSeconds} is less than 2x loop_wait ${loopWaitSeconds}`;
  return null;
}
