import type { Labels } from '../series/labels.ts';
import { labelsKey, METRIC_NAME } from '../series/labels.ts';
import { execution } from './errors.ts';

/** One element of an instant vector: a series' labels and value at an evaluation time. */
export type Sample = {
  readonly labels: Labels;
  readonly v: number;
  /** The sample's own timestamp where a selector read it (timestamp() answers it), else the evaluation time. */
  readonly t: number;
};
export type Vector = readonly Sample[];
export type Value = { readonly type: 'scalar'; readonly v: number } | { readonly type: 'vector'; readonly samples: Vector };

const withoutName = new WeakMap<Labels, Labels>();

/** The labels without __name__: the same array for the same labels, so its key is computed once across steps. */
export function dropMetricName(labels: Labels): Labels {
  let out = withoutName.get(labels);
  if (out === undefined) {
    out = labels[0]?.[0] === METRIC_NAME ? labels.slice(1) : labels.filter(([n]) => n !== METRIC_NAME);
    withoutName.set(labels, out);
  }
  return out;
}

/** Prometheus refuses an operation whose result holds one label set twice. */
export function assertUniqueLabelsets(samples: Vector): void {
  const seen = new Set<string>();
  for (const s of samples) {
    const key = labelsKey(s.labels);
    if (seen.has(key)) throw execution('vector cannot contain metrics with the same labelset');
    seen.add(key);
  }
}
