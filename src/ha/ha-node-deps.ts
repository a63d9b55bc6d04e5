import { TimerClock } from '../common/clock';
import { Logger } from '../common/logger';
import { StatorConfig } from '../config/config.types';
import { Dcs } from '../dcs/dcs.port';
import { EventLog } from '../events/event-log';
import { EventSink } from '../events/transition-recorder';
import { DeviceCheck } from '../postgresql/fence/watchdog-device';
import { PostgresProcess, PostgresQuery } from '../postgresql/postgres.port';
import { FailsafeCaller } from './failsafe/failsafe-caller';
import { PeerProbe } from './peer-probe';

/** What one node's HA cycle is built from: its configuration and the adapters of its ports. */
export interface HaNodeDeps {
  config: StatorConfig;
  dcs: Dcs;
  pg: PostgresProcess;
  query: PostgresQuery;
  events: EventSink;
  clock: TimerClock;
  logger: Logger;
  /** Each cycle's verdict line (Patroni logs it from `patroni.__main__`, not `patroni.ha`); `logger` without it. */
  verdictLogger?: Logger;
  version: string;
  /** The agent's runtime (`node 24.21.0`), published in the member key. */
  runtime?: string;
  probePeer?: PeerProbe;
  /** How this leader calls members' `POST /failsafe` while the DCS is down. */
  callFailsafe?: FailsafeCaller;
  /** The cluster's event log: a scheduled restart survives an agent restart through it. */
  eventLog?: EventLog;
  /** Reads the configuration file again (POST /reload, SIGHUP); throws when it is invalid. */
  reloadConfig?: () => StatorConfig;
  /** Called when the node cannot go on (a failed bootstrap): the process should exit, as the reference does. */
  onFatal?: (reason: string) => void;
  /** Whether the watchdog device may be opened (default: the agent's user can write it). */
  watchdogDevice?: DeviceCheck;
}
