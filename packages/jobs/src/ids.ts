/** Job ids and the partial-output URI (`job://{jobId}/partial`). */
import { randomBytes } from 'node:crypto';

/** The URI of a job's partial output (pattern C): `job://{jobId}/partial`. */
export function partialUriOf(jobId: string): string {
  return `job://${jobId}/partial`;
}

/** A fresh job id: 128 random bits, base64url (22 characters). */
export function newJobId(): string {
  return randomBytes(16).toString('base64url');
}

/** The job id and read offset of a partial-output URI, or `undefined`. */
export function parsePartialUri(uri: string): { jobId: string; offset: number } | undefined {
  const m = /^job:\/\/([A-Za-z0-9_-]{1,128})\/partial(?:\?(?:offset|cursor)=(\d{1,12}))?$/.exec(uri);
  if (!m) return undefined;
  return { jobId: m[1]!, offset: m[2] === undefined ? 0 : Number(m[2]) };
}

/** A partial-output URI of any query (the template matches it; a bad offset then gets a clear `-32602`). */
export const PARTIAL_ANY = /^job:\/\/([A-Za-z0-9_-]{1,128})\/partial(?:\?.*)?$/;
