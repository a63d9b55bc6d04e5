import { CommandLine } from '../args';
import { bashCompletion, zshCompletion } from '../completion';
import { Ctl, CtlIo } from '../context';
import { demoteCluster, promoteCluster } from './cluster-role';
import { diagnose } from './diagnose';
import { editConfig } from './edit-config';
import { audit, events } from './events';
import { handover } from './handover';
import { history, list, showConfig } from './list';
import { flush, reinit, reload, restart } from './member-ops';
import { pauseOrResume } from './pause';

/** The commands that talk to the cluster. */
export const COMMAND_RUNNERS: Record<string, (ctl: Ctl) => Promise<number>> = {
  list: (ctl) => list(ctl, false),
  topology: (ctl) => list(ctl, true),
  switchover: (ctl) => handover(ctl, 'switchover'),
  failover: (ctl) => handover(ctl, 'failover'),
  restart,
  reload,
  reinit,
  pause: (ctl) => pauseOrResume(ctl, true),
  resume: (ctl) => pauseOrResume(ctl, false),
  'edit-config': editConfig,
  'show-config': showConfig,
  'demote-cluster': demoteCluster,
  'promote-cluster': promoteCluster,
  history,
  flush,
  events,
  audit,
  diagnose,
};

/** The commands that need no cluster. */
export const LOCAL_COMMANDS: Record<string, (line: CommandLine, io: CtlIo) => Promise<number>> = {
  completion: async (line, io) => {
    io.stdout(line.args[0] === 'zsh' ? zshCompletion() : bashCompletion());
    return 0;
  },
};
