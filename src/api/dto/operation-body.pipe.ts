import { PipeTransform } from '@nestjs/common';
import { getMetadataStorage, validateSync } from 'class-validator';
import { OperationRefused } from '../../ha/operation-types';

type DtoClass<T> = new () => T;

/**
 * How a body's unknown keys are answered: after the typed checks (the mapping decides), each in body order, or all at
 * once first. `accepted` is the DTO's keys without their older spellings, for the answer's "(accepted: ...)".
 */
export type UnknownKeyPolicy =
  | { kind: 'left-to-mapping' }
  | { kind: 'in-body-order'; message: (key: string) => string }
  | { kind: 'first'; message: (keys: string[], accepted: string[]) => string };

/** What the pipe knows of its body beyond the DTO: the policy for unknown keys, whether a body is required, older spellings. */
export interface BodyOptions {
  unknownKeys: UnknownKeyPolicy;
  required?: boolean;
  /** Keys the DTO declares for an older spelling (`member` for `candidate`): accepted, and left out of "(accepted: ...)". */
  aliases?: readonly string[];
}

/** A body that passed its DTO's checks: the typed fields, the keys the DTO does not declare, and the ones it accepts. */
export interface ValidatedBody<T> {
  fields: T;
  unknownKeys: string[];
  acceptedKeys: string[];
}

/**
 * Validates an operation's JSON body against a class-validator DTO and answers the first problem in
 * body order, as a plain-text 400 in the reference's words (OperationRefused; see OperationRefusedFilter).
 *
 * Only the keys the DTO declares are copied onto it, as own properties of a fresh instance, so a key
 * such as `constructor` or `toString` can never reach the class or its prototype: it is an unknown key.
 * No body (or an empty one) is an empty DTO; the endpoint decides whether it needed one.
 */
export class OperationBodyPipe<T extends object> implements PipeTransform<unknown, ValidatedBody<T>> {
  /** The DTO's keys in declaration order, read from class-validator's metadata on the first body. */
  private declaredKeys: ReadonlySet<string> | null = null;
  private readonly unknownKeys: UnknownKeyPolicy;

  constructor(
    private readonly dto: DtoClass<T>,
    private readonly options: BodyOptions,
  ) {
    this.unknownKeys = options.unknownKeys;
  }

  transform(raw: unknown): ValidatedBody<T> {
    const body = objectBody(raw, !this.options.required);
    this.declaredKeys ??= new Set(
      getMetadataStorage()
        .getTargetValidationMetadatas(this.dto, '', true, false)
        .map((m) => m.propertyName),
    );
    const declared = this.declaredKeys;
    const acceptedKeys = [...declared].filter((key) => !this.options.aliases?.includes(key));
    const keys = Object.keys(body);
    const unknown = keys.filter((key) => !declared.has(key));
    if (unknown.length > 0 && this.unknownKeys.kind === 'first')
      throw new OperationRefused(400, this.unknownKeys.message(unknown, acceptedKeys));

    const fields = new this.dto() as Record<string, unknown>;
    for (const key of keys) if (declared.has(key)) fields[key] = body[key];
    const problems = new Map<string, string>();
    for (const error of validateSync(fields, { forbidUnknownValues: false, stopAtFirstError: true })) {
      const message = Object.values(error.constraints ?? {})[0];
      if (message) problems.set(error.property, message);
    }
    for (const key of keys) {
      if (problems.has(key)) throw new OperationRefused(400, problems.get(key)!);
      if (this.unknownKeys.kind === 'in-body-order' && !declared.has(key))
        throw new OperationRefused(400, this.unknownKeys.message(key));
    }
    return { fields: fields as T, unknownKeys: unknown, acceptedKeys };
  }
}

/** A JSON object body, or a refusal. No body means `{}` when it is optional. */
export function objectBody(body: unknown, optional: boolean): Record<string, unknown> {
  if (body === undefined || body === null || body === '') {
    if (optional) return {};
    throw new OperationRefused(400, 'Request body must be a JSON object');
  }
  if (typeof body !== 'object' || Array.isArray(body))
    throw new OperationRefused(400, 'Request body must be a JSON object');
  return body as Record<string, unknown>;
}
