import { labelsKey, labelsOf, labelValue, METRIC_NAME, onlyLabels, withoutLabels, type Labels } from '../series/labels.ts';
import { isComparison, isSetOperator, type Binary, type BinaryOp, type SetOp } from './ast.ts';
import { execution } from './errors.ts';
import { dropMetricName, type Sample, type Value, type Vector } from './vector.ts';

/** Go's math.Pow where it differs from JavaScript's: 1 to any power and (-1) to ±Inf are 1. */
function pow(x: number, y: number): number {
  if (x === 1) return 1;
  if (x === -1 && !Number.isFinite(y) && !Number.isNaN(y)) return 1;
  return x ** y;
}

/** vectorElemBinop: the value and whether the element stays (comparisons filter, keeping the left value). */
function elem(op: BinaryOp, l: number, r: number): [number, boolean] {
  switch (op) {
    case '+':
      return [l + r, true];
    case '-':
      return [l - r, true];
    case '*':
      return [l * r, true];
    case '/':
      return [l / r, true];
    case '%':
      return [l % r, true];
    case '^':
      return [pow(l, r), true];
    case '==':
      return [l, l === r];
    case '!=':
      return [l, l !== r];
    case '>':
      return [l, l > r];
    case '<':
      return [l, l < r];
    case '>=':
      return [l, l >= r];
    case '<=':
      return [l, l <= r];
    case 'and':
    case 'or':
    case 'unless':
      throw execution(`set operator "${op}" has no element-wise value`);
    default: {
      const never: never = op;
      return never;
    }
  }
}

/** Arithmetic drops the metric name; a filtering comparison keeps it. */
const dropsName = (op: BinaryOp) => !isComparison(op);

export function binaryOp(e: Binary, lhs: Value, rhs: Value, t: number): Value {
  if (isSetOperator(e.op)) {
    if (lhs.type !== 'vector' || rhs.type !== 'vector') throw execution(`set operator "${e.op}" not allowed in binary scalar expression`);
    return { type: 'vector', samples: setOperation(e, e.op, lhs.samples, rhs.samples, t) };
  }
  if (lhs.type === 'scalar' && rhs.type === 'scalar') {
    const [v, keep] = elem(e.op, lhs.v, rhs.v);
    return { type: 'scalar', v: isComparison(e.op) ? (keep ? 1 : 0) : v };
  }
  if (lhs.type === 'vector' && rhs.type === 'scalar') return { type: 'vector', samples: vectorScalar(e, lhs.samples, rhs.v, false, t) };
  if (lhs.type === 'scalar' && rhs.type === 'vector') return { type: 'vector', samples: vectorScalar(e, rhs.samples, lhs.v, true, t) };
  if (lhs.type === 'vector' && rhs.type === 'vector') return { type: 'vector', samples: vectorVector(e, lhs.samples, rhs.samples, t) };
  throw execution('binary expression between unexpected types');
}

/** and, or, unless (VectorAnd, VectorOr, VectorUnless): matched on the same signatures, labels kept as they are. */
function setOperation(e: Binary, op: SetOp, lhs: Vector, rhs: Vector, t: number): Sample[] {
  const at = (s: Sample): Sample => ({ labels: s.labels, v: s.v, t });
  switch (op) {
    case 'and': {
      const right = new Set(rhs.map((s) => signature(s.labels, e)));
      return lhs.filter((s) => right.has(signature(s.labels, e))).map(at);
    }
    case 'unless': {
      const right = new Set(rhs.map((s) => signature(s.labels, e)));
      return lhs.filter((s) => !right.has(signature(s.labels, e))).map(at);
    }
    case 'or': {
      const left = new Set(lhs.map((s) => signature(s.labels, e)));
      return [...lhs.map(at), ...rhs.filter((s) => !left.has(signature(s.labels, e))).map(at)];
    }
    default: {
      const never: never = op;
      return never;
    }
  }
}

function vectorScalar(e: Binary, vector: Vector, scalar: number, swap: boolean, t: number): Sample[] {
  const out: Sample[] = [];
  for (const s of vector) {
    const [l, r] = swap ? [scalar, s.v] : [s.v, scalar];
    let [value, keep] = elem(e.op, l, r);
    // A comparison keeps the vector's own value, even when the vector is on the right.
    if (isComparison(e.op) && swap) value = r;
    if (e.bool) {
      value = keep ? 1 : 0;
      keep = true;
    }
    if (!keep) continue;
    out.push({ labels: dropsName(e.op) || e.bool ? dropMetricName(s.labels) : s.labels, v: value, t });
  }
  return out;
}

