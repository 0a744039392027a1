/**
 * Hardening of the SDKs' `StdioServerTransport` (`@modelcontextprotocol/sdk` 1.x and
 * `@modelcontextprotocol/server` 2.x), applied by `tether()` when the server connects to one, and
 * exported as {@link hardenStdio} for transports tether does not see connecting (v2 `serveStdio`).
 *
 * What the SDK transports get wrong, and what changes (spec `basic/transports#stdio`, JSON-RPC 2.0 §5):
 * - a line that is not JSON, or JSON that is not a JSON-RPC message (bad `jsonrpc`, an id that is
 *   neither a string nor an integer, a non-string `method`, non-object `params`, a batch) was
 *   reported to `onerror` only and never answered, so the client waited out its timeout. It is now
 *   answered: `-32700` (parse error) with `id: null`, `-32600` (invalid request) with the request's
 *   id when it is a valid id, `null` otherwise. A malformed *response* from the client is reported
 *   to `onerror` only (JSON-RPC never answers a response). Blank lines carry no message: skipped.
 * - a line longer than the transport's `maxBufferSize` (the SDK's default: 10 MiB) closed the
 *   transport, and with it the process, silently with exit code 0. It is now discarded up to its
 *   newline and refused with `-32600` and `id: null` (its id cannot be read without reading it);
 *   the transport keeps serving the next lines.
 * - SDK 1.x does not notice the end of stdin (the client went away): calls kept running and
 *   writing. The transport now closes when stdin ends or closes, or when stdout fails (`EPIPE`):
 *   calls in flight abort with reason `disconnect` (`Disconnected`), and nothing more is written
 *   (a send after close rejects). SDK 2.x already closes on stdin end; the same rules apply.
 */
import { isRequestId, jsonRpcProblem } from '../jsonrpc.js';

/** The SDK's per-transport line buffer (same shape on both SDK lines). */
interface ReadBufferLike {
  _maxBufferSize?: number;
  append(chunk: Buffer): void;
  readMessage(): unknown;
  clear(): void;
}

interface Stream {
  on(event: string, fn: (...a: any[]) => void): unknown;
  off(event: string, fn: (...a: any[]) => void): unknown;
  readableEnded?: boolean;
  destroyed?: boolean;
}

/** Structural view of an SDK `StdioServerTransport` (1.x and 2.x), before `start()`. */
interface StdioLike {
  _stdin: Stream;
  _stdout: Stream;
  _readBuffer: ReadBufferLike;
  _ondata: (chunk: Buffer | string) => void;
  _started?: boolean;
  onmessage?: (message: unknown) => void;
  onerror?: (error: Error) => void;
  start(): Promise<void>;
  close(): Promise<void>;
  send(message: unknown, options?: unknown): Promise<void>;
}

const HARDENED = Symbol.for('mcp-tether.stdio-hardened');
/** The SDKs' default line limit (`STDIO_DEFAULT_MAX_BUFFER_SIZE`), in bytes. */
const DEFAULT_MAX_LINE = 10 * 1024 * 1024;
const NEWLINE = 0x0a;

function isStream(v: unknown): v is Stream {
  return typeof (v as Stream | undefined)?.on === 'function' && typeof (v as Stream).off === 'function';
}

/** True when `transport` is an SDK `StdioServerTransport` (either line) that has not started yet. */
export function isSdkStdioTransport(transport: unknown): boolean {
  const t = transport as Partial<StdioLike> | undefined;
  return (
    !!t &&
    isStream(t._stdin) &&
    isStream(t._stdout) &&
    typeof t._ondata === 'function' &&
    typeof t._readBuffer?.append === 'function' &&
    typeof t._readBuffer.readMessage === 'function' &&
    typeof t.start === 'function' &&
    typeof t.send === 'function' &&
    typeof t.close === 'function'
  );
}

