import type * as ClassValidator from 'class-validator';
import { deferredPackage } from '../deferred-decorators';

/**
 * class-validator's decorators, applied only when an operation body is first validated.
 *
 * The package, with its phone-number and validator libraries, holds about 7 MiB of an agent's
 * memory, and only the operation endpoints' bodies (switchover, restart, reinitialize...) use it.
 * `loadClassValidator()` loads it and replays the decorators applied so far, in their order (the
 * order decides which check answers first).
 */
// eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use, not at start (see above)
const classValidator = deferredPackage(() => require('class-validator') as typeof ClassValidator);

export const loadClassValidator = (): typeof ClassValidator => classValidator.load();

export const Allow = classValidator.decorator('Allow');
export const IsBoolean = classValidator.decorator('IsBoolean');
export const IsIn = classValidator.decorator('IsIn');
export const IsOptional = classValidator.decorator('IsOptional');
export const IsString = classValidator.decorator('IsString');
export const Matches = classValidator.decorator('Matches');
export const MaxLength = classValidator.decorator('MaxLength');
export const ValidateBy = classValidator.decorator('ValidateBy');
export const ValidateIf = classValidator.decorator('ValidateIf');
export type { ValidationArguments } from 'class-validator';
