/**
 * What a carrier hands back for one request to etcd: the HTTP status (the gateway's, or gRPC's
 * mapped to it) and the gateway's JSON body. A body must be read or discarded: until then the
 * connection that carries it serves nothing else.
 */
export interface EtcdAnswer {
  readonly status: number;
  /** The whole body as text (unary calls). */
  text(): Promise<string>;
  /** The body as it arrives (a watch's JSON lines). */
  chunks(): AsyncIterable<Uint8Array>;
  /** Drops the body unread. */
  discard(): Promise<void>;
}

export function isSuccess(answer: EtcdAnswer): boolean {
  return answer.status >= 200 && answer.status < 300;
}

/** A complete answer held in memory (gRPC's unary calls and errors). */
export function jsonAnswer(status: number, value: unknown): EtcdAnswer {
  const text = JSON.stringify(value);
  return {
    status,
    text: () => Promise.resolve(text),
    chunks: async function* () {
      yield Buffer.from(text);
    },
    discard: () => Promise.resolve(),
  };
}

/** An answer whose body is a stream of lines still arriving (gRPC's watch). */
export function streamAnswer(status: number, body: ReadableStream<Uint8Array>): EtcdAnswer {
  return {
    status,
    text: () => new Response(body).text(),
    chunks: () => body as unknown as AsyncIterable<Uint8Array>,
    discard: () => body.cancel(),
  };
}
