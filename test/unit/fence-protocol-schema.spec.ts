import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as ts from 'typescript';
import { fencePaths, STOP_SIGNALS } from '../../src/postgresql/fence/fence-protocol';

/**
 * The agent's side of the fence protocol (fence-protocol.ts) against its one definition, fence-protocol.json:
 * every message's fields, their types and whether they are optional, as the TypeScript compiler sees the types,
 * plus the stop signals and file names. test/fence/test_protocol_schema.py does the same for the fence's side.
 */
const FENCE_DIR = join(__dirname, '..', '..', 'src', 'postgresql', 'fence');
const PROTOCOL_FILE = join(FENCE_DIR, 'fence-protocol.ts');

interface SchemaField {
  type: string;
  optional?: boolean;
}
type SchemaFields = Record<string, SchemaField | string | string[]>;
interface Schema {
  requests: Record<string, SchemaFields>;
  events: Record<string, SchemaFields>;
  types: Record<string, SchemaFields>;
  launchOptions: SchemaFields;
  journalEntry: SchemaFields;
  stopSignals: Record<string, string>;
  files: Record<string, { name: string; writtenBy: 'fence' | 'agent' } | string>;
}
const SCHEMA = JSON.parse(readFileSync(join(FENCE_DIR, 'fence-protocol.json'), 'utf8')) as Schema;

/**
 * A field's type in one comparable form: the sorted alternatives, each a primitive's name, a quoted literal,
 * { array } or { object: fields }. TypeScript has one number type, so the schema's `integer` reads `number` here.
 */
type Shape = Array<string | { array: Shape } | { object: Fields }>;
type Fields = Record<string, { type: Shape; optional: boolean }>;

const sorted = (shape: Shape): Shape => [...shape].sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));

function schemaType(text: string): Shape {
  return sorted(
    text.split(' | ').map((alternative) => {
      if (alternative.endsWith('[]')) return { array: schemaType(alternative.slice(0, -2)) };
      if (alternative === 'integer') return 'number';
      if (alternative.startsWith("'") || ['number', 'string', 'boolean', 'null'].includes(alternative))
        return alternative;
      const named = SCHEMA.types[alternative];
      if (!named) throw new Error(`fence-protocol.json: no type named ${alternative}`);
      return { object: schemaFields(named) };
    }),
  );
}

function schemaFields(fields: SchemaFields): Fields {
  return Object.fromEntries(
    Object.entries(fields)
      .filter(([name]) => name !== '$comment')
      .map(([name, field]) => {
        const { type, optional } = field as SchemaField;
        return [name, { type: schemaType(type), optional: optional === true }];
      }),
  );
}

