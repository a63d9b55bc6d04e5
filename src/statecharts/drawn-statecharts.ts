import { AnyStateMachine } from 'xstate';
import { layoutStatechart } from './elk-layout';
import { layoutToSvg } from './layout-svg';
import { statechartGraph } from './statechart-graph';

/**
 * The drawn files of `statecharts/` for one machine: its ELK layout (`<machine>.layout.json`,
 * positions of every state, arrow and label) and the SVG drawn from it. Deterministic, so a test
 * can compute them again and compare bytes.
 */
export async function drawnStatechartFiles(name: string, machine: AnyStateMachine): Promise<Record<string, string>> {
  const layout = await layoutStatechart(statechartGraph(name, machine));
  return {
    [`${name}.layout.json`]: JSON.stringify(layout, null, 1) + '\n',
    [`${name}.svg`]: layoutToSvg(layout),
  };
}
