import { execFileSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { fmt, stackProcesses, type Proc } from './common.ts';

/**
 * bench-download's frames: the same rows to a pandas DataFrame several ways, each in a Python
 * process of its own (frames.py), alternating, `repeat` times each. With more than one api (one
 * per checkout, BENCH_API_ROOTS) the Arrow ways run through each api and that checkout's Python
 * client in turn, within every repeat, so "before" and "after" meet the same load; the CSV and
 * Parquet ways run through the first api only (the reference). Each run prints where its CPU
 * went: the api's, ClickHouse's (shared: other work on the machine counts too) and the Python
 * process's own, in CPU-seconds a million rows, with the load average at its start.
 */
export type FrameApi = { readonly name: string; readonly root: string; readonly base: string; readonly proc: Proc };

type Frame = {
  way: string;
  rows: number;
  seconds: number;
  pages: number;
  last_page_s: number;
  peak_rss_mb: number;
  cpu_s: number;
  dtypes: Record<string, string>;
};
type Run = Frame & { apiPeakMb: number; apiCpu: number; clickhouseCpu: number; load: number };

const ALL_WAYS = ['csv', 'parquet', 'arrow', 'arrow_pages'] as const;
const REFERENCE_ONLY = new Set(['csv', 'parquet']);

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const range = (xs: number[], digits: number) => `[${Math.min(...xs).toFixed(digits)}–${Math.max(...xs).toFixed(digits)}]`;

/** One way through one api: the frame frames.py built, with the CPU the api and ClickHouse spent meanwhile. */
function runWay(python: string, frameScript: string, api: FrameApi, key: string, way: string, rows: number): Run {
  const clickhouse = stackProcesses().find((p) => p.name === 'clickhouse');
  const load = loadavg()[0]!;
  api.proc.mark();
  const apiBefore = api.proc.cpuSeconds();
  const chBefore = clickhouse?.cpuSeconds() ?? NaN;
  const out = execFileSync(python, [frameScript, way, api.base, key, 'bench.m', 'starts_with', String(rows)], {
    encoding: 'utf8',
    env: { ...process.env, PYTHONPATH: `${api.root}clients/python/src` },
    maxBuffer: 1 << 20,
  });
  const frame = JSON.parse(out.trim().split('\n').at(-1)!) as Frame;
  if (frame.rows !== rows) throw new Error(`${way}: ${frame.rows} rows in the frame, not ${rows}`);
  return {
    ...frame,
    apiPeakMb: api.proc.windowPeakMb(),
    apiCpu: api.proc.cpuSeconds() - apiBefore,
    clickhouseCpu: (clickhouse?.cpuSeconds() ?? NaN) - chBefore,
    load,
  };
}

export function frames(python: string, frameScript: string, apis: readonly FrameApi[], key: string, rows: number, repeat: number): void {
  const only = process.env.BENCH_WAYS ? new Set(process.env.BENCH_WAYS.split(',')) : null;
  const ways = ALL_WAYS.filter((w) => !only || only.has(w) || w === 'csv');
  const cases = ways.flatMap((way) =>
    (REFERENCE_ONLY.has(way) ? [apis[0]!] : apis).map((api) => ({
      way,
      api,
      label: apis.length > 1 && !REFERENCE_ONLY.has(way) ? `${way} (${api.name})` : way,
    })),
  );
  const runs = new Map<string, Run[]>(cases.map((c) => [c.label, []]));
  for (let r = 0; r < repeat; r++) {
    for (const c of cases) {
      const run = runWay(python, frameScript, c.api, key, c.way, rows);
      runs.get(c.label)!.push(run);
      const perM = (s: number) => ((s * 1e6) / rows).toFixed(2);
      console.log(
        `  run ${r + 1} ${c.label}: ${run.seconds.toFixed(2)} s (body read and decoded at ${run.last_page_s.toFixed(2)} s), load ${run.load.toFixed(1)};` +
          ` CPU-s a million rows: api ${perM(run.apiCpu)}, ClickHouse ${perM(run.clickhouseCpu)}, python ${perM(run.cpu_s)}; api peak RSS ${run.apiPeakMb} MB`,
      );
    }
  }
  const csvSeconds = median(runs.get('csv')!.map((f) => f.seconds));
  console.log(`\nframes: ${fmt(rows)} rows to a pandas DataFrame (timestamps datetime64[ms, UTC]), medians of ${repeat} runs (ranges in brackets)`);
  for (const { label } of cases) {
    const fs = runs.get(label)!;
    const seconds = fs.map((f) => f.seconds);
    const ratios = fs.map((f, i) => runs.get('csv')![i]!.seconds / f.seconds);
    console.log(
      `  ${label.padEnd(24)} ${median(seconds).toFixed(2).padStart(7)} s ${range(seconds, 2)}  ${(csvSeconds / median(seconds)).toFixed(1).padStart(5)}× the CSV way ${range(ratios, 1)} (by repeat)` +
        `  (${fs[0]!.pages} page${fs[0]!.pages === 1 ? '' : 's'}, body read and decoded at ${median(fs.map((f) => f.last_page_s)).toFixed(2)} s)` +
        `  python peak RSS ${median(fs.map((f) => f.peak_rss_mb))} MB ${range(
          fs.map((f) => f.peak_rss_mb),
          0,
        )}  api peak RSS ${Math.max(...fs.map((f) => f.apiPeakMb))} MB  load ${range(
          fs.map((f) => f.load),
          1,
        )}`,
    );
  }
  const arrow = cases.find((c) => c.way === 'arrow');
  if (arrow) console.log(`  dtypes: ${JSON.stringify(runs.get(arrow.label)![0]!.dtypes)} (goal: Arrow at least 5× faster than CSV; api under 300 MB)`);
}
