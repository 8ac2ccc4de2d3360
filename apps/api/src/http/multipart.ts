import type { IncomingHttpHeaders } from 'node:http';
import busboy from 'busboy';

/**
 * A multipart/form-data parser that reads part parameters (field names, file names) as UTF-8.
 * Browsers, curl and Python requests all send them as raw UTF-8 bytes; busboy's default,
 * latin1, turns `été` into `Ã©tÃ©`. (`filename*=UTF-8''…` keeps working: busboy decodes it.)
 */
export function multipartParser(headers: IncomingHttpHeaders, limits: busboy.Limits): busboy.Busboy {
  return busboy({ headers, limits, defParamCharset: 'utf8' });
}

/**
 * A part's file name as the client meant it. The WHATWG multipart/form-data encoding (browsers'
 * FormData, curl -F, Python requests through urllib3) escapes exactly three bytes of a name:
 * LF as `%0A`, CR as `%0D` and `"` as `%22`, and nothing else, not even `%`. So these three are
 * decoded, in either case of hex digit, and any other `%XX` stays as the client sent it (a file
 * may be called `100%25.csv`). A name that held the literal text `%22` arrives the same as one
 * that held `"`; the encoding cannot tell them apart, and `"` is the common case.
 */
export function formDataFileName(raw: string | undefined): string | null {
  if (raw === undefined) return null;
  return raw.replace(/%(0A|0D|22)/gi, (escape) => String.fromCharCode(parseInt(escape.slice(1), 16)));
}
