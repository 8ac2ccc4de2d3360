import { createHash, timingSafeEqual } from 'node:crypto';

/**
 * API keys look like `mrd_<key id: 16 hex>_<secret: 43 base64url chars = 32 bytes>`.
 * The prefix makes a leaked key recognisable (secret scanners); the key id finds the
 * record without scanning; only the SHA-256 of the whole key is ever stored.
 * Randomness comes from the caller: this module stays deterministic.
 */
const KEY_FORMAT = /^mrd_([0-9a-f]{16})_([A-Za-z0-9_-]{43})$/;

export type IssuedKey = { readonly key_id: string; readonly api_key: string; readonly secret_sha256: Buffer };

/** Builds a key from 8 random bytes (the id) and 32 random bytes (the secret). */
export function composeApiKey(idBytes: Buffer, secretBytes: Buffer): IssuedKey {
  if (idBytes.length !== 8 || secretBytes.length !== 32) throw new Error('an API key needs 8 id bytes and 32 secret bytes');
  const key_id = idBytes.toString('hex');
  const api_key = `mrd_${key_id}_${secretBytes.toString('base64url')}`;
  return { key_id, api_key, secret_sha256: digestApiKey(api_key) };
}

export function digestApiKey(apiKey: string): Buffer {
  return createHash('sha256').update(apiKey, 'utf8').digest();
}

/** The key id of a well-formed key, or null. */
export function keyIdOf(apiKey: string): string | null {
  return KEY_FORMAT.exec(apiKey)?.[1] ?? null;
}

/** Constant-time comparison of digests (both are always 32 bytes). */
export function digestsEqual(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}
