/**
 * The YAML that gateway configurations in docs/ are written in, read without a YAML library (none is a dependency):
 * block mappings and sequences, flow `[...]` and `{...}` on one line, plain and quoted scalars, comments. Anything
 * else (anchors, tags, block scalars, multi-line flow collections, tabs) throws, naming the line: a documented
 * configuration this cannot read fails its test rather than being half read.
 */
export type YamlValue = string | number | boolean | null | YamlValue[] | { [key: string]: YamlValue };

interface Line {
  number: number;
  indent: number;
  text: string;
}

export function parseYaml(source: string): YamlValue {
  const lines: Line[] = [];
  source.split('\n').forEach((raw, index) => {
    if (/^\s*\t/.test(raw)) throw new Error(`yaml line ${index + 1}: tab indentation`);
    const text = withoutComment(raw).trim();
    if (text !== '') lines.push({ number: index + 1, indent: raw.length - raw.trimStart().length, text });
  });
  if (lines.length === 0) return null;
  const reader = new BlockReader(lines);
  const value = reader.block(lines[0].indent);
  if (reader.position < lines.length) throw reader.error('unexpected indentation');
  return value;
}

/** The line without a comment: `#` at its start or after a space, outside quotes. */
function withoutComment(line: string): string {
  let quote: string | undefined;
  for (let i = 0; i < line.length; i += 1) {
    const c = line[i];
    if (quote !== undefined) {
      if (c === quote) quote = undefined;
    } else if (c === "'" || c === '"') {
      quote = c;
    } else if (c === '#' && (i === 0 || /\s/.test(line[i - 1]))) {
      return line.slice(0, i);
    }
  }
  return line;
}

const isItem = (text: string) => text === '-' || text.startsWith('- ');

class BlockReader {
  position = 0;

  constructor(private readonly lines: Line[]) {}

  error(message: string): Error {
    const line = this.lines[Math.min(this.position, this.lines.length - 1)];
    return new Error(`yaml line ${line.number}: ${message}: ${line.text}`);
  }

  private get line(): Line | undefined {
    return this.lines[this.position];
  }

  block(indent: number): YamlValue {
    return isItem(this.line!.text) ? this.sequence(indent) : this.mapping(indent);
  }

  private sequence(indent: number): YamlValue[] {
    const items: YamlValue[] = [];
    while (this.line !== undefined && this.line.indent === indent && isItem(this.line.text)) {
      const line = this.line;
      const rest = line.text.slice(1).trimStart();
      if (rest === '') {
        this.position += 1;
        items.push(this.nested(indent));
      } else if (mappingEntry(rest) !== undefined) {
        // `- key: value` and the lines under it: a mapping that starts on the item's line.
        const column = line.indent + (line.text.length - rest.length);
        this.lines[this.position] = { number: line.number, indent: column, text: rest };
        items.push(this.mapping(column));
      } else {
        this.position += 1;
        items.push(inlineValue(rest, line.number));
      }
    }
    return items;
  }

  private mapping(indent: number): { [key: string]: YamlValue } {
    const entries: { [key: string]: YamlValue } = {};
    while (this.line !== undefined && this.line.indent === indent && !isItem(this.line.text)) {
      const line = this.line;
      const entry = mappingEntry(line.text);
      if (entry === undefined) throw this.error('expected `key: value`');
      if (Object.hasOwn(entries, entry.key)) throw this.error(`repeated key ${entry.key}`);
      this.position += 1;
      if (entry.rest !== '') {
        entries[entry.key] = inlineValue(entry.rest, line.number);
      } else if (this.line !== undefined && this.line.indent === indent && isItem(this.line.text)) {
        entries[entry.key] = this.sequence(indent); // a sequence may sit at its key's indentation
      } else {
        entries[entry.key] = this.nested(indent);
      }
    }
    if (this.line !== undefined && this.line.indent > indent) throw this.error('unexpected indentation');
    return entries;
  }

  /** The block under a line at `indent`, or null when there is none. */
  private nested(indent: number): YamlValue {
    if (this.line === undefined || this.line.indent <= indent) return null;
    return this.block(this.line.indent);
  }
}

