import { labelValue, type Labels } from '../series/labels.ts';
import { selectorsOf, type Expr, type Matcher } from './ast.ts';
import { matcherTest } from './parse.ts';

/**
 * What the metric store is asked for one selector: the series it chose and the samples of
 * them that some step can see. A step at t sees [t − offset − width, t − offset], width being
 * the range of a range selector or the lookback of an instant one; when the steps are further
 * apart than the width, only samples within width before some step are read, so a 1 h step
 * over a month does not read every sample of the month.
 */
export type SampleWindow = {
  readonly selectorId: number;
  /** The catalog names of the series, exactly as stored. */
  readonly names: readonly string[];
  /** Inclusive bounds of the samples read, epoch ms. */
  readonly fromMs: number;
  readonly toMs: number;
  /** When not null: keep a sample at ts only if (firstRefMs − ts) mod stepMs (taken non-negative) <= widthMs. */
  readonly sparse: { readonly firstRefMs: number; readonly stepMs: number; readonly widthMs: number } | null;
};

/** A series the caller may read: its catalog name and the labels it parses to. */
export type CatalogSeries = { readonly name: string; readonly labels: Labels };

/** The series every matcher accepts (a missing label matches as the empty value). */
export function matchSeries(matchers: readonly Matcher[], series: readonly CatalogSeries[]): CatalogSeries[] {
  const tests = matchers.map((m) => ({ name: m.name, test: matcherTest(m) }));
  return series.filter((s) => tests.every(({ name, test }) => test(labelValue(s.labels, name))));
}

/** The windows of every selector of a query evaluated from startMs to endMs every stepMs (an instant query: start = end). */
export function planWindows(e: Expr, series: readonly CatalogSeries[], startMs: number, endMs: number, stepMs: number, lookbackMs: number): SampleWindow[] {
  return selectorsOf(e).map(({ selector, rangeMs }) => {
    const width = rangeMs > 0 ? rangeMs : lookbackMs;
    const firstRef = startMs - selector.offsetMs;
    const lastRef = endMs - selector.offsetMs;
    const names = matchSeries(selector.matchers, series).map((s) => s.name);
    const sparse = endMs > startMs && stepMs > width + 1 ? { firstRefMs: firstRef, stepMs, widthMs: width } : null;
    return { selectorId: selector.id, names, fromMs: firstRef - width, toMs: lastRef, sparse };
  });
}
