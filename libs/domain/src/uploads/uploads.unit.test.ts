import { describe, expect, it } from 'vitest';
import type { MetricRule, UserRecord } from '../accounts/state.ts';
import type { UploadItem } from './parse.ts';
import { decideUpload, type UploadComplete, type UploadFact, type UploadInput } from './decide.ts';
import { MAX_LISTED_METRICS, MAX_REPORTED_ERRORS, rowsRead, startUpload, type UploadRun, type UploadStart } from './state.ts';

const rw = (value: string): MetricRule => ({ match: 'prefix', value, access: 'rw' });
const userWith = (entitlements: MetricRule[], disabled_at: number | null = null): UserRecord => ({
  user_name: 'ada',
  is_admin: false,
  created_at: 0,
  disabled_at,
  key_ids: [],
  entitlements,
  file_quota_bytes: null,
});
const writer = userWith([rw('m.'), { match: 'exact', value: 'ro', access: 'r' }]);

const point = (row: number, metric_name = 'm.a', value = row): UploadItem => ({ kind: 'point', row, metric_name, ts: row * 1000, value });
const error = (row: number, column = 'value', reason = 'not a number'): UploadItem => ({ kind: 'error', row, column, reason });
const items = (...list: UploadItem[]): UploadInput => ({ type: 'ItemsParsed', items: list });
const ended: UploadInput = { type: 'InputEnded' };
const limit = (reason: string): UploadInput => ({ type: 'LimitReached', reason });
const batch = (metric_name: string, rows: number[]): UploadFact => ({
  type: 'BatchReady',
  batch: { names: [metric_name], nameIndex: [], timestamps: rows.map((r) => r * 1000), values: rows },
});

type Options = Partial<UploadStart>;
const run = (options: Options = {}): UploadRun =>
  startUpload({ on_error: 'fail', user: () => writer, batch: { points: 1000, bytes: 921_600 }, maxBufferedPoints: 8000, ...options });

/**
 * given(inputs).when(input).then(facts | error): each rule of an upload's run in one line.
 * The inputs given are fed first (their facts dropped); `when` feeds one more.
 */
function given(inputs: UploadInput[], options: Options = {}) {
  const state = run(options);
  for (const input of inputs) decideUpload(state, input);
  return {
    state,
    when: (input: UploadInput) => {
      let result: readonly UploadFact[] | Error;
      try {
        result = decideUpload(state, input);
      } catch (e) {
        result = e as Error;
      }
      return {
        then: (expected: UploadFact[]) => expect(result).toEqual(expected),
        thenThrows: (message: RegExp) => {
          expect(result).toBeInstanceOf(Error);
          expect((result as Error).message).toMatch(message);
        },
      };
    },
  };
}

describe('an upload that holds', () => {
  it('batches its points per metric and, at the end, hands out the rest and completes with its counts', () => {
    given([items(point(2, 'm.b'), point(3, 'm.a'))])
      .when(ended)
      .then([
        batch('m.b', [2]),
        batch('m.a', [3]),
        { type: 'UploadComplete', rows_total: 2, points_accepted: 2, rows_rejected: 0, errors: [], metrics: ['m.a', 'm.b'] },
      ]);
  });

  it("hands out a metric's batch as soon as it is full", () => {
    given([items(point(2))], { batch: { points: 2, bytes: 921_600 } })
      .when(items(point(3), point(4)))
      .then([batch('m.a', [2, 3])]);
  });

  it('holds at most maxBufferedPoints across metrics: the largest batch goes first', () => {
    given([items(point(2, 'm.a'), point(3, 'm.b'), point(4, 'm.b'))], { maxBufferedPoints: 3 })
      .when(items(point(5, 'm.c')))
      .then([batch('m.b', [3, 4])]);
  });

  it('names the metrics it wrote, sorted, the first MAX_LISTED_METRICS', () => {
    const many = Array.from({ length: MAX_LISTED_METRICS + 5 }, (_, i) => point(i + 2, `m.${String(i).padStart(5, '0')}`));
    const facts = decideUpload(given([items(...many)]).state, ended);
    const complete = facts.at(-1);
    expect(complete?.type).toBe('UploadComplete');
    if (complete?.type !== 'UploadComplete') return;
    expect(complete.metrics).toHaveLength(MAX_LISTED_METRICS);
    expect(complete.metrics[0]).toBe('m.00000');
    expect(complete.metrics.at(-1)).toBe(`m.${String(MAX_LISTED_METRICS - 1).padStart(5, '0')}`);
  });
});

