/**
 * Reading request bodies with bounded memory: after the guard (Host/Origin, `authenticate`), under
 * a global and a per-client bound on the bytes being read ({@link BodyBudget}), with a timeout for
 * a body that stops arriving. A refused body is read and discarded up to `maxDiscardBytes` before
 * the answer goes out (RFC 9112 §9.6: a client still sending then reads the answer instead of
 * seeing its connection reset); past that bound the answer goes out and the connection closes.
 */
import type { IncomingMessage } from 'node:http';
import { ErrorCode, JsonRpcErrorCode } from '@mcp-tether/core';
import { errorResponse } from './jsonrpc.js';
import type { Resolved } from './options.js';

/** Bytes of request bodies being read, all clients together and per client key. */
export class BodyBudget {
  /** Bytes reserved now, all clients. */
  total = 0;
  readonly #perClient = new Map<string, number>();

  constructor(
    readonly max: number,
    readonly maxPerClient: number,
  ) {}

  /** Reserve `n` bytes for `key`: `undefined` when granted, else which bound refused. */
  take(key: string | undefined, n: number): 'global' | 'client' | undefined {
    if (this.total + n > this.max) return 'global';
    if (key !== undefined) {
      const mine = (this.#perClient.get(key) ?? 0) + n;
      if (mine > this.maxPerClient) return 'client';
      this.#perClient.set(key, mine);
    }
    this.total += n;
    return undefined;
  }

  /** Give back `n` bytes reserved for `key`. */
  give(key: string | undefined, n: number): void {
    if (n <= 0) return;
    this.total -= n;
    if (key === undefined) return;
    const left = (this.#perClient.get(key) ?? 0) - n;
    if (left > 0) this.#perClient.set(key, left);
    else this.#perClient.delete(key);
  }

  /** Bytes reserved by `key` now. */
  of(key: string): number {
    return this.#perClient.get(key) ?? 0;
  }
}

/** A body read whole: its text, and the bytes to give back to the budget once it was served. */
export interface BodyRead {
  readonly text: string;
  release(): void;
}

/** A body refused: the answer, and whether the connection must close after it (the body was not all read). */
export interface BodyRefused {
  readonly refused: Response;
  readonly close: boolean;
}

/** The client left before its body arrived: nobody to answer. */
export const GONE = Symbol('gone');

/** 413 with its JSON-RPC body. */
export function tooLarge(max: number): Response {
  return errorResponse(
    413,
    null,
    JsonRpcErrorCode.InvalidRequest,
    `Payload Too Large: the request body exceeds ${max} bytes`,
    {
      maxBodyBytes: max,
    },
  );
}

/** 408: the body stopped arriving. */
function bodyTimeout(ms: number): Response {
  return errorResponse(408, null, -32000, `Request Timeout: the request body stopped arriving for ${ms} ms`, {
    bodyTimeoutMs: ms,
  });
}

/** How long a client refused for the bytes-in-flight bounds should wait, in ms. */
const BUSY_RETRY_MS = 1_000;

/** 503 (all clients) or 429 (this client) for a body the bytes-in-flight bounds cannot take now. */
function busy(which: 'global' | 'client', opts: Resolved): Response {
  const client = which === 'client';
  const limit = client ? opts.maxClientBodyBytesInFlight : opts.maxBodyBytesInFlight;
  return errorResponse(
    client ? 429 : 503,
    null,
    JsonRpcErrorCode.InternalError,
    `Server busy: request bodies being read ${client ? 'for this client ' : ''}reached ${limit} bytes. Try again later.`,
    {
      code: ErrorCode.BUSY,
      reason: client ? 'client-body-bytes' : 'body-bytes',
      limit,
      retryAfterMs: BUSY_RETRY_MS,
      retryAfterSeconds: BUSY_RETRY_MS / 1_000,
    },
    { 'retry-after': String(BUSY_RETRY_MS / 1_000) },
  );
}

/**
 * One body being read: reserves bytes as they come (the declared `Content-Length` at once), keeps
 * them while within the bounds, and switches to discarding at the first bound it meets.
 */
class Intake {
  private chunks: Uint8Array[] = [];
  private size = 0;
  private reserved = 0;
  private discarded = 0;
  refusal: Response | undefined;

  constructor(
    private readonly opts: Resolved,
    private readonly budget: BodyBudget,
    private readonly key: string | undefined,
    declared: number,
    refusal: Response | undefined,
  ) {
    this.refusal = refusal;
    if (refusal) return;
    if (declared > opts.maxBodyBytes) this.refuse(tooLarge(opts.maxBodyBytes));
    else if (declared > 0) this.reserve(declared);
  }

  private reserve(total: number): void {
    const refused = this.budget.take(this.key, total - this.reserved);
    if (refused) this.refuse(busy(refused, this.opts));
    else this.reserved = total;
  }

  private refuse(response: Response): void {
    this.refusal = response;
    this.discarded += this.size;
    this.chunks = [];
    this.size = 0;
    this.budget.give(this.key, this.reserved);
    this.reserved = 0;
  }

  /** Take one chunk. False once more than `maxDiscardBytes` were discarded: stop reading. */
  push(chunk: Uint8Array): boolean {
    if (this.refusal !== undefined) {
      this.discarded += chunk.byteLength;
      return this.discarded <= this.opts.maxDiscardBytes;
    }
    this.size += chunk.byteLength;
    if (this.size > this.opts.maxBodyBytes) this.refuse(tooLarge(this.opts.maxBodyBytes));
    else if (this.size > this.reserved) this.reserve(this.size);
    if (this.refusal !== undefined) return this.discarded <= this.opts.maxDiscardBytes; // refuse() counted this chunk
    this.chunks.push(chunk);
    return true;
  }

  /** The body ended. */
  done(): BodyRead | BodyRefused {
    if (this.refusal) return { refused: this.refusal, close: false };
    const text = Buffer.concat(this.chunks).toString('utf8');
    this.chunks = [];
    let reserved = this.reserved;
    this.reserved = 0;
    return {
      text,
      release: () => {
        this.budget.give(this.key, reserved);
        reserved = 0;
      },
    };
  }

  /** Stop early (timeout, too much to discard, the client left): give back what is reserved. */
  abandon(): void {
    this.chunks = [];
    this.budget.give(this.key, this.reserved);
    this.reserved = 0;
  }
}

function declaredLength(value: string | null | undefined): number {
  if (value === null || value === undefined) return 0;
  const n = Number(value);
  return Number.isFinite(n) && n > 0 ? n : 0;
}

/**
 * Read a Node request body. `refusal` set: the request is already refused (Host, Origin, 401):
 * its body is only discarded, within the same bounds, before that answer goes out.
 */
export function readNodeBody(
  req: IncomingMessage,
  opts: Resolved,
  budget: BodyBudget,
  key: string | undefined,
  refusal?: Response,
): Promise<BodyRead | BodyRefused | typeof GONE> {
  const intake = new Intake(opts, budget, key, declaredLength(req.headers['content-length']), refusal);
  return new Promise((resolve) => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    let settled = false;
    const settle = (outcome: BodyRead | BodyRefused | typeof GONE) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onGone);
      req.off('close', onClose);
      // GONE is a symbol: \`in\` would throw on it (a client that hangs up mid-body crashed the process)
      if (outcome === GONE || !('text' in outcome)) intake.abandon();
      resolve(outcome);
    };
    const arm = () => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        req.pause();
        settle({ refused: intake.refusal ?? bodyTimeout(opts.bodyTimeoutMs), close: true });
      }, opts.bodyTimeoutMs);
      timer.unref?.();
    };
    const onData = (c: Buffer) => {
      arm();
      if (!intake.push(c)) {
        req.pause();
        settle({ refused: intake.refusal ?? tooLarge(opts.maxBodyBytes), close: true });
      }
    };
    const onEnd = () => settle(intake.done());
    const onGone = () => settle(GONE);
    const onClose = () => {
      if (!req.complete) settle(GONE);
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onGone);
    req.on('close', onClose);
    arm();
  });
}

