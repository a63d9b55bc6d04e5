import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';

/**
 * Every configuration key the code accepts appears in docs/configuration.md's table "Every Patroni key, and what Stator
 * does with it" (in the row of its section, so with a status) or in the line of Stator's own keys under it.
 *
 * The keys are read from the code itself, so a key added there and not documented fails here: every
 * `ignoreUnsupported(findings, section, path, [keys])` of src/config (the local file's sections), and the lists of the
 * dynamic configuration's keys (what `/config` and `bootstrap.dcs` act on).
 */
const ROOT = join(__dirname, '..', '..');
const CONFIG_DIR = join(ROOT, 'src', 'config');

/** The named lists of keys that no `ignoreUnsupported` call holds, and the section each belongs to. */
const NAMED_LISTS: { file: string; name: string; section: string }[] = [
  { file: 'bootstrap-config.ts', name: 'BOOTSTRAP_KEYS', section: 'bootstrap' },
  { file: 'config-write-review.ts', name: 'ACTED_ON', section: 'dynamic' },
  { file: 'config-write-review.ts', name: 'POSTGRESQL_ACTED_ON', section: 'dynamic.postgresql' },
  { file: 'dynamic-config.ts', name: 'TOP_LEVEL_RULES', section: 'dynamic' },
  { file: 'dynamic-config.ts', name: 'POSTGRESQL_RULES', section: 'dynamic.postgresql' },
  { file: 'standby-cluster-config.ts', name: 'KNOWN_KEYS', section: 'dynamic.standby_cluster' },
];

interface AcceptedKey {
  section: string; // '' for the top level, else a dotted path ('postgresql.authentication.', 'dynamic.postgresql')
  key: string;
  where: string;
}

const sources = new Map(
  readdirSync(CONFIG_DIR)
    .filter((file) => file.endsWith('.ts'))
    .map((file) => [
      file,
      ts.createSourceFile(file, readFileSync(join(CONFIG_DIR, file), 'utf8'), ts.ScriptTarget.Latest, true),
    ]),
);

/** The initializer of the const `name` seen from `from`: in an enclosing function, at the file's top, or exported by another config file. */
function constInitializer(name: string, from: ts.Node): ts.Expression | undefined {
  const declarations: ts.VariableDeclaration[] = [];
  const collect = (node: ts.Node, deep: boolean) => {
    if (ts.isVariableDeclaration(node) && ts.isIdentifier(node.name) && node.name.text === name && node.initializer)
      declarations.push(node);
    if (deep || !ts.isFunctionLike(node)) ts.forEachChild(node, (child) => collect(child, deep));
  };
  for (let scope: ts.Node | undefined = from; scope; scope = scope.parent) {
    if (ts.isFunctionLike(scope) || ts.isSourceFile(scope)) {
      ts.forEachChild(scope, (child) => collect(child, false));
      if (declarations.length > 0) return declarations[0].initializer;
    }
  }
  for (const source of sources.values()) ts.forEachChild(source, (child) => collect(child, false));
  return declarations[0]?.initializer;
}

/** The strings a list expression holds, following consts, spreads, `as const`, `new Set([...])`, `Object.freeze({...})` (an object's keys); null where the code computes them. */
function stringsOf(expression: ts.Expression): string[] | null {
  if (ts.isStringLiteral(expression) || ts.isNoSubstitutionTemplateLiteral(expression)) return [expression.text];
  if (ts.isAsExpression(expression) || ts.isParenthesizedExpression(expression))
    return stringsOf(expression.expression);
  if (ts.isIdentifier(expression)) {
    const initializer = constInitializer(expression.text, expression);
    return initializer ? stringsOf(initializer) : null;
  }
  if (ts.isArrayLiteralExpression(expression)) {
    const strings: string[] = [];
    for (const element of expression.elements) {
      const inner = stringsOf(ts.isSpreadElement(element) ? element.expression : element);
      if (inner === null) {
        if (ts.isSpreadElement(element) && ts.isCallExpression(element.expression)) continue; // keys named by the file itself (replica methods)
        return null;
      }
      strings.push(...inner);
    }
    return strings;
  }
  if (ts.isObjectLiteralExpression(expression)) {
    return expression.properties.flatMap((property) =>
      property.name && (ts.isIdentifier(property.name) || ts.isStringLiteral(property.name))
        ? [property.name.text]
        : [],
    );
  }
  if ((ts.isNewExpression(expression) || ts.isCallExpression(expression)) && expression.arguments?.length === 1)
    return stringsOf(expression.arguments[0]);
  return null;
}

/** The section a path argument names: a string, a const holding one, or a template's fixed start. */
function sectionOf(expression: ts.Expression): string | null {
  if (ts.isTemplateExpression(expression)) return expression.head.text;
  if (ts.isIdentifier(expression)) {
    const initializer = constInitializer(expression.text, expression);
    return initializer ? sectionOf(initializer) : null;
  }
  const strings = stringsOf(expression);
  return strings?.length === 1 ? strings[0] : null;
}

