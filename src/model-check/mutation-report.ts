import { EXPLAINED_SURVIVORS } from './equivalent-mutants';
import { decisionMutants } from './mutants';
import { describeMutantResult, MutationBudget, runMutant } from './mutation-run';

export interface MutationReportIo {
  stdout(text: string): void;
}

export interface MutationScore {
  total: number;
  caught: number;
  equivalent: number;
  /** Survivors explained as decisions the model never asks for. */
  outside: number;
  /** Survivors with no reason in EXPLAINED_SURVIVORS: gaps of the checker. */
  survived: string[];
}

/**
 * `npm run model-check -- --mutants`: every mutant (or those whose id matches `filter`) in turn, one
 * line each, then the score: caught of the non-equivalent ones. A survivor is listed with its reason
 * when equivalent-mutants.ts gives one.
 */
export function runMutationReport(budget: MutationBudget, filter: RegExp | null, io: MutationReportIo): MutationScore {
  const mutants = decisionMutants().filter((m) => !filter || filter.test(m.id));
  io.stdout(
    `mutation run: ${mutants.length} mutants of the decision code, ${budget.states} states and ${budget.walks} walks of ${budget.walkSteps} steps per mode\n`,
  );
  const score: MutationScore = { total: mutants.length, caught: 0, equivalent: 0, outside: 0, survived: [] };
  const started = Date.now();
  for (const m of mutants) {
    const r = runMutant(m, budget);
    const explained = EXPLAINED_SURVIVORS[m.id];
    if (r.caught) score.caught++;
    else if (explained?.kind === 'equivalent') score.equivalent++;
    else if (explained) score.outside++;
    else score.survived.push(m.id);
    io.stdout(
      `${describeMutantResult(r)}${!r.caught && explained ? `: ${explained.kind}: ${explained.reason}` : ''}\n`,
    );
  }
  const judged = score.total - score.equivalent;
  io.stdout(
    `mutation score: ${score.caught} of ${judged} non-equivalent mutants caught (${score.equivalent} equivalent; not caught: ${score.outside} outside the model, ${score.survived.length} unexplained) in ${((Date.now() - started) / 1000).toFixed(1)} s\n`,
  );
  return score;
}
