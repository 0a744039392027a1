/** Real clients of both SDK lines over real HTTP, and raw 2026-07-28 requests. */
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from '@modelcontextprotocol/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

export type Elicit = (params: { message: string; requestedSchema: unknown }) => {
  action: 'accept' | 'decline' | 'cancel';
  content?: Record<string, unknown>;
};

/** An SDK 1.x client in a 2025-era session (declares form elicitation when `elicit` is given). */
export async function v1Client(url: URL, elicit?: Elicit) {
  const client = new Client(
    { name: 'v1-test', version: '0' },
    elicit ? { capabilities: { elicitation: { form: {} } } } : {},
  );
  if (elicit) client.setRequestHandler(ElicitRequestSchema, async (r) => elicit(r.params as never));
  const transport = new StreamableHTTPClientTransport(url);
  await client.connect(transport);
  return { client, transport };
}

/** An SDK 2.x client pinned to 2026-07-28 (stateless requests; answers input_required with `elicit`). */
export async function v2Client(url: URL, elicit?: Elicit) {
  const client = new ClientV2({ name: 'v2-test', version: '0' }, {
    ...(elicit && { capabilities: { elicitation: { form: {} } } }),
    versionNegotiation: { mode: { pin: '2026-07-28' } },
  } as never);
  if (elicit) client.setRequestHandler('elicitation/create', async (r) => elicit(r.params as never) as never);
  await client.connect(new TransportV2(url));
  return client;
}

export const textOf = (result: unknown): string | undefined =>
  (result as { content?: Array<{ text?: string }> }).content?.[0]?.text;

export const META26 = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '0' },
};

/** One raw 2026-07-28 request (no SDK client): POST, then every JSON-RPC message of the SSE or JSON answer. */
export async function raw26(
  url: URL,
  method: string,
  params: Record<string, unknown>,
  meta: Record<string, unknown> = {},
  fetchImpl: (url: URL, init: RequestInit) => Promise<Response> = fetch,
): Promise<{ status: number; messages: Array<Record<string, any>>; response: Record<string, any> | undefined }> {
  const res = await fetchImpl(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': method,
      ...(typeof (params.name ?? params.taskId) === 'string' && { 'mcp-name': String(params.name ?? params.taskId) }),
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: { ...params, _meta: { ...META26, ...meta } } }),
  });
  const text = await res.text();
  const messages = (res.headers.get('content-type') ?? '').includes('text/event-stream')
    ? text
        .split('\n')
        .filter((l) => l.startsWith('data:'))
        .map((l) => l.slice(5).trim())
        .filter(Boolean)
        .map((d) => JSON.parse(d))
    : text
      ? [JSON.parse(text)]
      : [];
  return { status: res.status, messages, response: messages.find((m) => m.id === 1 && m.method === undefined) };
}

/** Poll `pred` every 10 ms, up to `ms`. */
export async function until(pred: () => boolean, ms = 10_000, what = 'condition'): Promise<void> {
  const end = Date.now() + ms;
  while (!pred()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