/**
 * Harden an SDK `StdioServerTransport` (1.x or 2.x) in place, before it starts; returns it.
 * `tether()` does this by itself when its server connects to such a transport; call it yourself
 * only for a transport tether does not see connecting, e.g. v2's
 * `serveStdio(factory, { transport: hardenStdio(new StdioServerTransport()) })`.
 * Anything else (another transport, one already started or hardened) is returned unchanged.
 *
 * After it: invalid lines are answered (`-32700` with `id: null`, `-32600` with the request's id
 * when valid, else `null`), a line over the transport's `maxBufferSize` (default 10 MiB) is
 * refused with `-32600` and skipped while the transport keeps serving, and the transport closes
 * when stdin ends or closes or stdout fails (calls in flight abort with `Disconnected`; nothing
 * more is written: a send after close rejects).
 */
export function hardenStdio<T>(transport: T): T {
  if (!isSdkStdioTransport(transport)) return transport;
  const t = transport as unknown as StdioLike & { [HARDENED]?: true };
  if (t[HARDENED] || t._started === true) return transport;
  t[HARDENED] = true;
  const h = hardened(t);
  // Lines are cut here, not by the SDK's buffer: a line over the limit is skipped, not fatal.
  t._ondata = lineReader(h);
  closeWhenGone(h);
  return transport;
}

/** One hardened transport: what its reader, its answers and its close share. */
interface Hardened {
  readonly t: StdioLike;
  readonly rb: ReadBufferLike;
  /** The line limit, in bytes (newline included): the transport's `maxBufferSize`. */
  readonly maxLine: number;
  /** The transport's own `send` (the one that still writes after close was asked for). */
  readonly send: StdioLike['send'];
  /** To the transport's `onerror`; never throws. */
  readonly report: (error: unknown) => void;
  /** Closed: nothing more is read or answered, a send rejects. */
  closed: boolean;
  /** The start of a line cut across chunks, and its length in bytes. */
  pending: Buffer[];
  pendingLength: number;
  /** Skipping an oversized line up to its newline. */
  discarding: boolean;
}

function hardened(t: StdioLike): Hardened {
  const rb = t._readBuffer;
  const maxLine = typeof rb._maxBufferSize === 'number' && rb._maxBufferSize > 0 ? rb._maxBufferSize : DEFAULT_MAX_LINE;
  const report = (error: unknown) => {
    try {
      t.onerror?.(error instanceof Error ? error : new Error(String(error)));
    } catch {
      /* a failing onerror must not stop the reader */
    }
  };
  return {
    t,
    rb,
    maxLine,
    send: t.send.bind(t),
    report,
    closed: false,
    pending: [],
    pendingLength: 0,
    discarding: false,
  };
}

/** An error answer to the client (none after close). */
function reply(h: Hardened, id: string | number | null, code: number, message: string): void {
  if (h.closed) return;
  h.send({ jsonrpc: '2.0', id, error: { code, message } }).catch(h.report);
}

function refuseOversized(h: Hardened): void {
  reply(h, null, -32600, `Invalid Request: the message exceeds the ${h.maxLine}-byte line limit and was discarded`);
}

/** The transport's `_ondata`: cuts chunks into lines, skips (and refuses) a line over the limit. */
function lineReader(h: Hardened): (chunk: Buffer | string) => void {
  const maxLine = h.maxLine;
  return (chunk: Buffer | string) => {
    const buf = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk;
    let start = 0;
    while (!h.closed) {
      const nl = buf.indexOf(NEWLINE, start);
      if (nl === -1) {
        const rest = buf.length - start;
        if (h.discarding || rest === 0) return;
        if (h.pendingLength + rest > maxLine) {
          h.pending = [];
          h.pendingLength = 0;
          h.discarding = true;
          refuseOversized(h);
          return;
        }
        h.pending.push(buf.subarray(start));
        h.pendingLength += rest;
        return;
      }
      const end = nl + 1;
      if (h.discarding) {
        h.discarding = false;
      } else if (h.pendingLength + (end - start) > maxLine) {
        // Counted with its newline, as the SDKs' ReadBuffer counts it.
        h.pending = [];
        h.pendingLength = 0;
        refuseOversized(h);
      } else {
        let line = buf.subarray(start, end);
        if (h.pendingLength !== 0) {
          line = Buffer.concat([...h.pending, line]);
          h.pending = [];
          h.pendingLength = 0;
        }
        try {
          handleLine(h, line);
        } catch (err) {
          h.report(err); // an onmessage that throws must not lose the lines after it
        }
      }
      start = end;
    }
  };
}

