import { timeOrderedUuid } from './time-ordered-uuid';

describe('timeOrderedUuid', () => {
  it('is a version 7 UUID of RFC 9562 whose first 48 bits are the time in milliseconds', () => {
    const ms = Date.parse('2026-11-27T16:55:00.123Z');
    const id = timeOrderedUuid(ms);
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(parseInt(id.slice(0, 8) + id.slice(9, 13), 16)).toBe(ms);
  });

  it('sorts by time as text, and ids of one millisecond differ', () => {
    const ids = [0, 1, 255, 256, Date.now()].map((ms) => timeOrderedUuid(ms));
    expect([...ids].sort()).toEqual(ids);
    const same = new Set(Array.from({ length: 1000 }, () => timeOrderedUuid(1)));
    expect(same.size).toBe(1000);
  });
});
