import type { Label } from '@meridian/domain';
import { malformed, SeriesCollector, tooLarge, type DecodedPush, type DecodedSeries } from '../decoded.ts';
import type { SeriesNameCache } from '../name-cache.ts';
import { compileLimits, type ProtocolLimits } from '../limits.ts';
import {
  decodingProtobuf,
  eachMessage,
  expectEnd,
  fieldEnd,
  peekStaleNaN,
  readerOf,
  readInt64,
  skipField,
  WIRE_BYTES,
  WIRE_FIXED64,
  WIRE_VARINT,
  type Reader,
} from '../protobuf.ts';
import { snappyUncompressBounded } from '../snappy.ts';

/**
 * Prometheus remote write 1.0 (`prometheus.WriteRequest`, remote-write.proto) and 2.0
 * (`io.prometheus.write.v2.Request`, remote-write-v2.proto). Each TimeSeries becomes the
 * series `seriesName(__name__, the other labels)`; a series sent twice in a request is one.
 * Stale markers (the NaN 0x7ff0000000000002) are dropped and counted: they say that a series
 * ended, which a store of values has no place for, and storing a NaN would make sums NaN.
 * Native histograms are refused per histogram, with a reason; exemplars and metadata are skipped.
 */

const METRIC_LABEL = '__name__';

/** What one TimeSeries gave: its labels (up to one past the bound) and how many points it holds. */
type SeriesHead = { metric: string | null; labels: Label[]; labelCount: number; samples: number; histograms: number };

/** The labels of a series as Prometheus writes them, for a refusal's `where`. */
function describe(head: SeriesHead): string {
  const inner = head.labels.map(([k, v]) => `${k}=${JSON.stringify(v)}`).join(',');
  const text = `${head.metric ?? ''}{${inner}${head.labelCount > head.labels.length ? ',...' : ''}}`;
  return text.length > 200 ? `${text.slice(0, 200)}...` : text;
}

/** The series of `head`, or null when it cannot be named (then it is refused with its reason and points). */
function nameSeries(collector: SeriesCollector, head: SeriesHead): DecodedSeries | null {
  const points = head.samples + head.histograms;
  if (head.labelCount > head.labels.length) {
    collector.refuseSeries(describe(head), `has ${head.labelCount} labels, more than ${collector.limits.maxLabels}`, points);
    return null;
  }
  if (head.metric === null || head.metric === '') {
    collector.refuseSeries(describe(head), 'the series has no __name__ label', points);
    return null;
  }
  const opened = collector.open(head.metric, head.labels);
  if (!opened.ok) {
    collector.refuseSeries(describe(head), opened.reason, points);
    return null;
  }
  return opened.series;
}

/**
 * Reads a named series' samples, a pass of their own since the wire does not promise that
 * labels come first; refuses its native histograms.
 */
function writePoints(r: Reader, collector: SeriesCollector, series: DecodedSeries, head: SeriesHead, start: number, end: number, samplesField: number): void {
  if (head.histograms > 0) {
    collector.countSamples(head.histograms);
    collector.refusePoints(series.name, 'native histograms are not stored (send classic histograms: _bucket, _sum, _count)', head.histograms);
  }
  if (head.samples === 0) return;
  r.pos = start;
  while (r.pos < end) {
    const tag = r.uint32();
    if (tag >>> 3 !== samplesField || (tag & 7) !== WIRE_BYTES) {
      skipField(r, tag & 7);
      continue;
    }
    const sampleEnd = fieldEnd(r, end);
    let value = 0;
    let timestamp = 0;
    let stale = false;
    while (r.pos < sampleEnd) {
      const t = r.uint32();
      if (t === ((1 << 3) | WIRE_FIXED64)) {
        stale = peekStaleNaN(r);
        value = r.double();
      } else if (t === ((2 << 3) | WIRE_VARINT)) {
        timestamp = readInt64(r);
      } else skipField(r, t & 7);
    }
    expectEnd(r, sampleEnd);
    if (stale) {
      collector.staleMarker();
      continue;
    }
    const reason = collector.add(series, timestamp, value);
    if (reason !== null) collector.refusePoints(`${series.name} at ${timestamp}`, reason, 1);
  }
}