function acceptedKeys(): { keys: AcceptedKey[]; unreadable: string[] } {
  const keys: AcceptedKey[] = [];
  const unreadable: string[] = [];
  for (const [file, source] of sources) {
    const visit = (node: ts.Node) => {
      if (
        ts.isCallExpression(node) &&
        ts.isIdentifier(node.expression) &&
        node.expression.text === 'ignoreUnsupported' &&
        node.arguments.length === 4
      ) {
        const where = `${file}:${source.getLineAndCharacterOfPosition(node.getStart()).line + 1}`;
        const section = sectionOf(node.arguments[2]);
        const list = stringsOf(node.arguments[3]);
        if (section === null || list === null) unreadable.push(where);
        else keys.push(...list.map((key) => ({ section, key, where })));
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  for (const { file, name, section } of NAMED_LISTS) {
    const source = sources.get(file);
    const initializer = source && constInitializer(name, source);
    const list = initializer ? stringsOf(initializer) : null;
    if (list === null) unreadable.push(`${file}: ${name}`);
    else keys.push(...list.map((key) => ({ section, key, where: `${file}: ${name}` })));
  }
  return { keys, unreadable };
}

const DOCS = readFileSync(join(ROOT, 'docs', 'configuration.md'), 'utf8');
const KEY_TABLE = DOCS.slice(
  DOCS.indexOf('## Every Patroni key'),
  DOCS.indexOf('\n## ', DOCS.indexOf('## Every Patroni key') + 1),
);
const ROWS = KEY_TABLE.split('\n').filter((line) => line.startsWith('| ') && !line.startsWith('| section'));
const STATOR_OWN_KEYS = KEY_TABLE.split('\n').find((line) => line.startsWith("Stator's own keys")) ?? '';

/** The table row of a section: the one whose first cell names it (the top level's and the dynamic configuration's by their words). */
function rowOf(section: string): string | undefined {
  const first = section.split('.')[0];
  const label = first === '' ? 'top level' : first === 'dynamic' ? 'dynamic' : `\`${first}\``;
  // A top-level key is documented in the top level's row, or as a section: the first cell of its own row.
  if (first === '')
    return [ROWS.find((row) => row.startsWith('| top level')), ...ROWS.map((row) => row.split('|')[1])].join(' ');
  return (
    ROWS.find((row) => row.split('|')[1].trim().startsWith(label)) ?? ROWS.find((row) => row.includes(`\`${first}\``))
  );
}

/** Whether `text` names `key` in backticks: alone, as a segment of a dotted name, or matched by a `*` in one. */
function names(text: string, key: string): boolean {
  return [...text.matchAll(/`([^`]+)`/g)].some(([, token]) =>
    token
      .split(/[./]/)
      .some(
        (segment) =>
          segment === key || (segment.includes('*') && new RegExp(`^${segment.replace(/\*/g, '.*')}$`).test(key)),
      ),
  );
}

/** A key's dotted name as the docs write it: `fence.python`, `restapi.authentication_scope`, `load_balancer_drain_ms`. */
function dottedName({ section, key }: AcceptedKey): string {
  const path = section.replace(/^dynamic\.?/, '').replace(/\.$/, '');
  return path ? `${path}.${key}` : key;
}

/** Named in the line of Stator's own keys: itself (`compat`) or, for a section, its keys (`fence.python`). */
function isStatorOwnKey(accepted: AcceptedKey): boolean {
  const name = dottedName(accepted);
  return STATOR_OWN_KEYS.includes(`\`${name}\``) || (accepted.section === '' && STATOR_OWN_KEYS.includes(`\`${name}.`));
}

describe('docs/configuration.md names every configuration key the code accepts', () => {
  const { keys, unreadable } = acceptedKeys();

  it('reads the keys of every section from src/config (a list the code computes would hide its keys from this test)', () => {
    expect(unreadable).toEqual([]);
    expect(keys.length).toBeGreaterThan(150);
    expect(new Set(keys.map((accepted) => accepted.section.split('.')[0]))).toEqual(
      new Set([
        '',
        'restapi',
        'etcd3',
        'postgresql',
        'log',
        'watchdog',
        'fence',
        'event_log',
        'ctl',
        'bootstrap',
        'dynamic',
      ]),
    );
  });

  it('with its status: in the row of its section of the table "Every Patroni key", or among Stator\'s own keys', () => {
    const missing = keys
      .filter((accepted) => !names(rowOf(accepted.section) ?? '', accepted.key) && !isStatorOwnKey(accepted))
      .map(
        (accepted) =>
          `${accepted.section.startsWith('dynamic') ? 'dynamic ' : ''}${dottedName(accepted)} (${accepted.where})`,
      );
    expect([...new Set(missing)]).toEqual([]);
  });
});
