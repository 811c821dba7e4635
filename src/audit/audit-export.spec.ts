import { csvCell, csvHeader, csvRow, CSV_COLUMNS, exportFileName } from './audit-export';
import type { AuditEventView } from './dto/audit-event.view';

/** The CSV of the audit export: RFC 4180 quoting, and no cell a spreadsheet would run as a formula. */
describe('audit export CSV', () => {
  it('quotes a comma, a quote or a line break, doubling quotes', () => {
    expect(csvCell('plain')).toBe('plain');
    expect(csvCell('a,b')).toBe('"a,b"');
    expect(csvCell('say "hi"')).toBe('"say ""hi"""');
    expect(csvCell('two\nlines')).toBe('"two\nlines"');
    expect(csvCell('cr\rhere')).toBe('"cr\rhere"');
    expect(csvCell(null)).toBe('');
    expect(csvCell(undefined)).toBe('');
  });

  it.each(['=1+1', '+SUM(A1)', '-2+3', '@cmd', '\tTAB', '\rCR', '=HYPERLINK("http://x","y")'])(
    'keeps %j from being a formula: a leading quote, and quoted',
    (text) => {
      const cell = csvCell(text);
      expect(cell.startsWith(`"'`)).toBe(true);
      expect(cell.endsWith('"')).toBe(true);
      // What a CSV reader gets back: the text behind a quote, never a formula.
      expect(cell.slice(2, -1).replaceAll('""', '"')).toBe(text);
    },
  );

  it('writes objects as JSON, quoted as any cell', () => {
    expect(csvCell({ label: { before: 'a', after: 'b' } })).toBe('"{""label"":{""before"":""a"",""after"":""b""}}"');
  });

  it('writes a header and one line per event, CRLF-terminated, in the columns order', () => {
    expect(csvHeader()).toBe(`${CSV_COLUMNS.join(',')}\r\n`);
    const event = Object.fromEntries(CSV_COLUMNS.map((column) => [column, null])) as unknown as AuditEventView;
    const line = csvRow({ ...event, id: 'e1', action: 'api_key.updated', target_label: '-x' });
    expect(line.endsWith('\r\n')).toBe(true);
    const cells = line.slice(0, -2).split(',');
    expect(cells).toHaveLength(CSV_COLUMNS.length);
    expect(cells[CSV_COLUMNS.indexOf('target_label')]).toBe(`"'-x"`);
  });

  it('names the file by its range', () => {
    expect(exportFileName(new Date('2026-11-01T00:00:00Z'), new Date('2026-12-01T12:00:00Z'), 'json')).toBe(
      'audit-events_2026-11-01_2026-12-01.json',
    );
  });
});
