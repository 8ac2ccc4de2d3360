import type { StateCodec } from './state-codec.ts';

/** Per partition, the next offset to read: everything before it is in the state (folded, aborted, or a transaction marker). */
export type NextOffsets = ReadonlyMap<number, number>;

export type Snapshot<S> = { readonly offsets: NextOffsets; readonly state: S };

/** A snapshot's name in its store: the sum of its next offsets. */
export function snapshotPosition(offsets: NextOffsets): number {
  let sum = 0;
  for (const next of offsets.values()) sum += next;
  return sum;
}

/** The stored form: the state's codec fixes `state`; the envelope says what it is and which offsets it covers. */
export function encodeSnapshot<S>(codec: StateCodec<S>, topic: string, snapshot: Snapshot<S>): string {
  return JSON.stringify({
    kind: codec.kind,
    version: codec.version,
    topic,
    offsets: [...snapshot.offsets].sort(([a], [b]) => a - b),
    state: codec.toJSON(snapshot.state),
  });
}

const isOffset = (n: unknown): n is number => typeof n === 'number' && Number.isSafeInteger(n) && n >= 0;

/** Reads a stored snapshot; throws, saying why, on one of another topic, kind or version, or a damaged one. */
export function decodeSnapshot<S>(codec: StateCodec<S>, topic: string, document: string): Snapshot<S> {
  const json = JSON.parse(document) as Record<string, unknown> | null;
  if (typeof json !== 'object' || json === null) throw new Error('not a snapshot');
  if (json.kind !== codec.kind || json.version !== codec.version) {
    throw new Error(`a ${String(json.kind)} snapshot of version ${String(json.version)}; this build reads ${codec.kind} version ${codec.version}`);
  }
  if (json.topic !== topic) throw new Error(`a snapshot of topic ${String(json.topic)}, not ${topic}`);
  const offsets = json.offsets;
  if (!Array.isArray(offsets) || !offsets.every((o) => Array.isArray(o) && o.length === 2 && isOffset(o[0]) && isOffset(o[1]))) {
    throw new Error('a snapshot without valid offsets');
  }
  return { offsets: new Map(offsets as Array<[number, number]>), state: codec.fromJSON(json.state) };
}