/** `key: rest` (the key plain or quoted), or undefined when the text is not a mapping entry. */
function mappingEntry(text: string): { key: string; rest: string } | undefined {
  if (text.startsWith('[') || text.startsWith('{')) return undefined;
  if (text.startsWith("'") || text.startsWith('"')) {
    const scanner = new FlowScanner(text, 0);
    const key = scanner.quoted();
    const after = text.slice(scanner.at);
    const match = /^\s*:(\s+|$)/.exec(after);
    return match === null ? undefined : { key, rest: after.slice(match[0].length).trim() };
  }
  const match = /^([^\s:][^:]*?)\s*:(\s+|$)/.exec(text);
  return match === null ? undefined : { key: match[1], rest: text.slice(match[0].length).trim() };
}

/** A value written on its key's (or item's) line: a flow collection, a quoted scalar or a plain one. */
function inlineValue(text: string, number: number): YamlValue {
  if (/^[|>&*!]/.test(text)) throw new Error(`yaml line ${number}: unsupported: ${text}`);
  if (text.startsWith('[') || text.startsWith('{') || text.startsWith("'") || text.startsWith('"')) {
    const scanner = new FlowScanner(text, number);
    const value = scanner.value();
    scanner.skipSpaces();
    if (scanner.at !== text.length) throw new Error(`yaml line ${number}: trailing text: ${text}`);
    return value;
  }
  return plain(text);
}

function plain(text: string): YamlValue {
  if (text === 'true' || text === 'false') return text === 'true';
  if (text === 'null' || text === '~') return null;
  if (/^-?\d+$/.test(text)) return Number(text);
  return text;
}

class FlowScanner {
  at = 0;

  constructor(
    private readonly text: string,
    private readonly number: number,
  ) {}

  private fail(message: string): Error {
    return new Error(`yaml line ${this.number}: ${message} at column ${this.at + 1}: ${this.text}`);
  }

  skipSpaces(): void {
    while (this.text[this.at] === ' ') this.at += 1;
  }

  private expect(c: string): void {
    this.skipSpaces();
    if (this.text[this.at] !== c) throw this.fail(`expected ${c}`);
    this.at += 1;
  }

  value(): YamlValue {
    this.skipSpaces();
    const c = this.text[this.at];
    if (c === '[') return this.list();
    if (c === '{') return this.map();
    if (c === "'" || c === '"') return this.quoted();
    return plain(this.plainText(false));
  }

  private list(): YamlValue[] {
    this.expect('[');
    const items: YamlValue[] = [];
    this.skipSpaces();
    if (this.text[this.at] === ']') return ((this.at += 1), items);
    for (;;) {
      items.push(this.value());
      this.skipSpaces();
      const c = this.text[this.at++];
      if (c === ']') return items;
      if (c !== ',') throw this.fail('expected , or ]');
    }
  }

  private map(): { [key: string]: YamlValue } {
    this.expect('{');
    const entries: { [key: string]: YamlValue } = {};
    this.skipSpaces();
    if (this.text[this.at] === '}') return ((this.at += 1), entries);
    for (;;) {
      this.skipSpaces();
      const c = this.text[this.at];
      const key = c === "'" || c === '"' ? this.quoted() : this.plainText(true);
      this.expect(':');
      entries[key] = this.value();
      this.skipSpaces();
      const next = this.text[this.at++];
      if (next === '}') return entries;
      if (next !== ',') throw this.fail('expected , or }');
    }
  }

  quoted(): string {
    const quote = this.text[this.at];
    this.at += 1;
    let result = '';
    for (;;) {
      if (this.at >= this.text.length) throw this.fail('unterminated string');
      const c = this.text[this.at++];
      if (quote === "'" && c === "'") {
        if (this.text[this.at] !== "'") return result;
        result += "'";
        this.at += 1;
      } else if (quote === '"' && c === '"') {
        return result;
      } else if (quote === '"' && c === '\\') {
        const escaped = this.text[this.at++];
        const known: Record<string, string> = { n: '\n', t: '\t', '"': '"', '\\': '\\', '/': '/' };
        if (known[escaped] === undefined) throw this.fail(`unsupported escape \\${escaped}`);
        result += known[escaped];
      } else {
        result += c;
      }
    }
  }

  /** A plain scalar inside a flow collection: up to `,` `]` `}` (and, for a key, `: `). */
  private plainText(key: boolean): string {
    const start = this.at;
    while (this.at < this.text.length) {
      const c = this.text[this.at];
      if (c === ',' || c === ']' || c === '}') break;
      if (key && c === ':' && /[\s,\]}]|^$/.test(this.text[this.at + 1] ?? '')) break;
      this.at += 1;
    }
    const text = this.text.slice(start, this.at).trim();
    if (text === '') throw this.fail('expected a value');
    return text;
  }
}
