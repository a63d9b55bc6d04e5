import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { AnyStateMachine, AnyStateNode } from 'xstate';
import { MACHINES, statechartFiles } from '../../src/statecharts/machines';
import { SOURCE_HASH_ATTRIBUTE, sourceHash, stateElementId } from '../../src/statecharts/render-svg';
import { toMermaid } from '../../src/statecharts/to-mermaid';
import { postgresMachine } from '../../src/postgresql/postgres.machine';
import { POSTGRES_STATE_NAMES } from '../../src/postgresql/postgres-states';

const STATECHARTS = join(__dirname, '..', '..', 'statecharts');

/** Every state of a machine, as the dotted path its transition events carry (`running.idle`). */
function statePaths(machine: AnyStateMachine): string[] {
  const paths: string[] = [];
  const walk = (node: AnyStateNode) => {
    for (const child of Object.values(node.states) as AnyStateNode[]) {
      paths.push(child.path.join('.'));
      walk(child);
    }
  };
  walk(machine.root);
  return paths;
}

describe('statecharts/', () => {
  it.each(Object.entries(MACHINES))('holds the current definition and diagram of the %s machine (run `npm run statecharts` after a change)', (name, machine) => {
    for (const [file, content] of Object.entries(statechartFiles(name, machine))) {
      expect(readFileSync(join(STATECHARTS, file), 'utf8')).toBe(content);
    }
  });

  it.each(Object.entries(MACHINES))('holds an SVG of the %s machine drawn from its current diagram, naming every state', (name, machine) => {
    const file = join(STATECHARTS, `${name}.svg`);
    expect(existsSync(file)).toBe(true);
    const svg = readFileSync(file, 'utf8');

    // Compared as short values: a failing toContain would print the whole SVG.
    expect(svg.startsWith('<svg ')).toBe(true);
    const drawnFrom = new RegExp(`${SOURCE_HASH_ATTRIBUTE}="([0-9a-f]+)"`).exec(svg)?.[1];
    expect({ drawnFrom }).toEqual({ drawnFrom: sourceHash(toMermaid(machine)) });
    // Each state's box, found by the id the UI highlights, and its label (the state's own key).
    const missing = statePaths(machine).filter((path) => !svg.includes(`id="${stateElementId(name, path)}"`) || !svg.includes(`>${path.split('.').pop()}</tspan>`));
    expect(missing).toEqual([]);
  });

  it('draws every PostgreSQL state and names each edge by its event', () => {
    const diagram = toMermaid(postgresMachine);
    for (const state of POSTGRES_STATE_NAMES) expect(diagram).toContain(`state "${state}" as ${state}`);
    expect(diagram).toContain('running --> crashed : POSTMASTER_EXITED');
    expect(diagram).toContain('initdb --> initdb_failed : error runInitdb');
    expect(diagram).toContain('starting : invoke startPostgres');
  });
});
