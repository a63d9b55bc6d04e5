import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { loadConfig } from '../../src/config/load-config';
import { removeDir, tmpDir } from '../helpers/tmp';
import { problemsOf } from '../helpers/config-problems';

/** Reading the `restapi` and `log` keys Patroni 4.1 has beyond the basics: values, defaults, refusals. */

const BASE = {
  scope: 'demo',
  name: 'n1',
  restapi: { listen: '127.0.0.1:8008' },
  etcd3: { hosts: ['127.0.0.1:2379'] },
  postgresql: { listen: '127.0.0.1:5432', data_dir: '/data/n1' },
};

let dir: string;
let written = 0;
beforeAll(() => {
  dir = tmpDir('stator-options-config-');
});
afterAll(() => removeDir(dir));

function load(
  sections: { restapi?: Record<string, unknown>; log?: Record<string, unknown> },
  env: NodeJS.ProcessEnv = {},
) {
  const file = join(dir, `config-${++written}.yml`);
  writeFileSync(
    file,
    stringify({ ...BASE, restapi: { ...BASE.restapi, ...sections.restapi }, log: sections.log }, { version: '1.1' }),
  );
  return loadConfig(file, env);
}

describe('restapi keys', () => {
  it('reads every key without a warning', () => {
    const { config, warnings } = load({
      restapi: {
        certfile: '/etc/stator/api.crt',
        keyfile: '/etc/stator/api.key',
        keyfile_password: 'open sesame',
        ciphers: 'ECDHE-RSA-AES256-GCM-SHA384:!TLSv1',
        allowlist_include_members: true,
        http_extra_headers: { 'X-Frame-Options': 'SAMEORIGIN' },
        https_extra_headers: { 'Strict-Transport-Security': 'max-age=31536000' },
        request_queue_size: 64,
        server_tokens: 'ProductOnly',
      },
    });
    expect(warnings).toEqual([]);
    expect(config.restapi).toMatchObject({
      keyfile_password: 'open sesame',
      ciphers: 'ECDHE-RSA-AES256-GCM-SHA384:!TLSv1',
      allowlist_include_members: true,
      http_extra_headers: { 'X-Frame-Options': 'SAMEORIGIN' },
      https_extra_headers: { 'Strict-Transport-Security': 'max-age=31536000' },
      request_queue_size: 64,
      server_tokens: 'productonly',
    });
  });

  it('reads them from Patroni environment variables', () => {
    const { config } = load(
      { restapi: { certfile: '/c.crt' } },
      {
        PATRONI_RESTAPI_KEYFILE_PASSWORD: 'pw',
        PATRONI_RESTAPI_CIPHERS: 'HIGH',
        PATRONI_RESTAPI_ALLOWLIST_INCLUDE_MEMBERS: 'on',
        PATRONI_RESTAPI_REQUEST_QUEUE_SIZE: '20',
        PATRONI_RESTAPI_SERVER_TOKENS: 'Minimal',
      },
    );
    expect(config.restapi).toMatchObject({
      keyfile_password: 'pw',
      ciphers: 'HIGH',
      allowlist_include_members: true,
      request_queue_size: 20,
      server_tokens: 'minimal',
    });
  });

  it('says that TLS keys do nothing without certfile, and starts (Patroni ignores them silently)', () => {
    const { warnings } = load({
      restapi: { ciphers: 'HIGH', https_extra_headers: { 'Strict-Transport-Security': 'max-age=1' } },
    });
    expect(warnings).toEqual([
      'restapi.ciphers has no effect without restapi.certfile (the API serves plain HTTP)',
      'restapi.https_extra_headers has no effect without restapi.certfile (the API serves plain HTTP)',
    ]);
  });

  it('refuses values it cannot use, naming the key and the rule', () => {
    const problems = problemsOf(() =>
      load({
        restapi: {
          allowlist_include_members: 'maybe',
          http_extra_headers: {
            'Bad Name': 'x',
            'X-Split': 'a\r\nInjected: yes',
            'Content-Length': '0',
            Server: 'nginx',
          },
          https_extra_headers: ['X-A: b'],
          request_queue_size: 0,
          server_tokens: 'Full',
        },
      }),
    );
    expect(problems).toEqual([
      'restapi.allowlist_include_members: must be a boolean (true/false, on/off, yes/no), got "maybe"',
      'restapi.http_extra_headers: "Bad Name" is not a valid HTTP header name',
      'restapi.http_extra_headers.X-Split: must be one line of at most 8192 characters, got "a\\r\\nInjected: yes"',
      'restapi.http_extra_headers.Content-Length: Stator sets this header itself (each answer sets it)',
      'restapi.http_extra_headers.Server: Stator sets this header itself (use restapi.server_tokens)',
      'restapi.https_extra_headers: must be a mapping of header names to values, got ["X-A: b"]',
      'restapi.request_queue_size: must be an integer from 1 to 65535, got 0',
      'restapi.server_tokens: must be one of original, productonly, minimal, got "Full"',
    ]);
  });

  it('never shows the keyfile password in a message', () => {
    const problems = problemsOf(() =>
      load({ restapi: { certfile: '/c.crt', keyfile_password: { secret: 'hunter2' } } }),
    );
    expect(problems).toEqual(['restapi.keyfile_password: must be a string']);
  });

  it('lets allowlist_include_members alone guard authentication_scope: admin', () => {
    const { config } = load({ restapi: { allowlist_include_members: true, authentication_scope: 'admin' } });
    expect(config.restapi.authentication_scope).toBe('admin');
  });
});

