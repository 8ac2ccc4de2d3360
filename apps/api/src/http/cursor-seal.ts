import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import type { Logger } from '@meridian/observability';

/**
 * Cursors (X-Next-Cursor of downloads and of the events export) leave the api sealed: encrypted
 * and authenticated with AES-256-GCM under a key derived (HKDF-SHA256) from
 * MERIDIAN_CURSOR_SECRET. A client can neither read one (no metric names, no log offsets) nor
 * forge or alter one; and the associated data binds it to what it continues (route, user and
 * the request's parameters), so a cursor of one query is refused on another.
 *
 * Token: base64url of [version: 1 byte][IV: 12 bytes][ciphertext][tag: 16 bytes].
 */
export type CursorSeal = {
  /** An opaque token carrying `payload`, valid only for the same `context`. */
  seal(payload: string, context: readonly unknown[]): string;
  /** The payload, when `token` was sealed with this secret for exactly this `context`; else null. */
  open(token: string, context: readonly unknown[]): string | null;
};

const VERSION = 1;
const IV_BYTES = 12;
const TAG_BYTES = 16;
/** Far above any cursor this service writes; a longer text is refused before it is decoded. */
const MAX_TOKEN_CHARS = 4096;

export function createCursorSeal(secret: string | Buffer): CursorSeal {
  const key = Buffer.from(hkdfSync('sha256', secret, 'meridian', 'cursor seal v1: aes-256-gcm', 32));
  const aad = (context: readonly unknown[]) => Buffer.from(JSON.stringify(context), 'utf8');
  return {
    seal(payload, context) {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      cipher.setAAD(aad(context));
      const sealed = Buffer.concat([Buffer.of(VERSION), iv, cipher.update(payload, 'utf8'), cipher.final(), cipher.getAuthTag()]);
      return sealed.toString('base64url');
    },
    open(token, context) {
      if (typeof token !== 'string' || token.length > MAX_TOKEN_CHARS || !/^[A-Za-z0-9_-]+$/.test(token)) return null;
      const bytes = Buffer.from(token, 'base64url');
      if (bytes.length < 1 + IV_BYTES + TAG_BYTES || bytes[0] !== VERSION) return null;
      const decipher = createDecipheriv('aes-256-gcm', key, bytes.subarray(1, 1 + IV_BYTES), { authTagLength: TAG_BYTES });
      decipher.setAAD(aad(context));
      decipher.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES));
      try {
        return Buffer.concat([decipher.update(bytes.subarray(1 + IV_BYTES, bytes.length - TAG_BYTES)), decipher.final()]).toString('utf8');
      } catch {
        return null; // altered, sealed under another secret or for another context
      }
    },
  };
}

/**
 * The api's seal from its setting. Without a secret, a random one for this process: cursors
 * then fail (400) on another instance or after a restart, hence the warning.
 */
export function cursorSealFromSetting(secret: string, logger: Logger): CursorSeal {
  if (secret !== '') return createCursorSeal(secret);
  logger.warn(
    'MERIDIAN_CURSOR_SECRET is not set: cursors are sealed with a random secret of this process; set the same secret on every api instance so cursors work across instances and restarts',
  );
  return createCursorSeal(randomBytes(32));
}
