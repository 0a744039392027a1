/**
 * Where the demo's counters live: `RecordStore` (this process) or `RedisRecordStore` (every replica,
 * `--redis`). `fencingToken` is the caller's lock grant (`ctx.fencingToken`): a store that checks
 * it refuses a write whose token is lower than one it already accepted for the key.
 */
export interface Records {
  read(key: string, fencingToken?: number): Promise<number>;
  write(key: string, value: number, fencingToken?: number): Promise<void>;
}

/**
 * The demo's business state, shared by every session of one process (like a database would be).
 * Reads and writes are separate async steps on purpose: `records.increment` reads, waits, then
 * writes, so without the mutex parallel increments lose updates.
 */
export class RecordStore implements Records {
  readonly #values = new Map<string, number>();

  /** Current value of `key` (0 when never written). */
  async read(key: string): Promise<number> {
    await Promise.resolve();
    return this.#values.get(key) ?? 0;
  }

  async write(key: string, value: number): Promise<void> {
    await Promise.resolve();
    this.#values.set(key, value);
  }
}

/** A refundable invoice. */
export interface Invoice {
  id: string;
  customer: string;
  amountCents: number;
}

const CUSTOMERS = ['Ada Lovelace', 'Grace Hopper', 'Alan Turing', 'Edsger Dijkstra', 'Barbara Liskov'];

/**
 * Look an invoice up. Every id exists in the demo; customer and amount are derived from the id,
 * so the same id always names the same amount.
 */
export function getInvoice(id: string): Invoice {
  let h = 0;
  for (const ch of id) h = (h * 31 + ch.codePointAt(0)!) >>> 0;
  return { id, customer: CUSTOMERS[h % CUSTOMERS.length]!, amountCents: 500 + (h % 99_500) };
}

/** `1234` → `"$12.34"`. */
export function formatCents(cents: number): string {
  return `$${(cents / 100).toFixed(2)}`;
}
