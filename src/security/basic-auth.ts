import { createHash, timingSafeEqual } from 'node:crypto';

/** `restapi.authentication`: the credentials of the unsafe endpoints. */
export interface BasicCredentials {
  username: string;
  password: string;
}

/** Why a request's credentials were refused, in the reference's words. */
export type BasicAuthFailure = 'no auth header received' | 'not authenticated';

/** The `Authorization` header value for these credentials (also sent by agent-to-agent calls). */
export function basicAuthorizationHeader(credentials: BasicCredentials): string {
  return `Basic ${Buffer.from(`${credentials.username}:${credentials.password}`).toString('base64')}`;
}

/** Checks `Authorization` headers against the configured credentials in constant time: the failure, or `null`. */
export function basicAuthChecker(
  credentials: BasicCredentials,
): (header: string | undefined) => BasicAuthFailure | null {
  const expected = digest(basicAuthorizationHeader(credentials));
  return (header) => {
    if (header === undefined || header === '') return 'no auth header received';
    // Digests have a fixed length, so neither the content nor the length of the secret leaks through timing.
    return timingSafeEqual(digest(header), expected) ? null : 'not authenticated';
  };
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}
