import { metricNameProblem } from '../../points/metric-name.ts';
import type { UploadLayout } from './items.ts';
import type { UploadOutput } from './output.ts';
import { snippet, withText } from './text.ts';

/**
 * The upload's metric name (the option) and the per-row ones: whether a row's name is valid
 * and agrees with the upload's. The last name and its problem are kept, as rows of one metric
 * usually follow each other.
 */
export class MetricNames {
  readonly option: string | undefined;
  private readonly out: UploadOutput;
  private lastName: string | null = null;
  private lastProblem: string | null = null;

  constructor(option: string | undefined, out: UploadOutput) {
    this.option = option;
    this.out = out;
  }

  /** The name of the previous row that had one. */
  get last(): string | null {
    return this.lastName;
  }

  /** For layouts without a per-row name: false (and the upload stopped) when the upload names no metric. */
  require(layout: UploadLayout): boolean {
    if (this.option !== undefined) return true;
    this.out.stop(0, 'metric_name', `required: the ${layout} layout carries no metric name, so the upload must give metric_name`);
    return false;
  }

  /** The problem of a per-row metric name (validity, and agreement with the upload's name). */
  rowProblem(name: string): string | null {
    if (name === this.lastName) return this.lastProblem;
    const problem = metricNameProblem(name);
    let reason = problem === null ? null : withText(problem, name);
    if (reason === null && this.option !== undefined && name !== this.option) {
      reason = withText(`differs from the upload's metric_name ${snippet(this.option)}`, name);
    }
    this.lastName = name;
    this.lastProblem = reason;
    return reason;
  }
}
