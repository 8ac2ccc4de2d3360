import { randomInt } from 'node:crypto';
import type { Label } from '@meridian/domain';
import type { ProtocolLimits } from './limits.ts';

/** A series' canonical name and its parts, as SeriesCollector made and checked them. */
export type NamedSeries = { readonly name: string; readonly metric: string; readonly labels: readonly Label[] };

/** Where a key lies: `bytes` from `start` to `end`. */
export type KeyBytes = { readonly bytes: Uint8Array; readonly start: number; readonly end: number };

type Entry = { readonly key: Uint8Array; readonly named: NamedSeries; readonly next: Entry | undefined };

/**
 * FNV-1a of the bytes from a basis drawn per cache: cheap, and spread enough to tell a few hundred
 * thousand label sets apart (the bytes are compared too). The random basis keeps a sender from
 * preparing label sets that collide here; the chain bound below holds whatever they do.
 */
function seededFnv1a(seed: number): (bytes: Uint8Array, start: number, end: number) => number {
  const basis = (0x811c9dc5 ^ seed) >>> 0;
  return (bytes, start, end) => {
    let h = basis;
    for (let i = start; i < end; i++) h = Math.imul(h ^ bytes[i]!, 0x01000193);
    return h >>> 0;
  };
}

/**
 * Names kept under one hash at most: past it a name is not cached (it is made again when sent
 * again), so a lookup compares at most this many keys, however many label sets collide.
 */
export const MAX_CHAIN = 8;

function sameBytes(key: Uint8Array, bytes: Uint8Array, start: number, end: number): boolean {
  if (key.length !== end - start) return false;
  for (let i = 0; i < key.length; i++) if (key[i] !== bytes[start + i]) return false;
  return true;
}

/**
 * Names already made, kept by the caller across requests: an agent sends the same series
 * every few seconds, and naming one (decoding its labels, sorting, escaping, checking the
 * result) costs more than reading its samples. Keyed by the wire bytes of a series' labels,
 * so a hit reads no label at all: found by a hash of those bytes, then the bytes compared
 * (a string made of them as a Map key cost more than naming many series did). Holds at most
 * `maxEntries` names and is emptied when full (series come and go; a cache that only grows
 * would hold every series ever seen). A name is valid for the limits it was checked against:
 * a call with other limits empties the cache.
 */
export class SeriesNameCache {
  readonly maxEntries: number;
  private readonly byHash = new Map<number, Entry>();
  private entries = 0;
  private limitsKey = '';
  private readonly hash: (bytes: Uint8Array, start: number, end: number) => number;

  /** `hash`: the tests' way to make keys collide. */
  constructor(maxEntries = 100_000, hash = seededFnv1a(randomInt(0, 2 ** 32))) {
    this.maxEntries = maxEntries;
    this.hash = hash;
  }

  /** Makes the cache valid for `limits`, emptying it when they differ from the last ones. */
  useLimits(limits: ProtocolLimits): void {
    const key = JSON.stringify(limits);
    if (key !== this.limitsKey) {
      this.clear();
      this.limitsKey = key;
    }
  }

  get({ bytes, start, end }: KeyBytes): NamedSeries | undefined {
    for (let e = this.byHash.get(this.hash(bytes, start, end)); e !== undefined; e = e.next) if (sameBytes(e.key, bytes, start, end)) return e.named;
    return undefined;
  }

  /** Keeps a name under a copy of the key's bytes (the request's buffer is not held). */
  set({ bytes, start, end }: KeyBytes, named: NamedSeries): void {
    if (this.entries >= this.maxEntries) this.clear();
    const h = this.hash(bytes, start, end);
    const chain = this.byHash.get(h);
    let length = 0;
    for (let e = chain; e !== undefined; e = e.next) length++;
    if (length >= MAX_CHAIN) return;
    const key = Uint8Array.prototype.slice.call(bytes, start, end);
    this.byHash.set(h, { key, named: { name: named.name, metric: named.metric, labels: named.labels }, next: chain });
    this.entries++;
  }

  get size(): number {
    return this.entries;
  }

  private clear(): void {
    this.byHash.clear();
    this.entries = 0;
  }
}
