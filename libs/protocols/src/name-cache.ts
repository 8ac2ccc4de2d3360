import type { Label } from '@meridian/domain';
import type { ProtocolLimits } from './limits.ts';

/** A series' canonical name and its parts, as SeriesCollector made and checked them. */
export type NamedSeries = { readonly name: string; readonly metric: string; readonly labels: readonly Label[] };

/**
 * Names already made, kept by the caller across requests: an agent sends the same series
 * every few seconds, and naming one (decoding its labels, sorting, escaping, checking the
 * result) costs more than reading its samples. Keyed by the wire bytes of a series' labels,
 * so a hit reads no label at all. Holds at most `maxEntries` names and is emptied when full
 * (series come and go; a cache that only grows would hold every series ever seen). A name is
 * valid for the limits it was checked against: a call with other limits empties the cache.
 */
export class SeriesNameCache {
  readonly maxEntries: number;
  private readonly names = new Map<string, NamedSeries>();
  private limitsKey = '';

  constructor(maxEntries = 100_000) {
    this.maxEntries = maxEntries;
  }

  /** Makes the cache valid for `limits`, emptying it when they differ from the last ones. */
  useLimits(limits: ProtocolLimits): void {
    const key = JSON.stringify(limits);
    if (key !== this.limitsKey) {
      this.names.clear();
      this.limitsKey = key;
    }
  }

  get(key: string): NamedSeries | undefined {
    return this.names.get(key);
  }

  set(key: string, named: NamedSeries): void {
    if (this.names.size >= this.maxEntries) this.names.clear();
    this.names.set(key, { name: named.name, metric: named.metric, labels: named.labels });
  }

  get size(): number {
    return this.names.size;
  }
}
