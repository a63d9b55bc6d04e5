import * as http from 'node:http';
import * as https from 'node:https';
import { RestApiConfig } from '../../config/config.types';
import { CtlConfig } from '../../config/ctl-config';
import { peerTransport, ProbeTransport } from '../peer-probe';

/** How long a member may take to answer a failsafe call (the reference: 2 s). */
export const FAILSAFE_CALL_TIMEOUT_MS = 2_000;

/** What a leader sends to each member while the DCS is down: who it is and where it is. */
export interface FailsafeCall {
  name: string;
  conn_url: string;
  api_url: string;
  /** The leader's slot positions, as in `/status`: replicas keep their copies in step while the DCS is down. */
  slots?: Record<string, number>;
}

/** A member's answer: accepted on 200 `Accepted`; `lsn`, its received/replayed WAL position, when it sent one. */
export interface FailsafeAnswer {
  accepted: boolean;
  answer: string;
  lsn?: number;
}

/** `POST /failsafe` to one member. */
export type FailsafeCaller = (apiUrl: string, call: FailsafeCall) => Promise<FailsafeAnswer>;

/**
 * The `lsn` header of a member's answer (the reference's: a decimal byte position), or undefined when
 * absent or not a positive integer: a garbled header must not move a slot.
 */
export function lsnHeader(value: string | string[] | undefined): number | undefined {
  if (typeof value !== 'string' || !/^\d{1,20}$/.test(value.trim())) return undefined;
  const lsn = Number(value.trim());
  return Number.isSafeInteger(lsn) && lsn > 0 ? lsn : undefined;
}

/** The member's `/failsafe` endpoint from its member-key API URL (`http://h:p/patroni` → `http://h:p/failsafe`). */
export function failsafeUrl(apiUrl: string): string {
  const url = new URL(apiUrl);
  url.pathname = '/failsafe';
  url.search = '';
  return url.toString();
}

export function createFailsafeCaller(restapi: RestApiConfig, ctl?: CtlConfig): FailsafeCaller {
  const transport = peerTransport(restapi, ctl);
  return async (apiUrl, call) => {
    try {
      const { status, body, lsn } = await postJson(failsafeUrl(apiUrl), call, transport);
      const accepted = status === 200 && body === 'Accepted';
      return { accepted, answer: `${status} ${body.slice(0, 200)}`, ...(accepted && lsn !== undefined ? { lsn } : {}) };
    } catch (error) {
      return { accepted: false, answer: (error as Error).message };
    }
  };
}

function postJson(
  url: string,
  payload: unknown,
  transport: ProbeTransport,
): Promise<{ status: number; body: string; lsn?: number }> {
  return new Promise((resolve, reject) => {
    const target = new URL(url);
    const body = JSON.stringify(payload);
    const options: http.RequestOptions = {
      method: 'POST',
      headers: { ...transport.headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      signal: AbortSignal.timeout(FAILSAFE_CALL_TIMEOUT_MS),
      ...(target.protocol === 'https:' ? { agent: transport.httpsAgent } : { agent: false }),
    };
    const request = (target.protocol === 'https:' ? https : http).request(target, options, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () =>
        resolve({
          status: response.statusCode ?? 0,
          body: Buffer.concat(chunks).toString('utf8'),
          lsn: lsnHeader(response.headers.lsn),
        }),
      );
      response.on('close', () => reject(new Error('connection closed before the end of the answer')));
      response.on('error', reject);
    });
    request.on('error', reject);
    request.end(body);
  });
}
