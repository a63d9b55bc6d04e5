/**
 * `Intl.DateTimeFormat` built on first use instead of when constructed.
 *
 * @nestjs/common's two logger modules each build a formatter when they load, for the timestamp of
 * a line they print only on a warning or an error. Building one makes ICU read its date-pattern
 * data: 6 MiB of /usr/bin/node's pages that stay resident in every agent. While those modules
 * load, `Intl.DateTimeFormat` is this class (src/cli/load-dependencies-lightly.ts); the formatters
 * then read the same ICU data the first time they format, and print the same text.
 */
const RealDateTimeFormat = Intl.DateTimeFormat;

type Locales = ConstructorParameters<typeof Intl.DateTimeFormat>[0];
type Options = ConstructorParameters<typeof Intl.DateTimeFormat>[1];

export class LazyDateTimeFormat {
  private real: Intl.DateTimeFormat | null = null;

  constructor(
    private readonly locales?: Locales,
    private readonly options?: Options,
  ) {}

  format(date?: Date | number): string {
    return this.formatter().format(date);
  }

  formatToParts(date?: Date | number): Intl.DateTimeFormatPart[] {
    return this.formatter().formatToParts(date);
  }

  resolvedOptions(): Intl.ResolvedDateTimeFormatOptions {
    return this.formatter().resolvedOptions();
  }

  private formatter(): Intl.DateTimeFormat {
    return (this.real ??= new RealDateTimeFormat(this.locales, this.options));
  }
}
