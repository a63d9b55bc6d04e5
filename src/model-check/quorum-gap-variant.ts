import { DecisionMutation } from './model-types';
import { DecisionCode } from './decision-code';
import { loadDecisionCode, sourceRoot } from './mutant-loader';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const RESOLVER = 'ha/sync/quorum-resolver.ts';
const MEASURED_CHECK = ' && !this.state.confirmedMeasured';

let guessing: DecisionCode | undefined;

/**
 * Quorum-gap's broken variant: the reference's guess put back. With no listed standby measured as caught up,
 * the resolver takes the quorum's word for how many are (Patroni 4.1.4's quorum.py does), so when a standby
 * that held the last commits leaves (its agent stalled, its member key expired), the one left is counted as
 * holding them although it does not, and `/sync` shrinks to it with quorum 0. Loaded like a mutant (the
 * resolver's source with the measured check removed), on first use.
 */
export const GUESSING_CONFIRMED: DecisionMutation = {
  name: "guessing the confirmed standbys from the quorum (the reference's)",
  get code(): DecisionCode {
    if (!guessing) {
      const text = readFileSync(join(sourceRoot(), RESOLVER), 'utf8');
      if (!text.includes(MEASURED_CHECK)) throw new Error(`${RESOLVER} no longer has "${MEASURED_CHECK}"`);
      guessing = loadDecisionCode(new Map([[RESOLVER, text.replace(MEASURED_CHECK, '')]]));
    }
    return guessing;
  },
};