/** One complete line (with its newline): the SDK's own deserializer, then an answer if it refuses it. */
function handleLine(h: Hardened, line: Buffer): void {
  const rb = h.rb;
  let message: unknown;
  let failure: unknown;
  rb.clear();
  try {
    rb.append(line);
    message = rb.readMessage(); // null: SDK 2.x skips a line that is not JSON
  } catch (err) {
    failure = err;
  }
  rb.clear();
  if (message !== null && message !== undefined && failure === undefined) {
    h.t.onmessage?.(message);
    return;
  }
  const text = line.toString('utf8').trim();
  if (text === '') return; // a blank line carries no message
  answerInvalid(h, text, failure);
}

/** A non-blank line the SDK refused: answer per JSON-RPC 2.0 §5.1. */
function answerInvalid(h: Hardened, text: string, failure: unknown): void {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    h.report(err);
    reply(h, null, -32700, 'Parse error: the line is not valid JSON');
    return;
  }
  const obj = parsed as Record<string, unknown>;
  if (isPlainObject(parsed) && !('method' in obj) && ('result' in obj || 'error' in obj)) {
    // A (malformed) response from the client: JSON-RPC never answers a response.
    h.report(failure ?? new Error('invalid JSON-RPC response from the client'));
    return;
  }
  const problem = messageProblem(parsed);
  h.report(failure ?? new Error(problem));
  const id = isPlainObject(parsed) && isRequestId(obj.id) ? obj.id : null;
  reply(h, id, -32600, `Invalid Request: ${problem}`);
}

/** Close once, on stdin end/close or a stdout failure; nothing is written after (a send rejects). */
function closeWhenGone(h: Hardened): void {
  const t = h.t;
  const close = t.close.bind(t);
  const onGone = () => void t.close().catch(h.report);
  const onStdoutError = (error: unknown) => {
    if (h.closed) return;
    h.report(error);
    onGone();
  };
  t.close = async () => {
    if (h.closed) return;
    h.closed = true;
    h.pending = [];
    t._stdin.off('end', onGone);
    t._stdin.off('close', onGone);
    await close();
  };
  const send = h.send;
  t.send = (message, options) =>
    h.closed ? Promise.reject(new Error('StdioServerTransport is closed')) : send(message, options);
  const start = t.start.bind(t);
  t.start = async () => {
    await start();
    t._stdin.on('end', onGone);
    t._stdin.on('close', onGone);
    // Left attached after close: a late EPIPE is swallowed instead of crashing the process.
    t._stdout.on('error', onStdoutError);
    if (t._stdin.readableEnded || t._stdin.destroyed) setImmediate(onGone);
  };
}

/** Why `value` is not a JSON-RPC 2.0 request or notification MCP accepts (the first problem found). */
function messageProblem(value: unknown): string {
  if (Array.isArray(value)) return 'batches are not supported (send one message per line)';
  return jsonRpcProblem(value, { responses: false }) ?? 'not a valid request or notification';
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Make `server.connect` (the SDK `Protocol`'s, which `McpServer.connect` calls) harden an SDK stdio transport first. */
export function hardenStdioOnConnect(server: unknown): void {
  const s = server as { connect?: (transport: unknown, ...rest: unknown[]) => Promise<void> };
  if (typeof s.connect !== 'function') return;
  const connect = s.connect.bind(server);
  s.connect = (transport, ...rest) => connect(hardenStdio(transport), ...rest);
}
