import { LABEL_NAME_RE, labelsKey, labelsOf, labelValue, METRIC_NAME, withoutLabels, type Labels } from '../series/labels.ts';
import { RE2JS } from 're2js';
import { RANGE_FUNCTIONS, type Call, type Expr, type Matcher, type MatrixSelector, type RangeFunction, type VectorSelector } from './ast.ts';
import { aggregate } from './aggregate.ts';
import { binaryOp } from './binary.ts';
import { execution } from './errors.ts';
import { bucketQuantile, evalRangeFunction, type Bucket } from './functions.ts';
import { assertUniqueLabelsets, dropMetricName, type Sample, type Value } from './vector.ts';

/** The samples of one series a selector chose, ascending by time, one per timestamp. */
export type SeriesData = { readonly labels: Labels; readonly ts: readonly number[]; readonly vs: readonly number[] };
/** What the metric store answered for each selector of the query, by selector id. */
export type Fetched = ReadonlyMap<number, readonly SeriesData[]>;

/**
 * A range function's value per step for one series, as reduced when its samples were read (see
 * SampleWindow.reduce): step k is the k-th evaluation time of the query.
 */
export type StepValues = { readonly labels: Labels; readonly present: Uint8Array; readonly values: Float64Array };

export type EvalOptions = {
  /** The selectors whose function was reduced per step, by selector id. */
  readonly reduced?: ReadonlyMap<number, readonly StepValues[]>;
  /** The aggregations of such a function folded too, per group, by the selector id of their range argument. */
  readonly reducedAggregates?: ReadonlyMap<number, readonly StepValues[]>;
  /** How far back an instant selector looks for a series' latest sample (Prometheus' default: 5 minutes). */
  readonly lookbackMs: number;
  /** Called between steps; throws to stop an evaluation past its time. */
  readonly checkpoint?: () => void;
};

export type Point = readonly [t: number, v: number];
/** A series of a range query's answer; `steps` when its values are a reduction's at regular steps (written out from there, no point built). */
export type SeriesResult = { readonly labels: Labels; readonly points: Point[]; readonly steps?: RegularSteps };
/** Values at startMs + k·stepMs where present[k] is 1. */
export type RegularSteps = { readonly startMs: number; readonly stepMs: number; readonly values: StepValues };

/** A reduced series of an answer: its points are built only when something asks for them (the JSON is written from the steps). */
class RegularSeries implements SeriesResult {
  readonly labels: Labels;
  readonly steps: RegularSteps;
  private built: Point[] | null = null;
  constructor(labels: Labels, steps: RegularSteps) {
    this.labels = labels;
    this.steps = steps;
  }

  get points(): Point[] {
    if (this.built) return this.built;
    const { startMs, stepMs, values } = this.steps;
    this.built = [];
    for (let k = 0; k < values.present.length; k++) if (values.present[k] === 1) this.built.push([startMs + k * stepMs, values.values[k]!]);
    return this.built;
  }
}
export type QueryResult =
  | { readonly resultType: 'scalar'; readonly t: number; readonly v: number }
  | { readonly resultType: 'vector'; readonly t: number; readonly samples: readonly { labels: Labels; v: number }[] }
  | { readonly resultType: 'matrix'; readonly series: readonly SeriesResult[] };

