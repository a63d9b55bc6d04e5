import { CommandLine } from '../args';
import { Ctl, CtlIo } from '../context';
import { handover } from './handover';
import { history, list, showConfig } from './list';

/** The commands that talk to the cluster. */
export const COMMAND_RUNNERS: Record<string, (ctl: Ctl) => Promise<number>> = {
  list: (ctl) => list(ctl, false),
  topology: (ctl) => list(ctl, true),
  switchover: (ctl) => handover(ctl, 'switchover'),
  failover: (ctl) => handover(ctl, 'failover'),
  history,
  'show-config': showConfig,
};

/** The commands that need no cluster. */
export const LOCAL_COMMANDS: Record<string, (line: CommandLine, io: CtlIo) => Promise<number>> = {};