describe('log keys', () => {
  it('reads every key without a warning', () => {
    const { config, warnings } = load({
      log: {
        type: 'json',
        static_fields: { app: 'patroni', region: 'eu', shard: 3 },
        traceback_level: 'DEBUG',
        deduplicate_heartbeat_logs: true,
        max_queue_size: 50,
        loggers: { urllib3: 'WARNING', 'botocore.credentials': 'ERROR' },
      },
    });
    expect(warnings).toEqual([]);
    expect(config.log).toMatchObject({
      static_fields: { app: 'patroni', region: 'eu', shard: 3 },
      traceback_level: 'debug',
      deduplicate_heartbeat_logs: true,
      max_queue_size: 50,
    });
  });

  it('reads them from Patroni environment variables', () => {
    const { config } = load(
      {},
      {
        PATRONI_LOG_TRACEBACK_LEVEL: 'debug',
        PATRONI_LOG_MAX_QUEUE_SIZE: '200',
        PATRONI_LOG_DEDUPLICATE_HEARTBEAT_LOGS: 'true',
      },
    );
    expect(config.log).toMatchObject({
      traceback_level: 'debug',
      max_queue_size: 200,
      deduplicate_heartbeat_logs: true,
    });
  });

  it('says that static_fields need the JSON format', () => {
    expect(load({ log: { static_fields: { app: 'x' } } }).warnings).toEqual([
      'log.static_fields has effect only with log.type: json, as in Patroni',
    ]);
  });

  it("keeps the level of every Patroni logger (each applies to its nearest Stator source), with no warning; other libraries' names are checked and dropped", () => {
    const { config, warnings } = load({
      log: {
        loggers: {
          'patroni.postgresql.callback_executor': 'DEBUG',
          'patroni.dcs': 'warning',
          patroni: 'INFO',
          'patroni.postgresql.slots': 'DEBUG',
          'patroni.unknown.module': 'ERROR',
          urllib3: 'ERROR',
        },
      },
    });
    expect(config.log.loggers).toEqual({
      'patroni.postgresql.callback_executor': 'debug',
      'patroni.dcs': 'warning',
      patroni: 'info',
      'patroni.postgresql.slots': 'debug',
      'patroni.unknown.module': 'error',
    });
    expect(warnings).toEqual([]);
    expect(problemsOf(() => load({ log: { loggers: { 'patroni.postmaster': 'LOUD', urllib3: 'LOUD' } } }))).toEqual([
      'log.loggers.patroni.postmaster: must be one of DEBUG, INFO, WARNING, ERROR, CRITICAL, got "LOUD"',
      'log.loggers.urllib3: must be one of DEBUG, INFO, WARNING, ERROR, CRITICAL, got "LOUD"',
    ]);
  });

  it('refuses values it cannot use, naming the key and the rule', () => {
    const problems = problemsOf(() =>
      load({
        log: {
          type: 'json',
          static_fields: { nested: { a: 1 } },
          traceback_level: 'trace',
          deduplicate_heartbeat_logs: 'often',
          max_queue_size: -1,
        },
      }),
    );
    expect(problems).toEqual([
      'log.static_fields.nested: must be a string, number, boolean or null, got {"a":1}',
      'log.traceback_level: must be one of DEBUG, INFO, WARNING, ERROR, CRITICAL, got "trace"',
      'log.deduplicate_heartbeat_logs: must be a boolean (true/false, on/off, yes/no), got "often"',
      'log.max_queue_size: must be an integer from 1 to 1000000, got -1',
    ]);
  });
});