/** Read a Fetch request body, as {@link readNodeBody} does (no connection to close: the stream is cancelled). */
export async function readWebBody(
  request: Request,
  opts: Resolved,
  budget: BodyBudget,
  key: string | undefined,
  refusal?: Response,
): Promise<BodyRead | BodyRefused | typeof GONE> {
  const intake = new Intake(opts, budget, key, declaredLength(request.headers.get('content-length')), refusal);
  if (!request.body) return intake.done();
  const reader = request.body.getReader();
  let timer: ReturnType<typeof setTimeout> | undefined;
  let fire: (value: 'timeout') => void = () => {};
  const timedOut = new Promise<'timeout'>((resolve) => {
    fire = resolve;
  });
  const rearm = () => {
    clearTimeout(timer);
    timer = setTimeout(() => fire('timeout'), opts.bodyTimeoutMs);
    timer.unref?.();
  };
  rearm();
  try {
    for (;;) {
      const next = await Promise.race([reader.read(), timedOut]);
      if (next === 'timeout') {
        intake.abandon();
        void reader.cancel().catch(() => {});
        return { refused: intake.refusal ?? bodyTimeout(opts.bodyTimeoutMs), close: true };
      }
      if (next.done) return intake.done();
      rearm();
      if (!intake.push(next.value)) {
        intake.abandon();
        void reader.cancel().catch(() => {});
        return { refused: intake.refusal ?? tooLarge(opts.maxBodyBytes), close: true };
      }
    }
  } catch {
    intake.abandon();
    return GONE;
  } finally {
    clearTimeout(timer);
  }
}
