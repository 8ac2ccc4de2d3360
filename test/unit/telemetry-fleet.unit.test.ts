import { describe, expect, it } from 'vitest';
import { FLEET_INTERVALS_MS, telemetryFleet } from '../bench/telemetry-fleet.ts';
import { telemetrySeries } from '../bench/telemetry.ts';

describe('the bench telemetry fleet', () => {
  const options = { series: 12, points: 20_000, t0: Date.UTC(2024, 0, 1) };
  const all = (windowMs: number) => {
    const bySeries = new Map<string, { timestamps: number[]; values: number[] }>();
    for (const window of telemetryFleet(options).windows(windowMs)) {
      for (const s of window) {
        const own = bySeries.get(s.name) ?? { timestamps: [], values: [] };
        own.timestamps.push(...s.timestamps);
        own.values.push(...s.values);
        bySeries.set(s.name, own);
      }
    }
    return bySeries;
  };

  it('hands out the points it counts, each series at its interval with jitter, in time order', () => {
    const fleet = telemetryFleet(options);
    expect(Math.abs(fleet.points - options.points)).toBeLessThanOrEqual(options.series);
    expect(new Set(fleet.series.map((s) => s.intervalMs))).toEqual(new Set(FLEET_INTERVALS_MS));
    const points = all(600_000);
    expect([...points.values()].reduce((n, s) => n + s.timestamps.length, 0)).toBe(fleet.points);
    for (const s of fleet.series) {
      const { timestamps } = points.get(s.name)!;
      expect(timestamps).toHaveLength(s.points);
      const gaps = timestamps.slice(1).map((t, i) => t - timestamps[i]!);
      for (const gap of gaps) expect(Math.abs(gap - s.intervalMs)).toBeLessThanOrEqual(10);
      expect(new Set(gaps).size).toBeGreaterThan(1); // jittered
    }
  });

  it('gives the same points whatever the window, on every run', () => {
    expect(all(60_000)).toEqual(all(3_600_000));
  });

  it('makes noisy gauges of full precision and counters of integers', () => {
    const points = all(600_000);
    const noisy = [...points].find(([name]) => name.includes('_noisy_'))![1].values;
    const counter = [...points].find(([name]) => name.includes('_counter_'))![1].values;
    expect(noisy.every((v) => v >= 0 && v <= 1)).toBe(true);
    expect(noisy.filter((v) => String(v).length > 10).length).toBeGreaterThan(noisy.length / 2);
    expect(counter.every((v) => Number.isInteger(v))).toBe(true);
  });

  it('leaves the series of the older benches as they were', () => {
    // Recorded before the kinds could be chosen: the default kind, from the name, draws nothing more.
    expect(telemetrySeries('bench_c', 0, 1000).next(4)).toEqual({ name: 'bench_c', timestamps: [53, 1060, 2060, 3059], values: [36.57, 36.04, 36.45, 36.84] });
  });
});
