/** File names and content types as they enter the catalog: safe to store, list and send back. */

export const MAX_FILE_NAME_LENGTH = 255;
export const MAX_DESCRIPTION_LENGTH = 10_000;
export const DEFAULT_CONTENT_TYPE = 'application/octet-stream';

// C0 and C1 controls, DEL, and the bidirectional overrides that can disguise an extension.
// eslint-disable-next-line no-control-regex -- matching control characters is its job
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;

/**
 * The name part of an uploaded file name: no directories (either separator), no control or
 * bidi-override characters, NFC, at most 255 characters; "file" when nothing is left.
 */
export function sanitizeFileName(raw: string | null | undefined): string {
  const base = (raw ?? '').split(/[\\/]/).pop() ?? '';
  const clean = base.normalize('NFC').replace(UNSAFE, '').trim();
  const cut = [...clean].slice(0, MAX_FILE_NAME_LENGTH).join('').trim();
  return cut === '' || cut === '.' || cut === '..' ? 'file' : cut;
}

const MEDIA_TYPE = /^[a-z0-9][a-z0-9!#$&^_.+-]{0,126}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}$/;

const BY_EXTENSION: Readonly<Record<string, string>> = {
  csv: 'text/csv',
  tsv: 'text/tab-separated-values',
  txt: 'text/plain',
  json: 'application/json',
  ndjson: 'application/x-ndjson',
  jsonl: 'application/x-ndjson',
  xml: 'application/xml',
  gz: 'application/gzip',
  zip: 'application/zip',
  pdf: 'application/pdf',
  parquet: 'application/vnd.apache.parquet',
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
};

/**
 * The content type a file is served with: as uploaded when it is a plain media type other
 * than the generic application/octet-stream; otherwise from the name's extension; otherwise
 * application/octet-stream.
 */
export function contentTypeFor(declared: string | null | undefined, fileName: string): string {
  const type = (declared ?? '').trim().toLowerCase();
  if (MEDIA_TYPE.test(type) && type !== DEFAULT_CONTENT_TYPE) return type;
  const ext = /\.([A-Za-z0-9]{1,10})$/.exec(fileName)?.[1]?.toLowerCase();
  return (ext && BY_EXTENSION[ext]) || DEFAULT_CONTENT_TYPE;
}

/** Why a description cannot be stored, or null. */
export function descriptionProblem(description: string): string | null {
  if (description.length > MAX_DESCRIPTION_LENGTH) return `at most ${MAX_DESCRIPTION_LENGTH} characters`;
  // eslint-disable-next-line no-control-regex -- matching control characters is its job
  if (/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/.test(description)) return 'no control characters other than tab and newlines';
  return null;
}
