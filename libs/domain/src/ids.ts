/**
 * A UUID in the canonical lowercase form `randomUUID()` gives. Task, file and ClickHouse
 * query ids all have it; the only ids that reach SQL text are ones this accepts.
 */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export function isUuid(text: unknown): text is string {
  return typeof text === 'string' && UUID.test(text);
}
