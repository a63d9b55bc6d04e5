import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { MACHINES, statechartFiles } from '../../src/statecharts/machines';
import { toMermaid } from '../../src/statecharts/to-mermaid';
import { postgresMachine } from '../../src/postgresql/postgres.machine';
import { POSTGRES_STATE_NAMES } from '../../src/postgresql/postgres-states';

describe('statecharts/', () => {
  it.each(Object.entries(MACHINES))('holds the current definition and diagram of the %s machine (run `npm run statecharts` after a change)', (name, machine) => {
    for (const [file, content] of Object.entries(statechartFiles(name, machine))) {
      expect(readFileSync(join(__dirname, '..', '..', 'statecharts', file), 'utf8')).toBe(content);
    }
  });

  it('draws every PostgreSQL state and names each edge by its event', () => {
    const diagram = toMermaid(postgresMachine);
    for (const state of POSTGRES_STATE_NAMES) expect(diagram).toContain(`state "${state}" as ${state}`);
    expect(diagram).toContain('running --> crashed : POSTMASTER_EXITED');
    expect(diagram).toContain('initdb --> initdb_failed : error runInitdb');
    expect(diagram).toContain('starting : invoke startPostgres');
  });
});