// The project's compiler options (strict: optional fields carry `undefined`, which is set aside below).
const ROOT = join(__dirname, '..', '..');
const tsconfig = ts.getParsedCommandLineOfConfigFile(
  join(ROOT, 'tsconfig.json'),
  {},
  {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (diagnostic) => {
      throw new Error(ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'));
    },
  },
)!;
const program = ts.createProgram([PROTOCOL_FILE], tsconfig.options);
const checker = program.getTypeChecker();
const source = program.getSourceFile(PROTOCOL_FILE)!;

function declaredType(name: string): ts.Type {
  const symbol = checker
    .getExportsOfModule(checker.getSymbolAtLocation(source)!)
    .find((candidate) => candidate.name === name);
  if (!symbol) throw new Error(`fence-protocol.ts declares no type ${name}`);
  return checker.getDeclaredTypeOfSymbol(symbol);
}

function typeShape(type: ts.Type): Shape {
  const members = type.isUnion() ? type.types : [type];
  const flags = members.map((member) => member.flags);
  const shape: Shape = [];
  if (flags.some((flag) => flag & ts.TypeFlags.BooleanLiteral)) shape.push('boolean');
  for (const member of members) {
    if (member.flags & (ts.TypeFlags.BooleanLiteral | ts.TypeFlags.Undefined)) continue;
    if (member.isStringLiteral()) shape.push(`'${member.value}'`);
    else if (member.flags & ts.TypeFlags.Number) shape.push('number');
    else if (member.flags & ts.TypeFlags.String) shape.push('string');
    else if (member.flags & ts.TypeFlags.Null) shape.push('null');
    else if (checker.isArrayType(member))
      shape.push({ array: typeShape(checker.getTypeArguments(member as ts.TypeReference)[0]) });
    else if (member.flags & ts.TypeFlags.Object || member.isIntersection()) shape.push({ object: typeFields(member) });
    else throw new Error(`no schema type for ${checker.typeToString(member)}`);
  }
  return sorted(shape);
}

function typeFields(type: ts.Type): Fields {
  return Object.fromEntries(
    checker.getPropertiesOfType(type).map((property) => [
      property.name,
      {
        type: typeShape(checker.getTypeOfSymbol(property)),
        optional: (property.flags & ts.SymbolFlags.Optional) !== 0,
      },
    ]),
  );
}

/** The members of a union of messages, by the value of their `op` or `event`. */
function messagesBy(unionName: string, tag: 'op' | 'event'): Record<string, Fields> {
  const union = declaredType(unionName);
  const members = union.isUnion() ? union.types : [union];
  return Object.fromEntries(
    members.map((member) => {
      const fields = typeFields(member);
      const [literal] = fields[tag].type;
      return [String(literal).replace(/'/g, ''), fields];
    }),
  );
}

const schemaMessages = (messages: Record<string, SchemaFields>): Record<string, Fields> =>
  Object.fromEntries(
    Object.entries(messages)
      .filter(([name]) => name !== '$comment')
      .map(([name, fields]) => [name, schemaFields(fields)]),
  );

describe('the fence protocol (fence-protocol.ts) matches fence-protocol.json', () => {
  it('compiles without errors, so the types read here are the ones the agent builds with', () => {
    expect(
      ts
        .getPreEmitDiagnostics(program)
        .map((diagnostic) => ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n')),
    ).toEqual([]);
  });

  it('requests: agent to fence', () => {
    expect(messagesBy('FenceRequest', 'op')).toEqual(schemaMessages(SCHEMA.requests));
  });

  it('events: fence to agent', () => {
    expect(messagesBy('FenceEvent', 'event')).toEqual(schemaMessages(SCHEMA.events));
  });

  it('launch options and journal entries', () => {
    expect(typeFields(declaredType('FenceLaunchOptions'))).toEqual(schemaFields(SCHEMA.launchOptions));
    expect(typeFields(declaredType('FenceJournalEntry'))).toEqual(schemaFields(SCHEMA.journalEntry));
  });

  it('stop signals', () => {
    const { $comment, ...stopSignals } = SCHEMA.stopSignals;
    expect($comment).toBeDefined();
    expect(STOP_SIGNALS).toEqual(stopSignals);
  });

  it('file names under the state directory', () => {
    const expected = Object.fromEntries(
      Object.entries(SCHEMA.files)
        .filter(([key]) => key !== '$comment')
        .map(([key, file]) => [key, join('/state', (file as { name: string }).name)]),
    );
    expect(fencePaths('/state')).toEqual(expected);
  });

  it('tells a differing type apart: an optional field made required, or a type widened', () => {
    const watchdogState = schemaFields(SCHEMA.types.FenceWatchdogState);
    expect(typeFields(declaredType('FenceWatchdogState'))).toEqual(watchdogState);
    expect(typeFields(declaredType('FenceWatchdogState'))).not.toEqual({
      ...watchdogState,
      required: { ...watchdogState.required, optional: false },
    });
    expect(typeFields(declaredType('FenceWatchdog'))).not.toEqual({
      ...schemaFields(SCHEMA.types.FenceWatchdog),
      driver: { type: ['string'], optional: false },
    });
  });
});
