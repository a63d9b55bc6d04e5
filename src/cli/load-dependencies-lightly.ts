import { LazyDateTimeFormat } from '../common/lazy-date-time-format';
import { withPropertyReplaced } from '../common/while-loading';

/**
 * main.ts's first import: two dependencies load here, before any module that imports them, without
 * touching what they would load for nothing.
 *
 * - @nestjs/common with `Intl.DateTimeFormat` built on first use (src/common/lazy-date-time-format.ts).
 * - pg without the web `Response`: its stream module builds one at load to detect Cloudflare
 *   Workers, and Node's first read of that global loads its whole bundled fetch (undici, web
 *   streams): 10 MiB of RSS in every agent, which never uses it. pg then takes Node's sockets, as
 *   it does when the check says "not Cloudflare".
 */
// eslint-disable-next-line @typescript-eslint/no-require-imports -- each must load while the property is replaced
withPropertyReplaced(Intl, 'DateTimeFormat', LazyDateTimeFormat, () => require('@nestjs/common'));
// eslint-disable-next-line @typescript-eslint/no-require-imports -- each must load while the property is replaced
withPropertyReplaced(globalThis, 'Response', undefined, () => require('pg'));
