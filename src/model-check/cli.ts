import { parseArgs } from 'node:util';
import { ACTION_KINDS, ActionKind } from './model-types';
import { boundsFor } from './bounds';
import { runMutationReport } from './mutation-report';
import { FULL_BUDGET } from './mutation-run';
import { ReplicationMode } from './model';
import { breadthFirst, FoundViolation, randomWalks, SearchReport, steadyStart, WalkReport } from './search';
import { shrink } from './shrink';
import { checkpointedSearch, resumedArgv, startCheckpoints } from './checkpoint-run';
import { counterExampleEvents, writeCounterExample } from './trace';

/** `npm run model-check`: exhaustive search per mode, then seeded random walks; exit 1 on a violation. */
export const MODEL_CHECK_USAGE = `usage: model-check [--states N] [--depth N] [--faults N] [--operations N] [--writes N]
                   [--walks N] [--walk-steps N] [--seed N] [--progress-every N] [--modes async,sync,strict,quorum] [--fenceless] [--failsafe] [--watchdog] [--site-rule N] [--no-symmetry] [--compact] [--checkpoint DIR] [--out counter-example.jsonl]
       model-check --resume DIR     (goes on from the last level checkpointed in DIR, with the options DIR was made with)
       model-check --mutants [--mutant REGEX] [--states N] [--walks N] [--walk-steps N]`;

const MODES: Record<string, ReplicationMode> = { async: 'off', sync: 'on', strict: 'strict', quorum: 'quorum' };

export interface ModelCheckIo {
  stdout(text: string): void;
  stderr(text: string): void;
}

function positive(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new Error(`--${name}: a whole number is needed, got '${value}'`);
  return n;
}

export { boundsFor };

function coverageLine(coverage: Record<ActionKind, number>): string {
  return ACTION_KINDS.map((k) => `${k} ${coverage[k]}`).join(', ');
}

function describeSearch(r: SearchReport): string {
  const rate = Math.round(r.states / Math.max(0.001, r.elapsedMs / 1000));
  return [
    `[${r.mode}] exhaustive: ${r.states} distinct states, ${r.transitions} transitions, depth ${r.depth}${r.partialLevel ? ` (every state within ${r.depth} steps, some at ${r.depth + 1})` : ''}${r.exhausted ? ' (state space exhausted)' : ''}, ${(r.elapsedMs / 1000).toFixed(1)} s, ${rate} states/s, ${r.progressChecks} progress checks`,
    `[${r.mode}] coverage: ${coverageLine(r.coverage)}`,
    `[${r.mode}] exempt (agent and fence both gone, a primary nothing alive can stop): ${r.exempt} states`,
  ].join('\n');
}

function describeWalks(r: WalkReport): string {
  return [
    `[${r.mode}] random walks: ${r.walks} walks of ${r.maxDepth} steps, ${r.steps} steps, ${(r.elapsedMs / 1000).toFixed(1)} s, ${r.exempt} steps into an exempt state (agent and fence both gone)`,
    `[${r.mode}] coverage: ${coverageLine(r.coverage)}`,
  ].join('\n');
}

export function describeViolation(v: FoundViolation): string {
  return [
    `VIOLATION of invariant ${v.invariant}: ${v.message}`,
    `counter-example, ${v.path.length} steps:`,
    ...v.path.map((a, i) => `  ${i + 1}. ${a.label}`),
  ].join('\n');
}

