/**
 * The key names of `RedisJobStore` (`./jobs.ts`, whose header lists them) and the values its live and
 * finished-job indexes hold. Ids, owners and client keys come from clients (`jobs.status { jobId }`):
 * keys and set members carry them base64url-encoded, so none can name another key.
 */
import type { JobRecord } from '@mcp-tether/jobs';

export const enc = (s: string): string => Buffer.from(s, 'utf8').toString('base64url');
export const dec = (s: string): string => Buffer.from(s, 'base64url').toString('utf8');

/** The keys of one deployment's jobs (`p` = `<prefix>jobs:`). */
export class JobKeys {
  constructor(readonly p: string) {}

  job(id: string): string {
    return `${this.p}job:${enc(id)}`;
  }
  partial(id: string): string {
    return `${this.p}job:${enc(id)}:partial`;
  }
  /** UTF-8 bytes of the job's partial output (retention counts them). */
  partialBytes(id: string): string {
    return `${this.p}job:${enc(id)}:pbytes`;
  }
  owner(owner: string): string {
    return `${this.p}owner:${enc(owner)}`;
  }
  seq(owner: string): string {
    return `${this.p}oseq:${enc(owner)}`;
  }
  /** The live set of one quota key (a job's client key, else its owner). */
  live(client: string): string {
    return `${this.p}lv:${enc(client)}`;
  }
  /** Every client's live jobs (the global ceiling). */
  allLive(): string {
    return `${this.p}alllv`;
  }
  /** The retention keys of one quota key's finished jobs, then every client's (`fin`, `finsz`, `allfin`, `allfinsz`, `finseq`). */
  retention(client: string): string[] {
    const c = enc(client);
    const p = this.p;
    return [`${p}fin:${c}`, `${p}finsz:${c}`, `${p}allfin`, `${p}allfinsz`, `${p}finseq`];
  }
  idem(owner: string, key: string): string {
    return `${this.p}idem:${enc(owner)}:${enc(key)}`;
  }
  /** The key that seals `list` cursors. */
  cursorKey(): string {
    return `${this.p}cursorkey`;
  }
}

/**
 * The score of a live job in the live sets: the time (ms) from which it no longer counts, its expiry
 * or just past its runner's lease (a job is lost once `now > leaseUntil`), `+inf` for neither.
 */
export function liveScore(record: JobRecord): string {
  let at = record.ttlMs === null ? Number.POSITIVE_INFINITY : Math.ceil(record.createdAt + record.ttlMs);
  if (record.leaseUntil !== undefined) at = Math.min(at, Math.floor(record.leaseUntil) + 1);
  return at === Number.POSITIVE_INFINITY ? '+inf' : String(at);
}

/** What a finished job's retention entry names after its bytes: `<id> c<client> o<owner> i<key>` or `-` (encoded parts). */
export function memberTail(record: JobRecord): string {
  const idem = record.idempotencyKey === undefined ? '-' : `i${enc(record.idempotencyKey)}`;
  return `${enc(record.id)} c${enc(record.client ?? record.owner)} o${enc(record.owner)} ${idem}`;
}
