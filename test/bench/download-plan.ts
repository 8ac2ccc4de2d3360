import { randomUUID } from 'node:crypto';
import { planDownload, type ConnOptions, type DownloadCursor, type DownloadRequest } from '@meridian/clickhouse';
import { withBenchDatabase } from './common.ts';

/**
 * The plan of a paged download alone, two ways side by side in one run: counting every row after
 * the cursor (planDownload without an estimate) against counting groups of the metrics the
 * catalog's estimate says the page reaches. 2M rows over 200 metrics, pages of 200k (10 plans).
 *   eval "$(deploy/local/stack.sh env)" && node test/bench/download-plan.ts
 */

const ROWS = 2_000_000;
const METRICS = 200;
const PAGE = 200_000;
const T = 1_600_000_000_000;
const names = Array.from({ length: METRICS }, (_, i) => `p.m${String(i).padStart(4, '0')}`);

async function pages(conn: ConnOptions, rowsOf?: (n: string) => number): Promise<{ ms: number; pages: number }> {
  const started = performance.now();
  let after: DownloadCursor | null = null;
  let n = 0;
  for (;;) {
    const req: DownloadRequest = {
      metricNames: names,
      fromMs: 0,
      toMs: 4_291_747_199_999,
      maxRows: PAGE,
      after,
      format: 'columns',
      latestOnly: false,
      gzip: false,
      queryId: randomUUID(),
    };
    const { next } = await planDownload(conn, req, rowsOf ? { rowsOf } : {});
    n++;
    if (!next) break;
    after = next;
  }
  return { ms: performance.now() - started, pages: n };
}

withBenchDatabase('bench-download-plan', async (conn, client) => {
  await client.command({
    query: `INSERT INTO points SELECT concat('p.m', substring(toString(10000 + number % ${METRICS}), 2)), ${T} + intDiv(number, ${METRICS}) * 60000, number / 7.0, ${T}, 'b', toUInt16(0), number, toUInt32(0) FROM system.numbers LIMIT ${ROWS}`,
  });
  for (let r = 0; r < 3; r++) {
    const all = await pages(conn);
    const grouped = await pages(conn, () => ROWS / METRICS);
    console.log(
      `run ${r + 1}: ${all.pages} pages of ${PAGE}: counting every row after the cursor ${all.ms.toFixed(0)} ms, by groups ${grouped.ms.toFixed(0)} ms, ratio ${(all.ms / grouped.ms).toFixed(2)}`,
    );
  }
}).then(
  () => process.exit(0),
  (e: unknown) => {
    console.error(e);
    process.exit(1);
  },
);
