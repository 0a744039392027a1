/** A timestamped record of every JSON-RPC message between a test client and a server. */

/** Which way a message went. */
export type Direction = 'client->server' | 'server->client';

/** On Streamable HTTP: which HTTP exchange carried a server→client message. */
export type StreamTag =
  | {
      kind: 'post' /** ids of the requests in the POST body that opened this stream */;
      requestIds: Array<string | number>;
    }
  | { kind: 'get' }
  | { kind: 'json' };

/** One recorded message. */
export interface WireMessage {
  /** Order of recording, from 0. */
  seq: number;
  /** `Date.now()` at recording, in ms (fake timers apply). */
  at: number;
  direction: Direction;
  message: Record<string, any>;
  /** Streamable HTTP only: the stream that carried it. */
  stream?: StreamTag;
}

/** A progress notification as seen on the wire. */
export interface WireProgress {
  progressToken: string | number;
  progress: number;
  total?: number;
  message?: string;
  at: number;
  seq: number;
}

type Waiter = { pred: (m: WireMessage) => boolean; resolve: (m: WireMessage) => void };

/** The wire log of one test connection. */
export class WireLog {
  readonly messages: WireMessage[] = [];
  private waiters: Waiter[] = [];

  /** @internal */
  record(direction: Direction, message: unknown, stream?: StreamTag): void {
    const m: WireMessage = {
      seq: this.messages.length,
      at: Date.now(),
      direction,
      message: message as Record<string, any>,
    };
    if (stream) m.stream = stream;
    this.messages.push(m);
    if (this.waiters.length) {
      const ready = this.waiters.filter((w) => w.pred(m));
      this.waiters = this.waiters.filter((w) => !ready.includes(w));
      for (const w of ready) w.resolve(m);
    }
  }

  /** Messages sent by the server. */
  fromServer(): WireMessage[] {
    return this.messages.filter((m) => m.direction === 'server->client');
  }

  /** Messages sent by the client. */
  fromClient(): WireMessage[] {
    return this.messages.filter((m) => m.direction === 'client->server');
  }

  /** Notifications (optionally of one method) sent by the server. */
  notifications(method?: string): WireMessage[] {
    return this.fromServer().filter(
      (m) =>
        m.message.id === undefined && typeof m.message.method === 'string' && (!method || m.message.method === method),
    );
  }

  /** Server→client requests (elicitation/create, ping, ...), optionally of one method. */
  serverRequests(method?: string): WireMessage[] {
    return this.fromServer().filter(
      (m) =>
        m.message.id !== undefined && typeof m.message.method === 'string' && (!method || m.message.method === method),
    );
  }

  /** The progress notifications for one token, in wire order. */
  progress(token: string | number): WireProgress[] {
    return this.notifications('notifications/progress')
      .filter((m) => m.message.params?.progressToken === token)
      .map((m) => ({ ...(m.message.params as Omit<WireProgress, 'at' | 'seq'>), at: m.at, seq: m.seq }));
  }

  /** Every progress notification, whatever its token. */
  allProgress(): WireProgress[] {
    return this.notifications('notifications/progress').map((m) => ({
      ...(m.message.params as Omit<WireProgress, 'at' | 'seq'>),
      at: m.at,
      seq: m.seq,
    }));
  }

  /** The server's response (result or error) to a client request id, if any. */
  responseTo(id: string | number): WireMessage | undefined {
    return this.fromServer().find((m) => m.message.id === id && m.message.method === undefined);
  }

  /** Every server message that mentions this request id: its response, and notifications or requests sent while it ran, by stream when known. */
  forRequest(id: string | number): WireMessage[] {
    return this.fromServer().filter(
      (m) => m.message.id === id || (m.stream?.kind === 'post' && m.stream.requestIds.includes(id)),
    );
  }

  /** Resolve with the first message (already recorded or future) matching `pred`; reject after `timeoutMs`. */
  waitFor(pred: (m: WireMessage) => boolean, timeoutMs = 5_000): Promise<WireMessage> {
    const found = this.messages.find(pred);
    if (found) return Promise.resolve(found);
    return new Promise((resolve, reject) => {
      const w: Waiter = {
        pred,
        resolve: (m) => {
          clearTimeout(timer);
          resolve(m);
        },
      };
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((x) => x !== w);
        reject(new Error(`WireLog.waitFor: no matching message within ${timeoutMs} ms`));
      }, timeoutMs);
      this.waiters.push(w);
    });
  }

  /** A readable transcript, one message per line (for failing-test output). */
  transcript(): string {
    return this.messages.map((m) => `${m.seq} ${m.direction} ${JSON.stringify(m.message)}`).join('\n');
  }
}
