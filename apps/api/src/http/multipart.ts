import type { IncomingHttpHeaders } from 'node:http';
import type { Readable } from 'node:stream';
import busboy from 'busboy';
import { DomainError, validationError } from '@meridian/domain';

/** How much of a form is read: text fields, the bytes of one field's value, and parts of any kind. */
export type FormLimits = { readonly fields: number; readonly fieldBytes: number; readonly parts: number };

/** The default bounds of a form: what the upload forms need, with room to spare. */
export const FORM_LIMITS: FormLimits = { fields: 20, fieldBytes: 64 * 1024, parts: 30 };

export type FilePart = { readonly stream: Readable; readonly filename: string | null; readonly mimeType: string | null };

export type Form<T> = {
  /** The text fields, whether they came before or after the file. */
  readonly fields: ReadonlyMap<string, string>;
  /** What `receive` made of the part named `file`; null when the form has none. */
  readonly file: T | null;
};

export type FormOptions<T> = {
  readonly limits?: FormLimits;
  /** A form without a file part named `file` is refused (the upload forms); otherwise `file` is null. */
  readonly requireFile: boolean;
  /** Consumes the part named `file` as it arrives, given the fields that came before it. */
  readonly receive: (part: FilePart, fields: ReadonlyMap<string, string>) => Promise<T>;
};

/**
 * The one multipart/form-data reader of the api. It owns every stream of the form: the body, the
 * parser and each part. Whatever the body does (it ends before the closing boundary, the client
 * goes away at any byte, a part is malformed, a limit is passed), the promise settles once: with a
 * 400 naming what is wrong, or with `receive`'s own error (a 413, a 503 from storage). The rest of
 * a refused body is drained, not parsed, so the connection can carry the answer; and the answer
 * waits until `receive` has finished with its part, so whatever it staged is cleaned up first.
 *
 * Stays one function: the parser's handlers share one settled flag, the part and its receipt, so that the
 * promise settles once; split, that state would be passed between them.
 */
export function readForm<T>(body: Readable, headers: IncomingHttpHeaders, options: FormOptions<T>): Promise<Form<T>> {
  const limits = options.limits ?? FORM_LIMITS;
  return new Promise((resolve, reject) => {
    let parser: busboy.Busboy;
    try {
      // busboy counts a file part against `files` too: ours are bounded by `parts`.
      parser = multipartParser(headers, { fields: limits.fields, fieldSize: limits.fieldBytes, fieldNameSize: 200, parts: limits.parts, files: limits.parts });
    } catch (error) {
      reject(
        validationError(`malformed multipart body: ${(error as Error).message}`, [
          { field: 'Content-Type', reason: 'multipart/form-data needs a boundary parameter' },
        ]),
      );
      return;
    }
    const fields = new Map<string, string>();
    let part: FilePart | null = null;
    let received: Promise<T> | null = null;
    let settled = false;

    const finish = (outcome: () => void) => {
      if (settled) return;
      settled = true;
      body.unpipe(parser);
      // Read what is left (and drop it) so the answer can follow; a body already gone stays so.
      if (!body.destroyed) body.resume();
      void (received ?? Promise.resolve())
        .then(
          () => undefined,
          () => undefined,
        )
        .then(outcome);
    };
    const fail = (error: unknown) => finish(() => reject(asFormError(error)));
    const failAndStop = (error: unknown) => {
      // Stop the part too: `receive` sees its stream fail and lets go of what it holds.
      part?.stream.destroy(error instanceof Error ? error : new Error(String(error)));
      fail(error);
    };

    parser.on('field', (name, value, info) => {
      if (settled || !name) return; // a part without a name is no field of ours
      if (info.nameTruncated || info.valueTruncated) {
        const hint = name === 'file' ? ': a part named "file" needs a filename in its Content-Disposition to be read as the file (curl -F file=@path)' : '';
        return failAndStop(
          validationError(`the form field ${JSON.stringify(name.slice(0, 200))} is longer than ${limits.fieldBytes} bytes${hint}`, [
            { field: name, reason: 'too long' },
          ]),
        );
      }
      if (fields.has(name))
        return failAndStop(validationError(`the form field ${JSON.stringify(name)} is given twice`, [{ field: name, reason: 'duplicate' }]));
      fields.set(name, value);
    });
    parser.on('file', (name, stream, info) => {
      // A part fails when the parser or the body does (their handlers answer for it) or when its
      // consumer lets go of it (`receive` answers): heard from its first byte all the same, since
      // an unheard 'error' event would end the process.
      stream.on('error', () => undefined);
      if (settled || name !== 'file') {
        stream.resume();
        return;
      }
      if (received) {
        stream.resume();
        return failAndStop(
          validationError('the form has more than one part named "file"; send one file per request', [{ field: 'file', reason: 'only one file per request' }]),
        );
      }
      part = { stream, filename: formDataFileName(info.filename), mimeType: info.mimeType ?? null };
      received = options.receive(part, new Map(fields));
      received.catch(failAndStop); // over a limit, or storage failing: answer at once
    });
    parser.on('partsLimit', () =>
      failAndStop(validationError(`the form has more than ${limits.parts} parts`, [{ field: 'body', reason: `at most ${limits.parts} parts` }])),
    );
    parser.on('filesLimit', () =>
      failAndStop(validationError(`the form has more than ${limits.parts} file parts`, [{ field: 'body', reason: `at most ${limits.parts} parts` }])),
    );
    parser.on('fieldsLimit', () =>
      failAndStop(
        validationError(`the form has more than ${limits.fields} text fields (the file part must come within the first ${limits.parts} parts)`, [
          { field: 'body', reason: `at most ${limits.fields} fields` },
        ]),
      ),
    );
    parser.on('error', fail);
    parser.on('close', () => {
      if (settled) return;
      if (!received) {
        if (!options.requireFile) return finish(() => resolve({ fields, file: null }));
        if (fields.has('file'))
          return fail(
            validationError(
              'the part named "file" has no filename in its Content-Disposition, so it reads as a text field; send the file as a file part (curl -F file=@path)',
              [{ field: 'file', reason: 'no filename' }],
            ),
          );
        return fail(validationError('the multipart body has no part named "file"', [{ field: 'file', reason: 'required' }]));
      }
      received.then((file) => finish(() => resolve({ fields, file })), fail);
    });
    // The body's own failure (the client went away) and an early close stop the parser, which
    // fails the part in turn; a body that ends normally ends the parser (`pipe`).
    const interrupted = () => failAndStop(validationError('the upload was interrupted before its end'));
    body.on('error', interrupted);
    body.on('close', () => {
      if (!body.readableEnded) interrupted();
    });
    // Not pipeline(): a parser failure must leave the body open, to be drained and answered.
    // eslint-disable-next-line no-restricted-syntax -- both ends' errors are heard above
    body.pipe(parser);
  });
}

/** busboy's own errors (the parser's, a part's) are the client's: a 400 that says what is wrong. */
function asFormError(error: unknown): Error {
  if (error instanceof DomainError) return error;
  const message = (error as Error)?.message ?? String(error);
  if (/unexpected end of (form|file)/i.test(message)) {
    return validationError('the multipart body ends before its closing boundary: it was cut off', [{ field: 'body', reason: 'incomplete' }]);
  }
  return validationError(`malformed multipart body: ${message}`, [{ field: 'body', reason: 'malformed' }]);
}

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
