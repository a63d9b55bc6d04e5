import { AnyStateMachine } from 'xstate';
import { haMemoryMachine } from '../ha/ha-memory.machine';
import { leadershipMachine } from '../ha/leadership.machine';
import { roleMachine } from '../ha/role.machine';
import { taskMachine } from '../ha/task.machine';
import { postgresMachine } from '../postgresql/postgres.machine';
import { toMermaid } from './to-mermaid';

/** Every machine of the agent, by the name its event stream uses (`node/<name>/<machine>`). */
export const MACHINES: Record<string, AnyStateMachine> = {
  postgres: postgresMachine,
  role: roleMachine,
  leadership: leadershipMachine,
  task: taskMachine,
  memory: haMemoryMachine,
};

/** The committed files of `statecharts/` for one machine: its definition and its diagram. */
export function statechartFiles(name: string, machine: AnyStateMachine): Record<string, string> {
  return {
    [`${name}.json`]: JSON.stringify(machine.toJSON(), null, 2) + '\n',
    [`${name}.mmd`]: toMermaid(machine),
  };
}
