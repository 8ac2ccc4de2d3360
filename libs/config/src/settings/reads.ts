import { z } from 'zod';
import { positiveInt } from './schemas.ts';

/** What one read may ask for and stream. */
export const readsSettings = {
  MERIDIAN_MAX_ROWS_CEILING: {
    schema: z.coerce.number().int().min(1).max(1_000_000_000),
    default: '10000000',
    doc: 'Largest max_rows a metrics download accepts (400 above it); larger results are paged with the cursor.',
  },
  MERIDIAN_DOWNLOAD_BATCH_ROWS: {
    schema: z.coerce.number().int().min(1024).max(1_048_576),
    default: '65536',
    doc: "Rows per Arrow record batch and Parquet row group of a format=arrow or format=parquet download (ClickHouse's max_block_size for its query): the api holds about one batch per such download: its Native block as it arrives and once joined (28 bytes a row each: a name comes as a 4-byte index into the page's names), its typed columns and the encoded batch, some 115 bytes a row at the most (7.5 MB at the default), beside the page's names once.",
  },
  MERIDIAN_DOWNLOAD_PART_ROWS: {
    schema: z.coerce.number().int().min(10_000).max(100_000_000),
    default: '1000000',
    doc: "Most rows (estimated from the catalog) of one part of an uncompressed download: a page is read in parts of whole metrics, one ClickHouse query each, the first of about 50,000 rows and each next up to four times the one before, up to this. The part after the one streaming is already running (ClickHouse reads and sorts it meanwhile), so a download holds at most two parts' queries on the server, the one ahead at most this many rows (ClickHouse's memory for a sort, some 85 bytes a row). A metric larger than this is a part of its own.",
  },
  MERIDIAN_MAX_DOWNLOADS_PER_USER: {
    schema: positiveInt,
    default: '4',
    doc: 'Metric downloads and event exports one api instance streams at once for one user (HEAD requests do not count); the next gets 429 /problems/too-many.',
  },
  MERIDIAN_MAX_DOWNLOAD_BODY_BYTES: {
    schema: z.coerce.number().int().min(1024),
    default: '1048576',
    doc: 'Largest body of POST /api/v1/metrics/download (its parameters as a form or JSON), in bytes; 413 as soon as Content-Length or the bytes read pass it.',
  },
  MERIDIAN_MAX_DOWNLOAD_NAMES: {
    schema: positiveInt,
    default: '10000',
    doc: 'Most metric names one list download may name (GET or POST); more gets 400. Bounds the catalog lookup and the names sent to ClickHouse with one query.',
  },
  MERIDIAN_MAX_SERIES_POINTS: {
    schema: z.coerce.number().int().min(10).max(1_000_000),
    default: '10000',
    doc: 'Most points (buckets) per series GET /api/v1/metrics/series answers: a larger points, or a step making more buckets over the range, gets 400. Any range is covered in at most this many by widening the step.',
  },
  MERIDIAN_MAX_SERIES_PER_REQUEST: {
    schema: z.coerce.number().int().min(1).max(1000),
    default: '20',
    doc: 'Most metrics one GET /api/v1/metrics/series charts (a list naming more, or a pattern matching more, gets 400). With MERIDIAN_MAX_SERIES_POINTS it bounds the rows one request reads back.',
  },
  MERIDIAN_MAX_CATALOG_PAGE: {
    schema: positiveInt,
    default: '1000',
    doc: 'Most metrics one page of GET /api/v1/metrics (the catalog) may list (its limit); more gets 400. Bounds the body of one answer; next_after pages through the rest.',
  },
  MERIDIAN_MAX_ROLLUP_ROWS: {
    schema: z.coerce.number().int().min(100).max(10_000_000),
    default: '100000',
    doc: 'Largest max_rows a metrics download at resolution 1m or 1h accepts (400 above it): such a page (one row per metric and bucket) is read whole into the api before it is written, about 150 bytes a row. A year of one metric is 8,760 rows at 1h, 525,600 at 1m; larger results are paged with the cursor.',
  },
} as const;
