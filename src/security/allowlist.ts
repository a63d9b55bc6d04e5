import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';
import { errorText } from '../common/error-text';

/** The addresses allowed to call the unsafe endpoints (`restapi.allowlist`). */
export interface Allowlist {
  allows(clientAddress: string | undefined): boolean;
}

/** Resolves a host name to all its addresses; replaceable in tests. */
export type HostResolver = (host: string) => Promise<string[]>;

export const systemResolver: HostResolver = async (host) =>
  (await lookup(host, { all: true })).map((entry) => entry.address);

/**
 * Builds the allowlist from CIDRs, IPs and host names. Host names are resolved once, here (the reference resolves
 * them when the configuration is loaded too). An entry that cannot be used is reported through `warn` and skipped, so
 * an allowlist whose every entry is bad denies everyone rather than no one.
 */
export async function resolveAllowlist(
  entries: string[],
  warn: (message: string) => void,
  resolve: HostResolver = systemResolver,
): Promise<Allowlist> {
  const allowed = new BlockList();
  for (const entry of entries) {
    try {
      if (entry.includes('/')) {
        addNetwork(allowed, entry);
      } else if (isIP(entry)) {
        addAddress(allowed, entry);
      } else {
        const addresses = await resolve(entry);
        for (const address of addresses) addAddress(allowed, address);
      }
    } catch (error) {
      warn(`restapi.allowlist: ignoring "${entry}": ${errorText(error)}`);
    }
  }
  return {
    allows: (clientAddress) => {
      if (!clientAddress) return false;
      const address = unmapIpv4(clientAddress);
      return allowed.check(address, isIP(address) === 6 ? 'ipv6' : 'ipv4');
    },
  };
}

function addNetwork(allowed: BlockList, cidr: string): void {
  const [network, prefixText] = cidr.split('/');
  const address = unmapIpv4(network);
  const family = isIP(address);
  const prefix = Number(prefixText);
  if (family === 0 || prefixText === '' || !Number.isInteger(prefix)) throw new Error('not a network (address/prefix)');
  // Host bits may be set ("10.1.2.3/8"), as the reference's ip_network(strict=False) allows: BlockList masks them.
  allowed.addSubnet(address, prefix, family === 6 ? 'ipv6' : 'ipv4');
}

function addAddress(allowed: BlockList, address: string): void {
  const plain = unmapIpv4(address);
  allowed.addAddress(plain, isIP(plain) === 6 ? 'ipv6' : 'ipv4');
}

/** A dual-stack socket reports IPv4 clients as `::ffff:a.b.c.d`; allowlists are written with `a.b.c.d`. */
export function unmapIpv4(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  return mapped ? mapped[1] : address;
}
