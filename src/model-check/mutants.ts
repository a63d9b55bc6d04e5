import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type * as Ts from 'typescript';
import { sourceRoot } from './mutant-loader';

/**
 * The mutants of the decision code (issue 34, part 3): each is one edit of one file's text, found on
 * its syntax tree. Operators:
 * - `remove`: an action that ends a primary's writes or its term (`demote`, `releaseLock`,
 *   `killPostgres`) left out of the decision that returns it;
 * - `skip` / `invert`: a check of the leader race (`healthiest` and `publishedAhead` in leader-race.ts,
 *   sync-eligibility.ts) that never
 *   holds, or holds the other way; a boolean answer of the race's eligibility rules inverted;
 * - `drop`: one condition of the race's `goodCandidates` filter always true;
 * - `invert`: a condition of the synchronous replication planners (sync/*);
 * - `negate`: the fence's safety margin counted the other way (the deadline after the lease's end).
 */
export type MutantOperator = 'remove' | 'skip' | 'invert' | 'drop' | 'negate';

export interface Mutant {
  /** Stable across unrelated edits: file, function, operator and the code it changes (not a line number). */
  id: string;
  /** Relative to src/. */
  file: string;
  line: number;
  fn: string;
  operator: MutantOperator;
  /** The code the edit changes, on one line. */
  code: string;
  /** The whole file with the edit. */
  source: string;
  /** Judged with every fence in place (the fence's own arming); the others without any fence. */
  withFence: boolean;
}

/** The files and what is mutated in each. */
const ACTION_FILES = ['ha/decide.ts', 'ha/recover.ts', 'ha/leader-race.ts'];
const RACE_FILES = ['ha/leader-race.ts', 'ha/sync/sync-eligibility.ts'];
/** The race's eligibility rules in leader-race.ts (the rest of the file is the flow around them, whose ending actions are mutated). */
const RACE_FUNCTIONS = new Set(['healthiest', 'publishedAhead']);
const PLANNER_FILES = [
  'ha/sync/priority-plan.ts',
  'ha/sync/quorum-plan.ts',
  'ha/sync/sync-candidates.ts',
  'ha/sync/readiness.ts',
  'ha/sync/quorum-resolver.ts',
];
const FENCE_FILE = 'ha/leader-lock.ts';
const ENDING_ACTIONS = new Set(['demote', 'releaseLock', 'killPostgres']);
/** Constants that stand for an ending action (decide.ts's offline demotion). */
const ENDING_CONSTANTS = new Set(['OFFLINE_DEMOTE']);

const oneLine = (text: string) => text.replace(/\s+/g, ' ').trim().slice(0, 90);

function loadTs(): typeof Ts {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- typescript is a devDependency, loaded only when mutants run
  return require('typescript') as typeof Ts;
}

interface Edit {
  start: number;
  end: number;
  text: string;
}

function enclosingFunction(ts: typeof Ts, node: Ts.Node): string {
  for (let at: Ts.Node | undefined = node.parent; at; at = at.parent) {
    if ((ts.isFunctionDeclaration(at) || ts.isMethodDeclaration(at)) && at.name) return at.name.getText();
    if (ts.isVariableDeclaration(at) && ts.isIdentifier(at.name)) return at.name.text;
  }
  return '(module)';
}

function endingActionType(ts: typeof Ts, element: Ts.Expression): string | null {
  if (ts.isIdentifier(element) && ENDING_CONSTANTS.has(element.text)) return element.text;
  if (!ts.isObjectLiteralExpression(element)) return null;
  for (const p of element.properties) {
    if (
      ts.isPropertyAssignment(p) &&
      p.name.getText() === 'type' &&
      ts.isStringLiteral(p.initializer) &&
      ENDING_ACTIONS.has(p.initializer.text)
    )
      return p.initializer.text;
  }
  return null;
}

/** Removes element i of an array literal, with the comma that joins it to a neighbour. */
function removeElement(array: Ts.ArrayLiteralExpression, i: number): Edit {
  const elements = array.elements;
  if (i + 1 < elements.length) return { start: elements[i].getStart(), end: elements[i + 1].getStart(), text: '' };
  if (i > 0) return { start: elements[i - 1].end, end: elements[i].end, text: '' };
  return { start: elements[i].getStart(), end: elements[i].end, text: '' };
}

function returnsBoolean(ts: typeof Ts, node: Ts.Node): boolean {
  for (let at: Ts.Node | undefined = node.parent; at; at = at.parent) {
    if (ts.isFunctionDeclaration(at) || ts.isArrowFunction(at) || ts.isFunctionExpression(at))
      return at.type?.kind === ts.SyntaxKind.BooleanKeyword;
  }
  return false;
}

