import { HttpException, HttpStatus, PipeTransform } from '@nestjs/common';
import { reviewConfigWrite } from '../../config/config-write-review';
import { isMapping } from '../../config/config-values';
import { DynamicConfig } from '../../dcs/dcs.port';
import { ConfigWrite } from '../../ha/operation-types';
import { errorBody } from '../http-exception.filter';

/**
 * The body of PATCH and PUT /config: a non-empty JSON object whose every key Stator either acts on
 * or refuses (see reviewConfigWrite), answered with 400 naming each refused
 * key. The typed rules of the keys (shared with the configuration file's `bootstrap.dcs`) and the
 * timing invariant are checked on the resulting document, after the merge, by the node.
 */
export class ConfigBodyPipe implements PipeTransform<unknown, ConfigWrite> {
  transform(body: unknown): ConfigWrite {
    if (!isMapping(body) || Object.keys(body).length === 0)
      throw refused(['the body must be a non-empty JSON object'], false);
    const { problems } = reviewConfigWrite(body);
    if (problems.length > 0) throw refused(problems, true);
    return { document: body as DynamicConfig, warnings: [] };
  }
}

function refused(problems: string[], listed: boolean): HttpException {
  return new HttpException(
    { ...errorBody(HttpStatus.BAD_REQUEST, problems.join('; ')), ...(listed ? { problems } : {}) },
    HttpStatus.BAD_REQUEST,
  );
}
