import { RestApiConfig } from './config.types';
import {
  Findings,
  ignoreUnsupported,
  isAbsent,
  Mapping,
  readOneOf,
  readRequiredString,
  readSection,
  readString,
  readStringList,
} from './config-readers';
import { checkListenAddress, readConnectAddress } from './listen-address';
import { readRestApiOptions, RESTAPI_OPTION_KEYS } from './restapi-options-config';

/** `restapi`: where the API listens and how other nodes reach it, its TLS, its guards (authentication, allowlist). */
export function readRestApi(findings: Findings, doc: Mapping): RestApiConfig {
  const path = 'restapi';
  const section = readSection(findings, doc, 'restapi', '');
  ignoreUnsupported(findings, section, path, [
    'listen',
    'connect_address',
    'authentication',
    'certfile',
    'keyfile',
    'cafile',
    'verify_client',
    'allowlist',
    'authentication_scope',
    ...RESTAPI_OPTION_KEYS,
  ]);
  const listen = readRequiredString(findings, section, 'listen', path);
  if (listen) checkListenAddress(findings, 'restapi.listen', listen, false);
  const restapi: RestApiConfig = { listen, connect_address: readConnectAddress(findings, section, path, listen) };

  if (!isAbsent(section.authentication)) {
    const authentication = readSection(findings, section, 'authentication', path);
    const authenticationPath = 'restapi.authentication';
    ignoreUnsupported(findings, authentication, authenticationPath, ['username', 'password']);
    restapi.authentication = {
      username: readRequiredString(findings, authentication, 'username', authenticationPath),
      password: readRequiredString(findings, authentication, 'password', authenticationPath, { secret: true }),
    };
  }
  for (const key of ['certfile', 'keyfile', 'cafile'] as const) {
    const file = readString(findings, section, key, path);
    if (file) restapi[key] = file;
  }
  if (!isAbsent(section.verify_client)) {
    const levels = ['none', 'optional', 'required'] as const;
    restapi.verify_client = readOneOf(findings, section, 'verify_client', path, levels, 'none');
  }
  const allowlist = readStringList(findings, section, 'allowlist', path);
  if (allowlist) restapi.allowlist = allowlist;
  readRestApiOptions(findings, section, path, restapi);
  if (!isAbsent(section.authentication_scope)) {
    restapi.authentication_scope = readOneOf(
      findings,
      section,
      'authentication_scope',
      path,
      ['unsafe', 'admin'] as const,
      'unsafe',
    );
    const guarded =
      restapi.authentication ||
      restapi.allowlist?.length ||
      restapi.allowlist_include_members ||
      (restapi.verify_client && restapi.verify_client !== 'none');
    if (restapi.authentication_scope === 'admin' && !guarded) {
      findings.problem(
        'restapi.authentication_scope',
        '"admin" requires restapi.authentication, restapi.allowlist, restapi.allowlist_include_members or restapi.verify_client',
      );
    }
  }

  // TLS settings only mean something together; a half-configured TLS must not silently serve plain HTTP.
  for (const key of ['keyfile', 'cafile'] as const) {
    if (restapi[key] && !restapi.certfile) findings.problem(`restapi.${key}`, 'requires restapi.certfile');
  }
  if (restapi.verify_client && restapi.verify_client !== 'none' && !restapi.cafile) {
    findings.problem('restapi.verify_client', `"${restapi.verify_client}" requires restapi.cafile`);
  }
  return restapi;
}
