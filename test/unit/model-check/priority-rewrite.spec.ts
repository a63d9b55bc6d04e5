import { loadDecisionCode } from '../../../src/model-check/mutant-loader';
import { decisionMutants } from '../../../src/model-check/mutants';
import { PriorityPlanInput, SyncStep } from '../../../src/ha/sync/priority-plan';
import { formatStandbyNames, parseStandbyNames } from '../../../src/postgresql/standby-names';

/**
 * The priority planner's "inconsistent state" rewrite of `/sync` inverted is the one mutant the model
 * checker lets through that it does not explain by a feature it leaves out. The claim in
 * equivalent-mutants.ts is that every difference it makes is safe: `/sync` never names a standby that
 * is neither confirmed nor waited for by every commit. Checked here on every small input (two
 * standbys, every `/sync`, setting, active list, confirmed set, strict or not), step by step, for the
 * real planner and the mutant alike.
 */
const MUTANT_ID =
  'ha/sync/priority-plan.ts planPriority: invert if (sameNames(active, voters) && !sameNames(voters, confirmed))';

const NAMES = ['b', 'c'];
const subsets = (names: string[]): string[][] =>
  names.reduce<string[][]>((all, name) => [...all, ...all.map((s) => [...s, name])], [[]]);
const orderings = (names: string[]): string[][] =>
  subsets(names).flatMap((s) => (s.length === 2 ? [s, [s[1], s[0]]] : [s]));

/** Every value of synchronous_standby_names the planners write for these names, and `''`. */
const SETTINGS = [
  '',
  ...subsets(NAMES)
    .filter((s) => s.length > 0)
    .flatMap((s) => [1, s.length].map((count) => formatStandbyNames(s, count, false))),
];

/** A standby every commit waits for: listed, and the setting waits for as many as it lists. */
function waitedFor(name: string, setting: string): boolean {
  const parsed = parseStandbyNames(setting);
  return parsed.kind === 'priority' && parsed.members.includes(name) && parsed.count >= parsed.members.length;
}

/** The first moment the plan leaves `/sync` naming a standby neither confirmed nor waited for; null if none. */
function unsafeMoment(input: PriorityPlanInput, steps: SyncStep[]): string | null {
  let sync = input.voters;
  let setting = input.currentValue;
  const judge = (when: string) => {
    const bad = sync.filter((name) => !input.confirmed.includes(name) && !waitedFor(name, setting));
    return bad.length > 0 ? `${when}: /sync names ${bad.join(',')} under '${setting}'` : null;
  };
  for (const step of steps) {
    if (step.type === 'writeSync') sync = step.standbys;
    if (step.type === 'setStandbyNames') setting = step.value;
    const found = judge(`after ${step.type}`);
    if (found) return found;
  }
  return null;
}

function inputs(): PriorityPlanInput[] {
  const all: PriorityPlanInput[] = [];
  for (const voters of subsets(NAMES))
    for (const currentValue of SETTINGS)
      for (const active of orderings(NAMES))
        for (const confirmed of subsets(active))
          for (const strict of [false, true])
            all.push({
              voters,
              currentValue,
              standbyNames: parseStandbyNames(currentValue),
              active,
              confirmed,
              strict,
            });
  // Only starts that are themselves safe: the planner keeps safety, it cannot restore what a start lost.
  return all.filter((input) => unsafeMoment(input, []) === null);
}

describe("the priority planner's /sync rewrite inverted (a survivor of the mutation run)", () => {
  const mutant = decisionMutants(['ha/sync/priority-plan.ts']).find((m) => m.id === MUTANT_ID);
  const real = loadDecisionCode(new Map()).planPriority;
  const mutated = loadDecisionCode(new Map([[mutant!.file, mutant!.source]])).planPriority;
  const cases = inputs();

  it('exists, and plans differently from the real planner on some inputs', () => {
    expect(mutant).toBeDefined();
    expect(cases.length).toBeGreaterThan(100);
    expect(
      cases.filter((input) => JSON.stringify(real(input)) !== JSON.stringify(mutated(input))).length,
    ).toBeGreaterThan(0);
  });

  it.each([
    ['the real planner', () => real],
    ['the mutant', () => mutated],
  ])('%s never leaves /sync naming a standby that is neither confirmed nor waited for', (_name, planner) => {
    const unsafe = cases
      .map((input) => ({ input, moment: unsafeMoment(input, planner()(input)) }))
      .filter((c) => c.moment !== null);
    expect(unsafe).toEqual([]);
  });
});
