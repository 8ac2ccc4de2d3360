import { prng } from '../fuzz/mutations.ts';

/**
 * Points shaped like scraped telemetry, for benches whose storage figures must mean something:
 * constant or sawtooth values compress far better than anything an agent sends, and would flatter
 * both systems' bytes per point alike. Each series is one of three kinds a scrape returns (a
 * gauge wandering as a random walk with two decimals, a byte counter rising by a jittered rate
 * with a rare reset, a small integer level such as a queue length), taken every scrape interval
 * from its own phase, each timestamp up to 5 ms off the interval. A seeded generator: the
 * same names give the same points on every run, so two systems are fed the same data.
 */
export type Series = { readonly name: string; readonly timestamps: number[]; readonly values: number[] };

/** FNV-1a of the name: each series its own sequence, the same on every run. */
function seedOf(name: string): number {
  let h = 2166136261;
  for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 16777619);
  return h >>> 0;
}

/** How far a scrape's timestamp strays from its interval, at most, either way. */
const JITTER_MS = 5;

/**
 * What a series measures: a gauge wandering as a random walk with two decimals (a temperature, a
 * load), a byte counter, a small integer level (a queue length), or a noisy gauge at full double
 * precision around a slow daily wave (a ratio computed by the agent, such as a CPU share): the
 * last compresses worst, as such gauges do in every store.
 */
export type SeriesKind = 'walk' | 'counter' | 'level' | 'noisy';

/** The kinds a series' name picks when none is given (the three of the first benches). */
const BY_SEED: readonly SeriesKind[] = ['walk', 'counter', 'level'];

const DAY_MS = 86_400_000;

/** One series: each call to next(n) returns its next n points, continuing where the last call ended. */
export function telemetrySeries(name: string, t0: number, intervalMs: number, kindOf?: SeriesKind): { next(n: number): Series } {
  const seed = seedOf(name);
  const rand = prng(seed);
  const kind = kindOf ?? BY_SEED[seed % 3]!;
  const phase = Math.floor(rand() * intervalMs);
  const step = () => rand() + rand() + rand() - 1.5; // roughly normal, mean 0
  let k = 0;
  let value = kind === 'walk' ? 20 + rand() * 60 : kind === 'counter' ? Math.floor(rand() * 1e9) : kind === 'level' ? Math.floor(rand() * 20) : 0;
  const bytesPerScrape = 1e4 + rand() * 1e6;
  const base = kind === 'noisy' ? 0.2 + rand() * 0.5 : 0; // drawn only for its kind: the others' sequences stay as they were
  const nextValue = (t: number): number => {
    if (kind === 'walk') value = Math.min(100, Math.max(0, value + step() * 0.8));
    else if (kind === 'counter') value = rand() < 1e-4 ? 0 : value + Math.round(bytesPerScrape * (0.8 + rand() * 0.4));
    else if (kind === 'level') value = Math.max(0, value + Math.round(step() * 1.5));
    else value = Math.min(1, Math.max(0, base + 0.15 * Math.sin((2 * Math.PI * t) / DAY_MS) + step() * 0.02));
    return kind === 'walk' ? Math.round(value * 100) / 100 : value;
  };
  return {
    next(n) {
      const timestamps = new Array<number>(n);
      const values = new Array<number>(n);
      for (let i = 0; i < n; i++, k++) {
        const t = t0 + phase + k * intervalMs + Math.round((rand() * 2 - 1) * JITTER_MS);
        timestamps[i] = t;
        values[i] = nextValue(t);
      }
      return { name, timestamps, values };
    },
  };
}
