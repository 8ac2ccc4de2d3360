import { field, filePart, headLength, multipartBytes, serialize, type Multipart, type Part, type Req } from './requests.ts';

/**
 * Where a valid request is cut or aborted, and how it is mangled. Offsets: in the head, every
 * HEAD_STRIDE-th byte and the bytes around each line end; in a body of at most SMALL_BODY
 * bytes, every byte; in a larger one, SPREAD offsets evenly apart plus the bytes around each
 * multipart delimiter and part head. The last offset is the whole request.
 */
export const HEAD_STRIDE = 7;
export const SMALL_BODY = 600;
export const SPREAD = 48;
/** Offsets of a huge body: this many spread over it, and a byte either side of each 5 MiB (a storage part). */
export const HUGE_SPREAD = 8;

export function cutOffsets(bytes: Buffer, req: Req, huge = false): number[] {
  const head = headLength(bytes);
  if (huge) {
    const body = bytes.length - head;
    const at = new Set<number>([head]);
    for (let k = 1; k <= HUGE_SPREAD; k++) at.add(head + Math.round((body * k) / HUGE_SPREAD) - (k === HUGE_SPREAD ? 0 : 1));
    for (let part = 5 << 20; part < body; part += 5 << 20) for (const d of [-1, 1]) at.add(head + part + d);
    return [...at].sort((a, b) => a - b);
  }
  const at = new Set<number>();
  for (let i = 0; i < head; i += HEAD_STRIDE) at.add(i);
  for (let i = bytes.indexOf('\r\n'); i >= 0 && i < head; i = bytes.indexOf('\r\n', i + 1)) for (const d of [0, 1, 2]) at.add(i + d);
  const body = bytes.length - head;
  if (body <= SMALL_BODY) {
    for (let i = head; i <= bytes.length; i++) at.add(i);
  } else {
    for (let k = 0; k <= SPREAD; k++) at.add(head + Math.round((body * k) / SPREAD));
    if (req.multipart) {
      const marks = [`--${req.multipart.boundary}`, '\r\n\r\n'];
      for (const mark of marks) {
        for (let i = bytes.indexOf(mark, head); i >= 0; i = bytes.indexOf(mark, i + 1)) for (const d of [-1, 0, 1, mark.length]) at.add(i + d);
      }
    }
  }
  return [...at].filter((i) => i >= 0 && i <= bytes.length).sort((a, b) => a - b);
}

/** Every other cut offset in the head (its aborts all meet the same parser), every cut offset in the body. */
export function abortOffsets(bytes: Buffer, req: Req, huge = false): number[] {
  const head = headLength(bytes);
  return cutOffsets(bytes, req, huge).filter((at, i) => at >= head || i % 2 === 0);
}

/** A deterministic PRNG (mulberry32), so a run's flipped bytes can be named and replayed. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export type Mutation = { readonly name: string; readonly bytes: Buffer };

export type Limits = { readonly maxHeaderBytes: number; readonly maxUrlBytes: number; readonly port: number };

const FLIPS = 8;

function withHeaders(req: Req, headers: ReadonlyArray<readonly [string, string]>): Req {
  return { ...req, headers };
}

/** The request with a new body, its Content-Length set to it (and Transfer-Encoding left out). */
function withBody(req: Req, body: Buffer, multipart: Multipart | null = null, contentType?: string): Req {
  const headers = req.headers
    .filter(([n]) => !/^(content-length|transfer-encoding)$/i.test(n))
    .map(([n, v]) => (contentType !== undefined && /^content-type$/i.test(n) ? ([n, contentType] as const) : ([n, v] as const)));
  const at = Math.max(
    0,
    headers.findIndex(([n]) => /^connection$/i.test(n)),
  );
  return { ...req, body, multipart, headers: [...headers.slice(0, at), ['Content-Length', String(body.length)], ...headers.slice(at)] };
}

function chunked(req: Req, chunks: Buffer[], tail: string): Buffer {
  const headers = req.headers.filter(([n]) => !/^content-length$/i.test(n));
  const framed = Buffer.concat([...chunks.flatMap((c) => [Buffer.from(`${c.length.toString(16)}\r\n`), c, Buffer.from('\r\n')]), Buffer.from(tail)]);
  return serialize({ ...req, headers: [...headers, ['Transfer-Encoding', 'chunked']], body: framed });
}

