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

export function dropMetricName(labels: Labels): Labels {
  return labels[0]?.[0] === METRIC_NAME ? labels.slice(1) : labels.filter(([n]) => n !== METRIC_NAME);
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
