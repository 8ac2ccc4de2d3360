import { METRIC_NAME } from '../series/labels.ts';
import type { Expr } from './ast.ts';
import { querySelectors } from './plan.ts';

/**
 * The metric names an expression can read when every selector names its metric exactly
 * (`x{…}` or `{__name__="x"}`): no series of another name can match any selector, so the
 * catalog need only be read for these. null when some selector matches its name otherwise
 * (a regular expression, `!=`, no name matcher): then the whole catalog may match.
 */
export function selectorMetricNames(e: Expr): string[] | null {
  const names = new Set<string>();
  for (const selector of querySelectors(e)) {
    const exact = selector.matchers.find((m) => m.name === METRIC_NAME && m.op === '=');
    if (!exact) return null;
    names.add(exact.value);
  }
  return [...names];
}
