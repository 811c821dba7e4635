import { randomUUID } from 'node:crypto';
import { AuditCursorCodec } from './audit-cursor';

describe('AuditCursorCodec', () => {
  const codec = new AuditCursorCodec('a server secret of at least thirty-two characters');
  const scope = JSON.stringify(['org-a', null, null, null, null, null]);
  const position = { occurredAt: Date.parse('2026-11-21T15:08:12.868Z') * 1000 + 123, id: randomUUID() };

  it('reads back the position it wrote, for the same scope', () => {
    const cursor = codec.encode(scope, position);
    expect(cursor).toMatch(/^[A-Za-z0-9_-]{55}$/);
    expect(codec.decode(scope, cursor)).toEqual(position);
  });

  it('keeps times before 1970', () => {
    const early = { occurredAt: -1_000_001, id: position.id };
    expect(codec.decode(scope, codec.encode(scope, early))).toEqual(early);
  });

  it('refuses a cursor of another scope (organization or filters)', () => {
    const cursor = codec.encode(scope, position);
    expect(codec.decode(JSON.stringify(['org-b', null, null, null, null, null]), cursor)).toBeNull();
    expect(codec.decode(JSON.stringify(['org-a', 'api_key.created', null, null, null, null]), cursor)).toBeNull();
  });

  it('refuses a cursor made with another secret', () => {
    const other = new AuditCursorCodec('another server secret, also thirty-two characters');
    expect(codec.decode(scope, other.encode(scope, position))).toBeNull();
  });

  it('refuses any changed bit', () => {
    const bytes = Buffer.from(codec.encode(scope, position), 'base64url');
    for (let bit = 0; bit < bytes.length * 8; bit += 1) {
      const changed = Buffer.from(bytes);
      changed[bit >> 3] ^= 1 << (bit & 7);
      expect(codec.decode(scope, changed.toString('base64url'))).toBeNull();
    }
  });

  it.each(['', 'x', '!!!!', 'A'.repeat(55), 'A'.repeat(56), 'A'.repeat(54)])('refuses %j', (cursor) => {
    expect(codec.decode(scope, cursor)).toBeNull();
  });

  it('refuses the same bytes written another way (padding, standard base64, a trailing bit)', () => {
    const cursor = codec.encode(scope, position);
    const bytes = Buffer.from(cursor, 'base64url');
    expect(codec.decode(scope, `${cursor}=`)).toBeNull();
    expect(codec.decode(scope, bytes.toString('base64'))).toBeNull();
    // The last character carries 2 unused bits: another character with the same 4 used bits decodes alike.
    const last = cursor.at(-1)!;
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const sibling = alphabet[alphabet.indexOf(last) ^ 1];
    expect(codec.decode(scope, cursor.slice(0, -1) + sibling)).toBeNull();
  });
});
