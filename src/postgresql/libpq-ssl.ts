import { readFileSync } from 'node:fs';
import { ConnectionOptions } from 'node:tls';
import { LibpqOptions } from '../config/config.types';

/**
 * A role's libpq TLS options (`sslmode`, `sslrootcert`, `sslcert`, `sslkey`, `sslpassword`) as the
 * `ssl` setting of node-postgres, for the agent's own connections; the PostgreSQL tools get the
 * options themselves in their conninfo. As libpq: `require` with a root certificate verifies the
 * CA; `verify-ca` checks the chain but not the host name; `verify-full` both. `disable`, `allow`
 * and `prefer` connect without TLS (node-postgres cannot fall back from one to the other).
 * Files are read when a connection is made, so renewed certificates are picked up.
 */
export function clientSsl(libpq: LibpqOptions | undefined): false | ConnectionOptions {
  const mode = libpq?.sslmode;
  if (!libpq || !mode || mode === 'disable' || mode === 'allow' || mode === 'prefer') return false;
  const read = (path: string | undefined) => (path ? readFileSync(path) : undefined);
  const verify =
    mode === 'verify-ca' || mode === 'verify-full' || (mode === 'require' && libpq.sslrootcert !== undefined);
  return {
    ca: read(libpq.sslrootcert),
    cert: read(libpq.sslcert),
    key: read(libpq.sslkey),
    passphrase: libpq.sslpassword,
    rejectUnauthorized: verify,
    // verify-ca trusts any name the CA signed, as libpq does.
    ...(mode === 'verify-full' ? {} : { checkServerIdentity: () => undefined }),
  };
}
