import * as http from 'node:http';
import * as https from 'node:https';
import { basicAuthorizationHeader } from '../security/basic-auth';
import { peerTlsOptions } from '../security/tls';
import { RestApiConfig } from '../config/config.types';
import { CtlConfig } from '../config/ctl-config';
import { PeerReading } from './cluster-snapshot';

/** How long a peer may take to answer during the leader race (reference: 2 s, no retry). */
export const PEER_PROBE_TIMEOUT_MS = 2_000;

export type PeerProbe = (name: string, apiUrl: string) => Promise<PeerReading>;

/** How a probe reaches peers: the HTTPS agent (trusted CA, client certificate) and extra headers. */
export interface ProbeTransport {
  httpsAgent: https.Agent;
  headers: Record<string, string>;
}

/**
 * Probes peers with this node's REST API settings: over HTTPS it trusts `cafile` and presents the node's certificate
 * when `verify_client` is set; with `authentication` it sends the basic-auth header, as the reference does on every
 * call to a member. Certificate files are read once, here.
 */
export function createPeerProbe(restapi: RestApiConfig, ctl?: CtlConfig): PeerProbe {
  return peerProbe(peerTransport(restapi, ctl));
}

/** This node's way to its peers' APIs: its CA, certificate and credentials (`ctl`'s first, as Patroni's agent). */
export function peerTransport(restapi: RestApiConfig, ctl: CtlConfig = {}): ProbeTransport {
  const credentials = ctl.authentication ?? restapi.authentication;
  const headers: Record<string, string> = credentials ? { authorization: basicAuthorizationHeader(credentials) } : {};
  return { httpsAgent: newAgent(peerTlsOptions(restapi, ctl)), headers };
}

/** Reads a peer's status document (`GET <api_url>`) without credentials; any failure means unreachable. */
export const probePeerOverHttp: PeerProbe = peerProbe({ httpsAgent: newAgent({}), headers: {} });

/**
 * One connection per probe: probes only run during leader races, and a reused keep-alive socket the peer has just
 * closed would make a healthy peer look unreachable.
 */
function newAgent(tls: https.AgentOptions): https.Agent {
  return new https.Agent({ ...tls, keepAlive: false });
}

function peerProbe(transport: ProbeTransport): PeerProbe {
  return async (name, apiUrl) => {
    try {
      return readingFromStatus(name, (await getJson(apiUrl, transport)) as PeerStatus);
    } catch {
      return { name, reachable: false };
    }
  };
}

export interface PeerStatus {
  role?: string;
  timeline?: number;
  tags?: Record<string, unknown>;
  xlog?: { location?: number; received_location?: number; replayed_location?: number };
  watchdog_failed?: boolean;
  site?: string;
}

/** What a peer's status document says to the leader race. */
export function readingFromStatus(name: string, status: PeerStatus): PeerReading {
  if (!status.xlog) return { name, reachable: false };
  const isPrimary = status.xlog.location !== undefined || status.role === 'primary' || status.role === 'master';
  const walPosition = isPrimary
    ? (status.xlog.location ?? 0)
    : Math.max(status.xlog.received_location ?? 0, status.xlog.replayed_location ?? 0);
  const reading: PeerReading = {
    name,
    reachable: true,
    role: status.role,
    isPrimary,
    walPosition,
    timeline: status.timeline,
    tags: status.tags,
  };
  if (status.watchdog_failed === true) reading.watchdogFailed = true;
  if (typeof status.site === 'string' && status.site !== '') reading.site = status.site;
  return reading;
}

/** `GET url` and its JSON body, whatever the status code (a 503 still carries the status document); fails after the timeout. */
function getJson(url: string, transport: ProbeTransport): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const target = new URL(url);
    const options: http.RequestOptions = {
      headers: transport.headers,
      signal: AbortSignal.timeout(PEER_PROBE_TIMEOUT_MS),
      ...(target.protocol === 'https:' ? { agent: transport.httpsAgent } : { agent: false }),
    };
    const request = (target.protocol === 'https:' ? https : http).get(target, options, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => {
        try {
          resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')));
        } catch (error) {
          reject(error);
        }
      });
      // An abort (the timeout) in the middle of the body ends the response without 'end'.
      response.on('close', () => reject(new Error('connection closed before the end of the answer')));
      response.on('error', reject);
    });
    request.on('error', reject);
  });
}
