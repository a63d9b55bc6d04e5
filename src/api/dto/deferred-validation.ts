import type * as ClassValidator from 'class-validator';

/**
 * class-validator's decorators, applied only when an operation body is first validated.
 *
 * The package, with its phone-number and validator libraries, holds about 7 MiB of an agent's
 * memory, and only the operation endpoints' bodies (switchover, restart, reinitialize...) use it.
 * These stand-ins take the same arguments and remember each application; `loadClassValidator()`
 * loads the package and replays them, in the order they happened (the order decides which check
 * answers first), with the real decorators.
 */
type Deferrable = 'Allow' | 'IsBoolean' | 'IsIn' | 'IsOptional' | 'IsString' | 'Matches' | 'MaxLength' | 'ValidateBy' | 'ValidateIf';
type PropertyDecoratorOf = (target: object, key: string | symbol) => void;

const applications: { decorator: Deferrable; args: unknown[]; target: object; key: string | symbol }[] = [];
let classValidator: typeof ClassValidator | null = null;

function deferred<Name extends Deferrable>(decorator: Name): (typeof ClassValidator)[Name] {
  const stand = (...args: unknown[]): PropertyDecoratorOf => (target, key) => {
    if (classValidator) real(decorator, args)(target, key);
    else applications.push({ decorator, args, target, key });
  };
  return stand as unknown as (typeof ClassValidator)[Name];
}

function real(decorator: Deferrable, args: unknown[]): PropertyDecoratorOf {
  return (classValidator![decorator] as (...args: unknown[]) => PropertyDecoratorOf)(...args);
}

/** The package itself, once every decorator applied so far has been replayed with it. */
export function loadClassValidator(): typeof ClassValidator {
  if (!classValidator) {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    classValidator = require('class-validator') as typeof ClassValidator;
    for (const { decorator, args, target, key } of applications.splice(0)) real(decorator, args)(target, key);
  }
  return classValidator;
}

export const Allow = deferred('Allow');
export const IsBoolean = deferred('IsBoolean');
export const IsIn = deferred('IsIn');
export const IsOptional = deferred('IsOptional');
export const IsString = deferred('IsString');
export const Matches = deferred('Matches');
export const MaxLength = deferred('MaxLength');
export const ValidateBy = deferred('ValidateBy');
export const ValidateIf = deferred('ValidateIf');
export type { ValidationArguments } from 'class-validator';