/** Names the series and reads its samples, or refuses it. */
function finishSeries(r: Reader, collector: SeriesCollector, head: SeriesHead, start: number, end: number, samplesField: number): DecodedSeries | null {
  const series = nameSeries(collector, head);
  if (series !== null) writePoints(r, collector, series, head, start, end, samplesField);
  return series;
}

/** Counts the samples and histograms of a TimeSeries without reading them. */
function countPoints(r: Reader, tag: number, head: SeriesHead, samplesField: number, histogramsField: number): boolean {
  const field = tag >>> 3;
  if (field === samplesField && (tag & 7) === WIRE_BYTES) {
    head.samples++;
  } else if (field === histogramsField && (tag & 7) === WIRE_BYTES) {
    head.histograms++;
  } else return false;
  skipField(r, WIRE_BYTES);
  return true;
}

/**
 * One pass over a TimeSeries that reads no string: counts its labels, samples and histograms
 * into `head`, and answers where its labels end when they all come first (as Prometheus writes
 * them), or -1.
 */
function scanSeries(r: Reader, end: number, head: SeriesHead): number {
  let prefixEnd = r.pos;
  let labelsDone = false;
  let contiguous = true;
  while (r.pos < end) {
    const t = r.uint32();
    if (t === ((1 << 3) | WIRE_BYTES)) {
      head.labelCount++;
      r.pos = fieldEnd(r, end);
      if (labelsDone) contiguous = false;
      else prefixEnd = r.pos;
    } else {
      labelsDone = true;
      if (!countPoints(r, t, head, 2, 4)) skipField(r, t & 7);
    }
  }
  expectEnd(r, end);
  return contiguous ? prefixEnd : -1;
}

/** Reads the labels of a TimeSeries into `head`, at most maxLabels of them besides the name. */
function readLabels(r: Reader, end: number, head: SeriesHead, maxLabels: number): void {
  let seen = 0;
  while (r.pos < end) {
    const t = r.uint32();
    if (t !== ((1 << 3) | WIRE_BYTES)) {
      skipField(r, t & 7);
      continue;
    }
    const labelEnd = fieldEnd(r, end);
    // Past the bound the labels are only counted (scanSeries did): a huge repeated field allocates nothing.
    if (++seen > maxLabels + 1) {
      r.pos = labelEnd;
      continue;
    }
    let name = '';
    let value = '';
    while (r.pos < labelEnd) {
      const lt = r.uint32();
      if (lt === ((1 << 3) | WIRE_BYTES)) name = r.string();
      else if (lt === ((2 << 3) | WIRE_BYTES)) value = r.string();
      else skipField(r, lt & 7);
    }
    expectEnd(r, labelEnd);
    if (name === METRIC_LABEL) {
      head.labelCount--;
      head.metric = value;
    } else if (head.labels.length < maxLabels) head.labels.push([name, value]);
  }
}

export type RemoteWriteOptions = Partial<ProtocolLimits> & {
  /** Names kept across requests (the caller's), so that a series sent again is not named again. */
  readonly names?: SeriesNameCache;
};

/** Decodes an uncompressed remote write 1.0 body (`prometheus.WriteRequest`). */
export function decodeRemoteWrite(bytes: Uint8Array, options: RemoteWriteOptions = {}): DecodedPush {
  const { names, ...limitOptions } = options;
  const limits = compileLimits(limitOptions);
  if (bytes.length > limits.maxBytes) throw tooLarge(`the body is ${bytes.length} bytes, more than ${limits.maxBytes}`);
  names?.useLimits(limits);
  const collector = new SeriesCollector(limits);
  return decodingProtobuf('remote write request', () => {
    const r = readerOf(bytes);
    eachMessage(r, r.len, 1, (end) => {
      const start = r.pos;
      const head: SeriesHead = { metric: null, labels: [], labelCount: 0, samples: 0, histograms: 0 };
      const prefixEnd = scanSeries(r, end, head);
      const key = names !== undefined && prefixEnd > start ? { bytes, start, end: prefixEnd } : null;
      const known = key === null ? undefined : names!.get(key);
      if (known !== undefined) {
        writePoints(r, collector, collector.openNamed(known), head, start, end, 2);
        return;
      }
      r.pos = start;
      readLabels(r, end, head, limits.maxLabels);
      const series = finishSeries(r, collector, head, start, end, 2);
      if (series !== null && key !== null) names!.set(key, series);
    });
    return collector.result();
  });
}

