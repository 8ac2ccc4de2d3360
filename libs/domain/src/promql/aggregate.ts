import { labelsKey, METRIC_NAME, onlyLabels, withoutLabels, type Labels } from '../series/labels.ts';
import type { Aggregate, AggregateOp } from './ast.ts';
import { quantile } from './functions.ts';
import type { Sample, Vector } from './vector.ts';

const groupsOf = new WeakMap<Aggregate, WeakMap<Labels, { labels: Labels; key: string }>>();

type Group = { labels: Labels; value: number; mean: number; count: number; members: Sample[] };

/** Go's float < for the heaps of topk/bottomk: NaN loses to every number. */
function better(op: 'topk' | 'bottomk', a: number, b: number): boolean {
  if (op === 'topk') return a > b || (Number.isNaN(b) && !Number.isNaN(a));
  return a < b || (Number.isNaN(b) && !Number.isNaN(a));
}

/**
 * An aggregation over one instant vector, as Prometheus' aggregation(): groups by the `by`
 * labels (or all but the `without` ones and the name), values combined in input order with
 * the same float operations (sum by addition, avg by the running mean), topk/bottomk keeping
 * the whole series.
 */
export function aggregate(e: Aggregate, input: Vector, param: number, t: number): Sample[] {
  const grouping = new Set(e.grouping);
  const without = new Set([...e.grouping, METRIC_NAME]);
  // One group per input label set, kept across steps: the same series maps to the same labels and key.
  let memo = groupsOf.get(e);
  if (!memo) groupsOf.set(e, (memo = new WeakMap()));
  const groupOf = (l: Labels): { labels: Labels; key: string } => {
    let g = memo.get(l);
    if (!g) {
      const labels = e.without ? withoutLabels(l, without) : onlyLabels(l, grouping);
      memo.set(l, (g = { labels, key: labelsKey(labels) }));
    }
    return g;
  };
  let k = 0;
  if (e.op === 'topk' || e.op === 'bottomk') {
    // Go converts the float parameter to an int64 by truncation.
    k = Math.trunc(param);
    if (!(k >= 1)) return [];
    k = Math.min(k, input.length);
  }
  const groups = new Map<string, Group>();
  for (const s of input) {
    const { labels, key } = groupOf(s.labels);
    const group = groups.get(key);
    if (!group) {
      groups.set(key, { labels, value: e.op === 'stddev' || e.op === 'stdvar' ? 0 : s.v, mean: s.v, count: 1, members: [s] });
      continue;
    }
    addToGroup(e.op, group, s);
  }
  const out: Sample[] = [];
  for (const g of groups.values()) pushGroupResult(out, e.op, g, param, k, t);
  return out;
}

/** Folds one more sample into its group, in input order, with Prometheus' float operations. */
function addToGroup(op: AggregateOp, group: Group, s: Sample): void {
  switch (op) {
    case 'sum':
      group.value += s.v;
      break;
    case 'avg': {
      group.count += 1;
      if (!Number.isFinite(group.mean) && !Number.isNaN(group.mean)) {
        if (!Number.isFinite(s.v) && !Number.isNaN(s.v) && group.mean > 0 === s.v > 0) break;
        if (Number.isFinite(s.v)) break;
      }
      group.mean += s.v / group.count - group.mean / group.count;
      break;
    }
    case 'count':
      group.count += 1;
      break;
    case 'stddev':
    case 'stdvar': {
      // Welford's running variance, as Prometheus: value holds the sum of squared deviations.
      group.count += 1;
      const delta = s.v - group.mean;
      group.mean += delta / group.count;
      group.value += delta * (s.v - group.mean);
      break;
    }
    case 'max':
      if (group.value < s.v || Number.isNaN(group.value)) group.value = s.v;
      break;
    case 'min':
      if (group.value > s.v || Number.isNaN(group.value)) group.value = s.v;
      break;
    case 'topk':
    case 'bottomk':
    case 'quantile':
      group.members.push(s);
      break;
    default: {
      const never: never = op;
      return never;
    }
  }
}

/** The group's result at `t`: one sample, or for topk/bottomk its k kept members. */
function pushGroupResult(out: Sample[], op: AggregateOp, g: Group, param: number, k: number, t: number): void {
  switch (op) {
    case 'avg':
      out.push({ labels: g.labels, v: g.mean, t });
      break;
    case 'count':
      out.push({ labels: g.labels, v: g.count, t });
      break;
    case 'stddev':
      out.push({ labels: g.labels, v: Math.sqrt(g.value / g.count), t });
      break;
    case 'stdvar':
      out.push({ labels: g.labels, v: g.value / g.count, t });
      break;
    case 'quantile':
      out.push({
        labels: g.labels,
        v: quantile(
          param,
          g.members.map((m) => m.v),
        ),
        t,
      });
      break;
    case 'topk':
    case 'bottomk': {
      const kept = [...g.members].sort((a, b) => (better(op, a.v, b.v) ? -1 : better(op, b.v, a.v) ? 1 : 0)).slice(0, k);
      for (const s of kept) out.push({ labels: s.labels, v: s.v, t });
      break;
    }
    default:
      out.push({ labels: g.labels, v: g.value, t });
  }
}
