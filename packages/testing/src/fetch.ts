/** SDK-free helpers shared by the v1 and v2 test kits: a fetch that records the wire. */
import type { StreamTag, WireLog } from './wire.js';

/** Options of {@link recordingFetch}. */
export interface RecordingFetchOptions {
  /** Also record the JSON-RPC messages of each POST body as `client->server` (the v1 HTTP kit records them at the transport instead). */
  recordRequests?: boolean;
}

/**
 * A fetch that records server→client JSON-RPC messages with the HTTP stream that carried them
 * (`post` with the request ids of its POST body, `get`, or `json`), by reading a tee of the body.
 */
export function recordingFetch(wire: WireLog, base: typeof fetch, options: RecordingFetchOptions = {}): typeof fetch {
  return async (input, init) => {
    const method = (init?.method ?? (input instanceof Request ? input.method : 'GET')).toUpperCase();
    let bodyMessages: Array<Record<string, unknown>> = [];
    if (method === 'POST' && typeof init?.body === 'string') {
      try {
        const body = JSON.parse(init.body);
        bodyMessages = Array.isArray(body) ? body : [body];
      } catch {
        /* not JSON */
      }
      if (options.recordRequests) for (const m of bodyMessages) wire.record('client->server', m);
    }
    const res = await base(input, init);
    const type = res.headers.get('content-type') ?? '';
    let tag: StreamTag | undefined;
    if (method === 'POST') {
      const ids = bodyMessages.filter((m) => m && m.id !== undefined && m.method).map((m) => m.id as string | number);
      tag = type.includes('text/event-stream') ? { kind: 'post', requestIds: ids } : { kind: 'json' };
    } else if (method === 'GET') tag = { kind: 'get' };
    if (!tag || !res.body) return res;
    if (tag.kind === 'json') {
      const clone = res.clone();
      void clone.text().then((t) => {
        try {
          const body = JSON.parse(t);
          for (const m of Array.isArray(body) ? body : [body]) wire.record('server->client', m, tag);
        } catch {
          /* empty or not JSON */
        }
      });
      return res;
    }
    const [a, b] = res.body.tee();
    void readSse(b, (data) => {
      try {
        wire.record('server->client', JSON.parse(data), tag);
      } catch {
        /* priming event or keep-alive */
      }
    });
    return new Response(a, { status: res.status, statusText: res.statusText, headers: res.headers });
  };
}

/** Read an SSE stream and call `onData` with each event's `data`. Resolves when the stream ends or fails. */
export async function readSse(stream: ReadableStream<Uint8Array>, onData: (data: string) => void): Promise<void> {
  const reader = stream.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += value;
      for (let idx = buf.search(/\r?\n\r?\n/); idx >= 0; idx = buf.search(/\r?\n\r?\n/)) {
        const block = buf.slice(0, idx);
        buf = buf.slice(idx).replace(/^\r?\n\r?\n/, '');
        const data = block
          .split(/\r?\n/)
          .filter((l) => l.startsWith('data:'))
          .map((l) => l.slice(5).replace(/^ /, ''))
          .join('\n');
        if (data) onData(data);
      }
    }
  } catch {
    /* stream aborted */
  }
}
