import { Dcs } from '../dcs/dcs.port';
import { PeerProbe } from './peer-probe';

/**
 * Whether another agent already runs under this node's name (the reference refuses to start then:
 * two agents on one member key would overwrite each other's state). A member key with this name
 * and another API address (host and port) whose API answers means a live namesake; a key with our
 * own address is this node's previous life, or the Patroni agent it replaces in a rolling migration. When the DCS cannot be read, the check is skipped: the HA loop waits
 * for the DCS anyway.
 */
export async function namesakeIsRunning(dcs: Dcs, probe: PeerProbe, name: string, ownApiUrl: string): Promise<boolean> {
  const cluster = await dcs.read().catch(() => null);
  const member = cluster?.members.find((m) => m.name === name);
  if (!member?.data.api_url || sameAddress(member.data.api_url, ownApiUrl)) return false;
  return (await probe(name, member.data.api_url)).reachable;
}

/** Same host and port: the path differs between compatibility modes (`/patroni`, `/stator`), the agent does not. */
function sameAddress(a: string, b: string): boolean {
  try {
    return new URL(a).host === new URL(b).host;
  } catch {
    return a === b;
  }
}
