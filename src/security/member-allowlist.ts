import { BlockList, isIP } from 'node:net';
import { HostResolver, systemResolver, unmapIpv4 } from './allowlist';
import { errorText } from '../common/error-text';

/** The `api_url` of every member registered in the DCS (this node's own included), as last read. */
export type MemberApiUrls = () => string[];

/** How long a member host's addresses are reused before resolving it again. */
const RESOLVED_TTL_MS = 10_000;
/** A resolver that has not answered within this is given up on for this request (the host is not admitted). */
const RESOLVE_DEADLINE_MS = 2_000;

export interface MemberAllowlist {
  allows(clientAddress: string | undefined): Promise<boolean>;
}

/**
 * `restapi.allowlist_include_members`: admits the addresses of the hosts in the members' `api_url`, read from the DCS
 * view at each check (as the reference does, so a member that joins is admitted at once and one that left no longer
 * is). Host names are resolved with a deadline and their answers kept RESOLVED_TTL_MS, so a slow resolver cannot hold
 * every unsafe request; a host that cannot be resolved is reported through `warn` once per TTL and admits no one.
 */
export function memberAllowlist(
  memberApiUrls: MemberApiUrls,
  warn: (message: string) => void,
  resolve: HostResolver = systemResolver,
): MemberAllowlist {
  const resolved = new Map<string, { addresses: string[]; until: number }>();

  const addressesOf = async (host: string): Promise<string[]> => {
    if (isIP(host)) return [host];
    const cached = resolved.get(host);
    if (cached && cached.until > performance.now()) return cached.addresses;
    let addresses: string[] = [];
    let timer: NodeJS.Timeout | undefined;
    try {
      const deadline = new Promise<never>((_resolve, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${RESOLVE_DEADLINE_MS} ms`)), RESOLVE_DEADLINE_MS);
      });
      addresses = (await Promise.race([resolve(host), deadline])).map(unmapIpv4);
    } catch (error) {
      warn(`restapi.allowlist_include_members: cannot resolve member host "${host}": ${errorText(error)}`);
    } finally {
      clearTimeout(timer);
    }
    resolved.set(host, { addresses, until: performance.now() + RESOLVED_TTL_MS });
    return addresses;
  };

  return {
    allows: async (clientAddress) => {
      if (!clientAddress) return false;
      const client = unmapIpv4(clientAddress);
      const hosts = new Set(
        memberApiUrls()
          .map(hostOf)
          .filter((host): host is string => host !== null),
      );
      for (const host of hosts) {
        if ((await addressesOf(host)).some((address) => sameAddress(address, client))) return true;
      }
      return false;
    },
  };
}

/** The host of an `api_url` (brackets of an IPv6 literal removed), or null when it is not a URL. */
function hostOf(apiUrl: string): string | null {
  try {
    const host = new URL(apiUrl).hostname.replace(/^\[|\]$/g, '');
    return host === '' ? null : host;
  } catch {
    return null;
  }
}

/** Compared as addresses, not text (`::1` and `0:0::1` are one address). */
function sameAddress(a: string, b: string): boolean {
  const family = isIP(a);
  if (family === 0 || family !== isIP(b)) return false;
  const list = new BlockList();
  list.addAddress(a, family === 6 ? 'ipv6' : 'ipv4');
  return list.check(b, family === 6 ? 'ipv6' : 'ipv4');
}
