import { createHash, randomUUID } from 'node:crypto';

/**
 * The task id of an upload. With an Idempotency-Key it is derived from (user, key), so every
 * retry names the same task — even one whose first attempt reached Kafka after the api had
 * already answered 503 (kafkajs keeps retrying a send it gave up waiting for). The log may
 * then hold the command twice; the fold keeps the first and the worker runs a task once.
 */
export function taskIdFor(userName: string, idempotencyKey: string | null): string {
  if (idempotencyKey === null) return randomUUID();
  // Length-prefixed, so no (user, key) pair can spell the same input as another.
  const h = createHash('sha256').update(`meridian-upload:${userName.length}:${userName}:${idempotencyKey}`).digest();
  h[6] = (h[6]! & 0x0f) | 0x50; // a name-based UUID (version 5 layout, SHA-256 bits)
  h[8] = (h[8]! & 0x3f) | 0x80;
  const hex = h.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
