/**
 * Opaque `list` cursors: what a store needs to resume a page (a position in one owner's jobs) is
 * sealed with AES-256-GCM, bound to the owner. A cursor reveals nothing (not a count, not a time,
 * not an id), and a cursor that was altered, made up, or issued to another owner does not open.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/** Bytes of a cursor key (AES-256). */
export const CURSOR_KEY_BYTES = 32;

/** Seals and opens `list` cursors with one key (every replica sharing a store must use the same key). */
export class CursorSeal {
  readonly #key: Buffer;

  /**
   * @param key {@link CURSOR_KEY_BYTES} bytes; default random (one process: cursors do not survive it)
   * @throws TypeError when the key is not 32 bytes
   */
  constructor(key: Uint8Array = randomBytes(CURSOR_KEY_BYTES)) {
    if (key.byteLength !== CURSOR_KEY_BYTES)
      throw new TypeError(`CursorSeal: the key must be ${CURSOR_KEY_BYTES} bytes`);
    this.#key = Buffer.from(key);
  }

  /** The cursor for `position` in `owner`'s list (base64url, about 40 + position length characters). */
  seal(owner: string, position: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.#key, iv);
    cipher.setAAD(Buffer.from(owner, 'utf8'));
    const body = Buffer.concat([cipher.update(position, 'utf8'), cipher.final()]);
    return Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url');
  }

  /** The position sealed in `cursor` for `owner`, or `undefined` when it does not open (not ours, altered, another owner's). */
  open(owner: string, cursor: string): string | undefined {
    if (typeof cursor !== 'string' || cursor.length > 1024 || !/^[A-Za-z0-9_-]+$/.test(cursor)) return undefined;
    const raw = Buffer.from(cursor, 'base64url');
    if (raw.length < 28) return undefined;
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.#key, raw.subarray(0, 12));
      decipher.setAAD(Buffer.from(owner, 'utf8'));
      decipher.setAuthTag(raw.subarray(12, 28));
      return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
    } catch {
      return undefined;
    }
  }
}
