import { parseDateBound, type LogRanges, type Offsets } from '@meridian/domain';

/**
 * Where a replay starts or stops: a point in time (Kafka record timestamps, which are the
 * times events were written), one offset for every partition, or an offset per partition.
 */
export type Bound =
  | { readonly kind: 'time'; readonly ms: number }
  | { readonly kind: 'offset'; readonly offset: number }
  | { readonly kind: 'offsets'; readonly offsets: ReadonlyMap<number, number> };

export class BoundError extends Error {}

const OFFSET = /^\d+$/;
const PER_PARTITION = /^\d+:\d+(,\d+:\d+)*$/;

/**
 * `--from`/`--to` text: `YYYY-MM-DD` (a whole UTC day: its first ms for --from, its last for
 * --to), an ISO 8601 date-time with an offset, an offset (`1234`: the same in every partition)
 * or offsets per partition (`0:1234,1:99`). Offsets are inclusive at both ends.
 */
export function parseBound(text: string, which: 'from' | 'to'): Bound {
  const t = text.trim();
  if (OFFSET.test(t)) {
    const offset = Number(t);
    if (!Number.isSafeInteger(offset)) throw new BoundError(`--${which}: offset ${t} is too large`);
    return { kind: 'offset', offset };
  }
  if (PER_PARTITION.test(t)) {
    const offsets = new Map<number, number>();
    for (const pair of t.split(',')) {
      const [p, o] = pair.split(':').map(Number) as [number, number];
      if (!Number.isSafeInteger(o) || p > 65535) throw new BoundError(`--${which}: ${pair} is not a partition:offset pair`);
      if (offsets.has(p)) throw new BoundError(`--${which}: partition ${p} is given twice`);
      offsets.set(p, o);
    }
    return { kind: 'offsets', offsets };
  }
  const parsed = parseDateBound(t, which === 'from' ? 'start' : 'end');
  if (!parsed.ok) throw new BoundError(`--${which}: expected a date, an ISO 8601 date-time, an offset or partition:offset pairs (${parsed.reason})`);
  return { kind: 'time', ms: parsed.ms };
}

const clamp = (x: number, lo: number, hi: number) => Math.min(Math.max(x, lo), hi);

/** The first offset to read in every partition (inclusive). */
export async function resolveStarts(log: LogRanges, topic: string, bound: Bound | undefined): Promise<Offsets> {
  const { low, end } = await log.offsets(topic);
  if (!bound) return low;
  const at = bound.kind === 'time' ? await log.offsetsAtTime(topic, bound.ms) : null;
  const out: Offsets = new Map();
  for (const [p, lo] of low) {
    const hi = end.get(p)!;
    const want = bound.kind === 'time' ? (at!.get(p) ?? hi) : bound.kind === 'offset' ? bound.offset : (bound.offsets.get(p) ?? lo);
    out.set(p, clamp(want, lo, hi));
  }
  return out;
}

/** The offset to stop before in every partition (exclusive); at most the end of the log now. */
export async function resolveEnds(log: LogRanges, topic: string, bound: Bound | undefined): Promise<Offsets> {
  const { low, end } = await log.offsets(topic);
  if (!bound) return end;
  const at = bound.kind === 'time' ? await log.offsetsAtTime(topic, bound.ms + 1) : null;
  const out: Offsets = new Map();
  for (const [p, hi] of end) {
    const want =
      bound.kind === 'time' ? (at!.get(p) ?? hi) : bound.kind === 'offset' ? bound.offset + 1 : bound.offsets.has(p) ? bound.offsets.get(p)! + 1 : hi;
    out.set(p, clamp(want, low.get(p)!, hi));
  }
  return out;
}

export function describeOffsets(offsets: ReadonlyMap<number, number>): string {
  return [...offsets]
    .sort((a, b) => a[0] - b[0])
    .map(([p, o]) => `${p}:${o}`)
    .join(',');
}
