/**
 * `synchronous_standby_names` as the reference writes and reads it (reference-behavior 3.9):
 * names sorted and quoted when needed, `N (a,b)` for several, `ANY N (...)` in quorum mode, and a
 * placeholder that matches no standby when strict mode must keep commits waiting.
 */
export const STRICT_PLACEHOLDER = '__patroni_strict_sync_replica_placeholder__';

export interface StandbyNames {
  kind: 'off' | 'priority' | 'quorum';
  /** How many standbys must confirm a commit (`N` of `FIRST N` / `ANY N`); 1 for a plain list. */
  count: number;
  /** Member names listed, `*` included as written; the strict placeholder counts as none. */
  members: string[];
  hasStar: boolean;
}

const NO_STANDBYS: StandbyNames = Object.freeze({ kind: 'off', count: 0, members: [], hasStar: false }) as StandbyNames;

/** Values longer than this are not a list of member names; refusing them keeps parsing bounded. */
const MAX_LENGTH = 64 * 1024;

/**
 * The value for `standbys` (`null`: the user's own setting is not ours to write). `strict`: with no
 * standby, keep commits waiting (the placeholder) rather than let them through.
 */
export function formatStandbyNames(standbys: Iterable<string>, count: number | null, quorum: boolean): string {
  const names = [...new Set(standbys)];
  const waitForNobody = names.includes('*') || (count !== null && count >= 1 && names.length === 0);
  const listed = waitForNobody ? [STRICT_PLACEHOLDER] : names.sort().map(quoteStandbyName);
  if (listed.length === 0) return '';
  const wanted = count ?? listed.length;
  if (quorum) return `ANY ${wanted} (${listed.join(',')})`;
  if (listed.length > 1) return `${wanted} (${listed.join(',')})`;
  return listed[0];
}

/** As PostgreSQL's parser needs it: an identifier stays bare, anything else is double-quoted. */
export function quoteStandbyName(name: string): string {
  const bare = /^[A-Za-z_][A-Za-z_0-9$]*$/.test(name) && !['first', 'any'].includes(name.toLowerCase());
  return bare ? name : `"${name.replace(/"/g, '""')}"`;
}

type Token = {
  type: 'first' | 'any' | 'ident' | 'dquot' | 'star' | 'num' | 'comma' | 'open' | 'close';
  text: string;
  at: number;
};

const TOKEN =
  /\s+|([fF][iI][rR][sS][tT](?![A-Za-z_0-9$]))|([aA][nN][yY](?![A-Za-z_0-9$]))|([A-Za-z_][A-Za-z_0-9$]*)|("(?:[^"]|"")*")|(\*)|(\d+)|(,)|(\()|(\))|(.)/gy;
const TOKEN_TYPES = ['first', 'any', 'ident', 'dquot', 'star', 'num', 'comma', 'open', 'close'] as const;

/** Reads a value PostgreSQL accepted; throws on one it would not have (the caller then treats it as unknown). */
export function parseStandbyNames(value: string): StandbyNames {
  if (value.length > MAX_LENGTH) throw new Error(`synchronous_standby_names is longer than ${MAX_LENGTH} characters`);
  const tokens = tokenize(value);
  if (tokens.length === 0) return { ...NO_STANDBYS, members: [] };
  const types = tokens.map((t) => t.type);
  const last = types[types.length - 1];
  let kind: 'priority' | 'quorum' = 'priority';
  let count = 1;
  let list = tokens;
  if ((types[0] === 'any' || types[0] === 'first') && types[1] === 'num' && types[2] === 'open' && last === 'close') {
    kind = types[0] === 'any' ? 'quorum' : 'priority';
    count = Number(tokens[1].text);
    list = tokens.slice(3, -1);
  } else if (types[0] === 'num' && types[1] === 'open' && last === 'close') {
    count = Number(tokens[0].text);
    list = tokens.slice(2, -1);
  }
  const members: string[] = [];
  let hasStar = false;
  list.forEach((token, index) => {
    if (index % 2 === 1) {
      if (index === list.length - 1 || token.type !== 'comma')
        throw unexpected(value, token, index === list.length - 1 ? undefined : 'comma');
    } else if (token.type === 'ident' || token.type === 'first' || token.type === 'any') members.push(token.text);
    else if (token.type === 'star') {
      members.push('*');
      hasStar = true;
    } else if (token.type === 'dquot') members.push(token.text.slice(1, -1).replace(/""/g, '"'));
    else throw unexpected(value, token);
  });
  const placeholderOnly = members.length === 1 && members[0].toLowerCase() === STRICT_PLACEHOLDER;
  return { kind, count, members: placeholderOnly ? [] : members, hasStar };
}

function tokenize(value: string): Token[] {
  const tokens: Token[] = [];
  TOKEN.lastIndex = 0;
  for (let match = TOKEN.exec(value); match !== null && match[0].length > 0; match = TOKEN.exec(value)) {
    const group = match.slice(1).findIndex((g) => g !== undefined);
    if (group < 0) continue; // whitespace
    if (group === TOKEN_TYPES.length)
      throw new Error(
        `unparsable synchronous_standby_names ${JSON.stringify(value)}: unexpected ${JSON.stringify(match[0])} at ${match.index}`,
      );
    tokens.push({ type: TOKEN_TYPES[group], text: match[0], at: match.index });
  }
  return tokens;
}

function unexpected(value: string, token: Token, expecting?: string): Error {
  const wanted = expecting ? ` while expecting ${expecting}` : '';
  return new Error(
    `unparsable synchronous_standby_names ${JSON.stringify(value)}: token ${token.type} ${JSON.stringify(token.text)}${wanted} at ${token.at}`,
  );
}
