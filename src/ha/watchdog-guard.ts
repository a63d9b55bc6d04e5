import { Logger } from '../common/logger';
import { WatchdogSettings, watchdogTimeoutSeconds, watchdogTimingProblem } from '../config/watchdog-config';
import { DeviceCheck, writableDevice } from '../postgresql/fence/watchdog-device';
import { FenceState, FenceWatchdog, FenceWatchdogState } from '../postgresql/postgres.port';

/** The fence answers an arm within milliseconds: how often a promotion looks whether it did... */
const ACTIVATION_POLL_MS = 20;
/** ...and how long it waits before it gives the promotion up (the next cycle decides again). */
export const WATCHDOG_ACTIVATION_WAIT_MS = 2_000;

/** Records a watchdog fact on the node's `watchdog` stream. */
export type WatchdogRecorder = (type: `watchdog.${string}`, cause: string, data: Record<string, unknown>) => void;

/**
 * The `watchdog` section as the HA loop applies it: what the leader's fence is asked to hold (each arm pets
 * it), and, in mode `required`, why this node may not lead (no usable device, unsafe timings, or the fence
 * could not activate it). The device itself is opened by the fence (`fence_watchdog.py`), never by the agent.
 */
export class WatchdogGuard {
  private lastFailure: string | null = null;
  private lastHeld: FenceWatchdogState | null = null;

  constructor(
    /** Read each time: a reload (SIGHUP, POST /reload) may change the section. */
    private readonly settingsOf: () => WatchdogSettings,
    private readonly logger: Logger,
    private readonly record: WatchdogRecorder = () => undefined,
    private readonly checkDevice: DeviceCheck = writableDevice,
  ) {}

  private get settings(): WatchdogSettings {
    return this.settingsOf();
  }

  /** What the fence holds with the next arm; none when off, when not `wanted` (paused...), or with unsafe timings. */
  request(ttlSeconds: number, loopWaitSeconds: number, wanted: boolean): FenceWatchdog | undefined {
    if (this.settings.mode === 'off' || !wanted) return undefined;
    if (watchdogTimingProblem(this.settings, ttlSeconds, loopWaitSeconds)) return undefined;
    return {
      driver: this.settings.driver,
      device: this.settings.device,
      timeout: watchdogTimeoutSeconds(this.settings, ttlSeconds),
      required: this.settings.mode === 'required',
    };
  }

  /**
   * Mode `required` only: why this node cannot have its watchdog, or null. Shown as `watchdog_failed` in the
   * status document; such a node takes no leader lock and is no failover candidate. Each new reason is logged once.
   */
  failure(ttlSeconds: number, loopWaitSeconds: number, fence: FenceState): string | null {
    this.recordFenceChange(fence.watchdog ?? null);
    const failure = this.settings.mode === 'required' ? this.findFailure(ttlSeconds, loopWaitSeconds, fence) : null;
    if (failure !== this.lastFailure) {
      const device = this.settings.device;
      if (failure) {
        this.logger.warning(`Watchdog device is not usable: ${failure}`);
        this.record('watchdog.unusable', failure, { device, mode: this.settings.mode });
      } else if (this.lastFailure) {
        this.logger.info(`watchdog device ${device} is usable again`);
        this.record('watchdog.usable', `watchdog device ${device} is usable again`, {
          device,
          mode: this.settings.mode,
        });
      }
      this.lastFailure = failure;
    }
    return failure;
  }

  /**
   * Mode `required`: resolves once the fence reports the device activated (the arm that took the lock asked for
   * it), as the reference activates it before it promotes; throws why not, after `timeoutMs` at most.
   */
  async awaitActivation(
    fenceState: () => FenceState,
    wait: (ms: number) => Promise<void>,
    timeoutMs: number,
  ): Promise<void> {
    const { mode, device } = this.settings;
    if (mode !== 'required') return;
    for (let waited = 0; ; waited += ACTIVATION_POLL_MS) {
      const held = fenceState().watchdog;
      if (held?.device === device && held.running) return;
      if (held?.device === device && held.error)
        throw new Error(`not promoting: watchdog could not be activated: ${held.error}`);
      if (waited >= timeoutMs)
        throw new Error(`not promoting: the fence did not report watchdog ${device} activated within ${timeoutMs} ms`);
      await wait(ACTIVATION_POLL_MS);
    }
  }

  /** What the fence did with the device since the last cycle, as facts on the node's watchdog stream. */
  private recordFenceChange(held: FenceWatchdogState | null): void {
    const before = this.lastHeld;
    this.lastHeld = held;
    const same =
      before && before.running === held?.running && before.timeout === held.timeout && before.error === held.error;
    if (!held || (same && before.reason === held.reason)) return;
    const data = { device: held.device, timeout: held.timeout };
    if (held.error) {
      if (held.error !== before?.error) this.record('watchdog.activation_failed', held.error, data);
    } else if (held.running && held.reason?.startsWith('left armed')) {
      // The term ended on the fence's deadline: the device fires; nothing this agent does cancels it.
      this.record('watchdog.left_armed', `${held.reason}: it fires ${held.timeout} s after its last keepalive`, data);
    } else if (held.running && !same) {
      this.record(
        before?.running ? 'watchdog.timeout_changed' : 'watchdog.activated',
        `watchdog set to ${held.timeout} s`,
        data,
      );
    } else if (!held.running && before?.running) {
      this.record('watchdog.closed', held.reason ?? 'magic close: this node no longer leads', data);
    }
  }

  private findFailure(ttlSeconds: number, loopWaitSeconds: number, fence: FenceState): string | null {
    const timing = watchdogTimingProblem(this.settings, ttlSeconds, loopWaitSeconds);
    if (timing) return timing;
    const device = this.checkDevice(this.settings.device);
    if (device) return `cannot open ${device}`;
    const held = fence.watchdog;
    if (held?.error && held.device === this.settings.device) return held.error;
    return null;
  }
}
