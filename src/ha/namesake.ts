import { Dcs } from '../dcs/dcs.port';
import { PeerProbe } from './peer-probe';

/**
 * Whether another agent already runs under this node's name (the reference refuses to start then:
 * two agents on one member key would overwrite each other's state): the member key of this name
 * points at an API that answers. Run before this agent's own API listens, so an answer at this
 * node's own address is another process too (a second agent given another `listen` but the same
 * `connect_address`), and this node's previous life, or the Patroni agent it replaces in a rolling
 * migration, answers nothing. When the DCS cannot be read, the check is skipped: the HA loop waits
 * for the DCS anyway.
 */
export async function namesakeIsRunning(dcs: Dcs, probe: PeerProbe, name: string): Promise<boolean> {
  const cluster = await dcs.read().catch(() => null);
  const member = cluster?.members.find((m) => m.name === name);
  if (!member?.data.api_url) return false;
  return (await probe(name, member.data.api_url)).reachable;
}
