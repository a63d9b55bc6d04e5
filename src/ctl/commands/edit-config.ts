import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { parse, parseDocument, stringify } from 'yaml';
import { reviewConfigWrite } from '../../config/config-write-review';
import { validateDynamicConfigKeys } from '../../config/dynamic-config';
import { isMapping } from '../../config/config-values';
import { keyValueOf } from '../args';
import { bodyMessage } from '../client';
import { unifiedDiff } from '../diff';
import { isYes } from '../prompt';
import { Ctl, OperationFailed } from '../context';

type Doc = Record<string, unknown>;

/**
 * `edit-config`: the dynamic configuration as YAML in `$EDITOR` (or changed by `-s key.path=value`
 * and `-p parameter=value`, values read as YAML, `null` removes), then the diff, then the same
 * checks the node runs on PATCH /config (key types and ranges, keys Stator does not act on), then
 * `Apply these changes? [y/N]` (not with --force), then a PATCH of what changed only, so edits
 * others made meanwhile to other keys are kept.
 */
export async function editConfig(ctl: Ctl): Promise<number> {
  const before = await ctl.client.getJson<Doc>('/config');
  const beforeText = stringify(before, { lineWidth: 0 });
  const sets = [
    ...(ctl.line.values.set ?? []).map((pair) => ['-s', pair] as const),
    ...(ctl.line.values.pg ?? []).map((pair) => ['-p', pair] as const),
  ];
  const after = sets.length > 0 ? withSettings(before, sets) : editInEditor(ctl, beforeText);
  const afterText = stringify(after, { lineWidth: 0 });
  const diff = unifiedDiff(beforeText, afterText, ['before', 'after']);
  if (!diff) {
    ctl.io.stdout('Not changed\n');
    return 0;
  }
  ctl.io.stdout(diff);
  const patch = patchOf(before, after);
  const review = reviewConfigWrite(patch);
  const problems = [...validateDynamicConfigKeys(after), ...review.problems];
  if (problems.length > 0)
    throw new OperationFailed(
      `the new configuration is not valid, nothing applied:\n${problems.map((problem) => `  ${problem}`).join('\n')}`,
    );
  if (!ctl.line.values.force && !isYes(await ctl.io.prompter.ask('Apply these changes? [y/N]: ')))
    throw new OperationFailed('Aborting edit-config');
  const answer = await ctl.client.send('PATCH', '/config', patch);
  if (answer.status !== 200)
    throw new OperationFailed(`the node refused the change: HTTP ${answer.status}: ${bodyMessage(answer.text)}`);
  const warning = answer.headers.get('warning');
  if (warning) ctl.io.stdout(`Warning: ${warning}\n`);
  ctl.io.stdout('Configuration changed\n');
  return 0;
}

function editInEditor(ctl: Ctl, text: string): Doc {
  const editor = ctl.io.env.EDITOR || ctl.io.env.VISUAL || 'vi';
  const dir = mkdtempSync(join(tmpdir(), 'statorctl-'));
  const file = join(dir, 'config.yaml');
  try {
    writeFileSync(file, text, { mode: 0o600 });
    // As git does: the editor setting may carry arguments (`code --wait`), so it goes through the shell.
    const result = spawnSync('/bin/sh', ['-c', `${editor} "$1"`, editor, file], { stdio: 'inherit', env: ctl.io.env });
    if (result.error) throw new OperationFailed(`cannot run the editor '${editor}': ${result.error.message}`);
    if (result.status !== 0)
      throw new OperationFailed(
        `the editor '${editor}' exited with code ${result.status ?? result.signal}; nothing applied`,
      );
    const edited = readFileSync(file, 'utf8');
    const document = parseDocument(edited, { version: '1.1' });
    if (document.errors.length > 0)
      throw new OperationFailed(
        `the edited configuration is not YAML, nothing applied: ${document.errors[0].message.split('\n')[0]}`,
      );
    const value: unknown = document.toJS() ?? {};
    if (!isMapping(value)) throw new OperationFailed('the edited configuration must be a mapping, nothing applied');
    return value;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** `-s a.b=value` and `-p name=value` (under postgresql.parameters) applied to a copy. */
export function withSettings(doc: Doc, sets: ReadonlyArray<readonly [string, string]>): Doc {
  const copy = structuredClone(doc);
  for (const [flag, pair] of sets) {
    const { key, value } = keyValueOf(flag, pair);
    const path = flag === '-p' ? ['postgresql', 'parameters', key] : key.split('.');
    let parsed: unknown;
    try {
      parsed = parse(value, { version: '1.1' });
    } catch {
      parsed = value;
    }
    let section = copy;
    for (const name of path.slice(0, -1)) {
      if (!isMapping(section[name])) section[name] = {};
      section = section[name] as Doc;
    }
    const last = path[path.length - 1];
    if (parsed === null) delete section[last];
    else section[last] = parsed;
  }
  return copy;
}

/** What PATCH /config needs to turn `before` into `after`: changed keys, nested mappings merged, removed keys null. */
export function patchOf(before: Doc, after: Doc): Doc {
  const patch: Doc = {};
  for (const [key, value] of Object.entries(after)) {
    const old = before[key];
    if (isDeepStrictEqual(old, value)) continue;
    patch[key] = isMapping(old) && isMapping(value) ? patchOf(old, value) : value;
  }
  for (const key of Object.keys(before)) if (!Object.hasOwn(after, key)) patch[key] = null;
  return patch;
}