describe('all or nothing (on_error=fail)', () => {
  it("one invalid row fails the upload at its end, with the row's error and the counts of every row read", () => {
    given([items(point(2), error(3), point(4))])
      .when(ended)
      .then([
        {
          type: 'UploadFailed',
          reason: '1 invalid rows: nothing was stored',
          rows_total: 3,
          rows_rejected: 1,
          errors: [{ row: 3, column: 'value', reason: 'not a number' }],
        },
      ]);
  });

  it('counts the points after the first error but batches none of them', () => {
    given([items(error(2))], { batch: { points: 1, bytes: 921_600 } })
      .when(items(point(3), point(4)))
      .then([]);
    given([items(point(2))], { batch: { points: 2, bytes: 921_600 } })
      .when(items(point(3)))
      .then([batch('m.a', [2, 3])]);
  });

  it('stops reading at its MAX_REPORTED_ERRORS-th error and says so: the counts are a floor', () => {
    const errors = Array.from({ length: MAX_REPORTED_ERRORS - 1 }, (_, i) => error((i + 1) * 2));
    const last = MAX_REPORTED_ERRORS * 2;
    const g = given([items(...errors)]);
    g.when(items(error(last), point(last + 1))).then([
      {
        type: 'UploadFailed',
        reason: `reading stopped after row ${last}, at the first ${MAX_REPORTED_ERRORS} errors: at least ${MAX_REPORTED_ERRORS} invalid rows; nothing was stored`,
        rows_total: MAX_REPORTED_ERRORS,
        rows_rejected: MAX_REPORTED_ERRORS,
        errors: [...errors, error(last)].map((e) => ({ row: (e as { row: number }).row, column: 'value', reason: 'not a number' })),
      },
    ]);
    expect(g.state.status).toBe('failed');
  });

  it('counts a row with several errors once', () => {
    given([items(point(1), error(2, 'timestamp'), error(2, 'value'), point(3), error(5))])
      .when(ended)
      .then([
        {
          type: 'UploadFailed',
          reason: '2 invalid rows: nothing was stored',
          rows_total: 4,
          rows_rejected: 2,
          errors: [
            { row: 2, column: 'timestamp', reason: 'not a number' },
            { row: 2, column: 'value', reason: 'not a number' },
            { row: 5, column: 'value', reason: 'not a number' },
          ],
        },
      ]);
  });
});

