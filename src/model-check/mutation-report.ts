import { EQUIVALENT_MUTANTS } from './equivalent-mutants';
import { decisionMutants } from './mutants';
import { describeMutantResult, MutationBudget, runMutant } from './mutation-run';

export interface MutationReportIo {
  stdout(text: string): void;
}

export interface MutationScore {
  total: number;
  caught: number;
  equivalent: number;
  /** Survivors with no reason in EQUIVALENT_MUTANTS: gaps of the checker. */
  survived: string[];
}

/**
 * `npm run model-check -- --mutants`: every mutant (or those whose id matches `filter`) in turn, one
 * line each, then the score. Equivalent mutants are listed with their reason.
 */
export function runMutationReport(budget: MutationBudget, filter: RegExp | null, io: MutationReportIo): MutationScore {
  const mutants = decisionMutants().filter((m) => !filter || filter.test(m.id));
  io.stdout(`mutation run: ${mutants.length} mutants of the decision code, ${budget.states} states and ${budget.walks} walks of ${budget.walkSteps} steps per mode\n`);
  const score: MutationScore = { total: mutants.length, caught: 0, equivalent: 0, survived: [] };
  const started = Date.now();
  for (const m of mutants) {
    const r = runMutant(m, budget);
    const reason = EQUIVALENT_MUTANTS[m.id];
    if (r.caught) score.caught++;
    else if (reason) score.equivalent++;
    else score.survived.push(m.id);
    io.stdout(`${describeMutantResult(r)}${!r.caught && reason ? `: equivalent: ${reason}` : ''}\n`);
  }
  const judged = score.total - score.equivalent;
  io.stdout(
    `mutation score: ${score.caught} of ${judged} non-equivalent mutants caught (${score.equivalent} equivalent, ${score.survived.length} survived) in ${((Date.now() - started) / 1000).toFixed(1)} s\n`,
  );
  return score;
}
