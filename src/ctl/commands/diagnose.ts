import { memberBase, statusPath } from '../target';
import { cell, renderData, renderTable } from '../format';
import { Ctl, readCluster } from '../context';

/** `GET /stator/diagnostics`: @nestjs/terminus's health-check result. */
export interface Diagnostics {
  status: 'ok' | 'error' | 'shutting_down';
  info?: Record<string, IndicatorResult>;
  error?: Record<string, IndicatorResult>;
  details?: Record<string, IndicatorResult>;
}

export interface IndicatorResult {
  status: 'up' | 'down' | string;
  [field: string]: unknown;
}

/** One member's diagnostics: the document, `unavailable` (404: an agent without the endpoint) or the error. */
export type MemberDiagnostics =
  | { member: string; kind: 'ok'; status: number; diagnostics: Diagnostics }
  | { member: string; kind: 'unavailable' }
  | { member: string; kind: 'unreachable'; error: string };

/** The rows of the table: member, indicator, status, its other fields as `key: value`. */
export function diagnosticsRows(results: MemberDiagnostics[]): string[][] {
  const rows: string[][] = [];
  for (const result of results) {
    if (result.kind === 'unavailable') rows.push([result.member, '', '', 'not available (older agent)']);
    else if (result.kind === 'unreachable') rows.push([result.member, '', 'unreachable', result.error]);
    else {
      const details = result.diagnostics.details ?? { ...result.diagnostics.info, ...result.diagnostics.error };
      const entries = Object.entries(details);
      if (entries.length === 0) rows.push([result.member, '', result.diagnostics.status, '']);
      for (const [indicator, { status, ...fields }] of entries)
        rows.push([result.member, indicator, String(status), cell(fields)]);
    }
  }
  return rows;
}

/**
 * `diagnose` (`doctor`): every member's `<status path>/diagnostics` (`/stator/diagnostics`,
 * `/patroni/diagnostics` in compat mode); exit 1 when a member reports an error or cannot be read.
 */
export async function diagnose(ctl: Ctl): Promise<number> {
  const cluster = await readCluster(ctl.client);
  const results = await Promise.all(
    cluster.members.map(async (member): Promise<MemberDiagnostics> => {
      if (!member.api_url) return { member: member.name, kind: 'unreachable', error: 'no api_url in its member key' };
      const client = ctl.client.forBase(memberBase(member.api_url));
      try {
        const answer = await client.send('GET', `${statusPath(member.api_url)}/diagnostics`);
        if (answer.status === 404) return { member: member.name, kind: 'unavailable' };
        // terminus answers 503 with the same document when an indicator is down.
        const diagnostics = JSON.parse(answer.text) as Diagnostics;
        if (typeof diagnostics !== 'object' || diagnostics === null || typeof diagnostics.status !== 'string')
          throw new Error(`HTTP ${answer.status}: not a diagnostics document`);
        return { member: member.name, kind: 'ok', status: answer.status, diagnostics };
      } catch (error) {
        return { member: member.name, kind: 'unreachable', error: (error as Error).message };
      }
    }),
  );
  if (ctl.line.format !== 'table') {
    const data = results.map((result) =>
      result.kind === 'ok'
        ? { member: result.member, ...result.diagnostics }
        : result.kind === 'unavailable'
          ? { member: result.member, status: 'not available (older agent)' }
          : { member: result.member, status: 'unreachable', error: result.error },
    );
    ctl.io.stdout(renderData(data, ctl.line.format));
  } else {
    ctl.io.stdout(
      renderTable({
        title: `Cluster: ${cluster.scope}`,
        columns: ['Member', 'Indicator', 'Status', 'Details'],
        rows: diagnosticsRows(results),
      }),
    );
  }
  const bad = results.some(
    (result) => result.kind === 'unreachable' || (result.kind === 'ok' && result.diagnostics.status !== 'ok'),
  );
  return bad ? 1 : 0;
}