/** Decodes an uncompressed remote write 2.0 body (`io.prometheus.write.v2.Request`). */
export function decodeRemoteWriteV2(bytes: Uint8Array, options: Partial<ProtocolLimits> = {}): DecodedPush {
  const limits = compileLimits(options);
  if (bytes.length > limits.maxBytes) throw tooLarge(`the body is ${bytes.length} bytes, more than ${limits.maxBytes}`);
  const collector = new SeriesCollector(limits);
  return decodingProtobuf('remote write 2.0 request', () => {
    const r = readerOf(bytes);
    // The symbols first, wherever they are on the wire: series refer to them by index.
    const symbols: string[] = [];
    const maxSymbols = limits.maxSeries * (limits.maxLabels + 1) * 2 + 1;
    while (r.pos < r.len) {
      const tag = r.uint32();
      if (tag === ((4 << 3) | WIRE_BYTES)) {
        if (symbols.length >= maxSymbols) throw malformed(`more than ${maxSymbols} symbols: more than the series and labels a request may hold`);
        symbols.push(r.string());
      } else skipField(r, tag & 7);
    }
    r.pos = 0;
    eachMessage(r, r.len, 5, (end) => {
      const start = r.pos;
      const head: SeriesHead = { metric: null, labels: [], labelCount: 0, samples: 0, histograms: 0 };
      // The name and maxLabels labels, and one more to tell that there are too many; the rest are counted.
      const refs: number[] = [];
      const keep = (limits.maxLabels + 2) * 2;
      let extraRefs = 0;
      const ref = (value: number) => {
        if (refs.length < keep) refs.push(value);
        else extraRefs++;
      };
      while (r.pos < end) {
        const t = r.uint32();
        if (t === ((1 << 3) | WIRE_BYTES)) {
          const refsEnd = fieldEnd(r, end);
          while (r.pos < refsEnd) ref(r.uint32());
          expectEnd(r, refsEnd);
        } else if (t === ((1 << 3) | WIRE_VARINT)) {
          ref(r.uint32());
        } else if (!countPoints(r, t, head, 2, 3)) {
          skipField(r, t & 7);
        }
      }
      expectEnd(r, end);
      head.labelCount = Math.ceil(extraRefs / 2);
      if ((refs.length + extraRefs) % 2 !== 0) throw malformed('a series has an odd number of label references');
      for (let i = 0; i < refs.length; i += 2) {
        const name = symbols[refs[i]!];
        const value = symbols[refs[i + 1]!];
        if (name === undefined || value === undefined)
          throw malformed(`a label refers to symbol ${name === undefined ? refs[i] : refs[i + 1]}, past the ${symbols.length} symbols`);
        if (name === METRIC_LABEL) head.metric = value;
        else {
          head.labelCount++;
          if (head.labels.length < limits.maxLabels) head.labels.push([name, value]);
        }
      }
      finishSeries(r, collector, head, start, end, 2);
    });
    return collector.result();
  });
}

/** Decodes a remote write body as sent: one snappy block, uncompressed to at most `maxBytes`. */
export function decodeRemoteWriteBody(body: Uint8Array, version: '1.0' | '2.0', options: RemoteWriteOptions = {}): DecodedPush {
  const { names, ...limitOptions } = options;
  const limits = compileLimits(limitOptions);
  const bytes = snappyUncompressBounded(body, limits.maxBytes);
  return version === '1.0' ? decodeRemoteWrite(bytes, { ...limits, names }) : decodeRemoteWriteV2(bytes, limits);
}