/** The first index of a sorted array whose value is >= x. */
function lowerBound(a: readonly number[], x: number): number {
  let lo = 0;
  let hi = a.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (a[mid]! < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The first index whose value is > x. */
function upperBound(a: readonly number[], x: number): number {
  let lo = 0;
  let hi = a.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (a[mid]! <= x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Go's strconv.ParseFloat as histogram_quantile reads `le`: null where Go fails. */
function parseFloatGo(text: string): number | null {
  const t = text.toLowerCase();
  if (/^[+-]?(inf|infinity)$/.test(t)) return t.startsWith('-') ? Number.NEGATIVE_INFINITY : Number.POSITIVE_INFINITY;
  if (t === 'nan') return Number.NaN;
  if (!/^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/.test(t)) return null;
  return Number(text);
}

class Evaluator {
  private readonly fetched: Fetched;
  private readonly lookbackMs: number;
  private readonly reduced: ReadonlyMap<number, readonly StepValues[]>;
  private readonly reducedAggregates: ReadonlyMap<number, readonly StepValues[]>;
  private readonly sorted = new Map<number, readonly SeriesData[]>();
  private readonly startMs: number;
  private readonly stepMs: number;
  constructor(fetched: Fetched, options: EvalOptions, startMs: number, stepMs: number) {
    this.fetched = fetched;
    this.lookbackMs = options.lookbackMs;
    this.reduced = new Map(
      [...(options.reduced ?? new Map<number, readonly StepValues[]>())].map(([id, values]) => [
        id,
        [...values].sort((a, b) => compareLabels(a.labels, b.labels)),
      ]),
    );
    this.reducedAggregates = options.reducedAggregates ?? new Map();
    this.startMs = startMs;
    this.stepMs = stepMs;
  }

  /**
   * A selector's series in Prometheus' order (its storage answers series sorted by labels):
   * aggregations add in input order, so the same order gives the same floats.
   */
  private series(sel: VectorSelector): readonly SeriesData[] {
    let sorted = this.sorted.get(sel.id);
    if (!sorted) this.sorted.set(sel.id, (sorted = [...(this.fetched.get(sel.id) ?? [])].sort((a, b) => compareLabels(a.labels, b.labels))));
    return sorted;
  }

  eval(e: Expr, t: number): Value {
    switch (e.kind) {
      case 'number':
        return { type: 'scalar', v: e.value };
      case 'string':
        throw execution('a string is only an argument of label_replace or label_join');
      case 'vector':
        return { type: 'vector', samples: this.instant(e, t) };
      case 'matrix':
        throw execution('a range vector is only allowed as a function argument here');
      case 'call':
        return this.call(e, t);
      case 'aggregate': {
        const arg = e.expr.kind === 'call' ? e.expr.args[0] : undefined;
        const stored = arg?.kind === 'matrix' ? this.reducedAggregates.get(arg.selector.id) : undefined;
        if (stored) return { type: 'vector', samples: this.atStep(stored, t) };
        const param = e.param ? this.scalar(e.param, t) : Number.NaN;
        const samples = aggregate(e, this.vector(e.expr, t), param, t);
        assertUniqueLabelsets(samples);
        return { type: 'vector', samples };
      }
      case 'binary': {
        const value = binaryOp(e, this.eval(e.lhs, t), this.eval(e.rhs, t), t);
        if (value.type === 'vector') assertUniqueLabelsets(value.samples);
        return value;
      }
      case 'negate': {
        const inner = this.eval(e.expr, t);
        if (inner.type === 'scalar') return { type: 'scalar', v: -inner.v };
        const samples = inner.samples.map((s) => ({ labels: dropMetricName(s.labels), v: -s.v, t }));
        assertUniqueLabelsets(samples);
        return { type: 'vector', samples };
      }
      default: {
        const never: never = e;
        return never;
      }
    }
  }

  /** The reduced values of the step at t. */
  private atStep(series: readonly StepValues[], t: number): Sample[] {
    const k = Math.round((t - this.startMs) / this.stepMs);
    const out: Sample[] = [];
    for (const s of series) if (s.present[k] === 1) out.push({ labels: s.labels, v: s.values[k]!, t });
    return out;
  }

  private scalar(e: Expr, t: number): number {
    const v = this.eval(e, t);
    if (v.type !== 'scalar') throw execution('expected a scalar');
    return v.v;
  }

  private vector(e: Expr, t: number): readonly Sample[] {
    const v = this.eval(e, t);
    if (v.type !== 'vector') throw execution('expected an instant vector');
    return v.samples;
  }

  /** Each series' latest sample in [t − offset − lookback, t − offset], with its own timestamp. */
  private instant(sel: VectorSelector, t: number): Sample[] {
    const ref = t - sel.offsetMs;
    const out: Sample[] = [];
    for (const s of this.series(sel)) {
      const i = upperBound(s.ts, ref) - 1;
      if (i < 0 || s.ts[i]! < ref - this.lookbackMs) continue;
      out.push({ labels: s.labels, v: s.vs[i]!, t: s.ts[i]! });
    }
    return out;
  }

  /** Each series' samples in [t − offset − range, t − offset] (both ends included, as in Prometheus 2). */
  windows(m: MatrixSelector, t: number): { data: SeriesData; lo: number; hi: number; start: number; end: number }[] {
    const end = t - m.selector.offsetMs;
    const start = end - m.rangeMs;
    const out = [];
    for (const data of this.series(m.selector)) {
      const lo = lowerBound(data.ts, start);
      const hi = upperBound(data.ts, end) - 1;
      if (hi >= lo) out.push({ data, lo, hi, start, end });
    }
    return out;
  }

  private call(e: Call, t: number): Value {
    if ((RANGE_FUNCTIONS as readonly string[]).includes(e.func)) return this.rangeCall(e, t);
    switch (e.func) {
      case 'time':
        return { type: 'scalar', v: t / 1000 };
      case 'abs':
        return this.map(e, t, Math.abs);
      case 'ceil':
        return this.map(e, t, Math.ceil);
      case 'floor':
        return this.map(e, t, Math.floor);
      case 'sqrt':
        return this.map(e, t, Math.sqrt);
      case 'exp':
        return this.map(e, t, Math.exp);
      case 'ln':
        return this.map(e, t, Math.log);
      case 'log2':
        return this.map(e, t, Math.log2);
      case 'log10':
        return this.map(e, t, Math.log10);
      case 'sgn':
        return this.map(e, t, (v) => (v < 0 ? -1 : v > 0 ? 1 : v));
      case 'scalar': {
        // The value of a vector of exactly one element, else NaN.
        const v = this.vector(e.args[0]!, t);
        return { type: 'scalar', v: v.length === 1 ? v[0]!.v : Number.NaN };
      }
      case 'vector':
        return { type: 'vector', samples: [{ labels: [], v: this.scalar(e.args[0]!, t), t }] };
      case 'label_replace':
        return this.relabel(e, t, labelReplacer(e.args.slice(1).map((a) => (a as { value: string }).value) as [string, string, string, string]));
      case 'label_join':
        return this.relabel(e, t, labelJoiner(e.args.slice(1).map((a) => (a as { value: string }).value)));
      case 'absent': {
        const arg = e.args[0]!;
        if (this.vector(arg, t).length > 0) return { type: 'vector', samples: [] };
        return { type: 'vector', samples: [{ labels: arg.kind === 'vector' ? absentLabels(arg.matchers) : [], v: 1, t }] };
      }
      case 'sort':
      case 'sort_desc': {
        // Keeps the labels; the order shows in an instant query's answer only.
        const dir = e.func === 'sort' ? 1 : -1;
        const samples = [...this.vector(e.args[0]!, t)]
          .map((s) => ({ ...s, t }))
          .sort((a, b) => (Number.isNaN(a.v) ? 1 : Number.isNaN(b.v) ? -1 : dir * (a.v - b.v)));
        return { type: 'vector', samples };
      }
      case 'clamp_min': {
        const min = this.scalar(e.args[1]!, t);
        return this.map(e, t, (v) => Math.max(min, v));
      }
      case 'clamp_max': {
        const max = this.scalar(e.args[1]!, t);
        return this.map(e, t, (v) => Math.min(max, v));
      }
      case 'round': {
        const toNearest = e.args.length > 1 ? this.scalar(e.args[1]!, t) : 1;
        const inverse = 1 / toNearest;
        return this.map(e, t, (v) => Math.floor(v * inverse + 0.5) / inverse);
      }
      case 'timestamp': {
        const out = this.vector(e.args[0]!, t).map((s) => ({ labels: dropMetricName(s.labels), v: s.t / 1000, t }));
        assertUniqueLabelsets(out);
        return { type: 'vector', samples: out };
      }
      case 'histogram_quantile':
        return { type: 'vector', samples: this.histogramQuantile(this.scalar(e.args[0]!, t), this.vector(e.args[1]!, t), t) };
      default:
        throw execution(`function ${e.func} is not evaluated here`);
    }
  }

  /** A function over a range vector (rate, *_over_time, ...): one sample per window with a value. */
  private rangeCall(e: Call, t: number): Value {
    const samples: Sample[] = [];
    const func = e.func as RangeFunction;
    const m = e.args.find((a) => a.kind === 'matrix') as MatrixSelector;
    if (func === 'absent_over_time') {
      const absent = this.windows(m, t).length === 0;
      return { type: 'vector', samples: absent ? [{ labels: absentLabels(m.selector.matchers), v: 1, t }] : [] };
    }
    // Prometheus 2.42 drops the metric name from every range function's result but last_over_time's.
    const labelsOf = (l: Labels) => (func === 'last_over_time' ? l : dropMetricName(l));
    const reduced = this.reduced.get(m.selector.id);
    if (reduced) {
      const out = this.atStep(reduced, t).map((s) => ({ ...s, labels: labelsOf(s.labels) }));
      assertUniqueLabelsets(out);
      return { type: 'vector', samples: out };
    }
    const other = e.args.find((a) => a !== m);
    const param = other ? this.scalar(other, t) : Number.NaN;
    for (const w of this.windows(m, t)) {
      const v = evalRangeFunction(
        func,
        { ts: w.data.ts, vs: w.data.vs, lo: w.lo, hi: w.hi },
        { rangeStartMs: w.start, rangeEndMs: w.end, rangeSeconds: m.rangeMs / 1000, evalMs: t },
        param,
      );
      if (v !== null) samples.push({ labels: labelsOf(w.data.labels), v, t });
    }
    assertUniqueLabelsets(samples);
    return { type: 'vector', samples };
  }

  /** New labels for each element, its name and value kept (label_replace, label_join). */
  private relabel(e: Call, t: number, relabel: (labels: Labels) => Labels): Value {
    const out = this.vector(e.args[0]!, t).map((s) => ({ labels: relabel(s.labels), v: s.v, t }));
    assertUniqueLabelsets(out);
    return { type: 'vector', samples: out };
  }

  /** A function of each element's value; the metric name is dropped, as every such function does. */
  private map(e: Call, t: number, f: (v: number) => number): Value {
    const out = this.vector(e.args[0]!, t).map((s) => ({ labels: dropMetricName(s.labels), v: f(s.v), t }));
    assertUniqueLabelsets(out);
    return { type: 'vector', samples: out };
  }

  private histogramQuantile(q: number, input: readonly Sample[], t: number): Sample[] {
    const groups = new Map<string, { labels: Labels; buckets: Bucket[] }>();
    const drop = new Set(['le', METRIC_NAME]);
    for (const s of input) {
      const upperBound = parseFloatGo(labelValue(s.labels, 'le'));
      if (upperBound === null) continue; // no le, or not a number: not a bucket
      const labels = withoutLabels(s.labels, drop);
      const key = labelsKey(labels);
      let g = groups.get(key);
      if (!g) groups.set(key, (g = { labels, buckets: [] }));
      g.buckets.push({ upperBound, count: s.v });
    }
    return [...groups.values()].map((g) => ({ labels: g.labels, v: bucketQuantile(q, g.buckets), t }));
  }
}

/** label_replace(v, dst, replacement, src, regex): where the anchored regex matches src's value, dst becomes the expanded replacement. */
function labelReplacer([dst, replacement, src, regex]: [string, string, string, string]): (labels: Labels) => Labels {
  if (!LABEL_NAME_RE.test(dst)) throw execution(`invalid destination label name in label_replace(): ${dst}`);
  let re;
  try {
    re = RE2JS.compile(`^(?:${regex})$`);
  } catch {
    throw execution(`invalid regular expression in label_replace(): ${regex}`);
  }
  const memo = new Map<Labels, Labels>();
  return (labels) => {
    let out = memo.get(labels);
    if (out) return out;
    const m = re.matcher(labelValue(labels, src));
    if (!m.matches()) out = labels;
    else {
      const next = new Map(labels);
      next.delete(dst);
      const value = expandTemplate(replacement, (group) => m.group(group) ?? '', re.groupCount(), re.namedGroups());
      if (value !== '') next.set(dst, value);
      out = labelsOf(next);
    }
    memo.set(labels, out);
    return out;
  };
}

/**
 * Go's Regexp.Expand: $1, ${1}, $name, ${name}; a name is the longest run of letters, digits
 * and underscores ($1x names the group "1x"); an unknown group is empty; $$ is a $.
 */
export function expandTemplate(template: string, group: (g: number | string) => string, groups: number, names: Readonly<Record<string, number>>): string {
  let out = '';
  for (let i = 0; i < template.length;) {
    const c = template[i]!;
    if (c !== '$') {
      out += c;
      i += 1;
      continue;
    }
    if (template[i + 1] === '$') {
      out += '$';
      i += 2;
      continue;
    }
    const braced = template[i + 1] === '{';
    const m = (braced ? /^\{([A-Za-z0-9_]+)\}/ : /^([A-Za-z0-9_]+)/).exec(template.slice(i + 1));
    if (!m) {
      out += '$';
      i += 1;
      continue;
    }
    const name = m[1]!;
    i += 1 + m[0].length;
    if (/^\d+$/.test(name) && !(name.length > 1 && name.startsWith('0')) && name.length <= 8) {
      const n = Number(name);
      if (n <= groups) out += group(n);
    } else if (name in names) out += group(name);
  }
  return out;
}

/** label_join(v, dst, separator, src...): dst becomes the sources' values joined (removed when that is empty). */
function labelJoiner([dst, separator, ...sources]: string[]): (labels: Labels) => Labels {
  if (!LABEL_NAME_RE.test(dst!)) throw execution(`invalid destination label name in label_join(): ${dst}`);
  for (const s of sources) if (!LABEL_NAME_RE.test(s)) throw execution(`invalid source label name in label_join(): ${s}`);
  return (labels) => {
    const next = new Map(labels);
    const value = sources.map((s) => labelValue(labels, s)).join(separator);
    if (value === '') next.delete(dst!);
    else next.set(dst!, value);
    return labelsOf(next);
  };
}

/** The labels absent() answers with: those an equality matcher names exactly once (Prometheus' createLabelsForAbsentFunction). */
function absentLabels(matchers: readonly Matcher[]): Labels {
  const set = new Map<string, string>();
  const dropped: string[] = [];
  for (const m of matchers) {
    if (m.name === METRIC_NAME) continue;
    if (m.op === '=' && !set.has(m.name)) set.set(m.name, m.value);
    else dropped.push(m.name);
  }
  for (const name of dropped) set.delete(name);
  return labelsOf(set);
}

/** Prometheus' order of label sets (labels.Compare): pair by pair, name then value, then length. */
export function compareLabels(a: Labels, b: Labels): number {
  for (let i = 0; i < Math.min(a.length, b.length); i += 1) {
    const [an, av] = a[i]!;
    const [bn, bv] = b[i]!;
    if (an !== bn) return an < bn ? -1 : 1;
    if (av !== bv) return av < bv ? -1 : 1;
  }
  return a.length - b.length;
}

/** An instant query at t (epoch ms). A bare range selector answers its raw samples, as Prometheus does. */
export function evalInstant(e: Expr, fetched: Fetched, t: number, options: EvalOptions): QueryResult {
  const ev = new Evaluator(fetched, options, t, 1);
  if (e.kind === 'matrix') {
    const series = ev.windows(e, t).map((w) => ({
      labels: w.data.labels,
      points: w.data.ts.slice(w.lo, w.hi + 1).map((ts, i): Point => [ts, w.data.vs[w.lo + i]!]),
    }));
    return { resultType: 'matrix', series: series.sort((a, b) => compareLabels(a.labels, b.labels)) };
  }
  const v = ev.eval(e, t);
  if (v.type === 'scalar') return { resultType: 'scalar', t, v: v.v };
  return { resultType: 'vector', t, samples: v.samples.map((s) => ({ labels: s.labels, v: s.v })) };
}

/** The evaluation times of a range query: start, start + step, … up to end (Prometheus aligns nothing else). */
export function rangeSteps(startMs: number, endMs: number, stepMs: number): number[] {
  const steps: number[] = [];
  for (let t = startMs; t <= endMs; t += stepMs) steps.push(t);
  return steps;
}

/** A range query: the expression at every step, one series per label set (a scalar becomes one series without labels). */
export function evalRange(e: Expr, fetched: Fetched, startMs: number, endMs: number, stepMs: number, options: EvalOptions): QueryResult {
  if (e.kind === 'matrix') throw execution('invalid expression type "range vector" for range query, must be Scalar or instant Vector');
  const whole = reducedSeries(e, options);
  if (whole) return { resultType: 'matrix', series: matrixOf(whole, startMs, stepMs, options.checkpoint) };
  const ev = new Evaluator(fetched, options, startMs, stepMs);
  const out = new Map<string, SeriesResult>();
  for (const t of rangeSteps(startMs, endMs, stepMs)) {
    options.checkpoint?.();
    const v = ev.eval(e, t);
    const samples = v.type === 'scalar' ? [{ labels: [] as Labels, v: v.v }] : v.samples;
    for (const s of samples) {
      const key = labelsKey(s.labels);
      let series = out.get(key);
      if (!series) out.set(key, (series = { labels: s.labels, points: [] }));
      series.points.push([t, s.v]);
    }
  }
  return { resultType: 'matrix', series: [...out.values()].sort((a, b) => compareLabels(a.labels, b.labels)) };
}

/**
 * The series of a query that is all one reduced function (rate(x[5m])) or one aggregation of it
 * (sum by (job) (rate(x[5m]))), with their answer's labels: the reduced values already are the
 * answer at every step, so no step is evaluated. null otherwise, or when two series would share
 * their labels without the name (then each step is evaluated, and raises Prometheus' error where
 * both have a value).
 */
function reducedSeries(e: Expr, options: EvalOptions): Array<{ labels: Labels; values: StepValues }> | null {
  const arg = e.kind === 'call' || (e.kind === 'aggregate' && e.expr.kind === 'call') ? (e.kind === 'call' ? e : (e.expr as Call)).args[0] : undefined;
  if (arg?.kind !== 'matrix') return null;
  if (e.kind === 'aggregate') {
    const groups = options.reducedAggregates?.get(arg.selector.id);
    return groups ? groups.map((g) => ({ labels: g.labels, values: g })) : null;
  }
  const series = (e as Call).args.length === 1 ? options.reduced?.get(arg.selector.id) : undefined;
  if (!series) return null;
  const keep = (e as Call).func === 'last_over_time';
  const out = series.map((s) => ({ labels: keep ? s.labels : dropMetricName(s.labels), values: s }));
  return new Set(out.map((s) => labelsKey(s.labels))).size === out.length ? out : null;
}

/** Each series where it has a value, the series sorted by labels; one without any is left out. */
function matrixOf(series: ReadonlyArray<{ labels: Labels; values: StepValues }>, startMs: number, stepMs: number, checkpoint?: () => void): SeriesResult[] {
  const out: SeriesResult[] = [];
  for (const { labels, values } of series) {
    checkpoint?.();
    if (values.present.includes(1)) out.push(new RegularSeries(labels, { startMs, stepMs, values }));
  }
  return out.sort((a, b) => compareLabels(a.labels, b.labels));
}