/** Per operation, each label set's signature and result labels, kept across the steps of a range query. */
const memos = new WeakMap<Binary, { signatures: WeakMap<Labels, string>; results: WeakMap<Labels, Labels> }>();

function memoOf(e: Binary) {
  let memo = memos.get(e);
  if (!memo) memos.set(e, (memo = { signatures: new WeakMap(), results: new WeakMap() }));
  return memo;
}

/** The labels two sides are matched on: on(…) only those, ignoring(…) or none all but those and the name. */
function signature(labels: Labels, e: Binary): string {
  const { signatures } = memoOf(e);
  let sig = signatures.get(labels);
  if (sig === undefined) {
    const m = e.matching;
    sig = m?.on ? labelsKey(onlyLabels(labels, new Set(m.labels))) : labelsKey(withoutLabels(labels, new Set([METRIC_NAME, ...(m?.labels ?? [])])));
    signatures.set(labels, sig);
  }
  return sig;
}

function resultLabels(l: Labels, e: Binary, one: Labels): Labels {
  const group = e.matching?.group;
  if (group) {
    // Many-to-one: the "many" side's labels, with the included ones taken from the "one" side.
    const base = new Map(dropsName(e.op) ? dropMetricName(l) : l);
    for (const name of group.include) {
      const v = labelValue(one, name);
      if (v !== '') base.set(name, v);
      else base.delete(name);
    }
    const labels = labelsOf(base);
    return e.bool ? dropMetricName(labels) : labels;
  }
  const { results } = memoOf(e);
  let out = results.get(l);
  if (out === undefined) results.set(l, (out = computeResultLabels(l, e)));
  return out;
}

function computeResultLabels(l: Labels, e: Binary): Labels {
  let labels = dropsName(e.op) ? dropMetricName(l) : l;
  const m = e.matching;
  if (m?.on) labels = onlyLabels(labels, new Set(m.labels));
  else if (m) labels = withoutLabels(labels, new Set(m.labels));
  return e.bool ? dropMetricName(labels) : labels;
}

/**
 * Matching as Prometheus' VectorBinop: one-to-one, or many-to-one (group_left; group_right swaps
 * the sides). A duplicate on the "one" side, or two results alike, is an error.
 */
function vectorVector(e: Binary, left: Vector, right: Vector, t: number): Sample[] {
  const swapped = e.matching?.group?.side === 'right';
  const [lhs, rhs] = swapped ? [right, left] : [left, right];
  const one = new Map<string, Sample>();
  for (const s of rhs) {
    const sig = signature(s.labels, e);
    if (one.has(sig)) {
      throw execution(
        `found duplicate series for the match group on the ${swapped ? 'left' : 'right'} hand-side of the operation; many-to-many matching not allowed: matching labels must be unique on one side`,
      );
    }
    one.set(sig, s);
  }
  const matched = new Map<string, Set<string>>();
  const out: Sample[] = [];
  for (const ls of lhs) {
    const sig = signature(ls.labels, e);
    const rs = one.get(sig);
    if (!rs) continue;
    const [vl, vr] = swapped ? [rs.v, ls.v] : [ls.v, rs.v];
    let [value, keep] = elem(e.op, vl, vr);
    if (e.bool) {
      value = keep ? 1 : 0;
      keep = true;
    }
    if (!keep) continue;
    const labels = resultLabels(ls.labels, e, rs.labels);
    const inserted = matched.get(sig);
    if (!e.matching?.group) {
      if (inserted) throw execution('multiple matches for labels: many-to-one matching must be explicit (group_left/group_right)');
      matched.set(sig, new Set());
    } else {
      const key = labelsKey(labels);
      if (inserted?.has(key)) throw execution('multiple matches for labels: grouping labels must ensure unique matches');
      if (inserted) inserted.add(key);
      else matched.set(sig, new Set([key]));
    }
    out.push({ labels, v: value, t });
  }
  return out;
}
