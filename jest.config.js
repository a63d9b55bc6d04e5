// @swc/jest: type-checking is done once by `npm run typecheck`, so tests only transpile.
const swc = {
  jsc: {
    parser: { syntax: 'typescript', decorators: true },
    transform: { legacyDecorator: true, decoratorMetadata: true },
    target: 'es2022',
  },
  module: { type: 'commonjs' },
};
// @nestjs/terminus 12 and @seriousme/openapi-schema-validator ship ES modules only: Node requires them natively
// (>= 20.19), Jest on Node 20 does not, so their files are compiled to CommonJS like ours (import.meta.url, which
// they read once, becomes the file's URL).
const esm = { ...swc, jsc: { ...swc.jsc, parser: { syntax: 'ecmascript' } } };
const ESM_PACKAGES = '@nestjs/terminus|@seriousme/openapi-schema-validator';
const common = {
  testEnvironment: 'node',
  transform: { '^.+\\.ts$': ['@swc/jest', swc], [`/node_modules/(${ESM_PACKAGES})/.+\\.js$`]: ['@swc/jest', esm] },
  transformIgnorePatterns: [`/node_modules/(?!(${ESM_PACKAGES})/)`],
  moduleFileExtensions: ['ts', 'js', 'json'],
};
module.exports = {
  // Longest spec files first (test/durations.json), so that no long one starts last on a clean clone (no Jest cache).
  testSequencer: '<rootDir>/test/sequencer.js',
  projects: [
    {
      ...common,
      displayName: 'unit',
      setupFiles: ['<rootDir>/test/helpers/openapi-decorators-live.ts'],
      testMatch: ['<rootDir>/test/unit/**/*.spec.ts'],
    },
    {
      ...common,
      displayName: 'integration',
      // Test clusters wait for no disk sync (fsync off, initdb and pg_basebackup --no-sync): see the file.
      setupFiles: ['<rootDir>/test/helpers/cluster-defaults.ts'],
      testMatch: ['<rootDir>/test/integration/**/*.int-spec.ts', '<rootDir>/test/migration/**/*.int-spec.ts'],
      // The network-partition scenarios, a node's and a whole site's (two etcd layouts), run apart with `npm run partitions`
      // (root, network namespaces, a few minutes), and Patroni 3.0.2 in the sites bed with `npm run partitions:patroni`;
      // the chaos subset in chaos.int-spec.ts is the suite's share of the seeded faults.
      // The rolling migration's way back looped (switchover-loop.int-spec.ts, STATOR_SWITCHOVER_LOOPS rounds) is a
      // diagnostic of the loss docs/migration.md describes, run apart.
      testPathIgnorePatterns: [
        ...(process.env.STATOR_PARTITIONS ? [] : ['/(site-)?partitions(-[a-z]+)?\\.int-spec\\.ts$']),
        ...(process.env.STATOR_MIGRATION ? [] : ['/switchover-loop\\.int-spec\\.ts$']),
      ],
    },
  ],
};
