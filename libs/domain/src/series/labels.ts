/**
 * A series' labels: name/value pairs sorted by name (bytewise, as Prometheus sorts them), the
 * metric name under `__name__`. Every label here has a non-empty value: in Prometheus an empty
 * value is the same as no label.
 */
import type { Label } from '../points/series-name.ts';

export type Labels = readonly Label[];

export const METRIC_NAME = '__name__';

/** The label names and values Prometheus accepts unquoted. */
export const METRIC_NAME_RE = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
export const LABEL_NAME_RE = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Labels from any pairs: sorted by name, empty values dropped; a name given twice keeps its last value. */
export function labelsOf(pairs: Iterable<readonly [string, string]>): Labels {
  const byName = new Map<string, string>();
  for (const [name, value] of pairs) byName.set(name, value);
  return [...byName].filter(([, v]) => v !== '').sort((a, b) => compare(a[0], b[0]));
}

export function labelValue(labels: Labels, name: string): string {
  for (const [n, v] of labels) if (n === name) return v;
  return '';
}

/** The labels without these names. */
export function withoutLabels(labels: Labels, names: ReadonlySet<string>): Labels {
  return labels.filter(([n]) => !names.has(n));
}

/** Only the labels with these names. */
export function onlyLabels(labels: Labels, names: ReadonlySet<string>): Labels {
  return labels.filter(([n]) => names.has(n));
}

const keys = new WeakMap<Labels, string>();

/**
 * A key that is equal for equal label sets and different otherwise (for maps and sets). Label
 * sets are never changed once made, so each one's key is computed once: a range query asks for
 * the same series' key at every step.
 */
export function labelsKey(labels: Labels): string {
  let key = keys.get(labels);
  if (key === undefined) keys.set(labels, (key = JSON.stringify(labels)));
  return key;
}

/** The labels as a JSON object, the form Prometheus' API answers with. */
export function labelsObject(labels: Labels): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [n, v] of labels) out[n] = v;
  return out;
}
