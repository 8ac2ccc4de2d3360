import { compareCodePoints, type Label } from '@meridian/domain';

/**
 * Attribute and tag names as label names, as the OpenTelemetry-to-Prometheus mapping writes
 * them: every character outside [A-Za-z0-9_] becomes `_`, and a name that starts with a digit
 * gets the prefix `key_` (`http.method` → `http_method`, `2xx` → `key_2xx`). Used for OTLP
 * attributes and Influx tag keys, which may hold any text; remote write's label names are
 * Prometheus' own and are taken as sent.
 */
export function sanitizeLabelName(name: string): string {
  let out = name.replace(/[^A-Za-z0-9_]/g, '_');
  const first = out.charCodeAt(0);
  if (first >= 48 && first <= 57) out = `key_${out}`;
  return out;
}

/**
 * Labels from attributes or tags: names sanitised, an empty name or one of underscores only
 * left out, and the values of names that sanitise to the same label joined with `;` in the
 * order of the original names (Prometheus' rule: `a.b` and `a_b` both become `a_b`).
 */
export function labelsFromAttributes(pairs: ReadonlyArray<readonly [string, string]>): Label[] {
  if (pairs.length === 0) return [];
  const byLabel = new Map<string, Array<readonly [string, string]>>();
  for (const pair of pairs) {
    const label = sanitizeLabelName(pair[0]);
    if (label === '' || /^_+$/.test(label)) continue;
    const same = byLabel.get(label);
    if (same === undefined) byLabel.set(label, [pair]);
    else same.push(pair);
  }
  const labels: Label[] = [];
  for (const [label, same] of byLabel) {
    if (same.length === 1) labels.push([label, same[0]![1]]);
    else
      labels.push([
        label,
        [...same]
          .sort((a, b) => compareCodePoints(a[0], b[0]))
          .map((p) => p[1])
          .join(';'),
      ]);
  }
  return labels;
}
