import { LABEL_NAME_RE, METRIC_NAME, METRIC_NAME_RE, labelsOf, type Label, type Labels } from './labels.ts';

/**
 * Series names in Prometheus' canonical form, `name{label="value",...}`: label names sorted,
 * values escaped (`\\`, `\"`, `\n`), the bare name when there are no labels. The protocol
 * decoders write metric names this way; the PromQL API reads them back into labels.
 *
 * A catalog name is canonical when it is exactly what `formatSeriesName` writes for the labels
 * it parses to. Any string is a valid metric name (the contract lets users upload anything),
 * so a name that is not canonical (unsorted or repeated labels, an empty value, a name or
 * label name Prometheus would not accept unquoted, a stray brace or escape) is read whole as
 * `__name__` with no other label: it stays selectable by its exact name, and two catalog
 * names never parse to the same label set.
 */
export function parseSeriesName(text: string): Labels {
  return parseCanonical(text) ?? [[METRIC_NAME, text]];
}

/** The canonical name of a label set (the inverse of parseSeriesName for canonical names). */
export function formatSeriesName(labels: Labels): string {
  const sorted = labelsOf(labels);
  const name = sorted.find(([n]) => n === METRIC_NAME)?.[1] ?? '';
  const rest = sorted.filter(([n]) => n !== METRIC_NAME);
  if (rest.length === 0) return name;
  return `${name}{${rest.map(([n, v]) => `${n}="${escapeValue(v)}"`).join(',')}}`;
}

function escapeValue(value: string): string {
  return value.replace(/[\\"\n]/g, (c) => (c === '\n' ? '\\n' : `\\${c}`));
}

/** The labels of a canonical name, or null when the name is not canonical. */
function parseCanonical(text: string): Labels | null {
  const brace = text.indexOf('{');
  if (brace < 0) return METRIC_NAME_RE.test(text) ? [[METRIC_NAME, text]] : null;
  const name = text.slice(0, brace);
  if (!METRIC_NAME_RE.test(name) || !text.endsWith('}')) return null;
  const pairs: Label[] = [];
  let i = brace + 1;
  const end = text.length - 1;
  while (i < end) {
    if (pairs.length > 0) {
      if (text[i] !== ',') return null;
      i += 1;
    }
    const eq = text.indexOf('="', i);
    if (eq < 0) return null;
    const labelName = text.slice(i, eq);
    if (!LABEL_NAME_RE.test(labelName) || labelName === METRIC_NAME) return null;
    const value = readQuoted(text, eq + 2, end);
    if (value === null) return null;
    pairs.push([labelName, value.value]);
    i = value.next;
  }
  if (pairs.length === 0) return null;
  const labels = labelsOf([[METRIC_NAME, name], ...pairs]);
  // Canonical only if writing the labels back gives the same text: sorted, unique, no empty value.
  return formatSeriesName(labels) === text ? labels : null;
}

/** A quoted value from just after its opening quote: its unescaped text and the index after the closing quote. */
function readQuoted(text: string, from: number, end: number): { value: string; next: number } | null {
  let out = '';
  for (let i = from; i < end; i += 1) {
    const c = text[i]!;
    if (c === '"') return { value: out, next: i + 1 };
    if (c === '\n') return null;
    if (c === '\\') {
      const e = text[i + 1];
      if (e === 'n') out += '\n';
      else if (e === '\\' || e === '"') out += e;
      else return null;
      i += 1;
    } else out += c;
  }
  return null;
}
