import { describe, expect, it } from 'vitest';
import { closing, PageJoiner } from './page-joiner.ts';

const HEADER = 'metric_name,timestamp,metric_numeric_value,updated_at';

/** Joins pages as the download does, each split into pieces at every `cut` characters. */
function join(format: 'csv' | 'json', pages: string[], cut: number): string {
  let file = '';
  let rows = 0;
  for (const page of pages) {
    const joiner = new PageJoiner(format, rows, file === '');
    for (let i = 0; i < page.length; i += cut) file += joiner.push(page.slice(i, i + cut));
    file += joiner.end();
    rows += joiner.rows;
  }
  return file + closing(format, file === '');
}

describe('PageJoiner', () => {
  const csvPages = [`${HEADER}\na,1,1,u\na,2,2,u\n`, `${HEADER}\na,3,3,u\n`, `${HEADER}\nb,1,4,u\n`];
  const jsonPages = ['[\n{"v":1}\n,{"v":2}\n]\n', '[\n{"v":3}\n]\n', '[\n]\n', '[\n{"v":4}\n]\n'];

  it.each([1, 3, 1000])('CSV: the header once, every row once (pieces of %i characters)', (cut) => {
    expect(join('csv', csvPages, cut)).toBe(`${HEADER}\na,1,1,u\na,2,2,u\na,3,3,u\nb,1,4,u\n`);
  });

  it.each([1, 4, 1000])("JSON: one array in the api's own layout, an empty page adding nothing (pieces of %i)", (cut) => {
    const file = join('json', jsonPages, cut);
    expect(file).toBe('[\n{"v":1}\n,{"v":2}\n,{"v":3}\n,{"v":4}\n]\n');
    expect(JSON.parse(file)).toHaveLength(4);
  });

  it('one page joins to exactly that page', () => {
    expect(join('json', [jsonPages[0]!], 7)).toBe(jsonPages[0]);
    expect(join('csv', [csvPages[0]!], 7)).toBe(csvPages[0]);
  });

  it('a download with no rows is a header, or an empty array', () => {
    expect(join('csv', [`${HEADER}\n`], 5)).toBe(`${HEADER}\n`);
    expect(JSON.parse(join('json', ['[]'], 5))).toEqual([]);
    expect(JSON.parse(join('json', ['[\n]\n', '[\n]\n'], 5))).toEqual([]);
  });

  it('counts the data rows of each page', () => {
    const joiner = new PageJoiner('csv', 0, true);
    joiner.push(csvPages[0]!);
    joiner.end();
    expect(joiner.rows).toBe(2);
  });
});
