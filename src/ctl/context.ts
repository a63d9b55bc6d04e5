import { strftime } from '../common/log-format';
import { CommandLine } from './args';
import { ApiClient } from './client';
import { Prompter } from './prompt';

/** What statorctl reads and writes besides the API: injected, so commands run in tests without a terminal. */
export interface CtlIo {
  stdout(text: string): void;
  stderr(text: string): void;
  env: NodeJS.ProcessEnv;
  prompter: Prompter;
  /** Whether stdout is a terminal (list --watch clears the screen only then). */
  isTty?: boolean;
  now?: () => number;
  /** Resolves when the person asks to stop (Ctrl-C): ends --watch and --follow. */
  interrupted?: Promise<void>;
}

/** One command's run: its command line, the node it talks to, its I/O. */
export interface Ctl {
  line: CommandLine;
  io: CtlIo;
  client: ApiClient;
}

/** The operation was refused or failed: exit code 1, the message on stderr. */
export class OperationFailed extends Error {
  override readonly name = 'OperationFailed';
}

/** A member of `GET /cluster`. */
export interface ClusterMember {
  name: string;
  role: string;
  state: string;
  api_url?: string;
  host?: string;
  port?: number;
  timeline?: number;
  lag?: number | string;
  tags?: Record<string, unknown>;
  site?: string;
  pending_restart?: boolean;
  scheduled_restart?: Record<string, unknown>;
  [extra: string]: unknown;
}

/** `GET /cluster`. */
export interface ClusterDocument {
  scope: string;
  members: ClusterMember[];
  pause?: boolean;
  scheduled_switchover?: { at: string; from?: string; to?: string };
}

export async function readCluster(client: ApiClient): Promise<ClusterDocument> {
  return client.getJson<ClusterDocument>('/cluster');
}

/** The leader's name (`leader` or `standby_leader` role), or undefined. */
export function leaderOf(cluster: ClusterDocument): string | undefined {
  return cluster.members.find((member) => member.role === 'leader' || member.role === 'standby_leader')?.name;
}

/** The members named (all when none), refusing unknown names; a first argument equal to the scope is the cluster's name, as patronictl takes it. */
export function selectMembers(cluster: ClusterDocument, names: string[]): ClusterMember[] {
  const wanted = names[0] === cluster.scope ? names.slice(1) : names;
  if (wanted.length === 0) return cluster.members;
  return wanted.map((name) => {
    const member = cluster.members.find((m) => m.name === name);
    if (!member)
      throw new OperationFailed(
        `${name} is not a member of cluster ${cluster.scope} (members: ${cluster.members.map((m) => m.name).join(', ')})`,
      );
    return member;
  });
}

/** Local time as patronictl prints it before a result: `2026-11-25 23:40:01.123`. */
export function timestamp(now: number): string {
  const date = new Date(now);
  return `${strftime('%Y-%m-%d %H:%M:%S', date)}.${String(date.getMilliseconds()).padStart(3, '0')}`;
}

/** patronictl's example time in its schedule prompts: an hour from now, `2026-11-26T00:45`. */
export function exampleTime(now: number): string {
  return strftime('%Y-%m-%dT%H:%M', new Date(now + 3600_000));
}