describe('skip mode (on_error=skip)', () => {
  it('keeps the valid rows and reports the rejected ones', () => {
    given([items(point(2), error(3), point(4))], { on_error: 'skip' })
      .when(ended)
      .then([
        batch('m.a', [2, 4]),
        {
          type: 'UploadComplete',
          rows_total: 3,
          points_accepted: 2,
          rows_rejected: 1,
          errors: [{ row: 3, column: 'value', reason: 'not a number' }],
          metrics: ['m.a'],
        },
      ]);
  });

  it('reads past MAX_REPORTED_ERRORS errors to the end, keeps the first ones and counts the rest in a last line', () => {
    const errors = Array.from({ length: MAX_REPORTED_ERRORS + 3 }, (_, i) => error(i + 2));
    const g = given([items(...errors)], { on_error: 'skip' });
    g.when(items(point(MAX_REPORTED_ERRORS + 5))).then([]);
    const facts = decideUpload(g.state, ended);
    expect(facts.at(-1)).toMatchObject({
      type: 'UploadComplete',
      rows_total: MAX_REPORTED_ERRORS + 4,
      points_accepted: 1,
      rows_rejected: MAX_REPORTED_ERRORS + 3,
    });
    const reported = (facts.at(-1) as UploadComplete).errors;
    expect(reported).toHaveLength(MAX_REPORTED_ERRORS + 1);
    expect(reported.at(-1)).toEqual({ row: -1, column: 'row', reason: '3 more errors not shown' });
  });

  it('holds no per-row state: a million rejected rows cost what one does', () => {
    const state = run({ on_error: 'skip' });
    const before = process.memoryUsage().heapUsed;
    for (let row = 1; row <= 1_000_000; row++) decideUpload(state, items(error(row)));
    expect(state.rejectedRows).toBe(1_000_000);
    expect(process.memoryUsage().heapUsed - before).toBeLessThan(8 * 1024 * 1024);
  });
});

describe('an error of the upload as a whole (row 0)', () => {
  it.each(['fail', 'skip'] as const)('fails it at once with on_error=%s, is no rejected row, and the first one is the reason', (on_error) => {
    given([items(point(1))], { on_error })
      .when(items(error(0, 'metric_name', 'required'), error(0, 'row', 'a second one'), point(2)))
      .then([
        {
          type: 'UploadFailed',
          reason: 'the upload cannot be read: metric_name: required; nothing was stored',
          rows_total: 1,
          rows_rejected: 0,
          errors: [{ row: 0, column: 'metric_name', reason: 'required' }],
        },
      ]);
  });

  it('names the error alone when it concerns the row, after the row errors before it', () => {
    given([items(error(2))], { on_error: 'skip' })
      .when(items(error(0, 'row', 'invalid UTF-8')))
      .then([
        {
          type: 'UploadFailed',
          reason: 'the upload cannot be read: invalid UTF-8; nothing was stored',
          rows_total: 1,
          rows_rejected: 1,
          errors: [
            { row: 2, column: 'value', reason: 'not a number' },
            { row: 0, column: 'row', reason: 'invalid UTF-8' },
          ],
        },
      ]);
  });

  it('past MAX_REPORTED_ERRORS row errors, is counted in the last line like them', () => {
    const errors = Array.from({ length: MAX_REPORTED_ERRORS + 3 }, (_, i) => error(i + 2));
    const facts = given([items(...errors)], { on_error: 'skip' }).when(items(error(0, 'row', 'invalid UTF-8')));
    facts.then([
      {
        type: 'UploadFailed',
        reason: 'the upload cannot be read: invalid UTF-8; nothing was stored',
        rows_total: MAX_REPORTED_ERRORS + 3,
        rows_rejected: MAX_REPORTED_ERRORS + 3,
        errors: [
          ...errors.slice(0, MAX_REPORTED_ERRORS).map((e) => ({ row: (e as { row: number }).row, column: 'value', reason: 'not a number' })),
          { row: -1, column: 'row', reason: '4 more errors not shown' },
        ],
      },
    ]);
  });
});

