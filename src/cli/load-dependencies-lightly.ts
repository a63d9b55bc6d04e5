import { LazyDateTimeFormat } from '../common/lazy-date-time-format';
import { withPropertyReplaced } from '../common/while-loading';

/**
 * main.ts's first import: @nestjs/common loads here, before any module that imports it, with
 * `Intl.DateTimeFormat` built on first use (src/common/lazy-date-time-format.ts). Its two logger
 * modules each build a formatter at load for a timestamp they print only on a warning or an error;
 * building one makes ICU's date data resident: 5 MiB (file-backed) of every idle agent, and 6-8 MiB
 * of its RSS (docs/benchmarks.md, "Start-up tricks for memory"). test/unit/load-dependencies-lightly.spec.ts
 * fails when an upgrade of @nestjs/common or Node makes the trick useless or breaks it.
 */
// eslint-disable-next-line @typescript-eslint/no-require-imports -- it must load while the property is replaced
withPropertyReplaced(Intl, 'DateTimeFormat', LazyDateTimeFormat, () => require('@nestjs/common'));