function pieces(body: Buffer, n: number): Buffer[] {
  const size = Math.max(1, Math.ceil(body.length / n));
  const out: Buffer[] = [];
  for (let i = 0; i < body.length; i += size) out.push(body.subarray(i, i + size));
  return out;
}

/**
 * The mangled versions of one valid request: flipped bytes, each header dropped and doubled,
 * broken request lines and framing, oversized heads and fields, wrong content types, and for
 * bodies their own breakage (JSON, and multipart delimiters truncated, doubled, missing).
 */
export function mutations(req: Req, seed: number, limits: Limits): Mutation[] {
  const valid = serialize(req);
  const head = headLength(valid);
  const out: Mutation[] = [];
  const add = (name: string, r: Req | Buffer) => out.push({ name, bytes: Buffer.isBuffer(r) ? r : serialize(r) });

  // Flipped bytes: half in the head, half in the body (all in the head when there is none).
  const random = prng(seed);
  for (let k = 0; k < FLIPS; k++) {
    const inBody = req.body.length > 0 && k % 2 === 1;
    const at = inBody ? head + Math.floor(random() * req.body.length) : Math.floor(random() * head);
    const bytes = Buffer.from(valid);
    const mask = 1 + Math.floor(random() * 255);
    bytes[at] = bytes[at]! ^ mask;
    out.push({ name: `flip byte ${at} ^0x${mask.toString(16)}`, bytes });
  }

  // Each header dropped, doubled, and doubled with another value.
  for (const [i, [name, value]] of req.headers.entries()) {
    add(
      `drop ${name}`,
      withHeaders(
        req,
        req.headers.filter((_h, j) => j !== i),
      ),
    );
    add(`duplicate ${name}`, withHeaders(req, [...req.headers.slice(0, i + 1), [name, value], ...req.headers.slice(i + 1)]));
    const other = /^content-length$/i.test(name)
      ? String(Number(value) + 1)
      : /^host$/i.test(name)
        ? 'other.example'
        : /^authorization$/i.test(name)
          ? 'Bearer mrd_0000000000000000_not-a-key'
          : `${value}, ${value}`;
    add(`duplicate ${name} with another value`, withHeaders(req, [...req.headers.slice(0, i + 1), [name, other], ...req.headers.slice(i + 1)]));
  }

  // The request line and head's syntax.
  add('HTTP/1.0', { ...req, version: 'HTTP/1.0' });
  add('HTTP/2.0 in a HTTP/1 request line', { ...req, version: 'HTTP/2.0' });
  add('lower-case method', { ...req, method: req.method.toLowerCase() });
  add('unknown method', { ...req, method: 'FUZZ' });
  add('absolute-form target', { ...req, target: `http://127.0.0.1:${limits.port}${req.target}` });
  add('target with a fragment and a raw space', { ...req, target: `${req.target}#frag ment` });
  add('target with %00 and an invalid %-escape', { ...req, target: `${req.target}${req.target.includes('?') ? '&' : '?'}x=%00%zz` });
  add('bare LF line ends in the head', Buffer.concat([Buffer.from(valid.subarray(0, head).toString('latin1').replace(/\r\n/g, '\n'), 'latin1'), req.body]));
  add('header line without a colon', Buffer.from(valid.toString('latin1').replace('\r\n', '\r\nX-Fuzz-No-Colon\r\n'), 'latin1'));
  add('header obs-fold (a continuation line)', Buffer.from(valid.toString('latin1').replace('\r\n', '\r\nX-Fuzz: a\r\n  folded\r\n'), 'latin1'));
  add('NUL and bytes above 0x7f in a header value', withHeaders(req, [...req.headers, ['X-Fuzz', 'a\u0000b\u00ff\u0080']]));
  add('head just under the header limit', withHeaders(req, [...req.headers, ['X-Fuzz-Pad', 'p'.repeat(Math.max(0, limits.maxHeaderBytes - head - 200))]]));
  add('head over the header limit', withHeaders(req, [...req.headers, ['X-Fuzz-Pad', 'p'.repeat(limits.maxHeaderBytes + 1)]]));
  add('target over the URL limit', { ...req, target: `${req.target}${req.target.includes('?') ? '&' : '?'}pad=${'u'.repeat(limits.maxUrlBytes + 1)}` });
  add('Authorization not Bearer', withHeaders(req, [...req.headers.filter(([n]) => !/^authorization$/i.test(n)), ['Authorization', 'Basic ZnV6ejpmdXp6']]));
  add(
    'Authorization Bearer of 8 KiB',
    withHeaders(req, [...req.headers.filter(([n]) => !/^authorization$/i.test(n)), ['Authorization', `Bearer ${'k'.repeat(8192)}`]]),
  );
  add('Expect: 100-continue', withHeaders(req, [...req.headers, ['Expect', '100-continue']]));
  add('Expect: unknown', withHeaders(req, [...req.headers, ['Expect', 'fuzz']]));
  add('two requests pipelined', Buffer.concat([valid, valid]));

  // Body framing.
  const body = req.body;
  if (body.length === 0) {
    add('a body on a route that takes none', withBody(req, Buffer.from('{"unexpected":true}'), null));
    add('Content-Length: 0 on a route that takes no body', Buffer.concat([valid.subarray(0, head - 2), Buffer.from('Content-Length: 0\r\n\r\n')]));
  } else {
    const cl = (value: string) =>
      withHeaders(
        req,
        req.headers.map(([n, v]) => (/^content-length$/i.test(n) ? ([n, value] as const) : ([n, v] as const))),
      );
    add('Content-Length one short (a byte left over as the next request)', cl(String(body.length - 1)));
    add('Content-Length not a number', cl('12abc'));
    add('Content-Length negative', cl('-1'));
    add('Content-Length 2^64', cl('18446744073709551616'));
    add('Content-Length over the largest upload', cl(String(6e9)));
    add('chunked body', chunked(req, pieces(body, 3), '0\r\n\r\n'));
    add('chunked body, one byte a chunk (first 64)', chunked(req, pieces(body.subarray(0, Math.min(64, body.length)), 64), '0\r\n\r\n'));
    add('chunked body with an invalid chunk size', chunked(req, [body], 'zz\r\n\r\n'));
    add(
      'chunked body with a chunk size over 2^53',
      Buffer.concat([chunked(req, [], ''), Buffer.from(`fffffffffffffffff\r\n${body.toString('latin1')}\r\n0\r\n\r\n`, 'latin1')]),
    );
    add('chunked body with a trailer', chunked(req, [body], '0\r\nX-Trailer: t\r\n\r\n'));
    add(
      'Transfer-Encoding and Content-Length both',
      serialize({
        ...req,
        headers: [...req.headers, ['Transfer-Encoding', 'chunked']],
        body: Buffer.concat([Buffer.from(`${body.length.toString(16)}\r\n`), body, Buffer.from('\r\n0\r\n\r\n')]),
      }),
    );
    add(
      'Transfer-Encoding: gzip, chunked',
      Buffer.from(chunked(req, [body], '0\r\n\r\n').toString('latin1').replace('Transfer-Encoding: chunked', 'Transfer-Encoding: gzip, chunked'), 'latin1'),
    );
    add('Content-Encoding: gzip on a body that is not', withHeaders(req, [...req.headers, ['Content-Encoding', 'gzip']]));
    add('empty body', withBody(req, Buffer.alloc(0), null));

    const type = req.headers.find(([n]) => /^content-type$/i.test(n))?.[1] ?? '';
    const wrongTypes = [
      'text/plain',
      'application/json',
      'application/x-www-form-urlencoded',
      'multipart/form-data',
      `multipart/form-data; boundary=other-${'b'.repeat(8)}`,
      'multipart/mixed; boundary=x',
      'application/octet-stream',
      ';;;/ /',
      `${type}; charset=utf-16`,
    ];
    for (const t of wrongTypes.filter((t) => t !== type))
      add(`Content-Type ${t.length > 48 ? `${t.slice(0, 45)}...` : t}`, withBody(req, body, req.multipart, t));

    if (req.multipart) {
      out.push(...multipartMutations(req, req.multipart));
    } else if (/json/i.test(type) || body[0] === 0x7b) {
      const text = body.toString('latin1');
      add('JSON null', withBody(req, Buffer.from('null')));
      add('JSON array', withBody(req, Buffer.from('[]')));
      add(
        'JSON duplicate keys',
        withBody(req, Buffer.from(text.replace('{', `{${text.slice(1, text.indexOf(',') > 0 ? text.indexOf(',') : text.length - 1)},`), 'latin1')),
      );
      add('JSON nested 100,000 deep', withBody(req, Buffer.concat([Buffer.alloc(100_000, '['), Buffer.alloc(100_000, ']')])));
      add('JSON with a 100 KiB string field', withBody(req, Buffer.from(text.replace('{', `{"fuzz_pad":"${'s'.repeat(100 * 1024)}",`), 'latin1')));
      add(
        'JSON with invalid UTF-8',
        withBody(req, Buffer.concat([Buffer.from(text.slice(0, -1), 'latin1'), Buffer.from(',"x":"'), Buffer.from([0xc3, 0x28, 0xff]), Buffer.from('"}')])),
      );
      add('JSON with a BOM', withBody(req, Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), body])));
      add('JSON then trailing garbage', withBody(req, Buffer.concat([body, Buffer.from('}}]]garbage')])));
      add('JSON number 1e999', withBody(req, Buffer.from(text.replace(/:(\d+)([,}])/, ':1e999$2'), 'latin1')));
    } else {
      add('body of NUL bytes', withBody(req, Buffer.alloc(body.length, 0)));
      add('body with a 100 KiB line', withBody(req, Buffer.concat([body, Buffer.alloc(100 * 1024, 'x'), Buffer.from('\n')])));
    }
  }
  return out;
}