describe('write access, per row', () => {
  const refused = (
    row: number,
    metric: string,
    rows_total: number,
    errors = [{ row, column: 'metric_name', reason: 'no write access to this metric' }],
  ): UploadFact[] => [
    {
      type: 'UploadFailed',
      reason: `row ${row}: no write access to the metric ${JSON.stringify(metric)}; the upload was not stored`,
      rows_total,
      rows_rejected: errors.filter((e) => e.row > 0).length,
      errors,
    },
  ];

  it.each(['fail', 'skip'] as const)('the first name the uploader may not write fails the upload with on_error=%s, naming the row', (on_error) => {
    given([items(point(2, 'm.a'))], { on_error, batch: { points: 1, bytes: 921_600 } })
      .when(items(point(3, 'ro'), point(4, 'elsewhere')))
      .then(refused(3, 'ro', 2));
  });

  it('fails after the points batched before it, which the caller abandons', () => {
    given([], { batch: { points: 1, bytes: 921_600 } })
      .when(items(point(2, 'm.a'), point(3, 'other')))
      .then([batch('m.a', [2]), ...refused(3, 'other', 2)]);
  });

  it('refuses everything to an unknown or a disabled user', () => {
    given([], { user: () => undefined })
      .when(items(point(2, 'm.a')))
      .then(refused(2, 'm.a', 1));
    given([], { user: () => userWith([rw('')], 5) })
      .when(items(point(2, 'm.a')))
      .then(refused(2, 'm.a', 1));
  });

  it('admins write every metric', () => {
    given([items(point(2, 'anything'))], { user: () => ({ ...userWith([]), is_admin: true }) })
      .when(ended)
      .then([batch('anything', [2]), { type: 'UploadComplete', rows_total: 1, points_accepted: 1, rows_rejected: 0, errors: [], metrics: ['anything'] }]);
  });

  it('is decided once per metric, at its first row: a change during the upload does not split the metric', () => {
    let current = userWith([rw('m.a')]);
    let asked = 0;
    const g = given([items(point(2, 'm.a'))], { user: () => (asked++, current) });
    current = userWith([rw('m.b')]);
    g.when(items(point(3, 'm.a'), point(4, 'm.b'), point(5, 'm.b'))).then([]);
    expect(asked).toBe(2);
  });

  it("is asked of points after an all-or-nothing upload's first error too", () => {
    given([items(error(2))])
      .when(items(point(3, 'ro')))
      .then(
        refused(3, 'ro', 2, [
          { row: 2, column: 'value', reason: 'not a number' },
          { row: 3, column: 'metric_name', reason: 'no write access to this metric' },
        ]),
      );
  });
});

describe("a limit of the caller's (size, expansion, time budget)", () => {
  const reason = 'the upload took longer than its time budget of 10 ms (MERIDIAN_UPLOAD_TIME_BUDGET_MS); nothing was stored';

  it("fails the upload with its reason, added to the errors as the upload's own", () => {
    given([items(point(2), error(3))], { on_error: 'skip' })
      .when(limit(reason))
      .then([
        {
          type: 'UploadFailed',
          reason,
          rows_total: 2,
          rows_rejected: 1,
          errors: [
            { row: 3, column: 'value', reason: 'not a number' },
            { row: 0, column: 'row', reason },
          ],
        },
      ]);
  });

  it('still fails an upload read whole, until it is sealed', () => {
    given([items(point(2)), ended])
      .when(limit(reason))
      .then([{ type: 'UploadFailed', reason, rows_total: 1, rows_rejected: 0, errors: [{ row: 0, column: 'row', reason }] }]);
  });
});

describe('the run as a state machine', () => {
  it('takes no input once failed, and no more rows once read', () => {
    given([items(error(0, 'row', 'bad'))])
      .when(items(point(2)))
      .thenThrows(/failed takes no ItemsParsed/);
    given([items(error(0, 'row', 'bad'))])
      .when(limit('x'))
      .thenThrows(/failed takes no LimitReached/);
    given([ended])
      .when(items(point(2)))
      .thenThrows(/read takes no ItemsParsed/);
    given([ended])
      .when(ended)
      .thenThrows(/read takes no InputEnded/);
  });

  it('refuses errors out of row order, which would miscount', () => {
    given([items(error(3))], { on_error: 'skip' })
      .when(items(error(2)))
      .thenThrows(/row order/);
  });

  it("counts the rows read for the task's progress", () => {
    expect(rowsRead(given([items(point(2), error(3), error(3, 'timestamp'), point(4))], { on_error: 'skip' }).state)).toBe(3);
  });
});
