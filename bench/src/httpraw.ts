/**
 * Plain node:http for (10) attacks: a 2025-era Streamable HTTP client with no SDK (the attacker: as
 * fast as the wire goes, every outcome counted by its code), and a `fetch` bound to a local address
 * for the SDK client of the victim (Linux routes all of 127.0.0.0/8 to loopback, so 127.0.0.2 is
 * another client to a server that tells clients apart by their address).
 */
import { Agent, request } from 'node:http';
import { Readable } from 'node:stream';

export const PROTOCOL_2025 = '2025-06-18';

type Message = Record<string, any>;

export interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** The JSON-RPC messages of the body (SSE `data:` lines or a JSON body). */
  messages: Message[];
}

/** The JSON-RPC messages of a response body (`text/event-stream` or JSON). */
export function parseBody(contentType: string | undefined, text: string): Message[] {
  if (!text) return [];
  if (contentType?.includes('text/event-stream')) {
    const out: Message[] = [];
    for (const line of text.split('\n'))
      if (line.startsWith('data:')) {
        const data = line.slice(5).trim();
        if (data) out.push(JSON.parse(data) as Message);
      }
    return out;
  }
  try {
    const v = JSON.parse(text) as Message | Message[];
    return Array.isArray(v) ? v : [v];
  } catch {
    return [];
  }
}

/**
 * What an answer was, in a word: `ok`, or the refusal: `HTTP <status> <data.code> <data.reason>` for a
 * transport-level refusal, `<JSON-RPC code> <data.code>` for an error, `isError <code>` for a tool
 * result that failed (the code from `structuredContent`).
 */
export function outcome(a: Answer, id?: number): string {
  const m = a.messages.find((x) => x.id === id && ('result' in x || 'error' in x)) ?? a.messages[0];
  if (a.status >= 400)
    return `HTTP ${a.status} ${m?.error?.data?.code ?? m?.error?.code ?? ''} ${m?.error?.data?.reason ?? ''}`.trim();
  if (!m) return a.status === 202 ? 'ok' : `HTTP ${a.status} no message`;
  if (m.error) return `${m.error.code} ${m.error.data?.code ?? ''}`.trim();
  if (m.result?.isError) return `isError ${m.result.structuredContent?.code ?? 'error'}`;
  return 'ok';
}

/** A client of one MCP endpoint over keep-alive connections from one local address. */
export class RawHttp {
  private readonly agent: Agent;
  private nextId = 1;

  constructor(
    readonly url: URL,
    readonly localAddress = '127.0.0.1',
    maxSockets = 64,
  ) {
    this.agent = new Agent({ keepAlive: true, maxSockets });
  }

  /** POST one JSON-RPC message; resolves with the whole answer (the SSE stream of a call ends with it). */
  post(body: Message, sessionId?: string): Promise<Answer> {
    const payload = JSON.stringify(body);
    return new Promise((resolve, reject) => {
      const req = request(
        this.url,
        {
          method: 'POST',
          agent: this.agent,
          localAddress: this.localAddress,
          headers: {
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
            'content-length': Buffer.byteLength(payload),
            ...(sessionId ? { 'mcp-session-id': sessionId, 'mcp-protocol-version': PROTOCOL_2025 } : {}),
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            let messages: Message[] = [];
            try {
              messages = parseBody(res.headers['content-type'], text);
            } catch {
              // a body cut short: no message
            }
            resolve({ status: res.statusCode ?? 0, headers: res.headers, messages });
          });
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(payload);
    });
  }

  /** A request with a fresh id. */
  async call(method: string, params: Message, sessionId?: string): Promise<{ answer: Answer; outcome: string }> {
    const id = this.nextId++;
    const answer = await this.post({ jsonrpc: '2.0', id, method, params }, sessionId);
    return { answer, outcome: outcome(answer, id) };
  }

  /** `initialize` + `notifications/initialized`: the session id, or the refusal's outcome. */
  async open(): Promise<{ sessionId: string } | { refused: string }> {
    const { answer, outcome: o } = await this.call('initialize', {
      protocolVersion: PROTOCOL_2025,
      capabilities: {},
      clientInfo: { name: 'attacker', version: '1.0.0' },
    });
    const sessionId = answer.headers['mcp-session-id'];
    if (o !== 'ok' || typeof sessionId !== 'string') return { refused: o };
    await this.post({ jsonrpc: '2.0', method: 'notifications/initialized' }, sessionId);
    return { sessionId };
  }

  close(): void {
    this.agent.destroy();
  }
}

/**
 * A `fetch` (enough of one for the SDK's Streamable HTTP client) over node:http from `localAddress`:
 * requests keep-alive, responses stream.
 */
export function boundFetch(localAddress: string): typeof fetch {
  const agent = new Agent({ keepAlive: true });
  return ((input: string | URL | Request, init?: RequestInit) =>
    new Promise<Response>((resolve, reject) => {
      const url = new URL(typeof input === 'string' || input instanceof URL ? input : input.url);
      const headers: Record<string, string> = {};
      new Headers(init?.headers).forEach((v, k) => {
        headers[k] = v;
      });
      const req = request(
        url,
        {
          method: init?.method ?? 'GET',
          headers,
          agent,
          localAddress,
          ...(init?.signal ? { signal: init.signal } : {}),
        },
        (res) => {
          const h = new Headers();
          for (const [k, v] of Object.entries(res.headers))
            if (v !== undefined) h.set(k, Array.isArray(v) ? v.join(', ') : v);
          const status = res.statusCode ?? 0;
          const empty = status === 204 || status === 304 || init?.method === 'HEAD';
          if (empty) res.resume();
          resolve(
            new Response(empty ? null : (Readable.toWeb(res) as ReadableStream<Uint8Array>), {
              status,
              statusText: res.statusMessage ?? '',
              headers: h,
            }),
          );
        },
      );
      req.on('error', reject);
      req.end(typeof init?.body === 'string' ? init.body : undefined);
    })) as typeof fetch;
}
