/**
 * Mutants that no run of the model can catch, each with the reason (by mutant id, see mutants.ts):
 * the mutation run reports them as equivalent rather than survived. A reason says why the edit
 * changes nothing the model can observe, or which part of the system (outside the model) it touches.
 */
export const EQUIVALENT_MUTANTS: Readonly<Record<string, string>> = {};