/** The `&&` operands of goodCandidates' filter. */
function conjuncts(ts: typeof Ts, e: Ts.Expression): Ts.Expression[] {
  if (ts.isParenthesizedExpression(e)) return conjuncts(ts, e.expression);
  if (ts.isBinaryExpression(e) && e.operatorToken.kind === ts.SyntaxKind.AmpersandAmpersandToken)
    return [...conjuncts(ts, e.left), ...conjuncts(ts, e.right)];
  return [e];
}

function mutantsOf(ts: typeof Ts, file: string, text: string): Mutant[] {
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, true);
  const out: Mutant[] = [];
  const add = (node: Ts.Node, operator: MutantOperator, edit: Edit, code: string, withFence = false) => {
    const line = sf.getLineAndCharacterOfPosition(node.getStart()).line + 1;
    const fn = enclosingFunction(ts, node);
    const source = text.slice(0, edit.start) + edit.text + text.slice(edit.end);
    out.push({ id: `${file} ${fn}: ${operator} ${code}`, file, line, fn, operator, code, source, withFence });
  };
  const condition = (e: Ts.Expression) => ({ start: e.getStart(), end: e.end });
  const visit = (node: Ts.Node) => {
    if (ACTION_FILES.includes(file) && ts.isArrayLiteralExpression(node)) {
      node.elements.forEach((element, i) => {
        const type = endingActionType(ts, element);
        if (type) add(element, 'remove', removeElement(node, i), oneLine(element.getText()));
      });
    }
    const raceCheck =
      file === 'ha/sync/sync-eligibility.ts' ||
      (file === 'ha/leader-race.ts' && RACE_FUNCTIONS.has(enclosingFunction(ts, node)));
    if ((raceCheck || PLANNER_FILES.includes(file)) && ts.isIfStatement(node)) {
      const cond = node.expression;
      const code = `if (${oneLine(cond.getText())})`;
      if (raceCheck) add(node, 'skip', { ...condition(cond), text: 'false' }, code);
      add(node, 'invert', { ...condition(cond), text: `!(${cond.getText()})` }, code);
    }
    if (
      file === 'ha/sync/sync-eligibility.ts' &&
      ts.isReturnStatement(node) &&
      node.expression &&
      returnsBoolean(ts, node)
    ) {
      add(
        node,
        'invert',
        { ...condition(node.expression), text: `!(${node.expression.getText()})` },
        `return ${oneLine(node.expression.getText())}`,
      );
    }
    if (
      file === 'ha/leader-race.ts' &&
      ts.isCallExpression(node) &&
      ts.isPropertyAccessExpression(node.expression) &&
      node.expression.name.text === 'filter' &&
      enclosingFunction(ts, node) === 'goodCandidates'
    ) {
      const predicate = node.arguments[0];
      if (predicate && ts.isArrowFunction(predicate) && !ts.isBlock(predicate.body)) {
        for (const part of conjuncts(ts, predicate.body))
          add(part, 'drop', { ...condition(part), text: 'true' }, oneLine(part.getText()));
      }
    }
    if (
      file === FENCE_FILE &&
      ts.isFunctionDeclaration(node) &&
      node.name?.text === 'fenceSafetyMarginMs' &&
      node.body
    ) {
      const ret = node.body.statements.find(ts.isReturnStatement);
      if (ret?.expression)
        add(
          ret,
          'negate',
          { ...condition(ret.expression), text: `-(${ret.expression.getText()})` },
          `return ${oneLine(ret.expression.getText())}`,
          true,
        );
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return out;
}

export const MUTATED_FILES = [...new Set([...ACTION_FILES, ...RACE_FILES, ...PLANNER_FILES, FENCE_FILE])];

/** Every mutant of the decision code, in file order. */
export function decisionMutants(files: readonly string[] = MUTATED_FILES): Mutant[] {
  const ts = loadTs();
  const src = sourceRoot();
  const mutants = files.flatMap((file) => mutantsOf(ts, file, readFileSync(join(src, file), 'utf8')));
  // Two identical edits (the same code twice in one function) are one mutant each, told apart by a number.
  const seen = new Map<string, number>();
  for (const m of mutants) {
    const n = (seen.get(m.id) ?? 0) + 1;
    seen.set(m.id, n);
    if (n > 1) m.id = `${m.id} #${n}`;
  }
  return mutants;
}
