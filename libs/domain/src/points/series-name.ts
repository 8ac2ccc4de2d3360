import { metricNameProblem } from './metric-name.ts';

/**
 * Series names: one rule for every protocol that sends labelled series (Prometheus remote
 * write, OTLP, Influx line protocol). A series is stored under its canonical Prometheus form
 *
 *     name{label="value",...}
 *
 * with the labels sorted by name (by code point, so the order is UTF-8's byte order, as
 * Prometheus sorts), each value escaped as the text exposition format escapes it (`\` as `\\`,
 * `"` as `\"`, a line feed as `\n`), and no braces at all when there are no labels: the
 * name alone. Entitlement patterns (`starts_with "http_requests_total{"`) and downloads apply
 * to this text as to any metric name, and `parseSeriesName` reads it back.
 *
 * The rule refuses rather than alters: a name or label it cannot write so that it reads back
 * the same is a reason (`seriesNameProblem`), never a silent change. A label with an empty
 * value is no label (Prometheus' own rule), so it is left out.
 */
export type Label = readonly [name: string, value: string];

/** Label names as Prometheus' classic grammar has them: what `{a="b"}` can hold unquoted. */
const LABEL_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Characters a metric name of a labelled series cannot hold: they delimit the labels. */
const NAME_DELIMITERS = /[{}"\\]/;

/** Orders strings by code point (UTF-8 byte order); `<` on strings compares UTF-16 units. */
export function compareCodePoints(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    // A surrogate (an astral code point) sorts after every BMP unit above it in UTF-16 order.
    const xs = x >= 0xd800 && x <= 0xdfff;
    const ys = y >= 0xd800 && y <= 0xdfff;
    if (xs !== ys) return xs ? 1 : -1;
    return x - y;
  }
  return a.length - b.length;
}

/** A label value as the exposition format escapes it. */
export function escapeLabelValue(value: string): string {
  if (!/[\\"\n]/.test(value)) return value;
  return value.replace(/[\\"\n]/g, (c) => (c === '\n' ? '\\n' : `\\${c}`));
}

/** Why `name` cannot be a label name of a canonical series name, or null. */
export function labelNameProblem(name: string): string | null {
  if (name === '__name__') return 'the label __name__ is the metric name, not a label';
  if (!LABEL_NAME.test(name)) return `label name ${JSON.stringify(name)} must match [A-Za-z_][A-Za-z0-9_]*`;
  return null;
}

/** The name, and the labels it holds (sorted, empty values left out), or why there is none. */
export type SeriesNameResult =
  { readonly ok: true; readonly name: string; readonly labels: readonly Label[] } | { readonly ok: false; readonly reason: string };

/**
 * The canonical name of the series `metric` with `labels` (any order), or why there is none:
 * a metric name with a brace, quote or backslash (with labels, it would not read back), an
 * invalid or repeated label name, or a result that is not a valid metric name (too long, a
 * control character in a value, a leading `=`...). Labels with an empty value are left out.
 */
export function seriesName(metric: string, labels: readonly Label[]): SeriesNameResult {
  if (metric === '') return { ok: false, reason: 'the series has no metric name' };
  const kept = labels.filter((l) => l[1] !== '');
  if (kept.length > 0 && NAME_DELIMITERS.test(metric)) {
    return { ok: false, reason: `metric name ${JSON.stringify(metric)} must not contain { } " or \\ when the series has labels` };
  }
  let text = metric;
  const sorted = kept.length <= 1 ? kept : kept.sort((a, b) => compareCodePoints(a[0], b[0]));
  if (sorted.length > 0) {
    const parts: string[] = [];
    for (let i = 0; i < sorted.length; i++) {
      const [name, value] = sorted[i]!;
      const problem = labelNameProblem(name);
      if (problem !== null) return { ok: false, reason: problem };
      if (i > 0 && sorted[i - 1]![0] === name) return { ok: false, reason: `label ${name} is repeated` };
      parts.push(`${name}="${escapeLabelValue(value)}"`);
    }
    text = `${metric}{${parts.join(',')}}`;
  }
  const problem = metricNameProblem(text);
  if (problem !== null) return { ok: false, reason: `series name ${problem}` };
  return { ok: true, name: text, labels: sorted };
}

export type ParsedSeriesName = { readonly metric: string; readonly labels: Label[] };

/**
 * Reads a canonical series name back into its metric name and labels (in the name's order,
 * which is sorted for a canonical name). A name without `{` is a metric without labels. Null
 * when the text has a `{` but is not the grammar above (a metric named `a{b` by a JSON upload,
 * say): such a name is a plain metric name, not a labelled series. Reads every name that
 * `seriesName` writes; `seriesName(metric, labels)` of the result gives the text back when it
 * was canonical.
 */
export function parseSeriesName(text: string): ParsedSeriesName | null {
  const open = text.indexOf('{');
  if (open < 0) return { metric: text, labels: [] };
  if (open === 0 || text.charCodeAt(text.length - 1) !== 0x7d /* } */) return null;
  const metric = text.slice(0, open);
  if (NAME_DELIMITERS.test(metric)) return null;
  const labels: Label[] = [];
  let i = open + 1;
  const end = text.length - 1;
  if (i === end) return null; // `{}` is never written
  while (i < end) {
    const eq = text.indexOf('=', i);
    if (eq < 0 || eq >= end) return null;
    const name = text.slice(i, eq);
    if (labelNameProblem(name) !== null) return null;
    if (text.charCodeAt(eq + 1) !== 0x22 /* " */) return null;
    let value = '';
    let j = eq + 2;
    for (;;) {
      if (j >= end) return null;
      const c = text.charCodeAt(j);
      if (c === 0x22) break;
      if (c === 0x5c /* \ */) {
        const next = text.charAt(j + 1);
        if (next === 'n') value += '\n';
        else if (next === '\\' || next === '"') value += next;
        else return null;
        j += 2;
      } else {
        // Copy the run up to the next quote or backslash at once.
        let k = j + 1;
        while (k < end && text.charCodeAt(k) !== 0x22 && text.charCodeAt(k) !== 0x5c) k++;
        value += text.slice(j, k);
        j = k;
      }
    }
    labels.push([name, value]);
    i = j + 1;
    if (i < end) {
      if (text.charCodeAt(i) !== 0x2c /* , */) return null;
      i++;
      if (i === end) return null; // a trailing comma is never written
    }
  }
  return { metric, labels };
}
