import { createSocket, Socket } from 'node:dgram';

/**
 * SRV records a test's DNS server serves: name -> targets as `host:port`. No A records: a client
 * connects to a target through the system's resolver (getaddrinfo), as Patroni does, so targets
 * are names it knows (localhost) or addresses.
 */
export interface DnsZone {
  srv: Record<string, string[]>;
}

export interface DnsServerHandle {
  /** `127.0.0.1:<port>`, for Resolver.setServers. */
  address: string;
  /** Every question asked, as `TYPE name`, in order. */
  questions: string[];
  close(): Promise<void>;
}

const TYPE_SRV = 33;
const CLASS_IN = 1;
const RCODE_NXDOMAIN = 3;

/**
 * A DNS server over UDP on a free loopback port that answers SRV questions from `zone`
 * (NXDOMAIN for the rest), or with `silent`, answers nothing at all (a DNS server that is down).
 */
export async function startDnsServer(zone: DnsZone, options: { silent?: boolean } = {}): Promise<DnsServerHandle> {
  const socket: Socket = createSocket('udp4');
  const questions: string[] = [];
  socket.on('message', (query, peer) => {
    const question = readQuestion(query);
    if (!question) return;
    questions.push(`${question.type === TYPE_SRV ? 'SRV' : `type ${question.type}`} ${question.name}`);
    if (options.silent) return;
    const targets = question.type === TYPE_SRV ? zone.srv[question.name] : undefined;
    const answers = (targets ?? []).map(srvData);
    const known = targets !== undefined;
    socket.send(
      response(query, question.end, question.type, answers, known ? 0 : RCODE_NXDOMAIN),
      peer.port,
      peer.address,
    );
  });
  // Port 0: the kernel picks a free UDP port.
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  return {
    address: `127.0.0.1:${socket.address().port}`,
    questions,
    close: () => new Promise((resolve) => socket.close(() => resolve())),
  };
}

function readQuestion(query: Buffer): { name: string; type: number; end: number } | undefined {
  if (query.length < 17) return undefined;
  const labels: string[] = [];
  let offset = 12;
  while (offset < query.length && query[offset] !== 0) {
    const length = query[offset];
    labels.push(query.subarray(offset + 1, offset + 1 + length).toString('ascii'));
    offset += 1 + length;
  }
  if (offset + 5 > query.length) return undefined;
  return { name: labels.join('.').toLowerCase(), type: query.readUInt16BE(offset + 1), end: offset + 5 };
}

function encodeName(name: string): Buffer {
  const parts = name
    .replace(/\.$/, '')
    .split('.')
    .map((label) => Buffer.concat([Buffer.from([label.length]), Buffer.from(label, 'ascii')]));
  return Buffer.concat([...parts, Buffer.from([0])]);
}

function srvData(target: string): Buffer {
  const [host, port] = target.split(':');
  const fixed = Buffer.alloc(6);
  fixed.writeUInt16BE(0, 0); // priority
  fixed.writeUInt16BE(0, 2); // weight
  fixed.writeUInt16BE(Number(port), 4);
  return Buffer.concat([fixed, encodeName(host)]);
}

/** The query's header and question, then each answer naming the question (a pointer to offset 12). */
function response(query: Buffer, questionEnd: number, type: number, answers: Buffer[], rcode: number): Buffer {
  const header = Buffer.from(query.subarray(0, 12));
  header.writeUInt16BE(0x8180 | rcode, 2); // a response, recursion desired and available
  header.writeUInt16BE(1, 4);
  header.writeUInt16BE(answers.length, 6);
  header.writeUInt16BE(0, 8);
  header.writeUInt16BE(0, 10);
  const records = answers.map((data) => {
    const fixed = Buffer.alloc(12);
    fixed.writeUInt16BE(0xc00c, 0);
    fixed.writeUInt16BE(type, 2);
    fixed.writeUInt16BE(CLASS_IN, 4);
    fixed.writeUInt32BE(60, 6); // TTL
    fixed.writeUInt16BE(data.length, 10);
    return Buffer.concat([fixed, data]);
  });
  return Buffer.concat([header, query.subarray(12, questionEnd), ...records]);
}