function multipartMutations(req: Req, m: Multipart): Mutation[] {
  const out: Mutation[] = [];
  const b = m.boundary;
  const typeWith = (boundary: string) =>
    req.headers.map(([n, v]) => (/^content-type$/i.test(n) ? ([n, `multipart/form-data; boundary=${boundary}`] as const) : ([n, v] as const)));
  const add = (name: string, body: Buffer, headers = req.headers) => out.push({ name, bytes: serialize(withBody({ ...req, headers }, body, m)) });
  const full = multipartBytes(m);
  const close = Buffer.from(`--${b}--\r\n`);
  const open = full.subarray(0, full.length - close.length);

  add('multipart without its closing delimiter', open);
  add('multipart without its closing delimiter or the CRLF before it', open.subarray(0, open.length - 2));
  add('multipart closing delimiter cut to "--B-"', Buffer.concat([open, Buffer.from(`--${b}-`)]));
  add('multipart closing delimiter cut to "--B"', Buffer.concat([open, Buffer.from(`--${b}`)]));
  add('multipart closing delimiter cut to half the boundary', Buffer.concat([open, Buffer.from(`--${b.slice(0, b.length >> 1)}`)]));
  add('multipart closing delimiter without its CRLF', Buffer.concat([open, Buffer.from(`--${b}--`)]));
  add('multipart closing delimiter twice', Buffer.concat([full, close]));
  add(
    'multipart every delimiter doubled (empty parts between)',
    Buffer.from(full.toString('latin1').replaceAll(`--${b}\r\n`, `--${b}\r\n--${b}\r\n`), 'latin1'),
  );
  add('multipart delimiters without CRLF after them', Buffer.from(full.toString('latin1').replaceAll(`--${b}\r\n`, `--${b}`), 'latin1'));
  add('multipart with bare LF line ends', Buffer.from(full.toString('latin1').replaceAll('\r\n', '\n'), 'latin1'));
  add('multipart with a preamble and an epilogue', Buffer.concat([Buffer.from('preamble text\r\n'), full, Buffer.from('epilogue text\r\n'.repeat(10))]));
  add('multipart only the closing delimiter', close);
  add('multipart only an opening delimiter', Buffer.from(`--${b}\r\n`));
  add('multipart part head never ends', Buffer.from(`--${b}\r\nContent-Disposition: form-data; name="file"; filename="x"\r\n${'X-Pad: p\r\n'.repeat(2000)}`));
  add('multipart boundary in the header differs from the body', full, typeWith(`${b}x`));
  add('multipart boundary quoted in the header', full, typeWith(`"${b}"`));
  add('multipart boundary of 71 characters (over RFC 2046)', multipartBytes({ boundary: 'q'.repeat(71), parts: m.parts }), typeWith('q'.repeat(71)));
  add('multipart boundary of 2,000 characters', multipartBytes({ boundary: 'w'.repeat(2000), parts: m.parts }), typeWith('w'.repeat(2000)));
  add('multipart empty boundary', multipartBytes({ boundary: '', parts: m.parts }), typeWith(''));
  add(
    'multipart boundary text inside the data, not after a CRLF',
    multipartBytes({ boundary: b, parts: m.parts.map((p) => ({ ...p, data: Buffer.concat([p.data, Buffer.from(`x--${b}--y`)]) })) }),
  );

  const withParts = (parts: Part[]) => multipartBytes({ boundary: b, parts });
  const file = m.parts.find((p) => p.headers[0]!.includes('filename=')) ?? m.parts[0]!;
  // The same breakage of the end with the file part last, so it happens inside the file's stream.
  const fileLast = withParts([...m.parts.filter((p) => p !== file), file]);
  const fileLastOpen = fileLast.subarray(0, fileLast.length - close.length);
  add('multipart file part last, without the closing delimiter', fileLastOpen);
  add('multipart file part last, closing delimiter cut to "--B"', Buffer.concat([fileLastOpen, Buffer.from(`--${b}`)]));
  add('multipart file part last, ends inside its data', fileLastOpen.subarray(0, fileLastOpen.length - 6));
  add('multipart part without Content-Disposition', withParts(m.parts.map((p) => (p === file ? { headers: ['Content-Type: text/csv'], data: p.data } : p))));
  add(
    'multipart file part without a filename',
    withParts(m.parts.map((p) => (p === file ? { headers: ['Content-Disposition: form-data; name="file"'], data: p.data } : p))),
  );
  add('multipart file part twice', withParts([...m.parts, file]));
  add('multipart file part only, the fields dropped', withParts([file]));
  add(
    'multipart fields only, no file part',
    withParts(m.parts.filter((p) => p !== file).length > 0 ? m.parts.filter((p) => p !== file) : [field('note', 'no file')]),
  );
  add('multipart file part first, then the fields', withParts([file, ...m.parts.filter((p) => p !== file)]));
  add(
    'multipart field of 70 KiB before the file',
    withParts([field('file_description', 'd'.repeat(70 * 1024)), ...m.parts.filter((p) => !p.headers[0]!.includes('"file_description"'))]),
  );
  add(
    'multipart field of 10,001 characters',
    withParts([field('file_description', 'd'.repeat(10_001)), ...m.parts.filter((p) => !p.headers[0]!.includes('"file_description"'))]),
  );
  add('multipart filename of 64 KiB', withParts(m.parts.map((p) => (p === file ? filePart('file', 'n'.repeat(64 * 1024), 'text/csv', p.data) : p))));
  add(
    'multipart part head of 20 KiB',
    withParts(m.parts.map((p) => (p === file ? { headers: [...p.headers, `X-Pad: ${'h'.repeat(20 * 1024)}`], data: p.data } : p))),
  );
  add('multipart 40 parts (over the parts limit)', withParts([...Array.from({ length: 39 }, (_v, i) => field(`f${i}`, String(i))), file]));
  add(
    'multipart the same field twice',
    withParts([field('file_description', 'one'), field('file_description', 'two'), ...m.parts.filter((p) => !p.headers[0]!.includes('"file_description"'))]),
  );
  add('multipart field names of 300 bytes', withParts([field('n'.repeat(300), 'v'), ...m.parts]));
  add(
    'multipart filename*=UTF-8 with an invalid escape',
    withParts(
      m.parts.map((p) =>
        p === file ? { headers: ['Content-Disposition: form-data; name="file"; filename*=UTF-8\'\'%ZZ%C3', 'Content-Type: text/csv'], data: p.data } : p,
      ),
    ),
  );
  add(
    'multipart part Content-Transfer-Encoding: base64',
    withParts(m.parts.map((p) => (p === file ? { headers: [...p.headers, 'Content-Transfer-Encoding: base64'], data: p.data } : p))),
  );
  add('multipart file of 0 bytes', withParts(m.parts.map((p) => (p === file ? { headers: p.headers, data: Buffer.alloc(0) } : p))));
  return out;
}
