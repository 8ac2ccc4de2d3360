import { JsonNestingMeter } from '../../points/json-nesting.ts';
import { metricNameProblem } from '../../points/metric-name.ts';
import { kindOf } from '../../points/value.ts';
import { MAX_JSON_NESTING, type LayoutReader } from './items.ts';
import { has, hasZeroValue, isObject, parseWithUnderflows, mayUnderflow, readJsonItem } from './json-item.ts';
import type { MetricNames } from './metric-names.ts';
import type { UploadOutput } from './output.ts';
import { messageOf, snippet, withText } from './text.ts';

const NO_HOLDERS: ReadonlySet<object> = new Set();
const NOT_PARSED = Symbol('not parsed');

/**
 * The json-array ([{timestamp, value}, ...]) and json-body ({metric_name?, values: [...]})
 * layouts: the document is held up to maxLength characters, refused as soon as it nests deeper
 * than MAX_JSON_NESTING, and parsed with JSON.parse at its end; row = 1-based index in the values.
 */
export class JsonDocumentUpload implements LayoutReader {
  readonly line = 0;
  private readonly out: UploadOutput;
  private readonly names: MetricNames;
  private readonly layout: 'json-array' | 'json-body';
  private readonly maxLength: number;
  private readonly nesting = new JsonNestingMeter(MAX_JSON_NESTING);
  private parts: string[] = [];
  private length = 0;
  /** The document's value when the layout's detection parsed the whole upload already (NOT_PARSED: parsed at the end). */
  private readonly document: unknown;

  /** `document`: the JSON value of the whole upload, when it is known already (LayoutDetector's). */
  constructor(out: UploadOutput, names: MetricNames, layout: 'json-array' | 'json-body', maxLength: number, document: unknown = NOT_PARSED) {
    this.out = out;
    this.names = names;
    this.layout = layout;
    this.document = document;
    this.maxLength = maxLength;
  }

  /** Holds a part of the document, within its length and nesting bounds. */
  feed(text: string): void {
    this.length += text.length;
    if (this.length > this.maxLength) {
      this.stop(`the ${this.layout} document is longer than ${this.maxLength} characters; send larger sets as CSV or NDJSON, which are read as they stream`);
      return;
    }
    if (!this.nesting.feed(text)) {
      this.stop(`invalid JSON: nested deeper than ${MAX_JSON_NESTING} levels`);
      return;
    }
    this.parts.push(text);
  }

  end(): void {
    const text = this.parts.join('');
    this.parts = [];
    this.parseDocument(text);
  }

  private stop(reason: string): void {
    this.out.stop(0, 'row', reason);
    this.parts = [];
  }

  private parseDocument(text: string): void {
    const out = this.out;
    let doc: unknown = this.document;
    try {
      if (doc === NOT_PARSED) doc = JSON.parse(text);
    } catch (e) {
      out.error(0, 'row', `invalid JSON: ${messageOf(e)}`);
      return;
    }
    let underflows = NO_HOLDERS;
    if (hasZeroValue(Array.isArray(doc) ? doc : isObject(doc) ? doc['values'] : undefined) && mayUnderflow(text)) {
      ({ doc, underflows } = parseWithUnderflows(text));
    }

    if (this.layout === 'json-array') {
      if (!Array.isArray(doc)) {
        out.error(0, 'row', 'expected a JSON array of {timestamp, value} objects');
        return;
      }
      for (let i = 0; i < doc.length; i++) {
        const item: unknown = doc[i];
        readJsonItem(out, this.names, item, i + 1, this.names.option, false, isObject(item) && underflows.has(item));
      }
      return;
    }

    // json-body
    if (!isObject(doc)) {
      out.error(0, 'row', 'expected a JSON object {metric_name, values}');
      return;
    }
    for (const key in doc) {
      if (key !== 'metric_name' && key !== 'values') out.error(0, 'row', `unknown field ${snippet(key)} (allowed: metric_name, values)`);
    }
    let name = this.names.option;
    if (has(doc, 'metric_name')) {
      const bodyName = doc['metric_name'];
      if (typeof bodyName !== 'string') return out.stop(0, 'metric_name', `must be a string, not ${kindOf(bodyName)}`);
      const problem = metricNameProblem(bodyName);
      if (problem !== null) return out.stop(0, 'metric_name', withText(problem, bodyName));
      if (name !== undefined && bodyName !== name) {
        return out.stop(0, 'metric_name', withText(`differs from the upload's metric_name ${snippet(name)}`, bodyName));
      }
      name = bodyName;
    } else if (name === undefined) {
      return out.stop(0, 'metric_name', 'required: give metric_name in the body or with the upload');
    }
    const values = doc['values'];
    if (!has(doc, 'values')) return out.error(0, 'row', 'values is required: an array of {timestamp, value} objects');
    if (!Array.isArray(values)) return out.error(0, 'row', `values must be an array of {timestamp, value} objects, not ${kindOf(values)}`);
    for (let i = 0; i < values.length; i++) {
      const item: unknown = values[i];
      readJsonItem(out, this.names, item, i + 1, name, false, isObject(item) && underflows.has(item));
    }
  }
}
