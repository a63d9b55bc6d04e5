// ESLint for the whole tree (`npm run lint`, part of `npm test`): the recommended rules, the type-aware ones that
// catch a forgotten await, and the import direction of docs/architecture.md (api -> ha -> ports, never back up).
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

/** An import of a folder of src/ reached by a relative path ('../ha/x', '../../api/y'), for no-restricted-imports. */
function importOf(folder, why) {
  return {
    regex: `^(\\.\\./)+${folder}(/|$)`,
    message: `${why} (docs/architecture.md: imports flow api -> ha -> ports)`,
  };
}

/** The folders below `files` may not import these folders of src/: they are its callers. */
function mayNotImport(files, folders, why) {
  return {
    files,
    rules: { 'no-restricted-imports': ['error', { patterns: folders.map((folder) => importOf(folder, why)) }] },
  };
}

/** What src/ui's scripts define for each other (and replay-fold.js, built from src/projections, for them). */
const UI_SHARED_GLOBALS = Object.fromEntries(
  [
    ...['$', 'sleep', 'element', 'getJson', 'showStatus', 'clockTime', 'formatLag', 'eventKey', 'machineTransition'],
    ...['loadDiagrams', 'showBadge', 'MACHINES', 'nodeView', 'addToLog', 'timeOf'],
    ...['travel', 'loadWholeLog', 'clusterAtInstant', 'lastTransitionsAt', 'scheduleTravelBar', 'startTimeTravel'],
    ...['renderTravelBar', 'StatorReplay'],
  ].map((name) => [name, 'readonly']),
);

const CALLERS_OF_HA = ['api', 'cli', 'ctl'];
const CALLERS_OF_PORTS = ['ha', ...CALLERS_OF_HA];

export default tseslint.config(
  { ignores: ['dist/', 'coverage/', 'node_modules/', 'test-artifacts/', '.demo/'] },
  js.configs.recommended,
  {
    rules: {
      // A variable a closure reads before its one assignment (an unsubscribe, a timer) stays `let`.
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
      // Patterns match prompts and log lines letter for letter: two spaces read as two spaces.
      'no-regex-spaces': 'off',
    },
  },
  {
    files: ['**/*.ts'],
    extends: [tseslint.configs.recommended],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      // A promise nobody awaits loses its error and its deadline: the house rule "every action has a way out".
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': [
        'error',
        { checksVoidReturn: { arguments: false, attributes: false } },
      ],
      '@typescript-eslint/await-thenable': 'error',
      // `_name` marks a parameter an interface requires but this implementation does not read.
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none', ignoreRestSiblings: true },
      ],
    },
  },
  // Import direction: the HA core never imports the API or the command lines; the ports and the helpers below them
  // never import the HA core.
  mayNotImport(['src/ha/**'], CALLERS_OF_HA, 'the HA core may not import its callers'),
  mayNotImport(
    ['src/dcs/**', 'src/postgresql/**', 'src/events/**', 'src/callbacks/**', 'src/projections/**', 'src/security/**'],
    CALLERS_OF_PORTS,
    'a port or adapter may not import the HA core or its callers',
  ),
  mayNotImport(
    ['src/config/**'],
    [...CALLERS_OF_PORTS, 'dcs', 'postgresql', 'events'],
    'configuration is read by everyone and reads no one',
  ),
  mayNotImport(
    ['src/common/**'],
    [...CALLERS_OF_PORTS, 'dcs', 'postgresql', 'events', 'config', 'callbacks', 'projections', 'security'],
    'common/ holds helpers every folder may use, so it uses none of them',
  ),
  {
    files: ['**/*.js'],
    languageOptions: { sourceType: 'commonjs', globals: { ...globals.node } },
  },
  {
    // The status page's scripts run in the browser as plain scripts that share one global scope (index.html loads
    // them in order): what one defines at the top the others use.
    files: ['src/ui/**/*.js'],
    languageOptions: { sourceType: 'script', globals: { ...globals.browser, ...UI_SHARED_GLOBALS } },
    rules: { 'no-unused-vars': ['error', { vars: 'local' }], 'no-redeclare': ['error', { builtinGlobals: false }] },
  },
);