/** `resuming`: argv is a checkpoint's (--resume), whose directory holds the run already. */
export function runModelCheck(argv: string[], io: ModelCheckIo, resuming = false): number {
  let values;
  try {
    values = parseArgs({
      args: argv,
      strict: true,
      options: {
        states: { type: 'string' },
        depth: { type: 'string' },
        faults: { type: 'string' },
        operations: { type: 'string' },
        writes: { type: 'string' },
        walks: { type: 'string' },
        'walk-steps': { type: 'string' },
        seed: { type: 'string' },
        'progress-every': { type: 'string' },
        modes: { type: 'string' },
        out: { type: 'string' },
        fenceless: { type: 'boolean' },
        failsafe: { type: 'boolean' },
        watchdog: { type: 'boolean' },
        'site-rule': { type: 'string' },
        'no-symmetry': { type: 'boolean' },
        compact: { type: 'boolean' },
        checkpoint: { type: 'string' },
        resume: { type: 'string' },
        mutants: { type: 'boolean' },
        mutant: { type: 'string' },
      },
    }).values;
  } catch (error) {
    io.stderr(`model-check: ${(error as Error).message}\n${MODEL_CHECK_USAGE}\n`);
    return 2;
  }
  if (values.resume !== undefined) {
    if (argv.length !== 2) {
      io.stderr(`model-check: --resume DIR takes no other option (it runs with DIR's)\n${MODEL_CHECK_USAGE}\n`);
      return 2;
    }
    const saved = resumedArgv(values.resume);
    if (typeof saved === 'string') {
      io.stderr(`model-check: --resume: ${saved}\n`);
      return 2;
    }
    return runModelCheck(saved, io, true);
  }
  if (values.checkpoint !== undefined && !resuming) {
    const refused = startCheckpoints(values.checkpoint, argv);
    if (refused) {
      io.stderr(`model-check: --checkpoint: ${refused}\n`);
      return 2;
    }
  }
  let settings;
  try {
    const modes = (values.modes ?? 'async,sync').split(',').map((m) => {
      if (!(m in MODES)) throw new Error(`--modes: unknown mode '${m}' (async, sync, strict, quorum)`);
      return MODES[m];
    });
    settings = {
      modes,
      states: positive('states', values.states, 600_000),
      depth: positive('depth', values.depth, 1_000),
      faults: positive('faults', values.faults, 2),
      operations: positive('operations', values.operations, 1),
      writes: positive('writes', values.writes, 3),
      walks: positive('walks', values.walks, 200),
      walkSteps: positive('walk-steps', values['walk-steps'], 400),
      seed: positive('seed', values.seed, 19),
      progressEvery: positive('progress-every', values['progress-every'], 64),
      out: values.out ?? 'model-check-counter-example.jsonl',
      fenceless: values.fenceless ?? false,
      // synchronous_site_count, n1 and n2 in dc1 and n3 in dc2 (site-rule.ts): judged on every step in strict mode, on settled states in quorum and `on` mode.
      siteRule: positive('site-rule', values['site-rule'], 0),
    };
  } catch (error) {
    io.stderr(`model-check: ${(error as Error).message}\n${MODEL_CHECK_USAGE}\n`);
    return 2;
  }
  if (values.mutants) {
    let filter: RegExp;
    try {
      filter = new RegExp(values.mutant ?? '');
    } catch (error) {
      io.stderr(`model-check: --mutant: not a regular expression: ${(error as Error).message}\n`);
      return 2;
    }
    const budget = {
      ...FULL_BUDGET,
      ...(values.states ? { states: settings.states } : {}),
      ...(values.walks ? { walks: settings.walks } : {}),
      ...(values['walk-steps'] ? { walkSteps: settings.walkSteps } : {}),
    };
    return runMutationReport(budget, filter, io).survived.length > 0 ? 1 : 0;
  }
  let total = 0;
  const started = Date.now();
  for (const mode of settings.modes) {
    const settingsOfSearch = {
      ...(settings.siteRule > 0 ? { siteRule: settings.siteRule } : {}),
      // failsafe_mode on (nodes may then be cut off from their peers); watchdog mode `required` (a watchdog may fail).
      ...(values.failsafe ? { failsafe: true } : {}),
      ...(values.watchdog ? { watchdog: true } : {}),
    };
    const bounds = {
      ...boundsFor(mode, settings.faults, settings.operations, settings.writes, 1, settings.fenceless),
      ...settingsOfSearch,
    };
    const walkBounds = { ...boundsFor(mode, 8, 4, 12, 6, settings.fenceless), ...settingsOfSearch };
    const checkpoint = values.checkpoint;
    const options = {
      mode,
      bounds,
      maxDepth: settings.depth,
      maxStates: settings.states,
      progressEvery: settings.progressEvery,
      symmetry: !values['no-symmetry'],
      // Millions of states: fingerprints of the keys and each level on disk (state-store.ts, levels.ts).
      compact: values.compact ?? false,
      onLevel: (depth: number, states: number, transitions: number, ms: number) =>
        io.stderr(
          `[${mode}] every state within ${depth} steps: ${states} states, ${transitions} transitions, ${(ms / 1000).toFixed(1)} s${checkpoint ? `, checkpoint in ${checkpoint}` : ''}\n`,
        ),
    };
    const search = checkpoint
      ? checkpointedSearch(checkpoint, mode, (dir) => breadthFirst({ ...options, checkpoint: dir }))
      : breadthFirst(options);
    total += search.states;
    io.stdout(`${describeSearch(search)}\n`);
    const violation = search.violation;
    const walks = violation
      ? null
      : randomWalks({
          mode,
          bounds: walkBounds,
          walks: settings.walks,
          steps: settings.walkSteps,
          seed: settings.seed,
        });
    if (walks) io.stdout(`${describeWalks(walks)}\n`);
    const foundBounds = violation ? bounds : walkBounds;
    const walked = walks?.violation ?? null;
    const found = violation ?? (walked ? shrink(steadyStart(mode, foundBounds), walked, foundBounds) : null);
    if (found) {
      if (walked)
        io.stdout(
          `random walk (seed ${walked.seed}) found it in ${walked.path.length} steps, shrunk to ${found.path.length}\n`,
        );
      io.stdout(`${describeViolation(found)}\n`);
      writeCounterExample(settings.out, counterExampleEvents(mode, foundBounds, found));
      io.stdout(`events written to ${settings.out}: stator audit replay --file ${settings.out} --at <instant>\n`);
      return 1;
    }
  }
  io.stdout(
    `model-check: ${total} distinct states in ${((Date.now() - started) / 1000).toFixed(1)} s, no invariant violated\n`,
  );
  return 0;
}
