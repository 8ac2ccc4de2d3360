/**
 * OTLP metric names as Prometheus names them (the OpenTelemetry-to-Prometheus compatibility
 * specification, as Prometheus' otlptranslator applies it with suffixes and escaping): the
 * name split into words at every character outside [A-Za-z0-9:], the unit's words added
 * unless the name has them (`s` → `seconds`, `By/s` → `bytes_per_second`, `1` → nothing,
 * `{requests}` annotations dropped), `total` last for a monotonic sum, `ratio` last for a gauge
 * of unit `1`, joined with `_`, and `_` before a leading digit.
 */

/** How the mapping names a metric: only monotonic sums end in _total, only gauges in _ratio. */
export type OtlpNameKind = 'gauge' | 'monotonic_counter' | 'counter' | 'histogram' | 'summary';

const UNITS: Readonly<Record<string, string>> = {
  d: 'days',
  h: 'hours',
  min: 'minutes',
  s: 'seconds',
  ms: 'milliseconds',
  us: 'microseconds',
  ns: 'nanoseconds',
  By: 'bytes',
  KiBy: 'kibibytes',
  MiBy: 'mebibytes',
  GiBy: 'gibibytes',
  TiBy: 'tibibytes',
  KBy: 'kilobytes',
  MBy: 'megabytes',
  GBy: 'gigabytes',
  TBy: 'terabytes',
  m: 'meters',
  V: 'volts',
  A: 'amperes',
  J: 'joules',
  W: 'watts',
  g: 'grams',
  Cel: 'celsius',
  Hz: 'hertz',
  '1': '',
  '%': 'percent',
};

const PER_UNITS: Readonly<Record<string, string>> = {
  s: 'second',
  m: 'minute',
  h: 'hour',
  d: 'day',
  w: 'week',
  mo: 'month',
  y: 'year',
};

const words = (text: string): string[] => text.split(/[^A-Za-z0-9:]+/).filter((w) => w !== '');

/** A unit word in the name's alphabet: other characters as `_`, runs of `_` as one, no leading `_`. */
const cleanUnit = (unit: string): string =>
  unit
    .replace(/[^A-Za-z0-9:]/g, '_')
    .replace(/_+/g, '_')
    .replace(/^_/, '');

/** The main and per parts of a unit as name words (`By/s` → ['bytes', 'per_second']). */
export function unitSuffixes(unit: string): [main: string, per: string] {
  const slash = unit.indexOf('/');
  const mainText = (slash < 0 ? unit : unit.slice(0, slash)).trim();
  const perText = slash < 0 ? '' : unit.slice(slash + 1).trim();
  const main = mainText !== '' && !/[{}]/.test(mainText) ? (UNITS[mainText] ?? mainText) : '';
  let per = perText !== '' && !/[{}]/.test(perText) ? (PER_UNITS[perText] ?? perText) : '';
  if (per !== '') per = `per_${per}`;
  return [cleanUnit(main), cleanUnit(per)];
}

/** The Prometheus name of an OTLP metric, or '' when nothing of it is left. */
export function otlpMetricName(name: string, unit: string, kind: OtlpNameKind): string {
  let tokens = words(name);
  let [main, per] = unitSuffixes(unit);
  if (tokens.includes(main)) main = '';
  if (per === 'per_') per = '';
  else {
    per = per.replace(/_$/, '');
    if (tokens.includes(per)) per = '';
  }
  if (per !== '') main = main.replace(/_$/, '');
  if (main !== '') tokens.push(main);
  if (per !== '') tokens.push(per);
  if (kind === 'monotonic_counter') tokens = [...tokens.filter((t) => t !== 'total'), 'total'];
  if (unit === '1' && kind === 'gauge') tokens = [...tokens.filter((t) => t !== 'ratio'), 'ratio'];
  const joined = tokens.join('_');
  return /^[0-9]/.test(joined) ? `_${joined}` : joined;
}

/**
 * A float as Go's strconv.FormatFloat(v, 'f', -1, 64) writes it, as the mapping writes `le`
 * and `quantile`: the shortest digits that read back, never an exponent (1e-7 → 0.0000001),
 * and +Inf, -Inf, NaN.
 */
export function formatFloat(v: number): string {
  if (v === Infinity) return '+Inf';
  if (v === -Infinity) return '-Inf';
  if (Number.isNaN(v)) return 'NaN';
  const text = String(v);
  const e = text.indexOf('e');
  if (e < 0) return text;
  const negative = text.startsWith('-');
  const mantissa = text.slice(negative ? 1 : 0, e);
  const exponent = Number(text.slice(e + 1));
  const point = mantissa.indexOf('.');
  const digits = mantissa.replace('.', '');
  const intLength = (point < 0 ? mantissa.length : point) + exponent;
  let out: string;
  if (intLength <= 0) out = `0.${'0'.repeat(-intLength)}${digits}`;
  else if (intLength >= digits.length) out = digits + '0'.repeat(intLength - digits.length);
  else out = `${digits.slice(0, intLength)}.${digits.slice(intLength)}`;
  return negative ? `-${out}` : out;
}
