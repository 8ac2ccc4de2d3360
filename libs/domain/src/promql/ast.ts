/** The PromQL subset Meridian evaluates, as a tree; parse.ts builds it from Prometheus' own grammar. */

export type MatchOp = '=' | '!=' | '=~' | '!~';
export type Matcher = { readonly name: string; readonly op: MatchOp; readonly value: string };

export type ValueType = 'scalar' | 'vector' | 'matrix' | 'string';

export type NumberLiteral = { readonly kind: 'number'; readonly value: number };
/** A string literal: only as an argument of the functions that take one (label_replace, label_join). */
export type StringLiteral = { readonly kind: 'string'; readonly value: string };
export type VectorSelector = {
  readonly kind: 'vector';
  /** Numbers each selector of one query, so its fetched series can be found again. */
  readonly id: number;
  readonly matchers: readonly Matcher[];
  readonly offsetMs: number;
};
export type MatrixSelector = { readonly kind: 'matrix'; readonly selector: VectorSelector; readonly rangeMs: number };

export const RANGE_FUNCTIONS = [
  'rate',
  'irate',
  'increase',
  'delta',
  'deriv',
  'resets',
  'changes',
  'avg_over_time',
  'min_over_time',
  'max_over_time',
  'sum_over_time',
  'count_over_time',
  'last_over_time',
  'quantile_over_time',
  'idelta',
  'predict_linear',
  'absent_over_time',
] as const;
/** Functions of one value each: the value of every element, its name dropped. */
export const MATH_FUNCTIONS = ['abs', 'ceil', 'floor', 'sqrt', 'exp', 'ln', 'log2', 'log10', 'sgn'] as const;
export const INSTANT_FUNCTIONS = [
  ...MATH_FUNCTIONS,
  'clamp_min',
  'clamp_max',
  'round',
  'timestamp',
  'histogram_quantile',
  'time',
  'scalar',
  'vector',
  'sort',
  'sort_desc',
  'absent',
  'label_replace',
  'label_join',
] as const;
export type RangeFunction = (typeof RANGE_FUNCTIONS)[number];
export type InstantFunction = (typeof INSTANT_FUNCTIONS)[number];
export type FunctionName = RangeFunction | InstantFunction;

export type Call = { readonly kind: 'call'; readonly func: FunctionName; readonly args: readonly Expr[] };

export const AGGREGATIONS = ['sum', 'avg', 'min', 'max', 'count', 'topk', 'bottomk', 'quantile', 'stddev', 'stdvar'] as const;
export type AggregateOp = (typeof AGGREGATIONS)[number];
export type Aggregate = {
  readonly kind: 'aggregate';
  readonly op: AggregateOp;
  /** k of topk/bottomk, φ of quantile. */
  readonly param: Expr | null;
  readonly expr: Expr;
  readonly grouping: readonly string[];
  readonly without: boolean;
};

export const ARITHMETIC = ['+', '-', '*', '/', '%', '^'] as const;
export const COMPARISON = ['==', '!=', '>', '<', '>=', '<='] as const;
export const SET_OPERATORS = ['and', 'or', 'unless'] as const;
export type SetOp = (typeof SET_OPERATORS)[number];
export type BinaryOp = (typeof ARITHMETIC)[number] | (typeof COMPARISON)[number] | SetOp;
/**
 * on(labels) or ignoring(labels); null: match on every label but the metric name. `group`:
 * group_left (many on the left to one on the right) or group_right, with the labels the result
 * takes from the "one" side; null: one-to-one.
 */
export type VectorMatching = {
  readonly on: boolean;
  readonly labels: readonly string[];
  readonly group: { readonly side: 'left' | 'right'; readonly include: readonly string[] } | null;
};
export type Binary = {
  readonly kind: 'binary';
  readonly op: BinaryOp;
  readonly lhs: Expr;
  readonly rhs: Expr;
  readonly bool: boolean;
  readonly matching: VectorMatching | null;
};
export type Negation = { readonly kind: 'negate'; readonly expr: Expr };

export type Expr = NumberLiteral | StringLiteral | VectorSelector | MatrixSelector | Call | Aggregate | Binary | Negation;

export function isComparison(op: BinaryOp): boolean {
  return (COMPARISON as readonly string[]).includes(op);
}

export function isSetOperator(op: BinaryOp): op is SetOp {
  return (SET_OPERATORS as readonly string[]).includes(op);
}

/** The type of value an expression evaluates to. */
export function typeOf(e: Expr): ValueType {
  switch (e.kind) {
    case 'number':
      return 'scalar';
    case 'string':
      return 'string';
    case 'vector':
      return 'vector';
    case 'matrix':
      return 'matrix';
    case 'call':
      return e.func === 'time' || e.func === 'scalar' ? 'scalar' : 'vector';
    case 'aggregate':
      return 'vector';
    case 'binary':
      return typeOf(e.lhs) === 'scalar' && typeOf(e.rhs) === 'scalar' ? 'scalar' : 'vector';
    case 'negate':
      return typeOf(e.expr);
    default: {
      const never: never = e;
      return never;
    }
  }
}
